%%% beamspy_sampler: statistical sampling of stacks (`record --mode
%%% sample'). A busy process is seen in its function, an idle one in WAIT;
%%% the raw stacks spell and add up; backtrace_depth is raised while sampling and put
%%% back on stop, on the owner's death and after max_duration_ms; the
%%% max_stacks cap holds.
-module(beamspy_sampler_tests).

-include_lib("eunit/include/eunit.hrl").

-define(WL, bs_stuck_wl).
-define(WAIT_MS, 20000).

sampler_test_() ->
    {foreach, fun() -> {module, ?WL} = code:ensure_loaded(?WL) end, fun(_) -> ok end,
     [{"a busy process is sampled in its recursive function", {timeout, 60, fun busy/0}},
      {"an idle process's samples end in WAIT", {timeout, 60, fun idle/0}},
      {"targets => all: the stacks spell and add up", {timeout, 60, fun all_parses/0}},
      {"roots are labelled like beamspy_session:labels/1", {timeout, 60, fun labels/0}},
      {"stop restores backtrace_depth (64 while sampling)", {timeout, 60, fun depth_on_stop/0}},
      {"the owner's death stops the sampler and restores backtrace_depth",
       {timeout, 60, fun owner_death/0}},
      {"max_duration_ms ends sampling; the samples stay for stop",
       {timeout, 60, fun max_duration/0}},
      {"max_stacks: further stacks are counted under [other stacks]",
       {timeout, 60, fun max_stacks/0}},
      {"a target that dies is no longer sampled", {timeout, 60, fun target_dies/0}},
      {"bad options and unknown names are refused", fun bad_options/0},
      {"frame names: the engine's speller, quoted like Erlang, sanitized", fun frame_names/0}]}.

%%% ---------------------------------------------------------------------
%%% Tests
%%% ---------------------------------------------------------------------

busy() ->
    Busy = spawn(?WL, spin, []),
    try
        {ok, S} = beamspy_sampler:start(#{owner => self(), targets => [Busy], interval_ms => 2}),
        wait_rounds(S, 50),
        {ok, #{stacks := Stacks, samples := Samples}} = beamspy_sampler:stop(S),
        Lines = parse(Stacks),
        ?assertEqual(Samples, lists:sum([C || {_, C} <- Lines])),
        Root = label(Busy),
        ?assert(lists:all(fun({[R | _], _}) -> R =:= Root end, Lines)),
        InSum = lists:sum([C || {Frames, C} <- Lines,
                                lists:member(<<"bs_stuck_wl:busy_sum/1">>, Frames)]),
        ?assert(InSum * 2 > Samples),
        %% Running, never waiting: no WAIT or SLEEP leaf.
        ?assertEqual([], [F || {F, _} <- Lines, bs_test_lib:sched_out(lists:last(F))])
    after
        ?WL:stop(Busy)
    end.

idle() ->
    Idle = spawn(?WL, idle, []),
    ok = ?WL:wait_until_in(Idle, {?WL, idle, 0}, ?WAIT_MS),
    try
        {ok, S} = beamspy_sampler:start(#{owner => self(), targets => [Idle], interval_ms => 1}),
        wait_rounds(S, 10),
        {ok, #{stacks := Stacks, samples := Samples, rounds := Rounds, processes := 1}} =
            beamspy_sampler:stop(S),
        ?assertEqual(Samples, Rounds),
        ?assertEqual([{[label(Idle), <<"bs_stuck_wl:idle/0">>, <<"WAIT">>], Samples}],
                     parse(Stacks))
    after
        ?WL:stop(Idle)
    end.

all_parses() ->
    Idle = spawn(?WL, idle, []),
    Busy = spawn(?WL, spin, []),
    try
        {ok, S} = beamspy_sampler:start(#{owner => self()}),
        wait_rounds(S, 5),
        {ok, Info} = beamspy_sampler:info(S),
        check_info(Info),
        {ok, Result} = beamspy_sampler:stop(S),
        check_result(Result),
        #{stacks := Stacks, samples := Samples, processes := Processes} = Result,
        Lines = parse(Stacks),
        ?assertEqual(Samples, lists:sum([C || {_, C} <- Lines])),
        Roots = lists:usort([R || {[R | _], _} <- Lines]),
        ?assertEqual(Processes, length(Roots)),
        ?assert(lists:member(label(Idle), Roots)),
        ?assert(lists:member(label(Busy), Roots)),
        %% Neither the owner nor the sampler itself.
        ?assertNot(lists:member(label(self()), Roots)),
        ?assertNot(lists:member(label(S), Roots)),
        ?assertEqual({error, noproc}, beamspy_sampler:info(S)),
        ?assertEqual({error, noproc}, beamspy_sampler:stop(S))
    after
        ?WL:stop_all([Idle, Busy])
    end.

labels() ->
    Named = spawn(?WL, idle, []),
    true = register(bs_sampler_named, Named),
    Server = ?WL:start_server(),
    try
        {ok, S} = beamspy_sampler:start(#{owner => self(),
                                          targets => [bs_sampler_named, Server]}),
        wait_rounds(S, 3),
        {ok, #{stacks := Stacks}} = beamspy_sampler:stop(S),
        Roots = lists:usort([R || {[R | _], _} <- parse(Stacks)]),
        #{Named := NamedLabel, Server := ServerLabel} = beamspy_session:labels([Named, Server]),
        ?assertEqual(lists:sort([NamedLabel, ServerLabel]), Roots),
        ?assertEqual(iolist_to_binary([pid_to_list(Named), " bs_sampler_named"]), NamedLabel),
        ?assertEqual(iolist_to_binary([pid_to_list(Server), " bs_stuck_wl:init/1"]), ServerLabel)
    after
        ?WL:stop_all([Named, Server])
    end.

depth_on_stop() ->
    Before = erlang:system_flag(backtrace_depth, 12),
    try
        {ok, S} = beamspy_sampler:start(#{owner => self(), targets => [self()]}),
        wait_rounds(S, 2),
        ?assertEqual(64, erlang:system_flag(backtrace_depth, 64)),
        {ok, _} = beamspy_sampler:stop(S),
        ?assertEqual(12, erlang:system_flag(backtrace_depth, 12))
    after
        erlang:system_flag(backtrace_depth, Before)
    end.

owner_death() ->
    Before = erlang:system_flag(backtrace_depth, 11),
    Self = self(),
    try
        Owner = spawn(fun() ->
                              Self ! {sampler, beamspy_sampler:start(#{owner => self()})},
                              receive stop -> ok end
                      end),
        S = receive {sampler, {ok, Pid}} -> Pid end,
        %% Monitored first: should the sampler end by itself, its exit
        %% reason shows up in the assertion below.
        Mon = erlang:monitor(process, S),
        wait_rounds(S, 2),
        exit(Owner, kill),
        receive {'DOWN', Mon, process, S, Why} -> ?assertEqual(normal, Why) end,
        ?assertEqual(11, erlang:system_flag(backtrace_depth, 11))
    after
        erlang:system_flag(backtrace_depth, Before)
    end.

max_duration() ->
    Before = erlang:system_flag(backtrace_depth, 13),
    Idle = spawn(?WL, idle, []),
    try
        {ok, S} = beamspy_sampler:start(#{owner => self(), targets => [Idle], interval_ms => 1,
                                          max_duration_ms => 100}),
        %% Sampling has ended once elapsed_ms stops moving.
        ok = ?WL:wait_until(fun() ->
                                    {ok, #{elapsed_ms := E1}} = beamspy_sampler:info(S),
                                    timer:sleep(20),
                                    {ok, #{elapsed_ms := E2}} = beamspy_sampler:info(S),
                                    E1 =:= E2
                            end, ?WAIT_MS),
        ?assertEqual(13, erlang:system_flag(backtrace_depth, 13)),
        {ok, #{rounds := Rounds}} = beamspy_sampler:info(S),
        ?assert(Rounds > 0),
        {ok, #{stacks := Stacks, rounds := Rounds, samples := Samples}} = beamspy_sampler:stop(S),
        ?assertEqual([{[label(Idle), <<"bs_stuck_wl:idle/0">>, <<"WAIT">>], Samples}],
                     parse(Stacks))
    after
        ?WL:stop(Idle),
        erlang:system_flag(backtrace_depth, Before)
    end.

max_stacks() ->
    Idle = [spawn(?WL, idle, []) || _ <- lists:seq(1, 5)],
    [ok = ?WL:wait_until_in(I, {?WL, idle, 0}, ?WAIT_MS) || I <- Idle],
    try
        {ok, S} = beamspy_sampler:start(#{owner => self(), targets => Idle, max_stacks => 2}),
        wait_rounds(S, 3),
        {ok, #{stacks := 2}} = beamspy_sampler:info(S),
        {ok, #{stacks := Stacks, samples := Samples}} = beamspy_sampler:stop(S),
        Lines = parse(Stacks),
        ?assertEqual(Samples, lists:sum([C || {_, C} <- Lines])),
        {Other, Kept} = lists:partition(fun({[_, F | _], _}) -> F =:= <<"[other stacks]">> end,
                                        Lines),
        ?assertEqual(2, length(Kept)),
        ?assertEqual(3, length(Other)),
        [?assertMatch({[_, <<"[other stacks]">>], _}, L) || L <- Other]
    after
        ?WL:stop_all(Idle)
    end.

target_dies() ->
    Idle = spawn(?WL, idle, []),
    Other = spawn(?WL, idle, []),
    [ok = ?WL:wait_until_in(P, {?WL, idle, 0}, ?WAIT_MS) || P <- [Idle, Other]],
    try
        {ok, S} = beamspy_sampler:start(#{owner => self(), targets => [Idle, Other]}),
        wait_rounds(S, 2),
        ?WL:stop(Idle),
        {ok, #{rounds := R0}} = beamspy_sampler:info(S),
        wait_rounds(S, R0 + 3),
        {ok, #{stacks := Stacks, samples := Samples, rounds := Rounds}} = beamspy_sampler:stop(S),
        [{_, IdleCount}] = [L || {[R | _], _} = L <- parse(Stacks), R =:= label_text(Idle)],
        [{_, OtherCount}] = [L || {[R | _], _} = L <- parse(Stacks), R =:= label(Other)],
        ?assertEqual(Rounds, OtherCount),
        ?assert(IdleCount =< R0),
        ?assertEqual(Samples, IdleCount + OtherCount)
    after
        ?WL:stop(Other)
    end.

bad_options() ->
    ?assertEqual({error, {bad_option, {owner, missing}}}, beamspy_sampler:start(#{})),
    ?assertEqual({error, {bad_option, {owner, me}}}, beamspy_sampler:start(#{owner => me})),
    ?assertEqual({error, {bad_option, {interval_ms, 0}}},
                 beamspy_sampler:start(#{owner => self(), interval_ms => 0})),
    ?assertEqual({error, {bad_option, {max_stacks, x}}},
                 beamspy_sampler:start(#{owner => self(), max_stacks => x})),
    ?assertEqual({error, {bad_option, {targets, [1]}}},
                 beamspy_sampler:start(#{owner => self(), targets => [1]})),
    ?assertEqual({error, {bad_option, {what, 1}}},
                 beamspy_sampler:start(#{owner => self(), what => 1})),
    ?assertEqual({error, {noproc, bs_sampler_no_such_name}},
                 beamspy_sampler:start(#{owner => self(), targets => [bs_sampler_no_such_name]})),
    ?assertEqual({error, {bad_sampler, x}}, beamspy_sampler:stop(x)).

frame_names() ->
    %% The sampler sends frames raw; the engine's one speller (the tool's,
    %% offered to Erlang by beamspy_tracer:frame_name/2) spells them.
    Name = fun(F) -> beamspy_tracer:frame_name(F, erlang) end,
    ?assertEqual(<<"gen_server:loop/7">>, Name({gen_server, loop, 7})),
    ?assertEqual(<<"m:'-f/0-fun-0-'/1">>, Name({m, '-f/0-fun-0-', 1})),
    ?assertEqual(<<"'Elixir.Foo':bar/2">>, Name({'Elixir.Foo', bar, [a, b]})),
    ?assertEqual(<<"m:'receive'/0">>, Name({m, 'receive', 0})),
    ?assertEqual(<<"m:'a:b?c\\\\d\\'e'/0">>, Name({m, 'a;b\nc\\d\'e', 0})),
    ?assertEqual(<<"bs_stuck_wl:'héllo ŝ'/1"/utf8>>, Name({bs_stuck_wl, 'héllo ŝ', 1})),
    ?assertEqual(<<"Foo.bar/2">>, beamspy_tracer:frame_name({'Elixir.Foo', bar, 2}, elixir)),
    ?assertEqual(<<":m.receive/0">>, beamspy_tracer:frame_name({m, 'receive', 0}, elixir)),
    ?assertEqual(<<"worker_12">>, Name(<<"worker 12">>)),
    ?assertEqual(<<"f_1.5">>, Name(<<"f 1.5">>)),
    ?assertEqual(<<"a_">>, Name(<<"a ">>)),
    ?assertEqual(<<"<0.1.0> x">>, Name(<<"<0.1.0> x">>)),
    ?assertError(badarg, beamspy_tracer:frame_name({m, f, 256}, erlang)),
    ?assertError(badarg, beamspy_tracer:frame_name({m, f, 1}, perl)).

%%% ---------------------------------------------------------------------
%%% Helpers
%%% ---------------------------------------------------------------------

wait_rounds(S, N) ->
    ok = ?WL:wait_until(fun() ->
                                {ok, #{rounds := R}} = beamspy_sampler:info(S),
                                R >= N
                        end, ?WAIT_MS).

label(Pid) ->
    maps:get(Pid, beamspy_session:labels([Pid])).

%% The label of a process that is gone: its pid.
label_text(Pid) ->
    list_to_binary(pid_to_list(Pid)).

%% Raw stacks as [{Frames, Count}], root first, every frame spelled by the
%% engine's speller (as the tool spells them): frames {M, F, A} or texts.
parse(Stacks) ->
    ?assert(is_list(Stacks)),
    ?assertEqual(Stacks, lists:sort(Stacks)),
    [begin
         ?assert(is_binary(Root)),
         [?assert(is_binary(F) orelse (is_tuple(F) andalso tuple_size(F) =:= 3)) || F <- Frames],
         ?assert(is_integer(Count) andalso Count > 0),
         {[beamspy_tracer:frame_name(F, erlang) || F <- [Root | Frames]], Count}
     end || {Root, Frames, Count} <- Stacks].

check_info(Info) ->
    ?assertEqual(lists:sort([samples, rounds, processes, stacks, memory, elapsed_ms]),
                 lists:sort(maps:keys(Info))),
    [?assert(is_integer(V) andalso V >= 0) || V <- maps:values(Info)],
    ?assert(maps:get(memory, Info) > 0).

check_result(Result) ->
    ?assertEqual(lists:sort([stacks, samples, rounds, processes, elapsed_ms, interval_ms]),
                 lists:sort(maps:keys(Result))),
    ?assert(is_list(maps:get(stacks, Result))),
    [?assert(is_integer(V) andalso V >= 0) || V <- maps:values(maps:remove(stacks, Result))].
