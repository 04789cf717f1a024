# cpu_shop.exs — the Elixir node of docs/guide-nodes.md's `record --mode cpu`
# session: two busy services, registered by name, until the node is stopped.
#   elixir --erl "+JPperf true" --sname shop docs/examples/cpu_shop.exs
#   bin/beamspy record --node shop --all --mode cpu --duration 10s -o shop.svg -o shop.folded
defmodule Shop.Pricing do
  # Prices baskets of 200 items: the total of each rounded to cents.
  def loop(n) do
    basket = for i <- 1..200, do: {i, :rand.uniform() * 100}
    _total = basket |> Enum.map(fn {_, p} -> Float.round(p * 1.2, 2) end) |> Enum.sum()
    loop(n + 1)
  end
end

defmodule Shop.Parser do
  # Parses generated Elixir source: a module with 20 small functions.
  def loop(n) do
    source =
      "defmodule Gen#{rem(n, 100)} do\n" <>
        Enum.map_join(1..20, "\n", fn i -> "  def f#{i}(x), do: x * #{i} + #{n}" end) <> "\nend\n"

    {:ok, _ast} = Code.string_to_quoted(source)
    loop(n + 1)
  end
end

for {name, mod} <- [{Shop.Pricing, Shop.Pricing}, {Shop.Parser, Shop.Parser}] do
  pid = spawn(mod, :loop, [0])
  Process.register(pid, name)
end

IO.puts("shop: #{inspect(Process.whereis(Shop.Pricing))} Shop.Pricing, #{inspect(Process.whereis(Shop.Parser))} Shop.Parser")
Process.sleep(:infinity)
