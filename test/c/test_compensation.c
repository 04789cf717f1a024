/* test_compensation.c — subtracting the tracer's cost per event
 * (engine/compensation.h): exact bookkeeping on hand-made event sequences,
 * intervals shorter than the cost (never below zero; the frame owes the
 * rest and pays it from its next interval), reschedules paid by the
 * scheduled-out time, the callbacks' own time left out, the OS load factor, raw times
 * left alone, timelines that stay nested and non-negative on random event
 * streams (compensated total + subtracted = raw total), the text every
 * output shows, and the .bspy COMP section read back. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "readers/readers.h"
#include "writers/writers.h"
#include "test_util.h"

static const bs_key TOP = KEY(M_M, F_TOP, 0), A = KEY(M_M, F_A, 0), B = KEY(M_M, F_B, 0),
                    LOOP = KEY(M_M, F_LOOP, 2), SMALL = KEY(M_M, F_F, 1), BIF = KEY(M_ERLANG, F_PHASH2, 1);

static const bs_comp_costs COSTS = {{100, 50, 200, 0}};

static void new_proc(bs_proc *p, uint64_t start, const bs_comp_costs *costs)
{
    assert_int_equal(bs_proc_init(p, NULL, start, 1, 0), 0);
    bs_proc_compensate(p, costs);
}

/* The node of a one-frame-deep stack below the root, by key. */
static uint32_t child(const bs_proc *p, uint32_t parent, const bs_key *k)
{
    for (uint32_t i = 1; i < p->tree.n_nodes; i++)
        if (p->tree.nodes[i].parent == parent && bs_key_eq(&p->tree.nodes[i].key, k))
            return i;
    fail_msg("no such node");
    return 0;
}

static void test_exact_bookkeeping(void **state)
{
    (void)state;
    bs_proc p;
    new_proc(&p, 0, &COSTS);
    assert_int_equal(bs_proc_call(&p, &TOP, BS_CALLER_ROOT, NULL, 1000), 0);  /* root: 1000 - 100 */
    assert_int_equal(bs_proc_call(&p, &A, BS_CALLER_FRAME, &TOP, 1500), 0);  /* top: 500 - 100 */
    assert_int_equal(bs_proc_return_to(&p, &TOP, 1600), 0);                 /* a: 100 - 50 */
    bs_proc_flush(&p, 2000);                                                 /* top: 400, free */
    uint32_t top = child(&p, 0, &TOP), a = child(&p, top, &A);
    assert_int_equal(p.tree.nodes[0].self_ns, 900);
    assert_int_equal(p.tree.nodes[top].self_ns, 400 + 400);
    assert_int_equal(p.tree.nodes[a].self_ns, 50);
    assert_int_equal(p.comp.subtracted_ns, 250);
    assert_int_equal(p.comp.shift_ns, 250);
    assert_int_equal(p.comp.events[BS_EVENT_CALL], 2);
    assert_int_equal(p.comp.events[BS_EVENT_RETURN], 1);
    assert_int_equal(bs_proc_clock(&p), 2000 - 250);
    assert_int_equal(tu_total_self(&p) + p.comp.subtracted_ns, 2000);
    bs_proc_free(&p);
}

static void test_short_interval_owes_never_below_zero(void **state)
{
    (void)state;
    bs_proc p;
    new_proc(&p, 0, &COSTS);
    assert_int_equal(bs_proc_call(&p, &TOP, BS_CALLER_ROOT, NULL, 1000), 0);
    assert_int_equal(bs_proc_call(&p, &A, BS_CALLER_FRAME, &TOP, 2000), 0);
    assert_int_equal(bs_proc_return_to(&p, &TOP, 2020), 0); /* a: 20 < 50: 0, owes 30 */
    uint32_t top = child(&p, 0, &TOP), a = child(&p, top, &A);
    assert_int_equal(p.tree.nodes[a].self_ns, 0);
    assert_int_equal(p.tree.nodes[a].owed_ns, 30);
    assert_int_equal(p.comp.subtracted_ns, 100 + 100 + 20);
    assert_int_equal(bs_proc_call(&p, &A, BS_CALLER_FRAME, &TOP, 3000), 0);
    assert_int_equal(bs_proc_return_to(&p, &TOP, 4000), 0); /* a: 1000 - 50 - 30 */
    assert_int_equal(p.tree.nodes[a].self_ns, 920);
    assert_int_equal(p.tree.nodes[a].owed_ns, 0);
    bs_proc_flush(&p, 5000);
    assert_int_equal(tu_total_self(&p) + p.comp.subtracted_ns, 5000);
    /* The clock never ran backwards and never passed raw time. */
    assert_true(bs_proc_clock(&p) <= 5000);
    bs_proc_free(&p);
}

static void test_load_factor_scales_costs(void **state)
{
    (void)state;
    bs_proc p;
    new_proc(&p, 0, &COSTS);
    p.comp.scale_milli = 3000;
    assert_int_equal(bs_proc_call(&p, &TOP, BS_CALLER_ROOT, NULL, 1000), 0); /* root: 1000 - 300 */
    assert_int_equal(p.tree.nodes[0].self_ns, 700);
    assert_int_equal(p.comp.base_ns, 100);
    assert_int_equal(p.comp.scaled_ns, 300);
    bs_compensation c = {.state = BS_COMP_APPLIED, .ns = {100, 50, 200, 0}};
    bs_compensation_add(&c, &p.comp);
    char text[256];
    bs_compensation_text(&c, text, sizeof text);
    assert_non_null(strstr(text, "x3.00 for OS load"));
    bs_proc_free(&p);
}

static void test_raw_is_untouched(void **state)
{
    (void)state;
    bs_proc p;
    new_proc(&p, 0, NULL);
    assert_int_equal(bs_proc_call(&p, &TOP, BS_CALLER_ROOT, NULL, 1000), 0);
    assert_int_equal(bs_proc_call(&p, &A, BS_CALLER_FRAME, &TOP, 1010), 0);
    assert_int_equal(bs_proc_return_to(&p, &TOP, 1015), 0);
    bs_proc_flush(&p, 2000);
    assert_int_equal(tu_total_self(&p), 2000);
    assert_int_equal(p.comp.subtracted_ns, 0);
    assert_int_equal(p.comp.events[BS_EVENT_CALL], 0);
    bs_proc_free(&p);
}

/* A call whose caller is below the top frame replaces it (a tail call) and
 * costs a tail call's, as does a call returning to the root made from a
 * frame; a body call a call's; a tail-call cost of 0 (costs
 * from before tail calls were told apart) means a call's. */
static void test_tail_call_cost(void **state)
{
    (void)state;
    static const bs_comp_costs with_tail = {{100, 50, 200, 0, 300}};
    uint64_t expected_top[] = {1000 - 300, 1000 - 100};
    const bs_comp_costs *costs[] = {&with_tail, &COSTS};
    for (int i = 0; i < 2; i++) {
        bs_proc p;
        new_proc(&p, 0, costs[i]);
        assert_int_equal(bs_proc_call(&p, &TOP, BS_CALLER_ROOT, NULL, 1000), 0);   /* root: 1000 - 100 */
        assert_int_equal(bs_proc_call(&p, &A, BS_CALLER_FRAME, &TOP, 3000), 0);   /* body: top 2000 - 100 */
        assert_int_equal(bs_proc_call(&p, &B, BS_CALLER_FRAME, &TOP, 4000), 0);   /* a tail-calls b: a 1000 - tail */
        bs_proc_flush(&p, 5000);
        uint32_t top = child(&p, 0, &TOP), a = child(&p, top, &A), b = child(&p, top, &B);
        assert_int_equal(p.tree.nodes[top].self_ns, 1900);
        assert_int_equal(p.tree.nodes[a].self_ns, expected_top[i]);
        assert_int_equal(p.tree.nodes[b].self_ns, 1000);
        assert_int_equal(p.comp.events[BS_EVENT_CALL], 2);
        assert_int_equal(p.comp.events[BS_EVENT_TAIL_CALL], 1);
        bs_proc_free(&p);
    }
    /* A loop called from the root (its caller untraced): its first call is
     * a body call, every call after it a tail call. */
    bs_proc p;
    new_proc(&p, 0, &with_tail);
    for (uint64_t i = 0; i < 4; i++)
        assert_int_equal(bs_proc_call(&p, &TOP, BS_CALLER_ROOT, NULL, 1000 * (i + 1)), 0);
    bs_proc_flush(&p, 5000);
    assert_int_equal(p.tree.nodes[child(&p, 0, &TOP)].self_ns, 4 * 1000 - 3 * 300);
    assert_int_equal(p.comp.events[BS_EVENT_CALL], 1);
    assert_int_equal(p.comp.events[BS_EVENT_TAIL_CALL], 3);
    bs_proc_free(&p);
    bs_compensation c = {.state = BS_COMP_APPLIED, .ns = {100, 50, 200, 0, 300}};
    char text[BS_COMPENSATION_TEXT_CAP];
    bs_compensation_text(&c, text, sizeof text);
    assert_non_null(strstr(text, ": 100 ns/call, 300 ns/tail call, 50 ns/return, 200 ns/reschedule"));
}

/* A reschedule's two events cost the scheduled-out interval, never the
 * running frame: `out' runs its callback after the process stopped, `in'
 * before it runs again. A scheduled-out interval shorter than both owes the
 * rest on its own leaf (never paid by the frame). */
static void test_reschedule_paid_by_scheduled_out_time(void **state)
{
    (void)state;
    bs_proc p;
    new_proc(&p, 0, &COSTS);
    const bs_key sleep = bs_key_pseudo(BS_PSEUDO_SLEEP);
    assert_int_equal(bs_proc_call(&p, &TOP, BS_CALLER_ROOT, NULL, 1000), 0); /* root: 1000 - 100 */
    assert_int_equal(bs_proc_sched_out(&p, 3000), 0);                        /* top: 2000, whole */
    assert_int_equal(bs_proc_sched_in(&p, 4000), 0);                         /* sleep: 1000 - 2 x 200 */
    assert_int_equal(bs_proc_sched_out(&p, 5000), 0);                        /* top: 1000, whole */
    assert_int_equal(bs_proc_sched_in(&p, 5300), 0);                         /* sleep: 300 < 400: 0, owes 100 */
    bs_proc_flush(&p, 6000);                                                 /* top: 700 */
    uint32_t top = child(&p, 0, &TOP), zz = child(&p, top, &sleep);
    assert_int_equal(p.tree.nodes[top].self_ns, 2000 + 1000 + 700);
    assert_int_equal(p.tree.nodes[zz].self_ns, 600);
    assert_int_equal(p.tree.nodes[zz].owed_ns, 100);
    assert_int_equal(p.comp.events[BS_EVENT_SCHED], 4);
    assert_int_equal(p.comp.subtracted_ns, 100 + 400 + 300);
    assert_int_equal(tu_total_self(&p) + p.comp.subtracted_ns, 6000);
    bs_proc_free(&p);
}

/* The callbacks' own time, measured, is charged to nothing and moves the
 * compensated clock; raw recordings ignore it. */
static void test_callback_time_left_out(void **state)
{
    (void)state;
    bs_proc p, raw;
    new_proc(&p, 0, &COSTS);
    new_proc(&raw, 0, NULL);
    bs_proc *both[] = {&p, &raw};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(bs_proc_call(both[i], &TOP, BS_CALLER_ROOT, NULL, 1000), 0);
        bs_proc_skip_callback(both[i], 1000, 1300);                              /* [1000, 1300): no one */
        assert_int_equal(bs_proc_call(both[i], &A, BS_CALLER_FRAME, &TOP, 2000), 0); /* top: 700 - 100 */
        bs_proc_skip_callback(both[i], 1999, 2100);                              /* not this event's: ignored */
        bs_proc_flush(both[i], 2500);                                            /* a: 500 */
    }
    uint32_t top = child(&p, 0, &TOP), a = child(&p, top, &A);
    assert_int_equal(p.tree.nodes[top].self_ns, 600);
    assert_int_equal(p.tree.nodes[a].self_ns, 500);
    assert_int_equal(p.comp.callback_ns, 300);
    assert_int_equal(bs_proc_clock(&p), 2500 - 300 - 200);
    assert_int_equal(tu_total_self(&p) + p.comp.subtracted_ns + p.comp.callback_ns, 2500);
    assert_int_equal(tu_total_self(&raw), 2500);
    assert_int_equal(raw.comp.callback_ns, 0);
    bs_proc_free(&p);
    bs_proc_free(&raw);
}

/* Spans of one tree: ends after starts, within [lo, hi], and nested (a span
 * that starts inside another ends inside it). */
static void assert_spans_consistent(const bs_ptree *t, uint64_t lo, uint64_t hi)
{
    uint32_t stack[256];
    uint32_t depth = 0;
    for (uint32_t i = 0; i < t->n_spans; i++) {
        const bs_pspan *s = &t->spans[i];
        assert_true(s->start_ns <= s->end_ns);
        assert_true(s->start_ns >= lo && s->end_ns <= hi);
        if (i)
            assert_true(t->spans[i - 1].start_ns <= s->start_ns);
        while (depth && t->spans[stack[depth - 1]].end_ns <= s->start_ns)
            depth--;
        if (depth) {
            const bs_pspan *parent = &t->spans[stack[depth - 1]];
            assert_true(s->end_ns <= parent->end_ns);
        }
        if (depth < 256)
            stack[depth++] = i;
    }
}

static void test_random_streams_timeline_consistent(void **state)
{
    (void)state;
    enum { N = 20000 };
    tu_event *ev = calloc(N, sizeof *ev);
    assert_non_null(ev);
    /* Costs above many intervals (up to 5 µs apart): clamping and owing
     * happen all the time. */
    static const bs_comp_costs big = {{3000, 2500, 4000, 1000}};
    for (uint64_t seed = 1; seed <= 8; seed++) {
        tu_random_events(ev, N, seed, 12);
        bs_span_quota q_raw, q_comp;
        bs_span_quota_init(&q_raw, 1u << 20);
        bs_span_quota_init(&q_comp, 1u << 20);
        bs_proc raw, comp;
        new_proc(&raw, 0, NULL);
        new_proc(&comp, 0, &big);
        bs_proc_enable_timeline(&raw, &q_raw);
        bs_proc_enable_timeline(&comp, &q_comp);
        for (size_t i = 0; i < N; i++) {
            assert_int_equal(tu_feed(&raw, &ev[i]), 0);
            assert_int_equal(tu_feed(&comp, &ev[i]), 0);
        }
        uint64_t end = ev[N - 1].t + 10;
        bs_proc_flush(&raw, end);
        bs_proc_flush(&comp, end);
        /* Exact bookkeeping: what was subtracted is what is missing. */
        assert_int_equal(tu_total_self(&comp) + comp.comp.subtracted_ns, tu_total_self(&raw));
        assert_true(tu_total_self(&comp) < tu_total_self(&raw));
        /* Per node: never more than raw (never below zero follows). */
        assert_int_equal(comp.tree.n_nodes, raw.tree.n_nodes);
        for (uint32_t i = 0; i < comp.tree.n_nodes; i++)
            assert_true(comp.tree.nodes[i].self_ns <= raw.tree.nodes[i].self_ns);
        bs_profile prof;
        assert_int_equal(bs_profile_init(&prof), 0);
        prof.compensation.state = BS_COMP_APPLIED;
        assert_int_equal(bs_profile_add_proc(&prof, &comp, "<0.1.0>", tu_namer, NULL), 0);
        bs_profile_compute_totals(&prof);
        assert_true(prof.trees[0].n_spans > 0);
        assert_spans_consistent(&prof.trees[0], 0, bs_proc_clock(&comp));
        assert_int_equal(prof.compensation.subtracted_ns, comp.comp.subtracted_ns);
        bs_profile_free(&prof);
        bs_proc_free(&raw);
        bs_proc_free(&comp);
    }
    free(ev);
}

/* Inclusive time of node n: its self time and its descendants'. */
static uint64_t inclusive(const bs_proc *p, uint32_t n)
{
    uint64_t sum = 0;
    for (uint32_t i = 0; i < p->tree.n_nodes; i++)
        for (uint32_t k = i; k != BS_NO_NODE; k = k ? p->tree.nodes[k].parent : BS_NO_NODE)
            if (k == n) {
                sum += p->tree.nodes[i].self_ns;
                break;
            }
    return sum;
}

/* The two-function case of issue 14 as the tracer sees it: 20,000 calls of
 * a 1 µs function against one 25 ms BIF, each event costing 500 ns (half
 * before its clock reading, half after). Untraced the ratio is 0.84; raw it
 * is 2.08; compensated it must come within 20% of the truth. */
static void two_function_ratio(const bs_comp_costs *costs, double *ratio)
{
    const uint64_t half = 250, work = 1000, loop_work = 50;
    bs_proc p;
    new_proc(&p, 0, costs);
    uint64_t t = 0;
    assert_int_equal(bs_proc_call(&p, &TOP, BS_CALLER_ROOT, NULL, t), 0);
    assert_int_equal(bs_proc_call(&p, &A, BS_CALLER_FRAME, &TOP, t += 2 * half), 0);
    assert_int_equal(bs_proc_call(&p, &LOOP, BS_CALLER_FRAME, &A, t += 2 * half), 0);
    for (int i = 0; i < 20000; i++) {
        assert_int_equal(bs_proc_call(&p, &SMALL, BS_CALLER_FRAME, &LOOP, t += half + loop_work / 2 + half), 0);
        assert_int_equal(bs_proc_return_to(&p, &LOOP, t += half + work + half), 0);
        assert_int_equal(bs_proc_call(&p, &LOOP, BS_CALLER_FRAME, &A, t += half + loop_work / 2 + half), 0);
    }
    assert_int_equal(bs_proc_return_to(&p, &A, t += 2 * half), 0);
    assert_int_equal(bs_proc_return_to(&p, &TOP, t += 2 * half), 0);
    assert_int_equal(bs_proc_call(&p, &B, BS_CALLER_FRAME, &TOP, t += 2 * half), 0);
    assert_int_equal(bs_proc_call(&p, &BIF, BS_CALLER_FRAME, &B, t += 2 * half), 0);
    assert_int_equal(bs_proc_return_to(&p, &B, t += half + 25000000 + half), 0);
    assert_int_equal(bs_proc_return_to(&p, &TOP, t += 2 * half), 0);
    bs_proc_flush(&p, t);
    uint32_t top = child(&p, 0, &TOP);
    *ratio = (double)inclusive(&p, child(&p, top, &A)) / (double)inclusive(&p, child(&p, top, &B));
    bs_proc_free(&p);
}

static void test_two_function_ratio_toward_truth(void **state)
{
    (void)state;
    static const bs_comp_costs costs = {{500, 500, 500, 0}};
    const double truth = 20000.0 * (1000 + 50) / 25000000.0;
    double raw, comp;
    two_function_ratio(NULL, &raw);
    two_function_ratio(&costs, &comp);
    assert_true(raw > 2.0 * truth);
    assert_true(comp < raw);
    assert_true(comp >= 0.8 * truth && comp <= 1.2 * truth);
}

static void test_text(void **state)
{
    (void)state;
    char text[256];
    bs_compensation c = {0};
    assert_int_equal(bs_compensation_text(&c, text, sizeof text), 0);
    assert_string_equal(text, "");
    c.state = BS_COMP_RAW;
    bs_compensation_text(&c, text, sizeof text);
    assert_string_equal(text, "raw traced times: tracer overhead not subtracted");
    c = (bs_compensation){.state = BS_COMP_APPLIED, .ns = {420, 380, 700, 0}, .events = {10, 5, 1, 0},
                          .subtracted_ns = 12345678, .base_ns = 6000, .scaled_ns = 6000};
    bs_compensation_text(&c, text, sizeof text);
    assert_string_equal(text, "traced times compensated for tracer overhead: 420 ns/call, 380 ns/return, "
                              "700 ns/reschedule, and the callbacks' own time as measured; 12.346 ms subtracted over 16 events");
    /* A small buffer is cut, never overrun. */
    char small[16];
    assert_true(bs_compensation_text(&c, small, sizeof small) < sizeof small);
}

static void test_bspy_keeps_compensation(void **state)
{
    (void)state;
    bs_proc p;
    new_proc(&p, 0, &COSTS);
    assert_int_equal(bs_proc_call(&p, &TOP, BS_CALLER_ROOT, NULL, 1000), 0);
    bs_proc_flush(&p, 2000);
    bs_profile prof;
    assert_int_equal(bs_profile_init(&prof), 0);
    prof.compensation.state = BS_COMP_APPLIED;
    memcpy(prof.compensation.ns, COSTS.ns, sizeof COSTS.ns);
    assert_int_equal(bs_profile_add_proc(&prof, &p, "<0.1.0>", tu_namer, NULL), 0);
    bs_profile_compute_totals(&prof);
    char *data = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&data, &len);
    assert_non_null(out);
    assert_int_equal(bs_write_bspy(out, &prof, NULL), 0);
    fclose(out);
    FILE *in = fmemopen(data, len, "rb");
    assert_non_null(in);
    bs_profile back;
    bs_read_error err;
    assert_int_equal(bs_read_bspy(in, "x.bspy", &back, &err), 0);
    fclose(in);
    assert_int_equal(back.compensation.state, BS_COMP_APPLIED);
    assert_memory_equal(back.compensation.ns, COSTS.ns, sizeof COSTS.ns);
    assert_int_equal(back.compensation.subtracted_ns, 100);
    assert_int_equal(back.compensation.events[BS_EVENT_CALL], 1);
    char a[256], b[256];
    bs_compensation_text(&prof.compensation, a, sizeof a);
    bs_compensation_text(&back.compensation, b, sizeof b);
    assert_string_equal(a, b);
    bs_profile_free(&back);
    bs_profile_free(&prof);
    bs_proc_free(&p);
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_bookkeeping),
        cmocka_unit_test(test_short_interval_owes_never_below_zero),
        cmocka_unit_test(test_load_factor_scales_costs),
        cmocka_unit_test(test_raw_is_untouched),
        cmocka_unit_test(test_tail_call_cost),
        cmocka_unit_test(test_reschedule_paid_by_scheduled_out_time),
        cmocka_unit_test(test_callback_time_left_out),
        cmocka_unit_test(test_random_streams_timeline_consistent),
        cmocka_unit_test(test_two_function_ratio_toward_truth),
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_bspy_keeps_compensation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
