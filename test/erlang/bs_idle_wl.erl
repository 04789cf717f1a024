%%% Workload for WAIT against RUNNABLE: an idle gen_server that other
%%% processes poke with system signals only (process_info, monitors, links,
%%% a GC request, a code purge check, suspend and resume). The VM schedules
%%% it in to handle each and out again, with no message and no code run:
%%% it waits in its receive all along. Also processes that hibernate
%%% (erlang:hibernate/3: stack discarded, a wake-up function called before
%%% the message is taken) and processes still waiting when the VM halts.
-module(bs_idle_wl).
-behaviour(gen_server).

-export([poked_server/2, hibernated/1, idle_until_halt/1]).
-export([hibernate_once/0, woken/1, wait_forever/0, hibernate_forever/0]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2]).

%% Starts the server, pokes it Pokes times, Ms milliseconds apart, then
%% stops it (a call: its one message). Returns {poked, ServerPid}.
-spec poked_server(pos_integer(), pos_integer()) -> {poked, pid()}.
poked_server(Pokes, Ms) ->
    {ok, Pid} = gen_server:start(?MODULE, [], []),
    ok = poke(Pid, Pokes, Ms),
    ok = gen_server:stop(Pid),
    {poked, Pid}.

poke(_Pid, 0, _Ms) ->
    ok;
poke(Pid, N, Ms) ->
    timer:sleep(Ms),
    case N rem 6 of
        0 -> {status, waiting} = erlang:process_info(Pid, status);
        1 -> true = erlang:demonitor(erlang:monitor(process, Pid), [flush]);
        2 -> true = link(Pid), true = unlink(Pid);
        3 -> true = erlang:garbage_collect(Pid);
        4 -> false = erlang:check_process_code(Pid, ?MODULE);
        5 -> true = erlang:suspend_process(Pid), true = erlang:resume_process(Pid)
    end,
    poke(Pid, N - 1, Ms).

%% Spawns a process that hibernates, wakes it with a message after Ms
%% milliseconds and waits for its answer. Returns {hibernated, Pid}.
-spec hibernated(pos_integer()) -> {hibernated, pid()}.
hibernated(Ms) ->
    Pid = spawn(?MODULE, hibernate_once, []),
    Pid ! {hello, self()},
    receive {ready, Pid} -> ok end,
    timer:sleep(Ms),
    Pid ! {wake, self()},
    receive {woken, Pid} -> {hibernated, Pid} end.

hibernate_once() ->
    receive {hello, From} -> From ! {ready, self()} end,
    erlang:hibernate(?MODULE, woken, [x]).

woken(x) ->
    receive {wake, From} -> From ! {woken, self()} end.

%% For `run': two processes wait until the VM halts, Ms milliseconds from
%% now, with nothing to wake them: one in a receive (wait_forever/0), one
%% hibernated (hibernate_forever/0).
-spec idle_until_halt(pos_integer()) -> no_return().
idle_until_halt(Ms) ->
    _ = spawn(?MODULE, wait_forever, []),
    _ = spawn(?MODULE, hibernate_forever, []),
    timer:sleep(Ms),
    halt().

wait_forever() ->
    receive never -> ok end.

hibernate_forever() ->
    erlang:hibernate(?MODULE, wait_forever, []).

init([]) -> {ok, idle}.
handle_call(_Request, _From, State) -> {reply, ok, State}.
handle_cast(_Request, State) -> {noreply, State}.
handle_info(_Info, State) -> {noreply, State}.
