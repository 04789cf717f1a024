%%% mode => cpu: the kernel's CPU samples of the VM's scheduler threads,
%%% charged to the process each thread ran. This module's VM runs with
%%% +JPperf true (test/erlang/run.sh), as mode cpu needs. Checked on real
%%% Erlang code: the caller's samples land in the function that burns the
%%% CPU, with the real recursion depth; two workers running different code
%%% are told apart; a VM started without the flag is refused with the flag
%%% to add; nothing is left traced.
-module(beamspy_cpu_tests).

-include_lib("eunit/include/eunit.hrl").

-import(bs_test_lib, [own_tree/1, tree_of/2, node_map/1, assert_clean/0, trace_info/2]).

-define(FIB, <<"bs_cpu_wl:fib/1">>).

setup() ->
    [{module, M} = code:ensure_loaded(M) || M <- [bs_cpu_wl, bs_cpu_server]],
    ok.

cpu_test_() ->
    {setup, fun setup/0, fun(_) -> ok end,
     [{"the caller's samples are in the function that burns the CPU", {timeout, 120, fun caller_samples/0}},
      {"a sample of fib(25) has its real recursion depth", {timeout, 120, fun depth/0}},
      {"samples in the VM's C code reach the Erlang function that called it", {timeout, 120, fun c_frames/0}},
      {"two workers running different code are told apart", {timeout, 120, fun two_workers/0}},
      {"a dirty scheduler's spin before sleep is [spin], never a process's", {timeout, 120, fun spin/0}},
      {"top's hottest functions from CPU samples; the session ends with top", {timeout, 120, fun top_cpu/0}},
      {"a session of every process traces none, and names each sample's process", {timeout, 120, fun whole_vm_untraced/0}},
      {"a session of chosen processes traces no scheduling, keeps them and their children only",
       {timeout, 120, fun chosen_no_running/0}},
      {"a gen_server's samples are in its 10 us handlers", {timeout, 120, fun server_handlers/0}},
      {"a large collection on a dirty scheduler is charged to its process", {timeout, 120, fun dirty_gc/0}},
      {"a dirty collection after a BIF keeps the whole stack of the process", {timeout, 120, fun dirty_gc_after_bif/0}},
      {"a session of every process charges a dirty collection to its process, tracing none",
       {timeout, 120, fun whole_vm_dirty_named/0}},
      {"the default rate, said in the notes", {timeout, 120, fun default_rate/0}},
      {"bad mode and rate options are refused before anything runs", fun bad_options/0},
      {"a VM without +JPperf true is refused, naming the flag", {timeout, 120, fun no_perf_flag/0}},
      {"rings with stack copies refused by the locked-memory limit: frame pointers, said in the notes",
       {timeout, 180, fun locked_memory_fallback/0}}]}.

%% Samples (self weights) of a tree, and those whose path holds Frame.
samples(Nodes) ->
    lists:sum([S || {_, _, _, S, _, _} <- Nodes]).

samples_under(Nodes, Frame) ->
    M = node_map(Nodes),
    lists:sum([S || {Id, _, _, S, _, _} <- Nodes, S > 0, lists:member(Frame, path_frames(M, Id))]).

path_frames(M, Id) ->
    case maps:get(Id, M) of
        {_, undefined, F, _, _, _} -> [F];
        {_, Parent, F, _, _, _} -> [F | path_frames(M, Parent)]
    end.

caller_samples() ->
    {ok, #{result := {return, Rounds}, profile := P}} =
        beamspy:profile({bs_cpu_wl, burn, [400]}, #{mode => cpu, cpu_hz => 999}),
    ?assert(Rounds >= 1),
    #{unit := samples, notes := Notes} = P,
    ?assertMatch({match, _}, re:run(Notes, "CPU samples at 999 Hz")),
    Nodes = own_tree(P),
    All = samples(Nodes),
    Fib = samples_under(Nodes, ?FIB),
    ?debugFmt("caller: ~w samples, ~w under fib/1; notes: ~ts", [All, Fib, Notes]),
    %% 400 ms of CPU at 999 Hz: some 400 samples; far fewer would mean the
    %% join with the caller failed.
    ?assert(All >= 100),
    ?assert(Fib >= 0.8 * All),
    assert_clean().

depth() ->
    {ok, #{profile := P}} = beamspy:profile({bs_cpu_wl, deep, [400]}, #{mode => cpu, cpu_hz => 999}),
    Nodes = own_tree(P),
    M = node_map(Nodes),
    Deepest = lists:max([0 | [length([F || F <- path_frames(M, Id), F =:= ?FIB])
                              || {Id, _, _, S, _, _} <- Nodes, S > 0]]),
    ?debugFmt("deepest sample: ~w fib/1 frames", [Deepest]),
    ?assert(Deepest >= 20),
    ?assert(Deepest =< 26),
    assert_clean().

%% bif_loop/2 spends most of its time in C (BIFs, GC): the kernel's
%% frame-pointer chains of those samples never reach it (26% of the samples
%% were under it with frame pointers alone, measured on OTP 25 in this test).
%% Unwound through the C frames' DWARF CFI, a sample under a shared JIT
%% fragment takes its caller from the call site the fragment saved in the
%% scheduler's registers, inside the stack copy (fragment_site.h): 69-77% of
%% the samples were under bif_loop/2 (43-52% when the caller was read from
%% the process's stack at the drain). Most of the rest were in garbage
%% collections, whose caller lies only on the process's stack, which the
%% collection itself moves before any drain can read it: the caller is now
%% taken as each collection of the process starts (the return address the
%% fragment stores in the process, read in the tracer's enabled/3): 78-87%
%% (three runs). The frames below a collection's caller are taken as the
%% collection ends, when a sample landed in it (gc_stacks.h): 87-89% under
%% bif_loop/2 on OTP 25, and 81-85% of the collections' samples hold
%% until_cpu/3, the loop's caller (52% in a run before, when those frames
%% were read at the drain, after the collection had moved the stack); bounds 65% and
%% 50%. What still misses is a BIF's caller's callers, read at the drain
%% once the process has moved on: such chains go under [truncated].
%% term_to_binary's samples (called from bif_loop/2 through
%% global::call_light_bif_shared) are all under it but where the site could
%% not be read: 100% measured, 13-24% before.
-define(GC_FRAGMENT, <<"[JIT] global::garbage_collect">>).

c_frames() ->
    {ok, #{profile := P}} = beamspy:profile({bs_cpu_wl, bifs, [600]}, #{mode => cpu, cpu_hz => 999}),
    #{notes := Notes} = P,
    Nodes = own_tree(P),
    All = samples(Nodes),
    Under = samples_under(Nodes, <<"bs_cpu_wl:bif_loop/2">>),
    T2B = samples_under(Nodes, <<"term_to_binary_1 [beam.smp]">>),
    T2BUnder = samples_under_all(Nodes, [<<"term_to_binary_1 [beam.smp]">>, <<"bs_cpu_wl:bif_loop/2">>]),
    ?debugFmt("C frames: ~w samples, ~w under bif_loop/2; term_to_binary: ~w samples, ~w under bif_loop/2; "
              "notes: ~ts", [All, Under, T2B, T2BUnder, Notes]),
    ?assert(All >= 100),
    case re:run(Notes, "C frames unwound with DWARF") of
        {match, _} ->
            ?assert(Under >= 0.65 * All),
            %% The collections' callers, taken as each collection starts.
            {match, [Gc]} = re:run(Notes, "(\\d+) by the collection's start", [{capture, all_but_first, list}]),
            ?assert(list_to_integer(Gc) >= 1),
            %% ... and the frames under them, as each sampled collection ends.
            {match, [GcStacks]} = re:run(Notes, "(\\d+) in a collection took the frames under their caller",
                                         [{capture, all_but_first, list}]),
            ?assert(list_to_integer(GcStacks) >= 1),
            GcAll = samples_under(Nodes, ?GC_FRAGMENT),
            GcWhole = samples_under_all(Nodes, [?GC_FRAGMENT, <<"bs_cpu_wl:until_cpu/3">>]),
            ?debugFmt("collections: ~w samples, ~w with the whole stack under them", [GcAll, GcWhole]),
            ?assert(GcWhole >= 0.5 * GcAll),
            case frame_named(Nodes, <<"term_to_binary_1 [beam.smp]">>) of
                true ->
                    ?assert(T2B >= 20),
                    ?assert(T2BUnder >= 0.9 * T2B);
                false ->
                    %% Debian's OTP 29 beam.smp keeps no static symbols:
                    %% its C functions are named by address there.
                    ?debugMsg("SKIP term_to_binary's share: beam.smp names no term_to_binary_1 here")
            end;
        nomatch ->
            ?assertMatch({match, _}, re:run(Notes, "C frames not unwound: ")),
            ?debugMsg("SKIP the share under bif_loop/2: C frames not unwound here")
    end,
    assert_clean().

%% Samples whose path holds every one of Frames.
%% Whether any node of a tree is the frame named Frame.
frame_named(Nodes, Frame) ->
    lists:keymember(Frame, 3, Nodes).

samples_under_all(Nodes, Frames) ->
    M = node_map(Nodes),
    lists:sum([S || {Id, _, _, S, _, _} <- Nodes, S > 0,
                    lists:all(fun(F) -> lists:member(F, path_frames(M, Id)) end, Frames)]).

two_workers() ->
    with_workers(fun two_workers/2).

two_workers(A, B) ->
    {ok, S} = beamspy:start([bs_cpu_alpha, bs_cpu_beta], #{mode => cpu, cpu_hz => 999}),
    A ! {run, alpha, 300, self()},
    B ! {run, beta, 300, self()},
    receive {done, A} -> ok end,
    receive {done, B} -> ok end,
    {ok, #{profile := P}} = beamspy:stop(S, #{profile => true}),
    TA = tree_of(A, P),
    TB = tree_of(B, P),
    Alpha = <<"bs_cpu_wl:alpha/1">>,
    Beta = <<"bs_cpu_wl:beta/1">>,
    InA = samples_under(TA, Alpha),
    InB = samples_under(TB, Beta),
    ?debugFmt("alpha worker: ~w samples, ~w in alpha/1; beta worker: ~w samples, ~w in beta/1",
              [samples(TA), InA, samples(TB), InB]),
    ?assert(InA >= 50),
    ?assert(InB >= 50),
    assert_told_apart(P, {TA, Alpha, InA}, {TB, Beta, InB}),
    assert_clean().

%% Each worker's function is its own worker's in at least 95% of its
%% samples anywhere (issue 23's bound), and at most 5% of it shows in the
%% other worker. Not 100%: a sample taken as a scheduler switches from one
%% process to the next can name the process already chosen while the frame
%% pointers still walk the one leaving (1 of 132 seen on OTP 29).
assert_told_apart(P, {TA, Alpha, InA}, {TB, Beta, InB}) ->
    AllAlpha = lists:sum([samples_under(N, Alpha) || {_, N} <- maps:get(processes, P)]),
    AllBeta = lists:sum([samples_under(N, Beta) || {_, N} <- maps:get(processes, P)]),
    ?debugFmt("alpha/1: ~w of ~w samples in the alpha worker; beta/1: ~w of ~w in the beta worker",
              [InA, AllAlpha, InB, AllBeta]),
    ?assert(InA >= 0.95 * AllAlpha),
    ?assert(InB >= 0.95 * AllBeta),
    ?assert(samples_under(TA, Beta) =< 0.05 * InB),
    ?assert(samples_under(TB, Alpha) =< 0.05 * InA).

%% Runs Test(A, B) with the two named workers, and ends them whatever
%% happens: a failed check must not leave the names taken (the next test's
%% workers could not register, and it would wait for them forever).
with_workers(Test) ->
    A = spawn(bs_cpu_wl, worker, [bs_cpu_alpha]),
    B = spawn(bs_cpu_wl, worker, [bs_cpu_beta]),
    try
        wait_registered([bs_cpu_alpha, bs_cpu_beta]),
        true = (whereis(bs_cpu_alpha) =:= A) andalso (whereis(bs_cpu_beta) =:= B),
        Test(A, B)
    after
        [begin unlink(W), exit(W, kill) end || W <- [A, B]],
        wait_unregistered([bs_cpu_alpha, bs_cpu_beta])
    end.

wait_unregistered(Names) ->
    case [N || N <- Names, whereis(N) =/= undefined] of
        [] -> ok;
        _ -> timer:sleep(5), wait_unregistered(Names)
    end.

%% A process wakes a dirty CPU scheduler 300 times (a 1 ms dirty BIF, then
%% 2 ms asleep): after each job that scheduler spins before it sleeps,
%% running no process. A busy process burns CPU meanwhile. The dirty
%% scheduler's own samples are mostly [spin] (measured 97% on OTP 25: the
%% rest is its scheduling); no process's sample is.
spin() ->
    {ok, S} = beamspy:start(all, #{mode => cpu, cpu_hz => 999}),
    Self = self(),
    Hot = spawn(fun() -> bs_cpu_wl:burn(300), Self ! {burnt, self()} end),
    Waker = spawn(fun() -> dirty_waker(300), Self ! {woken, self()} end),
    receive {burnt, Hot} -> ok end,
    receive {woken, Waker} -> ok end,
    {ok, #{profile := P}} = beamspy:stop(S, #{profile => true}),
    #{notes := Notes, processes := Trees} = P,
    Spin = <<"[spin]">>,
    [Dirty] = [N || {<<"[dirty cpu scheduler]">>, N} <- Trees],
    %% The waker's dirty BIF runs in C under no JIT frame: where samples name
    %% their process by its registers it is under the dirty scheduler's node
    %% too (erts_call_dirty_bif), the process's work, not the scheduler's own.
    Own = samples(Dirty) - samples_under(Dirty, <<"erts_call_dirty_bif [beam.smp]">>),
    Spun = samples_under(Dirty, Spin),
    InProcesses = lists:sum([samples_under(N, Spin) || {<<"<", _/binary>>, N} <- Trees]),
    ?debugFmt("dirty cpu scheduler: ~w samples of its own, ~w [spin]; hot process: ~w samples; ~w [spin] in processes",
              [Own, Spun, samples(tree_of(Hot, P)), InProcesses]),
    ?assertEqual(0, InProcesses),
    ?assertEqual(0, samples_under(tree_of(Hot, P), Spin)),
    ?assert(samples_under(tree_of(Hot, P), ?FIB) >= 50),
    ?assertMatch({match, _}, re:run(Notes, "[0-9]+ of schedulers spinning before they sleep \\(\\[spin\\]\\)")),
    Unwound = re:run(Notes, "C frames unwound with DWARF") =/= nomatch,
    Named = samples_under(Dirty, <<"erts_schedule [beam.smp]">>) > 0,
    case Unwound andalso Named of
        true when Own < 30 ->
            %% How long a dirty scheduler spins before it sleeps follows the
            %% machine's load (it yields its core when others want it): on a
            %% loaded host it may hardly spin, and a share of a handful of
            %% samples says nothing.
            ?debugFmt("SKIP the [spin] share: only ~w samples of the scheduler's own", [Own]);
        true ->
            ?assert(Spun >= 0.5 * Own);
        false ->
            %% Only the leaf is known (no unwinding, or a beam.smp that names
            %% none of its functions: Debian's OTP 29): sched_yield and the
            %% futex are told, the pause loop (an unnamed function) is not
            %% (docs/cpu-mode.md).
            ?debugFmt("SKIP the [spin] share: ~ts", [case Unwound of
                                                       true -> "beam.smp names none of its functions here";
                                                       false -> "C frames not unwound here"
                                                   end])
    end,
    assert_clean().

%% beamspy_top with the CPU: the window's hottest function is the one the
%% busy process burns (fib/1, 300 ms of CPU at 999 Hz), as a count of CPU
%% samples; with cpu => false the report says why not. The CPU session
%% ends when top stops, and when the top process is killed.
top_cpu() ->
    {ok, Top} = beamspy_top:start(#{owner => self(), cpu_hz => 999}),
    Self = self(),
    Hot = spawn(fun() -> bs_cpu_wl:burn(300), Self ! {burnt, self()} end),
    receive {burnt, Hot} -> ok end,
    {ok, #{hot := cpu, cpu_hz := 999, cpu_samples := N, functions := Fs}} = beamspy_top:report(Top),
    Fib = proplists:get_value({bs_cpu_wl, fib, 1}, Fs, 0),
    ?debugFmt("top: ~w samples of processes, ~w in fib/1; first: ~p", [N, Fib, lists:sublist(Fs, 3)]),
    ?assert(Fib >= 50),
    ?assert(Fib >= 0.5 * N),
    ?assertMatch([{{bs_cpu_wl, fib, 1}, _} | _], Fs),
    ?assertMatch([_], beamspy:sessions()),
    ok = beamspy_top:stop(Top),
    ?assertEqual([], beamspy:sessions()),
    {ok, Off} = beamspy_top:start(#{owner => self(), cpu => false}),
    {ok, #{hot := sampled, hot_why := <<"--no-cpu was given">>}} = beamspy_top:report(Off),
    ?assertEqual([], beamspy:sessions()),
    ok = beamspy_top:stop(Off),
    {ok, Killed} = beamspy_top:start(#{owner => self()}),
    ?assertMatch([_], beamspy:sessions()),
    exit(Killed, kill),
    ?assert(until(fun() -> beamspy:sessions() =:= [] end, 3000)),
    assert_clean().

%% Polls Cond every 10 ms, at most N times.
until(Cond, N) ->
    Cond() orelse (N > 0 andalso begin timer:sleep(10), until(Cond, N - 1) end).

dirty_waker(0) ->
    ok;
dirty_waker(N) ->
    erts_debug:dirty_cpu(wait, 1),
    receive after 2 -> ok end,
    dirty_waker(N - 1).

%% Flags of every process (and of `new' ones) other than none, as beamspy
%% sees them (legacy tracing and its trace sessions).
traced_processes() ->
    New = [{new, F} || {flags, F} <- [trace_info(new, flags)], F =/= []],
    New ++ [{P, F} || P <- erlang:processes(), {flags, F} <- [trace_info(P, flags)], F =/= []].

%% Where samples name their process (x86_64: r13), a whole-VM session sets
%% no trace flag on any process, and still charges each sample to the
%% process that took it: two workers started before the session, told apart.
%% Elsewhere it traces scheduling (`running'), as the fallback join needs.
whole_vm_untraced() ->
    with_workers(fun whole_vm_untraced/2).

whole_vm_untraced(A, B) ->
    {ok, S} = beamspy:start(all, #{mode => cpu, cpu_hz => 999}),
    Traced = traced_processes(),
    A ! {run, alpha, 300, self()},
    B ! {run, beta, 300, self()},
    receive {done, A} -> ok end,
    receive {done, B} -> ok end,
    {ok, #{profile := #{notes := Notes} = P}} = beamspy:stop(S, #{profile => true}),
    ?debugFmt("traced during the session: ~w processes; notes: ~ts", [length(Traced), Notes]),
    case beamspy_cpu:join() of
        registers ->
            ?assertEqual([], Traced),
            ?assertMatch({match, _}, re:run(Notes, "read from r13 \\(no scheduling traced\\)"));
        running ->
            ?assert(lists:all(fun({_, F}) -> lists:member(running, F) end, Traced))
    end,
    Alpha = <<"bs_cpu_wl:alpha/1">>,
    Beta = <<"bs_cpu_wl:beta/1">>,
    TA = tree_of(A, P),
    TB = tree_of(B, P),
    InA = samples_under(TA, Alpha),
    InB = samples_under(TB, Beta),
    ?debugFmt("alpha worker: ~w samples, ~w in alpha/1; beta worker: ~w samples, ~w in beta/1",
              [samples(TA), InA, samples(TB), InB]),
    ?assert(InA >= 50),
    ?assert(InB >= 50),
    %% A function run only by one process: its samples under it.
    assert_told_apart(P, {TA, Alpha, InA}, {TB, Beta, InB}),
    assert_clean().

%% apply/2 of a call that spawns a child: the caller is traced for its
%% spawns (`procs', set_on_spawn) and collections, never `running'; the child's samples
%% are under the child, and a busy process outside the call is left out.
chosen_no_running() ->
    B = spawn(bs_cpu_wl, worker, [bs_cpu_beta]),
    wait_registered([bs_cpu_beta]),
    Me = self(),
    B ! {run, beta, 600, Me},
    Work = fun() ->
                   Flags = [F || {flags, F} <- [trace_info(self(), flags)]],
                   Child = spawn(fun() -> receive go -> bs_cpu_wl:burn(300), Me ! {burnt, self()} end end),
                   ChildFlags = [F || {flags, F} <- [trace_info(Child, flags)]],
                   Child ! go,
                   receive {burnt, Child} -> ok end,
                   {Flags, Child, ChildFlags}
           end,
    {ok, #{result := {return, {Flags, Child, ChildFlags}}, profile := P}} =
        beamspy:profile(Work, #{mode => cpu, cpu_hz => 999}),
    receive {done, B} -> ok end,
    ?debugFmt("caller's flags ~w, child's ~w", [Flags, ChildFlags]),
    [?assertNot(lists:member(running, F)) || F <- Flags ++ ChildFlags],
    case beamspy_cpu:join() of
        registers ->
            ?assertEqual([[garbage_collection, procs, set_on_spawn]], [lists:sort(F) || F <- Flags]),
            ?assertEqual([[garbage_collection, procs, set_on_spawn]], [lists:sort(F) || F <- ChildFlags]);
        running ->
            ok
    end,
    TC = tree_of(Child, P),
    Fib = samples_under(TC, ?FIB),
    ?debugFmt("child: ~w samples, ~w under fib/1", [samples(TC), Fib]),
    %% burn/1 counts the whole VM's CPU, which the busy process outside the
    %% call shares: the child gets 100-250 of its 300 ms (99 of 102 samples
    %% under fib/1 seen on a loaded OTP 29 run), so the share is asserted.
    ?assert(samples(TC) >= 30),
    ?assert(Fib >= 0.8 * samples(TC)),
    %% The process outside the call is not in the profile.
    ?assertEqual(0, lists:sum([samples_under(N, <<"bs_cpu_wl:beta/1">>) || {_, N} <- maps:get(processes, P)])),
    exit(B, kill),
    assert_clean().

%% A process whose heap is large has it collected on a dirty CPU
%% scheduler, from C: no JIT frame, so no r13 names the process. The
%% collection's start and end, traced on that thread, do: its samples are
%% the process's (before, a session of chosen processes left them out).
dirty_gc() ->
    {ok, #{profile := P}} = beamspy:profile({bs_cpu_wl, big_heaps, [40]}, #{mode => cpu, cpu_hz => 999}),
    %% Each collection's stack is taken as it starts: the process waits for
    %% it where big_heaps/1 called lists:seq/2.
    dirty_gc_samples(P, <<"bs_cpu_wl:big_heaps/1">>,
                     fun(N, K, Own, Under) -> Own >= N andalso K >= 0.5 * N andalso Under >= K end).

%% binary_to_list/1 of a binary that stays live: the VM collects on a dirty
%% scheduler right after the BIF, with the process scheduled out inside
%% bif_heaps_loop/2, that function's y registers on top of its stack. The
%% stack is walked from the frame pointer the JIT saved with the stack's top
%% (from the top itself, the walk read a y register and stopped: the
%% collection's samples held bif_heaps_loop/2 alone, about half of the
%% process's samples missed bif_heaps/1). The session learns the JIT's
%% offsets from the perf map as it opens, and the Process * from samples
%% in the BIF's C code: before, a process whose samples were all in C got
%% no collection stack at all.
dirty_gc_after_bif() ->
    {ok, #{result := {return, {done, ok}}, profile := P}} =
        beamspy:profile({bs_cpu_wl, bif_heaps, [40]}, #{mode => cpu, cpu_hz => 999}),
    dirty_gc_samples(P, <<"bs_cpu_wl:bif_heaps/1">>, fun(N, K, Own, Under) -> K >= 0.5 * N andalso Under >= 0.8 * Own end).

%% The notes' count of samples in dirty collections (N, K of them under
%% the process's stack), the caller's own samples and those under Frame,
%% checked by Check; at least 10 such samples. Only where registers name
%% the process (x86_64).
dirty_gc_samples(#{notes := Notes} = P, Frame, Check) ->
    ?debugFmt("notes: ~ts", [Notes]),
    case beamspy_cpu:join() of
        registers ->
            {match, [N, K]} = re:run(Notes, "\\((\\d+) in their garbage collection on a dirty scheduler, "
                                     "(\\d+) of them under the process's stack\\)",
                                     [{capture, all_but_first, list}]),
            Own = own_tree(P),
            Under = samples_under(Own, Frame),
            ?debugFmt("~s samples in dirty collections, ~s under the process's stack; the process has ~w, "
                      "~w under ~s", [N, K, samples(Own), Under, Frame]),
            ?assert(list_to_integer(N) >= 10),
            ?assert(Check(list_to_integer(N), list_to_integer(K), samples(Own), Under));
        running ->
            ok
    end,
    assert_clean().

%% A session of every process traces no collection, so no callback logs
%% a dirty one. The dirty scheduler's C frames keep the Process * they work
%% for in a callee-saved register, which the CFI restores: a value that is
%% the Process * of a pid seen in the samples names the process (only under
%% erts_dirty_process_main, never in erts_schedule, where a register may
%% still hold the process run last). Before, these samples went to
%% `[dirty cpu scheduler]'. It needs the C frames unwound and beam.smp's
%% dynamic symbols (Debian's OTP 29 strips them: there they stay the
%% scheduler's, said by the notes' counts).
whole_vm_dirty_named() ->
    {ok, S} = beamspy:start(all, #{mode => cpu, cpu_hz => 999}),
    Me = self(),
    W = spawn(fun() -> Me ! {done, self(), bs_cpu_wl:bif_heaps(40)} end),
    receive {done, W, {done, ok}} -> ok end,
    {ok, #{profile := #{notes := Notes} = P}} = beamspy:stop(S, #{profile => true}),
    ?debugFmt("notes: ~ts", [Notes]),
    Tree = tree_of(W, P),
    Dirty = samples_under(Tree, <<"erts_dirty_process_main [beam.smp]">>),
    {match, [Named]} = re:run(Notes, "(\\d+) dirty named by a Process \\* their C frames kept",
                              [{capture, all_but_first, list}]),
    ?debugFmt("the worker: ~w samples, ~w under erts_dirty_process_main; ~s dirty samples named",
              [samples(Tree), Dirty, Named]),
    Unwound = re:run(Notes, "C frames unwound with DWARF") =/= nomatch,
    Symbols = re:run(Notes, "erts_dirty_process_main") =/= nomatch orelse Dirty > 0,
    case beamspy_cpu:join() of
        registers when Unwound ->
            %% About half of bif_heaps/1's CPU is its dirty collections.
            ?assert(samples(Tree) >= 50),
            ?assert(Dirty >= 0.2 * samples(Tree) orelse not Symbols),
            ?assert(list_to_integer(Named) >= Dirty);
        _ ->
            ok
    end,
    assert_clean().

%% A gen_server with ~10 us handlers, profiled alone: at least 80% of its
%% samples are inside handle_call/3 (issue 23's process check).
server_handlers() ->
    {ok, Server} = bs_cpu_server:start(),
    {ok, S} = beamspy:start([Server], #{mode => cpu, cpu_hz => 999}),
    Calls = bs_cpu_server:calls_for(Server, 600),
    {ok, #{profile := P}} = beamspy:stop(S, #{profile => true}),
    T = tree_of(Server, P),
    All = samples(T),
    In = samples_under(T, <<"bs_cpu_server:handle_call/3">>),
    ?debugFmt("server: ~w calls, ~w samples, ~w inside handle_call/3", [Calls, All, In]),
    ?assert(All >= 50),
    ?assert(In >= 0.8 * All),
    gen_server:stop(Server),
    assert_clean().

wait_registered(Names) ->
    case [N || N <- Names, whereis(N) =:= undefined] of
        [] -> ok;
        _ -> timer:sleep(5), wait_registered(Names)
    end.

default_rate() ->
    {ok, #{profile := #{notes := Notes} = P}} = beamspy:profile({bs_cpu_wl, burn, [300]}, #{mode => cpu}),
    Rate = integer_to_list(beamspy_opts:default(cpu_hz)),
    ?assertMatch({match, _}, re:run(Notes, "CPU samples at " ++ Rate ++ " Hz")),
    ?assert(samples(own_tree(P)) >= 10),
    assert_clean().

bad_options() ->
    ?assertMatch({error, {bad_option, mode, fast, _}}, beamspy:profile({lists, seq, [1, 3]}, #{mode => fast})),
    ?assertMatch({error, {bad_option, cpu_hz, 0, _}},
                 beamspy:profile({lists, seq, [1, 3]}, #{mode => cpu, cpu_hz => 0})),
    assert_clean().

%% A second VM, started without the flag: mode cpu is refused there with a
%% sentence that names it; the call is not run, nothing is traced.
no_perf_flag() ->
    Ebin = filename:dirname(code:which(beamspy)),
    {ok, Peer, _} = peer:start_link(#{connection => standard_io, args => ["-pa", Ebin]}),
    %% A perf map of the peer's name left by an earlier OS process with the
    %% same pid (the JIT never removes its map; pids are reused) does not
    %% pass for the flag: it once did, and a VM without frame pointers was
    %% sampled.
    Stale = "/tmp/perf-" ++ peer:call(Peer, os, getpid, []) ++ ".map",
    ok = file:write_file(Stale, <<"7f0000000000 10 $global::stale\n">>),
    try
        R = peer:call(Peer, beamspy, profile, [{lists, seq, [1, 3]}, #{mode => cpu}], 60000),
        ?assertMatch({error, {cpu_unavailable, _}}, R),
        {error, Reason} = R,
        Text = beamspy:format_error(Reason),
        ?debugFmt("~ts", [Text]),
        ?assertMatch({match, _}, re:run(Text, "\\+JPperf true")),
        ?assertEqual([], peer:call(Peer, beamspy, sessions, []))
    after
        peer:stop(Peer),
        file:delete(Stale)
    end.

%% The rings that carry stack copies (for the DWARF unwinding of C frames)
%% are 4 times the size of plain ones. An unprivileged user may lock
%% kernel.perf_event_mlock_kb per online CPU plus its RLIMIT_MEMLOCK (root
%% is not limited: CAP_IPC_LOCK). A VM run as `nobody' with a 64 KiB
%% RLIMIT_MEMLOCK and as many scheduler threads as make the plain rings fit
%% that budget and the bigger ones not: mode cpu must fall back to the
%% kernel's frame-pointer chains, record the CPU of the function that burns
%% it (pure Erlang, which frame pointers reach) and say in its notes why the
%% C frames are not unwound. Needs root to switch to `nobody' (setpriv and
%% prlimit, util-linux).
locked_memory_fallback() ->
    case string:trim(os:cmd("id -u")) of
        "0" -> locked_memory_fallback_as_nobody();
        Uid -> ?debugFmt("SKIP: needs root to run a VM as nobody (uid ~ts)", [Uid])
    end.

locked_memory_fallback_as_nobody() ->
    Dir = filename:join("/tmp", "bs_mlock_" ++ integer_to_list(erlang:unique_integer([positive]))),
    try
        Ebin = filename:join([Dir, "beamspy", "ebin"]),
        Priv = filename:join([Dir, "beamspy", "priv"]),
        Out = filename:join(Dir, "out"),
        ok = filelib:ensure_dir(filename:join(Ebin, "x")),
        ok = filelib:ensure_dir(filename:join(Priv, "x")),
        ok = filelib:ensure_dir(filename:join(Out, "x")),
        OwnEbin = filename:dirname(code:which(beamspy)),
        Copies = [{F, Ebin} || F <- filelib:wildcard(filename:join(OwnEbin, "*"))]
            ++ [{code:which(bs_cpu_wl), Ebin}]
            ++ [{F, Priv} || F <- filelib:wildcard(filename:join([filename:dirname(OwnEbin), "priv", "*"])),
                             filelib:is_regular(F)],
        [{ok, _} = file:copy(F, filename:join(To, filename:basename(F))) || {F, To} <- Copies],
        [ok = file:change_mode(D, 8#755) || D <- [Dir, filename:dirname(Ebin), Ebin, Priv]],
        ok = file:change_mode(Out, 8#777),
        [ok = file:change_mode(F, 8#755) || F <- filelib:wildcard(filename:join([Dir, "beamspy", "*", "*"]))],
        Threads = threads_over_budget(),
        Result = filename:join(Out, "profile.bin"),
        Eval = lists:flatten(io_lib:format(
                 "{ok, #{profile := P}} = beamspy:profile({bs_cpu_wl, burn, [400]}, #{mode => cpu, cpu_hz => 999}), "
                 "ok = file:write_file(~p, term_to_binary(P)), halt().", [Result])),
        Args = ["--memlock=65536:65536", os:find_executable("setpriv"),
                "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--",
                os:find_executable("env"), "HOME=" ++ Out, os:find_executable("erl"),
                "+JPperf", "true", "+S", "1:1", "+SDcpu", "1:1", "+SDio", integer_to_list(Threads - 2),
                "-noshell", "-pa", Ebin, "-eval", Eval],
        Port = open_port({spawn_executable, os:find_executable("prlimit")},
                         [{args, Args}, exit_status, stderr_to_stdout, binary]),
        {Status, Output} = port_output(Port, <<>>),
        ?debugFmt("VM as nobody, ~w scheduler threads, RLIMIT_MEMLOCK 64 KiB: exit ~w~ts",
                  [Threads, Status, Output]),
        ?assertEqual(0, Status),
        {ok, Bin} = file:read_file(Result),
        P = binary_to_term(Bin),
        #{notes := Notes} = P,
        ?debugFmt("notes: ~ts", [Notes]),
        ?assertMatch({match, _}, re:run(Notes, "C frames not unwound: ")),
        case unwinds_here() of
            true ->
                ?assertMatch({match, _}, re:run(Notes, "C frames not unwound: the rings with stack copies were refused")),
                ?assertMatch({match, _}, re:run(Notes, "locked-memory limit"));
            false ->
                ?debugMsg("SKIP the locked-memory reason: this VM does not unwind C frames at all (no libdw)")
        end,
        %% The caller there is the VM's one -eval process.
        [{_, Nodes}] = bs_test_lib:processes(P),
        All = samples(Nodes),
        ?assert(All >= 100),
        ?assert(samples_under(Nodes, ?FIB) >= 0.8 * All)
    after
        file:del_dir_r(Dir)
    end.

%% Whether mode cpu unwinds C frames in this VM (libdw there): only then
%% does it ask for the rings with stack copies.
unwinds_here() ->
    {ok, #{profile := #{notes := Notes}}} =
        beamspy:profile({bs_cpu_wl, burn, [50]}, #{mode => cpu, cpu_hz => 99}),
    re:run(Notes, "C frames unwound with DWARF") =/= nomatch.

%% Scheduler threads (1 normal, 1 dirty CPU, the rest dirty I/O) whose
%% plain rings (BS_PERF_RING_PAGES + 1 = 9 pages each) fit an unprivileged
%% user's budget and whose rings with stack copies (BS_PERF_RING_PAGES_STACK
%% + 1 = 33 pages) do not: the budget divided by the mean of the two.
threads_over_budget() ->
    {ok, MlockKb} = read_integer("/proc/sys/kernel/perf_event_mlock_kb"),
    PageKb = list_to_integer(string:trim(os:cmd("getconf PAGESIZE"))) div 1024,
    Budget = MlockKb * erlang:system_info(logical_processors_online) + 64,
    Threads = max(3, Budget div (21 * PageKb)),
    ?assert(Threads * 9 * PageKb < Budget),
    ?assert(Threads * 33 * PageKb > Budget),
    Threads.

read_integer(File) ->
    {ok, Text} = file:read_file(File),
    {ok, binary_to_integer(string:trim(Text))}.

port_output(Port, Acc) ->
    receive
        {Port, {data, D}} -> port_output(Port, <<Acc/binary, D/binary>>);
        {Port, {exit_status, S}} -> {S, Acc}
    after 150000 ->
            catch port_close(Port),
            {timeout, Acc}
    end.
