%%% The README and docs/*.md link to each other: every relative link and
%%% image (outside code) must name a file that exists, every #anchor a
%%% heading of the file it points into (spelled as GitHub makes heading
%%% ids), and every page of docs/ must be reachable from the README, so a
%%% page moved, renamed or retitled shows here rather than as a dead link.
%%% Reads files only; well under a second.
-module(beamspy_doc_links_tests).

-include_lib("eunit/include/eunit.hrl").

%% Reading every page takes under a second of CPU, but seen to take 14 s of
%% wall time on a loaded host: EUnit's 5 s default would fail it there.
doc_links_test_() ->
    [{"every relative link of the README and docs/ names an existing file and heading", {timeout, 120, fun links/0}},
     {"every page of docs/ is reachable from the README", {timeout, 120, fun reachable/0}},
     {"heading ids are spelled as GitHub spells them", fun slugs/0},
     {"a link to a missing file or heading is found", fun broken_found/0}].

%%% ---------------------------------------------------------------------
%%% Tests
%%% ---------------------------------------------------------------------

links() ->
    Pages = pages(),
    Links = [{Page, Target} || Page <- Pages, Target <- links_of(read(Page))],
    %% The README alone links to every page: far more than a handful.
    ?assert(length(Links) > 50),
    ?assertEqual([], [{Page, Target, Why} || {Page, Target} <- Links,
                                             Why <- [check(Page, Target)], Why =/= ok]).

reachable() ->
    Seen = walk(["README.md"], sets:new([{version, 2}])),
    ?assertEqual([], [P || P <- pages(), not sets:is_element(P, Seen)]).

slugs() ->
    ?assertEqual(["sleep-wait-and-runnable", "where-the-cpu-time-goes-mode--cpu",
                  "sequence-diagrams-of-a-request-beamspysequence2-and-beamspy-seq",
                  "formats", "formats-1", "show_idle-and-the-html-page"],
                 anchors_of("## SLEEP, WAIT and RUNNABLE\n"
                            "## Where the CPU time goes: `mode => cpu`\n"
                            "```\n# not a heading\n```\n"
                            "### Sequence diagrams of a request: `beamspy:sequence/2` and `beamspy seq`\n"
                            "## Formats\n# Formats ##\n"
                            "## `show_idle` and the [HTML page](x.md)\n")).

%% The check itself finds what it is there to find.
broken_found() ->
    ?assertEqual(ok, check("README.md", "docs/guide-erlang.md#guarantees")),
    ?assertEqual(ok, check("docs/guide-cli.md", "guide-nodes.md")),
    ?assertEqual(ok, check("docs/guide-cli.md", "#exit-codes")),
    ?assertMatch({no_such_file, _}, check("README.md", "docs/no-such-page.md")),
    ?assertMatch({no_such_file, _}, check("docs/guide-cli.md", "docs/guide-nodes.md")),
    ?assertMatch({no_such_heading, _}, check("README.md", "docs/guide-erlang.md#no-such-heading")),
    ?assertMatch({no_such_heading, _}, check("docs/guide-cli.md", "#exit-code")),
    ?assertEqual(["a.md#b", "img/c.svg", "d.md"],
                 links_of("[x](a.md#b) `[not](code.md)` ![pic](img/c.svg \"t\")\n"
                          "```\n[not](fenced.md)\n```\n[ref]: d.md\n"
                          "[web](https://example.com/x.md) [mail](mailto:a@b)\n")).

%%% ---------------------------------------------------------------------
%%% Links
%%% ---------------------------------------------------------------------

%% README.md and docs/*.md, relative to the repository root.
pages() ->
    {ok, Names} = file:list_dir(filename:join(root(), "docs")),
    ["README.md" | lists:sort([filename:join("docs", N) || N <- Names, filename:extension(N) =:= ".md"])].

%% The relative link targets of a page, outside fenced code and code spans
%% (inline links, images and reference definitions).
links_of(Text) ->
    Lines = [strip_code_spans(L) || L <- outside_fences(Text)],
    Inline = [T || L <- Lines,
                   {match, Ms} <- [re:run(L, "\\]\\(([^)\\s]+)(?:\\s+\"[^\"]*\")?\\)",
                                          [global, {capture, all_but_first, list}, unicode])],
                   [T] <- Ms],
    Refs = [T || L <- Lines,
                 {match, [T]} <- [re:run(L, "^\\s{0,3}\\[[^\\]]+\\]:\\s*(\\S+)",
                                         [{capture, all_but_first, list}, unicode])]],
    [T || T <- Inline ++ Refs, not is_absolute(T)].

is_absolute(Target) ->
    re:run(Target, "^([a-zA-Z][a-zA-Z0-9+.-]*:|/)", [{capture, none}]) =:= match.

%% ok, or why Target (written in Page) leads nowhere.
check(Page, Target) ->
    {Path, Anchor} = case string:split(Target, "#") of
                         [P, A] -> {P, A};
                         [P] -> {P, ""}
                     end,
    File = case Path of
               "" -> Page;
               _ -> normalize(filename:join(filename:dirname(Page), Path))
           end,
    Full = filename:join(root(), File),
    case filelib:is_file(Full) of
        false ->
            {no_such_file, File};
        true when Anchor =:= "" ->
            ok;
        true ->
            case filename:extension(File) =:= ".md" andalso not lists:member(Anchor, anchors_of(read(File))) of
                true -> {no_such_heading, File ++ "#" ++ Anchor};
                false -> ok
            end
    end.

%% a/b/../c -> a/c; ./a -> a (paths inside the repository).
normalize(Path) ->
    filename:join(lists:reverse(lists:foldl(fun(".", Acc) -> Acc;
                                               ("..", [_ | Acc]) -> Acc;
                                               (Part, Acc) -> [Part | Acc]
                                            end, [], filename:split(Path)))).

%% The pages reachable from the given ones through relative .md links.
walk([], Seen) ->
    Seen;
walk([Page | Rest], Seen) ->
    case sets:is_element(Page, Seen) of
        true ->
            walk(Rest, Seen);
        false ->
            Next = [normalize(filename:join(filename:dirname(Page), P))
                    || T <- links_of(read(Page)),
                       [P | _] <- [string:split(T, "#")],
                       filename:extension(P) =:= ".md"],
            walk(Next ++ Rest, sets:add_element(Page, Seen))
    end.

%%% ---------------------------------------------------------------------
%%% Headings, as GitHub makes their ids
%%% ---------------------------------------------------------------------

%% The ids of a page's headings (ATX headings outside fenced code; a
%% repeated id gets -1, -2, ...), and of explicit id= or name= anchors.
anchors_of(Text) ->
    Lines = outside_fences(Text),
    Slugs = [slug(H) || L <- Lines,
                        {match, [H]} <- [re:run(L, "^#{1,6}\\s+(.*?)(?:\\s+#+)?\\s*$",
                                                [{capture, all_but_first, list}, unicode])]],
    Html = [A || L <- Lines,
                 {match, Ms} <- [re:run(L, "(?:id|name)=\"([^\"]+)\"", [global, {capture, all_but_first, list}, unicode])],
                 [A] <- Ms],
    number_repeats(Slugs, #{}) ++ Html.

number_repeats([], _) ->
    [];
number_repeats([S | Rest], Count) ->
    case maps:get(S, Count, 0) of
        0 -> [S | number_repeats(Rest, Count#{S => 1})];
        N -> [S ++ "-" ++ integer_to_list(N) | number_repeats(Rest, Count#{S => N + 1})]
    end.

%% GitHub's heading id: the rendered text (code spans keep their text,
%% links their label), lower case, with everything but letters, digits,
%% spaces, '-' and '_' removed and each space made a '-'.
slug(Heading) ->
    Text = re:replace(Heading, "\\[([^\\]]*)\\]\\([^)]*\\)", "\\1", [global, unicode, {return, list}]),
    Plain = [C || C <- string:lowercase(unicode:characters_to_list(Text)),
                  C =/= $`, C =/= $*],
    lists:flatten([case C of
                       $\s -> "-";
                       _ -> [C]
                   end || C <- Plain, keep(C)]).

keep(C) when C >= $a, C =< $z; C >= $0, C =< $9 -> true;
keep($\s) -> true;
keep($-) -> true;
keep($_) -> true;
keep(C) when C > 127 -> not lists:member(C, "—–‘’“”…→←×"); % letters stay, punctuation goes
keep(_) -> false.

%%% ---------------------------------------------------------------------
%%% Helpers
%%% ---------------------------------------------------------------------

%% The lines outside ``` fences.
outside_fences(Text) ->
    {Kept, _} = lists:foldl(fun(L, {Acc, InFence}) ->
                                    case lists:prefix("```", string:trim(L, leading)) of
                                        true -> {Acc, not InFence};
                                        false when InFence -> {Acc, InFence};
                                        false -> {[L | Acc], InFence}
                                    end
                            end, {[], false}, string:split(Text, "\n", all)),
    lists:reverse(Kept).

strip_code_spans(Line) ->
    re:replace(Line, "`[^`]*`", "", [global, unicode, {return, list}]).

read(Page) ->
    {ok, Bin} = file:read_file(filename:join(root(), Page)),
    unicode:characters_to_list(Bin).

root() ->
    filename:dirname(filename:dirname(code:which(beamspy))).
