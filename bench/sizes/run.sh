#!/usr/bin/env bash
# bench/sizes/run.sh — output sizes before and after the size controls
# (collapse_recursion => all, per-format timeline caps), on three real runs:
#   compiler   compile:file/2 of src/beamspy_opts.erl (indirect recursion)
#   module40   compile:file/2 of a generated 40-function module
#   wholevm    `beamspy run --duration 2s` of a VM compiling modules and
#              decoding JSON-like terms in 4 processes (every process)
# Each run is recorded once into a .bspy (the whole profile, timeline of up
# to 1,000,000 calls), then rendered:
#   before   no collapse, --timeline-cap none --full (everything)
#   default  today's defaults (timeline caps per format; recursion folded
#            in files projected above 200 MB, size_limit.h)
#   all      defaults + --collapse-recursion=all
# and each size is printed with the projection beamspy made before writing
# (a warning on stderr when above 100 MB). The caps only touch speedscope
# and Chrome trace, so the other formats' "default" is "before"; perf
# script is only written collapsed (uncollapsed it is 4.8 GB for the
# compiler). Files are deleted as soon as measured; recordings already in
# WORKDIR are reused. Prints a Markdown table (docs/benchmarks.md, "Output sizes").
# Usage: bench/sizes/run.sh [WORKDIR]   (default: a temporary directory)
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
W="${1:-$(mktemp -d)}"
mkdir -p "$W"
B="$root/bin/beamspy"
make -s -C "$root" all >/dev/null || exit 2
erlc -o "$W" "$root/bench/bench_gen_module.erl" || exit 2
erl -noshell -pa "$W" -eval "bench_gen_module:write(\"$W/gen40.erl\", gen40, 40), halt()." || exit 2

record() { # NAME ERLANG-EXPR: records EXPR through the API into $W/NAME.bspy (kept if there)
    [ -s "$W/$1.bspy" ] && return 0
    erl -noshell -pa "$root/ebin" -eval "
        {ok, _} = application:ensure_all_started(compiler),
        _ = beamspy:apply(fun() -> $2 end, #{output => \"$W/$1.bspy\", quiet => true, timeline => true}),
        halt()." || exit 1
}

record compiler "compile:file(\"$root/src/beamspy_opts.erl\", [binary, return_errors])"
record module40 "compile:file(\"$W/gen40.erl\", [binary, return_errors])"
# Whole VM for 2 s: 4 processes compiling and decoding, plus the VM's own.
[ -s "$W/wholevm.bspy" ] || "$B" run --duration 2s -o "$W/wholevm.bspy" -e "
    Json = fun Dec(<<\"[\", R/binary>>, Acc) -> Dec(R, [[] | Acc]);
               Dec(<<\"]\", R/binary>>, [H, P | Acc]) -> Dec(R, [[lists:reverse(H) | P] | Acc]);
               Dec(<<C, R/binary>>, [H | Acc]) when C >= \$0, C =< \$9 -> Dec(R, [[C - \$0 | H] | Acc]);
               Dec(<<_, R/binary>>, Acc) -> Dec(R, Acc);
               Dec(<<>>, [H]) -> H end,
    Doc = iolist_to_binary([\"[\", lists:duplicate(2000, \"[1,2,[3,4,[5]]],\"), \"]\"]),
    [spawn(fun W() -> _ = compile:file(\"$W/gen40.erl\", [binary]), _ = Json(Doc, [[]]), W() end) || _ <- [1, 2, 3, 4]],
    timer:sleep(5000)" >/dev/null 2>"$W/wholevm.err" || { cat "$W/wholevm.err"; exit 1; }

projected() { # STDERR-FILE: the projection in the warning, if any
    grep -o 'about [0-9.]* [kMG]B' "$1" | head -1 | sed 's/about //'
}

mb() { awk -v b="$1" 'BEGIN { printf "%.2f MB", b / 1e6 }'; }

echo "| run | format | before (no collapse, no cap) | default (caps) | collapse_recursion => all |"
echo "|---|---|---|---|---|"
for run in compiler module40 wholevm; do
    for ext in folded speedscope.json trace.json svg html perf.txt; do
        cells=()
        for variant in before default all; do
            out="$W/$run.$variant.$ext"
            case $variant in
                before) [ "$ext" = perf.txt ] && { cells+=("(not written: GBs)"); continue; }
                        flags=(--timeline-cap none --full) ;;
                default) case $ext in speedscope.json|trace.json|folded|perf.txt) ;; *) cells+=("= before"); continue ;; esac
                         flags=() ;;
                all) flags=(--collapse-recursion=all) ;;
            esac
            BEAMSPY_SIZE_WARN_BYTES=1 "$B" render "$W/$run.bspy" "${flags[@]}" -o "$out" 2>"$W/err" || { cells+=("error"); continue; }
            size=$(stat -c %s "$out")
            capped=$(grep -o 'capped at [0-9]* calls[^(]*: [0-9]* of [0-9]*' "$W/err" | head -1 | sed 's/.*: \([0-9]*\) of \([0-9]*\)/, \1 of \2 calls left out/')
            cells+=("$(mb "$size") (projected $(projected "$W/err"))$capped")
            rm -f "$out"
        done
        echo "| $run | $ext | ${cells[0]} | ${cells[1]} | ${cells[2]} |"
    done
done
echo
echo "(recorded profiles: $(for r in compiler module40 wholevm; do printf '%s %s; ' "$r" "$(mb "$(stat -c %s "$W/$r.bspy")")"; done))"
