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
                        {"a running capture is not cut short; concurrent unloads",
                         {timeout, 120, fun() -> capture_busy(Ctx) end}},
                        {"nothing starts while unloading", fun() -> unloading(Ctx) end},
                        {"a plain call in progress is not killed", {timeout, 120, fun() -> plain_call(Ctx) end}},
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
    {error, {busy, {jobs_running, Node, Jobs}} = Why} = beamspy:unload(Node),
    ?assertMatch([_ | _], [P || {session, P} <- Jobs]),
    ?assertMatch({match, _}, re:run(beamspy:format_error(Why), "stop them first")),
    ?assertNotEqual(false, erpc:call(Node, code, is_loaded, [beamspy])),
    %% Once the caller is gone its recording ends, and unload goes through.
    exit(Caller, kill),
    wait_until(fun() -> erpc:call(Node, beamspy, sessions, []) =:= [] end),
    {ok, #{deferred := false}} = beamspy:unload(Node),
    wait_until(fun() -> erpc:call(Node, code, is_loaded, [beamspy]) =:= false end),
    ?assertEqual(false, erpc:call(Node, erlang, function_exported, [beamspy_tracer, trace, 5])),
    file:delete(Out),
    ?assertEqual([], bs_test_lib:list_dir(Tmp)).

%% A capture waiting for calls (the issue's case: its owner and watchdog
%% were purged, the node kept every local pattern, the meta pattern and
%% on_load traced). Unload is refused while it runs, three at once too;
%% once it has ended, three at once: one unloads, the others say why not.
capture_busy(#{node := Node, tmp := Tmp}) ->
    {ok, _} = beamspy:load(Node),
    MFA = {calendar, iso_week_number, 1},
    Out = filename:join(Tmp, "cap.folded"),
    Caller = erpc:call(Node, erlang, spawn,
                       [beamspy, capture, [MFA, 100000, #{timeout => 600000, output => Out, quiet => true}]]),
    wait_until(fun() -> is_pid(erpc:call(Node, erlang, whereis, [beamspy_active_session])) end),
    {error, {busy, {jobs_running, Node, Jobs}} = Why} = beamspy:unload(Node),
    ?assertMatch([_ | _], [P || {capture, P} <- Jobs]),
    ?assertMatch({match, _}, re:run(beamspy:format_error(Why), "capture")),
    Busy = concurrently(3, fun() -> beamspy:unload(Node) end),
    ?assertEqual([], [R || R <- Busy, not is_busy(R)]),
    %% Still there, still capturing (its name is registered before its
    %% meta pattern is set: on a loaded machine the pattern may come later).
    ?assertNotEqual(false, erpc:call(Node, code, is_loaded, [beamspy_capture])),
    wait_until(fun() -> {meta, false} =/= erpc:call(Node, erlang, trace_info, [MFA, meta]) end),
    %% Its caller gone, the capture ends (nothing captured) and cleans up.
    exit(Caller, kill),
    wait_until(fun() -> undefined =:= erpc:call(Node, erlang, whereis, [beamspy_active_session]) end),
    Results = concurrently(3, fun() -> beamspy:unload(Node) end),
    ?assertMatch([{ok, #{deferred := false}}], [R || {ok, _} = R <- Results]),
    ?assertEqual([], [R || R <- Results, element(1, R) =/= ok,
                           not is_busy(R), R =/= {error, {nothing_loaded, Node}}]),
    wait_until(fun() -> erpc:call(Node, code, is_loaded, [beamspy_capture]) =:= false end),
    ?assertEqual([], [M || M <- erpc:call(Node, code, all_loaded, []),
                           lists:prefix("beamspy", atom_to_list(element(1, M)))]),
    ?assertEqual({traced, false}, erpc:call(Node, erlang, trace_info, [{lists, reverse, 2}, traced])),
    ?assertEqual({traced, false}, erpc:call(Node, erlang, trace_info, [on_load, traced])),
    ?assertEqual({meta, false}, erpc:call(Node, erlang, trace_info, [MFA, meta])),
    ?assertEqual([], bs_test_lib:list_dir(Tmp)).

%% While an unload holds the node (its lock, taken here by hand), no job
%% starts there and a second unload is told so.
unloading(#{node := Node}) ->
    {ok, _} = beamspy:load(Node),
    %% Runs no code of a module (the node has none of these tests): woken
    %% by a message, it exits.
    Holder = spawn(Node, erlang, hibernate, [erlang, exit, [normal]]),
    true = erpc:call(Node, erlang, register, [beamspy_unloading, Holder]),
    Unloading = {error, {busy, {unloading, Node}}},
    ?assertEqual(Unloading, beamspy:unload(Node)),
    ?assertMatch({match, _}, re:run(beamspy:format_error(element(2, Unloading)), "being unloaded")),
    ?assertEqual(Unloading, erpc:call(Node, beamspy, start, [all, #{quiet => true}])),
    ?assertEqual(Unloading, erpc:call(Node, beamspy, capture, [{calendar, iso_week_number, 1}, 1,
                                                                #{timeout => 1000, quiet => true}])),
    ?assertMatch({error, {sampler_failed, {busy, {unloading, Node}}}},
                 erpc:call(Node, beamspy_sampler, start, [#{owner => Holder}])),
    ?assertMatch({error, {top_failed, {busy, {unloading, Node}}}},
                 erpc:call(Node, beamspy_top, start, [#{owner => Holder}])),
    ?assertEqual([], erpc:call(Node, beamspy, sessions, [])),
    Holder ! release,
    {ok, #{deferred := false}} = beamspy:unload(Node),
    wait_until(fun() -> erpc:call(Node, code, is_loaded, [beamspy]) =:= false end).

%% A process in the middle of a plain call of beamspy's (not a job):
%% beamspy:apply/2 printing what it wrote, to a group leader that does not
%% answer yet, sits in io with beamspy_report and beamspy under it. The
%% unload's purge once killed it when the unload's time was up. Now the
%% unload waits for it to leave beamspy's code (half its time), and says
%% which process runs it if it does not; a call it cannot see (deeper than
%% the stacks process_info/2 shows) is not killed either: the old code
%% stays until it has left it, and the reply says so.
plain_call(#{node := Node, tmp := Tmp}) ->
    {ok, _} = beamspy:load(Node),
    Out = filename:join(Tmp, "plain.folded"),
    {Caller, Mon, Answer} = blocked_apply(Node, Out),
    {error, {busy, {jobs_running, Node, [{beamspy_report, Caller}]}} = Why} = beamspy:unload(Node, 2000),
    ?assertMatch({match, _}, re:run(beamspy:format_error(Why), "beamspy_report")),
    ?assert(erpc:call(Node, erlang, is_process_alive, [Caller])),
    Answer(),
    receive {'DOWN', Mon, process, Caller, Why1} -> ?assertEqual(normal, Why1) end,
    {ok, #{deferred := false, purged := true, running := []}} = beamspy:unload(Node, 5000),
    ?assertEqual([], old_code(Node)),
    %% Unseen: stacks shown one frame deep, the caller's frame is io's.
    {ok, _} = beamspy:load(Node),
    {Caller2, Mon2, Answer2} = blocked_apply(Node, Out),
    Depth = erpc:call(Node, erlang, system_flag, [backtrace_depth, 1]),
    try
        {ok, #{deferred := false, purged := false, running := [Caller2]}} = beamspy:unload(Node, 2000)
    after
        erpc:call(Node, erlang, system_flag, [backtrace_depth, Depth])
    end,
    ?assert(erpc:call(Node, erlang, is_process_alive, [Caller2])),
    ?assertEqual(false, erpc:call(Node, code, is_loaded, [beamspy])),
    ?assert(erpc:call(Node, erlang, check_old_code, [beamspy_report])),
    %% Answered, it goes on (its next call of beamspy's is undefined: the
    %% code is gone) and the node purges the old code it leaves.
    Answer2(),
    receive {'DOWN', Mon2, process, Caller2, Why2} -> ?assertNotEqual(killed, Why2) end,
    wait_until(fun() -> [] =:= old_code(Node) end),
    ?assertEqual([], [M || M <- erpc:call(Node, erlang, loaded, []), lists:prefix("beamspy", atom_to_list(M))]),
    ok = file:delete(Out),
    ?assertEqual([], bs_test_lib:list_dir(Tmp)).

%% A process on Node in beamspy:apply/2, blocked printing what it wrote
%% (its group leader answers nothing until Answer() is called): its pid, a
%% monitor of it, and Answer.
blocked_apply(Node, Out) ->
    Silent = spawn(Node, timer, sleep, [infinity]),
    %% Runs no code of beamspy's until woken, once its group leader is set.
    Caller = spawn(Node, erlang, hibernate, [beamspy, apply, [{lists, sort, [[3, 1, 2]]}, #{output => Out}]]),
    true = erpc:call(Node, erlang, group_leader, [Silent, Caller]),
    Mon = erlang:monitor(process, Caller),
    Caller ! go,
    wait_until(fun() -> {message_queue_len, 1} =:= erpc:call(Node, erlang, process_info, [Silent, message_queue_len]) end),
    {current_stacktrace, Stack} = erpc:call(Node, erlang, process_info, [Caller, current_stacktrace]),
    ?assertMatch([beamspy_report | _], [M || {M, _, _, _} <- Stack, lists:prefix("beamspy", atom_to_list(M))]),
    Answer = fun() ->
                     %% What it prints next goes to the node's output.
                     User = erpc:call(Node, erlang, whereis, [user]),
                     true = erpc:call(Node, erlang, group_leader, [User, Caller]),
                     {messages, [{io_request, From, ReplyAs, _}]} = erpc:call(Node, erlang, process_info, [Silent, messages]),
                     From ! {io_reply, ReplyAs, ok},
                     exit(Silent, kill)
             end,
    {Caller, Mon, Answer}.

%% beamspy's modules with old code on Node.
old_code(Node) ->
    [M || M <- erpc:call(Node, erlang, loaded, []), lists:prefix("beamspy", atom_to_list(M)),
          erpc:call(Node, erlang, check_old_code, [M])].

is_busy({error, {busy, {unloading, _}}}) -> true;
is_busy({error, {busy, {jobs_running, _, [_ | _]}}}) -> true;
is_busy(_) -> false.

%% Fun run by N processes at once; their results (an exception as
%% {raised, Class, Reason}).
concurrently(N, Fun) ->
    Self = self(),
    Pids = [spawn(fun() ->
                          receive go -> ok end,
                          R = try Fun() catch C:E -> {raised, C, E} end,
                          Self ! {self(), R}
                  end) || _ <- lists:seq(1, N)],
    [P ! go || P <- Pids],
    [receive {P, R} -> R end || P <- Pids].

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
