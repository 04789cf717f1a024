#!/bin/sh
# dialyzer.sh — dialyzer over beamspy's Erlang modules: the specs checked
# against the code. `make dialyzer' runs it alone; test/erlang/run.sh runs it
# as one check of the erlang layer.
#
# The PLT holds only the OTP applications beamspy calls: erts, kernel and
# stdlib (beam_lib, erl_scan and erl_parse are stdlib's; runtime_tools and
# compiler, which it never calls, would triple the time of a cold build).
# It is built once per OTP release and kept outside the checkout, in
# $BEAMSPY_PLT_DIR (default $HOME/.cache/beamspy), named by the release and
# the applications, so a change of either never reuses a stale one; later
# runs only check it. Checkouts that run this at once build it once (a lock
# beside it).
#
# Prints "ok - dialyzer: 0 warnings ..." or dialyzer's warnings and "FAIL -
# dialyzer: N warnings"; "SKIP dialyzer: <why>" when dialyzer is not
# installed (scripts/deps.sh installs erlang-dialyzer). Exit status 0, 1 or
# 77. On OTP 25, calls to the trace module (OTP 27+, the session backend
# of beamspy_backend) are listed as unknown functions, which is expected.
root=$(cd "$(dirname "$0")/../.." && pwd)
command -v dialyzer >/dev/null 2>&1 || { echo "SKIP dialyzer: not installed (apt install erlang-dialyzer; make deps does)"; exit 77; }
release=$(erl -noshell -eval 'io:format("~s", [erlang:system_info(otp_release)]), halt().')
apps="erts kernel stdlib"
dir=${BEAMSPY_PLT_DIR:-${HOME:-/tmp}/.cache/beamspy}
plt="$dir/otp$release-$(echo "$apps" | tr ' ' '-').plt"
mkdir -p "$dir" || { echo "SKIP dialyzer: cannot create $dir"; exit 77; }
start=$(date +%s)

ensure_plt() {
    [ -s "$plt" ] && dialyzer --check_plt --plt "$plt" >/dev/null 2>&1 && return 0
    echo "dialyzer: building the PLT of OTP $release ($apps) in $plt (once)"
    rm -f "$plt"
    # shellcheck disable=SC2086
    if ! dialyzer --build_plt --output_plt "$plt.$$" --apps $apps >"$dir/build.log" 2>&1 ||
        [ ! -s "$plt.$$" ]; then
        rm -f "$plt.$$"
        tail -20 "$dir/build.log"
        return 1
    fi
    mv "$plt.$$" "$plt"
    echo "dialyzer: PLT built in $(($(date +%s) - start)) s"
}

if command -v flock >/dev/null 2>&1; then
    exec 8>"$plt.lock"
    flock 8
fi
if ! ensure_plt; then
    echo "FAIL - dialyzer: the PLT could not be built"
    exit 1
fi
exec 8>&-

beams=$(ls "$root"/ebin/beamspy*.beam)
n=$(echo "$beams" | wc -l)
# shellcheck disable=SC2086
out=$(dialyzer --no_check_plt --plt "$plt" $beams 2>&1)
rc=$?
took=$(($(date +%s) - start))
if [ "$rc" -eq 0 ]; then
    echo "ok - dialyzer: 0 warnings in $n modules (OTP $release, $took s)"
    exit 0
fi
echo "$out"
warnings=$(echo "$out" | grep -c '^[A-Za-z0-9_.]*\.erl:[0-9]')
echo "FAIL - dialyzer: $warnings warnings in $n modules (OTP $release, exit $rc)"
exit 1
