/* budget.c — the session memory cap (see budget.h). */
#include "budget.h"

#include <stdlib.h>

void bs_budget_init(bs_budget *b, size_t cap)
{
    atomic_init(&b->used, 0);
    atomic_init(&b->peak, 0);
    atomic_init(&b->exhausted, 0);
    b->cap = cap;
}

int bs_budget_charge(bs_budget *b, size_t n)
{
    if (!b)
        return 0;
    /* Compare-and-swap so that used never goes above the cap, not even for a
     * moment (a transient overshoot made other threads' charges fail), and
     * so that a huge n cannot wrap around the check. */
    size_t now, cur = atomic_load(&b->used);
    do {
        if (b->cap && (n > b->cap || cur > b->cap - n)) {
            atomic_store(&b->exhausted, 1);
            return -1;
        }
        now = cur + n;
    } while (!atomic_compare_exchange_weak(&b->used, &cur, now));
    size_t peak = atomic_load(&b->peak);
    while (now > peak && !atomic_compare_exchange_weak(&b->peak, &peak, now))
        ;
    return 0;
}

void bs_budget_release(bs_budget *b, size_t n)
{
    if (b)
        atomic_fetch_sub(&b->used, n);
}

int bs_budget_is_exhausted(const bs_budget *b)
{
    return b && atomic_load(&((bs_budget *)b)->exhausted);
}

void *bs_budget_alloc(bs_budget *b, size_t n)
{
    if (bs_budget_charge(b, n) < 0)
        return NULL;
    void *p = malloc(n);
    if (!p)
        bs_budget_release(b, n);
    return p;
}

void *bs_budget_realloc(bs_budget *b, void *p, size_t old_n, size_t new_n)
{
    if (new_n > old_n && bs_budget_charge(b, new_n - old_n) < 0)
        return NULL;
    void *q = realloc(p, new_n);
    if (!q) {
        if (new_n > old_n)
            bs_budget_release(b, new_n - old_n);
        return NULL;
    }
    if (new_n < old_n)
        bs_budget_release(b, old_n - new_n);
    return q;
}

void bs_budget_free(bs_budget *b, void *p, size_t n)
{
    if (!p)
        return;
    free(p);
    bs_budget_release(b, n);
}
