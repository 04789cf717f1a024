%%% beamspy_open — `open => true': the flame graph just written, opened in
%%% the user's browser, or, where there is none to open it with, a line on
%%% standard error saying where it is.
%%%
%%% The page is the first HTML file written, else the first SVG. The
%%% browser is the one $BROWSER names (the usual convention), else `open'
%%% on macOS, else `xdg-open' when there is a display ($DISPLAY or
%%% $WAYLAND_DISPLAY). It is started detached from this VM (a shell that
%%% runs it in the background with /dev/null for its input and output), so
%%% a browser that keeps running holds nothing of the VM's.
-module(beamspy_open).

-export([files/1]).

%% @doc Opens the HTML or SVG among Files, or says why it cannot; `ok'
%% either way (a browser that does not start must not fail the profile).
%%
%% ```
%% 1> beamspy_open:files(["/tmp/fib.folded"]).
%% beamspy: open: no HTML or SVG among the files written (ask for formats html or svg)
%% ok
%% '''
-spec files([file:filename()]) -> ok.
files(Files) ->
    Say = fun(F, A) -> io:format(standard_error, "beamspy: open: " ++ F ++ "~n", A) end,
    case page(Files) of
        none ->
            Say("no HTML or SVG among the files written (ask for formats html or svg)", []);
        Page ->
            Abs = filename:absname(Page),
            case launcher() of
                {ok, Exe} ->
                    case start_detached(Exe, Abs) of
                        ok -> ok;
                        {error, Why} -> Say("~ts could not start (~tp): open file://~ts in a browser",
                                            [Exe, Why, Abs])
                    end;
                {none, Why} ->
                    Say("~ts: open file://~ts in a browser", [Why, Abs])
            end
    end,
    ok.

%% The program that opens a page here, or why there is none.
-spec launcher() -> {ok, file:filename()} | {none, string()}.
launcher() ->
    Display = os:getenv("DISPLAY", "") =/= "" orelse os:getenv("WAYLAND_DISPLAY", "") =/= "",
    case {browser_env(), os:type(), Display} of
        {{ok, Exe}, _, _} -> {ok, Exe};
        {_, {unix, darwin}, _} -> found("open");
        {_, _, true} -> found("xdg-open");
        {_, _, false} -> {none, "no display here (DISPLAY and BROWSER are not set)"}
    end.

browser_env() ->
    case string:lexemes(os:getenv("BROWSER", ""), " ") of
        [Name | _] -> found(Name);
        [] -> none
    end.

found(Name) ->
    case os:find_executable(Name) of
        false -> {none, Name ++ " is not installed"};
        Exe -> {ok, Exe}
    end.

page(Files) ->
    Ends = fun(Ext) -> [F || F <- Files, string:lowercase(filename:extension(F)) =:= Ext] end,
    case {Ends(".html"), Ends(".svg")} of
        {[H | _], _} -> H;
        {[], [S | _]} -> S;
        {[], []} -> none
    end.

%% sh runs Exe Page in the background and exits at once: the arguments go
%% as positional parameters, never through the shell's parser.
start_detached(Exe, Page) ->
    try
        Port = open_port({spawn_executable, "/bin/sh"},
                         [{args, ["-c", "\"$0\" \"$1\" </dev/null >/dev/null 2>&1 &", Exe, Page]},
                          exit_status]),
        receive
            {Port, {exit_status, 0}} -> ok;
            {Port, {exit_status, N}} -> {error, {exit_status, N}}
        after 10000 ->
            try port_close(Port) catch error:badarg -> ok end,
            {error, timeout}
        end
    catch error:Why -> {error, Why}
    end.
