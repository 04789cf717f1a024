%%% bench_cpu_json — the `json' workload of the CPU-time fidelity bench: a
%%% JSON decoder written for the bench (binary matching, strings with
%%% escapes, numbers through binary_to_integer/binary_to_float, nesting)
%%% decoding a real multi-MB JSON file a few times.
%%%
%%% The file: $CPU_BENCH_JSON if set, else Node.js's API documentation as
%%% JSON (/usr/share/doc/nodejs/api/all.json.gz, 7 MB unpacked, installed
%%% with node by `make deps'), else the largest of a few well-known files of
%%% at least 1 MB, else a document generated here with a fixed seed (said
%%% in the description). The decoder recurses to the document's nesting
%%% depth: the input is trusted bench data.
-module(bench_cpu_json).

-export([prepare/0, run/1, perf_runs/0, modules/0, decode/1]).

-define(DECODES, 1).
-define(MIN_BYTES, 1000000).
-define(CANDIDATES, ["/usr/share/doc/nodejs/api/all.json.gz",
                     "/usr/share/doc/nodejs/api/all.json",
                     "/usr/share/iso-codes/json/iso_639-3.json"]).

%% @doc The document and a line saying where it comes from.
-spec prepare() -> {ok, binary(), string()}.
prepare() ->
    case os:getenv("CPU_BENCH_JSON") of
        false -> find(?CANDIDATES);
        Path -> {ok, Bin} = read(Path), {ok, Bin, describe(Path, Bin)}
    end.

find([Path | Rest]) ->
    case read(Path) of
        {ok, Bin} when byte_size(Bin) >= ?MIN_BYTES -> {ok, Bin, describe(Path, Bin)};
        _ -> find(Rest)
    end;
find([]) ->
    Bin = generate(),
    {ok, Bin, lists:flatten(io_lib:format("no JSON file of >= 1 MB found (looked at ~s): "
                                          "a generated document of ~w bytes (fixed seed)",
                                          [lists:join(", ", ?CANDIDATES), byte_size(Bin)]))}.

read(Path) ->
    case file:read_file(Path) of
        {ok, Gz} when binary_part(Gz, 0, 2) =:= <<31, 139>> -> {ok, zlib:gunzip(Gz)};
        Other -> Other
    end.

describe(Path, Bin) ->
    lists:flatten(io_lib:format("~s (~w bytes of JSON)", [Path, byte_size(Bin)])).

%% @doc The fixed amount of work: ?DECODES decodes of the document.
-spec run(binary()) -> non_neg_integer().
run(Bin) ->
    lists:sum([erlang:phash2(decode(Bin)) band 1 || _ <- lists:seq(1, ?DECODES)]).

% @doc How many runs perf samples (beamspy records one): enough for
% about 2,000 samples at 999 Hz.
-spec perf_runs() -> pos_integer().
perf_runs() -> 4.

%% @doc The workload's own modules (the attribution rule's).
-spec modules() -> [module()].
modules() -> [?MODULE].

%%% The decoder --------------------------------------------------------

%% @doc Decodes one JSON document: objects to maps, arrays to lists,
%% strings to binaries, numbers to integers or floats.
-spec decode(binary()) -> term().
decode(Bin) ->
    {Value, Rest} = value(ws(Bin)),
    <<>> = ws(Rest),
    Value.

ws(<<C, R/binary>>) when C =:= $\s; C =:= $\n; C =:= $\r; C =:= $\t -> ws(R);
ws(B) -> B.

value(<<${, R/binary>>) -> object(ws(R), #{});
value(<<$[, R/binary>>) -> array(ws(R), []);
value(<<$", R/binary>>) -> string(R, []);
value(<<"true", R/binary>>) -> {true, R};
value(<<"false", R/binary>>) -> {false, R};
value(<<"null", R/binary>>) -> {null, R};
value(B) -> number(B).

object(<<$}, R/binary>>, Map) -> {Map, R};
object(<<$", R/binary>>, Map) ->
    {Key, R1} = string(R, []),
    <<$:, R2/binary>> = ws(R1),
    {Value, R3} = value(ws(R2)),
    case ws(R3) of
        <<$,, R4/binary>> -> object(ws(R4), Map#{Key => Value});
        <<$}, R4/binary>> -> {Map#{Key => Value}, R4}
    end.

array(<<$], R/binary>>, []) -> {[], R};
array(B, Acc) ->
    {Value, R1} = value(B),
    case ws(R1) of
        <<$,, R2/binary>> -> array(ws(R2), [Value | Acc]);
        <<$], R2/binary>> -> {lists:reverse(Acc, [Value]), R2}
    end.

%% A string: runs of plain bytes are taken as sub-binaries, escapes
%% decoded one by one.
string(B, Acc) ->
    N = plain(B, 0),
    <<Run:N/binary, R/binary>> = B,
    case R of
        <<$", R1/binary>> -> {iolist_to_binary(lists:reverse(Acc, [Run])), R1};
        <<$\\, E, R1/binary>> -> escape(E, R1, [Run | Acc])
    end.

plain(B, N) ->
    case B of
        <<_:N/binary, C, _/binary>> when C =/= $", C =/= $\\ -> plain(B, N + 1);
        _ -> N
    end.

escape($u, <<Hex:4/binary, R/binary>>, Acc) ->
    case binary_to_integer(Hex, 16) of
        Hi when Hi >= 16#D800, Hi =< 16#DBFF ->
            <<"\\u", Hex2:4/binary, R1/binary>> = R,
            Lo = binary_to_integer(Hex2, 16),
            string(R1, [<<((Hi - 16#D800) * 1024 + (Lo - 16#DC00) + 16#10000)/utf8>> | Acc]);
        Cp ->
            string(R, [<<Cp/utf8>> | Acc])
    end;
escape(E, R, Acc) ->
    string(R, [unescape(E) | Acc]).

unescape($n) -> <<"\n">>;
unescape($t) -> <<"\t">>;
unescape($r) -> <<"\r">>;
unescape($b) -> <<"\b">>;
unescape($f) -> <<"\f">>;
unescape(C) -> <<C>>.

%% A number: its bytes, then integer or float conversion by the BIFs
%% (a float without a fraction, `1e5', gets one: binary_to_float needs it).
number(B) ->
    N1 = digits(B, case B of <<$-, _/binary>> -> 1; _ -> 0 end),
    case B of
        <<_:N1/binary, $., _/binary>> ->
            N3 = exponent(B, digits(B, N1 + 1)),
            <<Text:N3/binary, R/binary>> = B,
            {binary_to_float(Text), R};
        <<_:N1/binary, E, _/binary>> when E =:= $e; E =:= $E ->
            N3 = exponent(B, N1),
            <<Mantissa:N1/binary, Exp:(N3 - N1)/binary, R/binary>> = B,
            {binary_to_float(<<Mantissa/binary, ".0", Exp/binary>>), R};
        _ ->
            <<Text:N1/binary, R/binary>> = B,
            {binary_to_integer(Text), R}
    end.

digits(B, N) ->
    case B of
        <<_:N/binary, C, _/binary>> when C >= $0, C =< $9 -> digits(B, N + 1);
        _ -> N
    end.

exponent(B, N) ->
    case B of
        <<_:N/binary, E, S, _/binary>> when (E =:= $e orelse E =:= $E), (S =:= $+ orelse S =:= $-) ->
            digits(B, N + 2);
        <<_:N/binary, E, _/binary>> when E =:= $e; E =:= $E ->
            digits(B, N + 1);
        _ -> N
    end.

%%% The generated document (no file found) ------------------------------

%% About 3 MB: records of a product catalogue with ids, prices, ratings,
%% coordinates, names with escapes and nested tags.
generate() ->
    S0 = rand:seed_s(exsss, {23, 5, 1977}),
    {Items, _} = lists:mapfoldl(fun item/2, S0, lists:seq(1, 12000)),
    iolist_to_binary(["{\"generated\":true,\"items\":[", lists:join($,, Items), "]}"]).

item(I, S0) ->
    {Price, S1} = rand:uniform_s(S0),
    {Lat, S2} = rand:normal_s(S1),
    {Lon, S3} = rand:normal_s(S2),
    {Stock, S4} = rand:uniform_s(100000, S3),
    {Tags, S5} = lists:mapfoldl(fun(_, S) -> rand:uniform_s(500, S) end, S4, lists:seq(1, 1 + I rem 7)),
    Json = io_lib:format("{\"id\":~w,\"name\":\"item \\\"~w\\\" \\u00e9t\\u00e9\\n\",\"price\":~.2f,"
                         "\"rating\":~.3fe-1,\"stock\":~w,\"location\":{\"lat\":~.6f,\"lon\":~.6f},"
                         "\"tags\":[~s],\"active\":~s,\"note\":null}",
                         [I, I, Price * 1000, Price * 50, Stock, Lat * 30, Lon * 60,
                          lists:join($,, [integer_to_list(T) || T <- Tags]),
                          case Stock rem 2 of 0 -> "true"; 1 -> "false" end]),
    {Json, S5}.
