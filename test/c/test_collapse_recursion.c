/* test_collapse_recursion.c — direct recursion folded into one frame
 * (collapse_recursion.c), alone and through the filters the writers apply. */
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

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tower_becomes_one_frame),
        cmocka_unit_test(test_through_filters),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
