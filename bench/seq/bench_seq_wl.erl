%%% bench_seq_wl — the busy node of bench/seq/run.sh: a chain of three
%%% local gen_servers (a -> b -> c, answered back) and W clients calling
%%% request/0 in a loop as fast as they can, each completed request counted
%%% in an atomics counter. count/0 reads it.
-module(bench_seq_wl).
-behaviour(gen_server).

-export([start/1, request/0, count/0, init/1, handle_call/3, handle_cast/2]).

start(Clients) ->
    {ok, C} = gen_server:start({local, link_c}, ?MODULE, undefined, []),
    {ok, B} = gen_server:start({local, link_b}, ?MODULE, C, []),
    {ok, _} = gen_server:start({local, link_a}, ?MODULE, B, []),
    Counter = atomics:new(1, []),
    persistent_term:put(?MODULE, Counter),
    [spawn(fun() -> client(Counter) end) || _ <- lists:seq(1, Clients)],
    ok.

client(Counter) ->
    {done, _} = ?MODULE:request(),
    atomics:add(Counter, 1, 1),
    client(Counter).

request() ->
    gen_server:call(link_a, {req, lists:seq(1, 5)}).

count() ->
    atomics:get(persistent_term:get(?MODULE), 1).

init(Next) -> {ok, Next}.

handle_call(Req, _From, undefined) -> {reply, {done, Req}, undefined};
handle_call(Req, _From, Next) -> {reply, gen_server:call(Next, Req), Next}.

handle_cast(_, S) -> {noreply, S}.
