/* frame_name.h — how a frame is spelled in every output.
 *
 * Formats an {M, F, Arity} as Erlang (`mod:fun/2`, atoms quoted as the shell
 * would: `'Elixir.Foo':bar/1`) or Elixir (`Foo.bar/1`, `:lists.sort/2`), then
 * makes the result safe for every writer: valid UTF-8 (bad bytes become
 * U+FFFD), no control characters, no ';' (the folded separator), no trailing
 * blank (folded readers would eat it), no leading U+FEFF (a folded reader
 * takes it for a byte-order mark when the name starts the file). */
#ifndef BS_FRAME_NAME_H
#define BS_FRAME_NAME_H

#include <stddef.h>

typedef enum bs_name_style { BS_NAMES_ERLANG, BS_NAMES_ELIXIR } bs_name_style;

/* Writes a NUL-terminated name into buf (cap >= 16); returns its length.
 * module and function are UTF-8 atom texts (not NUL-terminated). Long names
 * are cut at a character boundary. */
size_t bs_format_mfa(char *buf, size_t cap, bs_name_style style,
                     const char *module, size_t module_len,
                     const char *function, size_t function_len, unsigned arity);

/* A registered name: as it is in Erlang, in Elixir "MyApp.Server" for an
 * "Elixir.MyApp.Server" atom and ":my_server" for any other (as Elixir's
 * inspect shows them). Written NUL-terminated into buf (cap >= 1), cut at
 * cap; returns its length. Not sanitised: callers that need a frame use
 * bs_format_label. */
size_t bs_format_registered(char *buf, size_t cap, bs_name_style style, const char *name, size_t len);

/* The root frame of a process in a profile: the pid's text, then its
 * registered name (function NULL: name is the registered name, spelled as
 * bs_format_registered; name_len 0: the pid alone) or, for a process
 * started by proc_lib, its initial call name:function/arity spelled as a
 * frame: "<0.90.0> my_server", "<0.91.0> my_worker:init/1"; in Elixir
 * "<0.90.0> MyApp.Server", "<0.91.0> MyApp.Worker.init/1". Sanitised as a
 * frame; returns its length. */
size_t bs_format_label(char *buf, size_t cap, bs_name_style style, const char *pid, size_t pid_len,
                       const char *name, size_t name_len, const char *function, size_t function_len,
                       unsigned arity);

/* Copies src into dst making it safe as above; returns the length. */
size_t bs_sanitize_name(char *dst, size_t cap, const char *src, size_t len);

/* 1 if the atom text needs quotes in Erlang syntax. */
int bs_atom_needs_quotes(const char *s, size_t len);

#endif
