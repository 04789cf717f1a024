%%% @doc Statistical sampling of process stacks (`beamspy record --mode
%%% sample'): the sampling mode of beamspy, with no tracing and no NIF.
%%%
%%% The command-line tool loads this module into a running node (with
%%% `code:load_binary/3') and drives it with rpc, so it depends on kernel,
%%% stdlib, {@link beamspy_session:labels/1} and {@link
%%% beamspy_opts:default/1} (its defaults) only, and needs no application
%%% to be started.
%%%
%%% A sampler is one process, at high priority. Every `interval_ms' it
%%% takes a round, as of an instant drawn at random since the previous
%%% round (rounds come on timer ticks, like many workloads: sampling at the
%%% ticks would always catch those at the same phase; and a sampler is
%%% often late, sharing a scheduler with the busy processes it samples). It
%%% counts what runs, where it runs, through {@link beamspy_sched_watch} (the
%%% NIF traces only `running', in/out, of the targets: one callback per
%%% time slice):
%%% <ul>
%%% <li>a target that was not running is counted where it is, with a last
%%%   frame as beamspy's tracing mode charges scheduled-out time: `WAIT'
%%%   (waiting in a `receive'), `RUNNABLE' (runnable, not yet scheduled) or
%%%   `SLEEP' (suspended);</li>
%%% <li>a target that was running is counted when it stops running: if its
%%%   slice ran out (preempted), its stack is read while it is descheduled,
%%%   exactly where it burned CPU; if it reached a `receive' before, where
%%%   it ran is not observable without tracing calls: the sample is
%%%   counted under the stack where it waits, with a last frame
%%%   `[ran to receive]' (short handlers of a server that is not saturated
%%%   look like this: trace it to see inside them);</li>
%%% <li>a stopped process read too late (it ran again before it answered)
%%%   is read again at its next stop, up to three times; then it keeps
%%%   only the function the VM named at `out', under `[truncated]'.</li>
%%% </ul>
%%% Asking blindly instead, as `process_info' does, lands in receive loops:
%%% the process answers when it next handles signals, which for a server is
%%% its next `receive' (see {@link beamspy_sched_watch}). Without run states
%%% (the NIF cannot load, or on OTP 25/26 a target already has a tracer)
%%% the sampler does ask blindly, and says so: `method => process_info'.
%%%
%%% Stacks are complete: read from `process_info(P, backtrace)', every
%%% frame, recursion included (`current_stacktrace' keeps at most 64 frames
%%% and merges a recursion into one frame), at most 1000 frames; a deeper
%%% stack keeps its 1000 innermost frames under a root frame `[truncated]'.
%%% No system flag is changed.
%%%
%%% `counts' in the result says what was seen: `running' samples
%%% (`preempted', `ran_to_receive', `late'), `waiting' ones, `asked'
%%% (without run states), `unresolved' (running, but it exited or sampling
%%% ended before it stopped) and `truncated' stacks.
%%%
%%% A process that has not run yet has no frame: its line is its root alone.
%%%
%%% Memory is bounded: at most `max_stacks' distinct (process, stack) pairs
%%% are kept, each as a tuple of small integers (one word a frame, at most
%%% 1000 frames): with the map that holds them, about 0.5 KB a stack plus 8
%%% bytes a frame (the default cap of 100,000 stacks with typical stacks of
%%% 10-60 frames: 50 to 100 MB at most). One backtrace text (a few KB, more
%%% for deep stacks) is held at a time; pending samples are one map entry
%%% per running target. Samples of further stacks
%%% are counted under one `[other stacks]' line per process. Besides that
%%% the sampler keeps one label per sampled process and one entry per
%%% distinct function. The list of stacks is built only on {@link stop/1}.
%%%
%%% Frames are not spelled here: {@link stop/1} returns them raw (`{M, F,
%%% A}' tuples, the root's raw label, and texts for `SLEEP' and `[other
%%% stacks]'), and
%%% the command-line tool spells them with the engine's one speller (in
%%% Erlang, {@link beamspy_tracer:frame_name/2}), as every mode does.
%%%
%%% ```
%%% {ok, S} = beamspy_sampler:start(#{owner => self(), targets => [my_server]}),
%%% timer:sleep(5000),
%%% {ok, #{stacks := Stacks}} = beamspy_sampler:stop(S),
%%% [{<<"<0.90.0> my_server">>, [{proc_lib, init_p_do_apply, 3} | _], _} | _] = Stacks.
%%% '''
-module(beamspy_sampler).

-export([start/1, info/1, stop/1]).

%% The sampler process's entry point (started by start/1 with proc_lib).
-export([init/1]).

-define(DEFAULT_INTERVAL_MS, beamspy_opts:default(sample_interval_ms)).
-define(DEFAULT_MAX_STACKS, 100000).
-define(DEFAULT_MAX_DURATION_MS, 60000).
-define(MAX_FRAMES, 1000).
-define(LATE_TRIES, 3).
-define(SLEEP_FRAME, <<"SLEEP">>).
-define(RAN_TO_RECEIVE_FRAME, <<"[ran to receive]">>).
-define(WAIT_FRAME, <<"WAIT">>).
-define(RUNNABLE_FRAME, <<"RUNNABLE">>).
-define(TRUNCATED_FRAME, <<"[truncated]">>).
-define(OTHER_STACKS_FRAME, <<"[other stacks]">>).
-define(COUNT_KEYS, [running, preempted, ran_to_receive, late, waiting, asked, unresolved,
                     truncated]).

-type target() :: pid() | atom().
-type opts() :: #{owner := pid(),
                  targets => all | [target()],
                  interval_ms => pos_integer(),
                  max_stacks => pos_integer(),
                  max_duration_ms => pos_integer()}.
-type info() :: #{samples := non_neg_integer(), rounds := non_neg_integer(),
                  processes := non_neg_integer(), stacks := non_neg_integer(),
                  memory := non_neg_integer(), elapsed_ms := non_neg_integer()}.
-type frame() :: mfa() | binary().
-type stack() :: {Root :: beamspy_session:label(), [frame()], Count :: pos_integer()}.
-type result() :: #{stacks := [stack()], samples := non_neg_integer(),
                    rounds := non_neg_integer(), processes := non_neg_integer(),
                    elapsed_ms := non_neg_integer(), interval_ms := pos_integer(),
                    method := run_states | process_info,
                    counts := #{atom() => non_neg_integer()}}.
-export_type([opts/0, info/0, result/0, frame/0, stack/0]).

%%% ---------------------------------------------------------------------
%%% API
%%% ---------------------------------------------------------------------

%% @doc Starts a sampler for `owner' (required): it samples `targets'
%% (default `all': every process but the sampler and the owner; registered
%% names are resolved now) every `interval_ms' (default 10) until {@link
%% stop/1}, the owner's death, or `max_duration_ms' (default 60000; sampling
%% then ends but the samples are kept for {@link stop/1}). At most
%% `max_stacks' (default 100000) distinct stacks are kept.
%%
%% Errors: `{error, {noproc, Target}}' for a name not registered or a pid
%% not alive, `{error, {bad_option, Option}}' otherwise.
%%
%% ```
%% {ok, S} = beamspy_sampler:start(#{owner => self(), interval_ms => 5}).
%% '''
-spec start(opts()) -> {ok, pid()} | {error, term()}.
start(Opts) when is_map(Opts) ->
    case check_opts(Opts) of
        {ok, Config0} ->
            case beamspy_procs:resolve(maps:get(targets, Config0)) of
                {ok, Targets} ->
                    beamspy_procs:start(?MODULE, Config0#{targets := Targets}, sampler_failed);
                {error, _} = Error ->
                    Error
            end;
        {error, _} = Error ->
            Error
    end;
start(Other) ->
    {error, {bad_option, Other}}.

%% @doc How far the sampler has got: samples taken, rounds done, distinct
%% processes and stacks seen, the sampler's own memory (bytes, from
%% `process_info(Sampler, memory)') and the time sampled so far.
%%
%% ```
%% {ok, #{samples := N, stacks := S}} = beamspy_sampler:info(Sampler).
%% '''
-spec info(pid()) -> {ok, info()} | {error, term()}.
info(Sampler) ->
    call(Sampler, info).

%% @doc Stops sampling, switches its tracing off, and returns the samples
%% as `stacks': one `{Root, Frames, Count}' per distinct stack, Frames root
%% first, where Root is the process label, raw as {@link
%% beamspy_session:labels/1} gives it, and each frame is raw too: an `{M, F,
%% A}', or a text: `<<"WAIT">>', `<<"RUNNABLE">>' or `<<"SLEEP">>' (the last
%% frame of a process not running: waiting in a receive, runnable, suspended),
%% `<<"[ran to receive]">>' (the last frame of a running process that
%% reached a receive before it could be seen), `<<"[truncated]">>' (the
%% first frame of an incomplete stack) or `<<"[other stacks]">>'. `counts'
%% and `method' say how the samples were taken (see the module doc).
%% {@link beamspy_tracer:frame_name/2} spells them (the root `<0.90.0>
%% my_server') as every output does. The sampler exits.
%%
%% ```
%% {ok, #{stacks := [{{<<"<0.90.0>">>, my_server},
%%                    [{proc_lib, init_p_do_apply, 3}, {gen_server, loop, 7}, <<"WAIT">>],
%%                    498}]}} = beamspy_sampler:stop(S).
%% '''
-spec stop(pid()) -> {ok, result()} | {error, term()}.
stop(Sampler) ->
    call(Sampler, stop).

%%% ---------------------------------------------------------------------
%%% Options
%%% ---------------------------------------------------------------------

check_opts(Opts) ->
    Defaults = #{targets => all,
                 interval_ms => ?DEFAULT_INTERVAL_MS,
                 max_stacks => ?DEFAULT_MAX_STACKS,
                 max_duration_ms => ?DEFAULT_MAX_DURATION_MS},
    beamspy_procs:check_opts(Opts, Defaults, fun valid_option/2, owner).

valid_option(targets, all) -> true;
valid_option(targets, L) when is_list(L) ->
    lists:all(fun(T) -> is_pid(T) orelse is_atom(T) end, L);
valid_option(interval_ms, N) -> is_integer(N) andalso N > 0;
valid_option(max_stacks, N) -> is_integer(N) andalso N > 0;
valid_option(max_duration_ms, N) -> is_integer(N) andalso N > 0;
valid_option(_, _) -> false.


%%% ---------------------------------------------------------------------
%%% Talking to the sampler
%%% ---------------------------------------------------------------------

call(Sampler, Request) when is_pid(Sampler) ->
    beamspy_procs:call(Sampler, ?MODULE, Request, sampler_failed);
call(Other, _) ->
    {error, {bad_sampler, Other}}.

%%% ---------------------------------------------------------------------
%%% The sampler process
%%% ---------------------------------------------------------------------

%% @private
-spec init(map()) -> ok.
init(#{owner := Owner, max_duration_ms := MaxDuration, targets := Targets} = Config) ->
    %% High priority: told that a sampled process stopped running, the
    %% sampler must read its stack before it runs again.
    _ = process_flag(priority, high),
    ok = beamspy_jobs:init_or_refuse(),
    OwnerMon = erlang:monitor(process, Owner),
    {RS, Method} = case beamspy_sched_watch:open(Targets) of
                       {ok, R} -> {R, run_states};
                       {error, Why} -> {undefined, {process_info, Why}}
                   end,
    self() ! {?MODULE, round},
    _ = erlang:send_after(MaxDuration, self(), {?MODULE, max_duration}),
    proc_lib:init_ack({ok, self()}),
    State = Config#{owner_mon => OwnerMon,
                    sched_watch => RS,
                    method => Method,
                    sampling => true,
                    started_ms => now_ms(),
                    ended_ms => undefined,
                    rounds => 0,
                    samples => 0,
                    counts => #{},           % running, waiting, preempted, ran_to_receive, ...
                    pending => #{},          % Pid => {Slices, Owed, Tries}: ran at a round, stack due
                    labels => #{},           % pid => root label
                    frame_ids => #{},        % {M, F, A} | binary() => small integer
                    stack_counts => #{},     % {Pid, Kind, FrameIdTuple} | {Pid, other} => count
                    distinct_stacks => 0},
    try
        loop(State)
    catch
        Class:Reason:Stacktrace ->
            %% A sampler that fails still switches its tracing off.
            _ = end_sampling(State),
            erlang:raise(Class, Reason, Stacktrace)
    end.

loop(State) ->
    receive
        {beamspy_out, Pid, Slices, MFA} ->
            loop(stopped_running(Pid, Slices, MFA, State));
        {?MODULE, round} ->
            loop(sample_round(State));
        {?MODULE, max_duration} ->
            loop(end_sampling(State));
        {?MODULE, info, From, Tag} ->
            From ! {Tag, info_map(State)},
            loop(State);
        {?MODULE, stop, From, Tag} ->
            Ended = end_sampling(State),
            Result = result(Ended),
            ok = beamspy_jobs:mark_done(),
            From ! {Tag, Result},
            ok;
        {'DOWN', Mon, process, _, _} when Mon =:= map_get(owner_mon, State) ->
            _ = end_sampling(State),
            ok;
        _Other ->
            loop(State)
    end.

%% Sampling ends once: tracing goes off, and the samples still due (running
%% processes that had not stopped yet) are counted as unresolved.
end_sampling(#{sampling := false} = State) ->
    State;
end_sampling(#{sched_watch := RS, pending := Pending} = State) ->
    _ = case RS of
            undefined -> ok;
            _ -> beamspy_sched_watch:close(RS)
        end,
    Owed = lists:sum([N || {_, N, _} <- maps:values(Pending)]),
    bump_count(unresolved, Owed, State#{sampling := false, ended_ms := now_ms(), pending := #{}}).

now_ms() ->
    erlang:monotonic_time(millisecond).

%%% Rounds

sample_round(#{sampling := false} = State) ->
    State;
sample_round(#{interval_ms := Interval} = State) ->
    Start = now_ms(),
    Now = erlang:monotonic_time(nanosecond),
    Sampled = sample_all(targets(State), sample_time(maps:get(last_round_ns, State, Now), Now),
                         State),
    Taken = now_ms() - Start,
    _ = erlang:send_after(max(0, Interval - Taken), self(), {?MODULE, round}),
    %% The next instant is drawn after this round's end: reading a waiting
    %% process's stack wakes it for an instant, which is not its own work.
    Sampled#{rounds := maps:get(rounds, Sampled) + 1,
             last_round_ns => erlang:monotonic_time(nanosecond)}.

%% The instant a round samples: drawn at random since the previous round.
%% Rounds come on timer ticks, and so do many workloads (a process woken
%% every millisecond): sampling at the ticks themselves would see such a
%% process always at the same phase of its cycle (measured: a server busy
%% 20% of the time, woken each millisecond, was seen running in 2% of the
%% samples). The NIF remembers the last 16 slices of each process, enough
%% to tell what it was doing at any instant since the previous round.
sample_time(Last, Now) when Now > Last ->
    Last + rand:uniform(Now - Last);
sample_time(_, Now) ->
    Now.

targets(#{targets := all, owner := Owner}) ->
    Self = self(),
    [P || P <- erlang:processes(), P =/= Self, P =/= Owner];
targets(#{targets := Pids}) ->
    Pids.

%% Without run states, every process is asked where it is (biased towards
%% receive loops, see beamspy_sched_watch). With them: a process that runs now
%% is counted once it stops (stopped_running/4); one that does not run is
%% counted where it waits, with a WAIT, RUNNABLE or SLEEP leaf by its status.
%% The round is taken as of a past instant (Due, ns, see sample_time/2):
%% the sampler is also often late, held up by the busy process it shares a
%% scheduler with.
sample_all(Pids, _Due, #{sched_watch := undefined} = State) ->
    lists:foldl(fun asked/2, State, Pids);
sample_all(Pids, Due, #{sched_watch := RS} = State) ->
    States = beamspy_sched_watch:states(RS, Pids, Due),
    lists:foldl(fun({Pid, {running, Slices}}, S) -> owe(Pid, Slices, S);
                   ({Pid, {stopped, MFA}}, S) -> stopped(Pid, MFA, 1, S);
                   ({Pid, out}, S) -> not_running(Pid, S);
                   ({Pid, unknown}, S) -> asked(Pid, S)
                end, State, lists:zip(Pids, States)).

%% A process running at a round owes a sample, settled when it stops. Two
%% rounds within one slice owe two.
owe(Pid, Slices, State) ->
    owe(Pid, Slices, 1, 0, State).

%% Tries: how many times its stack was read too late already.
owe(Pid, Slices, N, Tries, #{pending := Pending} = State) ->
    case Pending of
        #{Pid := {Slices, Owed, T}} ->
            State#{pending := Pending#{Pid := {Slices, Owed + N, max(T, Tries)}}};
        #{Pid := {_, Lost, _}} -> % its message never came (it cannot be sent, or the process is gone)
            bump_count(unresolved, Lost, State#{pending := Pending#{Pid := {Slices, N, Tries}}});
        #{} ->
            State#{pending := Pending#{Pid => {Slices, N, Tries}}}
    end.

%% It stopped running. Preempted: it is descheduled where it burned CPU,
%% and answers from there. Waiting: it ran into a receive before its slice
%% ended, and where it ran is not known; counted under the stack where it
%% waits, with a `[ran to receive]' leaf. The stack must end in the
%% function the VM said it stopped in; if not, it ran again before it
%% answered, and only that function is kept (under `[truncated]').
stopped_running(Pid, Slices, MFA, #{pending := Pending} = State) ->
    case Pending of
        #{Pid := {Slices, Owed, Tries}} ->
            stopped(Pid, MFA, Owed, Tries, State#{pending := maps:remove(Pid, Pending)});
        #{} ->
            State
    end.

stopped(Pid, MFA, Owed, State) ->
    stopped(Pid, MFA, Owed, 0, State).

stopped(Pid, MFA, Owed, Tries, State) ->
    case beamspy_sched_watch:settle(Pid, MFA) of
        preempted -> preempted(Pid, MFA, Owed, Tries, State);
        waited -> ran_to_receive(Pid, Owed, State);
        gone -> bump_count(unresolved, Owed, State)
    end.

preempted(Pid, MFA, Owed, Tries, State) ->
    case stack(Pid) of
        {Frames, Complete} ->
            case where_stopped(MFA, Frames) of
                true ->
                    add(Pid, running, Frames, Complete, Owed, bump_count(preempted, Owed, State));
                false when Tries < ?LATE_TRIES ->
                    next_stop(Pid, MFA, Owed, Tries + 1, State);
                false ->
                    add(Pid, running, [MFA], false, Owed, bump_count(late, Owed, State))
            end;
        undefined ->
            bump_count(unresolved, Owed, State)
    end.

%% Read too late: the sample waits for the process's next stop instead (for
%% a busy process, where it stops next is as good a sample of its CPU).
next_stop(Pid, MFA, Owed, Tries, #{sched_watch := RS} = State) ->
    case beamspy_sched_watch:states(RS, [Pid], erlang:monotonic_time(nanosecond)) of
        [{running, Slices}] -> owe(Pid, Slices, Owed, Tries, State);
        [{stopped, Again}] -> stopped(Pid, Again, Owed, Tries, State);
        _ -> add(Pid, running, [MFA], false, Owed, bump_count(late, Owed, State))
    end.

%% The stack was read where the process stopped if it ends in the function
%% the VM named at `out', or calls from it (stopped at a call, the VM may
%% name the caller while the stack already has the callee's frame).
where_stopped(MFA, [MFA | _]) -> true;
where_stopped(MFA, [_, MFA | _]) -> true;
where_stopped(_, _) -> false.

ran_to_receive(Pid, Owed, State) ->
    case stack(Pid) of
        {Frames, Complete} -> add(Pid, ran_to_receive, Frames, Complete, Owed,
                                  bump_count(ran_to_receive, Owed, State));
        undefined -> bump_count(unresolved, Owed, State)
    end.

not_running(Pid, State) ->
    case erlang:process_info(Pid, [status, backtrace]) of
        [{status, Status}, {backtrace, Text}] ->
            {Frames, Complete} = beamspy_dump:parse_backtrace(Text, ?MAX_FRAMES),
            add(Pid, scheduled_out(Status), Frames, Complete, 1, State);
        undefined ->
            State
    end.

%% How a process that is not running is scheduled out, by its status.
scheduled_out(waiting) -> wait;
scheduled_out(suspended) -> sleep;
scheduled_out(_) -> runnable.

%% The old way, for processes without run states: status and stack at once
%% (a running process answers at its next receive or schedule-in).
asked(Pid, State) ->
    case erlang:process_info(Pid, [status, backtrace]) of
        [{status, Status}, {backtrace, Text}] ->
            {Frames, Complete} = beamspy_dump:parse_backtrace(Text, ?MAX_FRAMES),
            Kind = case Status of
                       waiting -> wait;
                       suspended -> sleep;
                       _ -> asked
                   end,
            add(Pid, Kind, Frames, Complete, 1, State);
        undefined ->
            State
    end.

%% The whole stack, top first, from the process's backtrace (every frame,
%% recursion included, at most MAX_FRAMES), and whether it is all of it.
stack(Pid) ->
    case erlang:process_info(Pid, backtrace) of
        {backtrace, Text} -> beamspy_dump:parse_backtrace(Text, ?MAX_FRAMES);
        undefined -> undefined
    end.

bump_count(_, 0, State) ->
    State;
bump_count(Key, N, #{counts := Counts} = State) ->
    State#{counts := Counts#{Key => maps:get(Key, Counts, 0) + N}}.

%% N samples of Pid with Frames (top first).
add(Pid, Kind, Frames, Complete, N, State0) ->
    State1 = bump_count(kind_count(Kind), N, State0),
    State2 = case Complete of
                 true -> State1;
                 false -> bump_count(truncated, N, State1)
             end,
    State = with_label(Pid, State2),
    {FrameIds, State3} = frame_ids(Frames, Complete, State),
    #{stack_counts := Counts, distinct_stacks := Distinct,
      max_stacks := Max, samples := Samples} = State3,
    Key = {Pid, Kind, FrameIds},
    case Counts of
        #{Key := C} ->
            State3#{stack_counts := Counts#{Key := C + N}, samples := Samples + N};
        #{} when Distinct < Max ->
            State3#{stack_counts := Counts#{Key => N}, distinct_stacks := Distinct + 1,
                    samples := Samples + N};
        #{} ->
            Other = {Pid, other},
            State3#{stack_counts := Counts#{Other => maps:get(Other, Counts, 0) + N},
                    samples := Samples + N}
    end.

kind_count(sleep) -> waiting;
kind_count(wait) -> waiting;
kind_count(runnable) -> waiting;
kind_count(asked) -> asked;
kind_count(_) -> running.

with_label(Pid, #{labels := Labels} = State) ->
    case Labels of
        #{Pid := _} -> State;
        #{} -> State#{labels := maps:merge(Labels, beamspy_session:labels([Pid]))}
    end.

%% The stack, root first, as a tuple of frame ids; a stack that is not
%% complete starts with `[truncated]'.
frame_ids(Frames, Complete, #{frame_ids := Ids0} = State) ->
    Rooted = case Complete of
                 true -> Frames;
                 false -> Frames ++ [?TRUNCATED_FRAME]
             end,
    {Tuple, Ids} = lists:foldl(fun(Frame, {Acc, Ids}) ->
                                       case Ids of
                                           #{Frame := Id} -> {[Id | Acc], Ids};
                                           #{} ->
                                               Id = map_size(Ids),
                                               {[Id | Acc], Ids#{Frame => Id}}
                                       end
                               end, {[], Ids0}, Rooted),
    {list_to_tuple(Tuple), State#{frame_ids := Ids}}.

%%% Replies

elapsed_ms(#{started_ms := Started, ended_ms := undefined}) -> now_ms() - Started;
elapsed_ms(#{started_ms := Started, ended_ms := Ended}) -> Ended - Started.

info_map(#{samples := Samples, rounds := Rounds, labels := Labels,
           distinct_stacks := Stacks} = State) ->
    {memory, Memory} = erlang:process_info(self(), memory),
    #{samples => Samples,
      rounds => Rounds,
      processes => map_size(Labels),
      stacks => Stacks,
      memory => Memory,
      elapsed_ms => elapsed_ms(State)}.

result(#{samples := Samples, rounds := Rounds, labels := Labels,
         interval_ms := Interval, counts := Counts, method := Method} = State) ->
    #{stacks => stacks(State),
      samples => Samples,
      rounds => Rounds,
      processes => map_size(Labels),
      elapsed_ms => elapsed_ms(State),
      interval_ms => Interval,
      method => case Method of
                    run_states -> run_states;
                    {process_info, _} -> process_info
                end,
      counts => maps:merge(maps:from_list([{K, 0} || K <- ?COUNT_KEYS]), Counts)}.

%% One {Root, Frames, Count} a stack, sorted so that equal runs give equal
%% terms. Frames stay raw: whoever shows them spells them.
stacks(#{stack_counts := Counts, labels := Labels, frame_ids := Ids}) ->
    Frames = list_to_tuple([F || {F, _} <- lists:keysort(2, maps:to_list(Ids))]),
    lists:sort([stack(Key, Count, Labels, Frames) || {Key, Count} <- maps:to_list(Counts)]).

stack({Pid, other}, Count, Labels, _Frames) ->
    {maps:get(Pid, Labels), [?OTHER_STACKS_FRAME], Count};
stack({Pid, Kind, FrameIds}, Count, Labels, Frames) ->
    Path = [element(Id + 1, Frames) || Id <- tuple_to_list(FrameIds)],
    {maps:get(Pid, Labels), Path ++ leaf(Kind), Count}.

leaf(sleep) -> [?SLEEP_FRAME];
leaf(wait) -> [?WAIT_FRAME];
leaf(runnable) -> [?RUNNABLE_FRAME];
leaf(ran_to_receive) -> [?RAN_TO_RECEIVE_FRAME];
leaf(_) -> [].
