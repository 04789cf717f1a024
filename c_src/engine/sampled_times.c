/* sampled_times.c — self times of a traced tree from CPU samples (see
 * sampled_times.h). */
#include "sampled_times.h"

static int is_kept(const unsigned char *keep, uint32_t frame)
{
    return keep && keep[frame];
}

/* The innermost frame of the chain that a node of the tree holds. */
static uint32_t charged_frame(const bs_sample_chain *ch, const bs_sampled_scratch *sc, int *own)
{
    for (uint32_t i = 0; i < ch->n; i++) {
        uint32_t f = ch->frames[i];
        if (f < sc->n_frames && sc->nodes[f]) {
            *own = i == 0;
            return f;
        }
    }
    return UINT32_MAX;
}

int bs_sampled_times_apply(bs_ptree *t, const unsigned char *keep, const bs_sample_chain *chains,
                           size_t n_chains, uint64_t ns_per_sample, bs_sampled_scratch *sc,
                           bs_sampled_stats *st)
{
    if (t->n_nodes == 0)
        return 0;
    for (uint32_t i = 1; i < t->n_nodes; i++)
        if (t->nodes[i].frame >= sc->n_frames)
            return -1;
    /* Node 0 is the process, never a function: not counted below. */
    for (uint32_t i = 1; i < t->n_nodes; i++) {
        const bs_pnode *n = &t->nodes[i];
        if (is_kept(keep, n->frame))
            continue;
        sc->traced_self[n->frame] += n->self_ns;
        sc->calls[n->frame] += n->calls;
        sc->nodes[n->frame]++;
    }
    uint64_t to_root = 0;
    for (size_t c = 0; c < n_chains; c++) {
        int own = 0;
        uint32_t f = charged_frame(&chains[c], sc, &own);
        if (f == UINT32_MAX) {
            to_root += chains[c].count;
            st->untraced += chains[c].count;
            continue;
        }
        sc->samples[f] += chains[c].count;
        if (own)
            st->charged += chains[c].count;
        else
            st->to_caller += chains[c].count;
    }
    for (uint32_t i = 1; i < t->n_nodes; i++) {
        bs_pnode *n = &t->nodes[i];
        uint32_t f = n->frame;
        if (is_kept(keep, f))
            continue;
        double cpu = (double)sc->samples[f] * (double)ns_per_sample, share;
        if (sc->traced_self[f])
            share = (double)n->self_ns / (double)sc->traced_self[f];
        else if (sc->calls[f])
            share = (double)n->calls / (double)sc->calls[f];
        else
            share = 1.0 / (double)sc->nodes[f];
        n->self_ns = (uint64_t)(cpu * share + 0.5);
    }
    /* The process's own node: what no traced function of it holds. */
    t->nodes[0].self_ns = to_root * ns_per_sample;
    for (uint32_t i = 1; i < t->n_nodes; i++) {
        uint32_t f = t->nodes[i].frame;
        sc->traced_self[f] = sc->calls[f] = sc->nodes[f] = sc->samples[f] = 0;
    }
    return 0;
}
