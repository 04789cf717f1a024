/* test_util.h — helpers shared by the C unit tests (header only).
 *
 * Small integer keys stand for functions: module ids index TU_MODS and
 * function ids index TU_FUNS (key {1, 10, 1} is "m:f/1"); tu_namer turns a
 * key into its Erlang name through bs_format_mfa, like the NIF does with real
 * atoms. Also: a dump of a process's call tree as text (one line per node:
 * stack, self ns, calls), a UTF-8 validator, a checker of the portable folded
 * grammar (folded_read.c), a deterministic PRNG and a random event
 * script, and the size knob for the long-running cases. */
#ifndef BS_TEST_UTIL_H
#define BS_TEST_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/frame_name.h"
#include "engine/profile.h"
#include "engine/stack_rebuild.h"

enum tu_mod { M_M = 1, M_ERLANG = 2, M_LISTS = 3, M_FOO = 4, M_GEN = 5, M_COUNT };
enum tu_fun {
    F_TOP = 1, F_A, F_B, F_C, F_PHASH2, F_LOOP, F_STEP, F_EVEN, F_ODD, F_F /* = 10 */,
    F_MID, F_LEAF, F_ERROR, F_X, F_RUN, F_INIT, F_WAIT, F_MONO, F_SORT, F_WORKER,
    F_COUNT
};

static const char *const TU_MODS[M_COUNT] = {
    [M_M] = "m", [M_ERLANG] = "erlang", [M_LISTS] = "lists", [M_FOO] = "Elixir.Foo", [M_GEN] = "gen_server",
};
static const char *const TU_FUNS[F_COUNT] = {
    [F_TOP] = "top", [F_A] = "a", [F_B] = "b", [F_C] = "c", [F_PHASH2] = "phash2",
    [F_LOOP] = "loop", [F_STEP] = "step", [F_EVEN] = "even", [F_ODD] = "odd", [F_F] = "f",
    [F_MID] = "mid", [F_LEAF] = "leaf", [F_ERROR] = "error", [F_X] = "x", [F_RUN] = "run",
    [F_INIT] = "init", [F_WAIT] = "wait", [F_MONO] = "mono", [F_SORT] = "sort",
    [F_WORKER] = "-worker/2-fun-0-",
};

#define KEY(m, f, a) ((bs_key){(m), (f), (a)})

/* Key namer for bs_profile_add_proc: ids outside the tables get mod<N>/fun<N>. */
static inline int tu_namer(void *ctx, const bs_key *k, char *buf, size_t cap)
{
    (void)ctx;
    char mb[32], fb[32];
    const char *m = mb, *f = fb;
    if (k->module < M_COUNT && TU_MODS[k->module])
        m = TU_MODS[k->module];
    else
        snprintf(mb, sizeof mb, "mod%llu", (unsigned long long)k->module);
    if (k->function < F_COUNT && TU_FUNS[k->function])
        f = TU_FUNS[k->function];
    else
        snprintf(fb, sizeof fb, "fun%llu", (unsigned long long)k->function);
    return (int)bs_format_mfa(buf, cap, BS_NAMES_ERLANG, m, strlen(m), f, strlen(f), k->arity);
}

/* Growing string. */
typedef struct tu_str {
    char *s;
    size_t len, cap;
} tu_str;

static inline void tu_put(tu_str *b, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        size_t room = b->cap - b->len;
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0)
            abort();
        if ((size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + (size_t)n + 1)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s)
            abort();
        b->s = s;
        b->cap = cap;
    }
}

/* Name of one call-tree node as the profile would spell it. */
static inline void tu_node_name(const bs_tree_node *n, char *buf, size_t cap)
{
    if (bs_key_is_span(&n->key))
        snprintf(buf, cap, "[span%llu]", (unsigned long long)n->key.function);
    else if (bs_key_is_pseudo(&n->key))
        snprintf(buf, cap, "%s",
                 n->key.function == BS_PSEUDO_GC         ? "GC"
                 : n->key.function == BS_PSEUDO_WAIT     ? "WAIT"
                 : n->key.function == BS_PSEUDO_RUNNABLE ? "RUNNABLE"
                                                         : "SLEEP");
    else
        tu_namer(NULL, &n->key, buf, cap);
}

/* The stack of node n, root frame first, joined by ';' ("" for node 0). */
static inline void tu_stack_of(const bs_proc *p, uint32_t n, tu_str *out)
{
    uint32_t depth = p->tree.nodes[n].depth;
    uint32_t *chain = malloc(((size_t)depth + 1) * sizeof *chain);
    if (!chain)
        abort();
    for (uint32_t i = depth, at = n; i > 0; i--, at = p->tree.nodes[at].parent)
        chain[i - 1] = at;
    char name[1024];
    for (uint32_t i = 0; i < depth; i++) {
        tu_node_name(&p->tree.nodes[chain[i]], name, sizeof name);
        tu_put(out, "%s%s", i ? ";" : "", name);
    }
    free(chain);
}

/* Whole tree in creation order: "<stack> <self_ns> <calls>\n", the root as
 * "<root>". Caller frees. */
static inline char *tu_dump(const bs_proc *p)
{
    tu_str b = {0};
    tu_put(&b, "%s", "");
    for (uint32_t i = 0; i < p->tree.n_nodes; i++) {
        if (i == 0)
            tu_put(&b, "<root>");
        else
            tu_stack_of(p, i, &b);
        tu_put(&b, " %llu %llu\n", (unsigned long long)p->tree.nodes[i].self_ns,
               (unsigned long long)p->tree.nodes[i].calls);
    }
    return b.s;
}

/* Current stack as text (caller frees). */
static inline char *tu_current(const bs_proc *p)
{
    tu_str b = {0};
    tu_put(&b, "%s", "");
    tu_stack_of(p, p->current, &b);
    return b.s;
}

/* Sum of the self times of every node. */
static inline uint64_t tu_total_self(const bs_proc *p)
{
    uint64_t s = 0;
    for (uint32_t i = 0; i < p->tree.n_nodes; i++)
        s += p->tree.nodes[i].self_ns;
    return s;
}

/* 1 if s[0..len) is valid UTF-8 (no overlongs, no surrogates, <= U+10FFFF). */
static inline int tu_utf8_valid(const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i];
        size_t n;
        uint32_t cp, min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            n = 2, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            n = 3, cp = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            n = 4, cp = c & 0x07, min = 0x10000;
        } else {
            return 0;
        }
        if (i + n > len)
            return 0;
        for (size_t k = 1; k < n; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += n;
    }
    return 1;
}

/* Checks a folded file against the portable grammar:
 *   line = stack SP count LF; stack = frame *(";" frame);
 *   frame = 1*(char except ";" LF CR), no C0 control, not ending in SP/HTAB;
 *   count = integer >= 1 (no sign, fraction or leading zero); valid UTF-8;
 *   and the stack does not itself end in " <digits>" (flamegraph.pl would read
 *   that as a differential column).
 * Returns 0, or -1 with a reason (line number) in why. */
static inline int tu_check_folded(const char *text, size_t len, char *why, size_t why_cap)
{
    size_t line_no = 0, i = 0;
    if (!tu_utf8_valid(text, len)) {
        snprintf(why, why_cap, "invalid UTF-8");
        return -1;
    }
    while (i < len) {
        line_no++;
        const char *line = text + i;
        const char *lf = memchr(line, '\n', len - i);
        if (!lf) {
            snprintf(why, why_cap, "line %zu: no final LF", line_no);
            return -1;
        }
        size_t ll = (size_t)(lf - line);
        i += ll + 1;
        const char *sp = NULL;
        for (size_t k = ll; k-- > 0;)
            if (line[k] == ' ') {
                sp = line + k;
                break;
            }
        if (!sp || sp == line) {
            snprintf(why, why_cap, "line %zu: no stack before the count", line_no);
            return -1;
        }
        const char *cnt = sp + 1;
        size_t cl = (size_t)(lf - cnt);
        if (cl == 0 || cnt[0] == '0') {
            snprintf(why, why_cap, "line %zu: count empty or not >= 1", line_no);
            return -1;
        }
        for (size_t k = 0; k < cl; k++)
            if (cnt[k] < '0' || cnt[k] > '9') {
                snprintf(why, why_cap, "line %zu: count is not an integer", line_no);
                return -1;
            }
        size_t sl = (size_t)(sp - line);
        size_t fstart = 0;
        for (size_t k = 0; k <= sl; k++) {
            if (k == sl || line[k] == ';') {
                if (k == fstart) {
                    snprintf(why, why_cap, "line %zu: empty frame", line_no);
                    return -1;
                }
                if (line[k - 1] == ' ' || line[k - 1] == '\t') {
                    snprintf(why, why_cap, "line %zu: frame ends in a blank", line_no);
                    return -1;
                }
                fstart = k + 1;
                continue;
            }
            unsigned char c = (unsigned char)line[k];
            if (c < 0x20 || c == 0x7F) {
                snprintf(why, why_cap, "line %zu: control character in a frame", line_no);
                return -1;
            }
        }
        size_t d = sl;
        while (d > 0 && line[d - 1] >= '0' && line[d - 1] <= '9')
            d--;
        if (d < sl && d > 0 && (line[d - 1] == ' ' || line[d - 1] == '\t')) {
            snprintf(why, why_cap, "line %zu: stack ends in ' <digits>'", line_no);
            return -1;
        }
    }
    return 0;
}

/* xorshift64* — deterministic across runs and variants. */
static inline uint64_t tu_rand(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* Large sizes by default; BS_TEST_SMALL=1 (set for valgrind) shrinks them. */
static inline int tu_small(void)
{
    const char *s = getenv("BS_TEST_SMALL");
    return s && *s && strcmp(s, "0") != 0;
}

/* A random but well-formed event stream for one process. */
typedef enum tu_ev_kind { EV_CALL, EV_RETURN_TO, EV_OUT, EV_IN, EV_GC_START, EV_GC_END } tu_ev_kind;

typedef struct tu_event {
    tu_ev_kind kind;
    bs_caller_kind caller_kind;
    bs_key key;    /* callee, or return_to target */
    bs_key caller;
    int undefined; /* return_to undefined */
    int own_code;  /* return_to beamspy's own code */
    uint64_t t;
} tu_event;

/* Fills ev[0..n) from seed; keys use module M_M and functions 1..n_funs. */
static inline void tu_random_events(tu_event *ev, size_t n, uint64_t seed, unsigned n_funs)
{
    uint64_t s = seed ? seed : 1, t = 1000;
    bs_key shadow[64];
    size_t depth = 0;
    int out = 0, gc = 0;
    for (size_t i = 0; i < n; i++) {
        tu_event *e = &ev[i];
        memset(e, 0, sizeof *e);
        t += tu_rand(&s) % 5000;
        e->t = t;
        unsigned r = (unsigned)(tu_rand(&s) % 100);
        if (gc) {
            e->kind = EV_GC_END;
            gc = 0;
        } else if (out) {
            e->kind = r < 90 ? EV_IN : EV_GC_START;
            if (e->kind == EV_IN)
                out = 0;
            else
                gc = 1;
        } else if (r < 5) {
            e->kind = EV_OUT;
            out = 1;
        } else if (r < 8) {
            e->kind = EV_GC_START;
            gc = 1;
        } else if (r < 55) {
            e->kind = EV_CALL;
            e->key = KEY(M_M, 1 + tu_rand(&s) % n_funs, (uint32_t)(tu_rand(&s) % 3));
            unsigned c = (unsigned)(tu_rand(&s) % 10);
            if (c == 0 || depth == 0) {
                e->caller_kind = c == 0 ? BS_CALLER_UNDEFINED : BS_CALLER_ROOT;
                depth = 0;
            } else {
                /* body call (caller = top) or tail call (caller further down) */
                size_t at = c < 7 ? depth - 1 : (size_t)(tu_rand(&s) % depth);
                e->caller_kind = BS_CALLER_FRAME;
                e->caller = shadow[at];
                depth = at + 1;
            }
            if (depth < 64)
                shadow[depth++] = e->key;
        } else {
            e->kind = EV_RETURN_TO;
            if (depth <= 1 || r > 97) {
                e->undefined = r > 97;
                e->key = KEY(M_M, 1 + tu_rand(&s) % n_funs, 0);
                depth = 0;
            } else {
                size_t at = (size_t)(tu_rand(&s) % (depth - 1));
                e->key = shadow[at];
                depth = at + 1;
            }
        }
    }
}

/* Feeds one event; returns the engine's return code. */
static inline int tu_feed(bs_proc *p, const tu_event *e)
{
    switch (e->kind) {
    case EV_CALL:
        return bs_proc_call(p, &e->key, e->caller_kind, &e->caller, e->t);
    case EV_RETURN_TO:
        if (e->own_code)
            return bs_proc_return_to_own_code(p, e->t);
        return bs_proc_return_to(p, e->undefined ? NULL : &e->key, e->t);
    case EV_OUT:
        return bs_proc_sched_out(p, e->t);
    case EV_IN:
        return bs_proc_sched_in(p, e->t);
    case EV_GC_START:
        return bs_proc_gc_start(p, e->t);
    case EV_GC_END:
        return bs_proc_gc_end(p, e->t);
    }
    return -1;
}

#endif
