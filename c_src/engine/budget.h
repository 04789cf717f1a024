/* budget.h — a memory cap shared by every allocation of one recording session.
 *
 * All engine growth (call-tree nodes, hash tables, process states) is charged
 * here before it happens; once the cap would be passed the budget is marked
 * exhausted and the caller drops the event instead of allocating. Counters are
 * atomic because tracer callbacks run on several scheduler threads at once. */
#ifndef BS_BUDGET_H
#define BS_BUDGET_H

#include <stdatomic.h>
#include <stddef.h>

typedef struct bs_budget {
    _Atomic size_t used;     /* bytes currently charged */
    _Atomic size_t peak;     /* highest value of used */
    size_t cap;              /* 0 means unlimited */
    _Atomic int exhausted;   /* set once a charge was refused; never cleared */
} bs_budget;

void bs_budget_init(bs_budget *b, size_t cap);
/* Charge n bytes; returns 0, or -1 (and marks the budget exhausted) if the cap
 * would be exceeded. */
int bs_budget_charge(bs_budget *b, size_t n);
void bs_budget_release(bs_budget *b, size_t n);
int bs_budget_is_exhausted(const bs_budget *b);

/* malloc/realloc/free that charge the budget (b may be NULL: no cap). */
void *bs_budget_alloc(bs_budget *b, size_t n);
void *bs_budget_realloc(bs_budget *b, void *p, size_t old_n, size_t new_n);
void bs_budget_free(bs_budget *b, void *p, size_t n);

#endif
