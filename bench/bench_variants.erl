%%% @doc One measurement of one workload under one variant, in a fresh
%%% process, with a time cap.
%%%
%%% Variants: `untraced'; `null' (the null erl_tracer NIF with beamspy's
%%% flags and caller match spec); `beamspy' (`beamspy:apply/2' writing
%%% folded stacks); `fprof' (`fprof:apply/3' + `fprof:profile/1' +
%%% `fprof:analyse/1' to a file); `eprof' (`eprof:profile/2' +
%%% `eprof:analyze/1' logged to a file). The workload runs inside a wrapper
%%% fun that reads the clock before and after it, so the time of the call
%%% itself is measured from inside, whatever the tool does around it.
-module(bench_variants).

-export([names/0, measure/4, beamspy_info/3]).

-type variant() :: untraced | null | beamspy | fprof | eprof.
-type ctx() :: #{dir := file:filename(), timeout_ms := pos_integer(),
                 fprof_timeout_ms := pos_integer(), _ => _}.
%% Times are in milliseconds, memory in bytes.
-type sample() :: #{status := ok | timeout | {error, term()},
                    hash => integer(), call_ms => float(), total_ms => float(),
                    setup_ms => float(), write_ms => float(),
                    vm_peak => non_neg_integer(), rss_peak => non_neg_integer() | undefined,
                    trace_bytes => non_neg_integer(), out_bytes => non_neg_integer()}.
-export_type([variant/0, ctx/0, sample/0]).

-define(CALLER_MS, [{'_', [], [{message, {{cp, {caller}}}}]}]).
-define(FLAGS, [call, arity, return_to, running, set_on_spawn]).

%% @doc Every variant, in the order of the first repetition.
-spec names() -> [variant()].
names() -> [untraced, null, beamspy, eprof, fprof].

%% @doc Measures Workload (prepared as Input) once under Variant.
-spec measure(variant(), bench_workloads:name(), term(), ctx()) -> sample().
measure(Variant, Workload, Input, Ctx) ->
    Cap = case Variant of
              fprof -> maps:get(fprof_timeout_ms, Ctx);
              _ -> maps:get(timeout_ms, Ctx)
          end,
    in_worker(fun() -> run(Variant, timed(Workload, Input), Workload, Ctx) end, Variant, Cap, Ctx).

%% @doc Runs the workload once under `beamspy:profile/2' and returns what
%% the profile says about itself (memory_peak, events, dropped, truncated),
%% with the memory growth seen from outside.
-spec beamspy_info(bench_workloads:name(), term(), ctx()) -> map().
beamspy_info(Workload, Input, Ctx) ->
    F = timed(Workload, Input),
    in_worker(fun() ->
                      {ok, #{result := {return, {H, _, _}}, profile := P}} = beamspy:profile(F, #{}),
                      maps:merge(#{status => ok, hash => H},
                                 maps:with([memory_peak, events, dropped, truncated, duration_ns], P))
              end, beamspy, maps:get(timeout_ms, Ctx), Ctx).

%% The call under test: returns a hash of its result and the clock around it.
timed(Workload, Input) ->
    fun() ->
            T0 = erlang:monotonic_time(),
            R = bench_workloads:run(Workload, Input),
            T1 = erlang:monotonic_time(),
            {erlang:phash2(R), T0, T1}
    end.

run(untraced, F, _, _) ->
    {H, T0, T1} = F(),
    #{status => ok, hash => H, call_ms => ms(T1 - T0), total_ms => ms(T1 - T0)};
run(null, F, _, _) ->
    State = bench_null_tracer:state(),
    Start = erlang:monotonic_time(),
    _ = erlang:trace_pattern({'_', '_', '_'}, ?CALLER_MS, [local]),
    _ = erlang:trace_pattern(on_load, ?CALLER_MS, [local]),
    _ = erlang:trace(self(), true, [{tracer, bench_null_tracer, State} | ?FLAGS]),
    {H, T0, T1} = F(),
    _ = erlang:trace(self(), false, [all]),
    _ = erlang:trace_pattern({'_', '_', '_'}, false, [local]),
    _ = erlang:trace_pattern(on_load, false, [local]),
    End = erlang:monotonic_time(),
    #{status => ok, hash => H, call_ms => ms(T1 - T0), total_ms => ms(End - Start)};
run(beamspy, F, Workload, #{dir := Dir}) ->
    Out = filename:join([Dir, "out", atom_to_list(Workload)]),
    Start = erlang:monotonic_time(),
    {H, T0, T1} = beamspy:apply(F, #{output => Out, formats => [folded], quiet => true}),
    End = erlang:monotonic_time(),
    %% Only the size of what was written is kept (it may be large).
    Files = filelib:wildcard(filename:join(Out, "*")),
    Bytes = lists:sum([filelib:file_size(P) || P <- Files]),
    _ = [file:delete(P) || P <- Files],
    #{status => ok, hash => H, call_ms => ms(T1 - T0), total_ms => ms(End - Start),
      setup_ms => ms(T0 - Start), write_ms => ms(End - T1), out_bytes => Bytes};
run(fprof, F, _, #{dir := Dir}) ->
    Trace = fprof_trace(Dir),
    Start = erlang:monotonic_time(),
    {H, T0, T1} = fprof:apply(F, [], [{file, Trace}]),
    ok = fprof:profile([{file, Trace}]),
    ok = fprof:analyse([{dest, filename:join(Dir, "fprof.analysis")}]),
    End = erlang:monotonic_time(),
    Bytes = filelib:file_size(Trace),
    ok = fprof:stop(),
    _ = file:delete(Trace),
    #{status => ok, hash => H, call_ms => ms(T1 - T0), total_ms => ms(End - Start),
      trace_bytes => Bytes};
run(eprof, F, _, #{dir := Dir}) ->
    Start = erlang:monotonic_time(),
    {ok, _} = eprof:start(),
    ok = eprof:log(filename:join(Dir, "eprof.analysis")),
    {ok, {H, T0, T1}} = eprof:profile([], F),
    ok = eprof:analyze(total),
    End = erlang:monotonic_time(),
    stopped = eprof:stop(),
    #{status => ok, hash => H, call_ms => ms(T1 - T0), total_ms => ms(End - Start)}.

%% Runs Fun in a fresh process whose output (fprof's and eprof's progress
%% and tables) goes nowhere, with the memory sampler around it. After a
%% timeout or a crash, everything the variant may have left behind is
%% cleaned up before the next measurement.
in_worker(Fun, Variant, Cap, Ctx) ->
    erlang:garbage_collect(),
    Sampler = bench_memory:start(),
    Parent = self(),
    Ref = make_ref(),
    Sink = sink(),
    {Pid, Mon} = spawn_monitor(fun() ->
                                       group_leader(Sink, self()),
                                       Parent ! {Ref, Fun()}
                               end),
    Result = receive
                 {Ref, R} ->
                     erlang:demonitor(Mon, [flush]),
                     R;
                 {'DOWN', Mon, process, Pid, Why} ->
                     cleanup(Variant, Ctx),
                     #{status => {error, Why}}
             after Cap ->
                     exit(Pid, kill),
                     receive {'DOWN', Mon, process, Pid, _} -> ok end,
                     cleanup(Variant, Ctx),
                     #{status => timeout}
             end,
    maps:merge(Result, bench_memory:stop(Sampler)).

%% The io server that accepts and drops all output, one for the whole run:
%% it outlives every worker, so a tool's process that is still printing
%% when its worker is killed does not crash on a dead group leader.
sink() ->
    case whereis(bench_sink) of
        undefined ->
            Pid = spawn(fun sink_loop/0),
            true = register(bench_sink, Pid),
            Pid;
        Pid ->
            Pid
    end.

sink_loop() ->
    receive
        {io_request, From, ReplyAs, Req} ->
            From ! {io_reply, ReplyAs, sink_reply(Req)};
        _ ->
            ok
    end,
    sink_loop().

sink_reply({put_chars, _}) -> ok;
sink_reply({put_chars, _, _}) -> ok;
sink_reply({put_chars, _, _, _, _}) -> ok;
sink_reply({put_chars, _, _, _}) -> ok;
sink_reply({requests, _}) -> ok;
sink_reply(_) -> {error, enotsup}.

cleanup(fprof, #{dir := Dir}) ->
    %% The processes fprof linked to (its trace reader) go first, so that
    %% none of them crashes on the server's vanished tables.
    case whereis(fprof_server) of
        undefined ->
            ok;
        Server ->
            {links, Links} = process_info(Server, links),
            _ = [exit(P, kill) || P <- Links, is_pid(P), P =/= self()],
            exit(Server, kill)
    end,
    _ = file:delete(fprof_trace(Dir)),
    untrace_all();
cleanup(eprof, _) ->
    _ = try eprof:stop() catch _:_ -> ok end,
    untrace_all();
cleanup(beamspy, _) ->
    %% beamspy's session process cleans up when its caller dies; wait for it.
    wait_unregistered(beamspy_active_session, 100),
    untrace_all();
cleanup(_, _) ->
    untrace_all().

fprof_trace(Dir) ->
    filename:join(Dir, "fprof.trace").

untrace_all() ->
    _ = erlang:trace(all, false, [all]),
    _ = [erlang:trace_pattern(P, false, [Kind]) || P <- [{'_', '_', '_'}, on_load],
                                                    Kind <- [local, call_time]],
    ok.

wait_unregistered(_, 0) -> ok;
wait_unregistered(Name, N) ->
    case whereis(Name) of
        undefined -> ok;
        _ -> timer:sleep(100), wait_unregistered(Name, N - 1)
    end.

ms(Native) ->
    erlang:convert_time_unit(Native, native, nanosecond) / 1.0e6.
