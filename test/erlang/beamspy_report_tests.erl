%%% A limit that ends a recording early is said on standard error by every
%%% front end (apply, stop/1, trace/3), quiet or not: which limit, after how
%%% long, how much was recorded and the option that raises it. A recording
%%% that no limit cut short prints no warning.
-module(beamspy_report_tests).

-include_lib("eunit/include/eunit.hrl").

-import(bs_test_lib, [assert_clean/0, tmp_dir/0, rm_rf/1, capture_stderr/1,
                      capture_output/1, flush/0]).

report_test_() ->
    {setup, fun() -> {module, bs_wl} = code:ensure_loaded(bs_wl), ok end, fun(_) -> ok end,
     [{"apply and profile: a tripped limit is said on stderr, quiet or not", {timeout, 60, fun apply_limit/0}},
      {"apply: no limit, no warning", {timeout, 60, fun apply_no_limit/0}},
      {"stop/1 and trace/3 say the limit; stop/2 returns it as data", {timeout, 60, fun live_limit/0}},
      {"capture/3 says a tripped limit too", {timeout, 60, fun capture_limit/0}},
      {"the sentence names the limit, the time, the amount and the option", fun sentence/0}]}.

capture_limit() ->
    Dir = tmp_dir(),
    %% Calls fib/1 again and again until the capture is over, whatever the
    %% moment it starts.
    Caller = spawn(fun Loop() -> bs_wl:fib(18), timer:sleep(5), Loop() end),
    try
        {Result, Err} = capture_stderr(fun() ->
                                               beamspy:capture({bs_wl, fib, 1}, 1,
                                                               #{output => Dir, max_events => 500,
                                                                 quiet => true})
                                       end),
        ?assertMatch({_, _}, Result),
        ?assertNotEqual(nomatch, string:find(Err, "max_events (500) reached")),
        ?assertNotEqual(nomatch, string:find(Err, "max_events => 5000"))
    after
        exit(Caller, kill),
        rm_rf(Dir)
    end,
    flush(),
    assert_clean().

apply_limit() ->
    Dir = tmp_dir(),
    try
        lists:foreach(
          fun(Quiet) ->
                  {{R, Printed}, Err} =
                      capture_stderr(fun() ->
                                             capture_output(fun() ->
                                                 beamspy:apply({bs_wl, fib, [20]},
                                                               #{output => Dir, quiet => Quiet,
                                                                 max_events => 1000})
                                             end)
                                     end),
                  ?assertEqual(6765, R),
                  ?assertNotEqual(nomatch, string:find(Err, "recording stopped early")),
                  ?assertNotEqual(nomatch, string:find(Err, "max_events (1000) reached")),
                  ?assertNotEqual(nomatch, string:find(Err, "max_events => 10000 (or infinity)")),
                  ?assertMatch({match, _}, re:run(Err, "recorded [0-9]+ events from 1 process")),
                  %% The warning is not mixed into what the caller's output shows.
                  ?assertEqual(nomatch, string:find(Printed, "stopped early")),
                  assert_clean()
          end, [false, true]),
        %% profile/2 returns `truncated' and says it too.
        {{ok, #{result := {return, 6765}, profile := #{truncated := max_events}}}, Err} =
            capture_stderr(fun() -> beamspy:profile({bs_wl, fib, [20]}, #{max_events => 1000}) end),
        ?assertNotEqual(nomatch, string:find(Err, "max_events (1000) reached"))
    after
        rm_rf(Dir)
    end.

apply_no_limit() ->
    Dir = tmp_dir(),
    try
        {55, Err} = capture_stderr(fun() ->
                                           beamspy:apply({bs_wl, fib, [10]},
                                                         #{output => Dir, quiet => true})
                                   end),
        ?assertEqual("", Err)
    after
        rm_rf(Dir)
    end.

live_limit() ->
    Dir = tmp_dir(),
    try
        Opts = #{output => Dir, max_events => 500},
        %% stop/1
        {ok, S1} = beamspy:start(self(), Opts),
        bs_wl:fib(18),
        receive {beamspy, S1, {stopped, max_events, _}} -> ok after 20000 -> error(no_limit) end,
        {{ok, [_]}, Err1} = capture_stderr(fun() -> beamspy:stop(S1) end),
        ?assertNotEqual(nomatch, string:find(Err1, "max_events (500) reached")),
        %% stop/2: data, no print.
        {ok, S2} = beamspy:start(self(), Opts),
        bs_wl:fib(18),
        receive {beamspy, S2, {stopped, max_events, _}} -> ok after 20000 -> error(no_limit2) end,
        {{ok, Report}, Err2} = capture_stderr(fun() -> beamspy:stop(S2, #{}) end),
        ?assertEqual("", Err2),
        ?assertMatch(#{truncated := max_events, events := E, recorded_ms := Ms,
                       memory_peak := M, processes := 1} when E >= 500 andalso Ms >= 0 andalso M > 0,
                     Report),
        %% trace/3: a process that keeps calling trips the limit at once.
        Busy = spawn(fun Loop() -> bs_wl:fib(12), Loop() end),
        try
            {{ok, [_]}, Err3} = capture_stderr(fun() -> beamspy:trace(Busy, 30000, Opts) end),
            ?assertNotEqual(nomatch, string:find(Err3, "max_events (500) reached"))
        after
            exit(Busy, kill)
        end,
        flush(),
        assert_clean()
    after
        rm_rf(Dir)
    end.

sentence() ->
    Report = #{truncated => max_memory, recorded_ms => 2500, events => 1234,
               memory_peak => 3 * 1024 * 1024, processes => 7},
    Erl = beamspy_report:limit_text(Report, #{max_memory => 1048576, names => erlang}),
    ?assertEqual("beamspy: recording stopped early after 2.5 s: max_memory (1.0 MiB) reached; "
                 "recorded 1234 events from 7 processes, 3.0 MiB peak. The profile covers only "
                 "that part; to record more, give max_memory => 2097152.", Erl),
    Ex = beamspy_report:limit_text(Report#{truncated => max_events},
                                   #{max_events => 10000000, names => elixir}),
    ?assertNotEqual(nomatch, string:find(Ex, "max_events: 100_000_000 (or :infinity)")),
    Dur = beamspy_report:limit_text(#{truncated => max_duration, recorded_ms => 60000},
                                    #{max_duration => 60000}),
    ?assertNotEqual(nomatch, string:find(Dur, "after 60.0 s: max_duration (60000 ms) reached")).
