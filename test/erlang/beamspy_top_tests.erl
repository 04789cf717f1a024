%%% beamspy_top: the data behind `beamspy top'. A busy-looping process
%%% leads the report with its function; idle processes rank below; reports
%%% have the documented shape; stop and the owner's death end it. A
%%% gen_server busy decoding shows its decoder, not gen_server:loop/7.
-module(beamspy_top_tests).

-include_lib("eunit/include/eunit.hrl").

-define(WL, bs_stuck_wl).
-define(WAIT_MS, 20000).

top_test_() ->
    {foreach, fun() -> {module, ?WL} = code:ensure_loaded(?WL) end, fun(_) -> ok end,
     [{"a busy-looping process comes first, with its function",
       {timeout, 60, fun busy_first/0}},
      {"idle processes rank below the busy one", {timeout, 60, fun idle_below/0}},
      {"samples_taken counts every sample, waiting ones too", {timeout, 60, fun samples_taken/0}},
      {"limit: at most that many processes; windows follow each other",
       {timeout, 60, fun limit_and_windows/0}},
      {"a report before the first tick is well formed", {timeout, 60, fun early_report/0}},
      {"neither top nor its owner is listed", {timeout, 60, fun excluded/0}},
      {"stop ends it; the owner's death ends it", {timeout, 60, fun stopping/0}},
      {"a gen_server busy decoding shows its decoder, not its loop",
       {timeout, 120, fun busy_decoder/0}},
      {"bad options are refused", fun bad_options/0}]}.

%%% ---------------------------------------------------------------------
%%% Tests
%%% ---------------------------------------------------------------------

%% A sample of a process not running when the tick was due (preempted by a
%% loaded machine, say) counts for its row, where it is, and not for the
%% node's hottest functions or the running samples: the report looked at
%% is one where the busy process was also seen running.
busy_first() ->
    Busy = spawn(?WL, spin, []),
    {ok, Top} = beamspy_top:start(#{owner => self(), interval_ms => 10}),
    try
        BusyText = pid_text(Busy),
        BusyFunctions = [{bs_stuck_wl, busy_sum, 1}, {bs_stuck_wl, spin, 0}],
        SeenRunning = fun(Hottest) -> [N || {N, _} <- Hottest, lists:member(N, BusyFunctions)] =/= [] end,
        %% Wait for a window in which Busy was sampled (the first window
        %% picks its processes interval_ms after start).
        Report = wait_report(Top, fun(#{processes := [#{pid := P, functions := Fs} | _], functions := H}) ->
                                          P =:= BusyText andalso Fs =/= [] andalso SeenRunning(H);
                                     (_) -> false
                                  end),
        #{processes := [First | _], functions := Hottest, samples := Samples} = Report,
        ?assert(maps:get(reductions, First) > 0),
        ?assert(maps:get(total_reductions, Report) >= maps:get(reductions, First)),
        Names = [N || {N, _} <- maps:get(functions, First)],
        ?assert(lists:any(fun(N) -> lists:member(N, BusyFunctions) end, Names)),
        ?assert(lists:member(maps:get(current, First), BusyFunctions)),
        ?assert(Samples >= lists:sum([C || {_, C} <- Hottest])),
        ?assert(lists:all(fun({_, C}) -> C >= 1 end, maps:get(functions, First)))
    after
        ok = beamspy_top:stop(Top),
        ?WL:stop(Busy)
    end.

idle_below() ->
    Busy = spawn(?WL, spin, []),
    Idle = [spawn(?WL, idle, []) || _ <- lists:seq(1, 5)],
    [ok = ?WL:wait_until_in(I, {?WL, idle, 0}, ?WAIT_MS) || I <- Idle],
    {ok, Top} = beamspy_top:start(#{owner => self(), interval_ms => 10, limit => 100000}),
    try
        BusyText = pid_text(Busy),
        Report = wait_report(Top, fun(#{processes := [#{pid := P} | _]}) -> P =:= BusyText;
                                     (_) -> false
                                  end),
        Pids = [P || #{pid := P} <- maps:get(processes, Report)],
        [?assert(position(BusyText, Pids) < position(pid_text(I), Pids)) || I <- Idle],
        Rows = maps:from_list([{P, R} || #{pid := P} = R <- maps:get(processes, Report)]),
        [?assertEqual({bs_stuck_wl, idle, 0}, maps:get(current, maps:get(pid_text(I), Rows)))
         || I <- Idle],
        %% Sorted by reductions.
        Reds = [R || #{reductions := R} <- maps:get(processes, Report)],
        ?assertEqual(lists:reverse(lists:sort(Reds)), Reds)
    after
        ok = beamspy_top:stop(Top),
        ?WL:stop_all([Busy | Idle])
    end.

%% The header's count: idle processes sampled waiting are samples taken
%% (their rows show shares of them), though none is a running sample.
samples_taken() ->
    Idle = [spawn(?WL, idle, []) || _ <- lists:seq(1, 5)],
    [ok = ?WL:wait_until_in(I, {?WL, idle, 0}, ?WAIT_MS) || I <- Idle],
    {ok, Top} = beamspy_top:start(#{owner => self(), interval_ms => 10, limit => 100000}),
    try
        Texts = [pid_text(I) || I <- Idle],
        IdleCounts = fun(#{processes := Rows}) ->
                             [lists:sum([C || {_, C} <- Fs]) || #{pid := P, functions := Fs} <- Rows,
                                                                lists:member(P, Texts)]
                     end,
        Report = wait_report(Top, fun(R) -> Counts = IdleCounts(R),
                                            length(Counts) =:= 5 andalso lists:all(fun(C) -> C > 0 end, Counts)
                                  end),
        #{samples_taken := Taken} = Report,
        IdleSamples = lists:sum(IdleCounts(Report)),
        ?assert(IdleSamples >= 5),
        ?assert(Taken >= IdleSamples)
    after
        ok = beamspy_top:stop(Top),
        ?WL:stop_all(Idle)
    end.

limit_and_windows() ->
    {ok, Top} = beamspy_top:start(#{owner => self(), interval_ms => 5, limit => 3}),
    try
        Reports = [begin
                       timer:sleep(30),
                       {ok, R} = beamspy_top:report(Top),
                       check_report(R),
                       R
                   end || _ <- lists:seq(1, 4)],
        [?assert(length(maps:get(processes, R)) =< 3) || R <- Reports],
        [?assert(length(maps:get(functions, R)) =< 20) || R <- Reports],
        [?assert(length(maps:get(functions, P)) =< 3)
         || R <- Reports, P <- maps:get(processes, R)]
    after
        ok = beamspy_top:stop(Top)
    end.

early_report() ->
    {ok, Top} = beamspy_top:start(#{owner => self(), interval_ms => 60000}),
    try
        {ok, R} = beamspy_top:report(Top),
        check_report(R),
        ?assertEqual(0, maps:get(samples, R)),
        ?assertEqual(0, maps:get(samples_taken, R)),
        ?assertEqual([], maps:get(functions, R)),
        ?assert(maps:get(process_count, R) > 0)
    after
        ok = beamspy_top:stop(Top)
    end.

excluded() ->
    %% The owner busy between reports would lead, were it listed.
    {ok, Top} = beamspy_top:start(#{owner => self(), interval_ms => 5, limit => 100000}),
    try
        _ = ?WL:busy_sum(100000),
        {ok, R} = beamspy_top:report(Top),
        Pids = [P || #{pid := P} <- maps:get(processes, R)],
        ?assertNot(lists:member(pid_text(self()), Pids)),
        ?assertNot(lists:member(pid_text(Top), Pids)),
        ?assert(length(Pids) > 10)
    after
        ok = beamspy_top:stop(Top)
    end.

stopping() ->
    {ok, Top} = beamspy_top:start(#{owner => self()}),
    Mon = erlang:monitor(process, Top),
    ?assertEqual(ok, beamspy_top:stop(Top)),
    receive {'DOWN', Mon, process, Top, Why} -> ?assertEqual(normal, Why) end,
    ?assertEqual({error, noproc}, beamspy_top:report(Top)),
    ?assertEqual(ok, beamspy_top:stop(Top)),
    Self = self(),
    Owner = spawn(fun() ->
                          Self ! {top, beamspy_top:start(#{owner => self()})},
                          receive stop -> ok end
                  end),
    Top2 = receive {top, {ok, T}} -> T end,
    Mon2 = erlang:monitor(process, Top2),
    exit(Owner, kill),
    receive {'DOWN', Mon2, process, Top2, Why2} -> ?assertEqual(normal, Why2) end.

bad_options() ->
    ?assertEqual({error, {bad_option, {owner, missing}}}, beamspy_top:start(#{})),
    ?assertEqual({error, {bad_option, {limit, 0}}},
                 beamspy_top:start(#{owner => self(), limit => 0})),
    ?assertEqual({error, {bad_option, {interval_ms, x}}},
                 beamspy_top:start(#{owner => self(), interval_ms => x})),
    ?assertEqual({error, {bad_option, {colour, red}}},
                 beamspy_top:start(#{owner => self(), colour => red})),
    ?assertEqual({error, {bad_top, x}}, beamspy_top:report(x)).

%% Issue 14: top showed `gen_server:loop/7 100%' for a server that spends
%% ~95% of its CPU decoding. Its samples over a few windows: the decoder's
%% functions are the clear majority, gen_server:loop/7 a minority.
busy_decoder() ->
    Server = bs_decode_wl:start(20),
    _ = bs_decode_wl:feed(Server, saturated),
    {ok, Top} = beamspy_top:start(#{owner => self(), interval_ms => 10, limit => 5}),
    try
        Text = pid_text(Server),
        timer:sleep(300),
        Counts = collect(Top, Text, 8, #{}),
        Total = lists:sum(maps:values(Counts)),
        Decoder = lists:sum([C || {{bs_decode_wl, F, _}, C} <- maps:to_list(Counts),
                                  lists:member(F, [decode, list, number])]),
        Loop = maps:get({gen_server, loop, 7}, Counts, 0),
        ?assert(Total >= 20),
        ?assert(Decoder * 2 > Total),
        ?assert(Loop * 4 < Total)
    after
        ok = beamspy_top:stop(Top),
        bs_decode_wl:stop(Server)
    end.

%% The server's sampled functions over N reports (its row keeps 3).
collect(_, _, 0, Acc) ->
    Acc;
collect(Top, Text, N, Acc) ->
    timer:sleep(300),
    {ok, #{processes := Rows}} = beamspy_top:report(Top),
    Fs = lists:append([Fs || #{pid := P, functions := Fs} <- Rows, P =:= Text]),
    collect(Top, Text, N - 1, lists:foldl(fun({F, C}, A) -> A#{F => maps:get(F, A, 0) + C} end,
                                          Acc, Fs)).

%%% ---------------------------------------------------------------------
%%% Helpers
%%% ---------------------------------------------------------------------

pid_text(Pid) -> list_to_binary(pid_to_list(Pid)).

position(X, List) ->
    length(lists:takewhile(fun(Y) -> Y =/= X end, List)) + 1.

%% Reports (every 50 ms) until one satisfies Pred; returns it.
wait_report(Top, Pred) ->
    Self = self(),
    ok = ?WL:wait_until(fun() ->
                                timer:sleep(40),
                                {ok, R} = beamspy_top:report(Top),
                                check_report(R),
                                Self ! {report, R},
                                Pred(R)
                        end, ?WAIT_MS),
    last_report(none).

last_report(Last) ->
    receive {report, R} -> last_report(R)
    after 0 -> Last
    end.

%% Exactly the documented keys and types; texts valid UTF-8.
check_report(R) ->
    %% This VM runs without +JPperf true: the hottest functions are the
    %% rows' samples, and the report says why they are not CPU samples.
    ?assertEqual(lists:sort([window_ms, process_count, run_queue, total_reductions, samples,
                             samples_taken, processes, functions, hot, hot_why]),
                 lists:sort(maps:keys(R))),
    ?assertEqual(sampled, maps:get(hot, R)),
    ?assertMatch({match, _}, re:run(maps:get(hot_why, R), "\\+JPperf true")),
    [?assert(is_integer(maps:get(K, R)) andalso maps:get(K, R) >= 0)
     || K <- [window_ms, process_count, run_queue, total_reductions, samples, samples_taken]],
    check_functions(maps:get(functions, R)),
    Ps = maps:get(processes, R),
    ?assert(is_list(Ps)),
    [check_row(P) || P <- Ps],
    ?assertEqual(length(Ps), length(lists:usort([maps:get(pid, P) || P <- Ps]))),
    ok.

check_row(P) ->
    ?assertEqual(lists:sort([pid, name, reductions, message_queue_len, memory, current,
                             functions]),
                 lists:sort(maps:keys(P))),
    [text(maps:get(K, P)) || K <- [pid, name]],
    function(maps:get(current, P)),
    ?assertMatch(<<"<", _/binary>>, maps:get(pid, P)),
    [?assert(is_integer(maps:get(K, P)) andalso maps:get(K, P) >= 0)
     || K <- [reductions, message_queue_len, memory]],
    check_functions(maps:get(functions, P)).

check_functions(Fs) ->
    ?assert(is_list(Fs)),
    [begin function(N), ?assert(is_integer(C) andalso C > 0) end || {N, C} <- Fs],
    ?assertEqual(length(Fs), length([ok || {_, _} <- Fs])),
    Counts = [C || {_, C} <- Fs],
    ?assertEqual(lists:reverse(lists:sort(Counts)), Counts).

%% Functions come raw, for the tool to spell.
function(undefined) ->
    ok;
function(<<"[ran to receive]">>) -> % ran, and reached a receive before it could be seen
    ok;
function(MFA) ->
    ?assertMatch({M, F, A} when is_atom(M) andalso is_atom(F) andalso is_integer(A), MFA).

text(T) ->
    ?assert(is_binary(T)),
    ?assertEqual(T, unicode:characters_to_binary(T)).
