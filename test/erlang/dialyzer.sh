#!/bin/sh
# dialyzer.sh — dialyzer over beamspy's Erlang modules: the specs checked
# against the code (`make dialyzer'; not yet in make test: on OTP 25 it
# still reports warnings, some from OTP's own incomplete specs of
# erlang:trace_info/2).
#
# The PLT (erts, kernel, stdlib, runtime_tools, compiler) is built once per
# OTP release and kept outside the checkout, in $BEAMSPY_PLT_DIR (default
# $HOME/.cache/beamspy); later runs only check. Prints "ok - dialyzer" or
# dialyzer's warnings and "FAIL - dialyzer"; "SKIP dialyzer: <why>" when
# dialyzer is not installed (apt erlang-dialyzer). Exit status 0, 1 or 77.
root=$(cd "$(dirname "$0")/../.." && pwd)
command -v dialyzer >/dev/null 2>&1 || { echo "SKIP dialyzer: not installed (apt install erlang-dialyzer)"; exit 77; }
release=$(erl -noshell -eval 'io:format("~s", [erlang:system_info(otp_release)]), halt().')
dir=${BEAMSPY_PLT_DIR:-${HOME:-/tmp}/.cache/beamspy}
plt="$dir/otp$release.plt"
mkdir -p "$dir" || { echo "SKIP dialyzer: cannot create $dir"; exit 77; }
if ! dialyzer --check_plt --plt "$plt" >/dev/null 2>&1; then
    echo "dialyzer: building the PLT of OTP $release in $plt (once)"
    rm -f "$plt"
    if ! dialyzer --build_plt --output_plt "$plt.tmp" --apps erts kernel stdlib runtime_tools compiler \
        >"$dir/build.log" 2>&1 && [ -s "$plt.tmp" ]; then
        tail -20 "$dir/build.log"
        echo "FAIL - dialyzer: the PLT could not be built"
        exit 1
    fi
    mv "$plt.tmp" "$plt"
fi
out=$(dialyzer --no_check_plt --plt "$plt" "$root"/ebin/beamspy*.beam 2>&1)
if [ $? -eq 0 ]; then
    echo "ok - dialyzer: the specs of $(ls "$root"/ebin/beamspy*.beam | wc -l) modules agree with their code"
    exit 0
fi
echo "$out"
echo "FAIL - dialyzer"
exit 1
