%%% Workloads whose size is set by the data: one process calling a tiny
%%% function in a loop (captures of many calls), and a body recursion of
%%% any depth (profiles a million frames deep).
-module(bs_many_calls_wl).
-export([start_caller/0, tiny/1, deep/1]).

%% A process calling tiny/1 (a remote call, so a trace pattern sees it)
%% until it is killed.
start_caller() ->
    spawn(fun() -> call_loop(0) end).

call_loop(X) ->
    call_loop(?MODULE:tiny(X)).

tiny(X) -> (X + 1) band 16#ffff.

%% N nested calls of deep/1, each waiting for the one it made.
deep(0) -> 0;
deep(N) -> 1 + ?MODULE:deep(N - 1).
