# live_test.exs — BeamSpy.start/2, stop/1,2, trace/3 and sessions/0 on
# processes that are already running (an Agent under load), Elixir names by
# default, limits and their message, bad input, nothing left traced.
defmodule BeamSpyTest.LiveTest do
  use ExUnit.Case
  import BeamSpyTest.Helpers
  alias BeamSpyTest.Work

  setup do
    {:ok, agent} = Agent.start(fn -> 0 end, name: BeamSpyTest.LiveCounter)
    load = spawn(fn -> load(agent) end)

    on_exit(fn ->
      Process.exit(load, :kill)
      if Process.alive?(agent), do: Agent.stop(agent)
    end)

    %{agent: agent}
  end

  # Calls the agent over and over, each call doing some work in the agent.
  defp load(agent) do
    Agent.update(agent, fn n -> n + Work.fib(12) end)
    load(agent)
  end

  defp assert_live_clean(pids) do
    assert BeamSpy.sessions() == []

    for pid <- pids do
      assert trace_info(pid, :flags) == {:flags, []}
    end

    assert trace_info(:new, :flags) == {:flags, []}
    assert trace_info(:on_load, :traced) == {:traced, false}
    assert_nothing_traced()
  end

  # The frames of every folded line (the process label may contain a space).
  defp stacks(path) do
    for line <- String.split(File.read!(path), "\n", trim: true) do
      [_, stack] = Regex.run(~r/^(.*) [0-9]+$/, line)
      [_process | frames] = String.split(stack, ";")
      frames
    end
  end

  defp wait_until(fun, tries \\ 200) do
    cond do
      fun.() -> :ok
      tries == 0 -> flunk("condition never became true")
      true -> Process.sleep(10) && wait_until(fun, tries - 1)
    end
  end

  test "start/stop on a running Agent by pid writes its flame graph", %{agent: agent} do
    path = scratch("agent.folded")
    assert {:ok, session} = BeamSpy.start(agent, output: path)
    assert {:flags, [_ | _]} = trace_info(agent, :flags)
    Process.sleep(200)
    assert BeamSpy.stop(session) == {:ok, [String.to_charlist(path)]}

    stacks = stacks(path)

    assert Enum.any?(
             stacks,
             &("Agent.Server.handle_cast/2" in &1 or "Agent.Server.handle_call/3" in &1)
           )

    assert Enum.any?(stacks, &("BeamSpyTest.Work.fib/1" in &1))
    # Seeded when tracing started: every stack starts at the process's first frame.
    assert Enum.all?(stacks, &(hd(&1) == ":proc_lib.init_p_do_apply/3"))
    assert_live_clean([agent])
  end

  test "by registered name, stop(profile: true) gives the tree with Elixir names", %{agent: agent} do
    assert {:ok, session} = BeamSpy.start(BeamSpyTest.LiveCounter)
    Process.sleep(100)

    assert {:ok, %{profile: profile, files: [], truncated: false}} =
             BeamSpy.stop(session, profile: true)

    assert [{label, _nodes}] = profile.processes
    # The root label is spelled in Elixir too, as the frames are.
    assert label == "#{:erlang.pid_to_list(agent)} BeamSpyTest.LiveCounter"
    frames = profile_frames(profile)
    assert ":gen_server.loop/#{gen_server_loop_arity()}" in frames
    assert "BeamSpyTest.Work.fib/1" in frames
    assert max_run(frames, "BeamSpyTest.Work.fib/1") >= 1
    assert_live_clean([agent])
  end

  test "trace/3 records for the given time", %{agent: agent} do
    path = scratch("trace.folded")
    t0 = System.monotonic_time(:millisecond)
    assert BeamSpy.trace(agent, 300, output: path) == {:ok, [String.to_charlist(path)]}
    assert System.monotonic_time(:millisecond) - t0 >= 300
    assert Enum.any?(stacks(path), &("BeamSpyTest.Work.fib/1" in &1))
    refute_received {:beamspy, _, _}
    assert_live_clean([agent])
  end

  test "a limit stops tracing at once and tells the caller", %{agent: agent} do
    path = scratch("limit.folded")
    assert {:ok, session} = BeamSpy.start(agent, output: path, max_events: 5000)
    charlist = String.to_charlist(path)
    assert_receive {:beamspy, ^session, {:stopped, :max_events, [^charlist]}}, 10_000
    assert trace_info(agent, :flags) == {:flags, []}
    assert Process.alive?(agent)

    assert {:ok, %{files: [^charlist], truncated: :max_events}} =
             BeamSpy.stop(session, profile: true)

    assert_live_clean([agent])
  end

  test "sessions/0 lists the running session", %{agent: agent} do
    assert {:ok, session} = BeamSpy.start([agent], max_duration: 5000)
    wait_until(fn -> match?([%{events: n}] when n > 0, BeamSpy.sessions()) end)

    assert [
             %{
               session: ^session,
               targets: [^agent],
               recording: true,
               limits: %{max_duration: 5000}
             }
           ] = BeamSpy.sessions()

    assert {:ok, _} = BeamSpy.stop(session, profile: true)
    assert_live_clean([agent])
  end

  test "if the caller dies, the session ends and nothing stays traced", %{agent: agent} do
    test = self()

    caller =
      spawn(fn ->
        send(test, {:started, BeamSpy.start(agent, output: scratch("killed"))})
        Process.sleep(:infinity)
      end)

    assert_receive {:started, {:ok, {:beamspy_session, owner, _}}}, 5000
    ref = Process.monitor(owner)
    Process.exit(caller, :kill)
    assert_receive {:DOWN, ^ref, :process, ^owner, _}, 10_000
    assert_live_clean([agent])
    assert [_file] = File.ls!(scratch("killed"))
  end

  test "bad targets and options raise before anything is traced", %{agent: agent} do
    assert_raise ArgumentError, ~r/^beamspy: 42 is not something to trace/, fn ->
      BeamSpy.start(42)
    end

    assert_raise ArgumentError, ~r/option :max_events must be/, fn ->
      BeamSpy.start(agent, max_events: 0)
    end

    assert_raise ArgumentError, ~r/unknown option :colour for stop/, fn ->
      BeamSpy.stop(:nope, colour: :red)
    end

    assert {:error, {:noproc, NoSuchProcess}} = BeamSpy.start(NoSuchProcess)
    assert_live_clean([agent])
  end

  test "a second session: refused before OTP 27, runs beside the first from OTP 27", %{agent: agent} do
    assert {:ok, {:beamspy_session, owner, _} = session} = BeamSpy.start(agent)

    if sessions_supported?() do
      # OTP 27+: each live session has its own trace session; both run.
      assert {:ok, {:beamspy_session, owner2, _} = second} = BeamSpy.start(self())
      assert owner2 != owner
      assert Work.fib(10) == 55
      assert {:ok, %{profile: profile}} = BeamSpy.stop(second, profile: true)
      assert "BeamSpyTest.Work.fib/1" in profile_frames(profile)
      assert {:flags, [_ | _]} = trace_info(agent, :flags)
    else
      assert BeamSpy.start(self()) == {:error, {:busy, owner}}
    end

    assert {:ok, _} = BeamSpy.stop(session, profile: true)
    assert BeamSpy.stop(session) == {:error, {:no_session, session}}
    assert_live_clean([agent])
  end
end
