/* stack_cache.h — where whole stacks of text input ended up (readers only).
 *
 * Profiles printed one line per sample repeat the same few thousand stacks
 * millions of times. Remembering "this exact stack text is node N of tree
 * T" turns each repeat into one hash, one probe and one comparison instead
 * of a lookup per frame. The cache is bounded (entries and bytes of text):
 * once full it stops learning, and if it then rarely hits (input of mostly
 * distinct stacks) it switches itself off, so it never costs more than a
 * hash per line and never grows with the input. */
#ifndef BS_STACK_CACHE_H
#define BS_STACK_CACHE_H

#include <stddef.h>
#include <stdint.h>

typedef struct bs_stack_entry {
    uint64_t hash;
    uint32_t off, len; /* text in the cache's buffer */
    uint32_t tree, node;
} bs_stack_entry;

typedef struct bs_stack_cache {
    bs_stack_entry *slots;
    uint32_t n, cap;
    char *text;
    size_t text_len, text_cap;
    uint64_t lookups, hits;
    int full, off;
} bs_stack_cache;

void bs_stack_cache_init(bs_stack_cache *c);
void bs_stack_cache_free(bs_stack_cache *c);

/* 1 and *tree, *node when stack s[0..len) is known; else 0. *hash is set
 * for bs_stack_cache_put. */
int bs_stack_cache_get(bs_stack_cache *c, const char *s, size_t len, uint64_t *hash,
                       uint32_t *tree, uint32_t *node);

/* Remembers a stack (best effort: when full or out of memory, it does not). */
void bs_stack_cache_put(bs_stack_cache *c, const char *s, size_t len, uint64_t hash,
                        uint32_t tree, uint32_t node);

#endif
