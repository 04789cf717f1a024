%%% beamspy_remote_tests — beamspy:load/1 and unload/1 against a real second
%%% node that has nothing of beamspy: profile through erpc, nothing left on
%%% its disk, a running recording refused, everything gone after unload.
-module(beamspy_remote_tests).

-include_lib("eunit/include/eunit.hrl").

remote_test_() ->
    {setup, fun setup/0, fun cleanup/1,
     fun(Ctx) ->
             {inorder, [{"load, profile over erpc, unload", fun() -> round_trip(Ctx) end},
                        {"a running recording is not cut short", fun() -> busy(Ctx) end},
                        {"errors", fun() -> errors(Ctx) end}]}
     end}.

setup() ->
    Started = bs_test_lib:distributed("bsrem"),
    Tmp = bs_test_lib:tmp_dir(),
    ok = filelib:ensure_path(Tmp),
    %% The peer gets no -pa: beamspy is not in its code path.
    {ok, Peer, Node} = peer:start_link(#{name => list_to_atom("bsremb" ++ os:getpid()),
                                         env => [{"TMPDIR", Tmp}]}),
    #{node => Node, peer => Peer, tmp => Tmp, started => Started}.

cleanup(#{peer := Peer, tmp := Tmp, started := Started}) ->
    peer:stop(Peer),
    bs_test_lib:rm_rf(Tmp),
    _ = [net_kernel:stop() || Started],
    ok.

round_trip(#{node := Node, tmp := Tmp}) ->
    ?assertEqual(non_existing, erpc:call(Node, code, which, [beamspy])),
    {ok, #{loaded := Loaded, kept := []}} = beamspy:load(Node),
    ?assert(lists:member(beamspy, Loaded)),
    ?assert(lists:member(beamspy_tracer, Loaded)),
    %% The NIF's file and directory are gone, and so is the setting that
    %% pointed at them.
    ?assertEqual([], bs_test_lib:list_dir(Tmp)),
    ?assertEqual(undefined, erpc:call(Node, application, get_env, [beamspy, nif_dir])),
    {ok, #{result := {return, [1, 2, 3]}, profile := #{processes := [{_, Nodes}]}}} =
        erpc:call(Node, beamspy, profile, [{lists, sort, [[3, 1, 2]]}, #{}]),
    ?assert(lists:any(fun({_, _, F, _, _, _}) -> F =:= <<"lists:sort/1">> end, Nodes)),
    %% A flame graph brought back as data, nothing written on the node.
    {ok, #{svg := Svg, html := Html, files := []}} =
        erpc:call(Node, beamspy, profile, [{lists, sort, [[3, 1, 2]]}, #{return => [svg, html]}]),
    ?assertMatch({match, _}, re:run(Svg, "lists:sort/1")),
    ?assertMatch({match, _}, re:run(Html, "<html", [caseless])),
    %% Loading again keeps what is there.
    {ok, #{loaded := [], kept := Kept}} = beamspy:load(Node),
    ?assertEqual(lists:sort(Loaded), lists:sort(Kept)),
    {ok, #{unloaded := Unloaded, deferred := false}} = beamspy:unload(Node),
    ?assertEqual(lists:sort(Loaded), lists:sort(Unloaded)),
    wait_until(fun() -> [] =:= [M || M <- Loaded, erpc:call(Node, code, is_loaded, [M]) =/= false] end),
    ?assertEqual([], bs_test_lib:list_dir(Tmp)),
    ?assertEqual(undefined, erpc:call(Node, application, get_env, [beamspy, delivered])).

busy(#{node := Node, tmp := Tmp}) ->
    {ok, _} = beamspy:load(Node),
    Out = filename:join(Tmp, "busy.folded"),
    Caller = erpc:call(Node, erlang, spawn, [beamspy, apply, [{timer, sleep, [infinity]},
                                                               #{output => Out, quiet => true}]]),
    wait_until(fun() -> erpc:call(Node, beamspy, sessions, []) =/= [] end),
    {error, {sessions_running, Node, 1} = Why} = beamspy:unload(Node),
    ?assertMatch({match, _}, re:run(beamspy:format_error(Why), "stop it first")),
    ?assertNotEqual(false, erpc:call(Node, code, is_loaded, [beamspy])),
    %% Once the caller is gone its recording ends, and unload goes through.
    exit(Caller, kill),
    wait_until(fun() -> erpc:call(Node, beamspy, sessions, []) =:= [] end),
    {ok, #{deferred := false}} = beamspy:unload(Node),
    wait_until(fun() -> erpc:call(Node, code, is_loaded, [beamspy]) =:= false end),
    ?assertEqual(false, erpc:call(Node, erlang, function_exported, [beamspy_tracer, trace, 5])),
    file:delete(Out),
    ?assertEqual([], bs_test_lib:list_dir(Tmp)).

errors(#{node := Node}) ->
    {error, {nothing_loaded, Node}} = beamspy:unload(Node),
    Down = list_to_atom("bsremnone" ++ os:getpid() ++ "@" ++ lists:last(string:split(atom_to_list(node()), "@"))),
    {error, {nodedown, Down} = Why} = beamspy:load(Down),
    ?assertMatch({match, _}, re:run(beamspy:format_error(Why), "cannot be reached")),
    ?assertMatch({match, _}, re:run(beamspy:format_error({incompatible_node, Node, "OTP 29 on x", "OTP 25 on x"}),
                                    "OTP 29 on x.*OTP 25 on x")).

%% Polls Fun every 20 ms, for at most 30 s.
wait_until(Fun) ->
    wait_until(Fun, 1500).

wait_until(Fun, 0) -> ?assert(Fun());
wait_until(Fun, N) ->
    case Fun() of
        true -> ok;
        false -> timer:sleep(20), wait_until(Fun, N - 1)
    end.
