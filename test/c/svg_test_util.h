/* svg_test_util.h — profiles from folded text, for the SVG writer's tests,
 * the browser tests' driver (test/browser/svg_driver.c) and its benchmark
 * (header only).
 *
 * tu_profile_from_folded() builds a profile from "frame;frame;... count"
 * lines the way folded readers do: a line whose first frame is a pid
 * (<a.b.c>, optionally followed by a space and a name) goes to that
 * process's tree; other lines go to one tree with a synthetic root. Counts
 * are multiplied by `mult` (1000 turns beamspy's microseconds back into
 * nanoseconds). Lines that do not end in " <count>" are skipped. Totals are
 * computed. It is a test helper, not the product's folded reader. */
#ifndef BS_SVG_TEST_UTIL_H
#define BS_SVG_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/call_tree.h"
#include "engine/profile.h"

typedef struct tu_folded_builder {
    bs_profile *p;
    bs_call_tree *trees;   /* index of each tree, keyed by frame id + 1 */
    char **labels;         /* NULL for the synthetic tree */
    size_t n, cap;
    bs_unit unit;
    uint64_t mult;
} tu_folded_builder;

static inline int tu_is_pid_frame(const char *s, size_t len)
{
    size_t i = 1, dots = 0;
    if (len < 7 || s[0] != '<')
        return 0;
    for (; i < len && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.'); i++)
        dots += s[i] == '.';
    return dots == 2 && i < len && s[i] == '>' && (i + 1 == len || s[i + 1] == ' ');
}

static inline size_t tu_tree_for(tu_folded_builder *b, const char *label, size_t len)
{
    for (size_t i = b->n; i-- > 0;) {
        const char *l = b->labels[i];
        if (label ? (l && strlen(l) == len && memcmp(l, label, len) == 0) : !l)
            return i;
    }
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 16;
        b->trees = realloc(b->trees, b->cap * sizeof *b->trees);
        b->labels = realloc(b->labels, b->cap * sizeof *b->labels);
        if (!b->trees || !b->labels)
            abort();
    }
    if (bs_call_tree_init(&b->trees[b->n], NULL) < 0)
        abort();
    b->labels[b->n] = NULL;
    if (label) {
        b->labels[b->n] = malloc(len + 1);
        if (!b->labels[b->n])
            abort();
        memcpy(b->labels[b->n], label, len);
        b->labels[b->n][len] = '\0';
    }
    return b->n++;
}

/* Adds one folded line (without its LF). */
static inline void tu_folded_line(tu_folded_builder *b, const char *line, size_t len)
{
    const char *sp = NULL;
    for (size_t k = len; k-- > 0;)
        if (line[k] == ' ') {
            sp = line + k;
            break;
        }
    if (!sp || sp == line)
        return;
    uint64_t count = strtoull(sp + 1, NULL, 10);
    size_t stack_len = (size_t)(sp - line);
    const char *semi = memchr(line, ';', stack_len);
    size_t first_len = semi ? (size_t)(semi - line) : stack_len;
    int pid = tu_is_pid_frame(line, first_len);
    size_t ti = tu_tree_for(b, pid ? line : NULL, first_len);
    bs_call_tree *t = &b->trees[ti];
    uint32_t node = 0;
    size_t at = pid ? (semi ? first_len + 1 : stack_len) : 0;
    while (at < stack_len) {
        const char *end = memchr(line + at, ';', stack_len - at);
        size_t flen = end ? (size_t)(end - (line + at)) : stack_len - at;
        uint32_t id = bs_frame_table_intern(&b->p->frames, line + at, flen);
        bs_key k = {(uint64_t)id + 1, 0, 0};
        node = bs_call_tree_child(t, node, &k);
        if (id == UINT32_MAX || node == BS_NO_NODE)
            abort();
        at += flen + 1;
    }
    t->nodes[node].self_ns += count * b->mult;
    t->nodes[node].calls += b->unit == BS_UNIT_NS ? 1 : 0;
}

static inline void tu_folded_begin(tu_folded_builder *b, bs_profile *p, bs_unit unit, uint64_t mult)
{
    memset(b, 0, sizeof *b);
    b->p = p;
    b->unit = unit;
    b->mult = mult;
    if (bs_profile_init(p) < 0)
        abort();
    p->unit = unit;
}

/* Moves the built trees into the profile. */
static inline void tu_folded_end(tu_folded_builder *b)
{
    for (size_t i = 0; i < b->n; i++) {
        bs_call_tree *t = &b->trees[i];
        if (bs_profile_add_tree(b->p, b->labels[i] ? b->labels[i] : "") < 0)
            abort();
        bs_ptree *pt = &b->p->trees[b->p->n_trees - 1];
        pt->synthetic_root = b->labels[i] == NULL;
        pt->nodes = realloc(pt->nodes, (size_t)t->n_nodes * sizeof *pt->nodes);
        if (!pt->nodes)
            abort();
        pt->n_nodes = t->n_nodes;
        for (uint32_t k = 1; k < t->n_nodes; k++) {
            pt->nodes[k].parent = t->nodes[k].parent;
            pt->nodes[k].frame = (uint32_t)(t->nodes[k].key.module - 1);
            pt->nodes[k].self_ns = t->nodes[k].self_ns;
            pt->nodes[k].calls = t->nodes[k].calls;
        }
        pt->nodes[0].self_ns = t->nodes[0].self_ns;
        bs_call_tree_free(t);
        free(b->labels[i]);
    }
    free(b->trees);
    free(b->labels);
    bs_profile_compute_totals(b->p);
}

/* Profile of a whole folded text (lines separated by LF). */
static inline void tu_profile_from_folded(bs_profile *p, const char *text, bs_unit unit, uint64_t mult)
{
    tu_folded_builder b;
    tu_folded_begin(&b, p, unit, mult);
    while (*text) {
        const char *lf = strchr(text, '\n');
        size_t len = lf ? (size_t)(lf - text) : strlen(text);
        tu_folded_line(&b, text, len);
        text += len + (lf ? 1 : 0);
    }
    tu_folded_end(&b);
}

#endif
