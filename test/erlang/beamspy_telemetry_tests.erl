%%% beamspy_telemetry against the real telemetry library (compiled by run.sh
%%% from its source; this module is skipped where it is absent): nested
%%% spans of several processes with their durations, exceptions, a process
%%% killed inside a span, a stop without its start, the handler under load
%%% (caps, drops counted, never detached), clear errors, and spans inside
%%% the exact call stacks of beamspy:apply/2.
-module(beamspy_telemetry_tests).

-include_lib("eunit/include/eunit.hrl").

-export([outer_work/1, inner_work/1, spanned/0]).

-import(bs_test_lib, [tmp_dir/0]).

-define(OUTER, [bs_tele, outer]).
-define(INNER, [bs_tele, inner]).

telemetry_test_() ->
    {setup, fun setup/0, fun(_) -> ok end,
     [{"without telemetry loaded: {error, telemetry_not_loaded} and a sentence", fun not_loaded/0},
      {"bad prefixes and options are refused before anything is attached", fun bad_input/0},
      {"nested spans of three processes: nesting and durations (1%)", {timeout, 60, fun nested_durations/0}},
      {"exception, killed process, stop without start: counted, in the outputs", {timeout, 60, fun failures/0}},
      {"under load: max_spans holds, drops counted, handler still attached", {timeout, 120, fun load/0}},
      {"the handler never raises, whatever it is given", fun handler_never_raises/0},
      {"apply with telemetry: span frames above the functions they enclose", {timeout, 60, fun combined/0}},
      {"apply with telemetry: a traced child killed inside a span is reported", {timeout, 60, fun combined_killed/0}}]}.

setup() ->
    ok.

%% A fresh VM without telemetry on its code path; then, in this VM,
%% telemetry loaded but not started.
not_loaded() ->
    Ebin = filename:dirname(code:which(beamspy)),
    Erl = os:find_executable("erl"),
    Eval = "io:format(\"~p~n~p~n\", [beamspy_telemetry:start([[a]], #{quiet => true}), "
           "try beamspy:apply(fun() -> ok end, #{telemetry => [[a]], quiet => true}) "
           "catch error:E -> E end]), halt().",
    Out = os:cmd(Erl ++ " -noshell -pa " ++ Ebin ++ " -eval '" ++ Eval ++ "'"),
    ?assertEqual("{error,telemetry_not_loaded}\n{beamspy,telemetry_not_loaded}\n", Out),
    Text = beamspy:format_error(telemetry_not_loaded),
    ?assertNotEqual(nomatch, string:find(Text, "telemetry library is not loaded")),
    ?assertEqual(Text, beamspy_telemetry:format_error(telemetry_not_loaded)),
    ?assertMatch({error, {telemetry_not_started, _}}, beamspy_telemetry:start([?OUTER], #{quiet => true})),
    {ok, _} = application:ensure_all_started(telemetry).

bad_input() ->
    [?assertEqual({error, {bad_prefixes, P}}, beamspy_telemetry:start(P, #{}))
     || P <- [[], [[]], [a], [["a"]], not_a_list, [[a | b]]]],
    ?assertEqual({error, {bad_option, max_spans, 0}}, beamspy_telemetry:start([?OUTER], #{max_spans => 0})),
    ?assertMatch({error, {bad_option, _, _, _}}, beamspy_telemetry:start([?OUTER], #{sleep => 'maybe'})),
    ?assertError({beamspy, {bad_prefixes, [x]}}, beamspy:apply(fun() -> ok end, #{telemetry => [x]})),
    %% a prefix given twice would record its spans twice; one that begins
    %% another names other events ([a, start], [a, b, start])
    ?assertEqual({error, {duplicate_prefix, [a]}}, beamspy_telemetry:start([[a], [b], [a]], #{quiet => true})),
    ?assertError({beamspy, {duplicate_prefix, [x]}},
                 beamspy:apply(fun() -> ok end, #{telemetry => [[x], [x]]})),
    ?assertEqual("telemetry prefix [a] is given twice: give each prefix once",
                 beamspy:format_error({duplicate_prefix, [a]})),
    ?assertEqual(ok, beamspy_telemetry:check_prefixes([[a], [a, b], [b, a]])),
    ?assertEqual([], our_handlers()),
    ?assertEqual({error, {bad_handle, nope}}, beamspy_telemetry:stop(nope)).

%% Outer span (sleep 40 ms, then the inner span: sleep 60 ms) in three
%% processes at once; each measures both spans around its telemetry:span/3
%% calls with the same monotonic clock.
nested_durations() ->
    Dir = tmp_dir(),
    {ok, H} = beamspy_telemetry:start([?OUTER, ?INNER], #{output => Dir, quiet => true}),
    Self = self(),
    Pids = [spawn_link(fun() -> Self ! {self(), measured_spans()} end) || _ <- [1, 2, 3]],
    Measured = [receive {P, M} -> {P, M} end || P <- Pids],
    {ok, #{files := Files, spans := Counts}} = beamspy_telemetry:finish(H),
    ?assertMatch(#{started := 6, closed := 6, unmatched := 0, lost := 0, died := 0, open := 0,
                   dropped := 0, refused := 0}, Counts),
    ?assertEqual([], our_handlers()),
    Exts = lists:sort([filename:extension(F) || F <- Files]),
    ?assertEqual([".folded", ".html", ".json", ".json", ".svg"], Exts),
    Folded = read_folded(Files),
    lists:foreach(
      fun({Pid, {OuterNs, InnerNs}}) ->
              L = pid_to_list(Pid),
              Self1 = maps:get(L ++ ";[bs_tele.outer]", Folded),
              Inner = maps:get(L ++ ";[bs_tele.outer];[bs_tele.inner]", Folded),
              within_1pct(Inner, InnerNs div 1000),
              within_1pct(Self1 + Inner, OuterNs div 1000)
      end, Measured),
    %% Chrome trace: per process, the inner X event inside the outer one.
    Chrome = read(Files, ".trace.json"),
    Xs = [{Tid, Name, num(Ts), num(Dur)}
          || [Tid, Ts, Dur, Name] <- match_all(Chrome, "\"ph\":\"X\",\"pid\":1,\"tid\":([0-9]+),\"ts\":([0-9.]+),"
                                                       "\"dur\":([0-9.]+),\"name\":\"([^\"]+)\"")],
    ?assertEqual(6, length(Xs)),
    lists:foreach(
      fun({Tid, <<"[bs_tele.inner]">>, Ts, Dur}) ->
              [{OTs, ODur}] = [{T, D} || {Tid1, <<"[bs_tele.outer]">>, T, D} <- Xs, Tid1 =:= Tid],
              ?assert(Ts >= OTs andalso Ts + Dur =< OTs + ODur);
         (_) -> ok
      end, Xs),
    ?assertMatch({match, _}, re:run(read(Files, ".speedscope.json"), "\"type\":\"evented\"")).

measured_spans() ->
    T0 = erlang:monotonic_time(nanosecond),
    Inner = telemetry:span(?OUTER, #{}, fun() ->
                                                timer:sleep(40),
                                                I0 = erlang:monotonic_time(nanosecond),
                                                ok = telemetry:span(?INNER, #{}, fun() ->
                                                                                         timer:sleep(60),
                                                                                         {ok, #{}}
                                                                                 end),
                                                {erlang:monotonic_time(nanosecond) - I0, #{}}
                                        end),
    {erlang:monotonic_time(nanosecond) - T0, Inner}.

%% Recorded (µs, from the outputs) within 1% of measured (µs), and never
%% longer than measured (the measurement encloses the span).
within_1pct(Recorded, Measured) ->
    ?assert(Recorded =< Measured + 1),
    ?assert(abs(Recorded - Measured) =< Measured div 100).

failures() ->
    Dir = tmp_dir(),
    {ok, H} = beamspy_telemetry:start([?OUTER], [{output, Dir}, quiet, {formats, [folded, svg, chrome]},
                                                 {metadata, [query, <<"user">>]}]),
    %% An exception inside a span: stopped by the exception event.
    Long = lists:duplicate(1000, $x),
    ?assertError(boom, telemetry:span(?OUTER, #{query => Long, <<"user">> => <<"ann">>, other => 1},
                                      fun() -> timer:sleep(20), error(boom) end)),
    %% A process killed inside a span.
    Self = self(),
    Victim = spawn(fun() ->
                           telemetry:span(?OUTER, #{}, fun() -> Self ! inside, receive never -> {ok, #{}} end end)
                   end),
    receive inside -> ok end,
    Mon = erlang:monitor(process, Victim),
    exit(Victim, kill),
    receive {'DOWN', Mon, process, Victim, _} -> ok end,
    %% A stop without its start.
    telemetry:execute(?OUTER ++ [stop], #{duration => 1}, #{}),
    {ok, #{files := Files, spans := Counts}} = beamspy_telemetry:finish(H),
    ?assertMatch(#{started := 2, closed := 1, died := 1, unmatched := 1, lost := 0, open := 0}, Counts),
    Folded = read_folded(Files),
    Mine = maps:get(pid_to_list(self()) ++ ";[bs_tele.outer]", Folded),
    ?assert(Mine >= 20000),
    ?assert(maps:is_key(pid_to_list(Victim) ++ ";[bs_tele.outer]", Folded)),
    Note = "1 stops unmatched, 0 lost (anchor left), 1 in processes that died",
    ?assertNotEqual(nomatch, string:find(read(Files, ".svg"), Note)),
    Chrome = read(Files, ".trace.json"),
    ?assertNotEqual(nomatch, string:find(Chrome, Note)),
    %% The exception and the asked metadata (cut short) are the span's args.
    [Args] = [A || [A] <- match_all(Chrome, "\"cat\":\"telemetry\",\"args\":(\\{[^}]*\\})"),
                   string:find(A, "boom") =/= nomatch],
    ?assertNotEqual(nomatch, string:find(Args, "exception: kind=error reason=boom")),
    %% <<"user">>=<<"ann">>, with < escaped in JSON
    ?assertNotEqual(nomatch, string:find(Args, "\\u003c\\u003c\\\"user\\\"\\u003e\\u003e=")),
    ?assertNotEqual(nomatch, string:find(Args, "\\\"ann\\\"")),
    ?assertNotEqual(nomatch, string:find(Args, "xxx...")),
    ?assertEqual(nomatch, string:find(Args, "other")),
    ?assert(string:length(Args) < 400).

%% Two processes emit 100,000 empty spans each as fast as they can (about
%% 100k spans/s here); max_spans keeps 10,000.
load() ->
    Dir = tmp_dir(),
    Cap = 16 bsl 20,
    {ok, H} = beamspy_telemetry:start([?OUTER], #{output => Dir, quiet => true, max_spans => 10000,
                                                  max_memory => Cap, formats => [folded]}),
    Self = self(),
    Empty = fun() -> {ok, #{}} end,
    Pids = [spawn_link(fun() ->
                               [ok = telemetry:span(?OUTER, #{}, Empty) || _ <- lists:seq(1, 100000)],
                               Self ! {done, self()}
                       end) || _ <- [1, 2]],
    [receive {done, P} -> ok end || P <- Pids],
    {beamspy_telemetry, Owner, _} = H,
    ?assertMatch([_], [Id || {_, O, _} = Id <- our_handlers(), O =:= Owner]),
    {ok, #{spans := Counts, memory_peak := Peak}} = beamspy_telemetry:finish(H),
    ?assertMatch(#{started := 10000, closed := 10000, dropped := 190000, refused := 0, unmatched := 190000},
                 Counts),
    ?assert(Peak < Cap),
    ?assertEqual([], our_handlers()).

handler_never_raises() ->
    Bad = [{a, b, c, d, e}, {make_ref(), none, x, id, []}, {self(), none, 'x', id, [k]}, nonsense,
           {a, b, c, d}],
    [?assertEqual(ok, beamspy_telemetry:handle_event(E, #{}, #{}, C))
     || C <- Bad, E <- [[a, start], [], [a, stop], [a, exception]]],
    ok.

%% Spans with the stacks.
combined() ->
    Dir = tmp_dir(),
    Out = filename:join(Dir, "combined.folded"),
    ok = beamspy:apply({?MODULE, spanned, []}, #{telemetry => [?OUTER, ?INNER], output => Out,
                                                  quiet => true, sleep => false}),
    {ok, Bin} = file:read_file(Out),
    Lines = [L || L <- binary:split(Bin, <<"\n">>, [global]), L =/= <<>>],
    Inner = [L || L <- Lines, binary:match(L, <<"beamspy_telemetry_tests:inner_work/1">>) =/= nomatch],
    ?assertNotEqual([], Inner),
    Want = "telemetry:span/3;\\[bs_tele\\.outer\\];.*beamspy_telemetry_tests:outer_work/1;"
           ".*telemetry:span/3;\\[bs_tele\\.inner\\];.*beamspy_telemetry_tests:inner_work/1",
    [?assertMatch({match, _}, re:run(L, Want)) || L <- Inner],
    ?assertEqual([], our_handlers()),
    %% The handler's own cost is kept, under the span it started.
    ?assert(lists:any(fun(L) -> re:run(L, "\\[bs_tele\\.outer\\];telemetry:do_execute/4;"
                                         "beamspy_telemetry:handle_event/4") =/= nomatch end, Lines)).

combined_killed() ->
    Out = filename:join(tmp_dir(), "killed.svg"),
    ok = beamspy:apply(fun() ->
                               Self = self(),
                               P = spawn(fun() ->
                                                 telemetry:span(?OUTER, #{}, fun() ->
                                                                                    Self ! inside,
                                                                                    receive never -> {ok, #{}} end
                                                                            end)
                                         end),
                               receive inside -> ok end,
                               M = erlang:monitor(process, P),
                               exit(P, kill),
                               receive {'DOWN', M, process, P, _} -> ok end
                       end, #{telemetry => [?OUTER], output => Out, quiet => true}),
    {ok, Svg} = file:read_file(Out),
    %% Its exit event ends the span (died) unless recording stopped first
    %% (open at the end): either way it is said, never silent.
    Said = [binary:match(Svg, <<"0 stops unmatched, 0 lost (anchor left), 1 in processes that died, 0 open">>),
            binary:match(Svg, <<"0 stops unmatched, 0 lost (anchor left), 0 in processes that died, 1 open">>)],
    ?assertMatch([_], [M || M <- Said, M =/= nomatch]),
    ?assertMatch({match, _}, re:run(Svg, "telemetry spans: 1 recorded")).

spanned() ->
    telemetry:span(?OUTER, #{}, fun() -> {outer_work(3), #{}} end).

outer_work(N) ->
    _ = lists:seq(1, 1000),
    R = telemetry:span(?INNER, #{}, fun() -> {inner_work(N), #{}} end),
    _ = lists:seq(1, 10), % a body call: outer_work/1 stays on the stack
    R.

inner_work(0) -> ok;
inner_work(N) ->
    _ = lists:sum(lists:seq(1, 1000)),
    inner_work(N - 1).

%%% helpers

our_handlers() ->
    lists:usort([Id || #{id := {beamspy_telemetry, _, _} = Id} <- telemetry:list_handlers([])]).

read(Files, Ext) ->
    [F] = [F || F <- Files, lists:suffix(Ext, F)],
    {ok, Bin} = file:read_file(F),
    unicode:characters_to_list(Bin).

read_folded(Files) ->
    maps:from_list([begin
                        [S, N] = string:split(L, " ", trailing),
                        {S, list_to_integer(N)}
                    end || L <- string:split(read(Files, ".folded"), "\n", all), L =/= ""]).

num(B) ->
    case string:to_float(B) of
        {F, <<>>} -> F;
        _ -> float(binary_to_integer(B))
    end.

match_all(Text, Re) ->
    case re:run(Text, Re, [global, {capture, all_but_first, binary}]) of
        {match, Ms} -> Ms;
        nomatch -> []
    end.
