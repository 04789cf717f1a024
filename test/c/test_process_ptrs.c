/* test_process_ptrs.c — the pid -> Process * table the sampler's drain
 * fills and the tracer's callbacks read (c_src/cpu/process_ptrs.h). */
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "cpu/process_ptrs.h"

/* A local pid's immediate term: number << 4 | 0x3 (its tag). */
static uint64_t pid(uint64_t n)
{
    return n << 4 | 0x3;
}

static void test_learn_and_find(void **state)
{
    (void)state;
    bs_process_ptrs t;
    assert_int_equal(bs_process_ptrs_init(&t), 0);
    assert_int_equal(bs_process_ptrs_find(&t, pid(7)), 0);
    bs_process_ptrs_learn(&t, pid(7), 0x7f0000001000);
    bs_process_ptrs_learn(&t, pid(8), 0x7f0000002000);
    assert_int_equal(bs_process_ptrs_find(&t, pid(7)), 0x7f0000001000);
    assert_int_equal(bs_process_ptrs_find(&t, pid(8)), 0x7f0000002000);
    /* Learnt once: a struct does not move, a second value is not taken. */
    bs_process_ptrs_learn(&t, pid(7), 0x7f0000009000);
    assert_int_equal(bs_process_ptrs_find(&t, pid(7)), 0x7f0000001000);
    /* Zeros are never learnt nor found. */
    bs_process_ptrs_learn(&t, 0, 0x7f0000003000);
    bs_process_ptrs_learn(&t, pid(9), 0);
    assert_int_equal(bs_process_ptrs_find(&t, 0), 0);
    assert_int_equal(bs_process_ptrs_find(&t, pid(9)), 0);
    bs_process_ptrs_free(&t);
    assert_int_equal(bs_process_ptrs_find(&t, pid(7)), 0); /* freed: nothing found, no crash */
}

/* More pids than slots: every one learnt is found with its own pointer,
 * the rest are counted and not found. */
static void test_full(void **state)
{
    (void)state;
    bs_process_ptrs t;
    assert_int_equal(bs_process_ptrs_init(&t), 0);
    const uint64_t n = 2 * BS_PROCESS_PTRS;
    for (uint64_t i = 1; i <= n; i++)
        bs_process_ptrs_learn(&t, pid(i), 0x10000 + 8 * i);
    uint64_t found = 0;
    for (uint64_t i = 1; i <= n; i++) {
        uint64_t p = bs_process_ptrs_find(&t, pid(i));
        if (p) {
            assert_int_equal(p, 0x10000 + 8 * i);
            found++;
        }
    }
    assert_true(found <= BS_PROCESS_PTRS);
    assert_true(found >= BS_PROCESS_PTRS / 2);
    assert_int_equal(found + t.full, n);
    bs_process_ptrs_free(&t);
}

/* One writer, readers meanwhile: a reader sees a pid with its own pointer
 * or not at all, never a pid with another's or a half-written one. */
typedef struct reader_arg {
    bs_process_ptrs *t;
    int bad;
} reader_arg;

static void *reader(void *arg)
{
    reader_arg *r = arg;
    for (int round = 0; round < 200; round++)
        for (uint64_t i = 1; i <= 1000; i++) {
            uint64_t p = bs_process_ptrs_find(r->t, pid(i));
            if (p && p != 0x10000 + 8 * i)
                r->bad++;
        }
    return NULL;
}

static void test_concurrent_readers(void **state)
{
    (void)state;
    bs_process_ptrs t;
    assert_int_equal(bs_process_ptrs_init(&t), 0);
    pthread_t th[2];
    reader_arg args[2] = {{&t, 0}, {&t, 0}};
    for (int k = 0; k < 2; k++)
        assert_int_equal(pthread_create(&th[k], NULL, reader, &args[k]), 0);
    for (uint64_t i = 1; i <= 1000; i++)
        bs_process_ptrs_learn(&t, pid(i), 0x10000 + 8 * i);
    for (int k = 0; k < 2; k++) {
        pthread_join(th[k], NULL);
        assert_int_equal(args[k].bad, 0);
    }
    for (uint64_t i = 1; i <= 1000; i++)
        assert_int_equal(bs_process_ptrs_find(&t, pid(i)), 0x10000 + 8 * i);
    bs_process_ptrs_free(&t);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_learn_and_find),
        cmocka_unit_test(test_full),
        cmocka_unit_test(test_concurrent_readers),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
