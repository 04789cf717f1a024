%%% bs_seq_chain — the workload of the sequence tests: a gen_server named
%%% `chain' per node, each knowing the next node of the chain. A request
%%% passes along the chain as nested gen_server calls and the answer comes
%%% back the same way: client -> a -> b -> c, then c -> b -> a -> client.
-module(bs_seq_chain).
-behaviour(gen_server).

-export([start/2, stop/0, request/1, init/1, handle_call/3, handle_cast/2]).

%% Me: this link's short name (a, b, c); Next: the node of the next link,
%% or undefined at the end of the chain.
start(Me, Next) ->
    gen_server:start({local, chain}, ?MODULE, {Me, Next}, []).

stop() ->
    gen_server:stop(chain).

%% The request the tests send from the client.
request(Node) ->
    gen_server:call({chain, Node}, {req, []}).

init({Me, Next}) ->
    {ok, {Me, Next}}.

handle_call({req, Trail}, _From, {Me, undefined} = S) ->
    {reply, {pong, [Me | Trail]}, S};
handle_call({req, Trail}, _From, {Me, Next} = S) ->
    {reply, gen_server:call({chain, Next}, {req, [Me | Trail]}), S};
handle_call(crash, _From, S) ->
    {reply, erlang:error(chain_crash), S}.

handle_cast(_, S) ->
    {noreply, S}.
