%%% Workloads for the robustness and stress tests: processes that spawn
%%% short-lived children without pause (the process table keeps growing
%%% while they run), and processes that churn (spawn a child, wait for it,
%%% again), so that processes keep appearing and disappearing; and
%%% processes that have not run yet (held before their first time slice).
-module(bs_churn_wl).
-export([spawners/1, churners/1, unborn/1, release/1, stop/1]).
-export([first_work/0]).

%% K processes that each spawn a child doing a little work, without pause.
spawners(K) ->
    [spawn(fun spawn_loop/0) || _ <- lists:seq(1, K)].

spawn_loop() ->
    _ = spawn(fun() -> lists:sum(lists:seq(1, 10)) end),
    spawn_loop().

%% K processes that each spawn a child, wait for it to end, and again.
churners(K) ->
    [spawn(fun churn_loop/0) || _ <- lists:seq(1, K)].

churn_loop() ->
    {_, Mon} = spawn_monitor(fun() -> lists:sum(lists:seq(1, 100)) end),
    receive {'DOWN', Mon, process, _, _} -> ok end,
    churn_loop().

%% K processes held (suspended) before their first time slice, as the
%% children of spawners wait for theirs in a busy node's run queue, but for
%% as long as the test needs: with no reductions, they have not run. Once
%% released, each calls first_work/0 and waits for `stop'. One that ran
%% before it was held (another scheduler picked it up) is replaced.
unborn(K) ->
    Priority = process_flag(priority, max),
    try unborn(K, [])
    after process_flag(priority, Priority)
    end.

unborn(0, Acc) ->
    Acc;
unborn(K, Acc) ->
    P = spawn(fun() -> first_work(), receive stop -> ok end end),
    true = erlang:suspend_process(P),
    case erlang:process_info(P, reductions) of
        {reductions, 0} -> unborn(K - 1, [P | Acc]);
        _ -> exit(P, kill), unborn(K, Acc)
    end.

first_work() ->
    lists:sum(lists:seq(1, 100)).

%% Lets processes of unborn/1 run.
release(Pids) ->
    [catch erlang:resume_process(P) || P <- Pids],
    ok.

%% Kills the workload processes and waits until they are gone.
stop(Pids) ->
    Mons = [monitor(process, P) || P <- Pids],
    [exit(P, kill) || P <- Pids],
    [receive {'DOWN', M, process, _, _} -> ok end || M <- Mons],
    ok.
