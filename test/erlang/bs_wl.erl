%%% Workloads for the Erlang test layer. Written so that the physical stack
%%% is unambiguous on OTP 25: every body call's result is used, and raising
%%% functions raise only when asked to (so the compiler cannot know that a
%%% call never returns and turn it into a tail call).
-module(bs_wl).

-export([fib/1, fib_calls_per_depth/1, timed_fib/1, loop/1, nap/1, blocked/1, deep/1,
         mem_hog/2, spawn_waiters/2, stop_waiters/1, par_fib/2, spawn_fib/2,
         top/1, top_uncaught/1, reraise/3, big_heap/1, sleeper/2, side_effect/1,
         fib_then_spawn/2, spawn_idle/1, grandchild/1,
         par_big_heap/2, par_fib_sched/2, named_kids/0, busy_kids/1, bif_catch/1, catcher/1, '日本'/1, unicode/1]).

%% Naive Fibonacci: fib(N) makes fib(N-1) and fib(N-2), both body calls.
fib(0) -> 0;
fib(1) -> 1;
fib(N) -> fib(N - 1) + fib(N - 2).

%% Independent oracle (not traced): #{Depth => Calls} of the recursion of
%% fib(N), depth 1 being the outermost call. Computed by walking the
%% recursion tree breadth-first over multisets of arguments.
fib_calls_per_depth(N) ->
    per_depth(#{N => 1}, 1, #{}).

per_depth(Level, _D, Acc) when map_size(Level) =:= 0 ->
    Acc;
per_depth(Level, D, Acc) ->
    Calls = lists:sum(maps:values(Level)),
    Next = maps:fold(fun(K, Count, M) when K >= 2 ->
                             M1 = maps:update_with(K - 1, fun(C) -> C + Count end, Count, M),
                             maps:update_with(K - 2, fun(C) -> C + Count end, Count, M1);
                        (_, _, M) ->
                             M
                     end, #{}, Level),
    per_depth(Next, D + 1, Acc#{D => Calls}).

%% Measures its own wall time around the work, inside the traced call.
timed_fib(N) ->
    T0 = erlang:monotonic_time(nanosecond),
    R = fib(N),
    T1 = erlang:monotonic_time(nanosecond),
    {R, T1 - T0}.

%% Tail-recursive loop of N iterations, each with one body call to step/1.
loop(N) ->
    Acc = loop(N, 0),
    {loop, Acc}.

loop(0, Acc) -> Acc;
loop(N, Acc) -> loop(N - 1, step(Acc)).

step(Acc) -> Acc + 1.

nap(Ms) ->
    R = timer:sleep(Ms),
    {napped, R}.

%% Blocks in a receive until a message sent Ms later by another process.
blocked(Ms) ->
    Self = self(),
    _ = spawn(fun() -> timer:sleep(Ms), Self ! wake end),
    R = receive wake -> woken end,
    {blocked, R}.

%% Body recursion N deep: one distinct tree node per level.
deep(0) -> 0;
deep(N) -> 1 + deep(N - 1).

mem_hog(FibN, Depth) ->
    F = fib(FibN),
    D = deep(Depth),
    {F, D}.

%% Spawns K processes that wait for `stop` (long-lived children), then
%% computes fib(N). Returns {FibN, Pids}.
%% Every child has run (and so produced trace events) before this returns.
spawn_waiters(K, N) ->
    Parent = self(),
    Pids = [spawn(fun() -> waiter(Parent) end) || _ <- lists:seq(1, K)],
    [receive {ready, P} -> P end || P <- Pids],
    F = fib(N),
    {F, Pids}.

%% K children that may not have run yet when this returns.
spawn_idle(K) ->
    Pids = [spawn(fun idle/0) || _ <- lists:seq(1, K)],
    {idle, Pids}.

idle() ->
    receive stop -> ok end.

waiter(Parent) ->
    Parent ! {ready, self()},
    receive stop -> ok end.

stop_waiters(Pids) ->
    [P ! stop || P <- Pids],
    ok.

%% K children, each computing fib(N) in parallel; collects the results.
par_fib(K, N) ->
    Parent = self(),
    Pids = [spawn(fun() -> Parent ! {self(), fib(N)} end) || _ <- lists:seq(1, K)],
    Results = [receive {P, R} -> R end || P <- Pids],
    {par, Results}.

%% K children computing fib(N) sequentially; returns their pids.
spawn_fib(K, N) ->
    Parent = self(),
    Pids = [spawn(fun() -> Parent ! {self(), fib(N)} end) || _ <- lists:seq(1, K)],
    Results = [receive {P, R} -> {P, R} end || P <- Pids],
    {spawned, Results}.

%% Exceptions: top -> try mid -> leaf (raises when X =:= raise) catch,
%% then post/1 is called from top.
top(X) ->
    R = try mid(X) catch error:{boom, _} = E -> {caught, E} end,
    P = post(R),
    {top, P}.

top_uncaught(X) ->
    R = mid(X),
    {top, R}.

mid(X) ->
    R = leaf(X),
    {mid, R}.

leaf(raise) -> erlang:error({boom, leaf});
leaf(X) -> X.

post(R) -> {post, R}.

reraise(Class, Reason, Stack) ->
    case Class of
        none -> ok;
        _ -> erlang:raise(Class, Reason, Stack)
    end.

%% Builds a list of N small integers with BIFs only (few trace events) and
%% collects garbage while it is live, so the heap is large.
big_heap(N) ->
    L = binary_to_list(binary:copy(<<7>>, N)),
    true = erlang:garbage_collect(),
    L2 = lists:reverse(L),
    true = erlang:garbage_collect(),
    {length(L), length(L2)}.

%% Reports to Parent, with the pids of K waiting children, then sleeps Ms.
sleeper(Parent, Ms) ->
    {_, Pids} = spawn_waiters(2, 5),
    Parent ! {sleeping, self(), Pids},
    R = timer:sleep(Ms),
    {slept, R}.

%% Side effect visible to the test: sends ran to Pid.
side_effect(Pid) ->
    Pid ! {ran, self()},
    ran.

fib_then_spawn(K, N) ->
    F = fib(N),
    {_, Results} = spawn_fib(K, 5),
    {F, Results}.

%% A child that spawns a grandchild computing fib(N); both report to the
%% caller. Returns {Child, Grandchild, FibN}.
grandchild(N) ->
    Top = self(),
    Child = spawn(fun() ->
                          G = spawn(fun() -> Top ! {grand, self(), fib(N)} end),
                          Top ! {child, self(), G}
                  end),
    G = receive {child, Child, Pid} -> Pid end,
    F = receive {grand, G, R} -> R end,
    {Child, G, F}.

%% K children each building and collecting a large heap.
par_big_heap(K, Words) ->
    Parent = self(),
    Pids = [spawn(fun() -> Parent ! {self(), big_heap(Words)} end) || _ <- lists:seq(1, K)],
    [receive {P, R} -> {P, R} end || P <- Pids].

%% par_fib/2 that also says on which scheduler each child finished.
par_fib_sched(K, N) ->
    Parent = self(),
    Pids = [spawn(fun() ->
                          F = fib(N),
                          S = erlang:system_info(scheduler_id),
                          Parent ! {self(), F, S}
                  end) || _ <- lists:seq(1, K)],
    [receive {P, F, S} -> {P, F, S} end || P <- Pids].

'日本'(X) -> X + 1.

unicode(X) ->
    Y = '日本'(X),
    {unicode, Y}.

%% Two waiting children: one registered as bs_wl_named, one started by
%% proc_lib (so it has an initial call). Both have run when this returns.
named_kids() ->
    Parent = self(),
    Named = spawn(fun() -> true = register(bs_wl_named, self()), waiter(Parent) end),
    Lib = proc_lib:spawn(fun() -> waiter(Parent) end),
    [receive {ready, P} -> P end || P <- [Named, Lib]],
    {Named, Lib}.

%% K children computing fib(15) over and over until told to stop; each has
%% run at least once when this returns.
busy_kids(K) ->
    Parent = self(),
    Pids = [spawn(fun() -> busy(Parent, first) end) || _ <- lists:seq(1, K)],
    [receive {ready, P} -> P end || P <- Pids],
    {busy, Pids}.

busy(Parent, First) ->
    F = fib(15),
    _ = case First of first -> Parent ! {ready, self()}; _ -> ok end,
    receive stop -> F after 0 -> busy(Parent, again) end.

%% The exception comes straight from a BIF called inside the try.
bif_catch(X) ->
    R = try erlang:error(X) catch error:E -> {caught, E} end,
    P = post(R),
    {bif, P}.

%% The exception crosses three traced frames before the catch; the catching
%% function then calls fib/1.
catcher(X) ->
    R = try top_uncaught(X) catch error:{boom, _} -> caught end,
    F = fib(3),
    {R, F}.
