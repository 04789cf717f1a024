%%% @doc Entry point of `make bench' (see bench/run.sh and bench/README.md).
%%%
%%% For each workload, in one VM: prepare the input, warm up (one untraced
%%% run, one `beamspy:profile/2' run that also reports beamspy's own memory
%%% peak and event count), then N repetitions in which every variant runs
%%% once (fprof only in the first BENCH_FPROF_REPS repetitions: it takes
%%% minutes on some workloads), in an order rotated by one at each
%%% repetition. Then the memory-independence check (the loop at two sizes).
%%% Prints the Markdown report and writes it to results.md (raw samples to
%%% results.term) in the build directory.
-module(bench_main).

-export([main/1, config/1]).

-type config() :: #{dir := string(), reps := pos_integer(), workloads := [bench_workloads:name()],
                    timeout_ms := pos_integer(), fprof_timeout_ms := pos_integer(),
                    fprof_reps := non_neg_integer(),
                    compile_funs := pos_integer(), mem_iters := [pos_integer()]}.
-export_type([config/0]).

%% @doc `erl -run bench_main main BuildDir': runs the suite and halts.
-spec main([string()]) -> no_return().
main([Dir]) ->
    Cfg = config(Dir),
    Start = erlang:monotonic_time(millisecond),
    Load0 = loadavg(),
    log("beamspy bench: ~w reps, workloads ~w~n", [maps:get(reps, Cfg), maps:get(workloads, Cfg)]),
    Rows = [workload(W, Cfg) || W <- maps:get(workloads, Cfg)],
    Mem = memory_independence(Cfg),
    Meta = #{wall_s => (erlang:monotonic_time(millisecond) - Start) / 1000,
             load => {Load0, loadavg()},
             otp => erlang:system_info(otp_release),
             schedulers => erlang:system_info(schedulers_online)},
    Report = bench_report:render(Rows, Mem, Cfg, Meta),
    io:put_chars(Report),
    ok = file:write_file(filename:join(Dir, "results.md"), Report),
    ok = file:write_file(filename:join(Dir, "results.term"),
                         io_lib:format("~p.~n", [#{config => Cfg, meta => Meta, rows => Rows, memory => Mem}])),
    log("wrote ~ts~n", [filename:join(Dir, "results.md")]),
    halt(0).

%% @doc The configuration, from the environment (see bench/README.md).
-spec config(string()) -> config().
config(Dir) ->
    #{dir => Dir,
      reps => env_int("BENCH_REPS", 5),
      workloads => case env("BENCH_WORKLOADS", "all") of
                       "all" -> bench_workloads:names();
                       Ws -> [workload_name(W) || W <- string:lexemes(Ws, ", ")]
                   end,
      timeout_ms => 1000 * env_int("BENCH_TIMEOUT", 600),
      fprof_timeout_ms => 1000 * env_int("BENCH_FPROF_TIMEOUT", 120),
      fprof_reps => env_int("BENCH_FPROF_REPS", 2),
      compile_funs => env_int("BENCH_COMPILE_FUNS", 40),
      mem_iters => [list_to_integer(N) || N <- string:lexemes(env("BENCH_MEM_ITERS", "1000000,10000000"), ", ")]}.

workload_name(Name) ->
    Known = bench_workloads:names(),
    case [W || W <- Known, atom_to_list(W) =:= Name] of
        [W] -> W;
        [] -> erlang:error({unknown_workload, Name, Known})
    end.

workload(W, Cfg) ->
    log("~n== ~ts~n", [bench_workloads:label(W)]),
    Input = bench_workloads:prepare(W, Cfg),
    _ = file:del_dir_r(filename:join([maps:get(dir, Cfg), "out", atom_to_list(W)])),
    #{hash := Expected} = Warm = bench_variants:measure(untraced, W, Input, Cfg),
    log("  warm-up untraced ~.1f ms~n", [maps:get(call_ms, Warm)]),
    Info = check(bench_variants:beamspy_info(W, Input, Cfg), Expected),
    log("  beamspy:profile: ~w events, memory_peak ~w B~n",
        [maps:get(events, Info, '?'), maps:get(memory_peak, Info, '?')]),
    Reps = lists:seq(1, maps:get(reps, Cfg)),
    Samples = lists:foldl(fun(R, Acc) -> rep(R, W, Input, Expected, Cfg, Acc) end, #{}, Reps),
    #{workload => W, info => Info,
      samples => maps:map(fun(_, L) -> lists:reverse(L) end, Samples)}.

%% One repetition: every variant once, order rotated by the repetition.
%% fprof runs only in the first fprof_reps repetitions, and not again on
%% a workload where it already timed out.
rep(R, W, Input, Expected, Cfg, Acc) ->
    Names = bench_variants:names(),
    {A, B} = lists:split((R - 1) rem length(Names), Names),
    lists:foldl(fun(V, Acc1) ->
                        Prev = maps:get(V, Acc1, []),
                        TimedOut = lists:any(fun(#{status := St}) -> St =:= timeout end, Prev),
                        case V =:= fprof andalso (TimedOut orelse R > maps:get(fprof_reps, Cfg)) of
                            true ->
                                Acc1;
                            false ->
                                S = check(bench_variants:measure(V, W, Input, Cfg), Expected),
                                log("  rep ~w ~-8w ~ts~n", [R, V, describe(S)]),
                                Acc1#{V => [S | Prev]}
                        end
                end, Acc, B ++ A).

%% A traced run must return what the untraced run returned.
check(#{status := ok, hash := H} = S, Expected) when H =/= Expected ->
    S#{status => {error, wrong_result}};
check(S, _) ->
    S.

describe(#{status := ok, call_ms := C, total_ms := T}) ->
    io_lib:format("call ~.1f ms, total ~.1f ms", [C, T]);
describe(#{status := Status}) ->
    io_lib:format("~tp", [Status]).

%% beamspy's memory_peak for the loop at each size in mem_iters.
memory_independence(#{mem_iters := Sizes} = Cfg) ->
    log("~n== memory independence: loop at ~w~n", [Sizes]),
    [begin
         I = bench_variants:beamspy_info(loop, N, Cfg),
         log("  loop ~w: ~w events, memory_peak ~w B~n",
             [N, maps:get(events, I, '?'), maps:get(memory_peak, I, '?')]),
         {N, I}
     end || N <- Sizes].

loadavg() ->
    case file:read_file("/proc/loadavg") of
        {ok, Bin} -> hd(string:lexemes(binary_to_list(Bin), " "));
        _ -> "?"
    end.

env(Name, Default) ->
    case os:getenv(Name) of
        false -> Default;
        "" -> Default;
        V -> V
    end.

env_int(Name, Default) ->
    list_to_integer(env(Name, integer_to_list(Default))).

log(Fmt, Args) ->
    io:format(standard_error, Fmt, Args).
