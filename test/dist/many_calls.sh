# many_calls.sh — sourced by run.sh (needs its node n1 and helpers):
# `record --function' of 100,000 calls made by one process (tiny_loop calls
# bs_dist_wl:tiny/1 without pause). The captures of a process were once
# added to the profile by a recursion per call, which overflowed a dirty
# scheduler's stack near 500 calls and ended the node (the tool exited 9).
rpc n1 'register(tiny_loop, spawn(bs_dist_wl, tiny_loop, [0])), ok.' >/dev/null
bs record --node "$n1" --function bs_dist_wl:tiny/1 --calls 100000 --duration 300s -o "$out/many.folded" \
    2>"$out/many.err"
rc=$?
check "record --calls 100000: exit 0" [ $rc -eq 0 ]
check "record --calls 100000: the node lives on" is_true n1 'erlang:whereis(busy) =/= undefined.'
check "record --calls 100000: every stack is a call of tiny/1" \
    bash -c "grep -q '^bs_dist_wl:tiny/1 [0-9]*$' '$out/many.folded' &&
             ! grep -v '^bs_dist_wl:tiny/1\(;\(RUNNABLE\|WAIT\|SLEEP\)\)\? [0-9]*$' '$out/many.folded'"
check "record --calls 100000: no limit hit" bash -c "! grep -q 'stopped early' '$out/many.err'"
rpc n1 'exit(whereis(tiny_loop), kill).' >/dev/null
check "record --calls 100000: nothing left on the node" clean n1
