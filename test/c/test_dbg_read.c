/* test_dbg_read.c — the engine's return_from rule and the dbg trace-port
 * reader (c_src/readers/dbg_trace.h) on files built here record by record
 * with libei's encoders: the stack rules through the reader (a {caller}
 * tail call, return_from followed by the VM's return_to for the same
 * return, calls only), timestamps and event counts, drop records, caps,
 * errors with their byte offsets, and the order of wrap sets (wrapped
 * around, the oldest files missing, indexes missing in several places). */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ei.h>
#include <unistd.h>

#include "writers/folded.h"
#include "readers/dbg_trace.h"
#include "test_util.h"

#define OK(x) assert_int_equal((x), 0)

/* ---- engine: return_from -------------------------------------------------- */

static void test_return_from_pops_the_frame(void **state)
{
    (void)state;
    bs_proc p;
    OK(bs_proc_init(&p, NULL, 0, 1, 0));
    bs_key a = KEY(M_M, F_A, 0), b = KEY(M_M, F_B, 0), c = KEY(M_M, F_C, 0), x = KEY(M_M, F_X, 0);
    OK(bs_proc_call(&p, &a, BS_CALLER_UNKNOWN, NULL, 10));
    OK(bs_proc_call(&p, &b, BS_CALLER_UNKNOWN, NULL, 20));
    OK(bs_proc_call(&p, &c, BS_CALLER_UNKNOWN, NULL, 30));
    OK(bs_proc_return_from(&p, &c, 40));
    char *s = tu_current(&p);
    assert_string_equal(s, "m:a/0;m:b/0");
    free(s);
    OK(bs_proc_call(&p, &c, BS_CALLER_UNKNOWN, NULL, 50));
    OK(bs_proc_return_from(&p, &b, 60)); /* c was left by an exception: b's return pops both */
    s = tu_current(&p);
    assert_string_equal(s, "m:a/0");
    free(s);
    OK(bs_proc_return_from(&p, &x, 70)); /* entered before tracing: all we know is left */
    assert_int_equal(bs_proc_depth(&p), 0);
    bs_proc_free(&p);
}

/* ---- building files ------------------------------------------------------- */

typedef struct tfile {
    char path[128];
    FILE *f;
} tfile;

static void tf_open(tfile *t, const char *name)
{
    snprintf(t->path, sizeof t->path, "/tmp/bs-test-dbg-%ld-%s", (long)getpid(), name);
    t->f = fopen(t->path, "wb");
    assert_non_null(t->f);
}

static void tf_close(tfile *t) { assert_int_equal(fclose(t->f), 0); }

static void put_record(tfile *t, const ei_x_buff *x)
{
    unsigned char h[5] = {0, (unsigned char)(x->index >> 24), (unsigned char)(x->index >> 16),
                          (unsigned char)(x->index >> 8), (unsigned char)x->index};
    assert_int_equal(fwrite(h, 1, 5, t->f), 5);
    assert_int_equal(fwrite(x->buff, 1, (size_t)x->index, t->f), (size_t)x->index);
}

static void put_drop(tfile *t, unsigned n)
{
    unsigned char h[5] = {1, 0, 0, 0, (unsigned char)n};
    assert_int_equal(fwrite(h, 1, 5, t->f), 5);
}

static void enc_mfa(ei_x_buff *x, const char *m, const char *f, long arity)
{
    OK(ei_x_encode_tuple_header(x, 3));
    OK(ei_x_encode_atom(x, m));
    OK(ei_x_encode_atom(x, f));
    OK(ei_x_encode_long(x, arity));
}

/* {trace[_ts], <pid>, Tag, MFA | undefined [, Caller]} [+ {0, 0, us}]; caller
 * NULL: no fifth element, "undefined": the atom. ts < 0: no timestamp. */
static void event(tfile *t, unsigned pid, const char *tag, const char *m, const char *f, long arity,
                  const char *caller_f, long ts)
{
    ei_x_buff x;
    OK(ei_x_new_with_version(&x));
    int n = 4 + (caller_f != NULL) + (ts >= 0);
    OK(ei_x_encode_tuple_header(&x, n));
    OK(ei_x_encode_atom(&x, ts >= 0 ? "trace_ts" : "trace"));
    erlang_pid p;
    memset(&p, 0, sizeof p);
    strcpy(p.node, "app@host");
    p.num = pid;
    OK(ei_x_encode_pid(&x, &p));
    OK(ei_x_encode_atom(&x, tag));
    if (m)
        enc_mfa(&x, m, f, arity);
    else
        OK(ei_x_encode_atom(&x, "undefined"));
    if (caller_f && strcmp(caller_f, "undefined") == 0)
        OK(ei_x_encode_atom(&x, "undefined"));
    else if (caller_f && strcmp(caller_f, "RET") == 0)
        OK(ei_x_encode_atom(&x, "ok"));
    else if (caller_f)
        enc_mfa(&x, "m", caller_f, 0);
    if (ts >= 0) {
        OK(ei_x_encode_tuple_header(&x, 3));
        OK(ei_x_encode_long(&x, 0));
        OK(ei_x_encode_long(&x, ts / 1000000));
        OK(ei_x_encode_long(&x, ts % 1000000));
    }
    put_record(t, &x);
    ei_x_free(&x);
}

static char *notes_seen;
static void keep_note(void *ctx, const char *line)
{
    (void)ctx;
    size_t old = notes_seen ? strlen(notes_seen) : 0, add = strlen(line);
    notes_seen = realloc(notes_seen, old + add + 2);
    assert_non_null(notes_seen);
    memcpy(notes_seen + old, line, add);
    notes_seen[old + add] = '\n';
    notes_seen[old + add + 1] = '\0';
}

/* Reads path into folded text with counts as they are (caller frees). */
static char *read_folded(const char *path, bs_dbg_opts o, int *rc, bs_read_error *e)
{
    char *paths[] = {(char *)path};
    o.note = keep_note;
    free(notes_seen);
    notes_seen = NULL;
    bs_profile p;
    memset(e, 0, sizeof *e);
    *rc = bs_dbg_read_profile(paths, 1, &o, &p, e);
    if (*rc != 0)
        return NULL;
    char *text = NULL;
    size_t len;
    FILE *out = open_memstream(&text, &len);
    bs_folded_opts fo = {.ns_per_unit = 1};
    OK(bs_write_folded(out, &p, &fo));
    fclose(out);
    bs_profile_free(&p);
    return text;
}

/* ---- reader: stacks --------------------------------------------------------- */

static void test_caller_tail_call_and_times(void **state)
{
    (void)state;
    tfile t;
    tf_open(&t, "caller.trace");
    event(&t, 80, "call", "m", "top", 0, "undefined", 1000);
    event(&t, 80, "call", "m", "a", 0, "top", 1002);
    event(&t, 80, "call", "m", "b", 0, "top", 1005); /* a tail-called b */
    event(&t, 80, "return_to", "m", "top", 0, NULL, 1009);
    event(&t, 80, "return_to", NULL, NULL, 0, NULL, 1010);
    tf_close(&t);
    int rc;
    bs_read_error e;
    char *text = read_folded(t.path, (bs_dbg_opts){0}, &rc, &e);
    OK(rc);
    assert_string_equal(text, "<0.80.0>;m:top/0 3000\n"
                              "<0.80.0>;m:top/0;m:a/0 3000\n"
                              "<0.80.0>;m:top/0;m:b/0 4000\n");
    assert_non_null(strstr(notes_seen, "stacks rebuilt"));
    free(text);
    unlink(t.path);
}

static void test_return_from_then_return_to(void **state)
{
    (void)state;
    tfile t;
    tf_open(&t, "rf.trace");
    /* what the VM sends with {return_trace} and return_to for top -> a -> a */
    event(&t, 81, "call", "m", "top", 0, NULL, -1);
    event(&t, 81, "call", "m", "a", 0, NULL, -1);
    event(&t, 81, "call", "m", "a", 0, NULL, -1);
    event(&t, 81, "return_from", "m", "a", 0, "RET", -1);
    event(&t, 81, "return_to", "m", "a", 0, NULL, -1);
    event(&t, 81, "return_from", "m", "a", 0, "RET", -1);
    event(&t, 81, "return_to", "m", "top", 0, NULL, -1);
    event(&t, 81, "call", "m", "b", 0, NULL, -1);
    event(&t, 81, "return_from", "m", "b", 0, "RET", -1);
    event(&t, 81, "return_from", "m", "top", 0, "RET", -1);
    tf_close(&t);
    int rc;
    bs_read_error e;
    char *text = read_folded(t.path, (bs_dbg_opts){0}, &rc, &e);
    OK(rc);
    /* weights: events while each stack was on top */
    assert_string_equal(text, "<0.81.0>;m:top/0 4\n"
                              "<0.81.0>;m:top/0;m:a/0 3\n"
                              "<0.81.0>;m:top/0;m:a/0;m:a/0 1\n"
                              "<0.81.0>;m:top/0;m:b/0 1\n");
    assert_non_null(strstr(notes_seen, "no timestamps"));
    free(text);
    unlink(t.path);
}

static void test_calls_only_counts(void **state)
{
    (void)state;
    tfile t;
    tf_open(&t, "calls.trace");
    for (int i = 0; i < 5; i++)
        event(&t, 82, "call", "m", "f", 1, NULL, 100 + i);
    event(&t, 82, "call", "m", "g", 0, NULL, 200);
    put_drop(&t, 7);
    event(&t, 83, "call", "m", "f", 1, NULL, 300);
    tf_close(&t);
    int rc;
    bs_read_error e;
    char *text = read_folded(t.path, (bs_dbg_opts){0}, &rc, &e);
    OK(rc);
    assert_string_equal(text, "<0.82.0>;m:f/1 5\n<0.82.0>;m:g/0 1\n<0.83.0>;m:f/1 1\n");
    assert_non_null(strstr(notes_seen, "calls only"));
    assert_non_null(strstr(notes_seen, "dropped 7 messages"));
    free(text);
    text = read_folded(t.path, (bs_dbg_opts){.max_processes = 1}, &rc, &e);
    OK(rc);
    assert_string_equal(text, "<0.82.0>;m:f/1 5\n<0.82.0>;m:g/0 1\n");
    assert_non_null(strstr(notes_seen, "max-processes (1) reached: 1 messages"));
    free(text);
    unlink(t.path);
}

/* ---- reader: errors ------------------------------------------------------------ */

static void test_errors_have_offsets(void **state)
{
    (void)state;
    tfile t;
    tf_open(&t, "bad.trace");
    event(&t, 80, "call", "m", "top", 0, NULL, -1);
    long second = ftell(t.f);
    event(&t, 80, "call", "m", "a", 0, NULL, -1);
    long size = ftell(t.f);
    tf_close(&t);
    int rc;
    bs_read_error e;
    assert_int_equal(truncate(t.path, size - 1), 0);
    assert_null(read_folded(t.path, (bs_dbg_opts){0}, &rc, &e));
    assert_int_equal(rc, -1);
    assert_int_equal(e.offset, (uint64_t)second);
    assert_non_null(strstr(e.msg, "truncated"));
    assert_int_equal(truncate(t.path, size), 0); /* back: the byte cut was the arity 0 */
    FILE *f = fopen(t.path, "r+b");
    assert_non_null(f);
    fseek(f, second, SEEK_SET);
    fputc(9, f);
    fclose(f);
    assert_null(read_folded(t.path, (bs_dbg_opts){0}, &rc, &e));
    assert_int_equal(e.offset, (uint64_t)second);
    assert_non_null(strstr(e.msg, "bad record tag 9"));
    f = fopen(t.path, "r+b");
    fseek(f, second, SEEK_SET);
    fputc(0, f);
    fseek(f, second + 5 + 1, SEEK_SET); /* the tuple tag after the version byte */
    fputc(200, f);
    fclose(f);
    assert_null(read_folded(t.path, (bs_dbg_opts){0}, &rc, &e));
    assert_int_equal(e.offset, (uint64_t)second + 5 + 1);
    assert_non_null(strstr(e.msg, "corrupt trace term"));
    unlink(t.path);
}

static void test_big_record_skipped(void **state)
{
    (void)state;
    tfile t;
    tf_open(&t, "big.trace");
    event(&t, 80, "call", "m", "f", 0, NULL, -1);
    event(&t, 80, "call", "m", "a_function_with_a_long_name_that_makes_it_bigger", 0, NULL, -1);
    tf_close(&t);
    int rc;
    bs_read_error e;
    char *text = read_folded(t.path, (bs_dbg_opts){.max_term_bytes = 60}, &rc, &e);
    OK(rc);
    assert_string_equal(text, "<0.80.0>;m:f/0 1\n");
    assert_non_null(strstr(notes_seen, "1 records larger than --max-term-size (60 bytes) were skipped"));
    free(text);
    unlink(t.path);
}

/* ---- reader: times and malformed messages --------------------------------------- */

/* One record of the term ei_x_format_wo_ver makes of fmt (~p: an erlang_pid *). */
#define RAW(t, ...)                                                                                                \
    do {                                                                                                           \
        ei_x_buff x_;                                                                                              \
        OK(ei_x_new_with_version(&x_));                                                                            \
        OK(ei_x_format_wo_ver(&x_, __VA_ARGS__));                                                                 \
        put_record((t), &x_);                                                                                      \
        ei_x_free(&x_);                                                                                            \
    } while (0)

static erlang_pid test_pid(unsigned num)
{
    erlang_pid p;
    memset(&p, 0, sizeof p);
    strcpy(p.node, "app@host");
    p.num = num;
    return p;
}

/* Reads path and expects a refusal at byte offset `at` whose message holds
 * every one of the NULL-terminated words. */
static void assert_refused(const char *path, long at, ...)
{
    int rc;
    bs_read_error e;
    char *text = read_folded(path, (bs_dbg_opts){0}, &rc, &e);
    if (text)
        fail_msg("read, not refused: %s", text);
    assert_int_equal(rc, -1);
    if (e.offset != (uint64_t)at)
        fail_msg("refused at byte %llu, not %ld: %s", (unsigned long long)e.offset, at, e.msg);
    va_list ap;
    va_start(ap, at);
    for (const char *w = va_arg(ap, const char *); w; w = va_arg(ap, const char *))
        if (!strstr(e.msg, w))
            fail_msg("'%s' not in: %s", w, e.msg);
    va_end(ap);
}

static void test_time_going_back_is_refused(void **state)
{
    (void)state;
    erlang_pid p = test_pid(80);
    tfile t;
    /* wall-clock times (flag timestamp): two traces one after the other */
    tf_open(&t, "back.trace");
    RAW(&t, "{trace_ts, ~p, call, {m, f, 0}, {~l, ~l, 0}}", &p, 1795L, 10L);
    long second = ftell(t.f);
    RAW(&t, "{trace_ts, ~p, call, {m, g, 0}, {~l, ~l, 0}}", &p, 1795L, 5L);
    for (long s = 6; s < 10; s++)
        RAW(&t, "{trace_ts, ~p, call, {m, g, 0}, {~l, ~l, 0}}", &p, 1795L, s);
    RAW(&t, "{trace_ts, ~p, return_to, undefined, {~l, ~l, 0}}", &p, 1795L, 9L);
    tf_close(&t);
    assert_refused(t.path, second, "record 2", "<0.80.0>", "goes back 5.000000 s from its message at byte 0",
                   "wall-clock", "time order", NULL);
    unlink(t.path);
    /* monotonic times (monotonic_timestamp): never go back either */
    tf_open(&t, "back-mono.trace");
    RAW(&t, "{trace_ts, ~p, call, {m, f, 0}, ~l}", &p, -5000000000L);
    RAW(&t, "{trace_ts, ~p, call, {m, f, 0}, ~l}", &p, -4000000000L);
    second = ftell(t.f);
    RAW(&t, "{trace_ts, ~p, call, {m, f, 0}, ~l}", &p, -4500000000L);
    tf_close(&t);
    assert_refused(t.path, second, "record 3", "goes back 0.500000 s", "monotonic", NULL);
    unlink(t.path);
    /* strictly monotonic times (strict_monotonic_timestamp: {Monotonic, Unique}) */
    tf_open(&t, "back-strict.trace");
    RAW(&t, "{trace_ts, ~p, call, {m, f, 0}, {~l, ~l}}", &p, -5000000000L, 1L);
    RAW(&t, "{trace_ts, ~p, call, {m, f, 0}, {~l, ~l}}", &p, -4000000000L, 2L);
    second = ftell(t.f);
    RAW(&t, "{trace_ts, ~p, call, {m, f, 0}, {~l, ~l}}", &p, -4500000000L, 3L);
    tf_close(&t);
    assert_refused(t.path, second, "record 3", "goes back 0.500000 s", "monotonic", NULL);
    unlink(t.path);
}

static void test_cpu_time_going_back_is_said(void **state)
{
    (void)state;
    tfile t;
    /* CPU times (cpu_timestamp: {0, Sec, Micro}) may go back when a process changes core */
    tf_open(&t, "cpu.trace");
    event(&t, 80, "call", "m", "top", 0, "undefined", 1000);
    event(&t, 80, "call", "m", "a", 0, "top", 2000);
    event(&t, 80, "call", "m", "b", 0, "top", 1900); /* 100 us back: no time passes */
    event(&t, 80, "return_to", "m", "top", 0, NULL, 2500);
    event(&t, 80, "return_to", NULL, NULL, 0, NULL, 3000);
    tf_close(&t);
    int rc;
    bs_read_error e;
    char *text = read_folded(t.path, (bs_dbg_opts){0}, &rc, &e);
    OK(rc);
    /* a ran from 2000 to b's call, taken as 2000: a keeps no time */
    assert_string_equal(text, "<0.80.0>;m:top/0 1500000\n"
                              "<0.80.0>;m:top/0;m:b/0 500000\n");
    assert_non_null(strstr(notes_seen, "1 messages had a CPU time (cpu_timestamp) before their process's previous "
                                       "one (by up to 0.000100 s"));
    free(text);
    unlink(t.path);
}

static void test_malformed_messages_are_refused(void **state)
{
    (void)state;
    erlang_pid p = test_pid(80);
    static const struct {
        const char *name, *fmt, *words[3];
    } cases[] = {
        {"not-pid", "{trace_ts, hello, call, {m, g, 0}, {1795, 2, 0}}", {"a traced process hello", "not a pid", NULL}},
        {"mfa", "{trace_ts, ~p, call, {1, 2, 3}, {1795, 2, 0}}", {"a call of {1,2,3}", "not {Module", NULL}},
        {"arity", "{trace_ts, ~p, call, {m, g, ~l}, {1795, 2, 0}}", {"a call of {m,g,-1}", NULL}},
        {"return", "{trace_ts, ~p, return_from, {m, g}, ok, {1795, 2, 0}}", {"a return_from of {m,g}", NULL}},
        {"negative", "{trace_ts, ~p, call, {m, g, 0}, {1795, ~l, 0}}", {"a timestamp of {1795,-2,0}", NULL}},
        {"register", "{trace_ts, ~p, register, \"x\", {1795, 2, 0}}", {"a register of", "not an atom", NULL}},
        {"absurd", "{trace_ts, ~p, call, {m, g, 0}, {255, 255, 255}}",
         {"{255,255,255} is CPU-time", "the first one's (byte 0) is wall-clock", NULL}},
        {"far", "{trace_ts, ~p, call, {m, g, 0}, {2795, 2, 0}}",
         {"{2795,2,0} is 11574.1 days after the message at byte 0", "366 days", NULL}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tfile t;
        tf_open(&t, cases[i].name);
        RAW(&t, "{trace_ts, ~p, call, {m, f, 0}, {1795, 1, 0}}", &p);
        long second = ftell(t.f);
        if (strcmp(cases[i].name, "not-pid") == 0)
            RAW(&t, cases[i].fmt);
        else if (strcmp(cases[i].name, "arity") == 0 || strcmp(cases[i].name, "negative") == 0)
            RAW(&t, cases[i].fmt, &p, -1L - (strcmp(cases[i].name, "negative") == 0));
        else
            RAW(&t, cases[i].fmt, &p);
        tf_close(&t);
        assert_refused(t.path, second, "record 2", cases[i].words[0], cases[i].words[1] ? cases[i].words[1] : "",
                       NULL);
        unlink(t.path);
    }
}

/* ---- wrap sets -------------------------------------------------------------------- */

static void make_set(const int *idx, const long *ts, int n, char **paths)
{
    for (int i = 0; i < n; i++) {
        tfile t;
        char name[32];
        snprintf(name, sizeof name, "w%d.trc", idx[i]);
        tf_open(&t, name);
        event(&t, 80, "call", "m", "f", 0, NULL, ts ? ts[i] : -1);
        tf_close(&t);
        paths[i] = strdup(t.path);
        assert_non_null(paths[i]);
    }
}

static void assert_order(char **paths, int n, const int *want)
{
    for (int i = 0; i < n; i++) {
        char suffix[32];
        snprintf(suffix, sizeof suffix, "-w%d.trc", want[i]);
        assert_non_null(strstr(paths[i], suffix));
        assert_string_equal(strstr(paths[i], suffix), suffix);
    }
}

static void test_wrap_order(void **state)
{
    (void)state;
    bs_dbg_opts o = {.note = keep_note};
    char *paths[6];
    /* wrapped around: 2 3 0 (1 is the gap); given in any order */
    const int a[] = {0, 3, 2}, a_want[] = {2, 3, 0};
    make_set(a, NULL, 3, paths);
    OK(bs_dbg_order_files(paths, 3, &o));
    assert_order(paths, 3, a_want);
    for (int i = 0; i < 3; i++) {
        unlink(paths[i]);
        free(paths[i]);
    }
    /* never wrapped, the first two deleted: 2 3 4 */
    const int b[] = {4, 2, 3}, b_want[] = {2, 3, 4};
    make_set(b, NULL, 3, paths);
    OK(bs_dbg_order_files(paths, 3, &o));
    assert_order(paths, 3, b_want);
    for (int i = 0; i < 3; i++) {
        unlink(paths[i]);
        free(paths[i]);
    }
    /* indexes missing in two places: the timestamps decide */
    const int c[] = {0, 1, 3, 5}, c_want[] = {3, 5, 0, 1};
    const long c_ts[] = {3000, 4000, 1000, 2000};
    make_set(c, c_ts, 4, paths);
    OK(bs_dbg_order_files(paths, 4, &o));
    assert_order(paths, 4, c_want);
    assert_non_null(strstr(notes_seen, "by first timestamp"));
    for (int i = 0; i < 4; i++) {
        unlink(paths[i]);
        free(paths[i]);
    }
    free(notes_seen);
    notes_seen = NULL;
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_return_from_pops_the_frame),
        cmocka_unit_test(test_caller_tail_call_and_times),
        cmocka_unit_test(test_return_from_then_return_to),
        cmocka_unit_test(test_calls_only_counts),
        cmocka_unit_test(test_errors_have_offsets),
        cmocka_unit_test(test_big_record_skipped),
        cmocka_unit_test(test_time_going_back_is_refused),
        cmocka_unit_test(test_cpu_time_going_back_is_said),
        cmocka_unit_test(test_malformed_messages_are_refused),
        cmocka_unit_test(test_wrap_order),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(notes_seen);
    return rc;
}
