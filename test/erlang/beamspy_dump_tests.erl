%%% beamspy_dump: the snapshot `beamspy dump' shows. Real stuck processes
%%% (a selective receive with 10,000 unmatched messages, a call never
%%% answered, a deep recursion parked in a receive), ranking, complete
%%% stacks, processes that die meanwhile, options; every result goes
%%% through one shape checker.
-module(beamspy_dump_tests).

-include_lib("eunit/include/eunit.hrl").

-define(WL, bs_stuck_wl).
-define(WAIT_MS, 10000).

dump_test_() ->
    {foreach, fun() -> {module, ?WL} = code:ensure_loaded(?WL) end, fun(_) -> ok end,
     [{"a selective receive with 10,000 unmatched messages comes first",
       {timeout, 60, fun unmatched_queue_first/0}},
      {"a server blocked in a call ranks above idle servers",
       {timeout, 60, fun blocked_call_above_idle/0}},
      {"a 300-deep recursion parked in a receive: all 301 frames, complete",
       {timeout, 60, fun deep_stack_complete/0}},
      {"2500 frames deep: the first 2000, stack_complete false",
       {timeout, 60, fun deep_stack_capped/0}},
      {"a frame whose name needs quoting and is not Latin-1 is read back",
       {timeout, 60, fun unicode_frame/0}},
      {"processes killed between the two looks are left out",
       {timeout, 60, fun died_between_looks/0}},
      {"processes spawned and dying all the time never break a snapshot",
       {timeout, 60, fun churn/0}},
      {"pids option: pids and registered names; unknown names fail",
       {timeout, 60, fun pids_option/0}},
      {"max_processes: the most stuck are kept, the rest counted",
       {timeout, 60, fun max_processes/0}},
      {"growth: a growing queue and growing memory are reported",
       {timeout, 60, fun growth/0}},
      {"a ring of two servers calling each other: each waits for the other",
       {timeout, 60, fun ring_waits/0}},
      {"a caller that monitors others too: the callee named on its stack is kept",
       {timeout, 60, fun waits_with_other_monitors/0}},
      {"a wait whose callee is not named on the stack: no target, a note says why",
       {timeout, 60, fun waits_unknown/0}},
      {"bad options are refused", fun bad_options/0},
      {"parse_backtrace: frames, skipped lines, cap", fun parse_backtrace/0},
      {"the caller is not reported; every value has its type",
       {timeout, 60, fun whole_node/0}}]}.

%%% ---------------------------------------------------------------------
%%% Tests
%%% ---------------------------------------------------------------------

ring_waits() ->
    [A, B, Idle] = [?WL:start_server() || _ <- lists:seq(1, 3)],
    ok = ?WL:block_on(A, B),
    ok = ?WL:wait_until_in(A, {gen, do_call, 4}, ?WAIT_MS),
    %% B's call to A is never answered either: A is busy calling B.
    ok = ?WL:block_on(B, A),
    ok = ?WL:wait_until_in(B, {gen, do_call, 4}, ?WAIT_MS),
    try
        Dump = snapshot(#{pids => [A, B, Idle]}),
        Node = atom_to_binary(node(), utf8),
        ?assertMatch(#{state := <<"call">>, wait_note := <<>>}, find(A, Dump)),
        ?assertEqual([#{pid => pid_text(B), name => <<>>, node => Node}],
                     maps:get(waits_for, find(A, Dump))),
        ?assertEqual([#{pid => pid_text(A), name => <<>>, node => Node}],
                     maps:get(waits_for, find(B, Dump))),
        ?assertMatch(#{state := <<"idle">>, waits_for := [], reply_wait := none}, find(Idle, Dump)),
        %% Where each call waits, and who made it, as data for the tool to spell.
        [begin
             #{reply_wait := #{in := In, called_from := {M, _, _}}} = find(P, Dump),
             ?assertEqual({gen, do_call, 4}, In),
             ?assertNot(lists:member(M, [gen, gen_server, proc_lib]))
         end || P <- [A, B]]
    after
        ?WL:stop_all([A, B, Idle])
    end.

waits_unknown() ->
    Server = ?WL:start_server(),
    Other = spawn(?WL, idle, []),
    %% gen:call/4 straight away: no gen_server:call/3 frame keeps the
    %% server, so of the two monitored processes none is named.
    Caller = spawn(fun() ->
                           erlang:monitor(process, Other),
                           gen:call(Server, '$gen_call', hello, infinity)
                   end),
    ok = ?WL:wait_until_in(Caller, {gen, do_call, 4}, ?WAIT_MS),
    try
        D = find(Caller, snapshot(#{pids => [Caller]})),
        ?assertMatch(#{state := <<"call">>, waits_for := []}, D),
        ?assertEqual(<<"it monitors 2 processes, none named on its stack">>, maps:get(wait_note, D))
    after
        ?WL:stop_all([Caller, Server, Other])
    end.

waits_with_other_monitors() ->
    Server = ?WL:start_server(),
    true = register(bs_dump_callee, Server),
    Others = [spawn(?WL, idle, []) || _ <- lists:seq(1, 3)],
    Caller = spawn(fun() ->
                           [erlang:monitor(process, O) || O <- Others],
                           gen_server:call(bs_dump_callee, hello, infinity)
                   end),
    ok = ?WL:wait_until_in(Caller, {gen, do_call, 4}, ?WAIT_MS),
    try
        D = find(Caller, snapshot(#{pids => [Caller]})),
        ?assertEqual(<<"call">>, maps:get(state, D)),
        ?assertEqual([#{pid => pid_text(Server), name => <<"bs_dump_callee">>,
                        node => atom_to_binary(node(), utf8)}],
                     maps:get(waits_for, D))
    after
        ?WL:stop_all([Caller, Server | Others])
    end.

unmatched_queue_first() ->
    P = spawn(?WL, selective_receiver, []),
    ok = ?WL:wait_until_in(P, {?WL, selective_receiver, 0}, ?WAIT_MS),
    [P ! {unmatched, I} || I <- lists:seq(1, 10000)],
    Idle = spawn(?WL, idle, []),
    try
        Dump = snapshot(#{}),
        [First | _] = processes(Dump),
        ?assertEqual(pid_text(P), maps:get(pid, First)),
        ?assertEqual(10000, maps:get(message_queue_len, First)),
        ?assertEqual(<<"waiting">>, maps:get(status, First)),
        ?assertEqual(<<"bs_stuck_wl:selective_receiver/0">>, maps:get(current, First)),
        ?assert(has_reason(First, <<"message queue 10000">>)),
        ?assert(has_reason(First, <<"matches none of its 10000 messages">>)),
        ?assert(maps:get(stuck_score, First) >= 10000),
        [Frame] = maps:get(stack, First),
        ?assert(located(<<"bs_stuck_wl:selective_receiver/0">>, Frame)),
        IdleDump = find(Idle, Dump),
        ?assertEqual(0, maps:get(stuck_score, IdleDump)),
        ?assertEqual([], maps:get(reasons, IdleDump))
    after
        ?WL:stop_all([P, Idle])
    end.

blocked_call_above_idle() ->
    Servers = [?WL:start_server() || _ <- lists:seq(1, 4)],
    [Blocker, Target | Idle] = Servers,
    ok = ?WL:block_on(Blocker, Target),
    ok = ?WL:wait_until_in(Blocker, {gen, do_call, 4}, ?WAIT_MS),
    try
        %% Only these servers: the blocker first, then the idle ones.
        Some = snapshot(#{pids => Servers}),
        [First | Rest] = processes(Some),
        ?assertEqual(pid_text(Blocker), maps:get(pid, First)),
        ?assert(has_reason(First, <<"waiting for a reply in gen:do_call/4">>)),
        ?assert(has_reason(First, <<"called from bs_stuck_wl:handle_cast/2">>)),
        ?assertEqual(maps:get(interval_ms, Some), maps:get(idle_ms, First)),
        ?assertMatch([<<"gen:do_call/4 (gen.erl:", _/binary>>,
                      <<"gen_server:call/3 (gen_server.erl:", _/binary>> | _],
                     maps:get(stack, First)),
        ?assert(lists:any(fun(F) -> located(<<"bs_stuck_wl:handle_cast/2">>, F) end,
                          maps:get(stack, First))),
        ?assert(prefix(<<"proc_lib:init_p_do_apply/3">>, lists:last(maps:get(stack, First)))),
        %% The target got the call and sits idle in its loop: not stuck.
        [?assertEqual(0, maps:get(stuck_score, R)) || R <- Rest],
        [?assertEqual(bs_test_lib:gen_server_loop_frame(), maps:get(current, R)) || R <- Rest],
        [?assertEqual(<<"bs_stuck_wl:init/1">>, maps:get(initial_call, R)) || R <- Rest],
        %% On the whole node, too.
        All = snapshot(#{}),
        BlockerAt = position(Blocker, All),
        [?assert(BlockerAt < position(I, All)) || I <- [Target | Idle]]
    after
        ?WL:stop_all(Servers)
    end.

deep_stack_complete() ->
    P = spawn(?WL, deep, [300]),
    ok = ?WL:wait_until_in(P, {?WL, deep, 1}, ?WAIT_MS),
    try
        #{processes := [D]} = snapshot(#{pids => [P]}),
        Stack = maps:get(stack, D),
        ?assertEqual(301, length(Stack)),
        ?assert(maps:get(stack_complete, D)),
        ?assert(lists:all(fun(F) -> prefix(<<"bs_stuck_wl:deep/1">>, F) end, Stack)),
        %% Locations where current_stacktrace agrees: the receive line at
        %% the top, the recursive call's line below it.
        [Top, Second | _] = Stack,
        ?assert(located(<<"bs_stuck_wl:deep/1">>, Top)),
        ?assert(located(<<"bs_stuck_wl:deep/1">>, Second)),
        ?assertNotEqual(Top, Second),
        ?assertEqual(<<"waiting">>, maps:get(status, D)),
        ?assert(has_reason(D, <<"301 frames deep">>))
    after
        ?WL:stop(P)
    end.

deep_stack_capped() ->
    P = spawn(?WL, deep, [2500]),
    ok = ?WL:wait_until_in(P, {?WL, deep, 1}, ?WAIT_MS),
    try
        #{processes := [D]} = snapshot(#{pids => [P], interval_ms => 0}),
        ?assertEqual(2000, length(maps:get(stack, D))),
        ?assertNot(maps:get(stack_complete, D))
    after
        ?WL:stop(P)
    end.

unicode_frame() ->
    P = spawn(?WL, deep_unicode, [3]),
    ok = ?WL:wait_until_in(P, {?WL, deep, 1}, ?WAIT_MS),
    try
        #{processes := [D]} = snapshot(#{pids => [P], interval_ms => 0}),
        Stack = maps:get(stack, D),
        ?assertEqual(5, length(Stack)),
        ?assert(located(<<"bs_stuck_wl:'héllo ŝ'/1"/utf8>>, lists:last(Stack))),
        ?assert(maps:get(stack_complete, D))
    after
        ?WL:stop(P)
    end.

%% A watcher kills the victims once the snapshot waits between its looks.
died_between_looks() ->
    Victims = [spawn(?WL, idle, []) || _ <- lists:seq(1, 20)],
    Survivor = spawn(?WL, idle, []),
    Self = self(),
    Watcher = spawn(fun() ->
                            ok = ?WL:wait_until_in(Self, {beamspy_dump, wait_between_looks, 1},
                                                   ?WAIT_MS),
                            [exit(V, kill) || V <- Victims]
                    end),
    try
        Dump = snapshot(#{pids => [Survivor | Victims], interval_ms => 2000}),
        ?assertEqual([pid_text(Survivor)], [maps:get(pid, D) || D <- processes(Dump)]),
        ?assertEqual(1, maps:get(process_count, Dump)),
        ?assertEqual(0, maps:get(omitted, Dump)),
        ?assertNot(lists:any(fun erlang:is_process_alive/1, Victims))
    after
        ?WL:stop_all([Watcher, Survivor | Victims])
    end.

churn() ->
    Churners = [spawn(?WL, churn, []) || _ <- lists:seq(1, 4)],
    try
        [begin
             Dump = snapshot(#{interval_ms => 20}),
             ?assertEqual(length(processes(Dump)), maps:get(process_count, Dump))
         end || _ <- lists:seq(1, 10)]
    after
        ?WL:stop_all(Churners)
    end.

pids_option() ->
    Named = spawn(?WL, idle, []),
    Other = spawn(?WL, idle, []),
    true = register(bs_dump_named, Named),
    try
        Dump = snapshot(#{pids => [bs_dump_named, Other, Named]}),
        Got = lists:sort([{maps:get(pid, D), maps:get(name, D)} || D <- processes(Dump)]),
        ?assertEqual(lists:sort([{pid_text(Named), <<"bs_dump_named">>}, {pid_text(Other), <<>>}]),
                     Got),
        ?assertEqual({error, {noproc, bs_dump_no_such_name}},
                     beamspy_dump:snapshot(#{pids => [Other, bs_dump_no_such_name]})),
        Dead = spawn(fun() -> ok end),
        ok = ?WL:wait_until(fun() -> not is_process_alive(Dead) end, ?WAIT_MS),
        ?assertEqual({error, {noproc, Dead}}, beamspy_dump:snapshot(#{pids => [Dead]})),
        ?assertMatch(#{processes := []}, snapshot(#{pids => []}))
    after
        ?WL:stop_all([Named, Other])
    end.

max_processes() ->
    P = spawn(?WL, selective_receiver, []),
    ok = ?WL:wait_until_in(P, {?WL, selective_receiver, 0}, ?WAIT_MS),
    [P ! {unmatched, I} || I <- lists:seq(1, 100)],
    try
        Dump = snapshot(#{max_processes => 3, interval_ms => 10}),
        Ps = processes(Dump),
        ?assertEqual(3, length(Ps)),
        ?assertEqual(pid_text(P), maps:get(pid, hd(Ps))),
        ?assertEqual(maps:get(process_count, Dump) - 3, maps:get(omitted, Dump)),
        ?assert(maps:get(omitted, Dump) > 0)
    after
        ?WL:stop(P)
    end.

%% The queue and the memory of P grow while the snapshot waits.
growth() ->
    P = spawn(?WL, selective_receiver, []),
    ok = ?WL:wait_until_in(P, {?WL, selective_receiver, 0}, ?WAIT_MS),
    Self = self(),
    Feeder = spawn(fun() ->
                           ok = ?WL:wait_until_in(Self, {beamspy_dump, wait_between_looks, 1},
                                                  ?WAIT_MS),
                           Big = lists:seq(1, 100000),
                           [P ! {unmatched, Big} || _ <- lists:seq(1, 5)],
                           receive stop -> ok end
                   end),
    try
        #{processes := [D]} = snapshot(#{pids => [P], interval_ms => 2000}),
        ?assertEqual(5, maps:get(message_queue_len, D)),
        ?assertEqual(5, maps:get(queue_growth, D)),
        ?assert(maps:get(memory_growth, D) > 1000000),
        ?assert(has_reason(D, <<"message queue 5 (+5 in 2000 ms)">>)),
        ?assert(has_reason(D, <<"memory +">>)),
        ?assert(maps:get(stuck_score, D) > 5 + 10 * 5 + 500)
    after
        ?WL:stop_all([Feeder, P])
    end.

bad_options() ->
    ?assertEqual({error, {bad_option, {interval_ms, -1}}},
                 beamspy_dump:snapshot(#{interval_ms => -1})),
    ?assertEqual({error, {bad_option, {max_processes, 0}}},
                 beamspy_dump:snapshot(#{max_processes => 0})),
    ?assertEqual({error, {bad_option, {pids, some}}}, beamspy_dump:snapshot(#{pids => some})),
    ?assertEqual({error, {bad_option, {colour, red}}}, beamspy_dump:snapshot(#{colour => red})),
    ?assertEqual({error, {bad_option, [pids]}}, beamspy_dump:snapshot([pids])).

%% erts prints atoms in UTF-8, quoted where needed; escapes are read too.
%% An atom that does not exist is not created: the frame stays text.
parse_backtrace() ->
    Text = <<"Program counter: 0x00007f2a70b97a0c (bs_stuck_wl:deep/1 + 76)\n"
             "y(0)     []\n"
             "y(1)     Catch 0x00007efc457d53ac (gen_server:call/3 + 140)\n"
             "\n"
             "0x00007f2a6f795168 Return addr 0x00007f2a70b97ad8 (bs_stuck_wl:'héllo ŝ'/1 + 280)\n"/utf8,
             "0x00007f2a6f795170 Return addr 0x00007f2a70b97ad8 (bs_stuck_wl:'h\\x{E9}llo \\x{15D}'/1 + 8)\n"
             "0x00007f2a6f795170 Return addr 0x00007f2a70b97ad8 (bs_stuck_wl:'\\x{15D}'/1 + 8)\n"
             "0x00007f2a6f795178 Return addr 0x00007f2a70b97ad8 (no_such:thing/1 + 8)\n"
             "0x00007f2a6f795190 Return addr 0x00007f2a70800c30 (<terminate process normally>)\n">>,
    {Frames, true} = beamspy_dump:parse_backtrace(Text, 10),
    ?assertEqual([{bs_stuck_wl, deep, 1}, {bs_stuck_wl, 'héllo ŝ', 1}, {bs_stuck_wl, 'héllo ŝ', 1},
                  <<"bs_stuck_wl:'\\x{15D}'/1">>, <<"no_such:thing/1">>], Frames),
    ?assertEqual({[{bs_stuck_wl, deep, 1}], false}, beamspy_dump:parse_backtrace(Text, 1)),
    ?assertEqual({[], true},
                 beamspy_dump:parse_backtrace(<<"Program counter: 0x0 (unknown function)\n">>, 5)).

whole_node() ->
    Dump = snapshot(#{interval_ms => 50}),
    Self = pid_text(self()),
    ?assertEqual([], [D || D <- processes(Dump), maps:get(pid, D) =:= Self]),
    ?assertEqual(atom_to_binary(node(), utf8), maps:get(node, Dump)),
    ?assert(length(processes(Dump)) > 10),
    %% The order is the documented one.
    Keys = [{-maps:get(stuck_score, D), -maps:get(message_queue_len, D), -maps:get(memory, D)}
            || D <- processes(Dump)],
    ?assertEqual(lists:sort(Keys), Keys),
    %% code_server, idle in its loop.
    Code = find(whereis(code_server), Dump),
    ?assertEqual(<<"code_server">>, maps:get(name, Code)),
    ?assertEqual(0, maps:get(stuck_score, Code)).

%%% ---------------------------------------------------------------------
%%% Helpers
%%% ---------------------------------------------------------------------

%% beamspy_dump:snapshot/1 that must succeed and be well formed, its
%% frames and reasons then spelled as the tool spells them.
snapshot(Opts) ->
    {ok, Dump} = beamspy_dump:snapshot(Opts),
    ok = check_dump(Dump),
    Dump#{processes := [spelled(P) || P <- maps:get(processes, Dump)]}.

processes(#{processes := Ps}) -> Ps.

%% A process with its frames and reasons spelled by the engine's speller
%% (the dump sends them raw).
spelled(#{initial_call := I, current := C, stack := S, reasons := R} = P) ->
    P#{initial_call := name(I), current := name(C),
       stack := [case W of
                     <<>> -> name(F);
                     _ -> <<(name(F))/binary, " (", W/binary, ")">>
                 end || {F, W} <- S],
       reasons := [iolist_to_binary([case Part of
                                         B when is_binary(B) -> B;
                                         _ -> name(Part)
                                     end || Part <- Parts]) || Parts <- R]}.

name({_, _, _} = MFA) -> beamspy_tracer:frame_name(MFA, erlang);
name(Text) when is_binary(Text) -> beamspy_tracer:frame_name(Text, erlang);
name(Other) -> iolist_to_binary(io_lib:format("~tw", [Other])).

pid_text(Pid) -> list_to_binary(pid_to_list(Pid)).

find(Pid, Dump) ->
    [D] = [D || D <- processes(Dump), maps:get(pid, D) =:= pid_text(Pid)],
    D.

position(Pid, Dump) ->
    Text = pid_text(Pid),
    length(lists:takewhile(fun(D) -> maps:get(pid, D) =/= Text end, processes(Dump))) + 1.

has_reason(D, Part) ->
    lists:any(fun(R) -> binary:match(R, Part) =/= nomatch end, maps:get(reasons, D)).

%% Frame is Name with a location "(.../bs_stuck_wl.erl:Line)".
located(Name, Frame) ->
    Size = byte_size(Name),
    case Frame of
        <<Name:Size/binary, " (", Where/binary>> ->
            match =:= re:run(Where, <<"bs_stuck_wl\\.erl:[0-9]+\\)$">>, [{capture, none}]);
        _ ->
            false
    end.

prefix(Prefix, Bin) ->
    binary:longest_common_prefix([Prefix, Bin]) =:= byte_size(Prefix).

%% Exactly the documented keys, each of its type; texts valid UTF-8.
check_dump(Dump) ->
    ?assertEqual(lists:sort([node, taken_at_us, interval_ms, process_count, omitted, processes]),
                 lists:sort(maps:keys(Dump))),
    #{node := Node, taken_at_us := At, interval_ms := Interval, process_count := Count,
      omitted := Omitted, processes := Ps} = Dump,
    text(Node),
    ?assert(is_integer(At) andalso At > 0),
    ?assert(is_integer(Interval) andalso Interval >= 0),
    ?assert(is_integer(Omitted) andalso Omitted >= 0),
    ?assertEqual(Count, length(Ps) + Omitted),
    lists:foreach(fun(P) -> check_process(P, Interval) end, Ps),
    ?assertEqual(length(Ps), length(lists:usort([maps:get(pid, P) || P <- Ps]))),
    ok.

check_process(P, Interval) ->
    Keys = [pid, name, initial_call, current, status, message_queue_len, queue_growth, memory,
            memory_growth, reductions, reductions_delta, idle_ms, stack, stack_complete,
            stuck_score, reasons, state, waits_for, wait_note, reply_wait],
    ?assertEqual(lists:sort(Keys), lists:sort(maps:keys(P))),
    ?assert(lists:member(maps:get(state, P),
                         [<<"call">>, <<"receive">>, <<"idle">>, <<"busy">>, <<"running">>])),
    text(maps:get(wait_note, P)),
    case maps:get(reply_wait, P) of
        none -> ok;
        #{in := In, called_from := From} = W ->
            ?assertEqual([called_from, in], lists:sort(maps:keys(W))),
            frame(In),
            From =:= none orelse frame(From)
    end,
    [begin
         ?assertEqual([name, node, pid], lists:sort(maps:keys(T))),
         [text(V) || V <- maps:values(T)]
     end || T <- maps:get(waits_for, P)],
    ?assert(maps:get(waits_for, P) =:= [] orelse maps:get(state, P) =:= <<"call">>),
    ?assertMatch(<<"<", _/binary>>, maps:get(pid, P)),
    [text(maps:get(K, P)) || K <- [pid, name, status]],
    [frame(maps:get(K, P)) || K <- [initial_call, current]],
    ?assert(lists:member(maps:get(status, P),
                         [<<"waiting">>, <<"running">>, <<"runnable">>, <<"exiting">>,
                          <<"garbage_collecting">>, <<"suspended">>])),
    [?assert(is_integer(maps:get(K, P)) andalso maps:get(K, P) >= 0)
     || K <- [message_queue_len, memory, reductions, idle_ms, stuck_score]],
    [?assert(is_integer(maps:get(K, P))) || K <- [queue_growth, memory_growth, reductions_delta]],
    ?assert(lists:member(maps:get(idle_ms, P), [0, Interval])),
    Stack = maps:get(stack, P),
    ?assert(is_list(Stack)),
    [begin frame(F), text(W) end || {F, W} <- Stack],
    ?assertEqual(length(Stack), length([E || {_, _} = E <- Stack])),
    ?assert(length(Stack) =< 2000),
    ?assert(is_boolean(maps:get(stack_complete, P))),
    Reasons = maps:get(reasons, P),
    ?assert(is_list(Reasons)),
    [begin
         ?assert(is_list(R) andalso R =/= []),
         [case Part of
              B when is_binary(B) -> text(B);
              _ -> frame(Part)
          end || Part <- R]
     end || R <- Reasons],
    %% Every reason adds to the score, and every point has a reason.
    ?assertEqual(maps:get(stuck_score, P) > 0, Reasons =/= []),
    ok.

%% A raw frame: {M, F, A}, a text that cannot be read as one, or undefined.
frame({M, F, A}) ->
    ?assert(is_atom(M) andalso is_atom(F) andalso is_integer(A) andalso A >= 0);
frame(undefined) ->
    ok;
frame(T) ->
    text(T).

text(T) ->
    ?assert(is_binary(T)),
    ?assertEqual(T, unicode:characters_to_binary(T)).
