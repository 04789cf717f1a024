#!/bin/sh
# test/otp/run.sh — runs beamspy's tests on another OTP release, in a Debian
# chroot made with debootstrap:
#   trixie  Debian 13: OTP 27, Elixir 1.18
#   sid     Debian unstable: OTP 29, Elixir 1.20 (at the time of writing)
# The chroot is cached outside the checkout (BEAMSPY_OTP_CACHE, default
# /var/tmp/beamspy-otp/<suite>), reused when it is complete and rebuilt when
# it is missing or broken. Each run copies this checkout into it, builds it
# with the project's own make (so -Werror applies there too) and runs the
# erlang, elixir, cli and dist layers inside, with an epmd of the chroot on
# its own port (ERL_EPMD_PORT) so that the host's epmd is left alone. Then
# the host's bin/beamspy (the host's OTP) must refuse a node of the chroot's
# release with exit 7, naming both releases, and a record over a host node
# and that node must record the host's, name the other as left out (exit
# 11) and leave nothing on the host's node. The c, fuzz and browser layers
# are not repeated: they do not depend on the OTP release; inside, the
# layers see BEAMSPY_OTP_REPEAT=1 and leave out their checks that do not
# either (the Mix/rebar3 packaging projects, dist's no-files checks), to
# keep make test near 20 minutes.
#
# Usage: test/otp/run.sh trixie|sid
# Needs root (chroot, mount) and debootstrap (scripts/deps.sh installs it);
# exits 77 with a "SKIP" line when it cannot run here. /proc and /dev/pts
# are mounted in the chroot for the run and always unmounted afterwards.
# Environment: BEAMSPY_OTP_CACHE, OTP_LAYERS (default "erlang elixir cli
# dist").
# The last line is `LAYER otp<release>: <passed> passed, <failed> failed`
# (the build, the inner layers' counts and the mixed-release checks).
set -u

suite=${1:-}
case "$suite" in
    trixie) release=27; port=4427 ;;
    sid) release=29; port=4429 ;;
    *) echo "usage: $0 trixie|sid" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${BEAMSPY_OTP_CACHE:-/var/tmp/beamspy-otp}
dir="$cache/$suite"
layers=${OTP_LAYERS:-erlang elixir cli dist}
# What the layers need inside; a chroot made with another list is rebuilt.
pkgs="erlang-base erlang-dev erlang-tools erlang-runtime-tools erlang-eunit
erlang-edoc erlang-syntax-tools elixir gcc make libc6-dev zlib1g-dev libdw-dev libelf-dev python3
libxml2-utils procps tmux hostname"
passed=0
failed=0
start=$(date +%s)

skip() {
    echo "SKIP otp$release: $1"
    exit 77
}
ok() {
    echo "ok - otp$release: $1"
    passed=$((passed + 1))
}
fail() {
    echo "FAIL - otp$release: $1"
    failed=$((failed + 1))
}
finish() {
    echo "otp$release layer took $(($(date +%s) - start)) s"
    echo "LAYER otp$release: $passed passed, $failed failed"
    [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
    exit $?
}

[ "$(id -u)" = 0 ] || skip "needs root (chroot and mount)"
command -v debootstrap >/dev/null 2>&1 || skip "debootstrap is not installed (scripts/deps.sh installs it as root)"
mkdir -p "$cache" || skip "cannot create $cache"

# One run per chroot at a time (another checkout may run this layer too).
exec 9>"$cache/$suite.lock"
flock 9

# Mounts are undone and the processes left in the chroot (its epmd, tmux,
# nodes) are ended on every exit: they all run with the chroot as their root
# directory, which only this run uses while it holds the lock.
mounts=""
kill_inside() { # DIR
    real=$(readlink -f "$1")
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/root" 2>/dev/null)" = "$real" ] && kill -9 "${p#/proc/}" 2>/dev/null
    done
    return 0
}
unmount_all() {
    for m in $mounts; do
        umount "$m" 2>/dev/null || umount -l "$m"
    done
    mounts=""
}
cleanup() {
    [ -d "$dir" ] && kill_inside "$dir"
    [ -d "$dir.new" ] && kill_inside "$dir.new"
    unmount_all
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# mount_in DIR: /proc and /dev/pts (tmux needs a pty) inside DIR. Unmounted
# in reverse order.
mount_in() {
    mount -t proc proc "$1/proc" || return 1
    mounts="$1/proc $mounts"
    mount --bind /dev/pts "$1/dev/pts" || return 1
    mounts="$1/dev/pts $mounts"
}

# A path under DIR must never be removed while something is mounted there.
mounted_under() {
    real=$(readlink -f "$1")
    grep -q " $real/" /proc/mounts
}

ready() {
    [ -f "$dir/.beamspy-ready" ] && [ "$(cat "$dir/.beamspy-ready")" = "$pkgs" ] &&
        chroot "$dir" erl -noshell -eval 'halt().' >/dev/null 2>&1 &&
        chroot "$dir" elixir -e ':ok' >/dev/null 2>&1
}

prepare() {
    ready && return 0
    echo "otp$release: making the $suite chroot in $dir (debootstrap, apt-get)"
    for d in "$dir" "$dir.new"; do
        if [ -d "$d" ] && mounted_under "$d"; then
            echo "something is still mounted under $d" >&2
            return 1
        fi
    done
    rm -rf "$dir" "$dir.new"
    log="$cache/$suite.log"
    if ! debootstrap --variant=minbase "$suite" "$dir.new" >"$log" 2>&1; then
        tail -20 "$log"
        return 1
    fi
    mount_in "$dir.new" || skip "cannot mount /proc or /dev/pts in a chroot here"
    # shellcheck disable=SC2086
    chroot "$dir.new" /usr/bin/env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends $pkgs >>"$log" 2>&1 &&
        chroot "$dir.new" apt-get clean >>"$log" 2>&1
    rc=$?
    kill_inside "$dir.new"
    unmount_all
    if [ "$rc" -ne 0 ]; then
        tail -20 "$log"
        return 1
    fi
    printf '%s' "$pkgs" >"$dir.new/.beamspy-ready"
    mv "$dir.new" "$dir"
    ready
}

if ! prepare; then
    fail "chroot $suite could not be made"
    finish
fi

# The actual release of the chroot (sid moves on): the layer is named by it.
got=$(chroot "$dir" erl -noshell -eval 'io:format("~s", [erlang:system_info(otp_release)]), halt().')
host_rel=$(erl -noshell -eval 'io:format("~s", [erlang:system_info(otp_release)]), halt().')
[ -n "$got" ] && release=$got

mount_in "$dir" || skip "cannot mount /proc or /dev/pts in the chroot"
# The host's names resolve the same way inside (-sname, hostname -s).
cp /etc/hosts "$dir/etc/hosts"

# in_chroot COMMAND: runs COMMAND with sh in the checkout's copy, with a clean
# environment and the chroot's epmd port.
in_chroot() {
    chroot "$dir" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=xterm \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        ERL_EPMD_PORT=$port BEAMSPY_OTP_REPEAT=1 /bin/sh -c "cd /work/beamspy && $1"
}

# A fresh copy of the checkout (what git tracks, plus new files it does not
# ignore), without the host's build outputs.
# The chroot's /tmp is emptied too: what the last run's tests left there
# would pile up in the cache.
rm -rf "$dir/work"
find "$dir/tmp" -mindepth 1 -delete
mkdir -p "$dir/work/beamspy"
if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
    (cd "$root" && git ls-files -z -co --exclude-standard | tar --null -T - -cf -)
else
    (cd "$root" && tar --exclude=./ebin --exclude=./priv --exclude=./bin --exclude=./build \
        --exclude=./_build --exclude='./test/*/build' --exclude=node_modules -cf - .)
fi | tar -xf - -C "$dir/work/beamspy"

in_chroot "epmd -daemon"

if in_chroot "make all" >"$dir/work/make.log" 2>&1; then
    ok "make all (-Werror) on OTP $release"
else
    cat "$dir/work/make.log"
    fail "make all (-Werror) on OTP $release"
    finish
fi

for l in $layers; do
    echo "=== otp$release: $l ==="
    in_chroot "timeout 1500 test/$l/run.sh" >"$dir/work/$l.log" 2>&1
    cat "$dir/work/$l.log"
    line=$(grep '^LAYER ' "$dir/work/$l.log" | tail -1)
    if [ -z "$line" ]; then
        fail "layer $l did not report"
        continue
    fi
    p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed.*/\1/')
    f=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed.*/\2/')
    passed=$((passed + p))
    failed=$((failed + f))
done

# wait_registered NAME: until the chroot's epmd knows node NAME (30 s at most).
wait_registered() {
    local i=0
    until in_chroot "epmd -names" 2>/dev/null | grep -q "name $1 "; do
        i=$((i + 1))
        [ "$i" -gt 300 ] && break
        sleep 0.1
    done
}

# Mixed releases: the host's tool carries beamspy built for the host's OTP;
# a node of the chroot's release must be refused with exit 7, and the message
# must name both releases.
if [ "$host_rel" = "$release" ]; then
    echo "otp$release: the host runs the same release, no mixed-release check"
elif [ ! -x "$root/bin/beamspy" ]; then
    fail "mixed releases: the host's bin/beamspy is not built"
else
    name="bsotp$$"
    cookie="bs$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
    cookie_file="$dir/work/cookie"
    (umask 077 && printf '%s' "$cookie" >"$cookie_file")
    in_chroot "erl -sname $name -setcookie $cookie -detached -noinput"
    wait_registered "$name"
    ERL_EPMD_PORT=$port "$root/bin/beamspy" dump --node "$name@$(hostname -s)" \
        --cookie-file "$cookie_file" >"$dir/work/mixed.out" 2>"$dir/work/mixed.err"
    rc=$?
    cat "$dir/work/mixed.err"
    if [ "$rc" -eq 7 ]; then ok "mixed releases: OTP $host_rel tool refuses an OTP $release node with exit 7"
    else fail "mixed releases: exit $rc, not 7"; fi
    if grep -qw "OTP $release" "$dir/work/mixed.err" && grep -qw "OTP $host_rel" "$dir/work/mixed.err"; then
        ok "mixed releases: the message names OTP $release and OTP $host_rel"
    else
        fail "mixed releases: the message does not name both releases"
    fi
    # A cluster of a host node and the chroot's: the node of the other
    # release is said and left out, the host's is recorded (exit 11), and
    # nothing of beamspy is left on the host's node.
    host_node="bsmixh$$"
    erl_call=$(ls "$(erl -noshell -eval 'io:format("~s", [code:root_dir()]), halt().')"/lib/erl_interface-*/bin/erl_call |
        head -1)
    ERL_EPMD_PORT=$port erl -sname "$host_node" -setcookie "$cookie" -detached -noinput \
        -eval 'spawn(fun F() -> _ = lists:sort([rand:uniform(1000) || _ <- lists:seq(1, 200)]), F() end)'
    wait_registered "$host_node"
    ERL_EPMD_PORT=$port "$root/bin/beamspy" record --node "$host_node@$(hostname -s)" \
        --node "$name@$(hostname -s)" --all --mode sample --duration 1s -o "$dir/work/mixed.folded" \
        --cookie-file "$cookie_file" 2>"$dir/work/mixed_cluster.err"
    rc=$?
    cat "$dir/work/mixed_cluster.err"
    if [ "$rc" -eq 11 ]; then ok "mixed releases, a cluster: exit 11 (partial)"
    else fail "mixed releases, a cluster: exit $rc, not 11"; fi
    if grep -q "left out: $name@$(hostname -s) (cannot run beamspy, exit 7)" "$dir/work/mixed_cluster.err"; then
        ok "mixed releases, a cluster: the OTP $release node is said and left out"
    else
        fail "mixed releases, a cluster: the OTP $release node is not named as left out"
    fi
    if grep -q "^$host_node@" "$dir/work/mixed.folded" 2>/dev/null; then
        ok "mixed releases, a cluster: the OTP $host_rel node is recorded"
    else
        fail "mixed releases, a cluster: the OTP $host_rel node is not in the profile"
    fi
    left=$(printf '%s\n' '[M || {M, _} <- code:all_loaded(), lists:prefix("beamspy", atom_to_list(M))].' |
        ERL_EPMD_PORT=$port "$erl_call" -sname "$host_node" -c "$cookie" -e 2>/dev/null)
    if [ "$left" = "{ok, []}" ]; then ok "mixed releases, a cluster: nothing of beamspy left on the OTP $host_rel node"
    else fail "mixed releases, a cluster: left on the OTP $host_rel node: $left"; fi
    printf 'erlang:halt().\n' | ERL_EPMD_PORT=$port "$erl_call" -sname "$host_node" -c "$cookie" -e >/dev/null 2>&1
    # The chroot's node (like everything else in the chroot) is ended by cleanup.
fi

finish
