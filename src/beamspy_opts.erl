%%% @doc Validation of what users pass to beamspy, done before anything runs.
%%%
%%% Every check turns bad input into `{error, Reason}' with a reason that
%%% {@link beamspy:format_error/1} turns into a sentence. Nothing here has side
%%% effects except looking at the file system to tell a directory from a file.
-module(beamspy_opts).

-export([target/1, options/1, outputs/2, defaults/0]).

-type target() :: fun(() -> term())
                | {fun(), [term()]}
                | {module(), atom(), [term()]}.
-type options() :: #{output := string(),
                     formats := [beamspy:format()],
                     children := boolean(),
                     sleep := boolean(),
                     gc := boolean(),
                     max_memory := pos_integer(),
                     max_processes := pos_integer(),
                     names := erlang | elixir,
                     quiet := boolean(),
                     output_given := boolean()}.
-export_type([target/0, options/0]).

-define(FORMATS, [folded]).
%% The process table is allocated up front (32 bytes per process), outside
%% max_memory: keep it at most 32 MiB.
-define(MAX_PROCESSES, 1048576).
-define(MAX_MEMORY, (1 bsl 50)).
-define(EXTENSIONS, [{".folded", folded}]).

%% @doc The default value of every option.
-spec defaults() -> options().
defaults() ->
    #{output => ".",
      formats => [folded],
      children => true,
      sleep => true,
      gc => false,
      max_memory => 256 * 1024 * 1024,
      max_processes => 10000,
      names => erlang,
      quiet => false,
      output_given => false}.

%% @doc Checks a call target; returns the fun and its arguments.
-spec target(term()) -> {ok, fun(), [term()]} | {error, term()}.
target(F) when is_function(F, 0) -> {ok, F, []};
target({_, Args} = T) when is_list(Args) ->
    case is_proper_list(Args) of
        true -> target_proper(T);
        false -> {error, {bad_target, T}}
    end;
target({_, _, Args} = T) when is_list(Args) ->
    case is_proper_list(Args) of
        true -> target_proper(T);
        false -> {error, {bad_target, T}}
    end;
target(Other) ->
    {error, {bad_target, Other}}.

is_proper_list(L) ->
    try length(L) of
        _ -> true
    catch error:badarg -> false
    end.

target_proper({F, Args}) when is_function(F) ->
    case erlang:fun_info(F, arity) of
        {arity, N} when N =:= length(Args) -> {ok, F, Args};
        {arity, N} -> {error, {bad_target, {wrong_arity, N, length(Args)}}}
    end;
target_proper({M, F, Args}) when is_atom(M), is_atom(F) ->
    Arity = length(Args),
    _ = code:ensure_loaded(M),
    case erlang:function_exported(M, F, Arity) of
        true -> {ok, fun M:F/Arity, Args};
        false -> {error, {bad_target, {undef, {M, F, Arity}}}}
    end;
target_proper(Other) ->
    {error, {bad_target, Other}}.

%% @doc Checks options given as a map or a proplist; fills in defaults.
-spec options(map() | list()) -> {ok, options()} | {error, term()}.
options(List) when is_list(List) ->
    %% proplists convention: the first occurrence of a key wins.
    try maps:from_list(lists:reverse([opt_pair(E) || E <- List])) of
        Map -> options(Map)
    catch throw:Error -> Error
    end;
options(Map) when is_map(Map) ->
    Given = maps:to_list(Map),
    try lists:foldl(fun check/2, (defaults())#{output_given => maps:is_key(output, Map)}, Given) of
        Opts -> {ok, Opts}
    catch throw:Error -> Error
    end;
options(Other) ->
    {error, {bad_options, Other}}.

opt_pair({K, V}) -> {K, V};
opt_pair(K) when is_atom(K) -> {K, true};
opt_pair(Other) -> throw({error, {bad_options, Other}}).

check({output, V}, Acc) ->
    case io_lib:char_list(V) orelse is_binary(V) of
        true when V =/= "", V =/= <<>> -> Acc#{output => unicode:characters_to_list(V)};
        _ -> bad(output, V, "a directory or a file name")
    end;
check({formats, V}, Acc) when is_list(V), V =/= [] ->
    case [F || F <- V, not lists:member(F, ?FORMATS)] of
        [] -> Acc#{formats => lists:usort(V)};
        _ -> bad(formats, V, "a non-empty list of " ++ lists:join(", ", [atom_to_list(F) || F <- ?FORMATS]))
    end;
check({formats, V}, _) -> bad(formats, V, "a non-empty list of formats");
check({K, V}, Acc) when K =:= children; K =:= sleep; K =:= gc; K =:= quiet ->
    case is_boolean(V) of
        true -> Acc#{K => V};
        false -> bad(K, V, "true or false")
    end;
check({K, V}, Acc) when K =:= max_memory; K =:= max_processes ->
    case is_integer(V) andalso V > 0 of
        true when K =:= max_processes, V > ?MAX_PROCESSES ->
            bad(K, V, "at most " ++ integer_to_list(?MAX_PROCESSES));
        true when K =:= max_memory, V > ?MAX_MEMORY ->
            bad(K, V, "at most " ++ integer_to_list(?MAX_MEMORY) ++ " bytes");
        true -> Acc#{K => V};
        false -> bad(K, V, "a positive integer")
    end;
check({names, V}, Acc) when V =:= erlang; V =:= elixir -> Acc#{names => V};
check({names, V}, _) -> bad(names, V, "erlang or elixir");
check({K, V}, _) -> throw({error, {unknown_option, K, V}}).

bad(Key, Value, Expected) ->
    throw({error, {bad_option, Key, Value, Expected}}).

%% @doc Where each asked format goes: `[{Format, Path}]'. An `output' with a
%% known extension names one file and picks its format (unless `formats' was
%% also given); otherwise it is a directory, created if needed, and each file
%% is named from Label and the time.
-spec outputs(options(), string()) -> {ok, [{beamspy:format(), string()}]} | {error, term()}.
outputs(#{output := Out, formats := Formats}, Label) ->
    case format_of(Out) of
        {ok, Format} ->
            case filelib:ensure_dir(Out) of
                ok -> {ok, [{Format, Out}]};
                {error, Why} -> {error, {bad_output, filename:dirname(Out), Why}}
            end;
        none ->
            case filelib:ensure_path(Out) of
                ok ->
                    Base = filename:join(Out, file_base(Label)),
                    {ok, [{F, Base ++ extension(F)} || F <- Formats]};
                {error, Why} ->
                    {error, {bad_output, Out, Why}}
            end
    end.

format_of(Path) ->
    Lower = string:lowercase(Path),
    case [F || {Ext, F} <- ?EXTENSIONS, lists:suffix(Ext, Lower)] of
        [F | _] -> {ok, F};
        [] -> none
    end.

extension(F) ->
    {Ext, F} = lists:keyfind(F, 2, ?EXTENSIONS),
    Ext.

file_base(Label) ->
    {{Y, Mo, D}, {H, Mi, S}} = calendar:local_time(),
    Safe = [case C of
                C when C >= $a, C =< $z; C >= $A, C =< $Z; C >= $0, C =< $9; C =:= $_ -> C;
                _ -> $_
            end || C <- Label],
    Unique = erlang:unique_integer([positive]) rem 10000,
    lists:flatten(io_lib:format("beamspy-~4..0w~2..0w~2..0w-~2..0w~2..0w~2..0w-~s-~w",
                                [Y, Mo, D, H, Mi, S, string:slice(Safe, 0, 40), Unique])).
