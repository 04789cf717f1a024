%%% @doc What `mode => cpu' needs from the VM, checked before anything runs.
%%%
%%% CPU samples are taken by the kernel (`perf_event_open', see the NIF's
%%% cpu_session.h) with the call chain its frame-pointer walk finds. Erlang
%%% frames are in that chain, and have names, only when the JIT keeps frame
%%% pointers and writes its perf map (`/tmp/perf-<OS pid>.map'): the VM must
%%% run the JIT and be started with `+JPperf true'. This module tells
%%% whether this VM does, and if not says exactly how to start it.
-module(beamspy_cpu).

-export([check/0, join/0]).

%% @doc `ok' when this VM can be CPU-sampled with Erlang stacks, else
%% `{error, {cpu_unavailable, Why}}' with a sentence that says how to fix it.
%%
%% ```
%% case beamspy_cpu:check() of ok -> sampled; {error, {cpu_unavailable, _}} -> not_sampled end.
%% '''
-spec check() -> ok | {error, {cpu_unavailable, binary()}}.
check() ->
    case {os:type(), erlang:system_info(emu_flavor)} of
        {{unix, linux}, jit} ->
            case perf_map_is_ours(perf_map()) of
                true -> ok;
                false -> unavailable(no_perf_flag())
            end;
        {{unix, linux}, Flavor} ->
            unavailable(io_lib:format("this VM runs the ~tw emulator, not the JIT: its Erlang code has no frames "
                                      "the kernel can walk (use an OTP build with the JIT, on x86_64 or aarch64)",
                                      [Flavor]));
        {OS, _} ->
            unavailable(io_lib:format("CPU sampling needs Linux (perf_event_open); this node runs on ~tw", [OS]))
    end.

%% @doc How a CPU sample is joined to the process it was taken in.
%% `registers' on x86_64: BEAMAsm keeps the running process in r13, so the
%% sample itself names it and no scheduling is traced (the NIF's
%% cpu_session.c). `running' elsewhere (aarch64 keeps it in another
%% register, not used here): the session traces every chosen process's
%% scheduling (`in' and `out') and the NIF looks up which process held the
%% sampled thread at the sample's time.
%%
%% ```
%% registers = beamspy_cpu:join(). % on x86_64
%% '''
-spec join() -> registers | running.
join() ->
    case erlang:system_info(system_architecture) of
        "x86_64" ++ _ -> registers;
        _ -> running
    end.

%% Whether this VM writes Map: the JIT keeps its perf map open for the
%% whole run. A file of that name alone proves nothing: one left by an
%% earlier OS process with the same pid (the JIT never removes its map)
%% passed for the flag, and a VM without frame pointers was sampled.
%% Where /proc cannot be read, the file's existence has to do.
perf_map_is_ours(Map) ->
    case file:list_dir("/proc/self/fd") of
        {ok, Fds} ->
            lists:any(fun(Fd) -> file:read_link("/proc/self/fd/" ++ Fd) =:= {ok, Map} end, Fds);
        {error, _} ->
            filelib:is_regular(Map)
    end.

%% The JIT's perf map of this VM (it exists only with `+JPperf true').
-spec perf_map() -> file:filename().
perf_map() ->
    "/tmp/perf-" ++ os:getpid() ++ ".map".

no_perf_flag() ->
    io_lib:format("this VM (OTP ~ts) was not started with +JPperf true, so the JIT keeps no frame pointers "
                  "and writes no perf map (~ts) to name its code. Start it with the flag: "
                  "erl +JPperf true, or ERL_FLAGS=\"+JPperf true\", or a line +JPperf true in the "
                  "release's vm.args, or elixir --erl \"+JPperf true\" (iex and mix alike); "
                  "bin/beamspy run --mode cpu adds it itself",
                  [erlang:system_info(otp_release), perf_map()]).

unavailable(Text) ->
    {error, {cpu_unavailable, unicode:characters_to_binary(Text)}}.
