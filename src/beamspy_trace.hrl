%%% beamspy_trace.hrl — what every module that sets beamspy's call-trace
%%% patterns shares.

%% The match spec of beamspy's call-trace patterns: every call, with its
%% caller's continuation pointer in the trace message, so the stacks can be
%% rebuilt from calls alone (return_to says where each return lands).
-define(CALLER_MS, [{'_', [], [{message, {{cp, {caller}}}}]}]).
