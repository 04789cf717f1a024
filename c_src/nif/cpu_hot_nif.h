/* cpu_hot_nif.h — session_cpu_hot/2: the window of a mode cpu session's
 * samples per function, for `beamspy top' (cpu/hot_counts.h). */
#ifndef BS_CPU_HOT_NIF_H
#define BS_CPU_HOT_NIF_H

#include <erl_nif.h>

/* session_cpu_hot(Session, N): {ok, #{hz, samples, scheduler, spin,
 * no_erlang, others, functions => [{{M, F, A}, Samples}]}} of the N (at
 * most 100) most sampled functions since the previous call (or the start),
 * most first; a new window starts. {error, no_cpu} when the session does
 * not sample the CPU. */
ERL_NIF_TERM bs_nif_session_cpu_hot(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);

#endif
