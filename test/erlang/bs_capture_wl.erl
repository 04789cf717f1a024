%%% Workloads for the capture tests: a gen_server with a CPU-bound callback,
%%% clients that keep calling it, and a plain function called from many
%%% processes at once.
-module(bs_capture_wl).
-behaviour(gen_server).
-export([start/0, stop/0, clients/2, init/1, handle_call/3, handle_cast/2,
         fib/1, job/1, run_jobs/2]).

start() -> gen_server:start({local, ?MODULE}, ?MODULE, [], []).
stop() -> gen_server:stop(?MODULE).

init([]) -> {ok, 0}.

handle_call({fib, N}, _From, Count) ->
    Result = fib(N),
    {reply, Result, Count + 1}.

handle_cast(_Msg, Count) -> {noreply, Count}.

fib(0) -> 0;
fib(1) -> 1;
fib(N) -> fib(N - 1) + fib(N - 2).

%% K client processes calling the server in a loop until they are killed.
clients(K, N) ->
    [spawn(fun() -> client_loop(N) end) || _ <- lists:seq(1, K)].

client_loop(N) ->
    _ = gen_server:call(?MODULE, {fib, N}),
    client_loop(N).

%% A function of its own, called once by each of K processes started at once.
job(N) ->
    X = fib(N),
    {done, X}.

run_jobs(K, N) ->
    Parent = self(),
    Pids = [spawn(fun() -> receive go -> Parent ! {self(), job(N)} end end) || _ <- lists:seq(1, K)],
    [P ! go || P <- Pids],
    [receive {P, R} -> R end || P <- Pids].
