# cluster_checks.sh — sourced by run.sh (needs its helpers): record over
# several nodes at once. Four nodes recorded in one run (each node's root in
# the merged profile, and one file per node with --per-node); a node killed
# (kill -9 of its OS process) while the others record: the rest written,
# the loss said naming it, exit 11 (with --strict: the lost node's own
# code, 9); a node that rejects the cookie given for all: said and skipped;
# nothing of beamspy left on any node that survived; traced, the nodes share
# one node's timeline; a node slow to start costs no other node its lease.
# Its nodes are g1..g5 and gs,
# its own: c2 of the cpu checks has beamspy on its code path.

echo "--- record over a cluster"
for c in g1 g2 g3 g4; do
    start_node "$c" || fail setup "node $c did not start"
done
g1=$(node_name g1) g2=$(node_name g2) g3=$(node_name g3) g4=$(node_name g4)

bs record --node "$g1" --node "$g2" --node "$g3" --node "$g4" --all --mode sample --duration 1s \
    -o "$out/cluster.folded" -o "$out/cluster.bspy" 2>"$out/cluster.err"
rc=$?
check "cluster of 4: exit 0" [ $rc -eq 0 ]
for n in "$g1" "$g2" "$g3" "$g4"; do
    check "cluster of 4: $n has its root in the merged profile" grep -q "^$n;" "$out/cluster.folded"
    check "cluster of 4: $n's busy process is under its root" grep -q "^$n;.*bs_dist_wl:spin/1" "$out/cluster.folded"
done
check "cluster of 4: the .bspy is written" [ -s "$out/cluster.bspy" ]
check "cluster of 4: the merged .bspy reads back with the four roots" \
    bash -c "'$cli' render '$out/cluster.bspy' -o '$out/cluster_back.folded' && [ \$(cut -d';' -f1 '$out/cluster_back.folded' | sort -u | wc -l) -eq 4 ]"
check "cluster of 4: the spread of starts and stops is said" grep -q "4 nodes: attached in .* start requests sent within .* stop requests sent within" "$out/cluster.err"

bs record --node "$g1" --node "$g2" --all --mode sample --duration 1s --per-node -o "$out/pernode.folded" \
    2>"$out/pernode.err"
check "cluster --per-node: exit 0" [ $? -eq 0 ]
check "cluster --per-node: one file per node" eval '[ -s "$out/pernode.${g1}.folded" ] && [ -s "$out/pernode.${g2}.folded" ]'

# record_killing EXTRA...: records g1..g4 (with EXTRA options) until Ctrl-C;
# once all four record (the progress line says so), g4's OS process is
# killed, then once the tool said g4 was lost (or at the latest after a
# while: the stop then finds it gone), Ctrl-C. Sets rc.
record_killing() {
    local name=$1
    shift
    "$cli" record --node "$g1" --node "$g2" --node "$g3" --node "$g4" --all --mode sample --duration 300s \
        --progress --cookie-file "$cookie_file" -o "$out/$name.folded" "$@" 2>"$out/$name.err" &
    local rec=$!
    wait_until 120 grep -q "4 recording" "$out/$name.err" || echo "    $name: never saw 4 nodes recording"
    stop_node g4
    wait_until 30 grep -q "$g4" "$out/$name.err"
    kill -INT "$rec"
    wait "$rec"
    rc=$?
}

record_killing killed
check "node killed mid-record: exit 11 (partial)" [ $rc -eq 11 ]
check "node killed mid-record: the loss is said, naming the node" grep -q "left out: $g4 (connection lost, exit 9)" "$out/killed.err"
for n in "$g1" "$g2" "$g3"; do
    check "node killed mid-record: $n is written" grep -q "^$n;.*bs_dist_wl:spin/1" "$out/killed.folded"
done
check "node killed mid-record: nothing of $g4 in the profile" bash -c "! grep -q '^$g4;' '$out/killed.folded'"
for c in g1 g2 g3; do
    check "node killed mid-record: nothing of beamspy left on $c" wait_clean "$c" 15
done

start_node g4 || fail setup "node g4 did not start again"
record_killing killed_strict --strict
check "node killed mid-record, --strict: a failure (the lost node's code, 9)" [ $rc -eq 9 ]
check "node killed mid-record, --strict: the others are still written" grep -q "^$g1;" "$out/killed_strict.folded"

# A node with another cookie: the cookie file given for all is rejected by
# it (started here: the helpers of nodes.sh speak with the tests' cookie).
g5=$(node_name g5)
erl -sname "${tag}_g5" -setcookie "other$cookie" -detached -noinput -eval 'ok' || fail setup "node g5 did not start"
wait_until 30 bash -c "epmd -names | grep -q 'name ${tag}_g5 '"
bs record --node "$g1" --node "$g5" --node "$g2" --all --mode sample --duration 1s -o "$out/refused.folded" \
    2>"$out/refused.err"
rc=$?
check "a node rejecting the cookie: exit 11 (partial)" [ $rc -eq 11 ]
check "a node rejecting the cookie: said, naming it" grep -q "node $g5 rejected the cookie" "$out/refused.err"
check "a node rejecting the cookie: left out, named in the summary" grep -q "left out: $g5 (rejected the cookie, exit 6)" "$out/refused.err"
check "a node rejecting the cookie: the others are recorded" bash -c "grep -q '^$g1;' '$out/refused.folded' && grep -q '^$g2;' '$out/refused.folded'"
bs record --node "$g1" --node "$g5" --all --mode sample --duration 1s --strict -o "$out/refused_strict.folded" \
    2>/dev/null
check "a node rejecting the cookie, --strict: exit 6" [ $? -eq 6 ]
printf 'erlang:halt().\n' | "$erl_call" -sname "${tag}_g5" -c "other$cookie" -e >/dev/null 2>&1

# Traced over several nodes, the nodes share one node's timeline (said),
# and every node is in the time-ordered output too.
bs record --node "$g1" --node "$g2" --all --duration 1s -o "$out/shared.folded" -o "$out/shared.trace.json" \
    2>"$out/shared.err"
check "trace over 2 nodes: exit 0" [ $? -eq 0 ]
check "trace over 2 nodes: the shared timeline is said" \
    grep -q "2 nodes: each keeps a timeline of its first 500000 calls" "$out/shared.err"
check "trace over 2 nodes: both nodes in the Chrome trace" \
    bash -c "grep -q '$g1' '$out/shared.trace.json' && grep -q '$g2' '$out/shared.trace.json'"
bs record --node "$g1" --node "$g2" --all --duration 1s --timeline 1000 -o "$out/own.folded" 2>"$out/own.err"
check "trace over 2 nodes, --timeline given: nothing shared, nothing said" \
    bash -c "! grep -q 'each keeps a timeline' '$out/own.err'"

# A node slow to start: gs (one scheduler) runs a watcher at max priority
# that, once a beamspy job process appears there, spins for 3 s, so that
# gs answers its start 3 s late. The node that started at once is polled
# meanwhile, so its lease (1 s) does not run out while gs starts (before,
# the tool polled no node until every start was answered, and lost it).
# Both are recorded.
start_node gs +S 1:1 || fail setup "node gs did not start"
gs=$(node_name gs)
rpc gs '
    Spin = fun S(T) -> case erlang:monotonic_time(millisecond) < T of true -> S(T); false -> ok end end,
    IsJob = fun(P) -> erlang:process_info(P, initial_call) =:= {initial_call, {beamspy_agent, init, 4}} end,
    Watch = fun W() ->
                case lists:any(IsJob, erlang:processes()) of
                    true -> Spin(erlang:monotonic_time(millisecond) + 3000);
                    false -> receive after 1 -> W() end
                end
            end,
    spawn(fun() -> process_flag(priority, max), Watch() end), ok.' >/dev/null
bs record --node "$g1" --node "$gs" --all --duration 2s --lease 1s --timings -o "$out/slow.folded" 2>"$out/slow.err"
rc=$?
echo "    slow node: $(grep -o 'the last answered after [0-9]* ms' "$out/slow.err") (the lease: 1000 ms)"
late=$(sed -n 's/.*the last answered after \([0-9]*\) ms.*/\1/p' "$out/slow.err")
check "a node slow to start: it answered its start after more than the lease" [ "${late:-0}" -gt 1000 ]
check "a node slow to start: exit 0" [ $rc -eq 0 ]
check "a node slow to start: the quick node is recorded" grep -q "^$g1;" "$out/slow.folded"
check "a node slow to start: the slow node is recorded" grep -q "^$gs;" "$out/slow.folded"
check "a node slow to start: no lease ran out" bash -c "! grep -q 'ended by itself' '$out/slow.err'"
stop_node gs

for c in g1 g2 g3; do
    check "after the cluster runs: nothing of beamspy left on $c" wait_clean "$c" 15
done
