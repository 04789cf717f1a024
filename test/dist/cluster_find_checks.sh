# cluster_find_checks.sh — `--cluster NODE' and `--exclude-node', sourced by
# run.sh (ONLY=cluster_find runs only these). Four nodes k1..k4 form a cluster of
# their own (k1 connects to the others; the seq chain a -> b -> c runs on
# k1 -> k2 -> k3): found from k1 alone, the set is said on stderr, every node
# is recorded under its own root, an excluded node is in neither, dump, seq
# and top (one list across the nodes, the node in each row) work on the set, a seed that does not exist is an error naming it, and
# nothing of beamspy is left on any node. The recordings sample: tracing
# every process of four busy nodes on a shared 2-core host is what issue 25's
# sequential finish cannot yet fetch in time (one node's job did not answer
# within 300 s, and another dropped the silent tool), which is the record
# loop's problem, not the finding of the nodes checked here.

echo "--- cluster: nodes found from one of them"
erlc -o "$build" "$here/bs_seq_dist_wl.erl" || fail cluster "erlc bs_seq_dist_wl.erl"
k1=$(node_name k1)
k2=$(node_name k2)
k3=$(node_name k3)
k4=$(node_name k4)
chain_ready='is_pid(whereis(stuck)) andalso is_pid(whereis(chain)).'
start_node_with k4 'bs_dist_wl:start()' 'is_pid(whereis(stuck)).' || fail cluster "node k4 did not start"
start_node_with k3 "bs_dist_wl:start(), bs_seq_dist_wl:start(c, '')" "$chain_ready" ||
    fail cluster "node k3 did not start"
start_node_with k2 "bs_dist_wl:start(), bs_seq_dist_wl:start(b, '$k3')" "$chain_ready" ||
    fail cluster "node k2 did not start"
start_node_with k1 "bs_dist_wl:start(), bs_seq_dist_wl:start(a, '$k2'), bs_seq_dist_wl:start_client()" \
    "$chain_ready" || fail cluster "node k1 did not start"
rpc k1 "[net_kernel:connect_node(N) || N <- ['$k2', '$k3', '$k4']]." >/dev/null
cluster_connected() { is_true k1 "lists:sort(nodes(visible)) =:= ['$k2', '$k3', '$k4']."; }
check "cluster: k1 is connected to k2, k3 and k4 (and to nothing else)" wait_until 10 cluster_connected

# What beamspy left on a node, seq's system tracer included.
cluster_leftovers() {
    echo "$(leftovers "$1") seq_tracer=$(rpc "$1" 'seq_trace:get_system_tracer().')"
}
cluster_clean() { nothing_left "$1" cluster_leftovers "modules=0 traced=0 pattern=false seq_tracer=false"; }
cluster_all_clean() {
    local ok=0
    for k in k1 k2 k3 k4; do wait_clean_with cluster_clean "$k" 10 || ok=1; done
    return $ok
}
# wait_clean_with CHECK SHORT SECONDS: until CHECK passes, at most SECONDS.
wait_clean_with() { wait_until "$3" "$1" "$2" >/dev/null || "$1" "$2"; }

# roots FILE: the root frames of a folded file, sorted, one line.
roots() { cut -d';' -f1 "$1" | sort -u | tr '\n' ' ' | sed 's/ $//'; }

bs record --cluster "$k1" --all --mode sample --duration 1s -o "$out/cluster.folded" 2>"$out/cluster.err"
rc=$?
check "record --cluster: exit 0" [ $rc -eq 0 ]
check "record --cluster: stderr names the 4 nodes, before the files" \
    bash -c "grep -n . '$out/cluster.err' | grep -m1 -E 'cluster of|wrote' |
             grep -qxF '1:beamspy: cluster of 4 nodes from $k1: $k1 $k2 $k3 $k4'"
check "record --cluster: a root per node, and only those" [ "$(roots "$out/cluster.folded")" = "$k1 $k2 $k3 $k4" ]
check "record --cluster: each node's workload under its root" \
    bash -c "for k in '$k1' '$k2' '$k3' '$k4'; do grep -q \"^\$k;<[0-9.]*> busy;.*bs_dist_wl:spin/1\" '$out/cluster.folded' || exit 1; done"
check "record --cluster: nothing left on any node" cluster_all_clean

bs record --cluster "$k1" --exclude-node "$k3" --exclude-node "${tag}_k9" --all --mode sample --duration 1s \
    -o "$out/cluster_ex.folded" 2>"$out/cluster_ex.err"
rc=$?
check "--exclude-node: exit 0" [ $rc -eq 0 ]
check "--exclude-node: stderr's set leaves it out, and says so" \
    grep -qxF "beamspy: cluster of 3 nodes from $k1: $k1 $k2 $k4 (left out: $k3)" "$out/cluster_ex.err"
check "--exclude-node: not in the profile" [ "$(roots "$out/cluster_ex.folded")" = "$k1 $k2 $k4" ]
check "--exclude-node of a node not found: a warning naming it (a bare name is completed as for --node)" \
    grep -qF "warning: --exclude-node ${tag}_k9@$host: no such node among those found" "$out/cluster_ex.err"
check "--exclude-node: nothing left on any node" cluster_all_clean

bs record --cluster "$k1" --node "$k2" --node "$k4" --exclude-node "$k1" --all --mode sample --duration 300ms \
    -o "$out/cluster_mixed.folded" 2>"$out/cluster_mixed.err"
check "--cluster with --node: each node once, the seed itself excluded" \
    bash -c "grep -qxF 'beamspy: cluster of 3 nodes from $k1: $k2 $k4 $k3 (left out: $k1)' '$out/cluster_mixed.err' &&
             [ \"\$(cut -d';' -f1 '$out/cluster_mixed.folded' | sort -u | tr '\n' ' ')\" = '$k2 $k3 $k4 ' ]"

bs dump --cluster "$k1" --limit 1 >"$out/cluster_dump.txt" 2>"$out/cluster_dump.err"
rc=$?
check "dump --cluster: exit 0, the processes of every node" \
    bash -c "[ $rc -eq 0 ] && for k in '$k1' '$k2' '$k3' '$k4'; do grep -q \"^node \$k at \" '$out/cluster_dump.txt' || exit 1; done"
check "dump --cluster: the set said on stderr" grep -qF "cluster of 4 nodes from $k1:" "$out/cluster_dump.err"

bs seq --cluster "$k1" --function bs_seq_dist_wl:request/1 --calls 1 -o "$out/cluster_seq.mmd" \
    >/dev/null 2>"$out/cluster_seq.err"
rc=$?
check "seq --cluster: exit 0, the chain followed over the 3 nodes it crosses" \
    bash -c "[ $rc -eq 0 ] && [ \"\$(grep -c '^    box' '$out/cluster_seq.mmd')\" -eq 3 ] &&
             grep -q 'participant P[0-9]* as $k3 ' '$out/cluster_seq.mmd'"
check "seq --cluster: the set said on stderr" grep -qF "cluster of 4 nodes from $k1:" "$out/cluster_seq.err"
check "dump and seq --cluster: nothing left on any node" cluster_all_clean

bs top --cluster "$k1" --once --limit 8 >"$out/cluster_top.txt" 2>"$out/cluster_top.err"
rc=$?
check "top --cluster: exit 0, one screen for the 4 nodes" \
    bash -c "[ $rc -eq 0 ] && grep -q '^beamspy top  4 nodes  ' '$out/cluster_top.txt' && grep -q '^NODE  *PID  *NAME ' '$out/cluster_top.txt'"
check "top --cluster: each node's busy process, its node in the row" \
    bash -c "for k in '$k1' '$k2' '$k3' '$k4'; do grep -q \"^\$k  *<[0-9.]*>  *busy  \" '$out/cluster_top.txt' || exit 1; done"
check "top --cluster: the processes of all nodes in one list, by reductions/s" python3 -c "
import re, sys
rows = [l.split() for l in open(sys.argv[1]) if re.match(r'$tag'+r'_k[1-4]@\\S+ +<', l)]
rates = [float(r[3]) for r in rows]
sys.exit(0 if len(rows) == 8 and len({r[0] for r in rows}) >= 2 and rates == sorted(rates, reverse=True) else 1)
" "$out/cluster_top.txt"
check "top --cluster: hot functions with their node" grep -Eq "^ *[0-9.]+%  ${tag}_k[1-4]@$host  " "$out/cluster_top.txt"
check "top --cluster: nothing left on any node" cluster_all_clean

"$cli" record --cluster "${tag}_absent" --all -o "$out/x.folded" --cookie-file "$cookie_file" 2>"$out/cluster_absent.err"
rc=$?
check "--cluster of a node that does not exist: exit 4, as --node" [ $rc -eq 4 ]
check "--cluster of a node that does not exist: one line naming it" \
    bash -c "[ \"\$(wc -l <'$out/cluster_absent.err')\" -eq 1 ] && grep -q -- '--cluster ${tag}_absent: no node .${tag}_absent.' '$out/cluster_absent.err'"
bs dump --cluster "$k1" --exclude-node "$k1" --exclude-node "$k2" --exclude-node "$k3" --exclude-node "$k4" \
    >/dev/null 2>"$out/cluster_none.err"
rc=$?
check "every node excluded: usage error" bash -c "[ $rc -eq 2 ] && grep -q 'no node left' '$out/cluster_none.err'"
bs dump --node "$k2" --node "$k2" --limit 1 >"$out/node_twice.txt" 2>"$out/node_twice.err"
rc=$?
check "--node given twice: taken once, said, exit 0" \
    bash -c "[ $rc -eq 0 ] && grep -q -- '--node $k2 given more than once: taken once' '$out/node_twice.err' && ! grep -q cookie '$out/node_twice.err'"
check "cluster: nothing left on any node at the end" cluster_all_clean
