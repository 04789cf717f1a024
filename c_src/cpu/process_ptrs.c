/* process_ptrs.c — the lock-free pid -> Process * table of process_ptrs.h. */
#include "process_ptrs.h"

#include <stdlib.h>

/* A pid's immediate term: its number lies above the 4 tag bits. */
static uint64_t slot_of(uint64_t pid)
{
    uint64_t h = (pid >> 4) * 0x9E3779B97F4A7C15ull;
    return h >> 52; /* 12 bits: BS_PROCESS_PTRS */
}

int bs_process_ptrs_init(bs_process_ptrs *t)
{
    t->full = 0;
    t->slots = calloc(BS_PROCESS_PTRS, sizeof *t->slots);
    if (!t->slots)
        return -1;
    for (unsigned i = 0; i < BS_PROCESS_PTRS; i++) {
        atomic_init(&t->slots[i].pid, 0);
        atomic_init(&t->slots[i].ptr, 0);
    }
    return 0;
}

void bs_process_ptrs_free(bs_process_ptrs *t)
{
    free(t->slots);
    t->slots = NULL;
}

void bs_process_ptrs_learn(bs_process_ptrs *t, uint64_t pid, uint64_t ptr)
{
    if (!t->slots || !pid || !ptr)
        return;
    uint64_t s = slot_of(pid);
    for (unsigned k = 0; k < BS_PROCESS_PTRS_PROBE; k++) {
        bs_process_ptr *e = &t->slots[(s + k) & (BS_PROCESS_PTRS - 1)];
        uint64_t have = atomic_load_explicit(&e->pid, memory_order_relaxed);
        if (have == pid)
            return; /* a process's struct does not move */
        if (have == 0) {
            /* The pointer first, then the pid that publishes it. */
            atomic_store_explicit(&e->ptr, ptr, memory_order_relaxed);
            atomic_store_explicit(&e->pid, pid, memory_order_release);
            return;
        }
    }
    t->full++;
}

uint64_t bs_process_ptrs_find(const bs_process_ptrs *t, uint64_t pid)
{
    if (!t->slots || !pid)
        return 0;
    uint64_t s = slot_of(pid);
    for (unsigned k = 0; k < BS_PROCESS_PTRS_PROBE; k++) {
        const bs_process_ptr *e = &t->slots[(s + k) & (BS_PROCESS_PTRS - 1)];
        uint64_t have = atomic_load_explicit(&e->pid, memory_order_acquire);
        if (have == pid)
            return atomic_load_explicit(&e->ptr, memory_order_relaxed);
        if (have == 0)
            return 0;
    }
    return 0;
}
