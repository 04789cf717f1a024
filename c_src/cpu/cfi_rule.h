/* cfi_rule.h — a frame's CFI row in the simple form nearly every compiled
 * function has (CFA = a register + an offset; each saved register undefined,
 * unchanged, at CFA + offset or equal to CFA + offset), copied out of
 * libdw's Dwarf_Frame, and a direct-mapped cache of them by pc, so that a pc
 * unwound before costs no libdw lookup (which allocates and runs the CIE's
 * and FDE's instructions each time). Rows in any other form are not cached:
 * the unwinder evaluates them through libdw (cfi_expr.h). Part of the DWARF
 * unwinder (dwarf_unwind.h); only with libdw. The cache is BS_CFI_CACHE_SLOTS
 * rows allocated once; a row replaces whatever had its slot. */
#ifndef BS_CPU_CFI_RULE_H
#define BS_CPU_CFI_RULE_H

#ifdef BS_HAVE_LIBDW

#include <elfutils/libdw.h>
#include <stdint.h>

#include "cpu/cfi_expr.h"

#define BS_CFI_CACHE_SLOTS 2048
/* The registers a caller's frame can get back: rbx, rbp, r12-r15 (callee-saved) and the return address. */
#define BS_CFI_RECOVERED 7
extern const int bs_cfi_recovered[BS_CFI_RECOVERED];

typedef enum { BS_RULE_UNDEFINED, BS_RULE_SAME, BS_RULE_AT_CFA, BS_RULE_CFA_PLUS } bs_rule_kind;

typedef struct bs_cfi_rule {
    uint64_t key; /* the pc looked up, plus 1 (0: an empty slot) */
    int64_t cfa_offset;
    int64_t offset[BS_CFI_RECOVERED];
    uint8_t kind[BS_CFI_RECOVERED];
    uint8_t cfa_reg;
    uint8_t signal_frame; /* the caller's pc is exact (interrupted), not after a call */
} bs_cfi_rule;

/* The row of frame in simple form: 1, or 0 when it has another form (an
 * expression, a register copied from another, a return address column
 * other than 16). */
int bs_cfi_rule_from_frame(Dwarf_Frame *frame, bs_cfi_rule *rule);

/* The caller's registers by rule from cur: BS_UNWIND_FULL when they are
 * there, else why not (the same reasons and checks as libdw's path). */
bs_unwind_stop bs_cfi_rule_apply(const bs_cfi_rule *rule, const bs_cfi_regs *cur, const bs_stack_copy *stack,
                                 bs_cfi_regs *caller);

/* The caller's return address, stack pointer and last checks, shared by
 * both paths: caller holds the recovered registers; ra_status is why when
 * the return address was not recovered. */
bs_unwind_stop bs_cfi_finish(uint64_t cfa, const bs_cfi_regs *cur, bs_cfi_regs *caller, bs_unwind_stop ra_status);

typedef struct bs_cfi_cache {
    bs_cfi_rule *slots; /* BS_CFI_CACHE_SLOTS, or NULL: no cache */
} bs_cfi_cache;

const bs_cfi_rule *bs_cfi_cache_get(const bs_cfi_cache *c, uint64_t pc);
void bs_cfi_cache_put(bs_cfi_cache *c, uint64_t pc, const bs_cfi_rule *rule);
/* Forgets every row (the mappings changed: a pc may now be other code). */
void bs_cfi_cache_clear(bs_cfi_cache *c);

#endif
#endif
