# test/dist/names.sh — one speller of frames for every mode (sourced by
# run.sh; ONLY=names runs it alone). The `quoted' process of bs_dist_wl
# waits in bs_dist_wl:'receive'/0: traced and sampled recordings, dump and
# top must all spell it as the engine does, in Erlang (quoted) and with
# --elixir (:bs_dist_wl.receive/0), and label its root alike. About 5 s.

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
# The roots, the processes' labels, too: the registered name as it is, and
# with --elixir as Elixir shows an atom.
for f in trace sample; do
    check "names: record --mode $f labels the root <pid> quoted" grep -q '^<[0-9.]*> quoted;' "$out/q_$f.folded"
    check "names: record --mode $f --elixir labels it <pid> :quoted" \
        grep -q '^<[0-9.]*> :quoted;' "$out/q_${f}_ex.folded"
done
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

# Names chosen by the node: without --elixir or --erlang, a node that runs
# Elixir gets Elixir's spelling, and stderr says why; an Erlang node keeps
# Erlang's, silently; --erlang wins on an Elixir node.
echo "--- names as the node runs"
ex_ebin=$(dirname "$(elixir -e 'IO.puts(:code.which(Kernel))' 2>/dev/null)")
if [ -d "$ex_ebin" ] &&
    start_node_with ex 'bs_dist_wl:start(), application:ensure_all_started(elixir)' \
        'lists:keymember(elixir, 1, application:which_applications()).' -pa "$ex_ebin"; then
    ex=$(node_name ex)
    bs record --node "$ex" --name quoted --duration 300ms -o "$out/q_auto_ex.folded" 2>"$out/q_auto_ex.err"
    check "names: an Elixir node gets Elixir's names without --elixir" \
        grep -qF ";$q_ex;WAIT " "$out/q_auto_ex.folded"
    check "names: stderr says the node runs Elixir" grep -q "$ex runs Elixir.*--erlang" "$out/q_auto_ex.err"
    bs record --node "$ex" --name quoted --erlang --duration 300ms -o "$out/q_forced.folded" 2>"$out/q_forced.err"
    check "names: --erlang wins on an Elixir node" grep -qF ";$q_erl;WAIT " "$out/q_forced.folded"
    check "names: --erlang: nothing said" bash -c "! grep -q 'runs Elixir' '$out/q_forced.err'"
    bs top --node "$ex" --once --limit 3 >"$out/q_top_auto.txt" 2>/dev/null
    # Which functions a few samples catch varies (on a loaded host one
    # sample found busy in work/1's list comprehension): any function of the
    # node's modules spelled the Elixir way, none the Erlang way.
    check "names: top on an Elixir node spells functions the Elixir way" \
        bash -c "grep -q ':bs_dist_wl\.\|:lists\.\|:timer\.' '$out/q_top_auto.txt' &&
            ! grep -q 'bs_dist_wl:\|lists:\|timer:' '$out/q_top_auto.txt'"
    bs dump --node "$ex" --name quoted >"$out/q_dump_auto.txt" 2>/dev/null
    check "names: dump on an Elixir node spells frames the Elixir way" grep -qF "    $q_ex (" "$out/q_dump_auto.txt"
    check "names: nothing left on the Elixir node" wait_clean ex 5
else
    fail "names: an Elixir node" "could not start one (elixir's ebin: '$ex_ebin')"
fi
bs record --node "$n1" --name quoted --duration 300ms -o "$out/q_auto.folded" 2>"$out/q_auto.err"
check "names: an Erlang node keeps Erlang's names" grep -qF ";$q_erl;WAIT " "$out/q_auto.folded"
check "names: an Erlang node: nothing said of names" bash -c "! grep -q 'runs Elixir' '$out/q_auto.err'"
