/* test_collapse_recursion.c — recursion folded into one frame
 * (collapse_recursion.c): direct and all (indirect too), alone and through
 * the filters the writers apply; time and calls kept exactly, spans nested
 * as the new tree says. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "engine/collapse_recursion.h"
#include "engine/filter.h"
#include "test_util.h"

#define OK(x) assert_int_equal((x), 0)

static const bs_key RUN = KEY(M_M, F_RUN, 0), LOOP = KEY(M_M, F_LOOP, 1), STEP = KEY(M_M, F_STEP, 1),
                    SORT = KEY(M_LISTS, F_SORT, 1);

/* run -> loop -> loop -> loop -> sort, each loop calling step once on the
 * way down; then run -> step. With a timeline. */
static void make_profile(bs_profile *prof, bs_span_quota *quota)
{
    bs_proc p;
    OK(bs_profile_init(prof));
    OK(bs_proc_init(&p, NULL, 0, 1, 1));
    bs_proc_enable_timeline(&p, quota);
    OK(bs_proc_call(&p, &RUN, BS_CALLER_ROOT, NULL, 100));
    uint64_t t = 200;
    for (int depth = 0; depth < 3; depth++) {
        OK(bs_proc_call(&p, &LOOP, BS_CALLER_FRAME, depth ? &LOOP : &RUN, t));
        OK(bs_proc_call(&p, &STEP, BS_CALLER_FRAME, &LOOP, t + 10));
        OK(bs_proc_return_to(&p, &LOOP, t + 30)); /* step: 20 */
        t += 100;                                /* loop: 10 + 70 own */
    }
    OK(bs_proc_call(&p, &SORT, BS_CALLER_FRAME, &LOOP, t));
    OK(bs_proc_return_to(&p, &LOOP, t + 1000));
    OK(bs_proc_return_to(&p, &LOOP, t + 1010));
    OK(bs_proc_return_to(&p, &LOOP, t + 1020));
    OK(bs_proc_return_to(&p, &RUN, t + 1030));
    OK(bs_proc_call(&p, &STEP, BS_CALLER_FRAME, &RUN, t + 1030));
    OK(bs_proc_return_to(&p, &RUN, t + 1050));
    OK(bs_proc_return_to(&p, NULL, t + 1100));
    bs_proc_flush(&p, t + 1100);
    OK(bs_profile_add_proc(prof, &p, "<0.80.0>", tu_namer, NULL));
    bs_proc_free(&p);
    bs_profile_compute_totals(prof);
}

static uint32_t find(const bs_profile *prof, const bs_ptree *t, uint32_t parent, const char *name)
{
    for (uint32_t i = 1; i < t->n_nodes; i++)
        if (t->nodes[i].parent == parent && strcmp(bs_frame_name(&prof->frames, t->nodes[i].frame), name) == 0)
            return i;
    fail_msg("no %s under node %u", name, parent);
    return 0;
}

static uint64_t total_self(const bs_ptree *t)
{
    uint64_t s = 0;
    for (uint32_t i = 0; i < t->n_nodes; i++)
        s += t->nodes[i].self_ns;
    return s;
}

static void test_tower_becomes_one_frame(void **state)
{
    (void)state;
    bs_span_quota quota;
    bs_span_quota_init(&quota, 1000);
    bs_profile prof;
    make_profile(&prof, &quota);
    uint64_t before = total_self(&prof.trees[0]);
    OK(bs_profile_collapse_recursion(&prof));
    const bs_ptree *t = &prof.trees[0];
    /* process, run, loop, loop's step, sort, run's step */
    assert_int_equal(t->n_nodes, 6);
    assert_int_equal(total_self(t), before);
    uint32_t run = find(&prof, t, 0, "m:run/0");
    uint32_t loop = find(&prof, t, run, "m:loop/1");
    uint32_t step = find(&prof, t, loop, "m:step/1");
    uint32_t sort = find(&prof, t, loop, "lists:sort/1");
    uint32_t run_step = find(&prof, t, run, "m:step/1");
    assert_int_equal(t->nodes[loop].calls, 3);
    assert_int_equal(t->nodes[loop].self_ns, 3 * 80 + 30);
    assert_int_equal(t->nodes[step].calls, 3);
    assert_int_equal(t->nodes[step].self_ns, 3 * 20);
    assert_int_equal(t->nodes[sort].self_ns, 1000);
    assert_int_equal(t->nodes[run_step].self_ns, 20);
    assert_int_equal(t->nodes[loop].total_ns, 3 * 100 + 1030 - 0);
    /* Parents before children, and spans nested without a loop in a loop. */
    for (uint32_t i = 1; i < t->n_nodes; i++)
        assert_true(t->nodes[i].parent < i);
    uint32_t loops = 0;
    for (uint32_t i = 0; i < t->n_spans; i++) {
        assert_true(t->spans[i].node < t->n_nodes);
        loops += t->spans[i].node == loop;
    }
    assert_int_equal(loops, 1);
    bs_profile_free(&prof);
}

/* Through the filters: after drop_sleep etc., before merging processes. */
static void test_through_filters(void **state)
{
    (void)state;
    bs_span_quota quota;
    bs_span_quota_init(&quota, 1000);
    bs_profile prof;
    make_profile(&prof, &quota);
    OK(bs_profile_filter(&prof, &(bs_filter){.collapse_recursion = 1, .exclude_re = "sort"}));
    const bs_ptree *t = &prof.trees[0];
    assert_int_equal(t->n_nodes, 5);
    uint32_t loop = find(&prof, t, find(&prof, t, 0, "m:run/0"), "m:loop/1");
    assert_int_equal(t->nodes[loop].calls, 3);
    bs_profile_free(&prof);
}


/* Spans are properly nested and the span around each one is its node's
 * parent in the tree (or none for a child of the process). */
static void assert_spans_follow_tree(const bs_ptree *t)
{
    uint32_t stack_node[256];
    uint64_t stack_end[256];
    uint32_t depth = 0;
    for (uint32_t i = 0; i < t->n_spans; i++) {
        const bs_pspan *s = &t->spans[i];
        assert_true(s->node > 0 && s->node < t->n_nodes);
        assert_true(s->start_ns <= s->end_ns);
        if (i > 0)
            assert_true(t->spans[i - 1].start_ns <= s->start_ns);
        while (depth && stack_end[depth - 1] <= s->start_ns && !(stack_end[depth - 1] == s->start_ns && s->end_ns == s->start_ns && stack_node[depth - 1] == t->nodes[s->node].parent))
            depth--;
        uint32_t parent = t->nodes[s->node].parent;
        if (depth) {
            assert_int_equal(stack_node[depth - 1], parent);
            assert_true(s->end_ns <= stack_end[depth - 1]);
        } else {
            assert_int_equal(parent, 0);
        }
        assert_true(depth < 256);
        stack_node[depth] = s->node;
        stack_end[depth] = s->end_ns;
        depth++;
    }
}

/* No frame twice on any path (what all mode promises). */
static void assert_no_repeated_frame(const bs_ptree *t)
{
    for (uint32_t i = 1; i < t->n_nodes; i++)
        for (uint32_t a = t->nodes[i].parent; a != 0; a = t->nodes[a].parent)
            assert_true(t->nodes[a].frame != t->nodes[i].frame);
}

static const bs_key EVEN = KEY(M_M, F_EVEN, 1), ODD = KEY(M_M, F_ODD, 1), LEAF = KEY(M_M, F_LEAF, 0);

/* run -> even -> odd -> even -> leaf; back in odd, which calls leaf too. */
static void make_mutual(bs_profile *prof, bs_span_quota *quota)
{
    bs_proc p;
    OK(bs_profile_init(prof));
    OK(bs_proc_init(&p, NULL, 0, 1, 1));
    bs_proc_enable_timeline(&p, quota);
    OK(bs_proc_call(&p, &RUN, BS_CALLER_ROOT, NULL, 100));
    OK(bs_proc_call(&p, &EVEN, BS_CALLER_FRAME, &RUN, 200));
    OK(bs_proc_call(&p, &ODD, BS_CALLER_FRAME, &EVEN, 300));
    OK(bs_proc_call(&p, &EVEN, BS_CALLER_FRAME, &ODD, 400));
    OK(bs_proc_call(&p, &LEAF, BS_CALLER_FRAME, &EVEN, 500));
    OK(bs_proc_return_to(&p, &EVEN, 600));
    OK(bs_proc_return_to(&p, &ODD, 700));
    OK(bs_proc_call(&p, &LEAF, BS_CALLER_FRAME, &ODD, 800));
    OK(bs_proc_return_to(&p, &ODD, 900));
    OK(bs_proc_return_to(&p, &EVEN, 1000));
    OK(bs_proc_return_to(&p, &RUN, 1100));
    OK(bs_proc_return_to(&p, NULL, 1200));
    bs_proc_flush(&p, 1200);
    OK(bs_profile_add_proc(prof, &p, "<0.80.0>", tu_namer, NULL));
    bs_proc_free(&p);
    bs_profile_compute_totals(prof);
}

static uint64_t total_calls(const bs_ptree *t)
{
    uint64_t s = 0;
    for (uint32_t i = 0; i < t->n_nodes; i++)
        s += t->nodes[i].calls;
    return s;
}

static void test_direct_leaves_mutual_recursion(void **state)
{
    (void)state;
    bs_span_quota quota;
    bs_span_quota_init(&quota, 1000);
    bs_profile prof;
    make_mutual(&prof, &quota);
    uint32_t before = prof.trees[0].n_nodes;
    OK(bs_profile_collapse_recursion_mode(&prof, BS_COLLAPSE_DIRECT));
    assert_int_equal(prof.trees[0].n_nodes, before);
    bs_profile_free(&prof);
}

static void test_all_folds_mutual_recursion(void **state)
{
    (void)state;
    bs_span_quota quota;
    bs_span_quota_init(&quota, 1000);
    bs_profile prof;
    make_mutual(&prof, &quota);
    uint64_t self_before = total_self(&prof.trees[0]), calls_before = total_calls(&prof.trees[0]);
    OK(bs_profile_collapse_recursion_mode(&prof, BS_COLLAPSE_ALL));
    const bs_ptree *t = &prof.trees[0];
    /* process, run, even, odd, leaf under even, leaf under odd */
    assert_int_equal(t->n_nodes, 6);
    assert_int_equal(total_self(t), self_before);
    assert_int_equal(total_calls(t), calls_before);
    uint32_t run = find(&prof, t, 0, "m:run/0");
    uint32_t even = find(&prof, t, run, "m:even/1");
    uint32_t odd = find(&prof, t, even, "m:odd/1");
    uint32_t leaf_e = find(&prof, t, even, "m:leaf/0");
    uint32_t leaf_o = find(&prof, t, odd, "m:leaf/0");
    assert_int_equal(t->nodes[even].calls, 2);
    assert_int_equal(t->nodes[even].self_ns, 400);
    assert_int_equal(t->nodes[odd].self_ns, 300);
    assert_int_equal(t->nodes[leaf_e].self_ns, 100);
    assert_int_equal(t->nodes[leaf_o].self_ns, 100);
    /* odd no longer holds the re-entered even: 300 own + 100 leaf. */
    assert_int_equal(t->nodes[odd].total_ns, 400);
    assert_int_equal(t->nodes[even].total_ns, 900);
    assert_int_equal(t->nodes[run].total_ns, 1100);
    assert_no_repeated_frame(t);
    /* odd's span ends where even comes back and goes on after it. */
    assert_spans_follow_tree(t);
    assert_int_equal(t->n_spans, 6);
    uint32_t odd_spans = 0;
    for (uint32_t i = 0; i < t->n_spans; i++)
        if (t->spans[i].node == odd) {
            assert_true((t->spans[i].start_ns == 300 && t->spans[i].end_ns == 400) ||
                        (t->spans[i].start_ns == 700 && t->spans[i].end_ns == 1000));
            odd_spans++;
        }
    assert_int_equal(odd_spans, 2);
    assert_int_equal(prof.timeline_truncated, 0);
    bs_profile_free(&prof);
}

/* Random call streams (tail calls, undefined returns, scheduling, GC):
 * both modes keep every nanosecond and every call, all mode leaves no
 * frame twice on a path, and spans follow the tree. */
static void test_random_streams_keep_totals(void **state)
{
    (void)state;
    enum { N = 4000 };
    static tu_event ev[N];
    for (uint64_t seed = 1; seed <= 40; seed++) {
        for (int mode = BS_COLLAPSE_DIRECT; mode <= BS_COLLAPSE_ALL; mode++) {
            tu_random_events(ev, N, seed, 4);
            bs_span_quota quota;
            bs_span_quota_init(&quota, 1u << 20);
            bs_profile prof;
            bs_proc p;
            OK(bs_profile_init(&prof));
            OK(bs_proc_init(&p, NULL, 0, 1, 1));
            bs_proc_enable_timeline(&p, &quota);
            for (size_t i = 0; i < N; i++)
                (void)tu_feed(&p, &ev[i]);
            bs_proc_flush(&p, ev[N - 1].t + 1);
            OK(bs_profile_add_proc(&prof, &p, "<0.80.0>", tu_namer, NULL));
            bs_proc_free(&p);
            bs_profile_compute_totals(&prof);
            uint64_t self_before = total_self(&prof.trees[0]), calls_before = total_calls(&prof.trees[0]);
            uint64_t root_total = prof.trees[0].nodes[0].total_ns;
            OK(bs_profile_collapse_recursion_mode(&prof, (bs_collapse_mode)mode));
            const bs_ptree *t = &prof.trees[0];
            assert_int_equal(total_self(t), self_before);
            assert_int_equal(total_calls(t), calls_before);
            assert_int_equal(t->nodes[0].total_ns, root_total);
            for (uint32_t i = 1; i < t->n_nodes; i++)
                assert_true(t->nodes[i].parent < i);
            if (mode == BS_COLLAPSE_ALL)
                assert_no_repeated_frame(t);
            assert_spans_follow_tree(t);
            bs_profile_free(&prof);
        }
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tower_becomes_one_frame),
        cmocka_unit_test(test_through_filters),
        cmocka_unit_test(test_direct_leaves_mutual_recursion),
        cmocka_unit_test(test_all_folds_mutual_recursion),
        cmocka_unit_test(test_random_streams_keep_totals),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
