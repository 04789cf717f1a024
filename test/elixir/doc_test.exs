# doc_test.exs — runs the examples in BeamSpy's documentation.
defmodule BeamSpyTest.DocTest do
  use ExUnit.Case
  doctest BeamSpy
end
