%%% @doc The target side of the mode cpu cost benchmark (bench/cpu_cost/run.sh):
%%% two workloads that run for as long as the node lives, and the measurement
%%% of their throughput inside the node.
%%%
%%% `msg': 25 request/reply pairs (50 processes). A client sends a small
%%% request, its server answers with the request's counter plus one: little
%%% work per message, so the cost is the VM's message passing and scheduling
%%% (every reply is a switch of both processes). One operation is one
%%% request answered.
%%%
%%% `cpu': one worker per scheduler, each in a loop over slices of a real
%%% text file's words: lists:sort/1 of 500 words, term_to_binary/1 of the
%%% sorted list, binary_to_term/1 of that, and a hand-written scan of the
%%% slice's bytes for a JSON-like tokenisation (binary matching). One
%%% operation is one slice done.
%%%
%%% Each operation adds one to a `counters' counter (no message, no lock).
%%% window/3 reads it over a fixed window, with the node's CPU time. A
%%% ticker process (started with the workload, so present in every phase)
%%% logs the counter and the CPU time every 10 ms with the wall clock, for
%%% span/2: the throughput between two instants the shell saw (a command's
%%% start and end), whatever the command's length.
-module(bench_cost_wl).

-export([start/2, window/3, null_running_window/2, window_start/4, window_result/2, span/2, perf_fds/0, ops/0]).
-export([client/3, server/0, worker/3, ticker/1]).

-define(KEY, {?MODULE, counter}).
-define(PAIRS, 25).
-define(SLICE, 500).
-define(TICK_MS, 10).
-define(TICKS, 12000). % 2 minutes of ticks at most

%% @doc Starts the workload `msg' or `cpu' (File: the text file whose words
%% `cpu' works on; unused by `msg'), once: a second call starts nothing.
%% Returns the number of processes started.
-spec start(msg | cpu, file:filename()) -> pos_integer().
start(Kind, File) ->
    %% Once per node: erl_call may ask again after an answer it lost.
    case persistent_term:get({?MODULE, started}, undefined) of
        undefined ->
            N = start_workload(Kind, File),
            persistent_term:put({?MODULE, started}, N),
            N;
        N ->
            N
    end.

start_workload(Kind, File) ->
    C = counters:new(1, [write_concurrency]),
    persistent_term:put(?KEY, C),
    Parent = self(),
    Ticker = spawn(fun() ->
                           %% the windows' results (window_start/4), owned by
                           %% the ticker, which lives as long as the node
                           _ = ets:new(bench_cost_windows, [named_table, public]),
                           Parent ! {self(), table},
                           ticker(queue:new())
                   end),
    receive {Ticker, table} -> ok end,
    register(bench_cost_ticker, Ticker),
    case Kind of
        msg ->
            _ = [begin
                     S = spawn(?MODULE, server, []),
                     spawn(?MODULE, client, [S, 0, C])
                 end || _ <- lists:seq(1, ?PAIRS)],
            2 * ?PAIRS;
        cpu ->
            {ok, Text} = file:read_file(File),
            Words = list_to_tuple([W || W <- binary:split(Text, [<<" ">>, <<"\n">>, <<"\t">>], [global, trim_all])]),
            true = tuple_size(Words) >= ?SLICE,
            N = erlang:system_info(schedulers_online),
            _ = [spawn(?MODULE, worker, [Words, I * 997, C]) || I <- lists:seq(1, N)],
            N
    end.

%% @private A client of `msg': request, wait for the answer, count, again.
client(Server, N, C) ->
    Server ! {req, self(), N},
    receive
        {rep, M} ->
            counters:add(C, 1, 1),
            client(Server, M, C)
    end.

%% @private A server of `msg'.
server() ->
    receive
        {req, From, N} ->
            From ! {rep, N + 1},
            server()
    end.

%% @private A worker of `cpu': one slice of words per operation.
worker(Words, At, C) ->
    N = tuple_size(Words),
    Slice = [element((At + I) rem N + 1, Words) || I <- lists:seq(0, ?SLICE - 1)],
    Sorted = lists:sort(Slice),
    Bin = term_to_binary(Sorted),
    Back = binary_to_term(Bin),
    Tokens = tokens(iolist_to_binary(lists:join(<<" ">>, Back)), 0),
    true = Tokens > 0,
    counters:add(C, 1, 1),
    worker(Words, (At + 7919) rem N, C).

%% Counts the tokens of a JSON-like scan: strings of letters, numbers,
%% punctuation; binary matching a byte at a time.
tokens(<<>>, T) -> T;
tokens(<<C, Rest/binary>>, T) when C >= $a, C =< $z; C >= $A, C =< $Z ->
    tokens(word(Rest), T + 1);
tokens(<<C, Rest/binary>>, T) when C >= $0, C =< $9 ->
    tokens(number(Rest), T + 1);
tokens(<<C, Rest/binary>>, T) when C =:= $\s; C =:= $\n ->
    tokens(Rest, T);
tokens(<<_, Rest/binary>>, T) ->
    tokens(Rest, T + 1).

word(<<C, Rest/binary>>) when C >= $a, C =< $z; C >= $A, C =< $Z; C =:= $_ -> word(Rest);
word(Rest) -> Rest.

number(<<C, Rest/binary>>) when C >= $0, C =< $9; C =:= $. -> number(Rest);
number(Rest) -> Rest.

%% @private Every ?TICK_MS: {wall clock us, operations, CPU ms}; the last
%% ?TICKS kept.
ticker(Q0) ->
    {Cpu, _} = erlang:statistics(runtime),
    Q1 = queue:in({os:system_time(microsecond), ops(), Cpu}, Q0),
    Q = case queue:len(Q1) > ?TICKS of
            true -> queue:drop(Q1);
            false -> Q1
        end,
    receive
        {span, From, T0, T1, Ref} ->
            From ! {Ref, span_of(queue:to_list(Q), T0, T1)},
            ticker(Q)
    after ?TICK_MS ->
            ticker(Q)
    end.

%% @doc The throughput between two wall-clock instants (microseconds since
%% the epoch, as `date +%s%6N' or bash's EPOCHREALTIME give them), from the
%% ticks closest inside them: "ok OPS_PER_S OPS_PER_CPU_S CORES SPAN_MS" or
%% "bad WHY".
-spec span(integer(), integer()) -> string().
span(T0, T1) ->
    Ref = make_ref(),
    bench_cost_ticker ! {span, self(), T0, T1, Ref},
    receive
        {Ref, Line} -> Line
    after 10000 -> "bad no_answer_from_the_ticker"
    end.

span_of(Ticks, T0, T1) ->
    case {[T || {At, _, _} = T <- Ticks, At >= T0], lists:reverse([T || {At, _, _} = T <- Ticks, At =< T1])} of
        {[{A0, R0, C0} | _], [{A1, R1, C1} | _]} when A1 > A0 ->
            Us = A1 - A0,
            CpuMs = max(1, C1 - C0),
            lists:flatten(io_lib:format("ok ~.1f ~.1f ~.3f ~.1f",
                                        [(R1 - R0) * 1.0e6 / Us, (R1 - R0) * 1000 / CpuMs,
                                         CpuMs * 1000 / Us, Us / 1000]));
        _ ->
            "bad no_ticks_in_the_span"
    end.

%% @doc The operations completed so far.
-spec ops() -> non_neg_integer().
ops() ->
    counters:get(persistent_term:get(?KEY), 1).

%% @doc Measures the throughput over WindowMs. Until is what must hold at
%% the end of the window for it to count: `none' (nothing of beamspy
%% samples this VM: no perf event open in it), `sampling' (beamspy's
%% sampler still has its perf events open) or `any'. Ready (`now' or
%% `sampling') is what to wait for first, at most 120 s (a node starved of
%% CPU takes long to load beamspy's code), before settling
%% for SettleMs. Returns a line for the shell:
%% "ok OPS_PER_S OPS_PER_CPU_S CORES WINDOW_MS PERF_FDS READY_MS" (READY_MS:
%% from the call to the sampler seen on) or "bad WHY".
-spec window({now | sampling, non_neg_integer()}, none | sampling | any, pos_integer()) -> string().
window({Ready, SettleMs}, Until, WindowMs) ->
    Start = erlang:monotonic_time(millisecond),
    case wait_ready(Ready, Start + 120000) of
        ok ->
            ReadyMs = erlang:monotonic_time(millisecond) - Start,
            timer:sleep(SettleMs),
            {Cpu0, _} = erlang:statistics(runtime),
            T0 = erlang:monotonic_time(microsecond),
            R0 = ops(),
            timer:sleep(WindowMs),
            R1 = ops(),
            T1 = erlang:monotonic_time(microsecond),
            {Cpu1, _} = erlang:statistics(runtime),
            Fds = perf_fds(),
            case holds(Until, Fds) of
                true ->
                    Us = T1 - T0,
                    CpuMs = max(1, Cpu1 - Cpu0),
                    lists:flatten(io_lib:format("ok ~.1f ~.1f ~.3f ~.1f ~w ~w",
                                                [(R1 - R0) * 1.0e6 / Us, (R1 - R0) * 1000 / CpuMs,
                                                 CpuMs * 1000 / Us, Us / 1000, Fds, ReadyMs]));
                false ->
                    lists:flatten(io_lib:format("bad ~w_at_end_of_window(~w_perf_fds)", [Until, Fds]))
            end;
        timeout ->
            "bad sampler_never_started"
    end.

%% @doc window/3 while every process's scheduling (`running': `in' and
%% `out') is traced to a null erl_tracer (bench_null_tracer: enabled/3
%% answers `trace', trace/5 does nothing): what any design that joins
%% samples to processes through the trace of their scheduling pays at the
%% least, whatever its tracer does. Tracing is off again before returning.
-spec null_running_window(non_neg_integer(), pos_integer()) -> string().
null_running_window(SettleMs, WindowMs) ->
    State = bench_null_tracer:state(),
    _ = erlang:trace(all, true, [running, {tracer, bench_null_tracer, State}]),
    try window({now, SettleMs}, any, WindowMs)
    after erlang:trace(all, false, [running])
    end.

%% @doc Starts a window in a process of its own, once per Id: a second
%% call with the same Id (erl_call tried again after an answer it lost, as
%% happens with a node starved of CPU) starts nothing. Kind: `none',
%% `sampling' (waits for beamspy's sampler, which must still run at the
%% end), `any' or `null_running' (null_running_window/2). Returns "started";
%% window_result/2 gives the line.
-spec window_start(pos_integer(), none | sampling | any | null_running, non_neg_integer(), pos_integer()) -> string().
window_start(Id, Kind, SettleMs, WindowMs) ->
    case ets:insert_new(bench_cost_windows, {Id, running}) of
        true ->
            _ = spawn(fun() -> ets:insert(bench_cost_windows, {Id, {done, run_window(Kind, SettleMs, WindowMs)}}) end),
            "started";
        false ->
            "started"
    end.

run_window(none, SettleMs, WindowMs) -> window({now, SettleMs}, none, WindowMs);
run_window(sampling, SettleMs, WindowMs) -> window({sampling, SettleMs}, sampling, WindowMs);
run_window(any, SettleMs, WindowMs) -> window({now, SettleMs}, any, WindowMs);
run_window(null_running, SettleMs, WindowMs) -> null_running_window(SettleMs, WindowMs).

%% @doc The line of window Id once it is done (waited for at most
%% TimeoutMs); it can be asked for again.
-spec window_result(pos_integer(), pos_integer()) -> string().
window_result(Id, TimeoutMs) ->
    window_result_until(Id, erlang:monotonic_time(millisecond) + TimeoutMs).

window_result_until(Id, Deadline) ->
    case ets:lookup(bench_cost_windows, Id) of
        [{Id, {done, Line}}] -> Line;
        [] -> "bad no_such_window";
        [{Id, running}] ->
            case erlang:monotonic_time(millisecond) > Deadline of
                true -> "bad window_still_running";
                false -> timer:sleep(20), window_result_until(Id, Deadline)
            end
    end.

wait_ready(now, _) -> ok;
wait_ready(sampling, Deadline) ->
    case perf_fds() > 0 of
        true -> ok;
        false ->
            case erlang:monotonic_time(millisecond) > Deadline of
                true -> timeout;
                false -> timer:sleep(5), wait_ready(sampling, Deadline)
            end
    end.

holds(any, _) -> true;
holds(none, Fds) -> Fds =:= 0;
holds(sampling, Fds) -> Fds > 0.

%% @doc How many perf events this OS process has open (links of
%% /proc/self/fd to anon_inode:[perf_event]): beamspy's sampler opens one
%% per scheduler thread; `perf record -p' opens its own, in its process.
-spec perf_fds() -> non_neg_integer().
perf_fds() ->
    case file:list_dir("/proc/self/fd") of
        {ok, Fds} ->
            length([F || F <- Fds,
                         file:read_link("/proc/self/fd/" ++ F) =:= {ok, "anon_inode:[perf_event]"}]);
        {error, _} ->
            0
    end.
