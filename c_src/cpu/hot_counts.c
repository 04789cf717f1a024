/* hot_counts.c — samples per function over a window (see hot_counts.h). */
#include "hot_counts.h"

#include <stdlib.h>
#include <string.h>

int bs_hot_counts_init(bs_hot_counts *h)
{
    memset(h, 0, sizeof *h);
    h->slots = malloc(BS_HOT_SLOTS * sizeof *h->slots);
    if (!h->slots)
        return -1;
    bs_hot_counts_reset(h);
    return 0;
}

void bs_hot_counts_free(bs_hot_counts *h)
{
    free(h->slots);
    h->slots = NULL;
}

void bs_hot_counts_reset(bs_hot_counts *h)
{
    for (unsigned i = 0; i < BS_HOT_SLOTS; i++) {
        h->slots[i].frame = UINT32_MAX;
        h->slots[i].count = 0;
    }
    h->used = 0;
    h->samples = h->scheduler = h->spin = h->no_erlang = h->others = 0;
}

void bs_hot_counts_add(bs_hot_counts *h, uint32_t frame, const char *name)
{
    unsigned i = (unsigned)((frame * 0x9E3779B97F4A7C15ull) >> 40) & (BS_HOT_SLOTS - 1);
    for (;;) {
        bs_hot_slot *s = &h->slots[i];
        if (s->frame == frame) {
            s->count++;
            return;
        }
        if (s->frame == UINT32_MAX) {
            if (h->used >= BS_HOT_SLOTS / 2) { /* half full: probes stay short */
                h->others++;
                return;
            }
            s->frame = frame;
            s->count = 1;
            size_t len = strlen(name);
            if (len > BS_HOT_NAME_MAX)
                len = BS_HOT_NAME_MAX;
            memcpy(s->name, name, len);
            s->name[len] = '\0';
            h->used++;
            return;
        }
        i = (i + 1) & (BS_HOT_SLOTS - 1);
    }
}

/* Most first, then by name. */
static int before(const bs_hot_slot *a, const bs_hot_entry *b)
{
    return a->count > b->count || (a->count == b->count && strcmp(a->name, b->name) < 0);
}

size_t bs_hot_counts_top(const bs_hot_counts *h, bs_hot_entry *out, size_t max)
{
    size_t n = 0;
    for (unsigned i = 0; i < BS_HOT_SLOTS && max > 0; i++) {
        const bs_hot_slot *s = &h->slots[i];
        if (s->frame == UINT32_MAX)
            continue;
        if (n == max && !before(s, &out[n - 1]))
            continue;
        size_t at = n < max ? n++ : n - 1; /* insertion into the sorted out */
        while (at > 0 && before(s, &out[at - 1])) {
            out[at] = out[at - 1];
            at--;
        }
        out[at].count = s->count;
        memcpy(out[at].name, s->name, sizeof out[at].name);
    }
    return n;
}
