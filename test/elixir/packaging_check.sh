#!/bin/sh
# packaging_check.sh — checks that beamspy works as a dependency, offline:
# a throwaway Mix project depending on this checkout by path, and (if rebar3
# is installed) a rebar3 project with it in _checkouts/. Each compiles, calls
# beamspy, and must write a folded file with the consumer's frames in it.
# Prints one "CHECK <name>: ok|FAILED|skipped (<why>)" line per check.
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/beamspy-packaging.XXXXXX")
trap 'rm -rf "$work"' EXIT
failed=0

report() { # name, status, log file
    echo "CHECK $1: $2"
    if [ "$2" = FAILED ]; then
        sed 's/^/    /' "$3" | tail -30
        failed=1
    fi
}

check_mix() {
    app="$work/mix_consumer"
    mkdir -p "$app/lib"
    cat > "$app/mix.exs" <<MIX
defmodule Consumer.MixProject do
  use Mix.Project
  def project, do: [app: :consumer, version: "0.1.0", deps: [{:beamspy, path: "$root"}]]
  def application, do: [extra_applications: []]
end
MIX
    cat > "$app/lib/consumer.ex" <<'EX'
defmodule Consumer do
  def fib(n) when n < 2, do: n
  def fib(n), do: fib(n - 1) + fib(n - 2)
end
EX
    (
        cd "$app" &&
        MIX_ENV=dev mix compile &&
        MIX_ENV=dev mix run -e '
          8 = BeamSpy.run({Consumer, :fib, [6]}, output: "fib.folded", quiet: true)
          true = String.ends_with?(List.to_string(:code.priv_dir(:beamspy)), "_build/dev/lib/beamspy/priv")
          # h :beamspy works: the Erlang modules keep their docs in a Mix build.
          {:docs_v1, _, :erlang, _, %{"en" => _}, _, docs} = Code.fetch_docs(:beamspy)
          true = Enum.any?(docs, &match?({{:function, :apply, 2}, _, _, %{"en" => _}, _}, &1))
          {:docs_v1, _, :elixir, _, %{"en" => _}, _, _} = Code.fetch_docs(BeamSpy)' &&
        grep -q ';Consumer.fib/1;Consumer.fib/1 ' fib.folded
    ) > "$work/mix.log" 2>&1
    if [ $? -eq 0 ]; then report mix-path-dependency ok; else report mix-path-dependency FAILED "$work/mix.log"; fi
    # mix profile.beamspy, as mix profile.eprof is used: an expression, a
    # script with arguments, the default HTML output, a bad option.
    cat > "$app/fib_script.exs" <<'EXS'
[n] = System.argv()
Consumer.fib(String.to_integer(n))
EXS
    (
        cd "$app" &&
        MIX_ENV=dev mix profile.beamspy -e "Consumer.fib(12)" -o task.folded > task.out &&
        grep -q '^beamspy: wrote task.folded' task.out &&
        grep -q ';Consumer.fib/1;Consumer.fib/1;Consumer.fib/1 ' task.folded &&
        MIX_ENV=dev mix profile.beamspy --no-warmup -o script.svg fib_script.exs 11 &&
        grep -q 'Consumer.fib/1' script.svg &&
        MIX_ENV=dev mix profile.beamspy -e "Consumer.fib(5)" > out &&
        ls beamspy-*.html > /dev/null && grep -q '^beamspy: wrote ./beamspy-.*\.html' out &&
        ! MIX_ENV=dev mix profile.beamspy -e "Consumer.fib(5)" --names klingon 2> err &&
        grep -q -- '--names must be erlang or elixir, got klingon' err &&
        ! MIX_ENV=dev mix profile.beamspy -e "Consumer.fib(5)" --max-events 0 2> err &&
        grep -q -- '--max-events must be infinity or a positive integer, got 0' err
    ) > "$work/mix-task.log" 2>&1
    if [ $? -eq 0 ]; then report mix-profile-task ok; else report mix-profile-task FAILED "$work/mix-task.log"; fi
}

check_rebar3() {
    if ! command -v rebar3 >/dev/null 2>&1; then
        echo "CHECK rebar3-checkout-dependency: skipped (rebar3 not installed)"
        return
    fi
    app="$work/rebar_consumer"
    mkdir -p "$app/src" "$app/_checkouts"
    ln -s "$root" "$app/_checkouts/beamspy"
    echo '{deps, [beamspy]}.' > "$app/rebar.config"
    cat > "$app/src/consumer.app.src" <<'APP'
{application, consumer, [{description, "beamspy packaging check"}, {vsn, "0.1.0"},
                         {applications, [kernel, stdlib, beamspy]}]}.
APP
    cat > "$app/src/consumer.erl" <<'ERL'
-module(consumer).
-export([fib/1]).
fib(N) when N < 2 -> N;
fib(N) -> fib(N - 1) + fib(N - 2).
ERL
    (
        cd "$app" &&
        HOME="$work/home" rebar3 compile &&
        erl -noshell -pa _build/default/lib/*/ebin _build/default/checkouts/*/ebin -eval '
            8 = beamspy:apply({consumer, fib, [6]}, [quiet, {output, "fib.folded"}]),
            halt().' &&
        grep -q ';consumer:fib/1;consumer:fib/1 ' fib.folded
    ) > "$work/rebar3.log" 2>&1
    if [ $? -eq 0 ]; then report rebar3-checkout-dependency ok; else report rebar3-checkout-dependency FAILED "$work/rebar3.log"; fi
}

check_mix
check_rebar3
exit $failed
