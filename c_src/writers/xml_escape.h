/* xml_escape.h — text written into XML (the SVG writers) safely.
 *
 * Whatever bytes come in, what goes out is well-formed XML 1.0 character
 * data that is also valid inside a quoted attribute: & < > " ' become
 * entities (so "</script>" and "]]>" cannot appear), and everything XML 1.0
 * does not allow — bytes that are not valid UTF-8, C0 control characters,
 * U+FFFE and U+FFFF — becomes U+FFFD. Frame names are already sanitised by
 * the profile, but writers do not rely on it: safety holds by construction.
 * Write errors are left for the caller to find with ferror(). */
#ifndef BS_XML_ESCAPE_H
#define BS_XML_ESCAPE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Decodes the character at s (n > 0 bytes available): returns its code
 * point, or U+FFFD for anything XML cannot carry, and stores the number of
 * bytes it used (>= 1) in *used. */
uint32_t bs_xml_next_char(const char *s, size_t n, size_t *used);

/* Writes s escaped. */
void bs_xml_write(FILE *out, const char *s);

/* Writes the first max_chars characters of s escaped; when s is longer, the
 * last two of them become "..". Writes nothing when max_chars < 3 (a label
 * that short says nothing). Characters are code points, as the viewer's
 * script counts them. */
void bs_xml_write_label(FILE *out, const char *s, size_t max_chars);

#endif
