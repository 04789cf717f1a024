# run_test.exs — BeamSpy.run/2 calls every kind of target and returns its
# value; options are keyword lists or maps; output files are written.
defmodule BeamSpyTest.RunTest do
  use ExUnit.Case
  import ExUnit.CaptureIO
  import BeamSpyTest.Helpers
  alias BeamSpyTest.Work

  def double(x), do: x * 2

  defp pid_label(pid), do: List.to_string(:erlang.pid_to_list(pid))

  test "{Module, :function, args} returns the value" do
    assert BeamSpy.run({Work, :fib, [10]}, output: scratch("mfa.folded"), quiet: true) == 55
    assert_nothing_traced()
  end

  test "an Erlang module as {:module, :function, args}" do
    assert BeamSpy.run({:lists, :seq, [1, 3]}, output: scratch("erl.folded"), quiet: true) ==
             [1, 2, 3]
  end

  test "a fun of no arguments returns the value" do
    assert BeamSpy.run(fn -> Work.fib(8) end, output: scratch("fun.folded"), quiet: true) == 21
    assert_nothing_traced()
  end

  test "{fun, args} returns the value" do
    assert BeamSpy.run({&Work.fib/1, [7]}, output: scratch("fun_args.folded"), quiet: true) == 13

    assert BeamSpy.run({fn a, b -> a + b end, [1, 2]}, output: scratch("fn2.folded"), quiet: true) ==
             3
  end

  test "{:function, args} calls a public function of the calling module" do
    assert BeamSpy.run({:double, [21]}, output: scratch("local.folded"), quiet: true) == 42
    assert_nothing_traced()
  end

  test "{:function, args} from another module resolves to that module" do
    assert Work.local_from_here(9, output: scratch("local_work.folded"), quiet: true) == {:ok, 34}

    assert Enum.any?(
             folded_stacks(scratch("local_work.folded")),
             &("BeamSpyTest.Work.fib/1" in &1)
           )
  end

  test "{:function, args} in tail position falls back to the caller's caller of the same module" do
    assert Work.outer_then_tail(6, output: scratch("tail.folded"), quiet: true) == {:ok, 8}
  end

  test "run/1 works with defaults (writes into the current directory)" do
    dir = scratch("cwd")
    File.mkdir_p!(dir)

    File.cd!(dir, fn ->
      output = capture_io(fn -> assert BeamSpy.run({Work, :fib, [5]}) == 5 end)
      assert [file] = File.ls!(dir)
      assert file =~ ~r/^beamspy-.*\.html$/
      assert output =~ "beamspy: wrote ./#{file}"
      assert File.read!(file) =~ "BeamSpyTest.Work.fib/1"
    end)
  end

  test "a map of options works like a keyword list" do
    path = scratch("map.folded")
    # Raw times: fib(6)'s compensated stacks could round to no folded line.
    assert BeamSpy.run({Work, :fib, [6]}, %{output: path, quiet: true, compensate: false}) == 8
    assert Enum.any?(folded_stacks(path), &("BeamSpyTest.Work.fib/1" in &1))
  end

  test "a bare atom in the options means true, as in an Erlang proplist" do
    assert capture_io(fn ->
             BeamSpy.run({Work, :fib, [3]}, [:quiet, output: scratch("bare.folded")])
           end) == ""
  end

  test "prints where it wrote unless quiet" do
    path = scratch("loud.folded")

    # Where it wrote, then what the times are (folded has no header for it).
    assert [wrote, times, ""] =
             String.split(capture_io(fn -> BeamSpy.run({Work, :fib, [3]}, output: path) end), "\n")

    assert wrote == "beamspy: wrote #{path}"
    assert times =~ ~r/^beamspy: traced times compensated for tracer overhead: \d+ ns\/call/
  end

  test "a directory output gets one file per format" do
    dir = scratch("outdir")
    assert BeamSpy.run({Work, :fib, [4]}, output: dir, formats: [:folded], quiet: true) == 3
    assert [file] = File.ls!(dir)
    assert String.ends_with?(file, ".folded")
  end

  test "the call runs in the calling process" do
    me = self()
    assert BeamSpy.run(fn -> self() end, output: scratch("self.folded"), quiet: true) == me
    BeamSpy.run(fn -> send(self(), :hello) end, output: scratch("send.folded"), quiet: true)
    assert_received :hello
  end

  test "spawned processes are recorded under their own pid" do
    path = scratch("children.folded")
    assert {child, 21} = BeamSpy.run({Work, :spawn_and_wait, [8]}, output: path, quiet: true)
    lines = path |> File.read!() |> String.split("\n", trim: true)
    assert Enum.any?(lines, &String.starts_with?(&1, pid_label(child) <> ";"))
    assert Enum.any?(lines, &String.starts_with?(&1, pid_label(self()) <> ";"))
    assert_nothing_traced()
  end
end
