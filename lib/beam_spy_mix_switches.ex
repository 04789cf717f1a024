# beam_spy_mix_switches.ex — the switches of `mix profile.beamspy` that give
# options of BeamSpy.run/2, derived from the one table of options
# (:beamspy_opts.option_table/0) at run time, plus the few options the table
# holds no default for: their OptionParser types, how a switch's text becomes
# an option's value, and the help lines the task's docs are built from.
defmodule BeamSpy.MixSwitches do
  @moduledoc false

  # Options of BeamSpy.run/2 with no default in the table (unset unless
  # given): switch kind and help line.
  @untabled [
    {:title, :text, "SVG and HTML heading (default \"Flame Graph\")"},
    {:subtitle, :text, "SVG and HTML line under the heading"},
    {:width, :integer, "SVG width in pixels (default 1200)"},
    {:min_width, :value, "narrowest frame drawn, in pixels (default 0.1)"},
    {:include, :text, "keep only stacks with a frame matching this POSIX extended regular expression"},
    {:exclude, :text, "drop stacks with a frame matching this POSIX extended regular expression"},
    {:telemetry, :prefixes,
     "telemetry event prefixes, comma separated, whose spans become frames (my_app.repo.query,phoenix.endpoint); telemetry must be started"},
    {:telemetry_metadata, :atoms, "with --telemetry: metadata keys, comma separated, kept in the spans' args"},
    {:max_spans, :integer, "telemetry span starts recorded at most"}
  ]

  # Options of BeamSpy.run/2 that have no switch, and why.
  @not_switches %{
    ignore: "pids of the profiling VM",
    until_halt: "live sessions only (beamspy run)",
    return: "profile/2 only",
    output_directory: "eflambe's name of --output",
    output_format: "eflambe's name of --formats"
  }

  # Options that are a flag (`--timeline`, `--no-timeline`) or take a value
  # after `=` (`--timeline=50000`, `--collapse-recursion=all`).
  @flag_or_value [:timeline, :collapse_recursion]

  @doc "Every option switch: `{key, kind, help, default}` (default `:none` when unset)."
  def switches do
    table =
      for {key, :api, defaults, doc} <- :beamspy_opts.option_table(),
          not Map.has_key?(@not_switches, key) do
        default = Map.get(defaults, :elixir, Map.fetch!(defaults, :apply))
        {key, kind(key, default), List.to_string(doc), default}
      end

    table ++ for({key, kind, doc} <- @untabled, do: {key, kind, doc, :none})
  end

  @doc "Options of BeamSpy.run/2 left without a switch, with the reason."
  def not_switches, do: @not_switches

  @doc "The OptionParser types of the option switches."
  def strict do
    for {key, kind, _, _} <- switches() do
      case kind do
        :flag -> {key, :boolean}
        :integer -> {key, :integer}
        _ -> {key, :string}
      end
    end
  end

  defp kind(key, _) when key in @flag_or_value, do: :flag_or_value
  defp kind(:output, _), do: :text
  defp kind(:formats, _), do: :formats
  defp kind(_, default) when is_boolean(default), do: :flag
  defp kind(_, default) when is_integer(default), do: :integer
  defp kind(_, _), do: :value

  @doc """
  Splits the command line into the task's switches (with their values) and
  what follows them: the code to profile and its arguments, or `--` and
  what follows it. In the switches, `--flag` and `--no-flag` of a
  flag-or-value option are written `--flag=true` and `--flag=false` for
  OptionParser. `valued` are the switches (with their dashes) that take
  the next argument as their value.
  """
  def split(args, valued) do
    flags = Map.new(@flag_or_value, &{"--" <> dashed(&1), &1})
    negated = Map.new(@flag_or_value, &{"--no-" <> dashed(&1), &1})
    split(args, flags, negated, valued, [])
  end

  defp split([], _, _, _, acc), do: {Enum.reverse(acc), []}
  defp split(["--" | _] = rest, _, _, _, acc), do: {Enum.reverse(acc), rest}

  defp split([arg | rest], flags, negated, valued, acc) do
    cond do
      Map.has_key?(flags, arg) ->
        split(rest, flags, negated, valued, [arg <> "=true" | acc])

      Map.has_key?(negated, arg) ->
        split(rest, flags, negated, valued, ["--" <> dashed(negated[arg]) <> "=false" | acc])

      arg in valued and rest != [] ->
        [value | rest] = rest
        split(rest, flags, negated, valued, [value, arg | acc])

      String.starts_with?(arg, "-") and arg != "-" ->
        split(rest, flags, negated, valued, [arg | acc])

      true ->
        {Enum.reverse(acc), [arg | rest]}
    end
  end

  @doc """
  The options map from parsed switches (the task's own are skipped): each
  text turned into the value BeamSpy.run/2 takes. `none` and `infinity`
  mean infinity; numbers, `true` and `false` are themselves; a word is the
  atom (the options' own check refuses one that does not fit).
  """
  def options(parsed) do
    kinds = Map.new(switches(), fn {key, kind, _, _} -> {key, kind} end)

    for {key, value} <- parsed, Map.has_key?(kinds, key), into: %{} do
      {key, value(kinds[key], value)}
    end
  end

  defp value(:text, text), do: text
  defp value(kind, v) when kind in [:flag, :integer], do: v
  defp value(:formats, text), do: Enum.map(list(text), &word/1)
  defp value(:atoms, text), do: Enum.map(list(text), &String.to_atom/1)

  defp value(:prefixes, text) do
    for prefix <- list(text), do: Enum.map(String.split(prefix, "."), &String.to_atom/1)
  end

  defp value(kind, text) when kind in [:value, :flag_or_value] do
    case {text, Integer.parse(text), Float.parse(text)} do
      {t, _, _} when t in ["none", "infinity"] -> :infinity
      {"true", _, _} -> true
      {"false", _, _} -> false
      {_, {n, ""}, _} -> n
      {_, _, {x, ""}} -> x
      _ -> word(text)
    end
  end

  defp list(text), do: text |> String.split(",", trim: true) |> Enum.map(&String.trim/1)

  # An existing atom (every value an option takes is one), else the text,
  # which the options' check refuses with what it expected.
  defp word(text) do
    String.to_existing_atom(text)
  rescue
    ArgumentError -> text
  end

  @doc "The help lines of the option switches (Markdown list items)."
  def help do
    Enum.map_join(switches(), "\n", fn {key, kind, doc, default} ->
      "  * #{spelling(key, kind)} - #{doc}#{default_text(kind, default)}"
    end)
  end

  defp spelling(:output, _), do: "`--output`, `-o` PATH"
  defp spelling(key, :flag), do: "`--[no-]#{dashed(key)}`"
  defp spelling(key, :flag_or_value), do: "`--[no-]#{dashed(key)}[=VALUE]`"
  defp spelling(key, :integer), do: "`--#{dashed(key)}` N"
  defp spelling(key, kind) when kind in [:formats, :prefixes, :atoms], do: "`--#{dashed(key)}` A,B"
  defp spelling(key, _), do: "`--#{dashed(key)}` VALUE"

  defp default_text(_, :none), do: ""
  defp default_text(:flag, true), do: " (on by default)"
  defp default_text(:flag, false), do: ""
  defp default_text(:formats, list), do: " (default #{Enum.join(list, ",")})"
  defp default_text(:text, '.'), do: " (default: the current directory)"
  defp default_text(_, :infinity), do: " (default none: no limit)"
  defp default_text(_, value), do: " (default #{value})"

  @doc "A key as its switch is spelled: max_events is max-events."
  def dashed(key), do: key |> Atom.to_string() |> String.replace("_", "-")
end
