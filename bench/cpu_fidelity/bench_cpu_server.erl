%%% bench_cpu_server — the `server' workload of the CPU-time fidelity
%%% bench: a gen_server whose call handlers take about 10 µs each (a small
%%% in-memory order book: insert an order, match the best prices, answer
%%% with a summary), called by a client loop a fixed number of times. The
%%% server is started inside the workload, so a tracer following the
%%% call's children sees both processes.
-module(bench_cpu_server).
-behaviour(gen_server).

-export([prepare/0, run/1, perf_runs/0, modules/0]).
-export([init/1, handle_call/3, handle_cast/2]).

-define(CALLS, 5000).

%% @doc Nothing to read: the calls are generated with a fixed seed.
-spec prepare() -> {ok, pos_integer(), string()}.
prepare() ->
    {ok, ?CALLS, lists:flatten(io_lib:format("~w gen_server:call/2 of ~~10 us handlers (order book)", [?CALLS]))}.

%% @doc The fixed amount of work: Calls calls from a client loop.
-spec run(pos_integer()) -> non_neg_integer().
run(Calls) ->
    {ok, S} = gen_server:start(?MODULE, [], []),
    Sum = client(S, Calls, rand:seed_s(exsss, {3, 14, 15}), 0),
    ok = gen_server:stop(S),
    Sum.

% @doc How many runs perf samples (beamspy records one): enough for
% about 2,000 samples at 999 Hz.
-spec perf_runs() -> pos_integer().
perf_runs() -> 40.

%% @doc The workload's own modules.
-spec modules() -> [module()].
modules() -> [?MODULE].

client(_, 0, _, Acc) -> Acc;
client(S, N, R0, Acc) ->
    {Price, R1} = rand:uniform_s(200, R0),
    {Qty, R2} = rand:uniform_s(50, R1),
    Side = case N rem 2 of 0 -> buy; 1 -> sell end,
    {ok, Filled, _Depth} = gen_server:call(S, {order, Side, Price, Qty}),
    client(S, N - 1, R2, Acc + Filled).

%%% The server: two gb_trees of price levels, each a queue of quantities.

init([]) -> {ok, #{buy => gb_trees:empty(), sell => gb_trees:empty(), trades => 0}}.

handle_call({order, Side, Price, Qty}, _From, Book) ->
    Other = other(Side),
    {Left, Filled, Opposite} = match(Side, Price, Qty, maps:get(Other, Book), 0),
    Own = rest(Side, Price, Left, maps:get(Side, Book)),
    Book1 = Book#{Side := Own, Other := Opposite, trades := maps:get(trades, Book) + Filled},
    {reply, {ok, Filled, depth(Own, Opposite)}, Book1}.

handle_cast(_, Book) -> {noreply, Book}.

other(buy) -> sell;
other(sell) -> buy.

%% Match against the best opposite levels while they cross the price.
match(_, _, 0, Levels, Filled) -> {0, Filled, Levels};
match(Side, Price, Qty, Levels, Filled) ->
    case gb_trees:is_empty(Levels) of
        true -> {Qty, Filled, Levels};
        false ->
            {Best, Queue} = best(Side, Levels),
            case crosses(Side, Price, Best) of
                false -> {Qty, Filled, Levels};
                true ->
                    {Left, Queue1, Done} = fill(Qty, Queue, 0),
                    Levels1 = case queue:is_empty(Queue1) of
                                  true -> gb_trees:delete(Best, Levels);
                                  false -> gb_trees:update(Best, Queue1, Levels)
                              end,
                    match(Side, Price, Left, Levels1, Filled + Done)
            end
    end.

best(buy, Levels) -> gb_trees:smallest(Levels);
best(sell, Levels) -> gb_trees:largest(Levels).

crosses(buy, Price, Best) -> Best =< Price;
crosses(sell, Price, Best) -> Best >= Price.

fill(0, Queue, Done) -> {0, Queue, Done};
fill(Qty, Queue, Done) ->
    case queue:out(Queue) of
        {empty, Q} -> {Qty, Q, Done};
        {{value, Q0}, Rest} when Q0 =< Qty -> fill(Qty - Q0, Rest, Done + Q0);
        {{value, Q0}, Rest} -> {0, queue:in_r(Q0 - Qty, Rest), Done + Qty}
    end.

rest(_, _, 0, Levels) -> Levels;
rest(_, Price, Qty, Levels) ->
    case gb_trees:lookup(Price, Levels) of
        none -> gb_trees:insert(Price, queue:from_list([Qty]), Levels);
        {value, Q} -> gb_trees:update(Price, queue:in(Qty, Q), Levels)
    end.

%% The reply's summary: total quantity on the ten best levels each side.
depth(Own, Opposite) ->
    {level_sum(gb_trees:to_list(Own)), level_sum(gb_trees:to_list(Opposite))}.

level_sum(Levels) ->
    lists:sum([lists:sum(queue:to_list(Q)) || {_, Q} <- lists:sublist(Levels, 10)]).
