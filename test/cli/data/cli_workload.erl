%% cli_workload — small real workloads profiled by test/cli/run.sh to make
%% the CLI's inputs: naive fib (deep recursion), a sort that is scheduled
%% out (SLEEP frames), and several processes (one tree per pid).
-module(cli_workload).
-export([fib/1, sort/1, workers/1]).

fib(N) when N < 2 -> N;
fib(N) -> fib(N - 1) + fib(N - 2).

%% The list is built tail-recursively: a list comprehension would put one
%% frame per element on the stack and make 20,000-frame folded lines.
sort(N) ->
    lists:sort(numbers(N, [])).

numbers(0, Acc) -> Acc;
numbers(N, Acc) -> numbers(N - 1, [erlang:phash2(N, 1000000) | Acc]).

%% N processes each sorting, then reporting back to the caller.
workers(N) ->
    Self = self(),
    Pids = [spawn(fun() -> Self ! {done, self(), length(sort(20000))} end) || _ <- lists:seq(1, N)],
    [receive {done, P, Len} -> Len end || P <- Pids].
