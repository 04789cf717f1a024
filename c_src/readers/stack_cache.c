/* stack_cache.c — the bounded whole-stack cache (see stack_cache.h). */
#include "stack_cache.h"

#include <stdlib.h>
#include <string.h>

#include "fast_hash.h"

#define MAX_ENTRIES (1u << 17)
#define MAX_TEXT (64u << 20)
#define MIN_LOOKUPS 65536u /* before judging the hit rate */

void bs_stack_cache_init(bs_stack_cache *c) { memset(c, 0, sizeof *c); }

void bs_stack_cache_free(bs_stack_cache *c)
{
    free(c->slots);
    free(c->text);
    memset(c, 0, sizeof *c);
}

int bs_stack_cache_get(bs_stack_cache *c, const char *s, size_t len, uint64_t *hash,
                       uint32_t *tree, uint32_t *node)
{
    if (c->off)
        return 0;
    if (c->full && c->lookups >= MIN_LOOKUPS && c->hits < c->lookups / 8) {
        c->off = 1; /* mostly distinct stacks: hashing them is wasted */
        return 0;
    }
    c->lookups++;
    *hash = bs_fast_hash(s, len);
    if (!c->n)
        return 0;
    uint32_t mask = c->cap - 1;
    for (uint32_t i = (uint32_t)*hash & mask; c->slots[i].len; i = (i + 1) & mask) {
        const bs_stack_entry *e = &c->slots[i];
        if (e->hash == *hash && e->len == len && memcmp(c->text + e->off, s, len) == 0) {
            c->hits++;
            *tree = e->tree;
            *node = e->node;
            return 1;
        }
    }
    return 0;
}

static int grow_table(bs_stack_cache *c)
{
    uint32_t cap = c->cap ? c->cap * 2 : 1024;
    bs_stack_entry *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    for (uint32_t i = 0; i < c->cap; i++) {
        if (!c->slots[i].len)
            continue;
        uint32_t j = (uint32_t)c->slots[i].hash & (cap - 1);
        while (slots[j].len)
            j = (j + 1) & (cap - 1);
        slots[j] = c->slots[i];
    }
    free(c->slots);
    c->slots = slots;
    c->cap = cap;
    return 0;
}

static int reserve_text(bs_stack_cache *c, size_t len)
{
    if (c->text_len + len <= c->text_cap)
        return 0;
    size_t cap = c->text_cap ? c->text_cap : 1u << 16;
    while (cap < c->text_len + len)
        cap *= 2;
    if (cap > MAX_TEXT)
        return -1;
    char *t = realloc(c->text, cap);
    if (!t)
        return -1;
    c->text = t;
    c->text_cap = cap;
    return 0;
}

void bs_stack_cache_put(bs_stack_cache *c, const char *s, size_t len, uint64_t hash,
                        uint32_t tree, uint32_t node)
{
    if (c->off || c->full || len == 0 || len > MAX_TEXT / 64)
        return; /* a huge stack is not worth a 64th of the cache */
    if (c->n >= MAX_ENTRIES || reserve_text(c, len) < 0 ||
        ((c->n + 1) * 2 > c->cap && grow_table(c) < 0)) {
        c->full = 1;
        return;
    }
    uint32_t mask = c->cap - 1, i = (uint32_t)hash & mask;
    while (c->slots[i].len)
        i = (i + 1) & mask;
    memcpy(c->text + c->text_len, s, len);
    c->slots[i] = (bs_stack_entry){hash, (uint32_t)c->text_len, (uint32_t)len, tree, node};
    c->text_len += len;
    c->n++;
}
