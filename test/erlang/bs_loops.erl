%%% Workloads whose stacks must stay flat: loops at the bottom of a process.
-module(bs_loops).
-export([spawned_receive_loop/1]).

%% A spawned fun tail-calls a receive loop: every iteration the VM reports
%% caller `undefined' (nothing to return to). N messages, then done.
spawned_receive_loop(N) ->
    Parent = self(),
    Collector = spawn(fun() -> collect(N, Parent) end),
    [Collector ! tick || _ <- lists:seq(1, N)],
    receive {done, Collector} -> ok end.

collect(0, Parent) -> Parent ! {done, self()};
collect(N, Parent) -> receive tick -> collect(N - 1, Parent) end.
