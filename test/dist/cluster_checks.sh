# cluster_checks.sh — sourced by run.sh (needs its helpers): record over
# several nodes at once. Four nodes recorded in one run (each node's root in
# the merged profile, and one file per node with --per-node); a node killed
# (kill -9 of its OS process) while the others record: the rest written,
# the loss said naming it, exit 11 (with --strict: the lost node's own
# code, 9); a node that rejects the cookie given for all: said and skipped;
# nothing of beamspy left on any node that survived.

echo "--- record over a cluster"
for c in c1 c2 c3 c4; do
    start_node "$c" || fail setup "node $c did not start"
done
c1=$(node_name c1) c2=$(node_name c2) c3=$(node_name c3) c4=$(node_name c4)

bs record --node "$c1" --node "$c2" --node "$c3" --node "$c4" --all --mode sample --duration 1s \
    -o "$out/cluster.folded" -o "$out/cluster.bspy" 2>"$out/cluster.err"
rc=$?
check "cluster of 4: exit 0" [ $rc -eq 0 ]
for n in "$c1" "$c2" "$c3" "$c4"; do
    check "cluster of 4: $n has its root in the merged profile" grep -q "^$n;" "$out/cluster.folded"
    check "cluster of 4: $n's busy process is under its root" grep -q "^$n;.*bs_dist_wl:spin/1" "$out/cluster.folded"
done
check "cluster of 4: the .bspy is written" [ -s "$out/cluster.bspy" ]
check "cluster of 4: the merged .bspy reads back with the four roots" \
    bash -c "'$cli' render '$out/cluster.bspy' -o '$out/cluster_back.folded' && [ \$(cut -d';' -f1 '$out/cluster_back.folded' | sort -u | wc -l) -eq 4 ]"
check "cluster of 4: the spread of starts and stops is said" grep -q "4 nodes: attached in .* start requests sent within .* stop requests sent within" "$out/cluster.err"

bs record --node "$c1" --node "$c2" --all --mode sample --duration 1s --per-node -o "$out/pernode.folded" \
    2>"$out/pernode.err"
check "cluster --per-node: exit 0" [ $? -eq 0 ]
check "cluster --per-node: one file per node" [ -s "$out/pernode.${c1}.folded" ] && [ -s "$out/pernode.${c2}.folded" ]

# record_killing EXTRA...: records c1..c4 (with EXTRA options) until Ctrl-C;
# once all four record (the progress line says so), c4's OS process is
# killed, then once the tool said c4 was lost (or at the latest after a
# while: the stop then finds it gone), Ctrl-C. Sets rc.
record_killing() {
    local name=$1
    shift
    "$cli" record --node "$c1" --node "$c2" --node "$c3" --node "$c4" --all --mode sample --duration 300s \
        --progress --cookie-file "$cookie_file" -o "$out/$name.folded" "$@" 2>"$out/$name.err" &
    local rec=$!
    wait_until 120 grep -q "4 recording" "$out/$name.err" || echo "    $name: never saw 4 nodes recording"
    stop_node c4
    wait_until 30 grep -q "$c4" "$out/$name.err"
    kill -INT "$rec"
    wait "$rec"
    rc=$?
}

record_killing killed
check "node killed mid-record: exit 11 (partial)" [ $rc -eq 11 ]
check "node killed mid-record: the loss is said, naming the node" grep -q "left out: $c4 (connection lost, exit 9)" "$out/killed.err"
for n in "$c1" "$c2" "$c3"; do
    check "node killed mid-record: $n is written" grep -q "^$n;.*bs_dist_wl:spin/1" "$out/killed.folded"
done
check "node killed mid-record: nothing of $c4 in the profile" bash -c "! grep -q '^$c4;' '$out/killed.folded'"
for c in c1 c2 c3; do
    check "node killed mid-record: nothing of beamspy left on $c" wait_clean "$c" 15
done

start_node c4 || fail setup "node c4 did not start again"
record_killing killed_strict --strict
check "node killed mid-record, --strict: a failure (the lost node's code, 9)" [ $rc -eq 9 ]
check "node killed mid-record, --strict: the others are still written" grep -q "^$c1;" "$out/killed_strict.folded"

# A node with another cookie: the cookie file given for all is rejected by
# it (started here: the helpers of nodes.sh speak with the tests' cookie).
c5=$(node_name c5)
erl -sname "${tag}_c5" -setcookie "other$cookie" -detached -noinput -eval 'ok' || fail setup "node c5 did not start"
wait_until 30 bash -c "epmd -names | grep -q 'name ${tag}_c5 '"
bs record --node "$c1" --node "$c5" --node "$c2" --all --mode sample --duration 1s -o "$out/refused.folded" \
    2>"$out/refused.err"
rc=$?
check "a node rejecting the cookie: exit 11 (partial)" [ $rc -eq 11 ]
check "a node rejecting the cookie: said, naming it" grep -q "node $c5 rejected the cookie" "$out/refused.err"
check "a node rejecting the cookie: left out, named in the summary" grep -q "left out: $c5 (rejected the cookie, exit 6)" "$out/refused.err"
check "a node rejecting the cookie: the others are recorded" bash -c "grep -q '^$c1;' '$out/refused.folded' && grep -q '^$c2;' '$out/refused.folded'"
bs record --node "$c1" --node "$c5" --all --mode sample --duration 1s --strict -o "$out/refused_strict.folded" \
    2>/dev/null
check "a node rejecting the cookie, --strict: exit 6" [ $? -eq 6 ]
for c in c1 c2 c3; do
    check "after the cluster runs: nothing of beamspy left on $c" wait_clean "$c" 15
done
printf 'erlang:halt().\n' | "$erl_call" -sname "${tag}_c5" -c "other$cookie" -e >/dev/null 2>&1
