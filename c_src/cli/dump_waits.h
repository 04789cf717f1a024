/* dump_waits.h — `beamspy dump`'s answer to "who waits for whom": the
 * deadlocks (each cycle, then each member with its stack), the chains of
 * blocked processes grouped by the root cause they end at (shown once,
 * with how many processes it holds up), and the waits whose target the
 * node could not tell; as text, or as the "waits" and "deadlocks" lists of
 * the JSON document. */
#ifndef BS_DUMP_WAITS_H
#define BS_DUMP_WAITS_H

#include <stdio.h>

#include "wait_graph.h"

typedef struct bs_dump_style {
    int several_nodes; /* name each process's node */
    int elixir;        /* Elixir spelling of names and frames */
} bs_dump_style;

/* The text section (nothing when no process waits for another). */
void bs_dump_waits_text(FILE *out, const bs_wait_graph *g, const bs_dump_style *st);

/* "\"deadlocks\":[...],\"waits\":[...]" (no braces around). */
void bs_dump_waits_json(FILE *out, const bs_wait_graph *g, const bs_dump_style *st);

/* The lines of a stack, each indented by `indent` spaces. */
void bs_dump_print_stack(FILE *out, const bs_eterm *process, int indent, int elixir);

#endif
