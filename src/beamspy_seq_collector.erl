%%% @doc The seq_trace collector of one node: beamspy's system tracer
%%% while a sequence capture runs (see {@link beamspy:sequence/2} and
%%% `beamspy seq').
%%%
%%% seq_trace sends each event of a token to the node's system tracer,
%%% whichever node the token's process runs on, so every node a flow reaches
%%% needs one. The events of one request are few, so a plain process is
%%% enough: it keeps the events of its capture's label (at most
%%% `max_events', then counts the rest), each already reduced to the flat
%%% shape the C writers read (`beamspy_tracer:seq_write/3'): pids as node
%%% name + pid text numbered on their own node, the message printed with a
%%% depth limit and cut at 1024 bytes. It names the local processes it sees
%%% (registered name, else proc_lib or spawn initial call) while they are
%%% alive, with the raw atom or {M, F, Arity}: the writer spells them, as
%%% Erlang or Elixir (option `names' of beamspy:sequence/2). Once `max_events' are kept, or when more than 100,000 events
%%% wait in its mailbox (it is slower than the node makes them), it gives the
%%% system tracer back, so a flood of events cannot grow its mailbox: the
%%% rest is counted as dropped.
%%%
%%% This module depends on nothing else of beamspy: it is what beamspy
%%% loads onto other nodes for a capture, and unloads afterwards.
%%%
%%% == Structure ==
%%% The collector refuses to start when the node already has a system
%%% tracer (`{error, {system_tracer_in_use, Node, Tracer}}'). It monitors its
%%% owner (the caller of `sequence/2', or the command-line tool's job on the
%%% node); when the owner goes, or on {@link stop/2}, it gives the system
%%% tracer back (only if it is still the tracer) and ends; if it was loaded
%%% for the capture (`unload'), it then removes its own module.
%%%
%%% ```
%%% 1> {ok, C} = beamspy_seq_collector:start(my_label, self(), #{max_events => 100}).
%%% 2> seq_trace:set_token(label, my_label), seq_trace:set_token(send, true).
%%% 3> {ok, #{events := Events, names := Names}} = beamspy_seq_collector:stop(C, 1000).
%%% '''
-module(beamspy_seq_collector).

-export([start/3, stop/2, activity/2, give_back/1]).
-export([init/3]).

-define(TEXT_MAX, 1024).
-define(PRINT_DEPTH, 30).
%% Messages a collector lets queue up before it stops the events.
-define(MAX_QUEUE, 100000).

%% names: a process's registered name, or its initial call, unspelled.
-type flow() :: #{events := [tuple()], names := [{binary(), binary(), atom() | mfa()}],
                  dropped := non_neg_integer()}.
-export_type([flow/0]).

%%% ---------------------------------------------------------------------
%%% API
%%% ---------------------------------------------------------------------

%% @doc Starts the collector of this node for the token label Label, owned
%% by Owner (a pid, possibly on another node). Options: `max_events'
%% (required: the callers take its default from the table of defaults,
%% `beamspy_opts:default(sequence_max_events)', which this module cannot
%% call on a node it was loaded onto alone), `unload' (remove this module
%% when the collector ends because its owner went; default `false').
%%
%% ```
%% 1> {ok, Collector} = beamspy_seq_collector:start({beamspy_seq_collector, node(), 1}, self(), #{max_events => 10000}).
%% '''
-spec start(term(), pid(), map()) -> {ok, pid()} | {error, term()}.
start(Label, Owner, #{max_events := Max} = Opts) when is_pid(Owner), is_integer(Max), Max > 0 ->
    %% proc_lib's start: its initial call (in its dictionary before any of
    %% its code runs) names it, and an unload finds beamspy's processes by it.
    case proc_lib:start_monitor(?MODULE, init, [Label, Owner, Opts]) of
        {{ok, Pid}, Mon} ->
            erlang:demonitor(Mon, [flush]),
            {ok, Pid};
        {{refused, Why}, Mon} ->
            erlang:demonitor(Mon, [flush]),
            {error, Why};
        {{error, Why}, Mon} -> % it died before it acknowledged
            erlang:demonitor(Mon, [flush]),
            {error, {collector_failed, node(), Why}}
    end.

%% @doc Stops a collector: the system tracer is given back and the events
%% are returned. Timeout in milliseconds.
%%
%% ```
%% 1> {ok, #{events := [], names := [], dropped := 0}} = beamspy_seq_collector:stop(Collector, 1000).
%% '''
-spec stop(pid(), timeout()) -> {ok, flow()} | {error, term()}.
stop(Collector, Timeout) ->
    Mon = erlang:monitor(process, Collector),
    Collector ! {beamspy_seq_stop, self(), Mon},
    receive
        {Mon, Flow} ->
            erlang:demonitor(Mon, [flush]),
            {ok, Flow};
        {'DOWN', Mon, process, _, Why} ->
            {error, {collector_down, node(Collector), Why}}
    after Timeout ->
        erlang:demonitor(Mon, [flush]),
        exit(Collector, kill),
        %% Killed, it cannot give the system tracer back itself.
        _ = try erpc:call(node(Collector), ?MODULE, give_back, [Collector], Timeout)
            catch _:_ -> failed
            end,
        {error, {collector_timeout, node(Collector)}}
    end.

%% @doc Resets this node's system tracer if it is still Collector.
%%
%% ```
%% 1> ok = beamspy_seq_collector:give_back(Collector).
%% '''
-spec give_back(pid()) -> ok.
give_back(Collector) ->
    case seq_trace:get_system_tracer() of
        Collector -> _ = seq_trace:set_system_tracer(false), ok;
        _ -> ok
    end.

%% @doc How many events a collector holds, and the monotonic time (ms) of
%% the last one (for "the flow is quiet" decisions).
%%
%% ```
%% 1> {0, _} = beamspy_seq_collector:activity(Collector, 1000).
%% '''
-spec activity(pid(), timeout()) -> {non_neg_integer(), integer()} | {error, term()}.
activity(Collector, Timeout) ->
    Mon = erlang:monitor(process, Collector),
    Collector ! {beamspy_seq_activity, self(), Mon},
    receive
        {Mon, Activity} ->
            erlang:demonitor(Mon, [flush]),
            Activity;
        {'DOWN', Mon, process, _, Why} ->
            {error, {collector_down, node(Collector), Why}}
    after Timeout ->
        erlang:demonitor(Mon, [flush]),
        {error, {collector_timeout, node(Collector)}}
    end.

%% A term printed the way the diagrams show messages: one line, depth
%% limited, at most 1024 bytes of UTF-8 (`{a, "b", <<"c">>}' gives
%% `<<"{a,\"b\",<<\"c\">>}">>').
-spec print(term()) -> binary().
print(Term) ->
    Text = try unicode:characters_to_binary(io_lib:format("~0tP", [Term, ?PRINT_DEPTH])) of
               B when is_binary(B) -> B;
               _ -> list_to_binary(io_lib:format("~0P", [Term, ?PRINT_DEPTH]))
           catch _:_ -> list_to_binary(io_lib:format("~0P", [Term, ?PRINT_DEPTH]))
           end,
    cut(Text, ?TEXT_MAX).

%% A pid's text as its own node prints it (`<0.95.0>'), whichever node
%% this runs on: the first number is the node's index on the node that
%% prints it, which means nothing elsewhere.
-spec pid_text(pid()) -> binary().
pid_text(Pid) when node(Pid) =:= node() ->
    list_to_binary(pid_to_list(Pid));
pid_text(Pid) ->
    %% NEW_PID_EXT (88) or PID_EXT (103): node atom, then ID and Serial.
    <<131, Tag, Rest/binary>> = term_to_binary(Pid),
    true = Tag =:= 88 orelse Tag =:= 103,
    <<Id:32, Serial:32, _/binary>> = skip_atom(Rest),
    iolist_to_binary(["<0.", integer_to_list(Id), $., integer_to_list(Serial), ">"]).

skip_atom(<<100, Len:16, _:Len/binary, Rest/binary>>) -> Rest; % ATOM_EXT
skip_atom(<<118, Len:16, _:Len/binary, Rest/binary>>) -> Rest; % ATOM_UTF8_EXT
skip_atom(<<115, Len:8, _:Len/binary, Rest/binary>>) -> Rest;  % SMALL_ATOM_EXT
skip_atom(<<119, Len:8, _:Len/binary, Rest/binary>>) -> Rest.  % SMALL_ATOM_UTF8_EXT

%%% ---------------------------------------------------------------------
%%% The collector
%%% ---------------------------------------------------------------------

%% @private
-spec init(term(), pid(), map()) -> ok.
init(Label, Owner, Opts) ->
    %% No collector starts while beamspy's code is being removed (the
    %% check of beamspy_jobs, here as this module depends on no other).
    case whereis(beamspy_unloading) of
        undefined -> init_collector(Label, Owner, Opts);
        _ -> proc_lib:init_ack({refused, {busy, {unloading, node()}}})
    end.

init_collector(Label, Owner, Opts) ->
    %% Swapped in one step, so two captures never both believe they hold it.
    case seq_trace:set_system_tracer(self()) of
        false ->
            OwnerMon = erlang:monitor(process, Owner),
            proc_lib:init_ack({ok, self()}),
            loop(#{label => Label, owner => OwnerMon, unload => maps:get(unload, Opts, false),
                   max => maps:get(max_events, Opts),
                   count => 0, dropped => 0, events => [], names => #{}, last => now_ms()});
        Other ->
            _ = seq_trace:set_system_tracer(Other),
            proc_lib:init_ack({refused, {system_tracer_in_use, node(), Other}})
    end.

loop(#{label := Label} = S) ->
    receive
        {seq_trace, Label, Info, Ts} ->
            loop(event(Info, Ts, S));
        {seq_trace, Label, Info} ->
            loop(event(Info, undefined, S));
        {seq_trace, _Other, _} ->
            loop(S);
        {seq_trace, _Other, _, _} ->
            loop(S);
        {beamspy_seq_activity, From, Tag} ->
            From ! {Tag, {maps:get(count, S), maps:get(last, S)}},
            loop(S);
        {beamspy_seq_stop, From, Tag} ->
            give_back(),
            %% Done (see beamspy_jobs): an unload waits for its exit.
            put('$beamspy_job_done', true),
            From ! {Tag, flow(S)};
        {'DOWN', Mon, process, _, _} when Mon =:= map_get(owner, S) ->
            give_back(),
            case maps:get(unload, S) of
                true -> unload();
                false -> ok
            end;
        _ ->
            loop(S)
    end.

give_back() ->
    give_back(self()).

%% The module goes once its last process is done with it: marked old here,
%% purged by a process that runs only OTP code.
unload() ->
    _ = code:delete(?MODULE),
    _ = spawn(code, purge, [?MODULE]),
    ok.

flow(#{events := Events, names := Names, dropped := Dropped}) ->
    #{events => lists:reverse(Events),
      names => [{Node, Pid, Name} || {{Node, Pid}, Name} <- maps:to_list(Names), Name =/= none],
      dropped => Dropped}.

event(Info, Ts, #{count := N, max := Max, dropped := 0} = S) when N < Max, N band 1023 =:= 1023 ->
    %% Every 1024 events: a collector slower than the events it gets stops
    %% them before its mailbox passes MAX_QUEUE messages.
    case erlang:process_info(self(), message_queue_len) of
        {message_queue_len, Q} when Q > ?MAX_QUEUE -> event(Info, Ts, S#{max := N});
        _ -> record(Info, Ts, S)
    end;
event(_Info, _Ts, #{count := N, max := Max, dropped := D} = S) when N >= Max ->
    %% Full: the node stops sending events at once (the system tracer goes
    %% back), so no mailbox grows; what was already queued is counted.
    case D of
        0 -> give_back();
        _ -> ok
    end,
    S#{dropped := D + 1};
event(Info, Ts, S) ->
    record(Info, Ts, S).

record({Kind, {Prev, Cur}, From, To, Msg}, Ts, #{count := N, events := Es, label := Label} = S)
  when Kind =:= send; Kind =:= 'receive' ->
    E = {case Kind of send -> send; 'receive' -> recv end, Prev, Cur, time_ns(Ts),
         node_of(From), who(From), node_of(To), who(To), print(Msg), print(Label)},
    S1 = name(To, name(From, S)),
    S1#{count := N + 1, events := [E | Es], last := now_ms()};
record(_Other, _Ts, S) ->
    %% print events, and anything a later release adds.
    S.

time_ns({Mono, _Unique}) when is_integer(Mono) -> erlang:convert_time_unit(Mono, native, nanosecond);
time_ns(Mono) when is_integer(Mono) -> Mono;
time_ns(_) -> 0.

now_ms() -> erlang:monotonic_time(millisecond).

node_of(P) when is_pid(P) -> atom_to_binary(node(P), utf8);
node_of({_Name, Node}) when is_atom(Node) -> atom_to_binary(Node, utf8);
node_of(Node) when is_atom(Node) -> atom_to_binary(node(), utf8);
node_of(_) -> atom_to_binary(node(), utf8).

who(P) when is_pid(P) -> pid_text(P);
who({Name, _Node}) when is_atom(Name) -> atom_to_binary(Name, utf8);
who(Name) when is_atom(Name) -> atom_to_binary(Name, utf8);
who(Other) -> print(Other).

%% Names a local process the first time it is seen.
name(P, #{names := Names} = S) when is_pid(P), node(P) =:= node() ->
    Key = {atom_to_binary(node(), utf8), pid_text(P)},
    case maps:is_key(Key, Names) of
        true -> S;
        false -> S#{names := Names#{Key => process_name(P)}}
    end;
name(_, S) ->
    S.

%% Raw: the registered name (an atom) or the initial call {M, F, Arity};
%% the writer spells it as the diagram's `names' asks (Erlang or Elixir), as
%% every frame is spelled.
process_name(P) ->
    case erlang:process_info(P, registered_name) of
        {registered_name, Name} -> Name;
        undefined -> none;
        _ ->
            case proc_lib:initial_call(P) of
                {M, F, Args} when is_list(Args) -> {M, F, length(Args)};
                _ ->
                    case erlang:process_info(P, initial_call) of
                        {initial_call, {erlang, apply, 2}} -> none;
                        {initial_call, {M, F, A}} -> {M, F, A};
                        _ -> none
                    end
            end
    end.

%% At most Max bytes, never cut inside a UTF-8 character.
cut(B, Max) when byte_size(B) =< Max -> B;
cut(B, Max) -> cut_back(binary:part(B, 0, Max)).

cut_back(<<>>) -> <<>>;
cut_back(B) ->
    case binary:last(B) of
        C when C >= 16#80 ->
            %% Drop a trailing partial character.
            case unicode:characters_to_binary(B) of
                Ok when is_binary(Ok) -> B;
                _ -> cut_back(binary:part(B, 0, byte_size(B) - 1))
            end;
        _ -> B
    end.
