/* sample_chains.h — CPU samples of traced processes kept for option
 * times => samples: a bounded multiset of (process, chain of Erlang
 * functions) with a count each.
 *
 * The drain thread of a session's sampler adds one entry per sample (the
 * innermost BS_CHAIN_MAX_FRAMES Erlang functions of its stack, innermost
 * first, as ids of the sampler's frame table); equal entries are counted
 * once. At export the entries of one process are looked up by owner
 * (engine/sampled_times.h turns them into self times). One writer, no
 * lock. Memory: at most max_bytes for the entries, their frames and the
 * hash index; a sample that would pass it is counted in `dropped'. */
#ifndef BS_CPU_SAMPLE_CHAINS_H
#define BS_CPU_SAMPLE_CHAINS_H

#include <stddef.h>
#include <stdint.h>

#define BS_CHAIN_MAX_FRAMES 32u

typedef struct bs_chain_entry {
    uint64_t owner;  /* the process (its pid term) */
    uint64_t count;  /* samples */
    uint64_t hash;
    uint32_t off;    /* first frame in the frame pool */
    uint32_t n;      /* frames, innermost first (0: no Erlang function) */
} bs_chain_entry;

typedef struct bs_chain_ref {
    uint64_t owner;
    uint32_t entry;  /* index in entries */
} bs_chain_ref;

typedef struct bs_sample_chains {
    bs_chain_entry *entries;
    uint32_t n, cap;
    uint32_t *slots;      /* open addressing: entry index + 1, 0 empty */
    uint32_t cap_slots;   /* power of two */
    uint32_t *frames;     /* the pool of every entry's frames */
    uint32_t n_frames, cap_frames;
    bs_chain_ref *by_owner; /* the entries sorted by owner (bs_sample_chains_index) */
    size_t max_bytes, bytes;
    uint64_t dropped;     /* samples not kept: max_bytes reached or out of memory */
} bs_sample_chains;

void bs_sample_chains_init(bs_sample_chains *sc, size_t max_bytes);
void bs_sample_chains_free(bs_sample_chains *sc);

/* Counts one sample of owner whose Erlang functions are frames[0..n)
 * (innermost first; only the first BS_CHAIN_MAX_FRAMES are kept). 0, or -1
 * when it was dropped (and counted). */
int bs_sample_chains_add(bs_sample_chains *sc, uint64_t owner, const uint32_t *frames, uint32_t n);

/* Sorts the entries by owner for bs_sample_chains_of; again after adding
 * more. 0, or -1 out of memory. */
int bs_sample_chains_index(bs_sample_chains *sc);

/* The entries of owner (after bs_sample_chains_index): how many, and where
 * their references start in *refs. */
uint32_t bs_sample_chains_of(const bs_sample_chains *sc, uint64_t owner, const bs_chain_ref **refs);

static inline const uint32_t *bs_sample_chain_frames(const bs_sample_chains *sc, const bs_chain_entry *e)
{
    return sc->frames + e->off;
}

#endif
