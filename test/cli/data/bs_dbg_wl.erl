%% bs_dbg_wl — makes real dbg trace-port files for test/cli/convert.sh, with
%% dbg on this VM: make(Dir) writes
%%   caller_ts.trace    call + return_to + arity + timestamp, {caller} match spec
%%   mono.trace         the same with monotonic_timestamp
%%   return_from.trace  call + arity, {return_trace} match spec, no timestamps
%%   calls_only.trace   call + arity + timestamp, no returns
%%   exception.trace    call + arity, {exception_trace}: an exception caught
%%                      two traced frames up
%%   all_flags.trace    also running, procs and garbage_collection: a process
%%                      that registers itself, waits and collects garbage
%%   return_from_dbg.txt  what dbg:trace_client/3 prints for return_from.trace
%%                      (its default handler, dbg:dhandler/2, into a file)
%%   wrap<N>.trc        a wrap set (4000 bytes x 3 files) that wrapped around
%%                      (fib(14): several times the set's size on OTP 25 to 29;
%%                      fib(12) did not fill it on OTP 29)
%%   wrap_dbg.txt       the timestamps of the wrap set's messages in the
%%                      order dbg:trace_client/3 reads them
%%   ip.stream          what a client of dbg:trace_port(ip, {0, 8}) received,
%%                      saved to a file (it connected late: drops first).
%% trace_ip_drv zeroes QueueSize + 1 bytes of its queue of pointers, not
%% QueueSize + 1 pointers, so with a queue of fewer than 7 messages the
%% first slot is partly garbage and the VM dies (SIGSEGV, seen here on OTP
%% 25 with a queue of 4): the queue here is 8.
-module(bs_dbg_wl).
-export([make/1, fib/1, run/1, tail_top/0, tail_a/0, tail_b/0, busy/0,
         catcher/0, thrower/0, inner/0, after_catch/0]).

fib(0) -> 0;
fib(1) -> 1;
fib(N) -> fib(N - 1) + fib(N - 2).

%% fib in body position (run stays below it); tail_a tail-calls tail_b.
run(N) ->
    _ = fib(N),
    tail_top(),
    done.

tail_top() ->
    _ = tail_a(),
    ok.

tail_a() -> tail_b().

tail_b() -> erlang:phash2(self()).

%% inner/0 throws through thrower/0 to catcher/0, which goes on.
catcher() ->
    R = try thrower() catch throw:x -> caught end,
    after_catch(),
    R.

thrower() ->
    _ = inner(),
    never.

inner() -> throw(x).

after_catch() -> erlang:phash2(self()).

make(Dir) ->
    F = fun(Name) -> filename:join(Dir, Name) end,
    Caller = [{'_', [], [{message, {caller}}]}],
    file_trace(F("caller_ts.trace"), [c, return_to, arity, timestamp], Caller, 10),
    file_trace(F("mono.trace"), [c, return_to, arity, monotonic_timestamp], Caller, 10),
    file_trace(F("return_from.trace"), [c, arity], [{'_', [], [{return_trace}]}], 5),
    file_trace(F("calls_only.trace"), [c, arity, timestamp], [], 10),
    dbg_text(F("return_from.trace"), F("return_from_dbg.txt")),
    exception_trace(F("exception.trace")),
    all_flags(F("all_flags.trace")),
    wrap_trace(F("wrap"), ".trc"),
    dbg_order(F("wrap"), ".trc", F("wrap_dbg.txt")),
    ip_trace(F("ip.stream")).

traced(Port, Flags, MS, N) ->
    {ok, _} = dbg:tracer(port, Port),
    Self = self(),
    P = spawn(fun() -> receive go -> run(N), Self ! {done, self()} end end),
    {ok, _} = dbg:p(P, Flags),
    {ok, _} = dbg:tpl(?MODULE, MS),
    P ! go,
    receive {done, P} -> ok end.

file_trace(File, Flags, MS, N) ->
    traced(dbg:trace_port(file, File), Flags, MS, N),
    dbg:flush_trace_port(),
    dbg:stop().

wrap_trace(Name, Suffix) ->
    traced(dbg:trace_port(file, {Name, wrap, Suffix, 4000, 3}), [c, return_to, arity, timestamp],
           [{'_', [], [{message, {caller}}]}], 14),
    dbg:flush_trace_port(),
    dbg:stop().

%% dbg's own reader over the wrap set: the timestamp of every message.
dbg_order(Name, Suffix, Out) ->
    Self = self(),
    H = fun(end_of_trace, Acc) -> Self ! {order, lists:reverse(Acc)}, Acc;
           (M, Acc) -> [element(tuple_size(M), M) | Acc]
        end,
    dbg:trace_client(file, {Name, wrap, Suffix, 4000, 3}, {H, []}),
    receive {order, L} -> ok = file:write_file(Out, [io_lib:format("~w~n", [T]) || T <- L]) end,
    dbg:stop().

exception_trace(File) ->
    {ok, _} = dbg:tracer(port, dbg:trace_port(file, File)),
    Self = self(),
    P = spawn(fun() -> receive go -> catcher(), Self ! {done, self()} end end),
    {ok, _} = dbg:p(P, [c, arity]),
    {ok, _} = dbg:tpl(?MODULE, [{'_', [], [{exception_trace}]}]),
    P ! go,
    receive {done, P} -> ok end,
    dbg:flush_trace_port(),
    dbg:stop().

%% Registers itself, waits 20 ms in a receive, makes garbage, exits.
busy() ->
    register(bs_dbg_worker, self()),
    receive after 20 -> ok end,
    _ = lists:foldl(fun(I, Acc) -> [I | Acc] end, [], lists:seq(1, 200000)),
    done.

all_flags(File) ->
    {ok, _} = dbg:tracer(port, dbg:trace_port(file, File)),
    Self = self(),
    P = spawn(fun() -> receive go -> busy(), Self ! {done, self()} end end),
    {ok, _} = dbg:p(P, [c, return_to, arity, timestamp, running, procs, garbage_collection]),
    {ok, _} = dbg:tpl(?MODULE, busy, [{'_', [], [{message, {caller}}]}]),
    P ! go,
    receive {done, P} -> ok end,
    timer:sleep(50),
    dbg:flush_trace_port(),
    dbg:stop().

dbg_text(In, Out) ->
    {ok, D} = file:open(Out, [write]),
    Pid = dbg:trace_client(file, In, {fun dbg:dhandler/2, D}),
    Ref = monitor(process, Pid),
    receive {'DOWN', Ref, process, Pid, _} -> ok end,
    ok = file:close(D),
    dbg:stop().

%% The ip port queues 8 messages while nobody is connected (older ones
%% become a drop record); the client saves everything it receives.
ip_trace(Out) ->
    {ok, _} = dbg:tracer(port, dbg:trace_port(ip, {0, 8})),
    {ok, Port} = dbg:trace_port_control(node(), get_listen_port),
    Self = self(),
    P = spawn(fun() -> loop_runs() end),
    {ok, _} = dbg:p(P, [c, return_to, arity, timestamp]),
    {ok, _} = dbg:tpl(?MODULE, [{'_', [], [{message, {caller}}]}]),
    P ! {run, 6, Self},
    receive {done, P} -> ok end,
    Reader = spawn(fun() -> save(Port, Out, Self) end),
    receive {connected, Reader} -> ok end,
    timer:sleep(100),
    P ! {run, 8, Self},
    receive {done, P} -> ok end,
    timer:sleep(300),
    dbg:stop(),
    receive {saved, Reader} -> ok after 5000 -> exit(ip_reader_timeout) end.

loop_runs() ->
    receive {run, N, From} -> run(N), From ! {done, self()}, loop_runs() end.

save(Port, Out, Parent) ->
    {ok, S} = gen_tcp:connect("localhost", Port, [binary, {active, false}]),
    Parent ! {connected, self()},
    ok = file:write_file(Out, recv_all(S, [])),
    Parent ! {saved, self()}.

recv_all(S, Acc) ->
    case gen_tcp:recv(S, 0, 5000) of
        {ok, B} -> recv_all(S, [Acc, B]);
        {error, _} -> Acc
    end.
