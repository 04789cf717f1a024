%%% bench_cpu_perf — the ground truth of the CPU-time fidelity bench:
%%% `perf record' of a workload in a fresh, untraced VM started with
%%% `+JPperf true' (the JIT writes /tmp/perf-PID.map, so JIT frames read
%%% `$mod:fun/arity'), then `perf script' read line by line here, each
%%% sample attributed by bench_cpu_attribute's rule. Only the samples of
%%% the VM's own process inside the window that bench_cpu_child wrote
%%% count (no boot, no warm-up).
-module(bench_cpu_perf).

-export([check/0, record/4]).

-define(HZ, 999).
%% User-space CPU time only, as beamspy's own sampler will take it
%% (`exclude_kernel'): works for an unprivileged user at
%% kernel.perf_event_paranoid 2, the common default.
-define(EVENT, "cpu-clock:u").

%% @doc Whether `perf record' works here; an error saying how to fix it.
-spec check() -> ok | {error, string()}.
check() ->
    case os:find_executable("perf") of
        false -> {error, "perf is not installed: apt-get install linux-perf"};
        Perf ->
            Data = tmp("check.data"),
            {Status, Out} = run(Perf, ["record", "-q", "-F", integer_to_list(?HZ), "-e", ?EVENT,
                                       "-o", Data, "--", "true"]),
            _ = file:delete(Data),
            case Status of
                0 -> ok;
                _ -> {error, lists:flatten(io_lib:format(
                         "perf record -e " ?EVENT " fails (exit ~w): ~ts~nkernel.perf_event_paranoid is ~ts: "
                         "run the bench as root, or lower it as root: sysctl kernel.perf_event_paranoid=2 "
                         "(3 and up refuse unprivileged users; in a container, a missing CAP_PERFMON or "
                         "the seccomp profile can refuse perf_event_open too)",
                         [Status, string:trim(Out), paranoid()]))}
            end
    end.

paranoid() ->
    case file:read_file("/proc/sys/kernel/perf_event_paranoid") of
        {ok, B} -> string:trim(B);
        _ -> "unknown"
    end.

%% @doc perf record of Module's workload with the call graph given
%% (`dwarf' or `fp') in a fresh VM; the samples attributed by the rule.
%% Returns the attributed counts, the unattributed count, the command and
%% the wall time.
-spec record(module(), dwarf | fp, file:filename(), [module()]) ->
          {ok, #{counts := #{binary() => pos_integer()}, unattributed := non_neg_integer(),
                 unattributed_gc := non_neg_integer(), leaves := #{binary() => pos_integer()},
                 samples := non_neg_integer(), command := string(), ms := non_neg_integer()}}
          | {error, term()}.
record(Mod, CallGraph, BuildDir, WorkloadMods) ->
    Perf = os:find_executable("perf"),
    Erl = filename:join([code:root_dir(), "bin", "erl"]),
    Tag = atom_to_list(Mod) ++ "-" ++ atom_to_list(CallGraph),
    Data = tmp(Tag ++ ".data"),
    Win = tmp(Tag ++ ".window"),
    Args = ["record", "-q", "-F", integer_to_list(?HZ), "-e", ?EVENT, "-k", "CLOCK_MONOTONIC",
            "--call-graph", atom_to_list(CallGraph), "-o", Data, "--",
            Erl, "+JPperf", "true", "+sbwt", "none", "+sbwtdcpu", "none", "+sbwtdio", "none",
            "-noshell", "-pa", BuildDir, "-run", "bench_cpu_child", "main", atom_to_list(Mod), Win],
    T0 = erlang:monotonic_time(millisecond),
    {Status, Out} = run(Perf, Args),
    Ms = erlang:monotonic_time(millisecond) - T0,
    Command = lists:flatten(lists:join(" ", ["perf" | Args])),
    Result = case {Status, file:consult(Win)} of
                 {0, {ok, [{Pid, Start, End}]}} ->
                     Modset = maps:from_keys([atom_to_binary(M) || M <- WorkloadMods], true),
                     {Counts, Unattr, Gc, Leaves} = script(Perf, Data, Pid, Start, End, Modset),
                     {ok, #{counts => Counts, unattributed => Unattr, unattributed_gc => Gc, leaves => Leaves,
                            samples => Unattr + lists:sum(maps:values(Counts)),
                            command => Command, ms => Ms}};
                 {_, Consult} ->
                     {error, {perf_record_failed, Status, string:trim(Out), Consult}}
             end,
    _ = [file:delete(F) || F <- [Data, Win]],
    Result.

%% Reads `perf script' line by line: a header `COMM PID/TID TIME:' then
%% one line per frame, innermost first (`ADDR SYMBOL (DSO)'), then a blank
%% line. Every sample of the VM's process in the window counts for the
%% caller rule; for the leaf rule, those of its scheduler threads (COMM
%% `N_scheduler', `N_dirty_cpu_sch', `N_dirty_io_sche': where Erlang
%% processes run, all that beamspy samples).
script(Perf, Data, Pid, Start, End, Modset) ->
    Port = open_port({spawn_executable, Perf},
                     [{args, ["script", "--no-inline", "--no-demangle", "--ns", "-F", "comm,pid,tid,time,ip,sym,dso",
                              "-i", Data]},
                      {line, 4096}, binary, exit_status, eof]),
    St = #{port => Port, pid => Pid, start => Start, 'end' => End, modset => Modset,
           counts => #{}, unattributed => 0, gc => 0, cur => skip, found => false, in_gc => false,
           leaves => #{}, leaf => false},
    loop(St).

loop(#{port := Port} = St) ->
    receive
        {Port, {data, {eol, Line}}} -> loop(line(Line, St));
        {Port, {data, {noeol, _}}} -> loop(St);
        {Port, eof} ->
            St1 = finish(St),
            receive {Port, {exit_status, _}} -> ok after 5000 -> ok end,
            port_close(Port),
            {maps:get(counts, St1), maps:get(unattributed, St1), maps:get(gc, St1), maps:get(leaves, St1)}
    end.

line(<<>>, St) -> finish(St);
line(<<$\t, _/binary>> = Line, St) ->
    case St of
        #{cur := skip} -> St;
        #{leaf := true, leaves := Leaves} ->
            {Sym, Dso} = frame_symbol(Line),
            Key = bench_cpu_attribute:perf_leaf(Sym, Dso),
            caller_frame(Sym, St#{leaf := false, leaves := maps:update_with(Key, fun(N) -> N + 1 end, 1, Leaves)});
        #{found := false} ->
            {Sym, _} = frame_symbol(Line),
            caller_frame(Sym, St);
        _ -> St
    end;
line(Header, #{pid := Pid, start := Start, 'end' := End} = St0) ->
    St = finish(St0),
    [Comm, PidTid, Time | _] = string:lexemes(Header, " :"),
    [P | _] = binary:split(PidTid, <<"/">>),
    [Sec, Frac] = binary:split(Time, <<".">>),
    Ns = binary_to_integer(Sec) * 1000000000 + binary_to_integer(Frac),
    case binary_to_integer(P) =:= Pid andalso Ns >= Start andalso Ns =< End of
        true -> St#{cur := sample, found := false, in_gc := false, leaf := is_scheduler(Comm)};
        false -> St#{cur := skip}
    end.

caller_frame(Sym, #{found := false, modset := Modset} = St) ->
    case bench_cpu_attribute:perf_frame(Sym, Modset) of
        false -> St#{in_gc := maps:get(in_gc, St) orelse is_gc(Sym)};
        Key -> St#{found := Key}
    end;
caller_frame(_, St) -> St.

is_scheduler(Comm) ->
    lists:any(fun(Suffix) -> binary:longest_common_suffix([Comm, Suffix]) =:= byte_size(Suffix) end,
              [<<"_scheduler">>, <<"_dirty_cpu_sch">>, <<"_dirty_io_sche">>]).

%% The VM's garbage collector (a dirty scheduler's collection of a large
%% heap has no Erlang frame at all).
is_gc(Sym) ->
    binary:match(Sym, [<<"garbage_collect">>, <<"erts_gc_">>]) =/= nomatch.

%% {Symbol, Dso} of a frame line `ADDR SYMBOL (DSO)'.
frame_symbol(Line) ->
    case string:lexemes(Line, " \t") of
        [_Addr | Rest] when Rest =/= [] ->
            {Sym, Dso} = case lists:last(Rest) of
                             <<$(, _/binary>> = D -> {lists:droplast(Rest), string:trim(D, both, "()")};
                             _ -> {Rest, <<>>}
                         end,
            {iolist_to_binary(lists:join(" ", Sym)), Dso};
        _ -> {<<>>, <<>>}
    end.

finish(#{cur := skip} = St) -> St;
finish(#{found := false, unattributed := U, gc := G, in_gc := InGc} = St) ->
    St#{cur := skip, unattributed := U + 1, gc := G + case InGc of true -> 1; false -> 0 end};
finish(#{found := Key, counts := C} = St) ->
    St#{cur := skip, counts := maps:update_with(Key, fun(N) -> N + 1 end, 1, C)}.

run(Exe, Args) ->
    Port = open_port({spawn_executable, Exe}, [{args, Args}, exit_status, stderr_to_stdout, binary]),
    collect(Port, []).

collect(Port, Acc) ->
    receive
        {Port, {data, D}} -> collect(Port, [D | Acc]);
        {Port, {exit_status, S}} -> {S, iolist_to_binary(lists:reverse(Acc))}
    end.

tmp(Name) ->
    filename:join(os:getenv("CPU_BENCH_TMP", "/tmp"), "bench_cpu_" ++ os:getpid() ++ "_" ++ Name).
