# profile.beamspy.ex — `mix profile.beamspy`, shaped like Mix's own
# profile.fprof/eprof/tprof tasks: the same ways to give the code, with
# beamspy's outputs and options.
defmodule Mix.Tasks.Profile.Beamspy do
  use Mix.Task

  @shortdoc "Profiles the given file or expression with beamspy (exact flame graphs)"

  @moduledoc """
  Profiles the given file or expression with beamspy and writes its flame
  graph: an interactive HTML page in the current directory unless
  `--output` says otherwise.

  Before running the code, it invokes the `app.start` task which compiles
  and loads your project. The code is compiled (not interpreted) into a
  function, run once untraced to load what it uses (`--no-warmup` skips
  that), then run under beamspy: every call of the calling process and of
  the processes it spawns, with exact stacks.

      mix profile.beamspy -e Hello.world
      mix profile.beamspy -e "Enum.sort(Enum.shuffle(1..100_000))" -o sort.svg
      mix profile.beamspy my_script.exs arg1 arg2 -o flames/ --formats html,speedscope

  ## Command line options

    * `--eval`, `-e` - profiles the given code
    * `--output`, `-o` - a file whose extension picks the format (`.html`,
      `.svg`, `.folded`, `.speedscope.json`, `.trace.json`, `.perf.txt`,
      `.bspy`, `.callgrind`) or a directory (default: the current one)
    * `--formats` - formats written to a directory output, comma separated
      (default: `html`)
    * `--names` - `elixir` (default) or `erlang` frame names
    * `--no-sleep` - do not charge scheduled-out time to `SLEEP`
    * `--gc` - charge garbage collection to `GC`
    * `--drop-sleep` - leave `SLEEP` out of the outputs
    * `--no-children` - only the calling process, not the ones it spawns
    * `--merge` - one tree for all processes
    * `--timeline` - keep calls in time order (flame charts)
    * `--flamechart`, `--inverted` - SVG with x as time; icicle graph
    * `--title`, `--palette` (`hot` or `beam`), `--include`, `--exclude` -
      as the options of `BeamSpy.run/2`
    * `--max-events`, `--max-memory`, `--max-duration` - limits (a limit
      that stops the recording early is said on standard error)
    * `--open` - opens the HTML (else SVG) written in the browser
      (`$BROWSER`, else `xdg-open` with a display); without one, says where
      the file is
    * `--no-warmup` - skips the warmup run before profiling
    * `--no-compile` - does not compile even if files require compilation
    * `--no-deps-check` - does not check dependencies
    * `--no-archives-check` - does not check archives
    * `--no-start` - does not start applications after compilation
    * `--no-elixir-version-check` - does not check the Elixir version from mix.exs

  The value of the code, or the exception it raised, is not lost: the task
  prints the files it wrote, and an exception is raised again after them.
  """

  @switches [
    eval: :string,
    output: :string,
    formats: :string,
    names: :string,
    sleep: :boolean,
    gc: :boolean,
    drop_sleep: :boolean,
    children: :boolean,
    merge: :boolean,
    timeline: :boolean,
    flamechart: :boolean,
    inverted: :boolean,
    title: :string,
    palette: :string,
    include: :string,
    exclude: :string,
    max_events: :integer,
    max_memory: :integer,
    max_duration: :integer,
    open: :boolean,
    warmup: :boolean,
    compile: :boolean,
    deps_check: :boolean,
    archives_check: :boolean,
    start: :boolean,
    elixir_version_check: :boolean
  ]

  @start_switches [:compile, :deps_check, :archives_check, :start, :elixir_version_check]

  @impl true
  def run(args) do
    {opts, head} = OptionParser.parse_head!(args, aliases: [e: :eval, o: :output], strict: @switches)
    Mix.Task.reenable("profile.beamspy")

    {code, file_args} =
      case {opts[:eval], head} do
        {nil, [file | rest]} ->
          unless File.regular?(file), do: Mix.raise("No such file: #{file}")
          {File.read!(file), rest}

        {nil, []} ->
          Mix.raise("Expected a file or an expression to profile: mix profile.beamspy -e EXPR | FILE")

        {expr, rest} ->
          {expr, rest}
      end

    beamspy_opts = beamspy_options(opts)
    # Bad options are reported before the project is even started.
    case :beamspy.check(fn -> :ok end, beamspy_opts) do
      :ok -> :ok
      {:error, reason} -> Mix.raise("beamspy: " <> List.to_string(:beamspy.format_error(reason)))
    end

    start_args = for {k, false} <- opts, k in @start_switches, do: "--no-" <> dashed(k)
    Mix.Task.run("app.start", start_args)
    System.argv(file_args)

    quoted = Code.string_to_quoted!(code, file: opts[:eval] && "nofile" || hd(head))
    warmup = Keyword.get(opts, :warmup, true)

    Code.compile_quoted(
      quote do
        unquote(__MODULE__).profile(
          fn -> unquote(quoted) end,
          unquote(Macro.escape(beamspy_opts)),
          unquote(warmup)
        )
      end
    )

    :ok
  end

  @doc false
  def profile(fun, beamspy_opts, warmup) do
    if warmup do
      IO.puts("Warmup...")
      fun.()
    end

    BeamSpy.run(fun, beamspy_opts)
  end

  defp beamspy_options(opts) do
    base =
      case opts[:output] do
        nil -> [output: ".", formats: [:html]]
        out -> [output: out]
      end

    base =
      case opts[:formats] do
        nil -> base
        text -> Keyword.put(base, :formats, formats(text))
      end

    Enum.reduce(opts, base ++ [names: :elixir], fn
      {k, v}, acc when k in [:sleep, :gc, :drop_sleep, :children, :merge, :flamechart, :inverted, :open] ->
        Keyword.put(acc, k, v)

      {:timeline, v}, acc ->
        Keyword.put(acc, :timeline, v)

      {:names, v}, acc ->
        Keyword.put(acc, :names, atom(:names, v, ~w(erlang elixir)))

      {:palette, v}, acc ->
        Keyword.put(acc, :palette, atom(:palette, v, ~w(hot beam)))

      {k, v}, acc when k in [:title, :include, :exclude, :max_events, :max_memory, :max_duration] ->
        Keyword.put(acc, k, v)

      _, acc ->
        acc
    end)
  end

  defp formats(text) do
    names = Enum.map(:beamspy_opts.formats(), &Atom.to_string/1)

    for name <- String.split(text, ",", trim: true) do
      atom(:formats, String.trim(name), names)
    end
  end

  defp atom(option, value, allowed) do
    if value in allowed do
      String.to_existing_atom(value)
    else
      Mix.raise("beamspy: --#{dashed(option)} must be one of #{Enum.join(allowed, ", ")}, got #{inspect(value)}")
    end
  end

  defp dashed(key), do: key |> Atom.to_string() |> String.replace("_", "-")
end
