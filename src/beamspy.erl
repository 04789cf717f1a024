%%% @doc beamspy: exact flame graphs of BEAM code, recorded natively.
%%%
%%% `apply/2' runs a function while an `erl_tracer' NIF records every call,
%%% return and reschedule of the calling process (and, by default, of every
%%% process it spawns) on the scheduler threads; a C engine rebuilds the
%%% stacks and aggregates them as they happen, so nothing is sent as a
%%% message and memory grows with distinct stacks, never with events.
%%%
%%% ```
%%% 1> beamspy:apply({lists, sort, [[3, 1, 2]]}, #{output => "/tmp/sort.folded"}).
%%% beamspy: wrote /tmp/sort.folded
%%% [1,2,3]
%%% '''
%%%
%%% The result (or exception) of the call reaches the caller unchanged, and
%%% tracing is switched off and every trace pattern removed afterwards,
%%% whatever happens. Stacks are the stacks the VM really has: a call in
%%% tail position replaces its caller's frame, also when the compiler turned
%%% a body call into a tail call.
%%%
%%% == Options ==
%%% Given as a map or a proplist.
%%% <ul>
%%% <li>`output' — a directory (created if needed; one file per format, named
%%%   from the target and the time) or a file name whose extension picks the
%%%   format: `.folded', `.svg', `.html', `.speedscope.json', `.trace.json',
%%%   `.perf.txt', `.bspy', `.callgrind' (or valgrind's name
%%%   `callgrind.out.<anything>'), `.pb.gz' or `.pprof'. Any other extension (`x.png') is refused, unless
%%%   the name is an existing directory or ends in `/'. Default: the current
%%%   directory.</li>
%%% <li>`formats' — list of formats written to a directory output (by
%%%   default a page that opens in any browser). Default `[html]'. Given with a file output, it must be that file's one
%%%   format (else refused).</li>
%%% <li>`children' — also trace processes spawned by the call, each under its
%%%   own pid. Default `true' for `apply', `false' for a live session.</li>
%%% <li>`sleep' — charge time spent scheduled out to a leaf under the stack
%%%   it was spent in: `WAIT' (waiting in a `receive' for a message or its
%%%   timeout) or `RUNNABLE' (able to run but not running: preempted at the
%%%   end of its time slice, yielding, or rescheduled by tracing's own work).
%%%   `SLEEP' is scheduled-out time whose reason is not known (profiles read
%%%   from files). Default `true'.</li>
%%% <li>`gc' — charge garbage collection to a `GC' leaf. Default `false'.</li>
%%% <li>`show_idle' — a whole-VM session (`start(all, ...)') orders its
%%%   processes by running time and leaves their `WAIT' time out of the
%%%   outputs, whose notes say how much was left out; `true' keeps it.
%%%   Default `false'.</li>
%%% <li>`mode' — `trace': every call and return is traced (exact call
%%%   counts and stacks; times are traced times); `cpu': no call is
%%%   traced, the kernel samples the VM's scheduler threads (their CPU
%%%   time) and each sample is charged to the process the thread ran, with
%%%   its Erlang stack from the JIT's frame pointers and the VM's C
%%%   functions named: where the CPU time goes, at a small cost. Needs
%%%   Linux and a VM started with `+JPperf true' (refused with
%%%   `{cpu_unavailable, Why}' otherwise). Default `trace'.</li>
%%% <li>`cpu_hz' — with `mode => cpu', samples a second taken of each busy
%%%   scheduler thread (1 to 10000): each costs the thread some µs, 199 a
%%%   second about 1-2% of its throughput on a small VM. Default 199.</li>
%%% <li>`times' — what mode `trace''s self times are: `compensated'
%%%   (the tracer's calibrated cost subtracted, see `compensate'), `samples'
%%%   (the CPU sampler of mode `cpu' runs beside the trace at `cpu_hz';
%%%   each sample of a traced process goes to the innermost Erlang function
%%%   of its stack, a BIF's or the VM's C time to the function that called
%%%   it, and samples in the VM's trace code or beamspy's are the tracer's
%%%   cost, left out and reported; per process, each function's self time
%%%   is its samples, split over its call sites as the trace timed them;
%%%   call counts and stacks stay the trace's; no calibration; needs what
%%%   mode `cpu' needs, refused with `{cpu_unavailable, Why}' otherwise) or
%%%   `raw'. `compensate => false' with the default means `raw'. Default
%%%   `compensated'.</li>
%%% <li>`compensate' — subtract the tracer's own cost from traced times:
%%%   each traced event (call, return, reschedule) costs the traced process
%%%   a few hundred ns, which would otherwise be charged to the frames it
%%%   lands in and make often-called functions look slow. The tracer
%%%   callbacks' own time is measured and left out; the VM's part before
%%%   each callback is calibrated in a process of its own (a few
%%%   tens of ms, kept for a minute, see `beamspy_calibrate') and subtracted from the interval
%%%   each call or return ends (a reschedule's from the time scheduled
%%%   out), never below zero. Every output says what its times are
%%%   (compensated, by how much, or raw); `profile/2''s profile and
%%%   `stop/2''s reply hold it under `compensation'. Times shown are traced
%%%   times either way. `false' gives raw traced times. Default `true'.</li>
%%% <li>`max_memory' — bytes the recording may use; when reached, recording
%%%   stops and the profile is marked truncated. Default 256 MiB.</li>
%%% <li>`max_processes' — processes recorded at most. Default 10000.</li>
%%% <li>`max_events' — events (calls, returns, reschedules) recorded at most.
%%%   Default `infinity'.</li>
%%% <li>`max_duration' — milliseconds of recording at most. Default
%%%   `infinity' for `apply', 60000 for a live session.</li>
%%% <li>`timeline_cap' — calls at most in the time order of one speedscope or
%%%   Chrome trace file: the shallowest are kept (whole, properly nested),
%%%   the deepest left out, totals unchanged; the file and a warning on
%%%   standard error say how many. `auto' is 300000 for speedscope and
%%%   25000 for Chrome trace, what speedscope imports in under 30 s
%%%   (docs/benchmarks.md, Output sizes); `infinity' keeps every call
%%%   recorded (Perfetto reads far more). Default `auto'.</li>
%%% <li>`collapse_recursion' — fold recursion into one frame in every
%%%   output, time and calls kept exactly: `true' or `direct' (`f' calling
%%%   `f'), `all' (also `f -> g -> f': no frame twice on a stack; the
%%%   smallest output for compiler-like code). Default `false'.</li>
%%% <li>`full' — folded, perf, speedscope, Chrome trace and callgrind files
%%%   projected above 200 MB, more than viewers open (speedscope takes a
%%%   minute for 200 MB and cannot read 537 MB), are written with their
%%%   recursion folded (`direct', else `all') unless `collapse_recursion' is
%%%   given, and a warning says so with both sizes; `true' writes every
%%%   stack whole. Default `false'.</li>
%%% <li>`names' — `erlang' (`mod:fun/1') or `elixir' (`Mod.fun/1'). Default
%%%   `erlang'.</li>
%%% <li>`quiet' — do not print where files were written. Default `false'.
%%%   Warnings are printed on standard error all the same: a limit that
%%%   ended the recording early (which limit, after how long, how much was
%%%   recorded, and the option that raises it), a file that could not be
%%%   written, a timeline capped to what its viewer loads, a file
%%%   projected above 100 MB (with the options that shrink it), a file
%%%   written with its recursion folded because it was too big to open
%%%   (see `full'). {@link
%%%   profile/2} and {@link stop/2} also return them, as `warnings'.</li>
%%% <li>`open' — `apply': open the HTML (else SVG) written in the browser
%%%   ($BROWSER, else `xdg-open' with a display, `open' on macOS); where
%%%   there is none, say on standard error where the file is. Default
%%%   `false'.</li>
%%% <li>`include', `exclude' — keep only the stacks with a frame that
%%%   matches, or drop them: POSIX extended regular expressions (as the
%%%   writers match them; PCRE forms such as `(?i)' are refused up
%%%   front).</li>
%%% <li>`title', `subtitle' — text of the SVG and HTML pages (at most 511
%%%   bytes). Text options and `output' may not contain NUL.</li>
%%% <li>`ignore' — up to 8 local pids never recorded, even when they are
%%%   targets (the command-line tool's own processes). Default `[]'.</li>
%%% <li>`until_halt' — live sessions: when a traced process calls
%%%   `erlang:halt/0,1,2' or `init:stop/0,1', its tracer callback first stops
%%%   recording and writes the files (with labels refreshed every second), so
%%%   a recording runs to the very end of the VM (`beamspy run' uses it).
%%%   When a limit stopped the recording first, the halting process waits
%%%   for the profile up to the limit (or writes it), so it is never lost.
%%%   Default `false'.</li>
%%% <li>`output_directory', `output_format', `return' — eflambe's names, so
%%%   that calls written for `eflambe:apply/2' and `eflambe:capture/3' work
%%%   with the module renamed: `output_directory' is `output' as a
%%%   directory, `output_format' is `brendan_gregg' (folded), `perf' or
%%%   `svg', `return => value' is what `apply' does anyway (eflambe's
%%%   `flamegraph' and `filename' are refused). Refused beside `output' or
%%%   `formats'. beamspy's `capture/3' waits for the calls (eflambe's
%%%   returns at once, as `capture_async/3' does).</li>
%%% </ul>
%%%
%%% == Live sessions: profiling a running system ==
%%% {@link start/2} records processes that are already running, for as long
%%% as you like, and {@link stop/1} writes the files; {@link trace/3} does
%%% both for a given time; {@link sessions/0} shows what is being recorded.
%%%
%%% ```
%%% 1> {ok, S} = beamspy:start(my_server, #{output => "/tmp/my_server.svg"}).
%%% {ok,{beamspy_session,<0.95.0>,#Ref<0.1164725045.3523215361.81455>}}
%%% 2> beamspy:sessions().
%%% [#{caller => <0.88.0>,events => 48211,kind => live,memory => 7744,
%%%    targets => my_server,recording => true,truncated => false, ...}]
%%% 3> beamspy:stop(S).
%%% {ok,["/tmp/my_server.svg"]}
%%% 4> beamspy:trace(all, 5000, #{output => "/tmp/node", formats => [folded, html]}).
%%% {ok,["/tmp/node/beamspy-20250101-120000-all-17.folded",
%%%      "/tmp/node/beamspy-20250101-120000-all-17.html"]}
%%% '''
%%%
%%% Targets are those of `erlang:trace/3': a pid, a registered name, a list
%%% of them, `existing' (every process running now), `new' (every process
%%% spawned from now on) or `all' (both). beamspy's own processes are never
%%% traced. With `children => true' (default `false' here) the processes a
%%% target spawns are recorded too. Each process appears under its own pid
%%% and registered name (`<0.95.0> my_server').
%%%
%%% No event is lost at the start: when `start' returns, tracing is on for
%%% every target. A process that is already running is suspended for the
%%% few microseconds it takes to read its stack (`current_stacktrace', up to
%%% 64 frames: the `backtrace_depth' system flag is raised to 64 meanwhile),
%%% give that stack to the recorder and switch its tracing on, so that its
%%% first recorded frames are the ones it really has.
%%%
%%% === Limits ===
%%% A live session is bounded by default, in the way of `recon_trace':
%%% `max_duration' 60000 ms, `max_memory' 256 MiB,
%%% `max_processes' 10000 (a process table of 32 bytes per process is
%%% allocated up front). When one trips, tracing is switched off at once for
%%% every process and every trace pattern is removed; the files are written,
%%% with the profile marked truncated with the reason (SVG and HTML say
%%% "recording stopped early"; {@link stop/2} returns `truncated'); and the
%%% process that called `start' receives
%%% ```
%%% {beamspy, Session, {stopped, Reason, Files}}
%%% '''
%%% with Reason one of `max_duration', `max_events', `max_memory',
%%% `max_processes'. A later `stop(Session)' returns the same files. More
%%% existing processes than `max_processes' is refused up front with
%%% `{error, {too_many_processes, N, Max}}'.
%%%
%%% === Structure: why it is safe in production ===
%%% Each session is owned by a process of its own (see {@link
%%% beamspy_session}) that is never traced and that monitors the process
%%% that called `start'. Whatever ends the session — `stop', a limit, or the
%%% death of that process (a shell that goes away, a crashed caller) — the
%%% owner switches tracing off for every process the session traced
%%% (children included), resets the flags of `new' processes, removes every
%%% trace pattern (`on_load' included) and writes the files. The recording
%%% itself lives in the NIF and is freed when the owner is gone; nothing is
%%% sent as a message per event, so no mailbox grows.
%%%
%%% When one of these processes dies instead:
%%% <ul>
%%% <li>the caller of `start', `apply' or `capture': as above, its owner
%%%   cleans up and writes the files;</li>
%%% <li>the owner (killed, or crashed): a watchdog it started before setting
%%%   anything stops the recording, switches tracing off, resets `new' and
%%%   removes every pattern, a capture's meta pattern included, within one
%%%   pass over the process table. `stop' then returns `{error, {no_session,
%%%   Session}}'; `capture/3' returns, and a `capture_async/3' caller
%%%   receives, `{error, {session_failed, Reason}}'; `apply' still returns
%%%   its call's result;</li>
%%% <li>the watchdog: the owner starts another one;</li>
%%% <li>both at once: then, and only then, flags and patterns stay.</li>
%%% </ul>
%%% `start' itself is bounded by `max_duration': if switching tracing on
%%% takes longer, it is undone and `{error, {start_timeout, Ms}}' returned.
%%% Each existing target that has run is suspended while its stack is
%%% seeded; one that has not run yet (a node spawning without pause has
%%% thousands waiting for their first time slice) has no stack yet and is
%%% switched on as a process spawned afterwards would be.
%%% The test suite kills each of these processes at random moments and
%%% checks that every process, `new' and every function is left untraced.
%%%
%%% While a session runs, every function has a local call breakpoint (the
%%% way the VM traces calls), and each traced process pays for each call,
%%% return and reschedule it makes (about half a microsecond to a
%%% microsecond). Measured here on a 2-core VM running 10,000 processes
%%% that chat with each other: `start(all)' took 0.5-1.3 s, stopping took
%%% 0.1-0.8 s plus the time to write the files, and a process pinging
%%% another kept round trips far below 100 ms throughout.
%%%
%%% === Other tracers ===
%%% On OTP 25 and 26 a process has one tracer and trace patterns are
%%% node-wide, so, checked before anything is switched on:
%%% <ul>
%%% <li>a target traced by someone else (dbg, recon, a pid tracer) is
%%%   refused with `{error, {already_traced, Pid, Tracer}}'; for `all' and
%%%   `existing' any such process is, and the first one is named;</li>
%%% <li>`new' (or `all') is refused with `{error, {already_traced, new,
%%%   Tracer}}' when new processes already get another tracer;</li>
%%% <li>any process call-traced by another tracer is refused with `{error,
%%%   {call_traced, Pid, Tracer}}' (beamspy's patterns would change what that
%%%   tracer receives); `apply' refuses it too;</li>
%%% <li>only one beamspy recording runs at a time: `{error, {busy,
%%%   Owner}}'.</li>
%%% </ul>
%%% Nothing of the other tracer is touched. Beware only that beamspy sets,
%%% and at the end removes, the local call pattern of every function: local
%%% patterns someone set while no process was call-traced are gone
%%% afterwards. On OTP 27 and later a
%%% live session uses a dynamic trace session of its own
%%% (`trace:session_create/3'), so it coexists with other tracers and with
%%% other beamspy sessions; that path is not exercised by beamspy's test
%%% suite yet.
-module(beamspy).

%% What beamspy:start/2 calls (beamspy_session, beamspy_calibrate and
%% their callees) besides modules every node has loaded: see
%% load_start_modules/0.
-define(START_MODULES, [beamspy_opts, beamspy_session, beamspy_backend, beamspy_tracer, beamspy_jobs,
                        beamspy_watchdog, beamspy_calibrate, beamspy_telemetry, beamspy_report,
                        string, unicode_util, calendar, filelib, io_lib, io_lib_format, io_lib_pretty,
                        erl_scan, epp]).

-export([apply/1, apply/2, profile/2, render/2, render/3, check/2, format_error/1]).
-export([capture/3, capture_async/3]).
-export([start/2, stop/1, stop/2, trace/3, sessions/0]).
-export([sequence/2]).
-export([load/1, load/2, unload/1, unload/2]).
%% Internal: for beamspy_agent (jobs on a node return profiles as data).
-export([start_encoded/3, capture_encoded/4]).

-type format() :: folded | svg | html | speedscope | chrome | perf | bspy | callgrind | pprof.
-type target() :: beamspy_opts:target().
-type outcome() :: {return, term()} | {raise, error | exit | throw, term(), list()}.
-type profile() :: #{processes := [{binary(), [tree_node()]}],
                     truncated := false | max_memory | max_processes | max_events | max_duration,
                     events := non_neg_integer(),
                     dropped := non_neg_integer(),
                     memory_peak := non_neg_integer(),
                     duration_ns := non_neg_integer(),
                     compensation => map()}.
-type tree_node() :: {Id :: non_neg_integer(), Parent :: non_neg_integer() | undefined,
                      Frame :: binary(), SelfNs :: non_neg_integer(),
                      TotalNs :: non_neg_integer(), Calls :: non_neg_integer()}.
-type live_target() :: pid() | atom() | [pid() | atom()] | all | existing | new.
-type session() :: beamspy_session:handle().
%% What stop/2 returns: see its doc. `encoded' only for a session of
%% start_encoded/3 (internal).
-type stop_report() :: #{files := [string()], errors := [{string(), term()}],
                         truncated := false | atom(), recorded_ms := non_neg_integer(),
                         events := non_neg_integer(), memory_peak := non_neg_integer(),
                         processes := non_neg_integer(), limits := map(),
                         names := erlang | elixir, cleanup_ms := non_neg_integer(),
                         write_ms := non_neg_integer(), profile => profile(),
                         encoded => [{format(), {ok, binary()} | {error, term()}}]}.
-export_type([format/0, target/0, outcome/0, profile/0, tree_node/0, live_target/0, session/0,
              stop_report/0]).

%% @equiv apply(Target, #{})
-spec apply(target()) -> term().
apply(Target) ->
    ?MODULE:apply(Target, #{}).

%% @doc Calls Target, writes its flame graph, and returns what the call
%% returned (or raises what it raised, with the same stacktrace).
%%
%% Bad options or a bad target raise `{beamspy, Reason}' before anything
%% runs; {@link format_error/1} explains Reason. A second `apply' while one
%% is running raises `{beamspy, {busy, Owner}}'.
%%
%% ```
%% 1> beamspy:apply(fun() -> lists:seq(1, 3) end, [quiet, {output, "/tmp/seq.folded"}]).
%% [1,2,3]
%% '''
-spec apply(target(), map() | list()) -> term().
apply(Target, Opts) ->
    case run(Target, Opts, #{}) of
        {ok, Outcome, #{files := Files, errors := Errors} = Reply, Settings} ->
            beamspy_report:written(Files, Settings),
            beamspy_report:times(Reply, Settings),
            beamspy_report:errors(Errors),
            beamspy_report:warnings(Reply),
            beamspy_report:limit(Reply, maps:merge(report_options(Reply), Settings)),
            _ = [beamspy_open:files(Files) || maps:get(open, Settings)],
            return(Outcome);
        {error, Reason} ->
            erlang:error({beamspy, Reason}, [Target, Opts])
    end.

%% @doc Like {@link apply/2}, but returns the outcome and the recorded
%% profile instead of returning or raising. No file is written unless
%% `output' or `formats' is given. A limit that stopped the recording early
%% is said on standard error, as by `apply/2'.
%%
%% With `return => [Format, ...]' (`svg', `html', `folded', `speedscope',
%% `chrome', `perf', `bspy', `callgrind', `pprof') the result map also holds each
%% format's bytes under its name, rendered in memory by the same writers
%% (with the same rendering options) and nothing written: how a notebook
%% brings a flame graph back from a remote node through `erpc'. A format
%% that could not be rendered holds `{error, Reason}' instead.
%%
%% ```
%% 1> {ok, #{result := {return, 6}, profile := #{processes := [_]}}} =
%% 1>     beamspy:profile({lists, sum, [[1, 2, 3]]}, #{}).
%% 2> {ok, #{svg := <<"<?xml", _/binary>>, files := []}} =
%% 2>     beamspy:profile({lists, sum, [[1, 2, 3]]}, #{return => [svg]}).
%% '''
-spec profile(target(), map() | list()) ->
          {ok, #{result := outcome(), profile := profile(), files := [string()],
                 warnings := [binary()], format() => binary() | {error, term()}}} | {error, term()}.
profile(Target, Opts) ->
    Explicit = is_map(Opts) andalso (maps:is_key(output, Opts) orelse maps:is_key(formats, Opts))
        orelse is_list(Opts) andalso (proplists:is_defined(output, Opts) orelse proplists:is_defined(formats, Opts)),
    case run(Target, Opts, #{profile => true, write => Explicit}) of
        {ok, Outcome, #{files := Files, profile := Profile} = Reply, Settings} ->
            %% The profile says `truncated' too, but a user reading a flame
            %% graph made from it should not have to look.
            beamspy_report:limit(Reply, maps:merge(report_options(Reply), Settings)),
            beamspy_report:warnings(Reply),
            Encoded = maps:from_list([{F, case R of
                                              {ok, Bin} -> Bin;
                                              {error, _} = E -> E
                                          end} || {F, R} <- maps:get(encoded, Reply, [])]),
            {ok, maps:merge(Encoded, #{result => Outcome, profile => Profile, files => Files,
                                       warnings => maps:get(warnings, Reply, [])})};
        {error, _} = Error ->
            Error
    end.

%% @equiv render(Profile, Format, #{})
-spec render(profile(), format()) -> {ok, binary()} | {error, term()}.
render(Profile, Format) ->
    render(Profile, Format, #{}).

%% @doc Renders a profile already in hand (the `profile' that {@link
%% profile/2} returns, possibly taken from another node) in Format, in
%% memory, with the rendering options of {@link apply/2} (`title',
%% `subtitle', `palette', `width', `min_width', `inverted', `drop_sleep',
%% `include', `exclude', `merge'). Frame names stay as the profile spells
%% them; totals are computed again from the self times. The term is
%% checked: a malformed one gives `{error, {bad_profile, Why}}'.
%%
%% ```
%% 1> {ok, #{profile := P}} = beamspy:profile({lists, sort, [[3, 1, 2]]}, #{}).
%% 2> {ok, <<"<?xml", _/binary>>} = beamspy:render(P, svg, #{title => "sort"}).
%% '''
-spec render(profile(), format(), map() | list()) -> {ok, binary()} | {error, term()}.
render(Profile, Format, Opts0) ->
    case {lists:member(Format, beamspy_opts:formats()), beamspy_opts:options(Opts0)} of
        {false, _} ->
            Names = lists:join(", ", [atom_to_list(F) || F <- beamspy_opts:formats()]),
            {error, {bad_option, format, Format, lists:flatten(["one of " | Names])}};
        {true, {error, _} = Error} ->
            Error;
        {true, {ok, Opts}} when is_map(Profile) ->
            beamspy_tracer:profile_render(Profile, Format, write_meta(Opts, "beamspy:render/3"));
        {true, {ok, _}} ->
            {error, {bad_profile, <<"not a profile: a map with processes => [...] is expected">>}}
    end.

%% @doc Checks a target and options the way {@link apply/2} does, without
%% running anything. Front ends (such as the Elixir `BeamSpy') use it to
%% report bad input in their own terms.
%%
%% ```
%% 1> beamspy:check({lists, sort, [[2, 1]]}, #{sleep => false}).
%% ok
%% 2> {error, {bad_option, sleep, 1, _}} = beamspy:check({lists, sort, [[]]}, #{sleep => 1}).
%% '''
-spec check(target(), map() | list()) -> ok | {error, term()}.
check(Target, Opts) ->
    case validate(Target, Opts) of
        {ok, _, _, _} -> ok;
        {error, _} = Error -> Error
    end.

%% @doc Profiles the next `N' calls of `M:F/Arity', made by any process
%% (or only by the processes in option `pids'), each from the moment of the
%% call to its return. Nothing is recompiled or mocked: a meta trace pattern
%% switches tracing on in exactly the calling process at exactly that call,
%% and off again when the call returns.
%%
%% Options are those of {@link apply/2}, plus `timeout' (milliseconds to
%% wait for the N calls; default 30000; then what was captured is written;
%% it bounds the whole call, writing included: capture returns within
%% `timeout' plus the time to write the merged profile, and the tracer's
%% first calibration on the VM, at most 6 s once a minute; per-call profiles
%% not written by then are left out and counted on standard error),
%% `merge' (`false': one profile per call; `true': one profile of all calls
%% merged; default `both'), and `pids'. Files are named `<name>-call<K>.<ext>'
%% and `<name>-merged.<ext>'. Returns once N calls were captured or the
%% timeout passed. A function that does not exist, or whose module cannot be
%% loaded, is an error before anything is traced.
%%
%% ```
%% 1> {ok, Files} = beamspy:capture({my_server, handle_call, 3}, 3, #{output => "/tmp/calls"}).
%% '''
-spec capture(mfa(), pos_integer(), map() | list()) -> {ok, [string()]} | {error, term()}.
capture(MFA, N, Opts) ->
    case start_capture(MFA, N, Opts, true) of
        {ok, Ref, Owner} ->
            Result = beamspy_capture:await(Ref, Owner),
            %% Sent before the result, by the same process: here already.
            receive
                {beamspy_capture_report, Ref, Report} -> report_limit(Report)
            after 0 -> ok
            end,
            Result;
        {error, _} = Error -> Error
    end.

%% @doc Like {@link capture/3} but returns `{ok, Ref}' as soon as tracing is
%% on; the caller later receives `{beamspy_capture, Ref, {ok, Files} |
%% {error, Reason}}'. With option `report_limit => true', a limit that ended
%% the capture early is told first, as `{beamspy_capture_report, Ref,
%% Report}' (Report as {@link stop/2} returns it: `truncated',
%% `recorded_ms', `events', `memory_peak', `processes', `limits'); nothing
%% is printed.
-spec capture_async(mfa(), pos_integer(), map() | list()) -> {ok, reference()} | {error, term()}.
capture_async(MFA, N, Opts) ->
    case start_capture(MFA, N, Opts, false, files) of
        {ok, Ref, _Owner} -> {ok, Ref};
        {error, _} = Error -> Error
    end.

%% @private
%% @doc {@link capture_async/3} that writes no file: the result is
%% `{ok, #{calls => K, outputs => [{merged | {call, K}, Format, Binary}]}}',
%% each profile in each of Formats encoded in memory by the NIF (the bytes
%% its file would hold). For beamspy_agent: a job on a node writes nothing
%% there.
-spec capture_encoded(mfa(), pos_integer(), map() | list(), [format()]) ->
          {ok, reference()} | {error, term()}.
capture_encoded(MFA, N, Opts, Formats) ->
    case check_encode(Formats) of
        ok ->
            case start_capture(MFA, N, Opts, false, Formats) of
                {ok, Ref, _Owner} -> {ok, Ref};
                {error, _} = Error -> Error
            end;
        {error, _} = Error -> Error
    end.

%% Formats to encode in memory: a non-empty list of known formats.
check_encode([_ | _] = Formats) ->
    case [F || F <- Formats, not lists:member(F, beamspy_opts:formats())] of
        [] -> ok;
        Bad -> {error, {bad_option, encode, Bad, "formats beamspy writes"}}
    end;
check_encode(Other) ->
    {error, {bad_option, encode, Other, "a non-empty list of formats"}}.

%% Outputs of a session: files, or none when its profile is encoded in
%% memory (Formats); the NIF's options still follow the formats asked.
outputs_for(Opts, Label, files) ->
    case beamspy_opts:outputs(Opts, Label) of
        {ok, Outputs} -> {ok, Outputs, Outputs};
        {error, _} = Error -> Error
    end;
outputs_for(_Opts, _Label, Formats) ->
    {ok, [], [{F, memory} || F <- Formats]}.

with_encode(Start, files) -> Start;
with_encode(Start, Formats) -> Start#{encode => Formats}.

start_capture(MFA, N, Opts, Report) ->
    start_capture(MFA, N, Opts, Report, files).

start_capture(MFA, N, Opts0, Report, Encode) when is_integer(N), N > 0 ->
    Defaults = #{timeout => 30000, merge => both},
    case {beamspy_capture:check_function(MFA), beamspy_opts:options(Opts0)} of
        {ok, {ok, #{times := samples}}} ->
            %% A capture's profiles are cut at each call's bounds: samples,
            %% taken beside the whole recording, are not.
            {error, {bad_option, times, samples, "compensated or raw (capture/3 keeps traced times)"}};
        {ok, {ok, Opts1}} ->
            Opts = maps:merge(Defaults, maps:filter(fun(K, _) -> maps:is_key(K, given(Opts0)) end, Opts1)),
            Full = maps:merge(Opts1, Opts),
            {M, F, A} = MFA,
            Label = lists:flatten(io_lib:format("~tw_~tw_~w", [M, F, A])),
            case outputs_for(Full, Label, Encode) of
                {ok, Outputs, Formats} ->
                    Start0 = #{nif => beamspy_opts:nif_options(Full, Formats),
                              outputs => Outputs,
                              write => write_meta(Full, io_lib:format("beamspy:capture(~tw:~tw/~w)", [M, F, A])),
                              timeout => maps:get(timeout, Full), merge => maps:get(merge, Full),
                              children => maps:get(children, Full), gc => maps:get(gc, Full),
                              pids => maps:get(pids, Full, all),
                              report => Report orelse maps:get(report_limit, Full, false),
                              limits => limits(Full)},
                    Start = with_encode(Start0, Encode),
                    %% If the owner dies, its watchdog tells the caller.
                    beamspy_capture:start(self(), MFA, N, Start);
                {error, _} = Error ->
                    Error
            end;
        {{error, _} = Error, _} -> Error;
        {ok, {error, _} = Error} -> Error
    end;
start_capture(_MFA, N, _Opts, _Report, _Encode) ->
    {error, {bad_option, calls, N, "a positive integer"}}.

given(Opts) when is_map(Opts) -> Opts;
given(Opts) when is_list(Opts) -> maps:from_list([case E of {K, V} -> {K, V}; K -> {K, true} end || E <- Opts]).

%% A whole-VM session (`all'): processes by running time, and the time they
%% spent waiting for messages left out unless show_idle (the outputs' notes
%% say how much).
whole_vm(#{existing := all, new := true}, Opts, Write) ->
    Write#{order_by_cpu => true, drop_wait => not maps:get(show_idle, Opts)};
whole_vm(_Norm, _Opts, Write) ->
    Write.

write_meta(Opts, Source) ->
    (beamspy_opts:write_options(Opts))#{
      node => atom_to_binary(node()),
      otp_release => list_to_binary(erlang:system_info(otp_release)),
      source => unicode:characters_to_binary(Source),
      options_text => unicode:characters_to_binary(io_lib:format("~0tp", [maps:remove(output_given, Opts)])),
      start_unix_us => os:system_time(microsecond)}.

%% @doc Calls Target with a seq_trace token and draws the messages of its
%% flow as a sequence diagram: every message any process sends while it
%% holds the token (the token travels with each message, from process to
%% process and node to node), on this node and on the connected nodes it
%% reaches. Returns what Target returned (or raises what it raised, with
%% the same stacktrace); Target is any form {@link apply/2} takes and runs
%% in the calling process.
%%
%% Sends and receives are paired and ordered by the token's serial numbers
%% (a Lamport clock), not by the nodes' clocks; each message appears once.
%% Every node in `nodes' gets a collector as its seq_trace system tracer
%% for the time of the call (beamspy's `beamspy_seq_collector' module is loaded onto
%% nodes that lack it and removed afterwards); a node that already has a
%% system tracer is refused with `{beamspy, {system_tracer_in_use, Node,
%% Tracer}}' before anything runs. The token is reset and the tracers given
%% back after the call, whatever happens; if the caller dies, the
%% collectors see it and give the tracers back themselves. Processes that
%% received the token keep it until their next message without one, but
%% with no system tracer of beamspy's their events go nowhere.
%%
%% Options (a map or a proplist):
%% <ul>
%% <li>`output' — a directory (one file per format, named from the target
%%   and the time) or a file whose extension picks the format: `.mmd'
%%   (Mermaid), `.seq.svg' (SVG, the full message on hover), `.trace.json'
%%   (Chrome trace with flow arrows, for Perfetto), `.json' (for scripts).
%%   Default: the current directory.</li>
%% <li>`formats' — formats written to a directory: `mermaid', `svg',
%%   `chrome', `json'. Default `[mermaid]'.</li>
%% <li>`nodes' — `connected' (this node and `nodes()', default), `local',
%%   or a list of node names.</li>
%% <li>`keep_noise' — keep messages of the code server, the loader,
%%   logger and the I/O protocol. Default `false'.</li>
%% <li>`include', `exclude' — POSIX extended regular expressions: keep
%%   only, or drop, messages whose text or either process label (`node pid
%%   name') matches.</li>
%% <li>`max_events' — events kept (default 10000, at most 1000000);
%%   `max_participants' — processes drawn each in its own column (default
%%   40; the others of a node share one "other processes" column);
%%   `label_chars' — characters of a message label in the diagrams (default
%%   60; the JSON and the SVG's hover hold the message up to 1024
%%   bytes). Hitting a cap is said on standard error.</li>
%% <li>`settle' — after the call, wait until no event came for this many
%%   ms (default 100; messages still on their way), at most `timeout' ms
%%   (default 5000).</li>
%% <li>`title', `quiet' — as for {@link apply/2}.</li>
%% <li>`names' — how processes are named: `erlang' (`my_server',
%%   `my_worker:init/1') or `elixir' (`MyApp.Server', `MyApp.Worker.init/1');
%%   default `erlang' (`elixir' from `BeamSpy.sequence/2').</li>
%% </ul>
%%
%% ```
%% 1> beamspy:sequence(fun() -> gen_server:call({chain, 'b@host'}, ping) end,
%% 1>                  #{output => "/tmp/ping.mmd"}).
%% beamspy: wrote /tmp/ping.mmd
%% pong
%% '''
-spec sequence(target(), map() | list()) -> term().
sequence(Target, Opts) ->
    case beamspy_sequence:run(Target, Opts) of
        {ok, Outcome, #{files := Files, errors := Errors} = Reply} ->
            Given = given(Opts),
            Norm = #{quiet => maps:get(quiet, Given, false),
                     max_events => maps:get(max_events, Given, beamspy_opts:default(sequence_max_events)),
                     max_participants => maps:get(max_participants, Given,
                                                  beamspy_opts:default(sequence_max_participants))},
            beamspy_report:written(Files, Norm),
            beamspy_report:errors(Errors),
            beamspy_report:sequence_caps(Reply, Norm),
            return(Outcome);
        {error, Reason} ->
            erlang:error({beamspy, Reason}, [Target, Opts])
    end.

%% @doc A sentence for every reason beamspy raises or returns.
-spec format_error(term()) -> string().
format_error(R) when R =:= telemetry_not_loaded; element(1, R) =:= telemetry_not_started;
                     element(1, R) =:= bad_prefixes; element(1, R) =:= duplicate_prefix;
                     element(1, R) =:= attach_failed ->
    beamspy_telemetry:format_error(R);
format_error({cpu_unavailable, Why}) ->
    flat("CPU sampling (mode cpu) is not available here: ~ts", [Why]);
format_error({bad_function, {undef, {M, F, A}}}) ->
    flat("~ts does not exist", [mfa_text(M, F, A)]);
format_error({bad_function, {not_loaded, M, Why}}) ->
    flat("module ~tw is not loaded and cannot be loaded (~tw)", [M, Why]);
format_error({bad_function, Other}) ->
    flat("~tw is not a function: use {Module, Function, Arity}", [Other]);
format_error({no_calls_captured, timeout}) ->
    "no call was captured before the timeout";
format_error({no_calls_captured, Limit})
  when Limit =:= max_events; Limit =:= max_memory; Limit =:= max_processes; Limit =:= max_duration ->
    flat("the ~w limit stopped the recording before any captured call returned: raise it", [Limit]);
format_error({no_calls_captured, Why}) ->
    flat("no call was captured (~tw)", [Why]);
format_error({bad_target, {wrong_arity, N, Got}}) ->
    flat("the target fun takes ~w argument~s but ~w ~s given",
         [N, plural(N), Got, case Got of 1 -> "was"; _ -> "were" end]);
format_error({bad_target, {undef, {M, F, A}}}) ->
    flat("~ts is not an exported function", [mfa_text(M, F, A)]);
format_error({bad_target, T}) ->
    flat("~tw is not a target: use fun(), {Fun, Args} or {Module, Function, Args}", [T]);
format_error({bad_pattern, K, Pattern, Why}) ->
    flat("option ~tw: ~ts does not compile as a POSIX extended regular expression (~ts); "
         "PCRE forms such as (?i), \\d or lazy quantifiers are not supported", [K, Pattern, Why]);
format_error({bad_output_extension, Out, Ext}) ->
    flat("output ~ts: beamspy writes no ~ts files; use one of ~ts, or a directory (an existing "
         "one, a name without an extension, or a name ending in /)",
         [Out, Ext, lists:join(", ", [E || {E, _} <- beamspy_opts:extensions()])]);
format_error({formats_with_file_output, Out, F, Formats}) ->
    flat("output ~ts is a file, which holds one format (~w), but formats ~w was given: give a "
         "directory as output to write several formats", [Out, F, Formats]);
format_error({bad_option, K, V, Expected}) ->
    flat("option ~tw must be ~ts, got ~tw", [K, Expected, V]);
format_error({conflicting_options, Eflambe, Own}) ->
    flat("options ~tw (eflambe's name) and ~tw say the same thing: give one of them",
         [Eflambe, Own]);
format_error({unknown_option, K, _}) ->
    flat("unknown option ~tw", [K]);
format_error({bad_options, O}) ->
    flat("options must be a map or a proplist, got ~tw", [O]);
format_error({bad_output, Out, Why}) ->
    flat("cannot use ~ts as output directory: ~ts", [Out, file:format_error(Why)]);
format_error({busy, {unloading, Node}}) ->
    flat("beamspy's code is being unloaded from ~tw by another call: nothing of beamspy starts "
         "there until that is done", [Node]);
format_error({busy, {jobs_running, Node, Jobs}}) ->
    flat("beamspy still runs on ~tw (~ts): its code is not removed under a running job; stop "
         "them first (beamspy:stop/1, or let them end), then unload",
         [Node, lists:join(", ", [flat("~tw ~w", [Kind, Pid]) || {Kind, Pid} <- Jobs])]);
format_error({busy, Owner}) ->
    flat("another beamspy recording (owner ~w) is running; on this OTP release trace "
         "patterns are node-wide, so only one can run at a time", [Owner]);
format_error({already_traced, new, Tracer}) ->
    flat("processes spawned from now on (new) are already traced by ~tw; beamspy does not "
         "take over another tracer", [Tracer]);
format_error({already_traced, Pid, Tracer}) ->
    flat("~w is already traced by ~tw; beamspy does not take over another tracer", [Pid, Tracer]);
format_error({call_traced, Pid, Tracer}) ->
    flat("~w is call-traced by ~tw; on this OTP release trace patterns are node-wide, so "
         "beamspy would change what that tracer receives: stop it first", [Pid, Tracer]);
format_error({bad_targets, T}) ->
    flat("~tw is not something to trace: use a local pid, a registered name, a list of "
         "them, all, existing or new", [T]);
format_error({noproc, T}) when is_atom(T) ->
    flat("no process is registered as ~tw", [T]);
format_error({noproc, T}) ->
    flat("process ~tw is not alive", [T]);
format_error({too_many_processes, N, Max}) ->
    flat("~w processes to trace but max_processes is ~w: raise max_processes or trace fewer",
         [N, Max]);
format_error({start_timeout, Ms}) ->
    flat("switching tracing on took longer than max_duration (~w ms); nothing is left traced", [Ms]);
format_error(too_many_sessions) ->
    "too many beamspy sessions are waiting to be stopped: stop some first";
format_error({no_session, Session}) ->
    flat("~tw is not running any more (stopped already, or its caller died)", [Session]);
format_error({write_failed, Errors}) ->
    flat("could not write ~ts", [lists:join(", ", [flat("~ts (~tw)", [P, E]) || {P, E} <- Errors])]);
format_error({session_failed, Why}) ->
    flat("the beamspy session process failed: ~tw", [Why]);
format_error({system_tracer_in_use, Node, Tracer}) ->
    flat("node ~tw already has a seq_trace system tracer (~tw); beamspy does not take it over: "
         "reset it (seq_trace:set_system_tracer(false)) or leave that node out with option nodes",
         [Node, Tracer]);
format_error({already_in_sequence, Token}) ->
    flat("the calling process already holds a seq_trace token (~tw): reset it first", [Token]);
format_error({node_failed, Node, Why}) ->
    flat("could not start a seq_trace collector on ~tw: ~tw", [Node, Why]);
format_error({cannot_load, Node, Why}) ->
    flat("could not load beamspy_seq_collector onto ~tw: ~tw", [Node, Why]);
format_error({bad_profile, Why}) ->
    flat("not a profile beamspy can render: ~ts", [Why]);
format_error({nodedown, Node}) ->
    flat("node ~tw cannot be reached (is it up, with the same cookie?)", [Node]);
format_error({timeout, Node}) ->
    flat("node ~tw did not answer in time", [Node]);
format_error({incompatible_node, Node, There, Here}) ->
    flat("node ~tw runs ~ts but this beamspy was built for ~ts: its NIF cannot be loaded there "
         "(load beamspy from a node of that release and architecture)", [Node, There, Here]);
format_error({no_object_code, M}) ->
    flat("the object code of ~tw is not in the code path of this node", [M]);
format_error({no_nif_library, Path, Why}) ->
    flat("cannot read beamspy's NIF library ~ts: ~ts", [Path, file:format_error(Why)]);
format_error({remote_file, Node, Path, Why}) ->
    flat("on ~tw, ~ts: ~ts", [Node, Path, file:format_error(Why)]);
format_error({remote_load, Node, M, Why}) ->
    flat("on ~tw, module ~tw did not load: ~tw", [Node, M, Why]);
format_error({remote_call, Node, {M, F, A}, {Class, Reason}}) ->
    flat("on ~tw, ~tw:~tw/~w failed: ~tw:~tw", [Node, M, F, A, Class, Reason]);
format_error({nothing_loaded, Node}) ->
    flat("beamspy:load/1 loaded nothing onto ~tw (or it was unloaded already)", [Node]);
format_error(Other) ->
    flat("~tw", [Other]).

flat(Format, Args) ->
    lists:flatten(io_lib:format(Format, Args)).

plural(1) -> "";
plural(_) -> "s".

mfa_text(M, F, A) ->
    case atom_to_list(M) of
        "Elixir." ++ Name -> flat("~ts.~ts/~w", [Name, atom_to_list(F), A]);
        _ -> flat("~tw:~tw/~w", [M, F, A])
    end.

%%% ---------------------------------------------------------------------
%%% Running a call under trace
%%% ---------------------------------------------------------------------

run(Target, Opts0, Finish) ->
    maybe_run(validate(Target, Opts0), Finish).

validate(Target, Opts0) ->
    case beamspy_opts:target(Target) of
        {ok, Fun, Args} ->
            case beamspy_opts:options(Opts0) of
                {ok, Opts} -> {ok, Fun, Args, Opts};
                Error -> Error
            end;
        Error ->
            Error
    end.

maybe_run({error, _} = Error, _) ->
    Error;
maybe_run({ok, _, _, #{return := Return}}, Finish) when not is_map_key(profile, Finish) ->
    {error, {bad_option, return, Return, "given to profile/2 only (apply/2 returns the call's own result)"}};
maybe_run({ok, Fun, Args, Opts}, Finish) ->
    Write = maps:get(write, Finish, true),
    case not_traced(self()) of
        ok when Write ->
            case beamspy_opts:outputs(Opts, label(Fun)) of
                {ok, Outputs} -> traced_call(Fun, Args, Opts, Outputs, Finish);
                Error -> Error
            end;
        ok ->
            traced_call(Fun, Args, Opts, [], Finish);
        Error ->
            Error
    end.

not_traced(Pid) ->
    case {whereis(beamspy_active_session), erlang:trace_info(Pid, tracer)} of
        {Owner, _} when is_pid(Owner) -> {error, {busy, Owner}};
        {undefined, {tracer, []}} -> beamspy_backend:conflicts(legacy, [Pid], false);
        {undefined, {tracer, Tracer}} -> {error, {already_traced, Pid, Tracer}}
    end.

traced_call(Fun, Args, Opts, Outputs, Finish) ->
    NifOpts = case beamspy_opts:nif_options(Opts, Outputs) of
                  #{cpu_join := registers} = N -> N#{cpu_pids => [self()]}; % the caller (cpu_session.c)
                  N -> N
              end,
    WriteOpts = write_meta(Opts, ["beamspy:apply(", describe(Fun), ")"]),
    StartOpts0 = #{nif => NifOpts, outputs => Outputs, write => WriteOpts,
                   max_duration => maps:get(max_duration, Opts), limits => limits(Opts)},
    %% return => Formats: the session encodes the profile in memory too.
    StartOpts = case maps:get(return, Opts, []) of
                    [] -> StartOpts0;
                    Return -> StartOpts0#{encode => Return}
                end,
    case beamspy_session:start(self(), StartOpts) of
        {ok, Owner, Session} ->
            Outcome = call_traced(Fun, Args, Session, Owner, Opts),
            %% The outcome is never lost: if the owner failed while writing,
            %% the call's result still goes back and the failure is reported.
            case beamspy_session:finish(Owner, Finish) of
                {ok, Reply} ->
                    {ok, Outcome, Reply, Opts};
                {error, Why} ->
                    Files = #{files => [], errors => [{"(session)", Why}]},
                    Profile = case maps:get(profile, Finish, false) of
                                  true -> #{profile => beamspy_tracer:session_profile(Session, #{})};
                                  false -> #{}
                              end,
                    {ok, Outcome, maps:merge(Files, Profile), Opts}
            end;
        {error, _} = Error ->
            Error
    end.

%% The call runs in the caller's own process, so self(), the process
%% dictionary and the mailbox are the caller's. Our own frames are not
%% traced (the session excludes this module), so the profile starts at Fun.
call_traced(Fun, Args, Session, Owner, Opts) ->
    Flags = trace_flags(Opts, #{existing => [self()], new => false}),
    try
        _ = erlang:trace(self(), true, [{tracer, beamspy_tracer, Session} | Flags]),
        try {return, erlang:apply(Fun, Args)}
        catch Class:Reason:Stack -> {raise, Class, Reason, Stack}
        end
    after
        ok = beamspy_tracer:session_stop(Session),
        _ = erlang:trace(self(), false, [all]),
        case is_process_alive(Owner) of
            true -> ok;
            false -> beamspy_session:cleanup(Session)
        end
    end.

describe(Fun) ->
    {module, M} = erlang:fun_info(Fun, module),
    {name, F} = erlang:fun_info(Fun, name),
    {arity, A} = erlang:fun_info(Fun, arity),
    io_lib:format("~tw:~tw/~w", [M, F, A]).

return({return, Value}) -> Value;
return({raise, Class, Reason, Stack}) -> erlang:raise(Class, Reason, Stack).

label(Fun) ->
    case erlang:fun_info(Fun, type) of
        {type, external} ->
            {module, M} = erlang:fun_info(Fun, module),
            {name, F} = erlang:fun_info(Fun, name),
            atom_to_list(M) ++ "_" ++ atom_to_list(F);
        {type, local} ->
            {module, M} = erlang:fun_info(Fun, module),
            atom_to_list(M)
    end.

%%% ---------------------------------------------------------------------
%%% Live sessions: processes that are already running
%%% ---------------------------------------------------------------------

%% @doc Starts recording processes that are already running (or about to
%% be spawned), and returns as soon as their tracing is on. Targets: a pid,
%% a registered name, a list of them, `all' (every process but beamspy's
%% own, and every process spawned from now on), `existing' or `new'
%% (`erlang:trace/3' semantics). Options are those of {@link apply/2} with
%% safer defaults: `max_duration' 60000 ms,
%% `max_memory' 256 MiB, `max_processes' 10000, `children' `false'. See the
%% module documentation ("Live sessions") for the limits, the message sent
%% when one trips, and what is refused.
%%
%% ```
%% 1> {ok, S} = beamspy:start(my_server, #{output => "/tmp/my_server.svg"}).
%% {ok,{beamspy_session,<0.91.0>,#Ref<0.1.2.3>}}
%% 2> beamspy:stop(S).
%% {ok,["/tmp/my_server.svg"]}
%% '''
-spec start(live_target(), map() | list()) -> {ok, session()} | {error, term()}.
start(Targets, Opts0) ->
    start_live(Targets, Opts0, files).

%% @private
%% @doc {@link start/2} for a session that writes no file, not even when a
%% limit trips or its caller dies: {@link stop/2} returns its profile in
%% each of Formats, encoded in memory by the NIF (the bytes its file would
%% hold), as `encoded => [{Format, {ok, Binary} | {error, Reason}}]'. For
%% beamspy_agent: a job on a node writes nothing there.
-spec start_encoded(live_target(), map() | list(), [format()]) -> {ok, session()} | {error, term()}.
start_encoded(Targets, Opts0, Formats) ->
    case check_encode(Formats) of
        ok -> start_live(Targets, Opts0, Formats);
        {error, _} = Error -> Error
    end.

%% The caller runs at high priority until the session is on, as its owner
%% does while setting up: on a node where processes spawn without pause,
%% thousands are runnable at normal priority, and a caller among them took
%% seconds to check its options and, once the owner had replied, to be
%% scheduled again to read the reply.
start_live(Targets, Opts0, Encode) ->
    Priority = process_flag(priority, high),
    try
        ok = load_start_modules(),
        start_live_high(Targets, Opts0, Encode)
    after process_flag(priority, Priority)
    end.

%% The modules a start needs, loaded in one batch when some are not loaded
%% yet: the code server and the loader run at normal priority, and on a
%% node of thousands of runnable processes each request to them waits its
%% turn among all of those (loading them one by one, as each was first
%% called, took start(all) tens of seconds there). Those that fail to load
%% fail again when called, with the usual error.
load_start_modules() ->
    Modules = ?START_MODULES ++ [trace || list_to_integer(erlang:system_info(otp_release)) >= 27],
    case lists:all(fun erlang:module_loaded/1, Modules) of
        true -> ok;
        false -> _ = code:ensure_modules_loaded(Modules), ok
    end.

start_live_high(Targets, Opts0, Encode) ->
    case {beamspy_opts:live_targets(Targets), beamspy_opts:options(Opts0, live)} of
        {{ok, Norm}, {ok, Opts}} ->
            case outputs_for(Opts, live_label(Targets), Encode) of
                {ok, Outputs, Formats} ->
                    start_live(Targets, Norm, Opts, {Outputs, Formats, Encode}, explicit_output(Opts0));
                {error, _} = Error -> Error
            end;
        {{error, _} = Error, _} -> Error;
        {_, {error, _} = Error} -> Error
    end.

%% @doc Stops a session started by {@link start/2}: switches tracing off for
%% every traced process, removes every trace pattern, writes the files and
%% returns their paths. After a limit tripped, returns the files written
%% then. `{error, {no_session, Session}}' if it has already ended.
%%
%% ```
%% 1> {ok, S} = beamspy:start(all, #{output => "/tmp/node", formats => [folded, html]}).
%% 2> timer:sleep(1000), beamspy:stop(S).
%% {ok,["/tmp/node/beamspy-20250101-120000-all-42.folded",
%%      "/tmp/node/beamspy-20250101-120000-all-42.html"]}
%% '''
-spec stop(session()) -> {ok, [string()]} | {error, term()}.
stop(Session) ->
    case stop(Session, #{}) of
        {ok, #{files := Files, errors := []} = Report} ->
            report_limit(Report),
            {ok, Files};
        {ok, #{errors := Errors} = Report} ->
            report_limit(Report),
            {error, {write_failed, Errors}};
        {error, _} = Error -> Error
    end.

%% stop/1 and trace/3 return only files: a limit that cut the recording
%% short is said on standard error (stop/2 returns it as `truncated').
report_limit(Report) ->
    beamspy_report:warnings(Report),
    beamspy_report:limit(Report, report_options(Report)).

report_options(Report) ->
    (maps:get(limits, Report, #{}))#{names => maps:get(names, Report, erlang)}.

%% @doc Like {@link stop/1}, but returns everything: `files', `errors'
%% (`[{Path, Reason}]'), `warnings' (what the writers said about the files,
%% as printed on standard error: a timeline capped for its viewer, a file
%% projected above 100 MB), `truncated' (`false' or the limit that tripped),
%% what was recorded (`recorded_ms', `events', `memory_peak' in bytes,
%% `processes'), the `limits' in force, `names' (`erlang' or `elixir'),
%% `cleanup_ms' and `write_ms' (how long switching tracing off everywhere
%% and writing the files took) and, with `#{profile => true}', `profile'
%% (the term {@link profile/2} returns). With `profile => true' files are only written if `output' or
%% `formats' was given to {@link start/2}.
%%
%% ```
%% 1> {ok, S} = beamspy:start(self(), #{}).
%% 2> lists:sort([3, 1, 2]).
%% 3> {ok, #{profile := #{processes := [{_Self, _Tree}]}}} = beamspy:stop(S, #{profile => true}).
%% '''
-spec stop(session(), #{profile => boolean()}) -> {ok, stop_report()} | {error, term()}.
stop(Session, Opts) when is_map(Opts) ->
    case {beamspy_session:owner(Session), maps:get(profile, Opts, false)} of
        {_, Other} when not is_boolean(Other) ->
            {error, {bad_option, profile, Other, "true or false"}};
        {error, _} ->
            {error, {no_session, Session}};
        {{ok, Owner}, Profile} ->
            case beamspy_session:finish(Owner, #{profile => Profile}) of
                %% normal: another stop got there first.
                {error, {session_failed, Why}} when Why =:= noproc; Why =:= normal ->
                    {error, {no_session, Session}};
                Reply -> Reply
            end
    end;
stop(_, Opts) ->
    {error, {bad_options, Opts}}.

%% @doc Records Targets for Duration milliseconds: {@link start/2}, wait,
%% {@link stop/1}. Returns early, with the files written then, if a limit
%% trips. Unless `max_duration' is given, it is Duration plus ten seconds (a
%% safety net should the caller be held up; it also bounds switching
%% tracing on, which takes a loaded node seconds).
%%
%% ```
%% 1> beamspy:trace(my_server, 5000, #{output => "/tmp/my_server.html"}).
%% {ok,["/tmp/my_server.html"]}
%% '''
-spec trace(live_target(), pos_integer(), map() | list()) -> {ok, [string()]} | {error, term()}.
trace(Targets, Duration, Opts0) when is_integer(Duration), Duration > 0, Duration < 1 bsl 31 ->
    Opts = case is_given(max_duration, Opts0) of
               true -> Opts0;
               %% A safety net only (this call stops the session after
               %% Duration); it also bounds switching tracing on, which a
               %% loaded node can take seconds to do.
               false -> put_option(max_duration, Duration + 10000, Opts0)
           end,
    case start(Targets, Opts) of
        {ok, Session} ->
            receive {beamspy, Session, {stopped, _, _}} -> ok after Duration -> ok end,
            Result = stop(Session),
            receive {beamspy, Session, {stopped, _, _}} -> ok after 0 -> ok end,
            Result;
        {error, _} = Error ->
            Error
    end;
trace(_, Duration, _) ->
    {error, {bad_option, duration, Duration, "a positive number of milliseconds"}}.

%% @equiv load(Node, 30000)
-spec load(node()) -> {ok, #{loaded := [module()], kept := [module()]}} | {error, term()}.
load(Node) ->
    load(Node, 30000).

%% @doc Delivers beamspy's Erlang modules and its NIF over distribution to
%% Node, which needs nothing installed, so that beamspy runs there through
%% `erpc' (from a notebook, for example). Node must run this node's OTP
%% release on the same architecture and word size (the NIF is native
%% code). The NIF library is written to a private directory under the
%% node's TMPDIR, loaded, and deleted at once. Modules the node already has
%% in this version are kept. Returns the modules loaded and those kept;
%% {@link unload/1} removes them again. Timeout bounds each remote call.
%%
%% ```
%% 1> {ok, _} = beamspy:load('app@host').
%% 2> {ok, #{result := {return, [1, 2, 3]}}} =
%% 2>     erpc:call('app@host', beamspy, profile, [{lists, sort, [[3, 1, 2]]}, #{}]).
%% 3> {ok, _} = beamspy:unload('app@host').
%% '''
-spec load(node(), timeout()) -> {ok, #{loaded := [module()], kept := [module()]}} | {error, term()}.
load(Node, Timeout) ->
    beamspy_remote:load(Node, Timeout).

%% @equiv unload(Node, 30000)
-spec unload(node()) ->
          {ok, #{unloaded := [module()], deferred := boolean(), purged := boolean(), running := [pid()]}}
          | {error, term()}.
unload(Node) ->
    unload(Node, 30000).

%% @doc Removes from Node what {@link load/1} loaded, and reloads the node's
%% own version of a module it replaced. Code is never removed under a
%% running job: refused with `{error, {busy, {jobs_running, Node, Jobs}}}'
%% while a recording, capture, seq collector, telemetry recording, sampler
%% or top runs there, whoever started it (stop them first); deferred to the
%% end of a command-line job still using the code (`deferred => true').
%% One unload at a time: another meanwhile gets `{error, {busy, {unloading,
%% Node}}}', as does any job starting there meanwhile. Timeout bounds each
%% remote call; a job that is ending is waited for at most half of it.
%%
%% Nor is a plain call of beamspy's in progress there killed (a process in
%% `beamspy:format_error/1', say): it is waited for until it has left
%% beamspy's code (at most half of Timeout), else the unload is refused
%% with it in `Jobs' (`{beamspy_report, Pid}': the module it runs). One
%% the unload cannot see (deeper in the stack than `backtrace_depth'
%% frames) keeps the old code until it leaves it: `purged => false' and
%% `running => [Pid]' then (its next call of beamspy's is undefined), and
%% the node purges that code once it is left. `purged => true' when the
%% code is gone.
%%
%% ```
%% 1> {ok, #{unloaded := [beamspy | _], purged := true}} = beamspy:unload('app@host').
%% '''
-spec unload(node(), timeout()) ->
          {ok, #{unloaded := [module()], deferred := boolean(), purged := boolean(), running := [pid()]}}
          | {error, term()}.
unload(Node, Timeout) ->
    beamspy_remote:unload(Node, Timeout).

%% @doc What beamspy is recording on this node right now, one map per
%% session (an `apply' in progress included): `session' (the handle, or
%% `undefined' for `apply'), `kind', `owner', `caller', `targets',
%% `start_time' (µs since the epoch), `running_ms', `limits', `recording'
%% (false once stopped), `events', `memory' and `memory_peak' (bytes),
%% `processes', `truncated', `files'.
%%
%% ```
%% 1> {ok, S} = beamspy:start(my_server, #{}).
%% 2> [#{targets := my_server, recording := true, events := _}] = beamspy:sessions().
%% '''
-spec sessions() -> [map()].
sessions() ->
    lists:filtermap(fun(Owner) ->
                            case beamspy_session:info(Owner) of
                                {ok, Info} -> {true, Info};
                                {error, _} -> false
                            end
                    end, beamspy_session:owners()).

start_live(Targets, Norm, Opts, {Outputs, Formats, Encode}, Explicit) ->
    Start0 = #{nif => cpu_scope(Norm, beamspy_opts:nif_options(Opts, Formats)),
              outputs => Outputs,
              write => whole_vm(Norm, Opts, write_meta(Opts, io_lib:format("beamspy:start(~0tp)", [Targets]))),
              max_duration => maps:get(max_duration, Opts),
              limits => limits(Opts),
              targets => Norm,
              flags => trace_flags(Opts, Norm),
              explicit_output => Explicit,
              description => Targets},
    beamspy_session:start_live(self(), with_encode(Start0, Encode)).

%% Mode cpu: a whole-VM session also keeps the samples that no process
%% holds (the schedulers' own work); one of chosen processes keeps theirs only.
cpu_scope(#{existing := all, new := true}, #{cpu := _} = Nif) -> Nif#{cpu_all => true};
cpu_scope(_, Nif) -> Nif.

%% Mode cpu traces only scheduling (which process runs on which thread)
%% where the samples cannot name their process (beamspy_cpu:join/0). Where
%% they can, a session of every process traces nothing, one of chosen
%% processes their spawns (`procs', with set_on_spawn) when their children
%% or new processes are wanted, and their garbage collections: a large one
%% runs on a dirty scheduler from C, where no sample names its process, and
%% the NIF takes the collection's start and end there (on dirty threads
%% only) to name it. The samples come from the kernel. The `call' flag of
%% until_halt catches halting calls only (beamspy_session). A trace whose
%% times come from samples (times => samples) traces collections too, for
%% the same reason and for the Erlang caller of one on a normal scheduler;
%% without gc => true they give no GC leaf.
trace_flags(#{mode := cpu} = Opts, Targets) ->
    Spawns = maps:get(children, Opts) orelse maps:get(new, Targets, false),
    Halt = [call || maps:get(until_halt, Opts, false)],
    case {beamspy_cpu:join(), Targets} of
        {registers, #{existing := all, new := true}} -> Halt;
        {registers, _} -> [procs || Spawns] ++ [set_on_spawn || maps:get(children, Opts)] ++ Halt
                              ++ [garbage_collection];
        {running, _} -> [running, exiting] ++ [set_on_spawn || maps:get(children, Opts)] ++ Halt
    end;
trace_flags(Opts, _Targets) ->
    [call, arity, return_to, running, exiting]
        ++ [set_on_spawn || maps:get(children, Opts)]
        ++ ['receive' || maps:get(sleep, Opts)]
        ++ [garbage_collection || maps:get(gc, Opts) orelse maps:get(times, Opts, compensated) =:= samples].

limits(Opts) ->
    maps:with([max_duration, max_events, max_memory, max_processes], Opts).

explicit_output(Opts) ->
    is_given(output, Opts) orelse is_given(formats, Opts).

is_given(Key, Opts) when is_map(Opts) -> maps:is_key(Key, Opts);
is_given(Key, Opts) when is_list(Opts) -> lists:any(fun({K, _}) -> K =:= Key; (K) -> K =:= Key end, Opts);
is_given(_, _) -> false.

put_option(Key, Value, Opts) when is_map(Opts) -> Opts#{Key => Value};
put_option(Key, Value, Opts) when is_list(Opts) -> Opts ++ [{Key, Value}];
put_option(_, _, Opts) -> Opts.

live_label(Targets) when is_atom(Targets) -> atom_to_list(Targets);
live_label(Targets) when is_pid(Targets) -> pid_to_list(Targets);
live_label([T]) -> live_label(T);
live_label(_) -> "processes".
