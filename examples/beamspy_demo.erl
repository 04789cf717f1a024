%%% @doc The workload `make demo' profiles: a small word-count service.
%%%
%%% A gen_server keeps word counts; four client processes tokenise generated
%%% text, send batches to the server and ask it for the top words, which it
%%% computes with lists:sort/2. It has the shapes real code has: message
%%% passing, body and tail recursion, BIF-heavy list work and waiting.
-module(beamspy_demo).
-behaviour(gen_server).

-export([main/1, run/0]).
-export([init/1, handle_call/3, handle_cast/2]).

%% @doc Profiles run/0 into OutDir and prints the files and the ten frames
%% with the most self time.
%%
%% Every format but the SVG keeps the whole recording: one root per process,
%% waiting included. The SVG is the first picture a newcomer opens, so it is
%% drawn from the same profile to explain itself: the five processes merged
%% into one tree, their waiting (WAIT, RUNNABLE) left out and each loop's
%% recursion folded into one frame, so that the three hot paths (tokenising,
%% generating text, calling the server) are three wide towers, and its
%% subtitle says all that.
-spec main([string()]) -> ok.
main([OutDir]) ->
    Title = "beamspy demo: a word-count service",
    {ok, #{result := {return, Top}, profile := Profile, files := Files0}} =
        beamspy:profile(fun run/0, #{output => OutDir, quiet => true, palette => beam, title => Title,
                                     formats => [html, speedscope, chrome, folded, bspy]}),
    [Html] = [F || F <- Files0, filename:extension(F) =:= ".html"],
    Svg = filename:rootname(Html) ++ ".svg",
    {ok, SvgBytes} =
        beamspy:render(Profile, svg,
                       #{palette => beam, title => Title, merge => true, drop_sleep => true,
                         collapse_recursion => direct,
                         subtitle => "Running time of the 4 clients and the server, merged into one tree; "
                                     "waiting left out and loops folded into one frame (the .html has "
                                     "every process and its waiting). Click a frame to zoom, Ctrl-F to search."}),
    ok = file:write_file(Svg, SvgBytes),
    Files = Files0 ++ [Svg],
    io:format("~nbeamspy demo: profiled a word-count service (1 gen_server, 4 clients)~n"),
    io:format("most frequent words: ~p~n~n", [[W || {W, _} <- lists:sublist(Top, 5)]]),
    io:format("files written:~n"),
    [io:format("  ~ts~n", [filename:absname(F)]) || F <- Files],
    #{processes := Procs, events := Events, memory_peak := Peak} = Profile,
    io:format("~nrecorded ~w events from ~w processes, peak recording memory ~w KiB~n",
              [Events, length(Procs), Peak div 1024]),
    io:format("~nthe ten frames with the most self time (~ts):~n~n", [times_text(Profile)]),
    io:format("  ~10s  ~8s  ~s~n", ["self (ms)", "calls", "frame"]),
    [io:format("  ~10.2f  ~8w  ~ts~n", [Ns / 1.0e6, Calls, Name])
     || {Name, Ns, Calls} <- top_self(Procs, 10)],
    ok.

%% What the times are: compensated for the tracer's own cost (by how much),
%% or raw traced times.
times_text(#{compensation := #{text := Text}}) when Text =/= <<>> -> Text;
times_text(_) -> <<"raw traced times">>.

top_self(Procs, N) ->
    Sum = lists:foldl(
            fun({_Label, Nodes}, Acc0) ->
                    lists:foldl(fun({_, undefined, _, _, _, _}, Acc) -> Acc;
                                   ({_, _, Name, Self, _, Calls}, Acc) ->
                                        {S, C} = maps:get(Name, Acc, {0, 0}),
                                        Acc#{Name => {S + Self, C + Calls}}
                                end, Acc0, Nodes)
            end, #{}, Procs),
    Sorted = lists:reverse(lists:keysort(2, [{Name, S, C} || {Name, {S, C}} <- maps:to_list(Sum)])),
    lists:sublist(Sorted, N).

%% @doc The workload: returns the top 20 words and their counts.
-spec run() -> [{binary(), pos_integer()}].
run() ->
    {ok, Server} = gen_server:start_link(?MODULE, [], []),
    Parent = self(),
    Clients = [spawn_link(fun() -> client(Server, Seed), Parent ! {done, self()} end)
               || Seed <- lists:seq(1, 4)],
    [receive {done, C} -> ok end || C <- Clients],
    Top = gen_server:call(Server, {top, 20}),
    ok = gen_server:stop(Server),
    Top.

client(Server, Seed) ->
    rand:seed(exsss, {Seed, Seed, Seed}),
    lists:foreach(fun(_) ->
                          Words = tokenise(text(60)),
                          ok = gen_server:call(Server, {add, Words})
                  end, lists:seq(1, 25)).

text(N) ->
    Vocabulary = {<<"beam">>, <<"erlang">>, <<"elixir">>, <<"process">>, <<"message">>,
                  <<"scheduler">>, <<"flame">>, <<"graph">>, <<"trace">>, <<"stack">>,
                  <<"call">>, <<"return">>, <<"node">>, <<"atom">>, <<"binary">>},
    iolist_to_binary(lists:join(<<" ">>, [element(rand:uniform(15), Vocabulary) || _ <- lists:seq(1, N)])).

tokenise(Text) ->
    [string:lowercase(W) || W <- binary:split(Text, <<" ">>, [global]), W =/= <<>>].

%% @private
init([]) -> {ok, #{}}.

%% @private
handle_call({add, Words}, _From, Counts) ->
    {reply, ok, count(Words, Counts)};
handle_call({top, N}, _From, Counts) ->
    Sorted = lists:sort(fun({_, A}, {_, B}) -> A >= B end, maps:to_list(Counts)),
    {reply, lists:sublist(Sorted, N), Counts}.

%% @private
handle_cast(_Msg, State) -> {noreply, State}.

count([], Counts) -> Counts;
count([W | Ws], Counts) -> count(Ws, maps:update_with(W, fun(C) -> C + 1 end, 1, Counts)).
