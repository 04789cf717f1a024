%%% A module named like an Elixir module, for the `names => elixir' test.
-module('Elixir.Foo.Bar').

-export([f/1]).

f(N) ->
    L = lists:seq(1, N),
    R = lists:reverse(L),
    {'Elixir.Foo.Bar', length(R)}.
