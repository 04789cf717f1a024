# cpu_checks.sh — mode cpu from the command line, sourced by run.sh (ONLY=cpu
# runs only these): `run --mode cpu` starts the VM with +JPperf true and
# charges the kernel's CPU samples to the process that burned them; `record
# --mode cpu` does so on a running node started with the flag (code
# delivered, nothing left after); a node without the flag is refused with
# the flag to add, and nothing is left there either. The same for
# --times samples (traced calls, self times from the samples).
# cpu_kill_checks.sh (sourced at the end): sessions that die midway leave
# nothing behind; then top_cpu_checks.sh: top's hot functions from CPU samples.

# samples_under FILE REGEX: the samples of the folded lines matching REGEX.
samples_under() {
    awk -v re="$2" '$0 ~ re { s += $NF } END { printf "%d\n", s }' "$1"
}

echo "--- run --mode cpu"
"$cli" run --mode cpu --hz 999 -o "$out/cpu_run.folded" -o "$out/cpu_run.svg" -- \
    erl -noshell -pa "$build" -eval 'bs_cpu_wl:burn(1500), halt().' >/dev/null 2>"$out/cpu_run.err"
check "run --mode cpu: exit 0" [ $? -eq 0 ]
all=$(samples_under "$out/cpu_run.folded" '.')
fib=$(samples_under "$out/cpu_run.folded" ';bs_cpu_wl:fib/1')
# the -eval process (<0.9.0> on OTP 25, <0.10.0> on OTP 29), and only it
fib_procs=$(grep ';bs_cpu_wl:fib/1' "$out/cpu_run.folded" | cut -d';' -f1 | sort -u | wc -l)
echo "    run --mode cpu: $all samples, $fib under bs_cpu_wl:fib/1 in $fib_procs process"
# 1.5 s of CPU at 999 Hz: some 1,500 samples in fib/1, against a few hundred
# of the VM's start and halt (scheduler, code loading) and of C code that
# reaches no Erlang frame: at least half of the run's.
check "run --mode cpu: the samples are in the function that burned the CPU, in its process" \
    eval '[ "$fib" -ge 300 ] && [ $((fib * 2)) -ge "$all" ] && [ "$fib_procs" -eq 1 ]'
check "run --mode cpu: the SVG is well-formed" xmllint --noout "$out/cpu_run.svg"
check "run --mode cpu: stderr says what the counts are" grep -q 'CPU samples at 999 Hz' "$out/cpu_run.err"
"$cli" run --mode fast -o "$out/x.folded" -- erl -noshell -eval 'halt().' >/dev/null 2>"$out/cpu_bad.err"
rc=$?
check "run --mode fast: a usage error" eval '[ $rc -eq 2 ] && grep -q "unknown mode" "$out/cpu_bad.err"'

echo "--- record --mode cpu"
start_node c1 +JPperf true || fail setup "node c1 (+JPperf true) did not start"
c1=$(node_name c1)
bs record --node "$c1" --name busy --mode cpu --duration 2s -o "$out/cpu_rec.folded" -o "$out/cpu_rec.html" \
    2>"$out/cpu_rec.err"
check "record --mode cpu: exit 0" [ $? -eq 0 ]
busy=$(samples_under "$out/cpu_rec.folded" '^<[0-9.]*> busy;.*bs_dist_wl:spin/1')
all=$(samples_under "$out/cpu_rec.folded" '.')
echo "    record --mode cpu: $all samples, $busy of busy under bs_dist_wl:spin/1"
# The busy process spins for the 2 s (up to 400 samples at 199 Hz on an idle core;
# far fewer on a loaded machine): any real number shows the join worked.
# Samples that land in the VM's C code (lists:sort/1's BIFs, GC) without
# frame pointers reach no Erlang frame yet: at least 30% reach spin/1.
check "record --mode cpu: the busy process's samples, under its own functions" \
    eval '[ "$busy" -ge 20 ] && [ $((busy * 10)) -ge $((all * 3)) ]'
check "record --mode cpu: stderr says what the counts are, at the default rate" grep -q 'CPU samples at 199 Hz' "$out/cpu_rec.err"
# The node's notes travel in the .bspy it sends (section NOTE): how the
# samples were taken there, and what its sampler's thread cost it.
check "record --mode cpu: stderr has the node's notes on how the samples were taken" \
    eval "grep 'how they were taken: ' '$out/cpu_rec.err' | grep -q 'drain thread used [0-9.]* ms of CPU'"
check "record --mode cpu: only that process" \
    bash -c "! grep -v '^<[0-9.]*> busy;' '$out/cpu_rec.folded' | grep -q ."
check "record --mode cpu: nothing left on the node" clean c1

bs record --node "$n1" --name busy --mode cpu --duration 300ms -o "$out/cpu_noflag.folded" 2>"$out/cpu_noflag.err"
rc=$?
check "record --mode cpu on a node without +JPperf true: refused" [ $rc -ne 0 ]
check "... saying which flag to add" grep -q '+JPperf true' "$out/cpu_noflag.err"
check "... no file written" [ ! -e "$out/cpu_noflag.folded" ]
check "... nothing left on the node" clean n1

echo "--- run and record --times samples"
"$cli" run --times samples --hz 999 -o "$out/times_run.folded" -- \
    erl -noshell -pa "$build" -eval 'bs_cpu_wl:burn(3000), halt().' >/dev/null 2>"$out/times_run.err"
check "run --times samples: exit 0" [ $? -eq 0 ]
fib=$(samples_under "$out/times_run.folded" ";bs_cpu_wl:fib/1 [0-9]+$")
echo "    run --times samples: $fib us of self time in bs_cpu_wl:fib/1 frames"
# 3 s of the VM's CPU, most of it the tracer's: fib/1's own code gets some
# 5% (150 samples at 999 Hz). The run started the VM with +JPperf true
# (else it is refused): fib/1's frames hold the time of CPU samples (1/999
# s each; folded stacks count µs), on traced stacks.
check "run --times samples: fib/1's self time, from samples, on traced stacks" \
    eval '[ "$fib" -ge $((20 * 1001)) ] && grep -q ";bs_cpu_wl:fib/1;bs_cpu_wl:fib/1;bs_cpu_wl:fib/1" "$out/times_run.folded"'
check "run --times samples: stderr says what the times are" \
    grep -q 'self times from CPU samples taken beside the trace at 999 Hz' "$out/times_run.err"
"$cli" run --times exact -o "$out/x.folded" -- erl -noshell -eval 'halt().' >/dev/null 2>"$out/times_bad.err"
rc=$?
check "run --times exact: a usage error" eval '[ $rc -eq 2 ] && grep -q "bad --times" "$out/times_bad.err"'
bs record --node "$c1" --name busy --times samples --hz 999 --duration 3s -o "$out/times_rec.folded" 2>"$out/times_rec.err"
check "record --times samples: exit 0" [ $? -eq 0 ]
# CPU time under spin/1 (its scheduled-out leaves left out): from samples.
# Traced, spin/1's own code gets 1-2% of the process's CPU (the rest is the
# tracer's): at 199 Hz for 2 s that was 3 samples on a quiet host and none
# on a loaded one, so the rate is 999 Hz for 3 s (some 30-60 samples).
busy=$(grep '^<[0-9.]*> busy;.*bs_dist_wl:spin/1' "$out/times_rec.folded" | grep -v ';\(WAIT\|RUNNABLE\|SLEEP\) [0-9]*$' |
    awk '{ s += $NF } END { printf "%d\n", s }')
echo "    record --times samples: $busy us of CPU under bs_dist_wl:spin/1"
check "record --times samples: the busy process's CPU, under spin/1" [ "$busy" -gt 0 ]
check "record --times samples: nothing left on the node" clean c1
bs record --node "$n1" --name busy --times samples --duration 300ms -o "$out/times_noflag.folded" 2>"$out/times_noflag.err"
rc=$?
check "record --times samples on a node without +JPperf true: refused, naming the flag" \
    eval '[ $rc -ne 0 ] && grep -q "+JPperf true" "$out/times_noflag.err" && [ ! -e "$out/times_noflag.folded" ]'
check "... nothing left on the node" clean n1
. "$here/cpu_kill_checks.sh"
. "$here/top_cpu_checks.sh"
