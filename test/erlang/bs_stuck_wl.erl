%%% Workloads for the tests of beamspy_dump, beamspy_sampler and beamspy_top:
%%% processes stuck in the ways a hung node shows (a selective receive that
%%% matches nothing, a call that is never answered, a deep recursion parked
%%% in a receive), idle ones, busy ones, and a helper to wait for a state.
-module(bs_stuck_wl).
-behaviour(gen_server).

-export([deep/1, deep_unicode/1, 'héllo ŝ'/1, selective_receiver/0, idle/0, spin/0,
         busy_sum/1, start_server/0, block_on/2, stop/1, stop_all/1, wait_until/2,
         wait_until_in/3, churn/0]).
-export([init/1, handle_call/3, handle_cast/2]).

%% Body recursion N frames deep, parked in a receive at the bottom.
deep(0) -> receive stop -> 0 end;
deep(N) -> 1 + deep(N - 1).

%% deep/1 below a function whose name needs quoting and is not Latin-1.
deep_unicode(N) -> 'héllo ŝ'(N).

'héllo ŝ'(N) -> 1 + deep(N).

%% Parked in a receive that matches none of the messages sent to it.
selective_receiver() ->
    receive {only_this, Ref} when is_reference(Ref) -> ok end.

%% Idle at the bottom of its stack until told to stop.
idle() ->
    receive stop -> ok end.

%% Busy for ever in busy_sum/1 (body-recursive, 1000 frames deep).
spin() ->
    _ = busy_sum(1000),
    spin().

busy_sum(0) -> 0;
busy_sum(N) -> N + busy_sum(N - 1).

%% A gen_server that never answers a call, and can be told (by a cast) to
%% call another server and wait for it for ever. Not linked.
start_server() ->
    {ok, Pid} = gen_server:start(?MODULE, [], []),
    Pid.

block_on(Server, Target) ->
    gen_server:cast(Server, {call, Target}).

init([]) ->
    {ok, no_state}.

handle_call(_Request, _From, State) ->
    {noreply, State}.

handle_cast({call, Target}, State) ->
    _ = gen_server:call(Target, never_answered, infinity),
    {noreply, State}.

%% Spawns short-lived processes for ever (each lives a moment).
churn() ->
    _ = [spawn(fun() -> receive after I rem 3 -> ok end end) || I <- lists:seq(1, 50)],
    receive stop -> ok after 1 -> churn() end.

stop(Pid) ->
    Mon = erlang:monitor(process, Pid),
    exit(Pid, kill),
    receive {'DOWN', Mon, process, Pid, _} -> ok end.

stop_all(Pids) ->
    lists:foreach(fun stop/1, Pids).

%% Waits (10 ms steps) until Pred() is true; fails after Ms.
wait_until(Pred, Ms) when Ms =< 0 ->
    case Pred() of
        true -> ok;
        false -> error(wait_until_timed_out)
    end;
wait_until(Pred, Ms) ->
    case Pred() of
        true -> ok;
        false -> timer:sleep(10), wait_until(Pred, Ms - 10)
    end.

%% Waits until Pid waits in function MFA.
wait_until_in(Pid, MFA, Ms) ->
    wait_until(fun() ->
                       erlang:process_info(Pid, [status, current_function]) =:=
                           [{status, waiting}, {current_function, MFA}]
               end, Ms).
