# mix_task_test.exs — `mix profile.beamspy`: its switches are the options of
# BeamSpy.run/2 (every option of the table in docs/reference-options.md, from the one table of
# options), its help says so, a switch after the script is refused, and
# the examples of its help run as written in a real Mix project (made in a
# scratch directory, beamspy as a path dependency, no Hex).
defmodule BeamSpyTest.MixTaskTest do
  use ExUnit.Case
  import BeamSpyTest.Helpers

  alias Mix.Tasks.Profile.Beamspy, as: Task

  @moduletag timeout: 900_000
  @root Path.expand("../..", __DIR__)

  defp switch_keys, do: for({key, _, _, _} <- BeamSpy.MixSwitches.switches(), do: key)

  defp moduledoc do
    {:docs_v1, _, :elixir, _, %{"en" => doc}, _, _} = Code.fetch_docs(Task)
    doc
  end

  # Every option the option table (docs/reference-options.md) names (a row may name several).
  defp readme_options do
    readme = File.read!(Path.join(@root, "docs/reference-options.md"))
    [_, table] = String.split(readme, "| option | default | meaning |\n", parts: 2)
    [table | _] = String.split(table, "\n\n", parts: 2)

    for line <- String.split(table, "\n"),
        [_, first | _] <- [String.split(line, "|")],
        [_, key] <- Regex.scan(~r/`([a-z_]+)`/, first),
        uniq: true,
        do: String.to_atom(key)
  end

  describe "switches" do
    test "every option of the option table of docs/reference-options.md is a switch or named as having none" do
      options = readme_options()
      assert length(options) > 25
      assert :show_idle in options

      missing = options -- (switch_keys() ++ Map.keys(BeamSpy.MixSwitches.not_switches()))
      assert missing == []
    end

    test "every option of the one table is a switch, but those named as having none" do
      tabled = for {key, :api, _, _} <- :beamspy_opts.option_table(), do: key
      assert tabled -- switch_keys() == Map.keys(BeamSpy.MixSwitches.not_switches()) -- [:return, :output_directory, :output_format]
    end

    test "the switches the issue found unknown are options, with their values" do
      {{:file, "s.exs"}, ["a"], opts, []} =
        Task.parse_args(
          ~w(--timeline-cap none --collapse-recursion=all --no-compensate --show-idle --width 800) ++
            ~w(--max-events infinity --telemetry-metadata id,name s.exs a)
        )

      assert opts == %{
               timeline_cap: :infinity,
               collapse_recursion: :all,
               compensate: false,
               show_idle: true,
               width: 800,
               max_events: :infinity,
               telemetry_metadata: [:id, :name]
             }

      assert {_, [], %{timeline: true, collapse_recursion: true, formats: [:html, :speedscope]}, _} =
               Task.parse_args(~w(--timeline --collapse-recursion --formats html,speedscope s.exs))

      assert {_, [], %{timeline: 5000, sleep: false, drop_sleep: true}, _} =
               Task.parse_args(~w(--timeline=5000 --no-sleep --drop-sleep s.exs))

      assert {_, [], %{telemetry: [[:my_app, :repo, :query], [:phoenix]]}, _} =
               Task.parse_args(~w(--telemetry my_app.repo.query,phoenix s.exs))
    end

    test "a bad value is refused with the switch's name and the value as given" do
      assert_raise Mix.Error, "beamspy: --names must be erlang or elixir, got klingon", fn ->
        Task.parse_args(~w(--names klingon s.exs))
      end

      assert_raise Mix.Error, ~r/^beamspy: --timeline-cap must be auto, infinity or .*, got -5$/, fn ->
        Task.parse_args(~w(--timeline-cap -5 s.exs))
      end

      # Elixir 1.20's OptionParser lists the supported options after its
      # sentence; the task's pointer to its help comes last either way.
      assert_raise Mix.Error, ~r/--bogus : Unknown option.*\(mix help profile.beamspy lists the switches\)$/s, fn ->
        Task.parse_args(~w(--bogus s.exs))
      end
    end

    test "the help names every switch, with the table's line for it" do
      doc = moduledoc()

      for {key, _, line, _} <- BeamSpy.MixSwitches.switches() do
        dashed = BeamSpy.MixSwitches.dashed(key)
        assert doc =~ ~r/`--(\[no-\])?#{dashed}(\[=VALUE\])?`[^\n]* - #{Regex.escape(line)}/
      end

      # --no-sleep: what the time is charged to now (WAIT or RUNNABLE), not SLEEP.
      [sleep_line] = Regex.run(~r/^.*`--\[no-\]sleep`.*$/m, doc)
      assert sleep_line =~ "WAIT or RUNNABLE"
    end
  end

  describe "arguments after the code" do
    test "a switch of the task after the script is refused, saying where it goes" do
      message =
        assert_raise Mix.Error, fn ->
          Task.parse_args(~w(my_script.exs arg1 arg2 -o flames/ --formats html,speedscope))
        end

      assert message.message =~ "-o comes after the script my_script.exs"
      assert message.message =~ "mix profile.beamspy -o ... my_script.exs ARGS"

      for args <- [~w(s.exs a --gc), ~w(s.exs --no-warmup), ~w(s.exs --timeline=5), ~w(-e 1 a --output x)] do
        assert_raise Mix.Error, ~r/comes after the/, fn -> Task.parse_args(args) end
      end
    end

    test "after --, the script's arguments may look like switches" do
      assert {{:file, "s.exs"}, ["-o", "x", "--gc"], %{}, []} = Task.parse_args(~w(s.exs -- -o x --gc))
      assert {{:eval, "1"}, ["-o", "x"], %{}, _} = Task.parse_args(~w(-e 1 -- -o x))
      assert {{:file, "s.exs"}, ["plain", "-x"], %{}, []} = Task.parse_args(~w(s.exs plain -x))
    end
  end
end

# The examples of the help, and switches, in a real Mix project.
defmodule BeamSpyTest.MixTaskProjectTest do
  use ExUnit.Case
  import BeamSpyTest.Helpers

  @moduletag timeout: 900_000
  @root Path.expand("../..", __DIR__)

  defp moduledoc do
    {:docs_v1, _, :elixir, _, %{"en" => doc}, _, _} = Code.fetch_docs(Mix.Tasks.Profile.Beamspy)
    doc
  end

  setup_all do
    app = scratch("mix_task_project")
    File.rm_rf!(app)
    File.mkdir_p!(Path.join(app, "lib"))

    File.write!(Path.join(app, "mix.exs"), """
    defmodule Hello.MixProject do
      use Mix.Project
      def project, do: [app: :hello, version: "0.1.0", deps: [{:beamspy, path: #{inspect(@root)}}]]
      def application, do: [extra_applications: []]
    end
    """)

    File.write!(Path.join(app, "lib/hello.ex"), """
    defmodule Hello do
      def world, do: fib(15)
      def fib(n) when n < 2, do: n
      def fib(n), do: fib(n - 1) + fib(n - 2)

      # fib(20) until the VM has used ms more milliseconds of CPU (not
      # wall time: a loaded machine only makes it take longer).
      def burn(ms) do
        {start, _} = :erlang.statistics(:runtime)
        burn_until(start + ms)
      end

      defp burn_until(until) do
        fib(20)

        case :erlang.statistics(:runtime) do
          {now, _} when now >= until -> :ok
          _ -> burn_until(until)
        end
      end
    end
    """)

    # --mode cpu's script: says it ran, then burns 1 s of CPU.
    File.write!(Path.join(app, "burn.exs"), """
    File.write!("burn_ran.txt", "yes")
    Hello.burn(1000)
    """)

    # The script of the help's example: says what arguments it got.
    File.write!(Path.join(app, "my_script.exs"), """
    File.write!("argv.txt", Enum.join(System.argv(), " "))
    Hello.fib(12)
    """)

    {out, status} = mix(app, ["compile"])
    assert status == 0, out
    %{app: app}
  end

  test "the examples of the help run as written", %{app: app} do
    examples = Regex.scan(~r/^    (mix profile\.beamspy .*)$/m, moduledoc(), capture: :all_but_first)
    assert length(examples) == 3

    for [example] <- examples do
      {out, status} = System.cmd("sh", ["-c", example], cd: app, env: env(), stderr_to_stdout: true)
      assert status == 0, "#{example}\n#{out}"
      assert out =~ "beamspy: wrote"
    end

    assert [html] = Path.wildcard(Path.join(app, "beamspy-*.html"))
    assert File.read!(html) =~ "Hello.fib/1"
    assert File.read!(Path.join(app, "sort.svg")) =~ "Enum.shuffle/1"
    # my_script.exs arg1 arg2: the script got its two arguments, the task its switches.
    assert File.read!(Path.join(app, "argv.txt")) == "arg1 arg2"
    flames = Path.join(app, "flames")
    assert [_] = Path.wildcard(Path.join(flames, "*.html"))
    assert [_] = Path.wildcard(Path.join(flames, "*.speedscope.json"))
  end

  test "the issue's example, switches after the script, is refused before anything runs", %{app: app} do
    File.rm_rf!(Path.join(app, "argv.txt"))

    {out, status} =
      mix(app, ~w(profile.beamspy my_script.exs arg1 arg2 -o late/ --formats html,speedscope))

    assert status != 0
    assert out =~ "-o comes after the script my_script.exs"
    refute File.exists?(Path.join(app, "argv.txt"))
    refute File.exists?(Path.join(app, "late"))
  end

  test "switches of options the table holds reach the recording", %{app: app} do
    {out, status} =
      mix(
        app,
        ~w(profile.beamspy --no-warmup --timeline-cap none --no-compensate --show-idle) ++
          ~w(--collapse-recursion --width 800 --title Fibs --formats svg,html,folded -o opts/) ++
          ~w(-e Hello.world)
      )

    assert status == 0, out
    [svg] = Path.wildcard(Path.join(app, "opts/*.svg"))
    [html] = Path.wildcard(Path.join(app, "opts/*.html"))
    [folded] = Path.wildcard(Path.join(app, "opts/*.folded"))
    assert File.read!(svg) =~ ~r/<svg[^>]* width="800"/
    assert File.read!(svg) =~ "Fibs"
    assert File.read!(html) =~ "raw traced times"
    # Recursion folded: Hello.fib/1 is there, never under itself.
    assert File.read!(folded) =~ "Hello.fib/1"
    refute File.read!(folded) =~ "Hello.fib/1;Hello.fib/1"
  end

  test "--mode cpu: refused before anything runs without +JPperf true, with the two commands that work; both do",
       %{app: app} do
    ran = Path.join(app, "burn_ran.txt")
    File.rm_rf!(ran)
    args = ~w(profile.beamspy --mode cpu --no-warmup --formats folded,html -o cpu/ burn.exs)
    # Nothing in the environment gives the VM the flag.
    no_flag = env() ++ [{"ELIXIR_ERL_OPTIONS", nil}, {"ERL_FLAGS", nil}]
    {out, status} = System.cmd("mix", args, cd: app, env: no_flag, stderr_to_stdout: true)

    assert status != 0
    assert out =~ "beamspy: --mode cpu needs the VM started with +JPperf true"
    refute File.exists?(ran)
    refute File.exists?(Path.join(app, "cpu"))

    # With the warmup (the default) too: the script does not run at all.
    {warm_out, warm_status} =
      System.cmd("mix", ~w(profile.beamspy --mode cpu burn.exs), cd: app, env: no_flag, stderr_to_stdout: true)

    assert warm_status != 0
    assert warm_out =~ "beamspy: --mode cpu needs the VM started with +JPperf true"
    refute warm_out =~ "Warmup"
    refute File.exists?(ran)

    commands = Regex.scan(~r/^    (.*mix profile\.beamspy .*)$/m, out, capture: :all_but_first)

    assert commands == [
             [~s(elixir --erl "+JPperf true" -S mix #{Enum.join(args, " ")})],
             [~s(ELIXIR_ERL_OPTIONS="+JPperf true" mix #{Enum.join(args, " ")})]
           ]

    for [command] <- commands do
      File.rm_rf!(Path.join(app, "cpu"))
      {out, status} = System.cmd("sh", ["-c", command], cd: app, env: env(), stderr_to_stdout: true)
      assert status == 0, "#{command}\n#{out}"
      assert File.exists?(ran)
      [folded] = Path.wildcard(Path.join(app, "cpu/*.folded"))
      [html] = Path.wildcard(Path.join(app, "cpu/*.html"))
      counts =
        for line <- String.split(File.read!(folded), "\n", trim: true),
            do: {line, line |> String.split(" ") |> List.last() |> String.to_integer()}

      all = counts |> Enum.map(&elem(&1, 1)) |> Enum.sum()
      fib = for({line, n} <- counts, line =~ ";Hello.fib/1", do: n) |> Enum.sum()
      # 1 s of CPU at 199 Hz: some 200 samples, most of them in fib/1.
      assert fib >= 20 and fib * 2 >= all, "#{command}: #{fib} of #{all} samples in Hello.fib/1"
      page = File.read!(html)
      assert page =~ "CPU samples at 199 Hz"
      assert page =~ ~s("countName":"samples")
    end
  end

  defp env, do: [{"MIX_ENV", "dev"}]

  defp mix(app, args), do: System.cmd("mix", args, cd: app, env: env(), stderr_to_stdout: true)
end
