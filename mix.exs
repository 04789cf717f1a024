# mix.exs — lets a Mix project depend on beamspy without Hex:
#   {:beamspy, path: "../beamspy"}  or  {:beamspy, git: "..."}
# Mix compiles src/*.erl and lib/*.ex itself; the compiler defined below runs
# `make nif` to build priv/beamspy_nif.so (beamspy_tracer loads it from
# code:priv_dir(:beamspy)). Needs make and a C compiler; no Hex packages.

defmodule Mix.Tasks.Compile.BeamspyMake do
  @shortdoc "Builds beamspy's NIF (priv/beamspy_nif.so) with make"
  @moduledoc """
  Runs `make nif` in the beamspy checkout, then links (or, with
  `build_embedded`, copies) its `priv/` into the build directory again:
  Mix sets up the build directory before the compilers run, when `priv/`
  may not exist yet in a fresh checkout.
  """
  use Mix.Task.Compiler

  @nif "priv/beamspy_nif.so"

  @impl true
  def run(_args) do
    # Warnings stay warnings here: -Werror is for beamspy's own builds, and a
    # newer C compiler must not break the build of a project that uses it.
    {output, status} = System.cmd(make(), ["nif", "WARN=-Wall -Wextra"], stderr_to_stdout: true)

    cond do
      status != 0 ->
        Mix.shell().error(output)
        Mix.raise("beamspy: `make nif` failed (exit status #{status}); see the output above")

      not File.exists?(@nif) ->
        Mix.raise("beamspy: `make nif` did not produce #{@nif}")

      true ->
        Mix.Project.build_structure(Mix.Project.config())
        {:ok, []}
    end
  end

  defp make, do: System.get_env("MAKE") || System.find_executable("gmake") || "make"
end

defmodule Mix.Tasks.Compile.BeamspyDocs do
  @shortdoc "Puts the Erlang modules' docs into their beams"
  @moduledoc """
  Runs `scripts/embed_docs.escript` on the beams Mix compiled from `src/`,
  so `h :beamspy` works in iex (Mix's Erlang compiler keeps no docs of
  Erlang modules). Without edoc it says so and the build goes on.
  """
  use Mix.Task.Compiler

  @impl true
  def run(_args) do
    sources = Path.wildcard("src/*.erl")
    {output, _status} =
      System.cmd("escript", ["scripts/embed_docs.escript", Mix.Project.compile_path() | sources],
        stderr_to_stdout: true
      )

    if output != "", do: Mix.shell().info(output)
    {:ok, []}
  end
end

defmodule BeamSpy.MixProject do
  use Mix.Project

  @version "0.1.0"

  def project do
    [
      app: :beamspy,
      version: @version,
      elixir: "~> 1.14",
      description: "Exact flame graphs of BEAM code, recorded natively",
      compilers: [:beamspy_make | Mix.compilers()] ++ [:beamspy_docs],
      erlc_paths: ["src"],
      erlc_options: [:debug_info],
      elixirc_paths: ["lib"],
      test_paths: ["test/elixir"],
      deps: []
    ]
  end

  def application do
    [extra_applications: [], registered: [:beamspy_active_session]]
  end
end
