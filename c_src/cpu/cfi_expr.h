/* cfi_expr.h — evaluates the DWARF expressions that libdw gives for a
 * frame's CFA and saved registers (dwarf_frame_cfa, dwarf_frame_register)
 * against the registers known so far and a copy of the user stack: the only
 * memory it reads. Part of the DWARF unwinder (dwarf_unwind.h); built only
 * with libdw (BS_HAVE_LIBDW). A fixed 16-value stack, at most
 * BS_CFI_EXPR_MAX_STEPS operations per expression (branches included), no
 * allocation, no recursion: DW_OP_call_frame_cfa pushes a CFA the caller
 * computed before. */
#ifndef BS_CPU_CFI_EXPR_H
#define BS_CPU_CFI_EXPR_H

#ifdef BS_HAVE_LIBDW

#include <elfutils/libdw.h>
#include <stdint.h>

#include "cpu/dwarf_unwind.h"

#define BS_CFI_REGS 17 /* x86_64 DWARF registers 0-15 and the return address, 16 */
#define BS_CFI_EXPR_MAX_STEPS 256

typedef enum {
    BS_CFI_OK,
    BS_CFI_NO_MEMORY, /* a read outside the stack copy */
    BS_CFI_BAD        /* an unknown register, operation, or a malformed expression */
} bs_cfi_status;

/* Registers of one frame: value of DWARF register r valid when bit r of valid is set. */
typedef struct bs_cfi_regs {
    uint64_t r[BS_CFI_REGS];
    uint32_t valid;
} bs_cfi_regs;

/* Evaluates ops. *is_value is set when the expression computes a value
 * (DW_OP_stack_value), clear when it computes an address (a location);
 * cfa is what DW_OP_call_frame_cfa pushes (have_cfa 0: that op is BAD). */
bs_cfi_status bs_cfi_eval(const Dwarf_Op *ops, size_t nops, const bs_cfi_regs *regs, uint64_t cfa, int have_cfa,
                          const bs_stack_copy *stack, int *is_value, uint64_t *result);

#endif
#endif
