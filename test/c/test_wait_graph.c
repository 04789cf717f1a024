/* test_wait_graph.c — the wait-for graph of `beamspy dump` (cli/wait_graph.h)
 * from dumps encoded with libei as a node sends them: rings are deadlocks
 * printed from their smallest member, clients behind a ring and chains to a
 * busy process find their root and are counted, a cycle through two dumps
 * is one cycle (a target known by name only included), targets outside the
 * dumps end chains, a knot of calls is one deadlock, and a 100,000-long
 * chain and ring are handled without recursion. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <ei.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/wait_graph.h"

/* One process of a test dump: name may be "", targets are "node/pid" or
 * "node/=name" (a name only), separated by spaces. */
typedef struct tproc {
    const char *pid, *name, *state, *targets;
} tproc;

static void enc_bin(ei_x_buff *x, const char *s)
{
    assert_int_equal(ei_x_encode_binary(x, s, (long)strlen(s)), 0);
}

static void enc_key(ei_x_buff *x, const char *k)
{
    assert_int_equal(ei_x_encode_atom(x, k), 0);
}

static void enc_target(ei_x_buff *x, const char *t, size_t len)
{
    char node[128], key[128];
    const char *slash = memchr(t, '/', len);
    assert_non_null(slash);
    snprintf(node, sizeof node, "%.*s", (int)(slash - t), t);
    snprintf(key, sizeof key, "%.*s", (int)(len - (size_t)(slash - t) - 1), slash + 1);
    assert_int_equal(ei_x_encode_map_header(x, 3), 0);
    enc_key(x, "pid");
    enc_bin(x, key[0] == '=' ? "" : key);
    enc_key(x, "name");
    enc_bin(x, key[0] == '=' ? key + 1 : "");
    enc_key(x, "node");
    enc_bin(x, node);
}

static void enc_proc(ei_x_buff *x, const tproc *p)
{
    assert_int_equal(ei_x_encode_map_header(x, 7), 0);
    enc_key(x, "pid");
    enc_bin(x, p->pid);
    enc_key(x, "name");
    enc_bin(x, p->name);
    enc_key(x, "state");
    enc_bin(x, p->state);
    enc_key(x, "current");
    enc_bin(x, "gen:do_call/4");
    enc_key(x, "reductions_delta");
    assert_int_equal(ei_x_encode_long(x, 1), 0);
    enc_key(x, "wait_note");
    enc_bin(x, "");
    enc_key(x, "waits_for");
    const char *t = p->targets ? p->targets : "";
    int n = 0;
    for (const char *s = t; *s;) {
        size_t len = strcspn(s, " ");
        n += len > 0;
        s += len + (s[len] == ' ');
    }
    if (n)
        assert_int_equal(ei_x_encode_list_header(x, n), 0);
    for (const char *s = t; *s;) {
        size_t len = strcspn(s, " ");
        if (len)
            enc_target(x, s, len);
        s += len + (s[len] == ' ');
    }
    assert_int_equal(ei_x_encode_empty_list(x), 0);
}

/* Starts a dump map for node; procs are added with add_proc, then end_dump. */
static void begin_dump(ei_x_buff *x, const char *node, size_t n_procs)
{
    assert_int_equal(ei_x_new(x), 0);
    /* libei grows a buffer a little at a time: reserve room for all. */
    int room = (int)(n_procs * 300 + 1024);
    char *big = realloc(x->buff, (size_t)room);
    assert_non_null(big);
    x->buff = big;
    x->buffsz = room;
    assert_int_equal(ei_x_encode_map_header(x, 3), 0);
    enc_key(x, "node");
    enc_bin(x, node);
    enc_key(x, "interval_ms");
    assert_int_equal(ei_x_encode_long(x, 200), 0);
    enc_key(x, "processes");
    if (n_procs)
        assert_int_equal(ei_x_encode_list_header(x, (long)n_procs), 0);
}

static bs_eterm_tree *end_dump(ei_x_buff *x)
{
    assert_int_equal(ei_x_encode_empty_list(x), 0);
    bs_eterm_tree *t = NULL;
    int index = 0;
    char err[256];
    assert_int_equal(bs_eterm_decode(x->buff, x->index, &index, &t, err, sizeof err), 0);
    ei_x_free(x);
    return t;
}

static bs_eterm_tree *dump_of(const char *node, const tproc *procs, size_t n)
{
    ei_x_buff x;
    begin_dump(&x, node, n);
    for (size_t i = 0; i < n; i++)
        enc_proc(&x, &procs[i]);
    return end_dump(&x);
}

static size_t find(const bs_wait_graph *g, const char *node, const char *pid)
{
    for (size_t i = 0; i < g->n_procs; i++)
        if (strcmp(g->procs[i].node, node) == 0 && strcmp(g->procs[i].pid, pid) == 0)
            return i;
    fail_msg("no process %s on %s", pid, node);
    return 0;
}

static const char *cycle_name(const bs_wait_graph *g, size_t d, size_t i)
{
    return g->procs[g->cycle_members[g->deadlocks[d].first + i]].name;
}

/* -------------------------------- tests -------------------------------- */

static void test_ring_and_client(void **state)
{
    (void)state;
    const tproc procs[] = {
        {"<0.90.0>", "r2b", "call", "n@h/<0.89.0>"},
        {"<0.89.0>", "r2a", "call", "n@h/<0.90.0>"},
        {"<0.95.0>", "", "call", "n@h/<0.90.0>"},
        {"<0.96.0>", "idle_one", "idle", NULL},
    };
    bs_eterm_tree *t = dump_of("n@h", procs, 4);
    const bs_eterm *d = bs_eterm_root(t);
    bs_wait_graph g;
    assert_int_equal(bs_wait_graph_build(&g, &d, 1), 0);
    assert_int_equal(g.n_deadlocks, 1);
    assert_int_equal(g.deadlocks[0].length, 2);
    assert_int_equal(g.deadlocks[0].members, 2);
    assert_int_equal(g.deadlocks[0].behind, 1);
    assert_string_equal(cycle_name(&g, 0, 0), "r2a"); /* the smallest first */
    assert_string_equal(cycle_name(&g, 0, 1), "r2b");
    const bs_wg_proc *client = &g.procs[find(&g, "n@h", "<0.95.0>")];
    assert_int_equal(client->root_kind, BS_WG_ROOT_DEADLOCK);
    assert_int_equal(client->next, find(&g, "n@h", "<0.90.0>"));
    assert_int_equal(g.procs[find(&g, "n@h", "<0.96.0>")].root_kind, BS_WG_ROOT_NONE);
    assert_int_equal(g.blocked, 1);
    assert_int_equal(g.truncated, 0);
    bs_wait_graph_free(&g);
    bs_eterm_free(t);
}

static void test_chain_to_busy(void **state)
{
    (void)state;
    const tproc procs[] = {
        {"<0.1.0>", "c1", "call", "n@h/<0.2.0>"},
        {"<0.5.0>", "c2", "call", "n@h/<0.2.0>"},
        {"<0.2.0>", "caller", "call", "n@h/<0.3.0>"},
        {"<0.3.0>", "worker", "busy", NULL},
        {"<0.4.0>", "lost", "call", NULL}, /* a wait whose target is unknown: no edge */
    };
    bs_eterm_tree *t = dump_of("n@h", procs, 5);
    const bs_eterm *d = bs_eterm_root(t);
    bs_wait_graph g;
    assert_int_equal(bs_wait_graph_build(&g, &d, 1), 0);
    assert_int_equal(g.n_deadlocks, 0);
    size_t worker = find(&g, "n@h", "<0.3.0>"), caller = find(&g, "n@h", "<0.2.0>");
    assert_int_equal(g.procs[worker].behind, 3);
    assert_int_equal(g.procs[worker].state, BS_WG_BUSY);
    assert_int_equal(g.procs[caller].root_kind, BS_WG_ROOT_PROCESS);
    assert_int_equal(g.procs[caller].root, worker);
    assert_int_equal(g.procs[caller].waited_on, 2);
    assert_int_equal(g.procs[find(&g, "n@h", "<0.1.0>")].root, worker);
    assert_int_equal(g.procs[find(&g, "n@h", "<0.4.0>")].root_kind, BS_WG_ROOT_NONE);
    assert_int_equal(g.blocked, 3);
    bs_wait_graph_free(&g);
    bs_eterm_free(t);
}

static void test_cycle_across_dumps(void **state)
{
    (void)state;
    const tproc on_a[] = {{"<0.80.0>", "xa", "call", "b@h/=xb"}, {"<0.81.0>", "", "call", "b@h/<0.70.0>"}};
    const tproc on_b[] = {{"<0.70.0>", "xb", "call", "a@h/<0.80.0>"}, {"<0.71.0>", "", "call", "c@h/=far"},
                          {"<0.72.0>", "", "call", "c@h/=far"}};
    bs_eterm_tree *ta = dump_of("a@h", on_a, 2), *tb = dump_of("b@h", on_b, 3);
    const bs_eterm *d[] = {bs_eterm_root(ta), bs_eterm_root(tb)};
    bs_wait_graph g;
    assert_int_equal(bs_wait_graph_build(&g, d, 2), 0);
    assert_int_equal(g.n_deadlocks, 1);
    assert_string_equal(cycle_name(&g, 0, 0), "xa");
    assert_string_equal(cycle_name(&g, 0, 1), "xb");
    assert_int_equal(g.deadlocks[0].behind, 1);
    /* Two processes wait for the same process outside the dumps: one root. */
    const bs_wg_proc *p1 = &g.procs[find(&g, "b@h", "<0.71.0>")], *p2 = &g.procs[find(&g, "b@h", "<0.72.0>")];
    assert_int_equal(p1->root_kind, BS_WG_ROOT_OUTSIDE);
    assert_int_equal(p1->root, p2->root);
    assert_int_equal(g.targets[p1->root].behind, 2);
    assert_string_equal(g.targets[p1->root].node, "c@h");
    /* A name on another node is not matched on this one. */
    bs_wait_graph_free(&g);
    assert_int_equal(bs_wait_graph_build(&g, d, 1), 0);
    assert_int_equal(g.n_deadlocks, 0);
    assert_int_equal(g.procs[0].root_kind, BS_WG_ROOT_OUTSIDE);
    bs_wait_graph_free(&g);
    bs_eterm_free(ta);
    bs_eterm_free(tb);
}

static void test_knot(void **state)
{
    (void)state;
    /* a waits for b; b (a multi_call) for a and c; c for a: one knot of
     * three, one cycle printed. */
    const tproc procs[] = {
        {"<0.1.0>", "a", "call", "n@h/<0.2.0>"},
        {"<0.2.0>", "b", "call", "n@h/<0.1.0> n@h/<0.3.0>"},
        {"<0.3.0>", "c", "call", "n@h/<0.1.0>"},
    };
    bs_eterm_tree *t = dump_of("n@h", procs, 3);
    const bs_eterm *d = bs_eterm_root(t);
    bs_wait_graph g;
    assert_int_equal(bs_wait_graph_build(&g, &d, 1), 0);
    assert_int_equal(g.n_deadlocks, 1);
    assert_int_equal(g.deadlocks[0].members, 3);
    assert_true(g.deadlocks[0].length >= 2 && g.deadlocks[0].length <= 3);
    assert_string_equal(cycle_name(&g, 0, 0), "a");
    bs_wait_graph_free(&g);
    bs_eterm_free(t);
}

/* A chain of n processes into a ring of n: no recursion, linear work. */
static void test_long_chain_and_ring(void **state)
{
    (void)state;
    size_t n = getenv("BS_TEST_SMALL") ? 2000 : 100000;
    ei_x_buff x;
    begin_dump(&x, "n@h", 2 * n);
    char pid[32], target[64];
    for (size_t i = 0; i < 2 * n; i++) {
        snprintf(pid, sizeof pid, "<0.%zu.0>", i);
        /* 0..n-1 chain into n; n..2n-1 a ring. */
        size_t next = i + 1 < 2 * n ? i + 1 : n;
        snprintf(target, sizeof target, "n@h/<0.%zu.0>", next);
        tproc p = {pid, "", "call", target};
        enc_proc(&x, &p);
    }
    bs_eterm_tree *t = end_dump(&x);
    const bs_eterm *d = bs_eterm_root(t);
    bs_wait_graph g;
    assert_int_equal(bs_wait_graph_build(&g, &d, 1), 0);
    assert_int_equal(g.n_deadlocks, 1);
    assert_int_equal(g.deadlocks[0].length, n);
    assert_int_equal(g.deadlocks[0].behind, n);
    assert_int_equal(g.procs[0].root_kind, BS_WG_ROOT_DEADLOCK);
    assert_int_equal(g.procs[0].waited_on, 0);
    bs_wait_graph_free(&g);
    bs_eterm_free(t);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_and_client),
        cmocka_unit_test(test_chain_to_busy),
        cmocka_unit_test(test_cycle_across_dumps),
        cmocka_unit_test(test_knot),
        cmocka_unit_test(test_long_chain_and_ring),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
