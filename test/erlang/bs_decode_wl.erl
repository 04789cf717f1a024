%%% A gen_server that spends nearly all its CPU decoding, the workload of
%%% issue 14 ("sampling points at the wrong place"): each cast carries a
%%% small JSON-like text (a list of numbers and nested lists) that
%%% handle_cast decodes, tens of microseconds of pure CPU a message. A
%%% feeder keeps it busy: `saturated' keeps messages queued (it never
%%% waits), `{rate, PerMs}' sends PerMs messages every millisecond (it
%%% waits between them). Used by the sampler, top and dist tests.
-module(bs_decode_wl).
-behaviour(gen_server).

-export([start/1, stop/1, feed/2, text/1, decode/1, deep/1, deep_sum/1]).
-export([init/1, handle_call/3, handle_cast/2]).

%% Not linked: a failing test must not take its caller along.
start(Items) when is_integer(Items) ->
    {ok, Pid} = gen_server:start(?MODULE, text(Items), []),
    Pid.

stop(Pid) ->
    _ = [exit(F, kill) || F <- feeders(Pid)],
    try gen_server:stop(Pid) catch exit:_ -> ok end,
    ok.

%% Starts a feeder for Pid (killed by stop/1).
feed(Pid, How) ->
    F = spawn(fun() -> feeder(Pid, How) end),
    gen_server:cast(Pid, {feeder, F}),
    F.

feeders(Pid) ->
    try gen_server:call(Pid, feeders, 5000) catch exit:_ -> [] end.

init(Text) ->
    {ok, #{text => Text, feeders => [], decoded => 0}}.

handle_call(feeders, _From, #{feeders := Fs} = S) ->
    {reply, Fs, S};
handle_call(decoded, _From, #{decoded := N} = S) ->
    {reply, N, S}.

handle_cast({feeder, F}, #{feeders := Fs} = S) ->
    {noreply, S#{feeders := [F | Fs]}};
handle_cast(decode, #{text := Text, decoded := N} = S) ->
    {_, <<>>} = decode(Text),
    {noreply, S#{decoded := N + 1}}.

feeder(Pid, saturated) ->
    case erlang:process_info(Pid, message_queue_len) of
        {message_queue_len, L} when L > 1000 -> timer:sleep(1);
        {message_queue_len, _} -> [gen_server:cast(Pid, decode) || _ <- lists:seq(1, 200)];
        undefined -> exit(normal)
    end,
    feeder(Pid, saturated);
feeder(Pid, {rate, PerMs}) ->
    %% Never more than a few milliseconds of work queued: on a slow machine
    %% the server still waits between bursts.
    case erlang:process_info(Pid, message_queue_len) of
        {message_queue_len, L} when L > 2 * PerMs -> ok;
        {message_queue_len, _} -> [gen_server:cast(Pid, decode) || _ <- lists:seq(1, PerMs)];
        undefined -> exit(normal)
    end,
    timer:sleep(1),
    feeder(Pid, {rate, PerMs}).

%% "[1,22,[333,4],55,...]": Items numbers, every fourth a nested pair.
text(Items) ->
    Parts = [case I rem 4 of
                 0 -> ["[", integer_to_list(I), ",", integer_to_list(I * 7), "]"];
                 _ -> integer_to_list(I * 13)
             end || I <- lists:seq(1, Items)],
    iolist_to_binary(["[", lists:join(",", Parts), "]"]).

%% A small recursive-descent decoder: value, list, number.
decode(<<$[, Rest/binary>>) -> list(Rest, []);
decode(Bin) -> number(Bin, 0).

list(<<$], Rest/binary>>, Acc) -> {lists:reverse(Acc), Rest};
list(<<$,, Rest/binary>>, Acc) -> list(Rest, Acc);
list(Bin, Acc) ->
    {V, Rest} = decode(Bin),
    list(Rest, [V | Acc]).

number(<<D, Rest/binary>>, N) when D >= $0, D =< $9 -> number(Rest, N * 10 + D - $0);
number(Rest, N) -> {N, Rest}.

%% Body recursion N deep that then waits: its stack has N+ frames.
deep(0) -> receive stop -> 0 end;
deep(N) -> 1 + deep(N - 1).

%% Body recursion N deep that burns CPU at the bottom, forever.
deep_sum(0) -> spin(100000), deep_sum(0);
deep_sum(N) -> 1 + deep_sum(N - 1).

spin(0) -> ok;
spin(N) -> spin(N - 1).
