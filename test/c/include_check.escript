#!/usr/bin/env escript
%% -*- erlang -*-
%%! -noshell
%% include_check.escript — beamspy's C sources include one another in one
%% direction only: no circle of includes, between files or between folders.
%%
%% A file and its header are one unit (c_src/nif/session.c and session.h
%% are `nif/session'): a unit depends on every unit whose header one of its
%% two files includes. A circle of units (session.c includes halt_write.h,
%% whose .c includes write_request.h, ... back to session.h) means that no
%% part of it can be read, changed or tested without the others. Folders
%% are the layers (engine at the bottom; readers, writers above it; the NIF
%% and the tool on top): a folder depends on the folders its units include,
%% and that graph has no circle either.
%%
%% Includes are resolved as the compiler does with the Makefile's -I
%% options: next to the including file first, then c_src/ and c_src/dist/.
%% Generated headers (build/gen) and system headers are not C sources of
%% beamspy and are left out.
%%
%% Usage: include_check.escript ALLOWED_FILE C_SRC_DIR
%% ALLOWED_FILE lists the circles of units still there, each with why it is
%% left (none between folders may be); a circle not in it fails, and so
%% does a line of it that no longer names a circle (the list says what is
%% true). Prints every circle found and exits 1 on a failure.
main([AllowFile, Root]) ->
    Files = filelib:wildcard(filename:join(Root, "*/*.[ch]")),
    Units = digraph:new(),
    Dirs = digraph:new(),
    lists:foreach(fun(F) -> add_edges(Root, F, Units, Dirs) end, Files),
    UnitCycles = cycles(Units),
    DirCycles = cycles(Dirs),
    Allowed = allowed(AllowFile),
    New = [C || C <- UnitCycles, not lists:keymember(C, 1, Allowed)],
    Gone = [C || {C, _} <- Allowed, not lists:member(C, UnitCycles)],
    [io:format("allowed: ~s (~s)~n", [cycle_text(Units, C), Why])
     || {C, Why} <- Allowed, lists:member(C, UnitCycles)],
    [io:format("CIRCLE of includes between files: ~s: let the data flow one way (move what both "
               "need below both, or let the upper one hand it down)~n", [cycle_text(Units, C)]) || C <- New],
    [io:format("CIRCLE of includes between folders: ~s~n", [cycle_text(Dirs, C)]) || C <- DirCycles],
    [io:format("STALE: ~s is in ~s but is no circle any more: remove its line~n",
               [lists:join(" ", C), AllowFile]) || C <- Gone],
    io:format("~b files, ~b units, ~b folders: ~b circles (~b allowed)~n",
              [length(Files), digraph:no_vertices(Units), digraph:no_vertices(Dirs),
               length(UnitCycles) + length(DirCycles), length(UnitCycles) - length(New)]),
    halt(case New ++ Gone ++ DirCycles of [] -> 0; _ -> 1 end);
main(_) ->
    io:format(standard_error, "usage: include_check.escript ALLOWED_FILE C_SRC_DIR~n", []),
    halt(2).

%% Lines "unit[ unit...] | why it is left"; # starts a comment.
allowed(File) ->
    {ok, Bin} = file:read_file(File),
    Lines = string:split(unicode:characters_to_list(Bin), "\n", all),
    [entry(L) || L <- Lines, string:trim(L) =/= "", hd(string:trim(L)) =/= $#].

entry(Line) ->
    case string:split(Line, "|") of
        [Us, Why] -> {lists:sort(string:lexemes(Us, " ")), string:trim(Why)};
        _ -> io:format(standard_error, "bad line in the allow-list: ~s~n", [Line]), halt(2)
    end.

%% The unit of a file: its folder and name without the extension
%% ("nif/session"), relative to Root.
unit(Root, Path) ->
    Rel = relative(Root, Path),
    filename:rootname(Rel).

relative(Root, Path) ->
    R = filename:split(filename:absname(Root)),
    P = filename:split(filename:absname(Path)),
    filename:join(lists:nthtail(length(R), P)).

add_edges(Root, File, Units, Dirs) ->
    From = unit(Root, File),
    add_vertex(Units, From),
    add_vertex(Dirs, filename:dirname(From)),
    {ok, Bin} = file:read_file(File),
    Included = re:run(Bin, "^\\s*#\\s*include\\s*\"([^\"]+)\"", [global, multiline, {capture, all_but_first, list}]),
    Names = case Included of nomatch -> []; {match, Ms} -> [N || [N] <- Ms] end,
    lists:foreach(
      fun(Name) ->
              case resolve(Root, File, Name) of
                  none -> ok;
                  Target ->
                      To = unit(Root, Target),
                      add_edge(Units, From, To),
                      add_edge(Dirs, filename:dirname(From), filename:dirname(To))
              end
      end, Names).

%% The included file as the compiler finds it, if it is one of Root's.
resolve(Root, File, Name) ->
    Candidates = [filename:join(filename:dirname(File), Name), filename:join(Root, Name),
                  filename:join([Root, "dist", Name])],
    case [normalize(C) || C <- Candidates, filelib:is_regular(C)] of
        [Found | _] ->
            case lists:prefix(filename:split(filename:absname(Root)), filename:split(Found)) of
                true -> Found;
                false -> none
            end;
        [] -> none
    end.

%% An absolute path without "." and "..".
normalize(Path) ->
    normalize(filename:split(filename:absname(Path)), []).

normalize([], Acc) -> filename:join(lists:reverse(Acc));
normalize(["." | T], Acc) -> normalize(T, Acc);
normalize([".." | T], [_ | Acc]) -> normalize(T, Acc);
normalize([H | T], Acc) -> normalize(T, [H | Acc]).

add_vertex(G, V) -> digraph:add_vertex(G, V).

add_edge(_G, V, V) -> ok;
add_edge(G, From, To) ->
    add_vertex(G, From),
    add_vertex(G, To),
    case lists:member(To, digraph:out_neighbours(G, From)) of
        true -> ok;
        false -> digraph:add_edge(G, From, To)
    end.

%% The strongly connected components of more than one vertex (an edge to
%% itself is never added).
cycles(G) ->
    lists:sort([lists:sort(C) || C <- digraph_utils:cyclic_strong_components(G)]).

%% One circle through the component's first vertex, as "a -> b -> ... -> a",
%% then the component's other members if the circle does not pass them.
cycle_text(G, [First | _] = Component) ->
    Sub = digraph_utils:subgraph(G, Component),
    Path = digraph:get_short_cycle(Sub, First),
    digraph:delete(Sub),
    Rest = Component -- Path,
    lists:flatten([lists:join(" -> ", Path),
                   case Rest of [] -> ""; _ -> [" (and through ", lists:join(", ", Rest), ")"] end]).
