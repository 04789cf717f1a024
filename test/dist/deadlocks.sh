# test/dist/deadlocks.sh — the wait-for graph of `beamspy dump` on real
# nodes: a two-server and a three-server ring of gen_servers calling each
# other with infinity, a client blocked behind a ring, a chain ending at a
# busy server, two servers that call each other with a short timeout and
# recover (never a deadlock), a ring across the two nodes n1 and n2, and a
# gen_server:multi_call to both.
#
# Sourced by run.sh once its nodes run (uses its rpc, bs, check, clean, out,
# n1, n2); `ONLY=deadlocks test/dist/run.sh` runs this part alone. Every
# state is reached before the dump is taken (polled with process_info,
# at most 20 s), so nothing depends on timing.

echo "--- dump: who waits for whom"
dl_t0=$(date +%s)

# poll_true SHORT EXPR: until EXPR is true on the node, at most 20 s.
poll_true() {
    for _ in $(seq 1 200); do
        [ "$(rpc "$1" "$2")" = "true" ] && return 0
        sleep 0.1
    done
    return 1
}

dl_local="[dl_r2a, dl_r2b, dl_r3a, dl_r3b, dl_r3c, dl_cl, dl_worker, dl_caller, dl_c1, dl_c2, dl_c3, dl_ta, dl_tb, dl_xa]"
# An earlier tool's code may still be waiting to be purged on n1: the
# killed `dump --interval 5s' above leaves its dumper running the old code
# for seconds, and the purger removes it once the dumper is done. Purging a
# module releases its literals, which the VM does by a signal that every
# process handles itself: a process waiting in a call then does work
# between dump's two looks and does not read as stuck in its call (6
# checks failed so in a full run on OTP 27, not reproduced in the next).
# Waited for here, at most 20 s.
poll_true n1 "[M || M <- erlang:loaded(), erlang:check_old_code(M)] =:= []." ||
    echo "    old code still on n1: $(rpc n1 '[M || M <- erlang:loaded(), erlang:check_old_code(M)].')"
rpc n1 "W = bs_deadlock_wl,
        W:ring([dl_r2a, dl_r2b]), W:ring([dl_r3a, dl_r3b, dl_r3c]), W:client(dl_cl, dl_r3a),
        W:busy_chain(dl_worker, dl_caller, [dl_c1, dl_c2, dl_c3]), W:timeout_pair(dl_ta, dl_tb)." >/dev/null
check "deadlocks: the rings, the client and the chain are all waiting in their calls" \
    poll_true n1 "bs_deadlock_wl:in_call([dl_r2a, dl_r2b, dl_r3a, dl_r3b, dl_r3c, dl_cl, dl_caller, dl_c1, dl_c2, dl_c3])."
check "deadlocks: the servers with timeouts are seen calling each other" \
    poll_true n1 "bs_deadlock_wl:in_call([dl_ta, dl_tb])."

# --keep: the dumps here reuse the code delivered by the first one (the
# machine is shared: fewer calls make a faster test); removed at the end.
bs dump --node "$n1" --limit 5 --keep >"$out/dl.txt" 2>"$out/dl.err"
check "deadlocks: dump exit 0" [ $? -eq 0 ]
check "deadlocks: a two-server ring is a deadlock" grep -qx 'DEADLOCK: dl_r2a -> dl_r2b -> dl_r2a' "$out/dl.txt"
check "deadlocks: a three-server ring is a deadlock" grep -qx 'DEADLOCK: dl_r3a -> dl_r3b -> dl_r3c -> dl_r3a' "$out/dl.txt"
check "deadlocks: each member with whom it waits for, and its stack" bash -c "
    sed -n '/^DEADLOCK: dl_r3a/,/^\$/p' '$out/dl.txt' >'$out/dl_r3.txt'
    grep -q '^  <[0-9.]*> dl_r3b waits for dl_r3c: waiting for a reply in gen:do_call/4' '$out/dl_r3.txt' &&
    [ \$(grep -c '^      bs_deadlock_wl:handle_cast/2' '$out/dl_r3.txt') -eq 3 ]"
check "deadlocks: a client blocked behind a ring is a chain into the deadlock" bash -c "
    grep -qx '  1 process blocked behind it:' '$out/dl_r3.txt' &&
    grep -qx '    dl_cl -> dl_r3a (in a deadlock)' '$out/dl_r3.txt'"
check "deadlocks: a chain ending at a busy process names it once, with how many it holds up" bash -c "
    grep -q '^BLOCKED behind <[0-9.]*> dl_worker (busy in bs_deadlock_wl:spin/1: [0-9]* reductions in 200 ms)\$' '$out/dl.txt' &&
    [ \$(grep -c 'dl_worker (busy in' '$out/dl.txt') -eq 1 ] &&
    sed -n '/^BLOCKED behind <[0-9.]*> dl_worker/,/^\$/p' '$out/dl.txt' | grep -qx '  4 processes blocked behind it:' &&
    grep -qx '    dl_c2 -> dl_caller -> dl_worker (busy)' '$out/dl.txt'"
check "deadlocks: servers that time out and recover are no deadlock" bash -c "
    [ \$(grep -c '^DEADLOCK' '$out/dl.txt') -eq 2 ] && ! grep -q 'dl_t[ab] ->\\|-> dl_t[ab]' '$out/dl.txt'"
check "deadlocks: the process list follows, as before" grep -q '^node .*: [0-9]* processes' "$out/dl.txt"

bs dump --node "$n1" --json --limit 1 --keep >"$out/dl.json" 2>/dev/null
check "deadlocks --json: deadlocks and waits lists" python3 -c "
import json
d = json.load(open('$out/dl.json'))
cycles = sorted([m['name'] for m in x['cycle']] for x in d['deadlocks'])
assert cycles == [['dl_r2a', 'dl_r2b'], ['dl_r3a', 'dl_r3b', 'dl_r3c']], cycles
waits = {w['name']: w for w in d['waits']}
c1 = waits['dl_c1']
assert c1['chain'] == ['dl_c1', 'dl_caller', 'dl_worker'], c1
assert c1['blocked_by']['name'] == 'dl_worker' and c1['blocked_by']['state'] == 'busy', c1
assert c1['blocked_by']['blocked_behind'] == 4, c1
cl = waits['dl_cl']
assert [m['name'] for m in d['deadlocks'][cl['blocked_by']['deadlock']]['cycle']] == ['dl_r3a', 'dl_r3b', 'dl_r3c']
assert waits['dl_r2a']['waits_for'][0]['name'] == 'dl_r2b' and waits['dl_r2a']['deadlock'] is not None
assert all(w['deadlock'] is None for n, w in waits.items() if n in ('dl_ta', 'dl_tb'))
assert len(d['processes']) == 1
"
bs dump --node "$n1" --name dl_cl --keep >"$out/dl_name.txt" 2>/dev/null
check "deadlocks --name: the chain stops at the first process left out, and says so" bash -c "
    grep -qx '    dl_cl -> dl_r3a (not in this dump)' '$out/dl_name.txt' &&
    grep -q '^BLOCKED behind dl_r3a (on $n1, not among the processes dumped (--pid/--name))' '$out/dl_name.txt'"
rpc n1 "bs_deadlock_wl:stop([dl_worker, dl_ta, dl_tb])." >/dev/null
bs dump --node "$n1" --elixir --limit 1 --keep >"$out/dl_ex.txt" 2>/dev/null
check "deadlocks --elixir: Elixir names and frames" bash -c "
    grep -qx 'DEADLOCK: :dl_r2a -> :dl_r2b -> :dl_r2a' '$out/dl_ex.txt' &&
    grep -q '^      :bs_deadlock_wl.handle_cast/2' '$out/dl_ex.txt'"
rpc n1 "bs_deadlock_wl:stop($dl_local)." >/dev/null

echo "--- dump: a deadlock across two nodes"
rpc n1 "bs_deadlock_wl:server(dl_xa), ok." >/dev/null
rpc n2 "bs_deadlock_wl:server(dl_xb), ok." >/dev/null
rpc n2 "bs_deadlock_wl:server(dl_mc), ok." >/dev/null
rpc n1 "bs_deadlock_wl:server(dl_mc),
        register(dl_multi, spawn(fun() -> gen_server:multi_call(['$n1', '$n2'], dl_mc, hello) end)), ok." >/dev/null
rpc n1 "bs_deadlock_wl:call_peer(dl_xa, {dl_xb, '$n2'})." >/dev/null
rpc n2 "bs_deadlock_wl:call_peer(dl_xb, {dl_xa, '$n1'})." >/dev/null
check "cross-node: both servers wait in their calls, the multi_call in its own" \
    eval 'poll_true n1 "bs_deadlock_wl:in_call([dl_xa])." && poll_true n2 "bs_deadlock_wl:in_call([dl_xb])." &&
          poll_true n1 "{status, waiting} =:= process_info(whereis(dl_multi), status)."'
bs dump --node "$n1" --node "$n2" --limit 1 --keep >"$out/dlx.txt" 2>/dev/null
check "cross-node: two --node, one cycle through both" \
    grep -qx "DEADLOCK: dl_xa on $n1 -> dl_xb on $n2 -> dl_xa on $n1" "$out/dlx.txt"
check "cross-node: one deadlock only, both process lists" bash -c "
    [ \$(grep -c '^DEADLOCK' '$out/dlx.txt') -eq 1 ] && grep -q '^node $n1 ' '$out/dlx.txt' && grep -q '^node $n2 ' '$out/dlx.txt'"
bs dump --node "$n1" --node "$n2" --json --limit 1 --keep >"$out/dlx.json" 2>/dev/null
check "cross-node --json: the cycle names both nodes; a multi_call waits for the server of each" python3 -c "
import json
d = json.load(open('$out/dlx.json'))
assert [n['node'] for n in d['nodes']] == ['$n1', '$n2']
[x] = d['deadlocks']
assert [(m['name'], m['node']) for m in x['cycle']] == [('dl_xa', '$n1'), ('dl_xb', '$n2')], x
[m] = [w for w in d['waits'] if w['name'] == 'dl_multi']
assert sorted((t['name'], t['node'], t['in_dump']) for t in m['waits_for']) == [('dl_mc', '$n1', True), ('dl_mc', '$n2', True)], m
"
bs dump --node "$n1" --limit 1 --keep >"$out/dlx1.txt" 2>/dev/null
check "cross-node, one node dumped: the wait leaves the dump, and says which node to add" bash -c "
    grep -qx '    dl_xa -> dl_xb (not in this dump)' '$out/dlx1.txt' &&
    grep -q '^BLOCKED behind dl_xb (on $n2, which is not in this dump: give --node $n2 to follow it)' '$out/dlx1.txt' &&
    ! grep -q '^DEADLOCK' '$out/dlx1.txt'"
rpc n1 "bs_deadlock_wl:stop([dl_xa, dl_mc, dl_multi])." >/dev/null
rpc n2 "bs_deadlock_wl:stop([dl_xb, dl_mc])." >/dev/null
for n in n1 n2; do
    rpc "$n" '[begin code:purge(M), code:delete(M), code:purge(M) end || {M, _} <- code:all_loaded(), lists:prefix("beamspy", atom_to_list(M))], ok.' >/dev/null
done
check "deadlocks: nothing of beamspy left on either node" eval 'clean n1 && clean n2'
echo "dump wait-graph tests took $(($(date +%s) - dl_t0)) s"
