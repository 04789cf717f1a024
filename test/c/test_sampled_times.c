/* test_sampled_times.c — self times of a traced tree from CPU samples
 * (engine/sampled_times.h) on hand-made trees: per-function shares are the
 * samples', split over a function's call sites as the traced self times
 * (by calls when those are 0); a function with no sample gets 0; a sample
 * of an untraced function goes to its nearest traced caller, one with no
 * traced function to the process; WAIT keeps its traced time; the scratch
 * arrays are left zeroed. And the chain multiset the sampler keeps them in
 * (cpu/sample_chains.h): equal chains counted once, looked up by process,
 * bounded by its byte cap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "cpu/sample_chains.h"
#include "engine/profile.h"
#include "engine/sampled_times.h"

#define NS 1000000ull /* 1000 Hz */

typedef struct fixture {
    bs_profile p;
    bs_ptree *t;
    uint32_t root, f, g, h, untraced;
} fixture;

/* <0.1.0>
 *   f (self 300, 1 call)       node 1
 *     g (self 100, 10 calls)   node 2
 *     WAIT (self 5000)         node 3
 *   g (self 300, 30 calls)     node 4
 *   h (self 0, 4 calls)        node 5 */
static void make(fixture *x)
{
    assert_int_equal(bs_profile_init(&x->p), 0);
    x->t = bs_profile_new_tree(&x->p, "<0.1.0>", 6);
    assert_non_null(x->t);
    x->f = bs_profile_intern(&x->p, "m:f/0");
    x->g = bs_profile_intern(&x->p, "m:g/1");
    x->h = bs_profile_intern(&x->p, "m:h/2");
    x->untraced = bs_profile_intern(&x->p, "m:u/0"); /* named, but no node of the tree */
    bs_pnode *n = x->t->nodes;
    n[1] = (bs_pnode){0, x->f, 300, 0, 1};
    n[2] = (bs_pnode){1, x->g, 100, 0, 10};
    n[3] = (bs_pnode){1, x->p.wait_frame, 5000, 0, 1};
    n[4] = (bs_pnode){0, x->g, 300, 0, 30};
    n[5] = (bs_pnode){0, x->h, 0, 0, 4};
    n[0].self_ns = 777;
}

typedef struct scratch {
    bs_sampled_scratch sc;
    uint64_t *mem;
    unsigned char *keep;
} scratch;

static void make_scratch(scratch *s, const bs_profile *p)
{
    uint32_t n = p->frames.n;
    s->mem = calloc((size_t)n * 4, sizeof *s->mem);
    s->keep = calloc(n, 1);
    assert_non_null(s->mem);
    assert_non_null(s->keep);
    s->keep[p->wait_frame] = s->keep[p->runnable_frame] = s->keep[p->sleep_frame] = s->keep[p->gc_frame] = 1;
    s->sc = (bs_sampled_scratch){n, s->mem, s->mem + n, s->mem + 2 * n, s->mem + 3 * n};
}

static void free_scratch(scratch *s)
{
    for (size_t i = 0; i < (size_t)s->sc.n_frames * 4; i++)
        assert_int_equal(s->mem[i], 0); /* left as found */
    free(s->mem);
    free(s->keep);
}

static void test_shares_and_call_sites(void **state)
{
    (void)state;
    fixture x;
    make(&x);
    scratch s;
    make_scratch(&s, &x.p);
    /* f: 10 samples; g: 40 (split 100 : 300 over its two nodes); h: 6
     * (its traced self is 0: split by calls, one node). */
    uint32_t cf[] = {x.f}, cg[] = {x.g, x.f}, ch[] = {x.h};
    bs_sample_chain chains[] = {{cf, 1, 10}, {cg, 2, 40}, {ch, 1, 6}};
    bs_sampled_stats st = {0, 0, 0};
    assert_int_equal(bs_sampled_times_apply(x.t, s.keep, chains, 3, NS, &s.sc, &st), 0);
    bs_pnode *n = x.t->nodes;
    assert_int_equal(n[1].self_ns, 10 * NS);
    assert_int_equal(n[2].self_ns, 10 * NS); /* 40 x 100/400 */
    assert_int_equal(n[4].self_ns, 30 * NS); /* 40 x 300/400 */
    assert_int_equal(n[5].self_ns, 6 * NS);
    assert_int_equal(n[3].self_ns, 5000);    /* WAIT keeps its traced time */
    assert_int_equal(n[0].self_ns, 0);       /* nothing untraced */
    assert_int_equal(n[2].calls, 10);        /* counts stay the trace's */
    assert_int_equal(st.charged, 56);
    assert_int_equal(st.to_caller, 0);
    assert_int_equal(st.untraced, 0);
    free_scratch(&s);
    bs_profile_free(&x.p);
}

static void test_zero_sample_function_gets_zero(void **state)
{
    (void)state;
    fixture x;
    make(&x);
    scratch s;
    make_scratch(&s, &x.p);
    uint32_t cg[] = {x.g};
    bs_sample_chain chains[] = {{cg, 1, 8}};
    bs_sampled_stats st = {0, 0, 0};
    assert_int_equal(bs_sampled_times_apply(x.t, s.keep, chains, 1, NS, &s.sc, &st), 0);
    assert_int_equal(x.t->nodes[1].self_ns, 0); /* f: traced 300 ns, no sample */
    assert_int_equal(x.t->nodes[5].self_ns, 0);
    assert_int_equal(x.t->nodes[2].self_ns + x.t->nodes[4].self_ns, 8 * NS);
    free_scratch(&s);
    bs_profile_free(&x.p);
}

static void test_untraced_to_nearest_traced_caller(void **state)
{
    (void)state;
    fixture x;
    make(&x);
    scratch s;
    make_scratch(&s, &x.p);
    /* u (untraced) called by h: to h. u then an unknown frame called by g:
     * to g. Only untraced and unknown frames: to the process. No frame at
     * all (no Erlang function reached): to the process. */
    uint32_t c1[] = {x.untraced, x.h}, c2[] = {x.untraced, UINT32_MAX, x.g}, c3[] = {x.untraced, UINT32_MAX};
    bs_sample_chain chains[] = {{c1, 2, 3}, {c2, 3, 4}, {c3, 2, 5}, {NULL, 0, 2}};
    bs_sampled_stats st = {0, 0, 0};
    assert_int_equal(bs_sampled_times_apply(x.t, s.keep, chains, 4, NS, &s.sc, &st), 0);
    assert_int_equal(x.t->nodes[5].self_ns, 3 * NS);
    assert_int_equal(x.t->nodes[2].self_ns, 1 * NS);
    assert_int_equal(x.t->nodes[4].self_ns, 3 * NS);
    assert_int_equal(x.t->nodes[0].self_ns, 7 * NS);
    assert_int_equal(st.charged, 0);
    assert_int_equal(st.to_caller, 7);
    assert_int_equal(st.untraced, 7);
    free_scratch(&s);
    bs_profile_free(&x.p);
}

static void test_bad_frame_refused(void **state)
{
    (void)state;
    fixture x;
    make(&x);
    scratch s;
    make_scratch(&s, &x.p);
    s.sc.n_frames = x.g; /* a scratch too small for the tree's frames */
    bs_sampled_stats st = {0, 0, 0};
    assert_int_equal(bs_sampled_times_apply(x.t, s.keep, NULL, 0, NS, &s.sc, &st), -1);
    s.sc.n_frames = x.p.frames.n;
    free_scratch(&s);
    bs_profile_free(&x.p);
}

static void test_chains_counted_and_found_by_owner(void **state)
{
    (void)state;
    bs_sample_chains sc;
    bs_sample_chains_init(&sc, 1 << 20);
    uint32_t a[] = {1, 2, 3}, b[] = {1, 2};
    for (int i = 0; i < 5; i++)
        assert_int_equal(bs_sample_chains_add(&sc, 100, a, 3), 0);
    assert_int_equal(bs_sample_chains_add(&sc, 100, b, 2), 0);
    assert_int_equal(bs_sample_chains_add(&sc, 7, a, 3), 0);
    assert_int_equal(bs_sample_chains_add(&sc, 7, NULL, 0), 0);
    assert_int_equal(sc.n, 4);
    assert_int_equal(bs_sample_chains_index(&sc), 0);
    const bs_chain_ref *refs;
    assert_int_equal(bs_sample_chains_of(&sc, 100, &refs), 2);
    uint64_t total = 0;
    for (int i = 0; i < 2; i++) {
        const bs_chain_entry *e = &sc.entries[refs[i].entry];
        assert_int_equal(e->owner, 100);
        total += e->count;
        if (e->n == 3)
            assert_int_equal(bs_sample_chain_frames(&sc, e)[2], 3);
    }
    assert_int_equal(total, 6);
    assert_int_equal(bs_sample_chains_of(&sc, 7, &refs), 2);
    assert_int_equal(bs_sample_chains_of(&sc, 8, &refs), 0);
    /* Longer chains keep their innermost BS_CHAIN_MAX_FRAMES. */
    uint32_t deep[BS_CHAIN_MAX_FRAMES + 10] = {0};
    assert_int_equal(bs_sample_chains_add(&sc, 9, deep, BS_CHAIN_MAX_FRAMES + 10), 0);
    assert_int_equal(sc.entries[sc.n - 1].n, BS_CHAIN_MAX_FRAMES);
    bs_sample_chains_free(&sc);
}

static void test_chains_bounded(void **state)
{
    (void)state;
    bs_sample_chains sc;
    bs_sample_chains_init(&sc, 8192);
    uint32_t f[1];
    uint64_t kept = 0;
    for (uint32_t i = 0; i < 10000; i++) {
        f[0] = i;
        kept += bs_sample_chains_add(&sc, 1, f, 1) == 0;
    }
    assert_true(sc.bytes <= 8192);
    assert_true(kept > 0);
    assert_int_equal(sc.dropped, 10000 - kept);
    /* Counting a chain already held still works at the cap. */
    uint64_t dropped = sc.dropped;
    for (uint32_t i = 0; i < 100; i++) {
        f[0] = i % 4;
        assert_int_equal(bs_sample_chains_add(&sc, 1, f, 1), 0);
    }
    assert_int_equal(sc.dropped, dropped);
    bs_sample_chains_free(&sc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shares_and_call_sites),
        cmocka_unit_test(test_zero_sample_function_gets_zero),
        cmocka_unit_test(test_untraced_to_nearest_traced_caller),
        cmocka_unit_test(test_bad_frame_refused),
        cmocka_unit_test(test_chains_counted_and_found_by_owner),
        cmocka_unit_test(test_chains_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
