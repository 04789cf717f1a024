/* xml_check.h — a strict well-formedness check for the XML the SVG writers
 * produce (header only, for the C tests).
 *
 * Checks: valid UTF-8 and only XML 1.0 characters; an optional <?xml ...?>
 * declaration, then exactly one root element; tags nest and match; attribute
 * values are double-quoted, unique per element, and hold no '<'; '&' only
 * starts a known entity or a character reference to an XML character;
 * "]]>" never appears in text; CDATA sections and comments are closed.
 * Not a validating parser: no DTDs, processing instructions only at the start. */
#ifndef BS_XML_CHECK_H
#define BS_XML_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "writers/xml_escape.h"

typedef struct xc_state {
    const char *s;
    size_t n, i;
    char why[200];
} xc_state;

static inline int xc_fail(xc_state *x, const char *what)
{
    snprintf(x->why, sizeof x->why, "%s at byte %zu: \"%.40s\"", what, x->i, x->s + x->i);
    return -1;
}

static inline int xc_name_char(char c, int first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || (unsigned char)c >= 0x80 ||
           (!first && ((c >= '0' && c <= '9') || c == '-' || c == '.'));
}

/* Reads a name; returns its length (0 if none). */
static inline size_t xc_name(xc_state *x)
{
    size_t start = x->i;
    while (x->i < x->n && xc_name_char(x->s[x->i], x->i == start))
        x->i++;
    return x->i - start;
}

static inline int xc_is_xml_char(uint32_t cp)
{
    return cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) || (cp >= 0xE000 && cp <= 0xFFFD) ||
           (cp >= 0x10000 && cp <= 0x10FFFF);
}

/* At '&': a known entity or a reference to an XML character. */
static inline int xc_reference(xc_state *x)
{
    static const char *const ents[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
    for (size_t k = 0; k < 5; k++)
        if (strncmp(x->s + x->i, ents[k], strlen(ents[k])) == 0) {
            x->i += strlen(ents[k]);
            return 0;
        }
    if (x->i + 3 < x->n && x->s[x->i + 1] == '#') {
        int hex = x->s[x->i + 2] == 'x';
        char *end;
        unsigned long cp = strtoul(x->s + x->i + 2 + hex, &end, hex ? 16 : 10);
        if (end > x->s + x->i + 2 + hex && *end == ';' && xc_is_xml_char((uint32_t)cp)) {
            x->i = (size_t)(end - x->s) + 1;
            return 0;
        }
    }
    return xc_fail(x, "bad reference");
}

static inline void xc_space(xc_state *x)
{
    while (x->i < x->n && strchr(" \t\r\n", x->s[x->i]))
        x->i++;
}

/* A start or empty-element tag, at '<'. Sets *empty; name in (*name, *len). */
static inline int xc_start_tag(xc_state *x, const char **name, size_t *len, int *empty)
{
    const char *seen[64];
    size_t seen_len[64], n_seen = 0;
    x->i++;
    *name = x->s + x->i;
    if ((*len = xc_name(x)) == 0)
        return xc_fail(x, "tag without a name");
    for (;;) {
        size_t before = x->i;
        xc_space(x);
        if (x->i >= x->n)
            return xc_fail(x, "unclosed tag");
        if (x->s[x->i] == '>' || (x->s[x->i] == '/' && x->i + 1 < x->n && x->s[x->i + 1] == '>')) {
            *empty = x->s[x->i] == '/';
            x->i += *empty ? 2 : 1;
            return 0;
        }
        if (x->i == before)
            return xc_fail(x, "no space before an attribute");
        const char *an = x->s + x->i;
        size_t al = xc_name(x);
        if (al == 0 || x->i >= x->n || x->s[x->i] != '=' || x->i + 1 >= x->n || x->s[x->i + 1] != '"')
            return xc_fail(x, "attribute is not name=\"value\"");
        for (size_t k = 0; k < n_seen; k++)
            if (seen_len[k] == al && memcmp(seen[k], an, al) == 0)
                return xc_fail(x, "duplicate attribute");
        if (n_seen < 64)
            seen[n_seen] = an, seen_len[n_seen++] = al;
        x->i += 2;
        while (x->i < x->n && x->s[x->i] != '"') {
            if (x->s[x->i] == '<')
                return xc_fail(x, "'<' in an attribute value");
            if (x->s[x->i] == '&') {
                if (xc_reference(x) < 0)
                    return -1;
            } else {
                x->i++;
            }
        }
        if (x->i >= x->n)
            return xc_fail(x, "unclosed attribute value");
        x->i++;
    }
}

static inline int xc_skip_past(xc_state *x, const char *end, const char *what)
{
    const char *e = strstr(x->s + x->i, end);
    if (!e)
        return xc_fail(x, what);
    x->i = (size_t)(e - x->s) + strlen(end);
    return 0;
}

/* Returns 0 if text[0..n) is well-formed, else -1 with a reason in why. */
static inline int xc_check(const char *text, size_t n, char *why, size_t why_cap)
{
    xc_state x = {text, n, 0, ""};
    const char *stack_name[512];
    size_t stack_len[512], depth = 0;
    int rc = 0, roots = 0;
    for (size_t k = 0, used; k < n && rc == 0; k += used) /* characters */
        if (bs_xml_next_char(text + k, n - k, &used) == 0xFFFD && !(used == 3 && memcmp(text + k, "\xEF\xBF\xBD", 3) == 0) &&
            !(text[k] == '\t' || text[k] == '\n' || text[k] == '\r'))
            x.i = k, rc = xc_fail(&x, "not an XML character");
    if (rc == 0 && strncmp(text, "<?xml ", 6) == 0)
        rc = xc_skip_past(&x, "?>", "unclosed declaration");
    while (rc == 0 && x.i < n) {
        char c = text[x.i];
        if (c != '<') {
            if (depth == 0 && !strchr(" \t\r\n", c))
                rc = xc_fail(&x, "text outside the root element");
            else if (c == '&')
                rc = xc_reference(&x);
            else if (c == ']' && strncmp(text + x.i, "]]>", 3) == 0)
                rc = xc_fail(&x, "\"]]>\" in text");
            else
                x.i++;
        } else if (strncmp(text + x.i, "<!--", 4) == 0) {
            x.i += 4;
            const char *e = strstr(text + x.i, "--");
            if (!e || e[2] != '>')
                rc = xc_fail(&x, "comment with \"--\" or unclosed");
            else
                x.i = (size_t)(e - text) + 3;
        } else if (strncmp(text + x.i, "<![CDATA[", 9) == 0) {
            rc = depth == 0 ? xc_fail(&x, "CDATA outside the root") : xc_skip_past(&x, "]]>", "unclosed CDATA");
        } else if (text[x.i + 1] == '/') {
            x.i += 2;
            const char *nm = text + x.i;
            size_t len = xc_name(&x);
            xc_space(&x);
            if (depth == 0 || len != stack_len[depth - 1] || memcmp(nm, stack_name[depth - 1], len) != 0 || x.i >= n ||
                text[x.i] != '>')
                rc = xc_fail(&x, "end tag does not match");
            else
                x.i++, depth--;
        } else {
            const char *nm;
            size_t len;
            int empty = 0;
            if (depth == 0 && roots++ > 0)
                rc = xc_fail(&x, "second root element");
            else if ((rc = xc_start_tag(&x, &nm, &len, &empty)) == 0 && !empty) {
                if (depth == 512)
                    rc = xc_fail(&x, "too deep");
                else
                    stack_name[depth] = nm, stack_len[depth++] = len;
            }
        }
    }
    if (rc == 0 && (depth != 0 || roots != 1))
        rc = xc_fail(&x, depth ? "unclosed element" : "no root element");
    snprintf(why, why_cap, "%s", x.why);
    return rc;
}

#endif
