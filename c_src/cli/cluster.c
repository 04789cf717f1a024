/* cluster.c — the nodes of --cluster, --node and --exclude-node as one set
 * (see cluster.h). A seed is connected to as a hidden node, which is why the
 * tool never appears in nodes(visible), and disconnected again before the
 * command attaches to the nodes found. */
#include "cluster.h"

#include <stdlib.h>
#include <string.h>

#include "../dist/call_args.h"
#include "cli.h"

/* Node names in the order added, each once; on the heap, at most
 * BS_CLUSTER_MAX_SEEN. */
typedef struct name_set {
    char **names;
    size_t n, cap;
} name_set;

static void set_free(name_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->names[i]);
    free(s->names);
    memset(s, 0, sizeof *s);
}

static int set_has(const name_set *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->names[i], name) == 0)
            return 1;
    return 0;
}

/* 0 added or already there; -1 out of memory or over BS_CLUSTER_MAX_SEEN
 * (message printed). */
static int set_add(name_set *s, const char *name)
{
    if (set_has(s, name))
        return 0;
    if (s->n >= BS_CLUSTER_MAX_SEEN) {
        bs_cli_error("more than %u nodes named: beamspy does not search further", (unsigned)BS_CLUSTER_MAX_SEEN);
        return -1;
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        char **more = realloc(s->names, cap * sizeof *more);
        if (!more) {
            bs_cli_error("out of memory");
            return -1;
        }
        s->names = more;
        s->cap = cap;
    }
    char *copy = strdup(name);
    if (!copy) {
        bs_cli_error("out of memory");
        return -1;
    }
    s->names[s->n++] = copy;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* NAME completed as --node completes it, added to s. BS_EXIT_OK, or a usage
 * error naming the option. */
static int add_completed(const char *cmd, const char *opt, const char *name, name_set *s)
{
    char full[BS_NODE_NAME_MAX + 1], err[512];
    if (bs_node_full_name(name, full, sizeof full, err, sizeof err) != BS_NODE_OK)
        return bs_cli_usage_error(cmd, "%s: %s", opt, err);
    return set_add(s, full) < 0 ? BS_EXIT_FAILURE : BS_EXIT_OK;
}

/* Calls erlang:FUN(ARGS) on the seed and adds the node names it answers (an
 * atom, or a list of atoms) to s. */
static int add_answer(bs_node *n, const char *fun, ei_x_buff *args, unsigned timeout_ms, name_set *s)
{
    ei_x_buff reply;
    int index = 0;
    char err[1024];
    bs_node_status st = bs_node_call(n, "erlang", fun, args, timeout_ms, &reply, &index, err, sizeof err);
    ei_x_free(args);
    if (st != BS_NODE_OK) {
        bs_cli_error("--cluster %s: %s", n->name, err);
        return bs_remote_exit_code(st);
    }
    bs_eterm_tree *t = NULL;
    int rc = bs_eterm_decode(reply.buff, reply.index, &index, &t, err, sizeof err);
    ei_x_free(&reply);
    if (rc < 0) {
        bs_cli_error("--cluster %s: unreadable answer to erlang:%s: %s", n->name, fun, err);
        return BS_EXIT_FAILURE;
    }
    const bs_eterm *root = bs_eterm_root(t);
    int is_list = bs_eterm_kind_of(root) == BS_ET_LIST;
    size_t count = is_list ? bs_eterm_size(root) : 1;
    rc = BS_EXIT_OK;
    for (size_t i = 0; i < count && rc == BS_EXIT_OK; i++) {
        const bs_eterm *item = is_list ? bs_eterm_item(root, i) : root;
        const char *name = bs_eterm_kind_of(item) == BS_ET_ATOM ? bs_eterm_text(item) : NULL;
        if (!name || bs_eterm_text_len(item) > BS_NODE_NAME_MAX) {
            bs_cli_error("--cluster %s: erlang:%s answered something other than node names", n->name, fun);
            rc = BS_EXIT_FAILURE;
        } else if (set_add(s, name) < 0) {
            rc = BS_EXIT_FAILURE;
        }
    }
    bs_eterm_free(t);
    return rc;
}

/* Adds the seed (by the name it gives itself) and its visible nodes, sorted,
 * to s; the seed's name as connected to goes to seeds. */
static int ask_seed(const bs_remote_opts *o, const char *seed, const char *cookie, const char *origin,
                    name_set *s, name_set *seeds)
{
    bs_node n;
    char err[1024];
    bs_node_status st = bs_node_connect(&n, seed, cookie, origin, o->timeout_ms, err, sizeof err);
    if (st != BS_NODE_OK) {
        bs_cli_error("--cluster %s: %s", seed, err);
        return st == BS_NODE_FAILED ? BS_EXIT_FAILURE : bs_remote_exit_code(st);
    }
    ei_x_buff args;
    int rc = set_add(seeds, n.name) < 0 ? BS_EXIT_FAILURE : BS_EXIT_OK;
    if (rc == BS_EXIT_OK && bs_call_args(&args, "") < 0)
        rc = BS_EXIT_FAILURE;
    if (rc == BS_EXIT_OK)
        rc = add_answer(&n, "node", &args, o->timeout_ms, s);
    size_t first = s->n;
    if (rc == BS_EXIT_OK && bs_call_args(&args, "a", "visible") < 0)
        rc = BS_EXIT_FAILURE;
    if (rc == BS_EXIT_OK)
        rc = add_answer(&n, "nodes", &args, o->timeout_ms, s);
    if (rc == BS_EXIT_OK)
        qsort(s->names + first, s->n - first, sizeof *s->names, by_name);
    bs_node_close(&n);
    return rc;
}

/* Everything named, before exclusions: --node, then each seed's cluster. */
static int gather(const char *cmd, const bs_remote_opts *o, name_set *all, name_set *seeds)
{
    for (int i = 0; i < o->n_nodes; i++) {
        int rc = add_completed(cmd, "--node", o->nodes[i], all);
        if (rc != BS_EXIT_OK)
            return rc;
    }
    if (o->n_seeds == 0)
        return BS_EXIT_OK;
    char cookie[EI_MAX_COOKIE_SIZE + 2], origin[4200], err[1024];
    if (bs_cookie_resolve(o->cookie, o->cookie_file, cookie, sizeof cookie, origin, sizeof origin, err,
                          sizeof err) < 0) {
        bs_cli_error("%s", err);
        return BS_EXIT_FAILURE;
    }
    int rc = BS_EXIT_OK;
    for (int i = 0; i < o->n_seeds && rc == BS_EXIT_OK; i++)
        rc = ask_seed(o, o->seeds[i], cookie, origin, all, seeds);
    memset(cookie, 0, sizeof cookie);
    return rc;
}

static void print_names(const name_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        fprintf(stderr, "%s%s", i ? " " : "", s->names[i]);
}

/* "beamspy: cluster of 4 nodes from a@h: a@h b@h c@h d@h (left out: e@h)" */
static void say_set(const name_set *seeds, const name_set *kept, const name_set *left)
{
    if (seeds->n) {
        fprintf(stderr, "beamspy: cluster of %zu node%s from ", kept->n, kept->n == 1 ? "" : "s");
        for (size_t i = 0; i < seeds->n; i++)
            fprintf(stderr, "%s%s", i ? ", " : "", seeds->names[i]);
        fputs(": ", stderr);
    } else {
        fprintf(stderr, "beamspy: %zu node%s: ", kept->n, kept->n == 1 ? "" : "s");
    }
    print_names(kept);
    if (left->n) {
        fputs(" (left out: ", stderr);
        print_names(left);
        fputc(')', stderr);
    }
    fputc('\n', stderr);
}

int bs_cluster_any_node(const bs_remote_opts *o)
{
    return o->n_nodes > 0 || o->n_seeds > 0;
}

/* --node NAME given more than once, in the same spelling: kept once, and
 * said (a second connection to one node is refused by it, with a message
 * about cookies that would mislead). */
static void drop_repeated_nodes(bs_remote_opts *o)
{
    int kept = 0;
    for (int i = 0; i < o->n_nodes; i++) {
        int seen = 0;
        for (int j = 0; j < kept && !seen; j++)
            seen = strcmp(o->nodes[j], o->nodes[i]) == 0;
        if (seen)
            bs_cli_error("warning: --node %s given more than once: taken once", o->nodes[i]);
        else
            o->nodes[kept++] = o->nodes[i];
    }
    o->n_nodes = kept;
}

int bs_cluster_find(const char *cmd, bs_remote_opts *o, int max_nodes)
{
    if (o->n_seeds == 0 && o->n_excluded == 0) {
        drop_repeated_nodes(o);
        return BS_EXIT_OK;
    }
    name_set all = {0}, seeds = {0}, excluded = {0}, kept = {0}, left = {0};
    int rc = gather(cmd, o, &all, &seeds);
    for (int i = 0; i < o->n_excluded && rc == BS_EXIT_OK; i++)
        rc = add_completed(cmd, "--exclude-node", o->excluded[i], &excluded);
    for (size_t i = 0; i < all.n && rc == BS_EXIT_OK; i++)
        if (set_add(set_has(&excluded, all.names[i]) ? &left : &kept, all.names[i]) < 0)
            rc = BS_EXIT_FAILURE;
    for (size_t i = 0; i < excluded.n && rc == BS_EXIT_OK; i++)
        if (!set_has(&all, excluded.names[i]))
            bs_cli_error("warning: --exclude-node %s: no such node among those found (nothing left out for it)",
                         excluded.names[i]);
    if (rc == BS_EXIT_OK && kept.n == 0)
        rc = bs_cli_usage_error(cmd, "no node left: --exclude-node left out all %zu", all.n);
    if (rc == BS_EXIT_OK && kept.n > (size_t)max_nodes)
        rc = max_nodes == 1 ? bs_cli_usage_error(cmd, "%zu nodes, and %s works on one node: name it with --node",
                                                 kept.n, cmd)
                            : bs_cli_usage_error(cmd, "%zu nodes, more than the %d beamspy %s takes at once: "
                                                 "leave some out with --exclude-node", kept.n, max_nodes, cmd);
    if (rc == BS_EXIT_OK) {
        say_set(&seeds, &kept, &left);
        for (size_t i = 0; i < kept.n; i++) {
            snprintf(o->found[i], sizeof o->found[i], "%s", kept.names[i]);
            o->nodes[i] = o->found[i];
        }
        o->n_nodes = (int)kept.n;
    }
    set_free(&all), set_free(&seeds), set_free(&excluded), set_free(&kept), set_free(&left);
    return rc;
}
