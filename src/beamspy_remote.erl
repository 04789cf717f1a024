%%% beamspy_remote — beamspy's modules and NIF onto a node that has none
%%% (from the caller's own copy, over distribution), and off it again.
%%%
%%% What a notebook attached to a production node needs: load/2 makes
%%% `erpc:call(Node, beamspy, profile, [...])' work on a node where nothing
%%% of beamspy is installed, unload/2 leaves the node as it was. The same
%%% checks as the command-line tool's: the node's OTP release, architecture
%%% and word size must be this node's (the NIF is native code built for
%%% them). The NIF library is written to a private directory (mode 0700)
%%% under the node's TMPDIR, loaded from there, and the file and directory
%%% are deleted at once: nothing of beamspy stays on the node's disk.
%%% Modules the node already has in the same version are kept and left
%%% alone; a different version of its own is replaced and reloaded from its
%%% file by unload/2. What was loaded is noted on the node itself (the
%%% `beamspy' application environment, key `delivered'), so any node may
%%% unload it later.
-module(beamspy_remote).

-export([load/2, unload/2]).
%% Run on the node by unload/2.
-export([unload_local/2]).

-define(ENV, delivered).
%% How long the node goes on trying to purge old code that processes still
%% ran when unload/2 returned.
-define(PURGE_LATER_MS, 600000).

%% @doc Loads beamspy onto Node. Returns `{ok, #{loaded := [module()],
%% kept := [module()]}}' (modules loaded now, modules the node had in this
%% version already) or `{error, Reason}' ({@link beamspy:format_error/1}
%% explains it).
%%
%% ```
%% 1> {ok, #{loaded := [_ | _]}} = beamspy_remote:load('app@host', 30000).
%% '''
-spec load(node(), timeout()) -> {ok, #{loaded := [module()], kept := [module()]}} | {error, term()}.
load(Node, Timeout) ->
    try
        check_node(Node, Timeout),
        Code = [object_code(M) || M <- modules()],
        {Same, Load} = lists:partition(fun({M, Bin, _}) -> same_version(Node, M, Bin, Timeout) end, Code),
        Own = [M || {M, _, _} <- Load, own_file(Node, M, Timeout)],
        ok = deliver(Node, Load, Timeout),
        #{loaded := Before, reload := Reload} = delivered(Node, Timeout),
        Loaded = [M || {M, _, _} <- Load],
        ok = rpc(Node, application, set_env,
                 [beamspy, ?ENV, #{loaded => lists:usort(Before ++ Loaded),
                                   reload => lists:usort(Reload ++ Own)}], Timeout),
        {ok, #{loaded => Loaded, kept => [M || {M, _, _} <- Same]}}
    catch
        throw:{error, _} = Error -> Error
    end.

%% @doc Removes from Node what {@link load/2} loaded there, and reloads the
%% node's own version of a module it replaced. Code is never removed under
%% a running job: with a recording, capture, seq collector, telemetry
%% recording, sampler or top running on the node (whoever started it), it
%% is refused with `{error, {busy, {jobs_running, Node, [{Kind, Pid}]}}}'
%% (stop them first); a command-line job still using the code defers the
%% unloading to its end (`deferred => true'). One unload at a time: another
%% one meanwhile gets `{error, {busy, {unloading, Node}}}', and jobs
%% starting meanwhile are refused with the same reason.
%%
%% Nor does it kill a process in the middle of a plain call of beamspy's
%% (one that is not a job: `beamspy:apply/2' printing what it wrote, say):
%% the removed code stays on the node as old code until no process runs
%% it. Waited for within Timeout; if some process still runs it then, the
%% reply says `purged => false' and lists them in `running', and the old
%% code is purged by the node as soon as they leave it (a process running
%% only OTP code tries for 10 minutes). `purged => true' once it is gone.
%%
%% ```
%% 1> {ok, #{unloaded := [_ | _], purged := true}} = beamspy_remote:unload('app@host', 30000).
%% '''
-spec unload(node(), timeout()) ->
          {ok, #{unloaded := [module()], deferred := boolean(), purged := boolean(), running := [pid()]}}
          | {error, term()}.
unload(Node, Timeout) ->
    Deadline = deadline(Timeout),
    try
        #{loaded := Loaded, reload := Reload} = delivered(Node, Timeout),
        case Loaded of
            [] -> throw({error, {nothing_loaded, Node}});
            _ -> ok
        end,
        case unload_there(Node, Loaded, Timeout) of
            {now, Deleted} ->
                Running = purge(Node, Deleted, Deadline, Timeout),
                _ = [rpc(Node, code, load_file, [M], Timeout) || M <- Reload],
                {ok, #{unloaded => Loaded, deferred => false, purged => Running =:= [], running => Running}};
            deferred ->
                {ok, #{unloaded => Loaded, deferred => true, purged => false, running => []}}
        end
    catch
        throw:{error, _} = Error -> Error
    end.

%% @private The node's side of unload/2: takes the unloading lock, lists
%% the jobs (waiting at most WaitMs for those that are ending) and, if none
%% runs, deletes the modules (they become old code; the caller purges them
%% once this process has left them). `deferred' when command-line jobs run:
%% the last of them unloads (see beamspy_agent).
-spec unload_local([module()], non_neg_integer()) ->
          {now, [module()]} | deferred | {error, {busy, term()}}.
unload_local(Loaded, WaitMs) ->
    case beamspy_jobs:lock() of
        ok ->
            %% Released by a BIF: beamspy_jobs may be deleted by now.
            try unload_locked(Loaded, WaitMs)
            after release_unloading_lock()
            end;
        {error, _} = Busy ->
            Busy
    end.

%% Not held any more when it was taken from this process already.
release_unloading_lock() ->
    try unregister(beamspy_unloading) of
        true -> ok
    catch
        error:badarg -> ok
    end.

unload_locked(Loaded, WaitMs) ->
    Jobs = beamspy_jobs:running(beamspy_jobs:loaded_modules(), [self()], WaitMs),
    case {Jobs, [P || {cli_job, P} <- Jobs]} of
        {[], _} ->
            All = lists:usort(Loaded ++ beamspy_agent:noted()),
            ok = application:unset_env(beamspy, unload_when_done),
            ok = application:unset_env(beamspy, ?ENV),
            %% A tool's modules waiting for the last job: removed now.
            ok = beamspy_jobs:stop_waiter(),
            %% Only OTP's calls from here on: beamspy_jobs is among them.
            _ = [begin _ = code:soft_purge(M), code:delete(M) end || M <- All],
            {now, All};
        {_, []} ->
            {error, {busy, {jobs_running, node(), Jobs}}};
        {_, _} ->
            ok = application:set_env(beamspy, unload_when_done, lists:usort(Loaded ++ beamspy_agent:noted())),
            ok = application:unset_env(beamspy, ?ENV),
            deferred
    end.

unload_there(Node, Loaded, Timeout) ->
    try erpc:call(Node, ?MODULE, unload_local, [Loaded, wait_ms(Timeout)], Timeout) of
        {error, _} = Error -> throw(Error);
        Reply -> Reply
    catch
        error:{exception, undef, [{?MODULE, unload_local, _, _} | _]} ->
            %% Another unload removed the code since this one looked.
            case delivered(Node, Timeout) of
                #{loaded := []} -> throw({error, {nothing_loaded, Node}});
                _ -> throw({error, {busy, {unloading, Node}}})
            end;
        error:{erpc, noconnection} -> throw({error, {nodedown, Node}});
        error:{erpc, timeout} -> throw({error, {timeout, Node}});
        Class:Reason -> throw({error, {remote_call, Node, {?MODULE, unload_local, 2}, {Class, Reason}}})
    end.

%% How long the node waits for jobs that are ending: half the caller's time.
wait_ms(infinity) -> 15000;
wait_ms(Timeout) -> Timeout div 2.

%% Old code is purged once no process runs it: the remote calls that ran
%% it (this unload's own, another giving way) end on their own, and so does
%% a plain call of beamspy's API in progress. Nobody is killed: what is
%% still run when the caller's time is up stays as old code, purged by the
%% node once they leave it. Returns the processes that still run it.
purge(Node, Modules, Deadline, Timeout) ->
    purge(Node, Modules, 20, Deadline, Timeout).

purge(Node, Modules, Wait, Deadline, Timeout) ->
    Left = [M || M <- Modules, not rpc(Node, code, soft_purge, [M], Timeout)],
    case {Left, time_left(Deadline)} of
        {[], _} ->
            [];
        {_, Time} when Time > Wait ->
            timer:sleep(Wait),
            purge(Node, Left, min(2 * Wait, 500), Deadline, Timeout);
        {_, _} ->
            {PExprs, PBindings} = beamspy_jobs:purger(Left, ?PURGE_LATER_MS),
            _ = rpc(Node, erl_eval, exprs, [PExprs, PBindings], Timeout),
            old_code_users(Node, Left, Timeout)
    end.

%% The processes of Node running old code of Modules: evaluated there by
%% erl_eval (beamspy's code is gone from the node).
old_code_users(Node, Modules, Timeout) ->
    Src = "[P || P <- erlang:processes(), lists:any(fun(M) -> erlang:check_process_code(P, M) end, Modules)].",
    {ok, Tokens, _} = erl_scan:string(Src),
    {ok, Exprs} = erl_parse:parse_exprs(Tokens),
    Bindings = erl_eval:add_binding('Modules', Modules, erl_eval:new_bindings()),
    {value, Pids, _} = rpc(Node, erl_eval, exprs, [Exprs, Bindings], Timeout),
    Pids.

deadline(infinity) -> infinity;
deadline(Timeout) -> erlang:monotonic_time(millisecond) + Timeout.

time_left(infinity) -> infinity;
time_left(Deadline) -> max(0, Deadline - erlang:monotonic_time(millisecond)).

%%% ---------------------------------------------------------------------

%% beamspy's Erlang modules, from the directory this module was loaded
%% from (Elixir's BeamSpy needs Elixir on the node: not delivered).
modules() ->
    Ebin = filename:dirname(code:which(?MODULE)),
    lists:sort([list_to_atom(filename:basename(F, ".beam"))
                || F <- filelib:wildcard(filename:join(Ebin, "beamspy*.beam"))]).

object_code(M) ->
    case code:get_object_code(M) of
        {M, Bin, File} -> {M, Bin, File};
        error -> throw({error, {no_object_code, M}})
    end.

check_node(Node, Timeout) ->
    case net_adm:ping(Node) of
        pong -> ok;
        pang -> throw({error, {nodedown, Node}})
    end,
    Items = [otp_release, system_architecture, {wordsize, external}],
    Here = [erlang:system_info(I) || I <- Items],
    There = [rpc(Node, erlang, system_info, [I], Timeout) || I <- Items],
    case There of
        Here -> ok;
        _ -> throw({error, {incompatible_node, Node, describe(There), describe(Here)}})
    end.

describe([Release, Arch, Words]) ->
    lists:flatten(io_lib:format("OTP ~ts on ~ts (~w-bit)", [Release, Arch, Words * 8])).

same_version(Node, M, Bin, Timeout) ->
    case rpc(Node, code, is_loaded, [M], Timeout) of
        false -> false;
        {file, _} ->
            {ok, {M, Md5}} = beam_lib:md5(Bin),
            rpc(Node, erlang, get_module_info, [M, md5], Timeout) =:= Md5
    end.

%% The node runs its own version of M, loaded from a file: put back by unload.
own_file(Node, M, Timeout) ->
    case rpc(Node, code, is_loaded, [M], Timeout) of
        {file, Path} when is_list(Path) -> true;
        _ -> false
    end.

delivered(Node, Timeout) ->
    case rpc(Node, application, get_env, [beamspy, ?ENV], Timeout) of
        {ok, #{loaded := L, reload := R}} -> #{loaded => L, reload => R};
        _ -> #{loaded => [], reload => []}
    end.

deliver(_, [], _) ->
    ok;
deliver(Node, Code, Timeout) ->
    {ok, Nif} = case file:read_file(beamspy_tracer:nif_file()) of
                    {ok, _} = Ok -> Ok;
                    {error, Why} -> throw({error, {no_nif_library, beamspy_tracer:nif_file(), Why}})
                end,
    Tmp = rpc(Node, os, getenv, ["TMPDIR", "/tmp"], Timeout),
    Dir = filename:join(Tmp, "beamspy-nif-" ++ integer_to_list(erlang:unique_integer([positive]))
                        ++ "-" ++ integer_to_list(rand:uniform(1 bsl 30))),
    Lib = filename:join(Dir, "beamspy_nif.so"),
    case rpc(Node, file, make_dir, [Dir], Timeout) of
        ok -> ok;
        {error, Why1} -> throw({error, {remote_file, Node, Dir, Why1}})
    end,
    try
        ok = remote_file_ok(Node, Dir, rpc(Node, file, change_mode, [Dir, 8#700], Timeout)),
        ok = remote_file_ok(Node, Lib, rpc(Node, file, write_file, [Lib, Nif], Timeout)),
        ok = rpc(Node, application, set_env, [beamspy, nif_dir, Dir], Timeout),
        %% beamspy_tracer loads the NIF when it is loaded (on_load): last.
        {Tracer, Others} = lists:partition(fun({M, _, _}) -> M =:= beamspy_tracer end, Code),
        [load_binary(Node, C, Timeout) || C <- Others ++ Tracer],
        ok
    after
        _ = rpc_quiet(Node, file, delete, [Lib], Timeout),
        _ = rpc_quiet(Node, file, del_dir, [Dir], Timeout),
        _ = rpc_quiet(Node, application, unset_env, [beamspy, nif_dir], Timeout)
    end.

remote_file_ok(_, _, ok) -> ok;
remote_file_ok(Node, Path, {error, Why}) -> throw({error, {remote_file, Node, Path, Why}}).

load_binary(Node, {M, Bin, File}, Timeout) ->
    case rpc(Node, code, load_binary, [M, File, Bin], Timeout) of
        {module, M} -> ok;
        {error, Why} -> throw({error, {remote_load, Node, M, Why}})
    end.

rpc(Node, M, F, A, Timeout) ->
    try erpc:call(Node, M, F, A, Timeout)
    catch
        error:{erpc, noconnection} -> throw({error, {nodedown, Node}});
        error:{erpc, timeout} -> throw({error, {timeout, Node}});
        Class:Reason -> throw({error, {remote_call, Node, {M, F, length(A)}, {Class, Reason}}})
    end.

rpc_quiet(Node, M, F, A, Timeout) ->
    try rpc(Node, M, F, A, Timeout)
    catch throw:_ -> error
    end.
