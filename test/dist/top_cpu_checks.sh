# top_cpu_checks.sh — `top` on a node started with +JPperf true takes its
# hottest functions from CPU samples of every process (a mode cpu session),
# sourced by cpu_checks.sh (node c1 runs the workload with the flag; its
# `busy` process burns the CPU in bs_dist_wl:work/1 and the lists functions
# it calls). The header says so; --no-cpu falls back and says why; the CPU
# session ends with top however top ends (its count done, Ctrl-C, kill -9):
# no perf event, no drain thread, nothing traced, beamspy unloaded. Uses
# cpu_kill_checks.sh's helpers of the OS process' perf events and threads.

echo "--- top with CPU samples"
c1_pid=$(os_pid c1)
c1_threads=$(find "/proc/$c1_pid/task" -mindepth 1 -maxdepth 1 | wc -l)
bs top --node "$c1" --count 3 --limit 3 >"$out/top_cpu.txt" 2>"$out/top_cpu.err"
check "top on a node with +JPperf true: exit 0" [ $? -eq 0 ]
check "top: the header says the hot functions are CPU samples, at the default rate" \
    grep -q '^hot functions: CPU samples at 199 Hz, [0-9]* of processes' "$out/top_cpu.txt"
# Panel lines: "  30.0%  bs_dist_wl:'-work/1-lc$^0/1-0-'/2". busy is the only
# busy process: its functions lead the panel of every screen that has one.
hot=$(grep -E '^ *[0-9]+\.[0-9]%  ' "$out/top_cpu.txt" | head -1)
echo "    top: first hot function: $hot"
check "top: the busy process's functions, with a share" \
    bash -c "grep -qE '^ *[1-9][0-9]*\.[0-9]%  (bs_dist_wl|lists):' <<<'$hot'"
check "top: no scheduler pseudo-frame among the functions" \
    bash -c "! grep -qE '^ *[0-9.]+%  \\[' '$out/top_cpu.txt'"
check "top (its count done): the CPU session ended, nothing left" \
    eval 'wait_sampler_gone "$c1_pid" "$c1_threads" && wait_clean c1 30 && wait_until 30 no_traced c1'

bs top --node "$c1" --once --no-cpu --limit 3 >"$out/top_nocpu.txt" 2>&1
check "top --no-cpu: exit 0, the panel says why it is not CPU samples" \
    eval '[ $? -eq 0 ] && grep -q "^hot functions: share of running samples (not CPU samples: --no-cpu was given)" "$out/top_nocpu.txt"'
check "top --no-cpu: no sampler was opened, nothing left" eval 'sampler_gone "$c1_pid" "$c1_threads" && clean c1'

for how in INT KILL; do
    "$cli" top --node "$c1" --cookie-file "$cookie_file" --limit 3 >"$out/top_$how.txt" 2>&1 &
    t=$!
    disown "$t"
    pids+=("$t")
    check "top, before SIG$how: the CPU session samples the node" wait_until 30 sampling "$c1_pid"
    kill -"$how" "$t"
    check "top ended by SIG$how: the node closes the perf events and stops the drain thread" \
        wait_sampler_gone "$c1_pid" "$c1_threads"
    check "top ended by SIG$how: no process traced, beamspy unloaded" \
        eval 'wait_clean c1 30 && wait_until 30 no_traced c1 && [ "$(bs_sessions c1)" = 0 ]'
done
