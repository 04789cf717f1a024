/* test_sched_work.c — a scheduler's own samples told apart
 * (cpu/sched_work.h), on the frame chains of real samples of OTP 25's
 * Debian beam.smp (bin/beamspy's folded output of an all-process mode cpu
 * session, addresses as the session saw them): spin in the unnamed wait
 * function under erts_schedule, its sched_yield and its futex; the
 * scheduler's other work (check_io, trace_sched, rwlocks) never. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cpu/sched_work.h"

#define N(a) (sizeof(a) / sizeof *(a))
#define VM(addr, sym) {addr, sym, 1}
#define LIB(addr, sym) {addr, sym, 0}

/* Under erts_schedule+0xbba (the return address 0x7e96a): the wait function. */
static const bs_sched_frame yield[] = {LIB(0xee017, "__sched_yield"), VM(0x740b3, NULL),
                                       VM(0x7e96a, "erts_schedule"), VM(0xfbefb, "erts_dirty_process_main")};
static const bs_sched_frame pause_loop[] = {VM(0x740aa, NULL), VM(0x7e96a, "erts_schedule"),
                                            VM(0xfbefb, "erts_dirty_process_main")};
static const bs_sched_frame futex[] = {LIB(0x1f00, "syscall"), VM(0x2e80, "ethr_event_twait"), VM(0x747ab, NULL),
                                       VM(0x7e96a, "erts_schedule")};
/* Another unnamed callee of erts_schedule (another call site). */
static const bs_sched_frame other_static[] = {VM(0x697f6, NULL), VM(0x80000, "erts_schedule")};
static const bs_sched_frame check_io[] = {LIB(0x1000, "epoll_wait"), VM(0x26a8e0, "erts_poll_wait"),
                                          VM(0x270326, "erts_check_io"), VM(0x749d7, NULL),
                                          VM(0x7e96a, "erts_schedule")};
static const bs_sched_frame trace_sched[] = {VM(0x1a000, "ethr_rwmutex_rlock"), VM(0x1b000, NULL),
                                             VM(0x1c000, "trace_sched"), VM(0x7e000, "erts_schedule")};
static const bs_sched_frame own_loop[] = {VM(0x7e100, "erts_schedule"), VM(0x4000, NULL)};
static const bs_sched_frame lone_syscall[] = {LIB(0x1f00, "syscall"), VM(0x747ab, NULL), VM(0x7e96a, "erts_schedule")};
static const bs_sched_frame no_scheduler[] = {LIB(0xee017, "__sched_yield"), VM(0x1064cb, NULL),
                                              VM(0x17221c, "erts_call_dirty_bif")};

static void test_wait_primitives_are_spin(void **state)
{
    (void)state;
    bs_sched_sites sites = {{0}, 0};
    assert_int_equal(bs_sched_work_of(&sites, yield, N(yield), 1), BS_SCHED_WORK_SPIN);
    assert_int_equal(bs_sched_work_of(&sites, futex, N(futex), 1), BS_SCHED_WORK_SPIN);
    assert_int_equal(sites.n, 1); /* one call site, remembered once */
    assert_true(sites.site[0] == 0x7e96a);
}

static void test_pause_loop_needs_its_call_site(void **state)
{
    (void)state;
    bs_sched_sites sites = {{0}, 0};
    /* Before any sample showed that call site reaching a wait: not told. */
    assert_int_equal(bs_sched_work_of(&sites, pause_loop, N(pause_loop), 1), BS_SCHED_WORK_OTHER);
    assert_int_equal(bs_sched_work_of(&sites, yield, N(yield), 1), BS_SCHED_WORK_SPIN);
    assert_int_equal(bs_sched_work_of(&sites, pause_loop, N(pause_loop), 1), BS_SCHED_WORK_SPIN);
    /* Another unnamed callee at another call site stays other work. */
    assert_int_equal(bs_sched_work_of(&sites, other_static, N(other_static), 1), BS_SCHED_WORK_OTHER);
}

static void test_other_work_is_never_spin(void **state)
{
    (void)state;
    bs_sched_sites sites = {{0}, 0};
    assert_int_equal(bs_sched_work_of(&sites, yield, N(yield), 1), BS_SCHED_WORK_SPIN);
    /* Polling under the same wait function is check_io, not spin. */
    assert_int_equal(bs_sched_work_of(&sites, check_io, N(check_io), 1), BS_SCHED_WORK_OTHER);
    assert_int_equal(bs_sched_work_of(&sites, trace_sched, N(trace_sched), 1), BS_SCHED_WORK_OTHER);
    assert_int_equal(bs_sched_work_of(&sites, own_loop, N(own_loop), 1), BS_SCHED_WORK_OTHER);
    assert_int_equal(bs_sched_work_of(&sites, lone_syscall, N(lone_syscall), 1), BS_SCHED_WORK_OTHER);
    /* A dirty BIF's own sched_yield (a process's work): no erts_schedule. */
    assert_int_equal(bs_sched_work_of(&sites, no_scheduler, N(no_scheduler), 1), BS_SCHED_WORK_OTHER);
    assert_int_equal(bs_sched_work_of(&sites, yield, 0, 1), BS_SCHED_WORK_OTHER);
}

static void test_not_unwound_reads_the_leaf(void **state)
{
    (void)state;
    bs_sched_sites sites = {{0}, 0};
    assert_int_equal(bs_sched_work_of(&sites, yield, 1, 0), BS_SCHED_WORK_SPIN);
    assert_int_equal(bs_sched_work_of(&sites, futex + 1, 1, 0), BS_SCHED_WORK_SPIN); /* ethr_event_twait */
    assert_int_equal(bs_sched_work_of(&sites, pause_loop, 1, 0), BS_SCHED_WORK_OTHER);
    assert_int_equal(bs_sched_work_of(&sites, futex, 1, 0), BS_SCHED_WORK_OTHER); /* a lone syscall */
    assert_int_equal(sites.n, 0);
}

/* Debian's OTP 29 beam.smp names none of its functions (no erts_schedule,
 * no ethr_event_*): a dirty CPU scheduler's real chain there, leaf first.
 * Only the leaf can tell: sched_yield is spin, the pause loop is not told. */
static const bs_sched_frame stripped_yield[] = {LIB(0xee017, "__sched_yield"), VM(0x90000, NULL), VM(0x91000, NULL),
                                                VM(0x92000, NULL), LIB(0x2000, NULL), LIB(0x3000, NULL)};
static const bs_sched_frame stripped_pause[] = {VM(0x90010, NULL), VM(0x91000, NULL), VM(0x92000, NULL),
                                                LIB(0x2000, NULL)};

static void test_stripped_vm_reads_the_leaf(void **state)
{
    (void)state;
    bs_sched_sites sites = {{0}, 0};
    assert_int_equal(bs_sched_work_of(&sites, stripped_yield, N(stripped_yield), 1), BS_SCHED_WORK_SPIN);
    assert_int_equal(bs_sched_work_of(&sites, stripped_pause, N(stripped_pause), 1), BS_SCHED_WORK_OTHER);
    /* A VM that names its functions but not erts_schedule here: a dirty
     * BIF's own sched_yield stays the process's work. */
    assert_int_equal(bs_sched_work_of(&sites, no_scheduler, N(no_scheduler), 1), BS_SCHED_WORK_OTHER);
    assert_int_equal(sites.n, 0);
}

static void test_call_sites_are_bounded(void **state)
{
    (void)state;
    bs_sched_sites sites = {{0}, 0};
    bs_sched_frame f[] = {LIB(0xee017, "__sched_yield"), VM(0x740b3, NULL), VM(0, "erts_schedule")};
    for (uint64_t i = 0; i < 3 * BS_SCHED_WAIT_SITES; i++) {
        f[2].addr = 0x7e000 + i;
        assert_int_equal(bs_sched_work_of(&sites, f, N(f), 1), BS_SCHED_WORK_SPIN);
    }
    assert_int_equal(sites.n, BS_SCHED_WAIT_SITES);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wait_primitives_are_spin),
        cmocka_unit_test(test_pause_loop_needs_its_call_site),
        cmocka_unit_test(test_other_work_is_never_spin),
        cmocka_unit_test(test_not_unwound_reads_the_leaf),
        cmocka_unit_test(test_stripped_vm_reads_the_leaf),
        cmocka_unit_test(test_call_sites_are_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
