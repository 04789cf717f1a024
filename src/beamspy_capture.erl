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
%%% and the captures made so far are written.
-module(beamspy_capture).

-export([start/4, check_function/1]).

-define(LOCK, beamspy_active_session).
-define(CALLER_MS, [{'_', [], [{message, {{cp, {caller}}}}]}]).

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
start(Caller, MFA, N, Opts) ->
    Ref = make_ref(),
    Parent = self(),
    {Owner, Mon} = spawn_monitor(fun() -> init(Parent, Caller, Ref, MFA, N, Opts) end),
    receive
        {Ref, started} ->
            erlang:demonitor(Mon, [flush]),
            {ok, Ref, Owner};
        {Ref, {error, _} = Error} ->
            erlang:demonitor(Mon, [flush]),
            Error;
        {'DOWN', Mon, process, Owner, Why} ->
            {error, {session_failed, Why}}
    end.

init(Parent, Caller, Ref, {M, F, A} = MFA, N, Opts) ->
    case try register(?LOCK, self()) catch error:badarg -> false end of
        true ->
            NifOpts = (maps:get(nif, Opts))#{exclude => beamspy_session:excluded_modules(),
                                              owner => self(), capture => MFA, captures => N},
            case beamspy_tracer:session_new(NifOpts) of
                {error, _} = Error ->
                    Parent ! {Ref, Error};
                Session ->
                    Mon = erlang:monitor(process, Caller),
                    set_patterns(MFA, Session, Opts),
                    Timer = erlang:send_after(maps:get(timeout, Opts), self(), {Ref, timeout}),
                    Parent ! {Ref, started},
                    State = #{session => Session, mfa => MFA, wanted => N, done => [],
                              caller => Caller, mon => Mon, ref => Ref, opts => Opts,
                              timer => Timer},
                    loop(State)
            end;
        _ ->
            Parent ! {Ref, {error, {busy, whereis(?LOCK)}}}
    end,
    _ = {M, F, A},
    ok.

set_patterns({M, F, A}, Session, Opts) ->
    _ = erlang:trace_pattern({'_', '_', '_'}, ?CALLER_MS, [local]),
    _ = erlang:trace_pattern(on_load, ?CALLER_MS, [local]),
    [erlang:trace_pattern({X, '_', '_'}, false, [local]) || X <- beamspy_session:excluded_modules()],
    [erlang:trace_pattern(B, false, [local]) || B <- beamspy_backend:untraced_bifs()],
    Flags = [call, arity, return_to, running, exiting]
        ++ [set_on_spawn || maps:get(children, Opts)]
        ++ [garbage_collection || maps:get(gc, Opts)],
    Body = [{trace, [], Flags ++ [{{tracer, beamspy_tracer, {const, Session}}}]}, {exception_trace}],
    MetaMS = case maps:get(pids, Opts, all) of
                 all -> [{'_', [], Body}];
                 Pids -> [{'_', [{'=:=', {self}, {const, P}}], Body} || P <- Pids]
             end,
    1 = erlang:trace_pattern({M, F, A}, MetaMS, [{meta, beamspy_tracer, {beamspy_meta, Session}}]),
    ok.

loop(#{ref := Ref, mon := Mon, caller := Caller} = S) ->
    receive
        {beamspy_capture_done, Pid, Index} ->
            untrace_if_idle(maps:get(session, S), Pid),
            S1 = S#{done := [Index | maps:get(done, S)]},
            case length(maps:get(done, S1)) >= maps:get(wanted, S1) of
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
            finish(S#{caller := none}, caller_down)
    end.

%% The process may already have entered the function again (the meta match
%% spec switched its tracing back on): then it is left traced.
untrace_if_idle(Session, Pid) ->
    Tracer = {beamspy_tracer, Session},
    case beamspy_tracer:session_capturing(Session, Pid) of
        false ->
            case erlang:trace_info(Pid, tracer) of
                {tracer, Tracer} -> try erlang:trace(Pid, false, [all]) catch error:_ -> 0 end;
                _ -> ok
            end;
        true ->
            ok
    end,
    ok.

remove_meta(MFA) ->
    _ = erlang:trace_pattern(MFA, false, [meta]),
    ok.

finish(#{session := Session, mfa := MFA, ref := Ref, caller := Caller, opts := Opts, done := Done}, Why) ->
    remove_meta(MFA),
    ok = beamspy_session:cleanup(Session),
    Result = case lists:sort(Done) of
                 [] -> {error, {no_calls_captured, Why}};
                 Indices -> write(Session, Indices, Opts)
             end,
    case Caller of
        none -> ok;
        _ -> Caller ! {beamspy_capture, Ref, Result}
    end.

write(Session, Indices, #{outputs := Outputs, write := Write, merge := Merge}) ->
    WriteOpts = Write#{labels => beamspy_session:labels(beamspy_tracer:session_pids(Session))},
    PerCall = [{with_suffix(Path, "-call" ++ integer_to_list(K)), Format, WriteOpts#{capture => K}}
               || Merge =/= true, K <- Indices, {Format, Path} <- Outputs],
    Merged = [{with_suffix(Path, "-merged"), Format, WriteOpts#{merge_processes => true}}
              || Merge =/= false, {Format, Path} <- Outputs],
    Results = [{P, beamspy_tracer:session_write(Session, Format, P, O)} || {P, Format, O} <- PerCall ++ Merged],
    case [{P, E} || {P, {error, E}} <- Results] of
        [] -> {ok, [P || {P, ok} <- Results]};
        Errors -> {error, {write_failed, Errors}}
    end.

%% "dir/x.speedscope.json" + "-call1" -> "dir/x-call1.speedscope.json"
with_suffix(Path, Suffix) ->
    Base = filename:basename(Path),
    case string:split(Base, ".") of
        [Name, Ext] -> filename:join(filename:dirname(Path), Name ++ Suffix ++ "." ++ Ext);
        [Name] -> filename:join(filename:dirname(Path), Name ++ Suffix)
    end.
