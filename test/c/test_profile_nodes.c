/* test_profile_nodes.c — bs_profile_add_under (engine/profile.h): profiles
 * of several nodes combined under one root frame per node, as `beamspy
 * record --node a --node b` writes them. Inputs are folded stacks read with
 * the real reader; the result is checked through the real folded writer,
 * totals, units, truncation and time-ordered spans, the earliest node's
 * clock whatever order the nodes came in, the nodes in the order named. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/profile.h"
#include "folded_text.h"
#include "readers/readers.h"
#include "writers/writers.h"


/* The folded text of p, sorted lines (callers free). */
static char *folded_of(const bs_profile *p)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    assert_non_null(out);
    bs_render_opts o;
    memset(&o, 0, sizeof o);
    assert_int_equal(bs_write_folded_opts(out, p, &o), 0);
    fclose(out);
    return buf;
}

/* Gives p's first tree a timeline of one span of its leaf, 100 to 200 ns
 * after p's start: start_ns on p's own clock, start_unix_us its wall-clock
 * start, duration_ns its length (0: left as read). */
static void one_span(bs_profile *p, uint64_t start_ns, int64_t start_unix_us, uint64_t duration_ns)
{
    p->has_timeline = 1;
    p->start_ns = start_ns;
    p->meta.start_unix_us = start_unix_us;
    if (duration_ns)
        p->duration_ns = duration_ns;
    p->trees[0].spans = malloc(sizeof *p->trees[0].spans);
    assert_non_null(p->trees[0].spans);
    p->trees[0].spans[0] = (bs_pspan){1, p->start_ns + 100, p->start_ns + 200};
    p->trees[0].n_spans = 1;
}

static void test_two_nodes_under_their_names(void **state)
{
    (void)state;
    bs_profile a, b, all;
    read_folded_text("<0.80.0> busy;m:f/1;m:g/0 30\n<0.80.0> busy;m:f/1 10\n<0.81.0>;SLEEP 5\n", &a);
    read_folded_text("<0.80.0> busy;m:f/1;m:g/0 7\n", &b);
    assert_int_equal(bs_profile_init(&all), 0);
    assert_int_equal(bs_profile_add_under(&all, &a, "a@host"), 0);
    assert_int_equal(bs_profile_add_under(&all, &b, "b@host"), 0);
    assert_int_equal(all.n_trees, 3);
    char *text = folded_of(&all);
    /* Same pid on two nodes: two processes, each under its node. */
    assert_non_null(strstr(text, "a@host;<0.80.0> busy;m:f/1;m:g/0 30\n"));
    assert_non_null(strstr(text, "a@host;<0.80.0> busy;m:f/1 10\n"));
    assert_non_null(strstr(text, "a@host;<0.81.0>;SLEEP 5\n"));
    assert_non_null(strstr(text, "b@host;<0.80.0> busy;m:f/1;m:g/0 7\n"));
    assert_null(strstr(text, "\n<0.80.0>"));
    free(text);
    /* Totals: each node root holds its processes' time. */
    assert_int_equal(all.trees[0].nodes[0].total_ns, 40);
    assert_int_equal(all.trees[2].nodes[0].total_ns, 7);
    assert_int_equal(all.unit, a.unit);
    bs_profile_free(&a);
    bs_profile_free(&b);
    bs_profile_free(&all);
}

static void test_stacks_without_a_process_frame(void **state)
{
    (void)state;
    bs_profile a, all;
    read_folded_text("main;work 4\nmain 1\n", &a);
    assert_int_equal(bs_profile_init(&all), 0);
    assert_int_equal(bs_profile_add_under(&all, &a, "n@h"), 0);
    char *text = folded_of(&all);
    assert_non_null(strstr(text, "n@h;main;work 4\n"));
    assert_non_null(strstr(text, "n@h;main 1\n"));
    free(text);
    bs_profile_free(&a);
    bs_profile_free(&all);
}

static void test_truncation_and_spans(void **state)
{
    (void)state;
    bs_profile a, b, all;
    read_folded_text("<0.1.0>;m:f/0 10\n", &a);
    read_folded_text("<0.2.0>;m:g/0 10\n", &b);
    /* Give both a timeline: one span of the leaf each; b started 3 us
     * after a on the wall clock, on a clock of its own. */
    one_span(&a, 1000, 1000, 0);
    one_span(&b, 5000000, 1003, 0);
    bs_profile_set_truncated(&b, "max_events");
    assert_int_equal(bs_profile_init(&all), 0);
    assert_int_equal(bs_profile_add_under(&all, &a, "a@h"), 0);
    assert_int_equal(bs_profile_add_under(&all, &b, "b@h"), 0);
    assert_string_equal(all.truncated, "max_events");
    assert_true(all.has_timeline);
    assert_int_equal(all.start_ns, 1000);
    /* The span now points at the same frame one level deeper. */
    assert_int_equal(all.trees[0].spans[0].node, 2);
    assert_string_equal(bs_frame_name(&all.frames, all.trees[0].nodes[2].frame), "m:f/0");
    assert_int_equal(all.trees[0].spans[0].start_ns, 1100);
    /* b's span: 100 ns after b's start, b started 3000 ns after a. */
    assert_int_equal(all.trees[1].spans[0].start_ns, 1000 + 3000 + 100);
    assert_int_equal(all.trees[1].spans[0].end_ns, 1000 + 3000 + 200);
    bs_profile_free(&a);
    bs_profile_free(&b);
    bs_profile_free(&all);
}

/* A profile added after another but started before it: the later one
 * becomes the start, the spans already in move later by the difference. */
static void test_earlier_node_answers_later(void **state)
{
    (void)state;
    bs_profile a, b, all;
    read_folded_text("<0.1.0>;m:f/0 10\n", &a);
    read_folded_text("<0.2.0>;m:g/0 10\n", &b);
    one_span(&a, 1000, 1000, 1000);
    one_span(&b, 7000, 995, 1000); /* b started 5 us before a */
    assert_int_equal(bs_profile_init(&all), 0);
    assert_int_equal(bs_profile_add_under(&all, &a, "a@h"), 0); /* a answered first */
    assert_int_equal(bs_profile_add_under(&all, &b, "b@h"), 0);
    assert_int_equal(all.meta.start_unix_us, 995);
    /* a's span: 100 ns after a's start, 5000 ns after b's. */
    assert_int_equal(all.trees[0].spans[0].start_ns, 1000 + 5000 + 100);
    assert_int_equal(all.trees[0].spans[0].end_ns, 1000 + 5000 + 200);
    /* b's span: 100 ns after the start, now b's. */
    assert_int_equal(all.trees[1].spans[0].start_ns, 1000 + 100);
    assert_int_equal(all.duration_ns, 5000 + 1000);
    bs_profile_free(&a);
    bs_profile_free(&b);
    bs_profile_free(&all);
}

/* The nodes in the order named, whatever order they were added in; the
 * trees under one node keep their order; a root named by none goes last. */
static void test_nodes_in_the_order_named(void **state)
{
    (void)state;
    bs_profile a, b, c, all;
    read_folded_text("<0.1.0>;m:f/0 10\n<0.3.0>;m:h/0 3\n", &a);
    read_folded_text("<0.2.0>;m:g/0 10\n", &b);
    read_folded_text("<0.4.0>;m:k/0 1\n", &c);
    assert_int_equal(bs_profile_init(&all), 0);
    assert_int_equal(bs_profile_add_under(&all, &c, "stray@h"), 0);
    assert_int_equal(bs_profile_add_under(&all, &b, "b@h"), 0);
    assert_int_equal(bs_profile_add_under(&all, &a, "a@h"), 0);
    const char *named[] = {"a@h", "b@h"};
    assert_int_equal(bs_profile_order_roots(&all, named, 2), 0);
    const char *roots[] = {"a@h", "a@h", "b@h", "stray@h"};
    const char *procs[] = {"<0.1.0>", "<0.3.0>", "<0.2.0>", "<0.4.0>"};
    assert_int_equal(all.n_trees, 4);
    for (uint32_t t = 0; t < 4; t++) {
        assert_string_equal(bs_frame_name(&all.frames, all.trees[t].nodes[0].frame), roots[t]);
        assert_string_equal(bs_frame_name(&all.frames, all.trees[t].nodes[1].frame), procs[t]);
    }
    bs_profile_free(&a);
    bs_profile_free(&b);
    bs_profile_free(&c);
    bs_profile_free(&all);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_nodes_under_their_names),
        cmocka_unit_test(test_stacks_without_a_process_frame),
        cmocka_unit_test(test_truncation_and_spans),
        cmocka_unit_test(test_earlier_node_answers_later),
        cmocka_unit_test(test_nodes_in_the_order_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
