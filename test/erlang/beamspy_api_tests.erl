%%% The API contract: results and exceptions pass through unchanged, bad
%%% options and targets are refused before anything runs, output files,
%%% folded lines, Elixir names.
-module(beamspy_api_tests).

-include_lib("eunit/include/eunit.hrl").

-import(bs_test_lib, [profile/2, profile_ok/2, own_tree/1, node_map/1, path/2,
                      frame_calls/2, processes/1, assert_clean/0, tmp_dir/0, rm_rf/1,
                      list_dir/1, capture_output/1, flush/0]).

setup() ->
    [{module, M} = code:ensure_loaded(M) || M <- [bs_wl, 'Elixir.Foo.Bar', lists, timer]],
    ok.

api_test_() ->
    {setup, fun setup/0, fun(_) -> ok end,
     [{"apply returns exactly what the call returns (all target forms)", fun returns/0},
      {"apply re-raises error/exit/throw with the same stacktrace", fun raises_exact/0},
      {"a natural error keeps its class, reason and workload frames", fun raises_natural/0},
      {"profile/2 reports {raise, Class, Reason, Stack}", fun profile_raise/0},
      {"bad options raise {beamspy, _} before anything runs", {timeout, 60, fun bad_options/0}},
      {"bad targets raise {beamspy, _} before anything runs", {timeout, 60, fun bad_targets/0}},
      {"profile/2 returns {error, _} for bad options (any term)", fun profile_bad_options/0},
      {"a target with an improper argument list is refused", fun improper_args/0},
      {"max_memory beyond 64 bits is refused as a bad option or works", fun huge_max_memory/0},
      {"an output file in a missing directory: refused up front or written", fun output_missing_dir/0},
      {"a caller traced by someone else is refused", fun already_traced/0},
      {"a nested apply inside a traced call is refused; the outer one completes", fun nested_apply/0},
      {"the call runs in the caller's process (dictionary, mailbox, self)", fun caller_context/0},
      {"no stray messages are left in the caller's mailbox", {timeout, 60, fun no_stray_messages/0}},
      {"proplist options work", fun proplist_options/0},
      {"output directory: one beamspy-*.html file by default, folded lines valid", {timeout, 60, fun output_dir/0}},
      {"output *.folded file: exactly that file, no temporary left", {timeout, 60, fun output_file/0}},
      {"folded lines are the profile's nodes (self time in us)", {timeout, 60, fun folded_matches_profile/0}},
      {"apply prints where it wrote unless quiet", fun printing/0},
      {"names => elixir: Foo.Bar.f/1 and :lists.seq/2", fun elixir_names/0},
      {"names => erlang (default): quoted Elixir module atoms", fun erlang_names/0},
      {"the modules carry their docs: h(beamspy) works", fun docs_in_beams/0}]}.

docs_in_beams() ->
    lists:foreach(
      fun(M) ->
              {ok, {docs_v1, _, erlang, _, #{<<"en">> := _}, _, Docs}} = code:get_doc(M),
              ?assertNotEqual([], Docs)
      end, [beamspy, beamspy_opts, beamspy_report, beamspy_tracer]),
    {ok, {docs_v1, _, _, _, _, _, Docs}} = code:get_doc(beamspy),
    ?assertMatch([_], [D || {{function, apply, 2}, _, _, #{<<"en">> := _}, _} = D <- Docs]).

%%% ------------------------------------------------------------ results

returns() ->
    Term = {self(), make_ref(), <<0:80000>>, #{a => [1.5, "x"]}, fun lists:sum/1},
    ?assertEqual(Term, beamspy:apply(fun() -> Term end, #{quiet => true, output => out()})),
    ?assertEqual(Term, beamspy:apply({fun(X) -> X end, [Term]}, #{quiet => true, output => out()})),
    ?assertEqual(Term, beamspy:apply({erlang, element, [1, {Term}]}, #{quiet => true, output => out()})),
    ?assertEqual(6765, beamspy:apply({bs_wl, fib, [20]}, [quiet, {output, out()}])),
    %% apply/1 (default options: writes into the current directory).
    {ok, Cwd} = file:get_cwd(),
    Dir = tmp_dir(),
    ok = filelib:ensure_path(Dir),
    try
        ok = file:set_cwd(Dir),
        {R, _} = capture_output(fun() -> beamspy:apply({bs_wl, fib, [10]}) end),
        ?assertEqual(55, R),
        ?assertMatch([_], list_dir(Dir))
    after
        ok = file:set_cwd(Cwd),
        rm_rf(Dir)
    end,
    assert_clean().

raises_exact() ->
    Stack = [{fake_mod, fake_fun, 2, [{file, "fake.erl"}, {line, 42}]},
             {other_mod, g, 0, []}],
    lists:foreach(
      fun({Class, Reason}) ->
              Target = {bs_wl, reraise, [Class, Reason, Stack]},
              Got = try beamspy:apply(Target, #{quiet => true, output => out()}) of
                        V -> {returned, V}
                    catch C:R:S -> {C, R, S}
                    end,
              ?assertEqual({Class, Reason, Stack}, Got),
              assert_clean()
      end, [{error, {my_error, 1}}, {exit, {shutdown, x}}, {throw, [thrown]}, {error, badarg}]).

raises_natural() ->
    Direct = try bs_wl:top_uncaught(raise) catch C1:R1:S1 -> {C1, R1, wl_frames(S1)} end,
    Traced = try beamspy:apply({bs_wl, top_uncaught, [raise]}, #{quiet => true, output => out()})
             catch C2:R2:S2 -> {C2, R2, wl_frames(S2)}
             end,
    ?assertMatch({error, {boom, leaf}, [{bs_wl, leaf, 1, _}, {bs_wl, mid, 1, _}, {bs_wl, top_uncaught, 1, _}]},
                 Direct),
    ?assertEqual(Direct, Traced),
    assert_clean().

wl_frames(Stack) -> [F || {bs_wl, _, _, _} = F <- Stack].

profile_raise() ->
    Stack = [{fake_mod, fake_fun, 2, [{file, "fake.erl"}, {line, 42}]}],
    {Outcome, P, []} = profile({bs_wl, reraise, [throw, ball, Stack]}, #{}),
    ?assertEqual({raise, throw, ball, Stack}, Outcome),
    ?assertEqual(1, frame_calls(own_tree(P), <<"bs_wl:reraise/3">>)),
    {{raise, error, {boom, leaf}, S}, _, _} = profile({bs_wl, top_uncaught, [raise]}, #{}),
    ?assertMatch([{bs_wl, leaf, 1, _} | _], S),
    assert_clean().

%%% ------------------------------------------------------------ bad input

bad_options() ->
    Dir = tmp_dir(),
    Target = {bs_wl, side_effect, [self()]},
    Bad = [#{output => ""}, #{output => <<>>}, #{output => 42}, #{output => [foo]},
           #{formats => []}, #{formats => [svgx]}, #{formats => folded},
           #{children => yes}, #{sleep => 1}, #{gc => "true"}, #{quiet => nil},
           #{max_memory => 0}, #{max_memory => -5}, #{max_memory => 1.5},
           #{max_processes => 0}, #{max_processes => 16#1000001},
           #{names => python}, #{bogus => 1},
           [{output, Dir}, {bogus, 1}], [{output}], [42], "output", not_options, {output, Dir}],
    lists:foreach(
      fun(Opts0) ->
              Opts = add_output(Opts0, Dir),
              Reason = try beamspy:apply(Target, Opts) of
                           V -> error({accepted, Opts, V})
                       catch error:{beamspy, R} -> R
                       end,
              check_reason(Reason, Opts),
              nothing_ran(Dir)
      end, Bad),
    %% A directory that cannot be created.
    File = tmp_dir(),
    ok = filelib:ensure_dir(File),
    ok = file:write_file(File, <<"not a directory">>),
    try
        Under = filename:join(File, "sub"),
        R = try beamspy:apply(Target, #{output => Under, quiet => true}) of
                V -> error({accepted, Under, V})
            catch error:{beamspy, Why} -> Why
            end,
        ?assertMatch({bad_output, _, _}, R),
        check_reason(R, Under),
        nothing_ran(Dir)
    after
        file:delete(File)
    end.

add_output(M, Dir) when is_map(M), not is_map_key(output, M) -> M#{output => Dir};
add_output(Other, _) -> Other.

bad_targets() ->
    Dir = tmp_dir(),
    Opts = #{output => Dir, quiet => true},
    Bad = [42, "bs_wl", {bs_wl}, {bs_wl, fib}, {bs_wl, fib, 1}, {bs_wl, fib, [1, 2]},
           {bs_wl, no_such_fun, []}, {no_such_module_xyz, f, []}, {"bs_wl", fib, [1]},
           {fun(X) -> X end, []}, {fun() -> ok end, [1]}, {fun() -> ok end, notalist},
           fun(X) -> X end, {not_a_fun, [1]}],
    lists:foreach(
      fun(T) ->
              Reason = try beamspy:apply(T, Opts) of
                           V -> error({accepted, T, V})
                       catch error:{beamspy, R} -> R
                       end,
              ?assertMatch({bad_target, _}, Reason),
              check_reason(Reason, T),
              nothing_ran(Dir),
              ?assertMatch({error, {bad_target, _}}, beamspy:profile(T, #{}))
      end, Bad).

%% The reason has a sentence of its own (not the generic ~tp rendering).
check_reason(Reason, Input) ->
    Msg = beamspy:format_error(Reason),
    ?assert(io_lib:char_list(Msg)),
    ?assert(length(Msg) > 10),
    ?assertNotEqual({Input, lists:flatten(io_lib:format("~tp", [Reason]))}, {Input, Msg}),
    ?assertNotEqual({Input, lists:flatten(io_lib:format("~tw", [Reason]))}, {Input, Msg}),
    ok.

nothing_ran(Dir) ->
    receive {ran, _} = M -> error({target_ran, M}) after 0 -> ok end,
    ?assertEqual(false, filelib:is_file(Dir)),
    assert_clean().

profile_bad_options() ->
    T = {bs_wl, side_effect, [self()]},
    ?assertMatch({error, {unknown_option, bogus, 1}}, beamspy:profile(T, #{bogus => 1})),
    ?assertMatch({error, {bad_option, sleep, _, _}}, beamspy:profile(T, [{sleep, 3}])),
    %% Neither a map nor a list: documented to return {error, _}.
    Got = try beamspy:profile(T, not_options) catch C:R -> {raised, C, R} end,
    ?assertMatch({error, {bad_options, not_options}}, Got),
    nothing_ran(tmp_dir()).

improper_args() ->
    T1 = {bs_wl, fib, [3 | 4]},
    T2 = {fun bs_wl:fib/1, [3 | 4]},
    [?assertMatch({raised, error, {beamspy, {bad_target, _}}},
                  try beamspy:apply(T, #{quiet => true, output => out()}) of
                      V -> {returned, V}
                  catch C:R -> {raised, C, R}
                  end) || T <- [T1, T2]],
    assert_clean().

huge_max_memory() ->
    Got = try beamspy:apply({bs_wl, fib, [10]}, #{max_memory => 1 bsl 70, quiet => true, output => out()}) of
              V -> {returned, V}
          catch error:{beamspy, R} -> {refused, R}
          end,
    case Got of
        {returned, 55} -> ok;
        {refused, Reason} -> ?assertMatch({bad_option, max_memory, _, _}, Reason)
    end,
    assert_clean().

%% DESIGN.md: "A clear error and nothing lost". The directory of an output
%% file that does not exist is either created, or refused before the call.
output_missing_dir() ->
    Dir = tmp_dir(),
    Path = filename:join([Dir, "no", "such", "dir", "out.folded"]),
    Self = self(),
    Got = try beamspy:apply({bs_wl, side_effect, [Self]}, #{output => Path, quiet => true}) of
              V -> {returned, V}
          catch error:{beamspy, R} -> {refused, R}
          end,
    try
        case Got of
            {returned, ran} ->
                ?assert(filelib:is_regular(Path));
            {refused, Reason} ->
                check_reason(Reason, Path),
                receive {ran, _} -> error(ran_although_refused) after 0 -> ok end
        end
    after
        flush(),
        rm_rf(Dir)
    end,
    assert_clean().

already_traced() ->
    Tracer = spawn(fun() -> receive stop -> ok end end),
    Self = self(),
    Pid = spawn(fun() ->
                        erlang:trace(self(), true, [send, {tracer, Tracer}]),
                        R = try beamspy:apply({bs_wl, side_effect, [Self]}, #{quiet => true, output => out()}) of
                                V -> {returned, V}
                            catch error:{beamspy, Why} -> {refused, Why}
                            end,
                        erlang:trace(self(), false, [all]),
                        Self ! {result, self(), R}
                end),
    R = receive {result, Pid, X} -> X after 5000 -> error(timeout) end,
    Tracer ! stop,
    ?assertMatch({refused, {already_traced, Pid, Tracer}}, R),
    {refused, Reason} = R,
    check_reason(Reason, Pid),
    receive {ran, _} -> error(ran_although_refused) after 0 -> ok end,
    assert_clean().

nested_apply() ->
    Inner = fun() ->
                    try beamspy:apply({bs_wl, fib, [5]}, #{quiet => true, output => out()}) of
                        V -> {returned, V}
                    catch error:{beamspy, Why} -> {refused, Why}
                    end
            end,
    {{{refused, Reason}, 55}, P} = profile_ok(fun() -> R = Inner(), {R, bs_wl:fib(10)} end, #{}),
    ?assert(case Reason of
                {already_traced, _, {beamspy_tracer, _}} -> true;
                {busy, Owner} -> is_pid(Owner);
                _ -> false
            end),
    check_reason(Reason, nested),
    ?assertEqual(177, frame_calls(own_tree(P), <<"bs_wl:fib/1">>)),
    assert_clean().

caller_context() ->
    flush(),
    Self = self(),
    put(bs_key, v1),
    Self ! before,
    F = fun() ->
                V = get(bs_key),
                Msg = receive before -> got after 1000 -> missing end,
                put(bs_key, v2),
                Self ! during,
                {V, Msg, self()}
        end,
    ?assertEqual({v1, got, Self}, beamspy:apply(F, #{quiet => true, output => out()})),
    ?assertEqual(v2, erase(bs_key)),
    ?assertEqual([during], element(2, process_info(self(), messages))),
    flush(),
    assert_clean().

no_stray_messages() ->
    flush(),
    Empty = fun() -> ?assertEqual({messages, []}, process_info(self(), messages)) end,
    55 = beamspy:apply({bs_wl, fib, [10]}, #{quiet => true, output => out()}),
    Empty(),
    ?assertError({boom, leaf}, beamspy:apply({bs_wl, top_uncaught, [raise]}, #{quiet => true, output => out()})),
    Empty(),
    {ok, _} = beamspy:profile({bs_wl, spawn_fib, [3, 5]}, #{}),
    Empty(),
    {ok, _} = beamspy:profile({bs_wl, mem_hog, [5, 5000]}, #{max_memory => 16384}),
    Empty(),
    ?assertError({beamspy, _}, beamspy:apply({bs_wl, fib, [1]}, #{bogus => 1})),
    Empty(),
    assert_clean().

proplist_options() ->
    Dir = tmp_dir(),
    ok = filelib:ensure_path(Dir),
    Path = filename:join(Dir, "p.folded"),
    try
        {R, Printed} = capture_output(fun() -> beamspy:apply({bs_wl, nap, [20]}, [quiet, {output, Path}, {sleep, false}, {compensate, false}]) end),
        ?assertEqual({napped, ok}, R),
        ?assertEqual("", Printed),
        ?assertEqual(["p.folded"], list_dir(Dir)),
        {ok, Bin} = file:read_file(Path),
        ?assertEqual(nomatch, binary:match(Bin, [<<"SLEEP">>, <<"WAIT">>, <<"RUNNABLE">>])),
        ?assertNotEqual(nomatch, binary:match(Bin, <<"bs_wl:nap/1;timer:sleep/1 ">>)),
        %% profile/2 with a proplist.
        {{napped, ok}, P} = profile_ok({bs_wl, nap, [20]}, [{sleep, false}, {children, false}, {gc, true}]),
        [?assertEqual(0, frame_calls(own_tree(P), F)) || F <- [<<"SLEEP">>, <<"WAIT">>, <<"RUNNABLE">>]],
        ?assertEqual(1, length(processes(P)))
    after
        rm_rf(Dir)
    end,
    assert_clean().

%%% ------------------------------------------------------------ output

-define(LINE_RE, "^[^\n]+ [0-9]+$").

output_dir() ->
    Dir = filename:join(tmp_dir(), "created/by/beamspy"),
    try
        ?assertEqual(55, beamspy:apply({bs_wl, fib, [10]}, #{output => Dir, quiet => true})),
        [File] = list_dir(Dir),
        ?assertMatch({match, _}, re:run(File, "^beamspy-.*\\.html$")),
        %% Raw times: compensated, the shortest fib calls can round to no
        %% time, and folded writes no line for them (depths are read below).
        ?assertEqual(55, beamspy:apply({bs_wl, fib, [10]}, #{output => Dir ++ "f", formats => [folded],
                                                             quiet => true, compensate => false})),
        [Folded] = list_dir(Dir ++ "f"),
        Lines = read_lines(filename:join(Dir ++ "f", Folded)),
        check_lines(Lines),
        %% Ten fib frames deep, no deeper.
        Fib = [L || L <- Lines, binary:match(L, <<"bs_wl:fib/1">>) =/= nomatch],
        Depths = lists:usort([length(binary:matches(L, <<"bs_wl:fib/1">>)) || L <- Fib]),
        ?assertEqual(10, lists:max(Depths)),
        %% formats given explicitly.
        Dir2 = Dir ++ "2",
        ?assertEqual(55, beamspy:apply({bs_wl, fib, [10]}, #{output => Dir2, formats => [folded], quiet => true})),
        ?assertMatch([_], list_dir(Dir2)),
        check_lines(read_lines(filename:join(Dir2, hd(list_dir(Dir2)))))
    after
        rm_rf(filename:dirname(filename:dirname(filename:dirname(Dir))))
    end,
    assert_clean().

output_file() ->
    Dir = tmp_dir(),
    ok = filelib:ensure_path(Dir),
    Path = filename:join(Dir, "fib.folded"),
    Upper = filename:join(Dir, "FIB2.FOLDED"),
    try
        ?assertEqual(55, beamspy:apply({bs_wl, fib, [10]}, #{output => Path, quiet => true})),
        ?assertEqual(["fib.folded"], list_dir(Dir)),
        check_lines(read_lines(Path)),
        %% Overwrites an existing file atomically, still nothing else left.
        %% Raw times: the depth is read from the folded lines, and a line
        %% whose compensated time rounds to 0 µs is not written (a leaf of
        %% fib(6) keeps a few hundred ns).
        ?assertEqual(8, beamspy:apply({bs_wl, fib, [6]}, #{output => list_to_binary(Path), quiet => true,
                                                           compensate => false})),
        ?assertEqual(["fib.folded"], list_dir(Dir)),
        Lines = read_lines(Path),
        check_lines(Lines),
        ?assertEqual(6, lists:max([length(binary:matches(L, <<"bs_wl:fib/1">>)) || L <- Lines])),
        ?assertEqual(8, beamspy:apply({bs_wl, fib, [6]}, #{output => Upper, quiet => true})),
        ?assertEqual(["FIB2.FOLDED", "fib.folded"], list_dir(Dir))
    after
        rm_rf(Dir)
    end,
    assert_clean().

%% With output given, profile/2 writes the file too: its lines must be
%% exactly the nodes of the profile with a non-zero rounded self time.
folded_matches_profile() ->
    Dir = tmp_dir(),
    ok = filelib:ensure_path(Dir),
    Path = filename:join(Dir, "x.folded"),
    try
        {{return, {21, _}}, P, Files} = profile({bs_wl, fib_then_spawn, [2, 8]}, #{output => Path}),
        ?assertEqual([Path], Files),
        Lines = read_lines(Path),
        check_lines(Lines),
        Expected = lists:append(
                     [begin
                          M = node_map(Nodes),
                          [iolist_to_binary([lists:join(";", [Label | path(M, Id)]), " ",
                                             integer_to_list((Self + 500) div 1000)])
                           || {Id, _, _, Self, _, _} <- Nodes, (Self + 500) div 1000 > 0]
                      end || {Label, Nodes} <- processes(P)]),
        ?assertEqual(lists:sort(Expected), lists:sort(Lines)),
        ?assertEqual(3, length(lists:usort([hd(binary:split(L, [<<";">>, <<" ">>])) || L <- Lines])))
    after
        rm_rf(Dir)
    end,
    assert_clean().

read_lines(Path) ->
    {ok, Bin} = file:read_file(Path),
    ?assertNotEqual(<<>>, Bin),
    ?assertEqual($\n, binary:last(Bin)),
    ?assertEqual(nomatch, binary:match(Bin, <<"\r">>)),
    ?assert(is_binary(unicode:characters_to_binary(Bin))),
    binary:split(Bin, <<"\n">>, [global, trim]).

%% Every line matches the folded grammar and starts at the caller's pid
%% (the only process of these workloads that is not a child).
check_lines(Lines) ->
    ?assertNotEqual([], Lines),
    Pids = [list_to_binary(pid_to_list(self()))],
    [begin
         ?assertMatch({L, {match, _}}, {L, re:run(L, ?LINE_RE)}),
         [Root | _] = binary:split(L, [<<";">>]),
         [RootPid | _] = binary:split(Root, <<" ">>),
         ?assertMatch({L, <<"<", _/binary>>}, {L, RootPid}),
         ?assert(is_pid(list_to_pid(binary_to_list(RootPid))))
     end || L <- Lines],
    ?assert(lists:any(fun(L) -> binary:match(L, Pids) =:= {0, byte_size(hd(Pids))} end, Lines)),
    ok.

printing() ->
    Dir = tmp_dir(),
    ok = filelib:ensure_path(Dir),
    Path = filename:join(Dir, "printed.folded"),
    try
        {55, Loud} = capture_output(fun() -> beamspy:apply({bs_wl, fib, [10]}, #{output => Path}) end),
        %% Where it wrote, then what the times are (a folded file has no
        %% header to say it in).
        ?assertMatch(["beamspy: wrote " ++ _, "beamspy: traced times compensated for tracer overhead: " ++ _, ""],
                     string:split(Loud, "\n", all)),
        ?assertEqual("beamspy: wrote " ++ Path, hd(string:split(Loud, "\n"))),
        {55, Quiet} = capture_output(fun() -> beamspy:apply({bs_wl, fib, [10]}, #{output => Path, quiet => true}) end),
        ?assertEqual("", Quiet),
        {{ok, _}, Silent} = capture_output(fun() -> beamspy:profile({bs_wl, fib, [10]}, #{}) end),
        ?assertEqual("", Silent)
    after
        rm_rf(Dir)
    end,
    assert_clean().

%%% ------------------------------------------------------------ names

elixir_names() ->
    {{'Elixir.Foo.Bar', 100}, P} = profile_ok({'Elixir.Foo.Bar', f, [100]}, #{names => elixir}),
    Nodes = own_tree(P),
    M = node_map(Nodes),
    Paths = [path(M, Id) || {Id, _, F, _, _, _} <- tl(Nodes), not bs_test_lib:sched_out(F)],
    ?assert(lists:member([<<"Foo.Bar.f/1">>], Paths)),
    ?assert(lists:member([<<"Foo.Bar.f/1">>, <<":lists.seq/2">>], Paths)),
    ?assert(lists:member([<<"Foo.Bar.f/1">>, <<":lists.reverse/1">>], Paths)),
    Frames = lists:usort(lists:append(Paths)),
    [?assertMatch({F, true}, {F, binary:first(F) =:= $: orelse F =:= <<"Foo.Bar.f/1">>}) || F <- Frames],
    ?assertEqual([], [F || F <- Frames, binary:match(F, <<"Elixir">>) =/= nomatch]),
    %% In a file too.
    Dir = tmp_dir(),
    Path = filename:join(Dir, "ex.folded"),
    ok = filelib:ensure_path(Dir),
    try
        {'Elixir.Foo.Bar', 100} = beamspy:apply({'Elixir.Foo.Bar', f, [100]}, #{names => elixir, output => Path, quiet => true,
                                                                   compensate => false}),
        {ok, Bin} = file:read_file(Path),
        ?assertNotEqual(nomatch, binary:match(Bin, <<";Foo.Bar.f/1;:lists.seq/2 ">>))
    after
        rm_rf(Dir)
    end,
    assert_clean().

erlang_names() ->
    {{'Elixir.Foo.Bar', 10}, P} = profile_ok({'Elixir.Foo.Bar', f, [10]}, #{}),
    Nodes = own_tree(P),
    ?assertEqual(1, frame_calls(Nodes, <<"'Elixir.Foo.Bar':f/1">>)),
    ?assertEqual(1, frame_calls(Nodes, <<"lists:seq/2">>)),
    assert_clean().

%%% ------------------------------------------------------------ helpers

%% A fresh output file name under the test tmp directory.
out() -> tmp_dir() ++ ".folded".
