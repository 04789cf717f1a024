%%% A real gen_server for the live-session tests: each call does some
%%% recursive work in its callback, so its profile shows gen_server's loop,
%%% the callback and the work below it.
-module(bs_live_server).
-behaviour(gen_server).

-export([start/1, stop/1, work/2, crunch/1]).
-export([init/1, handle_call/3, handle_cast/2]).

%% Not linked: a test that fails must not take the server's caller with it.
start(Name) ->
    gen_server:start({local, Name}, ?MODULE, [], []).

stop(Server) ->
    try gen_server:stop(Server) catch exit:_ -> ok end,
    ok.

work(Server, N) ->
    gen_server:call(Server, {work, N}, 10000).

init([]) ->
    {ok, 0}.

handle_call({work, N}, _From, Count) ->
    Sum = crunch(N),
    {reply, Sum, Count + 1};
handle_call(count, _From, Count) ->
    {reply, Count, Count}.

handle_cast(_, Count) ->
    {noreply, Count}.

%% Body-recursive: N frames deep, the sum of 1..N.
crunch(0) -> 0;
crunch(N) -> N + crunch(N - 1).
