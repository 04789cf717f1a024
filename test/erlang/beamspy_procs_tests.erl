%%% Processes: spawned children under their own pid, `children => false',
%%% many children on both schedulers at once (the NIF's concurrent pid
%%% table), and the process limit.
-module(beamspy_procs_tests).

-include_lib("eunit/include/eunit.hrl").

-import(bs_test_lib, [profile_ok/2, own_tree/1, other_trees/1, tree_of/2, processes/1,
                      depth_counts/2, frame_calls/2, assert_clean/0, assert_clean/1]).

-define(FIB, <<"bs_wl:fib/1">>).

setup() ->
    {module, bs_wl} = code:ensure_loaded(bs_wl),
    ok.

procs_test_() ->
    {setup, fun setup/0, fun(_) -> ok end,
     [{"spawned processes appear under their own pid", {timeout, 60, fun children/0}},
      {"children => false: only the caller is recorded", {timeout, 60, fun no_children/0}},
      {"20 children running fib(15) in parallel: exact counts in each",
       {timeout, 120, fun parallel/0}},
      {"parallel run repeated: same exact counts every time", {timeout, 120, fun parallel_repeat/0}},
      {"grandchildren are recorded under their own pid", {timeout, 60, fun grandchildren/0}},
      {"children collecting large heaps in parallel with gc => true", {timeout, 120, fun parallel_gc/0}},
      {"root labels: pid, then registered name or proc_lib initial call", {timeout, 60, fun labels/0}},
      {"root labels with names => elixir: spelled as Elixir, like the frames",
       {timeout, 60, fun elixir_labels/0}},
      {"2000 short-lived children at once: every one recorded exactly", {timeout, 120, fun many_children/0}},
      {"max_processes boundary: K+1 fits, K truncates", {timeout, 60, fun max_processes_boundary/0}},
      {"max_processes: profile truncated, call still correct", {timeout, 60, fun max_processes/0}}]}.

children() ->
    {{spawned, Results}, P} = profile_ok({bs_wl, spawn_fib, [3, 10]}, #{}),
    #{truncated := false, dropped := 0} = P,
    ?assertEqual(4, length(processes(P))),
    Labels = [L || {L, _} <- processes(P)],
    ?assertEqual(4, length(lists:usort(Labels))),
    Own = own_tree(P),
    ?assertEqual(0, frame_calls(Own, ?FIB)),
    ?assertEqual(3, frame_calls(Own, <<"erlang:spawn/1">>)),
    Expected = bs_wl:fib_calls_per_depth(10),
    [begin
         ?assertEqual(55, R),
         Nodes = tree_of(Child, P),
         [{0, undefined, Label, _, _, _} | _] = Nodes,
         ?assertNotEqual(hd(own_tree(P)), hd(Nodes)),
         ?assertMatch(<<"<", _/binary>>, Label),
         ?assertEqual(Expected, depth_counts(Nodes, ?FIB))
     end || {Child, R} <- Results],
    assert_clean().

no_children() ->
    {{spawned, Results}, P} = profile_ok({bs_wl, spawn_fib, [3, 10]}, #{children => false}),
    ?assertEqual(1, length(processes(P))),
    ?assertEqual([], other_trees(P)),
    ?assertEqual(3, frame_calls(own_tree(P), <<"erlang:spawn/1">>)),
    ?assertEqual([55, 55, 55], [R || {_, R} <- Results]),
    assert_clean().

parallel() ->
    K = 20,
    N = 15,
    Expected = bs_wl:fib_calls_per_depth(N),
    {Out, P} = profile_ok({bs_wl, par_fib_sched, [K, N]}, #{}),
    ?assertEqual(lists:duplicate(K, 610), [F || {_, F, _} <- Out]),
    ?debugFmt("children finished on schedulers ~w", [lists:usort([S || {_, _, S} <- Out])]),
    #{truncated := false, dropped := 0} = P,
    Children = other_trees(P),
    ?assertEqual(K, length(Children)),
    ?assertEqual(K + 1, length(lists:usort([L || {L, _} <- processes(P)]))),
    [?assertEqual({L, Expected}, {L, depth_counts(Nodes, ?FIB)}) || {L, Nodes} <- Children],
    ?assertEqual(0, frame_calls(own_tree(P), ?FIB)),
    assert_clean().

parallel_repeat() ->
    ?assert(erlang:system_info(schedulers_online) >= 2),
    Expected = bs_wl:fib_calls_per_depth(14),
    lists:foreach(
      fun(_) ->
              {{par, Results}, P} = profile_ok({bs_wl, par_fib, [40, 14]}, #{}),
              ?assertEqual(lists:duplicate(40, 377), Results),
              #{truncated := false, dropped := 0} = P,
              Children = other_trees(P),
              ?assertEqual(40, length(Children)),
              [?assertEqual({L, Expected}, {L, depth_counts(Nodes, ?FIB)}) || {L, Nodes} <- Children],
              assert_clean()
      end, lists:seq(1, 5)).

max_processes() ->
    {{spawned, Results}, P} = profile_ok({bs_wl, spawn_fib, [10, 5]}, #{max_processes => 3}),
    ?assertEqual(lists:duplicate(10, 5), [R || {_, R} <- Results]),
    ?assertMatch(#{truncated := max_processes}, P),
    ?assert(length(processes(P)) =< 3),
    assert_clean().

grandchildren() ->
    {{Child, Grand, 21}, P} = profile_ok({bs_wl, grandchild, [8]}, #{}),
    ?assertEqual(3, length(processes(P))),
    ?assertEqual(bs_wl:fib_calls_per_depth(8), depth_counts(tree_of(Grand, P), ?FIB)),
    ?assertEqual(1, frame_calls(tree_of(Child, P), <<"erlang:spawn/1">>)),
    ?assertEqual(0, frame_calls(tree_of(Child, P), ?FIB)),
    assert_clean().

parallel_gc() ->
    K = 6,
    Words = 500000,
    {Results, P} = profile_ok({bs_wl, par_big_heap, [K, Words]}, #{gc => true}),
    ?assertEqual(lists:duplicate(K, {Words, Words}), [R || {_, R} <- Results]),
    #{truncated := false, dropped := 0} = P,
    [begin
         Nodes = tree_of(C, P),
         ?assertEqual(2, frame_calls(Nodes, <<"erlang:garbage_collect/0">>)),
         ?assert(frame_calls(Nodes, <<"GC">>) >= 2)
     end || {C, _} <- Results],
    assert_clean().

labels() ->
    {{Named, Lib}, P} = profile_ok({bs_wl, named_kids, []}, #{}),
    try
        Labels = [L || {L, _} <- processes(P)],
        ?assert(lists:member(iolist_to_binary([pid_to_list(Named), " bs_wl_named"]), Labels)),
        {dictionary, Dict} = process_info(Lib, dictionary),
        {_, {M, F, A}} = lists:keyfind('$initial_call', 1, Dict),
        ?assert(lists:member(iolist_to_binary([pid_to_list(Lib), io_lib:format(" ~w:~w/~w", [M, F, A])]), Labels)),
        ?assert(lists:member(list_to_binary(pid_to_list(self())), [hd(binary:split(L, <<" ">>)) || L <- Labels])),
        assert_clean([Named, Lib])
    after
        bs_wl:stop_waiters([Named, Lib])
    end.

elixir_labels() ->
    {{Named, Lib}, P} = profile_ok({bs_wl, named_kids, []}, #{names => elixir}),
    try
        Labels = [L || {L, _} <- processes(P)],
        ?assert(lists:member(iolist_to_binary([pid_to_list(Named), " :bs_wl_named"]), Labels)),
        {dictionary, Dict} = process_info(Lib, dictionary),
        {_, {M, F, A}} = lists:keyfind('$initial_call', 1, Dict),
        %% A fun's initial call: "anonymous fn/0 in :bs_wl.named_kids/0", as its frame.
        Call = beamspy_tracer:frame_name({M, F, A}, elixir),
        ?assertMatch(<<"anonymous fn/0 in :bs_wl.named_kids/0">>, Call),
        ?assert(lists:member(iolist_to_binary([pid_to_list(Lib), " ", Call]), Labels)),
        ?assert(lists:member(list_to_binary(pid_to_list(self())), [hd(binary:split(L, <<" ">>)) || L <- Labels])),
        assert_clean([Named, Lib])
    after
        bs_wl:stop_waiters([Named, Lib])
    end.

many_children() ->
    K = 2000,
    Expected = bs_wl:fib_calls_per_depth(10),
    {{par, Results}, P} = profile_ok({bs_wl, par_fib, [K, 10]}, #{}),
    ?assertEqual(lists:duplicate(K, 55), Results),
    #{truncated := false, dropped := 0} = P,
    Children = other_trees(P),
    ?assertEqual(K, length(Children)),
    [?assertEqual({L, Expected}, {L, depth_counts(Nodes, ?FIB)}) || {L, Nodes} <- Children],
    assert_clean().

max_processes_boundary() ->
    K = 7,
    {{par, R1}, P1} = profile_ok({bs_wl, par_fib, [K, 6]}, #{max_processes => K + 1}),
    ?assertEqual(lists:duplicate(K, 8), R1),
    ?assertMatch(#{truncated := false}, P1),
    ?assertEqual(K + 1, length(processes(P1))),
    {{par, R2}, P2} = profile_ok({bs_wl, par_fib, [K, 6]}, #{max_processes => K}),
    ?assertEqual(lists:duplicate(K, 8), R2),
    ?assertMatch(#{truncated := max_processes}, P2),
    ?assertEqual(K, length(processes(P2))),
    assert_clean().

%% beamspy_procs:check_opts/4, the option check of dump, sampler and top.
check_opts_test_() ->
    Valid = fun(interval_ms, N) -> is_integer(N) andalso N > 0;
               (_, _) -> false
            end,
    Check = fun(Opts, Owner) -> beamspy_procs:check_opts(Opts, #{interval_ms => 100, limit => 10}, Valid, Owner) end,
    Me = self(),
    [?_assertEqual({ok, #{interval_ms => 50, limit => 10}}, Check(#{interval_ms => 50}, no_owner)),
     ?_assertEqual({ok, #{interval_ms => 100, limit => 10, owner => Me}}, Check(#{owner => Me}, owner)),
     ?_assertEqual({error, {bad_option, {interval_ms, 0}}}, Check(#{interval_ms => 0}, no_owner)),
     ?_assertEqual({error, {bad_option, {nope, 1}}}, Check(#{nope => 1, owner => Me}, owner)),
     ?_assertEqual({error, {bad_option, {owner, missing}}}, Check(#{interval_ms => 50}, owner)),
     ?_assertEqual({error, {bad_option, {owner, me}}}, Check(#{owner => me}, owner)),
     %% Without an owner rule, owner is one more unknown key.
     ?_assertEqual({error, {bad_option, {owner, Me}}}, Check(#{owner => Me}, no_owner)),
     %% The three users refuse what they refused before.
     ?_assertEqual({error, {bad_option, {interval_ms, -1}}}, beamspy_dump:snapshot(#{interval_ms => -1})),
     ?_assertEqual({error, {bad_option, {owner, missing}}}, beamspy_top:start(#{})),
     ?_assertEqual({error, {bad_option, {limit, 0}}}, beamspy_top:start(#{owner => Me, limit => 0})),
     ?_assertEqual({error, {bad_option, {max_stacks, 0}}}, beamspy_sampler:start(#{owner => Me, max_stacks => 0}))].
