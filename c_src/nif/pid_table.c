/* pid_table.c — lock-free pid -> recording map (see pid_table.h). */
#include "pid_table.h"

#include <stdlib.h>

static uint32_t hash_pid(uint64_t pid)
{
    pid *= 0x9E3779B97F4A7C15ull;
    return (uint32_t)(pid >> 32);
}

int bs_pid_table_init(bs_pid_table *t, uint32_t max_procs)
{
    uint32_t cap = 16;
    while (cap < max_procs * 2u && cap < (1u << 30))
        cap *= 2;
    t->slots = calloc(cap, sizeof *t->slots);
    if (!t->slots)
        return -1;
    for (uint32_t i = 0; i < cap; i++) {
        atomic_init(&t->slots[i].pid, 0);
        atomic_init(&t->slots[i].record, NULL);
    }
    t->cap = cap;
    t->max_procs = max_procs;
    atomic_init(&t->count, 0);
    return 0;
}

void bs_pid_table_free(bs_pid_table *t, bs_budget *budget)
{
    if (!t->slots)
        return;
    for (uint32_t i = 0; i < t->cap; i++) {
        bs_traced_proc *r = atomic_load(&t->slots[i].record);
        if (r) {
            while (r->captures) {
                bs_capture *c = r->captures;
                r->captures = c->next;
                bs_proc_free(&c->proc);
                bs_budget_free(budget, c, sizeof *c);
            }
            bs_proc_free(&r->proc);
            bs_budget_free(budget, r, sizeof *r);
        }
    }
    free(t->slots);
    t->slots = NULL;
}

bs_traced_proc *bs_pid_table_find(bs_pid_table *t, uint64_t pid)
{
    uint32_t mask = t->cap - 1;
    for (uint32_t i = hash_pid(pid) & mask, n = 0; n < t->cap; i = (i + 1) & mask, n++) {
        uint64_t k = atomic_load_explicit(&t->slots[i].pid, memory_order_acquire);
        if (k == pid)
            return atomic_load_explicit(&t->slots[i].record, memory_order_acquire);
        if (k == 0)
            return NULL;
    }
    return NULL;
}

bs_traced_proc *bs_pid_table_insert(bs_pid_table *t, uint64_t pid, bs_traced_proc *rec)
{
    if (atomic_fetch_add(&t->count, 1) >= t->max_procs) {
        atomic_fetch_sub(&t->count, 1);
        return NULL;
    }
    uint32_t mask = t->cap - 1;
    for (uint32_t i = hash_pid(pid) & mask, n = 0; n < t->cap; i = (i + 1) & mask, n++) {
        uint64_t expected = 0;
        if (atomic_compare_exchange_strong(&t->slots[i].pid, &expected, pid) || expected == pid) {
            atomic_store_explicit(&t->slots[i].record, rec, memory_order_release);
            return rec;
        }
    }
    atomic_fetch_sub(&t->count, 1);
    return NULL;
}
