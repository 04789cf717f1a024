/* test_dwarf_unwind.c — the DWARF unwinder of CPU samples' C frames
 * (cpu/dwarf_unwind.h) on this process's own stack: a chain test -> a -> b
 * -> c of C functions without frame pointers (gcc; b also reuses rbp as a
 * plain register, like Debian's beam.smp does) where c captures its
 * registers and copies the top of its stack, as PERF_SAMPLE_REGS_USER and
 * PERF_SAMPLE_STACK_USER would. The unwind must give c's pc, then the
 * return addresses each function saw (__builtin_return_address), in order,
 * on into libcmocka; recover the caller's rbp that b overwrote; stop cleanly
 * on a copy cut short, at once on an address outside every module, and at
 * a frame of real machine code in an anonymous executable mapping (a "JIT"
 * frame with a frame pointer), from which bs_fp_walk goes on to that code's
 * caller. Random and corrupted copies never crash (ASan, valgrind). The
 * frame-pointer walk and the splice with a kernel callchain on hand-built
 * frames. One case measures the cost of a 10-frame unwind and prints it. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cpu/dwarf_unwind.h"
#include "cpu/proc_mem.h"

#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#else
#define VALGRIND_MAKE_MEM_DEFINED(addr, len) ((void)(addr), (void)(len))
#endif

/* Helpers one of the two builds (with libdw or without) does not use. */
#define LIBDW_ONLY __attribute__((unused))

#define COPY_MAX (64 * 1024)
#define CAP_BYTES (256u << 20)

#if defined(__clang__)
#define CHAIN_FN __attribute__((noinline))
#else
#define CHAIN_FN __attribute__((noinline, noclone, optimize("omit-frame-pointer")))
#endif

/* What c() saw: its registers and stack, and the return address of each
 * function of the chain. */
typedef struct sample {
    bs_user_regs regs;
    unsigned char *copy;
    size_t size;
    uint64_t ret_c, ret_b, ret_a; /* into b, a, and a's caller */
    uint64_t caller_bp;           /* rbp of a's caller when it called a */
    int depth;                    /* deep(): frames still to make */
    uint64_t a_r13;               /* r13 in a(), which b() saves before it overwrites it */
} sample;

/* The top of this thread's stack (reading past it would fault). */
LIBDW_ONLY static uint64_t stack_top(void)
{
    pthread_attr_t attr;
    void *addr;
    size_t size;
    assert_int_equal(pthread_getattr_np(pthread_self(), &attr), 0);
    assert_int_equal(pthread_attr_getstack(&attr, &addr, &size), 0);
    pthread_attr_destroy(&attr);
    return (uint64_t)(uintptr_t)addr + size;
}

/* Byte by byte through volatile, unchecked: the live stack holds ASan's
 * redzones, and memcpy would be intercepted and refuse them. */
__attribute__((no_sanitize_address, noinline)) static void copy_stack(unsigned char *dst, uint64_t from, size_t n)
{
    const volatile unsigned char *src = (const volatile unsigned char *)(uintptr_t)from;
    for (size_t i = 0; i < n; i++) dst[i] = src[i];
}

/* Captures rip, rsp, rbp here and copies up to COPY_MAX bytes from rsp. */
CHAIN_FN static int c(sample *s)
{
    uint64_t ip, sp, bp, r13;
    __asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2\n\tmov %%r13, %3"
                     : "=r"(ip), "=r"(sp), "=r"(bp), "=r"(r13));
    s->regs.ip = ip, s->regs.sp = sp, s->regs.bp = bp, s->regs.r13 = r13, s->regs.has_r13 = 1;
    uint64_t top = stack_top();
    s->size = top - sp < COPY_MAX ? (size_t)(top - sp) : COPY_MAX;
    s->copy = malloc(COPY_MAX);
    assert_non_null(s->copy);
    copy_stack(s->copy, sp, s->size);
    /* The kernel's copy is plain bytes; the live stack's padding is
     * "undefined" to valgrind, and the unwinder of a broken copy may read it. */
    VALGRIND_MAKE_MEM_DEFINED(s->copy, s->size);
    s->ret_c = (uint64_t)(uintptr_t)__builtin_return_address(0);
    return 1;
}

CHAIN_FN static int b(sample *s)
{
#if !defined(__clang__)
    /* rbp as a plain register (gcc saves it, with CFI saying where): the
     * kernel's frame-pointer walk from c would follow this. */
    __asm__ volatile("mov $0x1234, %%rbp" ::: "rbp");
#endif
    /* r13 too (callee-saved: saved in b's frame, with CFI saying where),
     * as C code called from BEAMAsm's JIT code may do with its c_p. */
    __asm__ volatile("mov $0x5678, %%r13" ::: "r13");
    s->ret_b = (uint64_t)(uintptr_t)__builtin_return_address(0);
    return c(s) + 1;
}

LIBDW_ONLY CHAIN_FN static int a(sample *s)
{
#if defined(__clang__)
    /* With frame pointers (test/c's clang flags): a's prologue saved it there. */
    s->caller_bp = *(const uint64_t *)__builtin_frame_address(0);
#else
    /* Without: a leaves rbp alone. */
    __asm__ volatile("mov %%rbp, %0" : "=r"(s->caller_bp));
#endif
    s->ret_a = (uint64_t)(uintptr_t)__builtin_return_address(0);
    __asm__ volatile("mov %%r13, %0" : "=r"(s->a_r13));
    return b(s) + 1;
}

/* deep(s): s->depth frames of itself, then c. */
LIBDW_ONLY CHAIN_FN static int deep(sample *s)
{
    if (s->depth-- <= 0) return c(s);
    return deep(s) + s->depth; /* not a tail call, nor one made into a loop */
}

LIBDW_ONLY static bs_stack_copy copy_of(const sample *s)
{
    return (bs_stack_copy){.sp = s->regs.sp, .data = s->copy, .size = s->size};
}

LIBDW_ONLY static bs_dwarf_unwinder *open_self(void)
{
    bs_dwarf_unwinder *u = NULL;
    char why[256] = "";
    int rc = bs_dwarf_unwinder_open(&u, getpid(), CAP_BYTES, why, sizeof why);
    if (rc != 0) fail_msg("bs_dwarf_unwinder_open: %s", why);
    return u;
}

LIBDW_ONLY static int in_object(uint64_t addr, const char *needle)
{
    Dl_info info;
    return dladdr((void *)(uintptr_t)addr, &info) != 0 && info.dli_fname && strstr(info.dli_fname, needle);
}

/* Built without libdw: opening refuses and names what is missing. */
LIBDW_ONLY static void assert_refused(void)
{
    bs_dwarf_unwinder *u = (bs_dwarf_unwinder *)&u;
    char why[256] = "";
    assert_int_equal(bs_dwarf_unwinder_open(&u, getpid(), CAP_BYTES, why, sizeof why), -1);
    assert_null(u);
    assert_non_null(strstr(why, "libdw"));
    assert_non_null(strstr(why, "libdw-dev"));
}

/* Field by field: the struct has padding. */
LIBDW_ONLY static void assert_regs_equal(const bs_user_regs *x, const bs_user_regs *y)
{
    assert_true(x->ip == y->ip && x->sp == y->sp && x->bp == y->bp);
    assert_int_equal(x->has_r13, y->has_r13);
    if (x->has_r13)
        assert_true(x->r13 == y->r13);
}

/* ------------------------------- unwind -------------------------------- */

static void test_unwinds_c_chain(void **state)
{
    (void)state;
#ifndef BS_HAVE_LIBDW
    assert_refused();
#else
    sample s = {.copy = NULL};
    assert_int_equal(a(&s), 3);
    bs_dwarf_unwinder *u = open_self();
    uint64_t out[128];
    bs_user_regs at;
    int jit = -1;
    bs_unwind_stop stop;
    bs_stack_copy st = copy_of(&s);
    size_t n = bs_dwarf_unwind(u, &s.regs, &st, out, 128, &at, &jit, &stop);
    assert_true(n >= 5);
    assert_true(out[0] == s.regs.ip);
    assert_true(out[1] == s.ret_c);
    assert_true(out[2] == s.ret_b);
    assert_true(out[3] == s.ret_a);
    assert_true(in_object(out[3], "test_dwarf_unwind"));
    /* On through cmocka's runner (a shared object: its load bias applied). */
    int through_cmocka = 0;
    for (size_t i = 4; i < n; i++) through_cmocka |= in_object(out[i], "libcmocka");
    assert_true(through_cmocka);
    assert_int_equal(jit, 0);
    assert_true(stop == BS_UNWIND_OUTERMOST || stop == BS_UNWIND_STACK_END);
    /* The same through libdw's expressions alone, and again from the rows' cache. */
    for (int rows = 0; rows < 2; rows++) {
        uint64_t again[128];
        bs_user_regs at2;
        int jit2;
        bs_unwind_stop stop2;
        bs_dwarf_unwinder_use_rows(u, rows);
        assert_int_equal(bs_dwarf_unwind(u, &s.regs, &st, again, 128, &at2, &jit2, &stop2), n);
        assert_memory_equal(again, out, n * sizeof out[0]);
        assert_regs_equal(&at2, &at);
        assert_int_equal(stop2, stop);
    }
    bs_dwarf_stats stats;
    bs_dwarf_unwinder_stats(u, &stats);
    assert_true(stats.files_open >= 3); /* this test, libcmocka, libc at least */
    assert_true(stats.bytes <= CAP_BYTES);
    bs_dwarf_unwinder_close(u);
    free(s.copy);
#endif
}

/* The callee-saved values met on the way: b's r13 (0x5678, the value c
 * ran with) and a's, which b saved and the CFI restored; each once; at most
 * cap; the unwind itself the same as without them. */
static void test_saved_values(void **state)
{
    (void)state;
#ifndef BS_HAVE_LIBDW
    assert_refused();
#else
    sample s = {.copy = NULL};
    assert_int_equal(a(&s), 3);
    bs_dwarf_unwinder *u = open_self();
    uint64_t out[128], again[128], values[32];
    bs_user_regs at, at2;
    int jit, jit2;
    bs_unwind_stop stop, stop2;
    bs_stack_copy st = copy_of(&s);
    size_t n = bs_dwarf_unwind(u, &s.regs, &st, out, 128, &at, &jit, &stop);
    bs_unwind_saved saved = {.values = values, .cap = 32, .n = 99};
    assert_int_equal(bs_dwarf_unwind_saved(u, &s.regs, &st, again, 128, &at2, &jit2, &stop2, &saved), n);
    assert_memory_equal(again, out, n * sizeof out[0]);
    assert_int_equal(stop2, stop);
    assert_true(saved.n >= 2 && saved.n <= 32);
    int has_b = 0, has_a = 0;
    for (size_t i = 0; i < saved.n; i++) {
        has_b |= values[i] == 0x5678;
        has_a |= values[i] == s.a_r13;
        for (size_t j = i + 1; j < saved.n; j++)
            assert_true(values[i] != values[j]);
    }
    assert_true(has_b);
    assert_true(has_a || s.a_r13 == 0);
    saved.cap = 1;
    assert_int_equal(bs_dwarf_unwind_saved(u, &s.regs, &st, again, 128, &at2, &jit2, &stop2, &saved), n);
    assert_int_equal(saved.n, 1);
    bs_dwarf_unwinder_close(u);
    free(s.copy);
#endif
}

static void test_recovers_overwritten_bp(void **state)
{
    (void)state;
#ifndef BS_HAVE_LIBDW
    assert_refused(); /* each capability refuses, and says why */
#else
    sample s = {.copy = NULL};
    assert_int_equal(a(&s), 3);
#if !defined(__clang__)
    assert_true(s.regs.bp == 0x1234); /* b did overwrite it */
#endif
    bs_dwarf_unwinder *u = open_self();
    uint64_t out[3];
    bs_user_regs at;
    int jit;
    bs_unwind_stop stop;
    bs_stack_copy st = copy_of(&s);
    /* Three frames (c, b, a): *at is then this function's frame. */
    assert_int_equal(bs_dwarf_unwind(u, &s.regs, &st, out, 3, &at, &jit, &stop), 3);
    assert_int_equal(stop, BS_UNWIND_FULL);
    assert_true(at.ip == s.ret_a);
    assert_true(at.bp == s.caller_bp);
    assert_true(at.sp > s.regs.sp);
    bs_dwarf_unwinder_close(u);
    free(s.copy);
#endif
}

static void test_copy_cut_short(void **state)
{
    (void)state;
#ifndef BS_HAVE_LIBDW
    assert_refused(); /* each capability refuses, and says why */
#else
    sample s = {.copy = NULL};
    a(&s);
    bs_dwarf_unwinder *u = open_self();
    uint64_t full[128], part[128];
    bs_user_regs at;
    int jit;
    bs_unwind_stop stop;
    bs_stack_copy st = copy_of(&s);
    size_t n_full = bs_dwarf_unwind(u, &s.regs, &st, full, 128, &at, &jit, &stop);
    size_t prev = 0;
    size_t step = getenv("BS_TEST_SMALL") ? 24 : 8;
    for (size_t size = 0; size <= s.size && size < 4096; size += step) {
        st.size = size;
        size_t n = bs_dwarf_unwind(u, &s.regs, &st, part, 128, &at, &jit, &stop);
        assert_true(n >= 1); /* the leaf always */
        assert_true(n <= n_full);
        assert_memory_equal(part, full, n * sizeof part[0]);
        assert_true(n >= prev); /* more stack, never fewer frames */
        if (n < n_full) assert_int_equal(stop, BS_UNWIND_STACK_END);
        prev = n;
    }
    /* Nothing copied: only the leaf, and why. */
    st.size = 0;
    assert_int_equal(bs_dwarf_unwind(u, &s.regs, &st, part, 128, &at, &jit, &stop), 1);
    assert_int_equal(stop, BS_UNWIND_STACK_END);
    assert_int_equal(jit, 0);
    bs_dwarf_unwinder_close(u);
    free(s.copy);
#endif
}

static void test_ip_outside_modules(void **state)
{
    (void)state;
#ifndef BS_HAVE_LIBDW
    assert_refused(); /* each capability refuses, and says why */
#else
    bs_dwarf_unwinder *u = open_self();
    unsigned char *heap = malloc(256);
    assert_non_null(heap);
    memset(heap, 0xAB, 256);
    bs_user_regs regs = {.ip = (uint64_t)(uintptr_t)heap, .sp = (uint64_t)(uintptr_t)heap + 64,
                         .bp = (uint64_t)(uintptr_t)heap + 128};
    bs_stack_copy st = {.sp = regs.sp, .data = heap + 64, .size = 192};
    uint64_t out[8] = {0};
    bs_user_regs at = {0, 0, 0, 0, 0};
    int jit = 0;
    bs_unwind_stop stop;
    assert_int_equal(bs_dwarf_unwind(u, &regs, &st, out, 8, &at, &jit, &stop), 0);
    assert_int_equal(jit, 1);
    assert_int_equal(stop, BS_UNWIND_JIT);
    assert_regs_equal(&at, &regs);
    bs_dwarf_unwinder_close(u);
    free(heap);
#endif
}

/* Machine code in an anonymous executable mapping, as the JIT's: with a
 * frame pointer, no CFI. thunk(fn, s, ret): calls fn(s) and stores its own
 * return address at *ret.
 *   push %rbp; mov %rsp,%rbp; mov 8(%rbp),%rcx; mov %rcx,(%rdx);
 *   mov %rdi,%rax; mov %rsi,%rdi; call *%rax; pop %rbp; ret */
LIBDW_ONLY static const unsigned char THUNK[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x8b, 0x4d, 0x08, 0x48, 0x89, 0x0a,
                                      0x48, 0x89, 0xf8, 0x48, 0x89, 0xf7, 0xff, 0xd0, 0x5d, 0xc3};
typedef int (*thunk_fn)(int (*)(sample *), sample *, uint64_t *);

static void test_hands_over_at_jit_frame(void **state)
{
    (void)state;
#ifndef BS_HAVE_LIBDW
    assert_refused(); /* each capability refuses, and says why */
#else
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *code = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(code != MAP_FAILED);
    memcpy(code, THUNK, sizeof THUNK);
    assert_int_equal(mprotect(code, page, PROT_READ | PROT_EXEC), 0);
    thunk_fn thunk;
    void *p = code;
    memcpy(&thunk, &p, sizeof thunk);
    /* A fresh unwinder sees the new mapping: anonymous, so no CFI. */
    bs_dwarf_unwinder *u = open_self();
    sample s = {.copy = NULL};
    uint64_t thunk_ret = 0;
    assert_int_equal(thunk(a, &s, &thunk_ret), 3);
    uint64_t out[64];
    bs_user_regs at;
    int jit = 0;
    bs_unwind_stop stop;
    bs_stack_copy st = copy_of(&s);
    assert_int_equal(bs_dwarf_unwind(u, &s.regs, &st, out, 64, &at, &jit, &stop), 3);
    assert_true(out[0] == s.regs.ip && out[1] == s.ret_c && out[2] == s.ret_b);
    assert_int_equal(jit, 1);
    assert_int_equal(stop, BS_UNWIND_JIT);
    /* The thunk's frame: the pc after its call, its rbp (= its rsp there). */
    assert_true(at.ip == s.ret_a);
    assert_true(at.ip > (uint64_t)(uintptr_t)code && at.ip < (uint64_t)(uintptr_t)code + sizeof THUNK);
    assert_true(at.bp == at.sp);
    assert_true(at.bp == s.caller_bp);
    /* Frame pointers from there: the thunk, then its caller (this test). */
    uint64_t fp[8];
    size_t n = bs_fp_walk(&at, &st, NULL, fp, 8);
    assert_true(n >= 2);
    assert_true(fp[0] == at.ip);
    assert_true(fp[1] == thunk_ret);
    assert_true(in_object(fp[1], "test_dwarf_unwind"));
    bs_dwarf_unwinder_close(u);
    free(s.copy);
    munmap(code, page);
#endif
}

/* Like THUNK, and it sets r13 to R13_VALUE (saving the caller's) before
 * the call, as BEAMAsm's code holds the running process in r13:
 *   push %rbp; mov %rsp,%rbp; push %r13; sub $8,%rsp; mov 8(%rbp),%rcx;
 *   mov %rcx,(%rdx); movabs $R13_VALUE,%r13; mov %rdi,%rax; mov %rsi,%rdi;
 *   call *%rax; add $8,%rsp; pop %r13; pop %rbp; ret */
#define R13_VALUE 0x00007f00c0ffee00ull
LIBDW_ONLY static const unsigned char THUNK_R13[] = {
    0x55, 0x48, 0x89, 0xe5, 0x41, 0x55, 0x48, 0x83, 0xec, 0x08, 0x48, 0x8b, 0x4d, 0x08, 0x48, 0x89, 0x0a,
    0x49, 0xbd, 0x00, 0xee, 0xff, 0xc0, 0x00, 0x7f, 0x00, 0x00,
    0x48, 0x89, 0xf8, 0x48, 0x89, 0xf7, 0xff, 0xd0, 0x48, 0x83, 0xc4, 0x08, 0x41, 0x5d, 0x5d, 0xc3};

/* r13 at the first JIT frame is the JIT code's, restored through the C
 * frames' CFI (b saved it and put another value there); the leaf's own r13
 * is b's value. */
static void test_r13_at_jit_frame(void **state)
{
    (void)state;
#ifndef BS_HAVE_LIBDW
    assert_refused();
#else
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *code = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(code != MAP_FAILED);
    memcpy(code, THUNK_R13, sizeof THUNK_R13);
    assert_int_equal(mprotect(code, page, PROT_READ | PROT_EXEC), 0);
    thunk_fn thunk;
    void *p = code;
    memcpy(&thunk, &p, sizeof thunk);
    bs_dwarf_unwinder *u = open_self();
    sample s = {.copy = NULL};
    uint64_t thunk_ret = 0;
    assert_int_equal(thunk(a, &s, &thunk_ret), 3);
    assert_true(s.regs.r13 != R13_VALUE);
    uint64_t out[64];
    bs_user_regs at;
    int jit = 0;
    bs_stack_copy st = copy_of(&s);
    assert_int_equal(bs_dwarf_unwind(u, &s.regs, &st, out, 64, &at, &jit, NULL), 3);
    assert_int_equal(jit, 1);
    assert_true(at.ip == s.ret_a);
    assert_int_equal(at.has_r13, 1);
    assert_true(at.r13 == R13_VALUE);
    bs_dwarf_unwinder_close(u);
    free(s.copy);
    munmap(code, page);
#endif
}

/* Like THUNK, but with its frame pointer on another stack, as the JIT's
 * frames are on an Erlang process's stack, not the C stack the sample copies:
 * thunk2(fn, s, frame) calls fn(s) with rbp = frame.
 *   push %rbp; mov %rdx,%rbp; mov %rdi,%rax; mov %rsi,%rdi; call *%rax; pop %rbp; ret */
LIBDW_ONLY static const unsigned char THUNK2[] = {0x55, 0x48, 0x89, 0xd5, 0x48, 0x89, 0xf8, 0x48,
                                       0x89, 0xf7, 0xff, 0xd0, 0x5d, 0xc3};
typedef int (*thunk2_fn)(int (*)(sample *), sample *, uint64_t *);

static void test_jit_frames_on_another_stack(void **state)
{
    (void)state;
#ifndef BS_HAVE_LIBDW
    assert_refused(); /* each capability refuses, and says why */
#else
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *code = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(code != MAP_FAILED);
    memcpy(code, THUNK2, sizeof THUNK2);
    assert_int_equal(mprotect(code, page, PROT_READ | PROT_EXEC), 0);
    thunk2_fn thunk;
    void *p = code;
    memcpy(&thunk, &p, sizeof thunk);
    /* Two frames on the "Erlang stack": (next bp, return address) each. */
    uint64_t *erl = calloc(8, sizeof *erl);
    assert_non_null(erl);
    erl[0] = (uint64_t)(uintptr_t)&erl[4], erl[1] = UINT64_C(0x5a5a5a5a5a01);
    erl[4] = 0, erl[5] = UINT64_C(0x5a5a5a5a5a02);
    bs_dwarf_unwinder *u = open_self();
    sample s = {.copy = NULL};
    assert_int_equal(thunk(a, &s, erl), 3);
    uint64_t out[64];
    bs_user_regs at;
    int jit = 0;
    bs_stack_copy st = copy_of(&s);
    assert_int_equal(bs_dwarf_unwind(u, &s.regs, &st, out, 64, &at, &jit, NULL), 3);
    assert_int_equal(jit, 1);
    assert_true(at.bp == (uint64_t)(uintptr_t)erl); /* restored from the C frames' CFI */
    /* The copy alone ends at the JIT frame; reading the process goes on. */
    uint64_t fp[8];
    assert_int_equal(bs_fp_walk(&at, &st, NULL, fp, 8), 1);
    bs_proc_mem pm;
    bs_proc_mem_init(&pm, getpid());
    bs_mem_reader mem = {bs_proc_mem_read, &pm};
    assert_int_equal(bs_fp_walk(&at, &st, &mem, fp, 8), 3);
    assert_true(fp[0] == at.ip && fp[1] == UINT64_C(0x5a5a5a5a5a01) && fp[2] == UINT64_C(0x5a5a5a5a5a02));
    assert_true(pm.calls >= 1 && pm.calls <= 2); /* pages kept between frames */
    /* And spliced after the DWARF part. */
    uint64_t all[16];
    assert_int_equal(bs_callchain_splice(out, 3, 1, &at, &st, &mem, NULL, 0, all, 16), 6);
    assert_true(all[2] == s.ret_b && all[3] == at.ip && all[5] == UINT64_C(0x5a5a5a5a5a02));
    bs_dwarf_unwinder_close(u);
    free(erl);
    free(s.copy);
    munmap(code, page);
#endif
}

static void test_proc_mem_unmapped(void **state)
{
    (void)state;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *two = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(two != MAP_FAILED);
    memset(two, 0x11, 2 * page);
    assert_int_equal(munmap(two + page, page), 0); /* the second page gone */
    bs_proc_mem pm;
    bs_proc_mem_init(&pm, getpid());
    uint64_t v = 0;
    uint64_t first = (uint64_t)(uintptr_t)two, gone = first + page;
    assert_int_equal(bs_proc_mem_read(&pm, first + 8, &v, 8), 1);
    assert_true(v == UINT64_C(0x1111111111111111));
    assert_int_equal(bs_proc_mem_read(&pm, gone, &v, 8), 0);
    assert_int_equal(bs_proc_mem_read(&pm, gone - 4, &v, 8), 0); /* straddles into it */
    assert_int_equal(bs_proc_mem_read(&pm, 8, &v, 8), 0);
    assert_int_equal(bs_proc_mem_read(&pm, UINT64_MAX - 3, &v, 8), 0);
    /* A walk into unmapped memory stops there. */
    uint64_t *frame = (uint64_t *)(void *)(two + page - 16);
    frame[0] = gone + 64, frame[1] = 0x4242;
    bs_user_regs at = {.ip = 0x4141, .sp = 0, .bp = (uint64_t)(uintptr_t)frame};
    bs_mem_reader mem = {bs_proc_mem_read, &pm};
    bs_proc_mem_forget(&pm);
    uint64_t out[8];
    assert_int_equal(bs_fp_walk(&at, NULL, &mem, out, 8), 2);
    assert_true(out[1] == 0x4242);
    munmap(two, page);
}

static void test_cap_leaves_files_out(void **state)
{
    (void)state;
#ifndef BS_HAVE_LIBDW
    assert_refused(); /* each capability refuses, and says why */
#else
    bs_dwarf_unwinder *u = NULL;
    char why[256];
    assert_int_equal(bs_dwarf_unwinder_open(&u, getpid(), 4096, why, sizeof why), 0);
    bs_dwarf_stats stats;
    bs_dwarf_unwinder_stats(u, &stats);
    assert_true(stats.files_over_cap >= 2); /* this test's, libc's CFI at least */
    assert_true(stats.bytes <= 4096);
    /* Without CFI this test's code is "outside every module with CFI". */
    sample s = {.copy = NULL};
    a(&s);
    uint64_t out[8];
    bs_user_regs at;
    int jit = 0;
    bs_stack_copy st = copy_of(&s);
    assert_int_equal(bs_dwarf_unwind(u, &s.regs, &st, out, 8, &at, &jit, NULL), 0);
    assert_int_equal(jit, 1);
    bs_dwarf_unwinder_close(u);
    free(s.copy);
#endif
}

static void test_open_refusals(void **state)
{
    (void)state;
#ifndef BS_HAVE_LIBDW
    assert_refused(); /* each capability refuses, and says why */
#else
    bs_dwarf_unwinder *u = (bs_dwarf_unwinder *)&u;
    char why[256] = "";
    assert_int_equal(bs_dwarf_unwinder_open(&u, -7, CAP_BYTES, why, sizeof why), -1);
    assert_null(u);
    assert_non_null(strstr(why, "/proc/-7/maps"));
    /* A cap too small for the table of mappings itself. */
    assert_int_equal(bs_dwarf_unwinder_open(&u, getpid(), 200, why, sizeof why), -1);
    assert_null(u);
    assert_non_null(strstr(why, "over the cap of 200"));
#endif
}

/* xorshift64*: deterministic noise. */
LIBDW_ONLY static uint64_t next_rand(uint64_t *x)
{
    *x ^= *x >> 12, *x ^= *x << 25, *x ^= *x >> 27;
    return *x * UINT64_C(2685821657736338717);
}

static void test_garbage_stacks(void **state)
{
    (void)state;
#ifndef BS_HAVE_LIBDW
    assert_refused(); /* each capability refuses, and says why */
#else
    sample s = {.copy = NULL};
    a(&s);
    bs_dwarf_unwinder *u = open_self();
    bs_dwarf_unwinder *plain = open_self(); /* every frame through libdw's expressions */
    bs_dwarf_unwinder_use_rows(plain, 0);
    unsigned char *noise = malloc(COPY_MAX);
    assert_non_null(noise);
    uint64_t rnd = 0x9E3779B97F4A7C15u;
    uint64_t real[4] = {s.regs.ip, s.ret_c, s.ret_b, s.ret_a};
    int rounds = getenv("BS_TEST_SMALL") ? 300 : 3000;
    size_t frames = 0;
    for (int i = 0; i < rounds; i++) {
        size_t size = (size_t)(next_rand(&rnd) % 8192);
        if (i % 2 == 0) {
            /* Pure noise, sometimes pointing into itself. */
            for (size_t k = 0; k < size; k++) noise[k] = (unsigned char)next_rand(&rnd);
            for (size_t k = 0; k + 8 <= size && k < 512; k += 8) {
                uint64_t v = s.regs.sp + next_rand(&rnd) % (size + 16);
                if (next_rand(&rnd) % 3 == 0) v = real[next_rand(&rnd) % 4];
                memcpy(noise + k, &v, 8);
            }
        } else {
            /* The real copy with a few words broken. */
            size = s.size < 8192 ? s.size : 8192;
            memcpy(noise, s.copy, size);
            for (int k = 0; k < 4 && size >= 8; k++) {
                uint64_t v = next_rand(&rnd);
                memcpy(noise + (next_rand(&rnd) % (size / 8)) * 8, &v, 8);
            }
        }
        bs_user_regs regs = {.ip = real[next_rand(&rnd) % 4], .sp = s.regs.sp, .bp = next_rand(&rnd)};
        bs_stack_copy st = {.sp = s.regs.sp, .data = noise, .size = size};
        uint64_t out[64];
        bs_user_regs at;
        int jit;
        bs_unwind_stop stop;
        size_t n = bs_dwarf_unwind(u, &regs, &st, out, 64, &at, &jit, &stop);
        assert_true(n >= 1 && n <= 64);
        assert_true(out[0] == regs.ip);
        frames += n;
        uint64_t out2[64];
        bs_user_regs at2;
        int jit2;
        bs_unwind_stop stop2;
        assert_int_equal(bs_dwarf_unwind(plain, &regs, &st, out2, 64, &at2, &jit2, &stop2), n);
        assert_memory_equal(out2, out, n * sizeof out[0]);
        assert_regs_equal(&at2, &at);
        assert_int_equal(jit2, jit);
        assert_int_equal(stop2, stop);
        uint64_t fp[64];
        assert_true(bs_fp_walk(&at, &st, NULL, fp, 64) <= 64);
    }
    assert_true(frames >= (size_t)rounds);
    free(noise);
    bs_dwarf_unwinder_close(plain);
    bs_dwarf_unwinder_close(u);
    free(s.copy);
#endif
}

/* ------------------------ frame pointers, splice ------------------------ */

#define BASE UINT64_C(0x7ffd00000000)

/* A copy of 64 words at BASE; frames at words 4, 10 and 20 (each: saved bp, return address). */
static void hand_built(uint64_t *w, bs_stack_copy *st)
{
    memset(w, 0, 64 * 8);
    w[4] = BASE + 10 * 8, w[5] = 0x401111;
    w[10] = BASE + 20 * 8, w[11] = 0x402222;
    w[20] = BASE + 40 * 8, w[21] = 0x403333;
    w[40] = BASE + 40 * 8, w[41] = 0x404444; /* loops onto itself: the walk stops after it */
    st->sp = BASE, st->data = (const unsigned char *)w, st->size = 64 * 8;
}

static void test_fp_walk_hand_built(void **state)
{
    (void)state;
    uint64_t w[64], out[16];
    bs_stack_copy st;
    hand_built(w, &st);
    bs_user_regs at = {.ip = 0x400000, .sp = BASE, .bp = BASE + 4 * 8};
    size_t n = bs_fp_walk(&at, &st, NULL, out, 16);
    assert_int_equal(n, 5);
    uint64_t want[] = {0x400000, 0x401111, 0x402222, 0x403333, 0x404444};
    assert_memory_equal(out, want, sizeof want);
    /* cap */
    assert_int_equal(bs_fp_walk(&at, &st, NULL, out, 2), 2);
    assert_int_equal(bs_fp_walk(&at, &st, NULL, out, 0), 0);
    /* the copy ends inside the second frame's words */
    st.size = 11 * 8;
    assert_int_equal(bs_fp_walk(&at, &st, NULL, out, 16), 2);
    /* bp outside the copy, or at its very top word */
    st.size = 64 * 8;
    at.bp = BASE - 8;
    assert_int_equal(bs_fp_walk(&at, &st, NULL, out, 16), 1);
    at.bp = BASE + 63 * 8;
    assert_int_equal(bs_fp_walk(&at, &st, NULL, out, 16), 1);
    at.bp = UINT64_MAX - 4;
    assert_int_equal(bs_fp_walk(&at, &st, NULL, out, 16), 1);
    /* a zero return address ends it */
    w[11] = 0;
    at.bp = BASE + 4 * 8;
    assert_int_equal(bs_fp_walk(&at, &st, NULL, out, 16), 2);
}

static void test_splice_hand_built(void **state)
{
    (void)state;
    uint64_t w[64], out[16];
    bs_stack_copy st;
    hand_built(w, &st);
    st.size = 22 * 8; /* the copy holds three frames; the kernel's chain goes further */
    uint64_t dwarf[] = {0x7f0000001000, 0x7f0000002000};
    bs_user_regs at = {.ip = 0x400000, .sp = BASE, .bp = BASE + 4 * 8};
    uint64_t kernel[] = {0x7f0000001000, 0xdeadbeef, 0x401111, 0x402222, 0x403333, 0x404444, 0x405555};
    size_t n = bs_callchain_splice(dwarf, 2, 1, &at, &st, NULL, kernel, 7, out, 16);
    uint64_t want[] = {0x7f0000001000, 0x7f0000002000, 0x400000, 0x401111, 0x402222,
                       0x403333, 0x404444, 0x405555};
    assert_int_equal(n, 8);
    assert_memory_equal(out, want, sizeof want);
    /* cap cuts anywhere */
    for (size_t cap = 0; cap < 8; cap++) {
        assert_int_equal(bs_callchain_splice(dwarf, 2, 1, &at, &st, NULL, kernel, 7, out, cap), cap);
        assert_memory_equal(out, want, cap * sizeof want[0]);
    }
    /* the kernel's chain never meets the walk: the walk alone */
    uint64_t other[] = {0x7f0000001000, 0x402222, 0x401111, 0x499999};
    assert_int_equal(bs_callchain_splice(dwarf, 2, 1, &at, &st, NULL, other, 4, out, 16), 6);
    assert_memory_equal(out, want, 6 * sizeof want[0]);
    /* no DWARF part: the kernel's chain as it is */
    assert_int_equal(bs_callchain_splice(NULL, 0, 0, &at, &st, NULL, kernel, 7, out, 16), 7);
    assert_memory_equal(out, kernel, sizeof kernel);
    /* a DWARF part that did not reach JIT code: that part alone */
    assert_int_equal(bs_callchain_splice(dwarf, 2, 0, &at, &st, NULL, kernel, 7, out, 16), 2);
    /* the leaf in JIT code (no DWARF frames): the walk, then the kernel */
    assert_int_equal(bs_callchain_splice(NULL, 0, 1, &at, &st, NULL, kernel, 7, out, 16), 6);
    assert_memory_equal(out, want + 2, 6 * sizeof want[0]);
}

/* -------------------------------- cost --------------------------------- */

static void test_cost_of_ten_frames(void **state)
{
    (void)state;
#ifndef BS_HAVE_LIBDW
    assert_refused(); /* each capability refuses, and says why */
#else
    sample s = {.depth = 9};
    deep(&s);
    bs_dwarf_unwinder *u = open_self();
    bs_stack_copy st = copy_of(&s);
    uint64_t out[10];
    bs_user_regs at;
    int jit;
    bs_unwind_stop stop;
    int rounds = getenv("BS_TEST_SMALL") ? 200 : 20000;
    for (int rows = 0; rows < 2; rows++) {
        bs_dwarf_unwinder_use_rows(u, rows);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int i = 0; i < rounds; i++)
            assert_int_equal(bs_dwarf_unwind(u, &s.regs, &st, out, 10, &at, &jit, &stop), 10);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        assert_true(out[0] == s.regs.ip && out[1] == s.ret_c);
        double ns = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / rounds;
        printf("dwarf unwind of 10 C frames, %s: %.0f ns per sample (%d rounds)\n",
               rows ? "cached rows" : "libdw every frame", ns, rounds);
    }
    bs_dwarf_unwinder_close(u);
    free(s.copy);
#endif
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unwinds_c_chain),
        cmocka_unit_test(test_saved_values),
        cmocka_unit_test(test_recovers_overwritten_bp),
        cmocka_unit_test(test_copy_cut_short),
        cmocka_unit_test(test_ip_outside_modules),
        cmocka_unit_test(test_hands_over_at_jit_frame),
        cmocka_unit_test(test_r13_at_jit_frame),
        cmocka_unit_test(test_jit_frames_on_another_stack),
        cmocka_unit_test(test_proc_mem_unmapped),
        cmocka_unit_test(test_cap_leaves_files_out),
        cmocka_unit_test(test_open_refusals),
        cmocka_unit_test(test_garbage_stacks),
        cmocka_unit_test(test_fp_walk_hand_built),
        cmocka_unit_test(test_splice_hand_built),
        cmocka_unit_test(test_cost_of_ten_frames),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
