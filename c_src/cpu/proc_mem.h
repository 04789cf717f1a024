/* proc_mem.h — reads a process's memory (this one's, from the NIF) without
 * faulting, for the frame-pointer walk through JIT frames that lie outside a
 * sample's stack copy (dwarf_unwind.h, bs_mem_reader). process_vm_readv,
 * one or two pages at a time, kept: a walk's frames mostly sit on the same
 * page, so a walk costs about one system call per page it touches. Call
 * bs_proc_mem_forget before each sample (the memory changes). An unmapped
 * address reads as nothing (0), never a fault. */
#ifndef BS_CPU_PROC_MEM_H
#define BS_CPU_PROC_MEM_H

#include <stddef.h>
#include <stdint.h>

#define BS_PROC_MEM_PAGE 4096

typedef struct bs_proc_mem {
    int pid;
    uint64_t base;   /* the bytes kept: [base, base + len) */
    size_t len;
    uint64_t calls;  /* process_vm_readv calls made */
    unsigned char buf[2 * BS_PROC_MEM_PAGE];
} bs_proc_mem;

void bs_proc_mem_init(bs_proc_mem *m, int pid);
void bs_proc_mem_forget(bs_proc_mem *m);
/* A bs_mem_reader's read: ctx is a bs_proc_mem. */
int bs_proc_mem_read(void *ctx, uint64_t addr, void *buf, size_t len);
/* The 8 bytes at addr, read now and not kept (one system call): 1, or 0
 * when they cannot be read. */
int bs_proc_mem_read_word(const bs_proc_mem *m, uint64_t addr, uint64_t *word);

/* Up to len bytes from addr into buf, read now and not kept (one system
 * call): how many, fewer when the memory ends at an unmapped page (0 when
 * addr is not mapped). */
size_t bs_proc_mem_copy(const bs_proc_mem *m, uint64_t addr, void *buf, size_t len);

#endif
