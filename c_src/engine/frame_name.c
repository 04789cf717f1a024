/* frame_name.c — frame spelling and sanitising (see frame_name.h). */
#include "frame_name.h"

#include <stdio.h>
#include <string.h>

static const char *const reserved_words[] = {
    "after", "and", "andalso", "band", "begin", "bnot", "bor", "bsl", "bsr", "bxor",
    "case", "catch", "cond", "div", "end", "fun", "if", "let", "not", "of", "or",
    "orelse", "receive", "rem", "try", "when", "xor", "maybe", "else", NULL};

int bs_atom_needs_quotes(const char *s, size_t len)
{
    if (len == 0 || !(s[0] >= 'a' && s[0] <= 'z'))
        return 1;
    for (size_t i = 1; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '@'))
            return 1;
    }
    for (const char *const *w = reserved_words; *w; w++)
        if (strlen(*w) == len && memcmp(*w, s, len) == 0)
            return 1;
    return 0;
}

/* Length of the valid UTF-8 sequence at s (max n bytes), or 0 if invalid. */
static size_t utf8_seq_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    unsigned cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return 0;
    return len;
}

/* A name ending in a blank and a number ("f 12", "f 1.5") would be read back
 * from folded text as a count column (flamegraph.pl's differential input),
 * so that blank becomes '_' too. */
static void hide_trailing_count(char *s, size_t n)
{
    size_t i = n;
    while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9')
        i--;
    if (i > 0 && s[i - 1] == '.') {
        size_t dot = --i;
        while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9')
            i--;
        if (i == dot)
            return;
    } else if (i == n) {
        return;
    }
    if (i > 0 && s[i - 1] == ' ')
        s[i - 1] = '_';
}

size_t bs_sanitize_name(char *dst, size_t cap, const char *src, size_t len)
{
    const unsigned char *s = (const unsigned char *)src;
    size_t o = 0, i = 0;
    if (cap == 0)
        return 0;
    while (i < len) {
        size_t n = utf8_seq_len(s + i, len - i);
        const char *out;
        size_t out_len;
        char one;
        if (n == 0) {
            out = "\xEF\xBF\xBD"; /* U+FFFD */
            out_len = 3;
            n = 1;
        } else if (n == 1) {
            one = (char)s[i];
            if (s[i] < 0x20 || s[i] == 0x7F)
                one = '?';
            else if (s[i] == ';')
                one = ':';
            out = &one;
            out_len = 1;
        } else if (i == 0 && n == 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) {
            out = "?"; /* U+FEFF first: a folded reader takes it for a byte-order mark */
            out_len = 1;
        } else {
            out = src + i;
            out_len = n;
        }
        if (o + out_len >= cap)
            break;
        memcpy(dst + o, out, out_len);
        o += out_len;
        i += n;
    }
    if (o > 0 && (dst[o - 1] == ' ' || dst[o - 1] == '\t'))
        dst[o - 1] = '_'; /* a trailing blank would be eaten by folded readers */
    hide_trailing_count(dst, o);
    dst[o] = '\0';
    return o;
}

/* Appends text to buf at *o, inside quote characters when quote is not 0
 * ('\'' for an Erlang atom, '"' for an Elixir name), the quote and '\\'
 * escaped. When the text does not fit it is cut before a whole UTF-8
 * sequence, never inside one (a split character would come out as U+FFFD). */
static void put_quoted(char *buf, size_t cap, size_t *o, const char *s, size_t len, char quote)
{
    if (quote && *o + 1 < cap)
        buf[(*o)++] = quote;
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)s[i];
        size_t want = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1, n = 1;
        while (n < want && n < len - i && ((unsigned char)s[i + n] & 0xC0) == 0x80)
            n++; /* a lead byte and its continuation bytes go together */
        int esc = quote && (c == (unsigned char)quote || c == '\\');
        if (*o + (size_t)esc + n + 1 >= cap) /* keep a byte for the closing quote */
            break;
        if (esc)
            buf[(*o)++] = '\\';
        memcpy(buf + *o, s + i, n);
        *o += n;
        i += n;
    }
    if (quote && *o + 1 < cap)
        buf[(*o)++] = quote;
}

static void put_atom(char *buf, size_t cap, size_t *o, const char *s, size_t len, int quote)
{
    put_quoted(buf, cap, o, s, len, quote ? '\'' : 0);
}

/* An Elixir identifier (`run`, `valid?`, `_x`), shown as it is in a call. */
static int elixir_identifier(const char *s, size_t len)
{
    if (len == 0 || !((s[0] >= 'a' && s[0] <= 'z') || s[0] == '_' || (unsigned char)s[0] >= 0x80))
        return 0;
    for (size_t i = 1; i < len; i++) {
        char c = s[i];
        int last = i == len - 1;
        /* bytes of non-ASCII characters: Elixir's identifiers take letters
         * of any script */
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
              (unsigned char)c >= 0x80 || (last && (c == '?' || c == '!'))))
            return 0;
    }
    return 1;
}

/* An operator (`+`, `==`, `<>`): Elixir shows it unquoted too. */
static int elixir_operator(const char *s, size_t len)
{
    if (len == 0 || len > 3)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!strchr("+-*/<>=!&|^~\\@.", s[i]))
            return 0;
    return 1;
}

/* A function name as Elixir's Exception.format_mfa/3 writes it after the
 * module's dot: plain, or in double quotes (`"test adds"`). */
static void put_elixir_function(char *buf, size_t cap, size_t *o, const char *s, size_t len)
{
    int plain = elixir_identifier(s, len) || elixir_operator(s, len);
    put_quoted(buf, cap, o, s, len, plain ? 0 : '"');
}

/* "-NAME/ARITY-fun-N-" (the compiler's name of a fun inside NAME/ARITY):
 * the length of NAME and the text of ARITY, or 0. */
static size_t fun_parent(const char *s, size_t len, const char **arity, size_t *arity_len)
{
    static const char mark[] = "-fun-";
    if (len < 8 || s[0] != '-' || s[len - 1] != '-')
        return 0;
    /* The last "-fun-" followed by digits up to the final '-'. */
    for (size_t i = len - 1; i-- > 1;) {
        if (i + sizeof mark - 1 > len || memcmp(s + i, mark, sizeof mark - 1) != 0)
            continue;
        size_t d = i + sizeof mark - 1;
        if (d >= len - 1)
            return 0;
        for (size_t k = d; k < len - 1; k++)
            if (s[k] < '0' || s[k] > '9')
                return 0;
        /* s[1..i) is NAME/ARITY */
        size_t slash = i;
        while (slash > 1 && s[slash - 1] != '/')
            slash--;
        if (slash <= 2 || slash == i)
            return 0;
        for (size_t k = slash; k < i; k++)
            if (s[k] < '0' || s[k] > '9')
                return 0;
        *arity = s + slash;
        *arity_len = i - slash;
        return slash - 2;
    }
    return 0;
}

size_t bs_format_mfa(char *buf, size_t cap, bs_name_style style,
                     const char *module, size_t module_len,
                     const char *function, size_t function_len, unsigned arity)
{
    char raw[1024];
    size_t o = 0, cap_raw = sizeof raw - 16;
    static const char elixir_prefix[] = "Elixir.";
    const size_t prefix_len = sizeof elixir_prefix - 1;

    if (style == BS_NAMES_ELIXIR) {
        /* As Exception.format_mfa/3: "anonymous fn/1 in Foo.run/2" for a
         * fun, Foo."test adds"/1 for a name that is not an identifier. */
        const char *parent_arity = NULL;
        size_t parent_arity_len = 0;
        size_t parent_len = fun_parent(function, function_len, &parent_arity, &parent_arity_len);
        if (parent_len)
            o += (size_t)snprintf(raw + o, cap_raw - o, "anonymous fn/%u in ", arity);
        if (module_len > prefix_len && memcmp(module, elixir_prefix, prefix_len) == 0) {
            put_atom(raw, cap_raw, &o, module + prefix_len, module_len - prefix_len, 0);
        } else {
            raw[o++] = ':';
            put_atom(raw, cap_raw, &o, module, module_len, 0);
        }
        raw[o++] = '.';
        if (parent_len) {
            put_elixir_function(raw, cap_raw, &o, function + 1, parent_len);
            if (o + parent_arity_len + 2 < cap_raw) {
                raw[o++] = '/';
                memcpy(raw + o, parent_arity, parent_arity_len);
                o += parent_arity_len;
            }
            return bs_sanitize_name(buf, cap, raw, o);
        }
        put_elixir_function(raw, cap_raw, &o, function, function_len);
    } else {
        put_atom(raw, cap_raw, &o, module, module_len, bs_atom_needs_quotes(module, module_len));
        raw[o++] = ':';
        put_atom(raw, cap_raw, &o, function, function_len, bs_atom_needs_quotes(function, function_len));
    }
    o += (size_t)snprintf(raw + o, sizeof raw - o, "/%u", arity);
    return bs_sanitize_name(buf, cap, raw, o);
}

size_t bs_format_registered(char *buf, size_t cap, bs_name_style style, const char *name, size_t len)
{
    static const char elixir_prefix[] = "Elixir.";
    const size_t prefix_len = sizeof elixir_prefix - 1;
    const char *lead = "";
    if (style == BS_NAMES_ELIXIR && len > 0) {
        if (len > prefix_len && memcmp(name, elixir_prefix, prefix_len) == 0) {
            name += prefix_len;
            len -= prefix_len;
        } else {
            lead = ":";
        }
    }
    int n = snprintf(buf, cap, "%s%.*s", lead, (int)len, name);
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

size_t bs_format_label(char *buf, size_t cap, bs_name_style style, const char *pid, size_t pid_len,
                       const char *name, size_t name_len, const char *function, size_t function_len,
                       unsigned arity)
{
    char raw[1024], what[1024];
    size_t what_len = 0;
    if (function)
        what_len = bs_format_mfa(what, sizeof what, style, name, name_len, function, function_len, arity);
    else if (name_len > 0)
        what_len = bs_format_registered(what, sizeof what, style, name, name_len);
    int n = snprintf(raw, sizeof raw, "%.*s%s%.*s", (int)pid_len, pid, what_len ? " " : "", (int)what_len, what);
    if (n < 0)
        n = 0;
    return bs_sanitize_name(buf, cap, raw, (size_t)n < sizeof raw ? (size_t)n : sizeof raw - 1);
}
