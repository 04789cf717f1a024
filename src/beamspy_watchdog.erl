%%% @doc The process that cleans up after a session owner that dies without
%%% cleaning up itself (killed, or crashed).
%%%
%%% Every owner ({@link beamspy_session}, {@link beamspy_capture}) starts one
%%% before it sets anything in the VM, tells it what it is about to set
%%% ({@link arm/2}) and, once it has removed all of that itself, lets it go
%%% ({@link disarm/1}). The watchdog is not linked to the owner (a kill must
%%% not take it along) and only monitors it. When the owner goes down with a
%%% reason other than `normal' while armed, the watchdog:
%%% <ol>
%%% <li>stops the NIF session (nothing is recorded from then on, and the VM
%%%   drops the session from a process at its next trace event);</li>
%%% <li>resets the flags of `new' processes if they are the session's, and
%%%   switches tracing off for every process whose tracer is the session;</li>
%%% <li>removes the meta pattern of a capture if it is the session's;</li>
%%% <li>with node-wide patterns (OTP 25/26), takes the one-session lock while
%%%   it removes every local call pattern (on_load's too), so that no other
%%%   session starts meanwhile. If another session took the lock first, the
%%%   patterns are that session's now and are left to it.</li>
%%% </ol>
%%% Then it tells the caller of a capture, and exits. It lives no longer than
%%% its owner, and it does a bounded amount of work. An armed owner monitors
%%% its watchdog and starts another if it dies ({@link handle_down/1}), so
%%% only the death of both at once leaves the node traced.
-module(beamspy_watchdog).

-export([start/0, arm/2, disarm/1, current/0, handle_down/1]).
-export([init/1]).

%% In the owner's process dictionary: {Watchdog, Monitor, Arming}.
-define(KEY, beamspy_watchdog).

-define(LOCK, beamspy_active_session).

-type arming() :: #{session := beamspy_tracer:session(),
                    patterns := node_wide | own,
                    meta => mfa(),
                    notify => {pid(), term()}}.
-export_type([arming/0]).

%% @doc Starts a watchdog for the calling process (the owner).
-spec start() -> pid().
start() ->
    Owner = self(),
    %% High priority: it must see its owner's death, and clean up, on a node
    %% full of runnable processes too. It is idle until then.
    %% A function, not a fun: its initial call names it (beamspy_jobs).
    spawn_opt(?MODULE, init, [Owner], [{priority, high}]).

%% @doc Tells the watchdog what the owner is about to set. `patterns':
%% `node_wide' when the session's local patterns are the node's (legacy
%% backend), `own' when they belong to a dynamic trace session that dies
%% with the owner. `meta': a capture's meta pattern. `notify': `{Pid, Ref}'
%% is sent `{beamspy_capture, Ref, {error, {session_failed, Why}}}' once
%% cleaned up.
-spec arm(pid(), arming()) -> ok.
arm(Watchdog, Arming) ->
    Watchdog ! {arm, self(), Arming},
    put(?KEY, {Watchdog, erlang:monitor(process, Watchdog), Arming}),
    ok.

%% @doc The owner has removed everything it set: its watchdog exits.
-spec disarm(pid() | undefined) -> ok.
disarm(undefined) ->
    ok;
disarm(Watchdog) ->
    Watchdog ! {disarm, self()},
    case get(?KEY) of
        {Watchdog, Mon, _} ->
            erlang:demonitor(Mon, [flush]),
            _ = erase(?KEY),
            ok;
        _ ->
            ok
    end.

%% @doc The armed watchdog of the calling owner, if any.
-spec current() -> pid() | undefined.
current() ->
    case get(?KEY) of
        {Watchdog, _, _} -> Watchdog;
        undefined -> undefined
    end.

%% @doc For an owner's receive loop: if Msg says that its armed watchdog
%% died, starts and arms another one.
-spec handle_down(term()) -> replaced | ignored.
handle_down({'DOWN', Mon, process, _, _}) ->
    case get(?KEY) of
        {_, Mon, Arming} ->
            ok = arm(start(), Arming),
            replaced;
        _ ->
            ignored
    end;
handle_down(_) ->
    ignored.

%% @private
init(Owner) ->
    %% Signals from one process arrive in order: an arm sent before the
    %% owner died is always seen before its 'DOWN'.
    Mon = erlang:monitor(process, Owner),
    loop(Owner, Mon, undefined).

loop(Owner, Mon, Arming) ->
    receive
        {arm, Owner, NewArming} ->
            loop(Owner, Mon, NewArming);
        {disarm, Owner} ->
            ok;
        {'DOWN', Mon, process, Owner, normal} ->
            ok;
        {'DOWN', Mon, process, Owner, Why} when Arming =/= undefined ->
            ok = beamspy_calibrate:wait_idle(),
            clean(Arming),
            case Arming of
                #{notify := {Pid, Ref}} -> Pid ! {beamspy_capture, Ref, {error, {session_failed, Why}}};
                _ -> ok
            end;
        {'DOWN', Mon, process, Owner, _} ->
            %% Killed before it armed this: perhaps while calibrating.
            beamspy_calibrate:wait_idle()
    end.

clean(#{session := Session} = Arming) ->
    ok = beamspy_tracer:session_stop(Session),
    ok = beamspy_backend:legacy_untrace(new, Session),
    ok = beamspy_backend:legacy_untrace_all(Session),
    Meta = maps:get(meta, Arming, none),
    case Arming of
        #{patterns := node_wide} -> remove_node_patterns(Session, Meta);
        _ -> remove_own_meta(Session, Meta)
    end.

remove_node_patterns(Session, Meta) ->
    try register(?LOCK, self()) of
        true ->
            try
                _ = erlang:trace_pattern({'_', '_', '_'}, false, [local]),
                _ = erlang:trace_pattern(on_load, false, [local]),
                _ = [erlang:trace_pattern(Meta, false, [meta]) || Meta =/= none],
                ok
            after
                unregister(?LOCK)
            end
    catch
        error:badarg ->
            %% Another session holds the lock: the local patterns are its own.
            remove_own_meta(Session, Meta)
    end.

remove_own_meta(_, none) ->
    ok;
remove_own_meta(Session, MFA) ->
    beamspy_backend:legacy_remove_meta(MFA, Session).
