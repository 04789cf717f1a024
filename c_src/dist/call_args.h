/* call_args.h — encodes the argument list of a remote call in one line:
 * bs_call_args(&x, "as", "my_module", "text") is [my_module, "text"].
 *
 * Spec letters: a atom (const char *), s string (const char *, sent as a
 * list of bytes: Erlang's file names and strings), b binary (const void *,
 * size_t), i integer (long long), p pid (const erlang_pid *), t raw term
 * (const ei_x_buff *: its whole buffer, without version byte, is copied),
 * f an export fun (const char *module, const char *function, int arity:
 * fun module:function/arity, e.g. for lists:foreach/2), A a list of atoms
 * (const char *const *names, unsigned count).
 * Returns 0, or -1 when out of memory or the spec is bad. x is initialised
 * here; free it with ei_x_free. */
#ifndef BS_CALL_ARGS_H
#define BS_CALL_ARGS_H

#include <ei.h>

int bs_call_args(ei_x_buff *x, const char *spec, ...);

#endif
