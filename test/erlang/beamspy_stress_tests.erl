%%% Races between beamspy's processes and the node, repeated: a session
%%% owner killed at a random moment (setting up, recording, stopping), a
%%% capture owner killed at a random moment, several stops at once, stop
%%% racing a max_processes trip while 200 processes churn, start(all) while
%%% processes spawn without pause. Each round asserts the outcome (never how
%%% long it took, beyond generous bounds) and then that the node is clean.
%%%
%%% BEAMSPY_STRESS_ROUNDS sets the rounds per scenario: a few by default
%%% (`make test'), many under `make stress'. BEAMSPY_STRESS_SEED replays a
%%% run (the seed is printed).
-module(beamspy_stress_tests).

-include_lib("eunit/include/eunit.hrl").

-import(bs_test_lib, [assert_node_clean/0, wait_for/2, tmp_dir/0, rm_rf/1]).

-define(LOCK, beamspy_active_session).
-define(DEFAULT_ROUNDS, 2).

rounds() ->
    case os:getenv("BEAMSPY_STRESS_ROUNDS") of
        false -> ?DEFAULT_ROUNDS;
        N -> list_to_integer(N)
    end.

seed() ->
    Seed = case os:getenv("BEAMSPY_STRESS_SEED") of
               false -> erlang:phash2({os:system_time(), self()});
               S -> list_to_integer(S)
           end,
    _ = rand:seed(exsss, {Seed, Seed, Seed}),
    io:format(user, "beamspy_stress_tests: BEAMSPY_STRESS_SEED=~w, ~w rounds~n", [Seed, rounds()]),
    Seed.

%% Generous: every round is bounded by the waits inside it.
timeout(PerRound) -> 60 + rounds() * PerRound.

stress_test_() ->
    {setup,
     fun() ->
             [{module, M} = code:ensure_loaded(M) || M <- [bs_capture_wl, bs_churn_wl, bs_wl]],
             seed()
     end,
     fun(_) -> ok end,
     [{"live session owner killed at a random moment", {timeout, timeout(30), fun owner_killed_at_random/0}},
      {"capture owner killed at a random moment", {timeout, timeout(30), fun capture_owner_killed_at_random/0}},
      {"three stops of one session at once", {timeout, timeout(30), fun concurrent_stops/0}},
      {"stop racing a max_processes trip, 200 processes churning", {timeout, timeout(30), fun stop_vs_limit/0}},
      {"start(all) while 20 processes spawn without pause", {timeout, timeout(120), fun start_all_with_spawners/0}}]}.

repeat(Fun) ->
    [begin Fun(I), assert_node_clean() end || I <- lists:seq(1, rounds())],
    ok.

%% Kills the registered owner (the lock) at a random moment after it
%% appears; tells Parent whether it did.
spawn_killer(MaxDelayMs) ->
    Parent = self(),
    Delay = rand:uniform(MaxDelayMs + 1) - 1,
    spawn(fun() ->
                  Killed = case wait_for(fun() -> is_pid(whereis(?LOCK)) end, 10000) of
                               ok ->
                                   timer:sleep(Delay),
                                   case whereis(?LOCK) of
                                       undefined -> false;
                                       Owner -> exit(Owner, kill)
                                   end;
                               {error, timeout} ->
                                   false
                           end,
                  Parent ! {killer_done, self(), Killed}
          end).

killer_done(Killer) ->
    receive {killer_done, Killer, Killed} -> Killed after 30000 -> error(killer_stuck) end.

owner_killed_at_random() ->
    Churners = bs_churn_wl:churners(10),
    Dir = tmp_dir(),
    try
        repeat(fun(_) ->
                       Killer = spawn_killer(30),
                       case beamspy:start(all, #{output => Dir, formats => [folded], max_processes => 1000000}) of
                           {ok, S} ->
                               _ = killer_done(Killer),
                               %% Killed or not, stop answers as documented.
                               case beamspy:stop(S) of
                                   {ok, Files} -> ?assert(is_list(Files));
                                   %% killed while stopping
                                   {error, {session_failed, killed}} -> ok;
                                   Other -> ?assertEqual({error, {no_session, S}}, Other)
                               end;
                           Failed ->
                               ?assertEqual({error, {session_failed, killed}}, Failed),
                               %% Killed while setting up: start returns
                               %% once the watchdog has cleaned up.
                               ?assertEqual([], bs_test_lib:node_dirt()),
                               ?assert(killer_done(Killer))
                       end
               end)
    after
        bs_churn_wl:stop(Churners),
        rm_rf(Dir)
    end.

capture_owner_killed_at_random() ->
    Dir = tmp_dir(),
    Callers = [spawn(fun() -> call_job_forever() end) || _ <- lists:seq(1, 4)],
    try
        repeat(fun(_) ->
                       Killer = spawn_killer(20),
                       %% More calls than can be made before the killer
                       %% fires: killed setting up, or while capturing.
                       Result = case beamspy:capture_async({bs_capture_wl, job, 1}, 1000000,
                                                           #{output => Dir, formats => [folded],
                                                             merge => true, timeout => 20000}) of
                                    {ok, Ref} ->
                                        receive {beamspy_capture, Ref, R} -> R
                                        after 60000 -> error(capture_never_answered)
                                        end;
                                    Failed ->
                                        Failed
                                end,
                       %% Told (or returned) only once the watchdog cleaned
                       %% up, and told once.
                       ?assertEqual([], bs_test_lib:node_dirt()),
                       ?assertEqual([], [M || {beamspy_capture, _, _} = M <- element(2, process_info(self(), messages))]),
                       ?assert(killer_done(Killer)),
                       ?assertEqual({error, {session_failed, killed}}, Result)
               end)
    after
        bs_churn_wl:stop(Callers),
        rm_rf(Dir)
    end.

call_job_forever() ->
    _ = bs_capture_wl:job(3),
    timer:sleep(rand:uniform(3) - 1),
    call_job_forever().

concurrent_stops() ->
    Churners = bs_churn_wl:churners(10),
    Dir = tmp_dir(),
    try
        repeat(fun(_) ->
                       {ok, S} = beamspy:start(all, #{output => Dir, formats => [folded], max_processes => 1000000}),
                       Self = self(),
                       Stoppers = [spawn(fun() -> receive go -> Self ! {stopped, self(), beamspy:stop(S)} end end)
                                   || _ <- [1, 2, 3]],
                       [P ! go || P <- Stoppers],
                       Results = [receive {stopped, P, R} -> R after 30000 -> error(stop_stuck) end
                                  || P <- Stoppers],
                       NoSession = {error, {no_session, S}},
                       ?assertMatch([NoSession, NoSession, {ok, _}], lists:sort(Results))
               end)
    after
        bs_churn_wl:stop(Churners),
        rm_rf(Dir)
    end.

stop_vs_limit() ->
    Churners = bs_churn_wl:churners(200),
    Dir = tmp_dir(),
    try
        repeat(fun(_) ->
                       %% Just above what is running now: the churn trips it
                       %% soon after start, at a random moment.
                       Max = length(erlang:processes()) + rand:uniform(300),
                       case beamspy:start(all, #{output => Dir, max_processes => Max}) of
                           {ok, S} ->
                               timer:sleep(rand:uniform(6) - 1),
                               ?assertMatch({ok, _}, beamspy:stop(S)),
                               ?assertEqual([], beamspy:sessions()),
                               receive {beamspy, S, {stopped, max_processes, _}} -> ok after 0 -> ok end;
                           {error, {too_many_processes, _, Max}} ->
                               ok
                       end
               end)
    after
        bs_churn_wl:stop(Churners),
        rm_rf(Dir)
    end.

start_all_with_spawners() ->
    Dir = tmp_dir(),
    try
        repeat(fun(_) ->
                       Spawners = bs_churn_wl:spawners(20),
                       timer:sleep(rand:uniform(200)),
                       try
                           case beamspy:start(all, #{output => Dir, max_duration => 20000}) of
                               {ok, S} ->
                                   ?assertMatch({ok, _}, beamspy:stop(S));
                               {error, {too_many_processes, _, 10000}} ->
                                   ok;
                               {error, {start_timeout, 20000}} ->
                                   ok
                           end
                       after
                           bs_churn_wl:stop(Spawners)
                       end
               end)
    after
        rm_rf(Dir)
    end.
