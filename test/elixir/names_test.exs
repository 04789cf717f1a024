# names_test.exs — frames are named the Elixir way by default (in files and
# in profile/2), the Erlang way with names: :erlang; recursion keeps its depth.
defmodule BeamSpyTest.NamesTest do
  use ExUnit.Case
  import BeamSpyTest.Helpers
  alias BeamSpyTest.Work

  test "the folded file names Elixir modules Mod.fun/arity and keeps recursion depth" do
    path = scratch("fib10.folded")
    # Raw times: the depth is read from the folded lines, and a stack whose
    # compensated time rounds to 0 µs gets no line (fib's deepest calls keep
    # a few hundred ns).
    BeamSpy.run({Work, :fib, [10]}, output: path, quiet: true, compensate: false)
    stacks = folded_stacks(path)
    frames = List.flatten(stacks)
    assert "BeamSpyTest.Work.fib/1" in frames
    refute Enum.any?(frames, &String.contains?(&1, "'Elixir."))
    # fib(10) -> fib(9) -> ... -> fib(1): ten frames deep, not collapsed.
    assert stacks |> Enum.map(&max_run(&1, "BeamSpyTest.Work.fib/1")) |> Enum.max() == 10
  end

  test "Erlang modules read :module.fun/arity" do
    path = scratch("sort_elixir.folded")
    BeamSpy.run({Work, :sort_twice, [[3, 1, 2]]}, output: path, quiet: true)
    assert ["BeamSpyTest.Work.sort_twice/1", ":lists.sort/1"] in folded_stacks(path)
  end

  test "names: :erlang gives module:fun/arity" do
    path = scratch("sort_erlang.folded")
    BeamSpy.run({Work, :sort_twice, [[3, 1, 2]]}, output: path, quiet: true, names: :erlang)
    assert ["'Elixir.BeamSpyTest.Work':sort_twice/1", "lists:sort/1"] in folded_stacks(path)
  end

  test "profile/2 uses Elixir names too" do
    assert {:ok, %{result: {:return, 55}, profile: profile, files: []}} =
             BeamSpy.profile({Work, :fib, [10]})

    frames = profile_frames(profile)
    assert "BeamSpyTest.Work.fib/1" in frames
    assert Enum.count(frames, &(&1 == "BeamSpyTest.Work.fib/1")) == 10
    assert_nothing_traced()
  end

  test "profile/2 with names: :erlang" do
    {:ok, %{profile: profile}} = BeamSpy.profile({Work, :sort_twice, [[2, 1]]}, names: :erlang)
    frames = profile_frames(profile)
    assert "'Elixir.BeamSpyTest.Work':sort_twice/1" in frames
    assert "lists:sort/1" in frames
  end

  test "profile/2 nodes form a tree: each node's parent comes before it" do
    {:ok, %{profile: %{processes: [{label, nodes}]}}} = BeamSpy.profile({Work, :fib, [6]})
    assert label == List.to_string(:erlang.pid_to_list(self()))

    Enum.reduce(nodes, MapSet.new(), fn {id, parent, _frame, self_ns, total_ns, _calls}, seen ->
      assert parent == :undefined or MapSet.member?(seen, parent)
      assert self_ns <= total_ns
      MapSet.put(seen, id)
    end)
  end

  test "profile/2 writes files only when asked" do
    path = scratch("profile.folded")
    # Raw times: fib(5) runs in well under a microsecond untraced, its
    # compensated stacks could round to no folded line.
    assert {:ok, %{files: [written]}} =
             BeamSpy.profile({Work, :fib, [5]}, output: path, compensate: false)
    assert List.to_string(written) == path
    assert Enum.any?(folded_stacks(path), &("BeamSpyTest.Work.fib/1" in &1))
  end
end
