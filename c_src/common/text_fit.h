/* text_fit.h — text copied into a fixed field, never cut without saying so.
 *
 * Profiles keep a few texts in fixed arrays (the options a recording was
 * taken with, notes for the reader). A text longer than its field used to
 * end mid-word ("timeline => aut", "tracing adds to"); these copies end at
 * a word instead and say how much is missing: "... (42 more characters)". */
#ifndef BS_TEXT_FIT_H
#define BS_TEXT_FIT_H

#include <stddef.h>

/* Room the marker needs at most (with its NUL). */
#define BS_TEXT_FIT_MARK_MAX 48

/* Copies the n bytes of src into dst (cap bytes, NUL-terminated). When they
 * do not fit, the copy stops after the last space or comma that leaves room
 * for " ... (N more characters)" (N: the code points left out) and ends
 * with it; with no such place within the last 64 bytes, at a character
 * boundary. Returns 1 if cut, 0 if whole (cap < BS_TEXT_FIT_MARK_MAX: cut
 * at a character boundary with no marker). */
int bs_text_fit(char *dst, size_t cap, const char *src, size_t n);

/* Appends sep and text to the NUL-terminated dst (cap bytes) the same way;
 * nothing when not even the marker fits after what dst holds. Returns 1 if
 * cut or left out, 0 if whole. */
int bs_text_append(char *dst, size_t cap, const char *sep, const char *text);

#endif
