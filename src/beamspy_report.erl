%%% @doc What beamspy tells the user on the terminal: the files it wrote,
%%% the ones it could not write, and a limit that ended a recording early.
%%%
%%% The front ends ({@link beamspy:apply/2}, {@link beamspy:stop/1},
%%% {@link beamspy:trace/3}, {@link beamspy:capture/3} and the Elixir
%%% `BeamSpy') print through here, so a limit reads the same everywhere: which
%%% limit, after how long, how much was recorded, and the option that raises
%%% it. Warnings go to standard error and are printed even with `quiet'
%%% (which only silences the list of files written).
-module(beamspy_report).

-export([sequence_caps/2, written/2, times/2, errors/1, warnings/1, limit/2, limit_text/2, recording/4]).

%% @doc What a stopped recording reports about itself, in the shape
%% {@link limit_text/2} reads (and {@link beamspy:stop/2} returns): the
%% NIF session's figures, how long it recorded, the limits it ran with
%% (Opts' `limits') and the spelling of option names (`names' of Write).
-spec recording(beamspy_tracer:session(), non_neg_integer(), map(), map()) -> map().
recording(Session, RecordedMs, Opts, Write) ->
    Nif = beamspy_tracer:session_info(Session),
    #{truncated => maps:get(truncated, Nif), events => maps:get(events, Nif),
      memory_peak => maps:get(memory_peak, Nif), processes => maps:get(processes, Nif),
      recorded_ms => RecordedMs, limits => maps:get(limits, Opts, #{}),
      names => maps:get(names, Write, erlang),
      compensation => maps:get(compensation, Nif, undefined)}.

%% @doc Prints `beamspy: wrote Path' for each file, unless `quiet'.
-spec written([string()], #{quiet := boolean(), _ => _}) -> ok.
written(Files, #{quiet := Quiet}) ->
    _ = [io:format("beamspy: wrote ~ts~n", [F]) || not Quiet, F <- Files],
    ok.

%% @doc Prints what the times in the files written are (compensated for the
%% tracer's overhead and by how much, or raw), unless `quiet' or nothing
%% was written: folded stacks have no header to say it in.
-spec times(map(), #{quiet := boolean(), _ => _}) -> ok.
times(#{files := [_ | _], compensation := #{text := Text}}, #{quiet := false}) when Text =/= <<>> ->
    io:format("beamspy: ~ts~n", [Text]);
times(_, _) ->
    ok.

%% @doc Prints on standard error what the writers said about the files
%% (the `warnings' of a session's reply: a timeline capped for its viewer,
%% a file projected above 100 MB), whether `quiet' or not.
-spec warnings(#{warnings => [binary()], _ => _}) -> ok.
warnings(Reply) ->
    _ = [io:format(standard_error, "beamspy: warning: ~ts~n", [W]) || W <- maps:get(warnings, Reply, [])],
    ok.

%% @doc Prints each file that could not be written, with the reason.
-spec errors([{string(), term()}]) -> ok.
errors(Errors) ->
    _ = [io:format(standard_error, "beamspy: could not write ~ts: ~ts~n", [P, reason_text(E)])
         || {P, E} <- Errors],
    ok.

%% @doc Prints on standard error each cap a sequence capture hit: events
%% past `max_events', processes drawn as "other processes" past
%% `max_participants', messages a diagram format left out, and collectors
%% that failed. Quiet or not.
-spec sequence_caps(map(), map()) -> ok.
sequence_caps(#{summary := Summary, left_out := LeftOut, collector_errors := CErrors}, Opts) ->
    Say = fun(F, A) -> io:format(standard_error, "beamspy: " ++ F ++ "~n", A) end,
    case maps:get(dropped_events, Summary, 0) of
        0 -> ok;
        _ -> Say("sequence: max_events (~w) reached on a node: recording stopped there, so later "
                 "messages are missing; raise max_events", [maps:get(max_events, Opts)])
    end,
    case maps:get(folded, Summary, 0) of
        0 -> ok;
        P -> Say("sequence: ~w processes past max_participants (~w) are drawn as \"other processes\" "
                 "of their node; raise max_participants", [P, maps:get(max_participants, Opts)])
    end,
    _ = [Say("sequence: ~ts shows the first messages only, ~w more are left out (the json format "
             "holds every message)", [Path, Left]) || {_Fmt, Path, Left} <- LeftOut],
    _ = [Say("sequence: a collector failed, its node's events are missing: ~tp", [E]) || E <- CErrors],
    ok.

%% @doc Prints {@link limit_text/2} on standard error if a limit ended the
%% recording early (`truncated' in Report is not `false').
-spec limit(map(), map()) -> ok.
limit(#{truncated := Reason} = Report, Opts) when Reason =/= false ->
    io:format(standard_error, "~ts~n", [limit_text(Report, Opts)]);
limit(_, _) ->
    ok.

%% @doc The sentence for a recording that a limit ended early. Report holds
%% `truncated' (the limit), and where known `recorded_ms', `events',
%% `memory_peak' (bytes) and `processes'; Opts the options the recording
%% ran with (the limit's value, and `names' for the spelling of the option).
%%
%% ```
%% 1> beamspy_report:limit_text(#{truncated => max_events, recorded_ms => 3512,
%% 1>     events => 10000000, memory_peak => 4194304, processes => 12},
%% 1>     #{max_events => 10000000, names => erlang}).
%% "beamspy: recording stopped early after 3.5 s: max_events (10000000) reached; recorded 10000000 events from 12 processes, 4.0 MiB peak. The profile covers only that part; to record more, give max_events => 100000000 (or infinity)."
%% '''
-spec limit_text(map(), map()) -> string().
limit_text(#{truncated := Reason} = Report, Opts) ->
    Limit = maps:get(Reason, Opts, undefined),
    After = case maps:get(recorded_ms, Report, undefined) of
                undefined -> "";
                Ms -> " after " ++ duration_text(Ms)
            end,
    lists:flatten(
      io_lib:format("beamspy: recording stopped early~ts: ~ts reached~ts. "
                    "The profile covers only that part; to record more, give ~ts.",
                    [After, limit_name(Reason, Limit), amount_text(Report),
                     raise_text(Reason, Limit, maps:get(names, Opts, erlang))])).

limit_name(Reason, undefined) -> atom_to_list(Reason);
limit_name(max_memory, Bytes) -> io_lib:format("max_memory (~ts)", [bytes_text(Bytes)]);
limit_name(max_duration, Ms) -> io_lib:format("max_duration (~w ms)", [Ms]);
limit_name(Reason, Limit) -> io_lib:format("~w (~w)", [Reason, Limit]).

amount_text(Report) ->
    Events = maps:get(events, Report, undefined),
    Procs = maps:get(processes, Report, undefined),
    Peak = maps:get(memory_peak, Report, undefined),
    Parts = [io_lib:format("~w events", [Events]) ++
                    case Procs of
                        undefined -> "";
                        _ -> io_lib:format(" from ~w process~ts", [Procs, plural_es(Procs)])
                    end || Events =/= undefined]
        ++ [bytes_text(Peak) ++ " peak" || Peak =/= undefined],
    case Parts of
        [] -> "";
        _ -> ["; recorded " | lists:join(", ", Parts)]
    end.

%% The option to give, spelled for the caller's language, with a value ten
%% times the one that tripped (twice for memory: it is what protects the node).
raise_text(Reason, Limit, Names) ->
    Value = case {Reason, Limit} of
                {_, undefined} -> undefined;
                {max_memory, L} -> L * 2;
                {max_processes, L} -> min(L * 10, 1048576);
                {_, L} -> L * 10
            end,
    Infinity = lists:member(Reason, [max_events, max_duration]),
    case Names of
        elixir when Value =:= undefined -> io_lib:format("a larger ~w:", [Reason]);
        elixir ->
            io_lib:format("~w: ~ts", [Reason, elixir_int(Value)])
                ++ [" (or :infinity)" || Infinity];
        _ when Value =:= undefined -> io_lib:format("a larger ~w", [Reason]);
        _ ->
            io_lib:format("~w => ~w", [Reason, Value]) ++ [" (or infinity)" || Infinity]
    end.

elixir_int(N) ->
    Digits = integer_to_list(N),
    Groups = group3(lists:reverse(Digits)),
    lists:reverse(lists:flatten(lists:join($_, Groups))).

group3([A, B, C | Rest]) when Rest =/= [] -> [[A, B, C] | group3(Rest)];
group3(Rest) -> [Rest].

duration_text(Ms) when Ms < 1000 -> io_lib:format("~w ms", [Ms]);
duration_text(Ms) -> io_lib:format("~.1f s", [Ms / 1000]).

bytes_text(B) when B < 1024 * 1024 -> io_lib:format("~.1f KiB", [B / 1024]);
bytes_text(B) -> io_lib:format("~.1f MiB", [B / (1024 * 1024)]).

plural_es(1) -> "";
plural_es(_) -> "es".

reason_text(Atom) when is_atom(Atom) ->
    case file:format_error(Atom) of
        "unknown POSIX error" ++ _ -> atom_to_list(Atom);
        Text -> Text
    end;
reason_text(Other) ->
    io_lib:format("~tp", [Other]).
