%%% Deterministic workload for the cprof comparison: several functions of
%%% one module, a tail-recursive loop, tail and body mutual recursion, a fun.
-module(bs_cp).

-export([run/1]).

run(N) ->
    A = sum_loop(N, 0),
    B = case is_even(N) of true -> even; false -> odd end,
    C = depth_a(N),
    D = lists:foldl(fun(X, Acc) -> add(X, Acc) end, 0, lists:seq(1, N)),
    E = twice(N),
    {A, B, C, D, E}.

sum_loop(0, Acc) -> Acc;
sum_loop(N, Acc) -> sum_loop(N - 1, add(N, Acc)).

add(X, Y) -> X + Y.

%% Tail mutual recursion.
is_even(0) -> true;
is_even(N) -> is_odd(N - 1).

is_odd(0) -> false;
is_odd(N) -> is_even(N - 1).

%% Body mutual recursion.
depth_a(0) -> 0;
depth_a(N) -> 1 + depth_b(N - 1).

depth_b(0) -> 0;
depth_b(N) -> 2 + depth_a(N - 1).

twice(N) -> add(N, N) + add(N, 0).
