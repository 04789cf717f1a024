/* palette.h — frame colours of the SVG flame graphs.
 *
 * Colours depend only on the frame's name (never on its position or on the
 * run), so the same function has the same colour in every graph and the
 * output stays deterministic.
 *   hot   warm reds, oranges and yellows (flamegraph.pl's default ranges);
 *   beam  one hue per kind of code: OTP modules blue, the Elixir standard
 *         library purple, the user's own code warm, SLEEP grey-blue, GC
 *         green, process frames grey; the shade within a hue comes from the
 *         name.
 * The differential graph colours by change instead (bs_palette_diff). */
#ifndef BS_PALETTE_H
#define BS_PALETTE_H

#include <stddef.h>

#include "render_opts.h"

typedef enum bs_code_kind {
    BS_CODE_USER = 0,
    BS_CODE_OTP,       /* erts, kernel, stdlib, compiler, ... modules */
    BS_CODE_ELIXIR,    /* Elixir's standard library (Enum, Kernel, ...) */
    BS_CODE_SLEEP,     /* SLEEP, WAIT: scheduled out, waiting */
    BS_CODE_RUNNABLE,  /* RUNNABLE: scheduled out, able to run */
    BS_CODE_GC,
    BS_CODE_PROCESS,   /* a process frame (<0.85.0> ...) or the root */
    BS_CODE_SPAN       /* a telemetry span frame, [my_app.repo.query] */
} bs_code_kind;

/* What kind of code a frame name (Erlang `mod:fun/N`, `'Elixir.Enum':map/2`,
 * or Elixir `Enum.map/2`, `:lists.sort/1`) belongs to. */
bs_code_kind bs_code_kind_of(const char *name);

/* Writes "rgb(r,g,b)" for name into buf (cap >= 20). is_process marks a
 * frame that stands for a process or for the whole graph (the root). */
void bs_palette_fill(bs_palette palette, const char *name, int is_process, char *buf, size_t cap);

/* Colour of a change of a frame's own time from before to after (both in
 * the same scale): white when equal, red when it grew, blue when it shrank,
 * more saturated the larger the change relative to the bigger of the two. */
void bs_palette_diff(double before, double after, char *buf, size_t cap);

#endif
