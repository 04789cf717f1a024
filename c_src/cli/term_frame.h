/* term_frame.h — spells a frame a node sent as a raw term (sample, dump and
 * top send {M, F, A} tuples and texts, never spelled names), through the
 * engine's one speller (frame_name.h), so that every mode spells alike and
 * --elixir applies to all of them. */
#ifndef BS_TERM_FRAME_H
#define BS_TERM_FRAME_H

#include <stdio.h>

#include "../dist/eterm.h"
#include "../engine/frame_name.h"

/* Writes the name of frame into buf (cap >= 16) and returns buf:
 * {M, F, Arity} (atoms, an integer 0..255) as bs_format_mfa spells it in
 * style; a process label {PidText, Name} (beamspy_session:labels/1: Name
 * [], a registered name or an {M, F, Arity}) as bs_format_label spells it;
 * a binary, string or atom is text, made safe (bs_sanitize_name); any
 * other term is printed in Erlang syntax and made safe. */
const char *bs_term_frame(const bs_eterm *frame, bs_name_style style, char *buf, size_t cap);

/* Writes the folded-stacks text of a sampler's stacks (a list of
 * {Root, [Frame], Count}, Root a label, each Frame as above) to out, one line
 * a stack. Returns 0, or -1 with a message in err for a malformed list. */
int bs_term_stacks_folded(FILE *out, const bs_eterm *stacks, bs_name_style style, char *err, size_t err_size);

#endif
