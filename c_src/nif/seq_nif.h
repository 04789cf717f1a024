/* seq_nif.h — seq_write/3: the sequence-diagram writers, called from Erlang
 * (beamspy:sequence/2) with the events its collectors gathered. */
#ifndef BS_SEQ_NIF_H
#define BS_SEQ_NIF_H

#include <erl_nif.h>

ERL_NIF_TERM bs_nif_seq_write(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);

#endif
