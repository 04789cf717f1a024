# cpu_kill_checks.sh — a mode cpu session that dies midway leaves nothing
# behind, sourced by cpu_checks.sh (node c1 runs with +JPperf true): after
# `record --mode cpu` killed with -9, and after the owner process of a
# `beamspy:start(all, #{mode => cpu})` session killed, the node has no
# process traced, none of the NIF's perf events open (links of
# /proc/PID/fd to anon_inode:[perf_event]), no drain thread (named
# beamspy_cpu_drain, cut by the kernel to beamspy_cpu_dra) and as many
# threads as before; a second session works. And `run --mode cpu` ended by
# Ctrl-C writes what it sampled, its VM killed says so. Every wait is a
# bounded poll on the condition itself.

# cpu_fds OSPID: the perf events the process has open.
cpu_fds() { find "/proc/$1/fd" -lname 'anon_inode:\[perf_event\]' 2>/dev/null | wc -l; }
# drain_threads OSPID: threads named like the sampler's drain thread.
drain_threads() { cat /proc/"$1"/task/*/comm 2>/dev/null | grep -c '^beamspy_cpu_dra'; }
vm_threads() { find "/proc/$1/task" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
# traced_count SHORT: processes with trace flags, in the legacy trace state
# or (OTP 27 on, where live sessions trace) in a dynamic trace session of
# beamspy's; bs_sessions SHORT: how many such sessions there are.
bs_sessions_expr='Sessions = case code:ensure_loaded(trace) =:= {module, trace}
                                 andalso erlang:function_exported(trace, session_info, 1) of
                                true -> [S || {beamspy, _} = S <- trace:session_info(all)];
                                false -> []
                            end'
traced_count() {
    rpc "$1" "$bs_sessions_expr,
              Flags = fun(P) -> [F || {flags, Fs} <- [erlang:trace_info(P, flags)
                                                      | [trace:info(S, P, flags) || S <- Sessions]],
                                      F <- Fs] end,
              length([P || P <- processes(), P =/= self(), Flags(P) =/= []])."
}
bs_sessions() { rpc "$1" "$bs_sessions_expr, length(Sessions)."; }
no_traced() { [ "$(traced_count "$1")" = 0 ]; }
some_traced() { [ "$(traced_count "$1")" -gt 0 ] 2>/dev/null; }
# traced_as_the_join_needs SHORT: a whole-VM cpu session traces no process
# where samples name their process (x86_64: r13, beamspy_cpu:join/0; the
# sampler is already seen running, so the session is set up), and every
# process's scheduling elsewhere.
traced_as_the_join_needs() {
    if [ "$(uname -m)" = x86_64 ]; then no_traced "$1"; else wait_until 30 some_traced "$1"; fi
}
# sampling OSPID: the sampler runs in the node.
sampling() { [ "$(cpu_fds "$1")" -gt 0 ] && [ "$(drain_threads "$1")" -eq 1 ]; }
# sampler_gone OSPID THREADS: no perf event, no drain thread, THREADS threads.
sampler_gone() {
    [ "$(cpu_fds "$1")" -eq 0 ] && [ "$(drain_threads "$1")" -eq 0 ] && [ "$(vm_threads "$1")" -eq "$2" ]
}
# wait_sampler_gone OSPID THREADS: sampler_gone within 30 s, else says what is left.
wait_sampler_gone() {
    wait_until 30 sampler_gone "$1" "$2" && return 0
    echo "    left in OS process $1: $(cpu_fds "$1") perf events, $(drain_threads "$1") drain threads, $(vm_threads "$1") threads (before: $2)"
    return 1
}

echo "--- mode cpu: record killed with -9"
c1_pid=$(os_pid c1)
c1_threads=$(vm_threads "$c1_pid")
check "c1 before: no perf event open, no drain thread" \
    eval '[ "$(cpu_fds "$c1_pid")" -eq 0 ] && [ "$(drain_threads "$c1_pid")" -eq 0 ]'
"$cli" record --node "$c1" --all --mode cpu --duration 30s -o "$out/cpu_killed.folded" \
    --cookie-file "$cookie_file" 2>"$out/cpu_killed.err" &
rec=$!
disown "$rec"
pids+=("$rec")
check "record --mode cpu: the sampler runs in the node (perf events open, one drain thread)" \
    wait_until 30 sampling "$c1_pid"
check "record --mode cpu --all: traced as the join needs (x86_64: no process)" traced_as_the_join_needs c1
sleep 1 # let it record a while (nothing below depends on how long)
kill -9 "$rec"
check "record --mode cpu, kill -9 of the tool: the node closes the perf events and stops the drain thread" \
    wait_sampler_gone "$c1_pid" "$c1_threads"
check "record --mode cpu, kill -9 of the tool: no process traced, beamspy unloaded" \
    eval 'wait_clean c1 30 && wait_until 30 no_traced c1 && [ "$(bs_sessions c1)" = 0 ]'
check "record --mode cpu, kill -9 of the tool: the node's processes are fine" is_true c1 'is_pid(whereis(busy)).'
bs record --node "$c1" --all --mode cpu --duration 1s -o "$out/cpu_again.folded" 2>"$out/cpu_again.err"
rc=$?
check "record --mode cpu after the killed one: exit 0, samples recorded" \
    eval '[ $rc -eq 0 ] && [ "$(samples_under "$out/cpu_again.folded" .)" -gt 0 ]'
check "record --mode cpu after the killed one: nothing left" \
    eval 'wait_sampler_gone "$c1_pid" "$c1_threads" && clean c1'

echo "--- mode cpu: the owner of beamspy:start(all, #{mode => cpu}) killed"
# c2 has beamspy on its code path (-pa ebin): the session is started on the
# node itself, by a process that stays (the caller's death would end the
# session in order); then the session's owner process is killed.
start_node c2 +JPperf true -pa "$root/ebin" || fail setup "node c2 (+JPperf true, -pa ebin) did not start"
c2_pid=$(os_pid c2)
c2_threads=$(vm_threads "$c2_pid")
started=$(rpc c2 '
    Parent = self(), Ref = make_ref(),
    Caller = spawn(fun() -> Parent ! {Ref, beamspy:start(all, #{mode => cpu})}, receive stop -> ok end end),
    register(bs_cpu_caller, Caller),
    receive
        {Ref, {ok, S}} -> {ok, Owner} = beamspy_session:owner(S), persistent_term:put(bs_cpu_owner, Owner), started;
        {Ref, Other} -> Other
    after 30000 -> no_answer
    end.')
check "beamspy:start(all, #{mode => cpu}) on c2: started" [ "$started" = started ]
check "beamspy:start(all, #{mode => cpu}): the sampler runs" wait_until 30 sampling "$c2_pid"
check "beamspy:start(all, #{mode => cpu}): traced as the join needs (x86_64: no process)" traced_as_the_join_needs c2
killed=$(rpc c2 'exit(persistent_term:get(bs_cpu_owner), kill).')
check "session owner killed (exit(Owner, kill) on c2)" [ "$killed" = true ]
check "session owner killed: the perf events closed and the drain thread stopped" \
    wait_sampler_gone "$c2_pid" "$c2_threads"
check "session owner killed: no process traced, no trace session of beamspy's" \
    eval 'wait_until 30 no_traced c2 && [ "$(bs_sessions c2)" = 0 ]'
check "session owner killed: no session left" wait_until 30 is_true c2 'beamspy:sessions() =:= [].'
check "session owner killed: the node's processes are fine" is_true c2 'is_pid(whereis(busy)).'
rpc c2 'whereis(bs_cpu_caller) ! stop.' >/dev/null
again=$(rpc c2 '
    {ok, S} = beamspy:start(all, #{mode => cpu}),
    timer:sleep(1000),
    {ok, #{profile := #{processes := Procs}}} = beamspy:stop(S, #{profile => true}),
    length(Procs) > 0.')
check "a second beamspy:start(all, #{mode => cpu}) afterwards: samples of processes" [ "$again" = true ]
check "after the second session: nothing left" \
    eval 'wait_sampler_gone "$c2_pid" "$c2_threads" && wait_until 30 no_traced c2'

echo "--- mode cpu: run ended by Ctrl-C, run whose VM is killed"
cpu_runtmp="$build/cpu_runtmp"
mkdir -p "$cpu_runtmp"
# cpu_run_bg NAME: `run --mode cpu` of a VM that writes its OS pid to a
# marker file, then burns CPU for 10 minutes; bg is the tool's pid.
cpu_run_bg() {
    rm -f "$out/$1.started"
    TMPDIR="$cpu_runtmp" "$cli" run --mode cpu --hz 999 -o "$out/$1.folded" -- \
        erl -noshell -pa "$build" \
        -eval "file:write_file(\"$out/$1.started\", os:getpid()), bs_cpu_wl:burn(600000), halt()." \
        >/dev/null 2>"$out/$1.err" &
    bg=$!
}
# cpu_ticks OSPID: the process's CPU time, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# burned OSPID TICKS: the process has used TICKS more ticks than at the marker.
burned() { [ "$(cpu_ticks "$1")" -ge "$2" ]; }
tick_hz=$(getconf CLK_TCK)
cpu_run_gone() { ! kill -0 "$1" 2>/dev/null; }
# cpu_end_bg: the tool's exit status in rc (killed after 60 s: a failure, not a hang).
cpu_end_bg() {
    wait_until 60 cpu_run_gone "$bg" || kill -9 "$bg" 2>/dev/null
    wait "$bg"
    rc=$?
}
no_cpu_run_dirs() { [ -z "$(ls -A "$cpu_runtmp")" ]; }

cpu_run_bg cpu_int
wait_until 60 test -s "$out/cpu_int.started"
vm=$(cat "$out/cpu_int.started" 2>/dev/null)
# half a second of the VM's CPU time after the marker: the burn is sampled
wait_until 60 burned "$vm" $(($(cpu_ticks "$vm") + tick_hz / 2))
kill -INT "$bg"
cpu_end_bg
check "run --mode cpu, Ctrl-C: exit 130" [ $rc -eq 130 ]
check "run --mode cpu, Ctrl-C: says it stops" grep -q 'stopping (Ctrl-C)' "$out/cpu_int.err"
check "run --mode cpu, Ctrl-C: the samples so far written, in the burning function" \
    eval '[ "$(samples_under "$out/cpu_int.folded" ";bs_cpu_wl:fib/1")" -gt 0 ]'
check "run --mode cpu, Ctrl-C: stderr says what the counts are" grep -q 'CPU samples at 999 Hz' "$out/cpu_int.err"
check "run --mode cpu, Ctrl-C: the VM is gone" wait_until 30 cpu_run_gone "$vm"
check "run --mode cpu, Ctrl-C: the temporary directory is removed" wait_until 30 no_cpu_run_dirs

cpu_run_bg cpu_vmkill
wait_until 60 test -s "$out/cpu_vmkill.started"
vm=$(cat "$out/cpu_vmkill.started" 2>/dev/null)
check "run --mode cpu: its VM was running" eval '[ -n "$vm" ] && kill -0 "$vm"'
kill -9 "$vm"
cpu_end_bg
check "run --mode cpu, its VM killed: exit 1" [ $rc -eq 1 ]
check "run --mode cpu, its VM killed: says the VM ended without a profile" \
    grep -q 'the VM ended without writing a profile (killed' "$out/cpu_vmkill.err"
check "run --mode cpu, its VM killed: no output file" [ ! -e "$out/cpu_vmkill.folded" ]
check "run --mode cpu, its VM killed: the temporary directory is removed" wait_until 30 no_cpu_run_dirs
