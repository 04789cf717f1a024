%%% Workloads for the robustness and stress tests: processes that spawn
%%% short-lived children without pause (the process table keeps growing
%%% while they run), and processes that churn (spawn a child, wait for it,
%%% again), so that processes keep appearing and disappearing.
-module(bs_churn_wl).
-export([spawners/1, churners/1, stop/1]).

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

%% Kills the workload processes and waits until they are gone.
stop(Pids) ->
    Mons = [monitor(process, P) || P <- Pids],
    [exit(P, kill) || P <- Pids],
    [receive {'DOWN', M, process, _, _} -> ok end || M <- Mons],
    ok.
