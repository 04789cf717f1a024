%%% bench_cpu_attribute — the one attribution rule of the CPU-time
%%% fidelity bench, applied to both sides, and the distance between them.
%%%
%%% Rule: a sample (perf) or a frame's self time (beamspy) goes to its
%%% innermost frame that belongs to one of the workload's own modules,
%%% itself included, so that time in a BIF, in the VM's C code or in a
%%% library function goes to the workload function that called it. What
%%% reaches no such frame is `[unattributed]': its share of the whole is
%%% printed as the coverage, and the distance compares the attributed
%%% shares only. Scheduled-out time of a traced process (WAIT, RUNNABLE,
%%% SLEEP leaves) is not CPU time and is left out.
-module(bench_cpu_attribute).

-export([rule/0, perf_frame/2, beamspy_tree/2, beamspy_tree_without_gc/2, shares/1, tvd/2, top/2]).
-export([leaf_rule/0, perf_leaf/2, beamspy_leaves/1]).

-define(NOT_CPU, [<<"WAIT">>, <<"RUNNABLE">>, <<"SLEEP">>]).

%% @doc The rule, as printed with the results.
-spec rule() -> string().
rule() ->
    "each perf sample, and each beamspy frame's self time, goes to its innermost frame of the "
    "workload's own modules (itself included): a BIF's, the VM's or a library's time goes to the "
    "workload function that called it; what reaches no such frame is [unattributed] (coverage = "
    "attributed share); WAIT/RUNNABLE/SLEEP (not CPU) are left out; TVD = half the sum over "
    "functions of |p - q| on the attributed shares".

%% @doc The second rule, as printed with the results. It needs no
%% unwinding: perf's leaf is the sampled instruction's own function, exact
%% whatever the stack, so it judges the sampling and the naming, where the
%% first rule also judges each side's unwinding (and perf's own unwinding
%% reaches a workload frame for only some of its samples).
-spec leaf_rule() -> string().
leaf_rule() ->
    "each sample of a scheduler thread goes to its leaf, the function of the sampled instruction (an "
    "Erlang function or JIT fragment by the JIT's perf map, a C function by its ELF symbol, an address "
    "with no symbol as `[file]`); beamspy's frames by their self time; WAIT/RUNNABLE/SLEEP left out".

%% @doc The leaf-rule key of a perf frame: its symbol and file.
-spec perf_leaf(binary(), binary()) -> binary().
perf_leaf(<<$$, Sym/binary>>, _Dso) ->
    case binary:split(Sym, <<"-CodeInfoPrologue">>) of
        [S, <<>>] -> jit_key(S);
        _ -> jit_key(Sym)
    end;
perf_leaf(<<"[unknown]">>, Dso) ->
    <<$[, (filename:basename(Dso))/binary, $]>>;
perf_leaf(Sym, _Dso) ->
    %% perf spells a versioned dynamic symbol `name@@GLIBC_2.2.5'; beamspy
    %% (and the function) `name'.
    case binary:split(Sym, <<"@">>) of
        [Name, _Version] when Name =/= <<>> -> Name;
        _ -> Sym
    end.

jit_key(<<"global::", _/binary>> = Fragment) -> Fragment;
jit_key(Sym) ->
    case binary:split(Sym, <<":">>) of
        [Mod, Fun] -> unquote(Mod, Fun);
        _ -> Sym
    end.

%% @doc A beamspy profile's self times by the leaf rule: #{Key => Ns}.
-spec beamspy_leaves([{binary(), [beamspy:tree_node()]}]) -> #{binary() => non_neg_integer()}.
beamspy_leaves(Processes) ->
    lists:foldl(fun({_, Nodes}, Acc0) ->
                        lists:foldl(fun({_, _, Frame, Self, _, _}, Acc) when Self > 0 ->
                                            case lists:member(Frame, ?NOT_CPU) of
                                                true -> Acc;
                                                false -> maps:update_with(beamspy_leaf(Frame), fun(N) -> N + Self end,
                                                                          Self, Acc)
                                            end;
                                       (_, Acc) -> Acc
                                    end, Acc0, Nodes)
                end, #{}, Processes).

%% beamspy spells a JIT fragment `[JIT] global::name', a C function
%% `name [file]', an address with no symbol `[file]'.
beamspy_leaf(<<"[JIT] ", Fragment/binary>>) -> Fragment;
beamspy_leaf(<<$[, _/binary>> = Frame) -> Frame;
beamspy_leaf(Frame) ->
    case binary:split(Frame, <<" [">>) of
        [Sym, _File] -> Sym;
        [_] -> jit_key(Frame)
    end.

%% @doc The key of a perf frame symbol (`$mod:fun/arity' from the JIT's
%% perf map) when its module is one of Modset's, else false.
-spec perf_frame(binary(), #{binary() => true}) -> binary() | false.
perf_frame(<<$$, Sym/binary>>, Modset) ->
    case binary:split(Sym, <<":">>) of
        [Mod, Rest] when is_map_key(Mod, Modset) ->
            Fun = case binary:split(Rest, <<"-CodeInfoPrologue">>) of
                      [F, <<>>] -> F;
                      _ -> Rest
                  end,
            unquote(Mod, Fun);
        _ -> false
    end;
perf_frame(_, _) -> false.

%% @doc A beamspy profile's per-process trees attributed by the rule:
%% {#{Key => Ns}, UnattributedNs}. Node ids come parent first.
-spec beamspy_tree([{binary(), [beamspy:tree_node()]}], #{binary() => true}) ->
          {#{binary() => non_neg_integer()}, non_neg_integer()}.
beamspy_tree(Processes, Modset) ->
    lists:foldl(fun({_, Nodes}, Acc) -> nodes(Nodes, Modset, keep, #{}, Acc) end, {#{}, 0}, Processes).

%% @doc The same, with the samples of garbage collections left out: a mode
%% cpu sample under a collector frame (`[JIT] global::garbage_collect',
%% `erts_garbage_collect...') below its innermost Erlang frame, as
%% `times => samples' leaves them out of the functions' shares (a traced
%% process collects several times as often as untraced). The reference of
%% that column.
-spec beamspy_tree_without_gc([{binary(), [beamspy:tree_node()]}], #{binary() => true}) ->
          {#{binary() => non_neg_integer()}, non_neg_integer()}.
beamspy_tree_without_gc(Processes, Modset) ->
    lists:foldl(fun({_, Nodes}, Acc) -> nodes(Nodes, Modset, leave_out, #{}, Acc) end, {#{}, 0}, Processes).

%% Keys: node id => {its key by the rule, whether it is in a collection}.
nodes([], _, _, _, Acc) -> Acc;
nodes([{Id, Parent, Frame, Self, _, _} | Rest], Modset, Gc, Keys, {Counts, Unattr}) ->
    {Inherited, InGc0} = case Parent of
                             undefined -> {false, false};
                             _ -> maps:get(Parent, Keys, {false, false})
                         end,
    Key = case beamspy_frame(Frame, Modset) of
              false -> Inherited;
              K -> K
          end,
    InGc = case erlang_frame(Frame) of
               true -> false;
               false -> InGc0 orelse collector_frame(Frame)
           end,
    Acc = case lists:member(Frame, ?NOT_CPU) of
              true -> {Counts, Unattr};
              false when InGc, Gc =:= leave_out -> {Counts, Unattr};
              false when Key =:= false -> {Counts, Unattr + Self};
              false -> {maps:update_with(Key, fun(N) -> N + Self end, Self, Counts), Unattr}
          end,
    nodes(Rest, Modset, Gc, Keys#{Id => {Key, InGc}}, Acc).

%% beamspy spells an Erlang function `m:f/a', every other frame with
%% brackets (`[JIT] ...', `name [file]', `[file]').
erlang_frame(Frame) ->
    binary:match(Frame, <<"[">>) =:= nomatch andalso binary:match(Frame, <<":">>) =/= nomatch.

collector_frame(Frame) ->
    binary:match(Frame, [<<"global::garbage_collect">>, <<"erts_garbage_collect">>]) =/= nomatch.

beamspy_frame(Frame, Modset) ->
    case binary:split(Frame, <<":">>) of
        [Mod, Fun] when is_map_key(Mod, Modset) -> unquote(Mod, Fun);
        _ -> false
    end.

%% Both perf's map and beamspy quote a function name that needs it
%% (`'-f/1-fun-0-'/1'); the key is spelled unquoted.
unquote(Mod, <<$', Rest/binary>>) ->
    <<Mod/binary, $:, (binary:replace(Rest, <<"'/">>, <<"/">>))/binary>>;
unquote(Mod, Fun) ->
    <<Mod/binary, $:, Fun/binary>>.

%% @doc Counts to shares of their sum.
-spec shares(#{binary() => number()}) -> #{binary() => float()}.
shares(Counts) ->
    Sum = lists:sum(maps:values(Counts)),
    maps:map(fun(_, N) -> N / max(Sum, 1) end, Counts).

%% @doc Total variation distance of two share maps.
-spec tvd(#{binary() => float()}, #{binary() => float()}) -> float().
tvd(P, Q) ->
    Keys = lists:usort(maps:keys(P) ++ maps:keys(Q)),
    lists:sum([abs(maps:get(K, P, 0.0) - maps:get(K, Q, 0.0)) || K <- Keys]) / 2.

%% @doc The N largest shares, largest first.
-spec top(#{binary() => float()}, pos_integer()) -> [{binary(), float()}].
top(Shares, N) ->
    lists:sublist(lists:reverse(lists:keysort(2, maps:to_list(Shares))), N).
