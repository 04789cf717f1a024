%%% Helpers shared by the EUnit modules of the Erlang test layer: running a
%%% profile, reading its call trees, checking that nothing is left traced.
-module(bs_test_lib).

-include_lib("eunit/include/eunit.hrl").

-export([sched_out/1, profile/2, profile_ok/2, processes/1, tree_of/2, own_tree/1, other_trees/1,
         node_map/1, frame_calls/2, nodes_of/2, depth_counts/2, max_depth/1, path/2,
         depth/2, frame_paths/1, check_tree/1, check_profile/1, assert_clean/1,
         assert_clean/0, assert_node_clean/0, node_dirt/0, wait_no_session/0, tmp_dir/0, rm_rf/1,
         list_dir/1, capture_output/1, capture_stderr/1, flush/0, wait_for/2, trace_info/2,
         beamspy_trace_sessions/0, gen_server_loop/0, gen_server_loop_frame/0,
         distributed/1, watchdog/2, stop_watchdog/1, hang_report/0]).

-define(LOCK, beamspy_active_session).

%% beamspy:profile/2 that must succeed; returns {Outcome, Profile, Files}.
profile(Target, Opts) ->
    {ok, #{result := Outcome, profile := P, files := Files}} = beamspy:profile(Target, Opts),
    ok = check_profile(P),
    {Outcome, P, Files}.

%% Same, and the call must have returned; returns {Value, Profile}.
profile_ok(Target, Opts) ->
    {{return, V}, P, _} = profile(Target, Opts),
    {V, P}.

processes(#{processes := Ps}) -> Ps.

%% The tree of the process whose label starts with pid_to_list(Pid).
tree_of(Pid, Profile) ->
    Prefix = list_to_binary(pid_to_list(Pid)),
    case [N || {L, N} <- processes(Profile), is_prefix(Prefix, L)] of
        [Nodes] -> Nodes;
        Other -> error({no_single_tree_for, Pid, length(Other), [L || {L, _} <- processes(Profile)]})
    end.

own_tree(Profile) -> tree_of(self(), Profile).

%% [{Label, Nodes}] of every process other than the caller.
other_trees(Profile) ->
    Prefix = list_to_binary(pid_to_list(self())),
    [{L, N} || {L, N} <- processes(Profile), not is_prefix(Prefix, L)].

is_prefix(Prefix, Bin) ->
    byte_size(Bin) >= byte_size(Prefix) andalso
        binary:part(Bin, 0, byte_size(Prefix)) =:= Prefix andalso
        (byte_size(Bin) =:= byte_size(Prefix) orelse binary:at(Bin, byte_size(Prefix)) =:= $\s).

node_map(Nodes) -> maps:from_list([{Id, N} || {Id, _, _, _, _, _} = N <- Nodes]).

%% Whether a frame is scheduled-out time (SLEEP, WAIT or RUNNABLE).
sched_out(F) -> lists:member(F, [<<"SLEEP">>, <<"WAIT">>, <<"RUNNABLE">>]).

nodes_of(Nodes, Frame) -> [N || {_, _, F, _, _, _} = N <- Nodes, F =:= Frame].

%% Calls of Frame summed over every node of the tree.
frame_calls(Nodes, Frame) -> lists:sum([C || {_, _, _, _, _, C} <- nodes_of(Nodes, Frame)]).

%% #{K => Calls}, K = how many Frame nodes are on the path from the root to a
%% Frame node (itself included): the recursion depth of Frame.
depth_counts(Nodes, Frame) ->
    K = frame_depths(Nodes, Frame),
    lists:foldl(fun({Id, _, _, _, _, C}, Acc) ->
                        maps:update_with(maps:get(Id, K), fun(X) -> X + C end, C, Acc)
                end, #{}, nodes_of(Nodes, Frame)).

%% #{Id => number of Frame nodes from the root to Id}, in one pass (a
%% parent's id is smaller than its children's).
frame_depths(Nodes, Frame) ->
    lists:foldl(fun({Id, undefined, _, _, _, _}, Acc) -> Acc#{Id => 0};
                   ({Id, P, F, _, _, _}, Acc) ->
                        Acc#{Id => maps:get(P, Acc) + case F of Frame -> 1; _ -> 0 end}
                end, #{}, Nodes).

%% Frames from the process root (excluded) down to node Id (included).
path(M, Id) when is_map(M) -> path(M, Id, []);
path(Nodes, Id) -> path(node_map(Nodes), Id).

path(M, Id, Acc) ->
    case maps:get(Id, M) of
        {_, undefined, _, _, _, _} -> Acc;
        {_, Parent, F, _, _, _} -> path(M, Parent, [F | Acc])
    end.

depth(Nodes, Id) -> length(path(Nodes, Id)).

%% Frames on the longest path below the process root.
max_depth(Nodes) ->
    Depths = lists:foldl(fun({Id, undefined, _, _, _, _}, Acc) -> Acc#{Id => 0};
                            ({Id, P, _, _, _, _}, Acc) -> Acc#{Id => maps:get(P, Acc) + 1}
                         end, #{}, Nodes),
    lists:max(maps:values(Depths)).

%% The sorted frame paths of a tree's nodes below the root (its shape).
frame_paths(Nodes) ->
    M = node_map(Nodes),
    lists:sort([path(M, Id) || {Id, _, _, _, _, _} <- tl(Nodes)]).

%% Structural invariants of one tree: ids 0..n-1 in order, node 0 is the only
%% root, parents come before children, a node's total is its self time plus
%% its children's totals, and only the root has zero calls (pseudo frames
%% count their entries too).
check_tree(Nodes) ->
    Ids = [Id || {Id, _, _, _, _, _} <- Nodes],
    ?assertEqual(lists:seq(0, length(Nodes) - 1), Ids),
    [{0, undefined, _, _, _, _} | Rest] = Nodes,
    [?assert(is_integer(P) andalso P < Id) || {Id, P, _, _, _, _} <- Rest],
    [?assert(is_binary(F) andalso byte_size(F) > 0) || {_, _, F, _, _, _} <- Nodes],
    ChildTotals = lists:foldl(fun({_, P, _, _, T, _}, Acc) ->
                                      maps:update_with(P, fun(X) -> X + T end, T, Acc)
                              end, #{}, Rest),
    [?assertEqual({Id, T}, {Id, S + maps:get(Id, ChildTotals, 0)}) || {Id, _, _, S, T, _} <- Nodes],
    [?assert(C > 0) || {_, _, _, _, _, C} <- Rest],
    ok.

check_profile(#{processes := Ps, truncated := Tr, events := E, dropped := D,
                memory_peak := Mem, duration_ns := Dur}) ->
    ?assert(lists:member(Tr, [false, max_memory, max_processes])),
    [?assert(is_integer(X) andalso X >= 0) || X <- [E, D, Mem, Dur]],
    [begin
         ?assert(is_binary(L)),
         [{0, undefined, L, _, _, _} | _] = N,
         check_tree(N)
     end || {L, N} <- Ps],
    ok.

%% Nothing left behind by beamspy: the lock is gone, the given processes
%% (when alive) have no trace flags, no process on the node has beamspy's
%% tracer, and the local call patterns are removed.
assert_clean() -> assert_clean([]).

assert_clean(Pids) ->
    ok = wait_no_session(),
    [{module, M} = code:ensure_loaded(M) || M <- [bs_wl, bs_cp, lists]],
    %% undefined: the process ended meanwhile (it may be ending as we look).
    [?assertEqual({P, {flags, []}}, {P, Info})
     || P <- [self() | Pids], Info <- [trace_info(P, flags)], Info =/= undefined],
    [?assertEqual({P, ok}, {P, beamspy_tracer_of(P)}) || P <- erlang:processes()],
    ?assertEqual({traced, false}, trace_info({bs_wl, fib, 1}, traced)),
    ?assertEqual({traced, false}, trace_info({bs_cp, run, 1}, traced)),
    ?assertEqual({traced, false}, trace_info({lists, reverse, 1}, traced)),
    ?assertEqual({traced, false}, trace_info(on_load, traced)),
    ?assertEqual([], beamspy_trace_sessions()),
    ok.

%% Stricter than assert_clean/0, for tests that kill beamspy's processes:
%% waits (up to 10 s) for the node to be clean, then asserts that it is. No
%% process and no `new' process has any trace flag, no function of any
%% loaded module has a call pattern or a meta pattern, neither has on_load,
%% no beamspy session name is registered and beamspy:sessions() is empty.
assert_node_clean() ->
    _ = wait_for(fun() -> node_dirt() =:= [] end, 10000),
    ?assertEqual([], node_dirt()).

%% What assert_node_clean/0 finds left behind, [] when nothing. The cheap
%% checks first: sampling functions (slow while the node is still traced)
%% only once they find nothing.
node_dirt() ->
    Names = [?LOCK | [list_to_atom("beamspy_session_" ++ integer_to_list(I)) || I <- lists:seq(1, 64)]],
    Registered = [{registered, N, P} || N <- Names, P <- [whereis(N)], P =/= undefined],
    Flags = [{flags, P, F} || P <- erlang:processes(), {flags, F} <- [trace_info(P, flags)], F =/= []],
    New = case trace_info(new, flags) of
              {flags, []} -> [];
              NewFlags -> [{new, NewFlags}]
          end,
    OnLoad = case trace_info(on_load, traced) of
                 {traced, false} -> [];
                 T -> [{on_load, T}]
             end,
    Sessions0 = case beamspy_trace_sessions() of
                    [] -> [];
                    TS -> [{trace_sessions, TS}]
                end,
    case Registered ++ lists:sublist(Flags, 5) ++ New ++ OnLoad ++ Sessions0 of
        [] ->
            Patterns = [{pattern, MFA, All} || MFA <- sampled_functions(),
                                               All <- [trace_info(MFA, all)],
                                               All =/= {all, false}],
            Sessions = case beamspy:sessions() of
                           [] -> [];
                           Ss -> [{sessions, Ss}]
                       end,
            lists:sublist(Patterns, 5) ++ Sessions;
        Dirt ->
            Dirt
    end.

%% trace_info/2 of a function waits for every scheduler (slow on a busy
%% node), so: the first function of every loaded module (the local patterns
%% beamspy sets are on every function or none), and every function of the
%% test workloads (a capture's meta pattern is on one function).
sampled_functions() ->
    Workloads = [bs_wl, bs_capture_wl, bs_cp, bs_churn_wl],
    [{M, F, A} || {M, _} <- code:all_loaded(),
                  Fs <- [try M:module_info(functions) catch _:_ -> [] end],
                  {F, A} <- case lists:member(M, Workloads) of
                                true -> Fs;
                                false -> lists:sublist(Fs, 1)
                            end].

%% erlang:trace_info/2 as beamspy sees it on this VM: the legacy trace state,
%% and from OTP 27 on also what beamspy's dynamic trace sessions (named
%% beamspy, see beamspy_backend) set: there live sessions trace in their own
%% session, which erlang:trace_info/2 does not show. Flags are added up; for
%% any other item the first value that is set wins.
trace_info(What, Item) ->
    Legacy = erlang:trace_info(What, Item),
    lists:foldl(fun(S, Acc) -> merge_info(Acc, trace:info(S, What, Item)) end,
                Legacy, beamspy_trace_sessions()).

merge_info({flags, A}, {flags, B}) when is_list(A), is_list(B) -> {flags, A ++ B};
merge_info({Item, V}, {Item, _} = Other) when V =:= false; V =:= []; V =:= undefined -> Other;
merge_info(Acc, _) -> Acc.

%% The dynamic trace sessions of beamspy that exist now ([] before OTP 27).
beamspy_trace_sessions() ->
    case beamspy_backend:sessions_supported() of
        true -> [S || {beamspy, _} = S <- trace:session_info(all)];
        false -> []
    end.

beamspy_tracer_of(P) ->
    case erlang:trace_info(P, tracer) of
        {tracer, {beamspy_tracer, _} = T} -> {traced_by, T};
        _ -> ok
    end.

%% Waits (up to 10 s) until the session owner has gone.
wait_no_session() ->
    wait_for(fun() -> whereis(?LOCK) =:= undefined end, 10000).

wait_for(Pred, Ms) when Ms =< 0 ->
    case Pred() of
        true -> ok;
        false -> {error, timeout}
    end;
wait_for(Pred, Ms) ->
    case Pred() of
        true -> ok;
        false -> timer:sleep(10), wait_for(Pred, Ms - 10)
    end.

%% A fresh, not yet existing path under the test tmp directory (which exists).
tmp_dir() ->
    Base = case os:getenv("BEAMSPY_TEST_TMP") of
               false -> filename:join("/tmp", "beamspy-erlang-tests");
               D -> D
           end,
    ok = filelib:ensure_path(Base),
    %% The OS pid keeps apart the VMs of one layer run (each test module
    %% runs in its own VM, where unique integers start again).
    filename:join(Base, "t" ++ os:getpid() ++ "_" ++ integer_to_list(erlang:unique_integer([positive]))).

rm_rf(Dir) ->
    _ = file:del_dir_r(Dir),
    ok.

%% A test that may hang (a lost message, a blocked server) starts a watchdog:
%% if the test has not called stop_watchdog/1 after Ms milliseconds (before
%% EUnit's own timeout, which says only "timed out"), the watchdog prints
%% where the test process is and hang_report/0, so that the log says why.
watchdog(What, Ms) ->
    Test = self(),
    spawn(fun() ->
                  receive stop -> ok
                  after Ms ->
                          io:format(user, "~n*** ~s: still running after ~w ms; the test process is at~n  ~p~n~s",
                                    [What, Ms, erlang:process_info(Test, [current_stacktrace, status,
                                                                          message_queue_len]),
                                     hang_report()])
                  end
          end).

stop_watchdog(Dog) ->
    Dog ! stop,
    ok.

%% What may keep a test waiting, as text: the file server and the code
%% server (status, stack, queue), any process that is suspended, and every
%% beamspy session owner (stack, queue). Reads process_info only: nothing
%% here waits for another process.
hang_report() ->
    Info = fun(P) -> erlang:process_info(P, [registered_name, status, message_queue_len,
                                             current_stacktrace])
           end,
    Servers = [{N, Info(P)} || N <- [file_server_2, code_server, user],
                               P <- [whereis(N)], is_pid(P)],
    Suspended = [{P, Info(P)} || P <- erlang:processes(),
                                 erlang:process_info(P, status) =:= {status, suspended}],
    Owners = [{P, Info(P)} || P <- beamspy_session:owners()],
    io_lib:format("  servers: ~p~n  suspended processes (~w): ~p~n  beamspy owners: ~p~n",
                  [Servers, length(Suspended), lists:sublist(Suspended, 10), Owners]).

list_dir(Dir) ->
    case file:list_dir_all(Dir) of
        {ok, L} -> lists:sort(L);
        {error, enoent} -> []
    end.

%% Runs Fun with a group leader that records what is printed; returns
%% {Result, Printed}.
capture_output(Fun) ->
    Old = group_leader(),
    Cap = spawn(fun() -> capture_loop([]) end),
    group_leader(Cap, self()),
    try Fun() of
        R ->
            group_leader(Old, self()),
            Cap ! {get, self()},
            receive {printed, Cap, Text} -> {R, Text} end
    catch C:E:S ->
            group_leader(Old, self()),
            exit(Cap, kill),
            erlang:raise(C, E, S)
    end.

%% Runs Fun while the registered name standard_error (where beamspy prints
%% its warnings) belongs to a recorder; returns {Result, PrintedOnStderr}.
capture_stderr(Fun) ->
    Real = whereis(standard_error),
    Cap = spawn(fun() -> capture_loop([]) end),
    true = unregister(standard_error),
    true = register(standard_error, Cap),
    Restore = fun() ->
                      true = unregister(standard_error),
                      true = register(standard_error, Real)
              end,
    try Fun() of
        R ->
            Restore(),
            Cap ! {get, self()},
            receive {printed, Cap, Text} -> {R, Text} end
    catch C:E:S ->
            Restore(),
            exit(Cap, kill),
            erlang:raise(C, E, S)
    end.

capture_loop(Acc) ->
    receive
        {io_request, From, ReplyAs, Req} ->
            From ! {io_reply, ReplyAs, ok},
            capture_loop([req_text(Req) | Acc]);
        {get, From} ->
            From ! {printed, self(), unicode:characters_to_list(lists:reverse(Acc))}
    end.

req_text({put_chars, _Enc, Chars}) -> Chars;
req_text({put_chars, Chars}) -> Chars;
req_text({put_chars, _Enc, M, F, A}) -> erlang:apply(M, F, A);
req_text({put_chars, M, F, A}) -> erlang:apply(M, F, A);
req_text({requests, Rs}) -> [req_text(R) || R <- Rs];
req_text(_) -> [].

flush() ->
    receive _ -> flush() after 0 -> ok end.

%% gen_server's receive loop: loop/7 up to OTP 27, loop/5 from OTP 29 (which
%% also has a loop/4 that calls it): the one with the most arguments.
gen_server_loop() ->
    {module, gen_server} = code:ensure_loaded(gen_server),
    {gen_server, loop, lists:max([A || {loop, A} <- gen_server:module_info(functions)])}.

gen_server_loop_frame() ->
    {M, F, A} = gen_server_loop(),
    iolist_to_binary(io_lib:format("~s:~s/~b", [M, F, A])).

%% epmd answers (net_adm:names/0) within Tries x 100 ms: -daemon returns
%% before it listens.
wait_for_epmd(0) -> {error, epmd_not_answering};
wait_for_epmd(Tries) ->
    case net_adm:names() of
        {ok, _} -> ok;
        {error, _} -> timer:sleep(100), wait_for_epmd(Tries - 1)
    end.

%% Makes this VM a distributed node named Prefix ++ its OS pid, unless it is
%% one already; returns whether it did (for the cleanup to stop it). epmd is
%% started first: net_kernel:start/1 does not start it (erl -sname does), and
%% on a fresh machine nothing may have yet (ERL_EPMD_PORT is obeyed by both).
distributed(Prefix) ->
    case node() of
        nonode@nohost ->
            Epmd = case os:find_executable("epmd") of
                       false -> filename:join([code:root_dir(), "bin", "epmd"]);
                       Found -> Found
                   end,
            _ = os:cmd(Epmd ++ " -daemon"),
            ok = wait_for_epmd(100),
            {ok, _} = net_kernel:start([list_to_atom(Prefix ++ os:getpid()), shortnames]),
            true;
        _ -> false
    end.
