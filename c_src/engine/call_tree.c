/* call_tree.c — storage and child lookup of a per-process call tree. */
#include "call_tree.h"

#include <string.h>

#define INITIAL_NODES 64u
#define INITIAL_SLOTS 128u

int bs_call_tree_init(bs_call_tree *t, bs_budget *budget)
{
    memset(t, 0, sizeof *t);
    t->budget = budget;
    t->nodes = bs_budget_alloc(budget, INITIAL_NODES * sizeof *t->nodes);
    if (!t->nodes)
        return -1;
    t->slots = bs_budget_alloc(budget, INITIAL_SLOTS * sizeof *t->slots);
    if (!t->slots) {
        bs_budget_free(budget, t->nodes, INITIAL_NODES * sizeof *t->nodes);
        t->nodes = NULL;
        return -1;
    }
    memset(t->slots, 0xff, INITIAL_SLOTS * sizeof *t->slots);
    t->cap_nodes = INITIAL_NODES;
    t->cap_slots = INITIAL_SLOTS;
    memset(&t->nodes[0], 0, sizeof t->nodes[0]);
    t->nodes[0].parent = BS_NO_NODE;
    t->n_nodes = 1;
    return 0;
}

void bs_call_tree_free(bs_call_tree *t)
{
    bs_budget_free(t->budget, t->nodes, (size_t)t->cap_nodes * sizeof *t->nodes);
    bs_budget_free(t->budget, t->slots, (size_t)t->cap_slots * sizeof *t->slots);
    memset(t, 0, sizeof *t);
}

void bs_call_tree_trim(bs_call_tree *t)
{
    if (!t->nodes || t->n_nodes >= t->cap_nodes)
        return;
    bs_tree_node *n = bs_budget_realloc(t->budget, t->nodes, (size_t)t->cap_nodes * sizeof *t->nodes,
                                        (size_t)t->n_nodes * sizeof *t->nodes);
    if (!n)
        return;
    t->nodes = n;
    t->cap_nodes = t->n_nodes;
}

size_t bs_call_tree_bytes(const bs_call_tree *t)
{
    return (size_t)t->cap_nodes * sizeof *t->nodes + (size_t)t->cap_slots * sizeof *t->slots;
}

static uint32_t slot_of(const bs_call_tree *t, uint32_t parent, const bs_key *key)
{
    uint32_t mask = t->cap_slots - 1;
    uint32_t i = (uint32_t)bs_key_hash(key, parent) & mask;
    for (;;) {
        uint32_t n = t->slots[i];
        if (n == BS_NO_NODE)
            return i;
        if (t->nodes[n].parent == parent && bs_key_eq(&t->nodes[n].key, key))
            return i;
        i = (i + 1) & mask;
    }
}

static int grow_slots(bs_call_tree *t)
{
    uint32_t new_cap = t->cap_slots * 2;
    if (new_cap < t->cap_slots)
        return -1;
    uint32_t *slots = bs_budget_alloc(t->budget, (size_t)new_cap * sizeof *slots);
    if (!slots)
        return -1;
    memset(slots, 0xff, (size_t)new_cap * sizeof *slots);
    bs_budget_free(t->budget, t->slots, (size_t)t->cap_slots * sizeof *t->slots);
    t->slots = slots;
    t->cap_slots = new_cap;
    for (uint32_t n = 1; n < t->n_nodes; n++)
        t->slots[slot_of(t, t->nodes[n].parent, &t->nodes[n].key)] = n;
    return 0;
}

static int grow_nodes(bs_call_tree *t)
{
    uint32_t new_cap = t->cap_nodes * 2;
    if (new_cap < t->cap_nodes || new_cap >= BS_NO_NODE)
        return -1;
    bs_tree_node *nodes = bs_budget_realloc(t->budget, t->nodes,
                                            (size_t)t->cap_nodes * sizeof *nodes,
                                            (size_t)new_cap * sizeof *nodes);
    if (!nodes)
        return -1;
    t->nodes = nodes;
    t->cap_nodes = new_cap;
    return 0;
}

uint32_t bs_call_tree_child(bs_call_tree *t, uint32_t parent, const bs_key *key)
{
    uint32_t s = slot_of(t, parent, key);
    if (t->slots[s] != BS_NO_NODE)
        return t->slots[s];
    /* Keep the table at most half full so probes stay short. */
    if ((t->n_nodes + 1) * 2 > t->cap_slots) {
        if (grow_slots(t) < 0)
            return BS_NO_NODE;
        s = slot_of(t, parent, key);
    }
    if (t->n_nodes == t->cap_nodes && grow_nodes(t) < 0)
        return BS_NO_NODE;
    uint32_t n = t->n_nodes++;
    bs_tree_node *node = &t->nodes[n];
    node->key = *key;
    node->parent = parent;
    node->depth = t->nodes[parent].depth + 1;
    node->self_ns = 0;
    node->calls = 0;
    node->owed_ns = 0;
    t->slots[s] = n;
    return n;
}
