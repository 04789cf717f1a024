/* sample_chains.c — the bounded multiset of sampled chains (see
 * sample_chains.h). */
#include "sample_chains.h"

#include <stdlib.h>
#include <string.h>

void bs_sample_chains_init(bs_sample_chains *sc, size_t max_bytes)
{
    memset(sc, 0, sizeof *sc);
    sc->max_bytes = max_bytes;
}

void bs_sample_chains_free(bs_sample_chains *sc)
{
    free(sc->entries);
    free(sc->slots);
    free(sc->frames);
    free(sc->by_owner);
    memset(sc, 0, sizeof *sc);
}

static uint64_t chain_hash(uint64_t owner, const uint32_t *frames, uint32_t n)
{
    uint64_t h = owner * 0x9E3779B97F4A7C15ull ^ n;
    for (uint32_t i = 0; i < n; i++)
        h = (h ^ frames[i]) * 0x100000001B3ull;
    return h ^ h >> 29;
}

/* Grows *buf (elem bytes each) to hold want elements, within max_bytes. */
static int grow(bs_sample_chains *sc, void **buf, uint32_t *cap, uint32_t want, size_t elem)
{
    if (want <= *cap)
        return 0;
    uint32_t new_cap = *cap ? *cap : 64;
    while (new_cap < want) {
        if (new_cap > UINT32_MAX / 2)
            return -1;
        new_cap *= 2;
    }
    size_t more = (size_t)(new_cap - *cap) * elem;
    if (sc->bytes + more > sc->max_bytes)
        return -1;
    void *p = realloc(*buf, (size_t)new_cap * elem);
    if (!p)
        return -1;
    *buf = p;
    *cap = new_cap;
    sc->bytes += more;
    return 0;
}

static int rehash(bs_sample_chains *sc, uint32_t new_cap)
{
    size_t bytes = (size_t)new_cap * sizeof *sc->slots, old = (size_t)sc->cap_slots * sizeof *sc->slots;
    if (sc->bytes - old + bytes > sc->max_bytes)
        return -1;
    uint32_t *slots = calloc(new_cap, sizeof *slots);
    if (!slots)
        return -1;
    for (uint32_t i = 0; i < sc->n; i++) {
        uint32_t s = (uint32_t)sc->entries[i].hash & (new_cap - 1);
        while (slots[s])
            s = (s + 1) & (new_cap - 1);
        slots[s] = i + 1;
    }
    free(sc->slots);
    sc->slots = slots;
    sc->bytes = sc->bytes - old + bytes;
    sc->cap_slots = new_cap;
    return 0;
}

int bs_sample_chains_add(bs_sample_chains *sc, uint64_t owner, const uint32_t *frames, uint32_t n)
{
    if (n > BS_CHAIN_MAX_FRAMES)
        n = BS_CHAIN_MAX_FRAMES;
    if (!sc->cap_slots && rehash(sc, 256) < 0)
        goto dropped;
    uint64_t h = chain_hash(owner, frames, n);
    uint32_t s = (uint32_t)h & (sc->cap_slots - 1);
    for (; sc->slots[s]; s = (s + 1) & (sc->cap_slots - 1)) {
        bs_chain_entry *e = &sc->entries[sc->slots[s] - 1];
        if (e->hash == h && e->owner == owner && e->n == n &&
            (n == 0 || memcmp(sc->frames + e->off, frames, n * sizeof *frames) == 0)) {
            e->count++; /* held already: counted even at the cap */
            return 0;
        }
    }
    if ((sc->n + 1) * 2 > sc->cap_slots) { /* a new entry: the index grows first */
        if (rehash(sc, sc->cap_slots * 2) < 0)
            goto dropped;
        for (s = (uint32_t)h & (sc->cap_slots - 1); sc->slots[s]; s = (s + 1) & (sc->cap_slots - 1))
            ;
    }
    if (sc->n_frames > UINT32_MAX - n ||
        grow(sc, (void **)&sc->frames, &sc->cap_frames, sc->n_frames + n, sizeof *sc->frames) < 0 ||
        grow(sc, (void **)&sc->entries, &sc->cap, sc->n + 1, sizeof *sc->entries) < 0)
        goto dropped;
    if (n)
        memcpy(sc->frames + sc->n_frames, frames, n * sizeof *frames);
    sc->entries[sc->n] = (bs_chain_entry){owner, 1, h, sc->n_frames, n};
    sc->n_frames += n;
    sc->slots[s] = ++sc->n;
    return 0;
dropped:
    sc->dropped++;
    return -1;
}

static int by_owner(const void *a, const void *b)
{
    const bs_chain_ref *x = a, *y = b;
    return x->owner < y->owner ? -1 : x->owner > y->owner ? 1 : (x->entry > y->entry) - (x->entry < y->entry);
}

int bs_sample_chains_index(bs_sample_chains *sc)
{
    free(sc->by_owner);
    sc->by_owner = malloc((sc->n ? sc->n : 1) * sizeof *sc->by_owner);
    if (!sc->by_owner)
        return -1;
    for (uint32_t i = 0; i < sc->n; i++)
        sc->by_owner[i] = (bs_chain_ref){sc->entries[i].owner, i};
    qsort(sc->by_owner, sc->n, sizeof *sc->by_owner, by_owner);
    return 0;
}

uint32_t bs_sample_chains_of(const bs_sample_chains *sc, uint64_t owner, const bs_chain_ref **refs)
{
    *refs = NULL;
    if (!sc->by_owner)
        return 0;
    uint32_t lo = 0, hi = sc->n;
    while (lo < hi) { /* the first entry whose owner is >= owner */
        uint32_t mid = lo + (hi - lo) / 2;
        if (sc->by_owner[mid].owner < owner)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint32_t end = lo;
    while (end < sc->n && sc->by_owner[end].owner == owner)
        end++;
    *refs = sc->by_owner + lo;
    return end - lo;
}
