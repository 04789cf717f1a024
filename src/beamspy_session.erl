%%% @doc The process that owns a trace and guarantees its cleanup.
%%%
%%% Every recording, `apply' or live, has one owner process:
%%%
%%% ```
%%%   caller ──start──► owner (registered beamspy_active_session on OTP < 27)
%%%     │                 │ creates the NIF session, sets the trace patterns,
%%%     │                 │ monitors the caller; for a live session it also
%%%     │                 │ seeds the stacks of the target processes and
%%%     │                 │ switches their tracing on before start returns
%%%     ├─ apply: traces itself, runs the call
%%%     ├─ live: goes on with its work
%%%     └──finish/stop───►│ stops the session, switches tracing off for every
%%%                       │ process it touched, removes the patterns, writes
%%%                       ▼ the files, replies, exits
%%% '''
%%%
%%% The owner is never traced itself and never a target. It ends a recording
%%% in every case:
%%% <ul>
%%% <li>finish (apply) or {@link beamspy:stop/1} (live);</li>
%%% <li>the caller dies: the owner cleans up, writes the files, exits;</li>
%%% <li>a limit trips (the NIF sends `{beamspy_limit, Reason}' for
%%%   max_memory, max_events, max_processes; a timer for max_duration):
%%%   tracing is switched off at once. An `apply' goes on untraced and its
%%%   files are written when the call returns. A live session writes its
%%%   files right away, tells the caller `{beamspy, Session, {stopped,
%%%   Reason, Files}}', releases the lock and waits for `stop' (which returns
%%%   the same files) or the caller's death;</li>
%%% <li>the owner dies (killed, or crashed): its watchdog ({@link
%%%   beamspy_watchdog}), started before anything is set, stops the NIF
%%%   session, switches tracing off and removes the patterns; `apply''s
%%%   caller also cleans up in its `after' clause (see {@link beamspy}).</li>
%%% </ul>
%%% Setting up runs at high priority (a node full of runnable processes
%%% could otherwise starve it) and is bounded by `max_duration': an owner
%%% still setting up then is killed and its watchdog cleans up.
%%% On OTP 25/26 trace patterns are node-wide, so only one session may run
%%% at a time: the registered name is the lock, and a second start fails with
%%% `{error, {busy, Owner}}'. On OTP 27+ live sessions use dynamic trace
%%% sessions (see {@link beamspy_backend}) and need no lock.
-module(beamspy_session).

-export([start/2, finish/2, cleanup/1, excluded_modules/0, labels/1, with_telemetry/2]).
-export([start_live/2, owner/1, info/1, cpu_hot/2, owners/0]).
-export([init/4]).

-define(LOCK, beamspy_active_session).
-define(SEED_DEPTH, 64).
%% Owners not holding the lock register as beamspy_session_1..?SLOTS.
-define(SLOTS, 64).
%% until_halt: how often the labels of the halt plan are refreshed.
-define(HALT_REFRESH_MS, 1000).
%% The longest a calibration takes (beamspy_calibrate gives up after 5 s).
-define(CALIBRATION_MS, 6000).
%% How long a failed start waits for the watchdog to have cleaned up.
-define(WATCHDOG_WAIT_MS, 30000).

-type start_opts() :: #{nif := map(), outputs := [{atom(), string()}], write := map(), limits => map(),
                        max_duration => infinity | pos_integer()}.
-type live_opts() :: #{nif := map(), outputs := [{atom(), string()}], write := map(),
                       max_duration := infinity | pos_integer(),
                       targets := beamspy_opts:live_targets(), flags := [atom()],
                       limits := map(), explicit_output := boolean(), description := term(),
                       encode => [beamspy:format()]}.
-opaque handle() :: {beamspy_session, pid(), reference()}.
%% A process's root frame, raw (see labels/1).
-type label() :: {binary(), [] | atom() | mfa()}.
-export_type([handle/0, label/0]).

%%% ---------------------------------------------------------------------
%%% API
%%% ---------------------------------------------------------------------

%% @doc Starts an owner for a call made by Caller (`apply'). Returns the
%% owner and the NIF session to use as tracer state.
-spec start(pid(), start_opts()) -> {ok, pid(), beamspy_tracer:session()} | {error, term()}.
start(Caller, Opts) ->
    spawn_owner(Caller, Opts#{kind => apply}).

%% @doc Starts an owner that traces the targets of Opts for Caller (a live
%% session). When it returns `{ok, Handle}', tracing is on for every target.
-spec start_live(pid(), live_opts()) -> {ok, handle()} | {error, term()}.
start_live(Caller, Opts) ->
    case spawn_owner(Caller, Opts#{kind => live}) of
        {ok, _Owner, Handle} -> {ok, Handle};
        {error, _} = Error -> Error
    end.

%% The start is bounded by max_duration: an owner still setting up then is
%% killed, and its watchdog cleans up before this returns.
spawn_owner(Caller, Opts) ->
    Ref = make_ref(),
    %% High priority: a node full of runnable processes (say, spawning
    %% without pause) must not starve the setup; see init/4.
    {Owner, Mon} = spawn_opt(?MODULE, init, [self(), Ref, Caller, Opts], [monitor, {priority, high}]),
    Bound = maps:get(max_duration, Opts, infinity),
    Deadline = case Bound of
                   infinity -> infinity;
                   Ms -> erlang:monotonic_time(millisecond) + Ms
               end,
    await_start(Owner, Mon, Ref, undefined, {Deadline, Bound}).

await_start(Owner, Mon, Ref, Watchdog, {Deadline, Bound}) ->
    receive
        {Ref, {watchdog, W}} ->
            await_start(Owner, Mon, Ref, W, {Deadline, Bound});
        {Ref, Calibration} when Calibration =:= calibrating; Calibration =:= calibrated ->
            %% The first recording on a VM measures the tracer's cost
            %% (beamspy_calibrate, which gives up after ?CALIBRATION_MS): not
            %% part of the bound on setting up, which starts again after it.
            Restarted = case {Bound, Calibration} of
                            {infinity, _} -> infinity;
                            {Ms, calibrating} -> erlang:monotonic_time(millisecond) + Ms + ?CALIBRATION_MS;
                            {Ms, calibrated} -> erlang:monotonic_time(millisecond) + Ms
                        end,
            await_start(Owner, Mon, Ref, Watchdog, {Restarted, Bound});
        {Ref, {ok, Reply}} ->
            erlang:demonitor(Mon, [flush]),
            {ok, Owner, Reply};
        {Ref, {error, _} = Error} ->
            erlang:demonitor(Mon, [flush]),
            Error;
        {'DOWN', Mon, process, Owner, Why} ->
            ok = await_watchdog(Watchdog),
            {error, {session_failed, Why}}
    after time_left(Deadline) ->
            exit(Owner, kill),
            receive {'DOWN', Mon, process, Owner, _} -> ok end,
            ok = await_watchdog(Watchdog),
            %% It may have replied just before it was killed.
            receive
                {Ref, {ok, _}} -> ok;
                {Ref, {error, _}} -> ok
            after 0 -> ok
            end,
            {error, {start_timeout, Bound}}
    end.

time_left(infinity) -> infinity;
time_left(Deadline) -> max(0, Deadline - erlang:monotonic_time(millisecond)).

%% The watchdog of an owner that died while setting up is done once the
%% node is clean (it lives no longer than its owner, plus its cleanup).
await_watchdog(undefined) ->
    ok;
await_watchdog(Watchdog) ->
    Mon = erlang:monitor(process, Watchdog),
    receive
        {'DOWN', Mon, process, Watchdog, _} -> ok
    after ?WATCHDOG_WAIT_MS ->
            erlang:demonitor(Mon, [flush]),
            ok
    end.

%% @doc The owner of a live session's handle, if it is still running.
-spec owner(term()) -> {ok, pid()} | error.
owner({beamspy_session, Owner, Ref}) when is_pid(Owner), node(Owner) =:= node(), is_reference(Ref) ->
    %% Not looked up by registered name: a live session whose limit tripped
    %% moves from the lock to a slot name, and has no name in between.
    case is_owner(Owner) of
        true -> {ok, Owner};
        false -> error
    end;
owner(_) ->
    error.

%% @doc Stops the session of Owner, cleans up and writes the outputs.
%% Returns the written files and, if `profile' was asked, the profile term.
%% Used for `apply' and for {@link beamspy:stop/2}; `write => false' skips
%% the files of a live session that were not asked for explicitly;
%% `encode => false' skips encoding the profile of a session started by
%% beamspy:start_encoded/3.
-spec finish(pid(), #{profile => boolean(), write => boolean(), encode => boolean()}) ->
          {ok, beamspy:stop_report()} | {error, term()}.
finish(Owner, Opts) ->
    call(Owner, {finish, Opts}, infinity).

%% @doc Mode cpu: the samples per function since the previous call, see
%% beamspy_tracer:session_cpu_hot/2 (for beamspy_top). `{error, no_cpu}'
%% when the session samples no CPU, `{error, stopped}' once it has stopped.
-spec cpu_hot(pid(), non_neg_integer()) -> {ok, map()} | {error, term()}.
cpu_hot(Owner, N) ->
    call(Owner, {cpu_hot, N}, 5000).

%% @doc What the owner is recording right now (see {@link beamspy:sessions/0}).
-spec info(pid()) -> {ok, map()} | {error, term()}.
info(Owner) ->
    case call(Owner, info, 5000) of
        {error, _} = Error -> Error;
        Info -> {ok, Info}
    end.

call(Owner, Request, Timeout) ->
    Mon = erlang:monitor(process, Owner),
    Owner ! {Request, self(), Mon},
    receive
        {Mon, Reply} ->
            erlang:demonitor(Mon, [flush]),
            Reply;
        {'DOWN', Mon, process, Owner, Why} ->
            {error, {session_failed, Why}}
    after Timeout ->
            erlang:demonitor(Mon, [flush]),
            {error, timeout}
    end.

%% @doc Every session owner on this node. Owners are found by their
%% registered names (the lock, or one of ?SLOTS slot names), so listing them
%% sends nothing to any other process; a busy node answers at once.
-spec owners() -> [pid()].
owners() ->
    Locked = case whereis(?LOCK) of
                 undefined -> [];
                 P -> [P || is_owner(P)]
             end,
    Locked ++ [P || I <- lists:seq(1, ?SLOTS), P <- [whereis(slot_name(I))], is_pid(P)].

%% The lock may be held by another beamspy process (beamspy_capture).
is_owner(P) ->
    erlang:process_info(P, initial_call) =:= {initial_call, {?MODULE, init, 4}}.

slot_name(I) ->
    list_to_atom("beamspy_session_" ++ integer_to_list(I)).

%% @doc Modules whose calls beamspy never records (its own).
-spec excluded_modules() -> [module()].
excluded_modules() ->
    [beamspy, beamspy_session, beamspy_tracer, beamspy_opts, beamspy_backend, beamspy_capture,
     beamspy_agent, beamspy_dump, beamspy_sampler, beamspy_top, beamspy_runner, beamspy_procs,
     beamspy_watchdog, beamspy_calibrate, 'Elixir.BeamSpy'].

%%% ---------------------------------------------------------------------
%%% The owner: setting up
%%% ---------------------------------------------------------------------

%% @private
init(Parent, Ref, Caller, #{kind := Kind} = Opts) ->
    %% Spawned by a caller traced with set_on_spawn, the owner would be
    %% traced too: it never is.
    _ = case erlang:trace_info(self(), flags) of
            {flags, []} -> ok;
            _ -> erlang:trace(self(), false, [all])
        end,
    BackendKind = case Kind of
                      apply -> legacy;
                      live -> auto
                  end,
    NeedsLock = BackendKind =:= legacy orelse not beamspy_backend:sessions_supported(),
    %% Named first (owners/0 finds it), then checked for an unload under
    %% way (see beamspy_jobs).
    case lock(NeedsLock) of
        ok ->
            %% Started before anything is set: it cleans up if this process
            %% is killed. The start is bounded (see spawn_owner/2): the
            %% caller kills this process if setting up takes too long, and
            %% needs the watchdog to know when the node is clean again.
            Watchdog = beamspy_watchdog:start(),
            Parent ! {Ref, {watchdog, Watchdog}},
            %% The tracer's cost per event, measured here once per VM (it
            %% never runs in the caller's process); the caller's bound on
            %% setting up starts again after it.
            Parent ! {Ref, calibrating},
            Opts1 = Opts#{nif => beamspy_calibrate:nif_option(maps:get(nif, Opts))},
            Parent ! {Ref, calibrated},
            %% Setting up (at high priority) reads the process table and
            %% visits each target: at normal priority, a node full of runnable
            %% processes could starve it for good (erlang:processes/0 then
            %% never returned on OTP 25). Normal again once set up.
            case Kind of
                apply -> init_apply(Parent, Ref, Caller, Opts1#{watchdog => Watchdog});
                live -> init_live(Parent, Ref, Caller, Opts1#{watchdog => Watchdog}, BackendKind)
            end;
        {error, _} = Error ->
            Parent ! {Ref, Error}
    end.

%% The owner's registered name: the lock when trace patterns are node-wide,
%% else a free slot name (so that owners/0 finds it).
lock(NeedsLock) ->
    case beamspy_jobs:check_start() of
        ok -> take_lock(NeedsLock);
        {error, _} = Error -> Error
    end.

take_lock(false) ->
    take_slot(1);
take_lock(true) ->
    case try register(?LOCK, self()) catch error:badarg -> false end of
        true -> ok;
        _ -> {error, {busy, whereis(?LOCK)}}
    end.

take_slot(I) when I > ?SLOTS ->
    {error, too_many_sessions};
take_slot(I) ->
    case try register(slot_name(I), self()) catch error:badarg -> false end of
        true -> ok;
        _ -> take_slot(I + 1)
    end.

release_name() ->
    case erlang:process_info(self(), registered_name) of
        {registered_name, Name} -> unregister(Name);
        _ -> true
    end.

%% Releases the lock (tracing is off); the owner stays listed under a slot.
unlock() ->
    case whereis(?LOCK) =:= self() of
        true ->
            unregister(?LOCK),
            _ = take_slot(1),
            ok;
        false ->
            ok
    end.

%% The watchdog learns what is about to be set (see beamspy_watchdog).
arm_watchdog(#{watchdog := Watchdog}, Backend) ->
    Patterns = case Backend of
                   {legacy, _} -> node_wide;
                   {session, _, _} -> own
               end,
    beamspy_watchdog:arm(Watchdog, #{session => nif_session(Backend), patterns => Patterns}).

%% Everything the backend set is removed: the watchdog is let go.
close(Backend) ->
    ok = beamspy_telemetry:detach_session(self()),
    ok = beamspy_backend:close(Backend),
    beamspy_watchdog:disarm(beamspy_watchdog:current()).

new_session(Opts) ->
    NifOpts = (maps:get(nif, Opts))#{exclude => excluded_modules(), owner => self()},
    case (is_map_key(cpu, NifOpts) orelse is_map_key(cpu_times, NifOpts)) andalso beamspy_cpu:check() of
        {error, _} = Error -> Error;
        _ -> with_telemetry(beamspy_tracer:session_new(NifOpts), NifOpts)
    end.

%% @doc Spans with the stacks: attaches the handlers that feed Session
%% (NIF options with a `telemetry' key); on failure stops it.
-spec with_telemetry(beamspy_tracer:session() | {error, term()}, map()) ->
          beamspy_tracer:session() | {error, term()}.
with_telemetry({error, _} = Error, _NifOpts) ->
    Error;
with_telemetry(Session, NifOpts) ->
    case beamspy_telemetry:attach_session(Session, NifOpts) of
        ok ->
            Session;
        {error, _} = Error ->
            ok = beamspy_tracer:session_stop(Session),
            Error
    end.

init_apply(Parent, Ref, Caller, Opts) ->
    case new_session(Opts) of
        {error, _} = Error ->
            Parent ! {Ref, Error};
        Session ->
            Mon = erlang:monitor(process, Caller),
            Backend = beamspy_backend:open(Session, legacy),
            arm_watchdog(Opts, Backend),
            ok = set_patterns(Backend, Opts),
            Timer = start_timer(Opts),
            _ = process_flag(priority, normal),
            Parent ! {Ref, {ok, Session}},
            loop(state(apply, Session, Backend, Caller, Mon, Timer, undefined, Opts))
    end.

init_live(Parent, Ref, Caller, Opts, BackendKind) ->
    Mon = erlang:monitor(process, Caller),
    Handle = {beamspy_session, self(), Ref},
    case setup_live(Opts, BackendKind) of
        {ok, Session, Backend} ->
            Timer = start_timer(Opts),
            %% The halt plan is in place before start/2 returns: the caller
            %% may halt the VM right after.
            S = plan_halt(state(live, Session, Backend, Caller, Mon, Timer, Handle, Opts)),
            _ = process_flag(priority, normal),
            Parent ! {Ref, {ok, Handle}},
            loop(S);
        {error, _} = Error ->
            Parent ! {Ref, Error}
    end.

start_timer(Opts) ->
    case maps:get(max_duration, Opts, infinity) of
        infinity -> undefined;
        Ms -> erlang:send_after(Ms, self(), {beamspy_limit, max_duration})
    end.

state(Kind, Session, Backend, Caller, Mon, Timer, Handle, Opts) ->
    #{kind => Kind, session => Session, backend => Backend, caller => Caller, mon => Mon,
      timer => Timer, handle => Handle, opts => Opts, stopped => false,
      started => os:system_time(microsecond), started_mono => erlang:monotonic_time(millisecond)}.

%% Checks, then switches on in this order: patterns, `new' processes, then
%% each existing target (suspended while its stack is seeded and its flags
%% are set, so its first recorded frames are right). `new' goes first so that
%% no process spawned meanwhile is missed; those are then skipped.
setup_live(#{targets := #{existing := Existing, new := New}, flags := Flags} = Opts, BackendKind) ->
    Max = maps:get(max_processes, maps:get(nif, Opts)),
    case resolve(Existing) of
        {ok, Pids} when length(Pids) > Max ->
            {error, {too_many_processes, length(Pids), Max}};
        {ok, Pids} ->
            case conflicts(BackendKind, Pids, New) of
                ok -> open_and_switch_on(cpu_pids(Opts, Pids), BackendKind, Pids, Existing, New, Flags);
                {error, _} = Error -> Error
            end;
        {error, _} = Error ->
            Error
    end.

conflicts(BackendKind, Pids, New) ->
    case BackendKind =:= auto andalso beamspy_backend:sessions_supported() of
        true -> ok; % dynamic trace sessions never conflict
        false -> beamspy_backend:conflicts(legacy, Pids, New)
    end.

open_and_switch_on(Opts, BackendKind, Pids, Existing, New, Flags) ->
    case new_session(Opts) of
        {error, _} = Error ->
            Error;
        Session ->
            Backend = beamspy_backend:open(Session, BackendKind),
            arm_watchdog(Opts, Backend),
            ok = set_patterns(Backend, Opts),
            case switch_on(Backend, Pids, Existing, New, Flags) of
                ok ->
                    {ok, Session, Backend};
                {error, _} = Error ->
                    ok = close(Backend),
                    Error
            end
    end.

%% Mode cpu of chosen processes, where samples name their process
%% (beamspy_cpu:join/0): the NIF keeps the samples of the processes it
%% knows, these and those they spawn (traced with `procs').
cpu_pids(#{nif := #{cpu := _, cpu_join := registers} = Nif} = Opts, Pids) when not is_map_key(cpu_all, Nif) ->
    Opts#{nif := Nif#{cpu_pids => Pids}};
cpu_pids(Opts, _Pids) ->
    Opts.

%% Registered names become pids; `all' becomes every process but beamspy's.
resolve(all) ->
    {ok, existing_pids()};
resolve(Targets) ->
    Owners = owners(),
    resolve(Targets, Owners, []).

resolve([], _, Acc) ->
    {ok, lists:usort(Acc)};
resolve([T | Ts], Owners, Acc) ->
    Pid = case T of
              Name when is_atom(Name) -> whereis(Name);
              P -> P
          end,
    case is_pid(Pid) andalso is_process_alive(Pid) of
        false -> {error, {noproc, T}};
        true ->
            case lists:member(Pid, Owners) of
                true -> {error, {bad_targets, {beamspy_process, Pid}}};
                false -> resolve(Ts, Owners, [Pid | Acc])
            end
    end.

existing_pids() ->
    Owners = owners(),
    Mine = case beamspy_watchdog:current() of
               undefined -> [];
               W -> [W]
           end,
    erlang:processes() -- (Mine ++ Owners).

switch_on(_Backend, _Pids, _Existing, _New, []) ->
    ok; % mode cpu joined by registers, of every process or of chosen ones without their spawns: nothing to trace
switch_on(Backend, Pids0, Existing, New, Flags) ->
    NewOn = not New orelse beamspy_backend:process(Backend, new, true, Flags),
    Pids = case Existing of
               all -> existing_pids();
               _ -> Pids0
           end,
    case NewOn of
        true ->
            %% current_stacktrace keeps backtrace_depth frames (8 by
            %% default), innermost first: raised to the VM's maximum while
            %% seeding, so that seeded stacks reach down to the process's
            %% first frame unless they are deeper than that.
            Depth = erlang:system_flag(backtrace_depth, ?SEED_DEPTH),
            try switch_on_each(Backend, Pids, Flags)
            after erlang:system_flag(backtrace_depth, Depth)
            end;
        false ->
            {error, {session_failed, new}}
    end.

switch_on_each(_, [], _) ->
    ok;
switch_on_each(Backend, [P | Ps], Flags) ->
    case switch_on_one(Backend, P, Flags) of
        ok -> switch_on_each(Backend, Ps, Flags);
        %% A limit tripped while switching on: the limit message is in our
        %% mailbox and the loop handles it like any other.
        stopped -> ok;
        {error, _} = Error -> Error
    end.

%% A process that has not run yet (no reductions: spawned, waiting for
%% its first time slice) has no stack to seed: it is switched on as if it had
%% been spawned after `new' (its first frame becomes its root), without
%% being suspended and without a signal to it. On a node spawning without
%% pause most of the process table is such children (and most others are
%% gone by the time they are reached): each signal, which the process
%% answers only when it next runs among thousands of runnable ones, took
%% milliseconds, and start(all) minutes.
switch_on_one(Backend, P, Flags) ->
    case erlang:process_info(P, [reductions, status]) of
        undefined -> ok; % gone
        [{reductions, 0}, _] -> switch_on_fresh(Backend, P, Flags);
        [_, {status, Status}] -> switch_on_seeded(Backend, P, Flags, Status =:= waiting)
    end.

%% Switching a process on again that `new' already switched on changes
%% nothing. Refused (legacy backend): gone, or traced by another tracer.
switch_on_fresh(Backend, P, Flags) ->
    case beamspy_backend:process(Backend, P, true, Flags) of
        true -> ok;
        false ->
            case beamspy_backend:tracer_of(Backend, P) of
                {foreign, T} -> {error, {already_traced, P, T}};
                _ -> ok
            end
    end.

%% Suspended, the process cannot run between the stack we read and the
%% flags we set. Nothing called while it is suspended waits for another
%% process (no code loading, no I/O): every function here is loaded.
%% Where suspending is unsafe (see suspend_while_switching_on/0) the process
%% is not suspended: if it runs in that moment, its first events are taken
%% against the stack read just before (the stack rules tolerate frames left
%% or entered meanwhile: an unknown caller becomes a root frame).
%% Waiting: its status, read before any suspension (a suspended process is
%% `suspended').
switch_on_seeded(Backend, P, Flags, Waiting) ->
    Session = nif_session(Backend),
    %% Without return_to (mode cpu: no stack is rebuilt) there is nothing to seed.
    Calls = lists:member(return_to, Flags),
    %% With no stack to seed there is nothing to keep consistent with the
    %% flags: such a process is not suspended (on OTP 25 and 26 a suspension
    %% is one more signal to a busy process, and a chance of #10241 above).
    Suspend = case Calls andalso suspend_while_switching_on(Waiting) of
                  true -> suspend(P);
                  false -> false
              end,
    case Suspend =/= gone of
        true ->
            try
                case beamspy_backend:tracer_of(Backend, P) of
                    ours ->
                        ok;
                    {foreign, T} ->
                        {error, {already_traced, P, T}};
                    none when not Calls ->
                        _ = beamspy_backend:process(Backend, P, true, Flags),
                        ok;
                    none ->
                        case seed(Session, P, Waiting) of
                            ok ->
                                _ = beamspy_backend:process(Backend, P, true, Flags),
                                ok;
                            {error, stopped} -> stopped;
                            {error, {noproc, _}} -> ok
                        end
                end
            after
                Suspend =:= true andalso resume(P)
            end;
        false ->
            ok % gone meanwhile
    end.

%% true: P is suspended (by this process); false: it is not (it runs on
%% while switched on, as on OTP 27); gone. A process that is on a dirty
%% scheduler (in a dirty NIF such as a file read, or a dirty collection)
%% is suspended all the same, but OTP 25's and 26's suspend_process/1 then
%% raise internal_error (erlang/otp#10241): the suspension taken is undone
%% at once, or the process would stay suspended until the session ends
%% (the node's file server, stuck in the middle of a profile).
suspend(P) ->
    try erlang:suspend_process(P)
    catch
        error:internal_error ->
            _ = resume(P),
            false;
        error:_ ->
            gone
    end.

resume(P) ->
    try erlang:resume_process(P) catch error:_ -> false end.

%% From OTP 27 (trace sessions) a process suspended while its tracing is
%% switched on by a session with an erl_tracer module and local call
%% patterns, and then resumed, can stay stuck: on OTP 29.1 about half of
%% those waiting in `receive ... after' never saw their timeout fire; on
%% OTP 27 `beamspy run --when-started ex_unit -- mix test' hung now and
%% then (3 runs in 20), every process waiting, once with a process
%% suspended as it waited (ExUnit's formatter then waited for ever on the
%% terminal's writer). There no process is suspended: if one runs in that
%% moment, its first events are taken against the stack read just before.
%% OTP 25, without trace sessions, is exact.
suspend_while_switching_on(_Waiting) ->
    list_to_integer(erlang:system_info(otp_release)) < 27.

%% Call patterns. A session that samples CPU traces no call, except those
%% that halt the VM when it writes the files at halt (until_halt).
set_patterns(Backend, #{nif := #{cpu := _, halt_hook := true}}) -> beamspy_backend:set_halt_patterns(Backend);
set_patterns(_Backend, #{nif := #{cpu := _}}) -> ok;
set_patterns(Backend, _Opts) -> beamspy_backend:set_patterns(Backend).

nif_session({legacy, S}) -> S;
nif_session({session, S, _}) -> S.

%%% ---------------------------------------------------------------------
%%% The owner: running and stopping
%%% ---------------------------------------------------------------------

loop(#{caller := Caller, mon := Mon} = S) ->
    receive
        {beamspy_limit, Reason} ->
            loop(limit(Reason, S));
        beamspy_plan_halt when map_get(stopped, S) =:= false ->
            loop(plan_halt(S));
        {{finish, FinishOpts}, From, Tag} ->
            Reply = finish_reply(S, FinishOpts),
            %% Released before replying: the caller may start again at once.
            _ = release_name(),
            ok = beamspy_jobs:mark_done(),
            From ! {Tag, Reply};
        {info, From, Tag} ->
            From ! {Tag, info_map(S)},
            loop(S);
        {{cpu_hot, N}, From, Tag} ->
            From ! {Tag, case S of
                             #{stopped := false, session := Session} -> beamspy_tracer:session_cpu_hot(Session, N);
                             _ -> {error, stopped}
                         end},
            loop(S);
        {'DOWN', Mon, process, Caller, _} ->
            case S of
                #{stopped := false} -> _ = stop_and_write(S, #{});
                _ -> ok
            end;
        Other ->
            _ = beamspy_watchdog:handle_down(Other),
            loop(S)
    end.

%% A limit switches tracing off at once (the NIF has already stopped
%% recording when its message arrives).
limit(_, #{stopped := Reply} = S) when Reply =/= false ->
    S;
limit(_, #{limit := _} = S) ->
    S;
limit(Reason, #{kind := apply, session := Session, backend := Backend} = S) ->
    _ = process_flag(priority, high),
    stop_nif(Session, Reason),
    ok = close(Backend),
    S#{limit => Reason, limit_mono => erlang:monotonic_time(millisecond)};
limit(Reason, #{kind := live, session := Session, backend := Backend, caller := Caller,
                handle := Handle} = S) ->
    _ = process_flag(priority, high),
    T0 = erlang:monotonic_time(millisecond),
    stop_nif(Session, Reason),
    Reply = case S of
                #{halt_labels := _} ->
                    %% until_halt: written while tracing is still on, so that
                    %% a process halting the VM meanwhile still writes the
                    %% files itself (halt_write.h); switched off first, the
                    %% VM could halt with nothing written. The halting process
                    %% waits for this write; once done, nothing is left for it.
                    Written = write(S#{limit_mono => T0}, #{}, T0),
                    _ = beamspy_tracer:session_prepare_halt(Session, [], #{}),
                    ok = close(Backend),
                    Written;
                _ ->
                    ok = close(Backend),
                    write(S#{limit_mono => T0}, #{}, T0)
            end,
    _ = unlock(),
    Truncated = case maps:get(truncated, Reply, false) of
                    false -> Reason;
                    T -> T
                end,
    Caller ! {beamspy, Handle, {stopped, Truncated, maps:get(files, Reply)}},
    S#{stopped => Reply}.

%% Option until_halt: the process that halts the VM writes the files itself,
%% in its tracer callback (see c_src/nif/halt_write.h), from the plan given
%% here: the outputs and write options, with labels of the processes seen so
%% far. The labels are refreshed every ?HALT_REFRESH_MS, reading only the
%% processes not labelled yet (a process keeps its first label).
plan_halt(#{session := Session, opts := #{nif := Nif, outputs := Outputs, write := Write}} = S) ->
    case maps:get(halt_hook, Nif, false) of
        true ->
            Known = maps:get(halt_labels, S, #{}),
            New = [P || P <- beamspy_tracer:session_pids(Session), not maps:is_key(P, Known)],
            Labels = maps:merge(Known, labels(New)),
            Plan = [{F, unicode:characters_to_binary(P)} || {F, P} <- Outputs],
            _ = beamspy_tracer:session_prepare_halt(Session, Plan, Write#{labels => Labels}),
            _ = erlang:send_after(?HALT_REFRESH_MS, self(), beamspy_plan_halt),
            S#{halt_labels => Labels};
        false ->
            S
    end.

%% A live session asked for its profile term writes files only if they were
%% asked for explicitly (as beamspy:profile/2 does).
with_write(#{kind := live, opts := Opts}, #{profile := true} = FinishOpts) ->
    FinishOpts#{write => maps:get(explicit_output, Opts, true)};
with_write(_, FinishOpts) ->
    FinishOpts.

stop_nif(Session, max_duration) -> ok = beamspy_tracer:session_stop(Session, max_duration);
stop_nif(Session, _) -> ok = beamspy_tracer:session_stop(Session).

finish_reply(#{stopped := false} = S, FinishOpts) ->
    {ok, with_encoded(stop_and_write(S, with_write(S, FinishOpts)), S, FinishOpts)};
finish_reply(#{stopped := Reply, session := Session, opts := #{write := Write}} = S, FinishOpts) ->
    case maps:get(profile, FinishOpts, false) of
        true ->
            WriteOpts = Write#{labels => labels(beamspy_tracer:session_pids(Session))},
            {ok, with_encoded(Reply#{profile => beamspy_tracer:session_profile(Session, WriteOpts)}, S, FinishOpts)};
        false ->
            {ok, with_encoded(Reply, S, FinishOpts)}
    end.

%% A session started by beamspy:start_encoded/3 has no files: the reply to
%% the stop carries its profile in each format asked, encoded in memory,
%% `encoded => [{Format, {ok, Binary} | {error, Reason}}]' (only then: a
%% limit that trips keeps nothing but the stopped NIF session). Finishing
%% with `encode => false' drops the profile unencoded (nobody wants it).
with_encoded(Reply, _, #{encode := false}) ->
    Reply;
with_encoded(Reply, #{session := Session, opts := #{encode := Formats, write := Write}}, _) ->
    WriteOpts = Write#{labels => labels(beamspy_tracer:session_pids(Session))},
    Reply#{encoded => [{F, beamspy_tracer:session_encode(Session, F, WriteOpts)} || F <- Formats]};
with_encoded(Reply, _, _) ->
    Reply.

stop_and_write(#{backend := Backend} = S, FinishOpts) ->
    _ = process_flag(priority, high),
    T0 = erlang:monotonic_time(millisecond),
    ok = close(Backend),
    write(S, FinishOpts, T0).

%% T0: when stopping began; the reply tells how long switching tracing off
%% everywhere (cleanup_ms) and writing the files (write_ms) took.
%% The reply also says how much was recorded (events, memory_peak,
%% processes) over how long (recorded_ms: until the limit, if one tripped),
%% so that front ends can tell the user what a limit cut short.
write(#{session := Session, opts := Opts, started_mono := Mono} = S, FinishOpts, T0) ->
    T1 = erlang:monotonic_time(millisecond),
    #{outputs := Outputs0, write := Write} = Opts,
    Outputs = case maps:get(write, FinishOpts, true) of
                  true -> Outputs0;
                  false -> []
              end,
    WriteOpts = Write#{labels => labels(beamspy_tracer:session_pids(Session))},
    Results = [{Path, beamspy_tracer:session_write(Session, Format, Path, WriteOpts#{report => true})}
               || {Format, Path} <- Outputs],
    Recording = beamspy_report:recording(Session, maps:get(limit_mono, S, T0) - Mono, Opts, Write),
    Reply = Recording#{files => [P || {P, {ok, _}} <- Results],
                       errors => [{P, E} || {P, {error, E}} <- Results],
                       warnings => [unicode:characters_to_binary([P, ": ", W])
                                    || {P, {ok, W}} <- Results, W =/= <<>>],
                       cleanup_ms => T1 - T0,
                       write_ms => erlang:monotonic_time(millisecond) - T1},
    case maps:get(profile, FinishOpts, false) of
        true -> Reply#{profile => beamspy_tracer:session_profile(Session, WriteOpts)};
        false -> Reply
    end.

info_map(#{kind := Kind, session := Session, caller := Caller, handle := Handle,
           opts := Opts, started := Started, started_mono := Mono, stopped := Stopped}) ->
    Nif = beamspy_tracer:session_info(Session),
    #{kind => Kind,
      session => Handle,
      owner => self(),
      caller => Caller,
      targets => maps:get(description, Opts, call),
      start_time => Started,
      running_ms => erlang:monotonic_time(millisecond) - Mono,
      limits => maps:get(limits, Opts, #{}),
      recording => maps:get(recording, Nif),
      events => maps:get(events, Nif),
      memory => maps:get(memory, Nif),
      memory_peak => maps:get(memory_peak, Nif),
      processes => maps:get(processes, Nif),
      truncated => maps:get(truncated, Nif),
      files => case Stopped of
                   false -> [];
                   #{files := Fs} -> Fs
               end}.

%%% ---------------------------------------------------------------------
%%% Cleanup, seeding, labels
%%% ---------------------------------------------------------------------

%% @doc Stops recording and removes every trace flag and pattern the session
%% set with `erlang:trace/3' and `erlang:trace_pattern/3': the default flags
%% of `new' processes if they are the session's (first, so that no process
%% spawned meanwhile gets them), the flags of every process whose tracer is
%% this session (children that never ran included; two passes, for children
%% that traced processes spawned during the first), then the local call
%% patterns, on_load's too.
-spec cleanup(beamspy_tracer:session()) -> ok.
cleanup(Session) ->
    ok = beamspy_backend:legacy_untrace(new, Session),
    ok = beamspy_tracer:session_stop(Session),
    ok = beamspy_backend:legacy_untrace_all(Session),
    _ = erlang:trace_pattern({'_', '_', '_'}, false, [local]),
    _ = erlang:trace_pattern(on_load, false, [local]),
    ok.

%% Seeds the stack of an already running process from its
%% `current_stacktrace' (at most 64 frames, recursion collapsed by the VM).
%% Frames of beamspy's own modules are left out, as their calls are; the
%% engine is told when they were on top (a process profiling itself waits
%% in `beamspy:start/2'), so that what it calls next stays on the seeded
%% stack. A process that was Waiting starts scheduled out (its wait is
%% SLEEP).
-spec seed(beamspy_tracer:session(), pid(), boolean()) -> ok | {error, term()}.
seed(Session, Pid, Waiting) ->
    case erlang:process_info(Pid, current_stacktrace) of
        {current_stacktrace, Stack} ->
            Excluded = excluded_modules(),
            Frames = [{M, F, arity(A)} || {M, F, A, _} <- lists:reverse(Stack),
                                          not lists:member(M, Excluded)],
            OwnCodeOnTop = case Stack of
                               [{M, _, _, _} | _] -> lists:member(M, Excluded);
                               [] -> false
                           end,
            beamspy_tracer:session_seed(Session, Pid, Frames, Waiting, OwnCodeOnTop);
        undefined ->
            {error, {noproc, Pid}}
    end.

arity(A) when is_integer(A) -> A;
arity(Args) when is_list(Args) -> length(Args).

%% @doc What the root frame of each process says: the pid's text, then its
%% registered name, or its proc_lib initial call, or `[]'. Raw: the engine
%% spells it as it spells frames, in the profile's names (`<0.90.0>
%% my_server', `<0.91.0> my_worker:init/1'; in Elixir `<0.90.0>
%% MyApp.Server'), see {@link beamspy_tracer:frame_name/2}.
-spec labels([pid()]) -> #{pid() => label()}.
labels(Pids) ->
    maps:from_list([{P, label(P)} || P <- Pids]).

label(P) ->
    Name = case erlang:process_info(P, [registered_name, dictionary]) of
               [{registered_name, Registered}, _] when is_atom(Registered) ->
                   Registered;
               [_, {dictionary, Dict}] ->
                   case lists:keyfind('$initial_call', 1, Dict) of
                       {_, {_, _, _} = MFA} -> MFA;
                       false -> []
                   end;
               _ ->
                   []
           end,
    {list_to_binary(pid_to_list(P)), Name}.
