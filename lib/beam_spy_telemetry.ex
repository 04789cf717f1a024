# BeamSpy.Telemetry — the Elixir front end of beamspy_telemetry: telemetry
# spans recorded per process and written as Chrome trace, speedscope and
# flame graphs of span nesting (keyword options, Elixir names by default).
defmodule BeamSpy.Telemetry do
  @moduledoc """
  Telemetry spans on a timeline.

  `start/2` attaches one handler to `prefix ++ [:start | :stop | :exception]`
  for each event prefix; every process that runs `:telemetry.span/3` (or
  emits those events) gets one track, with its spans nested. `stop/1`
  detaches and writes the files. beamspy does not depend on telemetry: it
  must be loaded and started by your application.

      {:ok, handle} = BeamSpy.Telemetry.start([[:my_app, :repo, :query]], output: "/tmp/spans")
      MyApp.Repo.all(MyApp.User)
      {:ok, files} = BeamSpy.Telemetry.stop(handle)

  To see the spans above the exact call stacks of a call, give the prefixes
  to `BeamSpy.run/2` instead: `BeamSpy.run(fun, telemetry: [[:my_app, :repo, :query]])`.

  Options are those of `:beamspy_telemetry.start/2`: `:output`, `:formats`
  (default `[:chrome, :speedscope, :folded, :svg, :html]`), `:max_spans`
  (default 1,000,000), `:max_memory`, `:quiet` and the rendering options of
  `BeamSpy.run/2`.
  """

  @typedoc "An event prefix, such as `[:my_app, :repo, :query]`."
  @type prefix :: [atom(), ...]

  @doc """
  Starts recording the spans of `prefixes`. Returns `{:ok, handle}` or
  `{:error, reason}` (see `format_error/1`).

      iex> BeamSpy.Telemetry.start([:not_a_prefix])
      {:error, {:bad_prefixes, [:not_a_prefix]}}

  Each prefix is given once (a duplicate would record its spans twice); a
  prefix that begins another one names other events and is fine.

      iex> BeamSpy.Telemetry.start([[:my_app, :repo], [:my_app, :repo]])
      {:error, {:duplicate_prefix, [:my_app, :repo]}}
  """
  @spec start([prefix()], keyword() | map()) :: {:ok, term()} | {:error, term()}
  def start(prefixes, options \\ []) do
    :beamspy_telemetry.start(prefixes, options(options))
  end

  @doc """
  Detaches the handlers and writes the files; returns `{:ok, paths}`.

      iex> BeamSpy.Telemetry.stop(:not_a_handle)
      {:error, {:bad_handle, :not_a_handle}}
  """
  @spec stop(term()) :: {:ok, [Path.t()]} | {:error, term()}
  def stop(handle), do: :beamspy_telemetry.stop(handle)

  @doc """
  As `stop/1`, also saying what happened to the spans:
  `{:ok, %{files: paths, errors: [...], spans: counts, memory_peak: bytes}}`.

      iex> BeamSpy.Telemetry.finish(:not_a_handle)
      {:error, {:bad_handle, :not_a_handle}}
  """
  @spec finish(term()) :: {:ok, map()} | {:error, term()}
  def finish(handle), do: :beamspy_telemetry.finish(handle)

  @doc """
  A sentence for an error reason.

      iex> BeamSpy.Telemetry.format_error(:telemetry_not_loaded) =~ "telemetry library is not loaded"
      true
  """
  @spec format_error(term()) :: String.t()
  def format_error(reason), do: List.to_string(:beamspy_telemetry.format_error(reason))

  defp options(options) when is_list(options) do
    Map.new(options, fn
      {key, value} -> {key, value}
      key when is_atom(key) -> {key, true}
    end)
    |> options()
  end

  defp options(options) when is_map(options), do: Map.put_new(options, :names, :elixir)
end
