# record_meta_checks.sh — what `record`'s outputs say was recorded and how
# (sourced by test/dist/run.sh, whose helpers it uses: bs, check, clean, cli,
# out, n1; ONLY=meta runs it alone). The page and the files name the command
# as the user gave it (nodes, targets) and the tool's options with show_idle
# as drawn, never the session the VM ran for the job: beamspy:start(all)
# with show_idle => true under the page's banner saying idle time was left
# out, the job's own pids, quiet, the node's working directory as output and
# its safety deadline as max_duration.

echo "--- record: the outputs say what the user asked for"
# The fields of the page's JSON, as the page holds them (> is \u003e there).
meta_src() { printf '"source":"%s"' "$1"; }
never_vm_session() {
    ! grep -qE 'beamspy:start\(|beamspy:capture\(|show_idle =.u003e true|ignore =|quiet =|output =' "$1"
}

bs record --node "$n1" --all --duration 1s -o "$out/meta_all.html" -o "$out/meta_all.bspy" 2>"$out/meta_all.err"
check "record --all: exit 0, idle time left out (stderr)" grep -q 'idle time left out' "$out/meta_all.err"
check "record --all: the page names the command given" grep -qF "$(meta_src "beamspy record --node $n1 --all")" "$out/meta_all.html"
check "record --all: ... and show_idle as drawn (false), beside the page's idle banner" \
    bash -c "grep -qF 'show_idle =\u003e false' '$out/meta_all.html' && grep -q 'idle time left out' '$out/meta_all.html'"
check "record --all: ... the duration asked for (max_duration => 1000)" grep -qF 'max_duration =\u003e 1000,' "$out/meta_all.html"
check "record --all: ... never the VM's session" never_vm_session "$out/meta_all.html"
"$cli" render "$out/meta_all.bspy" -o "$out/meta_all2.html" 2>/dev/null
check "record --all: the .bspy keeps the command (rendered again)" \
    grep -qF "$(meta_src "beamspy record --node $n1 --all")" "$out/meta_all2.html"

bs record --node "$n1" --all --show-idle --duration 1s -o "$out/meta_idle.html" 2>/dev/null
check "record --all --show-idle: the page says show_idle => true" grep -qF 'show_idle =\u003e true' "$out/meta_idle.html"

bs record --node "$n1" --name busy --duration 500ms -o "$out/meta_name.html" 2>/dev/null
check "record --name: the page names the process given" grep -qF "$(meta_src "beamspy record --node $n1 --name busy")" "$out/meta_name.html"
check "record --name: ... no show_idle (not a whole-VM view), never the VM's session" \
    bash -c "! grep -q 'show_idle' '$out/meta_name.html' && ! grep -qE 'beamspy:start\\(|ignore =|quiet =' '$out/meta_name.html'"

bs record --node "$n1" --function bs_dist_wl:handle/1 --calls 2 --duration 20s -o "$out/meta_fun.trace.json" 2>/dev/null
check "record --function: the trace names the function and calls given" \
    grep -qF "\"source\":\"beamspy record --node $n1 --function bs_dist_wl:handle/1 --calls 2\"" "$out/meta_fun.trace.json"
check "record --function: ... never the VM's capture" bash -c "! grep -qE 'beamspy:capture\\(|quiet =' '$out/meta_fun.trace.json'"

bs record --node "$n1" --all --mode sample --interval 5ms --duration 500ms -o "$out/meta_sample.html" 2>/dev/null
check "record --mode sample: the page names the mode and its options" \
    bash -c "grep -qF '$(meta_src "beamspy record --node $n1 --all --mode sample")' '$out/meta_sample.html' &&
             grep -qF '#{mode =\u003e sample, interval =\u003e 5, max_duration =\u003e 500' '$out/meta_sample.html'"
check "record: nothing left on the node" clean n1
