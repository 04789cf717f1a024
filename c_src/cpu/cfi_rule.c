/* cfi_rule.c — simple CFI rows out of libdw's frames, their application to
 * a frame's registers, and the direct-mapped cache of them (cfi_rule.h). */
#ifdef BS_HAVE_LIBDW

#include <dwarf.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cfi_rule.h"
#include "cpu/libdw_dl.h"

#define REG_SP 7
#define REG_RA 16

const int bs_cfi_recovered[BS_CFI_RECOVERED] = {3, 6, 12, 13, 14, 15, REG_RA};

/* The rule of one register from libdw's ops: 1 when simple. */
static int simple_register(Dwarf_Frame *frame, int reg, uint8_t *kind, int64_t *offset)
{
    Dwarf_Op mem[3];
    Dwarf_Op *ops = NULL;
    size_t n = 0;
    *offset = 0;
    if (dwarf_frame_register(frame, reg, mem, &ops, &n) != 0) {
        *kind = BS_RULE_UNDEFINED; /* as the general path takes it */
        return 1;
    }
    if (n == 0) {
        *kind = ops == NULL ? BS_RULE_SAME : BS_RULE_UNDEFINED;
        return 1;
    }
    if (ops[0].atom != DW_OP_call_frame_cfa) return 0;
    size_t i = 1;
    if (i < n && ops[i].atom == DW_OP_plus_uconst) *offset = (int64_t)ops[i++].number;
    *kind = BS_RULE_AT_CFA;
    if (i < n && ops[i].atom == DW_OP_stack_value) *kind = BS_RULE_CFA_PLUS, i++;
    return i == n;
}

int bs_cfi_rule_from_frame(Dwarf_Frame *frame, bs_cfi_rule *rule)
{
    bool signalp;
    if (dwarf_frame_info(frame, NULL, NULL, &signalp) != REG_RA) return 0;
    Dwarf_Op *ops;
    size_t nops;
    if (dwarf_frame_cfa(frame, &ops, &nops) != 0 || nops != 1) return 0;
    if (ops[0].atom == DW_OP_bregx && ops[0].number < BS_CFI_REGS) {
        rule->cfa_reg = (uint8_t)ops[0].number;
        rule->cfa_offset = (int64_t)ops[0].number2;
    } else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom < DW_OP_breg0 + BS_CFI_REGS) {
        rule->cfa_reg = (uint8_t)(ops[0].atom - DW_OP_breg0);
        rule->cfa_offset = (int64_t)ops[0].number;
    } else {
        return 0;
    }
    rule->signal_frame = signalp;
    for (int k = 0; k < BS_CFI_RECOVERED; k++)
        if (!simple_register(frame, bs_cfi_recovered[k], &rule->kind[k], &rule->offset[k])) return 0;
    return 1;
}

bs_unwind_stop bs_cfi_finish(uint64_t cfa, const bs_cfi_regs *cur, bs_cfi_regs *caller, bs_unwind_stop ra_status)
{
    if (!(caller->valid & (UINT32_C(1) << REG_RA))) return ra_status;
    /* On x86_64 the caller's stack pointer is the CFA. */
    caller->r[REG_SP] = cfa;
    caller->valid |= UINT32_C(1) << REG_SP;
    if (caller->r[REG_RA] == 0) return BS_UNWIND_OUTERMOST;
    if (cfa <= cur->r[REG_SP]) return BS_UNWIND_BAD_FRAME; /* no progress: a loop or garbage */
    return BS_UNWIND_FULL;
}

bs_unwind_stop bs_cfi_rule_apply(const bs_cfi_rule *rule, const bs_cfi_regs *cur, const bs_stack_copy *stack,
                                 bs_cfi_regs *caller)
{
    if (!(cur->valid & (UINT32_C(1) << rule->cfa_reg))) return BS_UNWIND_BAD_FRAME;
    uint64_t cfa = cur->r[rule->cfa_reg] + (uint64_t)rule->cfa_offset;
    bs_unwind_stop ra_status = BS_UNWIND_OUTERMOST;
    caller->valid = 0;
    for (int k = 0; k < BS_CFI_RECOVERED; k++) {
        int reg = bs_cfi_recovered[k];
        uint64_t v;
        switch (rule->kind[k]) {
        case BS_RULE_SAME:
            if (!(cur->valid & (UINT32_C(1) << reg))) continue;
            v = cur->r[reg];
            break;
        case BS_RULE_AT_CFA:
            if (!bs_stack_read8(stack, cfa + (uint64_t)rule->offset[k], &v)) {
                if (reg == REG_RA) ra_status = BS_UNWIND_STACK_END;
                continue;
            }
            break;
        case BS_RULE_CFA_PLUS:
            v = cfa + (uint64_t)rule->offset[k];
            break;
        default:
            continue;
        }
        caller->r[reg] = v;
        caller->valid |= UINT32_C(1) << reg;
    }
    return bs_cfi_finish(cfa, cur, caller, ra_status);
}

static size_t slot_of(uint64_t pc)
{
    return (size_t)((pc * UINT64_C(0x9E3779B97F4A7C15)) >> 53) & (BS_CFI_CACHE_SLOTS - 1);
}

const bs_cfi_rule *bs_cfi_cache_get(const bs_cfi_cache *c, uint64_t pc)
{
    if (c->slots == NULL || pc == UINT64_MAX) return NULL;
    const bs_cfi_rule *r = &c->slots[slot_of(pc)];
    return r->key == pc + 1 ? r : NULL;
}

void bs_cfi_cache_put(bs_cfi_cache *c, uint64_t pc, const bs_cfi_rule *rule)
{
    if (c->slots == NULL) return;
    bs_cfi_rule *r = &c->slots[slot_of(pc)];
    *r = *rule;
    r->key = pc + 1;
}

void bs_cfi_cache_clear(bs_cfi_cache *c)
{
    if (c->slots) memset(c->slots, 0, BS_CFI_CACHE_SLOTS * sizeof c->slots[0]);
}

#else
/* Without libdw there are no CFI rows (dwarf_unwind.h). */
typedef int bs_cfi_rule_unused;
#endif
