%%% @doc What the node-side modules of the command-line tool share
%%% ({@link beamspy_dump}, {@link beamspy_sampler}, {@link beamspy_top}):
%%% turning targets into pids, and calling one of their processes.
%%%
%%% Depends on kernel and stdlib only, like them: it is loaded onto nodes
%%% that have nothing of beamspy.
-module(beamspy_procs).

-export([resolve/1, call/4]).

-define(CALL_TIMEOUT_MS, 60000).

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
