%%% A live node under load: `all' traced on a node running 10,000 processes
%%% that exchange messages, until a limit trips (the node stays responsive,
%%% memory stays under the caps, nothing is left traced); and 1,000
%%% start/stop rounds in a row (no memory kept, no trace state left).
%%% The figures are printed so that they appear in the layer's log.
-module(beamspy_overload_tests).

-include_lib("eunit/include/eunit.hrl").

-import(bs_test_lib, [assert_clean/1, wait_for/2, tmp_dir/0]).

-define(CHATTERS, 10000).
-define(CHATTER_INTERVAL, 2000).   % ms between two messages of one chatter
-define(MAX_EVENTS, 400000).
-define(MAX_MEMORY, 64 * 1024 * 1024).
-define(VM_CAP, 1024 * 1024 * 1024).
-define(MAX_RTT_US, 100000).

overload_test_() ->
    {setup, fun setup/0, fun(_) -> ok end,
     [{"all on 10,000 chatting processes: responsive, bounded, limit reported, clean",
       {timeout, 120, fun trace_all_under_load/0}},
      {"1,000 start/stop rounds: no memory kept, no trace state left",
       {timeout, 120, fun start_stop_rounds/0}}]}.

setup() ->
    [{module, M} = code:ensure_loaded(M) || M <- [bs_wl, bs_live_wl, rand, ets]],
    ok.

report(Ping, Mem) ->
    Ping ! {report, self()},
    Mem ! {report, self()},
    Rtts = receive {rtts, Ping, Rs} -> lists:sort(Rs) after 10000 -> error(no_ping_report) end,
    {MaxMem, MaxRss} = receive {max_memory, Mem, M, Rss} -> {M, Rss} after 10000 -> error(no_mem_report) end,
    N = length(Rtts),
    P99 = case Rtts of
              [] -> 0;
              _ -> lists:nth(max(1, (N * 99 + 99) div 100), Rtts)
          end,
    #{rtt_us => lists:last([0 | Rtts]), p99_us => P99, pings => N,
      vm_bytes => MaxMem, rss_bytes => MaxRss, os_wait_ms => bs_live_wl:os_wait_ms(),
      at => erlang:monotonic_time(millisecond)}.

%% Share of the time between two reports that the VM's scheduler threads
%% spent runnable but kept off the CPU by the machine.
os_wait_share(#{os_wait_ms := W0, at := T0}, #{os_wait_ms := W1, at := T1}) ->
    (W1 - W0) / (max(1, T1 - T0) * erlang:system_info(schedulers_online)).

mib(Bytes) -> Bytes div (1024 * 1024).

trace_all_under_load() ->
    Chatters = bs_live_wl:chatters(?CHATTERS, ?CHATTER_INTERVAL),
    Pong = bs_live_wl:pong(),
    Ping = bs_live_wl:pinger(Pong, 5),
    Mem = bs_live_wl:memory_sampler(20),
    Helpers = [Pong, Ping, Mem],
    Dir = tmp_dir(),
    Dog = bs_test_lib:watchdog("trace_all_under_load", 90000),
    try
        ok = bs_live_wl:chatter_go(Chatters),
        timer:sleep(1000),
        Start = report(Ping, Mem),      % the start of the chatting is not the baseline
        timer:sleep(1000),
        Base = report(Ping, Mem),
        T0 = erlang:monotonic_time(millisecond),
        {ok, S} = beamspy:start(all, #{max_processes => 2 * ?CHATTERS, max_events => ?MAX_EVENTS,
                                       max_memory => ?MAX_MEMORY, max_duration => 30000,
                                       output => Dir, formats => [folded]}),
        T1 = erlang:monotonic_time(millisecond),
        [?assertMatch({flags, [_ | _]}, bs_test_lib:trace_info(P, flags)) || P <- lists:sublist(Chatters, 100)],
        {Reason, Files, SessionMax} = wait_for_limit(S, 0, T1 + 60000),
        T2 = erlang:monotonic_time(millisecond),
        %% Tracing is off the moment the caller hears of it, the chatting goes on.
        [?assertEqual({P, {flags, []}}, {P, bs_test_lib:trace_info(P, flags)}) || P <- Chatters ++ Helpers],
        ?assertEqual({flags, []}, bs_test_lib:trace_info(new, flags)),
        Traced = report(Ping, Mem),
        {ok, #{files := Files, truncated := Reason, cleanup_ms := CleanupMs, write_ms := WriteMs}} =
            beamspy:stop(S, #{}),
        ok = wait_for(fun() -> beamspy_session:owners() =:= [] end, 10000),
        assert_clean(Chatters ++ Helpers),
        [File] = Files,
        Size = filelib:file_size(File),
        {ok, Bin} = file:read_file(File),
        Roots = length(lists:usort([hd(binary:split(L, <<";">>)) || L <- binary:split(Bin, <<"\n">>, [global, trim])])),
        ?assert(lists:member(Reason, [max_events, max_memory])),
        BaseWait = os_wait_share(Start, Base),
        TracedWait = os_wait_share(Base, Traced),
        io:format(user, "~noverload: ~w chatting processes (one message every ~w ms each), ~w schedulers~n"
                  "  before tracing: ping round trip max ~.1f ms, p99 ~.1f ms (~w pings); VM ~w MiB, RSS ~w MiB;"
                  " scheduler threads kept off the CPU by the machine ~w% of the time~n"
                  "  start(all) took ~w ms; limit ~w tripped ~w ms later~n"
                  "  while tracing: ping round trip max ~.1f ms, p99 ~.1f ms (~w pings); VM max ~w MiB,"
                  " RSS max ~w MiB, session memory max ~w MiB (cap ~w MiB); kept off the CPU ~w%~n"
                  "  stopping: tracing off everywhere in ~w ms, files written in ~w ms~n"
                  "  profile: ~w processes, ~w KiB folded~n",
                  [?CHATTERS, ?CHATTER_INTERVAL, erlang:system_info(schedulers_online),
                   maps:get(rtt_us, Base) / 1000, maps:get(p99_us, Base) / 1000, maps:get(pings, Base),
                   mib(maps:get(vm_bytes, Base)), mib(maps:get(rss_bytes, Base)), round(100 * BaseWait),
                   T1 - T0, Reason, T2 - T1,
                   maps:get(rtt_us, Traced) / 1000, maps:get(p99_us, Traced) / 1000, maps:get(pings, Traced),
                   mib(maps:get(vm_bytes, Traced)), mib(maps:get(rss_bytes, Traced)), mib(SessionMax),
                   mib(?MAX_MEMORY), round(100 * TracedWait),
                   CleanupMs, WriteMs, Roots, Size div 1024]),
        %% The worst round trip must stay under 100 ms. When the machine
        %% keeps the VM's threads off the CPU for half of the time (other
        %% jobs on a shared host; a quiet 2-core host shows 20-30% here),
        %% single round trips measure the machine, not beamspy: then 99% of
        %% them must.
        case TracedWait > 0.5 of
            false ->
                ?assert(maps:get(rtt_us, Traced) < ?MAX_RTT_US);
            true ->
                io:format(user, "  (machine overloaded: judged on the 99th percentile)~n", []),
                ?assert(maps:get(p99_us, Traced) < ?MAX_RTT_US)
        end,
        ?assert(maps:get(pings, Traced) > 10),
        ?assert(maps:get(vm_bytes, Traced) < ?VM_CAP),
        ?assert(SessionMax =< ?MAX_MEMORY),
        ?assert(Roots > ?CHATTERS div 2)
    catch
        Class:Error:Stack ->
            %% Said at once: a clean-up that then hangs would hide it.
            io:format(user, "~ntrace_all_under_load: ~p:~p~n  ~p~n~s",
                      [Class, Error, Stack, bs_test_lib:hang_report()]),
            erlang:raise(Class, Error, Stack)
    after
        bs_live_wl:stop_all(Chatters ++ Helpers),
        bs_test_lib:rm_rf(Dir),
        bs_test_lib:stop_watchdog(Dog)
    end.

%% Waits for the limit message (max_duration trips at the latest 30 s
%% in: Deadline is well after); meanwhile samples the session's memory.
wait_for_limit(S, Max, Deadline) ->
    receive
        {beamspy, S, {stopped, Reason, Files}} -> {Reason, Files, Max}
    after 100 ->
            case erlang:monotonic_time(millisecond) > Deadline of
                true -> error({no_limit_message, beamspy:sessions()});
                false -> ok
            end,
            Mem = case beamspy:sessions() of
                      [#{memory := M}] -> M;
                      _ -> 0
                  end,
            wait_for_limit(S, max(Max, Mem), Deadline)
    end.

gc_all() ->
    [erlang:garbage_collect(P) || P <- erlang:processes()],
    timer:sleep(200),
    {erlang:memory(total), erlang:memory(binary), bs_live_wl:rss()}.

start_stop_rounds() ->
    Work = bs_live_wl:ticker(),
    File = tmp_dir() ++ ".folded",
    Round = fun() ->
                    {ok, S} = beamspy:start(Work, #{output => File}),
                    {ok, [File]} = beamspy:stop(S)
            end,
    try
        [Round() || _ <- lists:seq(1, 50)],
        {Total0, Bin0, Rss0} = gc_all(),
        T0 = erlang:monotonic_time(millisecond),
        Rss = [begin
                   [Round() || _ <- lists:seq(1, 100)],
                   bs_live_wl:rss()
               end || _ <- lists:seq(1, 10)],
        Took = erlang:monotonic_time(millisecond) - T0,
        {Total1, Bin1, Rss1} = gc_all(),
        io:format(user, "~nstart/stop: 1000 rounds in ~w ms (~.1f ms each)~n"
                  "  erlang:memory(total) ~w KiB -> ~w KiB, binary ~w KiB -> ~w KiB, RSS ~w MiB -> ~w MiB~n"
                  "  RSS every 100 rounds (MiB): ~w~n",
                  [Took, Took / 1000, Total0 div 1024, Total1 div 1024, Bin0 div 1024, Bin1 div 1024,
                   mib(Rss0), mib(Rss1), [mib(R) || R <- Rss]]),
        %% One session's pid table alone is 320 KiB (max_processes 10000):
        %% 1000 sessions kept would be over 300 MiB.
        ?assert(Total1 - Total0 < 4 * 1024 * 1024),
        ?assert(Bin1 - Bin0 < 1024 * 1024),
        ?assert(Rss1 - Rss0 < 32 * 1024 * 1024),
        %% No upward trend over the rounds (RSS may go down as memory of
        %% the test before is given back).
        ?assert(lists:last(Rss) - hd(Rss) < 16 * 1024 * 1024),
        ?assertEqual([], beamspy_session:owners()),
        ?assertEqual([], beamspy:sessions()),
        assert_clean([Work])
    after
        bs_live_wl:stop_all([Work]),
        _ = file:delete(File)
    end.
