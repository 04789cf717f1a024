%%% Stack shapes that once came out wrong: loops at the bottom of a spawned
%%% process must keep a constant depth (the VM reports their caller as
%%% `undefined'), and BIFs with an unknown caller stay on the current stack.
-module(beamspy_stack_shape_tests).
-include_lib("eunit/include/eunit.hrl").

spawned_receive_loop_keeps_constant_depth_test() ->
    {ok, #{profile := P}} = beamspy:profile({bs_loops, spawned_receive_loop, [20000]}, #{}),
    [{_, Child}] = bs_test_lib:other_trees(P),
    %% 20,000 iterations: one collect/2 node, right under the process root
    %% (the spawned fun tail-called it), with every call counted.
    [{Id, _, _, _, _, Calls}] = bs_test_lib:nodes_of(Child, <<"bs_loops:collect/2">>),
    ?assertEqual(20001, Calls),
    ?assertEqual(1, bs_test_lib:depth(Child, Id)),
    ?assert(bs_test_lib:max_depth(Child) =< 3),
    bs_test_lib:assert_clean().

bif_calls_stay_under_their_caller_test() ->
    %% lists:seq/2 is Erlang, erlang:spawn/1 is a BIF: both stay under the
    %% function that called them.
    {ok, #{profile := P}} = beamspy:profile({bs_loops, spawned_receive_loop, [10]}, #{}),
    Own = bs_test_lib:own_tree(P),
    [{SpawnId, _, _, _, _, _}] = bs_test_lib:nodes_of(Own, <<"erlang:spawn/1">>),
    ?assertEqual([<<"bs_loops:spawned_receive_loop/1">>, <<"erlang:spawn/1">>],
                 [F || {_, _, F, _, _, _} <- [{x, x, F0, x, x, x} || F0 <- bs_test_lib:path(Own, SpawnId)]]),
    bs_test_lib:assert_clean().
