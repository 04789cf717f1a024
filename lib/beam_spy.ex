# BeamSpy — the Elixir front end of beamspy: a thin wrapper over the Erlang
# API (src/beamspy.erl) that adds the Elixir ways of naming a call
# ({:local_fun, args}, keyword options), Elixir-style frame names by default,
# and ArgumentErrors with readable messages for bad input.
defmodule BeamSpy do
  @moduledoc """
  Exact flame graphs of Elixir and Erlang code, recorded natively.

  `BeamSpy.run/2` calls a function and returns what it returns. While it
  runs, an `erl_tracer` NIF records every call, return and reschedule of the
  calling process (and of every process it spawns) and a C engine rebuilds
  the call stacks as they happen; when the call is over, the flame graph is
  written to a file that speedscope, inferno, `flamegraph.pl` or
  `beamspy render` can read.

      iex> path = Path.join(System.tmp_dir!(), "beamspy_moduledoc_sort.folded")
      iex> BeamSpy.run({Enum, :sort, [[3, 1, 2]]}, output: path, quiet: true)
      [1, 2, 3]
      iex> File.read!(path) =~ ~r/^<[0-9.]+>;Enum.sort\\/1 [0-9]+$/m
      true

  Without `quiet: true`, BeamSpy also prints where it wrote the file
  (`beamspy: wrote /tmp/beamspy_moduledoc_sort.folded`). The file holds one
  line per distinct stack: the process first, then the frames root first,
  then the time spent in that stack itself, in microseconds. For a naive
  `MyApp.Math.fib(5)` it reads (real output; the first line is time the
  process spent outside any recorded frame):

      <0.96.0> 1
      <0.96.0>;MyApp.Math.fib/1 10
      <0.96.0>;MyApp.Math.fib/1;MyApp.Math.fib/1 4
      <0.96.0>;MyApp.Math.fib/1;MyApp.Math.fib/1;MyApp.Math.fib/1 5
      <0.96.0>;MyApp.Math.fib/1;MyApp.Math.fib/1;MyApp.Math.fib/1;MyApp.Math.fib/1 4
      <0.96.0>;MyApp.Math.fib/1;MyApp.Math.fib/1;MyApp.Math.fib/1;MyApp.Math.fib/1;MyApp.Math.fib/1 2

  Recursion keeps its depth: `fib(5)` is five frames deep.

  ## Naming the call

    * `{Module, :function, args}` — a public function of any module;
    * `{:function, args}` — a public function of the module that calls
      `BeamSpy.run/2` (found at run time on the caller's stack, no
      `require` needed). When `BeamSpy.run/2` is the last call of a
      function, the VM drops that function's frame before the call, so
      BeamSpy can only look further up the stack; write
      `{__MODULE__, :function, args}` there;
    * `fun` — a function of no arguments, e.g. `fn -> MyApp.work(42) end`;
    * `{fun, args}` — e.g. `{&MyApp.work/2, [1, 2]}`.

  The call runs in the calling process, so `self()`, the process dictionary
  and the mailbox are the caller's. Its result reaches the caller unchanged,
  and an exception it raises is raised again with the same kind, reason and
  stacktrace. Afterwards nothing is traced any more, whatever happened.

  ## Options

  A keyword list (or a map); `h BeamSpy.run` lists every option with its
  default. Bad options or a target that cannot be called raise an
  `ArgumentError` before anything runs.

  ## Live systems

  `start/2` records processes that are already running (a pid, a
  registered name, a list of them, `:existing`, `:new` or `:all`) until
  `stop/1`; `trace/3` does both for a given time; `sessions/0` lists what
  is being recorded. Live sessions are bounded by default (60 s, 256 MiB,
  10000 processes); when a limit trips, tracing stops at
  once, the files are written and the caller receives
  `{:beamspy, session, {:stopped, reason, files}}`. If the caller dies,
  the session ends and nothing stays traced. See `:beamspy` for the
  details (what is refused when another tracer is active, what it costs).

  ## What the stacks show

  The stacks are the ones the VM really has. A call in tail position
  replaces its caller's frame, so `def a, do: b()` shows `b` beside `a`,
  not under it; the compiler also turns some body calls into tail calls.
  One recording runs at a time on a node: trace patterns are node-wide on
  this OTP release, and a second `run/2` while one is running raises.
  """

  @typedoc "What to call: see \"Naming the call\" in the module documentation."
  @type target ::
          (() -> term())
          | {fun(), [term()]}
          | {module(), atom(), [term()]}
          | {atom(), [term()]}

  @typedoc "One option: see `run/2`."
  @type option ::
          {:output, Path.t()}
          | {:formats, [:folded | :svg | :html | :speedscope | :chrome | :perf | :bspy | :callgrind | :pprof]}
          | {:children, boolean()}
          | {:sleep, boolean()}
          | {:gc, boolean()}
          | {:compensate, boolean()}
          | {:times, :compensated | :samples | :raw}
          | {:mode, :trace | :cpu}
          | {:cpu_hz, pos_integer()}
          | {:max_memory, pos_integer()}
          | {:max_processes, pos_integer()}
          | {:names, :elixir | :erlang}
          | {:quiet, boolean()}

  @type options :: [option() | atom()] | %{optional(atom()) => term()}

  @typedoc "How the call ended: its value, or the exception it raised."
  @type outcome :: {:return, term()} | {:raise, :error | :exit | :throw, term(), list()}

  @typedoc """
  A node of a process's call tree: `{id, parent_id | :undefined, frame,
  self_ns, total_ns, calls}`. The first node of a process is the process
  itself (its pid, and its registered name or initial call where known).
  """
  @type tree_node ::
          {non_neg_integer(), non_neg_integer() | :undefined, String.t(), non_neg_integer(),
           non_neg_integer(), non_neg_integer()}

  @type profile :: %{
          required(:processes) => [{String.t(), [tree_node()]}],
          required(:truncated) => false | :max_memory | :max_processes,
          required(:events) => non_neg_integer(),
          required(:dropped) => non_neg_integer(),
          required(:memory_peak) => non_neg_integer(),
          required(:duration_ns) => non_neg_integer()
        }

  @typedoc """
  What a live session records: a pid, a registered name, a list of them,
  `:existing` (every process running now), `:new` (every process spawned
  from now on) or `:all` (both).
  """
  @type live_target :: pid() | atom() | [pid() | atom()] | :all | :existing | :new

  @typedoc "A running live session, as returned by `start/2` (opaque)."
  @type session :: :beamspy.session()

  # Modules that run the caller's code without being the caller: skipped
  # when looking for the module of a {:function, args} target.
  @plumbing_modules [
    :erlang,
    :erl_eval,
    :elixir,
    :lists,
    :proc_lib,
    :gen,
    :gen_server,
    :gen_statem,
    Enum,
    Stream,
    Process,
    Code,
    Kernel.CLI,
    BeamSpy
  ]
  @plumbing_prefixes ~w(elixir_ Elixir.IEx. Elixir.ExUnit. Elixir.Mix. Elixir.Module. Elixir.Code.)

  ## Public API

  @doc """
  Calls `target`, writes its flame graph, and returns what the call returned
  (or raises what it raised, with the same stacktrace).

      iex> path = Path.join(System.tmp_dir!(), "beamspy_doc_sum.folded")
      iex> BeamSpy.run({Enum, :sum, [[1, 2, 3]]}, output: path, quiet: true)
      6
      iex> BeamSpy.run(fn -> Enum.map(1..3, &(&1 * 2)) end, output: path, quiet: true)
      [2, 4, 6]
      iex> BeamSpy.run({&String.upcase/1, ["spy"]}, output: path, quiet: true)
      "SPY"

  Bad input raises before anything runs:

      iex> BeamSpy.run({Enum, :sum, [[1]]}, names: :cobol)
      ** (ArgumentError) beamspy: option :names must be :erlang or :elixir, got :cobol

  Raises a `RuntimeError` if the recording cannot start (another recording
  is running, or the calling process is already traced by someone else).

  ## Options

  Options are a keyword list (or a map); every one, with its default (the
  same as `:beamspy`'s, but `:names`):

    * `:output` — a file name whose extension picks the format (`.folded`),
      or a directory (created if needed) that gets one file per format, named
      from the call and the time. Default: the current directory.
    * `:formats` — the formats written into a directory output (by default
      a page that opens in any browser). Default `[:html]`.
    * `:children` — also record the processes the call spawns, each under its
      own pid. Default `true`.
    * `:sleep` — charge the time a process spends scheduled out to a leaf:
      `WAIT` (waiting in `receive` for a message or a timeout) or `RUNNABLE`
      (able to run, not running: preempted, yielding, rescheduled by
      tracing). Default `true`.
    * `:show_idle` — a whole-VM session (`start(:all, ...)`) orders processes
      by running time and leaves their `WAIT` time out of the outputs (their
      notes say how much); `true` keeps it. Default `false`.
    * `:gc` — charge garbage collections to a `GC` leaf. Default `false`.
    * `:mode` — `:trace` traces every call (exact counts and stacks);
      `:cpu` traces none and takes the kernel's CPU samples of the VM's
      scheduler threads, each charged to the process the thread ran (the
      VM must run with `+JPperf true`, e.g. `elixir --erl "+JPperf true"`).
      Default `:trace`.
    * `:cpu_hz` — with `mode: :cpu` or `times: :samples`, samples a
      second of each busy scheduler thread. Default 199.
    * `:times` — what traced self times are: `:compensated` (the tracer's
      calibrated cost subtracted, see `:compensate`), `:samples` (the CPU
      sampler of `mode: :cpu` runs beside the trace: call counts and stacks
      are the trace's, each function's self time its CPU samples; needs
      `+JPperf true`; no calibration) or `:raw`. `compensate: false` with
      the default means `:raw`. Default `:compensated`.
    * `:compensate` — subtract the tracer's own cost per traced event
      from traced times (the callbacks' time as measured, the VM's part as
      calibrated in a process of its own, kept for a minute), never below zero; every output says what its times are. `false` gives
      raw traced times. Default `true`.
    * `:max_memory` — bytes the recording may use; past it, recording stops
      and the profile is marked truncated. Default 256 MiB.
    * `:max_processes` — processes recorded at most. Default 10000.
    * `:names` — `:elixir` (`MyApp.Worker.run/2`, `:lists.sort/1`) or
      `:erlang` (`'Elixir.MyApp.Worker':run/2`, `lists:sort/1`). Default
      `:elixir`.
    * `:collapse_recursion` — fold recursion into one frame, time and calls
      kept: `true` or `:direct` (`f` calling `f`), `:all` (also `f -> g -> f`,
      the smallest output for compiler-like code). Default `false`.
    * `:full` — folded, perf, speedscope, Chrome trace and callgrind files
      projected above 200 MB, more than viewers open, are written with their
      recursion folded unless `:collapse_recursion` is given, and a warning
      says so with both sizes; `true` writes every stack whole. Default
      `false`.
    * `:timeline_cap` — calls at most in the time order of one speedscope or
      Chrome trace file (the deepest are left out, totals unchanged):
      `:auto` (300000 for speedscope, 25000 for Chrome trace: what speedscope
      imports in under 30 s), `:infinity` or a number. Default `:auto`.
    * `:quiet` — do not print where the files were written. Default `false`.
    * `:open` — `run/2`: open the HTML (else SVG) written in the browser
      (`$BROWSER`, else `xdg-open` with a display, `open` on macOS); with
      none, say on standard error where the file is. Default `false`.
    * `:telemetry` — event prefixes (`[[:my_app, :repo, :query]]`) whose
      `:telemetry.span/3` spans become frames (`[my_app.repo.query]`) of the
      recorded stacks, above the functions they enclose; telemetry must be
      loaded and started. See `BeamSpy.Telemetry` for spans alone.
    * `:max_events` — events recorded at most (counted in batches of 64
      per process); past it, recording stops and the profile is marked
      truncated. Default `:infinity`.
    * `:max_duration` — milliseconds of recording at most. Default `:infinity`.
    * `:timeline` — keep calls in time order (flame charts, Chrome trace,
      evented speedscope): `true` (up to 1000000 calls), a number of calls
      or `false`. Default `:auto`.
    * `:title`, `:subtitle` — SVG and HTML headings (at most 511 bytes).
    * `:width`, `:min_width` — SVG width (1200) and the narrowest frame
      drawn (0.1), in pixels.
    * `:palette` — SVG and HTML colours: `:hot` (warm colours by name) or
      `:beam` (OTP, Elixir, your code, waits and GC in distinct hues).
      Default `:hot`.
    * `:inverted` — icicle graph (root at the top). Default `false`.
    * `:flamechart` — SVG with x as time. Default `false`.
    * `:drop_sleep` — leave `SLEEP`, `WAIT` and `RUNNABLE` frames out of the
      outputs. Default `false`.
    * `:merge` — one tree for all processes. Default `false`.
    * `:include`, `:exclude` — keep only the stacks with a frame matching,
      or drop the stacks with a frame matching, a POSIX extended regular
      expression (`"MyApp\\."`; PCRE forms such as `(?i)` are refused).
    * `:telemetry_metadata`, `:max_spans` — with `:telemetry`: metadata keys
      kept in the spans' args (at most 16), span starts recorded at most.
    * `:return` — `profile/2` only: formats rendered in memory (see there).
    * `:ignore` — up to 8 local pids never recorded. Default `[]`.
    * `:until_halt` — live sessions: a traced process halting the VM
      first writes the files (after a limit, the profile up to the limit).
      Default `false`.
    * `:output_directory`, `:output_format` — eflambe's names of `:output`
      (a directory) and `:formats` (`:brendan_gregg` is folded), so code
      written for eflambe works.
  """
  @spec run(target()) :: term()
  @spec run(target(), options()) :: term()
  def run(target, options \\ []) do
    {target, options} = validate!(target, options)

    try do
      :beamspy.apply(target, options)
    catch
      :error, {:beamspy, reason} = error ->
        if raised_by_apply?(__STACKTRACE__, target, options) do
          refuse!(reason)
        else
          :erlang.raise(:error, error, __STACKTRACE__)
        end
    end
  end

  @doc """
  Like `run/2`, but returns how the call ended and the recorded profile
  instead of returning or raising. No file is written unless `:output` or
  `:formats` is given.

  Returns `{:ok, %{result: outcome, profile: profile, files: paths}}`, or
  `{:error, reason}` if the recording could not start
  (`:beamspy.format_error/1` explains `reason`). Bad options or targets
  raise an `ArgumentError`, as for `run/2`.

      iex> {:ok, %{result: result, profile: profile}} =
      ...>   BeamSpy.profile({Enum, :sort, [[3, 1, 2]]}, sleep: false)
      iex> result
      {:return, [1, 2, 3]}
      iex> [{_pid, [_process_node | call_nodes]}] = profile.processes
      iex> for {_id, _parent, frame, _self_ns, _total_ns, calls} <- call_nodes, do: {frame, calls}
      [{"Enum.sort/1", 1}, {":lists.sort/1", 1}]

  With `return: [format, ...]` (`:svg`, `:html`, `:folded`, `:speedscope`,
  `:chrome`, `:perf`, `:bspy`, `:callgrind`, `:pprof`) the map also holds each
  format's bytes under its name, rendered in memory, nothing written: over
  `:erpc` from a Livebook notebook, a flame graph comes back from a remote
  node (see `load/2`).

      iex> {:ok, %{svg: svg, files: []}} = BeamSpy.profile({Enum, :sort, [[3, 1, 2]]}, return: [:svg])
      iex> String.contains?(svg, "Enum.sort/1")
      true
  """
  @spec profile(target()) ::
          {:ok, %{result: outcome(), profile: profile(), files: [charlist()]}}
          | {:error, term()}
  @spec profile(target(), options()) ::
          {:ok, %{result: outcome(), profile: profile(), files: [charlist()]}} | {:error, term()}
  def profile(target, options \\ []) do
    {target, options} = validate!(target, options)
    :beamspy.profile(target, options)
  end

  @doc """
  Starts recording processes that are already running, and returns
  `{:ok, session}` as soon as their tracing is on (nothing is lost at the
  start). Stop it with `stop/1`, which writes the files.

  `targets` is a pid, a registered name, a list of them, `:existing`,
  `:new` or `:all` (see `t:live_target/0`); BeamSpy's own processes are
  never traced. The options are those of `run/2`, with safer defaults
  for a live system: `:max_duration` 60000 ms,
  `:max_memory` 256 MiB, `:max_processes` 10000, and `:children` `false`.

  When a limit trips, tracing stops at once, the files are written (the
  profile marked truncated) and the calling process receives
  `{:beamspy, session, {:stopped, reason, files}}`, `reason` being
  `:max_duration`, `:max_events`, `:max_memory` or `:max_processes`.
  If the calling process dies, the session stops and writes its files too.

      iex> {:ok, agent} = Agent.start_link(fn -> 0 end)
      iex> path = Path.join(System.tmp_dir!(), "beamspy_doc_agent.folded")
      iex> {:ok, session} = BeamSpy.start(agent, output: path)
      iex> Agent.update(agent, &(&1 + 1))
      :ok
      iex> BeamSpy.stop(session) == {:ok, [String.to_charlist(path)]}
      true

  Returns `{:error, reason}` if the recording cannot start (another one
  is running, a target is traced by another tracer or is not alive;
  `:beamspy.format_error/1` explains `reason`). Bad options or targets
  raise an `ArgumentError`.
  """
  @spec start(live_target()) :: {:ok, session()} | {:error, term()}
  @spec start(live_target(), options()) :: {:ok, session()} | {:error, term()}
  def start(targets, options \\ []) do
    options = validate_live!(targets, options)
    :beamspy.start(targets, options)
  end

  @doc """
  Stops a session started by `start/2`: tracing is switched off everywhere,
  every trace pattern removed, and the files written. Returns
  `{:ok, files}`; after a limit tripped, the files written then.

  With `profile: true`, returns `{:ok, %{files: files, profile: profile,
  truncated: false | reason, ...}}` instead (see `profile/2` for the
  profile); files are then written only if `:output` or `:formats` was
  given to `start/2`.

      iex> {:ok, session} = BeamSpy.start(self())
      iex> Enum.sort([3, 1, 2])
      [1, 2, 3]
      iex> {:ok, %{profile: profile, truncated: false}} = BeamSpy.stop(session, profile: true)
      iex> [{_self, _tree}] = profile.processes
  """
  @spec stop(session()) :: {:ok, [charlist()]} | {:error, term()}
  @spec stop(session(), profile: boolean()) :: {:ok, [charlist()] | map()} | {:error, term()}
  def stop(session, options \\ [])

  def stop(session, []), do: :beamspy.stop(session)

  def stop(session, options) when is_list(options) do
    case Keyword.keys(options) -- [:profile] do
      [] -> :beamspy.stop(session, Map.new(options))
      [key | _] -> raise ArgumentError, "beamspy: unknown option #{inspect(key)} for stop"
    end
  end

  @doc """
  Records `targets` for `duration` milliseconds: `start/2`, wait, `stop/1`.
  Returns `{:ok, files}`, early if a limit trips.

      iex> {:ok, agent} = Agent.start_link(fn -> 0 end)
      iex> path = Path.join(System.tmp_dir!(), "beamspy_doc_trace.folded")
      iex> BeamSpy.trace(agent, 50, output: path) == {:ok, [String.to_charlist(path)]}
      true
  """
  @spec trace(live_target(), pos_integer()) :: {:ok, [charlist()]} | {:error, term()}
  @spec trace(live_target(), pos_integer(), options()) :: {:ok, [charlist()]} | {:error, term()}
  def trace(targets, duration, options \\ []) do
    options = validate_live!(targets, options)
    :beamspy.trace(targets, duration, options)
  end

  @doc """
  Profiles the next `calls` calls of a function, made by any process (or
  only by the pids in option `:pids`), each from the moment of the call to
  its return, with no recompiling and no mocking. The function is given as
  `{module, function, arity}` or as a capture, `&Module.function/arity`.
  Returns `{:ok, files}` (one profile per call, `...-callK.<ext>`, plus a
  merged one, `...-merged.<ext>`; option `merge: false | true` keeps only
  one kind) once the calls were captured or `:timeout` (ms, default 30000)
  passed, or `{:error, reason}` if the recording cannot start or no call
  came (`:beamspy.format_error/1` explains `reason`). As for `run/2`, a
  function that does not exist, bad options or a bad count raise an
  `ArgumentError` before anything is traced. Other options are those of
  `run/2`.

      iex> BeamSpy.capture({Enum, :nope, 7}, 1)
      ** (ArgumentError) beamspy: Enum.nope/7 is undefined

      iex> dir = Path.join(System.tmp_dir!(), "beamspy_doc_capture")
      iex> worker = spawn(fn -> Stream.repeatedly(fn -> :lists.seq(1, 10) end) |> Stream.run() end)
      iex> {:ok, files} = BeamSpy.capture({:lists, :seq, 2}, 2, output: dir, merge: false)
      iex> Process.exit(worker, :kill)
      true
      iex> length(files)
      2
  """
  @spec capture(mfa() | function(), pos_integer()) :: {:ok, [charlist()]} | {:error, term()}
  @spec capture(mfa() | function(), pos_integer(), options()) ::
          {:ok, [charlist()]} | {:error, term()}
  def capture(function, calls, options \\ []) do
    mfa = capture_target!(function)
    options = erlang_options!(options)

    unless is_integer(calls) and calls > 0 do
      raise ArgumentError, "beamspy: the number of calls must be a positive integer, got #{inspect(calls)}"
    end

    with :ok <- :beamspy_capture.check_function(mfa),
         {:ok, _} <- :beamspy_opts.options(options) do
      :beamspy.capture(mfa, calls, options)
    else
      {:error, reason} -> raise ArgumentError, message(reason)
    end
  end

  @doc """
  Runs `target` with a seq_trace token and draws the messages of its flow
  as a sequence diagram: every message a process sends while it holds the
  token (the token travels with each message, from process to process and
  node to node), on this node and on the connected nodes it reaches.
  Returns what `target` returned, or raises what it raised; `target` is any
  form `run/2` takes and runs in the calling process.

  Messages are ordered by the token's serial numbers (causality), not by
  the nodes' clocks. Each node gets a collector as its seq_trace system
  tracer for the time of the call (BeamSpy's collector module is loaded
  onto nodes that lack it and removed afterwards); a node that already has
  a system tracer is refused with a `RuntimeError` before anything runs.

  Options: `:output` (a directory, or a file whose extension picks the
  format: `.mmd` Mermaid, `.seq.svg` SVG, `.trace.json` Chrome trace,
  `.json`), `:formats` (`:mermaid`, `:svg`, `:chrome`, `:json`; default
  `[:mermaid]`), `:nodes` (`:connected`, `:local` or a list of nodes),
  `:keep_noise`, `:include`, `:exclude`, `:max_events` (10000),
  `:max_participants` (40), `:label_chars` (60), `:settle` (100 ms),
  `:timeout` (5000 ms), `:title`, `:quiet`, `:names` (processes named
  `MyApp.Server`, `MyApp.Worker.init/1` by default; `:erlang` for
  `'Elixir.MyApp.Server'`); see `:beamspy.sequence/2`.

      iex> path = Path.join(System.tmp_dir!(), "beamspy_doc_seq.mmd")
      iex> {:ok, agent} = Agent.start_link(fn -> 41 end)
      iex> BeamSpy.sequence(fn -> Agent.get(agent, &(&1 + 1)) end, output: path, quiet: true)
      42
      iex> File.read!(path) =~ "-->>"
      true
  """
  @spec sequence(target()) :: term()
  @spec sequence(target(), keyword() | map()) :: term()
  def sequence(target, options \\ []) do
    target = erlang_target!(target)
    options = erlang_options!(options)

    case :beamspy_sequence.check(target, options) do
      :ok -> :ok
      {:error, reason} -> raise ArgumentError, message(reason)
    end

    try do
      :beamspy.sequence(target, options)
    catch
      :error, {:beamspy, reason} = error ->
        case __STACKTRACE__ do
          [{:beamspy, :sequence, [^target, ^options], _} | _] -> refuse!(reason)
          _ -> :erlang.raise(:error, error, __STACKTRACE__)
        end
    end
  end

  @doc """
  Renders a profile already in hand (the `:profile` that `profile/2`
  returns, possibly brought from another node) in `format`, in memory, and
  returns the bytes. Options are the rendering ones of `run/2` (`:title`,
  `:palette`, `:drop_sleep`, `:include`, `:exclude`, `:merge`, ...); frame
  names stay as the profile spells them. A malformed profile or a bad
  option raises an `ArgumentError` saying what is wrong.

      iex> {:ok, %{profile: profile}} = BeamSpy.profile({Enum, :sort, [[3, 1, 2]]})
      iex> BeamSpy.render(profile, :folded) =~ "Enum.sort/1"
      true
  """
  @spec render(profile(), atom(), options()) :: binary()
  def render(profile, format, options \\ []) do
    case :beamspy.render(profile, format, erlang_options!(options)) do
      {:ok, bytes} -> bytes
      {:error, reason} -> raise ArgumentError, message(reason)
    end
  end

  @doc """
  Delivers beamspy's Erlang modules and NIF over distribution to `node`,
  which needs nothing installed, so that beamspy runs there through `:erpc`
  (from a Livebook notebook attached to a production node, for example).
  The node must run this node's OTP release on the same architecture and
  word size; the NIF is written to a private directory under the node's
  TMPDIR, loaded and deleted at once. See `:beamspy.load/2`.

      {:ok, _} = BeamSpy.load(:"app@host")
      {:ok, %{result: {:return, [1, 2, 3]}}} =
        :erpc.call(:"app@host", :beamspy, :profile, [{Enum, :sort, [[3, 1, 2]]}, %{}])
      {:ok, _} = BeamSpy.unload(:"app@host")
  """
  @spec load(node(), timeout()) :: {:ok, map()} | {:error, term()}
  def load(node, timeout \\ 30_000), do: :beamspy.load(node, timeout)

  @doc """
  Removes from `node` what `load/2` loaded there (refused while a recording
  runs there). See `:beamspy.unload/2`.
  """
  @spec unload(node(), timeout()) :: {:ok, map()} | {:error, term()}
  def unload(node, timeout \\ 30_000), do: :beamspy.unload(node, timeout)

  @doc """
  What BeamSpy is recording on this node right now: one map per session
  (owner, caller, targets, start time, limits, events so far, memory).

      iex> BeamSpy.sessions()
      []
  """
  @spec sessions() :: [map()]
  def sessions, do: :beamspy.sessions()

  ## Validation, done before anything runs

  defp validate_live!(targets, options) do
    options = erlang_options!(options)

    with {:ok, _} <- :beamspy_opts.live_targets(targets),
         {:ok, _} <- :beamspy_opts.options(options, :live) do
      options
    else
      {:error, reason} -> raise ArgumentError, message(reason)
    end
  end

  defp validate!(target, options) do
    options = erlang_options!(options)
    target = erlang_target!(target)

    case :beamspy_opts.options(options) do
      {:ok, _} -> {target, options}
      {:error, reason} -> raise ArgumentError, message(reason)
    end
  end

  # Keyword lists (and proplists with bare atoms) become the Erlang map;
  # frames are named the Elixir way unless asked otherwise.
  defp erlang_options!(options) when is_map(options), do: Map.put_new(options, :names, :elixir)

  defp erlang_options!(options) when is_list(options) do
    pairs =
      Enum.map(options, fn
        {key, value} -> {key, value}
        key when is_atom(key) -> {key, true}
        _ -> raise ArgumentError, bad_options(options)
      end)

    keys = Enum.map(pairs, &elem(&1, 0))

    case keys -- Enum.uniq(keys) do
      [] -> :ok
      [key | _] -> raise ArgumentError, "beamspy: option #{inspect(key)} is given more than once"
    end

    erlang_options!(Map.new(pairs))
  end

  defp erlang_options!(options), do: raise(ArgumentError, bad_options(options))

  defp erlang_target!({name, args}) when is_atom(name) and is_list(args) do
    local_target!(name, args)
  end

  defp erlang_target!({module, name, args} = target)
       when is_atom(module) and is_atom(name) and is_list(args) do
    case function_kind(module, name, length(args)) do
      :public -> target
      other -> raise ArgumentError, not_callable(other, module, name, length(args))
    end
  end

  defp erlang_target!(target) do
    case :beamspy_opts.target(target) do
      {:ok, _fun, _args} -> target
      {:error, {:bad_target, ^target}} -> raise ArgumentError, not_a_target(target)
      {:error, reason} -> raise ArgumentError, message(reason)
    end
  end

  # {:function, args}: a function of the module that called BeamSpy. If
  # that call was a tail call, the caller's frame is already gone, so the
  # modules further up the stack are tried too.
  defp local_target!(name, args) do
    # Read here, not in a helper: the VM keeps only the 8 innermost frames
    # (system flag backtrace_depth), and every frame of ours takes one.
    {:current_stacktrace, stack} = :erlang.process_info(self(), :current_stacktrace)
    arity = length(args)
    callers = caller_modules(stack)

    found =
      Enum.find_value(callers, fn module ->
        case function_kind(module, name, arity) do
          kind when kind in [:public, :private] -> {kind, module}
          _ -> nil
        end
      end)

    case {found, callers} do
      {{:public, module}, _} ->
        {module, name, args}

      {{:private, module}, _} ->
        raise ArgumentError, not_callable(:private, module, name, arity)

      {nil, []} ->
        raise ArgumentError,
              "beamspy: {#{inspect(name)}, args} names a function of the calling module, " <>
                "but no module on the call stack defines #{name}/#{arity}: BeamSpy was " <>
                "called from iex or a script, or as the last call of a function (the VM " <>
                "drops that function's frame first). " <> use_instead(name)

      {nil, [module | _]} ->
        raise ArgumentError,
              "beamspy: {#{inspect(name)}, args} names a function of the calling module, " <>
                "but #{inspect(module)} has no function #{name}/#{arity} (if BeamSpy.run is " <>
                "the last call of a function, the VM drops that function's frame first). " <>
                use_instead(name)
    end
  end

  defp use_instead(name) do
    "Use {__MODULE__, #{inspect(name)}, args} or a fun instead"
  end

  defp caller_modules(stack) do
    stack
    |> Enum.map(fn {module, _fun, _arity, _location} -> module end)
    |> Enum.reject(&plumbing?/1)
    |> Enum.dedup()
  end

  defp plumbing?(module) do
    module in @plumbing_modules or
      String.starts_with?(Atom.to_string(module), @plumbing_prefixes)
  end

  defp function_kind(module, name, arity) do
    cond do
      not match?({:module, _}, Code.ensure_loaded(module)) -> :no_module
      function_exported?(module, name, arity) -> :public
      {name, arity} in module.module_info(:functions) -> :private
      true -> :undefined
    end
  end

  defp bad_options(options) do
    "beamspy: options must be a keyword list or a map, got #{inspect(options)}"
  end

  defp not_a_target(target) do
    "beamspy: #{inspect(target)} is not a target: use {Module, :function, args}, " <>
      "{:function, args}, a fun of no arguments, or {fun, args}"
  end

  defp not_callable(:no_module, module, _name, _arity) do
    "beamspy: module #{inspect(module)} is not available (not compiled, or not in the code path)"
  end

  defp not_callable(:private, module, name, arity) do
    "beamspy: #{Exception.format_mfa(module, name, arity)} is private; BeamSpy calls it from " <>
      "outside #{inspect(module)}, so it must be public (def, not defp)"
  end

  defp not_callable(:undefined, module, name, arity) do
    "beamspy: #{Exception.format_mfa(module, name, arity)} is undefined"
  end

  ## Errors from the Erlang API

  # beamspy:apply/2 raises {beamspy, Reason} with itself and its arguments on
  # top of the stacktrace; anything else was raised by the traced call.
  defp raised_by_apply?([{:beamspy, :apply, [target, options], _} | _], target, options),
    do: true

  defp raised_by_apply?(_stacktrace, _target, _options), do: false

  defp refuse!({:bad_output, _, _} = reason), do: raise(ArgumentError, message(reason))
  defp refuse!(reason), do: raise(RuntimeError, message(reason))

  # What a function to capture is: {Module, :function, arity} or &M.f/a.
  defp capture_target!({module, function, arity} = mfa)
       when is_atom(module) and is_atom(function) and is_integer(arity),
       do: mfa

  defp capture_target!(fun) when is_function(fun) do
    case Function.info(fun, :type) do
      {:type, :external} ->
        info = Function.info(fun)
        {info[:module], info[:name], info[:arity]}

      {:type, :local} ->
        raise ArgumentError,
              "beamspy: capture takes a named function, {Module, :function, arity} or " <>
                "&Module.function/arity, not an anonymous fn (got #{inspect(fun)})"
    end
  end

  defp capture_target!(other) do
    raise ArgumentError,
          "beamspy: capture takes {Module, :function, arity} or &Module.function/arity, " <>
            "got #{inspect(other)}"
  end

  # Reasons are explained by :beamspy.format_error/1, except those that show
  # a value the user gave: those are written in Elixir's syntax here.
  defp message({:bad_option, key, value, expected}) do
    "beamspy: option #{inspect(key)} must be #{elixir_words(List.to_string(expected))}, " <>
      "got #{inspect(value)}"
  end

  defp message({:unknown_option, key, _value}), do: "beamspy: unknown option #{inspect(key)}"

  defp message({:bad_pattern, key, pattern, why}) do
    "beamspy: option #{inspect(key)}: #{inspect(pattern)} does not compile as a POSIX " <>
      "extended regular expression (#{why}); PCRE forms such as (?i), \\d or lazy " <>
      "quantifiers are not supported"
  end

  defp message({:formats_with_file_output, output, format, formats}) do
    "beamspy: output #{inspect(List.to_string(output))} is a file, which holds one format " <>
      "(#{inspect(format)}), but formats: #{inspect(formats)} was given: give a directory " <>
      "as output to write several formats"
  end

  defp message({:bad_function, {:undef, {module, function, arity}}}),
    do: "beamspy: #{Exception.format_mfa(module, function, arity)} is undefined"

  defp message({:bad_function, {:not_loaded, module, why}}),
    do: "beamspy: module #{inspect(module)} is not available (#{inspect(why)})"

  defp message(reason), do: "beamspy: " <> List.to_string(:beamspy.format_error(reason))

  # The atoms named in an expectation ("erlang or elixir"), as Elixir writes them.
  defp elixir_words(text) do
    Regex.replace(
      ~r/\b(erlang|elixir|hot|beam|infinity|folded|svg|html|speedscope|chrome|perf|bspy|callgrind|pprof)\b/,
      text,
      ":\\1"
    )
  end
end
