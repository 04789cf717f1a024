/* test_folded.c — the profile model (profile.h) and the folded-stacks writer
 * (folded.h): exact expected text for small profiles built from synthetic
 * events (integer microseconds, zero-count lines omitted, creation order),
 * nanosecond units, drop_sleep, omit_process_root, merging processes with
 * bs_profile_merge_processes (equal stacks summed), max_depth ("[deeper]"
 * leaf, SLEEP left out of it under drop_sleep), process labels sanitised,
 * determinism, and that every line of every output — including random
 * profiles with hostile names — matches the portable folded grammar. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "writers/folded.h"
#include "test_util.h"

static const bs_key TOP = KEY(M_M, F_TOP, 0), A = KEY(M_M, F_A, 0), B = KEY(M_M, F_B, 0),
                    C = KEY(M_M, F_C, 0);

#define OK(x) assert_int_equal((x), 0)

/* P1, times in ns (SLEEP and GC charged):
 *   [0,1000) root; top from 1000; a from 3000; b [3400,3899) = 499 (rounds
 *   to 0 us: its line is omitted); a again until out at 4000 (a: 400+101);
 *   out [4000,9000) = SLEEP 5000; GC [9000,11000) = 2000; a [11000,12500)
 *   (a: 2001); c [12500,15100) = 2600; top until 16000 (top: 2000+900). */
static void make_p1(bs_proc *p)
{
    OK(bs_proc_init(p, NULL, 0, 1, 1));
    OK(bs_proc_call(p, &TOP, BS_CALLER_ROOT, NULL, 1000));
    OK(bs_proc_call(p, &A, BS_CALLER_FRAME, &TOP, 3000));
    OK(bs_proc_call(p, &B, BS_CALLER_FRAME, &A, 3400));
    OK(bs_proc_return_to(p, &A, 3899));
    OK(bs_proc_sched_out(p, 4000));
    OK(bs_proc_sched_in(p, 9000));
    OK(bs_proc_gc_start(p, 9000));
    OK(bs_proc_gc_end(p, 11000));
    OK(bs_proc_return_to(p, &TOP, 12500));
    OK(bs_proc_call(p, &C, BS_CALLER_FRAME, &TOP, 12500));
    OK(bs_proc_return_to(p, &TOP, 15100));
    OK(bs_proc_return_to(p, NULL, 16000));
    bs_proc_flush(p, 16000);
}

/* P2: top and a take no time; b [0,4000); top [4000,6000). */
static void make_p2(bs_proc *p)
{
    OK(bs_proc_init(p, NULL, 0, 1, 1));
    OK(bs_proc_call(p, &TOP, BS_CALLER_ROOT, NULL, 0));
    OK(bs_proc_call(p, &A, BS_CALLER_FRAME, &TOP, 0));
    OK(bs_proc_call(p, &B, BS_CALLER_FRAME, &A, 0));
    OK(bs_proc_return_to(p, &A, 4000));
    OK(bs_proc_return_to(p, &TOP, 4000));
    OK(bs_proc_return_to(p, NULL, 6000));
    bs_proc_flush(p, 6000);
}

/* A profile of P1 (and P2 when both). */
static void make_profile(bs_profile *prof, int both, int totals)
{
    bs_proc p1, p2;
    OK(bs_profile_init(prof));
    make_p1(&p1);
    OK(bs_profile_add_proc(prof, &p1, "<0.80.0>", tu_namer, NULL));
    bs_proc_free(&p1);
    if (both) {
        make_p2(&p2);
        OK(bs_profile_add_proc(prof, &p2, "<0.81.0> my_server", tu_namer, NULL));
        bs_proc_free(&p2);
    }
    if (totals)
        bs_profile_compute_totals(prof);
}

/* Writes prof with opts and compares with want; also checks the grammar. */
static void assert_folded(const bs_profile *prof, const bs_folded_opts *opts, const char *want)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    OK(bs_write_folded(out, prof, opts));
    assert_int_equal(fclose(out), 0);
    assert_string_equal(text, want);
    char why[128] = "";
    if (tu_check_folded(text, len, why, sizeof why) != 0)
        fail_msg("grammar: %s", why);
    free(text);
}

static const char P1_US[] = "<0.80.0> 1\n"
                            "<0.80.0>;m:top/0 3\n"
                            "<0.80.0>;m:top/0;m:a/0 2\n"
                            "<0.80.0>;m:top/0;m:a/0;SLEEP 5\n"
                            "<0.80.0>;m:top/0;m:a/0;GC 2\n"
                            "<0.80.0>;m:top/0;m:c/0 3\n";
static const char P2_US[] = "<0.81.0> my_server;m:top/0 2\n"
                            "<0.81.0> my_server;m:top/0;m:a/0;m:b/0 4\n";

static void test_golden_microseconds(void **state)
{
    (void)state;
    bs_profile prof;
    make_profile(&prof, 1, 1);
    assert_int_equal(prof.n_trees, 2);
    char want[1024];
    snprintf(want, sizeof want, "%s%s", P1_US, P2_US);
    assert_folded(&prof, NULL, want);
    bs_folded_opts o = {0};
    assert_folded(&prof, &o, want); /* zeroed options are the defaults */
    o.ns_per_unit = 1000;
    assert_folded(&prof, &o, want);
    assert_string_equal(prof.truncated, "");
    assert_int_equal(prof.trees[0].nodes[0].total_ns, 16000);
    assert_int_equal(prof.trees[1].nodes[0].total_ns, 6000);
    bs_profile_free(&prof);
}

static void test_nanoseconds(void **state)
{
    (void)state;
    bs_profile prof;
    make_profile(&prof, 0, 1);
    bs_folded_opts o = {.ns_per_unit = 1};
    assert_folded(&prof, &o, "<0.80.0> 1000\n"
                             "<0.80.0>;m:top/0 2900\n"
                             "<0.80.0>;m:top/0;m:a/0 2001\n"
                             "<0.80.0>;m:top/0;m:a/0;m:b/0 499\n"
                             "<0.80.0>;m:top/0;m:a/0;SLEEP 5000\n"
                             "<0.80.0>;m:top/0;m:a/0;GC 2000\n"
                             "<0.80.0>;m:top/0;m:c/0 2600\n");
    o.ns_per_unit = 1000000; /* ms: every stack rounds to 0, no line at all */
    assert_folded(&prof, &o, "");
    bs_profile_free(&prof);
}

static void test_drop_sleep_and_omit_root(void **state)
{
    (void)state;
    bs_profile prof;
    make_profile(&prof, 1, 1);
    bs_folded_opts o = {.drop_sleep = 1};
    assert_folded(&prof, &o, "<0.80.0> 1\n"
                             "<0.80.0>;m:top/0 3\n"
                             "<0.80.0>;m:top/0;m:a/0 2\n"
                             "<0.80.0>;m:top/0;m:a/0;GC 2\n"
                             "<0.80.0>;m:top/0;m:c/0 3\n"
                             "<0.81.0> my_server;m:top/0 2\n"
                             "<0.81.0> my_server;m:top/0;m:a/0;m:b/0 4\n");
    o = (bs_folded_opts){.omit_process_root = 1};
    assert_folded(&prof, &o, "m:top/0 3\n"
                             "m:top/0;m:a/0 2\n"
                             "m:top/0;m:a/0;SLEEP 5\n"
                             "m:top/0;m:a/0;GC 2\n"
                             "m:top/0;m:c/0 3\n"
                             "m:top/0 2\n"
                             "m:top/0;m:a/0;m:b/0 4\n");
    bs_profile_free(&prof);
}

static void test_merge_processes(void **state)
{
    (void)state;
    bs_profile prof;
    make_profile(&prof, 1, 1);
    OK(bs_profile_merge_processes(&prof, "all"));
    assert_int_equal(prof.n_trees, 1);
    /* summed in ns, then rounded: top 2900+2000, b 499+4000 */
    assert_folded(&prof, NULL, "all 1\n"
                               "all;m:top/0 5\n"
                               "all;m:top/0;m:a/0 2\n"
                               "all;m:top/0;m:a/0;m:b/0 4\n"
                               "all;m:top/0;m:a/0;SLEEP 5\n"
                               "all;m:top/0;m:a/0;GC 2\n"
                               "all;m:top/0;m:c/0 3\n");
    bs_folded_opts o = {.omit_process_root = 1, .ns_per_unit = 1};
    assert_folded(&prof, &o, "m:top/0 4900\n"
                             "m:top/0;m:a/0 2001\n"
                             "m:top/0;m:a/0;m:b/0 4499\n"
                             "m:top/0;m:a/0;SLEEP 5000\n"
                             "m:top/0;m:a/0;GC 2000\n"
                             "m:top/0;m:c/0 2600\n");
    const bs_ptree *t = &prof.trees[0];
    assert_int_equal(t->nodes[0].total_ns, 22000);
    assert_int_equal(t->nodes[3].calls, 2); /* b entered once in each process */
    /* merging a merged profile again changes nothing but the label */
    OK(bs_profile_merge_processes(&prof, "again"));
    o = (bs_folded_opts){0};
    assert_folded(&prof, &o, "again 1\n"
                             "again;m:top/0 5\n"
                             "again;m:top/0;m:a/0 2\n"
                             "again;m:top/0;m:a/0;m:b/0 4\n"
                             "again;m:top/0;m:a/0;SLEEP 5\n"
                             "again;m:top/0;m:a/0;GC 2\n"
                             "again;m:top/0;m:c/0 3\n");
    bs_profile_free(&prof);

    /* identical processes sum exactly */
    OK(bs_profile_init(&prof));
    for (int i = 0; i < 3; i++) {
        bs_proc p;
        make_p2(&p);
        char label[32];
        snprintf(label, sizeof label, "<0.%d.0>", 100 + i);
        OK(bs_profile_add_proc(&prof, &p, label, tu_namer, NULL));
        bs_proc_free(&p);
    }
    OK(bs_profile_merge_processes(&prof, "all"));
    assert_folded(&prof, NULL, "all;m:top/0 6\nall;m:top/0;m:a/0;m:b/0 12\n");
    bs_profile_free(&prof);
}

/* max_depth counts frames below the process frame; everything below the
 * last drawn frame becomes one "[deeper]" leaf per cut stack. */
static void test_max_depth(void **state)
{
    (void)state;
    for (int totals = 0; totals < 2; totals++) { /* the writer needs no precomputed totals */
        bs_profile prof;
        make_profile(&prof, 0, totals);
        bs_folded_opts o = {.max_depth = 1};
        /* a (2001 + 499 + 5000 + 2000) + c (2600) */
        assert_folded(&prof, &o, "<0.80.0> 1\n"
                                 "<0.80.0>;m:top/0 3\n"
                                 "<0.80.0>;m:top/0;[deeper] 12\n");
        o.drop_sleep = 1; /* no sleep in the [deeper] leaf either */
        assert_folded(&prof, &o, "<0.80.0> 1\n"
                                 "<0.80.0>;m:top/0 3\n"
                                 "<0.80.0>;m:top/0;[deeper] 7\n");
        o = (bs_folded_opts){.max_depth = 2};
        assert_folded(&prof, &o, "<0.80.0> 1\n"
                                 "<0.80.0>;m:top/0 3\n"
                                 "<0.80.0>;m:top/0;m:a/0 2\n"
                                 "<0.80.0>;m:top/0;m:a/0;[deeper] 7\n"
                                 "<0.80.0>;m:top/0;m:c/0 3\n");
        o.drop_sleep = 1;
        assert_folded(&prof, &o, "<0.80.0> 1\n"
                                 "<0.80.0>;m:top/0 3\n"
                                 "<0.80.0>;m:top/0;m:a/0 2\n"
                                 "<0.80.0>;m:top/0;m:a/0;[deeper] 2\n"
                                 "<0.80.0>;m:top/0;m:c/0 3\n");
        o = (bs_folded_opts){.max_depth = 3};
        assert_folded(&prof, &o, P1_US);
        bs_profile_free(&prof);
    }
}

static void test_labels_and_empty(void **state)
{
    (void)state;
    bs_profile prof;
    OK(bs_profile_init(&prof));
    assert_folded(&prof, NULL, ""); /* no process: empty file */
    bs_proc p;
    make_p2(&p);
    OK(bs_profile_add_proc(&prof, &p, "<0.82.0>;evil\nname ", tu_namer, NULL));
    bs_proc_free(&p);
    OK(bs_profile_add_tree(&prof, "<0.83.0>")); /* empty tree: no line */
    assert_folded(&prof, NULL, "<0.82.0>:evil?name_;m:top/0 2\n"
                               "<0.82.0>:evil?name_;m:top/0;m:a/0;m:b/0 4\n");
    bs_profile_free(&prof);
}

/* A namer whose names are random bytes. */
typedef struct rnd_names {
    char names[40][48];
    size_t lens[40];
} rnd_names;

static int rnd_namer(void *ctx, const bs_key *k, char *buf, size_t cap)
{
    const rnd_names *rn = ctx;
    size_t i = (size_t)(k->function % 40);
    size_t split = rn->lens[i] / 2;
    return (int)bs_format_mfa(buf, cap, k->arity % 2 ? BS_NAMES_ELIXIR : BS_NAMES_ERLANG, rn->names[i], split,
                              rn->names[i] + split, rn->lens[i] - split, k->arity);
}

static void test_random_profiles_match_grammar(void **state)
{
    (void)state;
    const size_t n = 5000;
    tu_event *ev = malloc(n * sizeof *ev);
    assert_non_null(ev);
    uint64_t s = 77;
    for (int round = 0; round < 6; round++) {
        rnd_names rn;
        for (int i = 0; i < 40; i++) {
            rn.lens[i] = (size_t)(tu_rand(&s) % sizeof rn.names[i]);
            for (size_t j = 0; j < rn.lens[i]; j++) {
                uint64_t r = tu_rand(&s);
                static const char pick[] = " ;\t\n\r0123456789'\\";
                rn.names[i][j] = (char)((r & 1) ? pick[(r >> 8) % (sizeof pick - 1)] : (char)(r >> 16));
            }
        }
        bs_profile prof;
        OK(bs_profile_init(&prof));
        for (int pi = 0; pi < 4; pi++) {
            tu_random_events(ev, n, s + (uint64_t)pi, 39);
            bs_proc p;
            OK(bs_proc_init(&p, NULL, 0, 1, 1));
            for (size_t i = 0; i < n; i++)
                OK(tu_feed(&p, &ev[i]));
            bs_proc_flush(&p, ev[n - 1].t + 5000);
            char label[32];
            snprintf(label, sizeof label, "<0.%d.0>", pi);
            OK(bs_profile_add_proc(&prof, &p, label, rnd_namer, &rn));
            bs_proc_free(&p);
        }
        bs_profile_compute_totals(&prof);
        uint64_t all_ns = 0;
        for (uint32_t ti = 0; ti < prof.n_trees; ti++)
            all_ns += prof.trees[ti].nodes[0].total_ns;
        for (int variant = 0; variant < 6; variant++) {
            if (variant == 5)
                OK(bs_profile_merge_processes(&prof, "all"));
            bs_folded_opts o = {.drop_sleep = variant == 1, .omit_process_root = variant == 2 || variant == 5,
                                .max_depth = variant == 3 ? 3 : 0, .ns_per_unit = variant == 4 ? 1 : 0};
            char *text = NULL, *again = NULL;
            size_t len = 0, len2 = 0;
            FILE *out = open_memstream(&text, &len);
            OK(bs_write_folded(out, &prof, &o));
            fclose(out);
            out = open_memstream(&again, &len2);
            OK(bs_write_folded(out, &prof, &o));
            fclose(out);
            assert_int_equal(len, len2); /* deterministic */
            assert_memory_equal(text, again, len);
            char why[128] = "";
            if (tu_check_folded(text, len, why, sizeof why) != 0)
                fail_msg("round %d variant %d: %s", round, variant, why);
            if (variant == 4) { /* in ns every nanosecond is on some line */
                uint64_t sum = 0;
                for (const char *l = text; l < text + len;) {
                    const char *lf = memchr(l, '\n', (size_t)(text + len - l));
                    const char *sp = lf;
                    while (*sp != ' ')
                        sp--;
                    sum += strtoull(sp + 1, NULL, 10);
                    l = lf + 1;
                }
                assert_int_equal(sum, all_ns);
            }
            free(text);
            free(again);
        }
        bs_profile_free(&prof);
    }
    free(ev);
}

/* argv[1], if given, runs only the test cases whose name matches it (run.sh
 * runs each case in its own process). */
int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_microseconds),
        cmocka_unit_test(test_nanoseconds),
        cmocka_unit_test(test_drop_sleep_and_omit_root),
        cmocka_unit_test(test_merge_processes),
        cmocka_unit_test(test_max_depth),
        cmocka_unit_test(test_labels_and_empty),
        cmocka_unit_test(test_random_profiles_match_grammar),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
