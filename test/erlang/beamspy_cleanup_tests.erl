%%% Cleanup in every case (normal return, exception, caller killed mid-call,
%%% memory limit tripped), and the one-session-at-a-time lock.
-module(beamspy_cleanup_tests).

-include_lib("eunit/include/eunit.hrl").

-import(bs_test_lib, [profile/2, profile_ok/2, own_tree/1, tree_of/2, depth_counts/2,
                      assert_clean/0, assert_clean/1, wait_for/2, tmp_dir/0, rm_rf/1,
                      list_dir/1]).

-define(LOCK, beamspy_active_session).

setup() ->
    [{module, M} = code:ensure_loaded(M) || M <- [bs_wl, timer]],
    ok.

cleanup_test_() ->
    {setup, fun setup/0, fun(_) -> ok end,
     [{"after a normal return (long-lived children included)", {timeout, 60, fun after_return/0}},
      {"after a normal return, children that never ran included", {timeout, 60, fun after_return_unrun/0}},
      {"after the session owner is killed mid-call: nothing left traced", {timeout, 60, fun owner_killed_clean/0}},
      {"after the session owner is killed mid-call: the call's result still returned", {timeout, 60, fun owner_killed_result/0}},
      {"after an exception (long-lived children included)", {timeout, 60, fun after_exception/0}},
      {"after the caller is killed mid-call", {timeout, 60, fun after_kill/0}},
      {"after the memory limit trips", {timeout, 60, fun after_max_memory/0}},
      {"memory limit tripping while 20 children run in parallel", {timeout, 60, fun max_memory_parallel/0}},
      {"caller killed while its children keep running", {timeout, 60, fun kill_with_busy_children/0}},
      {"after apply/2 with output and an exception", {timeout, 60, fun after_apply_raise/0}},
      {"a second concurrent apply fails with busy; the first completes", {timeout, 60, fun busy/0}},
      {"ten sessions in a row leave nothing behind", {timeout, 60, fun sequential/0}}]}.

after_return() ->
    {{55, Kids}, P} = profile_ok({bs_wl, spawn_waiters, [3, 10]}, #{}),
    try
        %% The children were traced (they are in the profile) ...
        [?assertMatch([_ | _], tree_of(K, P)) || K <- Kids],
        [?assert(is_process_alive(K)) || K <- Kids],
        %% ... and are not any more.
        assert_clean(Kids)
    after
        bs_wl:stop_waiters(Kids)
    end.

after_return_unrun() ->
    {{idle, Kids}, _P} = profile_ok({bs_wl, spawn_idle, [50]}, #{}),
    try
        assert_clean(Kids)
    after
        bs_wl:stop_waiters(Kids)
    end.

%% Kills the session owner while the traced call sleeps; returns what
%% apply/2 gave ({value, V} or {raised, C, R}).
apply_with_owner_killed() ->
    Self = self(),
    Killer = spawn(fun() ->
                           receive go -> ok end,
                           ok = wait_for(fun() -> is_pid(whereis(?LOCK)) end, 5000),
                           exit(whereis(?LOCK), kill),
                           Self ! {killed, self()}
                   end),
    F = fun() ->
                Killer ! go,
                receive {killed, Killer} -> ok after 5000 -> error(owner_not_killed) end,
                bs_wl:nap(100)
        end,
    try beamspy:apply(F, #{quiet => true, output => tmp_dir() ++ ".folded"}) of
        V -> {value, V}
    catch C:R -> {raised, C, R}
    end.

owner_killed_clean() ->
    _ = apply_with_owner_killed(),
    assert_clean().

%% DESIGN.md: "the traced function's own result or exception always reaches
%% the caller unchanged".
owner_killed_result() ->
    ?assertEqual({value, {napped, ok}}, apply_with_owner_killed()),
    assert_clean().

after_exception() ->
    Self = self(),
    F = fun() ->
                {_, Kids} = bs_wl:spawn_waiters(2, 5),
                Self ! {kids, Kids},
                bs_wl:top_uncaught(raise)
        end,
    {{raise, error, {boom, leaf}, _}, _P, []} = profile(F, #{}),
    Kids = receive {kids, Ks} -> Ks after 5000 -> error(no_kids) end,
    try
        assert_clean(Kids)
    after
        bs_wl:stop_waiters(Kids)
    end.

after_kill() ->
    Dir = tmp_dir(),
    Self = self(),
    Caller = spawn(fun() ->
                           beamspy:apply({bs_wl, sleeper, [Self, 30000]}, #{output => Dir, quiet => true}),
                           Self ! {not_killed, self()}
                   end),
    CallerMon = monitor(process, Caller),
    Kids = receive {sleeping, Caller, Ks} -> Ks after 10000 -> error(never_slept) end,
    try
        Owner = whereis(?LOCK),
        ?assert(is_pid(Owner)),
        OwnerMon = monitor(process, Owner),
        %% The caller is asleep in timer:sleep/1: another process kills it.
        ok = wait_for(fun() -> element(2, process_info(Caller, current_function)) =:= {timer, sleep, 1} end, 5000),
        ?assertMatch({flags, [_ | _]}, erlang:trace_info(Caller, flags)),
        Killer = spawn(fun() -> exit(Caller, kill) end),
        receive {'DOWN', CallerMon, process, Caller, killed} -> ok after 5000 -> error({not_killed, Killer}) end,
        receive {'DOWN', OwnerMon, process, Owner, _} -> ok after 10000 -> error(owner_stayed) end,
        assert_clean(Kids),
        %% The owner still wrote the profile of the interrupted call.
        [File] = list_dir(Dir),
        ?assertMatch("beamspy-" ++ _, File),
        ?assertEqual(".html", filename:extension(File)),
        {ok, Bin} = file:read_file(filename:join(Dir, File)),
        ?assertNotEqual(nomatch, binary:match(Bin, <<"bs_wl:sleeper/2">>)),
        ?assertNotEqual(nomatch, binary:match(Bin, <<"timer:sleep/1">>)),
        ?assertNotEqual(nomatch, binary:match(Bin, <<"WAIT">>))
    after
        bs_wl:stop_waiters(Kids),
        rm_rf(Dir)
    end.

after_max_memory() ->
    Cap = 64 * 1024,
    Self = self(),
    F = fun() ->
                {_, Kids} = bs_wl:spawn_waiters(2, 5),
                Self ! {kids, Kids},
                bs_wl:mem_hog(20, 20000)
        end,
    {{6765, 20000}, P} = profile_ok(F, #{max_memory => Cap}),
    Kids = receive {kids, Ks} -> Ks after 5000 -> error(no_kids) end,
    try
        ?assertMatch(#{truncated := max_memory}, P),
        #{memory_peak := Peak} = P,
        ?assert(Peak =< Cap),
        ?assert(Peak > 0),
        assert_clean(Kids)
    after
        bs_wl:stop_waiters(Kids)
    end.

after_apply_raise() ->
    Dir = tmp_dir(),
    try
        ?assertError({boom, leaf}, beamspy:apply({bs_wl, top_uncaught, [raise]}, #{output => Dir, quiet => true})),
        assert_clean(),
        ?assertMatch([_], list_dir(Dir))
    after
        rm_rf(Dir)
    end.

busy() ->
    Self = self(),
    First = fun() ->
                    Self ! {started, self()},
                    receive go -> ok end,
                    bs_wl:fib(12)
            end,
    Runner = spawn_link(fun() -> Self ! {first_done, self(), beamspy:profile(First, #{})} end),
    receive {started, Runner} -> ok after 10000 -> error(first_not_started) end,
    Owner = whereis(?LOCK),
    ?assert(is_pid(Owner)),
    Dir = tmp_dir(),
    try
        ?assertError({beamspy, {busy, Owner}},
                     beamspy:apply({bs_wl, side_effect, [self()]}, #{output => Dir, quiet => true})),
        ?assertEqual({error, {busy, Owner}}, beamspy:profile({bs_wl, side_effect, [self()]}, #{})),
        Msg = beamspy:format_error({busy, Owner}),
        ?assert(io_lib:char_list(Msg)),
        ?assertNotEqual(nomatch, string:find(Msg, pid_to_list(Owner))),
        receive {ran, _} -> error(second_call_ran) after 0 -> ok end,
        ?assertEqual([], list_dir(Dir)),
        %% The first session is untouched: still the owner, still tracing.
        ?assertEqual(Owner, whereis(?LOCK)),
        ?assertMatch({flags, [_ | _]}, erlang:trace_info(Runner, flags)),
        Runner ! go,
        {ok, #{result := {return, 144}, profile := P}} =
            receive {first_done, Runner, R} -> R after 30000 -> error(first_not_done) end,
        unlink(Runner),
        ok = bs_test_lib:check_profile(P),
        ?assertMatch(#{truncated := false, dropped := 0}, P),
        ?assertEqual(bs_wl:fib_calls_per_depth(12), depth_counts(tree_of(Runner, P), <<"bs_wl:fib/1">>)),
        assert_clean()
    after
        %% Let the first session end whatever failed above.
        unlink(Runner),
        RunnerMon = monitor(process, Runner),
        Runner ! go,
        receive {'DOWN', RunnerMon, process, Runner, _} -> ok after 10000 -> ok end,
        receive {first_done, Runner, _} -> ok after 0 -> ok end,
        rm_rf(Dir)
    end.

sequential() ->
    lists:foreach(fun(I) ->
                          ?assertEqual(bs_wl:fib(I), beamspy:apply({bs_wl, fib, [I]}, #{output => tmp_dir() ++ ".folded", quiet => true})),
                          assert_clean()
                  end, lists:seq(1, 10)),
    {_, P} = profile_ok({bs_wl, fib, [10]}, #{}),
    ?assertEqual(bs_wl:fib_calls_per_depth(10), depth_counts(own_tree(P), <<"bs_wl:fib/1">>)).

max_memory_parallel() ->
    Cap = 64 * 1024,
    {{par, Results}, P} = profile_ok({bs_wl, par_fib, [20, 15]}, #{max_memory => Cap}),
    ?assertEqual(lists:duplicate(20, 610), Results),
    ?assertMatch(#{truncated := max_memory}, P),
    #{memory_peak := Peak} = P,
    ?assert(Peak =< Cap),
    assert_clean().

kill_with_busy_children() ->
    Self = self(),
    Caller = spawn(fun() ->
                           F = fun() ->
                                       {busy, Kids} = bs_wl:busy_kids(4),
                                       Self ! {kids, self(), Kids},
                                       timer:sleep(30000)
                               end,
                           beamspy:apply(F, #{quiet => true, output => tmp_dir() ++ ".folded"})
                   end),
    Mon = monitor(process, Caller),
    Kids = receive {kids, Caller, Ks} -> Ks after 10000 -> error(no_kids) end,
    try
        Owner = whereis(?LOCK),
        OwnerMon = monitor(process, Owner),
        [?assertMatch({flags, [_ | _]}, erlang:trace_info(K, flags)) || K <- Kids],
        timer:sleep(100),
        spawn(fun() -> exit(Caller, kill) end),
        receive {'DOWN', Mon, process, Caller, killed} -> ok after 5000 -> error(not_killed) end,
        receive {'DOWN', OwnerMon, process, Owner, _} -> ok after 10000 -> error(owner_stayed) end,
        %% The children are still running, untraced.
        [?assert(is_process_alive(K)) || K <- Kids],
        assert_clean(Kids),
        timer:sleep(50),
        assert_clean(Kids)
    after
        bs_wl:stop_waiters(Kids)
    end.
