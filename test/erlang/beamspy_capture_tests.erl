%%% beamspy:capture/3: the next N calls of a function in any process,
%%% checked on a gen_server under load and on a function called from 20
%%% processes at once; errors before anything is traced; nothing left
%%% traced afterwards.
-module(beamspy_capture_tests).
-include_lib("eunit/include/eunit.hrl").

-define(WL, bs_capture_wl).

%% Folded file -> [{Stack :: [binary()], Count}].
read_folded(Path) ->
    {ok, Bin} = file:read_file(Path),
    [begin
         [Stack, Count] = string:split(Line, " ", trailing),
         {binary:split(Stack, <<";">>, [global]), binary_to_integer(Count)}
     end || Line <- binary:split(Bin, <<"\n">>, [global, trim_all])].

assert_nothing_traced(Pids) ->
    bs_test_lib:wait_no_session(),
    ?assertEqual({all, false}, erlang:trace_info({?WL, handle_call, 3}, all)),
    ?assertEqual({traced, false}, erlang:trace_info({?WL, fib, 1}, traced)),
    ?assertEqual({traced, false}, erlang:trace_info(on_load, traced)),
    [?assertMatch({flags, []}, erlang:trace_info(P, flags)) || P <- Pids, is_process_alive(P)],
    ok.

gen_server_calls_test_() -> {timeout, 60, fun gen_server_calls/0}.

gen_server_calls() ->
    {ok, Server} = ?WL:start(),
    Dir = bs_test_lib:tmp_dir(),
    Clients = ?WL:clients(4, 10),
    %% Raw times: the depth below is read from folded lines, and the
    %% shortest calls, compensated, can round to no time and no line.
    {ok, Files} = beamspy:capture({?WL, handle_call, 3}, 3, #{output => Dir, formats => [folded],
                                                             compensate => false}),
    PerCall = lists:sort([F || F <- Files, string:find(F, "-call") =/= nomatch]),
    ?assertEqual(3, length(PerCall)),
    ?assertEqual(1, length([F || F <- Files, string:find(F, "-merged") =/= nomatch])),
    ServerPid = list_to_binary(pid_to_list(Server)),
    lists:foreach(
      fun(F) ->
              Lines = read_folded(F),
              %% Rooted at the server's pid, then the callback, then its frames
              %% (fib(10) nests 10 deep under handle_call), nothing else.
              [?assertMatch({match, _}, re:run(Root, "^" ++ binary_to_list(ServerPid) ++ " "))
               || {[Root | _], _} <- Lines],
              [?assertEqual(<<"bs_capture_wl:handle_call/3">>, Callback) || {[_, Callback | _], _} <- Lines],
              Depth = lists:max([length([X || X <- Stack, X =:= <<"bs_capture_wl:fib/1">>]) || {Stack, _} <- Lines]),
              ?assertEqual(10, Depth),
              [?assertEqual(nomatch, binary:match(iolist_to_binary(S), <<"gen_server:">>)) || {S, _} <- Lines]
      end, PerCall),
    [exit(C, kill) || C <- Clients],
    assert_nothing_traced([Server]),
    ok = ?WL:stop(),
    bs_test_lib:rm_rf(Dir).

%% capture_encoded/4 (a job on a node): no file anywhere, each call's
%% profile and the merged one come back as binaries, the merged one being
%% the calls merged across processes (no pid roots).
encoded_in_memory_test_() -> {timeout, 60, fun encoded_in_memory/0}.

encoded_in_memory() ->
    Dir = bs_test_lib:tmp_dir(),
    ok = file:make_dir(Dir),
    {ok, Cwd} = file:get_cwd(),
    ok = file:set_cwd(Dir),
    try
        ?assertMatch({error, {bad_option, encode, [png], _}},
                     beamspy:capture_encoded({?WL, job, 1}, 2, #{}, [png])),
        {ok, Ref} = beamspy:capture_encoded({?WL, job, 1}, 2, #{}, [folded, bspy]),
        ?assertEqual(lists:duplicate(2, {done, 144}), ?WL:run_jobs(2, 12)),
        {ok, #{calls := 2, outputs := Outputs}} = receive {beamspy_capture, Ref, R} -> R after 30000 -> timeout end,
        ?assertEqual([{merged, bspy}, {merged, folded},
                      {{call, 1}, bspy}, {{call, 1}, folded}, {{call, 2}, bspy}, {{call, 2}, folded}],
                     lists:sort([{W, F} || {W, F, _} <- Outputs])),
        [?assertMatch(<<16#89, "BSPY", _/binary>>, B) || {_, bspy, B} <- Outputs],
        {_, _, Merged} = lists:keyfind(merged, 1, [O || {_, folded, _} = O <- Outputs]),
        Lines = binary:split(Merged, <<"\n">>, [global, trim_all]),
        [?assertMatch({match, _}, re:run(L, "^bs_capture_wl:job/1[; ]")) || L <- Lines],
        ?assertNotEqual([], [L || L <- Lines, binary:match(L, <<"bs_capture_wl:fib/1">>) =/= nomatch]),
        ?assertEqual([], bs_test_lib:list_dir(Dir))
    after
        ok = file:set_cwd(Cwd)
    end,
    assert_nothing_traced([]),
    bs_test_lib:rm_rf(Dir).

twenty_processes_at_once_test_() -> {timeout, 60, fun twenty_processes_at_once/0}.

twenty_processes_at_once() ->
    Dir = bs_test_lib:tmp_dir(),
    %% Raw times: compensated, the shortest fib calls can round to no time,
    %% and folded writes no line for them (the depth below counts lines).
    {ok, Ref} = beamspy:capture_async({?WL, job, 1}, 20, #{output => Dir, formats => [folded], merge => false,
                                                            compensate => false}),
    Results = ?WL:run_jobs(20, 12),
    ?assertEqual(lists:duplicate(20, {done, 144}), Results),
    {ok, Files} = receive {beamspy_capture, Ref, R} -> R after 30000 -> timeout end,
    ?assertEqual(20, length(Files)),
    Roots = lists:usort([begin
                             Lines = read_folded(F),
                             %% each profile is one complete call: job/1 and the
                             %% 287 calls fib(12) makes, 12 deep
                             [{[Root, <<"bs_capture_wl:job/1">> | _], _} | _] = Lines,
                             Depth = lists:max([length(S) || {S, _} <- Lines]),
                             ?assertEqual(2 + 12, Depth),
                             hd(binary:split(Root, <<" ">>))
                         end || F <- Files]),
    %% 20 different processes
    ?assertEqual(20, length(Roots)),
    assert_nothing_traced([]),
    bs_test_lib:rm_rf(Dir).

pids_option_restricts_test() ->
    Dir = bs_test_lib:tmp_dir(),
    Parent = self(),
    Chosen = spawn(fun() -> receive go -> Parent ! {chosen, ?WL:job(5)} end end),
    Other = spawn(fun() -> receive go -> Parent ! {other, ?WL:job(5)} end end),
    {ok, Ref} = beamspy:capture_async({?WL, job, 1}, 1, #{output => Dir, formats => [folded],
                                                         merge => false, pids => [Chosen]}),
    Other ! go,
    receive {other, _} -> ok end,
    Chosen ! go,
    receive {chosen, _} -> ok end,
    {ok, [File]} = receive {beamspy_capture, Ref, R} -> R after 10000 -> timeout end,
    [{[Root | _], _} | _] = read_folded(File),
    ?assertMatch({match, _}, re:run(Root, "^" ++ pid_to_list(Chosen))),
    assert_nothing_traced([]),
    bs_test_lib:rm_rf(Dir).

errors_before_tracing_test() ->
    ?assertEqual({error, {bad_function, {undef, {?WL, nope, 3}}}},
                 beamspy:capture({?WL, nope, 3}, 1, #{})),
    ?assertMatch({error, {bad_function, {not_loaded, no_such_module_xyz, _}}},
                 beamspy:capture({no_such_module_xyz, f, 0}, 1, #{})),
    ?assertMatch({error, {bad_option, _, _, _}}, beamspy:capture({?WL, job, 1}, 0, #{})),
    ?assertMatch({error, {bad_option, timeout, _, _}}, beamspy:capture({?WL, job, 1}, 1, #{timeout => -1})),
    [?assert(is_list(beamspy:format_error(E))) || E <- [{bad_function, {undef, {?WL, nope, 3}}},
                                                      {no_calls_captured, timeout}]],
    assert_nothing_traced([]).

timeout_without_calls_test() ->
    ?assertEqual({error, {no_calls_captured, timeout}},
                 beamspy:capture({?WL, job, 1}, 2, #{timeout => 200, formats => [folded],
                                                    output => bs_test_lib:tmp_dir()})),
    assert_nothing_traced([]).

caller_death_cleans_up_test() ->
    Dir = bs_test_lib:tmp_dir(),
    Caller = spawn(fun() -> beamspy:capture({?WL, job, 1}, 5, #{output => Dir, formats => [folded]}) end),
    ok = bs_test_lib:wait_for(fun() -> whereis(beamspy_active_session) =/= undefined end, 5000),
    exit(Caller, kill),
    assert_nothing_traced([]),
    bs_test_lib:rm_rf(Dir).

%% The timeout bounds writing too: a capture that ends on its timeout (a
%% call every 5 ms at most, far fewer than asked for) writes the merged
%% profile and says how many calls' profiles it left out (each was written
%% before, past the timeout: 50 calls took 13 s). The timeout counts from
%% the start, setting up included: 5 s leave calls to capture on a loaded
%% machine too (1 s did not, once, at a load of 20 on 2 cores).
timeout_bounds_writing_test_() -> {timeout, 120, fun timeout_bounds_writing/0}.

timeout_bounds_writing() ->
    Dir = bs_test_lib:tmp_dir(),
    Caller = spawn(fun Loop() -> _ = ?WL:job(1), timer:sleep(5), Loop() end),
    %% The first capture of the VM measures the tracer's cost: done here.
    {ok, _} = beamspy:capture({?WL, job, 1}, 1, #{output => filename:join(Dir, "warm"), formats => [folded],
                                                    quiet => true}),
    {{ok, Files}, Printed} =
        bs_test_lib:capture_stderr(
          fun() ->
                  beamspy:capture({?WL, job, 1}, 100000, #{output => filename:join(Dir, "many"),
                                                            formats => [folded], timeout => 5000, quiet => true})
          end),
    exit(Caller, kill),
    [Merged] = Files,
    ?assertNotEqual(nomatch, string:find(Merged, "-merged.folded")),
    ?assert(filelib:is_regular(Merged)),
    ?assertEqual([], filelib:wildcard(filename:join([Dir, "many", "*-call*"]))),
    ?assertMatch({match, _}, re:run(Printed, "the profiles of [0-9]+ captured calls not written: "
                                             "the capture's timeout \\(5000 ms\\) passed")),
    assert_nothing_traced([]),
    bs_test_lib:rm_rf(Dir).

%% timeout => infinity (the option allows it) waits for the calls: the
%% owner's timer took it as a time and crashed the capture at its start.
infinite_timeout_test() ->
    Dir = bs_test_lib:tmp_dir(),
    {ok, Ref} = beamspy:capture_async({?WL, job, 1}, 1, #{timeout => infinity, output => Dir,
                                                         formats => [folded], quiet => true}),
    {_, Mon} = spawn_monitor(fun() -> ?WL:job(1) end),
    receive {'DOWN', Mon, process, _, normal} -> ok end,
    Files = receive {beamspy_capture, Ref, {ok, Fs}} -> Fs end,
    ?assertEqual(2, length(Files)),
    ?assert(lists:all(fun filelib:is_regular/1, Files)),
    assert_nothing_traced([]),
    bs_test_lib:rm_rf(Dir).
