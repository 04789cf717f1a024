/* erl_caller.c — the scan down the Erlang stack from a shared fragment's
 * frame pointer to its caller's return address (erl_caller.h). */
#include "cpu/erl_caller.h"

bs_erl_caller_status bs_erl_caller(uint64_t bp, const bs_stack_copy *stack, const bs_mem_reader *mem,
                                   unsigned max_words, bs_is_erlang_code *is_erlang, void *ctx, uint64_t *ret)
{
    *ret = 0;
    if (max_words > BS_ERL_CALLER_MAX_WORDS) max_words = BS_ERL_CALLER_MAX_WORDS;
    if (bp < 8 * (uint64_t)(max_words + 1)) return BS_ERL_CALLER_UNREAD;
    for (unsigned i = 1; i <= max_words; i++) {
        uint64_t addr = bp - 8 * (uint64_t)i, w;
        if (!bs_stack_read8(stack, addr, &w) && !(mem != NULL && mem->read(mem->ctx, addr, &w, 8)))
            return BS_ERL_CALLER_UNREAD;
        if ((w & 3) != 0) continue; /* a term: list, boxed or immediate */
        if (w != 0 && is_erlang(ctx, w)) {
            *ret = w;
            return BS_ERL_CALLER_FOUND;
        }
        return BS_ERL_CALLER_NOT_CODE;
    }
    return BS_ERL_CALLER_NONE;
}
