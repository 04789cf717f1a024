%%% @doc A null `erl_tracer': enabled/3 answers `trace', trace/5 does
%%% nothing (both are NIFs in `bench_null_tracer.so', built by bench/run.sh
%%% next to this module's beam). Tracing a call with it measures the cost
%%% ERTS itself charges per event, the floor of any erl_tracer design.
-module(bench_null_tracer).

-export([state/0, enabled/3, trace/5]).

-on_load(init/0).

-nifs([state/0, enabled/3, trace/5]).

init() ->
    Dir = filename:dirname(code:which(?MODULE)),
    erlang:load_nif(filename:join(Dir, "bench_null_tracer"), 0).

%% @doc A tracer state: a NIF resource, the kind of term beamspy passes.
-spec state() -> reference().
state() -> erlang:nif_error(not_loaded).

%% @doc erl_tracer callback: always `trace'.
-spec enabled(atom(), term(), pid() | port() | undefined) -> trace.
enabled(_Tag, _State, _Tracee) -> erlang:nif_error(not_loaded).

%% @doc erl_tracer callback: drops the event.
-spec trace(atom(), term(), pid() | port() | undefined, term(), map()) -> ok.
trace(_Tag, _State, _Tracee, _Term, _Opts) -> erlang:nif_error(not_loaded).
