# telemetry_test.exs — BeamSpy.Telemetry's documentation examples, and its
# errors without the telemetry library (this layer does not load it; the
# Erlang layer tests the recording against the real library).
defmodule BeamSpyTest.TelemetryTest do
  use ExUnit.Case
  doctest BeamSpy.Telemetry

  test "without telemetry: a clear error from start/2 and from BeamSpy.run/2" do
    if Code.ensure_loaded?(:telemetry) do
      IO.puts("SKIP telemetry is loaded in this VM: the not-loaded errors are tested in the Erlang layer")
    else
      assert BeamSpy.Telemetry.start([[:my_app, :repo]], quiet: true) == {:error, :telemetry_not_loaded}

      error =
        assert_raise ArgumentError, fn ->
          BeamSpy.run(fn -> :ok end, telemetry: [[:my_app, :repo]], quiet: true)
        end

      assert error.message =~ "telemetry library is not loaded"
    end
  end

  test "bad prefixes are refused by BeamSpy.run/2 before anything runs" do
    assert_raise ArgumentError, ~r/telemetry prefixes must be/, fn ->
      BeamSpy.run(fn -> send(self(), :ran) end, telemetry: [:x])
    end

    refute_received :ran
  end
end
