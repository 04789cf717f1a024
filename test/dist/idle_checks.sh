# idle_checks.sh — WAIT against RUNNABLE in a whole-VM view of a real Elixir
# command, sourced by run.sh (ONLY=idle runs only these). `run -- elixir -e
# ':timer.sleep(2000)'`: Elixir's idle servers (:elixir_code_server,
# :elixir_sup, application masters, Logger's) wait in their receive loops
# the whole time, woken only by system signals (code purge checks and the
# like: scheduled in and out again, no code run). Their time is WAIT; it
# used to be ~0.5-0.9 s of RUNNABLE each, the wait before every such wake-up.

echo "--- run -- elixir: idle servers wait, they are not runnable"
"$cli" run --show-idle -o "$out/idle_ex.folded" -- elixir -e ':timer.sleep(2000)' >/dev/null 2>"$out/idle_ex.err"
check "run -- elixir -e ':timer.sleep(2000)': exit 0" [ $? -eq 0 ]
# idle_loop_sums FILE: "WAIT RUNNABLE" in µs, summed over the folded lines
# whose stack ends in an idle server's receive loop, then WAIT or RUNNABLE.
idle_loop_sums() {
    awk '
        / / {
            n = $NF
            loop = $0 ~ /(:gen_server\.loop\/7|:gen_event\.fetch_msg\/6|:application_master\.main_loop\/2|:application_master\.loop_it\/4);(WAIT|RUNNABLE) [0-9]+$/
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
