# seq_checks.sh — the `beamspy seq' checks of the distribution layer,
# sourced by run.sh (ONLY=seq runs only these). Three nodes run
# bs_seq_dist_wl: a chain server each (a -> b -> c) and, on the first, a
# client sending a request along the chain every 50 ms. The tool follows
# calls of bs_seq_dist_wl:request/1 and must give exactly the chain's
# messages in causal order, leave nothing on any node, also after kill -9.

# What a seq capture left on a node: "modules=N tracer=T pattern=P".
seq_leftovers() {
    rpc "$1" '
        Mods = [M || {M, _} <- code:all_loaded(), lists:prefix("beamspy", atom_to_list(M))],
        {meta, Pat} = erlang:trace_info({bs_seq_dist_wl, request, 1}, meta),
        lists:flatten(io_lib:format("modules=~w tracer=~w pattern=~w",
                                    [length(Mods), seq_trace:get_system_tracer(), Pat])).' | tr -d '"'
}
seq_clean() { nothing_left "$1" seq_leftovers "modules=0 tracer=false pattern=false"; }
seq_all_clean() { seq_clean s1 && seq_clean s2 && seq_clean s3; }

# start_seq_node SHORT EXPR: a detached node evaluating EXPR at start (nodes.sh).
start_seq_node() { start_node_with "$1" "$2" 'is_pid(whereis(chain)).'; }

echo "--- seq"
erlc -o "$build" "$here/bs_seq_dist_wl.erl" || fail seq "erlc bs_seq_dist_wl.erl"
s1=$(node_name s1)
s2=$(node_name s2)
s3=$(node_name s3)
start_seq_node s3 "bs_seq_dist_wl:start(c, '')" || fail seq "node s3 did not start"
start_seq_node s2 "bs_seq_dist_wl:start(b, '$s3')" || fail seq "node s2 did not start"
start_seq_node s1 "bs_seq_dist_wl:start(a, '$s2'), bs_seq_dist_wl:start_client()" || fail seq "node s1 did not start"

t0=$(date +%s%N)
bs seq --node "$s1" --node "$s2" --node "$s3" --function bs_seq_dist_wl:request/1 --calls 2 \
    -o "$out/flow.mmd" -o "$out/flow.json" -o "$out/flow.seq.svg" -o "$out/flow.trace.json" >"$out/seq.out" 2>"$out/seq.err"
rc=$?
echo "    seq of 2 calls over 3 nodes took $((($(date +%s%N) - t0) / 1000000)) ms"
check "seq: exit 0" [ $rc -eq 0 ]
check "seq: says what it wrote" grep -q "wrote $out/flow.mmd" "$out/seq.out"
one_flow="P1->>P2: call {req,[]}
P2->>P3: call {req,[a]}
P3->>P4: call {req,[b,a]}
P4-->>P3: reply {pong,[c,b,a]}
P3-->>P2: reply {pong,[c,b,a]}
P2-->>P1: reply {pong,[c,b,a]}"
grep -E '^    P[0-9]+(->>|-->>|-x|-\))P[0-9]+: ' "$out/flow.mmd" | sed 's/^    //' >"$out/flow.msgs"
# --calls 2: two calls get a token, and a call racing with the pattern's
# removal may get one too (seq --help says so; the client calls every 50
# ms, and a loaded run once recorded a third): 2 to 4 whole flows, never the
# ~40 calls of the window, which would mean the pattern was not disarmed.
flows=$(( $(wc -l <"$out/flow.msgs") / 6 ))
expected=""
for _ in $(seq 1 "$flows"); do expected="${expected:+$expected
}$one_flow"; done
check "seq: the two calls' messages (a racing third at most two more), each whole, in causal order" \
    eval '[ "$flows" -ge 2 ] && [ "$flows" -le 4 ] && [ "$(cat "$out/flow.msgs")" = "$expected" ]'
msgs=$((flows * 6))
check "seq: one participant per process, grouped per node" eval \
    '[ "$(grep -c "^    participant" "$out/flow.mmd")" -eq 4 ] && [ "$(grep -c "^    box" "$out/flow.mmd")" -eq 3 ] &&
     grep -q "participant P1 as $s1 #lt;[0-9.]*#gt; client$" "$out/flow.mmd" &&
     grep -q "participant P4 as $s3 #lt;[0-9.]*#gt; chain$" "$out/flow.mmd"'
check "seq: JSON has every message, each sent and received" eval \
    '[ "$(grep -o "\"received\":true" "$out/flow.json" | wc -l)" -eq $msgs ] && python3 -m json.tool "$out/flow.json" >/dev/null'
check "seq: the SVG is well-formed, one arrow per message" eval \
    'xmllint --noout "$out/flow.seq.svg" && [ "$(grep -o "<g class=\"msg" "$out/flow.seq.svg" | wc -l)" -eq $msgs ]'
check "seq: the Chrome trace has a flow per message" eval \
    'python3 -c "import json,sys; e=json.load(open(sys.argv[1]))[\"traceEvents\"]; sys.exit(0 if sum(x[\"ph\"]==\"s\" for x in e)==$msgs and sum(x[\"ph\"]==\"f\" for x in e)==$msgs else 1)" "$out/flow.trace.json"'
check "seq: nothing left on any node" seq_all_clean

bs seq --node "$s1" --function bs_seq_dist_wl:nope/1 -o "$out/nope.mmd" >/dev/null 2>"$out/nope.err"
rc=$?
check "seq: a function that does not exist is an error, nothing written" \
    eval '[ $rc -ne 0 ] && [ ! -e "$out/nope.mmd" ] && grep -q "nope" "$out/nope.err"'
bs seq --node "$s1" --function bs_seq_dist_wl:request/1 -o "$out/x.png" >/dev/null 2>&1
check "seq: an output of unknown format is a usage error" [ $? -eq 2 ]
check "seq: nothing left after the errors" seq_all_clean

# A node that already has a system tracer: refused, the others undone.
rpc s2 'register(other_tracer, spawn(timer, sleep, [60000])), seq_trace:set_system_tracer(whereis(other_tracer)).' >/dev/null
bs seq --node "$s1" --node "$s2" --function bs_seq_dist_wl:request/1 -o "$out/busy.mmd" >/dev/null 2>"$out/busy.err"
rc=$?
check "seq: a node with a system tracer is refused, clearly" \
    eval '[ $rc -ne 0 ] && grep -q "system_tracer_in_use" "$out/busy.err" && [ ! -e "$out/busy.mmd" ]'
check "seq: the other tracer is left as it was" [ "$(rpc s2 'seq_trace:get_system_tracer() =:= whereis(other_tracer).')" = "true" ]
rpc s2 'seq_trace:set_system_tracer(false), exit(whereis(other_tracer), kill).' >/dev/null
check "seq: nothing of beamspy left after the refusal" seq_all_clean

# kill -9 while recording: every node undoes everything by itself.
"$cli" seq --node "$s1" --node "$s2" --node "$s3" --function bs_seq_dist_wl:request/1 --calls 100000 \
    --duration 60s -o "$out/killed.mmd" --cookie-file "$cookie_file" >/dev/null 2>&1 &
tool=$!
wait_until 30 is_true s3 'is_pid(seq_trace:get_system_tracer()).'
kill -9 "$tool"
wait "$tool" 2>/dev/null
check "seq, tool killed with -9: nothing left on any node" wait_until 30 seq_all_clean
check "seq, tool killed with -9: no file" [ ! -e "$out/killed.mmd" ]
