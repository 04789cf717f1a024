%%% bench_telemetry — telemetry:span/3 with no handler, an empty handler
%%% and beamspy_telemetry's, interleaved in one VM (see run.sh).
-module(bench_telemetry).
-export([main/2, empty_handler/4]).

-define(P, [bench, span]).

main(N, Reps) ->
    {ok, _} = application:ensure_all_started(telemetry),
    Dir = filename:join(filename:dirname(code:which(?MODULE)), "out"),
    Rounds = [round(N, Kind, Dir) || _ <- lists:seq(1, Reps), Kind <- [none, empty, beamspy]],
    Med = fun(K) -> median([T || {K1, T} <- Rounds, K1 =:= K]) end,
    [None, Empty, Beamspy] = [Med(K) || K <- [none, empty, beamspy]],
    io:format("telemetry:span/3 of an empty function, ~w spans x ~w rounds (median ns per span):~n"
              "  no handler       ~8.1f~n  empty handler    ~8.1f~n  beamspy handler  ~8.1f~n"
              "beamspy's handler costs ~.1f ns per span (~.1f ns more than an empty handler)~n",
              [N, Reps, None, Empty, Beamspy, Beamspy - None, Beamspy - Empty]).

empty_handler(_, _, _, _) -> ok.

round(N, Kind, Dir) ->
    Stop = case Kind of
               none ->
                   fun() -> ok end;
               empty ->
                   ok = telemetry:attach_many(bench, [?P ++ [start], ?P ++ [stop], ?P ++ [exception]],
                                              fun ?MODULE:empty_handler/4, none),
                   fun() -> telemetry:detach(bench) end;
               beamspy ->
                   {ok, H} = beamspy_telemetry:start([?P], #{output => Dir, quiet => true,
                                                             formats => [folded], max_spans => N}),
                   fun() -> {ok, _} = beamspy_telemetry:stop(H) end
           end,
    F = fun() -> {ok, #{}} end,
    T0 = erlang:monotonic_time(nanosecond),
    loop(N, F),
    T = erlang:monotonic_time(nanosecond) - T0,
    _ = Stop(),
    {Kind, T / N}.

loop(0, _) -> ok;
loop(I, F) ->
    ok = telemetry:span(?P, #{}, F),
    loop(I - 1, F).

median(L) -> lists:nth((length(L) + 1) div 2, lists:sort(L)).
