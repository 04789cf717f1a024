/* fuzz_common.h — checks shared by the fuzz targets (header only).
 *
 * A reader that accepts an input must return a profile every writer can
 * trust: each node's parent before it, frames that exist, names that are
 * valid UTF-8 without control characters or ';', spans in range. Any
 * violated property aborts, which libFuzzer reports like a crash. */
#ifndef BS_FUZZ_COMMON_H
#define BS_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/profile.h"
#include "writers/folded.h"
#include "readers/readers.h"
#include "writers/writers.h"
#include "test_util.h"

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                 \
        }                                                                            \
    } while (0)

/* A stream over data; "/dev/null" for no bytes (fmemopen refuses size 0). */
static inline FILE *fuzz_open(const uint8_t *data, size_t size)
{
    FILE *f = size ? fmemopen((void *)data, size, "rb") : fopen("/dev/null", "rb");
    CHECK(f != NULL);
    return f;
}

static inline void fuzz_check_error(const bs_read_error *e)
{
    CHECK(memchr(e->msg, '\0', sizeof e->msg) && e->msg[0]);
    CHECK(memchr(e->file, '\0', sizeof e->file));
}

static inline void fuzz_check_profile(const bs_profile *p)
{
    for (uint32_t i = 0; i < p->frames.n; i++) {
        const char *name = bs_frame_name(&p->frames, i);
        size_t len = strlen(name);
        CHECK(tu_utf8_valid(name, len));
        for (size_t k = 0; k < len; k++)
            CHECK((unsigned char)name[k] >= 0x20 && name[k] != 0x7F && name[k] != ';');
    }
    CHECK(p->sleep_frame < p->frames.n && p->gc_frame < p->frames.n);
    uint64_t grand_total = 0; /* writers add up all trees: the sum must fit */
    for (uint32_t ti = 0; ti < p->n_trees; ti++) {
        const bs_ptree *t = &p->trees[ti];
        CHECK(t->n_nodes >= 1 && t->nodes[0].parent == UINT32_MAX);
        CHECK(t->nodes[0].total_ns <= UINT64_MAX - grand_total);
        grand_total += t->nodes[0].total_ns;
        for (uint32_t i = 0; i < t->n_nodes; i++) {
            CHECK(t->nodes[i].frame < p->frames.n);
            CHECK(i == 0 || t->nodes[i].parent < i);
            CHECK(t->nodes[i].total_ns >= t->nodes[i].self_ns);
        }
        for (uint32_t i = 0; i < t->n_spans; i++) {
            CHECK(t->spans[i].node < t->n_nodes);
            CHECK(t->spans[i].start_ns <= t->spans[i].end_ns);
            CHECK(i == 0 || t->spans[i - 1].start_ns <= t->spans[i].start_ns);
        }
    }
}

/* Every field of two profiles is equal (totals included: the reader
 * recomputes them from the self times). */
static inline void fuzz_check_equal(const bs_profile *a, const bs_profile *b)
{
    CHECK(a->frames.n == b->frames.n);
    for (uint32_t i = 0; i < a->frames.n; i++)
        CHECK(strcmp(bs_frame_name(&a->frames, i), bs_frame_name(&b->frames, i)) == 0);
    CHECK(a->unit == b->unit && a->sleep_frame == b->sleep_frame && a->gc_frame == b->gc_frame);
    CHECK(strcmp(a->meta.node, b->meta.node) == 0 && strcmp(a->meta.otp_release, b->meta.otp_release) == 0);
    CHECK(strcmp(a->meta.source, b->meta.source) == 0 && strcmp(a->meta.options, b->meta.options) == 0);
    CHECK(a->meta.start_unix_us == b->meta.start_unix_us && strcmp(a->truncated, b->truncated) == 0);
    CHECK(a->start_ns == b->start_ns && a->duration_ns == b->duration_ns);
    CHECK(a->has_timeline == b->has_timeline && a->timeline_truncated == b->timeline_truncated);
    CHECK(a->n_trees == b->n_trees);
    for (uint32_t ti = 0; ti < a->n_trees; ti++) {
        const bs_ptree *x = &a->trees[ti], *y = &b->trees[ti];
        CHECK(x->n_nodes == y->n_nodes && x->n_spans == y->n_spans);
        CHECK(x->synthetic_root == y->synthetic_root && x->events == y->events && x->dropped == y->dropped);
        for (uint32_t i = 0; i < x->n_nodes; i++) {
            const bs_pnode *m = &x->nodes[i], *n = &y->nodes[i];
            CHECK(m->parent == n->parent && m->frame == n->frame && m->self_ns == n->self_ns);
            CHECK(m->total_ns == n->total_ns && m->calls == n->calls);
        }
        for (uint32_t i = 0; i < x->n_spans; i++) {
            const bs_pspan *m = &x->spans[i], *n = &y->spans[i];
            CHECK(m->node == n->node && m->start_ns == n->start_ns && m->end_ns == n->end_ns);
        }
    }
}

/* Output of one writer (caller frees). */
static inline char *fuzz_write(int (*writer)(FILE *, const bs_profile *, const bs_render_opts *),
                               const bs_profile *p, size_t *len)
{
    char *text = NULL;
    FILE *out = open_memstream(&text, len);
    CHECK(out != NULL);
    bs_render_opts o = {0};
    CHECK(writer(out, p, &o) == 0);
    CHECK(fclose(out) == 0);
    return text;
}

/* Folded text with counts as they are (no microsecond rounding). */
static inline char *fuzz_folded(const bs_profile *p, size_t *len)
{
    char *text = NULL;
    FILE *out = open_memstream(&text, len);
    CHECK(out != NULL);
    bs_folded_opts o = {.ns_per_unit = 1};
    CHECK(bs_write_folded(out, p, &o) == 0);
    CHECK(fclose(out) == 0);
    return text;
}

/* Every writer accepts what a reader accepted. */
static inline void fuzz_all_writers(const bs_profile *p)
{
    int (*const writers[])(FILE *, const bs_profile *, const bs_render_opts *) = {
        bs_write_folded_opts, bs_write_svg, bs_write_html, bs_write_speedscope,
        bs_write_chrome, bs_write_perf, bs_write_bspy,
    };
    for (size_t i = 0; i < sizeof writers / sizeof writers[0]; i++) {
        size_t len;
        free(fuzz_write(writers[i], p, &len));
    }
}

#endif
