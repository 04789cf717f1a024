%%% @doc Statistical sampling of process stacks (`beamspy record --mode
%%% sample'): the sampling mode of beamspy, with no tracing and no NIF.
%%%
%%% The command-line tool loads this module into a running node (with
%%% `code:load_binary/3') and drives it with rpc, so it depends on kernel,
%%% stdlib, {@link beamspy_session:labels/1} and {@link
%%% beamspy_opts:default/1} (its defaults) only, and needs no application
%%% to be started.
%%%
%%% A sampler is one process. Every `interval_ms' it takes a round: for each
%%% target process it reads `status' and `current_stacktrace' and counts the
%%% stack. A process that is waiting (in a `receive') is counted under its
%%% stack with a last frame `WAIT', one that is suspended with `SLEEP', as
%%% beamspy's tracing mode charges time spent waiting for a message to a
%%% `WAIT' leaf. A runnable process is counted as running (its place in the
%%% run queue is not told apart). Rounds are spaced by
%%% `interval_ms' from the start of one to the start of the next; a round
%%% that takes longer than that is followed by the next at once.
%%%
%%% A process that has not run yet has no frame: its line is its root alone.
%%%
%%% `current_stacktrace' keeps `backtrace_depth' frames (8 by default):
%%% while sampling, that node-wide system flag is raised to 64 (it is also
%%% the depth of exception stack traces on the whole node), with
%%% `erlang:system_flag(backtrace_depth, 64)', and the value it had is put
%%% back when sampling ends: on
%%% {@link stop/1}, when the owner dies, when `max_duration_ms' passes, or
%%% when the sampler fails. Only a sampler killed with `exit(P, kill)' cannot
%%% restore it; two samplers (or a sampler and {@link beamspy_dump}) running
%%% at once may leave it at 64. The VM also collapses directly recursive
%%% frames in `current_stacktrace', so sampled stacks show a recursion once.
%%%
%%% Memory is bounded: at most `max_stacks' distinct (process, stack) pairs
%%% are kept, each as a tuple of small integers (one word a frame, at most 64
%%% frames): with the map that holds them, about 0.5 KB a stack plus 8 bytes
%%% a frame (the default cap of 100,000 stacks: 50 to 100 MB at most). Samples of further stacks
%%% are counted under one `[other stacks]' line per process. Besides that
%%% the sampler keeps one label per sampled process and one entry per
%%% distinct function. The list of stacks is built only on {@link stop/1}.
%%%
%%% Frames are not spelled here: {@link stop/1} returns them raw (`{M, F,
%%% A}' tuples, and texts for the root, `SLEEP' and `[other stacks]'), and
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
-define(SAMPLING_DEPTH, 64).
-define(SLEEP_FRAME, <<"SLEEP">>).
-define(WAIT_FRAME, <<"WAIT">>).
-define(OTHER_STACKS_FRAME, <<"[other stacks]">>).

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
-type stack() :: {Root :: binary(), [frame()], Count :: pos_integer()}.
-type result() :: #{stacks := [stack()], samples := non_neg_integer(),
                    rounds := non_neg_integer(), processes := non_neg_integer(),
                    elapsed_ms := non_neg_integer(), interval_ms := pos_integer()}.
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
                    start_sampler(Config0#{targets := Targets});
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

%% @doc Stops sampling, restores `backtrace_depth', and returns the samples
%% as `stacks': one `{Root, Frames, Count}' per distinct stack, Frames root
%% first, where Root is the process label as {@link
%% beamspy_session:labels/1} spells it and each frame is raw: an `{M, F, A}',
%% or the text `<<"WAIT">>' (the last frame of a process waiting in a
%% receive), `<<"SLEEP">>' (of a suspended one) or
%% `<<"[other stacks]">>'. {@link beamspy_tracer:frame_name/2} spells them
%% as every output does. The sampler exits.
%%
%% ```
%% {ok, #{stacks := [{<<"<0.90.0> my_server">>,
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
    case maps:find(owner, Opts) of
        {ok, Owner} when is_pid(Owner) ->
            check_each(maps:to_list(maps:remove(owner, Opts)), maps:merge(Defaults, Opts));
        {ok, Bad} ->
            {error, {bad_option, {owner, Bad}}};
        error ->
            {error, {bad_option, {owner, missing}}}
    end.

check_each([], Config) ->
    {ok, Config};
check_each([{Key, Value} | Rest], Config) ->
    case valid_option(Key, Value) of
        true -> check_each(Rest, Config);
        false -> {error, {bad_option, {Key, Value}}}
    end.

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

start_sampler(Config) ->
    case proc_lib:start_monitor(?MODULE, init, [Config]) of
        {{ok, Pid}, Mon} ->
            erlang:demonitor(Mon, [flush]),
            {ok, Pid};
        {{error, Why}, Mon} -> % it died before it acknowledged
            erlang:demonitor(Mon, [flush]),
            {error, {sampler_failed, Why}}
    end.

call(Sampler, Request) when is_pid(Sampler) ->
    beamspy_procs:call(Sampler, ?MODULE, Request, sampler_failed);
call(Other, _) ->
    {error, {bad_sampler, Other}}.

%%% ---------------------------------------------------------------------
%%% The sampler process
%%% ---------------------------------------------------------------------

%% @private
-spec init(map()) -> ok.
init(#{owner := Owner, max_duration_ms := MaxDuration} = Config) ->
    OwnerMon = erlang:monitor(process, Owner),
    PreviousDepth = erlang:system_flag(backtrace_depth, ?SAMPLING_DEPTH),
    self() ! {?MODULE, round},
    _ = erlang:send_after(MaxDuration, self(), {?MODULE, max_duration}),
    proc_lib:init_ack({ok, self()}),
    State = Config#{owner_mon => OwnerMon,
                    previous_depth => PreviousDepth,
                    sampling => true,
                    started_ms => now_ms(),
                    ended_ms => undefined,
                    rounds => 0,
                    samples => 0,
                    labels => #{},           % pid => root label
                    frame_ids => #{},        % {M, F, A} => small integer
                    stack_counts => #{},     % {Pid, Sleep, FrameIdTuple} | {Pid, other} => count
                    distinct_stacks => 0},
    try
        loop(State)
    catch
        Class:Reason:Stacktrace ->
            %% A sampler that fails still puts the flag back.
            _ = erlang:system_flag(backtrace_depth, PreviousDepth),
            erlang:raise(Class, Reason, Stacktrace)
    end.

loop(State) ->
    receive
        {?MODULE, round} ->
            loop(sample_round(State));
        {?MODULE, max_duration} ->
            loop(end_sampling(State));
        {?MODULE, info, From, Tag} ->
            From ! {Tag, info_map(State)},
            loop(State);
        {?MODULE, stop, From, Tag} ->
            Ended = end_sampling(State),
            From ! {Tag, result(Ended)},
            ok;
        {'DOWN', Mon, process, _, _} when Mon =:= map_get(owner_mon, State) ->
            _ = end_sampling(State),
            ok;
        _Other ->
            loop(State)
    end.

%% Sampling ends once; the flag goes back to what it was.
end_sampling(#{sampling := false} = State) ->
    State;
end_sampling(#{previous_depth := Depth} = State) ->
    _ = erlang:system_flag(backtrace_depth, Depth),
    State#{sampling := false, ended_ms := now_ms()}.

now_ms() ->
    erlang:monotonic_time(millisecond).

%%% Rounds

sample_round(#{sampling := false} = State) ->
    State;
sample_round(#{interval_ms := Interval} = State) ->
    Start = now_ms(),
    Sampled = lists:foldl(fun sample/2, State, targets(State)),
    Taken = now_ms() - Start,
    _ = erlang:send_after(max(0, Interval - Taken), self(), {?MODULE, round}),
    Sampled#{rounds := maps:get(rounds, Sampled) + 1}.

targets(#{targets := all, owner := Owner}) ->
    Self = self(),
    [P || P <- erlang:processes(), P =/= Self, P =/= Owner];
targets(#{targets := Pids}) ->
    Pids.

sample(Pid, State) ->
    case erlang:process_info(Pid, [status, current_stacktrace]) of
        [{status, Status}, {current_stacktrace, Stack}] ->
            count(Pid, sleeping(Status), Stack, State);
        undefined ->
            State
    end.

sleeping(waiting) -> wait;
sleeping(suspended) -> true;
sleeping(_) -> false.

count(Pid, Sleep, Stack, State0) ->
    State = with_label(Pid, State0),
    {FrameIds, State1} = frame_ids(Stack, State),
    #{stack_counts := Counts, distinct_stacks := Distinct,
      max_stacks := Max, samples := Samples} = State1,
    Key = {Pid, Sleep, FrameIds},
    case Counts of
        #{Key := N} ->
            State1#{stack_counts := Counts#{Key := N + 1}, samples := Samples + 1};
        #{} when Distinct < Max ->
            State1#{stack_counts := Counts#{Key => 1}, distinct_stacks := Distinct + 1,
                    samples := Samples + 1};
        #{} ->
            Other = {Pid, other},
            State1#{stack_counts := Counts#{Other => maps:get(Other, Counts, 0) + 1},
                    samples := Samples + 1}
    end.

with_label(Pid, #{labels := Labels} = State) ->
    case Labels of
        #{Pid := _} -> State;
        #{} -> State#{labels := maps:merge(Labels, beamspy_session:labels([Pid]))}
    end.

%% The stack, root first, as a tuple of frame ids.
frame_ids(Stack, #{frame_ids := Ids0} = State) ->
    {Frames, Ids} = lists:foldl(fun({M, F, A, _Location}, {Acc, Ids}) ->
                                        MFA = {M, F, arity(A)},
                                        case Ids of
                                            #{MFA := Id} -> {[Id | Acc], Ids};
                                            #{} ->
                                                Id = map_size(Ids),
                                                {[Id | Acc], Ids#{MFA => Id}}
                                        end
                                end, {[], Ids0}, Stack),
    {list_to_tuple(Frames), State#{frame_ids := Ids}}.

arity(A) when is_integer(A) -> A;
arity(Args) when is_list(Args) -> length(Args).

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
         interval_ms := Interval} = State) ->
    #{stacks => stacks(State),
      samples => Samples,
      rounds => Rounds,
      processes => map_size(Labels),
      elapsed_ms => elapsed_ms(State),
      interval_ms => Interval}.

%% One {Root, Frames, Count} a stack, sorted so that equal runs give equal
%% terms. Frames stay raw: whoever shows them spells them.
stacks(#{stack_counts := Counts, labels := Labels, frame_ids := Ids}) ->
    MFAs = list_to_tuple([MFA || {MFA, _} <- lists:keysort(2, maps:to_list(Ids))]),
    lists:sort([stack(Key, Count, Labels, MFAs) || {Key, Count} <- maps:to_list(Counts)]).

stack({Pid, other}, Count, Labels, _MFAs) ->
    {maps:get(Pid, Labels), [?OTHER_STACKS_FRAME], Count};
stack({Pid, Sleep, FrameIds}, Count, Labels, MFAs) ->
    Frames = [element(Id + 1, MFAs) || Id <- tuple_to_list(FrameIds)],
    Leaf = case Sleep of
               wait -> [?WAIT_FRAME];
               true -> [?SLEEP_FRAME];
               false -> []
           end,
    {maps:get(Pid, Labels), Frames ++ Leaf, Count}.
