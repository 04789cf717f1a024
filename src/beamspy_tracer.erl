%%% @doc The erl_tracer module of beamspy, implemented by the NIF library
%%% `priv/beamspy_nif.so'.
%%%
%%% The VM calls {@link enabled/3} and {@link trace/5} on the scheduler thread
%%% of every traced process; they record into the session resource passed as
%%% tracer state (`{tracer, beamspy_tracer, Session}'). The `session_*'
%%% functions create, stop and read sessions; they are private to beamspy
%%% (use the {@link beamspy} API) and are documented for maintainers.
-module(beamspy_tracer).

-export([enabled/3, trace/5]).
-export([session_new/1, session_seed/5, session_stop/1, session_stop/2, session_pids/1,
         session_run_states/3, session_cpu_hot/2,
         session_capturing/2, session_prepare_halt/3, session_probe/2,
         session_info/1, session_profile/2, session_write/4, session_encode/3]).
-export([profile_render/3]).
-export([seq_write/3]).
-export([span_event/3, span_event/4, span_exit/2, span_info/1]).
-export([check_pattern/1, frame_name/2, formats/0]).
-export([nif_file/0]).

-on_load(init/0).

-type session() :: reference().
-export_type([session/0]).

-nifs([enabled/3, trace/5, session_new/1, session_seed/5, session_stop/1, session_stop/2,
       session_capturing/2, session_probe/2, session_prepare_halt/3,
       session_pids/1, session_run_states/3, session_cpu_hot/2, session_info/1, session_profile/2, session_write/4, session_encode/3, profile_render/3,
       check_pattern/1, frame_name/2, formats/0,
       seq_write/3, span_event/3, span_event/4, span_exit/2, span_info/1]).

init() ->
    erlang:load_nif(nif_path(), 0).

%% The library beside this module (priv/ next to its ebin/), unless the
%% `beamspy' application environment names a directory: the command-line
%% tool sets `nif_dir' while it loads beamspy onto a node from its own copy,
%% where another beamspy may be installed.
nif_path() ->
    Priv = case application:get_env(beamspy, nif_dir) of
               {ok, Dir} when is_list(Dir) -> Dir;
               _ -> installed_priv_dir()
           end,
    filename:join(Priv, "beamspy_nif").

%% @doc The NIF library file this module loads (or would load).
-spec nif_file() -> file:filename().
nif_file() ->
    nif_path() ++ ".so".

installed_priv_dir() ->
    case code:priv_dir(beamspy) of
        {error, bad_name} ->
            Ebin = filename:dirname(code:which(?MODULE)),
            filename:join(filename:dirname(Ebin), "priv");
        Dir ->
            Dir
    end.

%% @doc The one spelling of a frame, the engine's (every output, every
%% mode): `{M, F, Arity}' (or `{M, F, Args}') in `erlang' (`mod:fun/1',
%% atoms quoted as the shell would) or `elixir' (`Mod.fun/1',
%% `:lists.sort/1'); a process label ({@link beamspy_session:labels/1}):
%% the pid, then the registered name (`my_server'; in Elixir `MyApp.Server'
%% or `:my_server') or the initial call, spelled as a frame; a text (binary
%% or iolist: `SLEEP') is only made safe for a folded line (`;' becomes
%% `:', control characters `?', a trailing blank or count `_').
%%
%% ```
%% <<"m:'receive'/0">> = beamspy_tracer:frame_name({m, 'receive', 0}, erlang),
%% <<"Foo.bar/2">> = beamspy_tracer:frame_name({'Elixir.Foo', bar, [a, b]}, elixir),
%% <<"<0.90.0> MyApp.Server">> = beamspy_tracer:frame_name({<<"<0.90.0>">>, 'Elixir.MyApp.Server'}, elixir),
%% <<"worker_12">> = beamspy_tracer:frame_name(<<"worker 12">>, erlang).
%% '''
-spec frame_name({module(), atom(), arity() | list()} | beamspy_session:label() | iodata(),
                 erlang | elixir) -> binary().
frame_name(_Frame, _Style) -> erlang:nif_error(not_loaded).

%% @doc The C side's table of output formats (c_src/writers/format_registry.c)
%% in its order: each format's name, its extensions (the first is the one
%% files get) and whether it shows time order. The tests hold {@link
%% beamspy_opts:formats/0}, {@link beamspy_opts:extensions/0} and
%% beamspy_sequence's lists to it.
-spec formats() -> #{profile := [{atom(), [string()], boolean()}],
                     sequence := [{atom(), [string()], boolean()}]}.
formats() -> erlang:nif_error(not_loaded).

%% @doc erl_tracer callback: `trace' while the session records, else
%% `remove' (for `trace_status') or `discard'.
-spec enabled(atom(), session(), pid() | port() | undefined) -> trace | discard | remove.
enabled(_Tag, _Session, _Tracee) -> erlang:nif_error(not_loaded).

%% @doc erl_tracer callback: records one event into the session.
-spec trace(atom(), session(), pid() | port() | undefined, term(), map()) -> ok.
trace(_Tag, _Session, _Tracee, _Term, _Opts) -> erlang:nif_error(not_loaded).

%% @doc Creates a session. Keys: `max_memory' (bytes), `max_processes',
%% `max_events', `timeline' (spans kept, 0 = none), `sleep', `gc', `caller'
%% (booleans), `exclude' (modules treated as untraced), `owner' (a pid told
%% `{beamspy_limit, Reason}' when a limit stops recording), `run_states'
%% (a sampling session: only in/out are traced and nothing is recorded, see
%% {@link session_run_states/3}).
-spec session_new(map()) -> session() | {error, enomem}.
session_new(_Opts) -> erlang:nif_error(not_loaded).

%% @doc Seeds the stack of an already running process (frames root first;
%% Waiting: it waits in a receive; OwnCodeOnTop: frames of beamspy's own
%% modules were above these, left out).
-spec session_seed(session(), pid(), [mfa()], boolean(), boolean()) -> ok | {error, stopped}.
session_seed(_Session, _Pid, _Frames, _Waiting, _OwnCodeOnTop) -> erlang:nif_error(not_loaded).

%% @doc Stops recording; returns once no callback is recording any more.
-spec session_stop(session()) -> ok.
session_stop(_Session) -> erlang:nif_error(not_loaded).

%% @doc Stops recording for a reason the profile reports as `truncated'.
-spec session_stop(session(), requested | max_duration) -> ok.
session_stop(_Session, _Reason) -> erlang:nif_error(not_loaded).

%% @doc Sampling sessions (`run_states'): what each pid was doing at time
%% T (`erlang:monotonic_time(nanosecond)', not later than now):
%% `{running, Slices}' (it ran then and still runs; it sends the owner
%% `{beamspy_out, Pid, Slices, MFA}' when it stops), `{stopped, MFA}' (it
%% ran then and has stopped since, at MFA, without running again), `out'
%% (it did not run then), `unknown' (no event yet, or too many to tell).
-spec session_run_states(session(), [pid()], integer()) ->
          [{running, non_neg_integer()} | {stopped, mfa() | 0} | out | unknown].
session_run_states(_Session, _Pids, _T) -> erlang:nif_error(not_loaded).

%% @doc Mode cpu: the samples since the previous call (or the start) of the
%% N (at most 100) most sampled functions, most first, each sample counted
%% for its innermost Erlang function (a BIF's C time goes to its caller);
%% `samples' every sample, `scheduler' those of schedulers running no
%% process (`spin' of them spinning before sleep), `no_erlang' those of
%% processes that reached no Erlang function, `others' those of functions
%% past the window's table (4096). A new window starts. `{error, no_cpu}'
%% when the session does not sample the CPU (for `beamspy top').
-spec session_cpu_hot(session(), non_neg_integer()) ->
          {ok, #{hz := pos_integer(), samples := non_neg_integer(), scheduler := non_neg_integer(),
                 spin := non_neg_integer(), no_erlang := non_neg_integer(), others := non_neg_integer(),
                 functions := [{mfa() | binary(), pos_integer()}]}} | {error, no_cpu}.
session_cpu_hot(_Session, _N) -> erlang:nif_error(not_loaded).

%% @doc Capture mode: whether a captured call is running in Pid.
-spec session_capturing(session(), pid()) -> boolean().
session_capturing(_Session, _Pid) -> erlang:nif_error(not_loaded).

%% @doc For the calling process, in a session with compensation on: how
%% long the tracer's callbacks have taken so far (what the engine leaves out
%% of traced times exactly), and the self time recorded so far in frames of
%% each function given, in ns (beamspy_calibrate measures with it).
-spec session_probe(session(), [mfa()]) -> {non_neg_integer(), [non_neg_integer()]}.
session_probe(_Session, _MFAs) -> erlang:nif_error(not_loaded).

%% @doc Option `until_halt': what the process that halts the VM writes,
%% `[{Format, PathBinary}]' with write options (as {@link session_write/4}).
-spec session_prepare_halt(session(), [{atom(), binary()}], map()) -> ok | {error, enomem}.
session_prepare_halt(_Session, _Outputs, _Opts) -> erlang:nif_error(not_loaded).

%% @doc Every process the session has seen.
-spec session_pids(session()) -> [pid()].
session_pids(_Session) -> erlang:nif_error(not_loaded).

%% @doc Live figures: recording flag, memory in use and peak, truncation, process count.
-spec session_info(session()) -> map().
session_info(_Session) -> erlang:nif_error(not_loaded).

%% @doc The recorded profile of a stopped session as a term (see
%% {@link beamspy:profile/2}).
-spec session_profile(session(), map()) -> map() | {error, atom()}.
session_profile(_Session, _Opts) -> erlang:nif_error(not_loaded).

%% @doc Writes the profile of a stopped session to Path atomically. With
%% `report => true' in Opts, returns `{ok, Warning}': what the user must be
%% told about the file (timeline cap, projected size), `<<>>' if nothing.
-spec session_write(session(), atom(), iodata(), map()) -> ok | {ok, binary()} | {error, atom()}.
session_write(_Session, _Format, _Path, _Opts) -> erlang:nif_error(not_loaded).

%% @doc The bytes {@link session_write/4} would write for Format, as a
%% binary: nothing is written on the node. Format is any format the
%% writers know (`bspy', `folded', `svg', `html', `speedscope', `chrome',
%% `perf'); errors: `not_stopped', `unknown_format', `bad_filter_or_format',
%% `enomem', `too_large' (over 1 GiB).
-spec session_encode(session(), atom(), map()) -> {ok, binary()} | {error, atom()}.
session_encode(_Session, _Format, _Opts) -> erlang:nif_error(not_loaded).

%% @doc A profile term (as beamspy:profile/2 returns it) rendered in memory
%% in Format with write options Opts (as session_write/4's).
-spec profile_render(map(), atom(), map()) -> {ok, binary()} | {error, term()}.
profile_render(_Profile, _Format, _Opts) -> erlang:nif_error(not_loaded).

%% @doc Merges the events of a sequence capture (see {@link beamspy_seq_collector})
%% by causality and writes each output atomically: Outputs is
%% `[{mermaid | svg | chrome | json, Path}]'. Returns one result per output
%% (`{ok, Path, Drawn, LeftOut}' or `{error, Path, Reason}') and a summary
%% (messages, participants, noise, filtered, folded, dropped_events).
-spec seq_write(map(), [{atom(), iodata()}], map()) ->
          {ok, [{ok, iodata(), non_neg_integer(), non_neg_integer()} | {error, iodata(), atom()}], map()}
          | {error, bad_pattern}.
seq_write(_Flow, _Outputs, _Opts) -> erlang:nif_error(not_loaded).

%% @doc Whether an `include'/`exclude' pattern compiles as the writers
%% compile it: a POSIX extended regular expression (glibc's `regcomp').
%% Pattern: at most 1023 bytes, no NUL (else `badarg').
-spec check_pattern(iodata()) -> ok | {error, binary()}.
check_pattern(_Pattern) -> erlang:nif_error(not_loaded).

%% @doc A telemetry span event in the calling process (beamspy_telemetry's
%% handler): pushes (`start') or pops (`stop', `exception') the span frame
%% Name in the caller's recording. Returns `ok', `first' (the first span of
%% this process in a spans-only session), `unmatched', `dropped'
%% (max_spans), `refused', `not_traced', `stopped' or `badarg'; never raises.
-spec span_event(session(), start | stop | exception, atom()) ->
          ok | first | unmatched | dropped | refused | not_traced | stopped | badarg.
span_event(_Session, _Kind, _Name) -> erlang:nif_error(not_loaded).

%% @doc As {@link span_event/3}, attaching Note (UTF-8, at most 511 bytes
%% kept) to the span: metadata at its start, kind and reason at an
%% exception. It becomes the span's args in the Chrome trace.
-spec span_event(session(), start | stop | exception, atom(), binary()) ->
          ok | first | unmatched | dropped | refused | not_traced | stopped | badarg.
span_event(_Session, _Kind, _Name, _Note) -> erlang:nif_error(not_loaded).

%% @doc A process of a spans-only session died: spans it left open are
%% counted as died.
-spec span_exit(session(), pid()) -> ok | not_traced.
span_exit(_Session, _Pid) -> erlang:nif_error(not_loaded).

%% @doc What happened to the spans of a stopped session.
-spec span_info(session()) -> beamspy_telemetry:counts() | {error, recording}.
span_info(_Session) -> erlang:nif_error(not_loaded).
