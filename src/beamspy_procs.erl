%%% @doc What the node-side modules of the command-line tool share
%%% ({@link beamspy_dump}, {@link beamspy_sampler}, {@link beamspy_top}):
%%% checking their options, turning targets into pids, and calling one of
%%% their processes.
%%%
%%% Depends on kernel and stdlib only, like them: it is loaded onto nodes
%%% that have nothing of beamspy.
-module(beamspy_procs).

-export([check_opts/4, start/3, resolve/1, call/4]).

-define(CALL_TIMEOUT_MS, 60000).

%% @doc Opts over Defaults, once every option given passes Valid(Key,
%% Value) (which refuses unknown keys); with `owner', `owner' must be there
%% and be a pid. The first option that does not pass is returned as
%% `{error, {bad_option, {Key, Value}}}' (`{owner, missing}' when it is
%% missing).
%%
%% ```
%% 1> Valid = fun(interval_ms, N) -> is_integer(N) andalso N > 0; (_, _) -> false end.
%% 2> beamspy_procs:check_opts(#{interval_ms => 50}, #{interval_ms => 100, limit => 10}, Valid, no_owner).
%% {ok,#{interval_ms => 50,limit => 10}}
%% 3> beamspy_procs:check_opts(#{interval_ms => 0}, #{}, Valid, no_owner).
%% {error,{bad_option,{interval_ms,0}}}
%% '''
-spec check_opts(map(), map(), fun((term(), term()) -> boolean()), owner | no_owner) ->
          {ok, map()} | {error, {bad_option, {term(), term()}}}.
check_opts(Opts, Defaults, Valid, owner) ->
    case maps:find(owner, Opts) of
        {ok, Owner} when is_pid(Owner) ->
            check_each(maps:to_list(maps:remove(owner, Opts)), Valid, maps:merge(Defaults, Opts));
        {ok, Bad} ->
            {error, {bad_option, {owner, Bad}}};
        error ->
            {error, {bad_option, {owner, missing}}}
    end;
check_opts(Opts, Defaults, Valid, no_owner) ->
    check_each(maps:to_list(Opts), Valid, maps:merge(Defaults, Opts)).

check_each([], _, Config) ->
    {ok, Config};
check_each([{Key, Value} | Rest], Valid, Config) ->
    case Valid(Key, Value) of
        true -> check_each(Rest, Valid, Config);
        false -> {error, {bad_option, {Key, Value}}}
    end.

%% @doc Starts Module:init(Config) with proc_lib, which acknowledges with
%% `{ok, Pid}'; its `{error, Why}' (a refusal, or death before the
%% acknowledgement) comes back as `{error, {Failure, Why}}'.
%%
%% ```
%% 1> beamspy_procs:start(beamspy_top, #{owner => self(), interval_ms => 100, limit => 10}, top_failed).
%% {ok,<0.95.0>}
%% '''
-spec start(module(), map(), atom()) -> {ok, pid()} | {error, {atom(), term()}}.
start(Module, Config, Failure) ->
    case proc_lib:start_monitor(Module, init, [Config]) of
        {{ok, Pid}, Mon} ->
            erlang:demonitor(Mon, [flush]),
            {ok, Pid};
        {{error, Why}, Mon} ->
            erlang:demonitor(Mon, [flush]),
            {error, {Failure, Why}}
    end.

%% @doc `all', or the pids of a list of pids and registered names (sorted,
%% without duplicates). `{error, {noproc, Target}}' for a name that is not
%% registered or a pid that is not alive.
%%
%% ```
%% 1> beamspy_procs:resolve([code_server, code_server]).
%% {ok,[<0.50.0>]}
%% '''
-spec resolve(all | [pid() | atom()]) -> {ok, all | [pid()]} | {error, {noproc, term()}}.
resolve(all) ->
    {ok, all};
resolve(Targets) when is_list(Targets) ->
    resolve(Targets, []).

resolve([], Acc) ->
    {ok, lists:usort(Acc)};
resolve([T | Ts], Acc) ->
    Pid = case is_atom(T) of
              true -> whereis(T);
              false -> T
          end,
    case is_pid(Pid) andalso is_process_alive(Pid) of
        true -> resolve(Ts, [Pid | Acc]);
        false -> {error, {noproc, T}}
    end.

%% @doc Sends `{Tag, Request, self(), Ref}' to Server and waits (at most a
%% minute) for `{Ref, Reply}': `{ok, Reply}', `{error, noproc}' if Server is
%% gone, `{error, {Failure, Why}}' if it dies meanwhile, `{error, timeout}'.
%%
%% ```
%% 1> beamspy_procs:call(Top, beamspy_top, report, top_failed).
%% {ok,#{window_ms => 1000, ...}}
%% '''
-spec call(pid(), atom(), term(), atom()) -> {ok, term()} | {error, term()}.
call(Server, Tag, Request, Failure) when is_pid(Server) ->
    Mon = erlang:monitor(process, Server),
    Server ! {Tag, Request, self(), Mon},
    receive
        {Mon, Reply} ->
            erlang:demonitor(Mon, [flush]),
            {ok, Reply};
        {'DOWN', Mon, process, Server, noproc} ->
            {error, noproc};
        {'DOWN', Mon, process, Server, Why} ->
            {error, {Failure, Why}}
    after ?CALL_TIMEOUT_MS ->
            erlang:demonitor(Mon, [flush]),
            {error, timeout}
    end.
