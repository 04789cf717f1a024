/* cfi_expr.c — the DWARF expression evaluator of the CFI unwinder
 * (cfi_expr.h): the operations CFI uses (registers, constants, arithmetic,
 * comparisons, branches, dereferences of the stack copy) on a fixed stack. */
#ifdef BS_HAVE_LIBDW

#include <dwarf.h>
#include <string.h>

#include "cpu/cfi_expr.h"

#define STACK_MAX 16

typedef struct {
    uint64_t v[STACK_MAX];
    size_t n;
} value_stack;

static int push(value_stack *s, uint64_t v)
{
    if (s->n == STACK_MAX) return 0;
    s->v[s->n++] = v;
    return 1;
}

static int pop(value_stack *s, uint64_t *v)
{
    if (s->n == 0) return 0;
    *v = s->v[--s->n];
    return 1;
}

static int reg_value(const bs_cfi_regs *regs, Dwarf_Word regno, uint64_t *v)
{
    if (regno >= BS_CFI_REGS || !(regs->valid & (UINT32_C(1) << regno))) return 0;
    *v = regs->r[regno];
    return 1;
}

/* Binary operations: a is the second entry, b the top. */
static bs_cfi_status binary(uint8_t atom, uint64_t a, uint64_t b, uint64_t *r)
{
    switch (atom) {
    case DW_OP_and: *r = a & b; break;
    case DW_OP_or: *r = a | b; break;
    case DW_OP_xor: *r = a ^ b; break;
    case DW_OP_plus: *r = a + b; break;
    case DW_OP_minus: *r = a - b; break;
    case DW_OP_mul: *r = a * b; break;
    case DW_OP_div:
        if (b == 0 || ((int64_t)a == INT64_MIN && (int64_t)b == -1)) return BS_CFI_BAD;
        *r = (uint64_t)((int64_t)a / (int64_t)b);
        break;
    case DW_OP_mod:
        if (b == 0) return BS_CFI_BAD;
        *r = a % b;
        break;
    case DW_OP_shl: *r = b >= 64 ? 0 : a << b; break;
    case DW_OP_shr: *r = b >= 64 ? 0 : a >> b; break;
    case DW_OP_shra:
        /* Arithmetic shift without relying on >> of a negative signed value. */
        if (b >= 64) *r = (int64_t)a < 0 ? UINT64_MAX : 0;
        else *r = (int64_t)a < 0 ? ~((~a) >> b) : a >> b;
        break;
    case DW_OP_eq: *r = (int64_t)a == (int64_t)b; break;
    case DW_OP_ne: *r = (int64_t)a != (int64_t)b; break;
    case DW_OP_lt: *r = (int64_t)a < (int64_t)b; break;
    case DW_OP_le: *r = (int64_t)a <= (int64_t)b; break;
    case DW_OP_gt: *r = (int64_t)a > (int64_t)b; break;
    case DW_OP_ge: *r = (int64_t)a >= (int64_t)b; break;
    default: return BS_CFI_BAD;
    }
    return BS_CFI_OK;
}

/* The index of the operation that starts at byte offset target. */
static int find_op(const Dwarf_Op *ops, size_t nops, Dwarf_Word target, size_t *at)
{
    for (size_t i = 0; i < nops; i++)
        if (ops[i].offset == target) {
            *at = i;
            return 1;
        }
    return 0;
}

bs_cfi_status bs_cfi_eval(const Dwarf_Op *ops, size_t nops, const bs_cfi_regs *regs, uint64_t cfa, int have_cfa,
                          const bs_stack_copy *stack, int *is_value, uint64_t *result)
{
    value_stack s = {.n = 0};
    uint64_t a, b, c;
    size_t i = 0;
    unsigned steps = 0;
    *is_value = 0;
    while (i < nops) {
        if (++steps > BS_CFI_EXPR_MAX_STEPS) return BS_CFI_BAD;
        const Dwarf_Op *op = &ops[i++];
        uint8_t atom = op->atom;
        if (atom >= DW_OP_lit0 && atom <= DW_OP_lit31) {
            if (!push(&s, (uint64_t)(atom - DW_OP_lit0))) return BS_CFI_BAD;
            continue;
        }
        if (atom >= DW_OP_breg0 && atom <= DW_OP_breg31) {
            if (!reg_value(regs, atom - DW_OP_breg0, &a) || !push(&s, a + op->number)) return BS_CFI_BAD;
            continue;
        }
        switch (atom) {
        case DW_OP_const1u: case DW_OP_const1s: case DW_OP_const2u: case DW_OP_const2s:
        case DW_OP_const4u: case DW_OP_const4s: case DW_OP_const8u: case DW_OP_const8s:
        case DW_OP_constu: case DW_OP_consts:
            if (!push(&s, op->number)) return BS_CFI_BAD;
            break;
        case DW_OP_regx: /* "in register N" (DW_CFA_register): its value */
            if (!reg_value(regs, op->number, &a) || !push(&s, a)) return BS_CFI_BAD;
            *is_value = 1;
            break;
        case DW_OP_bregx:
            if (!reg_value(regs, op->number, &a) || !push(&s, a + op->number2)) return BS_CFI_BAD;
            break;
        case DW_OP_call_frame_cfa:
            if (!have_cfa || !push(&s, cfa)) return BS_CFI_BAD;
            break;
        case DW_OP_stack_value:
            *is_value = 1;
            break;
        case DW_OP_nop:
            break;
        case DW_OP_dup:
            if (s.n == 0 || !push(&s, s.v[s.n - 1])) return BS_CFI_BAD;
            break;
        case DW_OP_drop:
            if (!pop(&s, &a)) return BS_CFI_BAD;
            break;
        case DW_OP_over:
            if (s.n < 2 || !push(&s, s.v[s.n - 2])) return BS_CFI_BAD;
            break;
        case DW_OP_pick:
            if (op->number >= s.n || !push(&s, s.v[s.n - 1 - op->number])) return BS_CFI_BAD;
            break;
        case DW_OP_swap:
            if (s.n < 2) return BS_CFI_BAD;
            a = s.v[s.n - 1], s.v[s.n - 1] = s.v[s.n - 2], s.v[s.n - 2] = a;
            break;
        case DW_OP_rot: /* top three: (c b a) -> (a c b), a on top */
            if (s.n < 3) return BS_CFI_BAD;
            a = s.v[s.n - 1], b = s.v[s.n - 2], c = s.v[s.n - 3];
            s.v[s.n - 1] = b, s.v[s.n - 2] = c, s.v[s.n - 3] = a;
            break;
        case DW_OP_deref:
            if (!pop(&s, &a)) return BS_CFI_BAD;
            if (!bs_stack_read8(stack, a, &b)) return BS_CFI_NO_MEMORY;
            push(&s, b);
            break;
        case DW_OP_deref_size:
            if (!pop(&s, &a) || op->number == 0 || op->number > 8) return BS_CFI_BAD;
            if (!bs_stack_read8(stack, a, &b)) return BS_CFI_NO_MEMORY;
            if (op->number < 8) b &= (UINT64_C(1) << (8 * op->number)) - 1; /* little-endian */
            push(&s, b);
            break;
        case DW_OP_abs:
            if (!pop(&s, &a)) return BS_CFI_BAD;
            push(&s, (int64_t)a < 0 ? 0 - a : a);
            break;
        case DW_OP_neg:
            if (!pop(&s, &a)) return BS_CFI_BAD;
            push(&s, 0 - a);
            break;
        case DW_OP_not:
            if (!pop(&s, &a)) return BS_CFI_BAD;
            push(&s, ~a);
            break;
        case DW_OP_plus_uconst:
            if (!pop(&s, &a)) return BS_CFI_BAD;
            push(&s, a + op->number);
            break;
        case DW_OP_skip:
        case DW_OP_bra: {
            if (atom == DW_OP_bra) {
                if (!pop(&s, &a)) return BS_CFI_BAD;
                if (a == 0) break;
            }
            /* The target is counted from the end of this 3-byte operation. */
            Dwarf_Word target = op->offset + 3 + (Dwarf_Word)(int64_t)(int16_t)op->number;
            if (!find_op(ops, nops, target, &i)) return BS_CFI_BAD;
            break;
        }
        default: {
            if (!pop(&s, &b) || !pop(&s, &a)) return BS_CFI_BAD;
            bs_cfi_status st = binary(atom, a, b, &c);
            if (st != BS_CFI_OK) return st;
            push(&s, c);
            break;
        }
        }
    }
    return pop(&s, result) ? BS_CFI_OK : BS_CFI_BAD;
}

#else
/* Without libdw there is no CFI to evaluate (dwarf_unwind.h). */
typedef int bs_cfi_expr_unused;
#endif
