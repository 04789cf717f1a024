%%% Overhead compensation (option `compensate', issue 14) on real traces:
%%% the calibration (its own process, patterns removed, kept per VM), the
%%% bookkeeping of a compensated profile, raw times with `compensate =>
%%% false', the two-function case moving toward its untraced ratio, and
%%% every output saying what its times are.
-module(beamspy_compensation_tests).

-include_lib("eunit/include/eunit.hrl").

-import(bs_test_lib, [profile_ok/2, own_tree/1, assert_clean/0]).

-export([calls/1, bif/1, two/1, small/1]).

compensation_test_() ->
    {setup, fun setup/0, fun(_) -> ok end,
     [{"calibration: positive costs, its own process, no pattern left", {timeout, 60, fun calibration/0}},
      {"measured costs are kept for a minute, then measured again", {timeout, 60, fun kept_for_a_minute/0}},
      {"compensated profile: costs, events, subtracted, self times below raw", {timeout, 120, fun applied/0}},
      {"compensate => false: raw times, nothing subtracted", {timeout, 60, fun raw/0}},
      {"two functions: the calls lose their events' cost, no frame below zero", {timeout, 300, fun two_functions/0}},
      {"every output says what its times are", {timeout, 120, fun outputs/0}},
      {"a bad compensate value is refused", fun bad_option/0}]}.

setup() ->
    {module, _} = code:ensure_loaded(?MODULE),
    {ok, _} = beamspy_calibrate:costs(false),
    ok.

%%% ---------------------------------------------------------------------
%%% Workloads
%%% ---------------------------------------------------------------------

%% 20,000 calls of a ~1 µs function (small/1 calls one BIF).
calls(N) -> {calls, many(N, 0)}.

many(0, Acc) -> Acc;
many(N, Acc) -> many(N - 1, Acc + small(N)).

small(N) -> byte_size(term_to_binary({N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N})).

%% One BIF call of a few tens of ms.
bif(Bin) -> {bif, erlang:md5(Bin)}.

two(Bin) -> [calls(20000), bif(Bin)].

%%% ---------------------------------------------------------------------

calibration() ->
    Self = self(),
    {Time, {ok, #{call := Call, return := Return, sched := Sched, gc := 0}}} =
        timer:tc(beamspy_calibrate, measure, [false]),
    ?debugFmt("calibrated in ~w ms: call ~w ns, return ~w ns, reschedule ~w ns",
              [Time div 1000, Call, Return, Sched]),
    ?assert(Call > 0),
    ?assert(Call < 100000),
    ?assert(Return >= 0),
    %% Measured in a process of its own: this one was never traced, and the
    %% loops' patterns are gone.
    ?assertEqual({flags, []}, erlang:trace_info(Self, flags)),
    [?assertEqual({traced, false}, erlang:trace_info({beamspy_calibrate, F, A}, traced))
     || {F, A} <- [{body, 2}, {leaf, 1}]],
    %% Kept: asking again is immediate and gives the same costs.
    {ok, Kept} = beamspy_calibrate:costs(false),
    {ok, Kept} = beamspy_calibrate:costs(false),
    assert_clean().

%% Costs kept from a measurement are used while younger than a minute; an
%% older one (taken, say, during a burst of load) is measured again rather
%% than used for the life of the node. Keeping costs again does not put a
%% new persistent term (that would make every process scan its heap).
%% (The kept costs are set by hand, to costs no machine measures.)
kept_for_a_minute() ->
    Fake = #{call => 1, tail_call => 1, return => 1, sched => 1, gc => 0},
    Now = erlang:monotonic_time(millisecond),
    try
        ok = beamspy_calibrate:keep(false, Fake, Now - 1000),
        Term = persistent_term:get({beamspy_calibrate, costs, false}),
        {ok, Fake, Age} = beamspy_calibrate:kept(false),
        ?assert(Age >= 1000),
        ?assertEqual({ok, Fake}, beamspy_calibrate:costs(false)),
        ok = beamspy_calibrate:keep(false, Fake, Now - 61000),
        {ok, Fresh} = beamspy_calibrate:costs(false),
        ?assertNotEqual(Fake, Fresh),
        {ok, Fresh, Young} = beamspy_calibrate:kept(false),
        ?assert(Young < 60000),
        ?assert(Term =:= persistent_term:get({beamspy_calibrate, costs, false})),
        ok = beamspy_calibrate:forget(),
        ?assertEqual(none, beamspy_calibrate:kept(false))
    after
        beamspy_calibrate:forget()
    end,
    {ok, _} = beamspy_calibrate:costs(false),
    assert_clean().

applied() ->
    {{calls, _}, P} = profile_ok({?MODULE, calls, [20000]}, #{}),
    #{compensation := #{state := applied, call := Call, return := Return, events := Events,
                        subtracted_ns := Subtracted, text := Text}, events := Recorded} = P,
    {ok, #{call := Call, return := Return}} = beamspy_calibrate:costs(false),
    ?assert(Events >= 40000),
    ?assert(Events =< Recorded),
    ?assert(Subtracted > 0),
    ?assertMatch({match, _}, re:run(Text, "^traced times compensated for tracer overhead: \\d+ ns/call")),
    %% Nothing is negative and the times left plus what was subtracted fit in
    %% the recording.
    Nodes = own_tree(P),
    [?assert(S >= 0 andalso T >= S) || {_, _, _, S, T, _} <- Nodes],
    [{0, undefined, _, _, RootTotal, _} | _] = Nodes,
    ?assert(RootTotal + Subtracted =< maps:get(duration_ns, P)),
    assert_clean().

raw() ->
    {{calls, _}, P} = profile_ok({?MODULE, calls, [2000]}, #{compensate => false}),
    ?assertMatch(#{compensation := #{state := raw, subtracted_ns := 0, events := 0,
                                     text := <<"raw traced times: tracer overhead not subtracted">>}}, P),
    assert_clean().

%% Untraced, the 20,000 calls take about as long as the BIF; traced, the
%% tracer's cost per event inflates the calls. Asserted here is what holds
%% however loaded the machine: no frame negative, every call's events
%% counted, a part of their calibrated cost subtracted (an interval shorter
%% than the cost loses all of it, no more), and the BIF's own time kept.
%% Whether the ratio comes nearer the untraced one is printed, not
%% asserted: on a machine shared with other work, two runs' ratios differ
%% by more than the correction (the direction is asserted on a modelled
%% trace in test/c/test_compensation.c; bench/fidelity measures it). The
%% numbers are printed before the checks, so a failure shows them.
two_functions() ->
    Bin = binary:copy(<<"0123456789abcdef">>, 100000),
    Md5Untraced = fun() -> [element(1, timer:tc(erlang, md5, [Bin])) * 1000 || _ <- lists:seq(1, 5)] end,
    Before = Md5Untraced(),
    Untraced = median([element(1, timer:tc(?MODULE, calls, [20000])) / element(1, timer:tc(?MODULE, bif, [Bin]))
                       || _ <- lists:seq(1, 5)]),
    {ok, #{call := Call}} = beamspy_calibrate:costs(false),
    Run = fun(Compensate) ->
                  {_, P} = profile_ok({?MODULE, two, [Bin]}, #{compensate => Compensate}),
                  Nodes = own_tree(P),
                  [?assert(S >= 0) || {_, _, _, S, _, _} <- Nodes],
                  Md5 = lists:sum([S || {_, _, <<"erlang:md5/1">>, S, _, _} <- Nodes]),
                  {total(Nodes, <<"beamspy_compensation_tests:calls/1">>),
                   total(Nodes, <<"beamspy_compensation_tests:bif/1">>), Md5, P}
          end,
    {RawCalls, RawBif, RawMd5, _} = Run(false),
    {CompCalls, CompBif, CompMd5, P} = Run(true),
    BifFastest = lists:min(Before ++ Md5Untraced()),
    #{compensation := #{subtracted_ns := Subtracted, events := Events}} = P,
    ?debugFmt("calibrated ~w ns/call; ~w events, ~w us subtracted; "
              "md5 self: untraced fastest ~w us, raw ~w us, compensated ~w us",
              [Call, Events, Subtracted div 1000, BifFastest div 1000, RawMd5 div 1000, CompMd5 div 1000]),
    ?debugFmt("calls/bif: untraced ~.2f, raw ~.2f, compensated ~.2f",
              [Untraced, RawCalls / max(1, RawBif), CompCalls / max(1, CompBif)]),
    %% erlang:md5/1 of 1.6 MB traps thousands of times: the reschedules'
    %% cost is taken from the time scheduled out, never from the BIF's own
    %% (which once lost all of it). Its compensated self time keeps a good
    %% part of the fastest time it took untraced or raw (load makes any one
    %% of them longer, by up to 2x seen here, never shorter).
    ?assert(CompMd5 >= min(BifFastest, RawMd5) div 4),
    %% 20,000 iterations of many/2 make at least 40,000 call events.
    ?assert(Events >= 40000),
    %% Each of them lost its calibrated cost, or its whole interval when
    %% that was shorter (calibrated on a busier moment than this run's).
    ?assert(Subtracted >= 40000 * Call div 8),
    assert_clean().

outputs() ->
    Dir = filename:join(os:getenv("TMPDIR", "/tmp"), "beamspy_comp_" ++ os:getpid()),
    Formats = [svg, html, speedscope, chrome, callgrind],
    try
        [begin
             Out = filename:join(Dir, atom_to_list(C)),
             {ok, #{files := Files}} = beamspy:profile({?MODULE, calls, [2000]},
                                                       #{output => Out, formats => Formats, compensate => C}),
             ?assertEqual(length(Formats), length(Files)),
             Want = case C of
                        true -> <<"traced times compensated for tracer overhead: ">>;
                        false -> <<"raw traced times">>
                    end,
             [begin
                  {ok, Bin} = file:read_file(F),
                  ?assertNotEqual({F, nomatch}, {F, binary:match(Bin, Want)})
              end || F <- Files]
         end || C <- [true, false]],
        %% A profile rendered again from the term keeps it.
        {_, P} = profile_ok({?MODULE, calls, [2000]}, #{}),
        {ok, Svg} = beamspy:render(P, svg),
        ?assertNotEqual(nomatch, binary:match(Svg, <<"compensated for tracer overhead">>))
    after
        _ = file:del_dir_r(Dir)
    end,
    assert_clean().

bad_option() ->
    ?assertError({beamspy, {bad_option, compensate, yes, _}}, beamspy:apply({lists, sum, [[1]]}, #{compensate => yes})).

total(Nodes, Frame) ->
    lists:sum([T || {_, _, F, _, T, _} <- Nodes, F =:= Frame]).

median(Xs) ->
    lists:nth((length(Xs) + 1) div 2, lists:sort(Xs)).
