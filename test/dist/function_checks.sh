# function_checks.sh — `record --function` spellings and refusals on a real
# node (sourced by test/dist/run.sh, whose helpers it uses: bs, rpc, check,
# clean; ONLY=function runs it alone). An Elixir-named module,
# 'Elixir.BsJason' (compiled on the node from forms: no Elixir needed), is
# called every 20 ms; each spelling of its function is captured, and a
# module the node cannot load and a function it lacks are said in words.

echo "--- record --function: spellings and refusals"
rpc n1 '
    Forms = [{attribute, 1, module, '"'"'Elixir.BsJason'"'"'}, {attribute, 2, export, [{decode, 2}]},
             {function, 3, decode, 2, [{clause, 3, [{var, 3, '"'"'A'"'"'}, {var, 3, '"'"'B'"'"'}], [],
                                        [{tuple, 3, [{var, 3, '"'"'A'"'"'}, {var, 3, '"'"'B'"'"'}]}]}]}],
    {ok, M, Bin} = compile:forms(Forms),
    {module, M} = code:load_binary(M, "BsJason.erl", Bin),
    Caller = fun Loop() -> _ = M:decode(1, 2), timer:sleep(20), Loop() end,
    register(bs_jason_caller, spawn(Caller)).' >/dev/null
check "record --function: the Elixir-named module is loaded on the node" \
    is_true n1 "is_pid(whereis(bs_jason_caller)) andalso erlang:module_loaded('Elixir.BsJason')."
i=0
for spelling in "'Elixir.BsJason':decode/2" "Elixir.BsJason:decode/2" "BsJason.decode/2"; do
    i=$((i + 1))
    bs record --node "$n1" --function "$spelling" --duration 20s -o "$out/spell$i.folded" 2>"$out/spell$i.err"
    rc=$?
    check "record --function $spelling: exit 0, the call captured" \
        eval '[ $rc -eq 0 ] && grep -q "BsJason.*decode/2" "$out/spell$i.folded"'
done
bs record --node "$n1" --function NoSuchMod.decode/2 --duration 5s -o "$out/nomod.folded" 2>"$out/nomod.err"
rc=$?
check "record --function of a module the node cannot load: exit 1, in words" eval '[ $rc -eq 1 ] &&
    grep -qF "module NoSuchMod is not loaded on $n1 and could not be loaded: nofile (no Elixir.NoSuchMod.beam on the node'"'"'s code path)" "$out/nomod.err" &&
    ! grep -q "bad_function" "$out/nomod.err" && [ ! -e "$out/nomod.folded" ]'
bs record --node "$n1" --function "'Elixir.BsJason':decode/3" --duration 5s -o "$out/noarity.folded" \
    2>"$out/noarity.err"
rc=$?
check "record --function of a function the module lacks: exit 1, in words" eval '[ $rc -eq 1 ] &&
    grep -qF "BsJason.decode/3 does not exist on $n1: module BsJason is loaded but has no function decode/3" \
        "$out/noarity.err" && ! grep -q "bad_function" "$out/noarity.err"'
"$cli" record --node "$n1" --function "'Elixir.BsJason:decode/2" -o x.svg >/dev/null 2>"$out/badq.err"
rc=$?
check "record --function with an unclosed quote: usage error saying so" eval '[ $rc -eq 2 ] &&
    grep -q "quoted module name is not closed" "$out/badq.err"'
rpc n1 'exit(whereis(bs_jason_caller), kill).' >/dev/null
check "record --function: nothing left on the node after the refusals" clean n1
