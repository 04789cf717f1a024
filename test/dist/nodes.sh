# nodes.sh — the Erlang nodes of the distribution layer, sourced by run.sh
# (and used by the check files it sources, seq_checks.sh, deadlocks.sh):
# starting a detached node and waiting until it is ready, talking to it with
# erl_call, stopping them all. Needs tag, cookie, host, build and erl_call
# set, and the array nodes (what cleanup_nodes halts).

# wait_until SECONDS COMMAND...: until COMMAND succeeds, at most SECONDS.
wait_until() {
    local secs=$1
    shift
    for _ in $(seq 1 $((secs * 10))); do
        "$@" && return 0
        sleep 0.1
    done
    return 1
}

node_name() { echo "${tag}_$1@$host"; }

# rpc SHORT EXPR: evaluates EXPR on the node, prints the result term.
rpc() {
    printf '%s\n' "$2" | "$erl_call" -sname "${tag}_$1" -c "$cookie" -e 2>/dev/null |
        sed -e 's/^{ok, *//' -e 's/}$//'
}

# is_true SHORT EXPR: EXPR is true on the node.
is_true() { [ "$(rpc "$1" "$2")" = true ]; }

# start_node_with SHORT EVAL READY [erl args...]: a detached node (with the
# layer's build folder on its path) evaluating EVAL at start; it is ready
# when the expression READY is true on it (waited for at most 30 s).
start_node_with() {
    local short=$1 eval=$2 ready=$3
    shift 3
    erl -sname "${tag}_$short" -setcookie "$cookie" -detached -noinput -pa "$build" "$@" -eval "$eval" ||
        return 1
    nodes+=("${tag}_$short")
    wait_until 30 is_true "$short" "$ready"
}

# nothing_left SHORT LEFTOVERS EXPECTED: what the function LEFTOVERS prints
# for the node is EXPECTED (nothing of beamspy left); else it says what is.
nothing_left() {
    local left
    left=$("$2" "$1")
    [ "$left" = "$3" ] && return 0
    echo "    left on $1: $left"
    return 1
}

os_pid() { rpc "$1" 'os:getpid().' | tr -d '"'; }

stop_node() {
    local p
    p=$(os_pid "$1")
    [ -n "$p" ] && kill -9 "$p" 2>/dev/null
}

cleanup_nodes() {
    for n in "${nodes[@]}"; do
        printf 'erlang:halt().\n' | "$erl_call" -sname "$n" -c "$cookie" -e >/dev/null 2>&1
    done
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
    tmux kill-session -t "${tag}_top" 2>/dev/null
    tmux kill-session -t "${tag}_rec" 2>/dev/null
}
