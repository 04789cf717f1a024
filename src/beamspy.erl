%%% @doc beamspy: exact flame graphs of BEAM code, recorded natively.
%%%
%%% `apply/2' runs a function while an `erl_tracer' NIF records every call,
%%% return and reschedule of the calling process (and, by default, of every
%%% process it spawns) on the scheduler threads; a C engine rebuilds the
%%% stacks and aggregates them as they happen, so nothing is sent as a
%%% message and memory grows with distinct stacks, never with events.
%%%
%%% ```
%%% 1> beamspy:apply({lists, sort, [[3, 1, 2]]}, #{output => "/tmp/sort.folded"}).
%%% beamspy: wrote /tmp/sort.folded
%%% [1,2,3]
%%% '''
%%%
%%% The result (or exception) of the call reaches the caller unchanged, and
%%% tracing is switched off and every trace pattern removed afterwards,
%%% whatever happens. Stacks are the stacks the VM really has: a call in
%%% tail position replaces its caller's frame, also when the compiler turned
%%% a body call into a tail call.
%%%
%%% == Options ==
%%% Given as a map or a proplist.
%%% <ul>
%%% <li>`output' — a directory (created if needed; one file per format, named
%%%   from the target and the time) or a file name whose extension picks the
%%%   format (`.folded'). Default: the current directory.</li>
%%% <li>`formats' — list of formats written to a directory output. Default
%%%   `[folded]'.</li>
%%% <li>`children' — also trace processes spawned by the call, each under its
%%%   own pid. Default `true'.</li>
%%% <li>`sleep' — charge time spent scheduled out to a `SLEEP' leaf. Default
%%%   `true'.</li>
%%% <li>`gc' — charge garbage collection to a `GC' leaf. Default `false'.</li>
%%% <li>`max_memory' — bytes the recording may use; when reached, recording
%%%   stops and the profile is marked truncated. Default 256 MiB.</li>
%%% <li>`max_processes' — processes recorded at most. Default 10000.</li>
%%% <li>`names' — `erlang' (`mod:fun/1') or `elixir' (`Mod.fun/1'). Default
%%%   `erlang'.</li>
%%% <li>`quiet' — do not print where files were written. Default `false'.</li>
%%% </ul>
-module(beamspy).

-export([apply/1, apply/2, profile/2, check/2, format_error/1]).

-type format() :: folded | svg | html | speedscope | chrome | perf | bspy.
-type target() :: beamspy_opts:target().
-type outcome() :: {return, term()} | {raise, error | exit | throw, term(), list()}.
-type profile() :: #{processes := [{binary(), [tree_node()]}],
                     truncated := false | max_memory | max_processes,
                     events := non_neg_integer(),
                     dropped := non_neg_integer(),
                     memory_peak := non_neg_integer(),
                     duration_ns := non_neg_integer()}.
-type tree_node() :: {Id :: non_neg_integer(), Parent :: non_neg_integer() | undefined,
                      Frame :: binary(), SelfNs :: non_neg_integer(),
                      TotalNs :: non_neg_integer(), Calls :: non_neg_integer()}.
-export_type([format/0, target/0, outcome/0, profile/0, tree_node/0]).

%% @equiv apply(Target, #{})
-spec apply(target()) -> term().
apply(Target) ->
    ?MODULE:apply(Target, #{}).

%% @doc Calls Target, writes its flame graph, and returns what the call
%% returned (or raises what it raised, with the same stacktrace).
%%
%% Bad options or a bad target raise `{beamspy, Reason}' before anything
%% runs; {@link format_error/1} explains Reason. A second `apply' while one
%% is running raises `{beamspy, {busy, Owner}}'.
%%
%% ```
%% 1> beamspy:apply(fun() -> lists:seq(1, 3) end, [quiet, {output, "/tmp/seq.folded"}]).
%% [1,2,3]
%% '''
-spec apply(target(), map() | list()) -> term().
apply(Target, Opts) ->
    case run(Target, Opts, #{}) of
        {ok, Outcome, #{files := Files, errors := Errors} = Reply, Settings} ->
            report(Files, Errors, Settings),
            report_truncated(maps:get(truncated, Reply, false), Settings),
            return(Outcome);
        {error, Reason} ->
            erlang:error({beamspy, Reason}, [Target, Opts])
    end.

%% @doc Like {@link apply/2}, but returns the outcome and the recorded
%% profile instead of returning or raising. No file is written unless
%% `output' or `formats' is given.
%%
%% ```
%% 1> #{result := {return, 6}, profile := #{processes := [_]}} =
%% 1>     beamspy:profile({lists, sum, [[1, 2, 3]]}, #{}).
%% '''
-spec profile(target(), map() | list()) ->
          {ok, #{result := outcome(), profile := profile(), files := [string()]}} | {error, term()}.
profile(Target, Opts) ->
    Explicit = is_map(Opts) andalso (maps:is_key(output, Opts) orelse maps:is_key(formats, Opts))
        orelse is_list(Opts) andalso (proplists:is_defined(output, Opts) orelse proplists:is_defined(formats, Opts)),
    case run(Target, Opts, #{profile => true, write => Explicit}) of
        {ok, Outcome, #{files := Files, profile := Profile}, _} ->
            {ok, #{result => Outcome, profile => Profile, files => Files}};
        {error, _} = Error ->
            Error
    end.

%% @doc Checks a target and options the way {@link apply/2} does, without
%% running anything. Front ends (such as the Elixir `BeamSpy') use it to
%% report bad input in their own terms.
%%
%% ```
%% 1> beamspy:check({lists, sort, [[2, 1]]}, #{sleep => false}).
%% ok
%% 2> {error, {bad_option, sleep, 1, _}} = beamspy:check({lists, sort, [[]]}, #{sleep => 1}).
%% '''
-spec check(target(), map() | list()) -> ok | {error, term()}.
check(Target, Opts) ->
    case validate(Target, Opts) of
        {ok, _, _, _} -> ok;
        {error, _} = Error -> Error
    end.

%% @doc A sentence for every reason beamspy raises or returns.
-spec format_error(term()) -> string().
format_error({bad_target, {wrong_arity, N, Got}}) ->
    flat("the target fun takes ~w argument~s but ~w ~s given",
         [N, plural(N), Got, case Got of 1 -> "was"; _ -> "were" end]);
format_error({bad_target, {undef, {M, F, A}}}) ->
    flat("~ts is not an exported function", [mfa_text(M, F, A)]);
format_error({bad_target, T}) ->
    flat("~tw is not a target: use fun(), {Fun, Args} or {Module, Function, Args}", [T]);
format_error({bad_option, K, V, Expected}) ->
    flat("option ~tw must be ~ts, got ~tw", [K, Expected, V]);
format_error({unknown_option, K, _}) ->
    flat("unknown option ~tw", [K]);
format_error({bad_options, O}) ->
    flat("options must be a map or a proplist, got ~tw", [O]);
format_error({bad_output, Out, Why}) ->
    flat("cannot use ~ts as output directory: ~ts", [Out, file:format_error(Why)]);
format_error({busy, Owner}) ->
    flat("another beamspy recording (owner ~w) is running; on this OTP release trace "
         "patterns are node-wide, so only one can run at a time", [Owner]);
format_error({already_traced, Pid, Tracer}) ->
    flat("~w is already traced by ~tw; beamspy does not take over another tracer", [Pid, Tracer]);
format_error({session_failed, Why}) ->
    flat("the beamspy session process failed: ~tw", [Why]);
format_error(Other) ->
    flat("~tw", [Other]).

flat(Format, Args) ->
    lists:flatten(io_lib:format(Format, Args)).

plural(1) -> "";
plural(_) -> "s".

mfa_text(M, F, A) ->
    case atom_to_list(M) of
        "Elixir." ++ Name -> flat("~ts.~ts/~w", [Name, atom_to_list(F), A]);
        _ -> flat("~tw:~tw/~w", [M, F, A])
    end.

%%% ---------------------------------------------------------------------
%%% Running a call under trace
%%% ---------------------------------------------------------------------

run(Target, Opts0, Finish) ->
    maybe_run(validate(Target, Opts0), Finish).

validate(Target, Opts0) ->
    case beamspy_opts:target(Target) of
        {ok, Fun, Args} ->
            case beamspy_opts:options(Opts0) of
                {ok, Opts} -> {ok, Fun, Args, Opts};
                Error -> Error
            end;
        Error ->
            Error
    end.

maybe_run({error, _} = Error, _) ->
    Error;
maybe_run({ok, Fun, Args, Opts}, Finish) ->
    Write = maps:get(write, Finish, true),
    case not_traced(self()) of
        ok when Write ->
            case beamspy_opts:outputs(Opts, label(Fun)) of
                {ok, Outputs} -> traced_call(Fun, Args, Opts, Outputs, Finish);
                Error -> Error
            end;
        ok ->
            traced_call(Fun, Args, Opts, [], Finish);
        Error ->
            Error
    end.

not_traced(Pid) ->
    case {whereis(beamspy_active_session), erlang:trace_info(Pid, tracer)} of
        {Owner, _} when is_pid(Owner) -> {error, {busy, Owner}};
        {undefined, {tracer, []}} -> ok;
        {undefined, {tracer, Tracer}} -> {error, {already_traced, Pid, Tracer}}
    end.

traced_call(Fun, Args, Opts, Outputs, Finish) ->
    NifOpts = beamspy_opts:nif_options(Opts, Outputs),
    WriteOpts = (beamspy_opts:write_options(Opts))#{
                  node => atom_to_binary(node()),
                  otp_release => list_to_binary(erlang:system_info(otp_release)),
                  source => unicode:characters_to_binary(["beamspy:apply(", describe(Fun), ")"]),
                  options_text => unicode:characters_to_binary(io_lib:format("~0tp", [maps:remove(output_given, Opts)])),
                  start_unix_us => os:system_time(microsecond)},
    StartOpts = #{nif => NifOpts, outputs => Outputs, write => WriteOpts,
                  max_duration => maps:get(max_duration, Opts)},
    case beamspy_session:start(self(), StartOpts) of
        {ok, Owner, Session} ->
            Outcome = call_traced(Fun, Args, Session, Owner, Opts),
            %% The outcome is never lost: if the owner failed while writing,
            %% the call's result still goes back and the failure is reported.
            case beamspy_session:finish(Owner, Finish) of
                {ok, Reply} ->
                    {ok, Outcome, Reply, Opts};
                {error, Why} ->
                    Files = #{files => [], errors => [{"(session)", Why}]},
                    Profile = case maps:get(profile, Finish, false) of
                                  true -> #{profile => beamspy_tracer:session_profile(Session, #{})};
                                  false -> #{}
                              end,
                    {ok, Outcome, maps:merge(Files, Profile), Opts}
            end;
        {error, _} = Error ->
            Error
    end.

%% The call runs in the caller's own process, so self(), the process
%% dictionary and the mailbox are the caller's. Our own frames are not
%% traced (the session excludes this module), so the profile starts at Fun.
call_traced(Fun, Args, Session, Owner, Opts) ->
    Flags = [call, arity, return_to, running]
        ++ [set_on_spawn || maps:get(children, Opts)]
        ++ [garbage_collection || maps:get(gc, Opts)],
    try
        _ = erlang:trace(self(), true, [{tracer, beamspy_tracer, Session} | Flags]),
        try {return, erlang:apply(Fun, Args)}
        catch Class:Reason:Stack -> {raise, Class, Reason, Stack}
        end
    after
        ok = beamspy_tracer:session_stop(Session),
        _ = erlang:trace(self(), false, [all]),
        case is_process_alive(Owner) of
            true -> ok;
            false -> beamspy_session:cleanup(Session)
        end
    end.

describe(Fun) ->
    {module, M} = erlang:fun_info(Fun, module),
    {name, F} = erlang:fun_info(Fun, name),
    {arity, A} = erlang:fun_info(Fun, arity),
    io_lib:format("~tw:~tw/~w", [M, F, A]).

return({return, Value}) -> Value;
return({raise, Class, Reason, Stack}) -> erlang:raise(Class, Reason, Stack).

report(Files, Errors, #{quiet := Quiet}) ->
    _ = [io:format("beamspy: wrote ~ts~n", [F]) || not Quiet, F <- Files],
    _ = [io:format(standard_error, "beamspy: could not write ~ts: ~tp~n", [P, E]) || {P, E} <- Errors],
    ok.

report_truncated(false, _) -> ok;
report_truncated(Reason, #{quiet := true}) when is_atom(Reason) -> ok;
report_truncated(Reason, _) ->
    io:format("beamspy: recording stopped early (~w reached); the profile covers the call up to then~n",
              [Reason]).

label(Fun) ->
    case erlang:fun_info(Fun, type) of
        {type, external} ->
            {module, M} = erlang:fun_info(Fun, module),
            {name, F} = erlang:fun_info(Fun, name),
            atom_to_list(M) ++ "_" ++ atom_to_list(F);
        {type, local} ->
            {module, M} = erlang:fun_info(Fun, module),
            atom_to_list(M)
    end.
