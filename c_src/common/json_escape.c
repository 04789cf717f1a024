/* json_escape.c — JSON string writer safe for HTML embedding (json_escape.h).
 *
 * Runs of bytes that need no escape are written with one fwrite, so names
 * cost about as much as copying them. */
#include "json_escape.h"

#include <stddef.h>

/* Length of the valid UTF-8 sequence starting at s (lead byte >= 0x80), or 0
 * if it is not one (bad lead, truncated, overlong, surrogate, > U+10FFFF). */
static size_t utf8_sequence_length(const unsigned char *s)
{
    unsigned c = s[0];
    size_t n;
    unsigned long cp, min;
    if ((c & 0xE0) == 0xC0)
        n = 2, cp = c & 0x1F, min = 0x80;
    else if ((c & 0xF0) == 0xE0)
        n = 3, cp = c & 0x0F, min = 0x800;
    else if ((c & 0xF8) == 0xF0)
        n = 4, cp = c & 0x07, min = 0x10000;
    else
        return 0;
    for (size_t k = 1; k < n; k++) {
        if ((s[k] & 0xC0) != 0x80) /* also stops at the NUL terminator */
            return 0;
        cp = cp << 6 | (s[k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

/* The escape for an ASCII byte, or NULL if it is written as is. */
static const char *ascii_escape(unsigned char c, char buf[8])
{
    switch (c) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '<': return "\\u003c";
    case '>': return "\\u003e";
    case '&': return "\\u0026";
    default: break;
    }
    if (c < 0x20 || c == 0x7F) {
        snprintf(buf, 8, "\\u%04x", c);
        return buf;
    }
    return NULL;
}

void bs_json_write_string(FILE *out, const char *str)
{
    const unsigned char *s = (const unsigned char *)(str ? str : "");
    const unsigned char *run = s; /* start of bytes not yet written */
    char buf[8];
    putc('"', out);
    while (*s) {
        const char *esc = NULL;
        size_t skip = 1;
        if (*s < 0x80) {
            esc = ascii_escape(*s, buf);
        } else {
            skip = utf8_sequence_length(s);
            if (skip == 0) {
                esc = "\\ufffd";
                skip = 1;
            } else if (skip == 3 && s[0] == 0xE2 && s[1] == 0x80 && (s[2] == 0xA8 || s[2] == 0xA9)) {
                esc = s[2] == 0xA8 ? "\\u2028" : "\\u2029";
            }
        }
        if (esc) {
            fwrite(run, 1, (size_t)(s - run), out);
            fputs(esc, out);
            run = s + skip;
        }
        s += skip;
    }
    fwrite(run, 1, (size_t)(s - run), out);
    putc('"', out);
}
