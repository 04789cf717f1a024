%%% beamspy_sequence_tests — beamspy:sequence/2 on a real cluster of three
%%% nodes: this VM (made a distributed node, name with the OS pid) and two
%%% peers started with `peer', which have bs_seq_chain loaded but none of
%%% beamspy (sequence/2 must deliver its collector and take it away again).
%%%
%%% A request passes along the chain a -> b -> c and is answered back; the
%%% tests check the exact messages in causal order in the Mermaid file, the
%%% other formats, that nothing is left on any node (system tracer, token,
%%% beamspy_seq_collector), results and exceptions, a foreign system tracer refused,
%%% the caller killed mid-call, collection limited to this node, and bad
%%% options.
-module(beamspy_sequence_tests).

-include_lib("eunit/include/eunit.hrl").

-define(WAIT_MS, 10000).

sequence_test_() ->
    {setup, fun setup/0, fun cleanup/1,
     fun(Cluster) ->
             {inorder,
              [{"chain across three nodes, every format", fun() -> chain(Cluster) end},
               {"nothing left on any node", fun() -> clean(Cluster) end},
               {"exception reaches the caller", fun() -> exception(Cluster) end},
               {"a foreign system tracer is refused", fun() -> foreign_tracer(Cluster) end},
               {"caller killed mid-call", {timeout, 30, fun() -> caller_killed(Cluster) end}},
               {"nodes => local", fun() -> local_only(Cluster) end},
               {"max_events caps what is kept", fun() -> max_events(Cluster) end},
               {"a leftover token of an earlier sequence is dropped, another one refused",
                fun() -> leftover_token(Cluster) end},
               {"bad options", fun() -> bad_options(Cluster) end}]}
     end}.

%%% ---------------------------------------------------------------------
%%% Cluster
%%% ---------------------------------------------------------------------

setup() ->
    Started = bs_test_lib:distributed("bsseq"),
    {ok, PB, B} = peer:start_link(#{name => list_to_atom("bsseqb" ++ os:getpid())}),
    {ok, PC, C} = peer:start_link(#{name => list_to_atom("bsseqc" ++ os:getpid())}),
    {bs_seq_chain, Bin, File} = code:get_object_code(bs_seq_chain),
    [{module, bs_seq_chain} = erpc:call(N, code, load_binary, [bs_seq_chain, File, Bin]) || N <- [B, C]],
    {ok, _} = erpc:call(C, bs_seq_chain, start, [c, undefined]),
    {ok, _} = erpc:call(B, bs_seq_chain, start, [b, C]),
    {ok, _} = bs_seq_chain:start(a, B),
    %% b and c connected beforehand: see first_connection below.
    true = erpc:call(B, net_kernel, connect_node, [C]),
    Dir = bs_test_lib:tmp_dir(),
    ok = filelib:ensure_path(Dir),
    #{b => B, c => C, peers => [PB, PC], dir => Dir, started => Started}.

cleanup(#{peers := Peers, dir := Dir, started := Started}) ->
    _ = bs_seq_chain:stop(),
    [peer:stop(P) || P <- Peers],
    bs_test_lib:rm_rf(Dir),
    _ = [net_kernel:stop() || Started],
    ok.

%%% ---------------------------------------------------------------------
%%% Tests
%%% ---------------------------------------------------------------------

%% The six messages of the chain, in causal order, each once.
-define(CHAIN_MESSAGES,
        ["P1->>P2: call {req,[]}",
         "P2->>P3: call {req,[a]}",
         "P3->>P4: call {req,[b,a]}",
         "P4-->>P3: reply {pong,[c,b,a]}",
         "P3-->>P2: reply {pong,[c,b,a]}",
         "P2-->>P1: reply {pong,[c,b,a]}"]).

chain(#{b := B, c := C, dir := Dir}) ->
    Out = filename:join(Dir, "chain"),
    ?assertEqual({pong, [c, b, a]},
                 beamspy:sequence(fun() -> bs_seq_chain:request(node()) end,
                                  #{output => Out, formats => [mermaid, json, svg, chrome], quiet => true})),
    [Mmd] = files(Out, ".mmd"),
    Lines = lines(Mmd),
    ?assertEqual(?CHAIN_MESSAGES, [L || L <- Lines, is_message(L)]),
    %% One participant per process, grouped per node in the order the flow
    %% reached them; the chain servers named.
    Me = pid_text(self()),
    A = atom_to_list(node()),
    ?assertEqual(["box " ++ A,
                  "participant P1 as " ++ A ++ " " ++ Me,
                  "participant P2 as " ++ A ++ " " ++ pid_text(whereis(chain)) ++ " chain",
                  "end",
                  "box " ++ atom_to_list(B),
                  "participant P3 as " ++ atom_to_list(B) ++ " " ++ remote_chain(B) ++ " chain",
                  "end",
                  "box " ++ atom_to_list(C),
                  "participant P4 as " ++ atom_to_list(C) ++ " " ++ remote_chain(C) ++ " chain",
                  "end"],
                 [L || L <- Lines, L =/= "sequenceDiagram", not is_message(L)]),
    [Json] = files(Out, ".seq.json"),
    JsonText = read(Json),
    ?assertEqual(6, count(JsonText, "\"received\":true")),
    ?assertEqual(0, count(JsonText, "\"received\":false")),
    ?assertEqual(3, count(JsonText, "\"kind\":\"call\"")),
    ?assertEqual(3, count(JsonText, "\"kind\":\"reply\"")),
    ?assertEqual(3, count(JsonText, "\"text\":\"{'$gen_call',{\\u003c")),
    [Svg] = files(Out, ".seq.svg"),
    SvgText = read(Svg),
    ?assertMatch("<?xml" ++ _, SvgText),
    ?assertEqual(6, count(SvgText, "<g class=\"msg")),
    [Trace] = files(Out, ".trace.json"),
    TraceText = read(Trace),
    ?assertEqual(6, count(TraceText, "\"ph\":\"s\"")),
    ?assertEqual(6, count(TraceText, "\"ph\":\"f\"")).

clean(#{b := B, c := C}) ->
    ?assertEqual([], seq_trace:get_token()),
    [?assertEqual({N, false}, {N, erpc:call(N, seq_trace, get_system_tracer, [])}) || N <- [node(), B, C]],
    [?assertEqual({N, false}, {N, erpc:call(N, code, is_loaded, [beamspy_seq_collector])}) || N <- [B, C]].

exception(#{b := B, c := C, dir := Dir}) ->
    Out = filename:join(Dir, "throw.mmd"),
    Target = fun() -> {pong, _} = bs_seq_chain:request(node()), throw({done, here}) end,
    ?assertEqual({throw, {done, here}},
                 try beamspy:sequence(Target, [quiet, {output, Out}])
                 catch Class:Reason -> {Class, Reason}
                 end),
    ?assertEqual(?CHAIN_MESSAGES, [L || L <- lines(Out), is_message(L)]),
    clean(#{b => B, c => C}).

foreign_tracer(#{b := B, c := C, dir := Dir}) ->
    Tracer = erpc:call(C, erlang, spawn, [timer, sleep, [60000]]),
    false = erpc:call(C, seq_trace, set_system_tracer, [Tracer]),
    try
        ?assertError({beamspy, {system_tracer_in_use, C, Tracer}},
                     beamspy:sequence(fun() -> ran end, #{output => filename:join(Dir, "no.mmd"), quiet => true})),
        %% The others were started and are undone; C keeps its tracer.
        ?assertEqual(Tracer, erpc:call(C, seq_trace, get_system_tracer, [])),
        ?assertEqual(false, seq_trace:get_system_tracer()),
        ?assertEqual(false, erpc:call(B, seq_trace, get_system_tracer, [])),
        ?assertEqual(false, erpc:call(B, code, is_loaded, [beamspy_seq_collector])),
        ?assertNot(filelib:is_file(filename:join(Dir, "no.mmd"))),
        Text = beamspy:format_error({system_tracer_in_use, C, Tracer}),
        ?assertNotEqual(nomatch, string:find(Text, "already has a seq_trace system tracer"))
    after
        erpc:call(C, seq_trace, set_system_tracer, [false]),
        exit(Tracer, kill)
    end.

%% The caller dies while its call waits: every collector sees it, gives the
%% system tracer back, and the delivered module goes.
caller_killed(#{b := B, c := C, dir := Dir}) ->
    Self = self(),
    Caller = spawn(fun() ->
                           beamspy:sequence(fun() ->
                                                    bs_seq_chain:request(node()),
                                                    Self ! {waiting, self()},
                                                    receive never -> ok end
                                            end, #{output => filename:join(Dir, "killed.mmd"), quiet => true})
                   end),
    receive {waiting, Caller} -> ok after ?WAIT_MS -> error(caller_never_ran) end,
    ?assert(is_pid(erpc:call(C, seq_trace, get_system_tracer, []))),
    exit(Caller, kill),
    Gone = fun() ->
                   [erpc:call(N, seq_trace, get_system_tracer, []) || N <- [node(), B, C]] =:= [false, false, false]
                       andalso [erpc:call(N, code, is_loaded, [beamspy_seq_collector]) || N <- [B, C]] =:= [false, false]
           end,
    ?assert(wait_until(Gone, ?WAIT_MS)).

%% Only this node collects: the call to b is seen sent and never received,
%% b's reply received but its send not seen.
local_only(#{b := B, dir := Dir}) ->
    Out = filename:join(Dir, "local.mmd"),
    {pong, _} = beamspy:sequence(fun() -> bs_seq_chain:request(node()) end,
                                 #{output => Out, nodes => local, quiet => true}),
    ?assertEqual(["P1->>P2: call {req,[]}",
                  "P2-xP3: call {req,[a]}",
                  "P4-->>P2: reply {pong,[c,b,a]}",
                  "P2-->>P1: reply {pong,[c,b,a]}"],
                 [L || L <- lines(Out), is_message(L)]),
    %% Unmatched, the call names its receiver as the send did ({chain, B}),
    %% and the reply comes from b's pid: P3 is b's "chain" by name.
    ?assertEqual(1, count(read(Out), "participant P3 as " ++ atom_to_list(B) ++ " chain\n")).

%% Two events kept on this node (the client's send and chain a's receive):
%% one message, and the collector has given the system tracer back.
max_events(#{dir := Dir}) ->
    Out = filename:join(Dir, "capped.mmd"),
    {pong, _} = beamspy:sequence(fun() -> bs_seq_chain:request(node()) end,
                                 #{output => Out, nodes => local, max_events => 2, quiet => true}),
    ?assertEqual(["P1->>P2: call {req,[]}"], [L || L <- lines(Out), is_message(L)]),
    ?assertEqual(false, seq_trace:get_system_tracer()).

%% A process that got a message from a traced process after its sequence
%% ended holds that sequence's token (seen on OTP 27: the test process
%% itself): the next sequence drops it. A token beamspy did not set is the
%% caller's own business: refused, and kept.
leftover_token(#{dir := Dir}) ->
    Out = filename:join(Dir, "after_leftover.mmd"),
    Stale = {beamspy_seq_collector, node(), erlang:unique_integer([positive])},
    Tagged = fun(Label) ->
                     Self = self(),
                     spawn(fun() -> seq_trace:set_token(label, Label), Self ! tagged end),
                     receive tagged -> ok end
             end,
    try
        ok = Tagged(Stale),
        ?assertMatch({_, Stale, _, _, _}, seq_trace:get_token()),
        {pong, _} = beamspy:sequence(fun() -> bs_seq_chain:request(node()) end,
                                     #{output => Out, nodes => local, quiet => true}),
        ?assertEqual("P1->>P2: call {req,[]}", hd([L || L <- lines(Out), is_message(L)])),
        ?assertEqual([], seq_trace:get_token()),
        ok = Tagged(mine),
        ?assertError({beamspy, {already_in_sequence, {_, mine, _, _, _}}},
                     beamspy:sequence(fun() -> ran end, #{output => Out, nodes => local, quiet => true})),
        ?assertMatch({_, mine, _, _, _}, seq_trace:get_token())
    after
        seq_trace:set_token([])
    end.

bad_options(#{dir := Dir}) ->
    F = fun() -> ran end,
    ?assertError({beamspy, {bad_output_extension, _, ".png"}},
                 beamspy:sequence(F, #{output => filename:join(Dir, "x.png")})),
    ?assertError({beamspy, {bad_option, formats, [folded], _}}, beamspy:sequence(F, #{formats => [folded]})),
    ?assertError({beamspy, {bad_pattern, include, _, _}}, beamspy:sequence(F, #{include => "("})),
    ?assertError({beamspy, {unknown_option, sleep, _}}, beamspy:sequence(F, #{sleep => true})),
    ?assertError({beamspy, {bad_target, _}}, beamspy:sequence(not_a_fun, #{})),
    ?assertEqual(false, seq_trace:get_system_tracer()).

%%% ---------------------------------------------------------------------
%%% Helpers
%%% ---------------------------------------------------------------------

files(Dir, Ext) ->
    {ok, Names} = file:list_dir(Dir),
    [filename:join(Dir, N) || N <- lists:sort(Names), lists:suffix(Ext, N),
                              not (Ext =:= ".json" andalso lists:suffix(".trace.json", N))].

read(Path) ->
    {ok, Bin} = file:read_file(Path),
    unicode:characters_to_list(Bin).

lines(Path) ->
    [string:trim(L) || L <- string:split(read(Path), "\n", all), string:trim(L) =/= ""].

is_message(L) ->
    re:run(L, "^P[0-9]+(->>|-->>|-x|-\\))P[0-9]+: ") =/= nomatch.

count(Text, Sub) ->
    length(string:split(Text, Sub, all)) - 1.

%% Mermaid writes < and > as entities.
pid_text(Pid) ->
    "#lt;" ++ string:slice(pid_to_list(Pid), 1, length(pid_to_list(Pid)) - 2) ++ "#gt;".

remote_chain(Node) ->
    Text = erpc:call(Node, erlang, pid_to_list, [erpc:call(Node, erlang, whereis, [chain])]),
    "#lt;" ++ string:slice(Text, 1, length(Text) - 2) ++ "#gt;".

wait_until(F, Ms) when Ms =< 0 -> F();
wait_until(F, Ms) ->
    case F() of
        true -> true;
        false -> receive after 20 -> wait_until(F, Ms - 20) end
    end.
