%%% @doc The process that owns a trace and guarantees its cleanup.
%%%
%%% ```
%%%   caller ──start──► owner (registered beamspy_active_session)
%%%     │                 │ creates the NIF session, sets the trace patterns,
%%%     │                 │ monitors the caller
%%%     ├─ traces itself, runs the call
%%%     └──finish────────►│ stops the session, switches tracing off for every
%%%                       │ process it touched, removes the patterns, writes
%%%                       ▼ the files, replies, exits
%%% '''
%%%
%%% If the caller dies first, the owner cleans up the same way (and still
%%% writes the files). If the owner dies, the caller's `after' clause
%%% (see {@link beamspy}) cleans up instead. On OTP 25 trace patterns are
%%% node-wide, so only one session may run at a time: the registered name is
%%% the lock, and a second start fails with `{error, {busy, Owner}}'.
-module(beamspy_session).

-export([start/2, finish/2, cleanup/1, seed/2, excluded_modules/0, labels/1]).

-define(LOCK, beamspy_active_session).
-define(CALLER_MS, [{'_', [], [{message, {{cp, {caller}}}}]}]).

-type start_opts() :: #{nif := map(), outputs := [{atom(), string()}], write := map(),
                        max_duration => infinity | pos_integer()}.

%% @doc Starts an owner for Caller. Returns the owner and the NIF session to
%% use as tracer state.
-spec start(pid(), start_opts()) -> {ok, pid(), beamspy_tracer:session()} | {error, term()}.
start(Caller, Opts) ->
    Parent = self(),
    Ref = make_ref(),
    {Owner, Mon} = spawn_monitor(fun() -> init(Parent, Ref, Caller, Opts) end),
    receive
        {Ref, {ok, Session}} ->
            erlang:demonitor(Mon, [flush]),
            {ok, Owner, Session};
        {Ref, {error, _} = Error} ->
            erlang:demonitor(Mon, [flush]),
            Error;
        {'DOWN', Mon, process, Owner, Why} ->
            {error, {session_failed, Why}}
    end.

%% @doc Stops the session of Owner, cleans up and writes the outputs.
%% Returns the written files and, if `profile' was asked, the profile term.
-spec finish(pid(), #{profile => boolean()}) ->
          {ok, #{files := [string()], errors := list(), profile => map()}} | {error, term()}.
finish(Owner, Opts) ->
    Mon = erlang:monitor(process, Owner),
    Owner ! {finish, self(), Mon, Opts},
    receive
        {Mon, Reply} ->
            erlang:demonitor(Mon, [flush]),
            Reply;
        {'DOWN', Mon, process, Owner, Why} ->
            {error, {session_failed, Why}}
    end.

%% @doc Modules whose calls beamspy never records (its own).
-spec excluded_modules() -> [module()].
excluded_modules() ->
    [beamspy, beamspy_session, beamspy_tracer, beamspy_opts, 'Elixir.BeamSpy'].

init(Parent, Ref, Caller, Opts) ->
    case catch register(?LOCK, self()) of
        true ->
            NifOpts = (maps:get(nif, Opts))#{exclude => excluded_modules(), owner => self()},
            case beamspy_tracer:session_new(NifOpts) of
                {error, _} = Error ->
                    Parent ! {Ref, Error};
                Session ->
                    Mon = erlang:monitor(process, Caller),
                    set_patterns(),
                    _ = case maps:get(max_duration, Opts, infinity) of
                            infinity -> ok;
                            Ms -> erlang:send_after(Ms, self(), {beamspy_limit, max_duration})
                        end,
                    Parent ! {Ref, {ok, Session}},
                    loop(Session, Caller, Mon, Opts)
            end;
        _ ->
            Parent ! {Ref, {error, {busy, whereis(?LOCK)}}}
    end.

%% A limit (from the NIF: max_memory, max_events, max_processes; or the
%% max_duration timer) switches tracing off at once; the caller's call goes
%% on untraced and the files are written when it finishes.
loop(Session, Caller, Mon, Opts) ->
    receive
        {beamspy_limit, max_duration} ->
            ok = beamspy_tracer:session_stop(Session, max_duration),
            ok = cleanup(Session),
            loop(Session, Caller, Mon, Opts);
        {beamspy_limit, _Reason} ->
            ok = cleanup(Session),
            loop(Session, Caller, Mon, Opts);
        {finish, From, Tag, FinishOpts} ->
            Reply = stop_and_write(Session, Opts, FinishOpts),
            From ! {Tag, Reply};
        {'DOWN', Mon, process, Caller, _} ->
            _ = stop_and_write(Session, Opts, #{})
    end.

stop_and_write(Session, #{outputs := Outputs, write := Write}, FinishOpts) ->
    ok = cleanup(Session),
    WriteOpts = Write#{labels => labels(beamspy_tracer:session_pids(Session))},
    Results = [{Path, beamspy_tracer:session_write(Session, Format, Path, WriteOpts)}
               || {Format, Path} <- Outputs],
    Reply = #{files => [P || {P, ok} <- Results],
              errors => [{P, E} || {P, {error, E}} <- Results],
              truncated => maps:get(truncated, beamspy_tracer:session_info(Session))},
    case maps:get(profile, FinishOpts, false) of
        true -> {ok, Reply#{profile => beamspy_tracer:session_profile(Session, WriteOpts)}};
        false -> {ok, Reply}
    end.

set_patterns() ->
    _ = erlang:trace_pattern({'_', '_', '_'}, ?CALLER_MS, [local]),
    _ = erlang:trace_pattern(on_load, ?CALLER_MS, [local]),
    [erlang:trace_pattern({M, '_', '_'}, false, [local]) || M <- excluded_modules()],
    ok.

%% @doc Stops recording and removes every trace flag and pattern the session
%% set: flags of every process whose tracer is this session (children that
%% never ran included), then the local call patterns.
-spec cleanup(beamspy_tracer:session()) -> ok.
cleanup(Session) ->
    ok = beamspy_tracer:session_stop(Session),
    Tracer = {beamspy_tracer, Session},
    Untrace = fun(P) ->
                      case erlang:trace_info(P, tracer) of
                          {tracer, Tracer} -> catch erlang:trace(P, false, [all]);
                          _ -> ok
                      end
              end,
    lists:foreach(Untrace, beamspy_tracer:session_pids(Session)),
    lists:foreach(Untrace, erlang:processes()),
    _ = erlang:trace_pattern({'_', '_', '_'}, false, [local]),
    _ = erlang:trace_pattern(on_load, false, [local]),
    ok.

%% @doc Seeds the stack of an already running process from its
%% `current_stacktrace' (at most 64 frames, recursion collapsed by the VM).
-spec seed(beamspy_tracer:session(), pid()) -> ok | {error, term()}.
seed(Session, Pid) ->
    case erlang:process_info(Pid, current_stacktrace) of
        {current_stacktrace, Stack} ->
            Frames = [{M, F, arity(A)} || {M, F, A, _} <- lists:reverse(Stack)],
            beamspy_tracer:session_seed(Session, Pid, Frames);
        undefined ->
            {error, {noproc, Pid}}
    end.

arity(A) when is_integer(A) -> A;
arity(Args) when is_list(Args) -> length(Args).

%% @doc The root frame of each process: the pid, then its registered name or
%% proc_lib initial call where known.
-spec labels([pid()]) -> #{pid() => binary()}.
labels(Pids) ->
    maps:from_list([{P, label(P)} || P <- Pids]).

label(P) ->
    Extra = case erlang:process_info(P, [registered_name, dictionary]) of
                [{registered_name, Name}, _] when is_atom(Name) ->
                    [$\s | atom_to_list(Name)];
                [_, {dictionary, Dict}] ->
                    case lists:keyfind('$initial_call', 1, Dict) of
                        {_, {M, F, A}} -> [$\s | initial_call_text(M, F, A)];
                        false -> ""
                    end;
                _ ->
                    ""
            end,
    unicode:characters_to_binary([pid_to_list(P), Extra]).

initial_call_text(M, F, A) ->
    case atom_to_list(M) of
        "Elixir." ++ Name -> io_lib:format("~ts.~ts/~w", [Name, atom_to_list(F), A]);
        _ -> io_lib:format("~tw:~tw/~w", [M, F, A])
    end.
