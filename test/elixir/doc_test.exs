# doc_test.exs — runs the examples in BeamSpy's documentation, and holds
# run/2's option list (what `h BeamSpy.run` shows) to the option table of docs/reference-options.md.
defmodule BeamSpyTest.DocTest do
  use ExUnit.Case
  doctest BeamSpy

  @readme Path.expand("../../docs/reference-options.md", __DIR__)

  test "h BeamSpy.run lists every option of the option table (docs/reference-options.md)" do
    [_, table] = String.split(File.read!(@readme), "| option | default | meaning |\n", parts: 2)
    [table | _] = String.split(table, "\n\n", parts: 2)

    options =
      for line <- String.split(table, "\n"),
          [_, first | _] <- [String.split(line, "|")],
          [_, key] <- Regex.scan(~r/`([a-z_]+)`/, first),
          uniq: true,
          do: key

    assert length(options) > 25

    {:docs_v1, _, _, _, _, _, docs} = Code.fetch_docs(BeamSpy)
    [doc] = for {{:function, :run, 2}, _, _, %{"en" => doc}, _} <- docs, do: doc
    [_, listed] = String.split(doc, "## Options", parts: 2)
    items = Regex.scan(~r/^  \* (`:[a-z_]+`(?:, `:[a-z_]+`)*) —/m, listed, capture: :all_but_first)
    documented = for [keys] <- items, [_, key] <- Regex.scan(~r/`:([a-z_]+)`/, keys), do: key

    assert options -- documented == []
  end
end
