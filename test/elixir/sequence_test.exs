# sequence_test.exs — BeamSpy.sequence/2: the call's value or exception
# comes back, the Mermaid file holds the flow's messages, options are
# checked the Elixir way, nothing is left behind.
defmodule BeamSpyTest.SequenceTest do
  use ExUnit.Case
  import BeamSpyTest.Helpers

  test "returns the value and draws a GenServer call and its reply" do
    {:ok, agent} = Agent.start_link(fn -> 1 end)
    path = scratch("agent.mmd")
    assert BeamSpy.sequence(fn -> Agent.get(agent, &(&1 + 1)) end, output: path, quiet: true) == 2
    messages = path |> File.read!() |> String.split("\n") |> Enum.filter(&(&1 =~ ~r/^    P\d+(->>|-->>)P\d+: /))
    assert [call, reply] = messages
    # Erlang syntax, Mermaid-escaped: # and < as entities.
    assert call =~ ~r/^    P1->>P2: call \{get,#35;Fun#lt;/
    assert reply == "    P2-->>P1: reply 2"
    assert :seq_trace.get_token() == []
    assert :seq_trace.get_system_tracer() == false
  end

  defmodule Echo do
    use GenServer
    def init(state), do: {:ok, state}
    def handle_call(:ping, _from, state), do: {:reply, :pong, state}
  end

  test "processes are named as Elixir spells them, or as Erlang does with names: :erlang" do
    {:ok, plain} = GenServer.start_link(Echo, 0)
    {:ok, _} = GenServer.start_link(Echo, 0, name: BeamSpyTest.SequenceTest.Named)
    call = fn -> GenServer.call(plain, :ping) && GenServer.call(BeamSpyTest.SequenceTest.Named, :ping) end

    participants = fn options ->
      path = scratch("names_#{options[:names]}.mmd")
      assert BeamSpy.sequence(call, [output: path, quiet: true] ++ options) == :pong
      path |> File.read!() |> String.split("\n") |> Enum.filter(&(&1 =~ ~r/^    participant /))
    end

    elixir = participants.([])
    assert Enum.any?(elixir, &String.ends_with?(&1, "#gt; BeamSpyTest.SequenceTest.Echo.init/1"))
    assert Enum.any?(elixir, &String.ends_with?(&1, "#gt; BeamSpyTest.SequenceTest.Named"))
    erlang = participants.(names: :erlang)
    assert Enum.any?(erlang, &String.ends_with?(&1, "#gt; 'Elixir.BeamSpyTest.SequenceTest.Echo':init/1"))
    assert Enum.any?(erlang, &String.ends_with?(&1, "#gt; Elixir.BeamSpyTest.SequenceTest.Named"))

    assert_raise ArgumentError, ~r/option :names/, fn -> BeamSpy.sequence(call, names: :python) end
  end

  test "an exception reaches the caller unchanged" do
    assert_raise RuntimeError, "boom", fn ->
      BeamSpy.sequence(fn -> raise "boom" end, output: scratch("boom.mmd"), quiet: true)
    end

    assert :seq_trace.get_system_tracer() == false
  end

  test "bad options raise ArgumentError before anything runs" do
    assert_raise ArgumentError, ~r/option :formats/, fn ->
      BeamSpy.sequence(fn -> :ok end, formats: [:folded])
    end

    assert_raise ArgumentError, ~r/unknown option :sleep/, fn -> BeamSpy.sequence(fn -> :ok end, sleep: true) end
  end

  test "a node with a system tracer of its own is refused" do
    other = spawn(fn -> Process.sleep(:infinity) end)
    false = :seq_trace.set_system_tracer(other)

    try do
      assert_raise RuntimeError, ~r/already has a seq_trace system tracer/, fn ->
        BeamSpy.sequence(fn -> :ok end, output: scratch("no.mmd"), nodes: :local)
      end
    after
      :seq_trace.set_system_tracer(false)
      Process.exit(other, :kill)
    end
  end
end
