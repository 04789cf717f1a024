#!/usr/bin/env escript
%% -*- erlang -*-
%%! -noshell
%% recursion_check.escript — no C function of beamspy calls itself, directly
%% or through others, unless test/c/recursion_allowed.txt names that cycle
%% and what bounds its depth.
%%
%% C code that runs inside the VM (the NIF) or reads outside input must
%% never recurse to a depth that the data sets (calls captured, stack depth,
%% term nesting): a scheduler's stack is small, and overflowing it kills the
%% user's node. gcc's -fcallgraph-info writes each file's direct calls
%% (`make callgraph': build/callgraph/**/*.ci); this joins them into one
%% graph (static functions as file:name, the others by name) and lists its
%% cycles. Calls through function pointers are not in the graph: the
%% allow-list's header says how those were checked.
%%
%% Usage: recursion_check.escript ALLOWED_FILE CI_FILE...
%% Prints one line per cycle; exits 1 when a cycle is not allowed or an
%% allowed one no longer exists (the list must say what is true).
main([AllowFile | CiFiles]) when CiFiles =/= [] ->
    G = digraph:new(),
    lists:foreach(fun(F) -> add_edges(G, F) end, CiFiles),
    Found = lists:sort([lists:sort(C) || C <- digraph_utils:cyclic_strong_components(G)]),
    Allowed = allowed(AllowFile),
    New = [C || C <- Found, not lists:keymember(C, 1, Allowed)],
    Gone = [C || {C, _} <- Allowed, not lists:member(C, Found)],
    [io:format("allowed: ~s (~s)~n", [names(C), Why]) || {C, Why} <- Allowed, lists:member(C, Found)],
    [io:format("NOT ALLOWED: ~s: recursion whose depth nothing bounds? make it a loop, or add it "
               "to ~s with what bounds it~n", [names(C), AllowFile]) || C <- New],
    [io:format("STALE: ~s is in ~s but recurses no more: remove its line~n", [names(C), AllowFile])
     || C <- Gone],
    io:format("~b call graphs, ~b functions, ~b cycles (~b allowed)~n",
              [length(CiFiles), digraph:no_vertices(G), length(Found), length(Found) - length(New)]),
    halt(case New ++ Gone of [] -> 0; _ -> 1 end);
main(_) ->
    io:format(standard_error, "usage: recursion_check.escript ALLOWED_FILE CI_FILE...~n", []),
    halt(2).

add_edges(G, File) ->
    {ok, Bin} = file:read_file(File),
    Re = "^edge: \\{ sourcename: \"([^\"]+)\" targetname: \"([^\"]+)\"",
    case re:run(Bin, Re, [global, multiline, {capture, all_but_first, list}]) of
        {match, Edges} ->
            [begin
                 digraph:add_vertex(G, A),
                 digraph:add_vertex(G, B),
                 digraph:add_edge(G, A, B)
             end || [A, B] <- Edges],
            ok;
        nomatch ->
            ok
    end.

%% Lines "fn[ fn...] | what bounds the depth"; # starts a comment.
allowed(File) ->
    {ok, Bin} = file:read_file(File),
    Lines = string:split(unicode:characters_to_list(Bin), "\n", all),
    [entry(L) || L <- Lines, string:trim(L) =/= "", hd(string:trim(L)) =/= $#].

entry(Line) ->
    case string:split(Line, "|") of
        [Fns, Why] -> {lists:sort(string:lexemes(Fns, " ")), string:trim(Why)};
        _ -> io:format(standard_error, "bad line in the allow-list: ~s~n", [Line]), halt(2)
    end.

names(C) -> lists:join(" ", C).
