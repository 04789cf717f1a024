/* test_thread_slices.c — the per-thread logs that join CPU samples to
 * processes (cpu/thread_slices.h): a sample is charged to the process that
 * held its thread at its time, to none between slices, to unknown before
 * anything was logged and after the writer lapped the reader (counted);
 * and a real writer thread appending while the reader asks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>

#include "cpu/thread_slices.h"

static void test_join(void **state)
{
    (void)state;
    int tids[] = {300, 100, 200};
    bs_thread_slices ts;
    assert_int_equal(bs_thread_slices_init(&ts, tids, 3), 0);
    bs_thread_log *l = bs_thread_slices_log(&ts, 200);
    assert_non_null(l);
    assert_int_equal(l->tid, 200);
    assert_null(bs_thread_slices_log(&ts, 250));
    uint64_t pid = 99;
    assert_int_equal(bs_thread_log_at(&ts, l, 5, &pid), 0); /* nothing logged yet */
    bs_thread_log_switch(l, 10, 0xA1);
    bs_thread_log_switch(l, 20, 0);
    bs_thread_log_switch(l, 30, 0xB2);
    assert_int_equal(bs_thread_log_at(&ts, l, 9, &pid), 0);
    assert_int_equal(bs_thread_log_at(&ts, l, 10, &pid), 1);
    assert_int_equal(pid, 0xA1);
    assert_int_equal(bs_thread_log_at(&ts, l, 15, &pid), 1);
    assert_int_equal(pid, 0xA1);
    assert_int_equal(bs_thread_log_at(&ts, l, 25, &pid), 1);
    assert_int_equal(pid, 0);
    assert_int_equal(bs_thread_log_at(&ts, l, 1000, &pid), 1);
    assert_int_equal(pid, 0xB2);
    /* another thread's log is its own */
    assert_int_equal(bs_thread_log_at(&ts, bs_thread_slices_log(&ts, 100), 1000, &pid), 0);
    assert_int_equal(atomic_load(&ts.lost), 0);
    bs_thread_slices_free(&ts);
}

static void test_lapped(void **state)
{
    (void)state;
    int tid = 7;
    bs_thread_slices ts;
    assert_int_equal(bs_thread_slices_init(&ts, &tid, 1), 0);
    bs_thread_log *l = &ts.logs[0];
    uint64_t n = BS_SLICE_RING + 100, pid;
    for (uint64_t i = 0; i < n; i++)
        bs_thread_log_switch(l, 10 + i, i + 1);
    /* the first 100 entries were overwritten before they were read */
    assert_int_equal(bs_thread_log_at(&ts, l, 10 + 50, &pid), 0);
    assert_int_equal(atomic_load(&ts.lost), 100);
    assert_int_equal(bs_thread_log_at(&ts, l, 10 + 150, &pid), 1);
    assert_int_equal(pid, 151);
    assert_int_equal(bs_thread_log_at(&ts, l, 10 + n, &pid), 1);
    assert_int_equal(pid, n);
    bs_thread_slices_free(&ts);
}

typedef struct writer_arg {
    bs_thread_log *log;
    uint64_t n;
} writer_arg;

static void *writer(void *p)
{
    writer_arg *a = p;
    for (uint64_t i = 1; i <= a->n; i++)
        bs_thread_log_switch(a->log, i * 2, i % 2 ? i : 0); /* odd entries: a process; even: none */
    return NULL;
}

/* A writer thread appends while the reader asks in time order: every
 * answer is one the writer could have given at that time. */
static void test_concurrent(void **state)
{
    (void)state;
    int tid = 1;
    bs_thread_slices ts;
    assert_int_equal(bs_thread_slices_init(&ts, &tid, 1), 0);
    writer_arg a = {&ts.logs[0], 200000};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, writer, &a), 0);
    uint64_t known = 0;
    for (uint64_t t = 1; t <= 2 * a.n + 1; t += 7) {
        uint64_t pid;
        if (!bs_thread_log_at(&ts, &ts.logs[0], t, &pid))
            continue;
        known++;
        /* entry i (time 2i) holds i when odd, else 0: the newest entry
         * read is at or before t */
        assert_true(pid == 0 || (pid % 2 == 1 && pid * 2 <= t));
    }
    assert_int_equal(pthread_join(th, NULL), 0);
    uint64_t pid;
    assert_int_equal(bs_thread_log_at(&ts, &ts.logs[0], UINT64_MAX, &pid), 1);
    assert_int_equal(pid, 0); /* the last entry (even) */
    (void)known;
    bs_thread_slices_free(&ts);
}

static void test_tid(void **state)
{
    (void)state;
    assert_true(bs_current_tid() > 0);
    assert_int_equal(bs_current_tid(), bs_current_tid());
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_join),
        cmocka_unit_test(test_lapped),
        cmocka_unit_test(test_concurrent),
        cmocka_unit_test(test_tid),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
