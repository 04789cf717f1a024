%%% Ground truth for the shape of the call tree: recursion depth, call counts
%%% against OTP's cprof, tail recursion, and unwinding after exceptions.
-module(beamspy_tree_tests).

-include_lib("eunit/include/eunit.hrl").

-import(bs_test_lib, [profile_ok/2, own_tree/1, depth_counts/2, frame_calls/2,
                      nodes_of/2, node_map/1, path/2, max_depth/1, frame_paths/1,
                      assert_clean/0]).

-define(FIB, <<"bs_wl:fib/1">>).

setup() ->
    [{module, M} = code:ensure_loaded(M) || M <- [bs_wl, bs_cp, cprof]],
    ok.

tree_test_() ->
    {setup, fun setup/0, fun(_) -> ok end,
     [{"fib(15): calls per recursion depth are exact", {timeout, 60, fun fib_depths/0}},
      {"fib(12) via {Fun, Args}: same exact counts", {timeout, 60, fun fib_fun_args/0}},
      {"call counts equal cprof's", {timeout, 120, fun cprof_counts/0}},
      {"1M-iteration tail loop keeps a constant stack", {timeout, 120, fun tail_loop/0}},
      {"caught exception: later calls land under the catching frame", {timeout, 60, fun caught_exception/0}},
      {"no exception: same workload nests normally", {timeout, 60, fun no_exception/0}},
      {"exception through three frames: the catcher's next calls are its children", fun catcher/0},
      {"exception raised by a BIF inside try: next call under the catcher", fun bif_catch/0},
      {"body recursion 100000 deep: one node per level, exact; folded file valid", {timeout, 120, fun deep_recursion/0}},
      {"a module loaded during the call is traced (on_load), then untraced", {timeout, 60, fun loaded_mid_call/0}},
      {"unicode function names are UTF-8 frames", fun unicode_names/0}]}.

fib_depths() ->
    {610, P} = profile_ok({bs_wl, fib, [15]}, #{}),
    #{truncated := false, dropped := 0, events := Events} = P,
    ?assert(Events >= 2 * 1973), % a call and a return_to per fib call
    Nodes = own_tree(P),
    Expected = bs_wl:fib_calls_per_depth(15),
    ?assertEqual(15, map_size(Expected)),
    ?assertEqual(1973, lists:sum(maps:values(Expected))),
    ?assertEqual(Expected, depth_counts(Nodes, ?FIB)),
    ?assertEqual(1973, frame_calls(Nodes, ?FIB)),
    %% One node per depth (the recursion is not collapsed, nor split), and
    %% the outermost fib hangs directly under the process root.
    ?assertEqual(15, length(nodes_of(Nodes, ?FIB))),
    M = node_map(Nodes),
    [Top] = [Id || {Id, _, ?FIB, _, _, 1} <- Nodes, path(M, Id) =:= [?FIB]],
    ?assertEqual(0, element(2, maps:get(Top, M))),
    %% Nothing but fib (and SLEEP leaves) in the caller's tree.
    ?assertEqual([], [F || {_, _, F, _, _, _} <- tl(Nodes), F =/= ?FIB, not bs_test_lib:sched_out(F)]),
    assert_clean().

fib_fun_args() ->
    {144, P} = profile_ok({fun bs_wl:fib/1, [12]}, []),
    ?assertEqual(bs_wl:fib_calls_per_depth(12), depth_counts(own_tree(P), ?FIB)),
    assert_clean().

cprof_counts() ->
    N = 3000,
    _ = cprof:stop(),
    Funs = cprof:start(bs_cp),
    ?assert(Funs >= 8),
    Direct = bs_cp:run(N),
    _ = cprof:pause(),
    {bs_cp, _Total, CprofList} = cprof:analyse(bs_cp),
    _ = cprof:stop(),
    Cprof = maps:from_list([{iolist_to_binary(io_lib:format("~w:~w/~w", [M, F, A])), C}
                            || {{M, F, A}, C} <- CprofList, C > 0]),
    %% The workload really exercises what it claims to.
    [?assert(maps:is_key(K, Cprof)) || K <- [<<"bs_cp:run/1">>, <<"bs_cp:sum_loop/2">>,
                                             <<"bs_cp:add/2">>, <<"bs_cp:is_even/1">>,
                                             <<"bs_cp:is_odd/1">>, <<"bs_cp:depth_a/1">>,
                                             <<"bs_cp:depth_b/1">>, <<"bs_cp:twice/1">>]],
    ?assert(map_size(Cprof) >= 9), % + the fun given to lists:foldl/3
    {Traced, P} = profile_ok({bs_cp, run, [N]}, #{}),
    ?assertEqual(Direct, Traced),
    #{truncated := false, dropped := 0} = P,
    Nodes = own_tree(P),
    Beamspy = lists:foldl(fun({_, _, F, _, _, C}, Acc) ->
                                  case F of
                                      <<"bs_cp:", _/binary>> ->
                                          maps:update_with(F, fun(X) -> X + C end, C, Acc);
                                      _ ->
                                          Acc
                                  end
                          end, #{}, Nodes),
    ?assertEqual(Cprof, Beamspy),
    assert_clean().

tail_loop() ->
    Loop2 = <<"bs_wl:loop/2">>,
    Step = <<"bs_wl:step/1">>,
    {{loop, 1000}, Small} = profile_ok({bs_wl, loop, [1000]}, #{}),
    {{loop, 1000000}, Big} = profile_ok({bs_wl, loop, [1000000]}, #{}),
    #{truncated := false, dropped := 0} = Big,
    S = own_tree(Small),
    B = own_tree(Big),
    NoSleep = fun(Paths) -> [Pa || Pa <- Paths, not bs_test_lib:sched_out(lists:last(Pa))] end,
    Expected = [[<<"bs_wl:loop/1">>],
                [<<"bs_wl:loop/1">>, Loop2],
                [<<"bs_wl:loop/1">>, Loop2, Step]],
    ?assertEqual(Expected, NoSleep(frame_paths(S))),
    ?assertEqual(Expected, NoSleep(frame_paths(B))),
    ?assert(max_depth(B) =< 4), % loop/1 ; loop/2 ; step/1 ; RUNNABLE
    ?assertEqual(1, length(nodes_of(B, Loop2))),
    ?assertEqual(1, length(nodes_of(B, Step))),
    ?assertEqual(1000001, frame_calls(B, Loop2)),
    ?assertEqual(1000000, frame_calls(B, Step)),
    ?assertEqual(1001, frame_calls(S, Loop2)),
    assert_clean().

caught_exception() ->
    {{top, {post, {caught, {boom, leaf}}}}, P} = profile_ok({bs_wl, top, [raise]}, #{}),
    Nodes = own_tree(P),
    M = node_map(Nodes),
    Paths = [path(M, Id) || {Id, _, F, _, _, _} <- tl(Nodes), not bs_test_lib:sched_out(F)],
    Top = <<"bs_wl:top/1">>,
    Mid = <<"bs_wl:mid/1">>,
    Leaf = <<"bs_wl:leaf/1">>,
    Post = <<"bs_wl:post/1">>,
    ?assert(lists:member([Top, Mid, Leaf], Paths)),
    assert_bif_frame([Top, Mid, Leaf], {erlang, error, 1}, Paths),
    %% post/1 is called by top/1 after the catch: directly under top.
    ?assertEqual([[Top, Post]], [Pa || Pa <- Paths, lists:last(Pa) =:= Post]),
    ?assertEqual(1, frame_calls(Nodes, Post)),
    ?assertEqual(1, frame_calls(Nodes, Top)),
    assert_clean().

no_exception() ->
    {{top, {post, {mid, ok}}}, P} = profile_ok({bs_wl, top, [ok]}, #{}),
    Nodes = own_tree(P),
    M = node_map(Nodes),
    Paths = lists:usort([path(M, Id) || {Id, _, F, _, _, _} <- tl(Nodes), not bs_test_lib:sched_out(F)]),
    ?assertEqual([[<<"bs_wl:top/1">>],
                  [<<"bs_wl:top/1">>, <<"bs_wl:mid/1">>],
                  [<<"bs_wl:top/1">>, <<"bs_wl:mid/1">>, <<"bs_wl:leaf/1">>],
                  [<<"bs_wl:top/1">>, <<"bs_wl:post/1">>]], Paths),
    assert_clean().

catcher() ->
    {{caught, 2}, P} = profile_ok({bs_wl, catcher, [raise]}, #{}),
    Nodes = own_tree(P),
    M = node_map(Nodes),
    C = <<"bs_wl:catcher/1">>,
    Paths = [path(M, Id) || {Id, _, F, _, _, _} <- tl(Nodes), not bs_test_lib:sched_out(F)],
    ?assert(lists:member([C, <<"bs_wl:top_uncaught/1">>, <<"bs_wl:mid/1">>, <<"bs_wl:leaf/1">>], Paths)),
    %% fib(3) makes 5 calls, all below catcher/1, none below the unwound frames.
    FibPaths = [Pa || Pa <- Paths, lists:last(Pa) =:= ?FIB],
    ?assertEqual([[C, ?FIB], [C, ?FIB, ?FIB], [C, ?FIB, ?FIB, ?FIB]], lists:sort(FibPaths)),
    ?assertEqual(bs_wl:fib_calls_per_depth(3), depth_counts(Nodes, ?FIB)),
    assert_clean().

bif_catch() ->
    {{bif, {post, {caught, oops}}}, P} = profile_ok({bs_wl, bif_catch, [oops]}, #{}),
    Nodes = own_tree(P),
    M = node_map(Nodes),
    B = <<"bs_wl:bif_catch/1">>,
    Paths = [path(M, Id) || {Id, _, F, _, _, _} <- tl(Nodes), not bs_test_lib:sched_out(F)],
    assert_bif_frame([B], {erlang, error, 1}, Paths),
    ?assertEqual([[B, <<"bs_wl:post/1">>]], [Pa || Pa <- Paths, lists:last(Pa) =:= <<"bs_wl:post/1">>]),
    assert_clean().

deep_recursion() ->
    Deep = <<"bs_wl:deep/1">>,
    N = 100000,
    Path = bs_test_lib:tmp_dir() ++ ".folded",
    try
        {{return, N}, P, [Path]} = bs_test_lib:profile({bs_wl, deep, [N]}, #{output => Path}),
        #{truncated := false, dropped := 0} = P,
        Nodes = own_tree(P),
        ?assertEqual(N + 1, length(nodes_of(Nodes, Deep))),
        ?assertEqual(maps:from_list([{D, 1} || D <- lists:seq(1, N + 1)]), depth_counts(Nodes, Deep)),
        ?assert(max_depth(Nodes) >= N + 1),
        %% The folded file of a 100,001-frame stack: valid lines, and no
        %% time lost (each line rounds to the microsecond).
        {ok, Bin} = file:read_file(Path),
        Lines = binary:split(Bin, <<"\n">>, [global, trim]),
        Counts = [begin
                      ?assertMatch({match, _}, re:run(L, "^[^\n]+ [0-9]+$")),
                      [_, C] = string:split(L, " ", trailing),
                      binary_to_integer(C)
                  end || L <- Lines],
        %% Each stack with time rounds by less than a microsecond (one that
        %% rounds to nothing, as the compensated shortest calls can, writes
        %% no line).
        [{0, undefined, _, _, RootTotal, _} | _] = Nodes,
        Timed = length([S || {_, _, _, S, _, _} <- Nodes, S > 0]),
        ?assert(abs(lists:sum(Counts) - RootTotal / 1000) =< Timed + 1)
    after
        file:delete(Path)
    end,
    assert_clean().

loaded_mid_call() ->
    Mod = bs_dyn_loaded,
    _ = code:purge(Mod),
    _ = code:delete(Mod),
    _ = code:purge(Mod),
    Src = "-module(bs_dyn_loaded).\n-export([f/1]).\n"
          "f(X) -> Y = g(X), Y + 1.\n"
          "g(X) -> X * 2.\n",
    Forms = forms(Src),
    {ok, Mod, Bin} = compile:forms(Forms, [binary]),
    ?assertEqual(false, code:is_loaded(Mod)),
    F = fun() ->
                {module, Mod} = code:load_binary(Mod, "bs_dyn_loaded.erl", Bin),
                R = Mod:f(5),
                {loaded, R}
        end,
    try
        {{loaded, 11}, P} = profile_ok(F, #{}),
        Nodes = own_tree(P),
        M = node_map(Nodes),
        Paths = [path(M, Id) || {Id, _, <<"bs_dyn_loaded:", _/binary>>, _, _, _} <- Nodes],
        ?assert(lists:any(fun(Pa) -> lists:suffix([<<"bs_dyn_loaded:f/1">>], Pa) end, Paths)),
        ?assert(lists:any(fun(Pa) -> lists:suffix([<<"bs_dyn_loaded:f/1">>, <<"bs_dyn_loaded:g/1">>], Pa) end, Paths)),
        assert_clean(),
        ?assertEqual({traced, false}, erlang:trace_info({Mod, f, 1}, traced)),
        ?assertEqual({traced, false}, erlang:trace_info({Mod, g, 1}, traced))
    after
        code:purge(Mod),
        code:delete(Mod),
        code:purge(Mod)
    end.

forms(Src) ->
    {ok, Tokens, _} = erl_scan:string(Src),
    split_forms(Tokens, [], []).

split_forms([], [], Acc) -> lists:reverse(Acc);
split_forms([{dot, _} = D | Rest], Cur, Acc) ->
    {ok, Form} = erl_parse:parse_form(lists:reverse([D | Cur])),
    split_forms(Rest, [], [Form | Acc]);
split_forms([T | Rest], Cur, Acc) -> split_forms(Rest, [T | Cur], Acc).

unicode_names() ->
    {{unicode, 2}, P} = profile_ok({bs_wl, unicode, [1]}, #{}),
    Nodes = own_tree(P),
    Frame = unicode:characters_to_binary("bs_wl:'\x{65E5}\x{672C}'/1"),
    ?assertEqual(1, frame_calls(Nodes, Frame)),
    [?assert(is_binary(unicode:characters_to_binary(F))) || {_, _, F, _, _, _} <- Nodes],
    {{unicode, 2}, PE} = profile_ok({bs_wl, unicode, [1]}, #{names => elixir}),
    ?assertEqual(1, frame_calls(own_tree(PE), unicode:characters_to_binary(":bs_wl.\x{65E5}\x{672C}/1"))),
    assert_clean().

%% The BIF's frame is under Caller, or, where beamspy leaves that BIF untraced
%% (OTP 27+, beamspy_backend:untraced_bifs/0), in no stack at all.
assert_bif_frame(Caller, {M, F, A} = Bif, Paths) ->
    Frame = iolist_to_binary(io_lib:format("~s:~s/~b", [M, F, A])),
    case lists:member(Bif, beamspy_backend:untraced_bifs()) of
        false -> ?assert(lists:member(Caller ++ [Frame], Paths));
        true -> ?assertEqual([], [Pa || Pa <- Paths, lists:member(Frame, Pa)])
    end.
