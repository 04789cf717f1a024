# no_files_checks.sh — a job on a node writes no profile there, sourced by
# run.sh (ONLY=memory runs only these). A node started with a TMPDIR and a
# working directory of its own is recorded (`record --all', `record
# --function'); meanwhile a watcher lists both directories every 20 ms and
# notes every file it sees. No `*.bspy*' file may ever appear (the agent
# used to write profile.bspy, capture.bspy and capture-merged.bspy into a
# private directory under TMPDIR), nothing at all but the NIF's shared
# object may (delivered into TMPDIR/beamspy-*, deleted once loaded), and the
# outputs must be right. A file made by hand in TMPDIR first shows that the
# watcher sees what appears there.

memtmp="$build/mem_tmp"
memcwd="$build/mem_cwd"
memlog="$out/mem_watch.log"
memstop="$build/mem_watch.stop"
mkdir -p "$memtmp" "$memcwd"
rm -f "$memlog" "$memstop"

pushd "$memcwd" >/dev/null || exit 2
TMPDIR="$memtmp" start_node nm || fail setup "node nm did not start"
popd >/dev/null || exit 2
nm=$(node_name nm)
check "no files: the node's TMPDIR is the watched directory" \
    [ "$(rpc nm 'os:getenv("TMPDIR").' | tr -d '"')" = "$memtmp" ]
check "no files: the node's working directory is the watched one" \
    [ "$(rpc nm '{ok, D} = file:get_cwd(), D.' | tr -d '"')" = "$(cd "$memcwd" && pwd -P)" ]

# Every path seen under the watched directories, once, as it first appears;
# "watching" once the first listing is done.
python3 - "$memlog" "$memstop" "$memtmp" "$memcwd" <<'PY' &
import os, sys, time
log, stop, dirs = sys.argv[1], sys.argv[2], sys.argv[3:]
seen = set()
with open(log, "w") as out:
    first = True
    while not os.path.exists(stop):
        for d in dirs:
            for root, subdirs, files in os.walk(d):
                for name in subdirs + files:
                    p = os.path.join(root, name)
                    if p not in seen:
                        seen.add(p)
                        out.write(p + "\n")
                        out.flush()
        if first:
            out.write("watching\n")
            out.flush()
            first = False
        time.sleep(0.02)
PY
watcher=$!
pids+=("$watcher")

# mem_seen PATTERN: the watcher has logged a line matching PATTERN (30 s at most).
mem_seen() {
    for _ in $(seq 1 300); do
        grep -q -- "$1" "$memlog" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

check "no files: the watcher runs" mem_seen '^watching$'
touch "$memtmp/control.bspy.tmp"
check "no files: the watcher sees a .bspy file appear in TMPDIR" mem_seen 'control\.bspy\.tmp$'
rm -f "$memtmp/control.bspy.tmp"

bs record --node "$nm" --all --duration 1s -o "$out/mem_all.folded" -o "$out/mem_all.bspy" 2>"$out/mem_all.err"
check "no files: record --all exits 0" [ $? -eq 0 ]
check "no files: record --all has the workload" grep -q '> busy;.*bs_dist_wl:spin/1' "$out/mem_all.folded"
check "no files: record --all's .bspy renders again" "$cli" render "$out/mem_all.bspy" -o "$out/mem_all2.folded"
check "no files: record --all's .bspy is the same profile" cmp -s "$out/mem_all.folded" "$out/mem_all2.folded"

bs record --node "$nm" --function bs_dist_wl:handle/1 --calls 3 --duration 20s -o "$out/mem_fun.folded" \
    2>"$out/mem_fun.err"
check "no files: record --function exits 0" [ $? -eq 0 ]
check "no files: record --function has the captured calls" grep -q 'bs_dist_wl:handle/1;bs_dist_wl:work/1' "$out/mem_fun.folded"
check "no files: record --function has nothing from outside the calls" bash -c "! grep -q 'spin/1' '$out/mem_fun.folded'"
check "no files: nothing left on the node" clean nm

# One more listing after the last job, then the watcher stops.
touch "$memtmp/control-end"
check "no files: the watcher saw the end" mem_seen 'control-end$'
touch "$memstop"
wait "$watcher" 2>/dev/null
rm -f "$memtmp/control-end"

check "no files: no *.bspy* file ever appeared on the node (but the control)" \
    bash -c "! grep '\.bspy' '$memlog' | grep -qv 'control\.bspy\.tmp$'"
# What may appear: the controls, the delivery directory and the NIF in it.
grep -v -e '^watching$' -e 'control\.bspy\.tmp$' -e 'control-end$' \
    -e "^$memtmp/beamspy-[^/]*\$" -e "^$memtmp/beamspy-[^/]*/beamspy_nif\.so\$" "$memlog" >"$out/mem_other.txt"
check "no files: nothing but the NIF was written on the node" [ ! -s "$out/mem_other.txt" ]
[ -s "$out/mem_other.txt" ] && sed 's/^/    written on the node: /' "$out/mem_other.txt" | head -5
check "no files: the delivery directory is gone again" bash -c "[ -z \"\$(ls -A '$memtmp')\" ]"
