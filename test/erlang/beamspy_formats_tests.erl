%%% Every output format through the Erlang API: file names and extensions,
%%% the automatic timeline, rendering options and filters, and their
%%% validation. The viewers themselves are exercised by test/browser.
-module(beamspy_formats_tests).
-include_lib("eunit/include/eunit.hrl").

-define(EXT, [{folded, ".folded"}, {svg, ".svg"}, {html, ".html"},
              {speedscope, ".speedscope.json"}, {chrome, ".trace.json"},
              {perf, ".perf.txt"}, {bspy, ".bspy"}, {callgrind, ".callgrind"}, {pprof, ".pb.gz"}]).

every_format_to_a_directory_test() ->
    Dir = bs_test_lib:tmp_dir(),
    Formats = [F || {F, _} <- ?EXT],
    55 = beamspy:apply({bs_wl, fib, [10]}, #{output => Dir, formats => Formats, quiet => true}),
    Files = bs_test_lib:list_dir(Dir),
    [?assertEqual(1, length([F || F <- Files, lists:suffix(Ext, F)]))
     || {_, Ext} <- ?EXT, Ext =/= ".folded" orelse true],
    ?assertEqual(length(?EXT), length(Files)),
    [?assert(filelib:file_size(filename:join(Dir, F)) > 0) || F <- Files],
    bs_test_lib:assert_clean(),
    bs_test_lib:rm_rf(Dir).

extension_picks_the_format_test() ->
    Dir = bs_test_lib:tmp_dir(),
    lists:foreach(
      fun({Format, Ext}) ->
              Path = filename:join(Dir, "one" ++ Ext),
              55 = beamspy:apply({bs_wl, fib, [10]}, #{output => Path, quiet => true, compensate => false}),
              {ok, Bin} = file:read_file(Path),
              ?assert(byte_size(Bin) > 0),
              check_kind(Format, Bin)
      end, ?EXT),
    ?assertEqual(length(?EXT), length(bs_test_lib:list_dir(Dir))),
    bs_test_lib:rm_rf(Dir).

%% Any fib stack. The files hold raw times: fib(10) runs in about a
%% microsecond untraced, so compensated its stacks can round to no line.
check_kind(folded, Bin) -> ?assertMatch({match, _}, re:run(Bin, "^<0\\.[0-9]+\\.0>;bs_wl:fib/1(;bs_wl:fib/1)* [0-9]+$", [multiline]));
check_kind(svg, Bin) -> ?assertMatch({match, _}, re:run(Bin, "<svg[ >]"));
check_kind(html, Bin) -> ?assertMatch({match, _}, re:run(Bin, "<html", [caseless]));
check_kind(speedscope, Bin) -> ?assertMatch({match, _}, re:run(Bin, "speedscope.app/file-format-schema.json"));
check_kind(chrome, Bin) -> ?assertMatch({match, _}, re:run(Bin, "\"traceEvents\""));
check_kind(perf, Bin) -> ?assertMatch({match, _}, re:run(Bin, "cpu-clock:"));
check_kind(bspy, <<_, _/binary>>) -> ok;
%% gzip; fib/1's name in its string table (test/c and test/cli decode it).
check_kind(pprof, Bin) -> ?assertMatch({match, _}, re:run(zlib:gunzip(Bin), "bs_wl:fib/1"));
check_kind(callgrind, Bin) ->
    ?assertMatch(<<"# callgrind format\n", _/binary>>, Bin),
    %% fib(10): 177 calls of fib/1, 176 of them from fib/1 itself.
    ?assertEqual([176], callgrind_calls(Bin, "bs_wl:fib/1", "bs_wl:fib/1")).

%% The call counts of the edge Caller -> Callee, read as callgrind readers
%% do: "fn=(Id) Name" or "cfn=(Id) Name" names Id once, "(Id)" later.
callgrind_calls(Bin, Caller, Callee) ->
    Lines = string:split(binary_to_list(Bin), "\n", all),
    callgrind_calls(Lines, #{}, none, none, Caller, Callee, []).

callgrind_calls([], _, _, _, _, _, Acc) -> lists:reverse(Acc);
callgrind_calls(["fn=" ++ Ref | T], Names, _, Cfn, Caller, Callee, Acc) ->
    {Name, Names1} = callgrind_name(Ref, Names),
    callgrind_calls(T, Names1, Name, Cfn, Caller, Callee, Acc);
callgrind_calls(["cfn=" ++ Ref | T], Names, Fn, _, Caller, Callee, Acc) ->
    {Name, Names1} = callgrind_name(Ref, Names),
    callgrind_calls(T, Names1, Fn, Name, Caller, Callee, Acc);
callgrind_calls(["calls=" ++ Calls | T], Names, Caller, Callee, Caller, Callee, Acc) ->
    [N | _] = string:split(Calls, " "),
    callgrind_calls(T, Names, Caller, Callee, Caller, Callee, [list_to_integer(N) | Acc]);
callgrind_calls([_ | T], Names, Fn, Cfn, Caller, Callee, Acc) ->
    callgrind_calls(T, Names, Fn, Cfn, Caller, Callee, Acc).

callgrind_name(Ref, Names) ->
    case string:split(Ref, ") ") of
        [Id, Name] -> {Name, Names#{Id ++ ")" => Name}};
        [Id] -> {maps:get(Id, Names), Names}
    end.

valgrind_file_name_picks_callgrind_test() ->
    Dir = bs_test_lib:tmp_dir(),
    Path = filename:join(Dir, "callgrind.out.1"),
    55 = beamspy:apply({bs_wl, fib, [10]}, #{output => Path, quiet => true}),
    {ok, Bin} = file:read_file(Path),
    check_kind(callgrind, Bin),
    bs_test_lib:rm_rf(Dir).

timeline_is_kept_only_when_a_format_needs_it_test() ->
    {ok, #{profile := #{timeline := false}}} = beamspy:profile({bs_wl, fib, [5]}, #{}),
    {ok, #{profile := #{timeline := true}}} = beamspy:profile({bs_wl, fib, [5]}, #{timeline => true}),
    {ok, #{profile := #{timeline := true}}} = beamspy:profile({bs_wl, fib, [5]}, #{flamechart => true}),
    {ok, #{profile := #{timeline := false}}} = beamspy:profile({bs_wl, fib, [5]}, #{timeline => false, flamechart => true}).

timeline_cap_is_reported_test() ->
    %% fib(15) makes 1,973 calls: a cap of 100 spans truncates the timeline
    %% but not the aggregated profile.
    {ok, #{profile := P}} = beamspy:profile({bs_wl, fib, [15]}, #{timeline => 100}),
    #{timeline := true, timeline_truncated := true, truncated := false} = P,
    Own = bs_test_lib:own_tree(P),
    ?assertEqual(1973, bs_test_lib:frame_calls(Own, <<"bs_wl:fib/1">>)).

filters_apply_to_the_profile_test() ->
    {ok, #{profile := P1}} = beamspy:profile({bs_wl, nap, [20]}, #{drop_sleep => true}),
    [?assertEqual([], bs_test_lib:nodes_of(bs_test_lib:own_tree(P1), F))
     || F <- [<<"SLEEP">>, <<"WAIT">>, <<"RUNNABLE">>]],
    {ok, #{profile := P2}} = beamspy:profile({bs_wl, spawn_fib, [3, 8]}, #{merge => true}),
    ?assertMatch([{<<"all">>, _}], maps:get(processes, P2)),
    {ok, #{profile := P3}} = beamspy:profile({bs_wl, fib, [8]}, #{exclude => "fib"}),
    ?assertEqual([], [F || {_, Nodes} <- maps:get(processes, P3), {_, _, F, _, _, _} <- Nodes,
                           binary:match(F, <<"fib">>) =/= nomatch]).

rendering_options_are_validated_test() ->
    Bad = [{palette, rainbow}, {width, 5}, {min_width, -1}, {inverted, yes},
           {flamechart, 1}, {title, 42}, {exclude, 7},
           {timeline, -3}, {merge, 'maybe'}, {drop_sleep, 0}],
    [?assertError({beamspy, {bad_option, K, V, _}},
                  beamspy:apply({bs_wl, fib, [3]}, #{K => V, quiet => true})) || {K, V} <- Bad],
    ?assertError({beamspy, {bad_pattern, include, <<"(">>, _}},
                 beamspy:apply({bs_wl, fib, [3]}, #{include => "(", quiet => true})),
    bs_test_lib:assert_clean().

rendering_options_reach_the_svg_test() ->
    Dir = bs_test_lib:tmp_dir(),
    Path = filename:join(Dir, "t.svg"),
    _ = beamspy:apply({bs_wl, fib, [8]}, #{output => Path, quiet => true, title => "Fib <&> test",
                                            palette => beam, inverted => true, width => 800}),
    {ok, Bin} = file:read_file(Path),
    ?assertMatch({match, _}, re:run(Bin, "Fib &lt;&amp;&gt; test")),
    ?assertMatch({match, _}, re:run(Bin, "width=\"800\"")),
    bs_test_lib:rm_rf(Dir).

%% eflambe's option names, as code written for eflambe:apply/2 gives them.
eflambe_option_names_test() ->
    Dir = bs_test_lib:tmp_dir(),
    Out = filename:join(Dir, "flames"),
    55 = beamspy:apply({bs_wl, fib, [10]}, [{output_directory, Out}, {output_format, brendan_gregg},
                                            {return, value}, quiet]),
    [Folded] = bs_test_lib:list_dir(Out),
    ?assert(lists:suffix(".folded", Folded)),
    {ok, Bin} = file:read_file(filename:join(Out, Folded)),
    check_kind(folded, Bin),
    55 = beamspy:apply({bs_wl, fib, [10]}, #{output_directory => Out ++ "/svg.d", output_format => svg,
                                             quiet => true}),
    [Svg] = bs_test_lib:list_dir(Out ++ "/svg.d"),
    ?assert(lists:suffix(".svg", Svg)),
    55 = beamspy:apply({bs_wl, fib, [10]}, #{output_directory => Out ++ "/perf", output_format => perf,
                                             quiet => true}),
    [Perf] = bs_test_lib:list_dir(Out ++ "/perf"),
    ?assert(lists:suffix(".perf.txt", Perf)),
    %% Both names of one thing, an unknown eflambe format, and eflambe's
    %% other return values are refused before anything runs.
    {error, {conflicting_options, output_directory, output}} =
        beamspy:check({bs_wl, fib, [1]}, #{output_directory => Out, output => Out}),
    {error, {conflicting_options, output_format, formats}} =
        beamspy:check({bs_wl, fib, [1]}, #{output_format => svg, formats => [svg]}),
    {error, {bad_option, output_format, plain, _}} =
        beamspy:check({bs_wl, fib, [1]}, #{output_format => plain}),
    {error, {bad_option, return, filename, _} = Why} =
        beamspy:check({bs_wl, fib, [1]}, #{return => filename}),
    ?assertMatch({match, _}, re:run(beamspy:format_error(Why), "profile/2")),
    ?assertMatch({match, _}, re:run(beamspy:format_error({conflicting_options, output_format, formats}),
                                    "eflambe")),
    bs_test_lib:rm_rf(Dir).

%% open => true: the HTML written goes to $BROWSER (here a script that
%% notes its argument); with nothing to open it with, standard error says
%% where the file is.
%% The options a recording was taken with reach the Chrome trace whole:
%% with a long output path, title and subtitle (1,500 characters of
%% options) they once ended mid-word at 511 bytes ("timeline => aut").
long_options_whole_in_the_trace_test() ->
    Dir = bs_test_lib:tmp_dir(),
    Deep = filename:join([Dir | lists:duplicate(6, lists:duplicate(40, $d))]),
    Path = filename:join(Deep, "fib.trace.json"),
    Title = lists:flatten(lists:duplicate(35, "a title word ")),
    Sub = lists:flatten(lists:duplicate(35, "subtitle text ")),
    55 = beamspy:apply({bs_wl, fib, [10]}, #{output => Path, title => Title, subtitle => Sub, quiet => true}),
    {ok, Bin} = file:read_file(Path),
    {match, [Options]} = re:run(Bin, "\"options\":\"(#\\{(?:[^\"\\\\]|\\\\.)*)\"", [{capture, all_but_first, binary}]),
    ?assert(byte_size(Options) > 1000),
    %% Whole: every option (as the file writes it: ">" is \u003e), to the
    %% closing brace. A map of more than 32 keys prints in hash order (OTP
    %% 26 and later): the last option is not the same on every release.
    ?assertMatch({match, _}, re:run(Options, "until_halt =\\\\u003e false[,}]")),
    ?assertMatch({match, _}, re:run(Options, "cpu_hz =\\\\u003e 199[,}]")),
    ?assertMatch({match, _}, re:run(Options, "}$")),
    ?assertNotEqual(nomatch, binary:match(Options, list_to_binary(Path))),
    bs_test_lib:rm_rf(Dir).

open_option_test() ->
    Dir = bs_test_lib:tmp_dir(),
    ok = filelib:ensure_path(Dir),
    Noted = filename:join(Dir, "opened"),
    Browser = filename:join(Dir, "browser.sh"),
    ok = file:write_file(Browser, "#!/bin/sh\necho \"$1\" > \"$(dirname \"$0\")/opened.tmp\" && "
                                  "mv \"$(dirname \"$0\")/opened.tmp\" \"$(dirname \"$0\")/opened\"\n"),
    ok = file:change_mode(Browser, 8#755),
    Html = filename:join(Dir, "fib.html"),
    Old = os:getenv("BROWSER"),
    os:putenv("BROWSER", Browser),
    try
        55 = beamspy:apply({bs_wl, fib, [10]}, #{output => Html, open => true, quiet => true}),
        wait_for_file(Noted, 1500),
        {ok, Got} = file:read_file(Noted),
        ?assertEqual(filename:absname(Html) ++ "\n", binary_to_list(Got))
    after
        case Old of
            false -> os:unsetenv("BROWSER");
            _ -> os:putenv("BROWSER", Old)
        end
    end,
    %% No browser, no display: said on standard error, in a VM of its own
    %% (standard error is not the group leader eunit captures).
    Erl = os:find_executable("erl"),
    Ebin = filename:dirname(code:which(beamspy)),
    Out = os:cmd("env -u BROWSER -u DISPLAY -u WAYLAND_DISPLAY " ++ Erl ++ " -noshell -pa " ++ Ebin
                 ++ " -eval 'beamspy_open:files([\"" ++ Html ++ "\", \"x.folded\"]), "
                 "beamspy_open:files([\"x.folded\"]), halt().' 2>&1"),
    ?assertMatch({match, _}, re:run(Out, "no display here .*: open file://" ++ Html ++ " in a browser")),
    ?assertMatch({match, _}, re:run(Out, "no HTML or SVG among the files written")),
    {error, {bad_option, open, 1, _}} = beamspy:check({bs_wl, fib, [1]}, #{open => 1}),
    bs_test_lib:rm_rf(Dir).

wait_for_file(Path, 0) -> ?assert(filelib:is_regular(Path));
wait_for_file(Path, N) ->
    case filelib:is_regular(Path) of
        true -> ok;
        false -> timer:sleep(20), wait_for_file(Path, N - 1)
    end.

%% session_encode/3 (profiles as data, for jobs on nodes): the bytes
%% session_write/4 writes, in every format and with options; clear errors.
encode_equals_file_test() ->
    S = beamspy_tracer:session_new(#{}),
    Self = self(),
    ok = beamspy_tracer:session_seed(S, Self, [{bs_wl, fib, 1}, {lists, sort, 1}], false, false),
    Other = spawn(fun() -> receive stop -> ok end end),
    ok = beamspy_tracer:session_seed(S, Other, [{bs_wl, fib, 1}, {lists, reverse, 1}], false, false),
    ?assertEqual({error, not_stopped}, beamspy_tracer:session_encode(S, bspy, #{})),
    ok = beamspy_tracer:session_stop(S),
    Other ! stop,
    Dir = bs_test_lib:tmp_dir(),
    ok = file:make_dir(Dir),
    Labels = #{Self => <<"the test">>},
    Cases = [#{labels => Labels, node => <<"n@h">>, start_unix_us => 1700000000000000},
             #{labels => Labels, merge_processes => true, exclude => <<"reverse">>,
               title => <<"t <&> \"q\"">>, names => elixir}],
    [begin
         Path = filename:join(Dir, "p" ++ Ext),
         ok = beamspy_tracer:session_write(S, F, Path, Opts),
         {ok, File} = file:read_file(Path),
         ?assert(byte_size(File) > 0),
         ?assertEqual({F, Opts, {ok, File}}, {F, Opts, beamspy_tracer:session_encode(S, F, Opts)})
     end || {F, Ext} <- ?EXT, Opts <- Cases],
    ?assertEqual({error, unknown_format}, beamspy_tracer:session_encode(S, png, #{})),
    ?assertEqual({error, bad_filter_or_format}, beamspy_tracer:session_encode(S, folded, #{include => <<"(">>})),
    ?assertError(badarg, beamspy_tracer:session_encode(S, folded, not_a_map)),
    ?assertError(badarg, beamspy_tracer:session_encode(S, "folded", #{})),
    ?assertError(badarg, beamspy_tracer:session_encode(make_ref(), folded, #{})),
    bs_test_lib:rm_rf(Dir).

%% A live session started to return its profile as data writes no file,
%% also when a limit stops it, and stop/2 hands the encodings back.
start_encoded_test() ->
    Dir = bs_test_lib:tmp_dir(),
    ok = file:make_dir(Dir),
    {ok, Cwd} = file:get_cwd(),
    ok = file:set_cwd(Dir),
    try
        ?assertMatch({error, {bad_option, encode, [png], _}}, beamspy:start_encoded(self(), #{}, [png])),
        ?assertMatch({error, {bad_option, encode, [], _}}, beamspy:start_encoded(self(), #{}, [])),
        %% Raw times: compensated, fib(10)'s microsecond can round to no
        %% folded line (51 runs of 300 on a loaded machine).
        {ok, S} = beamspy:start_encoded(self(), #{compensate => false}, [folded, bspy]),
        55 = bs_wl:fib(10),
        {ok, #{files := [], encoded := [{folded, {ok, Folded}}, {bspy, {ok, <<16#89, "BSPY", _/binary>>}}]}} =
            beamspy:stop(S, #{}),
        ?assertNotEqual(nomatch, binary:match(Folded, <<"bs_wl:fib/1">>)),
        %% a limit trips: the session stops and writes nothing, stop/2
        %% still gives the profile, marked truncated
        {ok, S2} = beamspy:start_encoded(self(), #{max_events => 50, compensate => false}, [folded]),
        55 = bs_wl:fib(10),
        receive {beamspy, S2, {stopped, max_events, []}} -> ok after 30000 -> error(no_limit) end,
        {ok, #{truncated := max_events, encoded := [{folded, {ok, <<_, _/binary>>}}]}} = beamspy:stop(S2, #{}),
        %% finished for nobody (the agent's tool is gone): not encoded
        {ok, S3} = beamspy:start_encoded(self(), #{}, [bspy]),
        {ok, Owner} = beamspy_session:owner(S3),
        {ok, Reply} = beamspy_session:finish(Owner, #{encode => false}),
        ?assertNot(maps:is_key(encoded, Reply)),
        ?assertEqual([], bs_test_lib:list_dir(Dir))
    after
        ok = file:set_cwd(Cwd)
    end,
    bs_test_lib:assert_clean(),
    bs_test_lib:rm_rf(Dir).

%% return => Formats: the bytes in the result, the same as the files the
%% same profile gives, and nothing written unless asked.
return_formats_test() ->
    Dir = bs_test_lib:tmp_dir(),
    Formats = [folded, svg, html, callgrind, bspy, speedscope],
    {ok, #{result := {return, 55}, files := Files} = R} =
        beamspy:profile({bs_wl, fib, [10]}, #{return => Formats, output => Dir, formats => Formats}),
    ?assertEqual(length(Formats), length(Files)),
    [begin
         [File] = [F || F <- Files, lists:suffix(Ext, F)],
         {ok, OnDisk} = file:read_file(File),
         ?assertEqual({Format, OnDisk}, {Format, maps:get(Format, R)})
     end || {Format, Ext} <- ?EXT, lists:member(Format, Formats)],
    {ok, #{svg := Svg, files := []}} = beamspy:profile({bs_wl, fib, [8]}, #{return => [svg]}),
    ?assertMatch({match, _}, re:run(Svg, "bs_wl:fib/1")),
    {error, {bad_option, return, [png], _}} = beamspy:profile({bs_wl, fib, [1]}, #{return => [png]}),
    {error, {bad_option, return, [], _}} = beamspy:profile({bs_wl, fib, [1]}, #{return => []}),
    ?assertError({beamspy, {bad_option, return, [svg], _}},
                 beamspy:apply({bs_wl, fib, [1]}, #{return => [svg]})),
    bs_test_lib:assert_clean(),
    bs_test_lib:rm_rf(Dir).

%% render/3: a profile in hand, drawn again; the folded bytes are those the
%% recording itself gave; malformed terms are refused with the place.
render_profile_in_hand_test() ->
    {ok, #{profile := P, folded := Folded}} = beamspy:profile({bs_wl, fib, [12]}, #{return => [folded]}),
    ?assertEqual({ok, Folded}, beamspy:render(P, folded)),
    {ok, Svg} = beamspy:render(P, svg, #{title => "fib <12>", palette => beam}),
    ?assertMatch({match, _}, re:run(Svg, "fib &lt;12&gt;")),
    {ok, Cg} = beamspy:render(P, callgrind),
    ?assertEqual([464], callgrind_calls(Cg, "bs_wl:fib/1", "bs_wl:fib/1")),
    %% Filters apply as on recording.
    {ok, NoFib} = beamspy:render(P, folded, #{exclude => "fib"}),
    ?assertEqual(nomatch, binary:match(NoFib, <<"fib">>)),
    Bad = [#{}, #{processes => x}, #{processes => [x]}, #{processes => [{<<"p">>, []}]},
           #{processes => [{<<"p">>, [{1, undefined, <<"p">>, 0, 0, 0}]}]},
           #{processes => [{<<"p">>, [{0, undefined, <<"p">>, 0, 0, 0}, {1, 1, <<"f">>, 0, 0, 0}]}]},
           #{processes => [{<<"p">>, [{0, undefined, <<"p">>, 0, 0, 0}, {1, 0, <<"f">>, -1, 0, 0}]}]},
           #{processes => [{<<"p">>, [{0, undefined, <<"p">>, 0, 0, 0}, {1, 0, <<"f", 0>>, 1, 0, 0}]}]},
           #{processes => [{<<"p">>, [{0, undefined, <<"p">>, 0, 0, 0}, {1, 0, <<"f">>, 1, 0}]}]},
           #{processes => [{<<"p">>, [{0, undefined, <<"p">>, 0, 0, 0} | improper]}]}],
    [?assertMatch({error, {bad_profile, _}}, beamspy:render(B, folded)) || B <- Bad],
    {error, {bad_profile, Why} = R} = beamspy:render(hd(tl(tl(tl(tl(tl(Bad)))))), folded),
    ?assertEqual(<<"process 1, node 1: its parent must be an earlier node">>, Why),
    ?assertMatch({match, _}, re:run(beamspy:format_error(R), "not a profile beamspy can render")),
    {error, {bad_option, format, png, _}} = beamspy:render(P, png).

%% collapse_recursion: fib's tower of fib/1 frames is one frame with every
%% call and all the time (raw times: fib(12) runs in a few microseconds
%% untraced, compensated the collapsed frame could round to no line).
collapse_recursion_test() ->
    {ok, #{profile := Plain, folded := F0}} =
        beamspy:profile({bs_wl, fib, [12]}, #{return => [folded], compensate => false}),
    {ok, #{profile := P, folded := F}} =
        beamspy:profile({bs_wl, fib, [12]}, #{return => [folded], collapse_recursion => true, compensate => false}),
    ?assertMatch({match, _}, re:run(F0, "bs_wl:fib/1;bs_wl:fib/1")),
    ?assertEqual(nomatch, re:run(F, "bs_wl:fib/1;bs_wl:fib/1")),
    Own = bs_test_lib:own_tree(P),
    ?assertEqual([465], [C || {_, _, <<"bs_wl:fib/1">>, _, _, C} <- Own]),
    Self = fun(Tree) -> lists:sum([S || {_, _, _, S, _, _} <- Tree]) end,
    ?assert(Self(Own) > 0),
    %% The same profile collapsed at render time: the same stacks.
    {ok, Again} = beamspy:render(Plain, folded, #{collapse_recursion => true}),
    ?assertEqual(nomatch, re:run(Again, "bs_wl:fib/1;bs_wl:fib/1")),
    ?assertMatch({match, _}, re:run(Again, "bs_wl:fib/1 [0-9]+\n")),
    {error, {bad_option, collapse_recursion, 1, _}} = beamspy:check({bs_wl, fib, [1]}, #{collapse_recursion => 1}).

%% The Erlang side's lists of formats and extensions are the C table's
%% (c_src/writers/format_registry.c), read through the NIF: a format added
%% there and not here (or the other way round) fails this test.
format_lists_are_the_c_table_test() ->
    #{profile := Rows, sequence := SeqRows} = beamspy_tracer:formats(),
    ?assertEqual([N || {N, _, _} <- Rows], beamspy_opts:formats()),
    ?assertEqual(lists:sort([{E, N} || {N, Exts, _} <- Rows, E <- Exts]),
                 lists:sort(beamspy_opts:extensions())),
    ?assertEqual(lists:sort([N || {N, _, true} <- Rows]), lists:sort(beamspy_opts:timeline_formats())),
    ?assertEqual([N || {N, _, _} <- SeqRows], beamspy_sequence:formats()),
    ?assertEqual(lists:sort([{E, N} || {N, Exts, _} <- SeqRows, E <- Exts]),
                 lists:sort(beamspy_sequence:extensions())),
    %% An extension that ends another comes after it: the first match of a
    %% file name is the longest, as in C.
    Exts = [E || {E, _} <- beamspy_opts:extensions()],
    ?assertEqual([], [{Short, Long} || {I, Short} <- lists:enumerate(Exts), {J, Long} <- lists:enumerate(Exts),
                                       I < J, lists:suffix(Short, Long)]).
