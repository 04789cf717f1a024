%%% bench_fidelity — how close traced times come to untraced ones, with
%%% the tracer's overhead compensated and raw, side by side in one run.
%%%
%%% Each workload is a sequence of phases, each phase one function of this
%%% module. Ground truth: every phase timed untraced on its own (timer:tc,
%%% the median of ?UNTRACED_RUNS); a phase's share is its time over the sum
%%% of the workload's phases. Traced: the whole workload recorded by
%%% beamspy:profile/2, with `compensate => true' and `false'; a phase's
%%% share is the inclusive time of its frame (children, SLEEP and spawned
%%% processes' time spent inside it excluded: only the calling process's
%%% tree counts) over the sum. Each traced share is the median of
%%% ?TRACED_RUNS. Workloads:
%%%   two     20,000 calls of a ~1 µs function against one ~25 ms BIF
%%%           (erlang:md5/1 of 1.6 MB): the case of issue 14
%%%   json    a recursive-descent JSON decoder over a generated 1 MB
%%%           document against a BIF scan of the same bytes
%%%   server  2,000 small gen_server calls against one call doing a
%%%           ~25 ms BIF in the server
%%%   tail    a 200,000-iteration tail-recursive loop against the BIF
-module(bench_fidelity).

-export([main/0, main/1, table/0]).
%% Phases and their helpers, called by name so that each has its own frame.
-export([run/2, two_calls/1, two_bif/1, json_decode/1, json_scan/1,
         server_calls/1, server_heavy/1, tail_loop/1, tail_bif/1, small/1,
         handle_call/3, init/1, done/1]).

-define(UNTRACED_RUNS, 7).
-define(TRACED_RUNS, 5).

main() -> main([]).

main(_) ->
    Rows = table(),
    print(Rows),
    halt(0).

%% [{Workload, Phase, Untraced, Raw, Compensated, CompensatedPerRun}] and
%% the costs used.
table() ->
    Costs = case beamspy_calibrate:costs(false) of
                {ok, C} -> C;
                {error, Why} -> exit({calibration_failed, Why})
            end,
    io:format("calibrated tracer cost per event: call ~w ns, tail call ~w ns, return ~w ns, reschedule ~w ns~n",
              [maps:get(call, Costs), maps:get(tail_call, Costs), maps:get(return, Costs), maps:get(sched, Costs)]),
    lists:append([workload(W) || W <- [two, json, server, tail]]).

workload(W) ->
    Input = input(W),
    Phases = phases(W),
    Untraced = shares([median([element(1, timer:tc(?MODULE, P, [Input])) || _ <- lists:seq(1, ?UNTRACED_RUNS)])
                       || P <- Phases]),
    {Raw, _} = traced_shares(W, Input, Phases, false),
    {Comp, CompRuns} = traced_shares(W, Input, Phases, true),
    cleanup(W, Input),
    [{W, P, U, R, C, Cs} || {{P, U}, {R, C}, Cs} <- lists:zip3(lists:zip(Phases, Untraced), lists:zip(Raw, Comp), CompRuns)].

%% The median share of each phase over the runs, and each phase's share in
%% each run.
traced_shares(W, Input, Phases, Compensate) ->
    Runs = [phase_totals(W, Input, Phases, Compensate) || _ <- lists:seq(1, ?TRACED_RUNS)],
    Shares = [shares(R) || R <- Runs],
    PerPhase = [[lists:nth(I, S) || S <- Shares] || I <- lists:seq(1, length(Phases))],
    {[median(Ps) || Ps <- PerPhase], PerPhase}.

phase_totals(W, Input, Phases, Compensate) ->
    {ok, #{profile := #{processes := [{_, Nodes} | _]}}} =
        beamspy:profile({?MODULE, run, [W, Input]}, #{compensate => Compensate, children => false}),
    Self = <<"bench_fidelity:">>,
    [lists:sum([Total || {_, _, Frame, _, Total, _} <- Nodes,
                         Frame =:= <<Self/binary, (atom_to_binary(P))/binary, "/1">>])
     || P <- Phases].

shares(Times) ->
    Sum = lists:sum(Times),
    [T / max(Sum, 1) || T <- Times].

median(Xs) ->
    lists:nth((length(Xs) + 1) div 2, lists:sort(Xs)).

print(Rows) ->
    io:format("~n| workload | function | untraced share | raw share | compensated share |~n"
              "|---|---|---|---|---|~n"),
    _ = [io:format("| ~s | ~s/1 | ~.3f | ~.3f | ~.3f |~n", [W, P, U, R, C]) || {W, P, U, R, C, _} <- Rows],
    %% The compensated ratio of each traced run as well as the median's:
    %% how far one recording lands from the next.
    io:format("~n| workload | first/second phase | untraced | raw | compensated | compensated, each run | compensated within 20% |~n"
              "|---|---|---|---|---|---|---|~n"),
    _ = [begin
             [{_, P1, U1, R1, C1, Cs1}, {_, P2, U2, R2, C2, Cs2}] = [Row || Row <- Rows, element(1, Row) =:= W],
             U = U1 / U2, C = C1 / max(C2, 1.0e-9),
             Each = lists:join(", ", [io_lib:format("~.2f", [A / max(B, 1.0e-9)]) || {A, B} <- lists:zip(Cs1, Cs2)]),
             io:format("| ~s | ~s / ~s | ~.2f | ~.2f | ~.2f | ~s | ~s |~n",
                       [W, P1, P2, U, R1 / max(R2, 1.0e-9), C, Each,
                        case abs(C - U) =< 0.2 * U of true -> "yes"; false -> "no" end])
         end || W <- lists:usort([element(1, R) || R <- Rows])],
    ok.

%%% ---------------------------------------------------------------------
%%% Workloads
%%% ---------------------------------------------------------------------

phases(two) -> [two_calls, two_bif];
phases(json) -> [json_decode, json_scan];
phases(server) -> [server_calls, server_heavy];
phases(tail) -> [tail_loop, tail_bif].

input(two) -> bif_input();
input(tail) -> bif_input();
input(json) -> json_document(20000);
input(server) ->
    {ok, S} = gen_server:start(?MODULE, bif_input(), []),
    S.

cleanup(server, S) -> gen_server:stop(S);
cleanup(_, _) -> ok.

bif_input() -> binary:copy(<<"0123456789abcdef">>, 100000).

%% The traced call: the phases one after another (not in tail position, so
%% each keeps its frame under run/2).
run(W, Input) ->
    [?MODULE:P(Input) || P <- phases(W)].

%% Phases end with a body call, so that the phase keeps its frame while
%% its work runs (a call in tail position would replace it).
done(X) -> {done, X}.

%% two: 20,000 calls of a ~1 µs function, one ~25 ms BIF.
two_calls(_) -> done(many(20000, 0)).

many(0, Acc) -> Acc;
many(N, Acc) -> many(N - 1, Acc + small(N)).

small(N) -> byte_size(term_to_binary({N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N})).

two_bif(Bin) -> done(erlang:md5(Bin)).

%% tail: a tail-recursive loop, the same BIF.
tail_loop(_) -> done(loop(200000, 0)).

loop(0, Acc) -> Acc;
loop(N, Acc) -> loop(N - 1, Acc bxor N).

tail_bif(Bin) -> done(erlang:md5(Bin)).

%% server: many small calls, one heavy call.
server_calls(S) -> done([gen_server:call(S, {echo, I}) || I <- lists:seq(1, 2000)]).

server_heavy(S) -> done(gen_server:call(S, heavy, infinity)).

init(Bin) -> {ok, Bin}.

handle_call({echo, I}, _From, Bin) -> {reply, I, Bin};
handle_call(heavy, _From, Bin) -> {reply, erlang:md5(Bin), Bin}.

%% json: decoding (call-heavy) against a BIF scan of the same bytes.
json_decode(Doc) -> done(value(skip_ws(Doc))).

json_scan(Doc) -> done({length(binary:matches(Doc, [<<"\"">>, <<":">>])), erlang:md5(Doc)}).

json_document(N) ->
    Items = [io_lib:format("{\"id\":~w,\"name\":\"item-~w\",\"tags\":[\"a\",\"b\",\"c\"],"
                           "\"price\":~w.~w,\"ok\":~s,\"note\":null}",
                           [I, I, I rem 1000, I rem 100, case I rem 2 of 0 -> "true"; 1 -> "false" end])
             || I <- lists:seq(1, N)],
    iolist_to_binary(["{\"items\":[", lists:join(",", Items), "]}"]).

value(<<${, R/binary>>) -> object(skip_ws(R), #{});
value(<<$[, R/binary>>) -> array(skip_ws(R), []);
value(<<$", R/binary>>) -> string(R, <<>>);
value(<<"true", R/binary>>) -> {true, R};
value(<<"false", R/binary>>) -> {false, R};
value(<<"null", R/binary>>) -> {null, R};
value(R) -> number(R, <<>>).

object(<<$}, R/binary>>, Acc) -> {Acc, R};
object(<<$", R0/binary>>, Acc) ->
    {Key, R1} = string(R0, <<>>),
    <<$:, R2/binary>> = skip_ws(R1),
    {V, R3} = value(skip_ws(R2)),
    case skip_ws(R3) of
        <<$,, R4/binary>> -> object(skip_ws(R4), Acc#{Key => V});
        <<$}, R4/binary>> -> {Acc#{Key => V}, R4}
    end.

array(<<$], R/binary>>, Acc) -> {lists:reverse(Acc), R};
array(R0, Acc) ->
    {V, R1} = value(R0),
    case skip_ws(R1) of
        <<$,, R2/binary>> -> array(skip_ws(R2), [V | Acc]);
        <<$], R2/binary>> -> {lists:reverse([V | Acc]), R2}
    end.

string(<<$", R/binary>>, Acc) -> {Acc, R};
string(<<$\\, C, R/binary>>, Acc) -> string(R, <<Acc/binary, C>>);
string(<<C, R/binary>>, Acc) -> string(R, <<Acc/binary, C>>).

number(<<C, R/binary>>, Acc) when C >= $0, C =< $9; C =:= $.; C =:= $-; C =:= $e; C =:= $E; C =:= $+ ->
    number(R, <<Acc/binary, C>>);
number(R, Acc) ->
    {case binary:match(Acc, <<".">>) of
         nomatch -> binary_to_integer(Acc);
         _ -> binary_to_float(Acc)
     end, R}.

skip_ws(<<C, R/binary>>) when C =:= $\s; C =:= $\n; C =:= $\t; C =:= $\r -> skip_ws(R);
skip_ws(R) -> R.
