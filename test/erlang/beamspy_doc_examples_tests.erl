%%% The Erlang examples of the docs run: every shell session (`1> ...`)
%%% and every fenced `erlang' block of ?PAGES is evaluated as the shell
%%% would (erl_eval, bindings kept from one prompt to the next) in this
%%% VM, with beamspy loaded, and must not raise; a result shown under a
%%% prompt that reads as an Erlang term must equal the value, and a
%%% `beamspy: wrote FILE' line shown must have been printed. A block that
%%% cannot run by itself (it stands for the reader's code, or waits for
%%% calls of a server of theirs) says so right above it in the page:
%%% `<!-- example not run: why -->'; one that talks to a node names it:
%%% `<!-- example: app@vm is a node the test starts, ... -->', and the test
%%% starts a peer node with nothing of beamspy for it. Files the examples
%%% write under /tmp/ or the current directory go to a scratch directory
%%% (the current directory while they run, with a link to src/ for the
%%% examples that compile beamspy's own sources).
-module(beamspy_doc_examples_tests).

-include_lib("eunit/include/eunit.hrl").

-define(PAGES, ["README.md", "docs/guide-erlang.md", "docs/reference-options.md"]).
-define(EXAMPLE_MS, 240000).

doc_examples_test_() ->
    Examples = [Ex || Page <- ?PAGES, Ex <- examples(Page)],
    {setup, fun setup/0, fun cleanup/1,
     fun(Ctx) ->
             [{"the pages hold examples, and most of them run", fun() -> counted(Examples) end},
              {"a session is read into prompts, inputs and what they show", fun parse/0},
              {"a wrong shown result, a missing line and an error are found", fun() -> found(Ctx) end}
              | [{timeout, ?EXAMPLE_MS div 1000 + 30,
                  {name(Ex), fun() -> ?assertEqual({name(Ex), []}, {name(Ex), run(Ex, Ctx)}) end}}
                 || #{skip := none} = Ex <- Examples]]
     end}.

%%% ---------------------------------------------------------------------
%%% Setup: a scratch directory as the current directory, a peer node
%%% ---------------------------------------------------------------------

setup() ->
    Started = bs_test_lib:distributed("bsdocx"),
    Tmp = bs_test_lib:tmp_dir(),
    ok = filelib:ensure_path(Tmp),
    ok = file:make_symlink(filename:join(root(), "src"), filename:join(Tmp, "src")),
    {ok, Cwd} = file:get_cwd(),
    ok = file:set_cwd(Tmp),
    %% The peer gets no -pa: beamspy is not in its code path.
    {ok, Peer, Node} = peer:start_link(#{name => list_to_atom("bsdocapp" ++ os:getpid()),
                                         env => [{"TMPDIR", Tmp}]}),
    #{tmp => Tmp, cwd => Cwd, peer => Peer, node => Node, started => Started}.

cleanup(#{tmp := Tmp, cwd := Cwd, peer := Peer, started := Started}) ->
    peer:stop(Peer),
    ok = file:set_cwd(Cwd),
    bs_test_lib:rm_rf(Tmp),
    _ = [net_kernel:stop() || Started],
    ok.

%%% ---------------------------------------------------------------------
%%% Tests
%%% ---------------------------------------------------------------------

counted(Examples) ->
    Skipped = [{name(Ex), Why} || #{skip := Why} = Ex <- Examples, Why =/= none],
    Run = [Ex || #{skip := none} = Ex <- Examples],
    [io:format(user, "~n  not run: ~s: ~s", [Name, Why]) || {Name, Why} <- Skipped],
    %% The README's session, the guide's first one, the session on a node
    %% with nothing installed and the compiler's early stop at least.
    ?assert(length(Run) >= 4),
    ?assert(lists:any(fun(#{page := P}) -> P =:= "docs/guide-erlang.md" end, Run)).

parse() ->
    Text = "intro\n"
           "<!-- example not run: needs my_mod -->\n"
           "```erlang\nmy_mod:f().\n```\n"
           "```\n"
           "1> X = lists:seq(1,\n"
           "1>   3).\n"
           "[1,2,3]\n"
           "2> {ok, H} = foo(X,\n"
           "                 bar).\n"
           "beamspy: wrote /tmp/a.folded\n"
           "3> %% a comment\n"
           "```\n"
           "```sh\n$ ls\n```\n",
    ?assertMatch([#{kind := code, skip := "needs my_mod", line := 3, source := "my_mod:f().\n"},
                  #{kind := session, skip := none, line := 6,
                    entries := [{"X = lists:seq(1,\n  3).\n", ["[1,2,3]"]},
                                {"{ok, H} = foo(X,\n                 bar).\n", ["beamspy: wrote /tmp/a.folded"]},
                                {"%% a comment\n", []}]}],
                 examples_of("p.md", Text)).

%% run/2 reports what is wrong rather than passing.
found(Ctx) ->
    Session = fun(Entries) -> #{page => "t.md", line => 1, kind => session, skip => none,
                                node => none, entries => Entries} end,
    ?assertEqual([], run(Session([{"X = 1 + 1.\n", ["2"]}, {"X * 2.\n", ["4"]}]), Ctx)),
    ?assertMatch([{shown, "5", value, 4}], run(Session([{"X = 2.\n", []}, {"X * 2.\n", ["5"]}]), Ctx)),
    ?assertMatch([{not_printed, "beamspy: wrote x.folded"}],
                 run(Session([{"ok.\n", ["beamspy: wrote x.folded", "ok"]}]), Ctx)),
    ?assertMatch([{raised, "lists:nth(5, [1]).\n", error, _}],
                 run(Session([{"lists:nth(5, [1]).\n", ["1"]}]), Ctx)),
    ?assertMatch([{raised, _, error, _}],
                 run(#{page => "t.md", line => 1, kind => code, skip => none, node => none,
                       source => "A = 1.\nA = 2.\n"}, Ctx)).

%%% ---------------------------------------------------------------------
%%% Running an example
%%% ---------------------------------------------------------------------

%% What is wrong with an example when run ([] when nothing).
run(Ex, Ctx) ->
    Self = self(),
    {Pid, Ref} = spawn_monitor(fun() -> Self ! {self(), run_here(Ex, Ctx)} end),
    receive
        {Pid, Problems} -> erlang:demonitor(Ref, [flush]), Problems;
        {'DOWN', Ref, process, Pid, Why} -> [{crashed, Why}]
    after ?EXAMPLE_MS ->
            exit(Pid, kill),
            [{timeout, ?EXAMPLE_MS}]
    end.

run_here(#{kind := code, source := Source} = Ex, Ctx) ->
    {Problems, _} = eval(adapt(Source, Ex, Ctx), erl_eval:new_bindings()),
    Problems;
run_here(#{kind := session, entries := Entries} = Ex, Ctx) ->
    {Problems, _} =
        lists:foldl(fun(_, {[_ | _], _} = Failed) ->
                            Failed;          % the rest would fail for the same reason
                       ({Input, Shown}, {[], Bindings}) ->
                            {Printed, {Problems, Bindings1, Value}} =
                                capture(fun() -> eval_value(adapt(Input, Ex, Ctx), Bindings) end),
                            Checks = case Problems of
                                         [] -> check_shown([adapt(S, Ex, Ctx) || S <- Shown], Value, Printed);
                                         _ -> []
                                     end,
                            {Problems ++ Checks, Bindings1}
                    end, {[], erl_eval:new_bindings()}, Entries),
    Problems.

eval(Source, Bindings) ->
    {Problems, Bindings1, _} = eval_value(Source, Bindings),
    {Problems, Bindings1}.

%% Evaluates the expressions of Source one after the other, as the shell
%% does: {Problems, Bindings, LastValue}.
eval_value(Source, Bindings) ->
    case erl_scan:string(Source) of
        {ok, Tokens, _} ->
            lists:foldl(fun(_, {[_ | _], _, _} = Failed) ->
                                Failed;
                           (Form, {[], B, _}) ->
                                case erl_parse:parse_exprs(Form) of
                                    {ok, Exprs} ->
                                        try erl_eval:exprs(Exprs, B) of
                                            {value, V, B1} -> {[], B1, V}
                                        catch C:E -> {[{raised, Source, C, E}], B, undefined}
                                        end;
                                    {error, E} ->
                                        {[{syntax, Source, E}], B, undefined}
                                end
                        end, {[], Bindings, undefined}, forms(Tokens));
        {error, E, _} ->
            {[{syntax, Source, E}], Bindings, undefined}
    end.

%% The tokens of each expression ended by a dot.
forms(Tokens) ->
    {Forms, Last} = lists:foldl(fun({dot, _} = Dot, {Acc, Cur}) -> {[lists:reverse([Dot | Cur]) | Acc], []};
                                   (T, {Acc, Cur}) -> {Acc, [T | Cur]}
                                end, {[], []}, Tokens),
    [] = Last,
    lists:reverse(Forms).

%% The shown lines under a prompt: `beamspy: wrote F' lines must have been
%% printed (those naming a file by the time it was written excepted); the
%% others, when they read as a term, are the value.
check_shown(Shown, Value, Printed) ->
    Wrote = [L || L <- Shown, lists:prefix("beamspy: wrote ", L),
                  re:run(L, "beamspy-[0-9]{8}-", [{capture, none}]) =:= nomatch],
    Result = string:trim(lists:join("\n", [L || L <- Shown, not lists:prefix("beamspy: ", L)])),
    [{not_printed, L} || L <- Wrote, string:find(Printed, L) =:= nomatch]
        ++ case term(Result) of
               {ok, Value} -> [];
               {ok, Other} -> [{shown, Result, value, Value} || Other =/= Value];
               none -> []
           end.

term("") ->
    none;
term(Text) ->
    case erl_scan:string(Text ++ ".") of
        {ok, Tokens, _} ->
            case erl_parse:parse_term(Tokens) of
                {ok, T} -> {ok, T};
                {error, _} -> none      % elided (`...') or not a term: not compared
            end;
        {error, _, _} ->
            none
    end.

%% /tmp/ is the scratch directory; the node named in the page is the peer.
adapt(Text, #{node := Node}, #{tmp := Tmp, node := Peer}) ->
    T = string:replace(Text, "/tmp/", Tmp ++ "/", all),
    lists:flatten(case Node of
                      none -> T;
                      _ -> string:replace(T, Node, "'" ++ atom_to_list(Peer) ++ "'", all)
                  end).

%% Runs Fun with a group leader that records what is printed.
capture(Fun) ->
    {Result, Printed} = bs_test_lib:capture_output(Fun),
    {Printed, Result}.

%%% ---------------------------------------------------------------------
%%% Reading the examples of a page
%%% ---------------------------------------------------------------------

examples(Page) ->
    {ok, Bin} = file:read_file(filename:join(root(), Page)),
    examples_of(Page, unicode:characters_to_list(Bin)).

%% The examples of a page: fenced blocks marked `erlang', or whose first
%% line is a shell prompt.
examples_of(Page, Text) ->
    blocks(string:split(Text, "\n", all), 1, "", Page, []).

blocks([], _, _, _, Acc) ->
    lists:reverse(Acc);
blocks([Line | Rest], N, Before, Page, Acc) ->
    case Line of
        "```" ++ Info ->
            {Body, After} = lists:splitwith(fun(L) -> not lists:prefix("```", L) end, Rest),
            Next = N + length(Body) + 2,
            Tail = case After of [] -> []; [_ | T] -> T end,
            case example(Page, N, string:trim(Info), Body, Before) of
                none -> blocks(Tail, Next, "", Page, Acc);
                Ex -> blocks(Tail, Next, "", Page, [Ex | Acc])
            end;
        _ ->
            blocks(Rest, N + 1, case string:trim(Line) of "" -> Before; T -> T end, Page, Acc)
    end.

example(Page, Line, Info, Body, Before) ->
    Skip = case re:run(Before, "^<!-- example not run: (.*) -->$", [{capture, all_but_first, list}, unicode]) of
               {match, [Why]} -> Why;
               nomatch -> none
           end,
    Node = case re:run(Before, "^<!-- example: (\\S+@\\S+) is a node ", [{capture, all_but_first, list}, unicode]) of
               {match, [N]} -> N;
               nomatch -> none
           end,
    Base = #{page => Page, line => Line, skip => Skip, node => Node},
    case {is_session(Body), Info} of
        {true, _} -> Base#{kind => session, entries => session(Body)};
        {false, "erlang"} -> Base#{kind => code, source => lists:flatten([[L, $\n] || L <- Body])};
        {false, _} -> none
    end.

is_session(Body) ->
    case [L || L <- Body, string:trim(L) =/= ""] of
        [First | _] -> prompt(First) =/= none;
        [] -> false
    end.

prompt(Line) ->
    case re:run(Line, "^[0-9]+> ?(.*)$", [{capture, all_but_first, list}, unicode]) of
        {match, [Input]} -> Input;
        nomatch -> none
    end.

%% [{Input, ShownLines}]: a prompt starts an input, which goes on (on lines
%% with the same prompt, or none) until its expression ends with a dot;
%% the lines after it, to the next prompt, are what it shows.
session(Body) ->
    Entries = lists:foldl(fun(Line, Acc) -> session_line(prompt(Line), Line, Acc) end, [], Body),
    lists:reverse([{In, lists:reverse(Shown)} || {In, Shown} <- Entries]).

session_line(none, _, []) ->
    [];
session_line(Input, Line, [{In, Shown} | Acc]) when Shown =:= [] ->
    case complete(In) of
        false -> [{In ++ text(Input, Line) ++ "\n", []} | Acc];
        true when Input =:= none -> [{In, [Line]} | Acc];
        true -> [{Input ++ "\n", []}, {In, Shown} | Acc]
    end;
session_line(none, Line, [{In, Shown} | Acc]) ->
    [{In, [Line | Shown]} | Acc];
session_line(Input, _, Acc) ->
    [{Input ++ "\n", []} | Acc].

text(none, Line) -> Line;
text(Input, _) -> Input.

%% An input is complete when it ends with a dot (or holds only comments).
complete(Input) ->
    case erl_scan:string(Input) of
        {ok, [], _} -> true;
        {ok, Tokens, _} -> element(1, lists:last(Tokens)) =:= dot;
        {error, _, _} -> false
    end.

name(#{page := Page, line := Line}) ->
    lists:flatten(io_lib:format("~s:~b", [Page, Line])).

root() ->
    filename:dirname(filename:dirname(code:which(beamspy))).
