%%% One table of defaults (beamspy_opts:option_table/0): the code takes its
%%% defaults from it, and every place that writes a default down (the
%%% option table of docs/reference-options.md, the option docs of src/beamspy.erl and
%%% lib/beam_spy.ex, the help of bin/beamspy) is read here and compared
%%% with it; a default written differently anywhere fails. Under a second.
-module(beamspy_defaults_tests).

-include_lib("eunit/include/eunit.hrl").

%% The heading row of the option table for readers, looked for in the
%% README and docs/*.md (it is in docs/reference-options.md).
-define(TABLE_HEAD, "| option | default | meaning |").

%% Where the command-line help states an entry of the table: command,
%% option, entry.
-define(CLI, [{record, "--duration", record_duration_ms},
              {record, "--interval", sample_interval_ms},
              {record, "--timeline", timeline_calls},
              {record, "--max-memory", max_memory},
              {record, "--max-processes", max_processes},
              {run, "--timeline", timeline_calls},
              {record, "--hz", cpu_hz},
              {run, "--hz", cpu_hz},
              {run, "--max-memory", max_memory},
              {run, "--max-processes", max_processes},
              {dump, "--interval", dump_interval_ms},
              {top, "--interval", top_interval_ms},
              {top, "--refresh", top_refresh_ms},
              {top, "--limit", top_limit},
              {record, "--lease", lease_ms},
              {seq, "--lease", lease_ms},
              {record, "--connect-timeout", connect_timeout_ms},
              {seq, "--connect-timeout", connect_timeout_ms},
              {seq, "--duration", record_duration_ms},
              {seq, "--max-events", sequence_max_events},
              {seq, "--max-participants", sequence_max_participants},
              {seq, "--label-chars", sequence_label_chars},
              {convert, "--timeline", timeline_calls}]).

%% Where the command-line tool refuses a value above an entry's largest
%% (its C limit, generated from the table): command, option, entry,
%% smallest value.
-define(CLI_MAX, [{seq, "--max-events", sequence_max_events, 1},
                  {seq, "--max-participants", sequence_max_participants, 1},
                  {seq, "--label-chars", sequence_label_chars, 8}]).

defaults_test_() ->
    [{"the code's defaults are the table's", fun code/0},
     {"the option table of the docs says the table's defaults", fun options_doc/0},
     {"beamspy's option docs say the table's defaults", fun erlang_docs/0},
     {"BeamSpy's option docs say the table's defaults", fun elixir_docs/0},
     {"bin/beamspy help says the table's defaults", fun cli_help/0},
     {"C and Erlang take their limits from the table", fun limits/0}].

%%% ---------------------------------------------------------------------
%%% Tests
%%% ---------------------------------------------------------------------

code() ->
    Table = beamspy_opts:option_table(),
    ?assertEqual(length(Table), length(lists:ukeysort(1, Table))),
    Api = [K || {K, api, _, _} <- Table],
    ?assertEqual(lists:sort([output_given | Api]), lists:sort(maps:keys(beamspy_opts:defaults()))),
    [?assertEqual(maps:get(apply, D), maps:get(K, beamspy_opts:defaults(apply))) || {K, api, D, _} <- Table],
    [?assertEqual(maps:get(live, D, maps:get(apply, D)), maps:get(K, beamspy_opts:defaults(live)))
     || {K, api, D, _} <- Table],
    [?assert(is_list(Doc) andalso Doc =/= [] andalso not lists:member($\n, Doc)) || {_, _, _, Doc} <- Table],
    %% The jobs the tool runs on a node take theirs from it too.
    {ok, S} = beamspy_sampler:start(#{owner => self(), targets => [self()]}),
    {ok, #{interval_ms := SampleInterval}} = beamspy_sampler:stop(S),
    ?assertEqual(beamspy_opts:default(sample_interval_ms), SampleInterval),
    {ok, #{interval_ms := DumpInterval}} = beamspy_dump:snapshot(#{pids => [self()]}),
    ?assertEqual(beamspy_opts:default(dump_interval_ms), DumpInterval),
    {ok, #{timeline := Calls}} = beamspy_opts:options(#{timeline => true}),
    ?assertEqual(beamspy_opts:default(timeline_calls), Calls).

%% The largest values of the table are where both sides stop: the tool's
%% option parsing (C, from the generated defaults.h) and beamspy:sequence/2's
%% checks (Erlang) name the same bounds; a title or pattern of the largest
%% size reaches the NIF and comes back whole from the file it writes, one
%% byte more is refused before it gets there.
limits() ->
    Cli = filename:join(root(), "bin/beamspy"),
    [begin
         Max = beamspy_opts:max_of(Key),
         Out = os:cmd(Cli ++ " " ++ atom_to_list(Cmd) ++ " " ++ Option ++ " " ++ integer_to_list(Max + 1) ++ " 2>&1"),
         Bound = lists:flatten(io_lib:format("(~b to ~b)", [Min, Max])),
         ?assertEqual({Cmd, Option, true}, {Cmd, Option, string:find(Out, Bound) =/= nomatch}),
         Opt = option_of(Option),
         {error, {bad_option, Opt, _, Expected}} = beamspy_sequence:check(fun erlang:date/0, #{Opt => Max + 1}),
         ?assertEqual(lists:flatten(io_lib:format("an integer from ~b to ~b", [Min, Max])), Expected),
         ?assertEqual(ok, beamspy_sequence:check(fun erlang:date/0, #{Opt => Max}))
     end || {Cmd, Option, Key, Min} <- ?CLI_MAX],
    TitleMax = beamspy_opts:max_of(title_bytes),
    PatternMax = beamspy_opts:max_of(pattern_bytes),
    Dir = filename:join(root(), "test/erlang/build/defaults_limits"),
    ok = filelib:ensure_dir(filename:join(Dir, "x")),
    Svg = filename:join(Dir, "title.svg"),
    Long = <<(binary:copy(<<"t">>, TitleMax - 4))/binary, "tail">>,
    %% Matches no frame here: the whole tree is written.
    Pattern = <<(binary:copy(<<"y?">>, (PatternMax - 5) div 2))/binary, "qqqqq">>,
    ?assertEqual(PatternMax, byte_size(Pattern)),
    ?assertEqual(lists:seq(1, 10), beamspy:apply(fun() -> lists:seq(1, 10) end,
                                                 #{output => Svg, title => Long, exclude => Pattern, quiet => true})),
    {ok, Written} = file:read_file(Svg),
    ?assertNotEqual(nomatch, binary:match(Written, Long)),
    ?assertError({beamspy, {bad_option, title, _, _}},
                 beamspy:apply(fun() -> ok end, #{output => Svg, title => <<Long/binary, "x">>})),
    ?assertError({beamspy, {bad_option, exclude, _, _}},
                 beamspy:apply(fun() -> ok end, #{output => Svg, exclude => <<Pattern/binary, "x">>})).

option_of("--max-events") -> max_events;
option_of("--max-participants") -> max_participants;
option_of("--label-chars") -> label_chars.

%% | `key` | default | meaning |: every option of the API has its row, in
%% the one table of the docs that has this heading (wherever it lives).
options_doc() ->
    Table = option_doc_table(),
    Rows = [{list_to_atom(K), string:trim(D)}
            || L <- Table,
               {match, [K, D]} <- [re:run(L, "^\\| `([a-z_]+)` \\|([^|]*)\\|", [{capture, all_but_first, list}, unicode])]],
    ?assert(length(Rows) > 25),
    [?assertEqual({K, text(doc, D)}, {K, proplists:get_value(K, Rows)})
     || {K, api, D, _} <- beamspy_opts:option_table()].

%% The lines of the option table: the docs hold exactly one.
option_doc_table() ->
    Docs = ["README.md" | [filename:join("docs", F) || F <- element(2, file:list_dir(filename:join(root(), "docs"))),
                                                      filename:extension(F) =:= ".md"]],
    Tables = [{Name, lists:takewhile(fun(L) -> L =/= "" end, tl(Rest))}
              || Name <- Docs,
                 [_ | Rest] <- [lists:dropwhile(fun(L) -> L =/= ?TABLE_HEAD end, lines(file(Name)))]],
    ?assertMatch([{_, [_ | _]}], Tables),
    [{_, Table}] = Tables,
    Table.

%% <li>`key' — ... Default X.</li> in the module doc of beamspy.
erlang_docs() ->
    Doc = unwrap([string:trim(L, leading, "% ") || L <- lines(file("src/beamspy.erl")),
                                                   lists:prefix("%%%", L)]),
    Found = [{list_to_atom(K), sentence(D)}
             || {match, [K, D]} <- [re:run(Item, "^`([a-z_]+)' .*? Default:? (.*)$", [{capture, all_but_first, list}, unicode])
                                    || Item <- string:split(Doc, "<li>", all)]],
    check_found(erlang, Found).

%% * `:key` — ... Default X. in the moduledoc of BeamSpy (run/2's options).
elixir_docs() ->
    Doc = unwrap([string:trim(L) || L <- lines(file("lib/beam_spy.ex"))]),
    Found = [{list_to_atom(K), sentence(D)}
             || {match, [K, D]} <- [re:run(Item, "^`:([a-z_]+)` .*? Default:? (.*)$", [{capture, all_but_first, list}, unicode])
                                    || Item <- string:split(Doc, "* ", all)]],
    check_found(elixir, Found).

cli_help() ->
    Cli = filename:join(root(), "bin/beamspy"),
    [begin
         Help = os:cmd(Cli ++ " help " ++ atom_to_list(Cmd)),
         ?assertEqual({Cmd, Option, text(cli, maps:get(apply, defaults_of(Key)), Key)},
                      {Cmd, Option, cli_default(Help, Option)})
     end || {Cmd, Option, Key} <- ?CLI].

%%% ---------------------------------------------------------------------
%%% How each place writes a default
%%% ---------------------------------------------------------------------

%% Every option a doc gives a default for is in the table with that
%% default; and the doc gives some.
check_found(Style, Found) ->
    ?assert(length(Found) >= 5),
    [?assertEqual({K, text(Style, defaults_of(K))}, {K, D}) || {K, D} <- Found].

defaults_of(Key) ->
    case lists:keyfind(Key, 1, beamspy_opts:option_table()) of
        {Key, _, D, _} -> D;
        false -> error({not_in_the_table, Key})
    end.

text(doc, #{apply := A} = D) ->
    Live = case D of
               #{live := L} -> " (`apply`), " ++ value(doc, L) ++ " (live sessions)";
               #{} -> ""
           end,
    Elixir = case D of
                 #{elixir := E} -> " (" ++ value(doc, E) ++ " from `BeamSpy`)";
                 #{} -> ""
             end,
    value(doc, A) ++ Live ++ Elixir;
text(erlang, #{apply := A} = D) ->
    case D of
        #{live := L} -> value(erlang, A) ++ " for `apply', " ++ value(erlang, L) ++ " for a live session";
        #{} -> value(erlang, A)
    end;
text(elixir, #{apply := A} = D) ->
    value(elixir, maps:get(elixir, D, A)).

text(cli, Value, Key) ->
    case lists:suffix("_ms", atom_to_list(Key)) of
        true when Value rem 1000 =:= 0 -> integer_to_list(Value div 1000) ++ "s";
        true -> integer_to_list(Value) ++ "ms";
        false when Key =:= max_memory -> integer_to_list(Value div (1024 * 1024)) ++ "M";
        false -> integer_to_list(Value)
    end.

value(doc, ".") -> "current directory";
value(_, ".") -> "the current directory";
value(_, 268435456) -> "256 MiB";
value(_, N) when is_integer(N) -> integer_to_list(N);
value(doc, A) when is_atom(A) -> "`" ++ atom_to_list(A) ++ "`";
value(erlang, A) when is_atom(A) -> "`" ++ atom_to_list(A) ++ "'";
value(elixir, B) when is_boolean(B) -> "`" ++ atom_to_list(B) ++ "`";
value(elixir, A) when is_atom(A) -> "`:" ++ atom_to_list(A) ++ "`";
value(doc, L) when is_list(L) -> "`" ++ lists:flatten(io_lib:format("~w", [L])) ++ "`";
value(erlang, L) when is_list(L) -> "`" ++ lists:flatten(io_lib:format("~w", [L])) ++ "'";
value(elixir, L) when is_list(L) -> lists:flatten(["`[", lists:join(", ", [":" ++ atom_to_list(A) || A <- L]), "]`"]).

%% The help block of Option (its line and the indented lines under it):
%% "(default X)" or "(default X; ...)"; or a note "(Option: default X".
cli_default(Help, Option) ->
    Lines = lines(Help),
    Block = case lists:dropwhile(fun(L) -> not is_option_line(L, Option) end, Lines) of
                [First | Rest] ->
                    [First | lists:takewhile(fun(L) -> lists:prefix("                 ", L) end, Rest)];
                [] ->
                    []
            end,
    case re:run(unwrap(Block), "\\(default ([^;)]*)", [{capture, all_but_first, list}, unicode]) of
        {match, [D]} ->
            D;
        nomatch ->
            case re:run(Help, "\\(" ++ Option ++ ": default ([^;)]*)", [{capture, all_but_first, list}, unicode]) of
                {match, [D]} -> D;
                nomatch -> {no_default_in_help, Option}
            end
    end.

is_option_line(Line, Option) ->
    re:run(Line, "^  (-[a-z], )?" ++ Option ++ "( |$)", [{capture, none}]) =:= match.

%%% ---------------------------------------------------------------------
%%% Helpers
%%% ---------------------------------------------------------------------

root() ->
    filename:dirname(filename:dirname(code:which(beamspy))).

file(Name) ->
    {ok, Bin} = file:read_file(filename:join(root(), Name)),
    unicode:characters_to_list(Bin).

lines(Text) ->
    string:split(Text, "\n", all).

unwrap(Lines) ->
    lists:flatten(lists:join(" ", [string:trim(L) || L <- Lines])).

%% The text up to the end of its first sentence (". " or ".</li>" or the
%% last "."), without it.
sentence(Text) ->
    [First | _] = string:split(re:replace(Text, "\\.(</li>| |$).*", "", [{return, list}, unicode]), "\n"),
    string:trim(First).
