%%% @doc Memory seen from outside a measurement: the peak growth of
%%% `erlang:memory(total)' (sampled every few milliseconds by a helper
%%% process) and the peak growth of the OS resident set of the whole VM
%%% (Linux VmHWM, reset through /proc/self/clear_refs before the run), which
%%% also sees memory a NIF takes with malloc.
-module(bench_memory).

-export([start/0, stop/1]).

-define(PERIOD_MS, 5).

-type sampler() :: {pid(), reference()}.
-type growth() :: #{vm_peak := non_neg_integer(), rss_peak := non_neg_integer() | undefined}.

%% @doc Records the baselines and starts sampling.
-spec start() -> sampler().
start() ->
    Rss0 = reset_hwm(),
    Base = erlang:memory(total),
    Ref = make_ref(),
    Pid = spawn(fun() -> sample(Ref, Base, Base, Rss0) end),
    {Pid, Ref}.

%% @doc Stops sampling; returns the peak growth over the baselines, in bytes.
-spec stop(sampler()) -> growth().
stop({Pid, Ref}) ->
    Pid ! {stop, self(), Ref},
    receive
        {Ref, VmPeak, Rss0} ->
            Rss = case {Rss0, status_kb("VmHWM")} of
                      {undefined, _} -> undefined;
                      {_, undefined} -> undefined;
                      {R0, Hwm} -> max(0, Hwm - R0) * 1024
                  end,
            #{vm_peak => VmPeak, rss_peak => Rss}
    end.

sample(Ref, Base, Max, Rss0) ->
    receive
        {stop, From, Ref} ->
            Last = max(Max, erlang:memory(total)),
            From ! {Ref, Last - Base, Rss0}
    after ?PERIOD_MS ->
            sample(Ref, Base, max(Max, erlang:memory(total)), Rss0)
    end.

%% Resets the peak RSS to the current RSS; returns the current RSS in kB,
%% or undefined where /proc does not allow it.
reset_hwm() ->
    case file:write_file("/proc/self/clear_refs", <<"5">>) of
        ok -> status_kb("VmRSS");
        {error, _} -> undefined
    end.

status_kb(Key) ->
    case file:read_file("/proc/self/status") of
        {ok, Bin} ->
            case re:run(Bin, ["^", Key, ":\\s*([0-9]+) kB"], [multiline, {capture, all_but_first, list}]) of
                {match, [N]} -> list_to_integer(N);
                nomatch -> undefined
            end;
        {error, _} ->
            undefined
    end.
