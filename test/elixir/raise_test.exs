# raise_test.exs — what the traced call raises, throws or exits with reaches
# the caller unchanged: same kind, same reason, same stacktrace head.
defmodule BeamSpyTest.RaiseTest do
  use ExUnit.Case
  import BeamSpyTest.Helpers
  alias BeamSpyTest.Work

  defp outcome(fun) do
    try do
      {:returned, fun.()}
    catch
      kind, reason -> {kind, reason, List.first(__STACKTRACE__)}
    end
  end

  defp traced(target),
    do: fn -> BeamSpy.run(target, output: scratch("raise.folded"), quiet: true) end

  test "an exception keeps its kind, reason and stacktrace head" do
    untraced = outcome(fn -> Work.crash("x") end)
    assert {:error, %ArgumentError{message: "crash: x"}, {Work, :crash, 1, _}} = untraced
    assert outcome(traced({Work, :crash, ["x"]})) == untraced
    assert_nothing_traced()
  end

  test "an Erlang error keeps its raw reason" do
    untraced = outcome(fn -> Work.divide(1, 0) end)
    assert {:error, :badarith, _} = untraced
    assert outcome(traced({Work, :divide, [1, 0]})) == untraced
  end

  test "a throw stays a throw" do
    assert outcome(traced({Work, :throw_it, [:ball]})) == outcome(fn -> Work.throw_it(:ball) end)
    assert {:throw, :ball, _} = outcome(traced({Work, :throw_it, [:ball]}))
    assert_nothing_traced()
  end

  test "an exit stays an exit" do
    assert {:exit, {:shutdown, 1}, _} = outcome(traced({Work, :exit_with, [{:shutdown, 1}]}))
    assert_nothing_traced()
  end

  test "an exception raised in a fun target keeps its stacktrace" do
    untraced = outcome(fn -> Work.crash("fun") end)
    assert outcome(traced(fn -> Work.crash("fun") end)) == untraced
  end

  test "the profile is still written when the call raises" do
    path = scratch("raised.folded")
    catch_error(BeamSpy.run({Work, :crash, ["w"]}, output: path, quiet: true))
    assert Enum.any?(folded_stacks(path), &("BeamSpyTest.Work.crash/1" in &1))
  end

  test "profile/2 reports a raise as {:raise, kind, reason, stacktrace}" do
    assert {:ok, %{result: {:raise, :throw, :ball, [{Work, :throw_it, 1, _} | _]}}} =
             BeamSpy.profile({Work, :throw_it, [:ball]})

    assert_nothing_traced()
  end

  test "a second run inside a running one raises in the inner call; the outer re-raises it" do
    inner = fn -> BeamSpy.run(fn -> :inner end, quiet: true, output: scratch("inner.folded")) end

    error =
      assert_raise RuntimeError, fn ->
        BeamSpy.run(inner, quiet: true, output: scratch("outer.folded"))
      end

    assert error.message =~ "beamspy: "
    assert_nothing_traced()
  end
end
