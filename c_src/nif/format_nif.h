/* format_nif.h — the format table (format_registry.h) for Erlang callers:
 * the NIF function beamspy_tracer:formats/0, which the tests hold the
 * Erlang side's format and extension lists to. */
#ifndef BS_FORMAT_NIF_H
#define BS_FORMAT_NIF_H

#include <erl_nif.h>

/* formats() -> #{profile := [Row], sequence := [Row]}, Row = {Name :: atom(),
 * Extensions :: [string()], Timeline :: boolean()} in the table's order;
 * Timeline is false for sequence formats. */
ERL_NIF_TERM bs_nif_formats(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);

#endif
