%%% @doc Telemetry spans on a timeline, alone or above the exact call stacks.
%%%
%%% Libraries report their work with `telemetry:span/3', which emits
%%% `Prefix ++ [start]' and then `Prefix ++ [stop]' (or `Prefix ++
%%% [exception]') in the process doing the work. {@link start/2} attaches
%%% one handler per prefix; the handler runs in the emitting process and
%%% hands each event to the NIF, which pushes or pops a span frame
%%% (`[my_app.repo.query]') in that process's recording: spans nest per
%%% process, time is span durations. {@link stop/1} detaches and writes
%%% Chrome trace (one track per process), speedscope (evented) and flame
%%% graphs of span nesting (folded, SVG, HTML).
%%%
%%% With `beamspy:apply(Target, #{telemetry => Prefixes})' (and `start/2',
%%% `capture/3', `BeamSpy.run/2') the same span frames go into the traced
%%% processes' call stacks, above the function that emitted the start
%%% (`telemetry:span/3'), so the functions a span encloses are drawn above
%%% it.
%%%
%%% beamspy does not depend on telemetry: it is called only when it is
%%% loaded, else `{error, telemetry_not_loaded}'. The handler never raises
%%% (telemetry detaches a failing handler): whatever goes wrong is counted.
%%% Stops without their start, spans left open when their anchor frame
%%% returned, spans open in a process that died and spans dropped by
%%% `max_spans' are counted, printed by {@link stop/1} and written into the
%%% outputs (SVG notice, HTML warning, Chrome trace metadata `notes').
-module(beamspy_telemetry).

-export([start/2, stop/1, finish/1, handle_event/4, format_error/1]).
-export([check_prefixes/1, check_metadata/1, ready/0, attach_session/2, detach_session/1]).
-export([init/5]).

-define(MAX_PREFIXES, 64).
-define(MAX_PREFIX_LENGTH, 16).
-define(DEFAULT_MAX_SPANS, beamspy_opts:default(max_spans)).
-define(DEFAULT_FORMATS, [chrome, speedscope, folded, svg, html]).
-define(MAX_METADATA_KEYS, 16).
-define(NOTE_CHARS, 300).
-define(VALUE_CHARS, 60).

-opaque handle() :: {beamspy_telemetry, pid(), reference()}.
-type prefix() :: [atom(), ...].
-type counts() :: #{started := non_neg_integer(), closed := non_neg_integer(),
                    unmatched := non_neg_integer(), lost := non_neg_integer(),
                    died := non_neg_integer(), open := non_neg_integer(),
                    refused := non_neg_integer(), dropped := non_neg_integer()}.
-export_type([handle/0, prefix/0, counts/0]).

%% @doc Attaches a handler to `Prefix ++ [start | stop | exception]' for
%% each prefix and records the spans of every process that emits them.
%%
%% Options (a map or a proplist): `output' and `formats' as in
%% `beamspy:apply/2' (default formats here: `chrome', `speedscope',
%% `folded', `svg', `html'), `max_spans' (span starts recorded at most,
%% default 1,000,000; later ones are dropped and counted), `metadata' (up
%% to 16 metadata keys whose values, printed at most 8 deep and cut to 60
%% characters (300 in all), go into each span's args in the Chrome trace; an exception's
%% kind and reason always do), `max_memory',
%% `max_processes', `names', `title', `quiet' and the other rendering
%% options of `beamspy:apply/2'.
%%
%% ```
%% 1> {ok, H} = beamspy_telemetry:start([[my_app, repo, query]], #{output => "/tmp/spans", quiet => true}).
%% 2> telemetry:span([my_app, repo, query], #{}, fun() -> {ok, #{}} end).
%% ok
%% 3> {ok, Files} = beamspy_telemetry:stop(H).
%% '''
-spec start([prefix()], map() | list()) -> {ok, handle()} | {error, term()}.
start(Prefixes, Opts) ->
    try
        ok = ok_or_throw(check_prefixes(Prefixes)),
        {Own, Rest} = own_options(Opts),
        {ok, O0} = ok_or_throw(beamspy_opts:options(Rest)),
        O = case maps:is_key(formats, Rest) of
                true -> O0;
                false -> O0#{formats := ?DEFAULT_FORMATS}
            end,
        {ok, Outputs} = ok_or_throw(beamspy_opts:outputs(O, "telemetry")),
        ok = ok_or_throw(ready()),
        MaxSpans = maps:get(max_spans, Own, ?DEFAULT_MAX_SPANS),
        NifOpts = (maps:with([max_memory, max_processes], O))#{
                    spans_only => true, max_spans => MaxSpans, timeline => MaxSpans,
                    sleep => false, gc => false},
        Ref = make_ref(),
        Config = #{opts => O, outputs => Outputs},
        Args = [self(), Ref, Prefixes, NifOpts#{telemetry_metadata => maps:get(metadata, Own, [])}, Config],
        case proc_lib:start_monitor(?MODULE, init, Args) of
            {{ok, Owner}, Mon} ->
                erlang:demonitor(Mon, [flush]),
                {ok, {beamspy_telemetry, Owner, Ref}};
            {{refused, Error}, Mon} ->
                erlang:demonitor(Mon, [flush]),
                Error;
            {{error, Why}, Mon} -> % it died before it acknowledged
                erlang:demonitor(Mon, [flush]),
                {error, {session_failed, Why}}
        end
    catch
        throw:{error, _} = E -> E
    end.

%% @doc Detaches the handlers, writes the outputs and returns their paths.
%% Prints where it wrote and what happened to the spans unless `quiet'.
-spec stop(handle()) -> {ok, [file:filename()]} | {error, term()}.
stop(Handle) ->
    case finish(Handle) of
        {ok, #{files := Files}} -> {ok, Files};
        {error, _} = Error -> Error
    end.

%% @doc As {@link stop/1}, and also says what happened to the spans:
%% `{ok, #{files => Paths, errors => [{Path, Reason}], spans => Counts}}'.
%% `Counts' has `started', `closed' (stopped normally or by an exception),
%% `unmatched' (stops without their start), `lost' (left open when the
%% frame they started in returned, or inside a span that stopped), `died'
%% (open in a process that died), `open' (still open at the end), `refused'
%% (deeper than 64 open spans, or out of memory) and `dropped' (over
%% `max_spans'); `memory_peak' is the most memory the recording held.
-spec finish(handle()) -> {ok, #{files := [file:filename()], errors := list(), spans := counts(),
                                 memory_peak := non_neg_integer()}}
                              | {error, term()}.
finish({beamspy_telemetry, Owner, Ref}) when is_pid(Owner), is_reference(Ref) ->
    Mon = erlang:monitor(process, Owner),
    Owner ! {Ref, stop, self()},
    receive
        {Ref, Reply} ->
            erlang:demonitor(Mon, [flush]),
            Reply;
        {'DOWN', Mon, process, Owner, _} ->
            {error, not_running}
    end;
finish(Other) ->
    {error, {bad_handle, Other}}.

%% @doc The telemetry handler (attached by beamspy; not for direct use). It
%% runs in the process that emitted the event, never raises, and detaches
%% itself once its recording has stopped.
-spec handle_event([atom()], map(), map(), {term(), pid() | none, atom(), term(), [term()]}) -> ok.
handle_event(Event, _Measurements, Metadata, {Session, Owner, Name, Id, Keys}) ->
    try
        Kind = lists:last(Event),
        case note(Kind, Metadata, Keys) of
            none -> beamspy_tracer:span_event(Session, Kind, Name);
            Note -> beamspy_tracer:span_event(Session, Kind, Name, Note)
        end
    of
        first when is_pid(Owner) ->
            Owner ! {beamspy_span_proc, self()},
            ok;
        stopped ->
            detach_quietly(Id);
        _ ->
            ok
    catch
        _:_ -> ok
    end;
handle_event(_, _, _, _) ->
    ok.

%% @doc A sentence for every error reason of this module.
%%
%% ```
%% 1> beamspy_telemetry:format_error(telemetry_not_loaded).
%% "the telemetry library is not loaded on this node: add it to your release (or put it on the code path and start it) and try again"
%% '''
-spec format_error(term()) -> string().
format_error(telemetry_not_loaded) ->
    "the telemetry library is not loaded on this node: add it to your release "
        "(or put it on the code path and start it) and try again";
format_error({telemetry_not_started, Why}) ->
    lists:flatten(io_lib:format("the telemetry application is not running (~0tP): "
                                "call application:ensure_all_started(telemetry) first", [Why, 10]));
format_error({bad_prefixes, P}) ->
    lists:flatten(io_lib:format("telemetry prefixes must be a non-empty list of at most ~w event prefixes, "
                                "each a non-empty list of at most ~w atoms, such as [[my_app, repo, query]]; got ~0tP",
                                [?MAX_PREFIXES, ?MAX_PREFIX_LENGTH, P, 10]));
format_error({duplicate_prefix, P}) ->
    lists:flatten(io_lib:format("telemetry prefix ~0tP is given twice: give each prefix once", [P, 10]));
format_error({bad_option, metadata, V}) ->
    lists:flatten(io_lib:format("metadata must be a list of at most ~w metadata keys; got ~0tP",
                                [?MAX_METADATA_KEYS, V, 10]));
format_error({bad_option, max_spans, V}) ->
    lists:flatten(io_lib:format("max_spans must be a positive integer; got ~0tP", [V, 10]));
format_error({attach_failed, Why}) ->
    lists:flatten(io_lib:format("telemetry refused the handler: ~0tP", [Why, 10]));
format_error(not_running) ->
    "this telemetry recording is not running any more";
format_error({bad_handle, H}) ->
    lists:flatten(io_lib:format("not a handle from beamspy_telemetry:start/2: ~0tP", [H, 10]));
format_error(Other) ->
    beamspy:format_error(Other).

%% @doc `ok' if Prefixes is a valid list of event prefixes, else
%% `{error, {bad_prefixes, Prefixes}}', or `{error, {duplicate_prefix, P}}'
%% when a prefix is given twice (its events would be recorded twice). A
%% prefix that begins another one, `[a]' and `[a, b]', is fine: their
%% events, `[a, start]' and `[a, b, start]', are different.
%%
%% ```
%% 1> beamspy_telemetry:check_prefixes([[my_app, repo]]).
%% ok
%% 2> beamspy_telemetry:check_prefixes([[my_app, repo], [my_app, repo]]).
%% {error,{duplicate_prefix,[my_app,repo]}}
%% '''
-spec check_prefixes(term()) -> ok | {error, {bad_prefixes, term()} | {duplicate_prefix, prefix()}}.
check_prefixes(Prefixes) ->
    Ok = short_list(Prefixes, ?MAX_PREFIXES)
        andalso lists:all(fun(P) -> short_list(P, ?MAX_PREFIX_LENGTH) andalso lists:all(fun is_atom/1, P) end,
                          Prefixes),
    case Ok of
        true -> no_duplicate(Prefixes, #{});
        false -> {error, {bad_prefixes, Prefixes}}
    end.

no_duplicate([], _Seen) ->
    ok;
no_duplicate([P | Ps], Seen) ->
    case Seen of
        #{P := _} -> {error, {duplicate_prefix, P}};
        #{} -> no_duplicate(Ps, Seen#{P => true})
    end.

%% @doc Spans with the stacks: attaches handlers feeding a tracing session
%% (NIF options with a `telemetry' key; nothing to do without one). Called
%% by the process that owns the session; {@link detach_session/1} with the
%% same process undoes it (the handlers also detach themselves once the
%% session has stopped).
-spec attach_session(beamspy_tracer:session(), map()) -> ok | {error, term()}.
attach_session(Session, #{telemetry := Prefixes} = NifOpts) ->
    case ready() of
        ok -> attach(Session, none, Prefixes, maps:get(telemetry_metadata, NifOpts, []));
        {error, _} = Error -> Error
    end;
attach_session(_Session, _NifOpts) ->
    ok.

%% @doc Detaches every handler attached by Owner (no-op without telemetry).
-spec detach_session(pid()) -> ok.
detach_session(Owner) ->
    case erlang:module_loaded(telemetry) of
        true ->
            Handlers = try erlang:apply(telemetry, list_handlers, [[]]) catch _:_ -> [] end,
            _ = [detach_quietly(Id) || #{id := {?MODULE, O, _} = Id} <- Handlers, O =:= Owner],
            ok;
        false ->
            ok
    end.

%%% ---------------------------------------------------------------------
%%% Internals
%%% ---------------------------------------------------------------------

%% What goes into a span's args: the kind and reason of an exception, and
%% at its start the asked metadata keys, each value printed at most 8 deep
%% and cut to ?VALUE_CHARS characters, the whole to ?NOTE_CHARS.
note(exception, Meta, _Keys) when is_map(Meta) ->
    cut(io_lib:format("exception: kind=~0tP reason=~0tP",
                      [maps:get(kind, Meta, undefined), 8, maps:get(reason, Meta, undefined), 8]));
note(start, Meta, [_ | _] = Keys) when is_map(Meta) ->
    case [[cut(io_lib:format("~0tP", [K, 4]), 40), "=", cut(io_lib:format("~0tP", [V, 8]), ?VALUE_CHARS)]
          || K <- Keys, {ok, V} <- [maps:find(K, Meta)]] of
        [] -> none;
        Parts -> cut(lists:join(" ", Parts))
    end;
note(_, _, _) ->
    none.

cut(Chars) ->
    unicode:characters_to_binary(cut(Chars, ?NOTE_CHARS)).

cut(Chars, N) ->
    case string:slice(unicode:characters_to_list(Chars), 0, N + 1) of
        L when length(L) > N -> string:slice(L, 0, N - 3) ++ "...";
        L -> L
    end.

%% A proper, non-empty list of at most Max elements.
short_list(L, Max) ->
    try length(L) of
        N -> N > 0 andalso N =< Max
    catch error:badarg -> false
    end.

ok_or_throw(ok) -> ok;
ok_or_throw({ok, _} = Ok) -> Ok;
ok_or_throw({error, _} = E) -> throw(E).

%% Our own options out of the rest (which beamspy_opts checks).
own_options(Opts) when is_map(Opts) ->
    own_options(maps:to_list(Opts));
own_options(Opts) when is_list(Opts) ->
    {Own, Rest} = lists:partition(fun({K, _}) -> K =:= max_spans orelse K =:= metadata; (_) -> false end, Opts),
    Checked = maps:from_list([check_own(O) || O <- Own]),
    {Checked, maps:from_list([case O of {_, _} -> O; K -> {K, true} end || O <- Rest])};
own_options(Other) ->
    throw({error, {bad_options, Other}}).

check_own({max_spans, N}) when is_integer(N), N > 0, N < (1 bsl 40) -> {max_spans, N};
check_own({max_spans, V}) -> throw({error, {bad_option, max_spans, V}});
check_own({metadata, Keys}) ->
    case check_metadata(Keys) of
        ok -> {metadata, Keys};
        {error, _} = E -> throw(E)
    end.

%% @doc `ok' if Keys is a list of at most 16 metadata keys (any terms).
-spec check_metadata(term()) -> ok | {error, {bad_option, metadata, term()}}.
check_metadata(Keys) ->
    case Keys =:= [] orelse short_list(Keys, ?MAX_METADATA_KEYS) of
        true -> ok;
        false -> {error, {bad_option, metadata, Keys}}
    end.

%% @doc `ok' when telemetry is loaded (loading it if it is on the code
%% path) and its application is running, else a reason for {@link
%% format_error/1}.
-spec ready() -> ok | {error, telemetry_not_loaded | {telemetry_not_started, term()}}.
ready() ->
    case code:ensure_loaded(telemetry) of
        {module, telemetry} ->
            case whereis(telemetry_handler_table) of
                undefined -> {error, {telemetry_not_started, no_telemetry_handler_table}};
                _ -> ok
            end;
        {error, _} ->
            {error, telemetry_not_loaded}
    end.

span_name(Prefix) ->
    Text = lists:join(".", [atom_to_list(A) || A <- Prefix]),
    binary_to_atom(unicode:characters_to_binary(["[", Text, "]"])).

attach(Session, Owner, Prefixes, Keys) ->
    Me = self(),
    attach(Session, Owner, Prefixes, Keys, Me, 1).

attach(_Session, _Owner, [], _Keys, _Me, _I) ->
    ok;
attach(Session, Owner, [P | Ps], Keys, Me, I) ->
    Id = {?MODULE, Me, I},
    Events = [P ++ [start], P ++ [stop], P ++ [exception]],
    Config = {Session, Owner, span_name(P), Id, Keys},
    try erlang:apply(telemetry, attach_many, [Id, Events, fun ?MODULE:handle_event/4, Config]) of
        ok ->
            attach(Session, Owner, Ps, Keys, Me, I + 1);
        Other ->
            detach_session(Me),
            {error, {attach_failed, Other}}
    catch
        Class:Reason ->
            detach_session(Me),
            {error, {attach_failed, {Class, Reason}}}
    end.

%% A handler detached, if telemetry still has it (it may be gone already).
detach_quietly(Id) ->
    try erlang:apply(telemetry, detach, [Id]) catch _:_ -> ok end,
    ok.

%% The owner of a spans-only recording: holds the session, attaches the
%% handlers, watches the processes that emitted spans (a process dying
%% inside a span is counted), and stops everything if its caller dies.
%% Started by proc_lib (its initial call names it as a job to an unload);
%% acknowledges `{ok, self()}' or `{refused, Error}'.
%% @private
-spec init(pid(), reference(), [prefix()], map(), map()) -> ok.
init(Caller, Ref, Prefixes, NifOpts, #{opts := O, outputs := Outputs}) ->
    CallerMon = erlang:monitor(process, Caller),
    case beamspy_jobs:check_start() =:= ok andalso beamspy_tracer:session_new(NifOpts#{owner => self()}) of
        false ->
            proc_lib:init_ack({refused, beamspy_jobs:check_start()});
        {error, _} = Error ->
            proc_lib:init_ack({refused, Error});
        Session ->
            case attach(Session, self(), Prefixes, maps:get(telemetry_metadata, NifOpts)) of
                ok ->
                    proc_lib:init_ack({ok, self()}),
                    loop(#{session => Session, ref => Ref, caller_mon => CallerMon,
                           opts => O, outputs => Outputs});
                {error, _} = Error ->
                    ok = beamspy_tracer:session_stop(Session),
                    proc_lib:init_ack({refused, Error})
            end
    end.

loop(#{session := Session, ref := Ref, caller_mon := CallerMon} = S) ->
    receive
        {beamspy_span_proc, Pid} ->
            _ = erlang:monitor(process, Pid),
            loop(S);
        {'DOWN', CallerMon, process, _, _} ->
            detach_session(self()),
            ok = beamspy_tracer:session_stop(Session);
        {'DOWN', _, process, Pid, _} ->
            _ = beamspy_tracer:span_exit(Session, Pid),
            loop(S);
        {beamspy_limit, _Reason} ->
            %% The NIF stopped recording (max_memory, max_processes): the
            %% handlers would only cost the emitters from now on.
            detach_session(self()),
            loop(S);
        {Ref, stop, From} ->
            detach_session(self()),
            Reply = write(S),
            ok = beamspy_jobs:mark_done(),
            From ! {Ref, Reply}
    end.

write(#{session := Session, opts := O, outputs := Outputs}) ->
    %% A process that died just now may have its 'DOWN' still queued.
    flush_downs(Session),
    ok = beamspy_tracer:session_stop(Session),
    Write = (beamspy_opts:write_options(O))#{
              labels => beamspy_session:labels(beamspy_tracer:session_pids(Session))},
    Results = [{Path, beamspy_tracer:session_write(Session, Format, Path, Write)}
               || {Format, Path} <- Outputs],
    Counts = beamspy_tracer:span_info(Session),
    #{memory_peak := Peak} = beamspy_tracer:session_info(Session),
    Files = [P || {P, ok} <- Results],
    Errors = [{P, E} || {P, {error, E}} <- Results],
    case maps:get(quiet, O, false) of
        true -> ok;
        false -> print(Files, Errors, Counts)
    end,
    {ok, #{files => Files, errors => Errors, spans => Counts, memory_peak => Peak}}.

flush_downs(Session) ->
    receive
        {'DOWN', _, process, Pid, _} when is_pid(Pid) ->
            _ = beamspy_tracer:span_exit(Session, Pid),
            flush_downs(Session)
    after 0 ->
            ok
    end.

print(Files, Errors, C) ->
    _ = [io:format("beamspy: wrote ~ts~n", [F]) || F <- Files],
    _ = [io:format(standard_error, "beamspy: could not write ~ts: ~tp~n", [F, E]) || {F, E} <- Errors],
    io:format("beamspy: telemetry spans: ~w recorded, ~w dropped (max_spans), ~w refused, "
              "~w stops unmatched, ~w lost, ~w in processes that died, ~w open at the end~n",
              [maps:get(K, C) || K <- [started, dropped, refused, unmatched, lost, died, open]]).
