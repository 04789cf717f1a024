%%% @doc The Markdown report of the benchmark suite: the main table (one row
%%% per workload, with the targets marked PASS/MISS), the memory-independence
%%% line, and a details table of every variant. Times are "min / median" of
%%% the repetitions; ratios are min over min, with the median of the
%%% per-repetition ratios (variants of one repetition ran back to back) in
%%% parentheses.
-module(bench_report).

-export([render/4]).

-define(MAX_BEAMSPY_OVER_NULL, 1.5).
-define(MIN_FPROF_OVER_BEAMSPY, 5.0).
-define(MEMORY_TOLERANCE, 0.10).

%% @doc The whole report as Markdown.
-spec render([map()], [{pos_integer(), map()}], bench_main:config(), map()) -> iodata().
render(Rows, Mem, Cfg, Meta) ->
    [header(Cfg, Meta),
     "\n## Results\n\n", main_table(Rows, Cfg),
     "\n", memory_line(Mem),
     "\n## Details\n\n", details_table(Rows),
     "\n", event_table(Rows)].

header(Cfg, #{wall_s := Wall, load := {L0, L1}, otp := Otp, schedulers := S}) ->
    io_lib:format("# beamspy benchmark\n\n"
                  "OTP ~s, ~w schedulers, ~w repetitions per variant (fprof: ~w, capped at ~w s), "
                  "compile workload ~w generated functions. Load average ~s at start, ~s at end. "
                  "Wall time ~w s.\n",
                  [Otp, S, maps:get(reps, Cfg), min(maps:get(reps, Cfg), maps:get(fprof_reps, Cfg)),
                   maps:get(fprof_timeout_ms, Cfg) div 1000,
                   maps:get(compile_funs, Cfg), L0, L1, round(Wall)]).

main_table(Rows, Cfg) ->
    Head = ["workload", "untraced ms", "null-NIF ms", "beamspy call ms", "beamspy/null",
            "write ms", "beamspy total ms", "fprof total ms", "eprof total ms",
            "fprof/beamspy total", "beamspy peak memory"],
    table(Head, [main_row(R, Cfg) || R <- Rows]).

main_row(#{workload := W, samples := S, info := Info}, Cfg) ->
    Fprof = samples(fprof, S),
    [bench_workloads:label(W),
     cell(samples(untraced, S), call_ms),
     cell(samples(null, S), call_ms),
     cell(samples(beamspy, S), call_ms),
     ratio_cell(samples(beamspy, S), call_ms, samples(null, S), call_ms,
                target(W, [fib, sort], {at_most, ?MAX_BEAMSPY_OVER_NULL})),
     cell(samples(beamspy, S), write_ms),
     cell(samples(beamspy, S), total_ms),
     cell(Fprof, total_ms),
     cell(samples(eprof, S), total_ms),
     fprof_ratio_cell(Fprof, samples(beamspy, S), Cfg, target(W, [fib, sort, procs], {at_least, ?MIN_FPROF_OVER_BEAMSPY})),
     memory_cell(Info, samples(beamspy, S))].

target(W, Ws, Target) ->
    case lists:member(W, Ws) of
        true -> Target;
        false -> none
    end.

%% fprof that timed out gives a lower bound: cap / beamspy's best total.
fprof_ratio_cell(Fprof, Beamspy, Cfg, Target) ->
    case {oks(Fprof), [S || #{status := timeout} = S <- Fprof], values(Beamspy, total_ms)} of
        {[], [_ | _], [_ | _] = Bs} ->
            Bound = maps:get(fprof_timeout_ms, Cfg) / lists:min(Bs),
            [io_lib:format("> ~.1fx", [Bound]), mark(Bound, Target)];
        _ ->
            ratio_cell(Fprof, total_ms, Beamspy, total_ms, Target)
    end.

ratio_cell(Num, NKey, Den, DKey, Target) ->
    case {values(Num, NKey), values(Den, DKey)} of
        {[_ | _] = N, [_ | _] = D} ->
            R = lists:min(N) / lists:min(D),
            Paired = [maps:get(NKey, A) / maps:get(DKey, B)
                      || {A, B} <- zip(Num, Den), ok(A), ok(B), maps:get(DKey, B) > 0],
            [io_lib:format("~.2fx (~.2fx)", [R, median(Paired)]), mark(R, Target)];
        _ ->
            "-"
    end.

mark(_, none) -> "";
mark(R, {at_most, T}) when R =< T -> " PASS";
mark(R, {at_least, T}) when R >= T -> " PASS";
mark(_, _) -> " MISS".

%% beamspy's own peak (profile run), and the median VM growth of the apply
%% runs (which includes what the workload itself allocates).
memory_cell(#{status := ok, memory_peak := P}, Runs) ->
    io_lib:format("~s (VM +~s)", [bytes(P), bytes_cell(Runs, vm_peak)]);
memory_cell(#{status := Status}, _) ->
    short(Status).

memory_line([{N1, #{memory_peak := P1}}, {N2, #{memory_peak := P2}} | _]) when P1 > 0 ->
    Ratio = P2 / P1,
    Verdict = case abs(Ratio - 1) =< ?MEMORY_TOLERANCE of
                  true -> "PASS";
                  false -> "MISS"
              end,
    io_lib:format("Memory independence: beamspy memory_peak for the loop at ~s iterations ~s, "
                  "at ~s iterations ~s; ratio ~.3f (target within ~w%) ~s\n",
                  [count(N1), bytes(P1), count(N2), bytes(P2), Ratio,
                   round(?MEMORY_TOLERANCE * 100), Verdict]);
memory_line(Mem) ->
    io_lib:format("Memory independence: not measured (~ts)\n", [short([{N, maps:get(status, I)} || {N, I} <- Mem])]).

details_table(Rows) ->
    Head = ["workload", "variant", "ok/runs", "call ms", "total ms", "VM peak growth",
            "RSS peak growth", "notes"],
    table(Head, [details_row(W, V, samples(V, S))
                 || #{workload := W, samples := S} <- Rows, V <- bench_variants:names()]).

details_row(W, V, Samples) ->
    [bench_workloads:label(W), atom_to_list(V),
     io_lib:format("~w/~w", [length(oks(Samples)), length(Samples)]),
     cell(Samples, call_ms), cell(Samples, total_ms),
     bytes_cell(Samples, vm_peak), bytes_cell(Samples, rss_peak),
     notes(V, Samples)].

notes(beamspy, S) ->
    io_lib:format("setup ~s ms; folded file ~s", [cell(S, setup_ms), bytes_cell(S, out_bytes)]);
notes(fprof, S) ->
    Timeouts = length([X || #{status := timeout} = X <- S]),
    [case values(S, trace_bytes) of
         [] -> "";
         B -> io_lib:format("trace file ~s", [bytes(median(B))])
     end,
     [io_lib:format(" timeout x~w", [Timeouts]) || Timeouts > 0]];
notes(_, S) ->
    case [St || #{status := St} <- S, St =/= ok] of
        [] -> "";
        Bad -> short(hd(Bad))
    end.

%% Cost per event: (traced call min - untraced call min) / events, events
%% as counted by beamspy in its profile run.
event_table(Rows) ->
    Head = ["workload", "events", "null ns/event", "beamspy ns/event", "beamspy - null ns/event"],
    table(Head, [event_row(R) || R <- Rows]).

event_row(#{workload := W, samples := S, info := Info}) ->
    case {maps:get(events, Info, 0), values(samples(untraced, S), call_ms)} of
        {E, [_ | _] = U} when E > 0 ->
            PerEvent = fun(V) ->
                               case values(samples(V, S), call_ms) of
                                   [] -> undefined;
                                   T -> (lists:min(T) - lists:min(U)) * 1.0e6 / E
                               end
                       end,
            N = PerEvent(null),
            B = PerEvent(beamspy),
            [bench_workloads:label(W), count(E), ns(N), ns(B),
             case {N, B} of {undefined, _} -> "-"; {_, undefined} -> "-"; _ -> ns(B - N) end];
        _ ->
            [bench_workloads:label(W), "-", "-", "-", "-"]
    end.

%%% Helpers

samples(V, Samples) -> maps:get(V, Samples, []).

ok(#{status := ok}) -> true;
ok(_) -> false.

oks(Samples) -> [S || S <- Samples, ok(S)].

values(Samples, Key) -> [maps:get(Key, S) || S <- oks(Samples), is_number(maps:get(Key, S, undefined))].

zip([A | As], [B | Bs]) -> [{A, B} | zip(As, Bs)];
zip(_, _) -> [].

median([]) -> 0;
median(L) ->
    S = lists:sort(L),
    N = length(S),
    case N rem 2 of
        1 -> lists:nth(N div 2 + 1, S);
        0 -> (lists:nth(N div 2, S) + lists:nth(N div 2 + 1, S)) / 2
    end.

%% "min / median", or what went wrong.
cell(Samples, Key) ->
    case values(Samples, Key) of
        [] -> failure(Samples);
        V -> [ms(lists:min(V)), " / ", ms(median(V))]
    end.

bytes_cell(Samples, Key) ->
    case values(Samples, Key) of
        [] -> "-";
        V -> bytes(median(V))
    end.

failure([]) -> "-";
failure(Samples) ->
    case [S || #{status := timeout} = S <- Samples] of
        [_ | _] -> "timeout";
        [] -> short(maps:get(status, hd(Samples)))
    end.

%% A status on one short line (a crash's stack trace is in results.term).
short(Status) ->
    string:slice(lists:flatten(io_lib:format("~tw", [Status])), 0, 60).

ms(X) when X < 10 -> io_lib:format("~.2f", [float(X)]);
ms(X) when X < 100 -> io_lib:format("~.1f", [float(X)]);
ms(X) -> integer_to_list(round(X)).

ns(undefined) -> "-";
ns(X) -> integer_to_list(round(X)).

bytes(B) when B < 1024 -> io_lib:format("~w B", [round(B)]);
bytes(B) when B < 1024 * 1024 -> io_lib:format("~.1f KiB", [B / 1024]);
bytes(B) -> io_lib:format("~.1f MiB", [B / (1024 * 1024)]).

count(N) when N >= 1000000 -> io_lib:format("~.2fM", [N / 1.0e6]);
count(N) when N >= 1000 -> io_lib:format("~.1fk", [N / 1.0e3]);
count(N) -> integer_to_list(N).

table(Head, Rows) ->
    Line = fun(Cells) -> ["| ", lists:join(" | ", Cells), " |\n"] end,
    [Line(Head), Line(["---" || _ <- Head]), [Line(R) || R <- Rows]].
