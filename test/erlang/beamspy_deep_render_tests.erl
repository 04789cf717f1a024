%%% beamspy:render/3 of profile terms 200,000 frames deep and 200,000
%%% wide, in every format: profile_import.c reads the term and the writers
%%% draw it on a dirty scheduler's stack (a few hundred KB), with no
%%% recursion per level or per child. A million of each in all eight
%%% formats took 141 s through run.sh at load average 9 on 2 cores (91 s of
%%% rendering, 950 MB peak; 200,000: 36 s, 310 MB): some 100 s more in each
%%% of the three Erlang layers (host, OTP 27, OTP 29) than make test's
%%% budget allows, so 200,000 here; the C layer runs every writer at a
%%% million (test_deep_profiles.c).
-module(beamspy_deep_render_tests).
-include_lib("eunit/include/eunit.hrl").

-define(FORMATS, [folded, svg, html, speedscope, chrome, perf, bspy, callgrind]).

render_deep_and_wide_test_() -> {timeout, 600, fun render_deep_and_wide/0}.

render_deep_and_wide() ->
    N = 200000,
    Root = {0, undefined, <<"<0.1.0>">>, 0, 0, 1},
    Deep = [Root | [{I, I - 1, <<"m:f", (integer_to_binary(I))/binary, "/0">>, 1000, 0, 1}
                    || I <- lists:seq(1, N)]],
    Wide = [Root | [{I, 0, <<"m:f", (integer_to_binary(I))/binary, "/0">>, 1000, 0, 1}
                    || I <- lists:seq(1, N)]],
    lists:foreach(
      fun(Nodes) ->
              P = #{processes => [{<<"<0.1.0>">>, Nodes}], truncated => false, events => 0, dropped => 0,
                    memory_peak => 0, duration_ns => N * 1000},
              [?assertMatch({F, {ok, <<_, _/binary>>}}, {F, beamspy:render(P, F)}) || F <- ?FORMATS]
      end, [Deep, Wide]).
