/* test_hot_counts.c — top's window of samples per function
 * (cpu/hot_counts.h): counts per frame, the most sampled first (ties by
 * name), names copied and cut at their cap, a full table counting the rest
 * in `others', and a reset starting an empty window. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cpu/hot_counts.h"

static void test_most_first(void **state)
{
    (void)state;
    bs_hot_counts h;
    assert_int_equal(bs_hot_counts_init(&h), 0);
    for (int i = 0; i < 5; i++)
        bs_hot_counts_add(&h, 7, "m\x01" "five\x01" "1");
    for (int i = 0; i < 2; i++)
        bs_hot_counts_add(&h, 3, "m\x01" "two_b\x01" "0");
    for (int i = 0; i < 2; i++)
        bs_hot_counts_add(&h, 9, "m\x01" "two_a\x01" "0");
    bs_hot_counts_add(&h, 1, "m\x01" "one\x01" "2");
    bs_hot_entry out[3];
    assert_int_equal(bs_hot_counts_top(&h, out, 3), 3);
    assert_int_equal(out[0].count, 5);
    assert_string_equal(out[0].name, "m\x01" "five\x01" "1");
    assert_int_equal(out[1].count, 2);
    assert_string_equal(out[1].name, "m\x01" "two_a\x01" "0"); /* ties by name */
    assert_string_equal(out[2].name, "m\x01" "two_b\x01" "0");
    bs_hot_entry all[10];
    assert_int_equal(bs_hot_counts_top(&h, all, 10), 4);
    assert_int_equal(all[3].count, 1);
    bs_hot_counts_reset(&h);
    assert_int_equal(bs_hot_counts_top(&h, all, 10), 0);
    bs_hot_counts_free(&h);
}

static void test_long_names_cut(void **state)
{
    (void)state;
    bs_hot_counts h;
    assert_int_equal(bs_hot_counts_init(&h), 0);
    char name[600];
    memset(name, 'x', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    bs_hot_counts_add(&h, 1, name);
    bs_hot_entry out[1];
    assert_int_equal(bs_hot_counts_top(&h, out, 1), 1);
    assert_int_equal(strlen(out[0].name), BS_HOT_NAME_MAX);
    bs_hot_counts_free(&h);
}

static void test_full_table_counts_others(void **state)
{
    (void)state;
    bs_hot_counts h;
    assert_int_equal(bs_hot_counts_init(&h), 0);
    char name[32];
    for (uint32_t f = 0; f < BS_HOT_SLOTS; f++) {
        snprintf(name, sizeof name, "m\x01" "f%u\x01" "0", f);
        bs_hot_counts_add(&h, f, name);
    }
    assert_int_equal(h.used, BS_HOT_SLOTS / 2);
    assert_int_equal(h.others, BS_HOT_SLOTS / 2);
    bs_hot_counts_add(&h, 0, "m\x01" "f0\x01" "0"); /* a function it holds still counts */
    bs_hot_entry out[1];
    assert_int_equal(bs_hot_counts_top(&h, out, 1), 1);
    assert_int_equal(out[0].count, 2);
    bs_hot_counts_free(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_most_first),
        cmocka_unit_test(test_long_names_cut),
        cmocka_unit_test(test_full_table_counts_others),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
