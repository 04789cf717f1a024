/* test_span_frames.c — telemetry span frames in rebuilt stacks (span_frames.h):
 * nested spans as emitted by telemetry:span/3 (start and stop inside the
 * handler, under telemetry:execute/3 or the do_execute/4 it tail-calls)
 * with the functions they enclose above them, self times and the timeline; spans surviving pops to their anchor;
 * a span whose anchor is popped (lost, then its stop unmatched); a process
 * exiting inside a span; stops out of order; the depth cap; spans-only
 * recording (no call events, root time not charged); notes (metadata,
 * exceptions) following their span into the profile. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_util.h"

/* Stand-ins: m:top/0 the user's code, m:run/2 telemetry:span/3, m:x/0
 * telemetry:execute/3, m:leaf/0 the handler, m:a/0 and m:b/0 span bodies. */
static const bs_key USER = KEY(M_M, F_TOP, 0), SPAN3 = KEY(M_M, F_RUN, 2), EXEC = KEY(M_M, F_X, 0),
                    HANDLER = KEY(M_M, F_LEAF, 0), BODY = KEY(M_M, F_A, 0), INNER_BODY = KEY(M_M, F_B, 0);
static const bs_key S1 = {BS_SPAN_MODULE, 1, 0}, S2 = {BS_SPAN_MODULE, 2, 0};
/* telemetry:execute/3 and do_execute/4 (which execute/3 tail-calls) */
static const bs_key ANCHORS[2] = {KEY(M_M, F_X, 0), KEY(M_M, F_MID, 0)};

#define CALL(p, callee, caller, t) assert_int_equal(bs_proc_call((p), &(callee), BS_CALLER_FRAME, &(caller), (t)), 0)
#define CALL_ROOT(p, callee, t) assert_int_equal(bs_proc_call((p), &(callee), BS_CALLER_ROOT, NULL, (t)), 0)
#define RET(p, to, t) assert_int_equal(bs_proc_return_to((p), &(to), (t)), 0)
#define START(p, s, t) assert_int_equal(bs_proc_span_start((p), &(s), ANCHORS, 2, (t)), 0)
#define STOP(p, s, t) assert_int_equal(bs_proc_span_stop((p), &(s), (t)), 0)

static void assert_stack(const bs_proc *p, const char *expected)
{
    char *s = tu_current(p);
    assert_string_equal(s, expected);
    free(s);
}

/* The self time and calls of the node whose stack is `stack`. */
static void assert_node(const bs_proc *p, const char *stack, uint64_t self, uint64_t calls)
{
    char *dump = tu_dump(p);
    char want[512];
    snprintf(want, sizeof want, "\n%s %llu %llu\n", stack, (unsigned long long)self, (unsigned long long)calls);
    if (!strstr(dump, want)) {
        print_error("no line '%s' in:\n%s", want + 1, dump);
        free(dump);
        fail();
    }
    free(dump);
}

/* The handler runs inside telemetry:execute/3 called by span/3; the event
 * pushes or pops the span, then the handler and execute return. */
static void emit(bs_proc *p, int start, const bs_key *span, uint64_t t)
{
    CALL(p, EXEC, SPAN3, t);
    CALL(p, HANDLER, EXEC, t + 1);
    if (start)
        START(p, *span, t + 2);
    else
        STOP(p, *span, t + 2);
    RET(p, EXEC, t + 3);
    RET(p, SPAN3, t + 4);
}

static void test_nested_spans_enclose_their_functions(void **state)
{
    (void)state;
    bs_proc p;
    assert_int_equal(bs_proc_init(&p, NULL, 0, 1, 0), 0);
    CALL_ROOT(&p, USER, 0);
    CALL(&p, SPAN3, USER, 10);
    CALL(&p, EXEC, SPAN3, 20);
    CALL(&p, HANDLER, EXEC, 30);
    START(&p, S1, 40);
    /* the span sits on span/3; the handler's frames are re-rooted above it */
    assert_stack(&p, "m:top/0;m:run/2;[span1];m:x/0;m:leaf/0");
    RET(&p, EXEC, 50);
    RET(&p, SPAN3, 60);
    assert_stack(&p, "m:top/0;m:run/2;[span1]");
    CALL(&p, BODY, SPAN3, 70); /* pop to span/3 keeps the open span */
    assert_stack(&p, "m:top/0;m:run/2;[span1];m:a/0");
    CALL(&p, SPAN3, BODY, 80);
    emit(&p, 1, &S2, 90);
    assert_stack(&p, "m:top/0;m:run/2;[span1];m:a/0;m:run/2;[span2]");
    CALL(&p, INNER_BODY, SPAN3, 100);
    assert_stack(&p, "m:top/0;m:run/2;[span1];m:a/0;m:run/2;[span2];m:b/0");
    RET(&p, SPAN3, 200);
    CALL(&p, EXEC, SPAN3, 210);
    CALL(&p, HANDLER, EXEC, 211);
    STOP(&p, S2, 212);
    assert_stack(&p, "m:top/0;m:run/2;[span1];m:a/0;m:run/2;m:x/0;m:leaf/0");
    RET(&p, EXEC, 213);
    RET(&p, SPAN3, 214);
    RET(&p, BODY, 220);
    assert_stack(&p, "m:top/0;m:run/2;[span1];m:a/0");
    RET(&p, SPAN3, 300);
    emit(&p, 0, &S1, 310);
    assert_stack(&p, "m:top/0;m:run/2");
    RET(&p, USER, 320);
    assert_node(&p, "m:top/0;m:run/2;[span1];m:a/0;m:run/2;[span2];m:b/0", 100, 1);
    assert_node(&p, "m:top/0;m:run/2;[span1];m:a/0", 10 + 80, 1);
    assert_node(&p, "m:top/0;m:run/2;[span1];m:a/0;m:run/2;[span2]", 10 + 1 + 5, 1);
    char *dump = tu_dump(&p);
    assert_null(strstr(dump, "m:top/0;m:run/2;[span2]")); /* only where it started */
    free(dump);
    assert_int_equal(p.span_counts.started, 2);
    assert_int_equal(p.span_counts.closed, 2);
    assert_int_equal(p.span_counts.lost + p.span_counts.unmatched + p.span_counts.refused, 0);
    bs_proc_free(&p);
}

/* telemetry:execute/3 tail-calls do_execute/4, which calls the handler:
 * execute/3 is gone from the stack; the span still sits on span/3. */
static void test_anchor_below_tail_called_do_execute(void **state)
{
    (void)state;
    bs_proc p;
    assert_int_equal(bs_proc_init(&p, NULL, 0, 1, 0), 0);
    CALL_ROOT(&p, USER, 0);
    CALL(&p, SPAN3, USER, 10);
    CALL(&p, EXEC, SPAN3, 20);
    CALL(&p, ANCHORS[1], SPAN3, 30); /* the tail call: its caller is span/3 */
    CALL(&p, HANDLER, ANCHORS[1], 40);
    START(&p, S1, 50);
    assert_stack(&p, "m:top/0;m:run/2;[span1];m:mid/0;m:leaf/0");
    RET(&p, SPAN3, 60);
    CALL(&p, BODY, SPAN3, 70);
    assert_stack(&p, "m:top/0;m:run/2;[span1];m:a/0");
    bs_proc_free(&p);
}

static void test_return_below_anchor_loses_the_span(void **state)
{
    (void)state;
    bs_proc p;
    assert_int_equal(bs_proc_init(&p, NULL, 0, 1, 0), 0);
    CALL_ROOT(&p, USER, 0);
    CALL(&p, SPAN3, USER, 10);
    emit(&p, 1, &S1, 20);
    CALL(&p, BODY, SPAN3, 30);
    assert_stack(&p, "m:top/0;m:run/2;[span1];m:a/0");
    RET(&p, USER, 40); /* an exception unwound past span/3 without its stop */
    assert_stack(&p, "m:top/0");
    assert_int_equal(p.span_counts.lost, 1);
    assert_int_equal(bs_proc_open_spans(&p), 0);
    CALL(&p, SPAN3, USER, 50);
    CALL(&p, EXEC, SPAN3, 60);
    assert_int_equal(bs_proc_span_stop(&p, &S1, 70), 1);
    assert_int_equal(p.span_counts.unmatched, 1);
    assert_stack(&p, "m:top/0;m:run/2;m:x/0");
    bs_proc_free(&p);
}

static void test_tail_call_from_anchor_keeps_the_span(void **state)
{
    (void)state;
    bs_proc p;
    assert_int_equal(bs_proc_init(&p, NULL, 0, 1, 0), 0);
    CALL_ROOT(&p, USER, 0);
    CALL(&p, SPAN3, USER, 10);
    emit(&p, 1, &S1, 20);
    CALL(&p, BODY, SPAN3, 30);
    CALL(&p, INNER_BODY, SPAN3, 40); /* body tail-calls: its caller is span/3 */
    assert_stack(&p, "m:top/0;m:run/2;[span1];m:b/0");
    assert_int_equal(bs_proc_sched_out(&p, 50), 0);
    assert_int_equal(bs_proc_sched_in(&p, 60), 0);
    assert_node(&p, "m:top/0;m:run/2;[span1];m:b/0;SLEEP", 10, 1);
    assert_int_equal(bs_proc_return_to(&p, NULL, 70), 0); /* to untraced code */
    assert_int_equal(p.span_counts.lost, 1);
    assert_stack(&p, "");
    bs_proc_free(&p);
}

static void test_exit_inside_span_counts_died(void **state)
{
    (void)state;
    bs_proc p;
    assert_int_equal(bs_proc_init(&p, NULL, 0, 1, 0), 0);
    CALL_ROOT(&p, USER, 0);
    CALL(&p, SPAN3, USER, 10);
    emit(&p, 1, &S1, 20);
    emit(&p, 1, &S2, 30);
    bs_proc_exit(&p, 40);
    assert_int_equal(p.span_counts.died, 2);
    assert_int_equal(bs_proc_span_stop(&p, &S2, 50), 1);
    assert_int_equal(p.span_counts.unmatched, 1);
    bs_proc_free(&p);
}

/* Spans-only recording: no call events, time outside spans not charged. */
static void test_spans_only_with_timeline(void **state)
{
    (void)state;
    bs_proc p;
    bs_span_quota q;
    bs_span_quota_init(&q, 100);
    assert_int_equal(bs_proc_init(&p, NULL, 0, 0, 0), 0);
    p.skip_root = 1;
    bs_proc_enable_timeline(&p, &q);
    assert_int_equal(bs_proc_span_start(&p, &S1, ANCHORS, 2, 100), 0);
    assert_int_equal(bs_proc_span_start(&p, &S2, ANCHORS, 2, 150), 0);
    assert_stack(&p, "[span1];[span2]");
    assert_int_equal(bs_proc_span_stop(&p, &S2, 250), 0);
    assert_int_equal(bs_proc_span_start(&p, &S2, ANCHORS, 2, 300), 0);
    assert_int_equal(bs_proc_span_stop(&p, &S2, 320), 0);
    assert_int_equal(bs_proc_span_stop(&p, &S1, 400), 0);
    assert_int_equal(bs_proc_span_start(&p, &S1, NULL, 0, 1000), 0);
    bs_proc_flush(&p, 1100);
    assert_node(&p, "[span1]", 50 + 50 + 80 + 100, 2);
    assert_node(&p, "[span1];[span2]", 100 + 20, 2);
    assert_int_equal(p.tree.nodes[0].self_ns, 0);
    bs_profile prof;
    assert_int_equal(bs_profile_init(&prof), 0);
    assert_int_equal(bs_profile_add_proc(&prof, &p, "<0.80.0>", tu_namer, NULL), 0);
    const bs_ptree *t = &prof.trees[0];
    assert_int_equal(t->n_spans, 4);
    uint64_t want[4][2] = {{100, 400}, {150, 250}, {300, 320}, {1000, 1100}};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(t->spans[i].start_ns, want[i][0]);
        assert_int_equal(t->spans[i].end_ns, want[i][1]);
    }
    assert_string_equal(bs_frame_name(&prof.frames, t->nodes[t->spans[1].node].frame), "mod18446744073709551615:a/0");
    bs_profile_free(&prof);
    bs_proc_free(&p);
}

static void test_out_of_order_stop_and_same_key_nesting(void **state)
{
    (void)state;
    bs_proc p;
    assert_int_equal(bs_proc_init(&p, NULL, 0, 0, 0), 0);
    assert_int_equal(bs_proc_span_start(&p, &S1, NULL, 0, 1), 0);
    assert_int_equal(bs_proc_span_start(&p, &S1, NULL, 0, 2), 0);
    assert_int_equal(bs_proc_span_start(&p, &S2, NULL, 0, 3), 0);
    assert_stack(&p, "[span1];[span1];[span2]");
    assert_int_equal(bs_proc_span_stop(&p, &S1, 4), 0); /* the inner S1; S2 inside it is lost */
    assert_stack(&p, "[span1]");
    assert_int_equal(p.span_counts.lost, 1);
    assert_int_equal(bs_proc_span_stop(&p, &S2, 5), 1);
    assert_int_equal(bs_proc_span_stop(&p, &S1, 6), 0);
    assert_stack(&p, "");
    assert_int_equal(p.span_counts.unmatched, 1);
    assert_int_equal(p.span_counts.closed, 2);
    bs_proc_free(&p);
}

static void test_depth_cap_refuses(void **state)
{
    (void)state;
    bs_proc p;
    assert_int_equal(bs_proc_init(&p, NULL, 0, 0, 0), 0);
    for (uint32_t i = 0; i < BS_MAX_OPEN_SPANS; i++)
        assert_int_equal(bs_proc_span_start(&p, &S1, NULL, 0, i), 0);
    assert_int_equal(bs_proc_span_start(&p, &S2, NULL, 0, 100), -1);
    assert_int_equal(p.span_counts.refused, 1);
    assert_int_equal(bs_proc_depth(&p), BS_MAX_OPEN_SPANS);
    assert_int_equal(bs_proc_span_stop(&p, &S2, 101), 1);
    bs_proc_free(&p);
}

/* A budget too small for the span state refuses the span, nothing else. */
static void test_budget_refusal(void **state)
{
    (void)state;
    bs_budget b;
    bs_proc p;
    bs_budget_init(&b, 0);
    assert_int_equal(bs_proc_init(&p, &b, 0, 0, 0), 0);
    b.cap = atomic_load(&b.used) + 64;
    CALL_ROOT(&p, USER, 0);
    assert_int_equal(bs_proc_span_start(&p, &S1, ANCHORS, 2, 10), -1);
    assert_int_equal(p.span_counts.refused, 1);
    assert_stack(&p, "m:top/0");
    bs_proc_free(&p);
    assert_int_equal(atomic_load(&b.used), 0);
}

/* Notes (metadata, exception) follow their span into the profile, in the
 * order attached, cut to BS_SPAN_NOTE_MAX - 1 bytes with "... (N more
 * characters)", and survive a clone. */
static void test_notes_follow_their_span(void **state)
{
    (void)state;
    bs_proc p;
    bs_span_quota q;
    bs_span_quota_init(&q, 100);
    assert_int_equal(bs_proc_init(&p, NULL, 0, 0, 0), 0);
    p.skip_root = 1;
    bs_proc_enable_timeline(&p, &q);
    assert_int_equal(bs_spans_note(&p, &S1, "x", 1), -1); /* no open span */
    assert_int_equal(bs_proc_span_start(&p, &S1, NULL, 0, 100), 0);
    assert_int_equal(bs_spans_note(&p, &S1, "table=users", 11), 0);
    assert_int_equal(bs_proc_span_start(&p, &S2, NULL, 0, 150), 0);
    char big[2000];
    memset(big, 'y', sizeof big);
    assert_int_equal(bs_spans_note(&p, &S2, big, sizeof big), 0);
    assert_int_equal(bs_proc_span_stop(&p, &S2, 200), 0);
    assert_int_equal(bs_spans_note(&p, &S1, "exception: kind=error reason=boom", 33), 0);
    assert_int_equal(bs_proc_span_stop(&p, &S1, 300), 0);
    bs_proc_flush(&p, 400);
    bs_profile prof, copy;
    assert_int_equal(bs_profile_init(&prof), 0);
    assert_int_equal(bs_profile_add_proc(&prof, &p, "<0.80.0>", tu_namer, NULL), 0);
    assert_int_equal(bs_profile_clone(&prof, &copy), 0);
    const bs_ptree *trees[2] = {&prof.trees[0], &copy.trees[0]};
    for (int k = 0; k < 2; k++) {
        const bs_ptree *t = trees[k];
        assert_int_equal(t->n_notes, 3);
        const bs_pnote *n;
        assert_int_equal(bs_ptree_notes(t, t->spans[0].node, t->spans[0].start_ns, &n), 2);
        assert_string_equal(n[0].text, "table=users");
        assert_string_equal(n[1].text, "exception: kind=error reason=boom");
        assert_int_equal(bs_ptree_notes(t, t->spans[1].node, t->spans[1].start_ns, &n), 1);
        /* cut, and says so: 464 'y', then how many more */
        assert_true(strlen(n[0].text) < BS_SPAN_NOTE_MAX);
        assert_string_equal(n[0].text + strspn(n[0].text, "y"), " ... (1536 more characters)");
        assert_int_equal(bs_ptree_notes(t, t->spans[1].node, t->spans[1].start_ns + 1, &n), 0);
        assert_null(n);
    }
    bs_profile_free(&copy);
    bs_profile_free(&prof);
    bs_proc_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nested_spans_enclose_their_functions),
        cmocka_unit_test(test_anchor_below_tail_called_do_execute),
        cmocka_unit_test(test_return_below_anchor_loses_the_span),
        cmocka_unit_test(test_tail_call_from_anchor_keeps_the_span),
        cmocka_unit_test(test_exit_inside_span_counts_died),
        cmocka_unit_test(test_spans_only_with_timeline),
        cmocka_unit_test(test_out_of_order_stop_and_same_key_nesting),
        cmocka_unit_test(test_depth_cap_refuses),
        cmocka_unit_test(test_budget_refusal),
        cmocka_unit_test(test_notes_follow_their_span),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
