/* json_escape.h — JSON string literals that are also safe inside HTML.
 *
 * The HTML writer embeds JSON in a <script> element and other writers write
 * plain JSON files; one escaper serves both, so a frame name can never end a
 * script element, open a comment or break a JavaScript parser. */
#ifndef BS_JSON_ESCAPE_H
#define BS_JSON_ESCAPE_H

#include <stdio.h>

/* Writes s as a quoted JSON string: '"' and '\' escaped, control characters
 * as \n, \t, ... or \u00XX, '<' '>' '&' as \u003c \u003e \u0026 (so "</script>"
 * and "<!--" cannot appear), U+2028/U+2029 as \u2028/\u2029 (line breaks to
 * older JavaScript) and bytes that are not valid UTF-8 as \ufffd. Write
 * errors are left for the caller to find with ferror(). */
void bs_json_write_string(FILE *out, const char *s);

#endif
