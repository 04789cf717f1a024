%%% @doc The target side of the distribution benchmark (bench/dist/run.sh):
%%% a throughput workload that runs for as long as the node lives, and the
%%% measurement of its rate inside the node.
%%%
%%% The workload is bench_workloads' `procs' made continuous: a driver
%%% process runs rounds, one after the other; a round spawns a collector and
%%% 50 senders, each sender sends ?MESSAGES messages to the collector, and
%%% the round ends when the collector has them all. Every sender that has
%%% sent all its messages adds one to a counter (`counters': no message, no
%%% lock), so the rate is counted in steps of 1/50 round. A round spawns
%%% fresh processes, so `record --all' has to pick up new processes all the
%%% time, as on a real node.
%%%
%%% window/4 measures the rate over a fixed window that lies inside a
%%% beamspy job: it waits for the job process of `beamspy_agent' to exist
%%% (the tool starts it once it has attached and delivered its code), lets
%%% the job settle, reads the counter, sleeps, reads it again, and checks
%%% the job was still running (and, for a trace recording, that the driver
%%% was still traced) at the end of the window. So the tool's attach and
%%% finish phases are never in the window.
-module(bench_dist_wl).

-export([start/0, window/4, wait_clean/2, agent_job/0, beamspy_md5s/0, load_beamspy/0]).
-export([driver/1]).

-define(PROCS, 50).
-define(MESSAGES, 200).
-define(KEY, {?MODULE, counter}).

%% @doc Starts the driver (registered as bench_dist_driver); returns ok.
-spec start() -> ok.
start() ->
    C = counters:new(1, [write_concurrency]),
    persistent_term:put(?KEY, C),
    Pid = spawn(?MODULE, driver, [C]),
    register(bench_dist_driver, Pid),
    ok.

%% @private The round loop.
driver(C) ->
    _ = round(?PROCS, ?MESSAGES, C),
    driver(C).

round(P, M, C) ->
    Parent = self(),
    Ref = make_ref(),
    Collector = spawn(fun() -> collect(P * M, 0, Parent, Ref) end),
    _ = [spawn(fun() -> send(Collector, I, M), counters:add(C, 1, 1) end) || I <- lists:seq(1, P)],
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

%% @doc Measures the message rate over WindowMs.
%% Mode `none': no beamspy job may be running; the window starts after
%% SettleMs. Mode `job': waits up to WaitMs for beamspy's job process, then
%% SettleMs, then the window, and checks the job is still there at the end.
%% Mode `trace': as `job', but also waits for the driver to be traced
%% before settling, and checks it still is at the end of the window.
%% Returns a line for the shell:
%% "ok KMSGS_PER_S KMSGS_PER_CPU_S CORES SENDERS WINDOW_MS READY_MS"
%% (thousands of messages sent by the senders that completed in the
%% window, per second of wall time and per second of the node's CPU time,
%% `statistics(runtime)': all its threads; CORES: CPU time over wall time;
%% READY_MS: from the job process seen to tracing seen on) or "bad WHY".
-spec window(none | job | trace, non_neg_integer(), pos_integer(), pos_integer()) -> string().
window(Mode, SettleMs, WindowMs, WaitMs) ->
    Deadline = erlang:monotonic_time(millisecond) + WaitMs,
    case wait_ready(Mode, Deadline) of
        {ok, Job, ReadyMs} ->
            timer:sleep(SettleMs),
            C = persistent_term:get(?KEY),
            {Cpu0, _} = erlang:statistics(runtime),
            T0 = erlang:monotonic_time(microsecond),
            R0 = counters:get(C, 1),
            timer:sleep(WindowMs),
            R1 = counters:get(C, 1),
            T1 = erlang:monotonic_time(microsecond),
            {Cpu1, _} = erlang:statistics(runtime),
            case still_on(Mode, Job) of
                true ->
                    Senders = R1 - R0,
                    Us = T1 - T0,
                    CpuMs = max(1, Cpu1 - Cpu0),
                    lists:flatten(io_lib:format("ok ~.3f ~.3f ~.3f ~w ~.1f ~w",
                                                [Senders * ?MESSAGES * 1.0e3 / Us,
                                                 Senders * ?MESSAGES / CpuMs,
                                                 CpuMs * 1000 / Us,
                                                 Senders, Us / 1000, ReadyMs]));
                Why ->
                    "bad " ++ atom_to_list(Why) ++ "_at_end_of_window"
            end;
        {error, Why} ->
            "bad " ++ atom_to_list(Why)
    end.

wait_ready(none, _Deadline) ->
    case agent_job() of
        undefined -> {ok, none, 0};
        _ -> {error, job_running}
    end;
wait_ready(Mode, Deadline) ->
    case wait_until(fun agent_job/0, Deadline) of
        {ok, Job} when Mode =:= trace ->
            T0 = erlang:monotonic_time(millisecond),
            case wait_until(fun() -> driver_traced() andalso Job end, Deadline) of
                {ok, Job} -> {ok, Job, erlang:monotonic_time(millisecond) - T0};
                {error, _} -> {error, driver_never_traced}
            end;
        {ok, Job} ->
            {ok, Job, 0};
        {error, _} ->
            {error, no_job}
    end.

%% Polls F every 5 ms until it returns a pid.
wait_until(F, Deadline) ->
    case F() of
        Pid when is_pid(Pid) ->
            {ok, Pid};
        _ ->
            case erlang:monotonic_time(millisecond) > Deadline of
                true -> {error, timeout};
                false -> timer:sleep(5), wait_until(F, Deadline)
            end
    end.

driver_traced() ->
    case erlang:trace_info(whereis(bench_dist_driver), flags) of
        {flags, [_ | _]} -> true;
        _ -> false
    end.

still_on(none, none) ->
    case agent_job() of
        undefined -> true;
        _ -> job_running
    end;
still_on(Mode, Job) ->
    case is_process_alive(Job) of
        false -> job_ended;
        true when Mode =:= trace ->
            case driver_traced() of
                true -> true;
                false -> driver_not_traced
            end;
        true -> true
    end.

%% @doc Waits up to TimeoutMs until nothing of a beamspy job is left: no
%% job process, no traced process and, when Modules is true, no beamspy
%% module loaded. Returns "ok MS" or "bad WHAT".
-spec wait_clean(boolean(), pos_integer()) -> string().
wait_clean(Modules, TimeoutMs) ->
    T0 = erlang:monotonic_time(millisecond),
    wait_clean(Modules, T0, T0 + TimeoutMs).

wait_clean(Modules, T0, Deadline) ->
    Left = leftovers(Modules),
    Now = erlang:monotonic_time(millisecond),
    if
        Left =:= [] -> "ok " ++ integer_to_list(Now - T0);
        Now > Deadline -> lists:flatten(io_lib:format("bad ~w", [Left]));
        true -> timer:sleep(20), wait_clean(Modules, T0, Deadline)
    end.

leftovers(Modules) ->
    Traced = [P || P <- processes(), P =/= self(),
                   case erlang:trace_info(P, flags) of {flags, [_ | _]} -> true; _ -> false end],
    Mods = [M || Modules, {M, _} <- code:all_loaded(), lists:prefix("beamspy", atom_to_list(M))],
    [{job, J} || J <- [agent_job()], J =/= undefined]
        ++ [{traced, length(Traced)} || Traced =/= []]
        ++ [{modules, length(Mods)} || Mods =/= []].

%% @doc The job process of beamspy_agent on this node, or undefined.
-spec agent_job() -> pid() | undefined.
agent_job() ->
    Jobs = [P || P <- processes(),
                 case erlang:process_info(P, dictionary) of
                     {dictionary, D} -> lists:keyfind('$initial_call', 1, D) =:= {'$initial_call', {beamspy_agent, init, 4}};
                     _ -> false
                 end],
    case Jobs of
        [Pid | _] -> Pid;
        [] -> undefined
    end.

%% @doc "module:md5hex ..." (sorted, space-separated) of the beamspy
%% modules loaded on this node.
-spec beamspy_md5s() -> string().
beamspy_md5s() ->
    Mods = lists:sort([M || {M, _} <- code:all_loaded(), lists:prefix("beamspy", atom_to_list(M))]),
    lists:flatten(lists:join(" ", [io_lib:format("~s:~s", [M, hex(M:module_info(md5))]) || M <- Mods])).

hex(Bin) ->
    [io_lib:format("~2.16.0b", [B]) || <<B>> <= Bin].

%% @doc Loads every beamspy module found on the code path (and so the NIF).
-spec load_beamspy() -> string().
load_beamspy() ->
    Mods = [list_to_atom(filename:basename(F, ".beam"))
            || Dir <- code:get_path(),
               F <- filelib:wildcard(filename:join(Dir, "beamspy*.beam"))],
    Res = [{M, code:ensure_loaded(M)} || M <- Mods],
    Bad = [X || {_, R} = X <- Res, element(1, R) =/= module],
    lists:flatten(io_lib:format("~w ~w", [length(Mods), Bad])).
