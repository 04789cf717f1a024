%%% Outputs kept to sizes their viewers load, through the Erlang API on real
%%% code: a capped timeline says so in the file and in the warnings, and
%%% infinity lifts the cap; collapse_recursion => all shrinks the folded
%%% stacks of the compiler (mutual recursion) and leaves no frame twice on
%%% a stack; a file projected above the size threshold is announced (the
%%% threshold lowered through BEAMSPY_SIZE_WARN_BYTES, so nothing big is
%%% written).
-module(beamspy_sizes_tests).
-include_lib("eunit/include/eunit.hrl").

capped_timeline_says_so_test() ->
    Dir = bs_test_lib:tmp_dir(),
    Path = filename:join(Dir, "fib.trace.json"),
    {ok, #{result := {return, 610}, warnings := [Warning]}} =
        beamspy:profile({bs_wl, fib, [15]}, #{output => Path, timeline_cap => 20, quiet => true,
                                              %% raw: compensated, a short RUNNABLE span
                                              %% among the 20 can be left empty (a
                                              %% reschedule's cost is taken from it), and
                                              %% empty spans are not drawn
                                              compensate => false}),
    {ok, Bin} = file:read_file(Path),
    %% fib(15) makes 1973 calls: 20 are kept in time order, the rest said.
    ?assertEqual(20, count(Bin, <<"\"ph\":\"X\"">>)),
    ?assertMatch({match, _}, re:run(Bin, "\"timeline_cap\":20,\"calls_left_out_by_cap\":[1-9][0-9]*")),
    ?assertMatch({match, _}, re:run(Warning, "fib.trace.json: chrome: timeline capped at 20 calls")),
    ?assertMatch({match, _}, re:run(Warning, "timeline_cap => infinity")),
    %% infinity: every call, nothing said.
    Path2 = filename:join(Dir, "all.trace.json"),
    {ok, #{warnings := []}} =
        beamspy:profile({bs_wl, fib, [15]}, #{output => Path2, timeline_cap => infinity, quiet => true,
                                              %% raw: compensated, the shortest calls can be
                                              %% left empty, and empty spans are not drawn
                                              compensate => false}),
    {ok, Bin2} = file:read_file(Path2),
    ?assert(count(Bin2, <<"\"ph\":\"X\"">>) >= 1973),
    ?assertEqual(nomatch, re:run(Bin2, "\"timeline_cap\":")),
    {error, {bad_option, timeline_cap, 0, _}} = beamspy:check({bs_wl, fib, [1]}, #{timeline_cap => 0}),
    bs_test_lib:rm_rf(Dir).

%% The compiler's passes walk its trees by mutual recursion: `all' folds it.
%% (Its plain folded stacks are hundreds of MB, so they are counted from
%% the profile's tree, not rendered: one line per node with time.)
collapse_all_shrinks_the_compiler_test_() ->
    {timeout, 600, fun collapse_all_shrinks_the_compiler/0}.

collapse_all_shrinks_the_compiler() ->
    Src = filename:join(filename:dirname(filename:dirname(code:which(bs_wl))), "bs_wl.erl"),
    {ok, #{profile := #{processes := Procs} = Profile}} =
        beamspy:profile({compile, file, [Src, [binary, return_errors]]}, #{}),
    Nodes = [N || {_, Tree} <- Procs, N <- Tree],
    SelfNs = lists:sum([Self || {_, _, _, Self, _, _} <- Nodes]),
    {ok, All} = beamspy:render(Profile, folded, #{collapse_recursion => all}),
    {SumUs, Lines} = sum(All),
    ?assert(Lines * 10 < length(Nodes)),
    %% Time kept: equal up to the rounding of each line to a microsecond.
    ?assert(abs(SumUs * 1000 - SelfNs) =< 1000 * (Lines + length(Nodes))),
    %% No frame twice on a stack below the process.
    [?assertEqual(length(Frames), length(lists:usort(Frames)))
     || Line <- binary:split(All, <<"\n">>, [global, trim_all]),
        [Stack, _] <- [string:split(Line, " ", trailing)],
        [_Proc | Frames] <- [binary:split(Stack, <<";">>, [global])]].

size_warning_above_threshold_test() ->
    Dir = bs_test_lib:tmp_dir(),
    Path = filename:join(Dir, "fib.folded"),
    true = os:putenv("BEAMSPY_SIZE_WARN_BYTES", "10"),
    try
        {ok, #{warnings := [W]}} = beamspy:profile({bs_wl, fib, [12]}, #{output => Path, quiet => true}),
        ?assertMatch({match, _}, re:run(W, "fib.folded: folded: about [0-9]+ kB to write \\(above 1 kB\\)")),
        ?assertMatch({match, _}, re:run(W, "collapse_recursion => all"))
    after
        os:unsetenv("BEAMSPY_SIZE_WARN_BYTES")
    end,
    %% Below the threshold no size is announced (a warning about stacks too
    %% short for a folded line may still come, compensated).
    {ok, #{warnings := Ws}} = beamspy:profile({bs_wl, fib, [12]}, #{output => Path, quiet => true}),
    ?assertEqual([], [W || W <- Ws, re:run(W, "to write") =/= nomatch]),
    bs_test_lib:rm_rf(Dir).

%% A recursion 2,500 deep (bs_wl:deep/1, a real recording): the folded
%% writer stops at 1,024 frames and sums the rest into one "[deeper]" line,
%% and the projected size in the warning is that of the file written (it
%% once counted every stack whole: 6 times too big here, 6-9 times on
%% xmerl's 1,026-deep stacks). Raw times, so that every level has a line.
projection_of_deep_recursion_test_() ->
    {timeout, 300, fun projection_of_deep_recursion/0}.

projection_of_deep_recursion() ->
    Dir = bs_test_lib:tmp_dir(),
    Path = filename:join(Dir, "deep.folded"),
    true = os:putenv("BEAMSPY_SIZE_WARN_BYTES", "1"),
    try
        {ok, #{warnings := Ws}} =
            beamspy:profile({bs_wl, deep, [2500]}, #{output => Path, quiet => true, compensate => false}),
        [W] = [W || W <- Ws, re:run(W, "to write") =/= nomatch],
        {match, [Num, Unit]} = re:run(W, "about ([0-9.]+) (kB|MB|GB) to write", [{capture, all_but_first, list}]),
        Projected = list_to_float(case lists:member($., Num) of true -> Num; false -> Num ++ ".0" end)
                        * maps:get(Unit, #{"kB" => 1.0e3, "MB" => 1.0e6, "GB" => 1.0e9}),
        Written = filelib:file_size(Path),
        {ok, Bin} = file:read_file(Path),
        ?assertMatch({match, _}, re:run(Bin, ";\\[deeper\\] [0-9]+\n")),
        ?assert(Written > 1000000),
        ?assert(Projected / Written > 0.9 andalso Projected / Written < 1.1)
    after
        os:unsetenv("BEAMSPY_SIZE_WARN_BYTES"),
        bs_test_lib:rm_rf(Dir)
    end.

%% Above the size viewers open (lowered to 1 MB through
%% BEAMSPY_OPENABLE_BYTES, so nothing big is written), the same 2,500-deep
%% recording is written with its recursion folded and the warning says so
%% with both sizes; full => true writes every stack, and a collapse mode of
%% the user's is kept as given.
too_big_to_open_collapsed_test_() ->
    {timeout, 300, fun too_big_to_open_collapsed/0}.

too_big_to_open_collapsed() ->
    Dir = bs_test_lib:tmp_dir(),
    Path = filename:join(Dir, "deep.folded"),
    true = os:putenv("BEAMSPY_OPENABLE_BYTES", "1000000"),
    Write = fun(Opts) ->
                    {ok, #{warnings := Ws}} =
                        beamspy:profile({bs_wl, deep, [2500]},
                                        Opts#{output => Path, quiet => true, compensate => false}),
                    {ok, Bin} = file:read_file(Path),
                    {[W || W <- Ws, re:run(W, "viewers open") =/= nomatch], Bin}
            end,
    try
        {[W], Small} = Write(#{}),
        ?assertMatch({match, _}, re:run(W, "deep.folded: folded: every stack whole would be about [0-9.]+ MB, "
                                        "more than viewers open \\(above 1.0 MB\\): recursion folded into one frame "
                                        "as with collapse_recursion => direct .*full => true \\(--full\\) writes every stack")),
        ?assert(byte_size(Small) < 10000),
        ?assertEqual(nomatch, binary:match(Small, <<"bs_wl:deep/1;bs_wl:deep/1">>)),
        {[], Full} = Write(#{full => true}),
        ?assert(byte_size(Full) > 1000000),
        ?assertMatch({match, _}, re:run(Full, ";\\[deeper\\] [0-9]+\n")),
        {[], Own} = Write(#{collapse_recursion => all}),
        ?assert(byte_size(Own) < 10000),
        {error, {bad_option, full, 1, _}} = beamspy:check({bs_wl, fib, [1]}, #{full => 1})
    after
        os:unsetenv("BEAMSPY_OPENABLE_BYTES"),
        bs_test_lib:rm_rf(Dir)
    end.

%% Compensated, fib(6)'s stacks are mostly shorter than half a microsecond
%% (25 calls of a few ns each untraced; ~0.4 µs of tracer cost per call is
%% gone): the folded file has no line for them, and when they hold 1% of
%% the file's time or more the warning says how many. Checked against the
%% profile of the same recording, compensated and raw.
rounded_out_stacks_said_test() ->
    Dir = bs_test_lib:tmp_dir(),
    Path = filename:join(Dir, "fib6.folded"),
    [begin
         {ok, #{warnings := Ws, profile := P}} =
             beamspy:profile({bs_wl, fib, [6]}, #{output => Path, quiet => true, compensate => Comp}),
         Nodes = lists:append([Ns || {_, Ns} <- maps:get(processes, P)]),
         Short = [Self || {_, _, _, Self, _, _} <- Nodes, Self > 0, Self < 500],
         {ok, Bin} = file:read_file(Path),
         Lines = binary:split(Bin, <<"\n">>, [global, trim_all]),
         ?assertEqual(length([x || {_, _, _, Self, _, _} <- Nodes, Self >= 500]), length(Lines)),
         Total = lists:sum([Self || {_, _, _, Self, _, _} <- Nodes]),
         Said = [W || W <- Ws, re:run(W, "half a microsecond") =/= nomatch],
         case Short =/= [] andalso lists:sum(Short) * 100 >= Total of
             true ->
                 Text = case length(Short) of
                            1 -> "fib6.folded: folded: 1 stack shorter than half a microsecond has no line";
                            N -> io_lib:format("fib6.folded: folded: ~w stacks shorter than half a microsecond "
                                               "have no line", [N])
                        end,
                 ?assertMatch([_], Said),
                 ?assertMatch({match, _}, re:run(hd(Said), lists:flatten(Text)));
             false ->
                 ?assertEqual([], Said)
         end
     end || Comp <- [true, false]],
    bs_test_lib:rm_rf(Dir).

count(Bin, Pattern) ->
    length(binary:matches(Bin, Pattern)).

sum(Folded) ->
    Lines = binary:split(Folded, <<"\n">>, [global, trim_all]),
    {lists:sum([binary_to_integer(lists:last(binary:split(L, <<" ">>, [global]))) || L <- Lines]),
     length(Lines)}.
