%%% Options are checked, before anything runs, in the dialect that will use
%%% them: include/exclude by the writers' POSIX regular expressions (not
%%% re's PCRE), outputs by the extensions beamspy writes, text by what the
%%% NIF and the file system take (no NUL, bounded length); a file output with
%%% other formats is refused instead of ignoring them.
-module(beamspy_input_tests).

-include_lib("eunit/include/eunit.hrl").

-import(bs_test_lib, [assert_clean/0, tmp_dir/0, rm_rf/1, list_dir/1, profile_ok/2,
                      processes/1]).

input_test_() ->
    {setup, fun() -> {module, bs_wl} = code:ensure_loaded(bs_wl), ok end, fun(_) -> ok end,
     [{"a PCRE-only pattern is refused before the call runs", fun pcre_refused/0},
      {"a POSIX extended pattern is accepted and filters the output", fun posix_pattern_used/0},
      {"an output with an unknown extension is refused; no directory appears", fun unknown_extension/0},
      {"a list of output names is refused, not joined into one name", fun output_list/0},
      {"an existing directory or a name ending in / is an output directory", fun dotted_directories/0},
      {"formats with a file output: refused unless it is the file's one format", fun formats_with_file/0},
      {"NUL in title, subtitle, include, exclude or output is refused", fun nul_refused/0},
      {"text longer than the NIF keeps is refused, not cut", fun long_text_refused/0},
      {"live sessions and captures check options the same way", fun live_and_capture_refuse/0}]}.

%% What apply raises for Opts, checking that the target did not run.
refusal(Opts) ->
    Reason = try beamspy:apply({bs_wl, side_effect, [self()]}, Opts) of
                 V -> error({accepted, Opts, V})
             catch error:{beamspy, R} -> R
             end,
    receive {ran, _} = M -> error({target_ran, M}) after 0 -> ok end,
    Text = beamspy:format_error(Reason),
    ?assert(io_lib:char_list(Text)),
    assert_clean(),
    {Reason, Text}.

pcre_refused() ->
    Dir = tmp_dir(),
    lists:foreach(
      fun({Key, Pattern}) ->
              {Reason, Text} = refusal(#{output => Dir, Key => Pattern}),
              ?assertMatch({bad_pattern, Key, _, _}, Reason),
              ?assertNotEqual(nomatch, string:find(Text, "POSIX extended")),
              ?assertEqual(false, filelib:is_file(Dir))
      end, [{include, "(?i)FIB"}, {exclude, "fib(?=x)"}, {include, "*fib"}, {exclude, "a{2,1}"}]).

posix_pattern_used() ->
    Dir = tmp_dir(),
    try
        Out = filename:join(Dir, "f.folded"),
        F = fun() -> bs_wl:fib(8), lists:sort([3, 1, 2]) end,
        [1, 2, 3] = beamspy:apply(F, #{output => Out, quiet => true,
                                       include => "bs_wl:(fib|nothing)/[0-9]"}),
        {ok, Bin} = file:read_file(Out),
        Lines = [L || L <- binary:split(Bin, <<"\n">>, [global]), L =/= <<>>],
        ?assertNotEqual([], Lines),
        [?assertNotEqual(nomatch, binary:match(L, <<"bs_wl:fib/1">>)) || L <- Lines],
        %% The same pattern is what profile/2 filters with.
        {[1, 2, 3], P} = profile_ok(F, #{exclude => "^bs_wl:fib/1$", sleep => false}),
        [?assertEqual([], [Fr || {_, _, Fr, _, _, _} <- Nodes, Fr =:= <<"bs_wl:fib/1">>])
         || {_, Nodes} <- processes(P)]
    after
        rm_rf(Dir)
    end.

unknown_extension() ->
    Dir = tmp_dir(),
    ok = filelib:ensure_path(Dir),
    try
        lists:foreach(
          fun(Name) ->
                  Out = filename:join(Dir, Name),
                  {Reason, Text} = refusal(#{output => Out}),
                  ?assertMatch({bad_output_extension, _, _}, Reason),
                  ?assertNotEqual(nomatch, string:find(Text, ".svg")),
                  ?assertEqual([], list_dir(Dir))
          end, ["x.png", "x.json", "profile.SVGZ", "a.b.txt"])
    after
        rm_rf(Dir)
    end.

output_list() ->
    Dir = tmp_dir(),
    ok = filelib:ensure_path(Dir),
    try
        Outs = [filename:join(Dir, "a.svg"), filename:join(Dir, "b.speedscope.json")],
        lists:foreach(
          fun(Out) ->
                  {Reason, Text} = refusal(#{output => Out}),
                  ?assertMatch({bad_option, output, _, _}, Reason),
                  ?assertNotEqual(nomatch, string:find(Text, "not a list")),
                  ?assertEqual([], list_dir(Dir))
          end, [Outs, [list_to_binary(O) || O <- Outs]])
    after
        rm_rf(Dir)
    end.

dotted_directories() ->
    Dir = tmp_dir(),
    try
        Existing = filename:join(Dir, "runs.v2"),
        ok = filelib:ensure_path(Existing),
        55 = beamspy:apply({bs_wl, fib, [10]}, #{output => Existing, quiet => true}),
        ?assertMatch([_], list_dir(Existing)),
        Slash = filename:join(Dir, "new.d") ++ "/",
        55 = beamspy:apply({bs_wl, fib, [10]}, #{output => Slash, quiet => true}),
        ?assertMatch([_], list_dir(filename:join(Dir, "new.d"))),
        %% A name that is not an extension at all (a version number).
        Version = filename:join(Dir, "profile-1.2.3 run"),
        55 = beamspy:apply({bs_wl, fib, [10]}, #{output => Version, quiet => true}),
        ?assertMatch([_], list_dir(Version))
    after
        rm_rf(Dir)
    end.

formats_with_file() ->
    Dir = tmp_dir(),
    Out = filename:join(Dir, "f.svg"),
    {Reason, Text} = refusal(#{output => Out, formats => [html, svg]}),
    ?assertMatch({formats_with_file_output, _, svg, [html, svg]}, Reason),
    ?assertNotEqual(nomatch, string:find(Text, "directory")),
    ?assertEqual(false, filelib:is_file(Out)),
    try
        55 = beamspy:apply({bs_wl, fib, [10]}, #{output => Out, formats => [svg], quiet => true}),
        ?assert(filelib:is_regular(Out))
    after
        rm_rf(Dir)
    end.

nul_refused() ->
    Dir = tmp_dir(),
    lists:foreach(
      fun({Key, Value}) ->
              {Reason, _} = refusal(#{output => Dir, Key => Value}),
              ?assertMatch({bad_option, Key, _, _}, Reason),
              ?assertEqual(false, filelib:is_file(Dir))
      end, [{title, <<"a", 0, "b">>}, {subtitle, "x\0y"}, {include, <<"fib", 0>>},
            {exclude, [$a, 0]}, {output, Dir ++ [0] ++ "x.svg"}]).

long_text_refused() ->
    Dir = tmp_dir(),
    {R1, _} = refusal(#{output => Dir, title => binary:copy(<<"t">>, 512)}),
    ?assertMatch({bad_option, title, _, _}, R1),
    {R2, _} = refusal(#{output => Dir, include => lists:duplicate(1024, $a)}),
    ?assertMatch({bad_option, include, _, _}, R2),
    %% At the bounds: accepted.
    Out = filename:join(Dir, "t.svg"),
    try
        55 = beamspy:apply({bs_wl, fib, [10]}, #{output => Out, quiet => true,
                                                 title => binary:copy(<<"t">>, 511),
                                                 include => "fib|" ++ lists:duplicate(1019, $x)}),
        ?assert(filelib:is_regular(Out))
    after
        rm_rf(Dir)
    end.

live_and_capture_refuse() ->
    Dir = tmp_dir(),
    Bad = [#{include => "(?i)x"}, #{output => filename:join(Dir, "x.png")},
           #{output => filename:join(Dir, "x.svg"), formats => [folded]},
           #{title => <<0>>}],
    lists:foreach(
      fun(Opts) ->
              ?assertMatch({error, _}, beamspy:start(self(), Opts)),
              ?assertMatch({error, _}, beamspy:capture({bs_wl, fib, 1}, 1, Opts#{timeout => 100})),
              ?assertEqual(false, filelib:is_file(Dir)),
              assert_clean()
      end, Bad).
