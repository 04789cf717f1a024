%%% @doc Which sampled processes are running right now, and where they
%%% stop: what `beamspy_sampler' and `beamspy_top' sample with.
%%%
%%% `process_info(P, current_stacktrace)' (or `backtrace') on another
%%% process is answered by that process itself, the next time it handles
%%% signals: when it enters a `receive', or when it is next scheduled in. A
%%% process that runs short handlers answers from its receive loop, nearly
%%% always (measured on OTP 25: 2,000 of 2,000 samples of a server kept busy
%%% by 12 µs work units landed in `receive'), so a sampler that asks
%%% blindly sees servers idle in their loops while they burn CPU elsewhere.
%%%
%%% This module traces only the `running' flag (in/out) of the sampled
%%% processes through the NIF (a session made with `run_states => true': one
%%% callback per time slice, nothing recorded). Then:
%%% <ul>
%%% <li>{@link states/3} tells which processes ran at the time a sample
%%%   was due, and which did not (from the times of their last in and
%%%   out: the sampler itself often runs late, after the busy process it
%%%   shares a scheduler with is scheduled out);</li>
%%% <li>one that still runs sends the sampler `{beamspy_out, Pid, Slices,
%%%   MFA}' when it stops running; one that has stopped since, and not run
%%%   again, is settled at once;</li>
%%% <li>{@link settle/2} then tells why it stopped: `preempted' (its time
%%%   slice ran out, it is runnable: it is descheduled where it was
%%%   burning CPU, and its stack read now is that place), or `waited' (it
%%%   reached a `receive' with nothing to take before its slice ran out:
%%%   where it ran cannot be seen without tracing calls).</li>
%%% </ul>
%%%
%%% Structure: the NIF session, its trace flags and a watchdog belong to
%%% the calling process (the sampler or top). {@link close/1} switches the
%%% flags off; if the caller is killed, the watchdog does (and the trace
%%% session of OTP 27+ goes with its handle). On OTP 25/26 a process has one
%%% tracer: processes already traced by anyone are refused (`{error,
%%% {already_traced, Pid}}'), and the caller samples as before without run
%%% states.
-module(beamspy_sched_watch).

-export([open/1, watch/2, states/3, settle/2, close/1]).

-define(MAX_MEMORY, 64 bsl 20).
-define(MIN_PROCESSES, 4096).
-define(MAX_PROCESSES, 1 bsl 20).

-opaque runstate() :: #{session := beamspy_tracer:session(),
                        backend := beamspy_backend:backend(),
                        watchdog := pid(),
                        watched := #{pid() => true}}.
-type state() :: {running, non_neg_integer()} | {stopped, mfa() | 0} | out | unknown.
-export_type([runstate/0, state/0]).

%%% ---------------------------------------------------------------------
%%% API
%%% ---------------------------------------------------------------------

%% @doc Opens the run states of `all' processes (those spawned later too)
%% or of a list of pids, for the calling process, which receives the
%% `beamspy_out' messages. Errors: `{error, nif}' when the NIF cannot be
%% used here, `{error, {already_traced, Pid | new}}' (OTP 25/26: a process
%% has one tracer), `{error, enomem}'.
%%
%% ```
%% {ok, RS} = beamspy_sched_watch:open([Server]),
%% [{running, 12}] = beamspy_sched_watch:states(RS, [Server], erlang:monotonic_time(nanosecond)).
%% '''
-spec open(all | [pid()]) -> {ok, runstate()} | {error, term()}.
open(Targets) ->
    Max = max_processes(Targets),
    case new_session(Max) of
        {ok, Session} ->
            Backend = beamspy_backend:open(Session, auto),
            case free(Backend, Targets) of
                ok ->
                    Watchdog = beamspy_watchdog:start(),
                    ok = beamspy_watchdog:arm(Watchdog, #{session => Session, patterns => own}),
                    RS = #{session => Session, backend => Backend, watchdog => Watchdog,
                           watched => #{}},
                    {ok, watch_all(RS, Targets)};
                {error, _} = Error ->
                    ok = beamspy_tracer:session_stop(Session),
                    Error
            end;
        {error, _} = Error ->
            Error
    end.

%% @doc Watches Pids from now on, and no longer the processes watched
%% before that are not in Pids (top's busiest processes change).
-spec watch(runstate(), [pid()]) -> runstate().
watch(#{backend := Backend, watched := Watched} = RS, Pids) ->
    Wanted = maps:from_list([{P, true} || P <- Pids]),
    _ = [beamspy_backend:process(Backend, P, false, []) || P <- maps:keys(Watched),
                                                          not is_map_key(P, Wanted)],
    _ = [switch_on(Backend, P) || P <- Pids, not is_map_key(P, Watched), untraced(Backend, P)],
    RS#{watched := Wanted}.

%% OTP 25/26: a process traced by anyone else is left alone (it has one
%% tracer); its state stays `unknown', and the caller asks it blindly.
untraced({session, _, _}, _) -> true;
untraced({legacy, _}, P) -> first_traced([P]) =:= ok.

%% @doc What each pid was doing at time T (`erlang:monotonic_time(nanosecond)',
%% not later than now; a sampler is often late, see the NIF's sched_watch.h),
%% in order: `{running, Slices}' (it ran at T and still runs: it sends the
%% caller `{beamspy_out, Pid, Slices, MFA}' when it stops), `{stopped, MFA}'
%% (it ran at T and has stopped since, at MFA, and not run again: its stack
%% now is where it stopped), `out' (it did not run at T) or `unknown' (no
%% scheduling event seen since it was watched, or too many since T).
-spec states(runstate(), [pid()], integer()) -> [state()].
states(#{session := Session}, Pids, T) ->
    beamspy_tracer:session_run_states(Session, Pids, T).

%% @doc Why Pid, just told to have stopped running, stopped: `preempted'
%% (it is runnable, or already running again), `waited' (it waits in a
%% `receive'), or `gone'. Read at once from its status, which another
%% process reads without a signal; a message that reaches a waiting
%% process in between makes it look preempted (rare: the sampler runs at
%% high priority and reads this as soon as told).
-spec settle(pid(), term()) -> preempted | waited | gone.
settle(Pid, MFA) ->
    case erlang:process_info(Pid, status) of
        {status, waiting} -> waited;
        {status, exiting} -> gone;
        {status, _} when is_tuple(MFA) -> preempted;
        _ -> gone
    end.

%% @doc Stops watching: every flag switched off, the NIF session stopped.
-spec close(runstate()) -> ok.
close(#{session := Session, backend := Backend, watchdog := Watchdog}) ->
    ok = beamspy_tracer:session_stop(Session),
    case Backend of
        {legacy, _} ->
            ok = beamspy_backend:legacy_untrace(new, Session),
            beamspy_backend:legacy_untrace_all(Session);
        {session, _, TS} ->
            _ = try trace:session_destroy(TS) catch error:_ -> ok end,
            ok
    end,
    beamspy_watchdog:disarm(Watchdog).

%%% ---------------------------------------------------------------------
%%% Setting up
%%% ---------------------------------------------------------------------

max_processes(all) ->
    min(?MAX_PROCESSES, max(?MIN_PROCESSES, 2 * erlang:system_info(process_count)));
max_processes(Pids) ->
    min(?MAX_PROCESSES, max(?MIN_PROCESSES, 2 * length(Pids))).

new_session(Max) ->
    Opts = #{run_states => true, owner => self(), sleep => false, max_processes => Max,
             max_memory => ?MAX_MEMORY, ignore => [self()]},
    try beamspy_tracer:session_new(Opts) of
        {error, _} = Error -> Error;
        Session -> {ok, Session}
    catch
        error:_ -> {error, nif}
    end.

%% OTP 25/26: one tracer a process, so any tracer already set is a refusal.
free({session, _, _}, _) ->
    ok;
free({legacy, _}, Targets) ->
    New = case Targets of
              all -> erlang:trace_info(new, tracer) =:= {tracer, []};
              _ -> true
          end,
    Pids = case Targets of
               all -> erlang:processes();
               _ -> Targets
           end,
    case New of
        false -> {error, {already_traced, new}};
        true -> first_traced(Pids)
    end.

first_traced([]) ->
    ok;
first_traced([P | Ps]) ->
    case erlang:trace_info(P, tracer) of
        {tracer, []} -> first_traced(Ps);
        undefined -> first_traced(Ps);
        _ when P =:= self() -> first_traced(Ps);
        _ -> {error, {already_traced, P}}
    end.

watch_all(#{backend := Backend} = RS, all) ->
    _ = beamspy_backend:process(Backend, new, true, [running]),
    Self = self(),
    _ = [switch_on(Backend, P) || P <- erlang:processes(), P =/= Self],
    RS;
watch_all(RS, Pids) ->
    watch(RS, Pids).

switch_on(Backend, P) ->
    beamspy_backend:process(Backend, P, true, [running]).
