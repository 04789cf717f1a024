/* dump_names.c — Erlang or Elixir spelling of dump frames and names (see
 * dump_names.h). The node spells frames the Erlang way: atoms quoted where
 * needed, with \' and \\ escaped inside quotes. */
#include "dump_names.h"

#include <stdio.h>
#include <string.h>

#include "../engine/frame_name.h"

/* Reads one atom (quoted or plain, up to a char in `stops`) into out.
 * Returns the position after it, or NULL. */
static const char *read_atom(const char *s, const char *stops, char *out, size_t cap, size_t *len)
{
    size_t n = 0;
    if (*s == '\'') {
        for (s++; *s && *s != '\''; s++) {
            if (*s == '\\' && (s[1] == '\'' || s[1] == '\\'))
                s++;
            if (n + 1 >= cap)
                return NULL;
            out[n++] = *s;
        }
        if (*s != '\'')
            return NULL;
        s++;
    } else {
        for (; *s && !strchr(stops, *s); s++) {
            if (n + 1 >= cap || *s == ' ')
                return NULL;
            out[n++] = *s;
        }
    }
    out[n] = '\0';
    *len = n;
    return n ? s : NULL;
}

/* An Erlang-spelled "mod:fun/N" at s, then a character in "\0 ),;": its
 * Elixir spelling into out (length in *n); the position after it, or NULL. */
static const char *elixir_mfa(const char *s, char *out, size_t cap, size_t *n)
{
    char mod[512], fun[512];
    size_t mlen, flen;
    if (*s != '\'' && !(*s >= 'a' && *s <= 'z'))
        return NULL;
    s = read_atom(s, ":", mod, sizeof mod, &mlen);
    if (!s || *s != ':')
        return NULL;
    s = read_atom(s + 1, "/", fun, sizeof fun, &flen);
    if (!s || *s != '/' || s[1] < '0' || s[1] > '9')
        return NULL;
    unsigned arity = 0;
    for (s++; *s >= '0' && *s <= '9' && arity < 1000; s++)
        arity = arity * 10 + (unsigned)(*s - '0');
    if (*s && !strchr(" ),;", *s))
        return NULL;
    *n = bs_format_mfa(out, cap, BS_NAMES_ELIXIR, mod, mlen, fun, flen, arity);
    return s;
}

const char *bs_dump_text(const char *erl, int elixir, char *buf, size_t cap)
{
    if (!elixir)
        return erl;
    size_t o = 0;
    char mfa[1100];
    for (const char *s = erl; *s && o + 1 < cap;) {
        size_t n;
        const char *after = (s == erl || s[-1] == ' ' || s[-1] == '(') ? elixir_mfa(s, mfa, sizeof mfa, &n) : NULL;
        if (after && o + n + 1 < cap) {
            memcpy(buf + o, mfa, n);
            o += n;
            s = after;
        } else {
            buf[o++] = *s++;
        }
    }
    buf[o] = '\0';
    return buf;
}

const char *bs_dump_name(const char *name, int elixir, char *buf, size_t cap)
{
    if (!elixir || !name[0])
        snprintf(buf, cap, "%s", name);
    else if (strncmp(name, "Elixir.", 7) == 0)
        snprintf(buf, cap, "%s", name + 7);
    else
        snprintf(buf, cap, ":%s", name);
    return buf;
}
