/* text_wrap.h — long text broken into lines of a given width, at spaces.
 *
 * The SVG subtitle (a user's subtitle, the compensation numbers, what was
 * left out) is often 300 characters or more; centred on one line it runs
 * off both sides of the graph. Lines are counted in characters (code
 * points), as the writers estimate text widths. */
#ifndef BS_TEXT_WRAP_H
#define BS_TEXT_WRAP_H

#include <stddef.h>

typedef struct bs_text_line {
    size_t start, len; /* bytes of the text */
} bs_text_line;

/* Breaks text into lines of at most max_chars characters (at least 1):
 * at the last space that fits (the space itself is dropped, as are spaces
 * at the start of a line); a word longer than a line is split at max_chars
 * and never cut short. Stores the first cap lines in lines (may be NULL
 * with cap 0) and returns how many lines there are in all, so a caller can
 * count first and store next. Never splits a UTF-8 sequence. */
size_t bs_wrap_text(const char *text, size_t max_chars, bs_text_line *lines, size_t cap);

#endif
