%%% xref over beamspy's modules (ebin/beamspy*.beam; BeamSpy is Elixir's
%%% and is checked by the Elixir layer): no call to a function that does
%%% not exist, no call to a deprecated one, no unused local function, and
%%% no export that nothing calls. The allowances, where they are absent: the
%%% `trace' module (OTP 27's trace sessions, used by beamspy_backend only
%%% when the node has it) and `telemetry' (called by beamspy_telemetry only
%%% when it is loaded). Exports that no module calls by name are listed in
%%% unused_exports_allowed/0 with who calls them (the API, the command-line
%%% tool over erpc, proc_lib or the tracer by name, the tests).
%%% About 2 s.
-module(beamspy_xref_tests).

-include_lib("eunit/include/eunit.hrl").

xref_test_() ->
    {setup, fun start/0, fun stop/1,
     fun(S) ->
             %% Seconds on a quiet machine, far more on a loaded one:
             %% EUnit's 5 s default is no bound for it.
             [{"no undefined function calls", {timeout, 120, ?_assertEqual([], undefined_calls(S))}},
              {"no deprecated function calls",
               {timeout, 120, ?_assertEqual({ok, []}, xref:analyze(S, deprecated_function_calls))}},
              {"no unused local functions", {timeout, 120, ?_assertEqual({ok, []}, xref:analyze(S, locals_not_used))}},
              {"no export that nothing calls", {timeout, 120, ?_assertEqual([], unused_exports(S))}},
              {"every allowed unused export exists and is unused",
               {timeout, 120, ?_assertEqual([], stale_allowances(S))}}]
     end}.

start() ->
    {ok, S} = xref:start(beamspy_xref_tests, [{xref_mode, functions}]),
    ok = xref:set_default(S, [{warnings, false}, {verbose, false}]),
    ok = xref:set_library_path(S, code_path),
    Beams = filelib:wildcard(filename:join(ebin(), "beamspy*.beam")),
    ?assert(length(Beams) >= 10),
    [{ok, _} = xref:add_module(S, B) || B <- Beams],
    S.

stop(S) ->
    xref:stop(S).

undefined_calls(S) ->
    {ok, Calls} = xref:analyze(S, undefined_function_calls),
    [Call || {_, {M, _, _}} = Call <- Calls, not allowed(M)].

%% Exports no beamspy module calls by name, each with who calls it.
unused_exports(S) ->
    {ok, Unused} = xref:analyze(S, exports_not_used),
    [MFA || {M, _, _} = MFA <- Unused, not public_module(M), not lists:keymember(MFA, 1, unused_exports_allowed())].

%% An allowance that is no longer needed is removed, so the list stays true.
stale_allowances(S) ->
    {ok, Unused} = xref:analyze(S, exports_not_used),
    [MFA || {MFA, _} <- unused_exports_allowed(), not lists:member(MFA, Unused)].

%% Modules whose every export is API (documented in the README and @doc).
public_module(M) -> lists:member(M, [beamspy, beamspy_telemetry]).

unused_exports_allowed() ->
    Tool = "the command-line tool, over erpc (c_src/cli)",
    Init = "proc_lib's start of the process",
    [{{beamspy_agent, start, 3}, Tool}, {{beamspy_agent, poll, 1}, Tool}, {{beamspy_agent, arm, 1}, Tool},
     {{beamspy_agent, finish, 2}, Tool},
     {{beamspy_agent, release, 1}, Tool}, {{beamspy_agent, dump, 1}, Tool},
     {{beamspy_agent, runs_elixir, 0}, Tool},
     {{beamspy_remote, unload_local, 2}, "beamspy_remote:unload/2, over erpc"},
     {{beamspy_seq_collector, give_back, 1}, "beamspy_seq_collector:stop/2, over erpc"},
     {{beamspy_seq_collector, init, 3}, Init}, {{beamspy_telemetry, init, 5}, Init},
     {{beamspy_sampler, init, 1}, Init}, {{beamspy_top, init, 1}, Init},
     {{beamspy_runner, boot, 0}, "erl -s beamspy_runner boot (bin/beamspy run)"},
     {{beamspy_runner, keeper, 2}, "spawned by name (its initial call names it to unload)"},
     {{beamspy_tracer, enabled, 3}, "the VM: erl_tracer callback"},
     {{beamspy_tracer, trace, 5}, "the VM: erl_tracer callback"},
     {{beamspy_tracer, frame_name, 2}, "API: the frame speller (README, tests)"},
     {{beamspy_tracer, formats, 0}, "the formats test: the C table the Erlang lists are held to"},
     {{beamspy_calibrate, tail, 1}, "the calibration's traced workload, called by name"},
     {{beamspy_calibrate, body, 2}, "the calibration's traced workload, called by name"},
     {{beamspy_calibrate, leaf, 1}, "the calibration's traced workload, called by name"},
     {{beamspy_calibrate, costs, 1}, "bench/fidelity and the compensation tests"},
     {{beamspy_calibrate, forget, 0}, "the compensation tests"},
     {{beamspy_calibrate, measure, 1}, "the compensation tests"},
     {{beamspy_calibrate, kept, 1}, "the compensation tests"},
     {{beamspy_calibrate, keep, 3}, "the compensation tests"},
     {{beamspy_opts, defaults, 0}, "BeamSpy (Elixir) and the defaults test"},
     {{beamspy_opts, defaults, 1}, "BeamSpy (Elixir) and the defaults test"},
     {{beamspy_opts, option_table, 0}, "BeamSpy's mix switches (Elixir) and the defaults test"},
     {{beamspy_opts, timeline_formats, 0}, "the formats test"},
     {{beamspy_report, limit_text, 2}, "the report tests"},
     {{beamspy_sequence, check, 2}, "BeamSpy.sequence/2 (Elixir)"},
     {{beamspy_sequence, extensions, 0}, "the sequence tests"},
     {{beamspy_sequence, formats, 0}, "the sequence tests"}].

allowed(trace) -> code:which(trace) =:= non_existing;
%% telemetry: the application's own dependency, called by beamspy_telemetry
%% only once it is loaded (beamspy never depends on it at build time).
allowed(telemetry) -> code:which(telemetry) =:= non_existing;
allowed(_) -> false.

ebin() ->
    filename:dirname(code:which(beamspy)).
