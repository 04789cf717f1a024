# idle_checks.sh — WAIT against RUNNABLE in a whole-VM view of a real Elixir
# command, sourced by run.sh (ONLY=idle runs only these). `run -- elixir -e
# ':timer.sleep(2000)'`: Elixir's idle servers (:elixir_code_server,
# :elixir_sup, application masters, Logger's) wait in their receive loops
# the whole time, woken only by system signals (code purge checks and the
# like: scheduled in and out again, no code run). Their time is WAIT; it
# used to be ~0.5-0.9 s of RUNNABLE each, the wait before every such wake-up.
# Their loops' arities change between OTP releases (gen_server:loop/7 on
# OTP 25, /5 on OTP 29), and from OTP 28 a supervisor idle for a second
# hibernates (gen_server:loop_hibernate/4). Then processes that still wait
# when the VM halts, woken by nothing: the time since their last event is
# written too (it was lost at halt, only stop wrote it).

echo "--- run -- elixir: idle servers wait, they are not runnable"
"$cli" run --show-idle -o "$out/idle_ex.folded" -- elixir -e ':timer.sleep(2000)' >/dev/null 2>"$out/idle_ex.err"
check "run -- elixir -e ':timer.sleep(2000)': exit 0" [ $? -eq 0 ]
# idle_loop_sums FILE: "WAIT RUNNABLE" in µs, summed over the folded lines
# whose stack ends in an idle server's receive loop, then WAIT or RUNNABLE.
idle_loop_sums() {
    awk '
        / / {
            n = $NF
            loop = $0 ~ /(:gen_server\.loop(_hibernate)?\/[0-9]+|:gen_event\.fetch_msg\/[0-9]+|:application_master\.main_loop\/[0-9]+|:application_master\.loop_it\/[0-9]+|:erlang\.hibernate\/3);(WAIT|RUNNABLE) [0-9]+$/
            if (loop && $0 ~ /;WAIT [0-9]+$/) w += n
            if (loop && $0 ~ /;RUNNABLE [0-9]+$/) r += n
        }
        END { printf "%d %d\n", w, r }' "$1"
}
read -r idle_wait idle_runnable <<<"$(idle_loop_sums "$out/idle_ex.folded")"
echo "    idle servers' receive loops: WAIT $idle_wait us, RUNNABLE $idle_runnable us"
# Ten of them or so, each waiting about as long as the command ran.
check "run -- elixir: idle servers' receive loops hold seconds of WAIT" [ "$idle_wait" -ge 2000000 ]
check "run -- elixir: ... and hardly any RUNNABLE (under 1% of it)" [ $((idle_runnable * 100)) -lt "$idle_wait" ]
check "run -- elixir: the sleep itself is WAIT under :timer.sleep/1" grep -q ':timer\.sleep/1;WAIT [0-9]*$' "$out/idle_ex.folded"

echo "--- run: processes still waiting when the VM halts"
"$cli" run --show-idle -o "$out/idle_halt.folded" -- erl -noshell -pa "$build" -eval 'bs_idle_wl:idle_until_halt(2000).' >/dev/null 2>"$out/idle_halt.err"
check "run -- erl: idle until halt: exit 0" [ $? -eq 0 ]
# wait_sum FILE REGEX: µs of the WAIT lines whose stack matches REGEX
wait_sum() {
    awk -v re="$2" '$0 ~ re { w += $NF } END { printf "%d\n", w }' "$1"
}
waited=$(wait_sum "$out/idle_halt.folded" 'bs_idle_wl:wait_forever/0;WAIT [0-9]+$')
hibernated=$(wait_sum "$out/idle_halt.folded" 'bs_idle_wl:hibernate_forever/0;(erlang:hibernate/3;)?WAIT [0-9]+$')
echo "    waiting in a receive: WAIT $waited us; hibernated: WAIT $hibernated us (the VM halted 2 s after they started)"
check "run: a process waiting in a receive until halt has its 2 s of WAIT" [ "$waited" -ge 1900000 ]
check "run: a process hibernated until halt has its 2 s of WAIT" [ "$hibernated" -ge 1900000 ]
check "run: ... and no RUNNABLE for either" sh -c "! grep -E 'bs_idle_wl:(wait|hibernate)_forever/0;(erlang:hibernate/3;)?RUNNABLE' '$out/idle_halt.folded'"
