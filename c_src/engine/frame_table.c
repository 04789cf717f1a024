/* frame_table.c — string interning for profile frames. */
#include "frame_table.h"

#include <stdlib.h>
#include <string.h>

void bs_frame_table_init(bs_frame_table *ft) { memset(ft, 0, sizeof *ft); }

void bs_frame_table_free(bs_frame_table *ft)
{
    for (uint32_t i = 0; i < ft->n; i++)
        free(ft->names[i]);
    free(ft->names);
    free(ft->slots);
    memset(ft, 0, sizeof *ft);
}

static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

static uint32_t find_slot(const bs_frame_table *ft, const char *name, size_t len, uint64_t h)
{
    uint32_t mask = ft->cap_slots - 1, i = (uint32_t)h & mask;
    for (;;) {
        uint32_t id = ft->slots[i];
        if (id == UINT32_MAX)
            return i;
        const char *s = ft->names[id];
        if (strncmp(s, name, len) == 0 && s[len] == '\0')
            return i;
        i = (i + 1) & mask;
    }
}

static int rehash(bs_frame_table *ft, uint32_t new_cap)
{
    uint32_t *slots = malloc((size_t)new_cap * sizeof *slots);
    if (!slots)
        return -1;
    memset(slots, 0xff, (size_t)new_cap * sizeof *slots);
    free(ft->slots);
    ft->slots = slots;
    ft->cap_slots = new_cap;
    for (uint32_t id = 0; id < ft->n; id++) {
        const char *s = ft->names[id];
        size_t len = strlen(s);
        ft->slots[find_slot(ft, s, len, hash_bytes(s, len))] = id;
    }
    return 0;
}

uint32_t bs_frame_table_find(const bs_frame_table *ft, const char *name, size_t len)
{
    if (!ft->cap_slots)
        return UINT32_MAX;
    return ft->slots[find_slot(ft, name, len, hash_bytes(name, len))];
}

uint32_t bs_frame_table_intern(bs_frame_table *ft, const char *name, size_t len)
{
    if ((ft->n + 1) * 2 > ft->cap_slots && rehash(ft, ft->cap_slots ? ft->cap_slots * 2 : 256) < 0)
        return UINT32_MAX;
    uint64_t h = hash_bytes(name, len);
    uint32_t s = find_slot(ft, name, len, h);
    if (ft->slots[s] != UINT32_MAX)
        return ft->slots[s];
    if (ft->n == ft->cap) {
        uint32_t cap = ft->cap ? ft->cap * 2 : 256;
        char **names = realloc(ft->names, (size_t)cap * sizeof *names);
        if (!names)
            return UINT32_MAX;
        ft->names = names;
        ft->cap = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy)
        return UINT32_MAX;
    memcpy(copy, name, len);
    copy[len] = '\0';
    ft->names[ft->n] = copy;
    ft->slots[s] = ft->n;
    return ft->n++;
}
