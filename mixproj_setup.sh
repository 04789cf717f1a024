mixproj="$build/mixproj"
mkdir -p "$mixproj/lib" "$mixproj/test"
cat >"$mixproj/mix.exs" <<'MIX'
defmodule Mixproj.MixProject do
  use Mix.Project
  def project, do: [app: :mixproj, version: "0.1.0", deps: []]
end
MIX
{
    echo 'defmodule Mixproj do'
    echo '  def fib(n) when n < 2, do: n'
    echo '  def fib(n), do: fib(n - 1) + fib(n - 2)'
    for i in $(seq 1 300); do echo "  def f$i(x), do: Enum.map(x, &(&1 * $i)) |> Enum.sum()"; done
    echo 'end'
} >"$mixproj/lib/mixproj.ex"
echo 'ExUnit.start()' >"$mixproj/test/test_helper.exs"
cat >"$mixproj/test/mixproj_test.exs" <<'EXS'
defmodule MixprojTest do
  use ExUnit.Case
  test "fib", do: assert(Mixproj.fib(15) == 610)
end
EXS
