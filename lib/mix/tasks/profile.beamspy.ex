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
      mix profile.beamspy -e "Enum.sort(Enum.shuffle(1..10_000))" -o sort.svg
      mix profile.beamspy -o flames/ --formats html,speedscope my_script.exs arg1 arg2

  The task's switches come before the script (or the expression's
  arguments): what follows the script is the script's (`System.argv/0`).
  A switch of the task written after the script is refused, not silently
  handed to the script; put `--` after the script to give the script
  arguments that look like the task's switches
  (`mix profile.beamspy my_script.exs -- -o x`).

  ## Command line options

    * `--eval`, `-e` - profiles the given code
    * `--no-warmup` - skips the warmup run before profiling
    * `--no-compile` - does not compile even if files require compilation
    * `--no-deps-check` - does not check dependencies
    * `--no-archives-check` - does not check archives
    * `--no-start` - does not start applications after compilation
    * `--no-elixir-version-check` - does not check the Elixir version from mix.exs

  Every option of `BeamSpy.run/2` (but `:ignore`, `:until_halt` and
  `:return`: pids, live sessions, `BeamSpy.profile/2`) has a switch, made
  from its name (`max_events` is `--max-events`): a value follows the switch (`none` or
  `infinity` for no limit), a flag is `--gc` or `--no-gc`. These switches
  and their lines below come from `:beamspy_opts.option_table/0`, the one
  table of beamspy's options:

#{BeamSpy.MixSwitches.help()}

  `--mode cpu` records CPU samples instead of calls (see `BeamSpy.run/2`).
  It needs the VM started with `+JPperf true`, which a running VM cannot
  turn on: without it the task stops before anything runs and prints the
  two ways to run the same command with the flag,
  `elixir --erl "+JPperf true" -S mix profile.beamspy ...` and
  `ELIXIR_ERL_OPTIONS="+JPperf true" mix profile.beamspy ...`.

  A limit that stops the recording early is said on standard error;
  `--open` with no browser says where the file is.

  The value of the code, or the exception it raised, is not lost: the task
  prints the files it wrote, and an exception is raised again after them.
  """

  @task_switches [
    eval: :string,
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
    {code_source, argv, beamspy_opts, task_opts} = parse_args(args)
    Mix.Task.reenable("profile.beamspy")

    {code, file} =
      case code_source do
        {:eval, expr} ->
          {expr, "nofile"}

        {:file, file} ->
          unless File.regular?(file), do: Mix.raise("No such file: #{file}")
          {File.read!(file), file}
      end

    if Map.get(beamspy_opts, :mode) == :cpu, do: check_cpu!(args)

    start_args = for {k, false} <- task_opts, k in @start_switches, do: "--no-" <> dashed(k)
    Mix.Task.run("app.start", start_args)
    System.argv(argv)

    quoted = Code.string_to_quoted!(code, file: file)
    warmup = Keyword.get(task_opts, :warmup, true)

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
  # The command line as {{:eval, code} | {:file, path}, the code's argv,
  # the options of BeamSpy.run/2 (checked), the task's own switches};
  # raises Mix.Error on a bad one, before anything starts.
  def parse_args(args) do
    strict = @task_switches ++ BeamSpy.MixSwitches.strict()
    valued = for {k, t} <- strict, t != :boolean, do: "--" <> dashed(k)
    {switches, rest} = BeamSpy.MixSwitches.split(args, ["-e", "-o" | valued])

    parsed =
      try do
        OptionParser.parse!(switches, aliases: [e: :eval, o: :output], strict: strict) |> elem(0)
      rescue
        e in OptionParser.ParseError ->
          why = Regex.replace(~r/^\d+ errors? found!\n/, Exception.message(e), "")
          Mix.raise("beamspy: #{why} (mix help profile.beamspy lists the switches)")
      end

    {code_source, argv} =
      case {parsed[:eval], rest} do
        {nil, ["--", file | argv]} -> {{:file, file}, code_argv(file, argv, strict)}
        {nil, [file | argv]} when file != "--" -> {{:file, file}, code_argv(file, argv, strict)}
        {nil, _} -> Mix.raise("Expected a file or an expression to profile: mix profile.beamspy -e EXPR | FILE")
        {expr, argv} -> {{:eval, expr}, code_argv(:eval, argv, strict)}
      end

    beamspy_opts = BeamSpy.MixSwitches.options(parsed)

    # Bad options are reported before the project is even started (but
    # telemetry, which must be running, only once it is: by BeamSpy.run/2).
    case :beamspy_opts.options(beamspy_opts |> Map.delete(:telemetry) |> Map.put_new(:names, :elixir)) do
      {:ok, _} -> :ok
      {:error, reason} -> Mix.raise(message(reason, parsed))
    end

    {code_source, argv, beamspy_opts, Keyword.take(parsed, Keyword.keys(@task_switches))}
  end

  # What follows the code is its argv; `--` first passes anything. A switch
  # of this task there was meant for the task: refused rather than handed
  # to the code while the default output is written.
  defp code_argv(_code, ["--" | argv], _strict), do: argv

  defp code_argv(code, argv, strict) do
    names = for {k, _} <- strict, do: dashed(k)

    case {Enum.find(argv, &task_switch?(&1, names)), code} do
      {nil, _} ->
        argv

      {switch, :eval} ->
        Mix.raise(
          "beamspy: #{switch} comes after the expression's arguments, where it would be one " <>
            "of them: give the task's switches before the arguments, or write -- before the " <>
            "arguments to pass #{switch} to the expression"
        )

      {switch, file} ->
        Mix.raise(
          "beamspy: #{switch} comes after the script #{file}, where it would be one of the " <>
            "script's arguments: give the task's switches before the script " <>
            "(mix profile.beamspy #{switch} ... #{file} ARGS), or write -- after the script " <>
            "to pass #{switch} to it"
        )
    end
  end

  defp task_switch?(arg, names) do
    case arg do
      "-e" -> true
      "-o" -> true
      "--no-" <> name -> name in names
      "--" <> name -> hd(String.split(name, "=", parts: 2)) in names
      _ -> false
    end
  end

  # The value is shown as the switch gave it.
  defp message({:bad_option, key, value, expected}, parsed) do
    given = Keyword.get(parsed, key, value)
    "beamspy: --#{dashed(key)} must be #{IO.chardata_to_string(expected)}, got #{switch_text(given)}"
  end

  defp message(reason, _parsed), do: "beamspy: " <> List.to_string(:beamspy.format_error(reason))

  defp switch_text(value) when is_binary(value), do: value
  defp switch_text(value) when is_atom(value), do: Atom.to_string(value)
  defp switch_text(value), do: inspect(value)

  # `--mode cpu` needs a VM started with +JPperf true, which a running VM
  # cannot turn on: refused before anything runs (no app start, no warmup),
  # with the two ways to run this same command with the flag.
  defp check_cpu!(args) do
    case :beamspy_cpu.check() do
      :ok ->
        :ok

      {:error, {:cpu_unavailable, why}} ->
        if :erlang.system_info(:emu_flavor) == :jit and :os.type() == {:unix, :linux} do
          command = Enum.map_join(["profile.beamspy" | args], " ", &shell_word/1)

          Mix.raise(
            "beamspy: --mode cpu needs the VM started with +JPperf true (the JIT then keeps frame " <>
              "pointers and writes its perf map), and this one was not; a running VM cannot turn it " <>
              "on. Run the task as\n\n    elixir --erl \"+JPperf true\" -S mix #{command}\n\nor\n\n" <>
              "    ELIXIR_ERL_OPTIONS=\"+JPperf true\" mix #{command}\n"
          )
        else
          Mix.raise("beamspy: --mode cpu cannot work here: #{why}")
        end
    end
  end

  # A word as a POSIX shell reads it back.
  defp shell_word(word) do
    if word =~ ~r/^[A-Za-z0-9_.\/=,:+@%-]+$/,
      do: word,
      else: "'" <> String.replace(word, "'", "'\\''") <> "'"
  end

  @doc false
  def profile(fun, beamspy_opts, warmup) do
    if warmup do
      IO.puts("Warmup...")
      fun.()
    end

    BeamSpy.run(fun, beamspy_opts)
  end

  defp dashed(key), do: key |> Atom.to_string() |> String.replace("_", "-")
end
