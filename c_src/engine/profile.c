/* profile.c — building, totalling and merging profiles (see profile.h). */
#include "profile.h"

#include "frame_name.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bs_profile_init(bs_profile *p)
{
    memset(p, 0, sizeof *p);
    bs_frame_table_init(&p->frames);
    p->sleep_frame = bs_frame_table_intern(&p->frames, "SLEEP", 5);
    p->gc_frame = bs_frame_table_intern(&p->frames, "GC", 2);
    p->wait_frame = bs_frame_table_intern(&p->frames, "WAIT", 4);
    p->runnable_frame = bs_frame_table_intern(&p->frames, "RUNNABLE", 8);
    return (p->sleep_frame == UINT32_MAX || p->gc_frame == UINT32_MAX || p->wait_frame == UINT32_MAX ||
            p->runnable_frame == UINT32_MAX)
               ? -1
               : 0;
}

static void free_notes(bs_ptree *t)
{
    for (uint32_t i = 0; i < t->n_notes; i++)
        free(t->notes[i].text);
    free(t->notes);
    t->notes = NULL;
    t->n_notes = 0;
}

static int note_cmp(const void *va, const void *vb)
{
    const bs_pnote *a = va, *b = vb;
    if (a->start_ns != b->start_ns)
        return a->start_ns < b->start_ns ? -1 : 1;
    if (a->node != b->node)
        return a->node < b->node ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Deep copy of n notes (texts included) into t, sorted. */
static int copy_notes(bs_ptree *t, const bs_pnote *src, uint32_t n)
{
    if (!n)
        return 0;
    t->notes = calloc(n, sizeof *t->notes);
    if (!t->notes)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        size_t len = strlen(src[i].text);
        char *c = malloc(len + 1);
        if (!c) {
            free_notes(t);
            return -1;
        }
        memcpy(c, src[i].text, len + 1);
        t->notes[i] = src[i];
        t->notes[i].text = c;
        t->n_notes = i + 1;
    }
    qsort(t->notes, n, sizeof *t->notes, note_cmp);
    return 0;
}

uint32_t bs_ptree_notes(const bs_ptree *t, uint32_t node, uint64_t start_ns, const bs_pnote **first)
{
    uint32_t lo = 0, hi = t->n_notes;
    bs_pnote key = {node, 0, start_ns, NULL};
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (note_cmp(&t->notes[mid], &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint32_t n = 0;
    while (lo + n < t->n_notes && t->notes[lo + n].node == node && t->notes[lo + n].start_ns == start_ns)
        n++;
    *first = n ? &t->notes[lo] : NULL;
    return n;
}

static void free_trees(bs_ptree *trees, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        free(trees[i].nodes);
        free(trees[i].spans);
        free_notes(&trees[i]);
    }
    free(trees);
}

void bs_profile_free(bs_profile *p)
{
    free_trees(p->trees, p->n_trees);
    bs_frame_table_free(&p->frames);
    memset(p, 0, sizeof *p);
}

void bs_profile_set_truncated(bs_profile *p, const char *reason)
{
    if (p->truncated[0] == '\0')
        snprintf(p->truncated, sizeof p->truncated, "%s", reason);
}

static bs_ptree *new_tree(bs_profile *p, uint32_t n_nodes)
{
    if (p->n_trees == p->cap_trees) {
        uint32_t cap = p->cap_trees ? p->cap_trees * 2 : 16;
        bs_ptree *t = realloc(p->trees, (size_t)cap * sizeof *t);
        if (!t)
            return NULL;
        p->trees = t;
        p->cap_trees = cap;
    }
    bs_ptree *t = &p->trees[p->n_trees];
    memset(t, 0, sizeof *t);
    t->nodes = calloc(n_nodes ? n_nodes : 1, sizeof *t->nodes);
    if (!t->nodes)
        return NULL;
    t->n_nodes = n_nodes;
    p->n_trees++;
    return t;
}

static uint32_t intern_str(bs_profile *p, const char *s)
{
    char buf[1024];
    size_t len = bs_sanitize_name(buf, sizeof buf, s, strlen(s));
    return bs_frame_table_intern(&p->frames, buf, len);
}

uint32_t bs_profile_intern(bs_profile *p, const char *name)
{
    return intern_str(p, name);
}

uint32_t bs_profile_find_frame(const bs_profile *p, const char *name)
{
    char buf[1024];
    size_t len = bs_sanitize_name(buf, sizeof buf, name, strlen(name));
    return bs_frame_table_find(&p->frames, buf, len);
}

bs_ptree *bs_profile_new_tree(bs_profile *p, const char *label, uint32_t n_nodes)
{
    uint32_t root = intern_str(p, label);
    if (root == UINT32_MAX || n_nodes == 0)
        return NULL;
    bs_ptree *t = new_tree(p, n_nodes);
    if (!t)
        return NULL;
    t->nodes[0].parent = UINT32_MAX;
    t->nodes[0].frame = root;
    return t;
}

int bs_profile_add_tree(bs_profile *p, const char *label)
{
    uint32_t root = intern_str(p, label);
    if (root == UINT32_MAX)
        return -1;
    bs_ptree *t = new_tree(p, 1);
    if (!t)
        return -1;
    t->nodes[0].parent = UINT32_MAX;
    t->nodes[0].frame = root;
    return 0;
}

static int add_proc_nodes(bs_profile *p, const bs_proc *proc, uint32_t root, const uint32_t *remap, uint32_t kept,
                          bs_key_namer namer, void *ctx);

/* A WAIT leaf whose only interval turned out to be RUNNABLE is left with no
 * entry and no time (stack_rebuild.h): it is not exported. Pseudo frames are
 * always leaves, so leaving one out orphans nothing. */
static int empty_pseudo(const bs_tree_node *s)
{
    return bs_key_is_pseudo(&s->key) && s->calls == 0 && s->self_ns == 0;
}

int bs_profile_add_proc(bs_profile *p, const bs_proc *proc, const char *label, bs_key_namer namer, void *ctx)
{
    const bs_call_tree *src = &proc->tree;
    uint32_t root = intern_str(p, label);
    if (root == UINT32_MAX)
        return -1;
    uint32_t *remap = malloc((src->n_nodes ? src->n_nodes : 1) * sizeof *remap);
    if (!remap)
        return -1;
    uint32_t kept = 0;
    for (uint32_t i = 0; i < src->n_nodes; i++)
        remap[i] = i > 0 && empty_pseudo(&src->nodes[i]) ? UINT32_MAX : kept++;
    int rc = add_proc_nodes(p, proc, root, remap, kept, namer, ctx);
    free(remap);
    return rc;
}

static int add_proc_nodes(bs_profile *p, const bs_proc *proc, uint32_t root, const uint32_t *remap, uint32_t kept,
                          bs_key_namer namer, void *ctx)
{
    const bs_call_tree *src = &proc->tree;
    bs_ptree *t = new_tree(p, kept);
    if (!t)
        return -1;
    t->events = proc->events;
    t->dropped = proc->dropped;
    bs_compensation_add(&p->compensation, &proc->comp);
    char name[1024];
    for (uint32_t i = 0; i < src->n_nodes; i++) {
        const bs_tree_node *s = &src->nodes[i];
        if (remap[i] == UINT32_MAX)
            continue;
        bs_pnode *d = &t->nodes[remap[i]];
        d->parent = i == 0 ? UINT32_MAX : remap[s->parent];
        d->self_ns = s->self_ns;
        d->calls = s->calls;
        if (i == 0) {
            d->frame = root;
        } else if (bs_key_is_pseudo(&s->key)) {
            switch (s->key.function) {
            case BS_PSEUDO_GC: d->frame = p->gc_frame; break;
            case BS_PSEUDO_WAIT: d->frame = p->wait_frame; break;
            case BS_PSEUDO_RUNNABLE: d->frame = p->runnable_frame; break;
            default: d->frame = p->sleep_frame; break;
            }
        } else {
            int len = namer(ctx, &s->key, name, sizeof name);
            if (len < 0)
                len = snprintf(name, sizeof name, "?");
            char safe[1024];
            size_t safe_len = bs_sanitize_name(safe, sizeof safe, name, (size_t)len);
            d->frame = bs_frame_table_intern(&p->frames, safe, safe_len);
            if (d->frame == UINT32_MAX)
                return -1;
        }
    }
    if (proc->truncated)
        bs_profile_set_truncated(p, "max_memory");
    const bs_timeline *tl = &proc->timeline;
    if (tl->quota) {
        p->has_timeline = 1;
        if (tl->truncated)
            p->timeline_truncated = 1;
        if (tl->n) {
            t->spans = malloc((size_t)tl->n * sizeof *t->spans);
            if (!t->spans)
                return -1;
            uint32_t k = 0;
            for (uint32_t i = 0; i < tl->n; i++) {
                if (remap[tl->spans[i].node] == UINT32_MAX)
                    continue;
                t->spans[k].node = remap[tl->spans[i].node];
                t->spans[k].start_ns = tl->spans[i].start_ns;
                /* A span still open was cut by the end of recording. */
                t->spans[k].end_ns = tl->spans[i].end_ns ? tl->spans[i].end_ns : tl->spans[i].start_ns;
                k++;
            }
            t->n_spans = k;
        }
    }
    if (proc->n_notes) {
        bs_pnote *tmp = malloc((size_t)proc->n_notes * sizeof *tmp);
        if (!tmp)
            return -1;
        for (uint32_t i = 0; i < proc->n_notes; i++)
            tmp[i] = (bs_pnote){remap[proc->notes[i].node], i, proc->notes[i].start_ns, proc->notes[i].text};
        int rc = copy_notes(t, tmp, proc->n_notes);
        free(tmp);
        if (rc < 0)
            return -1;
    }
    return 0;
}

void bs_profile_compute_totals(bs_profile *p)
{
    for (uint32_t ti = 0; ti < p->n_trees; ti++) {
        bs_ptree *t = &p->trees[ti];
        for (uint32_t i = 0; i < t->n_nodes; i++)
            t->nodes[i].total_ns = t->nodes[i].self_ns;
        for (uint32_t i = t->n_nodes; i-- > 1;)
            t->nodes[t->nodes[i].parent].total_ns += t->nodes[i].total_ns;
    }
}

int bs_profile_merge_processes(bs_profile *p, const char *label)
{
    uint32_t root = intern_str(p, label);
    if (root == UINT32_MAX)
        return -1;
    bs_call_tree merged;
    if (bs_call_tree_init(&merged, NULL) < 0)
        return -1;
    uint64_t events = 0, dropped = 0;
    uint32_t *map = NULL;
    size_t map_cap = 0;
    int rc = -1;
    for (uint32_t ti = 0; ti < p->n_trees; ti++) {
        const bs_ptree *t = &p->trees[ti];
        if (t->n_nodes > map_cap) {
            free(map);
            map_cap = t->n_nodes;
            map = malloc(map_cap * sizeof *map);
            if (!map)
                goto out;
        }
        events += t->events;
        dropped += t->dropped;
        map[0] = 0;
        merged.nodes[0].self_ns += t->nodes[0].self_ns;
        merged.nodes[0].calls += t->nodes[0].calls;
        for (uint32_t i = 1; i < t->n_nodes; i++) {
            bs_key k = {(uint64_t)t->nodes[i].frame + 1, 0, 0};
            uint32_t n = bs_call_tree_child(&merged, map[t->nodes[i].parent], &k);
            if (n == BS_NO_NODE)
                goto out;
            merged.nodes[n].self_ns += t->nodes[i].self_ns;
            merged.nodes[n].calls += t->nodes[i].calls;
            map[i] = n;
        }
    }
    bs_ptree *old = p->trees;
    uint32_t old_n = p->n_trees;
    p->trees = NULL;
    p->n_trees = p->cap_trees = 0;
    bs_ptree *t = new_tree(p, merged.n_nodes);
    if (!t) {
        p->trees = old;
        p->n_trees = p->cap_trees = old_n;
        goto out;
    }
    free_trees(old, old_n);
    p->has_timeline = 0; /* time order has no meaning across merged processes */
    t->events = events;
    t->dropped = dropped;
    for (uint32_t i = 0; i < merged.n_nodes; i++) {
        const bs_tree_node *s = &merged.nodes[i];
        t->nodes[i].parent = i == 0 ? UINT32_MAX : s->parent;
        t->nodes[i].frame = i == 0 ? root : (uint32_t)(s->key.module - 1);
        t->nodes[i].self_ns = s->self_ns;
        t->nodes[i].calls = s->calls;
    }
    bs_profile_compute_totals(p);
    rc = 0;
out:
    free(map);
    bs_call_tree_free(&merged);
    return rc;
}

int bs_profile_clone(const bs_profile *src, bs_profile *dst)
{
    if (bs_profile_init(dst) < 0)
        return -1;
    for (uint32_t i = 0; i < src->frames.n; i++) {
        const char *name = bs_frame_name(&src->frames, i);
        /* Ids are dense and interning is stable, so ids stay the same. */
        if (bs_frame_table_intern(&dst->frames, name, strlen(name)) != i)
            goto fail;
    }
    dst->unit = src->unit;
    dst->meta = src->meta;
    dst->sleep_frame = src->sleep_frame;
    dst->gc_frame = src->gc_frame;
    dst->wait_frame = src->wait_frame;
    dst->runnable_frame = src->runnable_frame;
    memcpy(dst->truncated, src->truncated, sizeof dst->truncated);
    memcpy(dst->notes, src->notes, sizeof dst->notes);
    dst->start_ns = src->start_ns;
    dst->duration_ns = src->duration_ns;
    dst->has_timeline = src->has_timeline;
    dst->timeline_truncated = src->timeline_truncated;
    dst->ordered_by_cpu = src->ordered_by_cpu;
    dst->compensation = src->compensation;
    dst->timeline_cap = src->timeline_cap;
    dst->spans_capped = src->spans_capped;
    for (uint32_t ti = 0; ti < src->n_trees; ti++) {
        const bs_ptree *s = &src->trees[ti];
        bs_ptree *d = new_tree(dst, s->n_nodes);
        if (!d)
            goto fail;
        memcpy(d->nodes, s->nodes, (size_t)s->n_nodes * sizeof *d->nodes);
        d->synthetic_root = s->synthetic_root;
        d->events = s->events;
        d->dropped = s->dropped;
        if (s->n_spans) {
            d->spans = malloc((size_t)s->n_spans * sizeof *d->spans);
            if (!d->spans)
                goto fail;
            memcpy(d->spans, s->spans, (size_t)s->n_spans * sizeof *d->spans);
            d->n_spans = s->n_spans;
        }
        if (copy_notes(d, s->notes, s->n_notes) < 0)
            goto fail;
    }
    return 0;
fail:
    bs_profile_free(dst);
    return -1;
}

/* The rank of a tree for bs_profile_order_roots: its root's place in the
 * list, then its place in the profile (a stable order). */
typedef struct tree_rank {
    uint64_t key;
    bs_ptree tree;
} tree_rank;

static int by_rank(const void *x, const void *y)
{
    uint64_t a = ((const tree_rank *)x)->key, b = ((const tree_rank *)y)->key;
    return a < b ? -1 : a > b;
}

int bs_profile_order_roots(bs_profile *p, const char *const *labels, size_t n)
{
    if (p->n_trees < 2)
        return 0;
    tree_rank *r = malloc((size_t)p->n_trees * sizeof *r);
    if (!r)
        return -1;
    for (uint32_t t = 0; t < p->n_trees; t++) {
        uint64_t place = n;
        if (p->trees[t].n_nodes > 0) {
            const char *root = bs_frame_name(&p->frames, p->trees[t].nodes[0].frame);
            for (size_t i = 0; i < n; i++)
                if (labels[i] && strcmp(labels[i], root) == 0) {
                    place = i;
                    break;
                }
        }
        r[t].key = place << 32 | t;
        r[t].tree = p->trees[t];
    }
    qsort(r, p->n_trees, sizeof *r, by_rank);
    for (uint32_t t = 0; t < p->n_trees; t++)
        p->trees[t] = r[t].tree;
    free(r);
    return 0;
}

int bs_profile_add_under(bs_profile *dst, const bs_profile *src, const char *root_label)
{
    uint32_t root = intern_str(dst, root_label);
    uint32_t *frame_of = malloc(((size_t)src->frames.n + 1) * sizeof *frame_of);
    if (root == UINT32_MAX || !frame_of) {
        free(frame_of);
        return -1;
    }
    for (uint32_t i = 0; i < src->frames.n; i++) {
        const char *name = bs_frame_name(&src->frames, i);
        frame_of[i] = bs_frame_table_intern(&dst->frames, name, strlen(name));
        if (frame_of[i] == UINT32_MAX) {
            free(frame_of);
            return -1;
        }
    }
    int first = dst->n_trees == 0;
    if (first) {
        dst->unit = src->unit;
        dst->meta = src->meta;
        dst->start_ns = src->start_ns;
        dst->has_timeline = src->has_timeline;
    }
    /* Each node has its own clock: its spans are placed by wall-clock start
     * relative to the earliest node's. Profiles come in the order the nodes
     * answered, not the order they started: one that started before those
     * already in moves their spans later and becomes the start. */
    int64_t offset_ns = 0;
    if (!first && src->meta.start_unix_us && dst->meta.start_unix_us) {
        offset_ns = (src->meta.start_unix_us - dst->meta.start_unix_us) * 1000;
        if (offset_ns < 0) {
            uint64_t later = (uint64_t)-offset_ns;
            for (uint32_t t = 0; t < dst->n_trees; t++)
                for (uint32_t k = 0; k < dst->trees[t].n_spans; k++) {
                    dst->trees[t].spans[k].start_ns += later;
                    dst->trees[t].spans[k].end_ns += later;
                }
            dst->duration_ns += later;
            dst->meta.start_unix_us = src->meta.start_unix_us;
            offset_ns = 0;
        }
    }
    for (uint32_t ti = 0; ti < src->n_trees; ti++) {
        const bs_ptree *s = &src->trees[ti];
        /* A synthetic root (no process frame) is replaced by the node frame;
         * otherwise the node frame goes on top of the process frame. */
        uint32_t shift = s->synthetic_root ? 0 : 1;
        bs_ptree *d = new_tree(dst, s->n_nodes + shift);
        if (!d) {
            free(frame_of);
            return -1;
        }
        d->events = s->events;
        d->dropped = s->dropped;
        d->nodes[0].parent = UINT32_MAX;
        d->nodes[0].frame = root;
        for (uint32_t i = s->synthetic_root ? 1 : 0; i < s->n_nodes; i++) {
            bs_pnode *n = &d->nodes[i + shift];
            *n = s->nodes[i];
            n->frame = frame_of[s->nodes[i].frame];
            n->parent = i == 0 ? 0 : s->nodes[i].parent + shift;
        }
        if (s->synthetic_root) {
            d->nodes[0].self_ns = s->nodes[0].self_ns;
            d->nodes[0].calls = s->nodes[0].calls;
        }
        if (s->n_spans && dst->has_timeline) {
            d->spans = malloc((size_t)s->n_spans * sizeof *d->spans);
            if (!d->spans) {
                free(frame_of);
                return -1;
            }
            for (uint32_t k = 0; k < s->n_spans; k++) {
                d->spans[k].node = s->spans[k].node + shift;
                d->spans[k].start_ns = s->spans[k].start_ns - src->start_ns + dst->start_ns + (uint64_t)offset_ns;
                d->spans[k].end_ns = s->spans[k].end_ns - src->start_ns + dst->start_ns + (uint64_t)offset_ns;
            }
            d->n_spans = s->n_spans;
        }
    }
    free(frame_of);
    if (!first)
        dst->has_timeline = dst->has_timeline && src->has_timeline;
    dst->timeline_truncated |= src->timeline_truncated;
    bs_compensation_merge(&dst->compensation, &src->compensation);
    if (src->truncated[0])
        bs_profile_set_truncated(dst, src->truncated);
    uint64_t end = (uint64_t)offset_ns + src->duration_ns;
    if (end > dst->duration_ns)
        dst->duration_ns = end;
    bs_profile_compute_totals(dst);
    return 0;
}
