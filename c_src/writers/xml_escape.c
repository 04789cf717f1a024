/* xml_escape.c — XML-safe text (see xml_escape.h). */
#include "xml_escape.h"

#include <string.h>

#define REPLACEMENT 0xFFFDu
static const char REPLACEMENT_UTF8[] = "\xEF\xBF\xBD";

uint32_t bs_xml_next_char(const char *str, size_t n, size_t *used)
{
    const unsigned char *s = (const unsigned char *)str;
    unsigned char c = s[0];
    size_t len;
    uint32_t cp;
    *used = 1;
    if (c < 0x80) /* C0 controls (TAB, LF, CR included: labels are one line) */
        return c < 0x20 || c == 0x7F ? REPLACEMENT : c;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2, cp = c & 0x1Fu;
    else if (c >= 0xE0 && c <= 0xEF)
        len = 3, cp = c & 0x0Fu;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4, cp = c & 0x07u;
    else
        return REPLACEMENT;
    if (len > n)
        return REPLACEMENT;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return REPLACEMENT; /* the bad byte starts the next character */
        cp = cp << 6 | (s[i] & 0x3Fu);
    }
    *used = len;
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF)
        return REPLACEMENT;
    return cp;
}

/* The entity for an ASCII character XML or a quoted attribute would
 * misread, or NULL. */
static const char *entity_of(unsigned char c)
{
    switch (c) {
    case '&': return "&amp;";
    case '<': return "&lt;";
    case '>': return "&gt;";
    case '"': return "&quot;";
    case '\'': return "&#39;";
    default: return NULL;
    }
}

/* Writes the first max_chars characters of s[0..n) (all if max_chars is
 * SIZE_MAX), copying runs of harmless bytes in one fwrite. Returns the
 * number of bytes of s consumed. */
static size_t write_chars(FILE *out, const char *s, size_t n, size_t max_chars)
{
    size_t i = 0, run = 0, chars = 0;
    while (i < n && chars < max_chars) {
        unsigned char c = (unsigned char)s[i];
        const char *ent = c < 0x80 ? entity_of(c) : NULL;
        size_t used = 1;
        uint32_t cp = ent ? c : bs_xml_next_char(s + i, n - i, &used);
        int replaced = cp == REPLACEMENT && !(used == 3 && memcmp(s + i, REPLACEMENT_UTF8, 3) == 0);
        if (ent || replaced) {
            fwrite(s + run, 1, i - run, out);
            fputs(ent ? ent : REPLACEMENT_UTF8, out);
            run = i + used;
        }
        i += used;
        chars++;
    }
    fwrite(s + run, 1, i - run, out);
    return i;
}

void bs_xml_write(FILE *out, const char *s)
{
    write_chars(out, s, strlen(s), SIZE_MAX);
}

static size_t count_chars(const char *s, size_t n, size_t stop_after)
{
    size_t i = 0, chars = 0, used;
    while (i < n && chars <= stop_after) {
        bs_xml_next_char(s + i, n - i, &used);
        i += used;
        chars++;
    }
    return chars;
}

void bs_xml_write_label(FILE *out, const char *s, size_t max_chars)
{
    if (max_chars < 3)
        return;
    size_t n = strlen(s);
    if (count_chars(s, n, max_chars) <= max_chars) {
        write_chars(out, s, n, SIZE_MAX);
        return;
    }
    write_chars(out, s, n, max_chars - 2);
    fputs("..", out);
}
