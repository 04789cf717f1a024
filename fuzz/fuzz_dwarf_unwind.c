/* fuzz_dwarf_unwind.c — libFuzzer target for the DWARF unwinder of CPU
 * samples' C frames (cpu/dwarf_unwind.h) on this process's own code.
 *
 * Once: a real sample (a chain of three C functions whose last captures its
 * registers and copies its stack, as the kernel would) and two unwinders of
 * this process, one applying cached CFI rows, one going through libdw's
 * expressions for every frame. Each input is a stack copy: byte 0 picks the
 * pc (the leaf's or one of the return addresses), byte 1 whether the input
 * replaces the copy or overwrites the real one from an offset (bytes 2-3),
 * bytes 4-11 the bp. Properties: both unwinders give the same addresses,
 * registers and reason; the leaf is the first address; nothing is written
 * past cap; the frame-pointer walk and the splice with a "kernel callchain"
 * (the input's words) stay within cap and keep the DWARF part first. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu/dwarf_unwind.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define COPY 8192
#define CAP 48

typedef struct real_sample {
    bs_user_regs regs;
    unsigned char copy[COPY];
    size_t size;
    uint64_t ret[3];
} real_sample;

__attribute__((no_sanitize_address, noinline)) static void copy_stack(unsigned char *dst, uint64_t from, size_t n)
{
    const volatile unsigned char *src = (const volatile unsigned char *)(uintptr_t)from;
    for (size_t i = 0; i < n; i++) dst[i] = src[i];
}

__attribute__((noinline)) static int leaf(real_sample *s)
{
    uint64_t ip, sp, bp;
    __asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" : "=r"(ip), "=r"(sp), "=r"(bp));
    s->regs.ip = ip, s->regs.sp = sp, s->regs.bp = bp;
    pthread_attr_t attr;
    void *addr;
    size_t stack_size;
    CHECK(pthread_getattr_np(pthread_self(), &attr) == 0);
    CHECK(pthread_attr_getstack(&attr, &addr, &stack_size) == 0);
    pthread_attr_destroy(&attr);
    uint64_t top = (uint64_t)(uintptr_t)addr + stack_size;
    s->size = top - sp < COPY ? (size_t)(top - sp) : COPY;
    copy_stack(s->copy, sp, s->size);
    s->ret[0] = (uint64_t)(uintptr_t)__builtin_return_address(0);
    return 1;
}

__attribute__((noinline)) static int middle(real_sample *s)
{
    s->ret[1] = (uint64_t)(uintptr_t)__builtin_return_address(0);
    return leaf(s) + 1;
}

__attribute__((noinline)) static int outer(real_sample *s)
{
    s->ret[2] = (uint64_t)(uintptr_t)__builtin_return_address(0);
    return middle(s) + 1;
}

static real_sample sample;
static bs_dwarf_unwinder *with_rows, *plain;
static unsigned char buf[COPY];

static void init_once(void)
{
    char why[256];
    CHECK(outer(&sample) == 3);
    CHECK(bs_dwarf_unwinder_open(&with_rows, getpid(), 256u << 20, why, sizeof why) == 0);
    CHECK(bs_dwarf_unwinder_open(&plain, getpid(), 256u << 20, why, sizeof why) == 0);
    bs_dwarf_unwinder_use_rows(plain, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (with_rows == NULL) init_once();
    if (size < 12) return 0;
    uint64_t pcs[4] = {sample.regs.ip, sample.ret[0], sample.ret[1], sample.ret[2]};
    bs_user_regs regs = {.ip = pcs[data[0] % 4], .sp = sample.regs.sp};
    memcpy(&regs.bp, data + 4, 8);
    const uint8_t *body = data + 12;
    size_t n_body = size - 12;
    size_t n_copy;
    if (data[1] & 1) {
        /* the real copy, overwritten from an offset */
        n_copy = sample.size;
        memcpy(buf, sample.copy, n_copy);
        size_t at = ((size_t)data[2] | (size_t)data[3] << 8) % (n_copy + 1);
        size_t n = n_body < n_copy - at ? n_body : n_copy - at;
        memcpy(buf + at, body, n);
    } else {
        n_copy = n_body < COPY ? n_body : COPY;
        memcpy(buf, body, n_copy);
    }
    bs_stack_copy st = {.sp = sample.regs.sp, .data = buf, .size = n_copy};

    uint64_t out[CAP + 1], out2[CAP + 1];
    out[CAP] = out2[CAP] = 0x5a5a5a5a;
    bs_user_regs at, at2;
    int jit, jit2;
    bs_unwind_stop stop, stop2;
    size_t cap = data[1] >> 2 < CAP ? (size_t)(data[1] >> 2) : CAP;
    size_t n = bs_dwarf_unwind(with_rows, &regs, &st, out, cap, &at, &jit, &stop);
    size_t n2 = bs_dwarf_unwind(plain, &regs, &st, out2, cap, &at2, &jit2, &stop2);
    CHECK(n <= cap && out[CAP] == 0x5a5a5a5a);
    CHECK(n == n2 && jit == jit2 && stop == stop2);
    CHECK(memcmp(out, out2, n * sizeof out[0]) == 0);
    CHECK(at.ip == at2.ip && at.sp == at2.sp && at.bp == at2.bp && at.has_r13 == at2.has_r13 &&
          (!at.has_r13 || at.r13 == at2.r13)); /* field by field: the struct has padding */
    CHECK(cap == 0 || n >= 1);
    CHECK(n == 0 || out[0] == regs.ip);
    CHECK(stop != BS_UNWIND_FULL || n == cap);

    uint64_t fp[CAP + 1];
    fp[CAP] = 0x5a5a5a5a;
    size_t nf = bs_fp_walk(&at, &st, NULL, fp, CAP);
    CHECK(nf <= CAP && fp[CAP] == 0x5a5a5a5a && (nf == 0 || fp[0] == at.ip));

    uint64_t kernel[CAP];
    size_t nk = n_body / 8 < CAP ? n_body / 8 : CAP;
    memcpy(kernel, body, nk * 8);
    uint64_t all[2 * CAP + 1];
    all[2 * CAP] = 0x5a5a5a5a;
    size_t na = bs_callchain_splice(out, n, jit, &at, &st, NULL, kernel, nk, all, 2 * CAP);
    CHECK(na <= 2 * CAP && all[2 * CAP] == 0x5a5a5a5a);
    if (n > 0 || jit) CHECK(na >= n && memcmp(all, out, n * sizeof out[0]) == 0);
    else CHECK(na == nk);
    return 0;
}
