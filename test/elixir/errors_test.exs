# errors_test.exs — bad options and bad targets raise an ArgumentError with a
# readable message before anything runs, and leave nothing traced.
defmodule BeamSpyTest.ErrorsTest do
  use ExUnit.Case
  import BeamSpyTest.Helpers
  alias BeamSpyTest.Work

  defp refused(target, options) do
    error = assert_raise ArgumentError, fn -> BeamSpy.run(target, options) end
    refute_received :ran
    assert_nothing_traced()
    assert String.starts_with?(error.message, "beamspy: ")
    error.message
  end

  defp runs_marker, do: fn -> send(self(), :ran) end

  test "a bad option value names the option and what it must be" do
    assert refused(runs_marker(), names: :cobol) =~
             "option :names must be :erlang or :elixir, got :cobol"

    assert refused(runs_marker(), children: :yes) =~
             "option :children must be true or false, got :yes"

    assert refused(runs_marker(), max_memory: -1) =~
             "option :max_memory must be a positive integer, got -1"

    assert refused(runs_marker(), output: "") =~ "option :output"

    assert refused(runs_marker(), formats: [:png]) =~
             "option :formats must be a non-empty list of :folded, :svg"

    # Values are shown as Elixir writes them, not as Erlang terms.
    assert refused(runs_marker(), formats: ["svg"]) =~ "got [\"svg\"]"
    assert refused(runs_marker(), max_events: :lots) =~ "must be :infinity or a positive integer"
  end

  test "an unknown option is named" do
    assert refused(runs_marker(), colour: :red) =~ "unknown option :colour"
  end

  test "patterns are checked as the writers use them (POSIX, not PCRE)" do
    message = refused(runs_marker(), include: "(?i)fib")
    assert message =~ "option :include: \"(?i)fib\" does not compile as a POSIX extended"
  end

  test "an output that is no format beamspy writes is refused, and nothing is created" do
    path = scratch("picture.png")
    assert refused(runs_marker(), output: path) =~ "beamspy writes no .png files"
    refute File.exists?(path)

    svg = scratch("one.svg")
    assert refused(runs_marker(), output: svg, formats: [:html]) =~
             "is a file, which holds one format (:svg), but formats: [:html] was given"

    refute File.exists?(svg)
  end

  test "capture: bad input raises ArgumentError as run does; &M.f/a is accepted" do
    assert_raise ArgumentError, "beamspy: BeamSpyTest.Work.nope/2 is undefined", fn ->
      BeamSpy.capture({Work, :nope, 2}, 1)
    end

    assert_raise ArgumentError, "beamspy: BeamSpyTest.Work.nope/2 is undefined", fn ->
      BeamSpy.capture(Function.capture(Work, :nope, 2), 1)
    end

    assert_raise ArgumentError, ~r/not an anonymous fn/, fn -> BeamSpy.capture(fn -> 1 end, 1) end
    assert_raise ArgumentError, ~r/got :nope/, fn -> BeamSpy.capture(:nope, 1) end
    assert_raise ArgumentError, ~r/positive integer, got 0/, fn -> BeamSpy.capture(&Work.fib/1, 0) end

    assert_raise ArgumentError, ~r/unknown option :colour/, fn ->
      BeamSpy.capture(&Work.fib/1, 1, colour: :red)
    end

    assert_nothing_traced()

    # A capture of a named function works like {M, :f, arity}.
    dir = scratch("capture_fun")
    # Calls until the capture is done: setting the patterns up takes a while
    # (hundreds of ms on OTP 27/29), a single early call could come too soon.
    # Raw times: fib(10)'s microsecond, compensated, can round to no line.
    worker = spawn(fn -> Stream.repeatedly(fn -> Work.fib(10) end) |> Stream.run() end)

    assert {:ok, [file]} =
             BeamSpy.capture(&Work.fib/1, 1, output: dir, merge: false, quiet: true, compensate: false)

    Process.exit(worker, :kill)
    assert File.read!(file) =~ "BeamSpyTest.Work.fib/1"
    assert_nothing_traced()
  end

  test "a limit that stops the recording early is said on stderr, in Elixir's spelling" do
    stderr =
      ExUnit.CaptureIO.capture_io(:stderr, fn ->
        assert BeamSpy.run({Work, :fib, [18]}, max_events: 200, quiet: true,
                 output: scratch("limited")) == 2584
      end)

    assert stderr =~ "beamspy: recording stopped early after"
    assert stderr =~ "max_events (200) reached"
    assert stderr =~ "give max_events: 2_000 (or :infinity)"
  end

  test "options must be a keyword list or a map" do
    assert refused(runs_marker(), :quiet) =~ "options must be a keyword list or a map, got :quiet"
    assert refused(runs_marker(), [1, 2]) =~ "options must be a keyword list or a map"
  end

  test "an option given twice is refused" do
    assert refused(runs_marker(), quiet: true, quiet: false) =~
             "option :quiet is given more than once"
  end

  test "an output that cannot be a directory is refused before the call runs" do
    file = scratch("plain_file")
    File.write!(file, "")
    assert refused(runs_marker(), output: Path.join(file, "sub")) =~ "cannot use"
  end

  test "a target that is not one is refused with the forms that are" do
    message = refused(:nope, quiet: true)
    assert message =~ ":nope is not a target"
    assert message =~ "{Module, :function, args}"
    assert refused({1, 2}, quiet: true) =~ "is not a target"
  end

  test "a fun given the wrong number of arguments" do
    assert refused({&Work.fib/1, [1, 2]}, quiet: true) =~ "takes 1 argument but 2 were given"
  end

  test "an undefined function is named the Elixir way" do
    assert refused({Work, :nope, [1]}, quiet: true) ==
             "beamspy: BeamSpyTest.Work.nope/1 is undefined"

    assert refused({:lists, :nope, []}, quiet: true) == "beamspy: :lists.nope/0 is undefined"
  end

  test "a module that does not exist" do
    assert refused({NoSuchModule, :run, []}, quiet: true) =~
             "module NoSuchModule is not available"
  end

  test "a private function must be made public" do
    message = refused({Work, :secret, [1]}, quiet: true)
    assert message =~ "BeamSpyTest.Work.secret/1 is private"
    assert message =~ "must be public"

    error = assert_raise ArgumentError, fn -> Work.private_from_here(quiet: true) end
    assert error.message =~ "BeamSpyTest.Work.secret/1 is private"
  end

  test "{:function, args} that the calling module does not define" do
    message = refused({:no_such_local, [1]}, quiet: true)
    assert message =~ "BeamSpyTest.ErrorsTest has no function no_such_local/1"
    assert message =~ "{__MODULE__, :no_such_local, args}"
  end

  test "{:function, args} in tail position of another module explains why it is not found" do
    error = assert_raise ArgumentError, fn -> Work.local_in_tail_position(3, quiet: true) end
    assert error.message =~ "has no function fib/1"
    assert error.message =~ "last call of a function"
  end

  test "profile/2 refuses bad input the same way" do
    assert_raise ArgumentError, ~r/unknown option :colour/, fn ->
      BeamSpy.profile(runs_marker(), colour: :red)
    end

    refute_received :ran
  end
end
