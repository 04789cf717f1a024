%%% Workloads for CPU sampling (mode => cpu): pure Erlang code that burns a
%%% fixed amount of the VM's CPU time (not wall time: a loaded machine only
%%% makes them take longer), a deep recursion, and two workers that run
%%% different code, and a loop that spends most of its time in the VM's C
%%% code (BIFs and their garbage collections).
-module(bs_cpu_wl).

-export([burn/1, deep/1, bifs/1, alpha/1, beta/1, worker/1, fib/1, big_heaps/1, bif_heaps/1]).

%% Runs fib(20) repeatedly until the VM has used Ms more milliseconds of
%% CPU (statistics(runtime): every scheduler; the test VM runs little
%% else). Returns how many rounds ran.
-spec burn(pos_integer()) -> pos_integer().
burn(Ms) ->
    until_cpu(fun() -> fib(20) end, Ms).

%% Body-recursive, so each level is a frame: fib(25) is 25 deep.
-spec fib(non_neg_integer()) -> non_neg_integer().
fib(N) when N < 2 -> N;
fib(N) -> fib(N - 1) + fib(N - 2).

%% fib(25) until Ms of CPU were used.
-spec deep(pos_integer()) -> pos_integer().
deep(Ms) ->
    until_cpu(fun() -> fib(25) end, Ms).

%% bif_loop/2 until Ms of CPU were used: most samples land in C code
%% (term_to_binary, binary_to_term, lists:reverse, sorting, the GCs they
%% cause) called from bif_loop/2, which loops 50 times between two looks
%% at the clock.
-spec bifs(pos_integer()) -> pos_integer().
bifs(Ms) ->
    until_cpu(fun() -> bif_loop(50, 0) end, Ms).

bif_loop(0, Acc) ->
    Acc;
bif_loop(K, Acc) ->
    L = lists:seq(1, 200),
    R = lists:reverse(L),
    B = term_to_binary({R, K}),
    {R, K} = binary_to_term(B),
    bif_loop(K - 1, Acc + length(lists:sort(R))).

%% Runs Work until the VM has used Ms more milliseconds of CPU; returns
%% how many rounds ran.
until_cpu(Work, Ms) ->
    {Start, _} = statistics(runtime),
    until_cpu(Work, Start + Ms, 0).

until_cpu(Work, Until, N) ->
    _ = Work(),
    case statistics(runtime) of
        {Now, _} when Now >= Until -> N + 1;
        _ -> until_cpu(Work, Until, N + 1)
    end.

%% Two kinds of work for two workers.
-spec alpha(non_neg_integer()) -> non_neg_integer().
alpha(0) -> 0;
alpha(N) -> (N * 7 + alpha(N - 1)) rem 1000003.

-spec beta(non_neg_integer()) -> non_neg_integer().
beta(0) -> 1;
beta(N) -> (N * 13 bxor beta(N - 1)) rem 999983.

%% A worker: on {run, Fun, Ms, From} runs Fun (alpha or beta) on 1000 in a
%% loop until Ms of CPU were used, then answers {done, self()}.
-spec worker(atom()) -> no_return().
worker(Name) ->
    register(Name, self()),
    worker_loop().

worker_loop() ->
    receive
        {run, F, Ms, From} ->
            {Start, _} = statistics(runtime),
            spin(F, Start + Ms),
            From ! {done, self()},
            worker_loop()
    end.

spin(F, Until) ->
    _ = ?MODULE:F(1000),
    case statistics(runtime) of
        {Now, _} when Now >= Until -> ok;
        _ -> spin(F, Until)
    end.

%% N rounds of a 400,000-element list and a copy of it, both live: a heap
%% of over a million words, collected on a dirty CPU scheduler.
-spec big_heaps(non_neg_integer()) -> ok.
big_heaps(0) -> ok;
big_heaps(N) ->
    L = lists:seq(1, 400000),
    _ = [X * 2 || X <- L],
    big_heaps(N - 1).

%% N rounds of binary_to_list/1 of a 400 KB binary that stays live after
%% it (in a y register): the BIF's list, over a million words, makes the
%% VM collect on a dirty CPU scheduler right after the BIF, with the
%% process scheduled out inside bif_heaps_loop/2, its y registers on top of
%% its stack. Called from bif_heaps/1, which waits for it (not a tail call).
-spec bif_heaps(non_neg_integer()) -> {done, ok}.
bif_heaps(N) ->
    Bin = binary:copy(<<"abcdefgh">>, 50000),
    {done, bif_heaps_loop(N, Bin)}.

bif_heaps_loop(0, _) -> ok;
bif_heaps_loop(N, Bin) ->
    L = binary_to_list(Bin),
    400000 = length(L) + byte_size(Bin) div 8 - 50000,
    bif_heaps_loop(N - 1, Bin).
