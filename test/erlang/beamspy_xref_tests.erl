%%% xref over beamspy's modules (ebin/beamspy*.beam; BeamSpy is Elixir's
%%% and is checked by the Elixir layer): no call to a function that does
%%% not exist, no call to a deprecated one, no unused local function. The
%%% allowances, where they are absent: the `trace' module (OTP 27's trace
%%% sessions, used by beamspy_backend only when the node has it) and
%%% `telemetry' (called by beamspy_telemetry only when it is loaded).
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
              {"no unused local functions", {timeout, 120, ?_assertEqual({ok, []}, xref:analyze(S, locals_not_used))}}]
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

allowed(trace) -> code:which(trace) =:= non_existing;
%% telemetry: the application's own dependency, called by beamspy_telemetry
%% only once it is loaded (beamspy never depends on it at build time).
allowed(telemetry) -> code:which(telemetry) =:= non_existing;
allowed(_) -> false.

ebin() ->
    filename:dirname(code:which(beamspy)).
