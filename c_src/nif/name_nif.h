/* name_nif.h — the engine's frame speller for Erlang callers (the NIF
 * function beamspy_tracer:frame_name/2) and atom texts for the NIF. */
#ifndef BS_NAME_NIF_H
#define BS_NAME_NIF_H

#include <stddef.h>

#include <erl_nif.h>

#include "../engine/frame_name.h"

/* Atom text as UTF-8 into buf (NUL-terminated); returns its length. */
size_t bs_nif_atom_text(ErlNifEnv *env, ERL_NIF_TERM atom, char *buf, size_t cap);

/* A process label as beamspy_session:labels/1 gives it, {PidText, Name}
 * with Name [] (none), a registered name (an atom) or an initial call {M, F,
 * Arity}, spelled by bs_format_label into buf; returns its length, or 0 if
 * label is not one. */
size_t bs_nif_label(ErlNifEnv *env, ERL_NIF_TERM label, bs_name_style style, char *buf, size_t cap);

/* A process named by a sequence collector (beamspy_seq_collector): its registered
 * name (an atom, spelled by bs_format_registered) or its initial call {M,
 * F, Arity} (bs_format_mfa), in style, into buf; returns its length, or 0
 * if who is neither. */
size_t bs_nif_process_name(ErlNifEnv *env, ERL_NIF_TERM who, bs_name_style style, char *buf, size_t cap);

/* frame_name(Frame, Style) -> binary(): Frame is {M, F, Arity} or {M, F,
 * Args} (spelled by bs_format_mfa in Style, erlang or elixir), a process
 * label (bs_nif_label) or text (a binary or iolist, made safe by
 * bs_sanitize_name); badarg otherwise. */
ERL_NIF_TERM bs_nif_frame_name(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);

#endif
