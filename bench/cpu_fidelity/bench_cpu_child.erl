%%% bench_cpu_child — what runs inside the VM that `perf record' starts
%%% (untraced, `+JPperf true'): prepares one workload, runs it once to
%%% warm up (code loaded, caches filled), then runs it runs(Mod) times
%%% (more samples; the shares are the same) between two reads of the OS monotonic clock, the clock perf stamps its samples
%%% with (`-k CLOCK_MONOTONIC'), and writes the window and its OS pid to a
%%% file: only the samples of this process inside the window count.
-module(bench_cpu_child).

-export([main/1, runs/1]).

%% @doc `erl -run bench_cpu_child main Module OutFile'.
-spec main([string()]) -> no_return().
main([ModName, Out]) ->
    Mod = list_to_atom(ModName),
    {ok, Input, _} = Mod:prepare(),
    _ = Mod:run(Input),
    Reps = runs(Mod),
    Start = os_monotonic_ns(),
    _ = [Mod:run(Input) || _ <- lists:seq(1, Reps)],
    End = os_monotonic_ns(),
    ok = file:write_file(Out, io_lib:format("~p.~n", [{list_to_integer(os:getpid()), Start, End}])),
    halt(0).

%% @doc How many times perf's VM runs Mod's workload: Mod:perf_runs(),
%% times $CPU_BENCH_SCALE (default 1) for more samples on both sides: the
%% sampling noise of a TVD falls as the square root of the samples.
-spec runs(module()) -> pos_integer().
runs(Mod) ->
    Scale = case string:to_integer(os:getenv("CPU_BENCH_SCALE", "1")) of
                {S, ""} when S >= 1 -> S;
                _ -> 1
            end,
    Scale * Mod:perf_runs().

os_monotonic_ns() ->
    Native = proplists:get_value(time, erlang:system_info(os_monotonic_time_source)),
    erlang:convert_time_unit(Native, native, nanosecond).
