%%% @doc Capture the next N calls of a function, in whatever process makes
%%% them, with no recompiling and no mocking (used by {@link beamspy:capture/3}).
%%%
%%% A meta trace pattern on `M:F/A' fires in every process, traced or not.
%%% Its match spec switches call tracing on for exactly the calling process,
%%% with the session's NIF as tracer, at exactly that call; its
%%% `{exception_trace}' tells the NIF when the call returns (or raises). The
%%% calls below it arrive as ordinary events. When the captured call returns,
%%% the NIF files its call tree as one capture and tells this process, and the
%%% VM drops the process's tracing at its next traced event.
%%%
%%% The owner process here monitors the caller: if the caller dies, the
%%% timeout passes, or a limit trips, tracing stops, every pattern is removed
%%% and the captures made so far are written. If the owner itself dies, its
%%% watchdog ({@link beamspy_watchdog}) removes everything and tells the
%%% caller.
-module(beamspy_capture).

-export([start/4, await/2, check_function/1]).
-export([init/6]).

-define(LOCK, beamspy_active_session).
-include("beamspy_trace.hrl").
%% How long a caller whose capture owner died waits for its watchdog to have
%% cleaned up (it then says so).
-define(WATCHDOG_WAIT_MS, 30000).

%% @doc Checks that M:F/A exists (loading M if needed).
-spec check_function(term()) -> ok | {error, term()}.
check_function({M, F, A}) when is_atom(M), is_atom(F), is_integer(A), A >= 0, A =< 255 ->
    case code:ensure_loaded(M) of
        {module, M} ->
            case lists:member({F, A}, M:module_info(functions)) of
                true -> ok;
                false -> {error, {bad_function, {undef, {M, F, A}}}}
            end;
        {error, Why} ->
            {error, {bad_function, {not_loaded, M, Why}}}
    end;
check_function(Other) ->
    {error, {bad_function, Other}}.

%% @doc Starts an owner that captures N calls of MFA. Replies to Caller
%% `{beamspy_capture, Ref, Result}' when done; returns once tracing is on.
-spec start(pid(), mfa(), pos_integer(), map()) -> {ok, reference(), pid()} | {error, term()}.
start(Caller, MFA, N, Opts0) ->
    %% The caller's timeout counts from now: setting up, waiting for calls
    %% and writing per-call files all fit in it (see write/3).
    Opts = Opts0#{deadline => deadline(maps:get(timeout, Opts0, infinity))},
    Ref = make_ref(),
    Parent = self(),
    %% High priority while setting up: see init/6.
    %% Spawned with a function, not a fun: its initial call names it
    %% (beamspy_jobs finds jobs by it).
    {Owner, Mon} = spawn_opt(?MODULE, init, [Parent, Caller, Ref, MFA, N, Opts], [monitor, {priority, high}]),
    await_start(Owner, Mon, Ref, undefined).

await_start(Owner, Mon, Ref, Watchdog) ->
    receive
        {Ref, {watchdog, W}} ->
            await_start(Owner, Mon, Ref, W);
        {Ref, started} ->
            erlang:demonitor(Mon, [flush]),
            {ok, Ref, Owner};
        {Ref, {error, _} = Error} ->
            erlang:demonitor(Mon, [flush]),
            Error;
        {'DOWN', Mon, process, Owner, Why} when Watchdog =:= undefined ->
            %% Killed before tracing anything, but perhaps while the
            %% tracer's cost was being measured: returns once that is over.
            ok = beamspy_calibrate:wait_idle(),
            {error, {session_failed, Why}};
        {'DOWN', Mon, process, Owner, Why} ->
            %% Killed while setting up: returns once its watchdog has cleaned
            %% up, and drops the message the watchdog sent before exiting.
            WMon = erlang:monitor(process, Watchdog),
            receive
                {'DOWN', WMon, process, Watchdog, _} -> ok
            after ?WATCHDOG_WAIT_MS ->
                    erlang:demonitor(WMon, [flush])
            end,
            receive {beamspy_capture, Ref, _} -> ok after 0 -> ok end,
            {error, {session_failed, Why}}
    end.

%% @doc Waits for the result of the capture started as Ref by Owner, as long
%% as the owner lives: if it dies, its watchdog tells once every pattern is
%% removed (waited for at most 30 s).
-spec await(reference(), pid()) -> {ok, [string()] | map()} | {error, term()}.
await(Ref, Owner) ->
    Mon = erlang:monitor(process, Owner),
    receive
        {beamspy_capture, Ref, Result} ->
            erlang:demonitor(Mon, [flush]),
            Result;
        {'DOWN', Mon, process, Owner, Why} ->
            %% An owner that finished sent its result before exiting, so it
            %% is here already; one that was killed has a watchdog to answer
            %% (noproc: gone before the monitor, one or the other).
            Wait = case Why of
                       normal -> 0;
                       _ -> ?WATCHDOG_WAIT_MS
                   end,
            receive
                {beamspy_capture, Ref, Result} -> Result
            after Wait ->
                    {error, {session_failed, Why}}
            end
    end.

%% @private
init(Parent, Caller, Ref, MFA, N, Opts) ->
    %% Checking for other tracers reads the process table: at normal
    %% priority a node full of runnable processes could starve this (it
    %% runs at high priority until tracing is on).
    case beamspy_jobs:check_start() =:= ok andalso lock() of
        false ->
            Parent ! {Ref, beamspy_jobs:check_start()};
        ok ->
            case conflicts(Opts) of
                ok -> init_locked(Parent, Caller, Ref, MFA, N, Opts);
                {error, _} = Error -> Parent ! {Ref, Error}
            end;
        {error, _} = Error ->
            Parent ! {Ref, Error}
    end.

lock() ->
    try register(?LOCK, self()) of
        true -> ok
    catch
        error:badarg -> {error, {busy, whereis(?LOCK)}}
    end.

%% The checks of beamspy:start/2 (see beamspy_backend:conflicts/3): a target
%% of `pids' traced by another tracer, or any process call-traced by one
%% (the local patterns set here are node-wide), is refused.
conflicts(Opts) ->
    case maps:get(pids, Opts, all) of
        all -> beamspy_backend:conflicts(legacy, [], false);
        Pids -> beamspy_backend:conflicts(legacy, Pids, false)
    end.

init_locked(Parent, Caller, Ref, MFA, N, Opts) ->
    NifOpts0 = (maps:get(nif, Opts))#{exclude => beamspy_session:excluded_modules(),
                                       owner => self(), capture => MFA, captures => N},
    %% The tracer's cost, measured here once per VM (and minute): not part
    %% of the caller's timeout, which is moved on by the time it took.
    T0 = erlang:monotonic_time(millisecond),
    NifOpts = beamspy_calibrate:nif_option(NifOpts0),
    Calibrated = erlang:monotonic_time(millisecond) - T0,
    case beamspy_session:with_telemetry(beamspy_tracer:session_new(NifOpts), NifOpts) of
        {error, _} = Error ->
            Parent ! {Ref, Error};
        Session ->
            Mon = erlang:monitor(process, Caller),
            %% Cleans up if this process is killed, and tells the caller.
            Watchdog = beamspy_watchdog:start(),
            ok = beamspy_watchdog:arm(Watchdog, #{session => Session, patterns => node_wide,
                                                  meta => MFA, notify => {Caller, Ref}}),
            Parent ! {Ref, {watchdog, Watchdog}},
            case set_patterns(MFA, Session, Opts) of
                ok ->
                    {Timer, Deadline} = case maps:get(deadline, Opts) of
                                            infinity -> {undefined, infinity};
                                            D -> {erlang:send_after(time_left(D + Calibrated), self(), {Ref, timeout}),
                                                  D + Calibrated}
                                        end,
                    _ = process_flag(priority, normal),
                    Parent ! {Ref, started},
                    State = #{session => Session, mfa => MFA, wanted => N, done => [], n_done => 0,
                              caller => Caller, mon => Mon, ref => Ref, opts => Opts#{deadline := Deadline},
                              timer => Timer, started_mono => erlang:monotonic_time(millisecond)},
                    loop(State);
                {error, _} = Error ->
                    ok = beamspy_telemetry:detach_session(self()),
                    ok = beamspy_session:cleanup(Session),
                    ok = beamspy_watchdog:disarm(Watchdog),
                    Parent ! {Ref, Error}
            end
    end.

%% The function was checked before, but its module may have been deleted
%% since: then the meta pattern matches nothing, and the error is returned
%% once the local patterns are removed again.
set_patterns({M, F, A} = MFA, Session, Opts) ->
    _ = erlang:trace_pattern({'_', '_', '_'}, ?CALLER_MS, [local]),
    _ = erlang:trace_pattern(on_load, ?CALLER_MS, [local]),
    [erlang:trace_pattern({X, '_', '_'}, false, [local]) || X <- beamspy_session:excluded_modules()],
    [erlang:trace_pattern(B, false, [local]) || B <- beamspy_backend:untraced_bifs()],
    Flags = [call, arity, return_to, running, exiting]
        ++ [set_on_spawn || maps:get(children, Opts)]
        ++ ['receive' || maps:get(sleep, maps:get(nif, Opts, #{}), true)]
        ++ [garbage_collection || maps:get(gc, Opts)],
    Body = [{trace, [], Flags ++ [{{tracer, beamspy_tracer, {const, Session}}}]}, {exception_trace}],
    MetaMS = case maps:get(pids, Opts, all) of
                 all -> [{'_', [], Body}];
                 Pids -> [{'_', [{'=:=', {self}, {const, P}}], Body} || P <- Pids]
             end,
    case erlang:trace_pattern({M, F, A}, MetaMS, [{meta, beamspy_tracer, {beamspy_meta, Session}}]) of
        1 -> ok;
        0 -> {error, {bad_function, {undef, MFA}}}
    end.

loop(#{ref := Ref, mon := Mon, caller := Caller} = S) ->
    receive
        {beamspy_capture_done, Pid, Index} ->
            %% Every capture already told, then each of their processes
            %% untraced once: an untrace waits for the schedulers (~50 ms
            %% on a loaded machine), and a process calling in a loop ends
            %% thousands of captures a second.
            {Pids, Done, N} = more_done([Pid], [Index | maps:get(done, S)], maps:get(n_done, S) + 1),
            [untrace_if_idle(maps:get(session, S), P) || P <- lists:usort(Pids)],
            S1 = S#{done := Done, n_done := N},
            case N >= maps:get(wanted, S1) of
                true -> finish(S1, complete);
                false -> loop(S1)
            end;
        {beamspy_captures_taken, _Pid, _Index} ->
            remove_meta(maps:get(mfa, S)),
            loop(S);
        {beamspy_limit, Reason} ->
            finish(S, Reason);
        {Ref, timeout} ->
            finish(S, timeout);
        {'DOWN', Mon, process, Caller, _} ->
            finish(S#{caller := none}, caller_down);
        {'DOWN', _, process, _, _} = Down ->
            _ = beamspy_watchdog:handle_down(Down),
            loop(S)
    end.

%% The captures done that are already in the mailbox.
more_done(Pids, Done, N) ->
    receive
        {beamspy_capture_done, Pid, Index} -> more_done([Pid | Pids], [Index | Done], N + 1)
    after 0 ->
        {Pids, Done, N}
    end.

%% The process may already have entered the function again (the meta match
%% spec switched its tracing back on): then it is left traced.
untrace_if_idle(Session, Pid) ->
    case beamspy_tracer:session_capturing(Session, Pid) of
        false -> beamspy_backend:legacy_untrace(Pid, Session);
        true -> ok
    end.

remove_meta(MFA) ->
    _ = erlang:trace_pattern(MFA, false, [meta]),
    ok.

finish(#{session := Session, mfa := MFA, ref := Ref, caller := Caller, opts := Opts, done := Done} = S,
       Why) ->
    remove_meta(MFA),
    Stopped = erlang:monotonic_time(millisecond),
    ok = beamspy_telemetry:detach_session(self()),
    ok = beamspy_session:cleanup(Session),
    ok = beamspy_watchdog:disarm(beamspy_watchdog:current()),
    Result = case lists:sort(Done) of
                 [] -> {error, {no_calls_captured, Why}};
                 Indices -> write(Session, Indices, Opts)
             end,
    case Caller of
        none -> ok;
        _ ->
            report_limit(Caller, Ref, Why, Stopped - maps:get(started_mono, S), S),
            ok = beamspy_jobs:mark_done(),
            Caller ! {beamspy_capture, Ref, Result}
    end.

%% With `report => true' (beamspy:capture/3, which prints it), a limit that
%% ended the capture early is told before the result, in the shape of
%% beamspy_session's stop report (see beamspy_report).
report_limit(Caller, Ref, Why, RecordedMs, #{session := Session, opts := Opts})
  when Why =:= max_events; Why =:= max_memory; Why =:= max_processes; Why =:= max_duration ->
    case maps:get(report, Opts, false) of
        true ->
            Recording = beamspy_report:recording(Session, RecordedMs, Opts, maps:get(write, Opts)),
            Caller ! {beamspy_capture_report, Ref, Recording#{truncated => Why}},
            ok;
        false ->
            ok
    end;
report_limit(_, _, _, _, _) ->
    ok.

%% Encoded in memory (beamspy:capture_encoded/4): no file, each profile in
%% each format as a binary, merged ones with merge_processes as their files.
write(Session, Indices, #{encode := Formats, write := Write, merge := Merge} = Opts) ->
    WriteOpts = Write#{labels => beamspy_session:labels(beamspy_tracer:session_pids(Session))},
    PerCall = [{{call, K}, fun() -> {{call, K}, Format, beamspy_tracer:session_encode(Session, Format, O)} end}
               || Merge =/= true, K <- Indices, Format <- Formats, O <- [WriteOpts#{capture => K}]],
    Merged = [{merged, fun() -> {merged, Format, beamspy_tracer:session_encode(Session, Format, O)} end}
              || Merge =/= false, Format <- Formats, O <- [WriteOpts#{merge_processes => true}]],
    Results = within_timeout(Merged, PerCall, Opts),
    case [{W, Format, E} || {W, Format, {error, E}} <- Results] of
        [] -> {ok, #{calls => length(Indices), outputs => [{W, Format, Bin} || {W, Format, {ok, Bin}} <- Results]}};
        Errors -> {error, {encode_failed, Errors}}
    end;
write(Session, Indices, #{outputs := Outputs, write := Write, merge := Merge} = Opts) ->
    WriteOpts = Write#{labels => beamspy_session:labels(beamspy_tracer:session_pids(Session))},
    PerCall = [{{call, K}, fun() -> {P, beamspy_tracer:session_write(Session, Format, P, O)} end}
               || Merge =/= true, K <- Indices, {Format, Path} <- Outputs,
                  P <- [with_suffix(Path, "-call" ++ integer_to_list(K))], O <- [WriteOpts#{capture => K, report => true}]],
    Merged = [{merged, fun() -> {P, beamspy_tracer:session_write(Session, Format, P, O)} end}
              || Merge =/= false, {Format, Path} <- Outputs,
                 P <- [with_suffix(Path, "-merged")], O <- [WriteOpts#{merge_processes => true, report => true}]],
    Results = within_timeout(Merged, PerCall, Opts),
    beamspy_report:warnings(#{warnings => [unicode:characters_to_binary([P, ": ", W])
                                           || {P, {ok, W}} <- Results, W =/= <<>>]}),
    case [{P, E} || {P, {error, E}} <- Results] of
        [] -> {ok, [P || {P, {ok, _}} <- Results]};
        Errors -> {error, {write_failed, Errors}}
    end.

%% The caller's timeout bounds writing too: the merged profiles are always
%% written, then the per-call ones while the timeout (counted from the
%% call to capture) has not passed; how many calls' profiles were left out
%% is said on standard error (a capture of 50 calls spent 13 s writing
%% theirs past a 5 s timeout).
within_timeout(Merged, PerCall, #{deadline := Deadline, timeout := Timeout}) ->
    Done = [Write() || {_, Write} <- Merged],
    {Written, Left} = per_call(PerCall, Deadline, []),
    case lists:usort([K || {{call, K}, _} <- Left]) of
        [] ->
            ok;
        Skipped ->
            N = length(Skipped),
            io:format(standard_error, "beamspy: warning: the profiles of ~w captured call~ts not written: "
                      "the capture's timeout (~w ms) passed (the merged profile is written)~n",
                      [N, case N of 1 -> ""; _ -> "s" end, Timeout])
    end,
    Done ++ Written.

per_call([], _, Acc) ->
    {lists:reverse(Acc), []};
per_call([{_, Write} | Rest] = Left, Deadline, Acc) ->
    case Deadline =/= infinity andalso time_left(Deadline) =:= 0 of
        true -> {lists:reverse(Acc), Left};
        false -> per_call(Rest, Deadline, [Write() | Acc])
    end.

deadline(infinity) -> infinity;
deadline(Ms) -> erlang:monotonic_time(millisecond) + Ms.

time_left(Deadline) -> max(0, Deadline - erlang:monotonic_time(millisecond)).

%% "dir/x.speedscope.json" + "-call1" -> "dir/x-call1.speedscope.json"
with_suffix(Path, Suffix) ->
    Base = filename:basename(Path),
    case string:split(Base, ".") of
        [Name, Ext] -> filename:join(filename:dirname(Path), Name ++ Suffix ++ "." ++ Ext);
        [Name] -> filename:join(filename:dirname(Path), Name ++ Suffix)
    end.
