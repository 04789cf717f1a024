%%% @doc `beamspy:sequence/2': a call run with a seq_trace token, and the
%%% messages of its flow, on this node and on the connected nodes it
%%% reaches, drawn as a sequence diagram.
%%%
%%% ```
%%%  caller (this process)          every node in `nodes'
%%%  ───────────────────────        ─────────────────────────────────────
%%%  load beamspy_seq_collector where absent ─► collector = system tracer (beamspy_seq_collector)
%%%  set token (label, send,          │ keeps the events of this label,
%%%  receive, strict timestamps)      │ monitors the caller
%%%  Target()  ── messages carry the token from process to process, node
%%%               to node; each send and receive is an event on its node
%%%  reset token (after)
%%%  wait until quiet ─ stop collectors ─► events ─► NIF: merge by the
%%%  unload what was loaded                token's serials, write outputs
%%% '''
%%%
%%% Private to beamspy: use {@link beamspy:sequence/2}.
-module(beamspy_sequence).

-export([run/2, check/2, extensions/0, formats/0]).

%% The label of the sequence running in this process (process dictionary).
-define(RUNNING_KEY, beamspy_sequence_running).

-define(EXTENSIONS, [{".trace.json", chrome}, {".seq.json", json}, {".seq.svg", svg},
                     {".mmd", mermaid}, {".json", json}, {".svg", svg}]).
-define(FORMATS, [mermaid, svg, chrome, json]).
-define(RPC_TIMEOUT, 10000).

%% @doc The file extensions of the sequence outputs, each with its format.
-spec extensions() -> [{string(), atom()}].
extensions() -> ?EXTENSIONS.

%% @doc The sequence output formats.
-spec formats() -> [atom()].
formats() -> ?FORMATS.

defaults() ->
    #{output => ".", formats => [mermaid], quiet => false, nodes => connected,
      max_events => beamspy_opts:default(sequence_max_events),
      label_chars => beamspy_opts:default(sequence_label_chars),
      max_participants => beamspy_opts:default(sequence_max_participants), keep_noise => false,
      names => beamspy_opts:default(names),
      settle => 100, timeout => 5000}.

%% @doc Checks a target and options as {@link run/2} does.
-spec check(beamspy:target(), map() | list()) -> ok | {error, term()}.
check(Target, Opts) ->
    case validate(Target, Opts) of
        {ok, _, _, _} -> ok;
        {error, _} = E -> E
    end.

%% @doc Runs Target under a seq_trace token; see {@link beamspy:sequence/2}.
%% Returns the call's outcome, the files and the summary, or an error
%% before anything ran.
-spec run(beamspy:target(), map() | list()) ->
          {ok, beamspy:outcome(), map()} | {error, term()}.
run(Target, Opts0) ->
    case validate(Target, Opts0) of
        {ok, Fun, Args, Opts} ->
            case beamspy_opts:outputs(Opts, label(Fun), ?EXTENSIONS) of
                {ok, Outputs} -> capture(Fun, Args, Opts, Outputs);
                {error, _} = E -> E
            end;
        {error, _} = E -> E
    end.

%%% ---------------------------------------------------------------------
%%% Validation
%%% ---------------------------------------------------------------------

validate(Target, Opts0) ->
    case beamspy_opts:target(Target) of
        {ok, Fun, Args} ->
            case options(Opts0) of
                {ok, Opts} -> {ok, Fun, Args, Opts};
                {error, _} = E -> E
            end;
        {error, _} = E -> E
    end.

options(List) when is_list(List) ->
    try maps:from_list(lists:reverse([pair(E) || E <- List])) of
        Map -> options(Map)
    catch throw:Error -> Error
    end;
options(Map) when is_map(Map) ->
    try lists:foldl(fun check_opt/2, defaults(), maps:to_list(Map)) of
        Opts -> combined(Opts, Map)
    catch throw:Error -> Error
    end;
options(Other) ->
    {error, {bad_options, Other}}.

pair({K, V}) -> {K, V};
pair(K) when is_atom(K) -> {K, true};
pair(Other) -> throw({error, {bad_options, Other}}).

%% output and formats: beamspy_opts's checks, with this module's extensions.
check_opt({output, V}, Acc) -> Acc#{output => beamspy_opts:output_option(V, ?EXTENSIONS)};
check_opt({formats, V}, Acc) -> Acc#{formats => beamspy_opts:formats_option(V, ?FORMATS)};
check_opt({K, V}, Acc) when (K =:= quiet orelse K =:= keep_noise), is_boolean(V) -> Acc#{K => V};
check_opt({names, V}, Acc) when V =:= erlang; V =:= elixir -> Acc#{names => V};
check_opt({names, V}, _) -> bad(names, V, "erlang or elixir");
check_opt({nodes, V}, Acc) when V =:= connected; V =:= local -> Acc#{nodes => V};
check_opt({nodes, V}, Acc) when is_list(V) ->
    case lists:all(fun is_atom/1, V) of
        true -> Acc#{nodes => V};
        false -> bad(nodes, V, "connected, local or a list of node names")
    end;
check_opt({max_events, V}, Acc) -> Acc#{max_events => in_range(max_events, V, 1, sequence_max_events)};
check_opt({label_chars, V}, Acc) -> Acc#{label_chars => in_range(label_chars, V, 8, sequence_label_chars)};
check_opt({max_participants, V}, Acc) ->
    Acc#{max_participants => in_range(max_participants, V, 1, sequence_max_participants)};
check_opt({settle, V}, Acc) when is_integer(V), V >= 0, V =< 60000 -> Acc#{settle => V};
check_opt({timeout, V}, Acc) when is_integer(V), V > 0, V =< 600000 -> Acc#{timeout => V};
check_opt({title, V}, Acc) ->
    Max = beamspy_opts:max_of(title_bytes),
    case beamspy_opts:text_option(V) of
        {ok, T} when byte_size(T) =< Max -> Acc#{title => T};
        _ -> bad(title, V, "a string of at most " ++ integer_to_list(Max) ++ " bytes without NUL")
    end;
check_opt({K, V}, Acc) when K =:= include; K =:= exclude ->
    Max = beamspy_opts:max_of(pattern_bytes),
    case beamspy_opts:text_option(V) of
        {ok, T} when byte_size(T) =< Max ->
            case beamspy_tracer:check_pattern(T) of
                ok -> Acc#{K => T};
                {error, Why} -> throw({error, {bad_pattern, K, T, Why}})
            end;
        _ -> bad(K, V, "a POSIX extended regular expression (a string of at most " ++ integer_to_list(Max)
                 ++ " bytes without NUL)")
    end;
check_opt({K, V}, _) when K =:= quiet; K =:= keep_noise -> bad(K, V, "true or false");
check_opt({K, V}, _) when K =:= settle -> bad(K, V, "milliseconds from 0 to 60000");
check_opt({K, V}, _) when K =:= timeout -> bad(K, V, "milliseconds from 1 to 600000");
check_opt({nodes, V}, _) -> bad(nodes, V, "connected, local or a list of node names");
check_opt({K, V}, _) -> throw({error, {unknown_option, K, V}}).

combined(#{output := Out, formats := Formats} = Opts, Given) ->
    case beamspy_opts:file_format(Out, ?EXTENSIONS) of
        {ok, F} when Formats =/= [F] ->
            case maps:is_key(formats, Given) of
                true -> {error, {formats_with_file_output, Out, F, Formats}};
                false -> {ok, Opts#{formats => [F]}}
            end;
        _ -> {ok, Opts}
    end.

bad(K, V, Expected) -> throw({error, {bad_option, K, V, Expected}}).

%% V if it is an integer from Min to the table's largest value of Entry
%% (beamspy_opts:max_of/1, which the C side's limits are generated from).
in_range(K, V, Min, Entry) ->
    Max = beamspy_opts:max_of(Entry),
    case is_integer(V) andalso V >= Min andalso V =< Max of
        true -> V;
        false -> bad(K, V, lists:flatten(io_lib:format("an integer from ~b to ~b", [Min, Max])))
    end.


label(Fun) ->
    {module, M} = erlang:fun_info(Fun, module),
    case erlang:fun_info(Fun, type) of
        {type, external} ->
            {name, F} = erlang:fun_info(Fun, name),
            atom_to_list(M) ++ "_" ++ atom_to_list(F);
        {type, local} ->
            atom_to_list(M)
    end.

%%% ---------------------------------------------------------------------
%%% Capture
%%% ---------------------------------------------------------------------

capture(Fun, Args, Opts, Outputs) ->
    case current_token() of
        [] ->
            Label = {beamspy_seq_collector, node(), erlang:unique_integer([positive])},
            Nodes = target_nodes(maps:get(nodes, Opts)),
            case start_collectors(Nodes, Label, Opts, []) of
                {ok, Started} ->
                    Outcome = call_with_token(Fun, Args, Label),
                    settle(Started, Opts),
                    {Flow, Errors} = stop_collectors(Started),
                    %% A token taken on from a late message meanwhile.
                    _ = current_token(),
                    write(Outcome, Flow, Errors, Outputs, Opts);
                {error, _} = E -> E
            end;
        Token ->
            {error, {already_in_sequence, Token}}
    end.

target_nodes(local) -> [node()];
target_nodes(connected) -> [node() | nodes()];
target_nodes(List) -> [node() | [N || N <- lists:usort(List), N =/= node()]].

%% Started: [{Node, Collector, Loaded}]; on any refusal everything started
%% so far is stopped and unloaded, and nothing has run.
start_collectors([], _Label, _Opts, Acc) ->
    {ok, lists:reverse(Acc)};
start_collectors([Node | Rest], Label, Opts, Acc) ->
    CollectorOpts = #{max_events => maps:get(max_events, Opts)},
    Result = case Node =:= node() of
                 true -> {beamspy_seq_collector:start(Label, self(), CollectorOpts), same};
                 false -> remote_start(Node, Label, CollectorOpts)
             end,
    case Result of
        {{ok, Pid}, Loaded} ->
            start_collectors(Rest, Label, Opts, [{Node, Pid, Loaded} | Acc]);
        {{error, _} = E, Loaded} ->
            unload(Node, Loaded),
            _ = stop_collectors(lists:reverse(Acc)),
            E
    end.

remote_start(Node, Label, CollectorOpts) ->
    case deliver(Node) of
        {ok, Loaded} ->
            Unload = Loaded =/= same,
            R = try erpc:call(Node, beamspy_seq_collector, start, [Label, self(), CollectorOpts#{unload => Unload}],
                              ?RPC_TIMEOUT)
                catch Class:Why -> {error, {node_failed, Node, {Class, Why}}}
                end,
            {R, Loaded};
        {error, _} = E ->
            {E, same}
    end.

%% beamspy_seq_collector on Node: `same' (this very version is loaded), or loaded
%% here (`loaded', or `replaced' when another version was loaded before).
deliver(Node) ->
    {beamspy_seq_collector, Bin, File} = code:get_object_code(beamspy_seq_collector),
    Md5 = beamspy_seq_collector:module_info(md5),
    try erpc:call(Node, erlang, function_exported, [beamspy_seq_collector, module_info, 1], ?RPC_TIMEOUT) of
        true ->
            case erpc:call(Node, beamspy_seq_collector, module_info, [md5], ?RPC_TIMEOUT) of
                Md5 -> {ok, same};
                _ -> load(Node, Bin, File, replaced)
            end;
        false ->
            load(Node, Bin, File, loaded)
    catch Class:Why ->
        {error, {node_failed, Node, {Class, Why}}}
    end.

load(Node, Bin, File, How) ->
    case erpc:call(Node, code, load_binary, [beamspy_seq_collector, File, Bin], ?RPC_TIMEOUT) of
        {module, beamspy_seq_collector} -> {ok, How};
        {error, Why} -> {error, {cannot_load, Node, Why}}
    end.

unload(_Node, same) ->
    ok;
unload(Node, How) ->
    try
        _ = erpc:call(Node, code, delete, [beamspy_seq_collector], ?RPC_TIMEOUT),
        _ = erpc:call(Node, code, purge, [beamspy_seq_collector], ?RPC_TIMEOUT),
        %% Another version was there before: it comes back from its path.
        _ = [erpc:call(Node, code, ensure_loaded, [beamspy_seq_collector], ?RPC_TIMEOUT) || How =:= replaced],
        ok
    catch _:_ -> ok
    end.

%% The call runs in the caller's own process; its token is reset whatever
%% happens, and the call's result or exception is kept as an outcome.
%% The caller's token, [] when it has none or holds only a leftover of an
%% earlier sequence: a process that got a message from one of its processes
%% after it ended (a late reply, a cast) took its token on. Such a leftover
%% is dropped; a token of a sequence still running in this process (a
%% sequence inside another's target), or anyone else's, is kept. The label
%% is asked for by name: the token itself is documented as opaque.
current_token() ->
    Running = get(?RUNNING_KEY),
    case seq_trace:get_token(label) of
        {label, {beamspy_seq_collector, _, _} = Label} when Label =/= Running ->
            _ = seq_trace:set_token([]),
            [];
        _ ->
            seq_trace:get_token()
    end.

call_with_token(Fun, Args, Label) ->
    put(?RUNNING_KEY, Label),
    try
        _ = seq_trace:set_token(label, Label),
        _ = seq_trace:set_token(strict_monotonic_timestamp, true),
        _ = seq_trace:set_token(send, true),
        _ = seq_trace:set_token('receive', true),
        try {return, erlang:apply(Fun, Args)}
        catch Class:Reason:Stack -> {raise, Class, Reason, Stack}
        end
    after
        _ = seq_trace:set_token([]),
        erase(?RUNNING_KEY)
    end.

%% Messages may still be on their way (a cast, a reply to someone else):
%% wait until the collectors got no event during a whole `settle' period,
%% at most `timeout' ms. Counts are compared, not the nodes' clocks.
settle(Started, Opts) ->
    Settle = maps:get(settle, Opts),
    Deadline = erlang:monotonic_time(millisecond) + maps:get(timeout, Opts),
    settle_loop(Started, Settle, Deadline, total(Started)).

settle_loop(_Started, 0, _Deadline, _Before) ->
    ok;
settle_loop(Started, Settle, Deadline, Before) ->
    receive after Settle -> ok end,
    case total(Started) of
        Before -> ok;
        After ->
            case erlang:monotonic_time(millisecond) >= Deadline of
                true -> ok;
                false -> settle_loop(Started, Settle, Deadline, After)
            end
    end.

total(Started) ->
    lists:sum([case beamspy_seq_collector:activity(Pid, ?RPC_TIMEOUT) of
                   {error, _} -> 0;
                   {N, _} -> N
               end || {_, Pid, _} <- Started]).

stop_collectors(Started) ->
    lists:foldl(
      fun({Node, Pid, Loaded}, {#{events := Es, names := Ns, dropped := D} = Acc, Errors}) ->
              R = beamspy_seq_collector:stop(Pid, ?RPC_TIMEOUT),
              unload(Node, Loaded),
              case R of
                  {ok, #{events := E, names := N, dropped := D1}} ->
                      {Acc#{events := E ++ Es, names := N ++ Ns, dropped := D + D1}, Errors};
                  {error, Why} ->
                      {Acc, [Why | Errors]}
              end
      end, {#{events => [], names => [], dropped => 0}, []}, Started).

write(Outcome, Flow, Errors, Outputs, Opts) ->
    NifOpts = maps:with([include, exclude, title, label_chars, max_participants, max_events, names], Opts),
    case beamspy_tracer:seq_write(Flow, Outputs, NifOpts#{noise => maps:get(keep_noise, Opts)}) of
        {ok, Results, Summary} ->
            Files = [unicode:characters_to_list(P) || {ok, P, _, _} <- Results],
            Failed = [{unicode:characters_to_list(P), Why} || {error, P, Why} <- Results],
            Cut = [{Fmt, unicode:characters_to_list(P), Left}
                   || {{Fmt, _}, {ok, P, _, Left}} <- lists:zip(Outputs, Results), Left > 0],
            {ok, Outcome, #{files => Files, errors => Failed, left_out => Cut,
                            collector_errors => Errors, summary => Summary}};
        {error, bad_pattern} ->
            {ok, Outcome, #{files => [], errors => [{"(patterns)", bad_pattern}], left_out => [],
                            collector_errors => Errors, summary => #{}}}
    end.
