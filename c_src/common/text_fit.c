/* text_fit.c — fixed fields filled without silent cuts (see text_fit.h). */
#include "text_fit.h"

#include <stdio.h>
#include <string.h>

static int is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

static size_t code_points(const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += !is_continuation((unsigned char)s[i]);
    return k;
}

int bs_text_fit(char *dst, size_t cap, const char *src, size_t n)
{
    if (cap == 0)
        return n > 0;
    if (n < cap) {
        memcpy(dst, src, n);
        dst[n] = '\0';
        return 0;
    }
    /* Keep at most `keep` bytes, then the marker. */
    size_t keep = cap > BS_TEXT_FIT_MARK_MAX ? cap - BS_TEXT_FIT_MARK_MAX : cap - 1;
    while (keep > 0 && is_continuation((unsigned char)src[keep]))
        keep--;
    size_t word = keep;
    while (word > 0 && keep - word < 64 && src[word - 1] != ' ' && src[word - 1] != ',')
        word--;
    if (word > 0 && keep - word < 64)
        keep = word;
    while (keep > 0 && src[keep - 1] == ' ')
        keep--;
    memcpy(dst, src, keep);
    dst[keep] = '\0';
    if (cap > BS_TEXT_FIT_MARK_MAX)
        snprintf(dst + keep, cap - keep, " ... (%zu more characters)", code_points(src + keep, n - keep));
    return 1;
}

int bs_text_append(char *dst, size_t cap, const char *sep, const char *text)
{
    size_t len = strnlen(dst, cap);
    if (len + 1 >= cap || cap - len < BS_TEXT_FIT_MARK_MAX + strlen(sep))
        return 1;
    size_t s = strlen(sep);
    memcpy(dst + len, sep, s);
    return bs_text_fit(dst + len + s, cap - len - s, text, strlen(text));
}
