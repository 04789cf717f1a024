/* json_check.h — a strict JSON parser (RFC 8259) for the writer tests
 * (header only).
 *
 * Parses a whole document into a small tree: objects keep their keys in
 * order, strings are decoded to UTF-8 (with \u escapes and surrogate pairs;
 * lone surrogates are errors), numbers keep both their value (strtod, so
 * exactly what a JavaScript reader gets) and their text (to check how they
 * were written). Anything RFC 8259 forbids — trailing commas, leading zeros,
 * control characters in strings, invalid UTF-8, text after the value — is an
 * error with the byte offset. Depth is limited, so a hostile file cannot
 * overflow the stack. */
#ifndef BS_JSON_CHECK_H
#define BS_JSON_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum jc_type { JC_NULL, JC_BOOL, JC_NUM, JC_STR, JC_ARR, JC_OBJ } jc_type;

typedef struct jc_val {
    jc_type type;
    int boolean;
    double num;
    const char *num_text; /* JC_NUM: points into the parsed text */
    size_t num_len;
    char *str;            /* JC_STR: decoded, NUL-terminated */
    size_t len;
    struct jc_val *items; /* JC_ARR / JC_OBJ */
    char **keys;          /* JC_OBJ */
    size_t n;
} jc_val;

typedef struct jc_parser {
    const char *start, *s, *end;
    char err[160];
} jc_parser;

#define JC_MAX_DEPTH 200

static inline void jc_free(jc_val *v)
{
    free(v->str);
    for (size_t i = 0; i < v->n; i++) {
        jc_free(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    memset(v, 0, sizeof *v);
}

static inline int jc_fail(jc_parser *p, const char *why)
{
    if (!p->err[0])
        snprintf(p->err, sizeof p->err, "%s at byte %zu", why, (size_t)(p->s - p->start));
    return -1;
}

static inline void jc_ws(jc_parser *p)
{
    while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r'))
        p->s++;
}

static inline int jc_hex4(jc_parser *p, unsigned *out)
{
    if (p->end - p->s < 4)
        return jc_fail(p, "short \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->s[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return jc_fail(p, "bad hex digit");
    }
    p->s += 4;
    *out = v;
    return 0;
}

/* Appends cp as UTF-8 to buf (room for 4 bytes is the caller's). */
static inline size_t jc_put_utf8(char *buf, unsigned cp)
{
    if (cp < 0x80) {
        buf[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        buf[0] = (char)(0xC0 | cp >> 6);
        buf[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        buf[0] = (char)(0xE0 | cp >> 12);
        buf[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        buf[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    buf[0] = (char)(0xF0 | cp >> 18);
    buf[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    buf[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    buf[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Length of the valid UTF-8 sequence at s (lead byte >= 0x80), 0 if invalid. */
static inline size_t jc_utf8_len(const unsigned char *s, const unsigned char *end)
{
    unsigned c = s[0];
    size_t n;
    uint32_t cp, min;
    if ((c & 0xE0) == 0xC0) n = 2, cp = c & 0x1F, min = 0x80;
    else if ((c & 0xF0) == 0xE0) n = 3, cp = c & 0x0F, min = 0x800;
    else if ((c & 0xF8) == 0xF0) n = 4, cp = c & 0x07, min = 0x10000;
    else return 0;
    if ((size_t)(end - s) < n)
        return 0;
    for (size_t k = 1; k < n; k++) {
        if ((s[k] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

static inline int jc_string(jc_parser *p, char **out, size_t *out_len)
{
    p->s++; /* the opening quote */
    size_t cap = 64, len = 0;
    char *buf = malloc(cap);
    if (!buf)
        return jc_fail(p, "out of memory");
    for (;;) {
        if (p->s >= p->end) {
            free(buf);
            return jc_fail(p, "unterminated string");
        }
        if (len + 8 > cap) {
            cap *= 2;
            char *b = realloc(buf, cap);
            if (!b) {
                free(buf);
                return jc_fail(p, "out of memory");
            }
            buf = b;
        }
        unsigned char c = (unsigned char)*p->s;
        if (c == '"') {
            p->s++;
            break;
        }
        if (c < 0x20) {
            free(buf);
            return jc_fail(p, "control character in a string");
        }
        if (c >= 0x80) {
            size_t n = jc_utf8_len((const unsigned char *)p->s, (const unsigned char *)p->end);
            if (n == 0) {
                free(buf);
                return jc_fail(p, "invalid UTF-8");
            }
            memcpy(buf + len, p->s, n);
            len += n;
            p->s += n;
            continue;
        }
        if (c != '\\') {
            buf[len++] = (char)c;
            p->s++;
            continue;
        }
        p->s++;
        if (p->s >= p->end) {
            free(buf);
            return jc_fail(p, "unterminated escape");
        }
        char e = *p->s++;
        unsigned cp;
        switch (e) {
        case '"': buf[len++] = '"'; break;
        case '\\': buf[len++] = '\\'; break;
        case '/': buf[len++] = '/'; break;
        case 'b': buf[len++] = '\b'; break;
        case 'f': buf[len++] = '\f'; break;
        case 'n': buf[len++] = '\n'; break;
        case 'r': buf[len++] = '\r'; break;
        case 't': buf[len++] = '\t'; break;
        case 'u':
            if (jc_hex4(p, &cp) < 0) {
                free(buf);
                return -1;
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                unsigned lo;
                if (p->end - p->s < 6 || p->s[0] != '\\' || p->s[1] != 'u') {
                    free(buf);
                    return jc_fail(p, "lone high surrogate");
                }
                p->s += 2;
                if (jc_hex4(p, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF) {
                    free(buf);
                    return jc_fail(p, "bad low surrogate");
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                free(buf);
                return jc_fail(p, "lone low surrogate");
            }
            len += jc_put_utf8(buf + len, cp);
            break;
        default:
            free(buf);
            return jc_fail(p, "bad escape");
        }
    }
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    return 0;
}

static inline int jc_number(jc_parser *p, jc_val *v)
{
    const char *s = p->s;
    if (s < p->end && *s == '-')
        s++;
    if (s >= p->end || *s < '0' || *s > '9')
        return jc_fail(p, "bad number");
    if (*s == '0' && s + 1 < p->end && s[1] >= '0' && s[1] <= '9')
        return jc_fail(p, "leading zero");
    while (s < p->end && *s >= '0' && *s <= '9')
        s++;
    if (s < p->end && *s == '.') {
        s++;
        if (s >= p->end || *s < '0' || *s > '9')
            return jc_fail(p, "bad fraction");
        while (s < p->end && *s >= '0' && *s <= '9')
            s++;
    }
    if (s < p->end && (*s == 'e' || *s == 'E')) {
        s++;
        if (s < p->end && (*s == '+' || *s == '-'))
            s++;
        if (s >= p->end || *s < '0' || *s > '9')
            return jc_fail(p, "bad exponent");
        while (s < p->end && *s >= '0' && *s <= '9')
            s++;
    }
    char tmp[64];
    size_t n = (size_t)(s - p->s);
    if (n >= sizeof tmp)
        return jc_fail(p, "number too long");
    memcpy(tmp, p->s, n);
    tmp[n] = '\0';
    v->type = JC_NUM;
    v->num = strtod(tmp, NULL);
    v->num_text = p->s;
    v->num_len = n;
    p->s = s;
    return 0;
}

static inline int jc_value(jc_parser *p, jc_val *v, int depth);

static inline int jc_container(jc_parser *p, jc_val *v, int depth, int object)
{
    char close = object ? '}' : ']';
    size_t cap = 0;
    v->type = object ? JC_OBJ : JC_ARR;
    p->s++;
    jc_ws(p);
    if (p->s < p->end && *p->s == close) {
        p->s++;
        return 0;
    }
    for (;;) {
        if (v->n == cap) {
            cap = cap ? cap * 2 : 8;
            jc_val *items = realloc(v->items, cap * sizeof *items);
            if (!items)
                return jc_fail(p, "out of memory");
            v->items = items;
            if (object) {
                char **keys = realloc(v->keys, cap * sizeof *keys);
                if (!keys)
                    return jc_fail(p, "out of memory");
                v->keys = keys;
            }
        }
        memset(&v->items[v->n], 0, sizeof v->items[v->n]);
        if (object) {
            jc_ws(p);
            size_t klen;
            if (p->s >= p->end || *p->s != '"')
                return jc_fail(p, "expected a key");
            v->keys[v->n] = NULL;
            if (jc_string(p, &v->keys[v->n], &klen) < 0)
                return -1;
            jc_ws(p);
            if (p->s >= p->end || *p->s != ':') {
                v->n++;
                return jc_fail(p, "expected ':'");
            }
            p->s++;
        }
        v->n++;
        if (jc_value(p, &v->items[v->n - 1], depth + 1) < 0)
            return -1;
        jc_ws(p);
        if (p->s < p->end && *p->s == ',') {
            p->s++;
            continue;
        }
        if (p->s < p->end && *p->s == close) {
            p->s++;
            return 0;
        }
        return jc_fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static inline int jc_value(jc_parser *p, jc_val *v, int depth)
{
    if (depth > JC_MAX_DEPTH)
        return jc_fail(p, "too deep");
    jc_ws(p);
    if (p->s >= p->end)
        return jc_fail(p, "unexpected end");
    switch (*p->s) {
    case '{': return jc_container(p, v, depth, 1);
    case '[': return jc_container(p, v, depth, 0);
    case '"': v->type = JC_STR; return jc_string(p, &v->str, &v->len);
    case 't':
    case 'f':
    case 'n': {
        const char *words[] = {"true", "false", "null"};
        for (int i = 0; i < 3; i++) {
            size_t n = strlen(words[i]);
            if ((size_t)(p->end - p->s) >= n && memcmp(p->s, words[i], n) == 0) {
                p->s += n;
                v->type = i == 2 ? JC_NULL : JC_BOOL;
                v->boolean = i == 0;
                return 0;
            }
        }
        return jc_fail(p, "bad literal");
    }
    default:
        return jc_number(p, v);
    }
}

/* Parses text[0..len) into *out. Returns 0, or -1 with the reason in why. */
static inline int jc_parse(const char *text, size_t len, jc_val *out, char *why, size_t why_cap)
{
    jc_parser p = {text, text, text + len, {0}};
    memset(out, 0, sizeof *out);
    int rc = jc_value(&p, out, 0);
    if (rc == 0) {
        jc_ws(&p);
        if (p.s != p.end)
            rc = jc_fail(&p, "text after the value");
    }
    if (rc < 0) {
        snprintf(why, why_cap, "%s", p.err);
        jc_free(out);
    }
    return rc;
}

/* Member key of an object, or NULL. */
static inline const jc_val *jc_get(const jc_val *obj, const char *key)
{
    if (!obj || obj->type != JC_OBJ)
        return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (strcmp(obj->keys[i], key) == 0)
            return &obj->items[i];
    return NULL;
}

/* 1 if v is a number written as a non-negative integer (no '.', 'e' or '-'). */
static inline int jc_is_uint(const jc_val *v)
{
    if (!v || v->type != JC_NUM)
        return 0;
    for (size_t i = 0; i < v->num_len; i++)
        if (v->num_text[i] < '0' || v->num_text[i] > '9')
            return 0;
    return 1;
}

#endif
