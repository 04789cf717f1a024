/* profile_union.c — laying profiles onto one call tree (see profile_union.h). */
#include "profile_union.h"

#include <stdio.h>
#include <string.h>

int bs_profile_union_init(bs_profile_union *u, bs_frame_table *frames)
{
    u->frames = frames;
    return bs_call_tree_init(&u->tree, NULL);
}

void bs_profile_union_free(bs_profile_union *u)
{
    bs_call_tree_free(&u->tree);
}

uint32_t bs_profile_union_child(bs_profile_union *u, uint32_t parent, const char *name)
{
    uint32_t id = bs_frame_table_intern(u->frames, name, strlen(name));
    if (id == UINT32_MAX)
        return BS_NO_NODE;
    bs_key k = {(uint64_t)id + 1, 0, 0};
    return bs_call_tree_child(&u->tree, parent, &k);
}

int bs_profile_union_add_tree(bs_profile_union *u, const bs_profile *p, const bs_ptree *t, uint32_t root,
                              int drop_sched_out, uint32_t *node_of)
{
    if (t->n_nodes == 0)
        return 0;
    node_of[0] = root;
    for (uint32_t i = 1; i < t->n_nodes; i++) {
        const bs_pnode *n = &t->nodes[i];
        if (n->frame >= p->frames.n || n->parent >= i)
            return -1;
        uint32_t parent = node_of[n->parent];
        node_of[i] = BS_NO_NODE;
        if (parent == BS_NO_NODE || (drop_sched_out && bs_profile_is_sched_out(p, n->frame)))
            continue;
        node_of[i] = bs_profile_union_child(u, parent, bs_frame_name(&p->frames, n->frame));
        if (node_of[i] == BS_NO_NODE)
            return -1;
    }
    return 0;
}

uint32_t bs_profile_union_process_node(bs_profile_union *u, const bs_profile *p, const bs_ptree *t)
{
    if (t->synthetic_root)
        return 0;
    char label[1100];
    bs_label_without_pid(bs_frame_name(&p->frames, t->nodes[0].frame), label, sizeof label);
    return bs_profile_union_child(u, 0, label);
}

void bs_label_without_pid(const char *label, char *buf, size_t cap)
{
    const char *s = label;
    int dots = 0;
    if (*s == '<') {
        for (s++; (*s >= '0' && *s <= '9') || *s == '.'; s++)
            dots += *s == '.';
        if (*s == '>' && dots == 2 && (s[1] == '\0' || s[1] == ' ')) {
            snprintf(buf, cap, "<process>%s", s + 1);
            return;
        }
    }
    snprintf(buf, cap, "%s", label);
}
