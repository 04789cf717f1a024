/* function_arg.h — the function that `record --function` and `seq
 * --function` follow: its text on the command line, and the node's
 * refusal of it in words.
 *
 * Spellings accepted (arity 0..255):
 *   mod:fun/2                 Erlang
 *   'Elixir.Jason':decode/2   Erlang with quoted atoms ('...' with \' and
 *                             \\ escapes), either or both
 *   Elixir.Jason:decode/2     the same atom unquoted
 *   Jason.decode/2            Elixir (module Elixir.Jason)
 *   Elixir.Jason.decode/2     Elixir with the prefix written out
 *   :lists.reverse/1          Elixir's spelling of an Erlang module */
#ifndef BS_FUNCTION_ARG_H
#define BS_FUNCTION_ARG_H

#include <stddef.h>

#include "../dist/eterm.h"

/* The help's line under --function (record, seq): the spellings above. */
#define BS_FUNCTION_ARG_SPELLINGS_USAGE \
    "                      also 'Elixir.Mod':f/2, Elixir.Mod:f/2, Mod.f/2, :mod.f/2\n"

typedef struct bs_function_arg {
    char module[256], function[256]; /* atom texts (an atom has at most 255 bytes here) */
    int arity;
} bs_function_arg;

/* Parses text into f. Returns 0, or -1 with what is wrong in why (one
 * line, no trailing period). */
int bs_function_arg_parse(const char *text, bs_function_arg *f, char *why, size_t why_cap);

/* The function as its own language spells it (Jason.decode/2 for a module
 * Elixir.Jason, else mod:fun/2), NUL-terminated into buf (cap >= 16). */
size_t bs_function_arg_name(char *buf, size_t cap, const bs_function_arg *f);

/* Words for the reason a node gave when it refused f (beamspy_capture's
 * {bad_function, {not_loaded, M, Why}} and {bad_function, {undef, MFA}}),
 * NUL-terminated into buf. Returns 0, or -1 when reason is of another
 * shape (buf untouched: show the term). */
int bs_function_arg_refusal(char *buf, size_t cap, const bs_function_arg *f, const char *node,
                            const bs_eterm *reason);

#endif
