/* proc_mem.c — a process's memory through process_vm_readv, the pages of
 * the last read kept (proc_mem.h). */
#define _GNU_SOURCE
#include <string.h>
#include <sys/uio.h>

#include "cpu/proc_mem.h"

void bs_proc_mem_init(bs_proc_mem *m, int pid)
{
    m->pid = pid;
    m->base = 0;
    m->len = 0;
    m->calls = 0;
}

void bs_proc_mem_forget(bs_proc_mem *m)
{
    m->len = 0;
}

int bs_proc_mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    bs_proc_mem *m = ctx;
    if (len == 0 || len > BS_PROC_MEM_PAGE || addr > UINT64_MAX - len) return 0;
    if (m->len == 0 || addr < m->base || addr + len > m->base + m->len) {
        /* The page of addr and the next one, as two remote pieces: an
         * unmapped second page leaves the first (the kernel never splits a piece). */
        uint64_t page = addr & ~(uint64_t)(BS_PROC_MEM_PAGE - 1);
        struct iovec local = {.iov_base = m->buf, .iov_len = sizeof m->buf};
        struct iovec remote[2] = {
            {.iov_base = (void *)(uintptr_t)page, .iov_len = BS_PROC_MEM_PAGE},
            {.iov_base = (void *)(uintptr_t)(page + BS_PROC_MEM_PAGE), .iov_len = BS_PROC_MEM_PAGE},
        };
        m->calls++;
        ssize_t got = process_vm_readv(m->pid, &local, 1, remote, page > UINT64_MAX - 2 * BS_PROC_MEM_PAGE ? 1 : 2, 0);
        m->len = 0;
        if (got <= 0) return 0;
        m->base = page;
        m->len = (size_t)got;
        if (addr + len > m->base + m->len) return 0;
    }
    memcpy(buf, m->buf + (addr - m->base), len);
    return 1;
}

int bs_proc_mem_read_word(const bs_proc_mem *m, uint64_t addr, uint64_t *word)
{
    if (addr > UINT64_MAX - sizeof *word) return 0;
    struct iovec local = {.iov_base = word, .iov_len = sizeof *word};
    struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = sizeof *word};
    return process_vm_readv(m->pid, &local, 1, &remote, 1, 0) == (ssize_t)sizeof *word;
}

size_t bs_proc_mem_copy(const bs_proc_mem *m, uint64_t addr, void *buf, size_t len)
{
    if (len == 0 || addr > UINT64_MAX - len) return 0;
    /* Page by page as remote pieces: the kernel stops at the first piece it
     * cannot read whole, so what comes back is whole pages up to it. */
    enum { PIECES = 16 };
    struct iovec local = {.iov_base = buf, .iov_len = len};
    struct iovec remote[PIECES];
    size_t n = 0;
    for (uint64_t at = addr, end = addr + len; at < end && n < PIECES; n++) {
        uint64_t next = (at & ~(uint64_t)(BS_PROC_MEM_PAGE - 1)) + BS_PROC_MEM_PAGE;
        if (next > end || n == PIECES - 1) next = end;
        remote[n] = (struct iovec){.iov_base = (void *)(uintptr_t)at, .iov_len = (size_t)(next - at)};
        at = next;
    }
    ssize_t got = process_vm_readv(m->pid, &local, 1, remote, (unsigned long)n, 0);
    return got > 0 ? (size_t)got : 0;
}
