/* seq_writers.h — the outputs of a sequence diagram (seq_flow.h): Mermaid
 * (.mmd), a self-contained SVG (.seq.svg), a Chrome trace (.trace.json) and
 * JSON for scripts (.json; names and extensions: format_registry.h), and
 * the one entry point that writes a file
 * atomically (temporary file, then rename; see atomic_file.h).
 *
 * Every writer is deterministic (same diagram, same bytes) and escapes
 * everything for its own syntax. Mermaid stays under the size viewers
 * render: at most BS_SEQ_MERMAID_MAX_MESSAGES messages and
 * BS_SEQ_MERMAID_MAX_BYTES bytes per file; what is left out is said in a note
 * at the end of the diagram and counted in bs_seq_write_info (front ends say
 * it on standard error). The SVG draws at most BS_SEQ_SVG_MAX_MESSAGES
 * messages the same way; the JSON and the Chrome trace hold every message. */
#ifndef BS_SEQ_WRITERS_H
#define BS_SEQ_WRITERS_H

#include <stdio.h>

#include "../engine/seq_flow.h"
#include "format_registry.h"
#include "format_writers.h" /* each format's writer, bs_seq_write_info */

#define BS_SEQ_MERMAID_MAX_MESSAGES 800u
#define BS_SEQ_MERMAID_MAX_BYTES 45000u
#define BS_SEQ_SVG_MAX_MESSAGES 5000u

/* The writers (format_writers.h) each return 0 or -1 (write or allocation
 * error); info may be NULL. */

/* Writes d to path in format f (UNKNOWN: from the extension). Returns 0,
 * or -1 with errno set (EINVAL: unknown format); the target is untouched on
 * error. */
int bs_seq_write_file(const char *path, bs_seq_format f, const bs_seq_diagram *d, const bs_seq_opts *o,
                      bs_seq_write_info *info);

#endif
