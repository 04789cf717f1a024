/* dump_names.h — how `beamspy dump` spells what the node sent as Erlang
 * text: frames ("mod:fun/2 (file.erl:12)") and registered names, in
 * Erlang (unchanged) or, with --elixir, in Elixir ("Mod.fun/2 (...)",
 * "MyApp.Server", ":code_server"), through the engine's one speller
 * (bs_format_mfa). */
#ifndef BS_DUMP_NAMES_H
#define BS_DUMP_NAMES_H

#include <stddef.h>

/* A text of the node (a frame, a reason) in the chosen spelling: erl
 * itself in Erlang; with elixir, a copy in buf (cap >= 16, cut at cap) in
 * which every "mod:fun/N" that starts a word is respelled. */
const char *bs_dump_text(const char *erl, int elixir, char *buf, size_t cap);

/* A registered name: as it is, or in Elixir "Mod.Name" for an
 * "Elixir.Mod.Name" atom and ":name" for any other. */
const char *bs_dump_name(const char *name, int elixir, char *buf, size_t cap);

#endif
