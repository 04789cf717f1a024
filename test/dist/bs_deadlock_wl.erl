%%% @doc Hung servers for the `beamspy dump' wait-for graph tests
%%% (test/dist/deadlocks.sh): gen_servers that call each other with
%%% `infinity' in rings (deadlocks, on one node or across two), clients
%%% blocked behind them, a chain that ends at a busy server, and servers
%%% that call each other with a short timeout and recover (no deadlock).
%%%
%%% Every server is registered under the name given, so the tests can find
%%% it, and is unlinked from whoever started it (the rpc that starts it
%%% ends at once).
-module(bs_deadlock_wl).
-behaviour(gen_server).

-export([ring/1, client/2, busy_chain/3, timeout_pair/2, server/1, call_peer/2, in_call/1,
         stop/1, spin/1]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2]).

-define(RETRY_MS, 5).
-define(TIMEOUT_MS, 30).

%%% ---------------------------------------------------------------------
%%% Scenarios
%%% ---------------------------------------------------------------------

%% @doc A ring of servers: each calls the next one (the last calls the
%% first) with `infinity'. A server is a local name or `{Name, Node}' (the
%% ring may cross nodes); the local ones are started here. Returns ok once
%% every local member waits in its call.
-spec ring([atom() | {atom(), node()}]) -> ok.
ring(Members) ->
    Local = [M || M <- Members, is_atom(M)],
    [server(M) || M <- Local],
    Next = tl(Members) ++ [hd(Members)],
    [call_peer(M, N) || {M, N} <- lists:zip(Members, Next), is_atom(M)],
    ok.

%% @doc A plain process registered as Name that calls Server with
%% `infinity' and never gets an answer.
-spec client(atom(), atom() | {atom(), node()}) -> ok.
client(Name, Server) ->
    Pid = spawn(fun() -> gen_server:call(Server, hello, infinity) end),
    register(Name, Pid),
    ok.

%% @doc Worker (a server busy for ever in spin/1 once called), Caller (a
%% server calling Worker) and Clients (each calling Caller).
-spec busy_chain(atom(), atom(), [atom()]) -> ok.
busy_chain(Worker, Caller, Clients) ->
    server(Worker),
    server(Caller),
    gen_server:cast(Caller, {call, Worker, spin}),
    [client(C, Caller) || C <- Clients],
    ok.

%% @doc Two servers that call each other over and over, each call with a
%% short timeout: every call times out, the server catches it and goes on.
-spec timeout_pair(atom(), atom()) -> ok.
timeout_pair(A, B) ->
    server(A),
    server(B),
    A ! {retry, B},
    B ! {retry, A},
    ok.

%% @doc Starts a server registered as Name (not linked).
-spec server(atom()) -> pid().
server(Name) ->
    {ok, Pid} = gen_server:start({local, Name}, ?MODULE, [], []),
    Pid.

%% @doc Tells server Name to call Peer with `infinity'.
-spec call_peer(atom(), atom() | {atom(), node()}) -> ok.
call_peer(Name, Peer) ->
    gen_server:cast(Name, {call, Peer, hello}).

%% @doc True when every named process waits in gen:do_call/4.
-spec in_call([atom()]) -> boolean().
in_call(Names) ->
    lists:all(fun(N) ->
                      case whereis(N) of
                          undefined -> false;
                          Pid -> erlang:process_info(Pid, [status, current_function]) =:=
                                     [{status, waiting}, {current_function, {gen, do_call, 4}}]
                      end
              end, Names).

%% @doc Kills the named processes (those still registered).
-spec stop([atom()]) -> ok.
stop(Names) ->
    [exit(Pid, kill) || N <- Names, Pid <- [whereis(N)], is_pid(Pid)],
    ok.

%% @doc Busy for ever.
-spec spin(non_neg_integer()) -> no_return().
spin(N) ->
    spin((N * 7 + 1) rem 1000003).

%%% ---------------------------------------------------------------------
%%% gen_server callbacks
%%% ---------------------------------------------------------------------

%% @private
init([]) ->
    {ok, no_state}.

%% @private
handle_call(spin, _From, _State) ->
    spin(1);
handle_call(_Request, _From, State) ->
    {noreply, State}.

%% @private
handle_cast({call, Peer, Request}, State) ->
    _ = gen_server:call(Peer, Request, infinity),
    {noreply, State}.

%% @private
handle_info({retry, Peer}, State) ->
    try gen_server:call(Peer, hello, ?TIMEOUT_MS)
    catch exit:{timeout, _} -> timed_out
    end,
    erlang:send_after(?RETRY_MS, self(), {retry, Peer}),
    {noreply, State};
handle_info(_, State) ->
    {noreply, State}.
