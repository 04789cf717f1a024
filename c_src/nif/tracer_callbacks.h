/* tracer_callbacks.h — erl_tracer's enabled/3 and trace/5 (see tracer_callbacks.c). */
#ifndef BS_TRACER_CALLBACKS_H
#define BS_TRACER_CALLBACKS_H

#include <erl_nif.h>

ERL_NIF_TERM bs_nif_enabled(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM bs_nif_trace(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);

#endif
