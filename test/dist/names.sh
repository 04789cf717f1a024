# test/dist/names.sh — one speller of frames for every mode (sourced by
# run.sh; ONLY=names runs it alone). The `quoted' process of bs_dist_wl
# waits in bs_dist_wl:'receive'/0: traced and sampled recordings, dump and
# top must all spell it as the engine does, in Erlang (quoted) and with
# --elixir (:bs_dist_wl.receive/0). About 5 s.

echo "--- one speller for every mode"
q_erl="bs_dist_wl:'receive'/0"
q_ex=":bs_dist_wl.receive/0"
bs record --node "$n1" --name quoted --duration 300ms -o "$out/q_trace.folded" 2>/dev/null
bs record --node "$n1" --name quoted --mode sample --interval 5ms --duration 300ms -o "$out/q_sample.folded" 2>/dev/null
bs record --node "$n1" --name quoted --elixir --duration 300ms -o "$out/q_trace_ex.folded" 2>/dev/null
bs record --node "$n1" --name quoted --elixir --mode sample --interval 5ms --duration 300ms \
    -o "$out/q_sample_ex.folded" 2>/dev/null
for f in trace sample; do
    check "names: record --mode $f quotes a reserved word" grep -qF ";$q_erl;WAIT " "$out/q_$f.folded"
    check "names: record --mode $f --elixir spells it the Elixir way" grep -qF ";$q_ex;WAIT " "$out/q_${f}_ex.folded"
done
# The stacks under the root, counts left out: every sampled one is also a
# traced one, spelled alike (tracing may add the frame's own time, a line
# without WAIT, that sampling a waiting process never sees).
frames_of() { sed 's/ [0-9]*$//' "$1" | grep ';' | cut -d';' -f2- | sort -u; }
same_frames() {
    local sampled
    sampled=$(frames_of "$2")
    [ -n "$sampled" ] && [ -z "$(comm -13 <(frames_of "$1") <(echo "$sampled"))" ]
}
check "names: sample and trace spell the same stack alike" \
    same_frames "$out/q_trace_ex.folded" "$out/q_sample_ex.folded"
bs dump --node "$n1" --name quoted >"$out/q_dump.txt" 2>/dev/null
bs dump --node "$n1" --name quoted --elixir >"$out/q_dump_ex.txt" 2>/dev/null
bs dump --node "$n1" --name quoted --elixir --json >"$out/q_dump_ex.json" 2>/dev/null
check "names: dump quotes it" grep -qF "    $q_erl (" "$out/q_dump.txt"
check "names: dump --elixir spells it the Elixir way" grep -qF "    $q_ex (" "$out/q_dump_ex.txt"
check "names: dump --elixir --json too" grep -qF "\"$q_ex (" "$out/q_dump_ex.json"
bs top --node "$n1" --once --limit 3 --elixir >"$out/q_top_ex.txt" 2>/dev/null
check "names: top --elixir spells functions the Elixir way" grep -q ':bs_dist_wl\.\(spin\|work\)/1\|:lists\.' \
    "$out/q_top_ex.txt"
check "names: top --elixir has no Erlang-spelled function" bash -c "! grep -q 'bs_dist_wl:' '$out/q_top_ex.txt'"
check "names: nothing left on the node" wait_clean n1 5
