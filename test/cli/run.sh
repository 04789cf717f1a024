#!/usr/bin/env bash
# test/cli/run.sh — the command-line tool's test layer (bin/beamspy render,
# diff, and convert in convert.sh).
#
# Inputs are real profiles: data/cli_workload.erl (fib, a sort that gets
# scheduled out, several processes) is profiled with beamspy:apply/2 into
# folded and .bspy files; data/ adds a few small hand-written files (names
# that need escaping, stacks without pids, a malformed file). Every check
# runs the real binary and looks at its exit code, its stderr and the files
# it leaves: outputs are validated with xmllint (SVG), python3's json (JSON)
# and the folded grammar; totals are compared with the inputs'.
# Ends with `LAYER cli: <P> passed, <F> failed`; exit status non-zero on any
# failure. Works from any directory; scratch files go to a temporary
# directory that is removed at the end.
# Environment: BEAMSPY (binary to test; default bin/beamspy, built here),
# ERL, ERLC.
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DATA="$HERE/data"
ERL=${ERL:-erl}
ERLC=${ERLC:-erlc}
W=$(mktemp -d "${TMPDIR:-/tmp}/beamspy-cli-test.XXXXXX")
trap 'rm -rf "$W"' EXIT

passed=0
failed=0
start=$(date +%s)

pass() { passed=$((passed + 1)); echo "PASS $1"; }
fail() {
    failed=$((failed + 1))
    echo "FAIL $1${2:+: $2}"
}
# check NAME COMMAND...: passes when COMMAND succeeds.
check() {
    local name=$1
    shift
    if "$@"; then pass "$name"; else fail "$name"; fi
}

finish() {
    echo "cli layer took $(($(date +%s) - start)) s"
    echo "LAYER cli: $passed passed, $failed failed"
    [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
    exit $?
}

# --- build -----------------------------------------------------------------
if [ -z "${BEAMSPY:-}" ]; then
    BEAMSPY="$ROOT/bin/beamspy"
    targets="cli erlang nif"
else
    targets="erlang nif"
fi
if ! make -s -C "$ROOT" $targets >"$W/make.log" 2>&1; then
    cat "$W/make.log"
    fail "build"
    finish
fi

# bs ARGS...: runs beamspy; stdout in $W/out, stderr in $W/err, status in $rc.
rc=0
bs() {
    "$BEAMSPY" "$@" >"$W/out" 2>"$W/err"
    rc=$?
}
rc_is() { [ "$rc" -eq "$1" ]; }
one_line_err() { [ "$(wc -l <"$W/err")" -eq 1 ] && grep -q '^beamspy' "$W/err"; }
# No file in $1 but the ones listed after it (no temporary left behind).
only_files() {
    local dir=$1
    shift
    [ "$(cd "$dir" && ls -A | sort | tr '\n' ' ')" = "$(printf '%s\n' "$@" | sed '/^$/d' | sort | tr '\n' ' ')" ]
}

# --- inputs from real runs -------------------------------------------------
IN="$W/in"
mkdir -p "$IN"
if ! "$ERLC" -o "$IN" "$DATA/cli_workload.erl" >"$W/erlc.log" 2>&1; then
    cat "$W/erlc.log"
    fail "compile cli_workload"
    finish
fi
# A .bspy output is written when the Erlang API knows the format; the
# checks that need a recorded .bspy say so when it is missing.
"$ERL" -noshell -pa "$ROOT/ebin" -pa "$IN" -eval "
    P = fun(T, F) -> beamspy:apply(T, [quiet, {output, \"$IN/\" ++ F}]) end,
    P({cli_workload, fib, [18]}, \"fib18.folded\"),
    P({cli_workload, fib, [20]}, \"fib20.folded\"),
    P({cli_workload, sort, [60000]}, \"sort.folded\"),
    P({cli_workload, workers, [3]}, \"workers.folded\"),
    [try P(T, F) catch _:_ -> skipped end
     || {T, F} <- [{{cli_workload, fib, [18]}, \"fib18.bspy\"},
                   {{cli_workload, workers, [3]}, \"workers.bspy\"}]],
    %% Raw times: compensated, fib's shortest calls can be left with no
    %% time, and writers leave empty spans out of timelines (the
    %% --timeline-cap checks count spans).
    try beamspy:apply({cli_workload, fib, [15]}, [quiet, {timeline, true}, {compensate, false},
                                                  {output, \"$IN/timeline.bspy\"}])
    catch _:_ -> skipped end,
    try beamspy:apply({cli_workload, fib, [15]}, [quiet, {compensate, false}, {output, \"$IN/raw.bspy\"}])
    catch _:_ -> skipped end,
    halt()." >"$W/erl.log" 2>&1
for f in fib18.folded fib20.folded sort.folded workers.folded; do
    if [ ! -s "$IN/$f" ]; then
        cat "$W/erl.log"
        fail "profile workloads" "$f missing"
        finish
    fi
done
pass "profile workloads with beamspy:apply"
have_bspy=0
[ -s "$IN/fib18.bspy" ] && have_bspy=1

# --- helpers that validate files -------------------------------------------
PY=python3

# Folded grammar (the portable one): frames without ';', one space,
# a positive integer; LF only.
folded_ok() {
    $PY - "$1" <<'EOF'
import re, sys
data = open(sys.argv[1], 'rb').read()
line_re = re.compile(rb'^[^;\n\r]*[^;\n\r ](;[^;\n\r]*[^;\n\r ])* [1-9][0-9]*$')
lines = data.split(b'\n')
if lines[-1] != b'' or not all(line_re.match(l) for l in lines[:-1]):
    sys.exit(1)
data.decode('utf-8')
EOF
}
# Sum of the last column of a folded file.
folded_total() { awk '{ s += $NF } END { printf "%d\n", s }' "$1"; }
# Total of the lines under a process frame (the merged and diff outputs
# drop the time of process frames themselves).
folded_total_below_pid() { awk '$0 ~ /;/ || $0 !~ /^</ { s += $NF } END { printf "%d\n", s }' "$1"; }
same_lines() { cmp -s <(sort "$1") <(sort "$2"); }
json_ok() { $PY -c 'import json,sys; json.load(open(sys.argv[1], encoding="utf-8"))' "$1"; }
xml_ok() {
    if command -v xmllint >/dev/null 2>&1; then
        xmllint --noout "$1"
    else
        $PY -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' "$1"
    fi
}
html_ok() {
    $PY - "$1" <<'EOF'
import re, sys
s = open(sys.argv[1], encoding='utf-8').read()
# Self-contained: a document, and nothing fetched from elsewhere.
ok = re.search(r'<html', s, re.I) and not re.search(r'<(script|link|img)[^>]+(src|href)=["\']?(https?:)?//', s, re.I)
sys.exit(0 if ok else 1)
EOF
}
# perf script text: samples separated by a blank line, the last one too.
perf_ok() { [ -s "$1" ] && [ -z "$(tail -n 1 "$1")" ] && grep -q '^[^ 	].*:' "$1"; }
# callgrind: valgrind's own reader takes it (when valgrind is installed) and
# finds a non-zero total.
callgrind_ok() {
    [ "$(head -n 1 "$1")" = "# callgrind format" ] || return 1
    command -v callgrind_annotate >/dev/null 2>&1 || return 0
    callgrind_annotate --auto=no "$1" >"$1.annotate" 2>"$1.annotate.err" &&
        [ ! -s "$1.annotate.err" ] && grep -q '^[1-9][0-9,]* .*PROGRAM TOTALS' "$1.annotate"
}
valid_as() {
    case $1 in
    folded) folded_ok "$2" ;;
    svg) xml_ok "$2" && grep -q '<svg' "$2" ;;
    html) html_ok "$2" ;;
    speedscope) json_ok "$2" && grep -q 'https://www.speedscope.app/file-format-schema.json' "$2" ;;
    chrome) json_ok "$2" ;;
    perf) perf_ok "$2" ;;
    bspy) [ -s "$2" ] && "$BEAMSPY" render "$2" -o "$2.back.folded" 2>/dev/null && folded_ok "$2.back.folded" ;;
    callgrind) callgrind_ok "$2" ;;
    pprof) gzip -t "$2" && { ! command -v go >/dev/null 2>&1 ||
        HOME="$W" go tool pprof -raw -symbolize=none "$2" 2>/dev/null | grep -q '^Samples:'; } ;;
    esac
}

# --- help ------------------------------------------------------------------
bs help
check "help lists the commands" eval 'rc_is 0 && grep -q render "$W/out" && grep -q convert "$W/out" && grep -q diff "$W/out"'
bs
check "no command: exit 2" rc_is 2
bs frobnicate
check "unknown command: exit 2, one line" eval 'rc_is 2 && one_line_err'
bs version
check "version" eval 'rc_is 0 && grep -q "^beamspy [0-9]" "$W/out"'

# Every long option in a subcommand's getopt table (its own and the shared
# ones of cli.h) must be in its help, and both ways of asking must agree.
shared_opts=$(sed -n '/^#define BS_CLI_SHARED_LONG_OPTIONS/,/^$/p' "$ROOT/c_src/cli/cli.h" | grep -o '{"[a-z-]*", *[a-z_]*_argument' | sed 's/{"\([a-z-]*\)".*/\1/')
for cmd in render convert diff; do
    own=$(grep -o '{"[a-z-]*", *[a-z_]*_argument' "$ROOT/c_src/cli/cmd_$cmd.c" | sed 's/{"\([a-z-]*\)".*/\1/')
    bs help "$cmd"
    cp "$W/out" "$W/help1"
    check "help $cmd exits 0" rc_is 0
    bs "$cmd" --help
    check "$cmd --help exits 0, same text" eval 'rc_is 0 && cmp -s "$W/out" "$W/help1"'
    bs "$cmd" -h
    check "$cmd -h exits 0" rc_is 0
    missing=""
    for o in $own $shared_opts; do
        grep -q -- "--$o\b" "$W/help1" || missing="$missing --$o"
    done
    [ -n "$own" ] && [ -z "$missing" ] && pass "help $cmd mentions every option" ||
        fail "help $cmd mentions every option" "missing:$missing"
    check "help $cmd documents the exit codes" eval 'grep -q "exit codes" "$W/help1" && grep -q "^ *3 *malformed" "$W/help1"'
done
# The spec's option list, in case a table entry is missing altogether.
for o in -o --format --drop-sleep --merge --include --exclude --title --subtitle --palette \
    --min-width --width --inverted --flamechart --count-name --help; do
    grep -q -- "$o\b" <("$BEAMSPY" help render) || fail "render help mentions $o"
done
for o in -o --folded --help; do
    grep -q -- "$o\b" <("$BEAMSPY" help diff) || fail "diff help mentions $o"
done

# record and seq say under --function which spellings they read, and each
# one they name is read: a malformed one is a usage error (2) before any
# node is asked, these get as far as looking the node up.
for cmd in record seq; do
    spellings=$("$BEAMSPY" help "$cmd" | grep -A1 -- '^  --function M:F/A' | sed -n 's/^ *also //p')
    check "help $cmd: the line under --function names the spellings" \
        [ "$spellings" = "'Elixir.Mod':f/2, Elixir.Mod:f/2, Mod.f/2, :mod.f/2" ]
    output=$W/sp.folded
    [ "$cmd" = seq ] && output=$W/sp.mmd
    for f in M:F/A ${spellings//,/}; do
        [ "$f" = M:F/A ] && f=mod:f/2
        "$BEAMSPY" "$cmd" --node bs_cli_no_such_node@localhost --cookie c --function "$f" -o "$output" \
            >/dev/null 2>"$W/sp.err"
        rc=$?
        check "help $cmd: --function $f is read" eval '[ $rc -ne 2 ] && ! grep -q "bad --function" "$W/sp.err"'
    done
done

# --- render: every format --------------------------------------------------
O="$W/o"
mkdir -p "$O"
for pair in folded:.folded svg:.svg html:.html speedscope:.speedscope.json chrome:.trace.json perf:.perf.txt bspy:.bspy \
    callgrind:.callgrind pprof:.pb.gz; do
    fmt=${pair%%:*}
    ext=${pair#*:}
    for input in "$IN/workers.folded" "$DATA/names.folded"; do
        out="$O/$(basename "$input" .folded)$ext"
        bs render "$input" -o "$out"
        if rc_is 0 && valid_as "$fmt" "$out"; then
            pass "render $(basename "$input") to $fmt"
        else
            fail "render $(basename "$input") to $fmt" "exit $rc: $(head -c 300 "$W/err")"
        fi
    done
done
# A stack a million frames deep (one line of 12 MB) and a million stacks
# side by side, into every format at once: no reader or writer recurses
# once per frame or per sibling (about 90 s each on a loaded machine).
python3 -c "
with open('$W/deep.folded', 'w') as f:
    f.write(';'.join('m:f%d/0' % i for i in range(1000000)) + ' 1\n')
with open('$W/wide.folded', 'w') as f:
    f.writelines('p;m:f%d/0 1\n' % i for i in range(1000000))
"
for shape in deep wide; do
    D="$W/$shape"
    bs render "$W/$shape.folded" -o "$D.svg" -o "$D.html" -o "$D.speedscope.json" -o "$D.trace.json" \
        -o "$D.perf.txt" -o "$D.bspy" -o "$D.callgrind" -o "$D.pb.gz" -o "$D.out.folded"
    check "render a million $shape: exit 0, SVG and folded valid" \
        eval 'rc_is 0 && valid_as svg "$D.svg" && folded_ok "$D.out.folded"'
    check "render a million $shape: every other format written" \
        eval 'grep -q "<html" "$D.html" && [ "$(head -c 1 "$D.speedscope.json")" = "{" ] &&
              [ "$(head -c 1 "$D.trace.json")" = "{" ] && perf_ok "$D.perf.txt" &&
              [ "$(head -n 1 "$D.callgrind")" = "# callgrind format" ] && [ -s "$D.bspy" ] &&
              gzip -t "$D.pb.gz"'
    [ "$shape" = deep ] && check "render a million deep: frames past 1,024 in one [deeper] leaf" \
        grep -q ';\[deeper\] 1$' "$D.out.folded"
    rm -f "$D".*
done
if [ "$have_bspy" = 1 ]; then
    for pair in folded:.folded svg:.svg html:.html speedscope:.speedscope.json chrome:.trace.json perf:.perf.txt \
        callgrind:.callgrind; do
        fmt=${pair%%:*}
        out="$O/rec${pair#*:}"
        bs render "$IN/fib18.bspy" -o "$out"
        check "render recorded .bspy to $fmt" eval 'rc_is 0 && valid_as "$fmt" "$out"'
    done
    # Overhead compensation is kept by .bspy and said again by every render:
    # in the SVG's info line and, for formats without a header, on stderr.
    bs render "$IN/fib18.bspy" -o "$O/comp.svg" -o "$O/comp.folded"
    check "rendered .bspy says its times are compensated (SVG, stderr)" \
        eval 'rc_is 0 && grep -q "traced times compensated for tracer overhead: [0-9]* ns/call" "$O/comp.svg" &&
              grep -q "^beamspy: traced times compensated for tracer overhead" "$W/err"'
    bs render "$IN/raw.bspy" -o "$O/raw.svg" -o "$O/raw.folded"
    check "rendered .bspy of compensate => false says raw traced times" \
        eval 'rc_is 0 && grep -q "raw traced times" "$O/raw.svg" && grep -q "^beamspy: raw traced times" "$W/err"'
    bs render "$IN/fib18.folded" -o "$O/nocomp.svg"
    check "folded input says nothing about compensation" \
        eval 'rc_is 0 && ! grep -q "compensat\|raw traced" "$O/nocomp.svg" "$W/err"'
    # What callgrind readers find in a recorded fib(18): fib/1 called 8361
    # times (8360 of them by itself), and the same total time as the folded
    # stacks (those are rounded to microseconds per line).
    bs render "$IN/fib18.bspy" -o "$O/callgrind.out.7" -o "$O/cg.folded"
    cg_calls() { # FILE CALLER CALLEE: the calls of that edge
        $PY - "$@" <<'PYEOF'
import sys
names = {}
def name(ref):
    ident, _, text = ref.partition(")")
    if text: names[ident] = text[1:]
    return names[ident]
fn = cfn = None; calls = 0
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if line.startswith("fn="): fn = name(line[3:])
    elif line.startswith("cfn="): cfn = name(line[4:])
    elif line.startswith("calls="): calls = int(line[6:].split()[0])
    elif calls and line[:1].isdigit():
        if (fn, cfn) == (sys.argv[2], sys.argv[3]): print(calls)
        calls = 0
PYEOF
    }
    check "callgrind.out.N picks the format; fib/1 calls itself 8360 times" \
        eval 'rc_is 0 && callgrind_ok "$O/callgrind.out.7" &&
              [ "$(cg_calls "$O/callgrind.out.7" cli_workload:fib/1 cli_workload:fib/1)" = 8360 ]'
    if command -v callgrind_annotate >/dev/null 2>&1; then
        cg_total=$(sed -n 's/^\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' "$O/callgrind.out.7.annotate" | tr -d ,)
        folded_total=$(awk '{s += $NF} END {print s}' "$O/cg.folded")
        lines=$(wc -l <"$O/cg.folded")
        check "callgrind_annotate's total is the folded total" \
            eval '[ -n "$cg_total" ] && d=$((cg_total / 1000 - folded_total)) && [ ${d#-} -le "$lines" ]'
    else
        echo "SKIPPED callgrind_annotate checks: valgrind is not installed"
    fi
    # pprof: what go tool pprof reads of recorded profiles. -raw's stacks
    # (the process label first) and their times are the folded output's
    # (which rounds each line to microseconds), for several processes;
    # fib/1's calls add up to the 8361 the tracer saw; -top shows the time.
    if command -v go >/dev/null 2>&1; then
        pprof_raw() { # FILE.pb.gz [FOLDED [FUNCTION]]: check the stacks, or print FUNCTION's calls
            local f=$1
            shift
            HOME="$W" go tool pprof -raw -symbolize=none "$f" >"$f.raw" 2>"$f.err" || return 1
            $PY - "$f.raw" "$@" <<'PYEOF'
import re, sys
from collections import Counter
raw, folded = sys.argv[1], sys.argv[2]
calls_of = sys.argv[3] if len(sys.argv) > 3 else None
names, samples, section = {}, [], None
for line in open(raw):
    line = line.rstrip("\n")
    if line in ("Samples:", "Locations", "Mappings"):
        section = line
        continue
    if section == "Samples:":
        m = re.match(r"^\s+(\d+)\s+(\d+):\s*([\d ]*)$", line)
        if m:
            samples.append([int(m.group(1)), [int(x) for x in m.group(3).split()], None, int(m.group(2))])
        elif line.strip().startswith("process:["):
            samples[-1][2] = line.strip()[len("process:["):-1]
    elif section == "Locations":
        m = re.match(r"^\s+(\d+): 0x[0-9a-f]+ M=\d+ (.*) :0 s=0$", line)
        if m:
            names[int(m.group(1))] = m.group(2)
if calls_of:  # the calls of one function: the samples it is the leaf of
    print(sum(c for _, ids, _, c in samples if names[ids[0]] == calls_of))
    sys.exit(0)
got = Counter()
for ns, ids, proc, _ in samples:
    frames = [names[i] for i in reversed(ids)]
    # A process's own time is the one stack of its root frame.
    stack = ";".join(([proc] if proc and frames != [proc] else []) + frames)
    got[stack] += ns
got = {k: (v + 500) // 1000 for k, v in got.items()}
got = {k: v for k, v in got.items() if v}
want = {}
for line in open(folded):
    stack, _, n = line.rstrip("\n").rpartition(" ")
    want[stack] = int(n)
if got != want:
    for k in sorted(set(got) | set(want)):
        if got.get(k) != want.get(k):
            print("differs:", k, got.get(k), want.get(k))
    sys.exit(1)
print(len(want), "stacks,", sum(want.values()), "us")
PYEOF
        }
        bs render "$IN/workers.bspy" -o "$O/workers.pb.gz" -o "$O/workers.folded"
        check "pprof: go tool pprof reads the stacks, processes and times of the folded output" \
            eval 'rc_is 0 && pprof_raw "$O/workers.pb.gz" "$O/workers.folded"'
        bs render "$IN/fib18.bspy" -o "$O/fib18.pprof" -o "$O/fib18.folded"
        check "pprof: .pprof picks the format; fib/1 has its 8361 calls; -top shows wall time" \
            eval 'rc_is 0 && pprof_raw "$O/fib18.pprof" "$O/fib18.folded" &&
                  [ "$(pprof_raw "$O/fib18.pprof" "$O/fib18.folded" cli_workload:fib/1)" = 8361 ] &&
                  HOME="$W" go tool pprof -top -symbolize=none "$O/fib18.pprof" 2>/dev/null |
                  grep -q "^Type: wall"'
    else
        echo "SKIPPED pprof checks: go is not installed (apt-get install -y golang-go)"
    fi
else
    fail "recorded .bspy input" "beamspy:apply/2 did not write fib18.bspy"
fi

# --collapse-recursion: fib's tower becomes one frame, the total is kept.
bs render "$IN/fib18.folded" --collapse-recursion -o "$O/fibc.folded"
check "--collapse-recursion: no fib;fib left, same total" eval 'rc_is 0 && folded_ok "$O/fibc.folded" &&
    ! grep -q "fib/1;cli_workload:fib/1" "$O/fibc.folded" && grep -q "fib/1;cli_workload:fib/1" "$IN/fib18.folded" &&
    [ "$(awk "{s += \$NF} END {print s}" "$O/fibc.folded")" = "$(awk "{s += \$NF} END {print s}" "$IN/fib18.folded")" ]'

# --collapse-recursion=all also folds f -> g -> f; =direct is the default.
bs render "$IN/fib18.folded" --collapse-recursion=all -o "$O/fiba.folded"
check "--collapse-recursion=all: same as direct on direct recursion" eval 'rc_is 0 && same_lines "$O/fibc.folded" "$O/fiba.folded"'
printf '<0.1.0>;m:f/1;m:g/1;m:f/1;m:h/0 5\n<0.1.0>;m:f/1;m:g/1 2\n<0.1.0>;m:f/1 1\n' >"$W/mutual.folded"
bs render "$W/mutual.folded" --collapse-recursion=all -o "$O/mutual.folded"
check "--collapse-recursion=all: f -> g -> f joins the first f, total kept" eval 'rc_is 0 &&
    grep -qx "<0.1.0>;m:f/1;m:h/0 5" "$O/mutual.folded" && grep -qx "<0.1.0>;m:f/1;m:g/1 2" "$O/mutual.folded" &&
    [ "$(awk "{s += \$NF} END {print s}" "$O/mutual.folded")" = 8 ]'

# --open: the HTML written goes to $BROWSER (a script noting its argument);
# without a browser or a display, stderr says where the file is.
printf '#!/bin/sh\necho "$1" > "$(dirname "$0")/opened.tmp" && mv "$(dirname "$0")/opened.tmp" "$(dirname "$0")/opened"\n' >"$W/browser.sh"
chmod +x "$W/browser.sh"
BROWSER="$W/browser.sh" "$BEAMSPY" render "$IN/fib18.folded" -o "$O/open.folded" -o "$O/open.html" --open >"$W/out" 2>"$W/err"
rc=$?
for _ in $(seq 1 300); do [ -s "$W/opened" ] && break; sleep 0.1; done
check "--open: the HTML written is given to \$BROWSER" eval 'rc_is 0 && [ "$(cat "$W/opened")" = "$(cd "$O" && pwd -P)/open.html" ]'
DISPLAY= WAYLAND_DISPLAY= BROWSER= bs render "$IN/fib18.folded" -o "$O/open2.svg" --open
check "--open without a display: stderr says where the file is" eval 'rc_is 0 && grep -q "no display here.*open file://.*open2.svg in a browser" "$W/err"'

# Folded in, folded out: the same stacks and counts.
bs render "$IN/sort.folded" -o "$O/sort.folded"
check "folded round trip keeps every line" eval 'rc_is 0 && same_lines "$IN/sort.folded" "$O/sort.folded"'

# .bspy round trip: folded -> bspy -> folded is lossless.
bs render "$IN/workers.folded" -o "$O/rt.bspy"
bs render "$O/rt.bspy" -o "$O/rt.folded"
check ".bspy round trip keeps every line" eval 'rc_is 0 && same_lines "$IN/workers.folded" "$O/rt.folded"'

# Several outputs in one run, and --format for a name without extension.
rm -f "$O"/multi.*
bs render "$IN/fib18.folded" -o "$O/multi.svg" -o "$O/multi.folded" -o "$O/multi.speedscope.json"
check "several -o in one run" eval 'rc_is 0 && xml_ok "$O/multi.svg" && folded_ok "$O/multi.folded" && json_ok "$O/multi.speedscope.json"'
bs render "$IN/fib18.folded" --format folded -o "$O/plain.txt"
check "--format overrides the extension" eval 'rc_is 0 && same_lines "$IN/fib18.folded" "$O/plain.txt"'
bs render "$IN/fib18.folded" -o "$O/opts.svg" --title 'T&itle <x>' --subtitle sub --palette beam \
    --min-width 0.5 --width 900 --inverted --count-name calls
check "drawing options accepted, SVG valid, title escaped" eval 'rc_is 0 && xml_ok "$O/opts.svg" && grep -q "T&amp;itle &lt;x&gt;" "$O/opts.svg"'
bs render "$IN/fib18.folded" -o "$O/chart.svg" --flamechart
check "--flamechart without a timeline: warns, still writes" eval 'rc_is 0 && xml_ok "$O/chart.svg" && grep -q "warning" "$W/err"'
if [ -s "$IN/timeline.bspy" ]; then
    bs render "$IN/timeline.bspy" -o "$O/chart.svg" -o "$O/chart.trace.json" --flamechart
    check "--flamechart with a recorded timeline" eval 'rc_is 0 && [ ! -s "$W/err" ] && xml_ok "$O/chart.svg" &&
        grep -q "Flame Chart" "$O/chart.svg" && json_ok "$O/chart.trace.json"'
    # --timeline-cap: fib(15)'s 1973 calls, 30 kept in time order; the file
    # and stderr say how many were left out and how to keep them.
    bs render "$IN/timeline.bspy" -o "$O/cap.trace.json" -o "$O/cap.speedscope.json" --timeline-cap 30
    check "--timeline-cap: capped files say so, stderr too" eval 'rc_is 0 && json_ok "$O/cap.trace.json" &&
        [ "$(grep -o "\"ph\":\"X\"" "$O/cap.trace.json" | wc -l)" -eq 30 ] &&
        grep -q "\"timeline_cap\":30,\"calls_left_out_by_cap\":[1-9]" "$O/cap.trace.json" &&
        grep -q "timeline capped at 30 calls in this file" "$O/cap.speedscope.json" &&
        [ "$(grep -c "warning: .*timeline capped at 30 calls.*--timeline-cap none" "$W/err")" -eq 2 ]'
    bs render "$IN/timeline.bspy" -o "$O/nocap.trace.json" --timeline-cap none
    check "--timeline-cap none: every call, nothing said" eval 'rc_is 0 && [ ! -s "$W/err" ] &&
        [ "$(grep -o "\"ph\":\"X\"" "$O/nocap.trace.json" | wc -l)" -gt 1000 ] &&
        ! grep -q "\"timeline_cap\":" "$O/nocap.trace.json"'
else
    fail "recorded timeline" "beamspy:apply/2 with {timeline, true} did not write timeline.bspy"
fi
bs render "$IN/fib18.folded" -o "$O/x.trace.json" --timeline-cap 0
check "--timeline-cap 0: usage error" eval 'rc_is 2 && one_line_err'
bs render "$IN/fib18.folded" -o "$O/x.folded" --collapse-recursion=sideways
check "--collapse-recursion=sideways: usage error" eval 'rc_is 2 && one_line_err'

# Projected size above the threshold (lowered for the test): announced on
# stderr before writing, with the options that shrink it; the file is written.
BEAMSPY_SIZE_WARN_BYTES=100 bs render "$IN/fib18.folded" -o "$O/big.folded"
check "projected size above the threshold: a warning, the file written" eval 'rc_is 0 &&
    folded_ok "$O/big.folded" && grep -q "warning: .*big.folded: folded: about .* to write (above 1 kB).*collapse-recursion=all" "$W/err"'
bs render "$IN/fib18.folded" -o "$O/small.folded"
check "below the threshold: nothing said" eval 'rc_is 0 && [ ! -s "$W/err" ]'
# Above the size viewers open (lowered for the test): recursion folded,
# time kept, stderr gives both sizes and --full; --full writes every stack.
BEAMSPY_OPENABLE_BYTES=100 bs render "$IN/fib18.folded" -o "$O/folded.folded"
check "too big to open: recursion folded, said, time kept" eval 'rc_is 0 && folded_ok "$O/folded.folded" &&
    ! grep -q "fib/1;cli_workload:fib/1" "$O/folded.folded" &&
    [ "$(folded_total "$O/folded.folded")" -eq "$(folded_total "$IN/fib18.folded")" ] &&
    grep -q "warning: .*folded.folded: folded: every stack whole would be about .* more than viewers open (above 1 kB): recursion folded.*--full" "$W/err"'
BEAMSPY_OPENABLE_BYTES=100 bs render "$IN/fib18.folded" -o "$O/full.folded" --full
check "--full: every stack, nothing folded" eval 'rc_is 0 && same_lines "$IN/fib18.folded" "$O/full.folded" &&
    ! grep -q "viewers open" "$W/err"'

# --- render: inputs ----------------------------------------------------------
bs render - -o "$O/stdin.folded" <"$IN/fib18.folded"
check "'-' reads standard input" eval 'rc_is 0 && same_lines "$IN/fib18.folded" "$O/stdin.folded"'
bs render "$IN/fib18.folded" "$IN/fib20.folded" -o "$O/both.folded"
check "two inputs: totals add up" eval 'rc_is 0 && folded_ok "$O/both.folded" &&
    [ "$(folded_total "$O/both.folded")" -eq $(($(folded_total "$IN/fib18.folded") + $(folded_total "$IN/fib20.folded"))) ]'
cat "$IN/fib18.folded" "$IN/fib20.folded" >"$W/cat.folded"
bs render "$W/cat.folded" -o "$O/cat.folded"
check "two inputs = their concatenation" eval 'same_lines "$O/both.folded" "$O/cat.folded"'
bs render "$IN/fib18.folded" "$DATA/nopid.folded" "$IN/sort.folded" -o "$O/three.folded"
check "three inputs, with and without pids" eval 'rc_is 0 &&
    [ "$(folded_total "$O/three.folded")" -eq $(($(folded_total "$IN/fib18.folded") + $(folded_total "$DATA/nopid.folded") + $(folded_total "$IN/sort.folded"))) ]'

if [ "$have_bspy" = 1 ]; then
    bs render "$IN/fib18.bspy" "$IN/workers.bspy" -o "$O/two-bspy.folded"
    check "two recorded .bspy inputs" eval 'rc_is 0 && folded_ok "$O/two-bspy.folded"'
    bs render "$IN/fib18.bspy" "$IN/fib20.folded" -o "$O/mixed.folded"
    check "recorded times and sample counts do not combine: exit 2" eval 'rc_is 2 && one_line_err && [ ! -e "$O/mixed.folded" ]'
fi

# --- render: filters -------------------------------------------------------
# Recorded workloads have scheduled-out leaves: WAIT (in a receive) and
# RUNNABLE (preempted); --drop-sleep leaves out those and SLEEP alike.
grep -Eq ';(WAIT|RUNNABLE) ' "$IN/sort.folded" || grep -Eq ';(WAIT|RUNNABLE) ' "$IN/workers.folded" ||
    fail "workloads have WAIT/RUNNABLE frames" "no WAIT or RUNNABLE line in sort.folded or workers.folded"
bs render "$IN/sort.folded" "$IN/workers.folded" --drop-sleep -o "$O/nosleep.folded"
check "--drop-sleep removes SLEEP, WAIT and RUNNABLE lines" eval 'rc_is 0 && folded_ok "$O/nosleep.folded" && ! grep -Eq "SLEEP|WAIT|RUNNABLE" "$O/nosleep.folded" &&
    [ "$(folded_total "$O/nosleep.folded")" -eq $(grep -Ehv "SLEEP|WAIT|RUNNABLE" "$IN/sort.folded" "$IN/workers.folded" | awk "{s+=\$NF} END {print s}") ]'
bs render "$IN/workers.folded" --include 'lists:rmerge' -o "$O/inc.folded"
check "--include keeps only matching stacks" eval 'rc_is 0 && [ -s "$O/inc.folded" ] && ! grep -v "lists:rmerge" "$O/inc.folded"'
bs render "$IN/workers.folded" --exclude 'lists:rmerge' -o "$O/exc.folded"
check "--exclude drops matching stacks" eval 'rc_is 0 && [ -s "$O/exc.folded" ] && ! grep -q "lists:rmerge" "$O/exc.folded" &&
    [ $(($(folded_total "$O/inc.folded") + $(folded_total "$O/exc.folded"))) -eq "$(folded_total "$IN/workers.folded")" ]'
n_pids=$(cut -d';' -f1 "$IN/workers.folded" | cut -d' ' -f1 | sort -u | wc -l)
[ "$n_pids" -ge 4 ] || fail "workers profile has one tree per process" "$n_pids pids"
bs render "$IN/workers.folded" --merge -o "$O/merged.folded"
check "--merge removes the pid roots" eval 'rc_is 0 && folded_ok "$O/merged.folded" && ! grep -q "^<" "$O/merged.folded" &&
    [ "$(folded_total "$O/merged.folded")" -eq "$(folded_total_below_pid "$IN/workers.folded")" ]'

# --- errors ----------------------------------------------------------------
E="$W/e"
mkdir -p "$E"
bs render "$DATA/malformed.folded" -o "$E/m.svg" -o "$E/m.folded"
check "malformed input: exit 3, FILE:LINE:, no output" eval 'rc_is 3 && one_line_err &&
    grep -q "^beamspy: .*malformed.folded:3: " "$W/err" && only_files "$E"'
bs render "$IN/fib18.folded" "$DATA/malformed.folded" -o "$E/m.folded"
check "malformed second input: exit 3, no output" eval 'rc_is 3 && grep -q "malformed.folded:3:" "$W/err" && only_files "$E"'
bs render - -o "$E/m.folded" <"$DATA/malformed.folded"
check "malformed standard input: exit 3, <stdin>:3:" eval 'rc_is 3 && grep -q "^beamspy: <stdin>:3: " "$W/err" && only_files "$E"'
if [ "$have_bspy" = 1 ]; then
    head -c 40 "$IN/fib18.bspy" >"$W/cut.bspy"
    bs render "$W/cut.bspy" -o "$E/b.folded"
    check "truncated .bspy: exit 3, FILE: byte N:" eval 'rc_is 3 && one_line_err && grep -q "^beamspy: .*cut.bspy: byte [0-9]*: " "$W/err" && only_files "$E"'
fi
bs render "$W/no-such-file.folded" -o "$E/x.folded"
check "missing input: exit 1" eval 'rc_is 1 && one_line_err && only_files "$E"'

for args in "--bogus" "-x" "--format nope" "--palette cold" "--width abc" "--width 0" "--min-width -1" \
    "--include (" "--exclude [z-a]" "-o"; do
    # shellcheck disable=SC2086
    bs render "$IN/fib18.folded" -o "$E/u.folded" $args
    check "render $args: exit 2, one line, no output" eval 'rc_is 2 && one_line_err && only_files "$E"'
done
bs render "$IN/fib18.folded" -o "$E/u.unknownext"
check "unknown extension: exit 2" eval 'rc_is 2 && one_line_err && only_files "$E"'
bs render -o "$E/u.folded"
check "no input: exit 2" eval 'rc_is 2 && one_line_err && only_files "$E"'
bs render "$IN/fib18.folded"
check "no output: exit 2" eval 'rc_is 2 && one_line_err'

bs render "$IN/fib18.folded" -o "$W/no/such/dir/x.svg"
check "output directory missing: exit 1" eval 'rc_is 1 && one_line_err && grep -q "x.svg" "$W/err"'
mkdir -p "$E/taken.svg"
bs render "$IN/fib18.folded" -o "$E/taken.svg"
check "output cannot be renamed into place: exit 1, no temporary left" eval 'rc_is 1 && one_line_err && only_files "$E" taken.svg &&
    [ -z "$(ls -A "$E/taken.svg")" ]'
bs render "$IN/fib18.folded" -o "$E/ok1.folded" -o "$E/taken.svg" -o "$E/ok2.svg"
check "one of several outputs fails: exit 1, the others written" eval 'rc_is 1 && one_line_err &&
    folded_ok "$E/ok1.folded" && xml_ok "$E/ok2.svg" && only_files "$E" taken.svg ok1.folded ok2.svg'
rm -rf "${E:?}"/*

# --- diff ------------------------------------------------------------------
D="$W/d"
mkdir -p "$D"
bs diff "$IN/fib18.folded" "$IN/fib20.folded" -o "$D/fib.svg"
check "diff writes a well-formed SVG" eval 'rc_is 0 && xml_ok "$D/fib.svg"'
# fib(20) spends a larger share deeper down: some frames grow (red), some
# shrink (blue); the tooltips give percentages.
$PY - "$D/fib.svg" <<'EOF' >"$W/colours" 2>&1
import re, sys
s = open(sys.argv[1], encoding='utf-8').read()
cols = [tuple(map(int, m)) for m in re.findall(r'rgb\((\d+),\s*(\d+),\s*(\d+)\)', s)]
red = sum(1 for r, g, b in cols if r > b + 40 and r > g + 20)
blue = sum(1 for r, g, b in cols if b > r + 40)
print(red, blue, len(re.findall(r'[-+]?\d+(\.\d+)?%', s)))
EOF
read -r n_red n_blue n_pct <"$W/colours"
check "diff SVG has red frames" [ "${n_red:-0}" -gt 0 ]
check "diff SVG has blue frames" [ "${n_blue:-0}" -gt 0 ]
check "diff SVG tooltips give percentages" [ "${n_pct:-0}" -gt 0 ]

# Differential folded: "stack before after"; raw columns are each input's
# total, normalised ones both after's. Processes are paired by name, not pid.
diff_folded_ok() { grep -Evq '^[^;]+(;[^;]+)* [0-9]+ [0-9]+$' "$1" && return 1; [ -s "$1" ]; }
col_total() { awk -v c="$2" '{ s += $(NF - c) } END { printf "%d\n", s }' "$1"; }
bs diff "$IN/fib18.folded" "$IN/fib20.folded" --folded --no-normalize -o "$D/raw.folded"
check "diff --folded --no-normalize: columns sum to each input's total" eval 'rc_is 0 && diff_folded_ok "$D/raw.folded" &&
    [ "$(col_total "$D/raw.folded" 1)" -eq "$(folded_total "$IN/fib18.folded")" ] &&
    [ "$(col_total "$D/raw.folded" 0)" -eq "$(folded_total "$IN/fib20.folded")" ]'
bs diff "$IN/fib18.folded" "$IN/fib20.folded" -o "$D/norm.folded"
check "diff to .folded: normalised, both columns sum to after's total" eval 'rc_is 0 && diff_folded_ok "$D/norm.folded" &&
    [ "$(col_total "$D/norm.folded" 1)" -eq "$(folded_total "$IN/fib20.folded")" ] &&
    [ "$(col_total "$D/norm.folded" 0)" -eq "$(folded_total "$IN/fib20.folded")" ]'
check "diff --folded pairs processes by name, not pid" eval '! grep -v "^<process>" "$D/raw.folded"'
bs diff "$IN/fib18.folded" "$IN/workers.folded" --merge --folded -o "$D/merged.folded"
check "diff --merge: no process frames" eval 'rc_is 0 && diff_folded_ok "$D/merged.folded" && ! grep -q "^<" "$D/merged.folded"'
check "diff --folded: the after column is the after profile" eval '[ "$(awk "{print \$NF}" "$D/raw.folded" | tr "\n" " ")" = "$(awk "{print \$NF}" "$D/norm.folded" | tr "\n" " ")" ]'
# A stack of BEFORE whose share normalises to 0 keeps its line (0 0): the
# two outputs list the same stacks.
printf 'main;rare 1\nmain;hot 1000000\n' >"$D/before-rare.folded"
printf 'main;hot 10\n' >"$D/after-hot.folded"
bs diff "$D/before-rare.folded" "$D/after-hot.folded" --folded -o "$D/rare.folded"
check "diff --folded: a stack normalised to 0 keeps its line" eval 'rc_is 0 && grep -qx "main;rare 0 0" "$D/rare.folded" &&
    grep -qx "main;hot 10 10" "$D/rare.folded"'
sed 's/<0\.80\.0>/<0.99.0>/' "$DATA/names.folded" >"$W/names-later.folded"
bs diff "$DATA/names.folded" "$W/names-later.folded" --folded --no-normalize -o -
check "diff pairs '<0.80.0> my_server' with '<0.99.0> my_server'" eval 'rc_is 0 &&
    grep -q "^<process> my_server;" "$W/out" && awk "\$(NF-1) != \$NF { exit 1 }" "$W/out"'
bs diff "$IN/fib18.folded" "$IN/fib18.folded" --folded -o -
check "diff of a profile with itself: equal columns, to stdout" eval 'rc_is 0 && [ -s "$W/out" ] && awk "\$(NF-1) != \$NF { exit 1 }" "$W/out"'
bs diff - "$IN/fib20.folded" --folded -o "$D/stdin.folded" <"$IN/fib18.folded"
check "diff reads BEFORE from standard input" eval 'rc_is 0 && cmp -s "$D/stdin.folded" "$D/norm.folded"'
bs diff "$IN/workers.folded" "$IN/sort.folded" --drop-sleep --exclude 'lists:rmerge' --folded -o "$D/filt.folded"
check "diff applies the filters" eval 'rc_is 0 && diff_folded_ok "$D/filt.folded" && ! grep -Eq "SLEEP|lists:rmerge" "$D/filt.folded"'
bs diff "$IN/fib18.folded" "$IN/fib20.folded" -o "$D/two.svg" -o "$D/two.folded" --title 'fib 18 -> 20'
check "diff: several outputs" eval 'rc_is 0 && xml_ok "$D/two.svg" && diff_folded_ok "$D/two.folded"'
if [ "$have_bspy" = 1 ]; then
    bs diff "$IN/fib18.bspy" "$IN/fib20.folded" -o "$D/mixed.svg"
    check "diff of a .bspy and a folded file" eval 'rc_is 0 && xml_ok "$D/mixed.svg"'
fi

E="$W/de"
mkdir -p "$E"
bs diff "$IN/fib18.folded" "$DATA/malformed.folded" -o "$E/x.svg"
check "diff malformed input: exit 3, no output" eval 'rc_is 3 && grep -q "malformed.folded:3:" "$W/err" && only_files "$E"'
bs diff "$IN/fib18.folded" -o "$E/x.svg"
check "diff with one input: exit 2" eval 'rc_is 2 && one_line_err && only_files "$E"'
bs diff "$IN/fib18.folded" "$IN/fib20.folded" -o "$E/x.html"
check "diff to an unsupported format: exit 2" eval 'rc_is 2 && one_line_err && only_files "$E"'
bs diff "$IN/fib18.folded" "$IN/fib20.folded" -o - 
check "diff -o - without --folded: exit 2" eval 'rc_is 2 && one_line_err'
bs diff "$IN/fib18.folded" "$IN/fib20.folded" -o "$E/x.svg" --nope
check "diff unknown option: exit 2" eval 'rc_is 2 && one_line_err && only_files "$E"'
bs diff "$IN/fib18.folded" "$IN/fib20.folded" -o "$W/no/such/dir/x.svg"
check "diff output directory missing: exit 1" eval 'rc_is 1 && one_line_err'

# --- outputs that are not regular files ---------------------------------------
# A temporary file renamed over a device node turned it into a regular file.
# Devices and FIFOs are written through; a directory is refused; a symbolic
# link to a file keeps being a link and its file is replaced. Only /dev/null
# is ever used as a device here.
S="$W/special"
mkdir -p "$S"
bs render "$IN/fib18.folded" --format svg -o /dev/null
check "render -o /dev/null: exit 0, /dev/null is still a character device, no temporary in /dev" \
    eval 'rc_is 0 && [ -c /dev/null ] && [ -z "$(ls -A /dev | grep "^null\.tmp")" ]'
mkfifo "$S/pipe"
timeout 30 cat "$S/pipe" >"$S/from_pipe.folded" &
reader=$!
bs render "$IN/fib18.folded" --format folded -o "$S/pipe"
render_rc=$rc
wait "$reader"
check "render -o FIFO: the bytes go through the pipe, which stays a FIFO" \
    eval '[ "$render_rc" -eq 0 ] && [ -p "$S/pipe" ] && cmp -s "$S/from_pipe.folded" "$IN/fib18.folded"'
mkdir "$S/dir.svg"
bs render "$IN/fib18.folded" -o "$S/dir.svg"
check "render -o DIRECTORY: exit 1, one line saying it is a directory, nothing left" \
    eval 'rc_is 1 && one_line_err && grep -q "Is a directory" "$W/err" && [ -d "$S/dir.svg" ] && [ -z "$(ls -A "$S/dir.svg")" ]'
echo old >"$S/real.folded"
ln -s real.folded "$S/link.folded"
bs render "$IN/fib18.folded" -o "$S/link.folded"
check "render -o SYMLINK: the link stays, the file it points to is replaced" \
    eval 'rc_is 0 && [ -L "$S/link.folded" ] && cmp -s "$S/real.folded" "$IN/fib18.folded"'
check "render to special targets: no temporary left" only_files "$S" dir.svg from_pipe.folded link.folded pipe real.folded

# --- durations need a unit ----------------------------------------------------
# "--duration 5" used to mean 5 ms. These fail while parsing the command
# line, before any node is looked for.
for args in "record --node a@nowhere --all -o x.svg --duration 5" \
    "run -o x.svg --duration 5 -e ok" \
    "record --node a@nowhere --all -o x.svg --mode sample --interval 10" \
    "record --node a@nowhere --all -o x.svg --lease 5000" \
    "top --node a@nowhere --interval 50" \
    "top --node a@nowhere --refresh 1000" \
    "dump --node a@nowhere --interval 200" \
    "dump --node a@nowhere --connect-timeout 3000"; do
    # shellcheck disable=SC2086
    bs $args
    check "a duration without a unit is a usage error: $args" eval 'rc_is 2 && one_line_err && grep -q "has no unit: write e.g. [0-9]*s or [0-9]*ms" "$W/err"'
done
bs record --node a@nowhere --cookie c --all -o x.svg --duration 1.5s --interval 5ms --lease 2s --connect-timeout 1s
check "durations with units still parse (the node is what is missing)" eval 'rc_is 4'
bs run -o x.svg --duration 5parsecs -e ok
check "a duration with an unknown unit: usage error" eval 'rc_is 2 && one_line_err && grep -q "bad --duration" "$W/err"'
for hz in 0 10001 9x; do
    bs top --node a@nowhere --hz "$hz"
    check "top --hz $hz: a usage error, before any node is looked for" \
        eval 'rc_is 2 && one_line_err && grep -q "bad --hz" "$W/err"'
done
bs top --help
check "top --help: names --hz and --no-cpu" eval 'rc_is 0 && grep -q -- "--hz N" "$W/out" && grep -q -- "--no-cpu" "$W/out"'

# --- convert: dbg trace-port files (its own file) -----------------------------
. "$HERE/convert.sh"

finish
