%%% @doc What beamspy runs on this node, as unloading its code must know it.
%%%
%%% Removing a module kills every process still running it (a purge) and
%%% leaves every later call of it `undef': a capture's owner and its
%%% watchdog then die without removing the trace patterns they set. So
%%% code is removed only while no beamspy job runs, and no job starts while
%%% code is being removed:
%%% <ul>
%%% <li>whoever unloads first registers the name `beamspy_unloading' (one
%%%   at a time: a second unload is told `{busy, {unloading, Node}}'), then
%%%   lists the jobs ({@link running/3});</li>
%%% <li>every job process (session and capture owners, their watchdogs,
%%%   seq collectors, telemetry recorders, samplers, top, the command-line
%%%   tool's jobs) is spawned with a beamspy function as its initial call
%%%   (proc_lib's: in its dictionary before any code of its own runs; not a
%%%   fun, whose initial call is erlang:apply/2), so it is in that list
%%%   before it looks for the name, which it does before it sets anything
%%%   ({@link check_start/0}).</li>
%%% </ul>
%%% Either the unloader sees the job or the job sees the unloader (each
%%% makes itself visible before it looks at the other). A job that has
%%% handed back its result marks itself done ({@link mark_done/0}): it is
%%% waited for (it is exiting), not counted.
%%%
%%% Deleted code becomes old code, which a purge removes. A purge never
%%% kills here: old code is purged softly once no process runs it (a plain
%%% call of beamspy's API in progress, or the unloader itself, leaves it in
%%% its own time), by a process that runs only OTP code, since a process of
%%% beamspy's code would hold what it purges ({@link purger/2}).
-module(beamspy_jobs).

-export([check_start/0, init_or_refuse/0, mark_done/0, lock/0, running/3]).
-export([loaded_modules/0, waiter/0, set_waiter/1, stop_waiter/0, purger/2]).

-define(UNLOADING, beamspy_unloading).
-define(DONE, '$beamspy_job_done').
%% The process that unloads once the last job has ended (beamspy_agent's),
%% in the `beamspy' application environment (not a registered name: it
%% takes the lock, which is one).
-define(WAITER, unload_waiter).

%% The purging loop, evaluated by erl_eval (OTP's code): purges Ms softly,
%% waiting 20 ms, then twice as long each time up to 1 s, until Deadline
%% (monotonic ms); what is left then stays, with a warning in the node's log.
-define(PURGER,
        "fun Purge([], _, _) -> ok;"
        "    Purge(Ms, Wait, Deadline) ->"
        "        case [M || M <- Ms, not code:soft_purge(M)] of"
        "            [] -> ok;"
        "            Left ->"
        "                case erlang:monotonic_time(millisecond) + Wait > Deadline of"
        "                    true ->"
        "                        logger:warning(\"beamspy: the old code of ~w is left on this node: processes "
        "still run it (code:purge/1 removes it, killing them)\", [Left]);"
        "                    false ->"
        "                        receive after Wait -> ok end,"
        "                        Purge(Left, min(2 * Wait, 1000), Deadline)"
        "                end"
        "        end "
        "end").

-type job() :: {atom(), pid()}.
-export_type([job/0]).

%% @doc In a job process, before it sets anything: refused while beamspy's
%% code is being removed from this node.
-spec check_start() -> ok | {error, {busy, {unloading, node()}}}.
check_start() ->
    case whereis(?UNLOADING) of
        undefined -> ok;
        _ -> {error, {busy, {unloading, node()}}}
    end.

%% @doc In a job process started with `proc_lib:start*': returns `ok', or,
%% while beamspy's code is being removed, acknowledges the start with the
%% refusal ({@link check_start/0}) and exits normally.
-spec init_or_refuse() -> ok.
init_or_refuse() ->
    case check_start() of
        ok -> ok;
        {error, _} = Refused -> proc_lib:init_ack(Refused), exit(normal)
    end.

%% @doc In a job process that has handed back its result and is about to
%% exit: an unload waits for it rather than refusing.
-spec mark_done() -> ok.
mark_done() ->
    put(?DONE, true),
    ok.

%% @doc Takes the unloading lock for the calling process: the registered
%% name `beamspy_unloading', released with `unregister/1' (a BIF: this
%% module may be deleted by then) or when the process exits.
-spec lock() -> ok | {error, {busy, {unloading, node()}}}.
lock() ->
    try register(?UNLOADING, self()) of
        true -> ok
    catch
        error:badarg -> {error, {busy, {unloading, node()}}}
    end.

%% @doc The jobs running code of Modules on this node, but the processes of
%% Exclude: `{Kind, Pid}' with Kind `session', `capture', `seq',
%% `telemetry', `sampler', `top', `cli_job', `watchdog', `calibration', or
%% the module a process is running (a plain call of beamspy's API in
%% progress, not a job). Jobs that marked themselves done, watchdogs whose
%% owner is done, and (when no job runs) plain calls are waited for, at
%% most WaitMs in all; those still there then are listed.
-spec running([module()], [pid()], non_neg_integer()) -> [job()].
running(Modules, Exclude, WaitMs) ->
    Deadline = erlang:monotonic_time(millisecond) + WaitMs,
    Found = [{Class, Kind, P} || P <- erlang:processes(), not lists:member(P, Exclude),
                                 {Class, Kind} <- [classify(P, Modules)]],
    Jobs = [{Kind, P} || {job, Kind, P} <- Found],
    Calls = [{M, P} || {call, M, P} <- Found],
    Pids = [P || {_, P} <- Jobs],
    {Ending, Running} = lists:partition(fun(J) -> ending(J, Pids) end, Jobs),
    Stayed = [J || {_, P} = J <- Ending, not exited(P, Deadline)],
    InCall = case Running of
                 [] -> [C || {_, P} = C <- Calls, not left_code(P, Modules, Deadline)];
                 _ -> Calls
             end,
    Running ++ Stayed ++ InCall.

%% @doc Every beamspy module loaded on this node: a job may run a module
%% the node had already and still need the ones delivered.
-spec loaded_modules() -> [module()].
loaded_modules() ->
    [M || {M, _} <- code:all_loaded(), lists:prefix("beamspy", atom_to_list(M))].

%% @doc Ends the process waiting for the last job to unload (its code is
%% being removed by the caller, who holds the lock: it has nothing left to
%% do and would hold the old code).
-spec stop_waiter() -> ok.
stop_waiter() ->
    case waiter() of
        undefined ->
            ok;
        W ->
            Mon = erlang:monitor(process, W),
            exit(W, kill),
            receive {'DOWN', Mon, process, W, _} -> ok end,
            application:unset_env(beamspy, ?WAITER)
    end.

%% @doc The process waiting for the last job to unload, if there is one.
%% Set and read holding the lock.
-spec waiter() -> pid() | undefined.
waiter() ->
    case application:get_env(beamspy, ?WAITER) of
        {ok, W} when is_pid(W) ->
            case is_process_alive(W) of
                true -> W;
                false -> undefined
            end;
        _ ->
            undefined
    end.

%% @doc Notes the process waiting for the last job (`undefined': none).
-spec set_waiter(pid() | undefined) -> ok.
set_waiter(undefined) ->
    application:unset_env(beamspy, ?WAITER);
set_waiter(W) ->
    application:set_env(beamspy, ?WAITER, W).

%% @doc The expressions (and their bindings) that spawn a process purging
%% the old code of Modules once no process runs it, trying for at most
%% MaxMs; for `erl_eval:exprs/2' (OTP's code: beamspy's, this module's
%% included, may be deleted by the time they are evaluated, here or on
%% another node). The process runs only OTP code.
-spec purger([module()], non_neg_integer()) -> {erl_eval:expression_list(), erl_eval:binding_struct()}.
purger(Modules, MaxMs) ->
    Src = "Purge = " ++ ?PURGER ++ ", "
        "Deadline = erlang:monotonic_time(millisecond) + MaxMs, "
        "erlang:spawn(fun() -> Purge(Modules, 20, Deadline) end).",
    {ok, Tokens, _} = erl_scan:string(Src),
    {ok, Exprs} = erl_parse:parse_exprs(Tokens),
    {Exprs, erl_eval:add_binding('MaxMs', MaxMs, erl_eval:add_binding('Modules', Modules, erl_eval:new_bindings()))}.

%%% ---------------------------------------------------------------------

%% What a process is: a job, from the code it was spawned with (proc_lib's
%% processes keep theirs in the dictionary); else a plain call of beamspy's
%% API in progress (`{call, Module}'), from the code on its stack (the
%% frames process_info/2 shows, `backtrace_depth' of them, 8 by default):
%% waited for until it has left that code; else `none'.
classify(P, Modules) ->
    case erlang:process_info(P, [initial_call, current_stacktrace]) of
        [{initial_call, {proc_lib, init_p, 5}}, {current_stacktrace, Stack}] ->
            kind(proc_lib_initial(P), Stack, Modules);
        [{initial_call, Initial}, {current_stacktrace, Stack}] ->
            kind(Initial, Stack, Modules);
        undefined ->
            none
    end.

proc_lib_initial(P) ->
    case proc_lib:initial_call(P) of
        {M, F, Args} when is_list(Args) -> {M, F, length(Args)};
        _ -> undefined
    end.

kind({M, F, A}, Stack, Modules) ->
    case lists:member(M, Modules) of
        true ->
            case module_kind(M, F, A) of
                none -> none;
                Kind -> {job, Kind}
            end;
        false ->
            in_call(Stack, Modules)
    end;
kind(_, Stack, Modules) ->
    in_call(Stack, Modules).

module_kind(beamspy_session, _, _) -> session;
module_kind(beamspy_capture, _, _) -> capture;
module_kind(beamspy_seq_collector, _, _) -> seq;
module_kind(beamspy_telemetry, _, _) -> telemetry;
module_kind(beamspy_sampler, _, _) -> sampler;
module_kind(beamspy_top, _, _) -> top;
module_kind(beamspy_agent, init, 4) -> cli_job;
%% Waits for the jobs to end to unload: not one of them.
module_kind(beamspy_agent, await_jobs, 0) -> none;
module_kind(beamspy_watchdog, _, _) -> watchdog;
module_kind(beamspy_calibrate, _, _) -> calibration;
module_kind(M, _, _) -> M.

%% A process running beamspy's code right now, though not spawned with it
%% (the caller of a capture waiting for it, a call of beamspy:format_error/1
%% printing): `{call, Module}' with the innermost of beamspy's modules on
%% its stack. beamspy_remote's: another unload, which gives way at once.
in_call(Stack, Modules) ->
    Ours = [M || {M, _, _, _} <- Stack, lists:member(M, Modules)],
    case {Ours, lists:member(beamspy_remote, Ours)} of
        {[M | _], false} -> {call, M};
        _ -> none
    end.

%% Until P has left the code of Modules (or exited), at most until
%% Deadline: looked at every 20 ms.
left_code(P, Modules, Deadline) ->
    case erlang:process_info(P, current_stacktrace) of
        undefined ->
            true;
        {current_stacktrace, Stack} ->
            case in_call(Stack, Modules) of
                none -> true;
                _ ->
                    case erlang:monotonic_time(millisecond) + 20 > Deadline of
                        true -> false;
                        false -> receive after 20 -> left_code(P, Modules, Deadline) end
                    end
            end
    end.

%% Done with its work and exiting: a job that marked itself done, or a
%% watchdog whose owner is one (or gone).
ending({watchdog, W}, _) ->
    case erlang:process_info(W, monitors) of
        {monitors, [{process, Owner}]} -> done(Owner);
        {monitors, []} -> true;
        _ -> false
    end;
ending({_, P}, _) ->
    done(P).

done(P) ->
    case erlang:process_info(P, dictionary) of
        {dictionary, Dict} -> lists:keymember(?DONE, 1, Dict);
        undefined -> true
    end.

exited(P, Deadline) ->
    Mon = erlang:monitor(process, P),
    receive
        {'DOWN', Mon, process, P, _} -> true
    after max(0, Deadline - erlang:monotonic_time(millisecond)) ->
            erlang:demonitor(Mon, [flush]),
            false
    end.
