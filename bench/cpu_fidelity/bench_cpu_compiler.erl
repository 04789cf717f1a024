%%% bench_cpu_compiler — the `compiler' workload of the CPU-time fidelity
%%% bench: compile:file/2 of a real OTP module from erlang-src (stdlib's
%%% erl_scan.erl, 1,291 lines), in memory (`binary': nothing written), a
%%% fixed number of times. $CPU_BENCH_ERL names another source file. A
%%% bigger module (the compiler's v3_core.erl, 3,900 lines) takes minutes
%%% and gigabytes traced on 2 shared cores.
-module(bench_cpu_compiler).

-export([prepare/0, run/1, perf_runs/0, modules/0]).

-define(COMPILES, 1).

%% @doc The source file and a line saying what it is; an error when
%% erlang-src is not installed.
-spec prepare() -> {ok, file:filename(), string()} | {error, string()}.
prepare() ->
    Path = case os:getenv("CPU_BENCH_ERL") of
               false -> filename:join([code:lib_dir(stdlib), "src", "erl_scan.erl"]);
               P -> P
           end,
    case file:read_file_info(Path) of
        {ok, Info} ->
            {ok, Path, lists:flatten(io_lib:format("compile:file(~s, [binary, return_errors]) x ~w (~w bytes)",
                                                   [Path, ?COMPILES, element(2, Info)]))};
        {error, Why} ->
            {error, lists:flatten(io_lib:format("~s: ~s (install erlang-src: apt-get install erlang-src)",
                                                [Path, file:format_error(Why)]))}
    end.

%% @doc The fixed amount of work: ?COMPILES compilations to a binary.
-spec run(file:filename()) -> non_neg_integer().
run(Path) ->
    lists:sum([begin
                   {ok, _, Beam} = compile:file(Path, [binary, return_errors]),
                   byte_size(Beam)
               end || _ <- lists:seq(1, ?COMPILES)]).

% @doc How many runs perf samples (beamspy records one): enough for
% about 2,000 samples at 999 Hz.
-spec perf_runs() -> pos_integer().
perf_runs() -> 3.

%% @doc The workload's own modules: the compiler application's.
-spec modules() -> [module()].
modules() ->
    _ = application:load(compiler),
    {ok, Mods} = application:get_key(compiler, modules),
    Mods.
