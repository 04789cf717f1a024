/* text_wrap.c — greedy line breaking at spaces (see text_wrap.h). */
#include "text_wrap.h"

#include <string.h>

/* Bytes of the UTF-8 character at s (1 for anything malformed: the XML
 * escaper turns it into U+FFFD, one character). */
static size_t char_bytes(const char *s)
{
    unsigned char c = (unsigned char)s[0];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    for (size_t i = 1; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            return 1;
    return n;
}

size_t bs_wrap_text(const char *text, size_t max_chars, bs_text_line *lines, size_t cap)
{
    size_t n = 0, at = 0, total = strlen(text);
    if (max_chars < 1)
        max_chars = 1;
    for (;;) {
        while (at < total && text[at] == ' ')
            at++;
        if (at >= total)
            break;
        /* Walk up to max_chars characters, remembering the last space. */
        size_t end = at, chars = 0, last_space = 0;
        int space_seen = 0;
        while (end < total && chars < max_chars) {
            if (text[end] == ' ') {
                last_space = end;
                space_seen = 1;
            }
            end += char_bytes(text + end);
            chars++;
        }
        size_t stop;
        if (end >= total || text[end] == ' ')
            stop = end;                 /* the text or a word ends here */
        else if (space_seen)
            stop = last_space;          /* break before the word that does not fit */
        else
            stop = end;                 /* one word longer than a line */
        size_t len = stop - at;
        while (len > 0 && text[at + len - 1] == ' ')
            len--;
        if (n < cap)
            lines[n] = (bs_text_line){at, len};
        n++;
        at = stop;
    }
    return n;
}
