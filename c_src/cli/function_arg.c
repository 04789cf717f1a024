/* function_arg.c — parses the --function text and says why a node refused
 * it (see function_arg.h). Never trusts the text: lengths are checked
 * before every copy, and nothing recurses. */
#include "function_arg.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/frame_name.h"

static int fail(char *why, size_t cap, const char *what)
{
    if (cap)
        snprintf(why, cap, "%s", what);
    return -1;
}

/* Copies the atom text s[0..len) into out (cap bytes). -1 when empty or
 * too long. */
static int put_atom(char *out, size_t cap, const char *s, size_t len)
{
    if (len == 0 || len >= cap)
        return -1;
    memcpy(out, s, len);
    out[len] = '\0';
    return 0;
}

/* A quoted atom at s[0] == '\'': its text (escapes \' and \\ undone) into
 * out; *end gets the index just past the closing quote. -1 when it is not
 * closed, has another escape, or is empty or too long. */
static int quoted_atom(const char *s, size_t len, char *out, size_t cap, size_t *end)
{
    size_t n = 0;
    for (size_t i = 1; i < len; i++) {
        char c = s[i];
        if (c == '\'') {
            if (n == 0)
                return -1;
            out[n] = '\0';
            *end = i + 1;
            return 0;
        }
        if (c == '\\') {
            if (i + 1 >= len || (s[i + 1] != '\'' && s[i + 1] != '\\'))
                return -1;
            c = s[++i];
        }
        if (n + 1 >= cap)
            return -1;
        out[n++] = c;
    }
    return -1;
}

/* The function part s[0..len): a quoted atom that fills it, or bare text. */
static int function_part(const char *s, size_t len, bs_function_arg *f)
{
    if (len && s[0] == '\'') {
        size_t end;
        return quoted_atom(s, len, f->function, sizeof f->function, &end) < 0 || end != len ? -1 : 0;
    }
    if (memchr(s, '\'', len))
        return -1;
    return put_atom(f->function, sizeof f->function, s, len);
}

int bs_function_arg_parse(const char *text, bs_function_arg *f, char *why, size_t why_cap)
{
    static const char *const forms = "mod:fun/arity, 'Elixir.Mod':fun/arity or Elixir's Mod.fun/arity";
    char msg[200];
    memset(f, 0, sizeof *f);
    const char *slash = strrchr(text, '/');
    if (!slash || !isdigit((unsigned char)slash[1])) {
        snprintf(msg, sizeof msg, "no /arity at the end: write %s", forms);
        return fail(why, why_cap, msg);
    }
    char *end = NULL;
    long arity = strtol(slash + 1, &end, 10);
    if (*end || arity > 255)
        return fail(why, why_cap, "the arity is a number from 0 to 255");
    f->arity = (int)arity;
    size_t len = (size_t)(slash - text);
    if (len && text[0] == '\'') { /* 'Module':fun */
        size_t at;
        if (quoted_atom(text, len, f->module, sizeof f->module, &at) < 0)
            return fail(why, why_cap, "the quoted module name is not closed, empty or too long");
        if (at >= len || text[at] != ':' || function_part(text + at + 1, len - at - 1, f) < 0) {
            snprintf(msg, sizeof msg, "expected :fun/arity after the quoted module: write %s", forms);
            return fail(why, why_cap, msg);
        }
        return 0;
    }
    if (len && text[0] == ':') { /* Elixir's :lists.reverse */
        const char *dot = NULL;
        for (size_t i = len; i > 1; i--)
            if (text[i - 1] == '.') {
                dot = text + i - 1;
                break;
            }
        if (!dot || put_atom(f->module, sizeof f->module, text + 1, (size_t)(dot - text - 1)) < 0 ||
            function_part(dot + 1, (size_t)(slash - dot - 1), f) < 0) {
            snprintf(msg, sizeof msg, "expected :module.fun/arity: write %s", forms);
            return fail(why, why_cap, msg);
        }
        return 0;
    }
    const char *colon = memchr(text, ':', len);
    if (colon) { /* mod:fun, Elixir.Jason:decode */
        if (memchr(text, '\'', (size_t)(colon - text)) ||
            put_atom(f->module, sizeof f->module, text, (size_t)(colon - text)) < 0 ||
            function_part(colon + 1, (size_t)(slash - colon - 1), f) < 0) {
            snprintf(msg, sizeof msg, "expected mod:fun/arity: write %s", forms);
            return fail(why, why_cap, msg);
        }
        return 0;
    }
    const char *dot = NULL; /* Elixir: Mod.Sub.fun */
    for (size_t i = len; i > 0; i--)
        if (text[i - 1] == '.') {
            dot = text + i - 1;
            break;
        }
    size_t mlen = dot ? (size_t)(dot - text) : 0;
    int prefixed = mlen >= 7 && strncmp(text, "Elixir.", 7) == 0;
    const char *prefix = prefixed ? "" : "Elixir.";
    if (!dot || mlen == 0 || memchr(text, '\'', mlen) || mlen + strlen(prefix) >= sizeof f->module ||
        function_part(dot + 1, (size_t)(slash - dot - 1), f) < 0) {
        snprintf(msg, sizeof msg, "expected a module and a function: write %s", forms);
        return fail(why, why_cap, msg);
    }
    snprintf(f->module, sizeof f->module, "%s%.*s", prefix, (int)mlen, text);
    return 0;
}

static int is_elixir_module(const char *m) { return strncmp(m, "Elixir.", 7) == 0 && m[7]; }

size_t bs_function_arg_name(char *buf, size_t cap, const bs_function_arg *f)
{
    return bs_format_mfa(buf, cap, is_elixir_module(f->module) ? BS_NAMES_ELIXIR : BS_NAMES_ERLANG, f->module,
                         strlen(f->module), f->function, strlen(f->function), (unsigned)f->arity);
}

/* The module as its language spells it: Jason, lists, 'Weird mod'. */
static void module_name(char *buf, size_t cap, const char *m)
{
    size_t len = strlen(m);
    if (is_elixir_module(m))
        snprintf(buf, cap, "%s", m + 7);
    else if (bs_atom_needs_quotes(m, len))
        snprintf(buf, cap, "'%s'", m);
    else
        snprintf(buf, cap, "%s", m);
}

/* What code:ensure_loaded/1's error means, into buf ("" when unknown). */
static void load_error_meaning(char *buf, size_t cap, const bs_eterm *why, const char *module)
{
    if (bs_eterm_is_atom(why, "nofile"))
        snprintf(buf, cap, " (no %s.beam on the node's code path)", module);
    else if (bs_eterm_is_atom(why, "embedded"))
        snprintf(buf, cap, " (the node runs in embedded mode: modules are loaded at boot, not on demand)");
    else if (bs_eterm_is_atom(why, "badfile"))
        snprintf(buf, cap, " (%s.beam is not object code this node can load)", module);
    else if (bs_eterm_is_atom(why, "on_load_failure"))
        snprintf(buf, cap, " (its -on_load function failed)");
    else
        snprintf(buf, cap, "%s", "");
}

int bs_function_arg_refusal(char *buf, size_t cap, const bs_function_arg *f, const char *node,
                            const bs_eterm *reason)
{
    const bs_eterm *what = bs_eterm_tagged(reason, "bad_function");
    if (!what || bs_eterm_kind_of(what) != BS_ET_TUPLE || cap == 0)
        return -1;
    char name[600], module[300], why[200], meaning[400];
    bs_function_arg_name(name, sizeof name, f);
    module_name(module, sizeof module, f->module);
    const bs_eterm *first = bs_eterm_item(what, 0);
    if (bs_eterm_is_atom(first, "not_loaded") && bs_eterm_size(what) == 3) {
        const bs_eterm *w = bs_eterm_item(what, 2);
        bs_eterm_format(why, sizeof why, w);
        load_error_meaning(meaning, sizeof meaning, w, f->module);
        snprintf(buf, cap, "module %s is not loaded on %s and could not be loaded: %s%s", module, node, why, meaning);
        return 0;
    }
    if (bs_eterm_is_atom(first, "undef")) {
        snprintf(buf, cap, "%s does not exist on %s: module %s is loaded but has no function %s/%d", name, node,
                 module, f->function, f->arity);
        return 0;
    }
    return -1;
}
