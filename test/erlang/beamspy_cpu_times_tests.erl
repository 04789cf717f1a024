%%% Option times => samples: a trace recording (exact call counts and
%%% stacks) whose self times come from the CPU sampler running beside it.
%%% This module's VM runs with +JPperf true (test/erlang/run.sh), as the
%%% sampler needs. Checked on real Erlang code (bs_cpu_times_wl): two
%%% functions called equally often whose bodies cost 1 : 4, each call far
%%% cheaper than tracing it; the counts are the trace's, the self times
%%% keep the 1 : 4; the tracer's share of the CPU is measured and said; no
%%% calibration runs; a VM without the flag is refused.
-module(beamspy_cpu_times_tests).

-include_lib("eunit/include/eunit.hrl").

-import(bs_test_lib, [own_tree/1, assert_clean/0]).

-define(LIGHT, <<"bs_cpu_times_wl:light/1">>).
-define(HEAVY, <<"bs_cpu_times_wl:heavy/1">>).
-define(CALLS, 200000).

setup() ->
    {module, _} = code:ensure_loaded(bs_cpu_times_wl),
    ok.

times_test_() ->
    {setup, fun setup/0, fun(_) -> ok end,
     [{"exact counts, self times in the workload's 1 : 4, the tracer's share said",
       {timeout, 300, fun counts_and_ratio/0}},
      {"samples in garbage collections are counted apart and charged to the process",
       {timeout, 300, fun collections_to_process/0}},
      {"no calibration runs for times => samples", {timeout, 300, fun no_calibration/0}},
      {"times and compensate: what the session is asked for", fun session_options/0},
      {"bad times options are refused before anything runs", fun bad_options/0},
      {"a VM without +JPperf true is refused, naming the flag", {timeout, 120, fun no_perf_flag/0}}]}.

%% {SelfNs, Calls} of Frame summed over the tree.
totals(Nodes, Frame) ->
    lists:foldl(fun({_, _, F, S, _, C}, {S0, C0}) when F =:= Frame -> {S0 + S, C0 + C};
                   (_, Acc) -> Acc
                end, {0, 0}, Nodes).

counts_and_ratio() ->
    {ok, #{result := {return, _}, profile := P}} =
        beamspy:profile({bs_cpu_times_wl, run, [?CALLS]}, #{times => samples, cpu_hz => 1999}),
    #{unit := ns, notes := Notes, compensation := #{state := State}} = P,
    ?debugFmt("notes: ~ts", [Notes]),
    %% Not compensated: the times are the samples'.
    ?assertEqual(unknown, State),
    Nodes = own_tree(P),
    {Light, LightCalls} = totals(Nodes, ?LIGHT),
    {Heavy, HeavyCalls} = totals(Nodes, ?HEAVY),
    %% The trace's exact counts.
    ?assertEqual(?CALLS, LightCalls),
    ?assertEqual(?CALLS, HeavyCalls),
    %% Self times are whole samples of 1/1999 s: some 50 or more of light
    %% for a ratio worth checking.
    ?debugFmt("light ~w ns, heavy ~w ns: ratio ~.2f", [Light, Heavy, Heavy / max(Light, 1)]),
    ?assert(Light >= 25 * (1000000000 div 1999)),
    Ratio = Heavy / Light,
    ?assert(Ratio >= 2.0),
    ?assert(Ratio =< 8.0),
    %% What the times are, and the tracer's measured share.
    ?assertMatch({match, _}, re:run(Notes, "self times from CPU samples, not traced times: [0-9]+ samples at 1999 Hz")),
    {match, [Share]} = re:run(Notes, "the tracer took ([0-9.]+)% of their sampled CPU", [{capture, all_but_first, list}]),
    ?assert(list_to_float(Share) > 0.0),
    ?assert(list_to_float(Share) < 100.0),
    ?assertMatch({match, _}, re:run(Notes, "[0-9]+ samples reached no Erlang function")),
    assert_clean().

%% big_heaps/1 builds a heap of over a million words in each round: it is
%% collected on a dirty scheduler (whose samples name no process but for the
%% collection's traced start and end), and minor collections run on the
%% normal one. A call-traced process collects several times as often as it
%% would untraced, so the samples in its collections are counted apart and
%% charged to the process itself, not to the functions they fell on.
%% Before, those on the dirty scheduler were left out and those on the
%% normal one mostly counted as reaching no Erlang function.
collections_to_process() ->
    {ok, #{result := {return, ok}, profile := P}} =
        beamspy:profile({bs_cpu_wl, big_heaps, [20]}, #{times => samples, cpu_hz => 999}),
    #{notes := Notes} = P,
    ?debugFmt("notes: ~ts", [Notes]),
    {match, [Gc]} = re:run(Notes, "([0-9]+) samples in garbage collection \\(tracing makes a process collect",
                           [{capture, all_but_first, list}]),
    [{0, undefined, _, RootSelf, _, _} | _] = own_tree(P),
    ?debugFmt("~s samples in collections; the process's own node: ~w ns", [Gc, RootSelf]),
    ?assert(list_to_integer(Gc) >= 10),
    ?assert(RootSelf >= list_to_integer(Gc) * (1000000000 div 999)),
    assert_clean().

%% The calibration of compensated times (60-90 ms in a fresh VM) is not
%% run: no costs are kept after a times => samples recording.
no_calibration() ->
    ok = beamspy_calibrate:forget(),
    {ok, _} = beamspy:profile({bs_cpu_times_wl, run, [1000]}, #{times => samples}),
    ?assertEqual(none, beamspy_calibrate:kept(false)),
    ?assertEqual(none, beamspy_calibrate:kept(true)),
    %% Whereas the default measures them.
    {ok, _} = beamspy:profile({bs_cpu_times_wl, run, [1000]}, #{}),
    ?assertMatch({ok, _, _}, beamspy_calibrate:kept(false)),
    assert_clean().

%% times => samples asks the NIF for samples beside the trace and for no
%% compensation (so nothing is calibrated); compensate => false, the older
%% spelling, still gives raw times, as times => raw does.
session_options() ->
    Nif = fun(O) -> {ok, Opts} = beamspy_opts:options(O), beamspy_opts:nif_options(Opts, []) end,
    Samples = Nif(#{times => samples, cpu_hz => 555}),
    ?assertEqual(555, maps:get(cpu_times, Samples)),
    ?assertNot(is_map_key(compensate, Samples)),
    ?assertNot(is_map_key(cpu, Samples)),
    ?assertEqual(false, maps:get(compensate, Nif(#{times => raw}))),
    ?assertEqual(false, maps:get(compensate, Nif(#{compensate => false}))),
    ?assertEqual(true, maps:get(compensate, Nif(#{}))),
    ?assertNot(is_map_key(cpu_times, Nif(#{}))),
    %% mode cpu takes samples only: times does not apply.
    ?assertNot(is_map_key(cpu_times, Nif(#{mode => cpu, times => samples}))).

bad_options() ->
    ?assertMatch({error, {bad_option, times, exact, _}},
                 beamspy:profile({lists, seq, [1, 3]}, #{times => exact})),
    ?assertMatch({error, {bad_option, times, samples, _}},
                 beamspy:capture({bs_cpu_times_wl, light, 1}, 1, #{times => samples})),
    assert_clean().

%% A second VM, started without the flag: times => samples is refused
%% there with the sentence of mode cpu; the call is not run.
no_perf_flag() ->
    Ebin = filename:dirname(code:which(beamspy)),
    {ok, Peer, _} = peer:start_link(#{connection => standard_io, args => ["-pa", Ebin]}),
    try
        R = peer:call(Peer, beamspy, profile, [{lists, seq, [1, 3]}, #{times => samples}], 60000),
        ?assertMatch({error, {cpu_unavailable, _}}, R),
        {error, Reason} = R,
        ?assertMatch({match, _}, re:run(beamspy:format_error(Reason), "\\+JPperf true")),
        ?assertEqual([], peer:call(Peer, beamspy, sessions, []))
    after
        peer:stop(Peer)
    end.
