%%% @doc Validation of what users pass to beamspy, done before anything runs.
%%%
%%% Every check turns bad input into `{error, Reason}' with a reason that
%%% {@link beamspy:format_error/1} turns into a sentence. Nothing here has side
%%% effects except looking at the file system to tell a directory from a file.
-module(beamspy_opts).

-export([target/1, options/1, options/2, outputs/2, defaults/0, defaults/1, formats/0, extensions/0,
         live_targets/1, nif_options/2, write_options/1]).
-export([outputs/3, timeline_formats/0]).
-export([option_table/0, default/1, max_of/1]).
-export([output_option/2, formats_option/2, file_format/2, text_option/1]).

-type target() :: fun(() -> term())
                | {fun(), [term()]}
                | {module(), atom(), [term()]}.
-type options() :: #{output := string(),
                     formats := [beamspy:format()],
                     children := boolean(),
                     sleep := boolean(),
                     gc := boolean(),
                     compensate := boolean(),
                     times := compensated | samples | raw,
                     mode := trace | cpu,
                     cpu_hz := pos_integer(),
                     max_memory := pos_integer(),
                     max_processes := pos_integer(),
                     max_events := infinity | pos_integer(),
                     max_duration := infinity | pos_integer(),
                     names := erlang | elixir,
                     quiet := boolean(),
                     open := boolean(),
                     timeline := auto | false | pos_integer(),
                     timeline_cap := auto | infinity | pos_integer(),
                     title => unicode:chardata(),
                     subtitle => unicode:chardata(),
                     width => pos_integer(),
                     min_width => number(),
                     inverted := boolean(),
                     flamechart := boolean(),
                     palette := hot | beam,
                     drop_sleep := boolean(),
                     show_idle := boolean(),
                     collapse_recursion := boolean() | direct | all,
                     full := boolean(),
                     merge := boolean() | both,
                     timeout => infinity | pos_integer(),
                     include => unicode:chardata(),
                     exclude => unicode:chardata(),
                     ignore := [pid()],
                     until_halt := boolean(),
                     telemetry => [[atom(), ...], ...],
                     max_spans => pos_integer(),
                     telemetry_metadata => [term()],
                     return => [beamspy:format()],
                     output_given := boolean()}.
-type live_target() :: pid() | atom() | [pid() | atom()].
%% Live targets once checked: `all' existing processes or a list of pids and
%% registered names (resolved by the session owner), and whether processes
%% spawned from now on are traced too.
-type live_targets() :: #{existing := all | [pid() | atom()], new := boolean()}.
-export_type([target/0, options/0, live_target/0, live_targets/0]).

-define(FORMATS, [folded, svg, html, speedscope, chrome, perf, bspy, callgrind, pprof]).
%% Formats that show time order: asking for one keeps a timeline.
-define(TIMELINE_FORMATS, [speedscope, chrome, bspy]).
-define(DEFAULT_TIMELINE_SPANS, default(timeline_calls)).
%% The process table is allocated up front (32 bytes per process), outside
%% max_memory: keep it at most 32 MiB.
-define(MAX_PROCESSES, 1048576).
-define(MAX_MEMORY, (1 bsl 50)).
%% What the NIF copies of a title and of a filter pattern (bytes).
-define(MAX_TITLE_BYTES, max_of(title_bytes)).
-define(MAX_PATTERN_BYTES, max_of(pattern_bytes)).
%% Longest first: ".speedscope.json" before anything shorter.
-define(EXTENSIONS, [{".speedscope.json", speedscope}, {".trace.json", chrome},
                     {".perf.txt", perf}, {".folded", folded}, {".svg", svg},
                     {".html", html}, {".bspy", bspy}, {".callgrind", callgrind},
                     {".pb.gz", pprof}, {".pprof", pprof}]).

%% @doc The one table of defaults: every option of the API (`api'), every
%% default of the command-line tool's jobs (`tool'), of {@link
%% beamspy:sequence/2} (`sequence') and of beamspy_telemetry (`telemetry'),
%% and the sizes of texts the NIF keeps (`limit'), with its default for a
%% call (`apply'), where they differ for a live session (`live') and from
%% Elixir (`elixir'), the largest value allowed where C holds it too
%% (`max'), and what it is, in a line. {@link defaults/0}, {@link
%% defaults/1}, {@link default/1} and the tool's jobs on a node take their
%% values from it; docs/reference-options.md, the docs of `beamspy' and `BeamSpy' and the
%% help of `bin/beamspy' are checked against it by the tests
%% (test/erlang/beamspy_defaults_tests.erl).
%%
%% ```
%% {max_memory, api, #{apply := 268435456}, _} = lists:keyfind(max_memory, 1, beamspy_opts:option_table()).
%% '''
-spec option_table() -> [{atom(), api | tool | sequence | telemetry | limit,
                          #{apply := term(), live => term(), elixir => term(), max => pos_integer()},
                          string()}].
option_table() ->
    [{output, api, #{apply => "."}, "a directory (one file per format) or a file"},
     {formats, api, #{apply => [html]}, "the formats written to a directory output"},
     {children, api, #{apply => true, live => false}, "also trace the processes a target spawns"},
     {sleep, api, #{apply => true}, "charge scheduled-out time to a WAIT or RUNNABLE leaf"},
     {gc, api, #{apply => false}, "charge garbage collection to a GC leaf"},
     {compensate, api, #{apply => true}, "subtract the tracer's calibrated cost per event from traced times"},
     {times, api, #{apply => compensated}, "mode trace's self times: compensated (calibrated tracer cost subtracted), samples (from CPU samples taken beside the trace at cpu_hz; the VM must run with +JPperf true) or raw; compensate => false means raw"},
     {mode, api, #{apply => trace}, "trace (every call: exact counts and stacks) or cpu (the kernel's CPU samples of the VM's scheduler threads; the VM must run with +JPperf true)"},
     {cpu_hz, api, #{apply => 199}, "mode cpu and times samples: samples a second taken of each busy scheduler thread"},
     {max_memory, api, #{apply => 256 * 1024 * 1024}, "bytes the recording may use"},
     {max_processes, api, #{apply => 10000}, "processes recorded at most"},
     {max_events, api, #{apply => infinity}, "events recorded at most"},
     {max_duration, api, #{apply => infinity, live => 60000}, "milliseconds of recording at most"},
     {names, api, #{apply => erlang, elixir => elixir}, "frame spelling: mod:fun/1 or Mod.fun/1"},
     {quiet, api, #{apply => false}, "do not print where the files were written"},
     {open, api, #{apply => false}, "open the HTML or SVG written in the browser"},
     {timeline, api, #{apply => auto}, "keep calls in time order: auto, true, false or a count"},
     {timeline_cap, api, #{apply => auto}, "calls at most in a speedscope or Chrome trace file's time order: auto (per format), infinity or a count"},
     {inverted, api, #{apply => false}, "icicle graph (root at the top)"},
     {flamechart, api, #{apply => false}, "SVG with x as time"},
     {palette, api, #{apply => hot}, "SVG and HTML colours: hot or beam"},
     {drop_sleep, api, #{apply => false}, "leave SLEEP, WAIT and RUNNABLE frames out of the outputs"},
     {show_idle, api, #{apply => false}, "whole-VM sessions (start(all)): keep the WAIT frames left out by default"},
     {collapse_recursion, api, #{apply => false}, "fold recursion into one frame: true or direct (f calling f), all (also f -> g -> f)"},
     {full, api, #{apply => false}, "write every stack even where a file would be too big to open (above 200 MB recursion is folded)"},
     {merge, api, #{apply => false}, "one tree for all processes"},
     {ignore, api, #{apply => []}, "local pids never recorded (the tool's own job processes)"},
     {until_halt, api, #{apply => false}, "a halting traced process writes the files first"},
     {timeline_calls, tool, #{apply => 1000000}, "calls a timeline keeps (timeline => true, --timeline)"},
     {record_duration_ms, tool, #{apply => 10000}, "how long `beamspy record' records"},
     {sample_interval_ms, tool, #{apply => 10}, "time between two samples of `record --mode sample'"},
     {dump_interval_ms, tool, #{apply => 200}, "time between the two looks of `beamspy dump'"},
     {top_interval_ms, tool, #{apply => 100}, "time between two samples of `beamspy top'"},
     {top_refresh_ms, tool, #{apply => 1000}, "time between two screens of `beamspy top'"},
     {top_limit, tool, #{apply => 20}, "processes `beamspy top' lists"},
     {lease_ms, tool, #{apply => 5000}, "a node ends the tool's job by itself when it has heard nothing from the tool for this long (--lease)"},
     {connect_timeout_ms, tool, #{apply => 10000}, "how long the tool waits to connect to a node and for each answer (--connect-timeout)"},
     {sequence_max_events, sequence, #{apply => 10000, max => 1000000}, "events a sequence diagram keeps per node (max_events of beamspy:sequence/2, --max-events of `beamspy seq')"},
     {sequence_max_participants, sequence, #{apply => 40, max => 1000}, "processes of a sequence diagram drawn in columns of their own (max_participants)"},
     {sequence_label_chars, sequence, #{apply => 60, max => 1000}, "characters of a message label in a sequence diagram (label_chars)"},
     {max_spans, telemetry, #{apply => 1000000}, "span starts beamspy_telemetry records at most"},
     {title_bytes, limit, #{apply => 511, max => 511}, "bytes of a title or subtitle (the NIF keeps this many)"},
     {pattern_bytes, limit, #{apply => 1023, max => 1023}, "bytes of an include or exclude pattern (the NIF keeps this many)"}].

%% @doc The default of one entry of {@link option_table/0} (for a call).
%%
%% ```
%% 10 = beamspy_opts:default(sample_interval_ms).
%% '''
-spec default(atom()) -> term().
default(Key) -> field(Key, apply).

%% @doc The largest value allowed of one entry of {@link option_table/0}
%% that has one.
%%
%% ```
%% 1000 = beamspy_opts:max_of(sequence_label_chars).
%% '''
-spec max_of(atom()) -> pos_integer().
max_of(Key) -> field(Key, max).

field(Key, Field) ->
    {Key, _, #{Field := Value}, _} = lists:keyfind(Key, 1, option_table()),
    Value.

%% @doc The default value of every option.
-spec defaults() -> options().
defaults() ->
    maps:from_list([{Key, Value} || {Key, api, #{apply := Value}, _} <- option_table()] ++
                       [{output_given, false}]).

%% @doc The defaults of a call (`apply') or of a live session (`start',
%% `trace'): a live session is bounded by default in time (60 s) and, as
%% every recording, in memory (256 MiB: what protects the node), and does not
%% follow children unless asked. Events are not limited by default: a count
%% of events protects nothing a memory cap does not, and cut whole-node
%% recordings short after a few seconds of a busy node.
-spec defaults(apply | live) -> options().
defaults(apply) -> defaults();
defaults(live) ->
    maps:merge(defaults(),
               maps:from_list([{Key, Value} || {Key, api, #{live := Value}, _} <- option_table()])).

%% @doc Every output format beamspy writes.
-spec formats() -> [beamspy:format()].
formats() -> ?FORMATS.

%% @doc The file extensions beamspy writes, each with its format.
-spec extensions() -> [{string(), beamspy:format()}].
extensions() -> ?EXTENSIONS.

%% @doc The formats that show time order: asking for one keeps a timeline.
-spec timeline_formats() -> [beamspy:format()].
timeline_formats() -> ?TIMELINE_FORMATS.

%% @doc Checks a call target; returns the fun and its arguments.
-spec target(term()) -> {ok, fun(), [term()]} | {error, term()}.
target(F) when is_function(F, 0) -> {ok, F, []};
target({_, Args} = T) when is_list(Args) ->
    case is_proper_list(Args) of
        true -> target_proper(T);
        false -> {error, {bad_target, T}}
    end;
target({_, _, Args} = T) when is_list(Args) ->
    case is_proper_list(Args) of
        true -> target_proper(T);
        false -> {error, {bad_target, T}}
    end;
target(Other) ->
    {error, {bad_target, Other}}.

is_proper_list(L) ->
    try length(L) of
        _ -> true
    catch error:badarg -> false
    end.

target_proper({F, Args}) when is_function(F) ->
    case erlang:fun_info(F, arity) of
        {arity, N} when N =:= length(Args) -> {ok, F, Args};
        {arity, N} -> {error, {bad_target, {wrong_arity, N, length(Args)}}}
    end;
target_proper({M, F, Args}) when is_atom(M), is_atom(F) ->
    Arity = length(Args),
    _ = code:ensure_loaded(M),
    case erlang:function_exported(M, F, Arity) of
        true -> {ok, fun M:F/Arity, Args};
        false -> {error, {bad_target, {undef, {M, F, Arity}}}}
    end;
target_proper(Other) ->
    {error, {bad_target, Other}}.

%% @doc Checks options given as a map or a proplist; fills in defaults.
-spec options(map() | list()) -> {ok, options()} | {error, term()}.
options(Opts) -> options(Opts, apply).

%% @doc Same, with the defaults of a call (`apply') or a live session (`live').
-spec options(map() | list(), apply | live) -> {ok, options()} | {error, term()}.
options(List, Kind) when is_list(List) ->
    %% proplists convention: the first occurrence of a key wins.
    try maps:from_list(lists:reverse([opt_pair(E) || E <- List])) of
        Map -> options(Map, Kind)
    catch throw:Error -> Error
    end;
options(Map0, Kind) when is_map(Map0) ->
    try
        Map = eflambe_names(Map0),
        Given = maps:to_list(Map),
        Opts = lists:foldl(fun check/2, (defaults(Kind))#{output_given => maps:is_key(output, Map)}, Given),
        check_combined(Opts, Map)
    catch throw:Error -> Error
    end;
options(Other, _) ->
    {error, {bad_options, Other}}.

%% @doc Checks what a live session traces: a pid, a registered name, a
%% non-empty list of them, `all' (existing and new processes), `existing'
%% or `new' (processes spawned from now on), as in erlang:trace/3.
-spec live_targets(term()) -> {ok, live_targets()} | {error, term()}.
live_targets(all) -> {ok, #{existing => all, new => true}};
live_targets(existing) -> {ok, #{existing => all, new => false}};
live_targets(new) -> {ok, #{existing => [], new => true}};
live_targets(T) when is_pid(T); is_atom(T) ->
    case live_targets([T]) of
        {ok, _} = Ok -> Ok;
        {error, _} -> {error, {bad_targets, T}}
    end;
live_targets(L) when is_list(L), L =/= [] ->
    Good = fun(P) when is_pid(P) -> node(P) =:= node();
              (N) when is_atom(N) -> not lists:member(N, [all, existing, new, undefined]);
              (_) -> false
           end,
    case is_proper_list(L) andalso lists:all(Good, L) of
        true -> {ok, #{existing => lists:usort(L), new => false}};
        false -> {error, {bad_targets, L}}
    end;
live_targets(Other) ->
    {error, {bad_targets, Other}}.

%% eflambe's option names, so that code written for eflambe:apply/2 and
%% capture/3 works with the module renamed: `output_directory' is `output'
%% as a directory, `output_format' picks the one format (`brendan_gregg' is
%% folded stacks; `perf' and `svg' are beamspy's), `return => value' is what
%% apply/2 does anyway. Given beside beamspy's own name for the same thing,
%% the two would disagree: refused.
eflambe_names(Map) ->
    lists:foldl(fun eflambe_name/2, Map, [output_directory, output_format, return]).

eflambe_name(output_directory, #{output_directory := _, output := _}) ->
    throw({error, {conflicting_options, output_directory, output}});
eflambe_name(output_directory, #{output_directory := Dir} = Map) ->
    case text(Dir) of
        {ok, B} when B =/= <<>> ->
            Out = unicode:characters_to_list(B),
            AsDir = case lists:suffix("/", Out) of
                        true -> Out;
                        false -> Out ++ "/"
                    end,
            (maps:remove(output_directory, Map))#{output => AsDir};
        _ -> bad(output_directory, Dir, "a directory (a non-empty string without NUL)")
    end;
eflambe_name(output_format, #{output_format := _, formats := _}) ->
    throw({error, {conflicting_options, output_format, formats}});
eflambe_name(output_format, #{output_format := F} = Map) ->
    Format = case F of
                 brendan_gregg -> folded;
                 perf -> perf;
                 svg -> svg;
                 _ -> bad(output_format, F, "brendan_gregg, perf or svg (eflambe's names)")
             end,
    (maps:remove(output_format, Map))#{formats => [Format]};
eflambe_name(return, #{return := value} = Map) ->
    maps:remove(return, Map);
eflambe_name(return, #{return := V}) when is_atom(V) ->
    bad(return, V, "value (eflambe's return => flamegraph | filename are not supported: "
        "use beamspy:profile/2 for the profile, or name the file with output)");
eflambe_name(_, Map) ->
    Map.

opt_pair({K, V}) -> {K, V};
opt_pair(K) when is_atom(K) -> {K, true};
opt_pair(Other) -> throw({error, {bad_options, Other}}).

check({output, V}, Acc) -> Acc#{output => output_option(V, ?EXTENSIONS)};
check({formats, V}, Acc) -> Acc#{formats => formats_option(V, ?FORMATS)};
%% capture/3's merge takes both (per call and merged) besides true and false.
check({merge, both}, Acc) -> Acc#{merge => both};
check({K, V}, Acc) when K =:= children; K =:= sleep; K =:= gc; K =:= compensate; K =:= quiet; K =:= open;
                        K =:= inverted; K =:= flamechart; K =:= drop_sleep; K =:= merge; K =:= show_idle;
                        K =:= full ->
    case is_boolean(V) of
        true -> Acc#{K => V};
        false -> bad(K, V, "true or false")
    end;
check({mode, V}, Acc) when V =:= trace; V =:= cpu -> Acc#{mode => V};
check({mode, V}, _) -> bad(mode, V, "trace or cpu");
check({times, V}, Acc) when V =:= compensated; V =:= samples; V =:= raw -> Acc#{times => V};
check({times, V}, _) -> bad(times, V, "compensated, samples (from CPU samples) or raw");
check({cpu_hz, V}, Acc) when is_integer(V), V >= 1, V =< 10000 -> Acc#{cpu_hz => V};
check({cpu_hz, V}, _) -> bad(cpu_hz, V, "an integer from 1 to 10000 (samples a second)");
check({collapse_recursion, V}, Acc) when is_boolean(V); V =:= direct; V =:= all ->
    Acc#{collapse_recursion => V};
check({collapse_recursion, V}, _) ->
    bad(collapse_recursion, V, "true, false, direct (f calling f; what true means) or all (also f -> g -> f)");
check({return, V}, Acc) when is_list(V), V =/= [] ->
    case [F || F <- V, not lists:member(F, ?FORMATS)] of
        [] -> Acc#{return => lists:usort(V)};
        _ -> bad(return, V, "a non-empty list of " ++ lists:join(", ", [atom_to_list(F) || F <- ?FORMATS]))
    end;
check({return, V}, _) -> bad(return, V, "a non-empty list of formats");
check({max_events, V}, Acc) when V =:= infinity -> Acc#{max_events => V};
check({max_events, V}, Acc) when is_integer(V), V > 0, V < 1 bsl 62 -> Acc#{max_events => V};
check({max_events, V}, _) -> bad(max_events, V, "infinity or a positive integer");
check({max_duration, V}, Acc) when V =:= infinity -> Acc#{max_duration => V};
check({max_duration, V}, Acc) when is_integer(V), V > 0, V < 1 bsl 32 -> Acc#{max_duration => V};
check({max_duration, V}, _) -> bad(max_duration, V, "infinity or a positive number of milliseconds");
check({K, V}, Acc) when K =:= max_memory; K =:= max_processes ->
    case is_integer(V) andalso V > 0 of
        true when K =:= max_processes, V > ?MAX_PROCESSES ->
            bad(K, V, "at most " ++ integer_to_list(?MAX_PROCESSES));
        true when K =:= max_memory, V > ?MAX_MEMORY ->
            bad(K, V, "at most " ++ integer_to_list(?MAX_MEMORY) ++ " bytes");
        true -> Acc#{K => V};
        false -> bad(K, V, "a positive integer")
    end;
check({names, V}, Acc) when V =:= erlang; V =:= elixir -> Acc#{names => V};
check({names, V}, _) -> bad(names, V, "erlang or elixir");
check({timeout, infinity}, Acc) -> Acc#{timeout => infinity};
check({timeout, V}, Acc) when is_integer(V), V > 0, V < 1 bsl 32 -> Acc#{timeout => V};
check({timeout, V}, _) -> bad(timeout, V, "infinity or a positive number of milliseconds");
check({pids, V}, Acc) when is_list(V), V =/= [] ->
    case lists:all(fun(P) -> is_pid(P) andalso node(P) =:= node() end, V) of
        true -> Acc#{pids => V};
        false -> bad(pids, V, "a non-empty list of local pids")
    end;
check({pids, V}, _) -> bad(pids, V, "a non-empty list of local pids");
check({ignore, V}, Acc) when is_list(V), length(V) =< 8 ->
    case lists:all(fun(P) -> is_pid(P) andalso node(P) =:= node() end, V) of
        true -> Acc#{ignore => V};
        false -> bad(ignore, V, "a list of at most 8 local pids")
    end;
check({ignore, V}, _) -> bad(ignore, V, "a list of at most 8 local pids");
check({report_limit, V}, Acc) when is_boolean(V) -> Acc#{report_limit => V};
check({report_limit, V}, _) -> bad(report_limit, V, "true or false");
check({until_halt, V}, Acc) when is_boolean(V) -> Acc#{until_halt => V};
check({until_halt, V}, _) -> bad(until_halt, V, "true or false");
check({timeline, V}, Acc) when V =:= false; V =:= auto -> Acc#{timeline => V};
check({timeline, true}, Acc) -> Acc#{timeline => ?DEFAULT_TIMELINE_SPANS};
check({timeline, V}, Acc) when is_integer(V), V > 0, V =< 1 bsl 32 -> Acc#{timeline => V};
check({timeline, V}, _) -> bad(timeline, V, "false, true or the most calls to keep in time order (a positive integer)");
check({timeline_cap, V}, Acc) when V =:= auto; V =:= infinity -> Acc#{timeline_cap => V};
check({timeline_cap, V}, Acc) when is_integer(V), V > 0, V < 1 bsl 62 -> Acc#{timeline_cap => V};
check({timeline_cap, V}, _) ->
    bad(timeline_cap, V, "auto, infinity or the most calls a speedscope or Chrome trace file keeps in time order");
check({K, V}, Acc) when K =:= title; K =:= subtitle ->
    Max = ?MAX_TITLE_BYTES,
    case text(V) of
        {ok, T} when byte_size(T) =< Max -> Acc#{K => T};
        _ -> bad(K, V, "a string of at most " ++ integer_to_list(?MAX_TITLE_BYTES)
                 ++ " bytes without NUL")
    end;
%% Patterns are checked by the compiler that will use them (the writers'
%% POSIX extended regular expressions), not by re's PCRE: a pattern such as
%% "(?i)fib" must be refused here, not accepted and then fail at the end.
check({K, V}, Acc) when K =:= include; K =:= exclude ->
    Max = ?MAX_PATTERN_BYTES,
    case text(V) of
        {ok, T} when byte_size(T) =< Max ->
            case beamspy_tracer:check_pattern(T) of
                ok -> Acc#{K => T};
                {error, Why} -> throw({error, {bad_pattern, K, T, Why}})
            end;
        _ -> bad(K, V, "a POSIX extended regular expression (a string of at most "
                 ++ integer_to_list(?MAX_PATTERN_BYTES) ++ " bytes without NUL)")
    end;
check({width, V}, Acc) when is_integer(V), V >= 100, V =< 100000 -> Acc#{width => V};
check({width, V}, _) -> bad(width, V, "an integer between 100 and 100000 (pixels)");
check({min_width, V}, Acc) when is_number(V), V >= 0, V =< 1000 -> Acc#{min_width => V};
check({min_width, V}, _) -> bad(min_width, V, "a number of pixels between 0 and 1000");
%% Spans with the stacks (beamspy_telemetry): checked, and telemetry must
%% be loaded and running, before anything runs.
check({telemetry, V}, Acc) ->
    case beamspy_telemetry:check_prefixes(V) of
        ok ->
            case beamspy_telemetry:ready() of
                ok -> Acc#{telemetry => V};
                {error, _} = Error -> throw(Error)
            end;
        {error, _} = Error -> throw(Error)
    end;
check({telemetry_metadata, V}, Acc) ->
    case beamspy_telemetry:check_metadata(V) of
        ok -> Acc#{telemetry_metadata => V};
        {error, _} -> bad(telemetry_metadata, V, "a list of at most 16 telemetry metadata keys")
    end;
check({max_spans, V}, Acc) when is_integer(V), V > 0, V < (1 bsl 40) -> Acc#{max_spans => V};
check({max_spans, V}, _) -> bad(max_spans, V, "a positive integer (telemetry span starts recorded at most)");
check({palette, V}, Acc) when V =:= hot; V =:= beam -> Acc#{palette => V};
check({palette, V}, _) -> bad(palette, V, "hot or beam");
check({K, V}, _) -> throw({error, {unknown_option, K, V}}).

%% Text as UTF-8, refused if it holds a NUL: the NIF and the file system
%% take C strings, where a NUL would cut the text short.
text(V) when is_binary(V); is_list(V) ->
    try unicode:characters_to_binary(V) of
        B when is_binary(B) ->
            case binary:match(B, <<0>>) of
                nomatch -> {ok, B};
                _ -> error
            end;
        _ -> error
    catch error:badarg -> error
    end;
text(_) -> error.

%% An output is a file name with one of the known extensions, or a
%% directory. A name that looks like a file of another kind (x.png) is
%% refused unless it is an existing directory or ends in a slash: it would
%% otherwise become a directory the user did not ask for.
%%
%% Whether Out is acceptable as an output, given the extensions of the
%% formats at hand (`[{".folded", folded}, ...]', longest first).
-spec output_kind(string(), [{string(), atom()}]) -> ok | {unknown_extension, string()}.
output_kind(Out, Extensions) ->
    Ext = filename:extension(Out),
    case format_of(Out, Extensions) of
        {ok, _} -> ok;
        none when Ext =:= "" -> ok;
        none ->
            case lists:suffix("/", Out) orelse filelib:is_dir(Out)
                orelse not looks_like_extension(tl(Ext)) of
                true -> ok;
                false -> {unknown_extension, Ext}
            end
    end.

looks_like_extension(Ext) ->
    Ext =/= "" andalso length(Ext) =< 10
        andalso lists:all(fun(C) -> C >= $a andalso C =< $z orelse C >= $A andalso C =< $Z
                                        orelse C >= $0 andalso C =< $9 end, Ext).

%% Checks that need several options at once.
check_combined(#{output := Out, formats := Formats} = Opts, Given) ->
    case {format_of(Out, ?EXTENSIONS), maps:is_key(formats, Given)} of
        {{ok, F}, true} when Formats =/= [F] ->
            {error, {formats_with_file_output, Out, F, Formats}};
        _ -> {ok, Opts}
    end.

%% @doc The `output' option checked against a table of extensions (this
%% module's, or another front end's such as {@link beamspy_sequence}): the
%% name as a string, or a throw of `{error, Reason}'.
%%
%% ```
%% "/tmp/x.svg" = beamspy_opts:output_option(<<"/tmp/x.svg">>, beamspy_opts:extensions()).
%% '''
-spec output_option(term(), [{string(), atom()}]) -> string().
output_option([E | _] = V, _) when is_list(E); is_binary(E) ->
    %% A list of names would otherwise be taken as one name made of them all.
    bad(output, V, "one directory or file name (a string or a binary), not a list of them: for several "
                   "formats, name a directory and list them in formats");
output_option(V, Extensions) ->
    case text(V) of
        {ok, B} when B =/= <<>> ->
            Out = unicode:characters_to_list(B),
            case output_kind(Out, Extensions) of
                ok -> Out;
                {unknown_extension, Ext} -> throw({error, {bad_output_extension, Out, Ext}})
            end;
        _ -> bad(output, V, "a directory or a file name (a non-empty string without NUL)")
    end.

%% @doc The `formats' option checked against the formats at hand: the
%% formats sorted, or a throw of `{error, Reason}'.
%%
%% ```
%% [folded, svg] = beamspy_opts:formats_option([svg, folded], beamspy_opts:formats()).
%% '''
-spec formats_option(term(), [atom()]) -> [atom()].
formats_option(V, Formats) when is_list(V), V =/= [] ->
    case [F || F <- V, not lists:member(F, Formats)] of
        [] -> lists:usort(V);
        _ -> bad(formats, V, formats_expected(Formats))
    end;
formats_option(V, Formats) ->
    bad(formats, V, formats_expected(Formats)).

formats_expected(Formats) ->
    lists:flatten(["a non-empty list of ", lists:join(", ", [atom_to_list(F) || F <- Formats])]).

%% @doc The format an output file names by its extension, from a table of
%% extensions, or `none' (a directory).
%%
%% ```
%% {ok, svg} = beamspy_opts:file_format("x.SVG", beamspy_opts:extensions()).
%% '''
-spec file_format(string(), [{string(), atom()}]) -> {ok, atom()} | none.
file_format(Out, Extensions) ->
    format_of(Out, Extensions).

%% @doc A text option (a string or binary, valid Unicode, no NUL) as UTF-8.
%%
%% ```
%% {ok, <<"Flame">>} = beamspy_opts:text_option("Flame").
%% '''
-spec text_option(term()) -> {ok, binary()} | error.
text_option(V) ->
    text(V).

%% @doc What the NIF session needs from the options, given the outputs.
-spec nif_options(options(), [{beamspy:format(), string()}]) -> map().
nif_options(Opts, Outputs) ->
    Timeline = case maps:get(timeline, Opts) of
                   false -> 0;
                   N when is_integer(N) -> N;
                   auto ->
                       Wanted = [F || {F, _} <- Outputs, lists:member(F, ?TIMELINE_FORMATS)],
                       case Wanted =/= [] orelse maps:get(flamechart, Opts) of
                           true -> ?DEFAULT_TIMELINE_SPANS;
                           false -> 0
                       end
               end,
    Events = case maps:get(max_events, Opts) of
                 infinity -> 0;
                 E -> E
             end,
    Nif = (maps:with([max_memory, max_processes, sleep, gc, compensate, ignore, telemetry, telemetry_metadata,
                      max_spans], Opts))#{timeline => Timeline,
                                          max_events => Events,
                                          halt_hook => maps:get(until_halt, Opts, false)},
    case maps:get(mode, Opts, trace) of
        trace -> traced_times(Opts, Nif);
        %% Samples, not traced times: nothing to calibrate or compensate,
        %% no timeline of calls.
        cpu -> (maps:without([compensate], Nif))#{cpu => maps:get(cpu_hz, Opts), timeline => 0,
                                                 cpu_join => beamspy_cpu:join()}
    end.

%% Mode trace's self times: option times, where compensate => false (its
%% older spelling) turns the default compensated into raw. Samples: the
%% sampler runs beside the trace (cpu_times => Hz) and nothing is
%% calibrated.
traced_times(Opts, Nif) ->
    case {maps:get(times, Opts, compensated), maps:get(compensate, Opts, true)} of
        {samples, _} -> (maps:without([compensate], Nif))#{cpu_times => maps:get(cpu_hz, Opts)};
        {raw, _} -> Nif#{compensate => false};
        {compensated, _} -> Nif
    end.

%% @doc The rendering options the writers take (see c_src/nif/write_request.h).
-spec write_options(options()) -> map().
write_options(Opts) ->
    Render = maps:with([names, title, subtitle, width, min_width, inverted, flamechart,
                        palette, drop_sleep, collapse_recursion, include, exclude, timeline_cap, full], Opts),
    Render#{merge_processes => maps:get(merge, Opts) =:= true}.

bad(Key, Value, Expected) ->
    throw({error, {bad_option, Key, Value, Expected}}).

%% @doc Where each asked format goes: `[{Format, Path}]'. An `output' with a
%% known extension names one file and picks its format (`formats', if also
%% given, must be that one format); otherwise it is a directory, created if needed, and each file
%% is named from Label and the time.
-spec outputs(options(), string()) -> {ok, [{beamspy:format(), string()}]} | {error, term()}.
outputs(Opts, Label) ->
    outputs(Opts, Label, ?EXTENSIONS).

%% @doc The same for formats with other extensions (the sequence diagrams').
-spec outputs(#{output := string(), formats := [atom()], _ => _}, string(), [{string(), atom()}]) ->
          {ok, [{atom(), string()}]} | {error, term()}.
outputs(#{output := Out, formats := Formats}, Label, Extensions) ->
    case format_of(Out, Extensions) of
        {ok, Format} ->
            case filelib:ensure_dir(Out) of
                ok -> {ok, [{Format, Out}]};
                {error, Why} -> {error, {bad_output, filename:dirname(Out), Why}}
            end;
        none ->
            case filelib:ensure_path(Out) of
                ok ->
                    Base = filename:join(Out, file_base(Label)),
                    {ok, [{F, Base ++ extension(F, Extensions)} || F <- Formats]};
                {error, Why} ->
                    {error, {bad_output, Out, Why}}
            end
    end.

format_of(Path, Extensions) ->
    Lower = string:lowercase(Path),
    case [F || {Ext, F} <- Extensions, lists:suffix(Ext, Lower)] of
        [F | _] -> {ok, F};
        [] -> valgrind_name(filename:basename(Path), Extensions)
    end.

%% callgrind.out.<anything>: the name valgrind gives its callgrind files,
%% which KCachegrind lists by default.
valgrind_name("callgrind.out." ++ [_ | _], Extensions) ->
    case lists:keymember(callgrind, 2, Extensions) of
        true -> {ok, callgrind};
        false -> none
    end;
valgrind_name(_, _) ->
    none.

extension(F, Extensions) ->
    {Ext, F} = lists:keyfind(F, 2, Extensions),
    Ext.

file_base(Label) ->
    {{Y, Mo, D}, {H, Mi, S}} = calendar:local_time(),
    Safe = [case C of
                C when C >= $a, C =< $z; C >= $A, C =< $Z; C >= $0, C =< $9; C =:= $_ -> C;
                _ -> $_
            end || C <- Label],
    Unique = erlang:unique_integer([positive]) rem 10000,
    lists:flatten(io_lib:format("beamspy-~4..0w~2..0w~2..0w-~2..0w~2..0w~2..0w-~s-~w",
                                [Y, Mo, D, H, Mi, S, string:slice(Safe, 0, 40), Unique])).
