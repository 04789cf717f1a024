%%% Workloads for the live-session tests (beamspy:start/2, stop/1, trace/3):
%%% processes that are already running when tracing starts and keep running
%%% after it stops. Each loop checks for `stop' between rounds, so every
%%% workload can be ended with stop_all/1.
-module(bs_live_wl).

-export([clients/3, spinner/0, spin_step/1, deep_hog/0, spawner/0, short_lived/1,
         chatters/2, chatter_go/1, pinger/2, pong/0, stop_all/1, memory_sampler/1, rss/0,
         os_wait_ms/0, ticker/0]).

%% K processes calling Server with {work, N} in a loop.
clients(Server, K, N) ->
    [spawn(fun() -> client(Server, N) end) || _ <- lists:seq(1, K)].

client(Server, N) ->
    _ = try bs_live_server:work(Server, N) catch _:_ -> ok end,
    receive stop -> ok after 0 -> client(Server, N) end.

%% A busy loop: one call per round, many events per second.
spinner() ->
    spawn(fun() -> spin(0) end).

spin(I) ->
    J = spin_step(I),
    receive stop -> J after 0 -> spin(J) end.

spin_step(I) -> I + 1.

%% Ever deeper recursions: every round adds distinct stacks, so the call
%% tree (and the session's memory) keeps growing.
deep_hog() ->
    spawn(fun() -> hog(100) end).

hog(N) ->
    _ = bs_wl:deep(N),
    receive stop -> ok after 0 -> hog(N + 100) end.

%% Spawns a short-lived process every millisecond.
spawner() ->
    spawn(fun() -> spawn_loop(0) end).

spawn_loop(I) ->
    _ = spawn(?MODULE, short_lived, [I]),
    receive stop -> ok after 1 -> spawn_loop(I + 1) end.

short_lived(I) ->
    spin_step(I).

%% N processes that each send a message to a random peer every Interval ms
%% (with a little work per message), once told chatter_go/1. The peers are
%% found through a public ETS table (a copy of the pid list in each process
%% would cost N * N words); it belongs to the caller.
chatters(N, Interval) ->
    Tab = ets:new(bs_live_peers, [public, {read_concurrency, true}]),
    Pids = [spawn(fun() -> chatter_wait(Tab, N, Interval) end) || _ <- lists:seq(1, N)],
    true = ets:insert(Tab, lists:zip(lists:seq(1, N), Pids)),
    Pids.

chatter_go(Pids) ->
    [P ! go || P <- Pids],
    ok.

chatter_wait(Tab, N, Interval) ->
    receive
        go -> chatter(Tab, N, Interval, rand:uniform(Interval));
        stop -> ok
    end.

chatter(Tab, N, Interval, Wait) ->
    receive
        stop -> ok;
        {msg, K} -> _ = bs_wl:deep(K rem 8), chatter(Tab, N, Interval, Wait)
    after Wait ->
            Peer = ets:lookup_element(Tab, rand:uniform(N), 2),
            Peer ! {msg, rand:uniform(100)},
            chatter(Tab, N, Interval, Interval)
    end.

%% Pings Pong every Every ms and keeps every round trip (µs); replies
%% {rtts, self(), RttsInOrder} to whoever sends {report, From} and starts
%% over.
pinger(Pong, Every) ->
    spawn(fun() -> ping_loop(Pong, Every, []) end).

ping_loop(Pong, Every, Acc) ->
    receive
        {report, From} -> From ! {rtts, self(), lists:reverse(Acc)}, ping_loop(Pong, Every, []);
        stop -> ok
    after Every ->
            T0 = erlang:monotonic_time(microsecond),
            Pong ! {ping, self()},
            receive pong -> ok end,
            Rtt = erlang:monotonic_time(microsecond) - T0,
            ping_loop(Pong, Every, [Rtt | Acc])
    end.

pong() ->
    spawn(fun pong_loop/0).

pong_loop() ->
    receive
        {ping, From} -> From ! pong, pong_loop();
        stop -> ok
    end.

%% Samples erlang:memory(total) and the OS's resident set size of the VM
%% every Every ms; {report, From} replies {max_memory, self(), MaxBytes,
%% MaxRssBytes} and starts over.
memory_sampler(Every) ->
    spawn(fun() -> sample_loop(Every, 0, 0) end).

sample_loop(Every, Max, MaxRss) ->
    receive
        {report, From} -> From ! {max_memory, self(), Max, MaxRss}, sample_loop(Every, 0, 0);
        stop -> ok
    after Every ->
            sample_loop(Every, max(Max, erlang:memory(total)), max(MaxRss, rss()))
    end.

%% VmRSS of this VM in bytes, from /proc/self/status (0 if unreadable).
rss() ->
    case file:read_file("/proc/self/status") of
        {ok, Status} ->
            case re:run(Status, "VmRSS:\\s+([0-9]+) kB", [{capture, all_but_first, binary}]) of
                {match, [Kb]} -> binary_to_integer(Kb) * 1024;
                nomatch -> 0
            end;
        {error, _} ->
            0
    end.

%% Milliseconds the VM's threads have spent so far waiting for a CPU while
%% runnable (the second field of /proc/self/task/*/schedstat): how much
%% the machine, not the VM, is holding the VM back.
os_wait_ms() ->
    case file:list_dir("/proc/self/task") of
        {ok, Tasks} ->
            lists:sum([task_wait_ns(T) || T <- Tasks]) div 1000000;
        {error, _} ->
            0
    end.

task_wait_ns(Task) ->
    case file:read_file(filename:join(["/proc/self/task", Task, "schedstat"])) of
        {ok, Line} ->
            case binary:split(Line, [<<" ">>, <<"\n">>], [global, trim_all]) of
                [_, Wait | _] -> binary_to_integer(Wait);
                _ -> 0
            end;
        {error, _} ->
            0
    end.

%% A light workload: a little work every millisecond.
ticker() ->
    spawn(fun() -> tick() end).

tick() ->
    _ = bs_wl:fib(10),
    receive stop -> ok after 1 -> tick() end.

stop_all(Pids) ->
    [begin P ! stop, ok end || P <- Pids],
    ok.
