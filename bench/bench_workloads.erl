%%% @doc The workloads of the benchmark suite. Each has an untimed
%%% `prepare/2' step (input data, generated source) and a `run/2' step, the
%%% call that every variant (untraced, null tracer, beamspy, fprof, eprof)
%%% measures. Everything is deterministic: fixed seeds, fixed sizes.
-module(bench_workloads).

-export([names/0, label/1, prepare/2, run/2]).
-export([fib/1, sort_map/1, loop/2, procs/2, compile_module/1]).

-type name() :: fib | sort | loop | procs | compile.
-export_type([name/0]).

-define(SORT_N, 200000).
-define(LOOP_N, 1000000).
-define(PROCS, 50).
-define(MESSAGES, 2000).

%% @doc The workloads in the order they are run and reported.
-spec names() -> [name()].
names() -> [fib, sort, loop, procs, compile].

%% @doc The row label of a workload in the results table.
-spec label(name()) -> string().
label(fib) -> "fib(24)";
label(sort) -> "sort+map 200k";
label(loop) -> "loop 1M";
label(procs) -> "50 procs x 2000 msgs";
label(compile) -> "compile:file big module".

%% @doc Builds the input of a workload (not timed). Ctx carries the build
%% directory (`dir') and the size of the generated module (`compile_funs').
-spec prepare(name(), #{dir := file:filename(), compile_funs := pos_integer(), _ => _}) -> term().
prepare(fib, _) -> 24;
prepare(sort, _) ->
    S = rand:seed_s(exsss, {17, 42, 4711}),
    {L, _} = lists:mapfoldl(fun(_, S0) -> rand:uniform_s(1000000, S0) end, S, lists:seq(1, ?SORT_N)),
    L;
prepare(loop, _) -> ?LOOP_N;
prepare(procs, _) -> {?PROCS, ?MESSAGES};
prepare(compile, #{dir := Dir, compile_funs := N}) ->
    Path = filename:join(Dir, "bench_big.erl"),
    _Lines = bench_gen_module:write(Path, bench_big, N),
    Path.

%% @doc Runs a workload on its prepared input.
-spec run(name(), term()) -> term().
run(fib, N) -> fib(N);
run(sort, L) -> sort_map(L);
run(loop, N) -> loop(N, 0);
run(procs, {P, M}) -> procs(P, M);
run(compile, Path) -> compile_module(Path).

%% @doc Naive doubly recursive Fibonacci: call-heavy, body recursion.
-spec fib(non_neg_integer()) -> non_neg_integer().
fib(N) when N < 2 -> N;
fib(N) -> fib(N - 1) + fib(N - 2).

%% @doc lists:sort then lists:map: BIF-heavy, mutually tail-recursive merges.
-spec sort_map([integer()]) -> non_neg_integer().
sort_map(L) ->
    length(lists:map(fun(X) -> X * 2 end, lists:sort(L))).

%% @doc A tail-recursive loop calling a small function N times.
-spec loop(non_neg_integer(), integer()) -> integer().
loop(0, Acc) -> Acc;
loop(N, Acc) -> loop(N - 1, step(Acc)).

step(Acc) -> Acc + 1.

%% @doc Spawns a collector and P senders that send it M messages each;
%% returns the collector's sum once it has received all P * M messages.
-spec procs(pos_integer(), pos_integer()) -> non_neg_integer().
procs(P, M) ->
    Parent = self(),
    Ref = make_ref(),
    Collector = spawn(fun() -> collect(P * M, 0, Parent, Ref) end),
    _ = [spawn(fun() -> send(Collector, I, M) end) || I <- lists:seq(1, P)],
    receive
        {Ref, Sum} -> Sum
    end.

collect(0, Sum, Parent, Ref) ->
    Parent ! {Ref, Sum};
collect(Left, Sum, Parent, Ref) ->
    receive
        {msg, _From, N, Payload} -> collect(Left - 1, Sum + N + tuple_size(Payload), Parent, Ref)
    end.

send(_Collector, _I, 0) ->
    ok;
send(Collector, I, N) ->
    Collector ! {msg, self(), N, {I, N, <<"payload">>}},
    send(Collector, I, N - 1).

%% @doc compile:file/2 of the generated module, in memory (nothing written).
-spec compile_module(file:filename()) -> {ok, module(), binary()}.
compile_module(Path) ->
    {ok, Mod, Bin} = compile:file(Path, [binary, return_errors]),
    {ok, Mod, Bin}.
