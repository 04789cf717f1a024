#!/usr/bin/env escript
%%! -noshell
%% embed_docs.escript — puts the documentation of beamspy's Erlang modules
%% into their .beam files, so `h(beamspy)' in erl and `h :beamspy' in iex
%% work wherever the beams go (the Makefile's ebin/, a Mix or rebar3 build,
%% a node the command-line tool loads them onto).
%%
%% Usage: embed_docs.escript EBIN_DIR SOURCE.erl...
%% edoc turns each module's @doc comments into an EEP-48 "Docs" chunk (as
%% OTP does for its own modules); the chunk is added to EBIN_DIR/<mod>.beam.
%% Without edoc (Debian's erlang-edoc) it says so and leaves the beams as
%% they are: docs are a convenience, never a reason to fail a build.
-mode(compile).

main([Ebin | Sources]) when Sources =/= [] ->
    case code:which(edoc_doclet_chunks) of
        non_existing ->
            io:format(standard_error, "beamspy: edoc is not installed (Debian package erlang-edoc): "
                      "the Erlang modules are built without their documentation~n", []);
        _ ->
            Tmp = tmp_dir(),
            try
                ok = edoc:files(Sources, [{doclet, edoc_doclet_chunks}, {layout, edoc_layout_chunks},
                                          {dir, Tmp}, {preprocess, true}]),
                lists:foreach(fun(Src) -> embed(Ebin, Tmp, Src) end, Sources)
            catch Class:Why ->
                io:format(standard_error, "beamspy: could not build the Erlang modules' docs "
                          "(~tw:~tw); the modules work, without documentation~n", [Class, Why])
            after
                _ = file:del_dir_r(Tmp)
            end
    end;
main(_) ->
    io:format(standard_error, "usage: embed_docs.escript EBIN_DIR SOURCE.erl...~n", []),
    halt(2).

embed(Ebin, Tmp, Src) ->
    Mod = filename:basename(Src, ".erl"),
    Beam = filename:join(Ebin, Mod ++ ".beam"),
    {ok, Docs} = file:read_file(filename:join([Tmp, "chunks", Mod ++ ".chunk"])),
    {ok, _, Chunks} = beam_lib:all_chunks(Beam),
    Kept = [C || {Id, _} = C <- Chunks, Id =/= "Docs"],
    {ok, Bin} = beam_lib:build_module(Kept ++ [{"Docs", Docs}]),
    ok = write_atomically(Beam, Bin).

write_atomically(Path, Bin) ->
    Tmp = Path ++ ".docs-tmp",
    ok = file:write_file(Tmp, Bin),
    file:rename(Tmp, Path).

tmp_dir() ->
    Base = case os:getenv("TMPDIR") of
               false -> "/tmp";
               "" -> "/tmp";
               D -> D
           end,
    Dir = filename:join(Base, "beamspy-docs-" ++ os:getpid()),
    ok = filelib:ensure_path(Dir),
    Dir.
