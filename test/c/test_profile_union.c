/* test_profile_union.c — laying profiles onto one call tree
 * (engine/profile_union.h): equal stacks of different profiles share a
 * node, processes are paired across runs by their labels without pids,
 * scheduled-out time can be left out, malformed trees are refused, and any
 * depth is laid without recursion. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/profile_union.h"
#include "folded_text.h"
#include "readers/readers.h"
#include "test_util.h"


/* The union path of node n, root first, ';'-separated (root left out). */
static void path_of(const bs_profile_union *u, uint32_t n, char *buf, size_t cap)
{
    uint32_t chain[64];
    size_t depth = 0;
    for (; n != 0 && depth < 64; n = u->tree.nodes[n].parent)
        chain[depth++] = n;
    size_t used = 0;
    buf[0] = '\0';
    while (depth-- > 0)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", used ? ";" : "",
                                 bs_frame_name(u->frames, bs_profile_union_frame(u, chain[depth])));
}

/* Lays every tree of p, each process on its label without pid, and adds
 * the self times of its nodes into self[] (at least u's size after). */
static void lay(bs_profile_union *u, const bs_profile *p, int drop, uint64_t *self)
{
    for (uint32_t ti = 0; ti < p->n_trees; ti++) {
        const bs_ptree *t = &p->trees[ti];
        uint32_t *node_of = malloc(t->n_nodes * sizeof *node_of);
        assert_non_null(node_of);
        uint32_t root = bs_profile_union_process_node(u, p, t);
        assert_int_not_equal(root, BS_NO_NODE);
        assert_int_equal(bs_profile_union_add_tree(u, p, t, root, drop, node_of), 0);
        for (uint32_t i = 0; i < t->n_nodes; i++)
            if (node_of[i] != BS_NO_NODE)
                self[node_of[i]] += t->nodes[i].self_ns;
        free(node_of);
    }
}

static uint64_t self_at(const bs_profile_union *u, const uint64_t *self, const char *path)
{
    char buf[512];
    for (uint32_t n = 1; n < u->tree.n_nodes; n++) {
        path_of(u, n, buf, sizeof buf);
        if (strcmp(buf, path) == 0)
            return self[n];
    }
    fail_msg("no node %s", path);
    return 0;
}

static void test_equal_stacks_share_a_node(void **state)
{
    (void)state;
    bs_profile a, b;
    read_folded_text("<0.80.0> srv;m:f/1;m:g/0 30\n<0.80.0> srv;m:f/1 10\n<0.81.0>;m:h/0 5\n", &a);
    read_folded_text("<0.93.0> srv;m:f/1;m:g/0 7\n<0.94.0> other;m:f/1 1\n", &b);
    bs_frame_table names;
    bs_frame_table_init(&names);
    bs_profile_union u;
    assert_int_equal(bs_profile_union_init(&u, &names), 0);
    uint64_t self[64] = {0};
    lay(&u, &a, 0, self);
    uint32_t after_a = u.tree.n_nodes;
    lay(&u, &b, 0, self);
    /* <process> srv;m:f/1;m:g/0 is one node for both runs (pids differ). */
    assert_int_equal(self_at(&u, self, "<process> srv;m:f/1;m:g/0"), 37);
    assert_int_equal(self_at(&u, self, "<process> srv;m:f/1"), 10);
    assert_int_equal(self_at(&u, self, "<process>;m:h/0"), 5);
    assert_int_equal(self_at(&u, self, "<process> other;m:f/1"), 1);
    /* b added only the process `other' and its frame. */
    assert_int_equal(u.tree.n_nodes, after_a + 2);
    bs_profile_union_free(&u);
    bs_frame_table_free(&names);
    bs_profile_free(&a);
    bs_profile_free(&b);
}

static void test_sched_out_time_left_out(void **state)
{
    (void)state;
    bs_profile a;
    read_folded_text("<0.80.0>;m:f/1;WAIT 50\n<0.80.0>;m:f/1;SLEEP;m:x/0 3\n<0.80.0>;m:f/1 4\n", &a);
    bs_frame_table names;
    bs_frame_table_init(&names);
    bs_profile_union u;
    assert_int_equal(bs_profile_union_init(&u, &names), 0);
    uint64_t self[64] = {0};
    lay(&u, &a, 1, self);
    assert_int_equal(self_at(&u, self, "<process>;m:f/1"), 4);
    char buf[512];
    for (uint32_t n = 1; n < u.tree.n_nodes; n++) {
        path_of(&u, n, buf, sizeof buf);
        assert_null(strstr(buf, "WAIT"));
        assert_null(strstr(buf, "SLEEP"));
    }
    bs_profile_union_free(&u);
    bs_frame_table_free(&names);
    bs_profile_free(&a);
}

static void test_malformed_tree_refused(void **state)
{
    (void)state;
    bs_profile a;
    read_folded_text("<0.80.0>;m:f/1;m:g/0 1\n", &a);
    bs_ptree *t = &a.trees[0];
    assert_true(t->n_nodes >= 3);
    bs_frame_table names;
    bs_frame_table_init(&names);
    bs_profile_union u;
    assert_int_equal(bs_profile_union_init(&u, &names), 0);
    uint32_t node_of[8];
    t->nodes[2].parent = 2; /* its own parent */
    assert_int_equal(bs_profile_union_add_tree(&u, &a, t, 0, 0, node_of), -1);
    t->nodes[2].parent = 1;
    t->nodes[2].frame = a.frames.n; /* a frame the profile does not have */
    assert_int_equal(bs_profile_union_add_tree(&u, &a, t, 0, 0, node_of), -1);
    bs_profile_union_free(&u);
    bs_frame_table_free(&names);
    bs_profile_free(&a);
}

static void test_labels_without_pid(void **state)
{
    (void)state;
    char buf[64];
    bs_label_without_pid("<0.85.0> my_server", buf, sizeof buf);
    assert_string_equal(buf, "<process> my_server");
    bs_label_without_pid("<0.85.0>", buf, sizeof buf);
    assert_string_equal(buf, "<process>");
    bs_label_without_pid("<0.85> x", buf, sizeof buf); /* not a pid */
    assert_string_equal(buf, "<0.85> x");
    bs_label_without_pid("<0.85.0>x", buf, sizeof buf); /* no space after it */
    assert_string_equal(buf, "<0.85.0>x");
    bs_label_without_pid("all", buf, sizeof buf);
    assert_string_equal(buf, "all");
    bs_label_without_pid("<0.85.0> a_long_name_cut", buf, 12);
    assert_string_equal(buf, "<process> a");
}

/* A chain as deep as the test's size: laid twice onto the same nodes, on a
 * small thread stack's worth of C stack (nothing recurses). */
static void test_deep_chain_laid_without_recursion(void **state)
{
    (void)state;
    uint32_t depth = tu_small() ? 20000 : 1000000;
    bs_profile p;
    assert_int_equal(bs_profile_init(&p), 0);
    assert_int_equal(bs_profile_add_tree(&p, "<0.80.0>"), 0);
    bs_ptree *t = &p.trees[0];
    uint32_t f = bs_frame_table_intern(&p.frames, "m:rec/1", 7);
    bs_pnode *nodes = realloc(t->nodes, ((size_t)depth + 1) * sizeof *nodes);
    assert_non_null(nodes);
    t->nodes = nodes;
    for (uint32_t i = 1; i <= depth; i++)
        nodes[i] = (bs_pnode){.parent = i - 1, .frame = f, .self_ns = 1};
    t->n_nodes = depth + 1;
    bs_frame_table names;
    bs_frame_table_init(&names);
    bs_profile_union u;
    assert_int_equal(bs_profile_union_init(&u, &names), 0);
    uint32_t *node_of = malloc(((size_t)depth + 1) * sizeof *node_of);
    assert_non_null(node_of);
    assert_int_equal(bs_profile_union_add_tree(&u, &p, t, 0, 0, node_of), 0);
    assert_int_equal(u.tree.n_nodes, depth + 1);
    uint32_t deepest = node_of[depth];
    assert_int_equal(bs_profile_union_add_tree(&u, &p, t, 0, 0, node_of), 0);
    assert_int_equal(u.tree.n_nodes, depth + 1);
    assert_int_equal(node_of[depth], deepest);
    free(node_of);
    bs_profile_union_free(&u);
    bs_frame_table_free(&names);
    bs_profile_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equal_stacks_share_a_node),
        cmocka_unit_test(test_sched_out_time_left_out),
        cmocka_unit_test(test_malformed_tree_refused),
        cmocka_unit_test(test_labels_without_pid),
        cmocka_unit_test(test_deep_chain_laid_without_recursion),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
