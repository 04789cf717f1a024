%%% @doc The data behind `beamspy top': which processes work the most and in
%%% which functions, window by window (the tool asks for a report every
%%% second and shows it).
%%%
%%% The command-line tool loads this module into a running node (with
%%% `code:load_binary/3') and drives it with rpc, so it depends on kernel,
%%% stdlib and {@link beamspy_opts:default/1} (its defaults) only, and needs
%%% no application to be started. Every text in
%%% a report is a UTF-8 binary; functions are raw `{M, F, A}' tuples, which
%%% the tool spells (one speller for every mode).
%%%
%%% Cost stays bounded on a node with many processes:
%%% <ul>
%%% <li>the reductions of every process are read once per {@link report/1}
%%%   (a full pass), plus once `interval_ms' after start, to pick the
%%%   processes sampled in the first window;</li>
%%% <li>every `interval_ms' a tick samples the `limit' processes that did
%%%   the most reductions in the previous window only, never every process:
%%%   through {@link beamspy_sched_watch} (only `running', in/out, of those
%%%   processes is traced: one NIF callback per time slice), a process that
%%%   ran when the tick was due counts for the function it stops running in
%%%   when its slice runs out (where it burns CPU, read from the `out'
%%%   event), or for `[ran to receive]' when it reaches a receive first
%%%   (where short handlers ran is not observable without tracing calls).
%%%   Asking `process_info(P, current_function)' instead is answered from
%%%   the process's next receive, which put busy servers in their loops;
%%%   it is done only when the run states are not available (the NIF, or
%%%   on OTP 25/26 a process already traced by someone else);</li>
%%% <li>memory: one reductions counter per process (the last full pass),
%%%   and sample counts per function for at most `limit' processes.</li>
%%% </ul>
%%% The top process itself, its owner and its CPU session's owner are never
%%% listed nor counted.
%%%
%%% The hottest functions of the node come from CPU samples when the VM
%%% can take them (`+JPperf true', see {@link beamspy_cpu:check/0}): a
%%% `mode => cpu' session of every process (started by the top process,
%%% ended with it however it ends: its owner watches the top process) whose
%%% samples per function are taken every report, each sample counted for
%%% its innermost Erlang function (a BIF's C time goes to the function that
%%% called it), the schedulers' own samples (`[spin]' included) apart.
%%% Otherwise, or with `cpu => false', they come from the samples of the
%%% busiest processes above, and the report says why (`hot_why').
%%%
%%% ```
%%% {ok, Top} = beamspy_top:start(#{owner => self(), limit => 10}),
%%% timer:sleep(1000),
%%% {ok, #{processes := [#{pid := Pid, functions := Hot} | _]}} = beamspy_top:report(Top),
%%% ok = beamspy_top:stop(Top).
%%% '''
-module(beamspy_top).

-export([start/1, report/1, stop/1]).

%% The top process's entry point (started by start/1 with proc_lib).
-export([init/1]).

-define(DEFAULT_INTERVAL_MS, beamspy_opts:default(top_interval_ms)).
-define(DEFAULT_LIMIT, beamspy_opts:default(top_limit)).
-define(FUNCTIONS_PER_PROCESS, 3).
-define(FUNCTIONS_PER_REPORT, 20).
-define(RAN_TO_RECEIVE, <<"[ran to receive]">>).

-type opts() :: #{owner := pid(), interval_ms => pos_integer(), limit => pos_integer(),
                  cpu => boolean(), cpu_hz => pos_integer()}.
-type process_row() :: #{pid := binary(), name := binary(), reductions := non_neg_integer(),
                         message_queue_len := non_neg_integer(), memory := non_neg_integer(),
                         current := mfa() | undefined,
                         functions := [{top_function(), pos_integer()}]}.
%% A function, or `<<"[ran to receive]">>' (see the module doc).
-type top_function() :: mfa() | undefined | binary().
-type report() :: #{window_ms := non_neg_integer(), process_count := non_neg_integer(),
                    run_queue := non_neg_integer(), total_reductions := non_neg_integer(),
                    samples := non_neg_integer(), samples_taken := non_neg_integer(),
                    processes := [process_row()],
                    functions := [{top_function(), pos_integer()}],
                    hot := cpu | sampled, hot_why => binary(),
                    cpu_hz => pos_integer(), cpu_samples => non_neg_integer(),
                    cpu_scheduler => non_neg_integer()}.
-export_type([opts/0, report/0, process_row/0]).

%%% ---------------------------------------------------------------------
%%% API
%%% ---------------------------------------------------------------------

%% @doc Starts watching the node for `owner' (required; top stops when it
%% dies), sampling every `interval_ms' (default 100) the current function
%% of the `limit' (default 20) busiest processes, and, unless `cpu' is
%% false or the VM cannot, the CPU at `cpu_hz' (default as mode cpu's).
%%
%% ```
%% {ok, Top} = beamspy_top:start(#{owner => self()}).
%% '''
-spec start(opts()) -> {ok, pid()} | {error, term()}.
start(Opts) when is_map(Opts) ->
    case check_opts(Opts) of
        {ok, Config} ->
            beamspy_procs:start(?MODULE, Config, top_failed);
        {error, _} = Error ->
            Error
    end;
start(Other) ->
    {error, {bad_option, Other}}.

%% @doc The window since the previous report (or since start): the
%% `limit' processes that did the most reductions in it, busiest first,
%% each with its three most sampled functions, and the hottest functions
%% over the samples that found a process running, not waiting (at most
%% 20); `samples' counts those, `samples_taken' every sample of the window,
%% running or waiting (the rows' shares are of those). With `hot => cpu'
%% the hottest functions are counts of CPU samples instead, shares of
%% `cpu_samples' (the processes' samples at `cpu_hz'; `cpu_scheduler' of
%% the schedulers' own are not among them); with `hot => sampled',
%% `hot_why' says why not. A new window starts. Functions are raw
%% `{M, F, A}' (the tool spells them, see {@link
%% beamspy_tracer:frame_name/2}).
%%
%% ```
%% {ok, #{window_ms := 1000, processes := [#{pid := <<"<0.95.0>">>,
%%                                           reductions := 200000,
%%                                           functions := [{{m, loop, 1}, 9}]} | _]}} =
%%     beamspy_top:report(Top).
%% '''
-spec report(pid()) -> {ok, report()} | {error, term()}.
report(Top) ->
    call(Top, report).

%% @doc Stops the top process.
%%
%% ```
%% ok = beamspy_top:stop(Top).
%% '''
-spec stop(pid()) -> ok | {error, term()}.
stop(Top) ->
    case call(Top, stop) of
        {ok, ok} -> ok;
        {error, noproc} -> ok;
        {error, _} = Error -> Error
    end.

%%% ---------------------------------------------------------------------
%%% Options and calls
%%% ---------------------------------------------------------------------

check_opts(Opts) ->
    Defaults = #{interval_ms => ?DEFAULT_INTERVAL_MS, limit => ?DEFAULT_LIMIT, cpu => true,
                 cpu_hz => beamspy_opts:default(cpu_hz)},
    beamspy_procs:check_opts(Opts, Defaults, fun valid_option/2, owner).

valid_option(Key, Value) when Key =:= interval_ms; Key =:= limit; Key =:= cpu_hz ->
    is_integer(Value) andalso Value > 0;
valid_option(cpu, Value) -> is_boolean(Value);
valid_option(_, _) -> false.

call(Top, Request) when is_pid(Top) ->
    beamspy_procs:call(Top, ?MODULE, Request, top_failed);
call(Other, _) ->
    {error, {bad_top, Other}}.

%%% ---------------------------------------------------------------------
%%% The top process
%%% ---------------------------------------------------------------------

%% @private
-spec init(map()) -> ok.
init(#{owner := Owner, interval_ms := Interval} = Config) ->
    %% High priority: told that a sampled process stopped running, top
    %% must read its state before it runs again.
    _ = process_flag(priority, high),
    ok = beamspy_jobs:init_or_refuse(),
    OwnerMon = erlang:monitor(process, Owner),
    _ = erlang:send_after(Interval, self(), {?MODULE, bootstrap}),
    %% Before the run states: on OTP 25/26 a process has one tracer, and
    %% the CPU session traces the scheduling of every process.
    Cpu = start_cpu(Config),
    NotListed = [Owner | [CpuOwner || {on, CpuOwner, _} <- [Cpu]]],
    RS = case beamspy_sched_watch:open([]) of
             {ok, R} -> R;
             {error, _} -> undefined
         end,
    proc_lib:init_ack({ok, self()}),
    try
        loop(new_window(Config#{owner_mon => OwnerMon, bootstrapped => false, ticking => false,
                                sched_watch => RS, pending => #{}, cpu_session => Cpu,
                                not_listed => NotListed},
                        full_pass(NotListed), []))
    after
        close_sched_watch(RS),
        stop_cpu(Cpu)
    end.

%% The CPU session of the hottest functions, or why there is none.
start_cpu(#{cpu := false}) ->
    {off, <<"--no-cpu was given">>};
start_cpu(#{cpu_hz := Hz}) ->
    case beamspy_cpu:check() of
        ok ->
            Opts = #{mode => cpu, cpu_hz => Hz, max_duration => infinity, timeline => false},
            case beamspy:start_encoded(all, Opts, [folded]) of
                {ok, Handle} ->
                    {ok, Owner} = beamspy_session:owner(Handle),
                    {on, Owner, Hz};
                {error, Reason} ->
                    {off, unicode:characters_to_binary(beamspy:format_error(Reason))}
            end;
        {error, {cpu_unavailable, Why}} ->
            {off, Why}
    end.

stop_cpu({on, Owner, _}) ->
    _ = beamspy_session:finish(Owner, #{encode => false}),
    ok;
stop_cpu(_) ->
    ok.

close_sched_watch(undefined) -> ok;
close_sched_watch(RS) -> beamspy_sched_watch:close(RS).

%% A window starts from a full pass (Pid => reductions) and samples Pids.
new_window(State, Pass, Pids) ->
    (watch(State, Pids))#{baseline => Pass,
           window_start_ms => now_ms(),
           sampled => Pids,
           samples => 0,
           samples_taken => 0,
           process_functions => #{},   % Pid => #{MFA => samples}
           functions => #{}}.          % MFA => samples

loop(#{owner_mon := OwnerMon} = State) ->
    receive
        {?MODULE, bootstrap} ->
            loop(bootstrap(State));
        {?MODULE, tick} ->
            loop(tick(State));
        {beamspy_out, Pid, Slices, MFA} ->
            loop(stopped_running(Pid, Slices, MFA, State));
        {?MODULE, report, From, Tag} ->
            {Report, Next} = report_and_renew(State),
            From ! {Tag, Report},
            loop(Next);
        {?MODULE, stop, From, Tag} ->
            %% Ended before the reply: the tool may remove beamspy's code next.
            ok = stop_cpu(maps:get(cpu_session, State)),
            ok = beamspy_jobs:mark_done(),
            From ! {Tag, ok},
            ok;
        {'DOWN', OwnerMon, process, _, _} ->
            ok;
        _Other ->
            loop(State)
    end.

now_ms() ->
    erlang:monotonic_time(millisecond).

%% Reductions of every process but top and those NotListed (its owner, its
%% CPU session's).
full_pass(NotListed) ->
    Self = self(),
    maps:from_list([{P, R} || P <- erlang:processes(), P =/= Self, not lists:member(P, NotListed),
                              {reductions, R} <- [erlang:process_info(P, reductions)]]).

%% Deltas against the baseline, busiest first (a process born in the
%% window counts all its reductions).
busiest(Pass, Baseline) ->
    Deltas = maps:fold(fun(P, R, Acc) -> [{max(0, R - maps:get(P, Baseline, 0)), P} | Acc] end,
                       [], Pass),
    {Busy, Idle} = lists:partition(fun({D, _}) -> D > 0 end, Deltas),
    %% Only the processes that worked are sorted; the idle ones follow.
    {lists:sort(fun({D1, P1}, {D2, P2}) -> {D1, P2} >= {D2, P1} end, Busy) ++ Idle,
     lists:sum([D || {D, _} <- Busy])}.

%% Once, interval_ms after start: picks the processes of the first window
%% (unless a report did already).
bootstrap(#{bootstrapped := true} = State) ->
    State;
bootstrap(#{not_listed := NotListed, baseline := Baseline, limit := Limit} = State) ->
    {Ranked, _} = busiest(full_pass(NotListed), Baseline),
    Sampled = [P || {_, P} <- lists:sublist(Ranked, Limit)],
    start_ticks(watch(State#{bootstrapped := true, sampled := Sampled}, Sampled)).

watch(#{sched_watch := undefined} = State, _) -> State;
watch(#{sched_watch := RS} = State, Pids) -> State#{sched_watch := beamspy_sched_watch:watch(RS, Pids)}.

%% The ticks begin with the first window's processes (bootstrap or report).
start_ticks(#{ticking := true} = State) ->
    State;
start_ticks(State) ->
    self() ! {?MODULE, tick},
    State#{ticking := true}.

%% A tick is taken as of a past instant: top is often late, held up by the
%% busy process it shares a scheduler with, and ticks must not be in phase
%% with the workload.
tick(#{interval_ms := Interval, sampled := Pids} = State) ->
    Start = now_ms(),
    Now = erlang:monotonic_time(nanosecond),
    Last = maps:get(last_tick_ns, State, Now),
    %% As of an instant drawn since the previous tick: ticks come on timer
    %% ticks, like many workloads (see beamspy_sampler's sample_time/2).
    At = case Now > Last of
             true -> Last + rand:uniform(Now - Last);
             false -> Now
         end,
    Next = sample_all(Pids, At, taken(length(Pids), State)),
    _ = erlang:send_after(max(0, Interval - (now_ms() - Start)), self(), {?MODULE, tick}),
    %% Drawn after this tick's end next time: reading a waiting process's
    %% function wakes it for an instant, which is not its own work.
    Next#{last_tick_ns => erlang:monotonic_time(nanosecond)}.

taken(N, #{samples_taken := Taken} = State) ->
    State#{samples_taken := Taken + N}.

sample_all(Pids, _Due, #{sched_watch := undefined} = State) ->
    lists:foldl(fun sample/2, State, Pids);
sample_all(Pids, Due, #{sched_watch := RS} = State) ->
    States = beamspy_sched_watch:states(RS, Pids, Due),
    lists:foldl(fun({Pid, {running, Slices}}, S) -> owe(Pid, Slices, S);
                   ({Pid, {stopped, MFA}}, S) -> stopped(Pid, MFA, 1, S);
                   ({Pid, out}, S) -> waiting(Pid, S);
                   ({Pid, unknown}, S) -> sample(Pid, S)
                end, State, lists:zip(Pids, States)).

owe(Pid, Slices, #{pending := Pending} = State) ->
    N = case Pending of
            #{Pid := {Slices, Owed}} -> Owed + 1;
            #{} -> 1
        end,
    State#{pending := Pending#{Pid => {Slices, N}}}.

stopped_running(Pid, Slices, MFA, #{pending := Pending} = State) ->
    case Pending of
        #{Pid := {Slices, Owed}} ->
            stopped(Pid, MFA, Owed, State#{pending := maps:remove(Pid, Pending)});
        #{} ->
            State
    end.

%% Preempted: it burned CPU in MFA. Reached a receive: where it ran is not
%% known, said so.
stopped(Pid, MFA, Owed, State) ->
    case beamspy_sched_watch:settle(Pid, MFA) of
        preempted -> running_in(Pid, MFA, Owed, State);
        waited -> running_in(Pid, ?RAN_TO_RECEIVE, Owed, State);
        gone -> State
    end.

running_in(Pid, Function, N, #{samples := Samples, process_functions := PF,
                               functions := Fs} = State) ->
    State#{samples := Samples + N,
           process_functions := PF#{Pid => bump(Function, N, maps:get(Pid, PF, #{}))},
           functions := bump(Function, N, Fs)}.

%% Not running when the tick was due: counted for its own row, where it is.
waiting(Pid, #{process_functions := PF} = State) ->
    case erlang:process_info(Pid, current_function) of
        {current_function, MFA} ->
            State#{process_functions := PF#{Pid => bump(MFA, maps:get(Pid, PF, #{}))}};
        undefined ->
            State
    end.

%% Without run states: asked blindly (a running process answers at its next
%% receive or schedule-in). A process seen waiting counts for its own row
%% (where it waits), not for the node's hottest functions: those are what
%% runs.
sample(Pid, #{samples := N, process_functions := PF, functions := Fs} = State) ->
    case erlang:process_info(Pid, [current_function, status]) of
        [{current_function, MFA}, {status, waiting}] ->
            State#{process_functions := PF#{Pid => bump(MFA, maps:get(Pid, PF, #{}))}};
        [{current_function, MFA}, _] ->
            State#{samples := N + 1,
                   process_functions := PF#{Pid => bump(MFA, maps:get(Pid, PF, #{}))},
                   functions := bump(MFA, Fs)};
        undefined ->
            State
    end.

bump(Key, N, Counts) ->
    Counts#{Key => maps:get(Key, Counts, 0) + N}.

bump(Key, Counts) ->
    Counts#{Key => maps:get(Key, Counts, 0) + 1}.

report_and_renew(#{not_listed := NotListed, baseline := Baseline, limit := Limit,
                   window_start_ms := Started, samples := Samples, samples_taken := Taken,
                   process_functions := PF, functions := Fs} = State) ->
    Pass = full_pass(NotListed),
    Now = now_ms(),
    {Ranked, Total} = busiest(Pass, Baseline),
    Rows = rows(Ranked, Limit, PF, []),
    Report0 = #{window_ms => Now - Started,
                process_count => erlang:system_info(process_count),
                run_queue => erlang:statistics(total_run_queue_lengths),
                total_reductions => Total,
                samples => Samples,
                samples_taken => Taken,
                processes => Rows},
    {Report, Cpu} = hot_functions(maps:get(cpu_session, State), Fs, Report0),
    Sampled = [P || {_, P} <- lists:sublist(Ranked, Limit)],
    {Report, start_ticks(new_window(State#{bootstrapped := true, cpu_session := Cpu}, Pass, Sampled))}.

%% The window's hottest functions: from the CPU session when it runs, else
%% from the busiest processes' samples, saying why (a CPU session that
%% stopped, at a limit, says so from then on).
hot_functions({on, Owner, Hz} = Cpu, Fs, Report) ->
    case beamspy_session:cpu_hot(Owner, ?FUNCTIONS_PER_REPORT) of
        {ok, #{samples := All, scheduler := Sch, functions := Hot}} ->
            {Report#{functions => Hot, hot => cpu, cpu_hz => Hz, cpu_samples => All - Sch,
                     cpu_scheduler => Sch}, Cpu};
        {error, Reason} ->
            Why = iolist_to_binary(io_lib:format("the CPU session ended (~0tp)", [Reason])),
            hot_functions({off, Why}, Fs, Report)
    end;
hot_functions({off, Why} = Cpu, Fs, Report) ->
    {Report#{functions => hottest(Fs, ?FUNCTIONS_PER_REPORT), hot => sampled, hot_why => Why}, Cpu}.

%% The first Limit processes of Ranked still alive.
rows(_, 0, _, Acc) ->
    lists:reverse(Acc);
rows([], _, _, Acc) ->
    lists:reverse(Acc);
rows([{Delta, Pid} | Rest], Left, PF, Acc) ->
    case erlang:process_info(Pid, [registered_name, message_queue_len, memory,
                                   current_function]) of
        [{registered_name, Name}, {message_queue_len, Q}, {memory, M}, {current_function, C}] ->
            Row = #{pid => list_to_binary(pid_to_list(Pid)),
                    name => case Name of
                                [] -> <<>>;
                                _ -> atom_to_binary(Name, utf8)
                            end,
                    reductions => Delta,
                    message_queue_len => Q,
                    memory => M,
                    current => C,
                    functions => hottest(maps:get(Pid, PF, #{}), ?FUNCTIONS_PER_PROCESS)},
            rows(Rest, Left - 1, PF, [Row | Acc]);
        undefined ->
            rows(Rest, Left, PF, Acc)
    end.

%% The N most sampled functions, most first (ties by {M, F, A}).
hottest(Counts, N) ->
    Sorted = lists:sort(fun({MFA1, C1}, {MFA2, C2}) -> {C1, MFA2} >= {C2, MFA1} end,
                        maps:to_list(Counts)),
    lists:sublist(Sorted, N).
