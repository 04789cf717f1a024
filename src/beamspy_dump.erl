%%% @doc What `beamspy dump' shows when a node hangs: every process, the
%%% ones that look stuck first, each with its complete stack.
%%%
%%% The command-line tool loads this module into a running node (with
%%% `code:load_binary/3') and calls {@link snapshot/1} with rpc, so it
%%% depends on kernel, stdlib and {@link beamspy_opts:default/1} (its
%%% defaults) only, and needs no application to be started. Every text in the result is a UTF-8 binary, every number an
%%% integer. Functions are not spelled here: they are raw `{M, F, A}'
%%% tuples (in `initial_call', `current', the stack and the reasons), which
%%% the tool spells with its one speller (in Erlang, {@link
%%% beamspy_tracer:frame_name/2}), as it spells every mode's frames.
%%%
%%% A snapshot looks at each process twice, `interval_ms' apart (cheap
%%% looks: queue length, memory, reductions, status, current function), to
%%% see what grows and what does not move. It then ranks the processes by a
%%% stuck score, and for the first `max_processes' of them reads the name,
%%% the initial call and the stack.
%%%
%%% Stacks are complete: `current_stacktrace' keeps at most 64 frames and
%%% shows a direct recursion once, so the stack is read from `process_info(P,
%%% backtrace)' (every frame, one line a frame) and only file:line locations
%%% are taken from `current_stacktrace', for the top frames the two agree
%%% on. To get locations for up to 64 frames, the node-wide
%%% `backtrace_depth' flag is raised to 64 while the stacks are read, and put
%%% back afterwards. A stack keeps at most 2000 frames (then
%%% `stack_complete' is false).
%%%
%%% The stuck score adds up these parts, each with a reason (in `reasons':
%%% a list of texts and `{M, F, A}' frames that read as one sentence):
%%% <ul>
%%% <li>a message queue: its length, plus ten times its growth;</li>
%%% <li>waiting with messages queued (a receive that matches none): 500;</li>
%%% <li>waiting for a reply (`gen:do_call/4' and the other gen_server,
%%%   gen_statem, gen_event calls, erpc and rpc calls, io requests,
%%%   `proc_lib:start*'): 1000 when seen at both looks, else 100;</li>
%%% <li>waiting at both looks, queue empty, in a receive more than 3 frames
%%%   deep that is not a server loop (`gen_server:loop/7',
%%%   `gen_statem:loop_receive/3', `gen_event:fetch_msg/6', hibernation,
%%%   `timer:sleep/1'): 100;</li>
%%% <li>memory grown by 1 MB or more between the looks: a point per 10 kB;</li>
%%% <li>not waiting and 50,000 reductions or more between the looks (a loop
%%%   that never ends): a point per 1000, at most 500.</li>
%%% </ul>
%%% A process idle in a server loop, or in a receive at the bottom of its
%%% stack, with an empty queue, scores 0 and has no reason.
%%%
%%% Each process also says what it is doing (`state': `call', `busy',
%%% `idle', `receive' or `running', see state/2) and, when it has waited for
%%% a reply all along the interval, whom it waits for (`waits_for': the
%%% processes it monitors that the call is about, each with its pid as its
%%% own node prints it, its registered name and its node), or in
%%% `wait_note' why that cannot be told. The command-line tool builds the
%%% wait-for graph of one or several nodes from these (cycles are
%%% deadlocks); a wait is never guessed: a bare `receive' has no target.
%%%
%%% Memory: two small tuples a process for the looks, and for the processes
%%% reported their stacks (at most 2000 frames each, so `max_processes'
%%% bounds the result), plus one cache entry per distinct return address
%%% seen (bounded by the code loaded). One backtrace text is
%%% held at a time.
%%%
%%% Time: each look costs every process a signal round trip (reading
%%% `message_queue_len' makes the process answer), and reading a stack
%%% more; 100,000 idle processes take about 7 s on a 2-core machine. Use
%%% `max_processes' or `pids' to keep a snapshot short on a large node.
%%%
%%% Processes that exit between the looks, or while being read, are left
%%% out; the process calling {@link snapshot/1} is not reported with `pids
%%% => all'.
-module(beamspy_dump).

-export([snapshot/1, parse_backtrace/2]).

-define(DEFAULT_INTERVAL_MS, beamspy_opts:default(dump_interval_ms)).
-define(DEFAULT_MAX_PROCESSES, 100000).
-define(MAX_FRAMES, 2000).
-define(LOCATION_DEPTH, 64).
%% A receive this many frames deep or less (the loop, proc_lib's entry) is
%% a process's idle loop.
-define(SHALLOW_FRAMES, 3).
%% What answering a look costs a waiting process.
-define(LOOK_REDUCTIONS, 1).
%% Stuck score parts (a queue adds its length plus ten times its growth).
-define(SCORE_REPLY_WAIT, 1000).
-define(SCORE_REPLY_WAIT_SEEN_ONCE, 100).
-define(SCORE_UNMATCHED_RECEIVE, 500).
-define(SCORE_DEEP_RECEIVE, 100).
-define(SCORE_BUSY_CAP, 500).
-define(QUEUE_GROWTH_WEIGHT, 10).
-define(MEMORY_GROWTH_REPORTED, 1000000).
-define(MEMORY_GROWTH_BYTES_PER_POINT, 10000).
-define(BUSY_REDUCTIONS_PER_POINT, 1000).
-define(BUSY_REDUCTIONS_REPORTED, 50000).

-type opts() :: #{pids => all | [pid() | atom()],
                  interval_ms => non_neg_integer(),
                  max_processes => pos_integer()}.
-type process_dump() ::
        #{pid := binary(), name := binary(), initial_call := frame(), current := frame(),
          status := binary(), message_queue_len := non_neg_integer(),
          queue_growth := integer(), memory := non_neg_integer(), memory_growth := integer(),
          reductions := non_neg_integer(), reductions_delta := integer(),
          idle_ms := non_neg_integer(), stack := [{frame(), Where :: binary()}],
          stack_complete := boolean(),
          stuck_score := non_neg_integer(), reasons := [reason()],
          state := binary(), waits_for := [wait_target()], wait_note := binary(),
          reply_wait := none | reply_wait()}.
%% `{M, F, A}', or the text of a frame that cannot be read back as one
%% (`undefined' for the current function of a process that is exiting).
-type frame() :: mfa() | binary() | undefined.
%% A sentence: its texts as they are, its frames to be spelled.
-type reason() :: [binary() | frame()].
-type wait_target() :: #{pid := binary(), name := binary(), node := binary()}.
%% Where a process waiting for a call's reply waits (`in': gen:do_call/4 or
%% another function of the call modules) and the first function of its own
%% on the stack that made the call (`none' when there is none).
-type reply_wait() :: #{in := frame(), called_from := frame() | none}.
-type dump() :: #{node := binary(), taken_at_us := integer(), interval_ms := non_neg_integer(),
                  process_count := non_neg_integer(), omitted := non_neg_integer(),
                  processes := [process_dump()]}.
-export_type([opts/0, dump/0, process_dump/0, wait_target/0, reply_wait/0, frame/0, reason/0]).

%%% ---------------------------------------------------------------------
%%% API
%%% ---------------------------------------------------------------------

%% @doc Looks at every process (or the `pids' given, registered names
%% resolved) twice, `interval_ms' apart (default 200), and returns them
%% most stuck first: by `stuck_score', then queue length, then memory. At
%% most `max_processes' (default 100000) are reported; `omitted' counts the
%% rest, `process_count' all that were alive at both looks.
%%
%% Errors: `{error, {noproc, NameOrPid}}' for a name not registered or a
%% pid not alive, `{error, {bad_option, Option}}' otherwise.
%%
%% ```
%% {ok, #{processes := [#{pid := <<"<0.95.0>">>, name := <<"my_server">>,
%%                        reasons := [[<<"message queue 10000 (+120 in 200 ms)">>] | _],
%%                        stack := [{{my_server, wait, 1}, <<"my_server.erl:40">>} | _]} | _]}} =
%%     beamspy_dump:snapshot(#{interval_ms => 200}).
%% '''
-spec snapshot(opts()) -> {ok, dump()} | {error, term()}.
snapshot(Opts) when is_map(Opts) ->
    case check_opts(Opts) of
        {ok, Config} ->
            case resolve(maps:get(pids, Config)) of
                {ok, Pids} -> {ok, take(Pids, Config)};
                {error, _} = Error -> Error
            end;
        {error, _} = Error ->
            Error
    end;
snapshot(Other) ->
    {error, {bad_option, Other}}.

%% @doc The frames of a `process_info(P, backtrace)' text, top first, at
%% most MaxFrames of them, and whether that was all of them. A frame whose
%% name cannot be read back as `{M, F, A}' is kept as its text; lines that
%% are not frames (`<terminate process normally>', `unknown function',
%% stack slots) are skipped.
%%
%% ```
%% {[{m, f, 1}, {m, g, 0}], true} =
%%     beamspy_dump:parse_backtrace(<<"Program counter: 0x01 (m:f/1 + 4)\n\n"
%%                                    "0x02 Return addr 0x03 (m:g/0 + 8)\n">>, 2000).
%% '''
-spec parse_backtrace(binary(), pos_integer()) ->
          {[{module(), atom(), arity()} | binary()], boolean()}.
parse_backtrace(Backtrace, MaxFrames) when is_binary(Backtrace), is_integer(MaxFrames),
                                           MaxFrames > 0 ->
    {Frames, Complete, _} = backtrace_frames(Backtrace, MaxFrames, #{}),
    {[Frame || {Frame, _Address} <- Frames], Complete}.

%%% ---------------------------------------------------------------------
%%% Options
%%% ---------------------------------------------------------------------

check_opts(Opts) ->
    Defaults = #{pids => all, interval_ms => ?DEFAULT_INTERVAL_MS,
                 max_processes => ?DEFAULT_MAX_PROCESSES},
    beamspy_procs:check_opts(Opts, Defaults, fun valid_option/2, no_owner).

valid_option(pids, all) -> true;
valid_option(pids, L) when is_list(L) -> lists:all(fun(P) -> is_pid(P) orelse is_atom(P) end, L);
valid_option(interval_ms, N) -> is_integer(N) andalso N >= 0;
valid_option(max_processes, N) -> is_integer(N) andalso N > 0;
valid_option(_, _) -> false.

resolve(Targets) ->
    Self = self(),
    case beamspy_procs:resolve(Targets) of
        {ok, all} -> {ok, [P || P <- erlang:processes(), P =/= Self]};
        Other -> Other
    end.

%%% ---------------------------------------------------------------------
%%% Taking the snapshot
%%% ---------------------------------------------------------------------

-define(LOOK_ITEMS, [message_queue_len, memory, reductions, status, current_function]).

%% A look: {QueueLen, Memory, Reductions, Status, CurrentFunction}.
look(Pid) ->
    case erlang:process_info(Pid, ?LOOK_ITEMS) of
        [{message_queue_len, Q}, {memory, M}, {reductions, R}, {status, S},
         {current_function, C}] ->
            {Q, M, R, S, C};
        undefined ->
            gone
    end.

take(Pids, #{interval_ms := Interval, max_processes := Max}) ->
    TakenAt = os:system_time(microsecond),
    First = [{P, L} || P <- Pids, L <- [look(P)], L =/= gone],
    wait_between_looks(Interval),
    Both = [{P, L1, L2} || {P, L1} <- First, L2 <- [look(P)], L2 =/= gone],
    Ranked = lists:sort([{rank_key(assess(L1, L2, unknown, [], Interval), L2), P, L1, L2}
                         || {P, L1, L2} <- Both]),
    {Chosen, Rest} = split(Max, Ranked),
    Procs = with_location_depth(fun() -> describe_all(Chosen, Interval, #{}, []) end),
    Sorted = [D || {_, D} <- lists:keysort(1, [{sort_key(D), D} || D <- Procs])],
    #{node => atom_to_binary(node(), utf8),
      taken_at_us => TakenAt,
      interval_ms => Interval,
      process_count => length(Sorted) + length(Rest),
      omitted => length(Rest),
      processes => Sorted}.

%% A named function, so that one can see (and tests can wait for) a
%% snapshot between its two looks.
wait_between_looks(Ms) ->
    receive
    after Ms -> ok
    end.

split(N, List) when length(List) =< N -> {List, []};
split(N, List) -> lists:split(N, List).

rank_key({Score, _Reasons}, {Q, M, _, _, _}) -> {-Score, -Q, -M}.

sort_key(#{stuck_score := S, message_queue_len := Q, memory := M, pid := P}) ->
    {-S, -Q, -M, P}.

%% current_stacktrace keeps backtrace_depth frames: raised while stacks are
%% read, for their locations.
with_location_depth(Fun) ->
    Previous = erlang:system_flag(backtrace_depth, ?LOCATION_DEPTH),
    try Fun()
    after erlang:system_flag(backtrace_depth, Previous)
    end.

-define(DETAIL_ITEMS, [registered_name, initial_call, dictionary, backtrace, current_stacktrace]).

%% Names is a cache shared by every process of the snapshot: return
%% address text => frame. Processes share most
%% of their frames, and the cache is bounded by the code loaded.
describe_all([], _, _, Acc) ->
    Acc;
describe_all([{_, P, L1, L2} | Rest], Interval, Names0, Acc) ->
    case describe(P, L1, L2, Interval, Names0) of
        {gone, Names} -> describe_all(Rest, Interval, Names, Acc);
        {D, Names} -> describe_all(Rest, Interval, Names, [D | Acc])
    end.

describe(Pid, {Q1, M1, R1, _, _} = L1, {Q2, M2, R2, S2, C2} = L2, Interval, Names0) ->
    case erlang:process_info(Pid, ?DETAIL_ITEMS) of
        [{registered_name, Name}, {initial_call, Initial}, {dictionary, Dict},
         {backtrace, Backtrace}, {current_stacktrace, Trace}] ->
            {Frames, Complete, Names} = stack(Backtrace, Trace, C2, Names0),
            {Score, Reasons} = assess(L1, L2, length(Frames), Frames, Interval),
            State = state(L1, L2),
            {WaitsFor, WaitNote} = waits_for(Pid, State, C2, Backtrace),
            {#{pid => list_to_binary(pid_to_list(Pid)),
               name => case Name of
                           [] -> <<>>;
                           _ -> atom_to_binary(Name, utf8)
                       end,
               initial_call => proc_lib_initial_call(Dict, Initial),
               current => C2,
               status => atom_to_binary(S2, utf8),
               message_queue_len => Q2,
               queue_growth => Q2 - Q1,
               memory => M2,
               memory_growth => M2 - M1,
               reductions => R2,
               reductions_delta => R2 - R1,
               idle_ms => idle_ms(S2, R2 - R1, Interval),
               stack => [{Frame, location_text(Location)} || {Frame, Location} <- Frames],
               stack_complete => Complete,
               stuck_score => Score,
               reasons => Reasons,
               state => atom_to_binary(State, utf8),
               waits_for => WaitsFor,
               wait_note => WaitNote,
               reply_wait => reply_wait(S2, C2, Frames)}, Names};
        undefined ->
            {gone, Names0}
    end.

proc_lib_initial_call(Dict, Initial) ->
    case lists:keyfind('$initial_call', 1, Dict) of
        {_, {M, F, A} = MFA} when is_atom(M), is_atom(F), is_integer(A) -> MFA;
        _ -> Initial
    end.

%% A lower bound of how long the process has been waiting: the interval,
%% if it did no work between the looks (answering the first look costs a
%% waiting process one reduction).
idle_ms(waiting, Reductions, Interval) when Reductions =< ?LOOK_REDUCTIONS -> Interval;
idle_ms(_, _, _) -> 0.

%%% ---------------------------------------------------------------------
%%% Stacks
%%% ---------------------------------------------------------------------

%% Frames are {MFA | RawText, Location}, top first; Location is [] or the
%% location list of current_stacktrace.
stack(Backtrace, Trace, Current, Names0) ->
    case backtrace_frames(Backtrace, ?MAX_FRAMES, Names0) of
        {[], _, Names} when Trace =:= [] ->
            {[{Current, []}], true, Names}; % hibernated: nothing on the stack
        {[], _, Names} ->
            %% Not readable: current_stacktrace, which may be cut short.
            {[{{M, F, arity(A)}, Location} || {M, F, A, Location} <- Trace], false, Names};
        {Frames, Complete, Names} ->
            {with_locations(Frames, Trace), Complete, Names}
    end.

arity(A) when is_integer(A) -> A;
arity(Args) when is_list(Args) -> length(Args).

%% current_stacktrace lists the program counter, then every return address
%% that differs from the one before it (a direct recursion shows once),
%% up to backtrace_depth entries. Frames of the backtrace with the same
%% return address therefore share one entry; locations are copied while
%% the two agree.
with_locations(Frames, Trace) ->
    with_locations(Frames, Trace, undefined, []).

with_locations([], _, _, Acc) ->
    lists:reverse(Acc);
with_locations([{MFA, Address} | Rest], Trace, {Address, Location} = Last, Acc) ->
    with_locations(Rest, Trace, Last, [{MFA, Location} | Acc]);
with_locations([{MFA, Address} | Rest], [{M, F, A, Location} | Trace], _, Acc)
  when MFA =:= {M, F, A} ->
    with_locations(Rest, Trace, {Address, Location}, [{MFA, Location} | Acc]);
with_locations(Frames, _, _, Acc) ->
    lists:reverse(Acc, [{MFA, []} || {MFA, _} <- Frames]).

location_text(Location) ->
    File = case lists:keyfind(file, 1, Location) of
               {file, F} -> unicode:characters_to_binary(F);
               false -> <<>>
           end,
    case {File, lists:keyfind(line, 1, Location)} of
        {<<>>, _} -> <<>>;
        {_, {line, Line}} when is_integer(Line) -> <<File/binary, $:, (integer_to_binary(Line))/binary>>;
        {_, _} -> File
    end.

%%% Reading a backtrace:
%%%   Program counter: 0x00007f2a70b97a0c (bt:rec/1 + 76)
%%%   y(0)     []
%%%   0x00007f2a6f795168 Return addr 0x00007f2a70b97ad8 (bt:rec/1 + 280)
%%%   0x00007f2a6f795190 Return addr 0x00007f2a70800c30 (<terminate process normally>)
%%% Atoms are printed in UTF-8, quoted where needed. Parsed addresses go
%%% into the Names cache (see describe_all/4).

backtrace_frames(Backtrace, Max, Names) ->
    frames(binary:split(Backtrace, <<"\n">>, [global]), Max, [], Names).

%% Left: how many more frames may be kept.
frames([], _, Acc, Names) ->
    {lists:reverse(Acc), true, Names};
frames([Line | Lines], Left, Acc, Names0) ->
    case address_of_line(Line) of
        none ->
            frames(Lines, Left, Acc, Names0);
        Address ->
            case cached_frame(Address, Names0) of
                {none, Names} -> frames(Lines, Left, Acc, Names);
                {_, Names} when Left =:= 0 -> {lists:reverse(Acc), false, Names};
                {Frame, Names} -> frames(Lines, Left - 1, [{Frame, Address} | Acc], Names)
            end
    end.

%% {address text} => frame (MFA or text) or none.
cached_frame(Address, Names) ->
    case Names of
        #{{address, Address} := Frame} -> {Frame, Names};
        #{} ->
            Frame = frame_of_address(Address),
            {Frame, Names#{{address, Address} => Frame}}
    end.

%% The text in parentheses of a frame's line, or none.
address_of_line(<<"Program counter: 0x", Rest/binary>>) ->
    address_in_parens(Rest);
address_of_line(<<"0x", Rest/binary>>) ->
    case binary:match(Rest, <<" Return addr 0x">>) of
        nomatch -> none;
        _ -> address_in_parens(Rest)
    end;
address_of_line(_) ->
    none.

address_in_parens(Text) ->
    case binary:match(Text, <<" (">>) of
        {At, 2} ->
            Inner = binary:part(Text, At + 2, byte_size(Text) - At - 2),
            case binary:last(Inner) of
                $) -> binary:part(Inner, 0, byte_size(Inner) - 1);
                _ -> Inner
            end;
        nomatch ->
            none
    end.

frame_of_address(<<"<", _/binary>>) ->
    none; % <terminate process normally>, <continue terminate process>, ...
frame_of_address(<<"unknown function", _/binary>>) ->
    none;
frame_of_address(Address) ->
    Name = case binary:matches(Address, <<" + ">>) of
               [] -> Address;
               Matches -> binary:part(Address, 0, element(1, lists:last(Matches)))
           end,
    case parse_mfa(Name) of
        {ok, MFA} -> MFA;
        error -> unicode:characters_to_binary(characters(Name))
    end.

parse_mfa(Text) ->
    try
        {M, <<$:, Rest1/binary>>} = printed_atom(Text),
        {F, <<$/, Digits/binary>>} = printed_atom(Rest1),
        {ok, {M, F, binary_to_integer(Digits)}}
    catch
        _:_ -> error
    end.

%% An atom as erts prints it (UTF-8, quoted where needed), and the text
%% after it. The atom exists (its code is loaded), so no atom is created.
printed_atom(<<$', Rest/binary>>) ->
    {Bytes, After} = quoted_bytes(Rest, <<>>),
    {list_to_existing_atom(characters(Bytes)), After};
printed_atom(Text) ->
    Length = plain_length(Text, 0),
    <<Plain:Length/binary, After/binary>> = Text,
    true = Length > 0,
    {list_to_existing_atom(characters(Plain)), After}.

plain_length(<<C, Rest/binary>>, N) when C =/= $:, C =/= $/ -> plain_length(Rest, N + 1);
plain_length(_, N) -> N.

quoted_bytes(<<$', Rest/binary>>, Acc) ->
    {Acc, Rest};
quoted_bytes(<<"\\x{", Rest/binary>>, Acc) ->
    [Hex, After] = binary:split(Rest, <<"}">>),
    quoted_bytes(After, <<Acc/binary, (binary_to_integer(Hex, 16))/utf8>>);
quoted_bytes(<<$\\, C, Rest/binary>>, Acc) ->
    quoted_bytes(Rest, <<Acc/binary, (unescape(C))>>);
quoted_bytes(<<C, Rest/binary>>, Acc) ->
    quoted_bytes(Rest, <<Acc/binary, C>>).

%% UTF-8 text as characters; bytes that are not UTF-8 as Latin-1.
characters(Bytes) ->
    case unicode:characters_to_list(Bytes, utf8) of
        Chars when is_list(Chars) -> Chars;
        _ -> binary_to_list(Bytes)
    end.

unescape($n) -> $\n;
unescape($t) -> $\t;
unescape($r) -> $\r;
unescape($b) -> $\b;
unescape($f) -> $\f;
unescape($v) -> $\v;
unescape($e) -> $\e;
unescape($d) -> $\d;
unescape($s) -> $\s;
unescape(C) -> C.

%%% ---------------------------------------------------------------------
%%% Who waits for whom
%%% ---------------------------------------------------------------------

%% What a process is doing, from the two looks: `call' (waiting for a reply
%% at both looks, in the same function, having done no work in between),
%% `busy' (not waiting, and BUSY_REDUCTIONS_REPORTED reductions or more
%% between the looks), `idle' (waiting in a server loop or a sleep),
%% `receive' (waiting anywhere else, or in a call that began between the
%% looks), `running' otherwise.
state({_, _, R1, S1, C1}, {_, _, R2, waiting, C2}) ->
    case wait_kind(C2) of
        reply when S1 =:= waiting, C1 =:= C2, R2 - R1 =< ?LOOK_REDUCTIONS -> call;
        idle -> idle;
        _ -> 'receive'
    end;
state({_, _, R1, _, _}, {_, _, R2, _, _}) when R2 - R1 >= ?BUSY_REDUCTIONS_REPORTED ->
    busy;
state(_, _) ->
    running.

%% {Targets, Note} of a process in state call: the processes it waits for,
%% each #{pid, name, node} (pid <<>> when only a registered name on another
%% node is known), or [] and a note saying why they cannot be told.
%%
%% The calls of gen, erpc, proc_lib and io monitor their callee, so the
%% callee is among the process's monitors. A process may monitor others as
%% well: then only the monitored processes whose pid or name appears in
%% the stack slots of the calling frames (gen_server:call/3 keeps its
%% ServerRef there) are kept. When that still leaves several, or none, the
%% note says so: a guess is never made.
waits_for(Pid, call, Current, Backtrace) ->
    case erlang:process_info(Pid, monitors) of
        {monitors, Monitors} ->
            Watched = [T || {process, T} <- Monitors],
            pick_targets(Watched, Current, Backtrace);
        undefined ->
            {[], <<"the process exited">>}
    end;
waits_for(_, _, _, _) ->
    {[], <<>>}.

pick_targets([], _, _) ->
    {[], <<"it monitors no process (a reply from anyone)">>};
pick_targets([One], _, _) ->
    {[target(One)], <<>>};
pick_targets(Watched, Current, Backtrace) ->
    Slots = call_slots(Backtrace),
    case {[W || W <- Watched, named_in(W, Slots)], multi_call(Current), Watched} of
        {[_ | _] = Named, _, _} ->
            %% gen_server:multi_call and the like wait for each of them.
            {[target(W) || W <- Named], <<>>};
        {[], true, [{Name, _} | _]} ->
            %% From OTP 27 multi_call keeps no name on its stack; monitors
            %% that all name the same server on some nodes are its own.
            case lists:all(fun({N, Node}) -> N =:= Name andalso is_atom(Node); (_) -> false end, Watched) of
                true -> {[target(W) || W <- Watched], <<>>};
                false -> {[], text("it monitors ~w processes, none named on its stack", [length(Watched)])}
            end;
        {[], _, _} ->
            {[], text("it monitors ~w processes, none named on its stack", [length(Watched)])}
    end.

multi_call({gen_server, rec_nodes, _}) -> true;
multi_call({gen_server, mc_recv, _}) -> true;
multi_call(_) -> false.

target({Name, Node}) when Node =:= node() ->
    case whereis(Name) of
        Pid when is_pid(Pid) -> target(Pid);
        undefined -> #{pid => <<>>, name => atom_to_binary(Name, utf8), node => node_text(Node)}
    end;
target({Name, Node}) ->
    #{pid => <<>>, name => atom_to_binary(Name, utf8), node => node_text(Node)};
target(Pid) when node(Pid) =:= node() ->
    Name = case erlang:process_info(Pid, registered_name) of
               {registered_name, N} -> atom_to_binary(N, utf8);
               _ -> <<>>
           end,
    #{pid => home_pid_text(Pid), name => Name, node => node_text(node())};
target(Pid) ->
    #{pid => home_pid_text(Pid), name => <<>>, node => node_text(node(Pid))}.

node_text(Node) -> atom_to_binary(Node, utf8).

%% A pid as its own node prints it (<0.N.S>): how the dump of that node
%% names it, so that waits across nodes meet.
home_pid_text(Pid) ->
    [_Node, Number, Serial] = string:lexemes(pid_to_list(Pid), "<.>"),
    list_to_binary(["<0.", Number, $., Serial, ">"]).

%% The monitored process (pid or {Name, Node}) as the backtrace prints it.
named_in({Name, Node}, Slots) ->
    lists:member(text("~w", [Name]), Slots) orelse lists:member(text("~w", [{Name, Node}]), Slots);
named_in(Pid, Slots) ->
    Names = case node(Pid) =:= node() andalso erlang:process_info(Pid, registered_name) of
                {registered_name, N} -> [text("~w", [N]), text("~w", [{N, node()}])];
                _ -> []
            end,
    lists:any(fun(T) -> lists:member(T, Slots) end, [list_to_binary(pid_to_list(Pid)) | Names]).

%% The values in the stack slots (`y(N) Value' lines) of the top frames
%% that belong to the calling modules (gen, gen_server, ...): the frames of
%% the call itself, not of the code that made it.
call_slots(Backtrace) ->
    call_slots(binary:split(Backtrace, <<"\n">>, [global]), []).

call_slots([], Acc) ->
    Acc;
call_slots([<<"y(", Rest/binary>> | Lines], Acc) ->
    case binary:split(Rest, <<" ">>) of
        [_, Value] -> call_slots(Lines, [string:trim(Value) | Acc]);
        _ -> call_slots(Lines, Acc)
    end;
call_slots([Line | Lines], Acc) ->
    case address_of_line(Line) of
        none ->
            call_slots(Lines, Acc);
        Address ->
            %% Stops at the first frame of the code that made the call.
            case frame_of_address(Address) of
                {M, _, _} ->
                    case lists:member(M, call_modules()) of
                        true -> call_slots(Lines, Acc);
                        false -> Acc
                    end;
                _ ->
                    Acc
            end
    end.

%%% ---------------------------------------------------------------------
%%% Why a process looks stuck
%%% ---------------------------------------------------------------------

%% {Score, Reasons} from the two looks and the stack (Depth = number of
%% frames, or unknown before the stack is read: then only the parts that
%% need no stack count, which is how processes are picked when there are
%% more than max_processes).
assess({Q1, M1, R1, S1, C1}, {Q2, M2, R2, S2, C2}, Depth, Frames, Interval) ->
    Parts = [queue_part(Q1, Q2, Interval),
             unmatched_receive_part(S2, Q2, C2),
             waiting_part(S1, C1, S2, C2, Q2, Depth, Frames),
             memory_part(M2 - M1, Interval),
             busy_part(S2, R2 - R1, C2, Interval)],
    {lists:sum([S || {S, _} <- Parts]), [R || {_, Rs} <- Parts, R <- Rs]}.

queue_part(Q1, Q2, Interval) when Q2 > 0 ->
    Growth = Q2 - Q1,
    {Q2 + ?QUEUE_GROWTH_WEIGHT * max(Growth, 0),
     [[text("message queue ~w (~s~w in ~w ms)", [Q2, sign(Growth), Growth, Interval])]]};
queue_part(_, _, _) ->
    {0, []}.

%% Waiting with messages in the queue: the receive matches none of them.
unmatched_receive_part(waiting, Q, Current) when Q > 0 ->
    {?SCORE_UNMATCHED_RECEIVE,
     [[<<"waiting in a receive in ">>, Current,
       text(" that matches none of its ~w messages", [Q])]]};
unmatched_receive_part(_, _, _) ->
    {0, []}.

waiting_part(S1, C1, waiting, C2, Q2, Depth, Frames) ->
    Steady = S1 =:= waiting andalso C1 =:= C2,
    case wait_kind(C2) of
        reply when Steady ->
            {?SCORE_REPLY_WAIT, [reply_reason(C2, Frames)]};
        reply ->
            {?SCORE_REPLY_WAIT_SEEN_ONCE, [reply_reason(C2, Frames)]};
        idle ->
            {0, []};
        other when Steady, Q2 =:= 0, is_integer(Depth), Depth > ?SHALLOW_FRAMES ->
            {?SCORE_DEEP_RECEIVE,
             [[<<"waiting in a receive in ">>, C2,
               text(", ~w frames deep (not a server loop)", [Depth])]]};
        other ->
            {0, []}
    end;
waiting_part(_, _, _, _, _, _, _) ->
    {0, []}.

reply_reason(Current, Frames) ->
    case caller(Frames) of
        none -> [<<"waiting for a reply in ">>, Current];
        Caller -> [<<"waiting for a reply in ">>, Current, <<" (called from ">>, Caller, <<")">>]
    end.

%% The reply a waiting process waits for, as data (the tool spells it).
reply_wait(waiting, Current, Frames) ->
    case wait_kind(Current) of
        reply -> #{in => Current, called_from => caller(Frames)};
        _ -> none
    end;
reply_wait(_, _, _) ->
    none.

%% The first frame on the stack outside the call modules: who made the call.
caller(Frames) ->
    case [F || {{M, _, _} = F, _} <- Frames, not lists:member(M, call_modules())] of
        [Caller | _] -> Caller;
        [] -> none
    end.

call_modules() ->
    [gen, gen_server, gen_statem, gen_event, erpc, rpc, io, proc_lib].

%% Where a waiting process is: a call waiting for its reply, a server loop
%% (or a sleep) idle by design, or some other receive.
wait_kind({gen, do_call, _}) -> reply;
wait_kind({gen, wait_resp_mon, _}) -> reply;
wait_kind({gen_server, call, _}) -> reply;
wait_kind({gen_server, rec_nodes, _}) -> reply; % multi_call, OTP 25-26
wait_kind({gen_server, mc_recv, _}) -> reply; % multi_call, OTP 27-
wait_kind({gen_statem, call, _}) -> reply;
wait_kind({gen_statem, call_dirty, _}) -> reply;
wait_kind({gen_statem, call_clean, _}) -> reply;
wait_kind({gen_event, rpc, _}) -> reply;
wait_kind({gen_event, call1, _}) -> reply;
wait_kind({erpc, call, _}) -> reply;
wait_kind({erpc, receive_response, _}) -> reply;
wait_kind({rpc, call, _}) -> reply;
wait_kind({rpc, do_call, _}) -> reply;
wait_kind({rpc, block_call, _}) -> reply;
wait_kind({io, execute_request, _}) -> reply;
wait_kind({io, wait_io_mon_reply, _}) -> reply;
wait_kind({proc_lib, sync_start, _}) -> reply;
wait_kind({proc_lib, sync_start_link, _}) -> reply;
wait_kind({proc_lib, sync_start_monitor, _}) -> reply;
wait_kind({gen_server, loop, _}) -> idle;
wait_kind({gen_statem, loop_receive, _}) -> idle;
wait_kind({gen_event, fetch_msg, _}) -> idle;
wait_kind({erlang, hibernate, _}) -> idle;
wait_kind({timer, sleep, _}) -> idle;
wait_kind(_) -> other.

memory_part(Growth, Interval) when Growth >= ?MEMORY_GROWTH_REPORTED ->
    {Growth div ?MEMORY_GROWTH_BYTES_PER_POINT,
     [[text("memory +~ts in ~w ms", [bytes_text(Growth), Interval])]]};
memory_part(_, _) ->
    {0, []}.

%% A process that ran all along (a loop that never ends looks like this).
busy_part(Status, Reductions, Current, Interval)
  when Status =/= waiting, Reductions >= ?BUSY_REDUCTIONS_REPORTED ->
    {min(Reductions div ?BUSY_REDUCTIONS_PER_POINT, ?SCORE_BUSY_CAP),
     [[text("busy: ~w reductions in ~w ms, now in ", [Reductions, Interval]), Current]]};
busy_part(_, _, _, _) ->
    {0, []}.

sign(N) when N < 0 -> "";
sign(_) -> "+".

bytes_text(Bytes) when Bytes >= 1000000 -> io_lib:format("~.1f MB", [Bytes / 1000000]);
bytes_text(Bytes) -> io_lib:format("~.1f KB", [Bytes / 1000]).

text(Format, Args) ->
    unicode:characters_to_binary(io_lib:format(Format, Args)).
