/* test_perf_sampler.c — the CPU sampler of mode cpu (cpu/perf_sampler.h,
 * cpu/vm_threads.h) on real threads of this process: scheduler names told
 * from others; the process's threads listed with their names and kinds; a
 * thread spinning 500 ms of CPU sampled at 999 Hz (samples carry its tid,
 * times within the run and in order, and chains walked through the frame
 * pointers of the spinning functions), a sleeping thread sampled beside it
 * taking none; a ring nobody drains found full; a thread that exits while
 * sampled; a thread that is gone before the open; perf_event_open refused
 * by a seccomp filter in a child; the same busy thread sampled with its user
 * registers and a copy of its stack (the second sample layout), whose frame
 * pointers walked through the copy give the kernel's chain; on x86_64 a
 * thread spinning with a known value in r13 sampled without stack copies,
 * each sample in that loop carrying it (mode cpu reads the running
 * process from r13); the refusal sentences for the other causes
 * (perf_event_paranoid 3 does not refuse root, so that case is tested on the
 * sentence builder). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

#include "cpu/dwarf_unwind.h"
#include "cpu/perf_sampler.h"
#include "cpu/vm_threads.h"

#define HZ 999

/* ------------------------- thread names and kinds ------------------------- */

static void test_thread_kind_names(void **state)
{
    (void)state;
    assert_int_equal(bs_vm_thread_kind("1_scheduler"), BS_THREAD_SCHEDULER);
    assert_int_equal(bs_vm_thread_kind("128_scheduler"), BS_THREAD_SCHEDULER);
    assert_int_equal(bs_vm_thread_kind("12_dirty_cpu_sc"), BS_THREAD_DIRTY_CPU); /* cut at 15 */
    assert_int_equal(bs_vm_thread_kind("2_dirty_cpu_sch"), BS_THREAD_DIRTY_CPU);
    assert_int_equal(bs_vm_thread_kind("3_dirty_io_sche"), BS_THREAD_DIRTY_IO);
    assert_int_equal(bs_vm_thread_kind("10_dirty_io_sch"), BS_THREAD_DIRTY_IO);
    assert_int_equal(bs_vm_thread_kind("1_dirty_cpu_scheduler"), BS_THREAD_DIRTY_CPU);
    assert_int_equal(bs_vm_thread_kind("erts_sched_sys_"), BS_THREAD_OTHER);
    /* the names of OTP 26 and later (seen on OTP 27 and 29) */
    assert_int_equal(bs_vm_thread_kind("erts_sched_1"), BS_THREAD_SCHEDULER);
    assert_int_equal(bs_vm_thread_kind("erts_sched_128"), BS_THREAD_SCHEDULER);
    assert_int_equal(bs_vm_thread_kind("erts_dcpus_2"), BS_THREAD_DIRTY_CPU);
    assert_int_equal(bs_vm_thread_kind("erts_dios_10"), BS_THREAD_DIRTY_IO);
    assert_int_equal(bs_vm_thread_kind("erts_sched_"), BS_THREAD_OTHER);
    assert_int_equal(bs_vm_thread_kind("erts_smsg_disp"), BS_THREAD_OTHER);
    assert_int_equal(bs_vm_thread_kind("erts_dios_1x"), BS_THREAD_OTHER);
    assert_int_equal(bs_vm_thread_kind("aux"), BS_THREAD_OTHER);
    assert_int_equal(bs_vm_thread_kind("beam.smp"), BS_THREAD_OTHER);
    assert_int_equal(bs_vm_thread_kind("_scheduler"), BS_THREAD_OTHER);    /* no number */
    assert_int_equal(bs_vm_thread_kind("1_"), BS_THREAD_OTHER);            /* no suffix */
    assert_int_equal(bs_vm_thread_kind("1_sched"), BS_THREAD_OTHER);       /* cut, yet short */
    assert_int_equal(bs_vm_thread_kind("1_schedulers"), BS_THREAD_OTHER);
    assert_int_equal(bs_vm_thread_kind("1scheduler"), BS_THREAD_OTHER);
    assert_int_equal(bs_vm_thread_kind(""), BS_THREAD_OTHER);
}

/* --------------------- threads that wait to be released --------------------- */

typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int open;
} gate;

#define GATE_INIT {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0}

static void gate_wait(gate *g)
{
    pthread_mutex_lock(&g->mu);
    while (!g->open)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

static void gate_open(gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->open = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static int gettid_(void)
{
    return (int)syscall(SYS_gettid);
}

typedef struct worker {
    const char *name;
    _Atomic int tid;     /* set once named */
    gate *go;            /* waited for once named */
    uint64_t cpu_ns;     /* CPU to spin after go (0: none) */
    gate *release;       /* then waited for (NULL: exit) */
    int depth;           /* frames of spin_outer under the spin */
    uint64_t spun_ns;    /* CPU time the spin took */
} worker;

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The spinning functions, each in its own section so that the linker's
 * __start_/__stop_ symbols bound its code exactly, with frame pointers so
 * that the kernel's walk goes from the inner one to the outer one (the asan
 * variant is built with -fno-omit-frame-pointer; gcc's gets it here). */
#if defined(__clang__)
#define SPIN_FN(sec) __attribute__((noinline, used, section(sec)))
#else
#define SPIN_FN(sec) __attribute__((noinline, noclone, used, section(sec), optimize("no-omit-frame-pointer")))
#endif
extern const char __start_bs_spin_inner[], __stop_bs_spin_inner[];
extern const char __start_bs_spin_outer[], __stop_bs_spin_outer[];
static volatile uint64_t spin_sink;

SPIN_FN("bs_spin_inner") uint64_t spin_inner(uint64_t x)
{
    /* gcc leaves leaf functions without a frame pointer even when told to
     * keep them; asking for the frame's address makes it set one up */
    __asm__ volatile("" : : "r"(__builtin_frame_address(0)));
    for (int i = 0; i < 100000; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        __asm__ volatile("" : "+r"(x));
    }
    return x;
}

/* Spins in spin_inner under DEPTH more frames of itself: deep chains make
 * records of ~400 bytes, so 300 of them go round the 32 KiB ring several
 * times and some lie across its end. */
#define DEPTH 40
SPIN_FN("bs_spin_outer") uint64_t spin_outer(uint64_t cpu_ns, int depth)
{
    if (depth > 0)
        return spin_outer(cpu_ns, depth - 1) + (spin_sink & 1); /* not a tail call */
    uint64_t start = thread_cpu_ns(), x = 1;
    while (thread_cpu_ns() - start < cpu_ns)
        x = spin_inner(x);
    spin_sink = x & ~(uint64_t)1;
    return thread_cpu_ns() - start;
}

static int in_range(uint64_t ip, const char *start, const char *stop)
{
    return ip >= (uint64_t)(uintptr_t)start && ip < (uint64_t)(uintptr_t)stop;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    pthread_setname_np(pthread_self(), w->name);
    atomic_store(&w->tid, gettid_());
    if (w->go)
        gate_wait(w->go);
    if (w->cpu_ns)
        w->spun_ns = spin_outer(w->cpu_ns, w->depth);
    if (w->release)
        gate_wait(w->release);
    return NULL;
}

static void start_worker(pthread_t *t, worker *w)
{
    atomic_store(&w->tid, 0);
    assert_int_equal(pthread_create(t, NULL, worker_main, w), 0);
    while (atomic_load(&w->tid) == 0)
        sched_yield();
}

static void test_threads_list_own(void **state)
{
    (void)state;
    gate release = GATE_INIT;
    worker w1 = {.name = "1_scheduler", .release = &release};
    worker w2 = {.name = "2_dirty_cpu_sch", .release = &release};
    pthread_t t1, t2;
    start_worker(&t1, &w1);
    start_worker(&t2, &w2);

    bs_vm_thread threads[64];
    int n = bs_vm_threads_list(threads, 64);
    assert_true(n >= 3);
    assert_true(n <= 64);
    int seen1 = 0, seen2 = 0, seen_main = 0;
    for (int i = 0; i < n; i++) {
        if (threads[i].tid == atomic_load(&w1.tid)) {
            seen1++;
            assert_string_equal(threads[i].name, "1_scheduler");
            assert_int_equal(threads[i].kind, BS_THREAD_SCHEDULER);
        } else if (threads[i].tid == atomic_load(&w2.tid)) {
            seen2++;
            assert_string_equal(threads[i].name, "2_dirty_cpu_sch");
            assert_int_equal(threads[i].kind, BS_THREAD_DIRTY_CPU);
        } else if (threads[i].tid == getpid()) {
            seen_main++;
            assert_int_equal(threads[i].kind, BS_THREAD_OTHER);
        }
    }
    assert_int_equal(seen1, 1);
    assert_int_equal(seen2, 1);
    assert_int_equal(seen_main, 1);

    /* a cap smaller than the threads: the count says so, nothing written past it */
    bs_vm_thread two[2];
    memset(two, 0x5a, sizeof two);
    assert_int_equal(bs_vm_threads_list(two, 1), n);
    assert_true(two[0].tid > 0);
    assert_int_equal(two[1].tid, 0x5a5a5a5a);

    gate_open(&release);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
}

/* ------------------------------ real sampling ------------------------------ */

#define MAX_KEPT 8192

typedef struct kept {
    int tid;
    uint64_t time_ns;
    uint32_t n_ips;
    int leaf_inner;   /* the sampled instruction is in spin_inner */
    int caller_outer; /* ...and the next address returns into spin_outer */
    uint32_t outer_run; /* spin_outer's return addresses right after the leaf */
    int any_spin;     /* some address of the chain is in either */
    int truncated;
} kept;

typedef struct collected {
    size_t n, dropped;
    kept k[MAX_KEPT];
} collected;

static void keep_sample(void *ctx, const bs_cpu_sample *s)
{
    collected *c = ctx;
    if (c->n == MAX_KEPT) {
        c->dropped++;
        return;
    }
    kept *k = &c->k[c->n++];
    k->tid = s->tid;
    k->time_ns = s->time_ns;
    k->n_ips = s->n_ips;
    k->truncated = s->chain_truncated;
    k->leaf_inner = s->n_ips > 0 && in_range(s->ips[0], __start_bs_spin_inner, __stop_bs_spin_inner);
    k->caller_outer = k->leaf_inner && s->n_ips > 1 &&
                      in_range(s->ips[1], __start_bs_spin_outer, __stop_bs_spin_outer);
    k->outer_run = 0;
    for (uint32_t i = 1; i < s->n_ips; i++) {
        if (!in_range(s->ips[i], __start_bs_spin_outer, __stop_bs_spin_outer))
            break;
        k->outer_run++;
    }
    k->any_spin = 0;
    for (uint32_t i = 0; i < s->n_ips; i++)
        if (in_range(s->ips[i], __start_bs_spin_inner, __stop_bs_spin_inner) ||
            in_range(s->ips[i], __start_bs_spin_outer, __stop_bs_spin_outer))
            k->any_spin = 1;
}

static void drain_timed(bs_perf_sampler *s, collected *c, uint64_t *drain_ns, size_t *drained,
                        unsigned *drains)
{
    uint64_t t0 = mono_ns();
    *drained += bs_perf_sampler_drain(s, keep_sample, c);
    *drain_ns += mono_ns() - t0;
    ++*drains;
}

static void test_sampling_busy_thread(void **state)
{
    (void)state;
    gate go = GATE_INIT, release = GATE_INIT;
    worker busy = {.name = "1_scheduler", .go = &go, .cpu_ns = 500 * 1000000u, .depth = DEPTH};
    worker idle = {.name = "2_scheduler", .release = &release};
    pthread_t tb, ti;
    start_worker(&tb, &busy);
    start_worker(&ti, &idle);

    int tids[2] = {atomic_load(&busy.tid), atomic_load(&idle.tid)};
    char why[512];
    bs_perf_sampler *s = NULL;
    if (bs_perf_sampler_open(&s, tids, 2, HZ, why, sizeof why) != 0)
        fail_msg("open: %s", why);

    collected *c = calloc(1, sizeof *c);
    assert_non_null(c);
    uint64_t drain_ns = 0, t_start = mono_ns();
    size_t drained = 0;
    unsigned drains = 0;
    assert_int_equal(bs_perf_sampler_enable(s), 0);
    gate_open(&go);
    /* drain every 10 ms while it spins, as the NIF's thread does */
    for (;;) {
        int r = pthread_tryjoin_np(tb, NULL);
        drain_timed(s, c, &drain_ns, &drained, &drains);
        if (r == 0)
            break;
        nanosleep(&(struct timespec){0, 10 * 1000000}, NULL);
    }
    assert_int_equal(bs_perf_sampler_disable(s), 0);
    drain_timed(s, c, &drain_ns, &drained, &drains);
    uint64_t t_end = mono_ns();
    gate_open(&release);
    pthread_join(ti, NULL);

    bs_perf_stats st;
    bs_perf_sampler_stats(s, &st);
    assert_int_equal(st.threads, 2);
    assert_int_equal(st.samples, drained);
    assert_int_equal(st.malformed, 0);
    assert_true(st.max_stack > 0);
    assert_int_equal(c->dropped, 0);
    assert_int_equal(c->n, drained);

    /* The task clock runs with the thread's CPU time: 500 ms at 999 Hz is
     * ~500 samples on a quiet machine. Fewer come on a loaded one (2/3 of
     * them were seen at a load of 6 on 2 cores: a tick that falls in the
     * kernel, e.g. while the thread is switched in, is not a user-space
     * sample), so a tenth is asked. */
    size_t busy_samples = 0, fp_walked = 0, any_spin = 0, short_chain = 0;
    uint64_t last = 0;
    for (size_t i = 0; i < c->n; i++) {
        const kept *k = &c->k[i];
        assert_int_equal(k->tid, busy.tid); /* the sleeping thread takes none */
        assert_true(k->time_ns >= t_start && k->time_ns <= t_end);
        assert_true(k->time_ns >= last);
        assert_true(k->n_ips >= 1);
        assert_false(k->truncated);
        last = k->time_ns;
        busy_samples++;
        fp_walked += k->caller_outer;
        /* every frame of the recursion, each once (the caller of the
         * outermost is not in the section) */
        if (k->caller_outer && k->outer_run != DEPTH + 1)
            short_chain++;
        any_spin += k->any_spin;
    }
    assert_true(busy_samples >= 50);
    printf("busy thread: %llu ring bytes, %zu samples in %.0f ms of its CPU (%.0f per CPU second), %llu lost; "
           "%zu in spin_inner called from spin_outer, %zu with either in the chain, %zu short; "
           "drain %.0f ns per sample (%u drains, %.3f ms in all)\n",
           (unsigned long long)st.bytes, busy_samples, busy.spun_ns / 1e6, busy_samples / (busy.spun_ns / 1e9),
           (unsigned long long)st.lost, fp_walked, any_spin, short_chain,
           busy_samples ? (double)drain_ns / (double)busy_samples : 0.0, drains, drain_ns / 1e6);
    if (RUNNING_ON_VALGRIND) {
        /* valgrind runs its own translation of the code: the kernel sees
         * valgrind's addresses and frame pointers, never the program's */
        printf("SKIP [valgrind] the chains' addresses (valgrind runs translated code)\n");
    } else {
        /* a record decoded wrongly (one lying across the ring's end) has
         * garbage for frames; a sample taken in spin_inner's first two
         * instructions (about 1 in 100,000) may miss one, a broken copy across
         * the end leaves several (3 or 4 records lie across it) */
        assert_true(short_chain <= 1);
        assert_true(st.bytes > 2 * (uint64_t)BS_PERF_RING_PAGES * (uint64_t)sysconf(_SC_PAGESIZE)); /* round the ring twice */
        assert_true(fp_walked * 2 >= busy_samples);
        assert_true(any_spin * 2 >= busy_samples);
    }
    bs_perf_sampler_close(s);
    free(c);
}

/* The layout with user registers and stack copies: every sample of the busy
 * thread has them, the sampled ip is the chain's leaf, sp lies in the
 * thread's stack and the copy starts there, and a frame-pointer walk through
 * the copy alone (bs_fp_walk, no reader) gives the kernel's own chain for the
 * frames the copy holds: the copy is the thread's stack as it was. */
typedef struct regs_seen {
    size_t samples, with_regs, ip_is_leaf, sp_in_stack, walks, walks_equal, walk_frames;
    size_t max_copy;
    uint64_t stack_lo, stack_hi;
} regs_seen;

static void check_regs(void *ctx, const bs_cpu_sample *s)
{
    regs_seen *r = ctx;
    r->samples++;
    if (!s->has_regs)
        return;
    r->with_regs++;
    if (s->stack_size > r->max_copy)
        r->max_copy = s->stack_size;
    r->ip_is_leaf += s->n_ips > 0 && s->ips[0] == s->ip;
    r->sp_in_stack += s->sp >= r->stack_lo && s->sp < r->stack_hi;
    if (s->n_ips < 3 || !in_range(s->ips[0], __start_bs_spin_inner, __stop_bs_spin_inner))
        return;
    bs_stack_copy copy = {.sp = s->sp, .data = s->stack, .size = s->stack_size};
    bs_user_regs at = {.ip = s->ip, .sp = s->sp, .bp = s->bp};
    uint64_t walked[64];
    size_t n = bs_fp_walk(&at, &copy, NULL, walked, 64);
    r->walks++;
    size_t same = n < s->n_ips ? n : s->n_ips;
    int equal = n >= 3;
    for (size_t i = 0; i < same; i++)
        if (walked[i] != s->ips[i])
            equal = 0;
    r->walks_equal += equal;
    r->walk_frames += n;
}

#if defined(__x86_64__)
/* A loop that holds R13_MAGIC in r13 the whole time, as BEAMAsm holds the
 * running Process * there; its own section bounds it, and the loop itself
 * (bs_r13_loop to bs_r13_loop_end) is where r13 is certain. */
#define R13_MAGIC 0x5eed0000c0ffee03ull
extern const char bs_r13_loop[], bs_r13_loop_end[];
SPIN_FN("bs_r13_spin") void r13_spin(uint64_t iters)
{
    __asm__ volatile("movabs $0x5eed0000c0ffee03, %%r13\n\t"
                     "bs_r13_loop:\n\t"
                     "dec %0\n\t"
                     "jnz bs_r13_loop\n\t"
                     "bs_r13_loop_end:\n\t"
                     : "+r"(iters)
                     :
                     : "r13", "cc");
}

typedef struct r13_worker {
    _Atomic int tid;
    gate *go;
    uint64_t cpu_ns;
} r13_worker;

static void *r13_main(void *arg)
{
    r13_worker *w = arg;
    atomic_store(&w->tid, gettid_());
    gate_wait(w->go);
    uint64_t start = thread_cpu_ns();
    while (thread_cpu_ns() - start < w->cpu_ns)
        r13_spin(1000000);
    return NULL;
}

typedef struct r13_seen {
    size_t samples, with_regs, in_loop, magic;
} r13_seen;

static void check_r13(void *ctx, const bs_cpu_sample *s)
{
    r13_seen *r = ctx;
    r->samples++;
    if (!s->has_regs)
        return;
    r->with_regs++;
    assert_null(s->stack); /* no stack copies asked for */
    if (!in_range(s->ip, bs_r13_loop, bs_r13_loop_end + 1))
        return;
    r->in_loop++;
    r->magic += s->r13 == R13_MAGIC;
}

static void test_r13_sampled(void **state)
{
    (void)state;
    gate go = GATE_INIT;
    r13_worker w = {.go = &go, .cpu_ns = 200 * 1000000u};
    pthread_t t;
    atomic_store(&w.tid, 0);
    assert_int_equal(pthread_create(&t, NULL, r13_main, &w), 0);
    while (atomic_load(&w.tid) == 0)
        sched_yield();
    int tid = atomic_load(&w.tid);
    char why[512];
    bs_perf_sampler *s = NULL;
    if (bs_perf_sampler_open(&s, &tid, 1, HZ, why, sizeof why) != 0)
        fail_msg("open: %s", why);
    assert_int_equal(bs_perf_sampler_enable(s), 0);
    gate_open(&go);
    r13_seen r = {0, 0, 0, 0};
    for (;;) {
        int done = pthread_tryjoin_np(t, NULL) == 0;
        (void)bs_perf_sampler_drain(s, check_r13, &r);
        if (done)
            break;
        nanosleep(&(struct timespec){0, 10 * 1000000}, NULL);
    }
    assert_int_equal(bs_perf_sampler_disable(s), 0);
    (void)bs_perf_sampler_drain(s, check_r13, &r);
    bs_perf_stats st;
    bs_perf_sampler_stats(s, &st);
    printf("r13: %zu samples, %zu with registers, %zu in the loop, %zu of them with r13 = %#llx\n", r.samples,
           r.with_regs, r.in_loop, r.magic, (unsigned long long)R13_MAGIC);
    assert_int_equal(st.malformed, 0);
    assert_true(r.samples >= 20); /* 200 ms at 999 Hz: ~200 on a quiet machine */
    assert_int_equal(r.with_regs, r.samples);
    assert_int_equal(st.with_regs, 0); /* counts stack copies */
    if (RUNNING_ON_VALGRIND) {
        printf("SKIP [valgrind] r13 in the loop (valgrind runs translated code)\n");
    } else {
        assert_true(r.in_loop * 2 >= r.samples);
        assert_int_equal(r.magic, r.in_loop);
    }
    bs_perf_sampler_close(s);
}
#endif

static void test_sampling_with_stack_copies(void **state)
{
    (void)state;
    gate go = GATE_INIT;
    worker busy = {.name = "1_scheduler", .go = &go, .cpu_ns = 300 * 1000000u, .depth = DEPTH};
    pthread_t tb;
    start_worker(&tb, &busy);
    pthread_attr_t attr;
    void *stack_addr;
    size_t stack_size;
    assert_int_equal(pthread_getattr_np(tb, &attr), 0);
    assert_int_equal(pthread_attr_getstack(&attr, &stack_addr, &stack_size), 0);
    pthread_attr_destroy(&attr);
    regs_seen *r = calloc(1, sizeof *r);
    assert_non_null(r);
    r->stack_lo = (uint64_t)(uintptr_t)stack_addr;
    r->stack_hi = r->stack_lo + stack_size;

    int tid = atomic_load(&busy.tid);
    char why[512];
    bs_perf_sampler *s = NULL;
    assert_int_equal(bs_perf_sampler_open_ex(&s, &tid, 1, HZ, 1, 12, why, sizeof why), -1); /* not a multiple of 8 */
    assert_non_null(strstr(why, "multiple of 8"));
    if (bs_perf_sampler_open_ex(&s, &tid, 1, HZ, 1, BS_PERF_STACK_BYTES, why, sizeof why) != 0)
        fail_msg("open: %s", why);
    assert_int_equal(bs_perf_sampler_enable(s), 0);
    gate_open(&go);
    for (;;) {
        int done = pthread_tryjoin_np(tb, NULL) == 0;
        (void)bs_perf_sampler_drain(s, check_regs, r);
        if (done)
            break;
        nanosleep(&(struct timespec){0, 10 * 1000000}, NULL);
    }
    assert_int_equal(bs_perf_sampler_disable(s), 0);
    (void)bs_perf_sampler_drain(s, check_regs, r);
    bs_perf_stats st;
    bs_perf_sampler_stats(s, &st);
    printf("stack copies: %zu samples, %zu with registers, largest copy %zu bytes, %llu lost, ring %u KiB; "
           "%zu walks through the copy, %zu equal to the kernel's chain (%zu frames)\n",
           r->samples, r->with_regs, r->max_copy, (unsigned long long)st.lost, st.ring_kib, r->walks,
           r->walks_equal, r->walk_frames);
    assert_int_equal(st.malformed, 0);
    assert_true(r->samples >= 30); /* 300 ms at 999 Hz: ~300 on a quiet machine */
    /* Every sample of a running thread has its registers and a user chain
     * that starts at its ip; a sample taken as the thread exits (its memory
     * map already gone) has neither, and the worker exits while sampled:
     * at most two such (under valgrind, whose thread exit is long). */
    assert_int_equal(st.with_regs, r->with_regs);
    assert_true(r->with_regs + 2 >= r->samples);
    assert_true(r->ip_is_leaf + 2 >= r->with_regs);
    assert_true(r->max_copy > 0 && r->max_copy <= BS_PERF_STACK_BYTES);
    assert_int_equal(st.stack_bytes_used, r->max_copy);
    if (RUNNING_ON_VALGRIND) {
        /* valgrind runs the thread on a stack of its own */
        printf("SKIP [valgrind] sp in the thread's stack, the walk through the copy (valgrind runs translated code)\n");
    } else {
        assert_true(r->sp_in_stack + 2 >= r->samples);
        /* spin_inner's first two instructions have no frame yet: a rare sample there differs */
        assert_true(r->walks * 2 >= r->samples);
        assert_true(r->walks_equal + 2 >= r->walks);
        assert_true(r->walk_frames >= r->walks * (DEPTH / 2)); /* the copy holds the 40 frames */
    }
    bs_perf_sampler_close(s);
    free(r);
}

/* A thread that exits while it is sampled: its samples come, then nothing,
 * and enable, disable, drain and close still work. */
static void test_thread_exits_while_sampled(void **state)
{
    (void)state;
    gate go = GATE_INIT;
    worker w = {.name = "3_scheduler", .go = &go, .cpu_ns = 50 * 1000000u};
    pthread_t t;
    start_worker(&t, &w);
    int tid = atomic_load(&w.tid);
    char why[512];
    bs_perf_sampler *s = NULL;
    if (bs_perf_sampler_open(&s, &tid, 1, HZ, why, sizeof why) != 0)
        fail_msg("open: %s", why);
    assert_int_equal(bs_perf_sampler_enable(s), 0);
    gate_open(&go);
    pthread_join(t, NULL);
    collected *c = calloc(1, sizeof *c);
    assert_non_null(c);
    size_t n = bs_perf_sampler_drain(s, keep_sample, c);
    assert_true(n >= 5); /* 50 ms of its CPU at 999 Hz: ~50 */
    for (size_t i = 0; i < c->n; i++)
        assert_int_equal(c->k[i].tid, tid);
    for (int i = 0; i < 3; i++) {
        nanosleep(&(struct timespec){0, 5 * 1000000}, NULL);
        assert_int_equal(bs_perf_sampler_drain(s, keep_sample, c), 0);
    }
    assert_int_equal(bs_perf_sampler_disable(s), 0);
    assert_int_equal(bs_perf_sampler_enable(s), 0);
    assert_int_equal(bs_perf_sampler_drain(s, keep_sample, c), 0);
    bs_perf_stats st;
    bs_perf_sampler_stats(s, &st);
    assert_int_equal(st.samples, n);
    bs_perf_sampler_close(s);
    bs_perf_sampler_close(NULL);
    free(c);
}

/* A ring nobody drains fills up: the kernel drops what does not fit (the
 * ring keeps its oldest samples, in order) and the drain says it found the
 * ring full, though the kernel has not reported the loss (it would only with
 * a later sample). 500 ms of CPU 42 frames deep at 999 Hz is ~200 KiB of
 * samples for a 32 KiB ring, whatever the machine's speed (under valgrind,
 * 2.5 s of records of 40 bytes or more). */
static void test_full_ring_counted(void **state)
{
    (void)state;
    gate go = GATE_INIT;
    /* under valgrind the chains are valgrind's, a few addresses: more samples */
    uint64_t cpu_ms = RUNNING_ON_VALGRIND ? 2500 : 500;
    worker w = {.name = "4_scheduler", .go = &go, .cpu_ns = cpu_ms * 1000000u, .depth = DEPTH};
    pthread_t t;
    start_worker(&t, &w);
    int tid = atomic_load(&w.tid);
    char why[512];
    bs_perf_sampler *s = NULL;
    if (bs_perf_sampler_open(&s, &tid, 1, HZ, why, sizeof why) != 0)
        fail_msg("open: %s", why);
    assert_int_equal(bs_perf_sampler_enable(s), 0);
    gate_open(&go);
    pthread_join(t, NULL);
    assert_int_equal(bs_perf_sampler_disable(s), 0);
    collected *c = calloc(1, sizeof *c);
    assert_non_null(c);
    size_t n = bs_perf_sampler_drain(s, keep_sample, c);
    bs_perf_stats st;
    bs_perf_sampler_stats(s, &st);
    size_t ring = (size_t)BS_PERF_RING_PAGES * (size_t)sysconf(_SC_PAGESIZE);
    printf("undrained ring: %zu samples, %llu bytes, ring_full %llu, lost %llu\n", n,
           (unsigned long long)st.bytes, (unsigned long long)st.ring_full,
           (unsigned long long)st.lost);
    assert_true(n >= 10);
    assert_true(st.bytes <= ring);
    assert_int_equal(st.ring_full, 1);
    assert_int_equal(st.malformed, 0);
    uint64_t last = 0;
    for (size_t i = 0; i < c->n; i++) {
        assert_int_equal(c->k[i].tid, tid);
        assert_true(c->k[i].time_ns >= last);
        last = c->k[i].time_ns;
    }
    /* drained, the ring is not full any more */
    assert_int_equal(bs_perf_sampler_drain(s, keep_sample, c), 0);
    bs_perf_sampler_stats(s, &st);
    assert_int_equal(st.ring_full, 1);
    bs_perf_sampler_close(s);
    free(c);
}

/* A thread gone before the open is left out; none left is an error saying so. */
static void test_gone_thread_left_out(void **state)
{
    (void)state;
    FILE *f = fopen("/proc/sys/kernel/pid_max", "r");
    assert_non_null(f);
    long pid_max = 0;
    assert_int_equal(fscanf(f, "%ld", &pid_max), 1);
    fclose(f);
    int never = (int)pid_max; /* tids are below pid_max: no thread has it */
    int tids[2] = {never, gettid_()};
    char why[512];
    bs_perf_sampler *s = NULL;
    if (bs_perf_sampler_open(&s, tids, 2, HZ, why, sizeof why) != 0)
        fail_msg("open: %s", why);
    bs_perf_stats st;
    bs_perf_sampler_stats(s, &st);
    assert_int_equal(st.threads, 1);
    bs_perf_sampler_close(s);

    s = (bs_perf_sampler *)&st; /* open sets it to NULL when it fails */
    assert_int_equal(bs_perf_sampler_open(&s, &never, 1, HZ, why, sizeof why), -1);
    assert_null(s);
    assert_int_equal(errno, ESRCH);
    assert_non_null(strstr(why, "none of the 1 threads"));
    assert_int_equal(bs_perf_sampler_open(&s, tids, 0, HZ, why, sizeof why), -1);
    assert_non_null(strstr(why, "1 to 4096 threads"));
    assert_int_equal(bs_perf_sampler_open(&s, tids + 1, 1, 0, why, sizeof why), -1);
    assert_non_null(strstr(why, "at least 1 Hz"));
}

/* -------------------------------- refusals -------------------------------- */

#if defined(__x86_64__)
#define BS_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define BS_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

/* In a child: perf_event_open refused by a seccomp filter (as a container's
 * profile does) gives a sentence that names seccomp. */
static void test_refused_by_seccomp(void **state)
{
    (void)state;
#ifndef BS_AUDIT_ARCH
    printf("SKIP seccomp refusal: no audit arch known for this CPU\n");
#else
    fflush(NULL);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        struct sock_filter code[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, BS_AUDIT_ARCH, 1, 0),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_perf_event_open, 0, 1),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = {.len = sizeof code / sizeof code[0], .filter = code};
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
            prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
            perror("seccomp");
            _exit(2);
        }
        int tid = gettid_();
        char why[512];
        bs_perf_sampler *s = NULL;
        int rc = bs_perf_sampler_open(&s, &tid, 1, HZ, why, sizeof why);
        fprintf(stderr, "child: rc %d, why: %s\n", rc, why);
        if (rc != -1 || s != NULL || errno != EPERM)
            _exit(3);
        if (!strstr(why, "seccomp filter") || !strstr(why, "EPERM") || !strstr(why, "Seccomp: 2"))
            _exit(4);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
#endif
}

/* The sentences for causes a test cannot bring about here: the builder is
 * pure. (perf_event_paranoid 3 refuses only processes without CAP_PERFMON:
 * root is never refused, and setting it would change the machine for every
 * other process.) */
static void test_refusal_texts(void **state)
{
    (void)state;
    char why[512];
    bs_perf_refusal_text(why, sizeof why, EACCES, 3, 0);
    assert_non_null(strstr(why, "EACCES"));
    assert_non_null(strstr(why, "kernel.perf_event_paranoid is 3"));
    assert_non_null(strstr(why, "sysctl kernel.perf_event_paranoid=2"));
    assert_non_null(strstr(why, "CAP_PERFMON"));
    bs_perf_refusal_text(why, sizeof why, EPERM, 4, 0);
    assert_non_null(strstr(why, "kernel.perf_event_paranoid is 4"));

    bs_perf_refusal_text(why, sizeof why, EPERM, 2, 0); /* paranoid allows it: someone else refused */
    assert_non_null(strstr(why, "EPERM"));
    assert_non_null(strstr(why, "perf_event_paranoid 2"));
    assert_non_null(strstr(why, "seccomp profile"));
    assert_non_null(strstr(why, "CAP_PERFMON"));
    assert_null(strstr(why, "sysctl"));

    bs_perf_refusal_text(why, sizeof why, EPERM, 3, 2); /* a filter is the likelier cause */
    assert_non_null(strstr(why, "seccomp filter"));
    bs_perf_refusal_text(why, sizeof why, ENOSYS, 2, 0);
    assert_non_null(strstr(why, "ENOSYS"));
    assert_non_null(strstr(why, "CONFIG_PERF_EVENTS"));
    assert_non_null(strstr(why, "seccomp"));
    bs_perf_refusal_text(why, sizeof why, EACCES, INT_MIN, -1);
    assert_non_null(strstr(why, "perf_event_paranoid unknown"));

    bs_perf_refusal_text(why, sizeof why, ENOENT, 2, 0);
    assert_non_null(strstr(why, "does not support"));
    bs_perf_refusal_text(why, sizeof why, EOPNOTSUPP, 2, 0);
    assert_non_null(strstr(why, "EOPNOTSUPP"));
    bs_perf_refusal_text(why, sizeof why, EMFILE, 2, 0);
    assert_non_null(strstr(why, "ulimit -n"));
    bs_perf_refusal_text(why, sizeof why, EINVAL, 2, 0);
    assert_non_null(strstr(why, "perf_event_max_sample_rate"));
    bs_perf_refusal_text(why, sizeof why, EBUSY, 2, 0);
    assert_non_null(strstr(why, "errno"));

    /* a short buffer holds a cut, terminated sentence */
    char small[16];
    memset(small, 'x', sizeof small);
    bs_perf_refusal_text(small, sizeof small, EACCES, 3, 0);
    assert_int_equal(strlen(small), 15);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_thread_kind_names),
        cmocka_unit_test(test_threads_list_own),
        cmocka_unit_test(test_sampling_busy_thread),
        cmocka_unit_test(test_sampling_with_stack_copies),
#if defined(__x86_64__)
        cmocka_unit_test(test_r13_sampled),
#endif
        cmocka_unit_test(test_thread_exits_while_sampled),
        cmocka_unit_test(test_full_ring_counted),
        cmocka_unit_test(test_gone_thread_left_out),
        cmocka_unit_test(test_refused_by_seccomp),
        cmocka_unit_test(test_refusal_texts),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
