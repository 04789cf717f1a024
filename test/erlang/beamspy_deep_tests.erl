%%% Profiles whose size is set by the data, through the NIF: 100,000 calls
%%% made by one process (they were once added to the profile by a recursion
%%% per capture, which overflowed a dirty scheduler's stack near 500 and
%%% ended the VM), captures that run out of memory, and a recording a
%%% million frames deep returned in every format by profile/2.
-module(beamspy_deep_tests).
-include_lib("eunit/include/eunit.hrl").

-define(WL, bs_many_calls_wl).

%% 100,000 calls of one process calling in a loop (the owner once took
%% each capture alone, with an untrace that waits for the schedulers: ~50
%% ms a call on a loaded machine).
capture_100000_calls_of_one_process_test_() -> {timeout, 600, fun capture_100000_calls/0}.

capture_100000_calls() ->
    Caller = ?WL:start_caller(),
    {ok, Ref} = beamspy:capture_encoded({?WL, tiny, 1}, 100000, #{merge => true, timeout => 550000,
                                                                 compensate => false}, [folded]),
    Reply = receive {beamspy_capture, Ref, R} -> R after 580000 -> timeout end,
    exit(Caller, kill),
    {ok, #{calls := Calls, outputs := Outputs}} = Reply,
    ?assertEqual(100000, Calls),
    [{merged, folded, Folded}] = Outputs,
    %% Every line is the captured function, alone (it calls nothing
    %% traced) or with the time it was scheduled out.
    Lines = binary:split(Folded, <<"\n">>, [global, trim_all]),
    ?assertMatch({match, _}, re:run(Folded, "^bs_many_calls_wl:tiny/1 [0-9]+$", [multiline])),
    [?assertMatch({match, _}, re:run(L, "^bs_many_calls_wl:tiny/1(;(RUNNABLE|WAIT|SLEEP))? [0-9]+$"))
     || L <- Lines],
    bs_test_lib:wait_no_session().

%% A memory limit reached between two captures (no room for the next
%% one's tree) ends the capture with what it has, said as max_memory; the
%% process whose next recording could not be made is left alone when the
%% session stops (its empty recording once crashed the VM there).
capture_out_of_memory_between_calls_test_() -> {timeout, 600, fun capture_out_of_memory/0}.

capture_out_of_memory() ->
    Caller = ?WL:start_caller(),
    {ok, Ref} = beamspy:capture_async({?WL, tiny, 1}, 100000,
                                      #{merge => true, timeout => 550000, compensate => false,
                                        formats => [folded], output => bs_test_lib:tmp_dir(),
                                        max_memory => 64 * 1024, report_limit => true}),
    Reply = receive {beamspy_capture, Ref, R} -> R after 580000 -> timeout end,
    Report = receive {beamspy_capture_report, Ref, Rep} -> Rep after 0 -> none end,
    exit(Caller, kill),
    {ok, [File]} = Reply,
    ?assertMatch(#{truncated := max_memory}, Report),
    {ok, Bin} = file:read_file(File),
    ?assertMatch({match, _}, re:run(Bin, "^bs_many_calls_wl:tiny/1 [0-9]+\n")),
    bs_test_lib:wait_no_session(),
    bs_test_lib:rm_rf(filename:dirname(File)).

-define(FORMATS, [folded, svg, html, speedscope, chrome, perf, bspy, callgrind]).

%% A recording a million frames deep (deep/1 recursing 1,000,000 times),
%% returned in every format by profile/2: the NIF builds, filters and
%% writes it on a dirty scheduler's stack.
profile_a_million_deep_test_() -> {timeout, 600, fun profile_a_million_deep/0}.

profile_a_million_deep() ->
    {ok, #{result := {return, 1000000}, profile := #{processes := [{_, Nodes}]}} = R} =
        beamspy:profile({?WL, deep, [1000000]}, #{return => ?FORMATS, compensate => false}),
    ?assert(length([N || {_, _, <<"bs_many_calls_wl:deep/1">>, _, _, _} = N <- Nodes]) >= 1000000),
    [?assert(is_binary(maps:get(F, R))) || F <- ?FORMATS],
    ?assertMatch(<<"<?xml", _/binary>>, maps:get(svg, R)),
    %% Folded: frames past 1,024 are summed into one [deeper] leaf.
    ?assertNotEqual(nomatch, binary:match(maps:get(folded, R), <<";[deeper] ">>)).
