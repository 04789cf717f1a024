%%% @doc How a beamspy session switches tracing on and off in the VM.
%%%
%%% Two backends, chosen at run time:
%%% <ul>
%%% <li>`legacy' (OTP 25/26): `erlang:trace/3' with `{tracer, beamspy_tracer,
%%%   Session}' and `erlang:trace_pattern/3'. Each process has one tracer and
%%%   the local call patterns are node-wide, so only one session may run at a
%%%   time (the lock is in {@link beamspy_session}) and processes traced by
%%%   someone else are refused, see {@link conflicts/3}.</li>
%%% <li>`session' (OTP 27+, when `trace:session_create/3' exists): the session
%%%   gets its own dynamic trace session, so beamspy coexists with dbg, recon
%%%   and other beamspy sessions. It is kept to the documented calls of the
%%%   `trace' module: session_create, process, function, info,
%%%   session_destroy. The test layers otp27 and otp29 (test/otp/run.sh) run
%%%   the test suite on it.</li>
%%% </ul>
%%% Only live sessions ({@link beamspy:start/2}) use the `session' backend;
%%% `beamspy:apply/2' always uses `legacy'.
-module(beamspy_backend).

-export([sessions_supported/0, open/2, close/1, set_patterns/1, set_halt_patterns/1, process/4,
         conflicts/3, tracer_of/2, untraced_bifs/0]).
-export([legacy_untrace/2, legacy_untrace_all/1, legacy_remove_meta/2]).

%% A tracer module shows in erlang:trace_info/2 as {tracer, {Module, State}}
%% and {meta, {Module, State}} (observed on OTP 25, 27 and 29, and what its
%% documentation says), but its spec (trace_info_return() in erts's
%% erlang.erl, up to OTP 29 at least) says {tracer, Module, State} and
%% {meta, Module, State}: dialyzer then takes every match of beamspy's
%% tracer for one that can never succeed. The functions that read a tracer
%% module from trace_info are here, and only they are exempted.
-dialyzer({nowarn_function, [foreign/1, tracer_of/2, legacy_untrace/2, legacy_remove_meta/2]}).

-include("beamspy_trace.hrl").
-define(CACHE, {?MODULE, sessions_supported}).

-type backend() :: {legacy, beamspy_tracer:session()}
                 | {session, beamspy_tracer:session(), term()}.
-export_type([backend/0]).

%% @doc True when this VM has dynamic trace sessions (OTP 27+). Looked up
%% once per VM (a persistent term that is never updated afterwards). Before
%% OTP 27 the module `trace' is not looked for: the code server searches
%% every directory of the code path for a module that is not there, each a
%% request to the loader process, which on a node of thousands of runnable
%% processes took half a minute.
-spec sessions_supported() -> boolean().
sessions_supported() ->
    case persistent_term:get(?CACHE, undefined) of
        undefined ->
            Yes = list_to_integer(erlang:system_info(otp_release)) >= 27
                andalso code:ensure_loaded(trace) =:= {module, trace}
                andalso erlang:function_exported(trace, session_create, 3),
            persistent_term:put(?CACHE, Yes),
            Yes;
        Yes ->
            Yes
    end.

%% @doc Opens the backend for a NIF session: `legacy' always gives the legacy
%% backend; `auto' gives a dynamic trace session when the VM has them.
-spec open(beamspy_tracer:session(), legacy | auto) -> backend().
open(Session, auto) ->
    case sessions_supported() of
        true ->
            %% OTP 27+ only. The handle must stay referenced:
            %% the session is destroyed when it is garbage collected.
            TS = trace:session_create(beamspy, {beamspy_tracer, Session}, []),
            {session, Session, TS};
        false ->
            {legacy, Session}
    end;
open(Session, legacy) ->
    {legacy, Session}.

%% @doc Stops recording and removes every trace flag and pattern the backend
%% set. The session must not be used for tracing afterwards.
-spec close(backend()) -> ok.
close({legacy, Session}) ->
    beamspy_session:cleanup(Session);
close({session, Session, TS}) ->
    ok = beamspy_tracer:session_stop(Session),
    _ = try trace:session_destroy(TS) catch error:_ -> ok end,
    ok.

%% @doc Local call patterns that report the caller (how stacks are rebuilt,
%% see DESIGN.md) on every function and on modules loaded later; beamspy's
%% own modules are left untraced, and so are the BIFs of {@link untraced_bifs/0}.
-spec set_patterns(backend()) -> ok.
set_patterns(B) ->
    _ = pattern(B, {'_', '_', '_'}, ?CALLER_MS),
    _ = pattern(B, on_load, ?CALLER_MS),
    _ = [pattern(B, {M, '_', '_'}, false) || M <- beamspy_session:excluded_modules()],
    _ = [pattern(B, MFA, false) || MFA <- untraced_bifs()],
    ok.

%% @doc Call patterns on the functions that halt the VM only
%% (erlang:halt/0-2, init:stop/0-1): a session that samples CPU and writes
%% its files at halt (until_halt) learns of the halt from their calls.
-spec set_halt_patterns(backend()) -> ok.
set_halt_patterns(B) ->
    _ = pattern(B, {erlang, halt, '_'}, true),
    _ = pattern(B, {init, stop, '_'}, true),
    ok.

%% @doc The BIFs that local call patterns leave alone on this VM. From OTP 27
%% on, a BIF that raises (erlang:error/1, throw/1, exit/1, ...), when it is
%% call-traced and called as a tail call, gets a wrong return address: the
%% stack trace the program catches, and the caller the tracer is told, name
%% the function that follows the caller in its module (seen on OTP 27.3 and
%% 29.1; OTP 25 is exact). beamspy must not change what a program sees, so
%% there these BIFs are not traced: profiles lack their (tiny) frames.
-spec untraced_bifs() -> [mfa()].
untraced_bifs() ->
    case list_to_integer(erlang:system_info(otp_release)) >= 27 of
        true ->
            [{erlang, throw, 1}, {erlang, error, 1}, {erlang, error, 2}, {erlang, error, 3},
             {erlang, exit, 1}, {erlang, raise, 3}, {erlang, nif_error, 1}, {erlang, nif_error, 2}];
        false ->
            []
    end.

pattern({legacy, _}, What, MS) -> erlang:trace_pattern(What, MS, [local]);
pattern({session, _, TS}, What, MS) -> trace:function(TS, What, MS, [local]).

%% @doc Switches Flags on (true) or every flag off (false) for a pid or for
%% `new' processes. Returns false if the process is gone.
-spec process(backend(), pid() | new, boolean(), [atom()]) -> boolean().
process(B, What, How, Flags) ->
    try do_process(B, What, How, Flags) of
        _ -> true
    catch error:badarg -> false
    end.

do_process({legacy, Session}, What, true, Flags) ->
    erlang:trace(What, true, [{tracer, beamspy_tracer, Session} | Flags]);
do_process({legacy, _}, What, false, _) ->
    erlang:trace(What, false, [all]);
do_process({session, _, TS}, What, true, Flags) ->
    trace:process(TS, What, true, Flags);
do_process({session, _, TS}, What, false, _) ->
    trace:process(TS, What, false, [all]).

%% @doc Whether tracing Pids (and `new' processes when New) would disturb
%% another tracer; checked before anything is switched on. With the legacy
%% backend:
%% <ul>
%% <li>a target (or the `new' default) with a tracer that is not beamspy's
%%   gives `{already_traced, Pid | new, Tracer}' (a process has one tracer);</li>
%% <li>any other process with the `call' flag from another tracer gives
%%   `{call_traced, Pid, Tracer}': beamspy's local patterns are node-wide and
%%   would change what that tracer receives.</li>
%% </ul>
%% Dynamic trace sessions (OTP 27+) never conflict.
-spec conflicts(backend() | legacy, [pid()], boolean()) -> ok | {error, term()}.
conflicts({session, _, _}, _Pids, _New) ->
    ok;
conflicts(_, Pids, New) ->
    Targets = maps:from_list([{P, true} || P <- Pids]),
    NewOk = case New of
                true -> foreign(erlang:trace_info(new, tracer));
                false -> none
            end,
    case NewOk of
        {foreign, T} -> {error, {already_traced, new, T}};
        none -> first_conflict(erlang:processes(), Targets)
    end.

%% A process's trace flags are read at once (process_info's `trace' item,
%% 0 when nothing traces it); its tracer only when it has some:
%% trace_info/2 is a signal the process answers when it next runs, which on
%% a node of thousands of runnable processes takes milliseconds each.
first_conflict([], _) ->
    ok;
first_conflict([P | Ps], Targets) ->
    case erlang:process_info(P, trace) of
        {trace, Bits} when Bits =/= 0 -> first_conflict(P, Ps, Targets);
        _ -> first_conflict(Ps, Targets) % untraced, or gone
    end.

first_conflict(P, Ps, Targets) ->
    case foreign(erlang:trace_info(P, tracer)) of
        none ->
            first_conflict(Ps, Targets);
        {foreign, T} when is_map_key(P, Targets) ->
            {error, {already_traced, P, T}};
        {foreign, T} ->
            case erlang:trace_info(P, flags) of
                {flags, Flags} when is_list(Flags) ->
                    case lists:member(call, Flags) of
                        true -> {error, {call_traced, P, T}};
                        false -> first_conflict(Ps, Targets)
                    end;
                _ ->
                    first_conflict(Ps, Targets)
            end
    end.

%% A tracer that is set and is not beamspy's.
foreign({tracer, []}) -> none;
foreign({tracer, {beamspy_tracer, _}}) -> none;
foreign({tracer, T}) -> {foreign, T};
foreign(_) -> none.

%% @doc What traces Pid besides this backend: `none', `{foreign, Tracer}'
%% (legacy backend only: one tracer per process) or `ours'.
-spec tracer_of(backend(), pid()) -> none | ours | {foreign, term()}.
tracer_of({legacy, Session}, Pid) ->
    %% Untraced (flags 0) is read at once; the tracer itself is a signal
    %% (see first_conflict/2).
    case erlang:process_info(Pid, trace) of
        {trace, Bits} when Bits =/= 0 ->
            case erlang:trace_info(Pid, tracer) of
                {tracer, {beamspy_tracer, Session}} -> ours;
                Other -> foreign(Other)
            end;
        _ ->
            none
    end;
tracer_of({session, _, TS}, Pid) ->
    case try trace:info(TS, Pid, flags) catch error:_ -> undefined end of
        {flags, [_ | _]} -> ours;
        _ -> none
    end.

%% @doc Legacy backend: switches every trace flag of What (a pid, or `new'
%% processes) off if its tracer is Session; a process traced by anyone else
%% is left alone, one that is gone meanwhile skipped.
-spec legacy_untrace(pid() | new, beamspy_tracer:session()) -> ok.
legacy_untrace(What, Session) ->
    case erlang:trace_info(What, tracer) of
        {tracer, {beamspy_tracer, Session}} ->
            try erlang:trace(What, false, [all]) of
                _ -> ok
            catch error:badarg -> ok
            end;
        _ ->
            ok
    end.

%% @doc Legacy backend: {@link legacy_untrace/2} on every process, in two
%% passes: a child that was traced (set_on_spawn) may have spawned a traced
%% process during the first.
-spec legacy_untrace_all(beamspy_tracer:session()) -> ok.
legacy_untrace_all(Session) ->
    lists:foreach(fun(P) -> legacy_untrace(P, Session) end, erlang:processes()),
    lists:foreach(fun(P) -> legacy_untrace(P, Session) end, erlang:processes()).

%% @doc Removes the meta pattern of MFA if it is Session's (a capture's, see
%% {@link beamspy_capture}); anyone else's is left alone.
-spec legacy_remove_meta(mfa(), beamspy_tracer:session()) -> ok.
legacy_remove_meta(MFA, Session) ->
    _ = case erlang:trace_info(MFA, meta) of
            {meta, {beamspy_tracer, {beamspy_meta, Session}}} -> erlang:trace_pattern(MFA, false, [meta]);
            _ -> ok
        end,
    ok.
