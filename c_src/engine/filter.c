/* filter.c — profile filters (see filter.h). */
#define _POSIX_C_SOURCE 200809L
#include "filter.h"

#include <inttypes.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/text_fit.h"
#include "collapse_recursion.h"

/* Per frame id: 1 if the name matches re. */
static unsigned char *match_frames(const bs_profile *p, const regex_t *re)
{
    unsigned char *m = malloc(p->frames.n ? p->frames.n : 1);
    if (!m)
        return NULL;
    for (uint32_t i = 0; i < p->frames.n; i++)
        m[i] = regexec(re, bs_frame_name(&p->frames, i), 0, NULL, 0) == 0;
    return m;
}

/* Keeps only the time of nodes for which keep[i] is set, then drops nodes
 * with nothing left in their subtree (roots stay). */
static int compact_tree(bs_ptree *t, const unsigned char *keep_self)
{
    uint32_t n = t->n_nodes;
    uint64_t *sub = calloc(n ? n : 1, sizeof *sub);
    uint32_t *remap = malloc((n ? n : 1) * sizeof *remap);
    if (!sub || !remap) {
        free(sub);
        free(remap);
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (!keep_self[i])
            t->nodes[i].self_ns = 0;
        sub[i] = t->nodes[i].self_ns;
    }
    for (uint32_t i = n; i-- > 1;)
        sub[t->nodes[i].parent] += sub[i];
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (i == 0 || sub[i] > 0) {
            remap[i] = k;
            bs_pnode node = t->nodes[i];
            if (i > 0)
                node.parent = remap[node.parent];
            t->nodes[k++] = node;
        } else {
            remap[i] = UINT32_MAX;
        }
    }
    t->n_nodes = k;
    uint32_t s = 0;
    for (uint32_t i = 0; i < t->n_spans; i++) {
        if (remap[t->spans[i].node] == UINT32_MAX)
            continue;
        t->spans[s] = t->spans[i];
        t->spans[s].node = remap[t->spans[i].node];
        s++;
    }
    t->n_spans = s;
    free(sub);
    free(remap);
    return 0;
}

static int apply_filters(bs_profile *p, const bs_filter *f, const unsigned char *inc, const unsigned char *exc)
{
    for (uint32_t ti = 0; ti < p->n_trees; ti++) {
        bs_ptree *t = &p->trees[ti];
        uint32_t n = t->n_nodes;
        unsigned char *keep = malloc(n ? n : 1);
        unsigned char *path_inc = malloc(n ? n : 1);
        unsigned char *path_exc = malloc(n ? n : 1);
        if (!keep || !path_inc || !path_exc) {
            free(keep), free(path_inc), free(path_exc);
            return -1;
        }
        for (uint32_t i = 0; i < n; i++) {
            uint32_t fr = t->nodes[i].frame;
            int real_frame = i > 0 || !t->synthetic_root;
            int hit_inc = inc && real_frame && inc[fr];
            int hit_exc = exc && real_frame && exc[fr];
            path_inc[i] = (unsigned char)(hit_inc || (i > 0 && path_inc[t->nodes[i].parent]));
            path_exc[i] = (unsigned char)(hit_exc || (i > 0 && path_exc[t->nodes[i].parent]));
            keep[i] = (unsigned char)((!inc || path_inc[i]) && (!exc || !path_exc[i]) &&
                                      !(f->drop_sleep && i > 0 && bs_profile_is_sched_out(p, fr)) &&
                                      !(f->drop_wait && i > 0 && fr == p->wait_frame));
        }
        int rc = compact_tree(t, keep);
        free(keep), free(path_inc), free(path_exc);
        if (rc < 0)
            return -1;
    }
    return 0;
}

uint64_t bs_profile_frame_time(const bs_profile *p, uint32_t frame, uint32_t *n_trees)
{
    uint64_t sum = 0;
    *n_trees = 0;
    for (uint32_t ti = 0; ti < p->n_trees; ti++) {
        uint64_t before = sum;
        const bs_ptree *t = &p->trees[ti];
        for (uint32_t i = 1; i < t->n_nodes; i++)
            if (t->nodes[i].frame == frame)
                sum += t->nodes[i].self_ns;
        *n_trees += sum > before;
    }
    return sum;
}

/* Says in the profile's notes how much waiting drop_wait left out, in the
 * profile's unit: seconds of a timed profile, samples of a sampled one
 * (BS_UNIT_COUNT weights are counts, never nanoseconds). */
static void note_dropped_wait(bs_profile *p, uint64_t amount, uint32_t n_procs)
{
    if (amount == 0)
        return;
    char text[112];
    if (p->unit == BS_UNIT_COUNT)
        snprintf(text, sizeof text, "idle time left out: %" PRIu64 " %s of WAIT in %u processes", amount,
                 amount == 1 ? "sample" : "samples", n_procs);
    else
        snprintf(text, sizeof text, "idle time left out: %.3f s of WAIT in %u processes", (double)amount / 1e9,
                 n_procs);
    bs_text_append(p->notes, sizeof p->notes, p->notes[0] ? "; " : "", text);
}

/* Says what the scheduled-out frames drawn mean. */
static void note_legend(bs_profile *p)
{
    uint32_t n_wait, n_runnable;
    (void)bs_profile_frame_time(p, p->wait_frame, &n_wait);
    (void)bs_profile_frame_time(p, p->runnable_frame, &n_runnable);
    static const char legend[] =
        "WAIT: waiting for a message; RUNNABLE: able to run, not running (preempted; tracing adds to it)";
    /* Once: a profile filtered again (exported filtered, then written) has it. */
    if ((n_wait || n_runnable) && !strstr(p->notes, legend))
        bs_text_append(p->notes, sizeof p->notes, p->notes[0] ? "; " : "", legend);
}

/* Running time of a tree: its time outside SLEEP, WAIT and RUNNABLE. */
static uint64_t cpu_time(const bs_profile *p, const bs_ptree *t)
{
    uint64_t sum = 0;
    for (uint32_t i = 0; i < t->n_nodes; i++)
        if (i == 0 || !bs_profile_is_sched_out(p, t->nodes[i].frame))
            sum += t->nodes[i].self_ns;
    return sum;
}

typedef struct tree_rank {
    uint64_t cpu;
    uint32_t index;
} tree_rank;

static int cmp_rank(const void *pa, const void *pb)
{
    const tree_rank *a = pa, *b = pb;
    if (a->cpu != b->cpu)
        return a->cpu > b->cpu ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

static int order_by_cpu(bs_profile *p)
{
    uint32_t n = p->n_trees;
    tree_rank *r = malloc((n ? n : 1) * sizeof *r);
    bs_ptree *sorted = malloc((n ? n : 1) * sizeof *sorted);
    if (!r || !sorted) {
        free(r), free(sorted);
        return -1;
    }
    for (uint32_t i = 0; i < n; i++)
        r[i] = (tree_rank){cpu_time(p, &p->trees[i]), i};
    qsort(r, n, sizeof *r, cmp_rank);
    for (uint32_t i = 0; i < n; i++)
        sorted[i] = p->trees[r[i].index];
    memcpy(p->trees, sorted, n * sizeof *sorted);
    free(r), free(sorted);
    p->ordered_by_cpu = 1;
    return 0;
}

int bs_filter_check_pattern(const char *re, char *why, size_t why_size)
{
    regex_t compiled;
    int rc = regcomp(&compiled, re, REG_EXTENDED | REG_NOSUB);
    if (rc == 0) {
        regfree(&compiled);
        return 0;
    }
    if (why_size > 0)
        regerror(rc, &compiled, why, why_size);
    return -1;
}

int bs_profile_filter(bs_profile *p, const bs_filter *f)
{
    regex_t inc_re, exc_re;
    int have_inc = f->include_re && *f->include_re, have_exc = f->exclude_re && *f->exclude_re;
    if (have_inc && regcomp(&inc_re, f->include_re, REG_EXTENDED | REG_NOSUB) != 0)
        return -1;
    if (have_exc && regcomp(&exc_re, f->exclude_re, REG_EXTENDED | REG_NOSUB) != 0) {
        if (have_inc)
            regfree(&inc_re);
        return -1;
    }
    int rc = 0;
    uint32_t wait_procs = 0;
    uint64_t wait_ns = f->drop_wait && !f->drop_sleep ? bs_profile_frame_time(p, p->wait_frame, &wait_procs) : 0;
    if (have_inc || have_exc || f->drop_sleep || f->drop_wait) {
        unsigned char *inc = have_inc ? match_frames(p, &inc_re) : NULL;
        unsigned char *exc = have_exc ? match_frames(p, &exc_re) : NULL;
        if ((have_inc && !inc) || (have_exc && !exc))
            rc = -1;
        else
            rc = apply_filters(p, f, inc, exc);
        free(inc);
        free(exc);
    }
    if (have_inc)
        regfree(&inc_re);
    if (have_exc)
        regfree(&exc_re);
    if (rc == 0) {
        note_dropped_wait(p, wait_ns, wait_procs);
        note_legend(p);
    }
    if (rc == 0 && f->order_by_cpu)
        rc = order_by_cpu(p);
    if (rc == 0 && f->collapse_recursion)
        rc = bs_profile_collapse_recursion_mode(p, (bs_collapse_mode)f->collapse_recursion);
    if (rc == 0) {
        bs_profile_compute_totals(p);
        if (f->merge_processes && p->n_trees > 0) {
            if (bs_profile_merge_processes(p, "all") < 0)
                return -1;
            p->trees[0].synthetic_root = 1;
        }
    }
    return rc;
}
