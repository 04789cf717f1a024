#!/bin/sh
# deps.sh — makes sure the Debian packages beamspy needs are here.
# As root it installs what is missing; otherwise it prints the exact command.
set -e

PKGS="erlang-nox erlang-dev erlang-tools erlang-runtime-tools erlang-eunit erlang-edoc
erlang-common-test elixir gcc make libcmocka-dev libclang-rt-14-dev clang valgrind
rebar3 chromium python3 libxml2-utils tmux erlang-dialyzer libelf-dev libdw-dev erlang-src linux-perf
zlib1g-dev golang-go"

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done

# Node.js and npm (browser tests) may come from another vendor than Debian
# (nodesource bundles npm and conflicts with Debian's npm): ask for them only
# when the commands are missing.
command -v node >/dev/null 2>&1 || missing="$missing nodejs"
command -v npm >/dev/null 2>&1 || missing="$missing npm"

# debootstrap makes the chroots of the OTP 27/29 layers (test/otp/run.sh),
# which need root anyway: installed as root, never asked of anyone else.
if [ "$(id -u)" = "0" ] && ! command -v debootstrap >/dev/null 2>&1; then
    missing="$missing debootstrap"
fi

if [ -z "$missing" ]; then
    exit 0
fi

cmd="apt-get install -y --no-install-recommends$missing"
if [ "$(id -u)" = "0" ]; then
    echo "beamspy: installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
else
    echo "beamspy: missing Debian packages:$missing" >&2
    echo "beamspy: run as root:  $cmd" >&2
    exit 1
fi
