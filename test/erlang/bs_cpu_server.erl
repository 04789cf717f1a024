%%% A gen_server whose handler runs ~10 us of Erlang code (fib(15)) per call,
%%% for mode cpu's process checks: its CPU samples must be inside the
%%% handler, not in the receive between calls (the case where a join by
%%% scheduling events put them under `[ran to receive]').
-module(bs_cpu_server).
-behaviour(gen_server).

-export([start/0, calls_for/2]).
-export([init/1, handle_call/3, handle_cast/2]).

-spec start() -> {ok, pid()}.
start() ->
    gen_server:start(?MODULE, [], []).

%% Calls Server until the VM has used Ms more milliseconds of CPU; returns
%% how many calls were answered.
-spec calls_for(pid(), pos_integer()) -> pos_integer().
calls_for(Server, Ms) ->
    {Start, _} = statistics(runtime),
    calls_until(Server, Start + Ms, 0).

calls_until(Server, Until, N) ->
    _ = gen_server:call(Server, work),
    case statistics(runtime) of
        {Now, _} when Now >= Until -> N + 1;
        _ -> calls_until(Server, Until, N + 1)
    end.

init([]) -> {ok, 0}.

handle_call(work, _From, N) ->
    {reply, bs_cpu_wl:fib(15), N + 1}.

handle_cast(_, N) -> {noreply, N}.
