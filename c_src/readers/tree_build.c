/* tree_build.c — growing a profile tree stack by stack (see tree_build.h). */
#include "tree_build.h"

#include <stdlib.h>
#include <string.h>

#define MAX_NODES 0x7FFFFFFFu

static inline uint32_t first_child(const bs_pnode *n) { return (uint32_t)n->total_ns; }
static inline int in_table(const bs_pnode *n) { return n->calls != 0; }

/* murmur3's finaliser: the low bits used as the slot depend on every bit of
 * parent and frame. */
static inline uint32_t slot_hash(uint32_t parent, uint32_t frame)
{
    uint64_t h = (uint64_t)parent << 32 | frame;
    h = (h ^ (h >> 33)) * 0xFF51AFD7ED558CCDull;
    h = (h ^ (h >> 33)) * 0xC4CEB9FE1A85EC53ull;
    return (uint32_t)(h ^ (h >> 33));
}

int bs_tree_build_init(bs_tree_build *t, uint32_t root_frame, int synthetic_root)
{
    memset(t, 0, sizeof *t);
    t->cap = 64;
    t->nodes = malloc(t->cap * sizeof *t->nodes);
    if (!t->nodes)
        return -1;
    t->nodes[0] = (bs_pnode){UINT32_MAX, root_frame, 0, BS_TB_NONE, 0};
    t->n = 1;
    t->synthetic_root = synthetic_root;
    return 0;
}

void bs_tree_build_free(bs_tree_build *t)
{
    free(t->nodes);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

/* The slot of (parent, frame): its entry, or the free slot to put it in. */
static bs_tb_slot *find_slot(const bs_tree_build *t, uint32_t parent, uint32_t frame)
{
    uint32_t mask = t->cap_slots - 1, i = slot_hash(parent, frame) & mask;
    for (;;) {
        bs_tb_slot *s = &t->slots[i];
        if (!s->used || (s->parent == parent && s->frame == frame))
            return s;
        i = (i + 1) & mask;
    }
}

/* Room for `more` entries with the table at most half full. */
static int reserve_slots(bs_tree_build *t, uint32_t more)
{
    if ((uint64_t)(t->n_slotted + more) * 2 <= t->cap_slots)
        return 0;
    uint32_t cap = t->cap_slots ? t->cap_slots : 256, old_cap = t->cap_slots;
    while ((uint64_t)(t->n_slotted + more) * 2 > cap) {
        if (cap > UINT32_MAX / 2)
            return -1;
        cap *= 2;
    }
    bs_tb_slot *old = t->slots, *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    t->slots = slots;
    t->cap_slots = cap;
    for (uint32_t i = 0; i < old_cap; i++)
        if (old[i].used)
            *find_slot(t, old[i].parent, old[i].frame) = old[i];
    free(old);
    return 0;
}

static void put_slot(bs_tree_build *t, uint32_t node)
{
    const bs_pnode *n = &t->nodes[node];
    *find_slot(t, n->parent, n->frame) = (bs_tb_slot){n->parent, n->frame, node, 1};
    t->n_slotted++;
}

/* Appends a node; the caller links it to its parent. */
static uint32_t append(bs_tree_build *t, uint32_t parent, uint32_t frame)
{
    if (t->n == t->cap) {
        if (t->cap > MAX_NODES / 2)
            return BS_TB_NONE;
        bs_pnode *nodes = realloc(t->nodes, (size_t)t->cap * 2 * sizeof *nodes);
        if (!nodes)
            return BS_TB_NONE;
        t->nodes = nodes;
        t->cap *= 2;
    }
    t->nodes[t->n] = (bs_pnode){parent, frame, 0, BS_TB_NONE, 0};
    return t->n++;
}

uint32_t bs_tree_build_new_child(bs_tree_build *t, uint32_t parent, uint32_t frame)
{
    uint32_t n = append(t, parent, frame);
    if (n != BS_TB_NONE)
        t->nodes[parent].total_ns = n; /* its only child */
    return n;
}

uint32_t bs_tree_build_child(bs_tree_build *t, uint32_t parent, uint32_t frame, int *fresh)
{
    const bs_pnode *p = &t->nodes[parent];
    uint32_t only = first_child(p), n;
    if (!in_table(p)) {
        if (only == BS_TB_NONE) {
            *fresh = 1;
            return bs_tree_build_new_child(t, parent, frame);
        }
        if (t->nodes[only].frame == frame)
            return only;
        /* a second child: from now on the parent's children are hashed */
        if (reserve_slots(t, 2) < 0 || (n = append(t, parent, frame)) == BS_TB_NONE)
            return BS_TB_NONE;
        put_slot(t, only);
        put_slot(t, n);
        t->nodes[parent].calls = 1;
        *fresh = 1;
        return n;
    }
    if (reserve_slots(t, 1) < 0)
        return BS_TB_NONE;
    bs_tb_slot *s = find_slot(t, parent, frame);
    if (s->used)
        return s->node;
    if ((n = append(t, parent, frame)) == BS_TB_NONE)
        return BS_TB_NONE;
    *s = (bs_tb_slot){parent, frame, n, 1};
    t->n_slotted++;
    *fresh = 1;
    return n;
}

void bs_tree_build_finish(bs_tree_build *t, bs_ptree *out)
{
    for (uint32_t i = 0; i < t->n; i++)
        t->nodes[i].total_ns = t->nodes[i].calls = 0;
    bs_pnode *shrunk = realloc(t->nodes, (size_t)t->n * sizeof *shrunk);
    memset(out, 0, sizeof *out);
    out->nodes = shrunk ? shrunk : t->nodes;
    out->n_nodes = t->n;
    out->synthetic_root = t->synthetic_root;
    free(t->slots);
    memset(t, 0, sizeof *t);
}
