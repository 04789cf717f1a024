/* test_sizes.c — outputs kept to a size their viewers load: the timeline
 * cap (span_cap.c: the shallowest spans kept, whole and nested, totals
 * untouched), its place in bs_write_stream (what the file and the report
 * say), the projected sizes (output_size.c) against the bytes really
 * written, and the warning text with its test-only threshold. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "engine/span_cap.h"
#include "writers/output_size.h"
#include "writers/writers.h"
#include "test_util.h"

#define OK(x) assert_int_equal((x), 0)

static const bs_key KEYS[] = {KEY(M_M, F_TOP, 0), KEY(M_M, F_A, 1), KEY(M_M, F_B, 1), KEY(M_M, F_C, 1),
                              KEY(M_M, F_LEAF, 0)};

/* top calls a `fan` times, each a calls b `fan` times, ... down to leaf:
 * a full tree of calls, 10 µs of own work before and after each call. */
static uint64_t call_down(bs_proc *p, unsigned level, unsigned fan, uint64_t t)
{
    if (level + 1 >= sizeof KEYS / sizeof KEYS[0])
        return t + 10000;
    for (unsigned i = 0; i < fan; i++) {
        t += 10000;
        OK(bs_proc_call(p, &KEYS[level + 1], BS_CALLER_FRAME, &KEYS[level], t));
        t = call_down(p, level + 1, fan, t);
        OK(bs_proc_return_to(p, &KEYS[level], t));
    }
    return t + 10000;
}

static void make_profile(bs_profile *prof, unsigned fan)
{
    static bs_span_quota quota;
    bs_span_quota_init(&quota, 1u << 24);
    OK(bs_profile_init(prof));
    for (int proc = 0; proc < 2; proc++) {
        bs_proc p;
        OK(bs_proc_init(&p, NULL, 0, 1, 1));
        bs_proc_enable_timeline(&p, &quota);
        OK(bs_proc_call(&p, &KEYS[0], BS_CALLER_ROOT, NULL, 100));
        uint64_t t = call_down(&p, 0, fan, 100);
        OK(bs_proc_return_to(&p, NULL, t));
        bs_proc_flush(&p, t);
        OK(bs_profile_add_proc(prof, &p, proc ? "<0.81.0>" : "<0.80.0>", tu_namer, NULL));
        bs_proc_free(&p);
    }
    bs_profile_compute_totals(prof);
}

static uint32_t depth_of(const bs_ptree *t, uint32_t node)
{
    uint32_t d = 0;
    for (; node != 0; node = t->nodes[node].parent)
        d++;
    return d;
}

/* Every kept span is one of the original spans, unchanged, and the span of
 * its parent node around it was kept too. */
static void assert_capped_well(const bs_profile *before, const bs_profile *after, uint64_t cap)
{
    assert_true(bs_profile_span_count(after) <= cap);
    for (uint32_t i = 0; i < after->n_trees; i++) {
        const bs_ptree *t = &after->trees[i], *o = &before->trees[i];
        assert_int_equal(t->n_nodes, o->n_nodes);
        for (uint32_t k = 0; k < t->n_nodes; k++) {
            assert_int_equal(t->nodes[k].self_ns, o->nodes[k].self_ns);
            assert_int_equal(t->nodes[k].total_ns, o->nodes[k].total_ns);
        }
        uint32_t deepest = 0;
        for (uint32_t s = 0; s < t->n_spans; s++) {
            const bs_pspan *sp = &t->spans[s];
            int found = 0;
            for (uint32_t k = 0; k < o->n_spans && !found; k++)
                found = o->spans[k].node == sp->node && o->spans[k].start_ns == sp->start_ns &&
                        o->spans[k].end_ns == sp->end_ns;
            assert_true(found);
            uint32_t parent = t->nodes[sp->node].parent, d = depth_of(t, sp->node);
            if (d > deepest)
                deepest = d;
            if (parent == 0)
                continue;
            int around = 0;
            for (uint32_t k = 0; k < t->n_spans && !around; k++)
                around = t->spans[k].node == parent && t->spans[k].start_ns <= sp->start_ns &&
                         t->spans[k].end_ns >= sp->end_ns;
            assert_true(around);
        }
        /* Shallowest first: no span deeper than the deepest kept one + 0
         * is missing while a deeper one is kept. */
        for (uint32_t k = 0; k < o->n_spans; k++)
            if (depth_of(o, o->spans[k].node) + 1 < deepest) {
                int kept = 0;
                for (uint32_t s = 0; s < t->n_spans && !kept; s++)
                    kept = t->spans[s].start_ns == o->spans[k].start_ns && t->spans[s].node == o->spans[k].node;
                assert_true(kept);
            }
    }
}

static void test_cap_keeps_shallowest_nested(void **state)
{
    (void)state;
    const uint64_t caps[] = {1, 2, 7, 12, 50, 99, 200};
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
        bs_profile before, after;
        make_profile(&before, 3); /* per process: 3 + 9 + 27 + 81 = 120 spans, + top */
        OK(bs_profile_clone(&before, &after));
        uint64_t total = bs_profile_span_count(&before), left_out = 0;
        assert_int_equal(total, 2 * 121);
        OK(bs_profile_cap_spans(&after, caps[c], &left_out));
        assert_int_equal(bs_profile_span_count(&after), caps[c]);
        assert_int_equal(left_out, total - caps[c]);
        assert_int_equal(after.timeline_truncated, 1);
        assert_capped_well(&before, &after, caps[c]);
        bs_profile_free(&before);
        bs_profile_free(&after);
    }
}

static void test_cap_above_count_changes_nothing(void **state)
{
    (void)state;
    bs_profile p;
    make_profile(&p, 2);
    uint64_t total = bs_profile_span_count(&p), left_out = 99;
    OK(bs_profile_cap_spans(&p, total, &left_out));
    assert_int_equal(left_out, 0);
    assert_int_equal(bs_profile_span_count(&p), total);
    assert_int_equal(p.timeline_truncated, 0);
    bs_profile_free(&p);
}

static bs_write_report last;
static int reports;

static void keep_report(void *ctx, const bs_write_report *r)
{
    (void)ctx;
    last = *r;
    reports++;
}

static char *write_to_memory(bs_format f, const bs_profile *p, const bs_render_opts *o, size_t *n)
{
    char *text = NULL;
    FILE *out = open_memstream(&text, n);
    assert_non_null(out);
    OK(bs_write_stream(out, f, p, o));
    assert_int_equal(fclose(out), 0);
    return text;
}

static void test_write_stream_caps_and_reports(void **state)
{
    (void)state;
    bs_profile p;
    make_profile(&p, 4); /* 2 * (4 + 16 + 64 + 256 + 1) = 682 spans */
    uint64_t total = bs_profile_span_count(&p);
    bs_render_opts o = {.timeline_cap = 50, .on_report = keep_report};
    size_t n;
    reports = 0;
    char *chrome = write_to_memory(BS_FORMAT_CHROME, &p, &o, &n);
    assert_int_equal(reports, 1);
    assert_int_equal(last.format, BS_FORMAT_CHROME);
    assert_int_equal(last.spans, 50);
    assert_int_equal(last.spans_capped, total - 50);
    assert_int_equal(last.timeline_cap, 50);
    char expect[96];
    snprintf(expect, sizeof expect, "\"timeline_cap\":50,\"calls_left_out_by_cap\":%llu", (unsigned long long)(total - 50));
    assert_non_null(strstr(chrome, expect));
    free(chrome);
    char *ss = write_to_memory(BS_FORMAT_SPEEDSCOPE, &p, &o, &n);
    assert_non_null(strstr(ss, "(timeline capped at 50 calls in this file"));
    free(ss);
    /* Not time-ordered: no cap. */
    char *folded = write_to_memory(BS_FORMAT_FOLDED, &p, &o, &n);
    assert_int_equal(last.spans_capped, 0);
    assert_int_equal(last.timeline_cap, 0);
    free(folded);
    /* No cap asked: every span, nothing said. */
    o.timeline_cap = UINT64_MAX;
    char *all = write_to_memory(BS_FORMAT_CHROME, &p, &o, &n);
    assert_int_equal(last.spans, total);
    assert_int_equal(last.spans_capped, 0);
    assert_null(strstr(all, "timeline_cap"));
    free(all);
    /* The input profile is untouched. */
    assert_int_equal(bs_profile_span_count(&p), total);
    bs_profile_free(&p);
}

static void test_default_caps(void **state)
{
    (void)state;
    bs_render_opts o = {0};
    assert_int_equal(bs_timeline_cap_for(BS_FORMAT_SPEEDSCOPE, &o), BS_TIMELINE_CAP_SPEEDSCOPE);
    assert_int_equal(bs_timeline_cap_for(BS_FORMAT_CHROME, &o), BS_TIMELINE_CAP_CHROME);
    assert_int_equal(bs_timeline_cap_for(BS_FORMAT_FOLDED, &o), 0);
    assert_int_equal(bs_timeline_cap_for(BS_FORMAT_BSPY, &o), 0);
    o.timeline_cap = UINT64_MAX;
    assert_int_equal(bs_timeline_cap_for(BS_FORMAT_CHROME, &o), 0);
}

/* The projection is within a factor of 1.5 of what is written. */
static void test_projection_near_real_size(void **state)
{
    (void)state;
    bs_profile p;
    make_profile(&p, 5);
    const bs_format formats[] = {BS_FORMAT_FOLDED, BS_FORMAT_PERF, BS_FORMAT_SPEEDSCOPE, BS_FORMAT_CHROME};
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        bs_render_opts o = {.on_report = keep_report};
        size_t n;
        char *text = write_to_memory(formats[i], &p, &o, &n);
        free(text);
        double ratio = (double)last.projected_bytes / (double)n;
        print_message("%s: projected %llu, written %zu\n", bs_format_name(formats[i]),
                      (unsigned long long)last.projected_bytes, n);
        assert_true(ratio > 0.66 && ratio < 1.5);
    }
    bs_profile_free(&p);
}

/* f calling itself `depth` deep, 10 µs of own work before each call and a
 * leaf call at every level: one stack per level, each longer than the one
 * above, and past the writers' 1024 frames. */
static void make_deep_profile(bs_profile *prof, unsigned depth)
{
    OK(bs_profile_init(prof));
    bs_proc p;
    OK(bs_proc_init(&p, NULL, 0, 1, 1));
    uint64_t t = 100;
    OK(bs_proc_call(&p, &KEYS[0], BS_CALLER_ROOT, NULL, t));
    for (unsigned d = 0; d < depth; d++) {
        t += 10000;
        OK(bs_proc_call(&p, &KEYS[4], BS_CALLER_FRAME, &KEYS[d ? 1 : 0], t));
        t += 3000;
        OK(bs_proc_return_to(&p, &KEYS[d ? 1 : 0], t));
        OK(bs_proc_call(&p, &KEYS[1], BS_CALLER_FRAME, &KEYS[d ? 1 : 0], t));
    }
    t += 10000;
    OK(bs_proc_return_to(&p, NULL, t));
    bs_proc_flush(&p, t);
    OK(bs_profile_add_proc(prof, &p, "<0.80.0>", tu_namer, NULL));
    bs_proc_free(&p);
    bs_profile_compute_totals(prof);
}

/* Deeper than the writers go (1024 frames, then one "[deeper]" line): the
 * projection counts what they write. It once counted every stack with its
 * whole path, 6-9 times the written size of a real 1,026-deep xmerl
 * profile. */
static void test_projection_of_deep_recursion(void **state)
{
    (void)state;
    bs_profile p;
    make_deep_profile(&p, getenv("BS_TEST_SMALL") ? 1500 : 3000);
    const bs_format formats[] = {BS_FORMAT_FOLDED, BS_FORMAT_PERF, BS_FORMAT_SPEEDSCOPE};
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        bs_render_opts o = {.on_report = keep_report};
        size_t n;
        char *text = write_to_memory(formats[i], &p, &o, &n);
        if (formats[i] == BS_FORMAT_FOLDED)
            assert_non_null(strstr(text, ";[deeper] "));
        free(text);
        double ratio = (double)last.projected_bytes / (double)n;
        print_message("%s: projected %llu, written %zu\n", bs_format_name(formats[i]),
                      (unsigned long long)last.projected_bytes, n);
        assert_true(ratio > 0.8 && ratio < 1.25);
    }
    /* drop_sleep leaves nothing out here; a smaller depth limit is followed. */
    bs_render_opts o = {.on_report = keep_report, .folded_max_depth = 100};
    size_t n;
    free(write_to_memory(BS_FORMAT_FOLDED, &p, &o, &n));
    double ratio = (double)last.projected_bytes / (double)n;
    assert_true(ratio > 0.8 && ratio < 1.25);
    bs_profile_free(&p);
}

/* Above the size viewers open, a stack format gets its recursion collapsed
 * and the report says so; full, a collapse mode of the user's, a format
 * that prunes (SVG) or no report leave it whole. */
static void test_too_big_to_open_collapses(void **state)
{
    (void)state;
    bs_profile p;
    make_deep_profile(&p, 1500);
    size_t whole_n, n;
    bs_render_opts o = {.on_report = keep_report, .full = 1, .openable_bytes = 100000};
    free(write_to_memory(BS_FORMAT_FOLDED, &p, &o, &whole_n));
    assert_int_equal(last.auto_collapse, 0);
    assert_true(whole_n > 1000000);
    o.full = 0;
    char *text = write_to_memory(BS_FORMAT_FOLDED, &p, &o, &n);
    assert_int_equal(last.auto_collapse, 1);
    assert_int_equal(last.full_bytes, whole_n);
    assert_int_equal(last.projected_bytes, n);
    assert_int_equal(last.openable_bytes, 100000);
    assert_true(n < 1000);
    /* One frame for the whole tower: "m:top/0;m:a/1 <count>" and its leaf. */
    assert_null(strstr(text, "m:a/1;m:a/1"));
    assert_non_null(strstr(text, "m:a/1;m:leaf/0 "));
    free(text);
    char warning[1024];
    bs_write_warning_text(&last, warning, sizeof warning);
    print_message("%s\n", warning);
    assert_non_null(strstr(warning, "folded: every stack whole would be about "));
    assert_non_null(strstr(warning, "more than viewers open (above 100 kB): recursion folded into one frame as "
                                    "with collapse_recursion => direct (--collapse-recursion=direct), about 1 kB written; "
                                    "full => true (--full) writes every stack"));
    assert_null(strstr(warning, "to write"));
    /* The user's own mode is kept. */
    o.collapse_recursion = 2;
    free(write_to_memory(BS_FORMAT_FOLDED, &p, &o, &n));
    assert_int_equal(last.auto_collapse, 0);
    o.collapse_recursion = 0;
    /* SVG prunes what is too narrow to see: never collapsed. */
    free(write_to_memory(BS_FORMAT_SVG, &p, &(bs_render_opts){.on_report = keep_report, .openable_bytes = 1}, &n));
    assert_int_equal(last.auto_collapse, 0);
    /* Nobody to tell (no report): written whole. */
    free(write_to_memory(BS_FORMAT_FOLDED, &p, &(bs_render_opts){.openable_bytes = 100000}, &n));
    assert_int_equal(n, whole_n);
    bs_profile_free(&p);
}

/* bs_folded_rounding over a recorded profile: the stacks whose self time is
 * under 500 ns, and every stack's time; a profile of samples loses none. */
static void test_folded_rounding(void **state)
{
    (void)state;
    bs_profile prof;
    OK(bs_profile_init(&prof));
    bs_proc p;
    OK(bs_proc_init(&p, NULL, 0, 1, 1));
    OK(bs_proc_call(&p, &KEYS[0], BS_CALLER_ROOT, NULL, 1000));        /* root: 1000 */
    OK(bs_proc_call(&p, &KEYS[1], BS_CALLER_FRAME, &KEYS[0], 1300));  /* top: 300 */
    OK(bs_proc_call(&p, &KEYS[2], BS_CALLER_FRAME, &KEYS[1], 1499));  /* a: 199 */
    OK(bs_proc_return_to(&p, &KEYS[1], 1998));                        /* b: 499 */
    OK(bs_proc_return_to(&p, &KEYS[0], 2498));                        /* a: 500 more */
    bs_proc_flush(&p, 4498);                                          /* top: 2000 more */
    OK(bs_profile_add_proc(&prof, &p, "<0.80.0>", tu_namer, NULL));
    bs_proc_free(&p);
    bs_profile_compute_totals(&prof);
    bs_write_report r = {0};
    bs_folded_rounding(&prof, &r);
    assert_int_equal(r.total_ns, 4498);
    assert_int_equal(r.stacks_rounded_out, 1); /* b's 499 ns; a's 699 ns round to 1 */
    assert_int_equal(r.rounded_out_ns, 499);
    /* The written file agrees: no line for b. */
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    assert_non_null(f);
    OK(bs_write_stream(f, BS_FORMAT_FOLDED, &prof, NULL));
    fclose(f);
    assert_null(strstr(text, "m:b/1 "));
    assert_non_null(strstr(text, "m:a/1 1\n"));
    free(text);
    bs_profile_free(&prof);
}

static void test_warning_text(void **state)
{
    (void)state;
    char buf[1024];
    unsetenv("BEAMSPY_SIZE_WARN_BYTES");
    assert_int_equal(bs_size_warn_bytes(), BS_SIZE_WARN_BYTES);
    bs_write_report r = {.format = BS_FORMAT_FOLDED, .projected_bytes = 1000};
    assert_int_equal(bs_write_warning_text(&r, buf, sizeof buf), 0);
    assert_string_equal(buf, "");
    r.projected_bytes = 1500000000ull;
    assert_true(bs_write_warning_text(&r, buf, sizeof buf) > 0);
    assert_non_null(strstr(buf, "folded: about 1.5 GB to write (above 100.0 MB)"));
    assert_non_null(strstr(buf, "collapse_recursion => all"));
    /* The test-only threshold. */
    setenv("BEAMSPY_SIZE_WARN_BYTES", "500", 1);
    r.projected_bytes = 1000;
    assert_true(bs_write_warning_text(&r, buf, sizeof buf) > 0);
    assert_non_null(strstr(buf, "about 1 kB to write (above 1 kB)"));
    setenv("BEAMSPY_SIZE_WARN_BYTES", "-3", 1);
    assert_int_equal(bs_size_warn_bytes(), BS_SIZE_WARN_BYTES);
    unsetenv("BEAMSPY_SIZE_WARN_BYTES");
    /* The cap: how many of how many, and how to lift it. */
    r = (bs_write_report){.format = BS_FORMAT_SPEEDSCOPE, .spans = 200000, .spans_capped = 632551,
                          .timeline_cap = 200000, .projected_bytes = 17000000};
    assert_true(bs_write_warning_text(&r, buf, sizeof buf) > 0);
    assert_non_null(strstr(buf, "speedscope: timeline capped at 200000 calls"));
    assert_non_null(strstr(buf, "632551 of 832551"));
    assert_non_null(strstr(buf, "timeline_cap => infinity (--timeline-cap none)"));
    /* Folded stacks too short for a line: said when they hold 1% of the
     * time or more, never below. */
    r = (bs_write_report){.format = BS_FORMAT_FOLDED, .projected_bytes = 100, .stacks_rounded_out = 37,
                          .rounded_out_ns = 12400, .total_ns = 30000};
    assert_true(bs_write_warning_text(&r, buf, sizeof buf) > 0);
    assert_non_null(strstr(buf, "folded: 37 stacks shorter than half a microsecond have no line "
                                "(12.4 microseconds, 41% of the time in the file)"));
    assert_non_null(strstr(buf, "the other formats keep them"));
    r.total_ns = 1240000;
    assert_true(bs_write_warning_text(&r, buf, sizeof buf) > 0); /* exactly 1% */
    r.total_ns = 1240001;
    assert_int_equal(bs_write_warning_text(&r, buf, sizeof buf), 0);
    r = (bs_write_report){.format = BS_FORMAT_FOLDED, .stacks_rounded_out = 1, .rounded_out_ns = 300,
                          .total_ns = 300};
    assert_true(bs_write_warning_text(&r, buf, sizeof buf) > 0);
    assert_non_null(strstr(buf, "folded: 1 stack shorter than half a microsecond has no line "
                                "(0.3 microseconds, 100% of the time in the file)"));
    r = (bs_write_report){.format = BS_FORMAT_SPEEDSCOPE, .spans = 200000, .spans_capped = 632551,
                          .timeline_cap = 200000, .projected_bytes = 17000000};
    /* A small buffer is cut, never overrun. */
    char small[16];
    assert_true(bs_write_warning_text(&r, small, sizeof small) < sizeof small);
    assert_int_equal(strlen(small), sizeof small - 1);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cap_keeps_shallowest_nested),
        cmocka_unit_test(test_cap_above_count_changes_nothing),
        cmocka_unit_test(test_write_stream_caps_and_reports),
        cmocka_unit_test(test_default_caps),
        cmocka_unit_test(test_projection_near_real_size),
        cmocka_unit_test(test_projection_of_deep_recursion),
        cmocka_unit_test(test_too_big_to_open_collapses),
        cmocka_unit_test(test_folded_rounding),
        cmocka_unit_test(test_warning_text),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
