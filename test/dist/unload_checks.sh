# unload_checks.sh — sourced by run.sh (needs its node n1 and helpers): the
# tool removes the code it delivered only when no beamspy job runs on the
# node, whoever started the job. A capture started through erpc while
# `record --mode sample' ran was once killed by the tool's purge when the
# record ended (undef in its owner and watchdog), and the node kept the
# capture's trace patterns, its meta pattern and on_load traced.

# What a capture of bs_dist_wl:wait_for_go/0 (called by nobody once the
# node runs) or a session would leave: "meta=M on_load=O local=N old=K"
# (N functions of lists with a call pattern, K modules with old code).
capture_leftovers() {
    rpc "$1" '
        {meta, Meta} = erlang:trace_info({bs_dist_wl, wait_for_go, 0}, meta),
        {traced, OnLoad} = erlang:trace_info(on_load, traced),
        Local = [F || {F, A} <- lists:module_info(exports),
                      element(2, erlang:trace_info({lists, F, A}, traced)) =/= false],
        Old = [M || M <- erlang:loaded(), erlang:check_old_code(M)],
        lists:flatten(io_lib:format("meta=~w on_load=~w local=~w old=~w",
                                    [Meta, OnLoad, length(Local), length(Old)])).' |
        tr -d '"'
}

capture_clean() { nothing_left "$1" capture_leftovers "meta=false on_load=false local=0 old=0"; }

# wait_capture_clean SHORT SECONDS: the old code is purged by a process the
# unload leaves behind, softly and with backoff (20 ms, doubling up to 1 s),
# once the processes that ran it (the waiter itself, to begin with) have
# left it: until nothing is left, at most SECONDS; on failure the modules
# whose old code is still there are printed.
wait_capture_clean() {
    wait_until "$2" capture_clean "$1" >/dev/null && return 0
    echo "    old code on $1: $(rpc "$1" '[M || M <- erlang:loaded(), erlang:check_old_code(M)].')"
    capture_clean "$1"
}

# unload_under_job WHAT START RUNNING: `record --mode sample' delivers
# beamspy to n1; while it runs, a process there (registered as
# bsd_unload_holder) evaluates START, keeps its result as R (also in the
# application env bsd_unload/result) and waits for a message `stop'. Once
# RUNNING (an expression) is true on n1, the record is stopped with Ctrl-C
# (its --duration is only a bound), so the tool always ends while the other
# job runs, however long that job took to start on a loaded machine;
# RUNNING must still be true after it.
unload_under_job() {
    local what=$1 start=$2 running=$3
    rpc n1 'application:unset_env(bsd_unload, result), application:unset_env(bsd_unload, stopped),
            [exit(H, kill) || H <- [erlang:whereis(bsd_unload_holder)], is_pid(H)], ok.' >/dev/null
    "$cli" record --node "$n1" --all --mode sample --duration 120s -o "$out/under_$what.folded" \
        --cookie-file "$cookie_file" 2>"$out/under_$what.err" &
    local rec=$!
    wait_until 60 is_true n1 'erlang:function_exported(beamspy, capture, 3).'
    rpc n1 "spawn(fun() ->
                      register(bsd_unload_holder, self()),
                      R = (catch ($start)),
                      application:set_env(bsd_unload, result, R),
                      receive stop -> application:set_env(bsd_unload, stopped, catch beamspy:stop(element(2, R), #{})) end
              end), ok." >/dev/null
    wait_until 60 is_true n1 "$running" ||
        echo "    $what: not seen running: result $(rpc n1 'application:get_env(bsd_unload, result).'), holder at $(rpc n1 'case erlang:whereis(bsd_unload_holder) of undefined -> gone; H -> erlang:process_info(H, current_stacktrace) end.')"
    kill -INT "$rec"
    wait "$rec"
    local rc=$?
    check "$what under a tool's job: the tool ends normally" [ $rc -eq 0 ]
    check "$what under a tool's job: the tool says that the code stays for the other job" \
        grep -q "another beamspy job still runs on $n1" "$out/under_$what.err"
    check "$what under a tool's job: still running once the tool has gone (its code kept)" is_true n1 "$running"
}

echo "--- the tool's code removal waits for every job"
# A capture through erpc whose function nobody calls: it ends on its
# timeout (6 s), after the tool.
unload_under_job capture \
    'beamspy:capture({bs_dist_wl, wait_for_go, 0}, 100000, #{timeout => 6000, quiet => true})' \
    'is_pid(erlang:whereis(beamspy_active_session)).'
wait_until 30 is_true n1 'application:get_env(bsd_unload, result) =/= undefined.'
check "capture under a tool's job: it ends as it would alone (no calls captured), not killed" \
    is_true n1 'case application:get_env(bsd_unload, result) of {ok, {error, {no_calls_captured, _}}} -> true; _ -> false end.'
check "capture under a tool's job: once it has ended the last job out removes beamspy's code" wait_clean n1 15
check "capture under a tool's job: no trace pattern, meta pattern, on_load or old code left" wait_capture_clean n1 20

# A live session started through erpc, stopped by its caller after the
# tool ended.
unload_under_job session \
    "beamspy:start(erlang:whereis(busy), #{quiet => true, max_duration => 600000, output => \"$out/under_session_live.folded\"})" \
    'erlang:function_exported(beamspy, sessions, 0) andalso beamspy:sessions() =/= [].'
rpc n1 'bsd_unload_holder ! stop, ok.' >/dev/null
wait_until 20 is_true n1 'application:get_env(bsd_unload, stopped) =/= undefined.'
check "session under a tool's job: stops as it would alone" \
    is_true n1 'case application:get_env(bsd_unload, stopped) of {ok, {ok, _}} -> true; _ -> false end.'
check "session under a tool's job: once it has stopped the last job out removes beamspy's code" wait_clean n1 15
check "session under a tool's job: no trace pattern or flag, no old code left" wait_capture_clean n1 20

echo "--- code removed as the tool attaches: delivered again"
# The job of a tool that went away removes beamspy's code when it ends; a
# tool attaching meanwhile found the code there (same version: nothing to
# deliver) and its start then met the removal: refused while it held the
# node's lock, or undef once the modules were deleted. Deterministic here:
# beamspy is left on n1 (--keep), then a process takes the unloading lock
# and keeps it until a job has been refused (it sees check_start called,
# traced); the tool must wait for the lock, deliver again and record.
bs record --node "$n1" --all --mode sample --duration 1s --keep -o "$out/keep_first.folded" \
    >/dev/null 2>"$out/keep_first.err"
check "code removed as the tool attaches: a first record with --keep leaves beamspy on n1" \
    is_true n1 'erlang:module_loaded(beamspy_jobs).'
rpc n1 'application:unset_env(bsd_unload, refused_seen), Parent = self(),
        H = spawn(fun() ->
                      1 = erlang:trace_pattern({beamspy_jobs, check_start, 0}, true, [local]),
                      erlang:trace(new_processes, true, [call]),
                      true = register(beamspy_unloading, self()),
                      Parent ! {held, self()},
                      Seen = receive {trace, _, call, {beamspy_jobs, check_start, []}} -> true
                             after 120000 -> false end,
                      erlang:trace(all, false, [call]),
                      erlang:trace_pattern({beamspy_jobs, check_start, 0}, false, [local]),
                      application:set_env(bsd_unload, refused_seen, Seen)
                  end),
        receive {held, H} -> ok end.' >/dev/null
bs record --node "$n1" --all --mode sample --duration 1s -o "$out/again.folded" 2>"$out/again.err"
rc=$?
check "code removed as the tool attaches: the record succeeds" [ $rc -eq 0 ]
check "code removed as the tool attaches: a job was refused under the lock first" \
    is_true n1 'application:get_env(bsd_unload, refused_seen) =:= {ok, true}.'
check "code removed as the tool attaches: the tool says it delivers again" \
    grep -q "beamspy's code was being removed there.*delivering it again" "$out/again.err"
check "code removed as the tool attaches: a profile is written" [ -s "$out/again.folded" ]
rpc n1 'beamspy_agent:release(beamspy_jobs:loaded_modules()).' >/dev/null
check "code removed as the tool attaches: nothing left on n1 once released" wait_clean n1 15
