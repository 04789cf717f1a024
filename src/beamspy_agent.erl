%%% @doc The target-side end of the `beamspy' command-line tool.
%%%
%%% `beamspy record|top --node N' connects to a node as a C node, loads
%%% beamspy's modules there if needed, and runs one job through this module:
%%% a live recording (`record'), a function capture (`capture'), stack
%%% sampling (`sample') or the figures of `top'. The tool then polls the job
%%% (progress), and finally asks for the result, which comes back as bytes:
%%% a `.bspy' profile or a sampler's raw stacks, spelled and rendered on
%%% the tool's side.
%%%
%%% A job never outlives the tool that started it. It watches the tool's
%%% node (`monitor_node/2': a killed tool or a closed connection is seen at
%%% once) and expects a poll at least every `lease_ms' (default 5000: a
%%% network that silently drops is seen within that time, long before the
%%% distribution tick would notice). Either way the job stops recording
%%% (tracing off everywhere, trace patterns removed) and, when the tool
%%% delivered beamspy's code for the job, unloads those modules from the
%%% node. When the lease runs out the job first sends the tool
%%% `{beamspy_job_ended, Job, {lease, LeaseMs}}': a tool that is only slow
%%% learns that its requests will not be answered.
%%%
%%% A job writes nothing on the node: a profile is encoded by the NIF into
%%% a binary in memory (the bytes a `.bspy' file would hold) and sent as it
%%% is; the merged profile of a capture's calls too.
%%%
%%% ```
%%% 1> {ok, Job} = beamspy_agent:start(record, self(), #{targets => all, lease_ms => 5000}).
%%% 2> {ok, #{events := _, state := running}} = beamspy_agent:poll(Job).
%%% 3> {ok, #{format := bspy, data := Bytes}} = beamspy_agent:finish(Job, 60000).
%%% '''
-module(beamspy_agent).

-export([start/3, poll/1, arm/1, finish/2, release/1, noted/0, dump/1, runs_elixir/0]).
-export([init/4, await_jobs/0, unload_or_defer_current/3]).

-type kind() :: record | capture | sample | top | seq.
-type job() :: pid().
-export_type([kind/0, job/0]).

-define(DEFAULT_LEASE_MS, beamspy_opts:default(lease_ms)).
%% In a job's dictionary once it has ended (release/1 ignores it then).
-define(JOB_DONE, '$beamspy_job_done').
%% beamspy_jobs' unloading lock.
-define(UNLOADING, beamspy_unloading).
%% How long release/1 waits for another unload in progress, and for jobs
%% that are ending.
-define(UNLOCK_WAIT_MS, 20000).
-define(ENDING_WAIT_MS, 5000).
%% The waiter looks at the jobs again at least this often.
-define(LOOK_AGAIN_MS, 1000).
%% How long the node tries to purge old code that a process still runs.
-define(PURGE_MS, 600000).

%%% ---------------------------------------------------------------------
%%% API
%%% ---------------------------------------------------------------------

%% @doc Starts a job of Kind for Tool (the pid of the command-line tool, or
%% any process: the job ends when it goes away). Options: `lease_ms',
%% `unload' (modules to unload when the job ends without the tool),
%% `targets' (record, sample), `mfa' and `calls' and `timeout' (capture),
%% `interval_ms' (sample, top), `limit', `cpu' and `cpu_hz' (top), and for record and capture
%% every option of {@link beamspy:start/2}. Returns once recording is on.
%%
%% ```
%% 1> {ok, Job} = beamspy_agent:start(sample, self(), #{targets => all, interval_ms => 10}).
%% '''
-spec start(kind(), pid(), map()) -> {ok, job()} | {error, term()}.
start(Kind, Tool, Opts) when is_pid(Tool), is_map(Opts) ->
    case lists:member(Kind, [record, capture, sample, top, seq]) of
        true ->
            Ref = make_ref(),
            %% A plain spawn: jobs are found by their initial call.
            Pid = spawn(?MODULE, init, [Kind, Tool, Opts, {self(), Ref}]),
            Mon = erlang:monitor(process, Pid),
            receive
                {Ref, {ok, Pid}} ->
                    erlang:demonitor(Mon, [flush]),
                    {ok, Pid};
                {Ref, {error, _} = Error} ->
                    erlang:demonitor(Mon, [flush]),
                    Error;
                {'DOWN', Mon, process, Pid, Why} ->
                    {error, {job_failed, Why}}
            end;
        false ->
            {error, {bad_job, Kind}}
    end;
start(Kind, Tool, Opts) ->
    {error, {bad_job, {Kind, Tool, Opts}}}.

%% @doc Renews the job's lease and returns its progress: `state'
%% (`running', or `done' once a limit tripped or the capture completed),
%% `elapsed_ms', and what the job kind knows (`events', `memory',
%% `processes', `nearest_limit' as `{Name, Permille}' for record; samples
%% for sample; the last window's figures for top).
%%
%% ```
%% 1> {ok, #{state := running}} = beamspy_agent:poll(Job).
%% '''
-spec poll(job()) -> {ok, map()} | {error, term()}.
poll(Job) ->
    call(Job, poll, 10000).

%% @doc A seq job: sets the meta pattern that gives the next calls a
%% token. The tool arms every node's job once all of them collect.
%%
%% ```
%% 1> ok = beamspy_agent:arm(Job).
%% '''
-spec arm(job()) -> ok | {error, term()}.
arm(Job) ->
    call(Job, arm, 10000).

%% @doc Ends the job and returns its result: `#{format => bspy | stacks,
%% data => binary(), truncated => false | atom()}' (`stacks': the
%% sampler's stacks, frames unspelled, as `term_to_binary/1'; empty data
%% and format `none' for top). When a limit stopped a recording early (`truncated' is
%% the limit's name), the result also says when and how much:
%% `stopped_after_ms', `events', `memory' (bytes) and `limit' (the limit's
%% value, or `undefined'). A capture's result also has `calls' (how many
%% calls it captured). Nothing of the job is left on the node's disk.
%%
%% ```
%% 1> {ok, #{format := bspy, data := <<16#89, "BSPY", _/binary>>}} = beamspy_agent:finish(Job, 60000).
%% '''
-spec finish(job(), timeout()) -> {ok, map()} | {error, term()}.
finish(Job, Timeout) ->
    call(Job, finish, Timeout).

%% @doc Whether this node runs Elixir (its `elixir' application started, or
%% Elixir's `Kernel' loaded): the tool then spells names as Elixir does
%% unless told `--erlang'.
-spec runs_elixir() -> boolean().
runs_elixir() ->
    erlang:module_loaded('Elixir.Kernel') orelse
        try lists:keymember(elixir, 1, application:which_applications(1000))
        catch exit:_ -> false
        end.

%% @doc `beamspy dump': {@link beamspy_dump:snapshot/1} with the targets
%% given as the tool sends them (`all', or texts that are pids or
%% registered names) in `targets'; `interval_ms' and `max_processes' are
%% passed on. With `tool' (the tool's pid) and `unload' (the modules it
%% loaded), those modules are unloaded if the tool goes away meanwhile.
%%
%% ```
%% 1> {ok, #{processes := [_ | _]}} = beamspy_agent:dump(#{targets => all, interval_ms => 100}).
%% '''
-spec dump(map()) -> {ok, map()} | {error, term()}.
dump(Opts) when is_map(Opts) ->
    Snap = maps:with([interval_ms, max_processes], Opts),
    Watcher = watch_dump(maps:get(tool, Opts, undefined), maps:get(unload, Opts, [])),
    try
        beamspy_dump:snapshot(Snap#{pids => targets(maps:get(targets, Opts, all))})
    after
        ok = stop_watcher(Watcher)
    end.

%% Gone before the dump returns: the tool's unloading, next, must not find
%% it still running beamspy's code.
stop_watcher(Watcher) when Watcher =:= self() ->
    ok;
stop_watcher(Watcher) ->
    Mon = erlang:monitor(process, Watcher),
    Watcher ! done,
    receive {'DOWN', Mon, process, Watcher, _} -> ok
    after 5000 -> erlang:demonitor(Mon, [flush]), ok
    end.

%% While a dump runs, a process watches the tool's node: should the tool go
%% away meanwhile, the modules it loaded for the dump are unloaded.
watch_dump(Tool, [_ | _] = Modules) when is_pid(Tool), node(Tool) =/= node() ->
    Dumper = self(),
    spawn(fun() ->
                  true = erlang:monitor_node(node(Tool), true),
                  receive
                      done -> ok;
                      %% The dump itself is the tool's: not a job to wait for.
                      {nodedown, _} -> unload_when_last(Modules, [Dumper])
                  end
          end);
watch_dump(_, _) ->
    self().

%% @doc What a tool calls to remove the modules it delivered. No code is
%% removed under a running job, whoever started it (a capture or session
%% started through `erpc', another tool's job, a plain call of beamspy's
%% API in progress): `unloaded' when none runs, the modules deleted now
%% (their old code is purged by the node once this call has returned);
%% else `deferred': they are noted (the `beamspy' application environment,
%% `unload_when_done') and removed once the last job has ended, by a
%% process of the node's that waits for them. Waits at most 20 s for
%% another unload in progress; `busy' if it is still going on then (the
%% code stays).
%%
%% ```
%% 1> beamspy_agent:release([beamspy_agent]).
%% unloaded
%% '''
-spec release([module()]) -> unloaded | deferred | busy.
release(Modules) ->
    unload_or_defer(Modules, [self()], erlang:monotonic_time(millisecond) + ?UNLOCK_WAIT_MS).

%% Unloads Modules (and those noted) if no job runs but the processes of
%% Exclude, else leaves them to the last job. The lock taken, nothing of
%% beamspy starts meanwhile.
unload_or_defer(Modules, Exclude, Deadline) ->
    case beamspy_jobs:lock() of
        ok ->
            %% Released by a BIF: beamspy_jobs may be deleted by now.
            try unload_or_defer_locked(Modules, Exclude)
            after release_lock()
            end;
        {error, _} ->
            %% Another unload: looked at again once it is over.
            case wait_for_unloader(Deadline) of
                over -> unload_or_defer_again(Modules, Exclude, Deadline);
                timeout -> busy
            end
    end.

%% The other unload may have removed this very code (a call of the
%% current code then fails): what is left of Modules is looked at again.
unload_or_defer_again(Modules, Exclude, Deadline) ->
    case erlang:module_loaded(?MODULE) andalso erlang:module_loaded(beamspy_jobs) of
        true ->
            %% Current code again (the other unload left it).
            ?MODULE:unload_or_defer_current(Modules, Exclude, Deadline);
        false ->
            Left = [M || M <- Modules, erlang:module_loaded(M)],
            _ = [code:delete(M) || M <- Left],
            unloaded
    end.

%% @private unload_or_defer/3, called as the current code's.
-spec unload_or_defer_current([module()], [pid()], integer()) -> unloaded | deferred | busy.
unload_or_defer_current(Modules, Exclude, Deadline) ->
    unload_or_defer(Modules, Exclude, Deadline).

unload_or_defer_locked(Modules, Exclude) ->
    All = lists:usort(noted() ++ Modules),
    case beamspy_jobs:running(beamspy_jobs:loaded_modules(), Exclude, ?ENDING_WAIT_MS) of
        [] ->
            application:unset_env(beamspy, unload_when_done),
            ok = beamspy_jobs:stop_waiter(),
            ok = delete_and_purge(All),
            unloaded;
        [_ | _] ->
            application:set_env(beamspy, unload_when_done, All),
            ok = start_waiter(),
            deferred
    end.

%% Deletes Modules (their code becomes old; an old version left over is
%% purged first, if nobody runs it) and leaves a process that purges them
%% once no process runs them (this one, to begin with). Only local calls
%% and OTP's from the first deletion on: beamspy_jobs may be among them.
delete_and_purge(Modules) ->
    {Purger, Bindings} = beamspy_jobs:purger(Modules, ?PURGE_MS),
    _ = [begin _ = code:soft_purge(M), code:delete(M) end || M <- Modules],
    {value, _, _} = erl_eval:exprs(Purger, Bindings),
    ok.

release_lock() ->
    try unregister(?UNLOADING) of
        true -> ok
    catch
        error:badarg -> ok
    end.

%% Until the unloading lock is free (its holder gone or done), at most
%% until Deadline.
wait_for_unloader(Deadline) ->
    case whereis(?UNLOADING) of
        undefined ->
            over;
        Holder ->
            Mon = erlang:monitor(process, Holder),
            Left = max(0, Deadline - erlang:monotonic_time(millisecond)),
            receive
                {'DOWN', Mon, process, Holder, _} -> over
            after min(100, Left) ->
                    erlang:demonitor(Mon, [flush]),
                    case Left of
                        0 -> timeout;
                        _ -> wait_for_unloader(Deadline)
                    end
            end
    end.

%% The process that removes the noted modules once the last job has ended
%% (one per node). Called holding the lock.
start_waiter() ->
    case beamspy_jobs:waiter() of
        undefined -> beamspy_jobs:set_waiter(spawn(?MODULE, await_jobs, []));
        _ -> ok
    end.

%% @private The waiter: looks at the jobs (holding the lock), waits for one
%% of them to end (or a while: a process seen in beamspy's code may be a
%% plain call that goes on with other work), and looks again; once none
%% runs, removes the noted modules. Not a job itself (beamspy_jobs).
-spec await_jobs() -> ok.
await_jobs() ->
    case beamspy_jobs:lock() of
        ok ->
            Next = try await_locked()
                   after release_lock()
                   end,
            case Next of
                done -> ok;
                {wait, Pids} -> wait_any(Pids), await_jobs()
            end;
        {error, _} ->
            _ = wait_for_unloader(erlang:monotonic_time(millisecond) + ?LOOK_AGAIN_MS),
            ?MODULE:await_jobs()
    end.

await_locked() ->
    case beamspy_jobs:running(beamspy_jobs:loaded_modules(), [self()], 0) of
        [] ->
            All = noted(),
            application:unset_env(beamspy, unload_when_done),
            ok = beamspy_jobs:set_waiter(undefined),
            ok = delete_and_purge(All),
            done;
        Jobs ->
            {wait, [P || {_, P} <- Jobs]}
    end.

%% Until one of Pids ends, at most ?LOOK_AGAIN_MS.
wait_any(Pids) ->
    Mons = [erlang:monitor(process, P) || P <- Pids],
    receive
        {'DOWN', _, process, _, _} -> ok
    after ?LOOK_AGAIN_MS -> ok
    end,
    _ = [erlang:demonitor(M, [flush]) || M <- Mons],
    ok.

%% @doc The modules tools and unload calls left for the last job to unload.
-spec noted() -> [module()].
noted() ->
    case application:get_env(beamspy, unload_when_done) of
        {ok, L} when is_list(L) -> L;
        _ -> []
    end.

%% At the end of a job, marked done: the modules noted for the last job,
%% and, when the job's own tool is gone, the modules it delivered, are
%% removed if no other job runs (Theirs, the processes of the tool's own
%% work, aside), else left to the last one.
unload_when_last(Own) ->
    unload_when_last(Own, []).

unload_when_last(Own, Theirs) ->
    put(?JOB_DONE, true),
    case lists:usort(noted() ++ Own) of
        [] -> ok;
        All -> _ = unload_or_defer(All, [self() | Theirs], erlang:monotonic_time(millisecond) + ?UNLOCK_WAIT_MS),
               ok
    end.

%%% ---------------------------------------------------------------------
%%% The job process
%%% ---------------------------------------------------------------------

%% @private
init(Kind, Tool, Opts, {Starter, Ref}) ->
    Watch = watch(Tool),
    case begin_job(Kind, Opts#{starter => Starter}) of
        {ok, Job} ->
            Starter ! {Ref, {ok, self()}},
            T0 = erlang:monotonic_time(millisecond),
            loop(#{kind => Kind, job => Job, tool => Tool, watch => Watch, t0 => T0,
                   lease => maps:get(lease_ms, Opts, ?DEFAULT_LEASE_MS),
                   unload => maps:get(unload, Opts, []), state => running, stopped => false});
        {error, _} = Error ->
            Starter ! {Ref, Error}
    end.

watch(Tool) when node(Tool) =:= node() ->
    {process, erlang:monitor(process, Tool)};
watch(Tool) ->
    true = erlang:monitor_node(node(Tool), true),
    {node, node(Tool)}.

loop(#{lease := Lease} = S) ->
    receive
        {Ref, From, poll} ->
            From ! {Ref, {ok, progress(S)}},
            loop(S);
        {_Ref, _From, renew} -> % the tool awaits a poll's answer: the lease goes on
            loop(S);
        {Ref, From, arm} when is_map_key(seq, map_get(job, S)) ->
            From ! {Ref, seq_arm(maps:get(job, S))},
            loop(S);
        {Ref, From, finish} ->
            Result = end_job(note_pending_stop(S)),
            %% Done before the tool hears it: its release/1 must not wait
            %% for this job.
            put(?JOB_DONE, true),
            From ! {Ref, Result},
            unload_when_last([]);
        {beamspy, _Session, {stopped, Reason, _Files}} ->
            loop(stopped(Reason, S));
        {beamspy_capture_report, _Ref, Report} ->
            loop(S#{capture_report => Report});
        {beamspy_capture, _Ref, Result} ->
            loop(S#{state => done, capture_result => Result});
        Meta when element(1, Meta) =:= trace orelse element(1, Meta) =:= trace_ts,
                  element(3, Meta) =:= call, is_map_key(seq, map_get(job, S)) ->
            loop(seq_call(S));
        {nodedown, Node} when map_get(watch, S) =:= {node, Node} ->
            abandon(S);
        {'DOWN', Mon, process, _, _} when map_get(watch, S) =:= {process, Mon} ->
            abandon(S)
    after Lease ->
            %% The tool may still be there, only too slow: it is told, so
            %% that it does not wait for answers that will never come.
            map_get(tool, S) ! {beamspy_job_ended, self(), {lease, Lease}},
            abandon(S)
    end.

%% A meta pattern runs its match spec in whichever process calls the
%% function, traced or not: the token is set there.
seq_arm(#{mfa := MFA, label := Label}) ->
    Spec = [{'_', [], [{set_seq_token, label, Label},
                       {set_seq_token, strict_monotonic_timestamp, true},
                       {set_seq_token, send, true},
                       {set_seq_token, 'receive', true}]}],
    _ = erlang:trace_pattern(MFA, Spec, [{meta, self()}]),
    ok.

%% One more call of a seq job's function got a token. After the K asked
%% for (a few calls racing with the change may get one too), the pattern
%% disarms instead: a process that still holds a token (a client calling
%% the function in a loop keeps the token its reply brought back) gets the
%% token's send and receive flags cleared when it calls the function again,
%% so its later requests are not recorded. `is_seq_trace' keeps processes
%% without a token from getting an empty one; `{message, false}': no meta
%% message per call any more.
seq_call(#{job := #{seen := Seen, calls := N}} = S) when Seen >= N ->
    S;
seq_call(#{job := #{seen := Seen, calls := N, mfa := MFA} = Job} = S) ->
    case Seen + 1 >= N of
        true ->
            Disarm = [{'_', [{is_seq_trace}], [{set_seq_token, send, false},
                                               {set_seq_token, 'receive', false},
                                               {message, false}]},
                      {'_', [], [{message, false}]}],
            _ = erlang:trace_pattern(MFA, Disarm, [{meta, self()}]),
            S#{job := Job#{seen := Seen + 1}, state => done};
        false ->
            S#{job := Job#{seen := Seen + 1}}
    end.

%% The tool is gone: stop everything, remove what was set, leave no trace.
abandon(#{unload := Modules} = S) ->
    _ = try discard_job(S) catch _:_ -> failed end,
    unload_when_last(Modules).

%% Ends the job for nobody: a recording is stopped without encoding its
%% profile (no work for the node on behalf of a tool that is gone).
discard_job(#{job := #{session := Session}}) ->
    case beamspy_session:owner(Session) of
        {ok, Owner} -> beamspy_session:finish(Owner, #{encode => false});
        error -> ok
    end;
discard_job(S) ->
    end_job(S).

%% A limit stopped the recording: noted with what was recorded by then (a
%% limit trips once; the figures stay as they were at the stop).
stopped(Reason, S) ->
    S#{state => done, stopped => Reason, stop_info => stop_info(S)}.

%% A stop the job has not heard of yet (the tool asked to finish just as a
%% limit tripped): noted before finishing.
note_pending_stop(S) ->
    receive
        {beamspy, _Session, {stopped, Reason, _Files}} -> stopped(Reason, S)
    after 0 -> S
    end.

%% When (ms since the job began), how much (events, memory) and the limits
%% the session runs with.
stop_info(#{job := #{session := Session}, t0 := T0}) ->
    Elapsed = erlang:monotonic_time(millisecond) - T0,
    case [I || #{session := H} = I <- beamspy:sessions(), H =:= Session] of
        [#{events := Events, memory := Memory} = Info] ->
            #{stopped_after_ms => Elapsed, events => Events, memory => Memory,
              limits => maps:get(limits, Info, #{})};
        _ ->
            #{stopped_after_ms => Elapsed}
    end;
stop_info(_) ->
    #{}.

call(Job, Request, Timeout) ->
    Mon = erlang:monitor(process, Job),
    Job ! {Mon, self(), Request},
    receive
        {Mon, Reply} ->
            erlang:demonitor(Mon, [flush]),
            Reply;
        {'DOWN', Mon, process, _, Why} ->
            {error, {no_job, Why}}
    after Timeout ->
            erlang:demonitor(Mon, [flush]),
            {error, timeout}
    end.

%%% ---------------------------------------------------------------------
%%% Kinds of jobs
%%% ---------------------------------------------------------------------

begin_job(record, Opts) ->
    Targets = case targets(maps:get(targets, Opts, all)) of
                  [One] -> One;
                  Many -> Many
              end,
    Ignore = [self() | [P || P <- [maps:get(starter, Opts, undefined)], is_pid(P), node(P) =:= node()]],
    %% show_idle: the tool draws the profile and leaves idle time out itself.
    case beamspy:start_encoded(Targets, (session_opts(Opts))#{quiet => true, ignore => Ignore, show_idle => true},
                               [bspy]) of
        {ok, Session} ->
            %% `all' and `existing' trace every process, the job's too: it
            %% is not the tool's to record.
            _ = try erlang:trace(self(), false, [all]) catch error:_ -> 0 end,
            {ok, #{session => Session}};
        {error, _} = Error -> Error
    end;
begin_job(capture, Opts) ->
    #{mfa := MFA, calls := N} = Opts,
    COpts = (session_opts(Opts))#{quiet => true, merge => true, report_limit => true,
                                  timeout => maps:get(timeout, Opts, 60000)},
    case beamspy:capture_encoded(MFA, N, COpts, [bspy]) of
        {ok, Ref} -> {ok, #{capture => Ref}};
        {error, _} = Error -> Error
    end;
begin_job(seq, #{label := Label}) when not is_integer(Label) ->
    %% Only an immediate label in a match spec: a binary one, set from the
    %% spec, crashed an OTP 25 node once the spec was replaced.
    {error, {bad_label, Label}};
begin_job(seq, Opts) ->
    #{mfa := {M, F, A} = MFA, calls := N, label := Label} = Opts,
    case beamspy_capture:check_function(MFA) of
        ok ->
            case beamspy_seq_collector:start(Label, self(), #{max_events => maps:get(max_events, Opts, beamspy_opts:default(sequence_max_events))}) of
                {ok, C} ->
                    %% Armed later (arm/1), once every node of the capture
                    %% has its collector: a flow must not reach a node that
                    %% is not collecting yet.
                    {ok, #{seq => C, mfa => {M, F, A}, calls => N, seen => 0, label => Label}};
                {error, _} = Error -> Error
            end;
        {error, _} = Error -> Error
    end;
begin_job(sample, Opts) ->
    SOpts0 = maps:with([interval_ms, max_stacks, max_duration_ms], Opts),
    SOpts = SOpts0#{targets => targets(maps:get(targets, Opts, all))},
    case beamspy_sampler:start(SOpts#{owner => self()}) of
        {ok, Pid} -> {ok, #{sampler => Pid}};
        {error, _} = Error -> Error
    end;
begin_job(top, Opts) ->
    TOpts = maps:with([interval_ms, limit, cpu, cpu_hz], Opts),
    case beamspy_top:start(TOpts#{owner => self()}) of
        {ok, Pid} -> {ok, #{top => Pid}};
        {error, _} = Error -> Error
    end.

%% Targets as the tool sends them: `all', or texts that are pids
%% ("<0.12.0>") or registered names (Elixir's spelling of a module name
%% included).
targets(all) -> all;
targets(Ts) when is_list(Ts) -> [target(T) || T <- Ts].

target(T) when is_binary(T) -> target(unicode:characters_to_list(T));
target("<" ++ _ = Text) ->
    try list_to_pid(Text) catch error:badarg -> list_to_atom(Text) end;
target(Text) when is_list(Text) -> registered_name(Text);
target(T) -> T.

%% A name as Elixir writes it (`App.Server') is registered as
%% 'Elixir.App.Server': that one, when only it is registered.
registered_name([C | _] = Text) when C >= $A, C =< $Z ->
    Plain = list_to_atom(Text),
    Elixir = list_to_atom("Elixir." ++ Text),
    case {whereis(Plain), whereis(Elixir)} of
        {undefined, Pid} when is_pid(Pid) -> Elixir;
        _ -> Plain
    end;
registered_name(Text) ->
    list_to_atom(Text).

%% Options of beamspy:start/2 and capture_async/3 the tool may pass on.
session_opts(Opts) ->
    maps:with([children, sleep, gc, compensate, max_memory, max_processes, max_events, max_duration,
               names, timeline, pids, mode, cpu_hz, times], Opts).

progress(#{job := Job, t0 := T0, state := State} = S) ->
    Base = #{state => State, elapsed_ms => erlang:monotonic_time(millisecond) - T0,
             stopped => maps:get(stopped, S)},
    maps:merge(Base, job_progress(Job)).

job_progress(#{session := Session}) ->
    case [I || #{session := S} = I <- beamspy:sessions(), S =:= Session] of
        [#{events := Events, memory := Memory, processes := Procs} = Info] ->
            #{events => Events, memory => Memory, processes => Procs,
              nearest_limit => nearest_limit(Info)};
        _ ->
            #{}
    end;
job_progress(#{capture := _}) ->
    case [I || #{kind := capture} = I <- beamspy:sessions()] of
        [#{events := Events, memory := Memory} | _] -> #{events => Events, memory => Memory};
        _ -> #{}
    end;
job_progress(#{seq := C, seen := Seen}) ->
    case beamspy_seq_collector:activity(C, 5000) of
        {error, _} -> #{calls => Seen};
        {Events, _} -> #{events => Events, calls => Seen}
    end;
job_progress(#{sampler := Pid}) ->
    case beamspy_sampler:info(Pid) of
        {ok, Info} -> maps:with([samples, rounds, processes, stacks, memory], Info);
        _ -> #{}
    end;
job_progress(#{top := Pid}) ->
    case beamspy_top:report(Pid) of
        {ok, Report} -> #{report => Report};
        _ -> #{}
    end.

%% The limit closest to tripping, as {Name, Permille of it used}.
nearest_limit(#{limits := Limits} = Info) ->
    Used = #{max_events => maps:get(events, Info, 0),
             max_memory => maps:get(memory, Info, 0),
             max_duration => maps:get(running_ms, Info, 0),
             max_processes => maps:get(processes, Info, 0)},
    Shares = [{K, min(1000, V * 1000 div Max)}
              || {K, Max} <- maps:to_list(Limits), is_integer(Max), Max > 0,
                 V <- [maps:get(K, Used, 0)]],
    case lists:reverse(lists:keysort(2, Shares)) of
        [Top | _] -> Top;
        [] -> none
    end;
nearest_limit(_) ->
    none.

end_job(#{job := #{session := Session}, stopped := Stopped} = S) ->
    %% Figures taken before stopping, in case a limit trips just now.
    Now = case Stopped of
              false -> stop_info(S);
              _ -> #{}
          end,
    case beamspy:stop(Session, #{}) of
        {ok, #{encoded := [{bspy, {ok, Data}}], truncated := false}} ->
            {ok, #{format => bspy, data => Data, truncated => false}};
        {ok, #{encoded := [{bspy, {ok, Data}}], truncated := Truncated}} ->
            Info = maps:get(stop_info, S, Now),
            Limit = maps:get(Truncated, maps:get(limits, Info, #{}), undefined),
            {ok, (maps:without([limits], Info))#{format => bspy, data => Data,
                                                   truncated => Truncated, limit => Limit}};
        {ok, #{encoded := [{bspy, {error, Why}}]}} ->
            {error, {no_profile, Why}};
        {error, {no_session, _}} ->
            %% Stopped by someone else on the node: the profile went with
            %% the session (it was never on disk).
            {error, {no_profile, session_stopped_elsewhere}};
        {error, _} = Error ->
            Error
    end;
end_job(#{job := #{capture := Ref}} = S) ->
    Captured = case maps:find(capture_result, S) of
                   {ok, R} -> R;
                   error -> wait_capture(Ref)
               end,
    Early = capture_early_stop(S),
    case Captured of
        {ok, #{calls := Calls, outputs := Outputs}} ->
            case lists:keyfind(merged, 1, Outputs) of
                {merged, bspy, Data} -> {ok, Early#{format => bspy, data => Data, calls => Calls}};
                false -> {error, {no_profile, no_merged_profile}}
            end;
        {error, _} = Error ->
            Error
    end;
end_job(#{job := #{seq := C, mfa := MFA}}) ->
    _ = erlang:trace_pattern(MFA, false, [meta]),
    case beamspy_seq_collector:stop(C, 10000) of
        {ok, Flow} -> {ok, #{format => seq, data => term_to_binary(Flow), truncated => false}};
        {error, _} = Error -> Error
    end;
end_job(#{job := #{sampler := Pid}}) ->
    case beamspy_sampler:stop(Pid) of
        {ok, #{stacks := Stacks} = Info} ->
            %% Raw frames: the tool spells them, as it spells every mode's.
            {ok, (maps:without([stacks], Info))#{format => stacks, data => term_to_binary(Stacks),
                                                 truncated => false}};
        {error, _} = Error ->
            Error
    end;
end_job(#{job := #{top := Pid}}) ->
    _ = beamspy_top:stop(Pid),
    {ok, #{format => none, data => <<>>, truncated => false}}.

%% What the tool says of a capture a limit ended early, in the shape of a
%% record's (see end_job/1 of a session).
capture_early_stop(S) ->
    Report = case maps:find(capture_report, S) of
                 {ok, R} -> R;
                 error ->
                     receive {beamspy_capture_report, _, R} -> R after 0 -> #{} end
             end,
    case Report of
        #{truncated := Reason} ->
            #{truncated => Reason, stopped_after_ms => maps:get(recorded_ms, Report),
              events => maps:get(events, Report), memory => maps:get(memory_peak, Report),
              limit => maps:get(Reason, maps:get(limits, Report, #{}), undefined)};
        _ ->
            #{truncated => false}
    end.

%% A capture that has not completed yet: its owner stops on its timeout; the
%% tool asking to finish means "now", so stop waiting after a grace period.
wait_capture(Ref) ->
    receive
        {beamspy_capture, Ref, Result} -> Result
    after 5000 ->
            {error, {no_calls_captured, timeout}}
    end.
