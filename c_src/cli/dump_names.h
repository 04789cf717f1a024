/* dump_names.h — how `beamspy dump` (and top) spell what the node sent:
 * frames come raw ({M, F, A} terms, see term_frame.h) and are spelled by
 * the engine's one speller in Erlang or, with --elixir, Elixir; registered
 * names are atoms' texts, shown as they are or in Elixir ("MyApp.Server",
 * ":code_server"). */
#ifndef BS_DUMP_NAMES_H
#define BS_DUMP_NAMES_H

#include <stddef.h>

#include "../dist/eterm.h"

/* A stack entry {Frame, Where} ("mod:fun/2 (file.erl:12)", Where left out
 * when empty), or a bare frame, into buf (cap >= 16); returns buf. */
const char *bs_dump_frame(const bs_eterm *entry, int elixir, char *buf, size_t cap);

/* A reason, a list of texts (as they are) and frames (spelled), joined into
 * buf (cap >= 16, cut at cap); returns buf. */
const char *bs_dump_reason(const bs_eterm *reason, int elixir, char *buf, size_t cap);

/* A registered name: as it is, or in Elixir "Mod.Name" for an
 * "Elixir.Mod.Name" atom and ":name" for any other. */
const char *bs_dump_name(const char *name, int elixir, char *buf, size_t cap);

#endif
