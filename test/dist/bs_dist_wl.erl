%%% @doc The workload of the distribution tests (test/dist/run.sh): what a
%%% target node runs while `beamspy record|dump|top' look at it.
%%%
%%% start/0 starts, all registered:
%%% <ul>
%%% <li>`busy' — spins in spin/1, sorting lists (work/1);</li>
%%% <li>`server' — a server whose handle/1 the `caller' process calls in a
%%%   loop (the function capture target);</li>
%%% <li>`stuck' — waits in wait_for_go/0 for a message that never comes,
%%%   with 10,000 other messages in its queue;</li>
%%% <li>`quoted' — waits in 'receive'/0, a function whose name is a reserved
%%%   word (Erlang quotes it, Elixir does not): every mode must spell it
%%%   alike;</li>
%%% <li>`'Elixir.App.Server'' — waits, registered as Elixir registers a
%%%   module-named server (`--name App.Server' must find it).</li>
%%% </ul>
-module(bs_dist_wl).

-export([start/0, spin/1, work/1, handle/1, server/0, caller/0, wait_for_go/0, 'receive'/0]).
-export([tiny_loop/1, tiny/1]).

%% @doc Starts the workload processes; returns ok.
-spec start() -> ok.
start() ->
    register(busy, spawn(fun() -> spin(0) end)),
    register(server, spawn(fun server/0)),
    register(caller, spawn(fun caller/0)),
    Stuck = spawn(fun wait_for_go/0),
    register(stuck, Stuck),
    [Stuck ! {not_go, I} || I <- lists:seq(1, 10000)],
    register(quoted, spawn(fun ?MODULE:'receive'/0)),
    register('Elixir.App.Server', spawn(fun ?MODULE:'receive'/0)),
    ok.

%% @doc Waits for stop, in a function named by a reserved word.
-spec 'receive'() -> ok.
'receive'() ->
    receive stop -> ok end.

%% @doc The busy loop.
-spec spin(non_neg_integer()) -> no_return().
spin(N) ->
    _ = work(N),
    spin(N + 1).

%% @doc Some work in a function of its own.
-spec work(non_neg_integer()) -> [integer()].
work(N) ->
    lists:sort([(N * 7919 + I * 104729) rem 1000 || I <- lists:seq(1, 200)]).

%% @doc The server: answers {call, From, X} with handle(X).
-spec server() -> no_return().
server() ->
    receive
        {call, From, X} -> From ! {reply, handle(X)}
    end,
    server().

%% @doc What the server does per call (the capture target).
-spec handle(integer()) -> integer().
handle(X) ->
    length(work(X)).

%% @doc Calls the server every few milliseconds.
-spec caller() -> no_return().
caller() ->
    server ! {call, self(), 1},
    receive {reply, _} -> ok end,
    timer:sleep(5),
    caller().

%% @doc Waits for a message that never comes.
-spec wait_for_go() -> ok.
wait_for_go() ->
    receive go -> ok end.

%% @doc Calls tiny/1 in a loop, without pause, until killed (started by the
%% test of a capture of many calls, not by start/0).
-spec tiny_loop(non_neg_integer()) -> no_return().
tiny_loop(X) ->
    tiny_loop(?MODULE:tiny(X)).

%% @doc A call that calls nothing.
-spec tiny(non_neg_integer()) -> non_neg_integer().
tiny(X) -> (X + 1) band 16#ffff.
