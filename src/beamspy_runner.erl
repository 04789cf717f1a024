%%% @doc The VM side of `beamspy run': records a whole VM from its start to
%%% its end.
%%%
%%% `beamspy run -- erl ARGS' starts the VM with `ERL_AFLAGS' set to
%%% `-pa DIR -eval beamspy_runner:boot()', so {@link boot/0} runs before the
%%% command's own `-s', `-run' and `-eval' (and works the same for `erl',
%%% `elixir', `mix' or `rebar3', which all start through `erlexec'). It
%%% starts a live session on every process (`all') with `until_halt': a
%%% process that calls `erlang:halt/0,1,2' or `init:stop/0,1' waits until
%%% the profile is written. The profile goes to the `.bspy' file named by
%%% the environment variable `BEAMSPY_RUN_OUTPUT'; `BEAMSPY_RUN_OPTIONS'
%%% holds further options of {@link beamspy:start/2} as an Erlang map, e.g.
%%% `#{max_duration => 5000}'. Both variables, and beamspy's part of
%%% `ERL_AFLAGS', are removed at once, so VMs the command starts in turn
%%% are not recorded into the same file.
%%%
%%% The tool and the VM are tied by a pipe, whose reading end the VM gets
%%% as the file descriptor named by `BEAMSPY_RUN_CONTROL':
%%% <ul>
%%% <li>a line on it (the tool got SIGINT or SIGTERM): the profile is
%%%   written and the VM halts;</li>
%%% <li>its end (the tool is gone, even killed with SIGKILL): the VM
%%%   removes the tool's temporary directory (the one holding the profile,
%%%   when its name starts with `beamspy-run-') and halts with status 1:
%%%   nobody is left to read the profile.</li>
%%% </ul>
%%% With `max_duration' (the tool's `--duration'), the VM halts (status 0)
%%% once the profile is written at the end of it (counted from when tracing
%%% is on). If recording cannot start, the VM runs on unrecorded but still
%%% halts at the end of `max_duration' or when the tool asks or goes away. When another limit stops
%%% the recording early, the VM goes on unrecorded, and a line
%%% `Reason ElapsedMs Events MemoryBytes LimitValue ExUnit' is written to the
%%% profile's name with `.stopped' added, for the tool to tell the user
%%% (`ExUnit' is 1 when the application ex_unit had started by then: the
%%% limit fell while tests ran, not while Mix compiled before them).
%%%
%%% With `start_when => App' (the tool's `--when-started APP'), recording
%%% starts only once application App has started (looked at every 10 ms),
%%% say `ex_unit' for `mix test': the tests, not the compilation and start
%%% of the project before them; standard error says when it starts.
%%%
%%% ```
%%% $ BEAMSPY_RUN_OUTPUT=/tmp/run.bspy ERL_AFLAGS="-pa ebin -eval beamspy_runner:boot()" \
%%%     erl -noshell -eval 'lists:sort(lists:seq(1, 100000)), halt().'
%%% '''
-module(beamspy_runner).

-export([boot/0]).
-export([keeper/2]).

%% @doc Starts recording the whole VM, as configured by the environment
%% (see the module documentation); returns once tracing is on. Problems are
%% printed on standard error and leave the VM running unrecorded.
%%
%% ```
%% 1> os:putenv("BEAMSPY_RUN_OUTPUT", "/tmp/vm.bspy"), beamspy_runner:boot().
%% ok
%% '''
-spec boot() -> ok.
boot() ->
    Output = os:getenv("BEAMSPY_RUN_OUTPUT"),
    Options = os:getenv("BEAMSPY_RUN_OPTIONS", "#{}"),
    Control = os:getenv("BEAMSPY_RUN_CONTROL", ""),
    forget_environment(),
    case {Output, parse_options(Options)} of
        {false, _} ->
            complain("BEAMSPY_RUN_OUTPUT is not set: nothing is recorded", []);
        {_, {error, Why}} ->
            complain("bad BEAMSPY_RUN_OPTIONS (~ts): nothing is recorded", [Why]);
        {_, {ok, Opts}} ->
            start(Output, Opts, control_fd(Control))
    end.

control_fd(Text) ->
    try list_to_integer(Text) of
        Fd when Fd > 2 -> Fd;
        _ -> none
    catch
        error:badarg -> none
    end.

start(Output, Opts, Control) ->
    Ref = make_ref(),
    Keeper = proc_lib:spawn(?MODULE, keeper, [self(), Ref]),
    Keeper ! {Ref, start, Output, Opts, Control},
    Mon = erlang:monitor(process, Keeper),
    receive
        {Ref, ok} ->
            erlang:demonitor(Mon, [flush]),
            ok;
        {Ref, {error, Why}} ->
            erlang:demonitor(Mon, [flush]),
            complain("~ts: nothing is recorded", [beamspy:format_error(Why)]);
        {'DOWN', Mon, process, Keeper, Why} ->
            complain("~tp: nothing is recorded", [Why])
    end.

%% @private
%% The process that calls beamspy:start/2 and then stays, so that the
%% session (which ends with its caller) lasts as long as the VM; it also
%% listens to the tool (see the module documentation).
%% The duration (the tool's --duration) is kept here rather than given to
%% the session as max_duration, which would also bound switching tracing on:
%% on a loaded machine that can take longer than a short duration, and the
%% run would then record nothing.
keeper(Parent, Ref) ->
    receive
        {Ref, start, Output, Opts0, Control} ->
            {StartWhen, Opts} = {maps:get(start_when, Opts0, none), maps:remove(start_when, Opts0)},
            Duration = maps:get(max_duration, Opts, infinity),
            %% show_idle: the tool draws the profile and leaves idle time out itself.
            Start = maps:merge(Opts, #{output => Output, until_halt => true, quiet => true, show_idle => true,
                                       ignore => [self()], max_duration => infinity}),
            case StartWhen of
                none ->
                    record(Start, Duration, listen(Control), fun(Result) -> Parent ! {Ref, Result} end);
                App ->
                    %% The VM goes on; recording starts with App. Mix (Elixir
                    %% 1.15+) prunes the code path when it starts a project,
                    %% so beamspy's modules are loaded now, while their
                    %% directory is still on it.
                    ok = load_own_modules(),
                    Parent ! {Ref, ok},
                    when_started(App, Start, Duration, listen(Control))
            end
    end.

%% Loads every beamspy module from the directory this one came from.
load_own_modules() ->
    Dir = filename:dirname(code:which(?MODULE)),
    _ = [code:ensure_loaded(list_to_atom(filename:basename(F, ".beam")))
         || F <- filelib:wildcard(filename:join(Dir, "beamspy*.beam"))],
    ok.

%% Starts recording, tells Reply how it went, and stays for the session.
-spec record(map(), timeout(), port() | none, fun((ok | {error, term()}) -> term())) -> no_return().
record(#{output := Output} = Start, Duration, Port, Reply) ->
    case beamspy:start(all, Start) of
        {ok, Session} ->
            T0 = erlang:monotonic_time(millisecond),
            _ = [erlang:send_after(Duration, self(), duration_over) || is_integer(Duration)],
            Reply(ok),
            wait(#{session => Session, output => Output, port => Port, t0 => T0});
        {error, _} = Error ->
            Reply(Error),
            unrecorded(#{output => Output, port => Port}, Duration)
    end.

%% Waits for application App to start (the tool still obeyed), then records.
when_started(App, #{output := Output} = Start, Duration, Port) ->
    case lists:keymember(App, 1, application:which_applications()) of
        true ->
            complain("~tp has started: recording from now", [App]),
            record(Start, Duration, Port,
                   fun(ok) -> ok;
                      ({error, Why}) -> complain("~ts: nothing is recorded", [beamspy:format_error(Why)])
                   end);
        false ->
            receive
                {Port, {data, _}} -> erlang:halt(0);
                {Port, eof} -> tool_gone(#{output => Output})
            after 10 ->
                    when_started(App, Start, Duration, Port)
            end
    end.

%% Recording could not start: the VM runs on unrecorded, but the tool is
%% still obeyed (a stop request or the end of --duration halts the VM, the
%% tool's end too), so it never waits for a VM that will not end.
-spec unrecorded(#{port := port() | none, _ => _}, timeout()) -> no_return().
unrecorded(#{port := Port} = S, Duration) ->
    receive
        {Port, {data, _}} -> erlang:halt(0);
        {Port, eof} -> tool_gone(S)
    after Duration ->
            erlang:halt(0)
    end.

listen(none) ->
    none;
listen(Fd) ->
    try
        open_port({fd, Fd, Fd}, [in, binary, eof])
    catch
        error:Why ->
            complain("cannot read the tool's pipe (~tp): the VM will not notice if the tool dies", [Why]),
            none
    end.

wait(#{session := Session, port := Port} = S) ->
    receive
        {Port, {data, _}} ->
            %% The tool was asked to stop: the profile now, then halt.
            _ = beamspy:stop(Session, #{}),
            erlang:halt(0);
        {Port, eof} ->
            tool_gone(S);
        duration_over ->
            %% --duration is over: the profile, then halt.
            _ = beamspy:stop(Session, #{}),
            erlang:halt(0);
        {beamspy, Session, {stopped, Reason, _Files}} ->
            note_early_stop(Reason, S),
            wait(S);
        _ ->
            wait(S)
    end.

%% The tool is gone (killed, even with SIGKILL): nobody will read the
%% profile or remove the directory it unpacked beamspy into; the VM does,
%% and halts rather than record on with nobody to stop it.
tool_gone(#{output := Output}) ->
    Dir = filename:dirname(Output),
    case lists:prefix("beamspy-run-", filename:basename(Dir)) of
        true -> _ = file:del_dir_r(Dir);
        false -> _ = file:delete(Output)
    end,
    erlang:halt(1).

%% "Reason ElapsedMs Events MemoryBytes LimitValue" in OUTPUT.stopped.
note_early_stop(Reason, #{session := Session, output := Output, t0 := T0}) ->
    Elapsed = erlang:monotonic_time(millisecond) - T0,
    {Events, Memory, Limit} =
        case [I || #{session := H} = I <- beamspy:sessions(), H =:= Session] of
            [#{events := E, memory := M} = Info] ->
                {E, M, maps:get(Reason, maps:get(limits, Info, #{}), 0)};
            _ ->
                {0, 0, 0}
        end,
    ExUnit = try lists:keymember(ex_unit, 1, application:which_applications(1000)) of
                 true -> 1;
                 false -> 0
             catch
                 exit:_ -> 0
             end,
    Line = io_lib:format("~w ~w ~w ~w ~w ~w~n",
                         [Reason, Elapsed, Events, Memory, case is_integer(Limit) of true -> Limit; false -> 0 end,
                          ExUnit]),
    _ = file:write_file(Output ++ ".stopped", Line),
    ok.

parse_options(Text) ->
    case erl_scan:string(Text ++ ".") of
        {ok, Tokens, _} ->
            case erl_parse:parse_term(Tokens) of
                {ok, Map} when is_map(Map) -> {ok, Map};
                {ok, Other} -> {error, io_lib:format("not a map: ~tp", [Other])};
                {error, {_, M, D}} -> {error, M:format_error(D)}
            end;
        {error, {_, M, D}, _} ->
            {error, M:format_error(D)}
    end.

forget_environment() ->
    _ = os:unsetenv("BEAMSPY_RUN_OUTPUT"),
    _ = os:unsetenv("BEAMSPY_RUN_OPTIONS"),
    _ = os:unsetenv("BEAMSPY_RUN_CONTROL"),
    case os:getenv("BEAMSPY_RUN_AFLAGS") of
        false ->
            ok;
        Ours ->
            Flags = os:getenv("ERL_AFLAGS", ""),
            Rest = string:trim(string:replace(Flags, Ours, "", all)),
            _ = case lists:flatten(Rest) of
                    "" -> os:unsetenv("ERL_AFLAGS");
                    Left -> os:putenv("ERL_AFLAGS", Left)
                end,
            _ = os:unsetenv("BEAMSPY_RUN_AFLAGS"),
            ok
    end.

complain(Format, Args) ->
    io:format(standard_error, "beamspy run: " ++ Format ++ "~n", Args),
    ok.
