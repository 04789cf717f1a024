/* dbg_procs.c — the process and atom tables of a dbg trace (dbg_procs.h). */
#include "dbg_procs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bs_dbg_procs_init(bs_dbg_procs *t, uint32_t max)
{
    memset(t, 0, sizeof *t);
    t->max = max;
    bs_frame_table_init(&t->atoms);
    bs_frame_table_init(&t->nodes);
}

void bs_dbg_procs_free(bs_dbg_procs *t)
{
    for (uint32_t i = 0; i < t->n; i++)
        if (t->procs[i].started)
            bs_proc_free(&t->procs[i].proc);
    free(t->procs);
    free(t->slots);
    bs_frame_table_free(&t->atoms);
    bs_frame_table_free(&t->nodes);
    memset(t, 0, sizeof *t);
}

static uint64_t pid_hash(uint32_t node, unsigned number, unsigned serial, unsigned creation)
{
    uint64_t h = ((uint64_t)node << 32 | number) * 0x9E3779B97F4A7C15ull;
    h ^= ((uint64_t)serial << 32 | creation) * 0xC2B2AE3D27D4EB4Full;
    return h ^ (h >> 31);
}

static int same(const bs_dbg_proc *p, uint32_t node, const bs_eterm_pid *pid)
{
    return p->node == node && p->number == pid->number && p->serial == pid->serial && p->creation == pid->creation;
}

static int grow_slots(bs_dbg_procs *t)
{
    uint32_t cap = t->cap_slots ? t->cap_slots * 2 : 256;
    uint32_t *slots = malloc((size_t)cap * sizeof *slots);
    if (!slots)
        return -1;
    memset(slots, 0xff, (size_t)cap * sizeof *slots);
    for (uint32_t i = 0; i < t->n; i++) {
        const bs_dbg_proc *p = &t->procs[i];
        uint32_t s = (uint32_t)pid_hash(p->node, p->number, p->serial, p->creation) & (cap - 1);
        while (slots[s] != UINT32_MAX)
            s = (s + 1) & (cap - 1);
        slots[s] = i;
    }
    free(t->slots);
    t->slots = slots;
    t->cap_slots = cap;
    return 0;
}

uint32_t bs_dbg_procs_get(bs_dbg_procs *t, const bs_eterm_pid *pid, int *oom)
{
    uint32_t node = bs_frame_table_intern(&t->nodes, pid->node, strlen(pid->node));
    if (node == UINT32_MAX) {
        *oom = 1;
        return UINT32_MAX;
    }
    if (t->cap_slots == 0 && grow_slots(t) < 0) {
        *oom = 1;
        return UINT32_MAX;
    }
    uint32_t mask = t->cap_slots - 1;
    uint32_t s = (uint32_t)pid_hash(node, pid->number, pid->serial, pid->creation) & mask;
    for (; t->slots[s] != UINT32_MAX; s = (s + 1) & mask)
        if (same(&t->procs[t->slots[s]], node, pid))
            return t->slots[s];
    if (t->n >= t->max) {
        t->refused++;
        return UINT32_MAX;
    }
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 64;
        bs_dbg_proc *procs = realloc(t->procs, (size_t)cap * sizeof *procs);
        if (!procs) {
            *oom = 1;
            return UINT32_MAX;
        }
        t->procs = procs;
        t->cap = cap;
    }
    bs_dbg_proc *p = &t->procs[t->n];
    memset(p, 0, sizeof *p);
    p->node = node;
    p->number = pid->number;
    p->serial = pid->serial;
    p->creation = pid->creation;
    p->name_atom = UINT32_MAX;
    t->slots[s] = t->n;
    t->n++;
    if ((uint64_t)t->n * 2 > t->cap_slots && grow_slots(t) < 0) {
        *oom = 1;
        return UINT32_MAX;
    }
    return t->n - 1;
}

uint32_t bs_dbg_atom(bs_dbg_procs *t, const bs_eterm *atom)
{
    return bs_frame_table_intern(&t->atoms, bs_eterm_text(atom), bs_eterm_text_len(atom));
}

void bs_dbg_proc_label(const bs_dbg_procs *t, const bs_dbg_proc *p, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "<%u.%u.%u>", p->node, p->number, p->serial);
    if (p->name_atom != UINT32_MAX && n > 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, " %s", bs_frame_name(&t->atoms, p->name_atom));
}
