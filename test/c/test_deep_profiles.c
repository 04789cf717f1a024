/* test_deep_profiles.c — profiles whose shape is set by the data, through
 * every writer, the filters and the readers: one chain 1,000,000 frames deep
 * and one root with 1,000,000 children (200,000 under ASan, 20,000 under
 * valgrind: BS_TEST_SMALL). Each case runs on a thread with a 256 KiB stack: a
 * traversal that recursed once per level or per child would overflow it
 * (the recursion rule: no C code that reads outside input or runs in the VM
 * recurses to a depth the data sets). Every output is checked for its
 * format's first bytes; .bspy and folded outputs are read back and
 * checked to hold the profile's nodes. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>

#include "engine/collapse_recursion.h"
#include "readers/readers.h"
#include "writers/writers.h"
#include "test_util.h"

#define THREAD_STACK (256 * 1024)

typedef struct shape_case {
    int wide;       /* 0: a chain; 1: siblings under the root */
    uint32_t n;     /* frames below the process root */
    char err[1024];  /* "" when every check passed */
} shape_case;

#define CHECK(c, cond, ...)                                                                                  \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            snprintf((c)->err, sizeof (c)->err, __VA_ARGS__);                                                \
            goto done;                                                                                       \
        }                                                                                                    \
    } while (0)

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#endif

/* 1,000,000 (about 100-150 s on a loaded 2-core machine); 200,000 under
 * ASan (a million took 345 s there, past run.sh's 300 s per case); 20,000
 * under valgrind. */
static uint32_t cases_n(void)
{
#ifdef UNDER_ASAN
    return 200000u;
#else
    return tu_small() ? 20000u : 1000000u;
#endif
}

/* The chain: f0 -> f1 -> ... (distinct names, so nothing merges); the wide
 * one: f0, f1, ... all children of the root. 1 us of self time each. */
static int build(bs_profile *p, int wide, uint32_t n)
{
    if (bs_profile_init(p) < 0)
        return -1;
    bs_ptree *t = bs_profile_new_tree(p, "<0.1.0>", n + 1);
    if (!t)
        return -1;
    char name[32];
    for (uint32_t i = 1; i <= n; i++) {
        snprintf(name, sizeof name, "m:f%u/0", i - 1);
        uint32_t frame = bs_profile_intern(p, name);
        if (frame == UINT32_MAX)
            return -1;
        /* the pointer may move while frames are interned: index each time */
        p->trees[0].nodes[i] = (bs_pnode){.parent = wide ? 0 : i - 1, .frame = frame, .self_ns = 1000, .calls = 1};
    }
    p->duration_ns = (uint64_t)n * 1000;
    bs_profile_compute_totals(p);
    return 0;
}

static const struct {
    bs_format f;
    const char *start;
} FORMATS[] = {
    {BS_FORMAT_FOLDED, "<0.1.0>;m:f0/0"},
    {BS_FORMAT_SVG, "<?xml"},
    {BS_FORMAT_HTML, "<!DOCTYPE html>"},
    {BS_FORMAT_SPEEDSCOPE, "{"},
    {BS_FORMAT_CHROME, "{"},
    {BS_FORMAT_PERF, ""},
    {BS_FORMAT_BSPY, "\x89" "BSPY"},
    {BS_FORMAT_CALLGRIND, "# callgrind format"},
};

/* Reads an output back (bspy, folded) and checks it holds the shape. */
static int read_back(shape_case *c, bs_format f, const char *data, size_t size, uint32_t n)
{
    FILE *in = fmemopen((void *)data, size, "rb");
    if (!in) {
        snprintf(c->err, sizeof c->err, "fmemopen");
        return -1;
    }
    bs_profile q;
    bs_read_error e = {0};
    int rc = f == BS_FORMAT_BSPY ? bs_read_bspy(in, "deep.bspy", &q, &e) : bs_read_folded(in, "deep.folded", &q, &e);
    fclose(in);
    if (rc < 0) {
        snprintf(c->err, sizeof c->err, "%s read back: %s", bs_format_name(f), e.msg);
        return -1;
    }
    uint64_t nodes = 0, self = 0;
    for (uint32_t i = 0; i < q.n_trees; i++)
        for (uint32_t k = 0; k < q.trees[i].n_nodes; k++) {
            nodes++;
            self += q.trees[i].nodes[k].self_ns;
        }
    bs_profile_free(&q);
    /* bspy keeps every node; folded a line per stack, the chain's frames
     * past 1,024 summed into one [deeper] leaf. */
    if (nodes < (uint64_t)n + 1 || self == 0) {
        snprintf(c->err, sizeof c->err, "%s read back: %llu nodes, self %llu", bs_format_name(f),
                 (unsigned long long)nodes, (unsigned long long)self);
        return -1;
    }
    return 0;
}

static void *shape_thread(void *arg)
{
    shape_case *c = arg;
    bs_profile p;
    memset(&p, 0, sizeof p);
    CHECK(c, build(&p, c->wide, c->n) == 0, "build");
    for (size_t k = 0; k < sizeof FORMATS / sizeof FORMATS[0]; k++) {
        bs_render_opts o = {0}; /* folded and stack samples: frames past 1,024 in one [deeper] leaf */
        char *data = NULL;
        size_t size = 0;
        int rc = bs_write_memory(FORMATS[k].f, &p, &o, 0, &data, &size);
        CHECK(c, rc == 0, "%s: write failed (errno %d)", bs_format_name(FORMATS[k].f), errno);
        size_t sl = strlen(FORMATS[k].start);
        int ok = size > sl && memcmp(data, FORMATS[k].start, sl) == 0;
        if (ok && (FORMATS[k].f == BS_FORMAT_BSPY || FORMATS[k].f == BS_FORMAT_FOLDED))
            ok = read_back(c, FORMATS[k].f, data, size,
                           FORMATS[k].f == BS_FORMAT_FOLDED && !c->wide ? 1025 : c->n) == 0;
        else if (!ok)
            snprintf(c->err, sizeof c->err, "%s: starts %.20s (%zu bytes)", bs_format_name(FORMATS[k].f), data, size);
        free(data);
        if (!ok)
            goto done;
    }
    /* The filters, each on its own copy, through the folded writer. */
    static const char *const what[] = {"include", "exclude", "collapse", "merge", "drop_sleep", "inverted svg"};
    for (int k = 0; k < 6; k++) {
        bs_render_opts o = {0};
        bs_format f = BS_FORMAT_FOLDED;
        switch (k) {
        case 0: o.include_re = "f1/0$"; break;
        case 1: o.exclude_re = "f2/0$"; break;
        case 2: o.collapse_recursion = 1; break;
        case 3: o.merge_processes = 1; break;
        case 4: o.drop_sleep = 1; break;
        default: o.inverted = 1; f = BS_FORMAT_SVG; break;
        }
        char *data = NULL;
        size_t size = 0;
        CHECK(c, bs_write_memory(f, &p, &o, 0, &data, &size) == 0, "%s: write failed (errno %d)", what[k], errno);
        free(data);
    }
done:
    bs_profile_free(&p);
    return NULL;
}

static void run_on_small_stack(shape_case *c)
{
    pthread_attr_t attr;
    pthread_t th;
    assert_int_equal(pthread_attr_init(&attr), 0);
    assert_int_equal(pthread_attr_setstacksize(&attr, THREAD_STACK), 0);
    assert_int_equal(pthread_create(&th, &attr, shape_thread, c), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    pthread_attr_destroy(&attr);
    if (c->err[0])
        fail_msg("%s", c->err);
}

static void test_chain_a_million_deep(void **state)
{
    (void)state;
    shape_case c = {.wide = 0, .n = cases_n()};
    run_on_small_stack(&c);
}

static void test_a_million_siblings(void **state)
{
    (void)state;
    shape_case c = {.wide = 1, .n = cases_n()};
    run_on_small_stack(&c);
}

/* A chain n deep whose frames repeat with the given period (2: f0 calls f1
 * calls f0 ...; n / 2: a cycle through n / 2 functions, twice), one nested
 * span per call, 1 us of self time each. */
static int build_cycle(bs_profile *p, uint32_t n, uint32_t period)
{
    if (bs_profile_init(p) < 0 || !bs_profile_new_tree(p, "<0.1.0>", n + 1))
        return -1;
    char name[32];
    for (uint32_t i = 1; i <= n; i++) {
        snprintf(name, sizeof name, "m:f%u/0", (i - 1) % period);
        uint32_t frame = bs_profile_intern(p, name);
        if (frame == UINT32_MAX)
            return -1;
        p->trees[0].nodes[i] = (bs_pnode){.parent = i - 1, .frame = frame, .self_ns = 1000, .calls = 1};
    }
    bs_ptree *t = &p->trees[0];
    t->spans = malloc((size_t)n * sizeof *t->spans);
    if (!t->spans)
        return -1;
    for (uint32_t i = 1; i <= n; i++) /* call i starts at i, ends at 4n - i */
        t->spans[i - 1] = (bs_pspan){.node = i, .start_ns = i, .end_ns = 4ull * n - i};
    t->n_spans = n;
    p->duration_ns = 4ull * n;
    bs_profile_compute_totals(p);
    return 0;
}

typedef struct cycle_case {
    uint32_t n, period;
    char err[256];
} cycle_case;

/* collapse_recursion => all on the cycle: one node per function in a chain
 * `period` deep, each with the time and calls of its n / period levels;
 * the spans sorted, nested, each on a node of the new tree. */
static void *cycle_thread(void *arg)
{
    cycle_case *c = arg;
    bs_profile p;
    memset(&p, 0, sizeof p);
    uint32_t *ends = NULL;
    CHECK(c, build_cycle(&p, c->n, c->period) == 0, "build");
    CHECK(c, bs_profile_collapse_recursion_mode(&p, BS_COLLAPSE_ALL) == 0, "collapse failed");
    const bs_ptree *t = &p.trees[0];
    CHECK(c, t->n_nodes == c->period + 1, "%u nodes, not %u", t->n_nodes, c->period + 1);
    char name[32];
    for (uint32_t k = 1; k <= c->period; k++) {
        snprintf(name, sizeof name, "m:f%u/0", k - 1);
        const bs_pnode *x = &t->nodes[k];
        uint64_t levels = c->n / c->period;
        CHECK(c, x->parent == k - 1 && strcmp(bs_frame_name(&p.frames, x->frame), name) == 0,
              "node %u: parent %u, %s", k, x->parent, bs_frame_name(&p.frames, x->frame));
        CHECK(c, x->self_ns == levels * 1000 && x->calls == levels, "node %u: self %llu, calls %llu", k,
              (unsigned long long)x->self_ns, (unsigned long long)x->calls);
    }
    CHECK(c, t->nodes[0].total_ns == (uint64_t)c->n * 1000, "total %llu", (unsigned long long)t->nodes[0].total_ns);
    CHECK(c, t->n_spans >= c->period, "%u spans", t->n_spans);
    ends = malloc(((size_t)c->period + 1) * sizeof *ends);
    CHECK(c, ends != NULL, "malloc");
    uint32_t open = 0;
    uint64_t last_start = 0;
    for (uint32_t i = 0; i < t->n_spans; i++) {
        const bs_pspan *s = &t->spans[i];
        CHECK(c, s->node >= 1 && s->node <= c->period && s->start_ns >= last_start && s->end_ns >= s->start_ns,
              "span %u: node %u [%llu, %llu]", i, s->node, (unsigned long long)s->start_ns,
              (unsigned long long)s->end_ns);
        last_start = s->start_ns;
        while (open && t->spans[ends[open - 1]].end_ns <= s->start_ns)
            open--;
        CHECK(c, open < c->period && (open ? t->spans[ends[open - 1]].node : 0) == t->nodes[s->node].parent &&
                     (!open || s->end_ns <= t->spans[ends[open - 1]].end_ns),
              "span %u (node %u) not nested in its parent's", i, s->node);
        ends[open++] = i;
    }
done:
    free(ends);
    bs_profile_free(&p);
    return NULL;
}

static void run_cycle(cycle_case *c)
{
    pthread_attr_t attr;
    pthread_t th;
    assert_int_equal(pthread_attr_init(&attr), 0);
    assert_int_equal(pthread_attr_setstacksize(&attr, THREAD_STACK), 0);
    assert_int_equal(pthread_create(&th, &attr, cycle_thread, c), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    pthread_attr_destroy(&attr);
    if (c->err[0])
        fail_msg("%s", c->err);
}

/* Mutual recursion 1,000,000 deep (f0 -> f1 -> f0 ...) collapsed in all
 * mode, and a cycle through 500,000 functions: finding the f already on
 * the stack walked up the new tree for every node, and each span moved the
 * open path from the root, quadratic in the depth (the cycle 100,000 deep
 * took 26 s, so about 45 min at 1,000,000); it is now linear (1.4 s and
 * 0.6 s at 1,000,000 on a loaded 2-core machine, -O2). */
static void test_collapse_all_alternating_a_million_deep(void **state)
{
    (void)state;
    cycle_case c = {.n = cases_n(), .period = 2};
    run_cycle(&c);
}

static void test_collapse_all_long_cycle_a_million_deep(void **state)
{
    (void)state;
    cycle_case c = {.n = cases_n(), .period = cases_n() / 2};
    run_cycle(&c);
}

/* argv[1], if given, runs only the test cases whose name matches it (run.sh
 * runs each case in its own process). */
int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain_a_million_deep),
        cmocka_unit_test(test_a_million_siblings),
        cmocka_unit_test(test_collapse_all_alternating_a_million_deep),
        cmocka_unit_test(test_collapse_all_long_cycle_a_million_deep),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
