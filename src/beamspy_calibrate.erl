%%% @doc What one traced event costs on this VM, so that it can be
%%% subtracted from traced times (option `compensate', on by default).
%%%
%%% Every traced call, return and reschedule costs the traced process time
%%% of its own: the VM's breakpoint and match spec, the `erl_tracer'
%%% callback, the engine's update. That cost is charged to whatever frame
%%% is running, so a function called often looks far slower than it is
%%% (a profile's proportions follow call counts). The NIF times its own
%%% callbacks and leaves that time out exactly; for the VM's part before
%%% each callback, as Python's `profile' module does, beamspy calibrates the
%%% cost on the machine and the engine subtracts it from the interval each
%%% call or return ends (a reschedule's from the time scheduled out), never
%%% below zero (c_src/engine/compensation.h).
%%%
%%% How it is measured: a short-lived process of its own (never the user's)
%%% runs three loops of this module untraced and then traced by a NIF session
%%% of the same kind as the recording (same tracer, same flags, timeline on
%%% or off, the callbacks' own time left out as in a recording), and reads
%%% what the session charged to each loop function's frames:
%%% <ul>
%%% <li>a tail-recursive loop: one tail call per iteration, whose cost its
%%%   frames hold;</li>
%%% <li>a loop calling a leaf function: a body call, a tail call and a
%%%   `return_to' per iteration; the loop's frames hold the cost of the
%%%   calls, the leaf's the cost of the returns;</li>
%%% <li>a loop of `erlang:yield/0': one `out' and one `in' per iteration
%%%   (as a BIF that traps, say `erlang:md5/1' on a large binary, makes),
%%%   timed.</li>
%%% </ul>
%%% Garbage collection events are not compensated (cost 0).
%%% Each runs in short batches, 21 times after a warm-up round, and the
%%% costs are the medians of the rounds' estimates (the machine may be busy
%%% with other work: most short batches still run uninterrupted).
%%% The whole measurement takes a few tens of milliseconds; its result is
%%% kept per kind of session (in an atomics array a persistent term holds,
%%% so that keeping new costs never replaces a persistent term, which would
%%% make every process of the node scan its heap) and used by the
%%% recordings that start within ?MAX_AGE_MS of it. An older one is measured
%%% again: the costs are those of the machine as it is now, and one taken
%%% during a burst of load (it reads 1.5-2x the idle costs) would otherwise
%%% over-subtract in every later recording for the life of the node (a busy
%%% fib loop's running time was taken to ~0 so).
%%% Only this module's loop functions get trace patterns, in a dynamic
%%% trace session where the VM has them (OTP 27+), else node-wide (the
%%% owner holds the session lock then); the calibrating process removes
%%% them itself, even when its caller dies meanwhile.
-module(beamspy_calibrate).

-export([nif_option/1, costs/1, measure/1, wait_idle/0, forget/0, kept/1, keep/3]).
%% The loops, called (traced) by the calibrating process only.
-export([tail/1, body/2, leaf/1]).

-define(KEY(Timeline), {?MODULE, costs, Timeline}).
-define(ROUNDS, 21).
-define(TAIL_ITERATIONS, 600).
-define(BODY_ITERATIONS, 300).
-define(YIELDS, 40).
%% A calibration that has not finished by then (a node starving the
%% calibrating process) gives up: the recording keeps raw times and says so.
-define(TIMEOUT_MS, 5000).
%% How long measured costs are used before they are measured again.
-define(MAX_AGE_MS, 60000).
%% The calibrating process, while it runs.
-define(CALIBRATING, beamspy_calibrating).
-include("beamspy_trace.hrl").

-type costs() :: #{call := non_neg_integer(), tail_call := non_neg_integer(),
                   return := non_neg_integer(), sched := non_neg_integer(),
                   gc := non_neg_integer()}.
-export_type([costs/0]).

%% @doc The NIF session options with `compensate => true' replaced by this
%% VM's costs per event (`compensate => false' stays: raw times). Options
%% without `compensate' are returned unchanged. When calibration fails, the
%% recording keeps raw times (`compensate => false'): its outputs say so.
-spec nif_option(map()) -> map().
nif_option(#{compensate := true} = NifOpts) ->
    Timeline = maps:get(timeline, NifOpts, 0) > 0,
    case costs(Timeline) of
        {ok, Costs} -> NifOpts#{compensate => Costs};
        {error, Why} ->
            io:format(standard_error, "beamspy: measuring the tracer's cost failed (~tp): times are raw "
                      "traced times~n", [Why]),
            NifOpts#{compensate => false}
    end;
nif_option(NifOpts) ->
    NifOpts.

%% @doc This VM's cost of one traced event per kind, in ns, for a session
%% with or without a timeline: measured, then kept for a minute (a later
%% call measures again).
%%
%% ```
%% 1> beamspy_calibrate:costs(false).
%% {ok,#{call => 412,gc => 0,return => 388,sched => 730}}
%% '''
-spec costs(boolean()) -> {ok, costs()} | {error, term()}.
costs(Timeline) ->
    case kept(Timeline) of
        {ok, Costs, AgeMs} when AgeMs < ?MAX_AGE_MS ->
            {ok, Costs};
        _ ->
            case measure(Timeline) of
                {ok, Costs} = Ok ->
                    keep(Timeline, Costs, erlang:monotonic_time(millisecond)),
                    Ok;
                {error, _} = Error ->
                    Error
            end
    end.

%% The kept costs: kinds in this order, then when they were measured
%% (monotonic ms). Written costs first, time last; two calibrations at once
%% may mix their costs, each of which was measured.
-define(KINDS, [call, tail_call, return, sched, gc]).
-define(MEASURED_AT, 6).

%% @private The costs kept for a kind of session and their age in ms, or
%% `none'.
-spec kept(boolean()) -> {ok, costs(), integer()} | none.
kept(Timeline) ->
    case persistent_term:get(?KEY(Timeline), undefined) of
        undefined ->
            none;
        Slots ->
            case atomics:get(Slots, ?MEASURED_AT) of
                0 ->
                    none;
                At ->
                    Costs = maps:from_list(lists:zip(?KINDS, [atomics:get(Slots, I) || I <- lists:seq(1, 5)])),
                    {ok, Costs, erlang:monotonic_time(millisecond) - At}
            end
    end.

%% @private Keeps Costs for a kind of session as measured at MeasuredAt
%% (monotonic ms). The persistent term is put once per VM and kind.
-spec keep(boolean(), costs(), integer()) -> ok.
keep(Timeline, Costs, MeasuredAt) ->
    Slots = case persistent_term:get(?KEY(Timeline), undefined) of
                undefined ->
                    New = atomics:new(?MEASURED_AT, [{signed, true}]),
                    persistent_term:put(?KEY(Timeline), New),
                    New;
                Existing ->
                    Existing
            end,
    [atomics:put(Slots, I, maps:get(K, Costs)) || {I, K} <- lists:zip(lists:seq(1, 5), ?KINDS)],
    %% 0 stands for "none kept".
    atomics:put(Slots, ?MEASURED_AT, case MeasuredAt of 0 -> 1; _ -> MeasuredAt end),
    ok.

%% @doc Measures again (nothing kept): the compensation tests use it.
-spec measure(boolean()) -> {ok, costs()} | {error, term()}.
measure(Timeline) ->
    Parent = self(),
    Ref = make_ref(),
    {Pid, Mon} = spawn_opt(fun() ->
                                   %% Named, so a watchdog can wait for it (wait_idle/1).
                                   _ = try register(?CALIBRATING, self()) catch error:badarg -> false end,
                                   Parent ! {Ref, calibrate(Timeline)}
                           end, [monitor, {priority, high}]),
    receive
        {Ref, Result} ->
            erlang:demonitor(Mon, [flush]),
            Result;
        {'DOWN', Mon, process, Pid, Why} ->
            {error, {calibration_failed, Why}}
    after ?TIMEOUT_MS ->
            %% It cleans up its patterns when it ends; it is not killed
            %% (that would leave them set).
            erlang:demonitor(Mon, [flush]),
            {error, calibration_timeout}
    end.

%% @doc Waits until no calibration runs: at most as long as a calibration
%% may last (it is stopped after ?TIMEOUT_MS) and a second to clean up. The
%% calibrating process traces itself and cleans up as it ends, whoever
%% asked for it: a watchdog cleaning up after an owner killed while it
%% calibrated waits for it, so that the node is clean when the failed start
%% returns.
-spec wait_idle() -> ok.
wait_idle() ->
    Ms = ?TIMEOUT_MS + 1000,
    case whereis(?CALIBRATING) of
        undefined ->
            ok;
        Pid ->
            Mon = erlang:monitor(process, Pid),
            receive {'DOWN', Mon, process, Pid, _} -> ok
            after Ms -> erlang:demonitor(Mon, [flush]), ok
            end
    end.

%% @doc Forgets the kept costs (the next recording calibrates again).
-spec forget() -> ok.
forget() ->
    [atomics:put(Slots, ?MEASURED_AT, 0)
     || T <- [true, false], Slots <- [persistent_term:get(?KEY(T), undefined)], Slots =/= undefined],
    ok.

%%% ---------------------------------------------------------------------
%%% The loops
%%% ---------------------------------------------------------------------

%% @private One tail call per iteration.
-spec tail(non_neg_integer()) -> ok.
tail(0) -> ok;
tail(N) -> tail(N - 1).

%% @private Per iteration: call leaf, return_to body, call body. The sum
%% keeps leaf a body call (its result is used).
-spec body(non_neg_integer(), integer()) -> integer().
body(0, Acc) -> Acc;
body(N, Acc) -> body(N - 1, Acc + leaf(N)).

%% @private
-spec leaf(integer()) -> integer().
leaf(N) -> N band 1.

%%% ---------------------------------------------------------------------
%%% Measuring (in the calibrating process)
%%% ---------------------------------------------------------------------

calibrate(Timeline) ->
    Spans = case Timeline of
                true -> 2 * (?TAIL_ITERATIONS + 3 * ?BODY_ITERATIONS + 2 * ?YIELDS) * (?ROUNDS + 1);
                false -> 0
            end,
    %% Compensation on with no costs: the engine leaves the callbacks' own
    %% time out (exactly, as in the recording); what is measured here is
    %% the rest, the VM's part before each callback.
    Zero = #{call => 0, return => 0, sched => 0, gc => 0},
    case beamspy_tracer:session_new(#{timeline => Spans, max_memory => 16 * 1024 * 1024,
                                      compensate => Zero}) of
        {error, _} = Error ->
            Error;
        Session ->
            Backend = open(Session),
            try
                Rounds = [one_round(Backend) || _ <- lists:seq(0, ?ROUNDS)],
                {ok, estimate(tl(Rounds))}
            after
                close(Backend)
            end
    end.

%% The calibrating process's own tracing: the same tracer and flags as a
%% recording, patterns on the loops only.
open(Session) ->
    Loops = loops(),
    case beamspy_backend:sessions_supported() of
        true ->
            TS = trace:session_create(?MODULE, {beamspy_tracer, Session}, []),
            _ = [trace:function(TS, MFA, ?CALLER_MS, [local]) || MFA <- Loops],
            {session, Session, TS, Loops};
        false ->
            _ = [erlang:trace_pattern(MFA, ?CALLER_MS, [local]) || MFA <- Loops],
            {legacy, Session, Loops}
    end.

close({session, Session, TS, _}) ->
    ok = beamspy_tracer:session_stop(Session),
    _ = try trace:session_destroy(TS) catch error:_ -> ok end,
    ok;
close({legacy, Session, Loops}) ->
    _ = erlang:trace(self(), false, [all]),
    _ = [erlang:trace_pattern(MFA, false, [local]) || MFA <- Loops],
    ok = beamspy_tracer:session_stop(Session).

trace_self({session, _, TS, _}, How) ->
    _ = trace:process(TS, self(), How, flags(How)),
    ok;
trace_self({legacy, Session, _}, true) ->
    _ = erlang:trace(self(), true, [{tracer, beamspy_tracer, Session} | flags(true)]),
    ok;
trace_self({legacy, _, _}, false) ->
    _ = erlang:trace(self(), false, [all]),
    ok.

flags(true) -> [call, arity, return_to, running, exiting];
flags(false) -> [all].

%% One round: each workload untraced, then traced, in short batches (a
%% fraction of a millisecond) so that many run without the OS taking the
%% CPU away in the middle. Traced, each batch reads what the session
%% charged meanwhile to the loop functions' frames and to the callbacks.
one_round(Backend) ->
    Tail0 = time(fun() -> tail(?TAIL_ITERATIONS) end),
    Body0 = time(fun() -> body(?BODY_ITERATIONS, 0) end),
    Ping0 = time(fun() -> yields(?YIELDS) end),
    ok = trace_self(Backend, true),
    Session = session(Backend),
    Tail1 = time_traced(Session, fun() -> tail(?TAIL_ITERATIONS) end),
    Body1 = time_traced(Session, fun() -> body(?BODY_ITERATIONS, 0) end),
    Ping1 = time_traced(Session, fun() -> yields(?YIELDS) end),
    ok = trace_self(Backend, false),
    {{Tail0, Tail1}, {Body0, Body1}, {Ping0, Ping1}}.

%% Per round, from what the engine charged (so the split between kinds is
%% the one a recording makes): a tail call's cost from the tail loop's
%% frames (each tail/1 interval ends at a tail call: N of them, less the
%% loop's untraced time); a body call's from the body loop's (each
%% iteration's two intervals end at a body call, leaf/1, and a tail call,
%% body/2: N of each); a return's from the leaf's (each leaf/1 interval
%% ends at its return_to: N of them; the leaf's own work is a few ns); a
%% reschedule's from the wall time of the yields (less the callbacks'
%% time). Each cost is the median over the rounds: most batches are shorter
%% than the OS's time slices and run uninterrupted, so the median is the
%% tracer's cost as the CPU pays it while the machine does what it does now
%% (caches shared with other work included); the OS's interruptions are the
%% load factor's business (c_src/nif/load_factor.c). A yield makes one out
%% and one in.
estimate(Rounds) ->
    PerRound = [begin
                    {TailUntraced, {_, [TailSelf, _, _]}} = Tail,
                    {BodyUntraced, {_, [_, BodySelf, LeafSelf]}} = Body,
                    {PingUntraced, {PingTraced, _}} = Ping,
                    TailCall = max(0, TailSelf - TailUntraced) / ?TAIL_ITERATIONS,
                    Call = max(0.0, BodySelf - BodyUntraced - ?BODY_ITERATIONS * TailCall) / ?BODY_ITERATIONS,
                    Return = LeafSelf / ?BODY_ITERATIONS,
                    {{Call, TailCall}, {Return, max(0, PingTraced - PingUntraced) / (2 * ?YIELDS)}}
                end || {Tail, Body, Ping} <- Rounds],
    {CallPairs, OtherPairs} = lists:unzip(PerRound),
    {Calls, TailCalls} = lists:unzip(CallPairs),
    {Returns, Scheds} = lists:unzip(OtherPairs),
    #{call => round(median(Calls)), tail_call => max(1, round(median(TailCalls))),
      return => round(median(Returns)), sched => round(median(Scheds)), gc => 0}.

median(Xs) ->
    lists:nth((length(Xs) + 1) div 2, lists:sort(Xs)).

time(Fun) ->
    T0 = erlang:monotonic_time(nanosecond),
    _ = Fun(),
    erlang:monotonic_time(nanosecond) - T0.

%% A traced batch: its time less its callbacks' own time (which the
%% engine leaves out exactly), and the self time charged meanwhile to each
%% loop function's frames.
time_traced(Session, Fun) ->
    Loops = loops(),
    {C0, S0} = beamspy_tracer:session_probe(Session, Loops),
    T = time(Fun),
    {C1, S1} = beamspy_tracer:session_probe(Session, Loops),
    {T - (C1 - C0), [B - A || {A, B} <- lists:zip(S0, S1)]}.

loops() ->
    [{?MODULE, tail, 1}, {?MODULE, body, 2}, {?MODULE, leaf, 1}].

session({session, Session, _, _}) -> Session;
session({legacy, Session, _}) -> Session.

yields(0) ->
    ok;
yields(N) ->
    erlang:yield(),
    yields(N - 1).
