/* nif_atoms.h — atoms the NIF compares against, made once at load time and
 * kept in the library's private data (no other global state). */
#ifndef BS_NIF_ATOMS_H
#define BS_NIF_ATOMS_H

#include <erl_nif.h>

#define BS_ATOM_LIST(X) \
    X(ok) X(error) X(true) X(false) X(undefined) X(trace) X(discard) X(remove) \
    X(trace_status) X(call) X(return_to) X(in) X(out) X(in_exiting) X(out_exiting) \
    X(out_exited) X(gc_minor_start) X(gc_minor_end) X(gc_major_start) X(gc_major_end) \
    X(match_spec_result) X(cp) X(max_memory) X(max_processes) X(sleep) X(gc) X(caller) \
    X(exclude) X(names) X(erlang) X(elixir) X(folded) X(truncated) X(processes) \
    X(events) X(dropped) X(memory_peak) X(memory) X(duration_ns) X(labels) X(drop_sleep) \
    X(merge_processes) X(stopped) X(badarg) X(enomem) X(not_stopped) X(unknown_format) \
    X(min_unit_ns) X(recording) X(max_depth) X(beamspy_meta) X(return_from) X(exception_from) \
    X(capture) X(captures) X(halt) X(init) X(stop) X(halt_hook) X(beamspy_halting) \
    X(start) X(exception) X(first) X(not_traced) X(unmatched) X(refused) X(telemetry) X(execute) \
    X(receive) X(hibernate) X(spawn)

typedef struct bs_atoms {
#define BS_ATOM_FIELD(name) ERL_NIF_TERM name;
    BS_ATOM_LIST(BS_ATOM_FIELD)
#undef BS_ATOM_FIELD
} bs_atoms;

typedef struct bs_priv {
    bs_atoms atoms;
    ErlNifResourceType *session_type;
} bs_priv;

static inline bs_priv *bs_priv_of(ErlNifEnv *env) { return (bs_priv *)enif_priv_data(env); }

#endif
