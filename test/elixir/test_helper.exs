# test_helper.exs — starts ExUnit for the Elixir layer and defines what the
# tests share: BeamSpyTest.Work (code to profile), BeamSpyTest.Helpers
# (a scratch directory, reading folded files, checking nothing is traced).
# Loaded first by run.sh (`elixir -pa ebin -r test_helper.exs -r "*_test.exs"`);
# `MIX_ENV=test mix test` at the repository root runs the same files.

ExUnit.start()

defmodule BeamSpyTest.Work do
  @moduledoc false

  def fib(n) when n < 2, do: n
  def fib(n), do: fib(n - 1) + fib(n - 2)

  # Body calls (not tail calls), so :lists.sort/1 runs under sort_twice/1.
  def sort_twice(list), do: list |> :lists.sort() |> :lists.reverse()

  def crash(reason), do: raise(ArgumentError, "crash: #{reason}")
  def throw_it(value), do: throw(value)
  def exit_with(reason), do: exit(reason)
  def divide(a, b), do: a / b

  def spawn_and_wait(n) do
    parent = self()
    pid = spawn(fn -> send(parent, {:done, fib(n)}) end)

    receive do
      {:done, value} -> {pid, value}
    end
  end

  # {:fib, args} from here: the frame of local_from_here/1 is still on the
  # stack while BeamSpy.run runs (the tuple is built after the call).
  def local_from_here(n, opts), do: {:ok, BeamSpy.run({:fib, [n]}, opts)}

  # BeamSpy.run is the last call: this frame is gone when BeamSpy looks, so
  # it finds the module of whoever called local_in_tail_position/2.
  def local_in_tail_position(n, opts), do: BeamSpy.run({:fib, [n]}, opts)

  def outer_then_tail(n, opts), do: {:ok, local_in_tail_position(n, opts)}

  def private_from_here(opts), do: {:ok, BeamSpy.run({:secret, [1]}, opts)}

  def uses_secret, do: secret(2)
  defp secret(x), do: x * 10
end

defmodule BeamSpyTest.Helpers do
  @moduledoc false
  import ExUnit.Assertions

  @scratch Path.join(System.tmp_dir!(), "beamspy-elixir-test-#{System.os_time()}")
  scratch = @scratch
  File.mkdir_p!(scratch)
  ExUnit.after_suite(fn _ -> File.rm_rf!(scratch) end)

  def scratch(name), do: Path.join(@scratch, name)

  # The frames of every folded line, without the process and the count.
  def folded_stacks(path) do
    path
    |> File.read!()
    |> String.split("\n", trim: true)
    |> Enum.map(fn line ->
      # The count follows the last space (frames may hold spaces:
      # "anonymous fn/1 in Foo.run/2", "<0.80.0> my_server").
      [_, stack, count] = Regex.run(~r/^(.*) ([0-9]+)$/, line)
      assert count =~ ~r/^[0-9]+$/
      [_process | frames] = String.split(stack, ";")
      frames
    end)
  end

  def profile_frames(%{processes: processes}) do
    for {_label, nodes} <- processes, {_id, _parent, frame, _s, _t, _c} <- nodes, do: frame
  end

  def max_run(frames, frame) do
    frames
    |> Enum.chunk_by(&(&1 == frame))
    |> Enum.filter(&(hd(&1) == frame))
    |> Enum.map(&length/1)
    |> Enum.max(fn -> 0 end)
  end

  def assert_nothing_traced do
    assert trace_info(self(), :flags) == {:flags, []}
    assert trace_info({BeamSpyTest.Work, :fib, 1}, :traced) == {:traced, false}
    assert trace_info({:lists, :sort, 1}, :traced) == {:traced, false}
    assert beamspy_trace_sessions() == []
  end

  # :erlang.trace_info/2 as beamspy sees it on this VM: the legacy trace state
  # and, from OTP 27 on, what beamspy's own dynamic trace sessions (named
  # :beamspy) set, where live sessions trace. Flags add up; for any other item
  # the first value that is set wins.
  def trace_info(what, item) do
    Enum.reduce(beamspy_trace_sessions(), :erlang.trace_info(what, item), fn session, acc ->
      case {acc, :trace.info(session, what, item)} do
        {{:flags, a}, {:flags, b}} when is_list(a) and is_list(b) -> {:flags, a ++ b}
        {{^item, unset}, {^item, _} = other} when unset in [false, [], :undefined] -> other
        _ -> acc
      end
    end)
  end

  # beamspy's dynamic trace sessions that exist now ([] before OTP 27).
  def beamspy_trace_sessions do
    if sessions_supported?() do
      for {:beamspy, _} = s <- :trace.session_info(:all), do: s
    else
      []
    end
  end

  # From OTP 27 live sessions run in their own trace session, beside others.
  def sessions_supported?, do: :beamspy_backend.sessions_supported()

  # gen_server's receive loop: loop/7 up to OTP 27, loop/5 from OTP 29 (which
  # also has a loop/4 that calls it): the one with the most arguments.
  def gen_server_loop_arity do
    {:module, :gen_server} = Code.ensure_loaded(:gen_server)
    Enum.max(for {:loop, a} <- :gen_server.module_info(:functions), do: a)
  end
end
