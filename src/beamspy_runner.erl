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
    forget_environment(),
    case {Output, parse_options(Options)} of
        {false, _} ->
            complain("BEAMSPY_RUN_OUTPUT is not set: nothing is recorded", []);
        {_, {error, Why}} ->
            complain("bad BEAMSPY_RUN_OPTIONS (~ts): nothing is recorded", [Why]);
        {_, {ok, Opts}} ->
            start(Output, Opts)
    end.

start(Output, Opts) ->
    Ref = make_ref(),
    Keeper = proc_lib:spawn(?MODULE, keeper, [self(), Ref]),
    Keeper ! {Ref, start, Output, Opts},
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
%% session (which ends with its caller) lasts as long as the VM.
keeper(Parent, Ref) ->
    receive
        {Ref, start, Output, Opts} ->
            Start = maps:merge(Opts, #{output => Output, until_halt => true, quiet => true,
                                       ignore => [self()]}),
            case beamspy:start(all, Start) of
                {ok, _Session} ->
                    Parent ! {Ref, ok},
                    wait();
                {error, _} = Error ->
                    Parent ! {Ref, Error}
            end
    end.

wait() ->
    receive
        _ -> wait()
    end.

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
