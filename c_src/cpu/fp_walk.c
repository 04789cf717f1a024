/* fp_walk.c — the frame-pointer half of a CPU sample's user stack
 * (dwarf_unwind.h): the walk from the registers the DWARF unwinder
 * recovered at the first JIT frame through the stack copy, and the splice of
 * the DWARF part, that walk and the kernel's frame-pointer callchain. Reads
 * the stack copy, and what lies outside it through the caller's reader; no
 * allocation. */
#include <string.h>

#include "cpu/dwarf_unwind.h"

int bs_stack_read8(const bs_stack_copy *s, uint64_t addr, uint64_t *v)
{
    if (s == NULL || s->data == NULL || s->size < 8 || addr < s->sp) return 0;
    uint64_t off = addr - s->sp;
    if (off > (uint64_t)s->size - 8) return 0;
    memcpy(v, s->data + off, 8);
    return 1;
}

/* The 8 bytes at addr: from the copy, else through mem. */
static int read8(const bs_stack_copy *stack, const bs_mem_reader *mem, uint64_t addr, uint64_t *v)
{
    if (bs_stack_read8(stack, addr, v)) return 1;
    return mem != NULL && mem->read(mem->ctx, addr, v, 8);
}

size_t bs_fp_walk(const bs_user_regs *at, const bs_stack_copy *stack, const bs_mem_reader *mem, uint64_t *out,
                  size_t cap)
{
    if (cap == 0) return 0;
    size_t n = 0;
    out[n++] = at->ip;
    uint64_t bp = at->bp;
    while (n < cap) {
        uint64_t next_bp, ret;
        if (bp > UINT64_MAX - 16) break;
        if (!read8(stack, mem, bp, &next_bp) || !read8(stack, mem, bp + 8, &ret)) break;
        if (ret == 0) break;
        out[n++] = ret;
        /* Callers' frames lie higher up: anything else is a loop or garbage. */
        if (next_bp <= bp) break;
        bp = next_bp;
    }
    return n;
}

/* Where in kernel the chain tail (last two addresses, or one) ends: the index
 * after the match, or 0 when it is not there. */
static size_t kernel_resume(const uint64_t *tail, size_t n_tail, const uint64_t *kernel, size_t n_kernel)
{
    if (n_tail == 0) return 0;
    uint64_t last = tail[n_tail - 1];
    for (size_t j = 0; j < n_kernel; j++) {
        if (kernel[j] != last) continue;
        if (n_tail >= 2 && (j == 0 || kernel[j - 1] != tail[n_tail - 2])) continue;
        return j + 1;
    }
    return 0;
}

size_t bs_callchain_splice(const uint64_t *dwarf, size_t n_dwarf, int reached_jit, const bs_user_regs *at,
                           const bs_stack_copy *stack, const bs_mem_reader *mem, const uint64_t *kernel,
                           size_t n_kernel, uint64_t *out, size_t cap)
{
    size_t n = 0;
    if (n_dwarf == 0 && !reached_jit) {
        for (size_t j = 0; j < n_kernel && n < cap; j++) out[n++] = kernel[j];
        return n;
    }
    for (size_t i = 0; i < n_dwarf && n < cap; i++) out[n++] = dwarf[i];
    if (!reached_jit || n == cap) return n;
    size_t walk_start = n;
    n += bs_fp_walk(at, stack, mem, out + n, cap - n);
    size_t j = kernel_resume(out + walk_start, n - walk_start, kernel, n_kernel);
    if (j == 0) return n;
    for (; j < n_kernel && n < cap; j++) out[n++] = kernel[j];
    return n;
}
