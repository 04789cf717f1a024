%%% Limits of live sessions (max_duration, max_events, max_memory,
%%% max_processes): each trips on a workload that keeps running; tracing is
%%% off at once; the profile is written and marked truncated with the
%%% reason; the caller gets {beamspy, Session, {stopped, Reason, Files}};
%%% nothing is left behind. Also: the same limits on apply/2, and a new
%%% session may start as soon as a limit has tripped.
-module(beamspy_limits_tests).

-include_lib("eunit/include/eunit.hrl").

-import(bs_test_lib, [processes/1, tree_of/2, assert_clean/1, wait_for/2, tmp_dir/0]).

-define(LOCK, beamspy_active_session).

limits_test_() ->
    {foreach, fun setup/0, fun teardown/1,
     [{"max_duration trips on a busy process", {timeout, 60, fun max_duration/0}},
      {"max_events trips on a busy process", {timeout, 60, fun max_events/0}},
      {"max_memory trips on ever deeper stacks", {timeout, 60, fun max_memory/0}},
      {"max_processes trips on a process spawner (new)", {timeout, 60, fun max_processes/0}},
      {"max_processes trips on a target's children", {timeout, 60, fun max_processes_children/0}},
      {"after a limit, a new session can start before stop is called", {timeout, 60, fun next_session/0}},
      {"after a limit, the caller dying ends the owner", {timeout, 60, fun limit_then_caller_dies/0}},
      {"trace/3 returns early when a limit trips", {timeout, 60, fun trace_returns_early/0}},
      {"apply/2: max_events and max_duration stop recording, the call goes on",
       {timeout, 60, fun apply_limits/0}}]}.

setup() ->
    [{module, M} = code:ensure_loaded(M) || M <- [bs_wl, bs_live_wl]],
    ok.

%% Whatever a failed test left: stop every session it started.
teardown(_) ->
    [try beamspy_session:finish(O, #{}) catch _:_ -> ok end || O <- beamspy_session:owners()],
    bs_test_lib:flush().

%% Starts a session on Targets with Limit, waits for the limit message and
%% checks what must hold the moment it arrives: every process in Watch is
%% still alive and no longer traced, no beamspy pattern is left, the files
%% are written. Returns {Files, Profile, Millis from start to the message}.
trip(Targets, Limit, Watch, Dir) ->
    Opts = maps:merge(#{output => Dir, formats => [folded, svg]}, Limit),
    [Reason | _] = [K || K <- maps:keys(Limit), lists:prefix("max_", atom_to_list(K))],
    T0 = erlang:monotonic_time(millisecond),
    {ok, S} = beamspy:start(Targets, Opts),
    Files = receive
                {beamspy, S, {stopped, Reason, Fs}} -> Fs;
                {beamspy, S, Other} -> error({other_stop, Other})
            after 20000 -> error({no_limit_message, Reason})
            end,
    Took = erlang:monotonic_time(millisecond) - T0,
    [begin
         ?assert(is_process_alive(P)),
         ?assertEqual({P, {flags, []}}, {P, bs_test_lib:trace_info(P, flags)})
     end || P <- Watch],
    ?assertEqual({traced, false}, bs_test_lib:trace_info({bs_live_wl, spin_step, 1}, traced)),
    ?assertEqual({traced, false}, bs_test_lib:trace_info(on_load, traced)),
    ?assertEqual({flags, []}, bs_test_lib:trace_info(new, flags)),
    %% The lock is released at once.
    ?assertEqual(undefined, whereis(?LOCK)),
    ?assertEqual(2, length(Files)),
    [?assert(filelib:is_regular(F)) || F <- Files],
    [Svg] = [F || F <- Files, filename:extension(F) =:= ".svg"],
    {ok, SvgText} = file:read_file(Svg),
    ?assertNotEqual(nomatch, binary:match(SvgText, atom_to_binary(Reason))),
    %% The workload runs on, untraced.
    [begin
         {reductions, R0} = erlang:process_info(P, reductions),
         ok = wait_for(fun() -> element(2, erlang:process_info(P, reductions)) > R0 end, 5000)
     end || P <- Watch],
    %% stop/2 returns the same files and the profile, truncated for Reason.
    {ok, #{files := Files, truncated := Reason, profile := Profile}} = beamspy:stop(S, #{profile => true}),
    ?assertMatch(#{truncated := Reason}, Profile),
    ?assertEqual({error, {no_session, S}}, beamspy:stop(S)),
    ok = wait_for(fun() -> beamspy_session:owners() =:= [] end, 5000),
    assert_clean(Watch),
    bs_test_lib:rm_rf(Dir),
    {Files, Profile, Took}.

max_duration() ->
    Spinner = bs_live_wl:spinner(),
    try
        %% max_duration also bounds start/2 (setting the patterns on every
        %% loaded function), which took over 300 ms on a cold OTP 29 VM here:
        %% the bound leaves it room.
        {_, P, Took} = trip(Spinner, #{max_duration => 1500}, [Spinner], dir()),
        ?assert(Took >= 1500),
        ?assert(Took < 15000),
        #{duration_ns := Ns} = P,
        ?assert(Ns >= 1490000000),
        ?assert(bs_test_lib:frame_calls(tree_of(Spinner, P), <<"bs_live_wl:spin_step/1">>) > 100)
    after
        bs_live_wl:stop_all([Spinner])
    end.

%% A fresh directory under the layer's tmp directory (removed by run.sh).
dir() ->
    Dir = tmp_dir(),
    ok = filelib:ensure_path(Dir),
    Dir.

max_events() ->
    Spinner = bs_live_wl:spinner(),
    try
        {_, P, _} = trip(Spinner, #{max_events => 20000}, [Spinner], dir()),
        #{events := E} = P,
        %% Counted in batches of 64 per process (see tracer_callbacks.c).
        ?assert(E >= 20000),
        ?assert(E < 20000 + 64 * 4)
    after
        bs_live_wl:stop_all([Spinner])
    end.

max_memory() ->
    Hog = bs_live_wl:deep_hog(),
    Cap = 256 * 1024,
    try
        {_, P, _} = trip(Hog, #{max_memory => Cap}, [Hog], dir()),
        #{memory_peak := Peak} = P,
        ?assert(Peak =< Cap),
        ?assert(Peak > Cap div 2)
    after
        bs_live_wl:stop_all([Hog])
    end.

max_processes() ->
    Spawner = bs_live_wl:spawner(),
    try
        {_, P, _} = trip(new, #{max_processes => 20}, [Spawner], dir()),
        ?assert(length(processes(P)) =< 20),
        %% Processes spawned from now on are not traced.
        Late = spawn(fun() -> receive stop -> ok end end),
        ?assertEqual({flags, []}, bs_test_lib:trace_info(Late, flags)),
        Late ! stop
    after
        bs_live_wl:stop_all([Spawner])
    end.

max_processes_children() ->
    Spawner = bs_live_wl:spawner(),
    try
        {_, P, _} = trip(Spawner, #{max_processes => 10, children => true}, [Spawner], dir()),
        ?assert(length(processes(P)) =< 10),
        ?assert(length(processes(P)) >= 2)
    after
        bs_live_wl:stop_all([Spawner])
    end.

next_session() ->
    Spinner = bs_live_wl:spinner(),
    Dir = dir(),
    try
        {ok, S1} = beamspy:start(Spinner, #{max_events => 5000, output => Dir}),
        receive {beamspy, S1, {stopped, max_events, _}} -> ok after 10000 -> error(no_limit) end,
        {ok, S2} = beamspy:start(Spinner, #{}),
        ?assertMatch({flags, [_ | _]}, bs_test_lib:trace_info(Spinner, flags)),
        ?assertEqual(2, length(beamspy:sessions())),
        {ok, #{truncated := false}} = beamspy:stop(S2, #{profile => true}),
        {ok, #{truncated := max_events}} = beamspy:stop(S1, #{profile => true}),
        ok = wait_for(fun() -> beamspy_session:owners() =:= [] end, 5000),
        assert_clean([Spinner])
    after
        bs_live_wl:stop_all([Spinner]),
        bs_test_lib:rm_rf(Dir)
    end.

limit_then_caller_dies() ->
    Spinner = bs_live_wl:spinner(),
    Self = self(),
    Dir = dir(),
    try
        Caller = spawn(fun() ->
                               {ok, S} = beamspy:start(Spinner, #{max_events => 5000, output => Dir}),
                               receive {beamspy, S, {stopped, _, _}} = M -> Self ! {caller_got, M} end,
                               receive never -> ok end
                       end),
        {beamspy, {beamspy_session, Owner, _}, {stopped, max_events, [_]}} =
            receive {caller_got, M} -> M after 10000 -> error(no_limit) end,
        ?assert(is_process_alive(Owner)),
        Mon = monitor(process, Owner),
        exit(Caller, kill),
        receive {'DOWN', Mon, process, Owner, _} -> ok after 5000 -> error(owner_stayed) end,
        assert_clean([Spinner])
    after
        bs_live_wl:stop_all([Spinner]),
        bs_test_lib:rm_rf(Dir)
    end.

trace_returns_early() ->
    Spinner = bs_live_wl:spinner(),
    Dir = dir(),
    try
        T0 = erlang:monotonic_time(millisecond),
        {ok, [File]} = beamspy:trace(Spinner, 30000, #{max_events => 10000, output => Dir}),
        ?assert(erlang:monotonic_time(millisecond) - T0 < 10000),
        ?assert(filelib:is_regular(File)),
        receive {beamspy, _, _} = M -> error({unexpected, M}) after 0 -> ok end,
        assert_clean([Spinner])
    after
        bs_live_wl:stop_all([Spinner]),
        bs_test_lib:rm_rf(Dir)
    end.

apply_limits() ->
    {ok, #{result := {return, {loop, 400000}}, profile := P1}} =
        beamspy:profile({bs_wl, loop, [400000]}, #{max_events => 10000}),
    ?assertMatch(#{truncated := max_events}, P1),
    F = fun() -> bs_wl:nap(300), bs_wl:fib(15) end,
    {ok, #{result := {return, 610}, profile := P2}} = beamspy:profile(F, #{max_duration => 50}),
    ?assertMatch(#{truncated := max_duration}, P2),
    assert_clean([]).
