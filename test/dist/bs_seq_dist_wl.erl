%%% bs_seq_dist_wl — the workload of the `beamspy seq' checks: a gen_server
%%% named `chain' on each of three nodes, each knowing the next node, and on
%%% the first node a client that sends a request along the chain every 50 ms
%%% (client -> a -> b -> c, answered back the same way). The client calls
%%% request/1 fully qualified, so a meta trace pattern on it sees the call.
-module(bs_seq_dist_wl).
-behaviour(gen_server).

-export([start/2, start_client/0, request/1, init/1, handle_call/3, handle_cast/2]).

%% Me: a, b or c; Next: the next node's name ('' for the last one).
start(Me, Next) ->
    NextNode = case Next of '' -> undefined; N -> N end,
    {ok, _} = gen_server:start({local, chain}, ?MODULE, {Me, NextNode}, []),
    ok.

start_client() ->
    register(client, spawn(fun client/0)),
    ok.

client() ->
    _ = ?MODULE:request(node()),
    receive after 50 -> ok end,
    client().

request(Node) ->
    gen_server:call({chain, Node}, {req, []}).

init({Me, Next}) ->
    {ok, {Me, Next}}.

handle_call({req, Trail}, _From, {Me, undefined} = S) ->
    {reply, {pong, [Me | Trail]}, S};
handle_call({req, Trail}, _From, {Me, Next} = S) ->
    {reply, gen_server:call({chain, Next}, {req, [Me | Trail]}), S}.

handle_cast(_, S) ->
    {noreply, S}.
