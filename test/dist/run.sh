#!/usr/bin/env bash
# test/dist/run.sh — the distribution layer: bin/beamspy record, dump, top
# and run against real Erlang nodes on this machine.
#
# Each target node is a real VM (erl -sname ... -detached) running the
# workload of bs_dist_wl.erl, with a random cookie kept in a file. beamspy's
# modules are NOT on the nodes' code path: the tool delivers them. After
# each command the node is inspected with erl_call (the C client of
# erl_interface): nothing traced, no trace pattern left, beamspy unloaded.
# Checks print "ok - NAME" or "FAIL - NAME: why"; the last line is
#   LAYER dist: <passed> passed, <failed> failed
# Works from any directory. Needs tmux (deps.sh installs it) and python3.
# ONLY=deadlocks runs the wait-for graph tests of dump alone (deadlocks.sh),
# ONLY=seq the checks of `beamspy seq' alone (seq_checks.sh), ONLY=memory
# that jobs write no profile file on the node (no_files_checks.sh), ONLY=names
# the spelling of frames in every mode alone (names.sh), ONLY=sample that
# sampling and top count what runs (sample_checks.sh), ONLY=function the
# spellings and refusals of record --function (function_checks.sh), ONLY=idle
# that idle servers of an Elixir command are WAIT, not RUNNABLE
# (idle_checks.sh), ONLY=meta what record's outputs say was recorded and how
# (record_meta_checks.sh), ONLY=many_calls a capture of 100,000 calls
# (many_calls.sh), ONLY=cpu mode cpu from run and record (cpu_checks.sh),
# ONLY=unload that the tool removes its code only once no job runs
# (unload_checks.sh), ONLY=cluster record over several nodes at once, some
# lost (cluster_checks.sh), ONLY=cluster_find the nodes of --cluster and
# --exclude-node (cluster_find_checks.sh).
set -u

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="$here/build"
cli="$root/bin/beamspy"
passed=0
failed=0
t_start=$(date +%s)

finish() {
    cleanup_nodes
    echo "dist layer took $(($(date +%s) - t_start)) s"
    echo "LAYER dist: $passed passed, $failed failed"
    [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
    exit $?
}

ok() {
    echo "ok - $1"
    passed=$((passed + 1))
}

fail() {
    echo "FAIL - $1: $2"
    failed=$((failed + 1))
}

# check NAME COMMAND...: passes when the command succeeds.
check() {
    local name=$1
    shift
    if "$@"; then ok "$name"; else fail "$name" "$*"; fi
}

if ! make -s -C "$root" all >"$build.make.log" 2>&1; then
    cat "$build.make.log"
    fail build "make all failed"
    finish
fi
rm -f "$build.make.log"
rm -rf "$build"
mkdir -p "$build/out"
erlc -o "$build" "$here/bs_dist_wl.erl" "$here/bs_deadlock_wl.erl" "$root/test/erlang/bs_decode_wl.erl" "$root/test/erlang/bs_idle_wl.erl" "$root/test/erlang/bs_cpu_wl.erl" || {
    fail build "erlc bs_dist_wl.erl bs_deadlock_wl.erl bs_decode_wl.erl bs_idle_wl.erl bs_cpu_wl.erl"
    finish
}

erl_call=$(ls "$(erl -noshell -eval 'io:format("~s", [code:root_dir()]), halt().')"/lib/erl_interface-*/bin/erl_call 2>/dev/null | head -1)
[ -x "$erl_call" ] || {
    fail setup "erl_call not found (erlang-dev)"
    finish
}

cookie="bs$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
cookie_file="$build/cookie"
(umask 077 && printf '%s' "$cookie" >"$cookie_file")
host=$(hostname -s)
tag="bsd$$"
nodes=()
pids=()

. "$here/nodes.sh"
trap cleanup_nodes EXIT

# start_node SHORT [erl args...]: a detached node running the workload.
start_node() {
    start_node_with "$1" 'bs_dist_wl:start()' 'erlang:whereis(stuck) =/= undefined.' "${@:2}"
}

# in_tmux NAME COMMAND: a detached 160x40 tmux session running COMMAND (a
# server that is just shutting down can refuse: tried again).
in_tmux() {
    for _ in 1 2 3 4 5; do
        tmux new-session -d -s "$1" -x 160 -y 40 "$2" 2>/dev/null && return 0
        sleep 0.5
    done
    return 1
}

# What beamspy left on a node: "modules=N traced=N pattern=P".
leftovers() {
    rpc "$1" '
        Mods = [M || {M, _} <- code:all_loaded(), lists:prefix("beamspy", atom_to_list(M))],
        Traced = [P || P <- processes(), P =/= self(),
                       case erlang:trace_info(P, flags) of {flags, [_ | _]} -> true; _ -> false end],
        {traced, Pat} = erlang:trace_info({bs_dist_wl, work, 1}, traced),
        lists:flatten(io_lib:format("modules=~w traced=~w pattern=~w", [length(Mods), length(Traced), Pat])).' |
        tr -d '"'
}

clean() { nothing_left "$1" leftovers "modules=0 traced=0 pattern=false"; }

# unload_state SHORT: why beamspy's modules are still on a node, for a
# failed check: those with current code, those with old code and the
# processes that hold it, the modules noted for the last job, the unloading
# lock's holder and the waiter.
unload_state() {
    rpc "$1" '
        Mods = [M || {M, _} <- code:all_loaded(), lists:prefix("beamspy", atom_to_list(M))],
        Old = [M || M <- Mods, erlang:check_old_code(M)],
        Holders = lists:usort([P || M <- Old, P <- processes(), P =/= self(), erlang:check_process_code(P, M)]),
        lists:flatten(io_lib:format("current=~w old=~w noted=~w lock=~w waiter=~w holders=~w",
            [[M || M <- Mods, erlang:module_loaded(M)], Old, application:get_env(beamspy, unload_when_done),
             whereis(beamspy_unloading), application:get_env(beamspy, unload_waiter),
             [{P, erlang:process_info(P, [initial_call, current_stacktrace, status])} || P <- Holders]])).'
}

# wait_clean_or_say SHORT SECONDS: wait_clean, and on failure unload_state.
wait_clean_or_say() {
    wait_clean "$1" "$2" && return 0
    echo "    unload state on $1: $(unload_state "$1")"
    return 1
}

# wait_clean SHORT SECONDS: until nothing is left, at most SECONDS.
wait_clean() {
    wait_until "$2" clean "$1" >/dev/null || clean "$1"
}

bs() { "$cli" "$@" --cookie-file "$cookie_file"; }

out="$build/out"

# ONLY=seq: only the checks of `beamspy seq' (seq_checks.sh).
if [ "${ONLY:-}" = seq ]; then
    . "$here/seq_checks.sh"
    finish
fi

# ONLY=sample: only that sampling counts what runs (sample_checks.sh).
if [ "${ONLY:-}" = sample ]; then
    . "$here/sample_checks.sh"
    finish
fi

# ONLY=idle: only WAIT against RUNNABLE in `run -- elixir' (idle_checks.sh).
if [ "${ONLY:-}" = idle ]; then
    . "$here/idle_checks.sh"
    finish
fi

# ONLY=cluster_find: only --cluster and --exclude-node (cluster_find_checks.sh).
if [ "${ONLY:-}" = cluster_find ]; then
    . "$here/cluster_find_checks.sh"
    finish
fi

# ONLY=memory: only that a job writes no profile on the node.
if [ "${ONLY:-}" = memory ]; then
    echo "--- no profile files on the node"
    . "$here/no_files_checks.sh"
    finish
fi

echo "--- starting nodes"
start_node n1 || fail setup "node n1 did not start"
start_node n2 || fail setup "node n2 did not start"
n1=$(node_name n1)
n2=$(node_name n2)

# ONLY=deadlocks: the wait-for graph tests of dump alone.
if [ "${ONLY:-}" = deadlocks ]; then
    . "$here/deadlocks.sh"
    finish
fi

# ONLY=many_calls: a capture of 100,000 calls (many_calls.sh) alone.
if [ "${ONLY:-}" = many_calls ]; then
    . "$here/many_calls.sh"
    finish
fi

# ONLY=names: one speller of frames for every mode (names.sh) alone.
if [ "${ONLY:-}" = names ]; then
    . "$here/names.sh"
    finish
fi

# ONLY=meta: what record's outputs say was recorded, alone.
if [ "${ONLY:-}" = meta ]; then
    . "$here/record_meta_checks.sh"
    finish
fi

# ONLY=cpu: mode cpu from the command line (cpu_checks.sh) alone.
if [ "${ONLY:-}" = cpu ]; then
    . "$here/cpu_checks.sh"
    finish
fi

# ONLY=unload: the tool's code removal under other jobs alone.
if [ "${ONLY:-}" = unload ]; then
    . "$here/unload_checks.sh"
    finish
fi

# ONLY=cluster: record over several nodes at once (cluster_checks.sh) alone.
if [ "${ONLY:-}" = cluster ]; then
    . "$here/cluster_checks.sh"
    finish
fi

# ONLY=function: the spellings and refusals of record --function alone.
if [ "${ONLY:-}" = function ]; then
    . "$here/function_checks.sh"
    finish
fi

echo "--- record"
bs record --node "$n1" --name busy --duration 1s -o "$out/name.folded" -o "$out/name.svg" -o "$out/name.bspy" \
    2>"$out/name.err"
rc=$?
check "record --name: exit 0" [ $rc -eq 0 ]
check "record --name: the busy process is the root" grep -q '^<[0-9.]*> busy;' "$out/name.folded"
check "record --name: its functions are there" grep -q 'bs_dist_wl:spin/1;bs_dist_wl:work/1;' "$out/name.folded"
check "record --name: only that process" [ "$(cut -d';' -f1 "$out/name.folded" | sort -u | wc -l)" -eq 1 ]
check "record --name: SVG is well-formed XML" xmllint --noout "$out/name.svg"
check "record --name: .bspy renders again" "$cli" render "$out/name.bspy" -o "$out/name2.folded"
check "record --name: nothing left on the node" clean n1
bs record --node "$n1" --name App.Server --duration 300ms -o "$out/exname.folded" 2>"$out/exname.err"
rc=$?
check "record --name App.Server: finds the process Elixir registered as 'Elixir.App.Server'" \
    eval '[ $rc -eq 0 ] && grep -q "^<[0-9.]*> .*App.Server" "$out/exname.folded"'
check "record --name: says what it wrote" grep -q "wrote $out/name.svg" "$out/name.err"

busy_pid=$(rpc n1 'pid_to_list(whereis(busy)).' | tr -d '"')
bs record --node "$n1" --pid "$busy_pid" --duration 500ms -o "$out/pid.folded" 2>/dev/null
check "record --pid: exit 0 and rooted at the pid" grep -q "^$busy_pid busy;" "$out/pid.folded"

# --show-idle: every process recorded is in the files (by default those that
# only waited are left out, and how many is said).
bs record --node "$n1" --all --show-idle --duration 1s -o "$out/all.folded" -o "$out/all.html" 2>/dev/null
check "record --all: exit 0" [ -s "$out/all.html" ]
check "record --all: many processes" [ "$(cut -d';' -f1 "$out/all.folded" | cut -d' ' -f1 | sort -u | wc -l)" -ge 10 ]
check "record --all: the workload is there" grep -q '> busy;.*bs_dist_wl:spin/1' "$out/all.folded"
check "record --all: beamspy's own processes are not" bash -c "! grep -q beamspy '$out/all.folded'"
check "record --all: nothing left on the node" clean n1

bs record --node "$n1" --function bs_dist_wl:handle/1 --calls 3 --duration 20s -o "$out/fun.folded" 2>"$out/fun.err"
rc=$?
check "record --function: exit 0" [ $rc -eq 0 ]
check "record --function: the captured calls" grep -q 'bs_dist_wl:handle/1;bs_dist_wl:work/1' "$out/fun.folded"
check "record --function: nothing from outside the calls" bash -c "! grep -q 'spin/1' '$out/fun.folded'"
check "record --function: nothing left on the node" clean n1
. "$here/function_checks.sh"
. "$here/record_meta_checks.sh"

. "$here/many_calls.sh"

bs record --node "$n1" --all --mode sample --interval 5ms --duration 1s -o "$out/sample.folded" 2>"$out/sample.err"
check "record --mode sample: the busy process's stacks" grep -q '> busy;.*bs_dist_wl:spin/1' "$out/sample.folded"
check "record --all: the busy process first (processes by running time)" bash -c "head -1 '$out/sample.folded' | grep -q '> busy;'"
check "record --all: idle processes' WAIT left out, and stderr says how much" \
    bash -c "! grep -q ';WAIT [0-9]*$' '$out/sample.folded' && grep -q 'idle time left out: .* (--show-idle to see it)' '$out/sample.err'"
bs record --node "$n1" --all --mode sample --interval 5ms --duration 1s --show-idle -o "$out/sample_idle.folded" 2>/dev/null
check "record --all --show-idle: idle processes end in WAIT" grep -q ';WAIT [0-9]*$' "$out/sample_idle.folded"
check "record --mode sample: nothing left on the node" clean n1
. "$here/sample_checks.sh"

# File handling on the node does not depend on the release: not repeated on
# the other OTP releases (BEAMSPY_OTP_REPEAT, test/otp/run.sh).
if [ "${BEAMSPY_OTP_REPEAT:-0}" != 1 ]; then
    echo "--- no profile files on the node"
    . "$here/no_files_checks.sh"
fi
. "$here/names.sh"

echo "--- several nodes"
bs record --node "$n1" --node "$n2" --name busy --duration 1s -o "$out/two.folded" 2>/dev/null
check "two nodes: n1 is a root frame" grep -q "^$n1;<[0-9.]*> busy;" "$out/two.folded"
check "two nodes: n2 is a root frame" grep -q "^$n2;<[0-9.]*> busy;" "$out/two.folded"
bs record --node "$n1" --node "$n2" --name busy --duration 500ms --per-node -o "$out/per.folded" 2>/dev/null
check "two nodes --per-node: one file each" [ -s "$out/per.$n1.folded" ] && [ -s "$out/per.$n2.folded" ]
check "two nodes: nothing left on either" bash -c "$(declare -f rpc leftovers nothing_left clean); erl_call='$erl_call' cookie='$cookie' tag='$tag'; clean n1 && clean n2"
# The cluster checks start nodes of their own (4 to 5 each) and do not
# depend on the nodes' release beyond what the checks above cover: the
# layers of the other releases leave them out, to keep make test short.
[ "${BEAMSPY_OTP_REPEAT:-0}" != 1 ] && . "$here/cluster_find_checks.sh"

echo "--- connection errors"
bs record --node "$n1" --name busy -o "$out/x.folded" --cookie wrongcookie 2>"$out/cookie.err"
rc=$?
check "wrong cookie: exit 6" [ $rc -eq 6 ]
check "wrong cookie: says so in one line" [ "$(wc -l <"$out/cookie.err")" -eq 1 ] && grep -q 'rejected' "$out/cookie.err"
check "wrong cookie: the cookie is never printed" bash -c "! grep -q wrongcookie '$out/cookie.err'"
"$cli" record --node "${tag}_absent@$host" --name busy -o "$out/x.folded" --cookie-file "$cookie_file" 2>"$out/absent.err"
check "absent node: exit 4" [ $? -eq 4 ]
check "absent node: one line naming it" grep -q "no node '${tag}_absent'" "$out/absent.err"
"$cli" dump --node "x@no-such-host.invalid" --cookie-file "$cookie_file" 2>/dev/null
check "unknown host: exit 4" [ $? -eq 4 ]
bs record --node "$n1" -o "$out/x.folded" 2>/dev/null
check "no target: usage error 2" [ $? -eq 2 ]

# A name epmd knows whose port refuses connections: registered by hand
# (ALIVE2_REQ) for a port nobody listens on.
python3 - "$tag" >"$out/fake_epmd.log" 2>&1 <<'EOF' &
import os, socket, struct, sys, time
name = (sys.argv[1] + "_fake").encode()
free = socket.socket(); free.bind(("127.0.0.1", 0)); port = free.getsockname()[1]; free.close()
body = struct.pack(">BHBBHH", 120, port, 77, 0, 6, 5) + struct.pack(">H", len(name)) + name + struct.pack(">H", 0)
s = socket.create_connection(("127.0.0.1", int(os.environ.get("ERL_EPMD_PORT") or 4369)))
s.sendall(struct.pack(">H", len(body)) + body)
print(s.recv(4), flush=True)
time.sleep(30)
EOF
fake=$!
pids+=("$fake")
for _ in $(seq 1 50); do
    epmd -names 2>/dev/null | grep -q "name ${tag}_fake " && break
    sleep 0.1
done
"$cli" record --node "${tag}_fake@$host" --name busy -o "$out/x.folded" --cookie-file "$cookie_file" 2>"$out/refused.err"
check "connection refused: exit 5" [ $? -eq 5 ]
check "connection refused: says so" grep -q 'refused' "$out/refused.err"
kill "$fake" 2>/dev/null

start_node n3 || fail setup "node n3 did not start"
n3=$(node_name n3)
n3_pid=$(os_pid n3)
kill -STOP "$n3_pid"
t0=$(date +%s)
bs dump --node "$n3" --connect-timeout 1s >/dev/null 2>"$out/timeout.err"
rc=$?
check "node not answering: exit 8" [ $rc -eq 8 ]
check "node not answering: gives up in time" [ $(($(date +%s) - t0)) -le 5 ]
kill -CONT "$n3_pid"

echo "--- the node or the tool goes away during a record"
"$cli" record --node "$n3" --all --duration 20s -o "$out/lost.folded" --cookie-file "$cookie_file" 2>"$out/lost.err" &
rec=$!
sleep 2
kill -9 "$n3_pid"
t0=$(date +%s)
wait $rec
rc=$?
check "node killed during record: exit 9" [ $rc -eq 9 ]
check "node killed during record: noticed at once" [ $(($(date +%s) - t0)) -le 5 ]
check "node killed during record: says so" grep -q 'lost the connection' "$out/lost.err"

"$cli" record --node "$n1" --all --duration 30s -o "$out/killed.folded" --cookie-file "$cookie_file" 2>/dev/null &
rec=$!
disown "$rec"
pids+=("$rec")
sleep 2
check "kill -9 of the tool: tracing was on" bash -c "[ \"\$($(declare -f rpc leftovers); erl_call='$erl_call' cookie='$cookie' tag='$tag'; leftovers n1)\" != 'modules=0 traced=0 pattern=false' ]"
kill -9 "$rec"
t0=$(date +%s)
check "kill -9 of the tool: the node stops tracing and unloads beamspy by itself" wait_clean n1 10
echo "    (after $(($(date +%s) - t0)) s)"
check "kill -9 of the tool: the node's processes are fine" [ "$(rpc n1 'is_pid(whereis(busy)).')" = "true" ]

"$cli" record --node "$n1" --all --duration 60s --lease 2s --progress -o "$out/stopped.folded" \
    --cookie-file "$cookie_file" 2>"$out/stopped.err" &
rec=$!
disown "$rec"
pids+=("$rec")
# stopped once it records (stopped while attaching, the node would drop the
# connection set-up instead)
wait_until 60 grep -q "recording 1 node: " "$out/stopped.err"
kill -STOP "$rec"
t0=$(date +%s)
check "silent tool (network gone): the node gives up after the lease" wait_clean n1 10
echo "    (after $(($(date +%s) - t0)) s)"
# The job told the tool as it ended: once the tool runs again it says so
# instead of waiting for answers that will never come.
kill -CONT "$rec"
wait_until 60 grep -q "ended by itself" "$out/stopped.err"
check "slow tool: once it runs again, it is told the job ended by itself on the lease" \
    grep -q "beamspy: the job on $n1 ended by itself: it heard from this tool within none of its leases of 2000 ms" \
    "$out/stopped.err"
kill -9 "$rec" 2>/dev/null

"$cli" record --node "$n1" --all --duration 60s -o "$out/int.folded" -o "$out/int.svg" --cookie-file "$cookie_file" \
    2>"$out/int.err" &
rec=$!
sleep 2
t0=$(date +%s)
kill -INT "$rec"
wait $rec
rc=$?
check "Ctrl-C: exit 0" [ $rc -eq 0 ]
check "Ctrl-C: stops at once" [ $(($(date +%s) - t0)) -le 10 ]
check "Ctrl-C: outputs written" [ -s "$out/int.folded" ] && xmllint --noout "$out/int.svg"
check "Ctrl-C: nothing left on the node" clean n1

echo "--- code already on the node"
bs record --node "$n1" --name busy --duration 300ms --keep -o "$out/keep.folded" 2>/dev/null
check "--keep: beamspy stays loaded" [ "$(leftovers n1 | cut -d' ' -f1)" != "modules=0" ]
bs record --node "$n1" --name busy --duration 300ms -o "$out/keep2.folded" 2>/dev/null
check "same version already loaded: used, and left loaded" [ -s "$out/keep2.folded" ] &&
    [ "$(leftovers n1 | cut -d' ' -f1)" != "modules=0" ]
rpc n1 '[begin code:purge(M), code:delete(M), code:purge(M) end || {M, _} <- code:all_loaded(), lists:prefix("beamspy", atom_to_list(M))], ok.' >/dev/null
check "modules removed by hand again" clean n1

echo "--- two tools on one node at once"
"$cli" record --node "$n2" --all --duration 2s -o "$out/both_a.folded" --cookie-file "$cookie_file" 2>/dev/null &
rec=$!
sleep 0.7
bs top --node "$n2" --count 4 --limit 3 >"$out/both_top.txt" 2>/dev/null
top_rc=$?
wait $rec
rec_rc=$?
check "two tools at once: the record delivered, finished first, and left the code to the other" [ $rec_rc -eq 0 ] && [ -s "$out/both_a.folded" ]
check "two tools at once: top kept working to its end" [ $top_rc -eq 0 ] && [ "$(grep -c '^PID' "$out/both_top.txt")" -eq 4 ]
check "two tools at once: the last job out unloaded beamspy" wait_clean n2 10
. "$here/unload_checks.sh"

echo "--- another version of beamspy on the node"
mkdir -p "$build/fake"
cat >"$build/fake/beamspy_dump.erl" <<'EOF'
-module(beamspy_dump).
-export([snapshot/1, fake/0]).
snapshot(_) -> {error, fake}.
fake() -> true.
EOF
erlc -o "$build/fake" "$build/fake/beamspy_dump.erl"
rpc n2 "code:add_patha(\"$build/fake\"), {module, _} = code:load_file(beamspy_dump), ok." >/dev/null
bs dump --node "$n2" --limit 1 >"$out/other.txt" 2>/dev/null
check "another version on the node: beamspy's own is used" grep -q '^<' "$out/other.txt"
check "another version on the node: the node's is back afterwards" [ "$(rpc n2 'beamspy_dump:fake().')" = "true" ]
rpc n2 "code:purge(beamspy_dump), code:delete(beamspy_dump), code:purge(beamspy_dump), code:del_path(\"$build/fake\")." >/dev/null
check "another version on the node: nothing else left" clean n2

echo "--- long names, the default cookie"
long="${tag}_long@127.0.0.1"
erl -name "$long" -setcookie "$cookie" -detached -noinput -pa "$build" -eval 'bs_dist_wl:start()'
for _ in $(seq 1 100); do
    [ "$(printf 'is_pid(whereis(stuck)).\n' | "$erl_call" -name "$long" -c "$cookie" -e 2>/dev/null)" = "{ok, true}" ] && break
    sleep 0.1
done
bs record --node "$long" --name busy --duration 500ms -o "$out/long.folded" 2>/dev/null
check "long names (a dot in the host): record works" grep -q '> busy;bs_dist_wl:spin/1' "$out/long.folded"
printf 'erlang:halt().\n' | "$erl_call" -name "$long" -c "$cookie" -e >/dev/null 2>&1
mkdir -p "$build/home"
cp "$cookie_file" "$build/home/.erlang.cookie"
chmod 400 "$build/home/.erlang.cookie"
HOME="$build/home" "$cli" dump --node "$n1" --limit 1 >"$out/home.txt" 2>&1
check "no cookie option: ~/.erlang.cookie is used" grep -q '^node ' "$out/home.txt"
HOME="$build/nohome" "$cli" dump --node "$n1" --limit 1 >/dev/null 2>"$out/nohome.err"
check "no cookie anywhere: a clear error" grep -q 'cannot read cookie file .*/.erlang.cookie' "$out/nohome.err"

echo "--- usage errors"
usage() { "$cli" "$@" >/dev/null 2>&1; [ $? -eq 2 ]; }
check "record: unknown output extension" usage record --node "$n1" --all -o x.unknown
check "record: bad --function" usage record --node "$n1" --function nonsense -o x.svg
check "record: bad --duration" usage record --node "$n1" --all --duration 5parsecs -o x.svg
check "record: --function with --mode sample" usage record --node "$n1" --function m:f/1 --mode sample -o x.svg
check "dump: --limit 0 is refused" usage dump --node "$n1" --limit 0
check "top: no node" usage top --once
check "run: no output" usage run -e ok
check "run: no command" usage run -o x.svg
check "help of each command" bash -c "for c in record dump top run; do '$cli' help \$c | grep -q 'usage: beamspy '\$c || exit 1; done"

echo "--- dump"
bs dump --node "$n1" >"$out/dump.txt" 2>"$out/dump.err"
check "dump: exit 0" [ $? -eq 0 ]
check "dump: the stuck process comes first" bash -c "grep -m1 '^<' '$out/dump.txt' | grep -q ' stuck$'"
check "dump: says why it looks stuck" grep -q 'message queue 10000' "$out/dump.txt"
check "dump: its stack" grep -q 'bs_dist_wl:wait_for_go/0' "$out/dump.txt"
check "dump: every process" [ "$(grep -c '^<' "$out/dump.txt")" -ge 20 ]
bs dump --node "$n1" --json >"$out/dump.json" 2>/dev/null
check "dump --json: valid JSON, stuck first" python3 -c "
import json, sys
d = json.load(open('$out/dump.json'))
p = d['processes'][0]
assert p['name'] == 'stuck' and p['message_queue_len'] == 10000, p
assert any('wait_for_go' in f for f in p['stack'])
assert d['node'] == '$n1'
"
bs dump --node "$n1" --name busy --json >"$out/dump1.json" 2>/dev/null
check "dump --name: that process only" python3 -c "
import json
d = json.load(open('$out/dump1.json'))
assert [p['name'] for p in d['processes']] == ['busy'], d
"
check "dump: nothing left on the node" clean n1
"$cli" dump --node "$n1" --interval 5s --cookie-file "$cookie_file" >/dev/null 2>&1 &
rec=$!
disown "$rec"
pids+=("$rec")
sleep 1.5
kill -9 "$rec"
check "kill -9 of the tool during a dump: the node unloads beamspy" wait_clean n1 10
. "$here/deadlocks.sh"

echo "--- top"
bs top --node "$n1" --once --limit 5 >"$out/top.txt" 2>"$out/top.err"
check "top --once: exit 0" [ $? -eq 0 ]
check "top --once: the busy process is first" bash -c "grep -A1 '^PID' '$out/top.txt' | tail -1 | grep -q ' busy '"
check "top --once: plain text when not a terminal" bash -c "! grep -q \$'\\033' '$out/top.txt'"
check "top --once on a node without +JPperf true: the hot functions say why not CPU samples, naming the flag" \
    grep -q '^hot functions: share of running samples (not CPU samples: .*+JPperf true' "$out/top.txt"
check "top: nothing left on the node" clean n1
in_tmux "${tag}_top" "'$cli' top --node '$n1' --cookie-file '$cookie_file' --count 3 --limit 5; sleep 60"
shown=""
for _ in $(seq 1 100); do
    sleep 0.1
    shown=$(tmux capture-pane -p -t "${tag}_top" 2>/dev/null)
    echo "$shown" | grep -q ' busy ' && break
done
echo "$shown" >"$out/top_tmux.txt"
check "top in tmux: shows the busy process" grep -q '^<[0-9.]*> *busy ' "$out/top_tmux.txt"
check "top in tmux: its function" grep -q 'bs_dist_wl:\|lists:' "$out/top_tmux.txt"
in_tmux "${tag}_rec" "'$cli' record --node '$n1' --cookie-file '$cookie_file' --all --duration 3s -o '$out/tty.folded'; sleep 60"
shown=""
for _ in $(seq 1 30); do
    sleep 0.1
    shown=$(tmux capture-pane -p -t "${tag}_rec" 2>/dev/null)
    echo "$shown" | grep -q 'events' && break
done
echo "$shown" >"$out/progress_tmux.txt"
check "record on a terminal: a progress line" grep -q 'recording 1 node: .* events, .* MiB on the node' "$out/progress_tmux.txt"
# Both tools die at once (their two jobs end together): the last to end
# removes beamspy's code.
tmux kill-session -t "${tag}_top" 2>/dev/null
tmux kill-session -t "${tag}_rec" 2>/dev/null
check "two tools on one node killed at once: nothing of beamspy left" wait_clean_or_say n1 30

echo "--- run"
# The checks below look for the frames of short work (a sort of 200 or
# 20,000 elements): raw times, since compensated, on a loaded machine, such
# short calls can round to no time and folded writes no line for them.
before=$(ls -d /tmp/beamspy-run-* 2>/dev/null | wc -l)
# Small on purpose: far from any limit (200000 elements needed about 10^7
# events under erl_eval, right at the old default --max-events).
"$cli" run --no-compensate -o "$out/run.folded" -o "$out/run.svg" -e 'lists:sort([X rem 997 || X <- lists:seq(1, 20000)])' \
    >"$out/run.out" 2>&1
check "run -e: exit 0" [ $? -eq 0 ]
check "run -e: the expression's work is recorded" grep -q 'lists:sort/1' "$out/run.folded"
check "run -e: no limit was hit" bash -c "! grep -q 'stopped early' '$out/run.out'"
# A whole-VM view: the 300 ms the expression waits (timer:sleep) is WAIT,
# left out and said on stderr; --show-idle keeps it.
idle_expr='timer:sleep(300), lists:sort(lists:seq(1, 20000))'
"$cli" run --no-compensate -o "$out/idle.folded" -o "$out/idle.html" -e "$idle_expr" >/dev/null 2>"$out/idle.err"
check "run: idle time (WAIT) left out by default" bash -c "! grep -q ';WAIT [0-9]*$' '$out/idle.folded' && grep -q 'lists:sort/1' '$out/idle.folded'"
check "run: ... and stderr says how much" grep -Eq '^beamspy: idle time left out: [0-9.]+ s waiting for messages \(WAIT\) in [0-9]+ of [0-9]+ processes, [0-9.]+% of the time recorded; shown: the other [0-9.]+ s \(running, runnable, GC\) \(--show-idle to see it\)$' "$out/idle.err"
# The page says what the user ran and with what, as its banner does (idle
# time left out), not the VM's session: no show_idle => true, no
# temporary file of the run.
check "run: the page names the command run" grep -qF "\"source\":\"beamspy run -e 'timer:sleep(300), lists:sort" "$out/idle.html"
check "run: ... and show_idle as drawn (false)" grep -qF 'show_idle =\u003e false' "$out/idle.html"
check "run: ... never the VM's session or its temporary file" \
    bash -c "! grep -qE 'beamspy-run-|beamspy:start\\(all\\)|show_idle =.u003e true' '$out/idle.html'"
"$cli" run --show-idle -o "$out/idle2.folded" -o "$out/idle2.html" -e "$idle_expr" >/dev/null 2>"$out/idle2.err"
check "run --show-idle: the page says show_idle => true" grep -qF 'show_idle =\u003e true' "$out/idle2.html"
check "run --show-idle: the wait is there, under timer:sleep/1" grep -q 'timer:sleep/1;WAIT [0-9]*$' "$out/idle2.folded"
check "run --show-idle: nothing said about idle time" bash -c "! grep -q 'idle time left out' '$out/idle2.err'"
"$cli" run -o "$out/runlim.folded" -e 'io:format("limits ~w~n", [[maps:get(limits, I) || I <- beamspy:sessions()]])' \
    >"$out/runlim.out" 2>&1
check "run: no event limit by default, the memory cap kept" \
    eval 'grep -q "limits \[#{.*max_events => infinity" "$out/runlim.out" && grep -q "limits \[#{.*max_memory => [0-9]" "$out/runlim.out"'
"$cli" run --no-compensate -o "$out/run2.folded" -- erl -noshell -pa "$build" -eval 'bs_dist_wl:work(5), halt(3).' \
    >"$out/run2.out" 2>&1
check "run -- erl ... halt(3): the command's exit code" [ $? -eq 3 ]
check "run -- erl: recorded up to halt" grep -q 'bs_dist_wl:work/1' "$out/run2.folded"
"$cli" run -o "$out/run3.folded" -- erl -noshell -eval 'io:format("out~n"), init:stop().' >"$out/run3.out" 2>&1
check "run: init:stop ends it too, output passes through" [ $? -eq 0 ] && grep -q '^out$' "$out/run3.out" && [ -s "$out/run3.folded" ]
"$cli" run --no-compensate -o "$out/run5.folded" -- erl +S 1 -noshell -pa "$build" -eval 'bs_dist_wl:work(5), halt(0).' \
    >/dev/null 2>&1
"$cli" run -o "$out/run6.folded" -- erl -noshell -eval 'halt(4).' >/dev/null 2>&1
check "run: a VM that halts at once still leaves its profile" [ $? -eq 4 ] && [ -s "$out/run6.folded" ]
check "run: one scheduler, recorded up to halt all the same" grep -q 'bs_dist_wl:work/1' "$out/run5.folded"
# A limit stops the recording and the VM halts before the session's owner
# wrote the profile (as `run -- mix compile --force' did once max_memory fell
# near the end of a long compile): the halting process writes it itself, or
# waits for the owner's write. The owner is suspended here so that the halt
# surely comes first; the limit is an event count, reached at a known point.
halt_early='[O] = beamspy_session:owners(), erlang:suspend_process(O),
  lists:foldl(fun(X, A) -> lists:reverse(lists:seq(1, X rem 50)) ++ A end, [], lists:seq(1, 20000)), halt(0).'
"$cli" run --max-events 20000 -o "$out/run7.folded" -- erl -noshell -eval "$halt_early" >/dev/null 2>"$out/run7.err"
rc=$?
check "run: a limit, then a halt before the profile is written: the profile all the same" \
    eval '[ $rc -eq 0 ] && grep -q "lists:foldl/3" "$out/run7.folded"'
# The VM halted before the owner noted the stop: no figures of when and how
# much, but the limit and the value this run asked for.
check "run: ... and stderr says which limit ended it, with the value asked for" \
    grep -q 'recording stopped early: max_events (20000 events) reached; raise it with --max-events N$' "$out/run7.err"
check "run: temporary files removed" [ "$(ls -d /tmp/beamspy-run-* 2>/dev/null | wc -l)" -eq "$before" ]
"$cli" run -o "$out/runex.folded" -- elixir -e 'Enum.sort(Enum.to_list(1..20000))' >/dev/null 2>"$out/runex.err"
# Elixir's own start-up (Kernel.CLI) is in every such run, whatever the
# compensation leaves of a short call.
elixir_spelled() { grep -q ';Kernel\.CLI\.[a-z_]*/[0-9]' "$1" && ! grep -q "'Elixir\." "$1"; }
check "run -- elixir: Elixir's names without --elixir" elixir_spelled "$out/runex.folded"
check "run -- elixir: stderr says why" grep -q "elixir is Elixir's.*--erlang" "$out/runex.err"
check "run -- erl: no word of Elixir" bash -c "! grep -q \"Elixir's\" '$out/run2.out'"
# run -- mix test: a project (no deps) whose compilation is real work. A
# limit that falls while Mix compiles is said to fall before any test ran;
# --when-started ex_unit records the tests alone, not the compilation.
mixproj="$build/mixproj"
mkdir -p "$mixproj/lib" "$mixproj/test"
cat >"$mixproj/mix.exs" <<'MIX'
defmodule Mixproj.MixProject do
  use Mix.Project
  def project, do: [app: :mixproj, version: "0.1.0", deps: []]
end
MIX
{
    echo 'defmodule Mixproj do'
    echo '  def fib(n) when n < 2, do: n'
    echo '  def fib(n), do: fib(n - 1) + fib(n - 2)'
    for i in $(seq 1 300); do echo "  def f$i(x), do: Enum.map(x, &(&1 * $i)) |> Enum.sum()"; done
    echo 'end'
} >"$mixproj/lib/mixproj.ex"
echo 'ExUnit.start()' >"$mixproj/test/test_helper.exs"
cat >"$mixproj/test/mixproj_test.exs" <<'EXS'
defmodule MixprojTest do
  use ExUnit.Case
  # --when-started switches recording on once ex_unit has started, which
  # on a loaded machine can come after a test this short: it waits for the
  # recording (a beamspy session on this VM; 30 s at most), then runs.
  test "fib" do
    recording()
    assert(Mixproj.fib(15) == 610)
  end

  defp recording(tries \\ 3000) do
    on = function_exported?(:beamspy, :sessions, 0) and :beamspy.sessions() != []
    if not on and tries > 0, do: (Process.sleep(10); recording(tries - 1))
  end
end
EXS
(cd "$mixproj" && rm -rf _build && "$cli" run --max-memory 4M -o "$out/mt1.folded" -- mix test) >"$out/mt1.out" 2>"$out/mt1.err"
rc=$?
check "run -- mix test: a limit during compilation, the tests still pass" [ $rc -eq 0 ]
check "run -- mix test: stderr says the limit fell before any test ran, and how to record the tests" \
    grep -q '^beamspy: the limit fell before any test ran (ExUnit had not started: .*--when-started ex_unit -- mix test$' "$out/mt1.err"
rm -f "$out/mt2.folded"
(cd "$mixproj" && rm -rf _build && "$cli" run --when-started ex_unit -o "$out/mt2.folded" -- mix test) >"$out/mt2.out" 2>"$out/mt2.err"
rc=$?
check "run --when-started ex_unit -- mix test: exit 0, says when recording starts" \
    eval '[ $rc -eq 0 ] && grep -q "^beamspy run: ex_unit has started: recording from now$" "$out/mt2.err"'
check "run --when-started ex_unit: the test is recorded" grep -q 'MixprojTest\."test fib"/1;Mixproj\.fib/1' "$out/mt2.folded"
check "run --when-started ex_unit: the compilation before it is not" bash -c "! grep -q 'Mix\.Tasks\.Compile' '$out/mt2.folded'"
"$cli" run --when-started 'Ex Unit' -o "$out/x.folded" -- mix test >/dev/null 2>"$out/mt3.err"
rc=$?
check "run --when-started: a bad application name is a usage error" eval '[ $rc -eq 2 ] && grep -q "when-started wants an application name" "$out/mt3.err"'
"$cli" run -o "$out/x.folded" -- no-such-command-here >/dev/null 2>"$out/run4.err"
check "run: a command that does not exist" [ $? -ne 0 ] && grep -q 'cannot run no-such-command-here' "$out/run4.err"
. "$here/idle_checks.sh"
. "$here/cpu_checks.sh"

echo "--- run: limits, --duration, signals, a killed tool"
# Temporary directories of these runs go to a directory of their own.
runtmp="$build/runtmp"
mkdir -p "$runtmp"
# 20,000 calls of compiled code (lists:sort/1): far over the limit on every
# release, however the expression itself is evaluated (on OTP 29 erl_eval
# made fewer than 1,000 events of a comprehension now and then).
many_calls='[lists:sort([X, 2, 1]) || X <- lists:seq(1, 20000)]'
TMPDIR="$runtmp" "$cli" run --max-events 1000 -o "$out/early.folded" \
    -e "$many_calls" >/dev/null 2>"$out/early.err"
rc=$?
check "run: a limit that ends the recording early: exit 0, outputs written" eval '[ $rc -eq 0 ] && [ -s "$out/early.folded" ]'
# When and how much come from the VM's note of the stop, which a VM that
# halts right after the limit may not have written: the profile itself
# still says which limit (the line then has no figures).
check "run: ... and stderr says which limit, when, how much, and how to raise it" \
    grep -Eq '^beamspy: recording stopped early( after [0-9.]+ s)?: max_events \(1000 events\) reached(; [0-9]+ events, .* recorded)?; raise it with --max-events N$' "$out/early.err"
TMPDIR="$runtmp" "$cli" run --strict --max-events 1000 -o "$out/early.folded" \
    -e "$many_calls" >/dev/null 2>&1
check "run --strict: an early stop exits 10" [ $? -eq 10 ]
# run_bg NAME [options]: beamspy run in the background on an expression that
# says it has started (a marker file holding the VM's OS pid) and then
# sleeps forever.
run_bg() {
    local name=$1
    shift
    rm -f "$out/$name.started"
    # Raw times: the checks look for file:write_file/2, a few µs of work
    # that compensation can leave with no line in the folded file.
    TMPDIR="$runtmp" "$cli" run --no-compensate "$@" -o "$out/$name.folded" \
        -e "file:write_file(\"$out/$name.started\", os:getpid()), timer:sleep(infinity)" >/dev/null 2>"$out/$name.err" &
    bg=$!
}
# wait_for COMMAND...: polls COMMAND, at most 30 s.
wait_for() {
    for _ in $(seq 1 300); do
        "$@" && return 0
        sleep 0.1
    done
    return 1
}
gone() { ! kill -0 "$1" 2>/dev/null; }
# end_bg: the background tool's exit status in rc (killed if still there
# after 30 s: a failure, not a hang).
end_bg() {
    wait_for gone "$bg" || kill -9 "$bg" 2>/dev/null
    wait "$bg"
    rc=$?
}
# vm_gone: the VM of the last background run is gone (killed after 30 s if
# not: the check fails, nothing is left running).
vm_gone() {
    wait_for gone "$vm" && return 0
    kill -9 "$vm" 2>/dev/null
    return 1
}
no_run_dirs() { [ -z "$(ls -A "$runtmp")" ]; }
t0=$(date +%s)
run_bg dur --duration 2s
wait_for [ -s "$out/dur.started" ]
vm=$(cat "$out/dur.started")
end_bg
check "run --duration 2s on a VM that never ends: exit 0 once the duration is over" [ $rc -eq 0 ]
check "run --duration: the tool did not wait for the VM's own end" [ $(($(date +%s) - t0)) -le 60 ]
check "run --duration: outputs written, with what ran" grep -q 'file:write_file/2' "$out/dur.folded"
check "run --duration: the VM is gone" vm_gone
check "run --duration: the temporary directory is removed" no_run_dirs
# Recording that cannot start (more processes than --max-processes): the
# VM runs unrecorded but still ends with --duration, and the tool says why.
TMPDIR="$runtmp" timeout 60 "$cli" run --duration 1s --max-processes 1 -o "$out/nostart.folded" \
    -e 'timer:sleep(infinity)' >/dev/null 2>"$out/nostart.err"
rc=$?
check "run, recording cannot start: the tool ends with --duration, exit 1" [ $rc -eq 1 ]
check "run, recording cannot start: stderr says why" grep -q 'max_processes is 1.*nothing is recorded' "$out/nostart.err"
check "run, recording cannot start: no output, no temporary directory" eval '[ ! -e "$out/nostart.folded" ] && no_run_dirs'
for sig in INT TERM; do
    run_bg "sig$sig"
    wait_for [ -s "$out/sig$sig.started" ]
    vm=$(cat "$out/sig$sig.started")
    kill -"$sig" "$bg"
    end_bg
    check "run, SIG$sig to the tool: exit 128+signal" [ $rc -eq $((128 + $(kill -l "$sig"))) ]
    # file:write_file/2 ran before the marker was there; timer:sleep/1 may
    # not have been reached yet when the signal comes.
    check "run, SIG$sig to the tool: outputs written" grep -q 'file:write_file/2' "$out/sig$sig.folded"
    check "run, SIG$sig to the tool: the VM is gone" vm_gone
    check "run, SIG$sig to the tool: the temporary directory is removed" no_run_dirs
done
run_bg killed
wait_for [ -s "$out/killed.started" ]
vm=$(cat "$out/killed.started")
check "run, kill -9 of the tool: its VM was running" eval '[ -n "$vm" ] && kill -0 "$vm"'
check "run, kill -9 of the tool: its temporary directory was there" [ -n "$(ls -A "$runtmp")" ]
kill -9 "$bg"
end_bg
check "run, kill -9 of the tool: the VM notices and halts" vm_gone
check "run, kill -9 of the tool: the VM removed the temporary directory" wait_for no_run_dirs

echo "--- record: limits"
bs record --node "$n1" --all --max-events 1000 --duration 60s -o "$out/rlim.folded" >/dev/null 2>"$out/rlim.err"
rc=$?
check "record, a limit ends it early: exit 0, outputs written" eval '[ $rc -eq 0 ] && [ -s "$out/rlim.folded" ]'
check "record, a limit ends it early: stderr says which limit, when, how much, how to raise it" \
    grep -q '^beamspy: recording stopped early after [0-9.]* s: max_events (1000 events) reached; [0-9]* events, .* recorded; raise it with --max-events N$' "$out/rlim.err"
bs record --node "$n1" --all --max-events 1000 --duration 60s --strict -o "$out/rlim.folded" >/dev/null 2>&1
check "record --strict, a limit ends it early: exit 10" [ $? -eq 10 ]
bs record --node "$n1" --function bs_dist_wl:handle/1 --calls 20 --max-events 5000 --duration 20s \
    -o "$out/flim.folded" >/dev/null 2>"$out/flim.err"
rc=$?
# One call of handle/1 is about 1,500 events and 20 calls about 30,000: the
# limit falls well after the first call and well before the last.
check "record --function, a limit ends it early: exit 0, the line says so" \
    eval '[ $rc -eq 0 ] && grep -q "^beamspy: recording stopped early after [0-9.]* s: max_events (5000 events) reached; [0-9]* events, .* recorded; raise it with --max-events N$" "$out/flim.err"'
check "record --function, a limit ends it early: nothing left on the node" clean n1
bs record --node "$n1" --name busy --duration 500ms --strict -o "$out/rfull.folded" >/dev/null 2>"$out/rfull.err"
rc=$?
check "record --strict, no limit hit: exit 0, nothing said about limits" eval '[ $rc -eq 0 ] && ! grep -q "stopped early" "$out/rfull.err"'
"$cli" record --node "$n1" --all --duration 60s -o "$out/rdef.folded" --cookie-file "$cookie_file" >/dev/null 2>&1 &
rec=$!
session_limits() { rpc n1 '[maps:get(limits, I) || I <- beamspy:sessions()].' >"$out/rdef.limits"; grep -q max_events "$out/rdef.limits"; }
wait_for session_limits
# (Two greps: the order in which a map's keys print differs between OTP releases.)
check "record: no event limit by default, the memory cap kept" \
    eval 'grep -q "max_events => infinity" "$out/rdef.limits" && grep -q "max_memory => [0-9]" "$out/rdef.limits"'
kill -INT "$rec"
wait "$rec"
check "record: nothing left on the node after the limit checks" wait_clean n1 10

. "$here/seq_checks.sh"
[ "${BEAMSPY_OTP_REPEAT:-0}" != 1 ] && . "$here/cluster_checks.sh"

finish
