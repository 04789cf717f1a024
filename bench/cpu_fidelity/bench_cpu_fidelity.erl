%%% bench_cpu_fidelity — where the CPU time goes, per function, as beamspy
%%% records it against `perf record' of the same untraced workload, side
%%% by side in one run (issue 23's fidelity judgement).
%%%
%%% For each workload (bench_cpu_json, bench_cpu_compiler,
%%% bench_cpu_server): perf record at 999 Hz with `--call-graph dwarf' and
%%% with `--call-graph fp', each in a fresh VM (bench_cpu_perf); then the
%%% same workload in this VM under each beamspy column of columns/0. Both
%%% sides attributed by bench_cpu_attribute's rule. Prints the rule, each
%%% workload's top functions on every side, the total variation distance
%%% of each column to each perf call graph and the coverage, as Markdown
%%% on stdout (run.sh copies it to bench/build/cpu_fidelity.md).
-module(bench_cpu_fidelity).

-export([main/0, main/1, columns/0, repeat/3]).

-define(TOP, 10).

%% @doc The beamspy columns: a label and the options of
%% beamspy:profile/2. A column whose options beamspy refuses is printed
%% `n/a (reason)', so a mode can be listed before it exists.
-spec columns() -> [{string(), map()}].
columns() ->
    [{"beamspy compensated", #{}},
     {"beamspy raw", #{compensate => false}},
     %% 999 Hz: beamspy records one run of a workload, perf several (a
     %% fidelity bench wants samples, not the default rate's low cost).
     {"beamspy mode => cpu", #{mode => cpu, cpu_hz => 999}},
     %% The same, as a session of the whole VM (beamspy:start(all, ...)):
     %% every scheduler thread's samples, as perf's; the leaf rule's column.
     {"beamspy mode => cpu, whole VM", #{mode => cpu, cpu_hz => 999, whole_vm => true}},
     %% Traced calls, self times from the samples taken beside the trace:
     %% tracing makes the program's own CPU a few % of the recording's, so
     %% the rate sets how many samples it gets: at the default rate and at
     %% 4999 Hz.
     {"beamspy times => samples", #{times => samples}},
     {"beamspy times => samples 4999 Hz", #{times => samples, cpu_hz => 4999}}].

%% CPU_BENCH_COLUMNS: a comma-separated subset of `cpu' (the mode cpu
%% columns), `samples' (the times => samples ones) and `traced' (compensated
%% and raw); all by default (the traced ones take most of the bench's time:
%% minutes on the compiler).
selected_columns() ->
    Kinds = string:lexemes(os:getenv("CPU_BENCH_COLUMNS", "cpu,samples,traced"), ","),
    [C || {_, Opts} = C <- columns(), lists:member(column_kind(Opts), Kinds)].

column_kind(#{mode := cpu}) -> "cpu";
column_kind(#{times := samples}) -> "samples";
column_kind(_) -> "traced".

%% CPU_BENCH_SAMPLED_RUNS (default 1): how many times the times => samples
%% columns run the workload, for more samples of the program (a traced run
%% gives most of its samples to the tracer).
sampled_runs() ->
    case string:to_integer(os:getenv("CPU_BENCH_SAMPLED_RUNS", "1")) of
        {N, ""} when N >= 1 -> N;
        _ -> 1
    end.

%% Given to every column: the compiler's deep, varied stacks need more
%% than the default 256 MiB.
base_options() -> #{max_memory => 2048 * 1024 * 1024}.

workloads() ->
    [{json, bench_cpu_json}, {compiler, bench_cpu_compiler}, {server, bench_cpu_server}].

main() -> main([]).

%% @doc `erl -run bench_cpu_fidelity main BuildDir'.
-spec main([string()]) -> no_return().
main([BuildDir]) ->
    T0 = erlang:monotonic_time(millisecond),
    case bench_cpu_perf:check() of
        ok -> ok;
        {error, Why} ->
            io:format(standard_error, "cpu_fidelity: ~ts~n", [Why]),
            halt(2)
    end,
    Selected = case os:getenv("CPU_BENCH_WORKLOADS") of
                   false -> workloads();
                   S -> [W || {Name, _} = W <- workloads(), lists:member(atom_to_list(Name), string:lexemes(S, ","))]
               end,
    Results = [workload(Name, Mod, BuildDir) || {Name, Mod} <- Selected],
    io:format("# CPU-time fidelity: beamspy against perf~n~n"
              "OTP ~s, ~w schedulers, ~s UTC; perf record -F 999 -e cpu-clock:u of the untraced "
              "workload in a fresh VM (`+JPperf true +sbwt none`), `--call-graph dwarf` and `fp`.~n~n"
              "Attribution rule: ~s.~n~nLeaf rule: ~s.~n",
              [erlang:system_info(otp_release), erlang:system_info(schedulers_online), now_utc(),
               bench_cpu_attribute:rule(), bench_cpu_attribute:leaf_rule()]),
    _ = [report(R) || R <- Results],
    summary(Results),
    io:format("~nWall time of the whole bench: ~w s.~n", [(erlang:monotonic_time(millisecond) - T0) div 1000]),
    halt(0).

%%% One workload ----------------------------------------------------------

workload(Name, Mod, BuildDir) ->
    progress("~s: preparing", [Name]),
    case Mod:prepare() of
        {error, Why} ->
            #{name => Name, error => Why};
        {ok, Input, Desc} ->
            progress("~s: ~s", [Name, Desc]),
            Modset = maps:from_keys([atom_to_binary(M) || M <- Mod:modules()], true),
            Perf = [{CG, perf(Mod, CG, BuildDir)} || CG <- [dwarf, fp]],
            _ = Mod:run(Input),
            Cols = [{Label, column(Name, Mod, Input, Label, Opts, Modset)} || {Label, Opts} <- selected_columns()],
            #{name => Name, desc => Desc, perf => Perf, columns => Cols}
    end.

perf(Mod, CallGraph, BuildDir) ->
    progress("~s: perf record --call-graph ~s", [Mod, CallGraph]),
    case bench_cpu_perf:record(Mod, CallGraph, BuildDir, Mod:modules()) of
        {ok, #{counts := C, unattributed := U, samples := N} = R} ->
            progress("~s: ~w samples in the window, ~w attributed, ~w ms", [Mod, N, N - U, maps:get(ms, R)]),
            {ok, R#{shares => bench_cpu_attribute:shares(C), coverage => (N - U) / max(N, 1),
                    leaf_shares => bench_cpu_attribute:shares(maps:get(leaves, R))}};
        {error, Why} ->
            progress("~s: perf failed: ~p", [Mod, Why]),
            {error, lists:flatten(io_lib:format("~p", [Why]))}
    end.

column(Name, Mod, Input, Label, Opts, Modset) ->
    progress("~s: ~s", [Name, Label]),
    T0 = erlang:monotonic_time(millisecond),
    %% mode cpu costs the workload nothing measurable: it runs twice as
    %% often as in perf's VM (as many samples as perf's two runs pooled for
    %% the leaf rule); a traced run is slow, and its shares are those of one
    %% run.
    MFA = case Opts of
              #{mode := cpu} -> {?MODULE, repeat, [Mod, Input, 2 * bench_cpu_child:runs(Mod)]};
              #{times := samples} -> {?MODULE, repeat, [Mod, Input, sampled_runs()]};
              _ -> {Mod, run, [Input]}
          end,
    case record(MFA, maps:merge(base_options(), Opts)) of
        {ok, #{profile := #{processes := Procs} = Profile}} ->
            Ms = erlang:monotonic_time(millisecond) - T0,
            {Ns, Unattr} = bench_cpu_attribute:beamspy_tree(Procs, Modset),
            Total = Unattr + lists:sum(maps:values(Ns)),
            progress("~s: ~s: ~w ms, ~w events", [Name, Label, Ms, maps:get(events, Profile)]),
            Leaves = case maps:get(mode, Opts, trace) of
                         cpu ->
                             {NoGc, _} = bench_cpu_attribute:beamspy_tree_without_gc(Procs, Modset),
                             #{leaf_shares => bench_cpu_attribute:shares(bench_cpu_attribute:beamspy_leaves(Procs)),
                               shares_without_gc => bench_cpu_attribute:shares(NoGc)};
                         _ -> #{} % a traced tree's frames are Erlang functions: no leaf to compare
                     end,
            {ok, Leaves#{shares => bench_cpu_attribute:shares(Ns), coverage => (Total - Unattr) / max(Total, 1),
                   cpu_ms => Total div 1000000, ms => Ms, truncated => maps:get(truncated, Profile)}};
        {error, Why} ->
            {error, lists:flatten(beamspy:format_error(Why))}
    end.

record(MFA, #{whole_vm := true} = Opts) ->
    case beamspy:start(all, maps:remove(whole_vm, Opts)) of
        {ok, S} ->
            {M, F, A} = MFA,
            _ = apply(M, F, A),
            beamspy:stop(S, #{profile => true});
        {error, _} = Error ->
            Error
    end;
record(MFA, Opts) ->
    beamspy:profile(MFA, Opts).

%% @doc Runs Mod's workload N times, as bench_cpu_child does under perf.
-spec repeat(module(), term(), pos_integer()) -> ok.
repeat(Mod, Input, N) ->
    _ = [Mod:run(Input) || _ <- lists:seq(1, N)],
    ok.

%%% Report ----------------------------------------------------------------

report(#{name := Name, error := Why}) ->
    io:format("~n## ~s~n~nnot run: ~ts~n", [Name, Why]);
report(#{name := Name, desc := Desc, perf := Perf, columns := Cols}) ->
    io:format("~n## ~s~n~n~ts~n~n", [Name, Desc]),
    _ = [io:format("- perf `--call-graph ~s`: ~ts~n", [CG, perf_line(R)]) || {CG, R} <- Perf],
    _ = [io:format("- ~s: ~ts~n", [L, column_line(R)]) || {L, R} <- Cols],
    Sides = [{"perf " ++ atom_to_list(CG), R} || {CG, R} <- Perf] ++ Cols,
    Ok = [{L, S} || {L, {ok, #{shares := S}}} <- Sides],
    Rows = lists:usort(lists:append([[K || {K, _} <- bench_cpu_attribute:top(S, ?TOP)] || {_, S} <- Ok])),
    Truth = case Ok of [{_, T} | _] -> T; [] -> #{} end,
    Sorted = lists:reverse(lists:sort([{maps:get(K, Truth, 0.0), K} || K <- Rows])),
    io:format("~nTop ~w functions of each side (share of the attributed time, %):~n~n| function |~s~n|---|~s~n",
              [?TOP, [[" ", L, " |"] || {L, _} <- Sides], [["---:|"] || _ <- Sides]]),
    _ = [io:format("| `~ts` |~s~n", [K, [[" ", cell(K, R), " |"] || {_, R} <- Sides]]) || {_, K} <- Sorted],
    leaf_report(Perf, Cols).

%% The leaf rule's table: perf's leaves of both runs together (a leaf needs
%% no unwinding: both call graphs give the same one), mode cpu's.
leaf_report(Perf, Cols) ->
    Ref = perf_leaves(Perf),
    Sides = [{"perf (both runs)", Ref} | [{L, R} || {L, {ok, #{leaf_shares := _}} = R} <- Cols]],
    Ok = [{L, S} || {L, {ok, #{leaf_shares := S}}} <- Sides],
    Rows = lists:usort(lists:append([[K || {K, _} <- bench_cpu_attribute:top(S, ?TOP)] || {_, S} <- Ok])),
    Truth = case Ok of [{_, T} | _] -> T; [] -> #{} end,
    Sorted = lists:reverse(lists:sort([{maps:get(K, Truth, 0.0), K} || K <- Rows])),
    io:format("~nLeaf rule, top ~w leaves of each side (share of the scheduler threads' samples, %):~n~n"
              "| leaf |~s~n|---|~s~n", [?TOP, [[" ", L, " |"] || {L, _} <- Sides], [["---:|"] || _ <- Sides]]),
    _ = [io:format("| `~ts` |~s~n", [K, [[" ", leaf_cell(K, R), " |"] || {_, R} <- Sides]]) || {_, K} <- Sorted],
    ok.

perf_leaves(Perf) ->
    case [L || {_, {ok, #{leaves := L}}} <- Perf] of
        [] -> {error, "no perf run"};
        Ls -> {ok, #{leaf_shares => bench_cpu_attribute:shares(
                                      lists:foldl(fun(L, Acc) -> maps:merge_with(fun(_, A, B) -> A + B end, L, Acc) end,
                                                  #{}, Ls)),
                     samples => lists:sum([lists:sum(maps:values(L)) || L <- Ls])}}
    end.

leaf_cell(K, {ok, #{leaf_shares := S}}) ->
    case maps:find(K, S) of
        {ok, V} -> io_lib:format("~.1f", [100 * V]);
        error -> "-"
    end;
leaf_cell(_, _) -> "n/a".

perf_line({ok, #{samples := N, unattributed := U, unattributed_gc := Gc, coverage := Cov, ms := Ms,
                 command := Cmd}}) ->
    io_lib:format("~w samples, ~w [unattributed] (~w of them in garbage collection), coverage ~.1f%, "
                  "~.1f s; `~ts`", [N, U, Gc, 100 * Cov, Ms / 1000, Cmd]);
perf_line({error, Why}) -> io_lib:format("n/a (~ts)", [Why]).

column_line({ok, #{coverage := Cov, cpu_ms := Cpu, ms := Ms, truncated := Tr}}) ->
    io_lib:format("~w ms of traced CPU time, coverage ~.1f%, ~.1f s~s",
                  [Cpu, 100 * Cov, Ms / 1000, case Tr of false -> ""; _ -> io_lib:format(", TRUNCATED (~w)", [Tr]) end]);
column_line({error, Why}) -> io_lib:format("n/a (~ts)", [Why]).

cell(K, {ok, #{shares := S}}) ->
    case maps:find(K, S) of
        {ok, V} -> io_lib:format("~.1f", [100 * V]);
        error -> "-"
    end;
cell(_, {error, _}) -> "n/a".

summary(Results) ->
    io:format("~n## Summary~n~nTVD of each column's per-function shares to perf's (0 = the same, 1 = disjoint), "
              "and the coverage (attributed share) of each side. TVD to mode cpu: to the shares of the "
              "untraced mode cpu column by the same rule (beamspy's own unwinding, which reaches a workload "
              "frame far more often than perf's; the leaf rule below judges that column against perf): how far "
              "tracing moves where the time goes, as each column measures it. Without GC: to that column's "
              "shares with its samples in garbage collections left out, as `times => samples` leaves them "
              "out of the functions (a call-traced process collects several times as often as untraced).~n~n"
              "| workload | column | TVD to perf dwarf | TVD to perf fp | TVD to mode cpu | to mode cpu without GC "
              "| coverage |~n|---|---|---:|---:|---:|---:|---:|~n"),
    _ = [summary_rows(R) || R <- Results],
    io:format("~nLeaf rule: TVD of mode cpu's leaf shares to perf's (both perf runs' scheduler-thread samples "
              "together).~n~n| workload | column | perf leaf samples | TVD to perf leaves |~n|---|---|---:|---:|~n"),
    _ = [leaf_summary_rows(R) || R <- Results],
    ok.

leaf_summary_rows(#{name := Name, perf := Perf, columns := Cols}) ->
    case perf_leaves(Perf) of
        {ok, #{leaf_shares := Ref, samples := N}} ->
            %% The noise floor: perf's two runs of the same workload, each
            %% against the other.
            case [R || {_, {ok, #{leaf_shares := _} = R}} <- Perf] of
                [#{leaf_shares := A, leaves := LA}, #{leaf_shares := B, leaves := LB}] ->
                    io:format("| ~s | perf run 1 against perf run 2 (the noise floor) | ~w / ~w | ~.3f |~n",
                              [Name, lists:sum(maps:values(LA)), lists:sum(maps:values(LB)),
                               bench_cpu_attribute:tvd(A, B)]);
                _ -> ok
            end,
            _ = [io:format("| ~s | ~s | ~w | ~.3f |~n", [Name, L, N, bench_cpu_attribute:tvd(S, Ref)])
                 || {L, {ok, #{leaf_shares := S}}} <- Cols],
            ok;
        {error, Why} ->
            io:format("| ~s | all | n/a (~ts) | |~n", [Name, Why])
    end;
leaf_summary_rows(_) -> ok.

summary_rows(#{name := Name, error := Why}) ->
    io:format("| ~s | all | n/a (~ts) | | | | |~n", [Name, Why]);
summary_rows(#{name := Name, perf := Perf, columns := Cols}) ->
    Dwarf = proplists:get_value(dwarf, Perf),
    Fp = proplists:get_value(fp, Perf),
    Cpu = proplists:get_value("beamspy mode => cpu", Cols),
    CpuNoGc = case Cpu of
                  {ok, #{shares_without_gc := S}} -> {ok, #{shares => S}};
                  Other -> Other
              end,
    _ = [io:format("| ~s | perf ~s | ~s | ~s | ~s | ~s | ~s |~n",
                   [Name, CG, tvd(R, Dwarf), tvd(R, Fp), tvd(R, Cpu), tvd(R, CpuNoGc), coverage(R)])
         || {CG, R} <- Perf],
    _ = [io:format("| ~s | ~s | ~s | ~s | ~s | ~s | ~s |~n",
                   [Name, L, tvd(R, Dwarf), tvd(R, Fp), tvd(R, Cpu), tvd(R, CpuNoGc), coverage(R)])
         || {L, R} <- Cols],
    ok.

tvd({ok, #{shares := P}}, {ok, #{shares := Q}}) -> io_lib:format("~.3f", [bench_cpu_attribute:tvd(P, Q)]);
tvd({error, Why}, _) -> io_lib:format("n/a (~ts)", [Why]);
tvd(_, _) -> "n/a".

coverage({ok, #{coverage := C}}) -> io_lib:format("~.1f%", [100 * C]);
coverage(_) -> "n/a".

progress(Fmt, Args) ->
    io:format(standard_error, "cpu_fidelity: " ++ Fmt ++ "~n", Args).

now_utc() ->
    {{Y, Mo, D}, {H, Mi, _}} = calendar:universal_time(),
    io_lib:format("~w-~2..0w-~2..0w ~2..0w:~2..0w", [Y, Mo, D, H, Mi]).
