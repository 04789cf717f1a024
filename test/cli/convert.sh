# convert.sh — `beamspy convert` checks of the cli layer (sourced by
# test/cli/run.sh, whose helpers it uses: bs, check, pass, fail, xml_ok...).
#
# The inputs are real dbg trace-port files made by dbg on a real VM
# (data/bs_dbg_wl.erl): calls with return_to and the {caller} match spec
# (now and monotonic timestamps), calls with {return_trace} and no
# timestamps (and the --text listing compared with dbg:trace_client's own),
# {exception_trace}, the running/procs/garbage_collection flags, calls
# only, a wrap set that wrapped around (checked against
# the order dbg:trace_client/3 itself reads it in, and again with its oldest
# file deleted, which dbg refuses), and an ip-port stream saved to a file
# (with a drop record). Truncated and corrupted copies are made here, with
# the offsets of their records computed independently by python; so are a
# file holding one trace twice and one ending with a malformed message.

C="$W/convert"
mkdir -p "$C"
if ! "$ERLC" -o "$C" "$DATA/bs_dbg_wl.erl" >"$C/erlc.log" 2>&1 ||
    ! "$ERL" -noshell -pa "$C" -eval "ok = bs_dbg_wl:make(\"$C\"), halt()." >"$C/erl.log" 2>&1; then
    cat "$C/erlc.log" "$C/erl.log"
    fail "convert: make dbg files on a real VM"
else
    pass "convert: make dbg files on a real VM"
fi

# Folded lines with the process frame taken off (pids differ between runs).
no_pid() { sed 's/^<[0-9.]*>;//' "$1"; }
fibs() { printf ';bs_dbg_wl:fib/1%.0s' $(seq "$1"); }
# offsets FILE: the byte offset of every record, one per line.
offsets() {
    $PY - "$1" <<'EOF'
import sys
d = open(sys.argv[1], 'rb').read()
i = 0
while i < len(d):
    print(i)
    i += 5 + (int.from_bytes(d[i+1:i+5], 'big') if d[i] == 0 else 0)
EOF
}

# --- call + return_to + {caller}, timestamps: every format, exact stacks -----
bs convert "$C/caller_ts.trace" -o "$C/ct.folded" -o "$C/ct.svg" -o "$C/ct.html" -o "$C/ct.speedscope.json" \
    -o "$C/ct.trace.json" -o "$C/ct.perf.txt" -o "$C/ct.bspy"
cp "$W/err" "$C/ct.err"
check "convert: return_to trace to every format" rc_is 0
"$BEAMSPY" render "$C/ct.bspy" -o "$C/ct.bspy.folded" 2>/dev/null
# One python for the JSON and text formats (it takes seconds to start on a
# loaded machine): folded grammar, the HTML page, both JSON formats, and
# the .bspy file read back.
$PY - "$C" >"$C/valid.txt" 2>&1 <<'EOF'
import json, re, sys
d = sys.argv[1]
line_re = re.compile(rb'^[^;\n\r]*[^;\n\r ](;[^;\n\r]*[^;\n\r ])* [1-9][0-9]*$')
def folded(p):
    lines = open(p, 'rb').read().split(b'\n')
    return lines[-1] == b'' and len(lines) > 1 and all(line_re.match(l) for l in lines[:-1])
def html(p):
    s = open(p, encoding='utf-8').read()
    return re.search(r'<html', s, re.I) and not re.search(r'<(script|link|img)[^>]+(src|href)=["\']?(https?:)?//', s, re.I)
def speedscope(p):
    return 'https://www.speedscope.app/file-format-schema.json' in json.load(open(p))['$schema']
def chrome(p):
    j = json.load(open(p))
    return j['otherData']['layout'].startswith('timeline') and any(e['ph'] == 'X' for e in j['traceEvents'])
for name, f, path in [('folded', folded, 'ct.folded'), ('html', html, 'ct.html'),
                      ('speedscope', speedscope, 'ct.speedscope.json'), ('chrome', chrome, 'ct.trace.json'),
                      ('bspy', folded, 'ct.bspy.folded')]:
    try:
        print(name, 'ok' if f(d + '/' + path) else 'bad')
    except Exception as e:
        print(name, 'bad', e)
EOF
for f in folded html speedscope chrome bspy; do
    check "convert: return_to trace to $f is valid" grep -q "^$f ok" "$C/valid.txt"
done
check "convert: return_to trace to svg is valid" eval 'xml_ok "$C/ct.svg" && grep -q "<svg" "$C/ct.svg"'
check "convert: return_to trace to perf is valid" perf_ok "$C/ct.perf.txt"
run=';bs_dbg_wl:run/1'
check "convert: fib(10) rebuilt 10 deep, no deeper" eval 'grep -q -- "$run$(fibs 10) " "$C/ct.folded" &&
    ! grep -q -- "$(fibs 11)" "$C/ct.folded"'
check "convert: a tail call replaces its caller (the {caller} match spec)" eval \
    'grep -q -- "$run;bs_dbg_wl:tail_top/0;bs_dbg_wl:tail_b/0 " "$C/ct.folded" &&
    ! grep -q -- "tail_a/0;bs_dbg_wl:tail_b/0" "$C/ct.folded"'
check "convert: says how it read the file" grep -q "stacks rebuilt from calls and return_to" "$C/ct.err"
bs convert "$C/mono.trace" -o "$C/mono.folded" -o "$C/mono.speedscope.json"
check "convert: monotonic timestamps" eval 'rc_is 0 && grep -q -- "$run$(fibs 10) " "$C/mono.folded" &&
    ! grep -q "no timestamps" "$W/err" && grep -q "\"type\":\"evented\"" "$C/mono.speedscope.json"'

# --- running, procs and gc events ------------------------------------------------
bs convert "$C/all_flags.trace" --gc -o "$C/all.folded"
check "convert: in/out give SLEEP, gc events GC, register names the process" eval 'rc_is 0 &&
    grep -q "^<0\.[0-9]*\.[0-9]*> bs_dbg_worker;.*bs_dbg_wl:busy/0;SLEEP " "$C/all.folded" &&
    grep -q "bs_dbg_wl:busy/0;GC " "$C/all.folded"'
bs convert "$C/all_flags.trace" --no-sleep -o "$C/all2.folded"
check "convert: --no-sleep, and GC only with --gc" eval 'rc_is 0 && ! grep -q "SLEEP\|GC " "$C/all2.folded"'

# --- {return_trace}, no timestamps: weights are event counts, exact --------
bs convert "$C/return_from.trace" -o "$C/rf.folded"
cat >"$C/rf.expected" <<'EOF'
bs_dbg_wl:run/1 3
bs_dbg_wl:run/1;bs_dbg_wl:fib/1 3
bs_dbg_wl:run/1;bs_dbg_wl:fib/1;bs_dbg_wl:fib/1 6
bs_dbg_wl:run/1;bs_dbg_wl:fib/1;bs_dbg_wl:fib/1;bs_dbg_wl:fib/1 10
bs_dbg_wl:run/1;bs_dbg_wl:fib/1;bs_dbg_wl:fib/1;bs_dbg_wl:fib/1;bs_dbg_wl:fib/1 8
bs_dbg_wl:run/1;bs_dbg_wl:fib/1;bs_dbg_wl:fib/1;bs_dbg_wl:fib/1;bs_dbg_wl:fib/1;bs_dbg_wl:fib/1 2
bs_dbg_wl:run/1;bs_dbg_wl:tail_top/0 2
bs_dbg_wl:run/1;bs_dbg_wl:tail_top/0;bs_dbg_wl:tail_a/0 2
bs_dbg_wl:run/1;bs_dbg_wl:tail_top/0;bs_dbg_wl:tail_a/0;bs_dbg_wl:tail_b/0 1
EOF
check "convert: return_from trace gives the exact stacks (event counts)" eval 'rc_is 0 &&
    diff <(no_pid "$C/rf.folded") "$C/rf.expected" >/dev/null && grep -q "no timestamps" "$W/err"'

bs convert "$C/return_from.trace" --text
anypid() { sed 's/<[0-9]*\./<N./g' "$1"; }
check "convert: --text says what dbg:trace_client/2 says" eval 'rc_is 0 && [ -s "$C/return_from_dbg.txt" ] &&
    diff <(anypid "$W/out") <(anypid "$C/return_from_dbg.txt") >/dev/null'

bs convert "$C/exception.trace" -o "$C/exc.folded"
cat >"$C/exc.expected" <<'EOF2'
bs_dbg_wl:catcher/0 3
bs_dbg_wl:catcher/0;bs_dbg_wl:thrower/0 2
bs_dbg_wl:catcher/0;bs_dbg_wl:thrower/0;bs_dbg_wl:inner/0 1
bs_dbg_wl:catcher/0;bs_dbg_wl:after_catch/0 1
EOF2
check "convert: exception_from unwinds to the catching frame" eval 'rc_is 0 &&
    diff <(no_pid "$C/exc.folded") "$C/exc.expected" >/dev/null'

# --- calls only: flat call counts and a timeline ---------------------------
bs convert "$C/calls_only.trace" -o "$C/co.folded" -o "$C/co.trace.json"
check "convert: calls only gives call counts (fib(10): 177 calls)" eval 'rc_is 0 &&
    [ "$(no_pid "$C/co.folded" | grep "^bs_dbg_wl:fib/1 ")" = "bs_dbg_wl:fib/1 177" ] &&
    grep -q "calls only" "$W/err" && grep -q "stacks cannot be rebuilt" "$W/err"'
check "convert: calls only keeps the calls in time order" eval \
    'grep -q "\"layout\":\"timeline" "$C/co.trace.json"'

# --- wrap set: dbg's own order, also without its oldest file ---------------
ts_of() { sed -n 's/.*(Timestamp: \(.*\))$/\1/p'; }
bs convert "$C"/wrap*.trc --text
ts_of <"$W/out" >"$C/wrap_ours.txt"
check "convert: wrap set read in dbg:trace_client's order" eval 'rc_is 0 && [ -s "$C/wrap_ours.txt" ] &&
    cmp -s "$C/wrap_ours.txt" "$C/wrap_dbg.txt" && grep -q "wrapped around" "$W/err"'
oldest=$(sed -n 's/.*read by index, wrapped around from \([^ ]*\) to .*/\1/p' "$W/err")
bs convert "$C/$oldest" --text
first_n=$(ts_of <"$W/out" | wc -l)
rm -f "$C/$oldest"
bs convert "$C"/wrap*.trc --text
check "convert: wrap set without its oldest file (dbg refuses it)" eval 'rc_is 0 && [ "$first_n" -gt 0 ] &&
    cmp -s <(ts_of <"$W/out") <(tail -n +"$((first_n + 1))" "$C/wrap_dbg.txt")'
bs convert "$C"/wrap*.trc -o "$C/wrap.svg"
check "convert: wrap set to SVG" eval 'rc_is 0 && xml_ok "$C/wrap.svg"'

# --- ip port stream saved to a file -----------------------------------------
bs convert "$C/ip.stream" --text
check "convert: ip stream listing shows the drop record" eval 'rc_is 0 && grep -q "^\*\*\* Dropped [0-9]* messages.$" "$W/out"'
bs convert "$C/ip.stream" -o "$C/ip.folded"
check "convert: ip stream to folded, drops said" eval 'rc_is 0 &&
    grep -q "dropped" "$W/err" && grep -q -- "$run$(fibs 8) " "$C/ip.folded"'

# --- truncated and corrupt files: exit 3, file and byte offset -----------------
src="$C/caller_ts.trace"
mapfile -t offs < <(offsets "$src")
size=$(stat -c %s "$src")
last=${offs[${#offs[@]}-1]}
head -c $((size - 3)) "$src" >"$C/trunc.trace"
bs convert "$C/trunc.trace" -o "$C/trunc.folded"
check "convert: truncated file: exit 3 at the last record's offset, nothing written" eval 'rc_is 3 && one_line_err &&
    grep -q "trunc.trace: byte $last: truncated" "$W/err" && [ ! -e "$C/trunc.folded" ]'
head -c $((last + 2)) "$src" >"$C/trunc2.trace"
bs convert "$C/trunc2.trace" --text
check "convert: file cut inside a record header" eval 'rc_is 3 && grep -q "byte $last: truncated" "$W/err"'
cp "$src" "$C/tag.trace"
printf '\007' | dd of="$C/tag.trace" bs=1 seek="${offs[3]}" conv=notrunc 2>/dev/null
bs convert "$C/tag.trace" -o "$C/tag.folded"
check "convert: bad record tag: exit 3 at its offset" eval 'rc_is 3 && one_line_err &&
    grep -q "tag.trace: byte ${offs[3]}: bad record tag 7" "$W/err"'
cp "$src" "$C/term.trace"
printf '\377' | dd of="$C/term.trace" bs=1 seek="$((offs[2] + 5))" conv=notrunc 2>/dev/null
bs convert "$C/term.trace" -o "$C/term.folded"
check "convert: corrupt term: exit 3 inside its record" eval 'rc_is 3 && one_line_err &&
    grep -q "term.trace: byte $((offs[2] + 5)): corrupt trace term (record at byte ${offs[2]})" "$W/err"'
cp "$src" "$C/len.trace"
printf '\000\000\000\003' | dd of="$C/len.trace" bs=1 seek="$((offs[1] + 1))" conv=notrunc 2>/dev/null
bs convert "$C/len.trace" -o "$C/len.folded"
check "convert: record length too short for its term: exit 3" eval 'rc_is 3 && one_line_err &&
    grep -q "len.trace: byte" "$W/err"'
bs convert "$DATA/names.folded" -o "$C/x.folded"
check "convert: a file that is not a trace: exit 3" eval 'rc_is 3 && grep -q "byte 0: bad record tag" "$W/err"'
# Two real traces one after the other: the same processes' times go back
# where the second begins.
cat "$C/caller_ts.trace" "$C/caller_ts.trace" >"$C/twice.trace"
size=$(wc -c <"$C/caller_ts.trace")
bs convert "$C/twice.trace" -o "$C/twice.folded"
check "convert: two traces concatenated: exit 3 where time goes back, nothing written" eval 'rc_is 3 && one_line_err &&
    grep -q "twice.trace: byte $size: record [0-9]*: the time of <0\.[0-9]*\.0> goes back .* wall-clock times never go back" \
    "$W/err" && [ ! -e "$C/twice.folded" ]'
# A real trace and then a message no VM writes ({trace_ts, hello, call,
# {1,2,3}, {1795,1,0}} in the external term format).
cp "$C/caller_ts.trace" "$C/hello.trace"
$PY - "$C/hello.trace" <<'EOF'
import sys
atom = lambda a: bytes([119, len(a)]) + a
term = (bytes([131, 104, 5]) + atom(b'trace_ts') + atom(b'hello') + atom(b'call') +
        bytes([104, 3, 97, 1, 97, 2, 97, 3, 104, 3, 98, 0, 0, 7, 3, 97, 1, 97, 0]))
open(sys.argv[1], 'ab').write(bytes([0]) + len(term).to_bytes(4, 'big') + term)
EOF
bs convert "$C/hello.trace" -o "$C/hello.folded"
check "convert: a malformed trace message: exit 3 at its record" eval 'rc_is 3 && one_line_err &&
    grep -q "hello.trace: byte $size: record [0-9]* is a traced process hello, not a pid or a port" "$W/err"'

# --- caps and usage ---------------------------------------------------------------
bs convert "$C/caller_ts.trace" --max-term-size 60 -o "$C/cap.folded"
check "convert: records over --max-term-size are skipped and said" eval 'rc_is 0 &&
    grep -q "larger than --max-term-size (60 bytes) were skipped" "$W/err"'
bs convert "$C/caller_ts.trace" --max-memory 8K -o "$C/mem.svg"
check "convert: --max-memory reached: said, output written and marked truncated" eval 'rc_is 0 &&
    grep -q "max-memory (8 KiB) reached" "$W/err" && xml_ok "$C/mem.svg" && grep -q "max_memory" "$C/mem.svg"'
bs convert "$C/caller_ts.trace"
check "convert: no output is a usage error" eval 'rc_is 2 && one_line_err'
bs convert "$C/caller_ts.trace" --text -o "$C/x.svg"
check "convert: --text takes no -o" eval 'rc_is 2 && one_line_err'
bs convert "$C/missing.trace" -o "$C/x.svg"
check "convert: missing input: exit 1" eval 'rc_is 1 && one_line_err'
