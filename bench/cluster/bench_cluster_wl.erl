%%% @doc The workload of every node of the cluster benchmark
%%% (bench/cluster/run.sh): three processes that never stop working, each
%%% sorting a fresh list of 200 integers in a loop, so that `record --all'
%%% has the same busy node to record on every node of the cluster.
-module(bench_cluster_wl).

-export([start/0, busy/1]).

%% @doc Starts the three busy processes (registered as bench_busy1..3);
%% returns ok.
-spec start() -> ok.
start() ->
    [register(list_to_atom("bench_busy" ++ integer_to_list(I)), spawn(?MODULE, busy, [I]))
     || I <- [1, 2, 3]],
    ok.

%% @doc One busy process: sorts lists for as long as the node lives.
-spec busy(non_neg_integer()) -> no_return().
busy(N) ->
    L = [(N * 7919 + X * 104729) rem 1000 || X <- lists:seq(1, 200)],
    _ = lists:sort(L),
    busy(N + 1).
