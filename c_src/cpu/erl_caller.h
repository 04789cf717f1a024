/* erl_caller.h — the Erlang function under a shared fragment of the JIT
 * that has no frame of its own. (On OTP 25 and 27 the fragments seen in
 * samples all have one: fragment_site.h; this scan is for those that do not.)
 *
 * BeamAsm (x86_64, frame pointers: +JPperf true) calls its shared
 * fragments from an Erlang function with a plain `call` on the process's
 * own stack; a fragment without a frame of its own leaves its caller's
 * return address as the word on top of the Erlang stack (E), not at
 * [bp + 8], so a
 * frame-pointer walk from the fragment skips the Erlang function that called
 * it. bp is still that function's frame pointer, and between E and bp lie
 * only its Y registers: Erlang terms, whose tag (the low two bits) is never
 * 00 on a stack at a call that may collect garbage, while a return address
 * (a CP) is 4-byte aligned. So, scanning down from bp - 8, the first word
 * whose low two bits are 00 is E's, the return address into the caller.
 *
 * That word is read when the sample is drained (up to a drain period after
 * it was taken): it is taken only if the caller's is_erlang says it lies in
 * JIT code of an Erlang function; anything else is refused, never guessed.
 * No allocation, no recursion; at most max_words words read. */
#ifndef BS_CPU_ERL_CALLER_H
#define BS_CPU_ERL_CALLER_H

#include <stdint.h>

#include "cpu/dwarf_unwind.h"

#define BS_ERL_CALLER_MAX_WORDS 1024 /* a frame has at most 1023 Y registers */

typedef enum {
    BS_ERL_CALLER_FOUND,    /* *ret is the caller's return address */
    BS_ERL_CALLER_UNREAD,   /* a word could not be read (unmapped, outside copy and reader) */
    BS_ERL_CALLER_NOT_CODE, /* the first CP-shaped word is not in an Erlang function */
    BS_ERL_CALLER_NONE      /* no CP-shaped word within max_words */
} bs_erl_caller_status;

/* 1 when addr, a return address, lies in JIT code of an Erlang function. */
typedef int bs_is_erlang_code(void *ctx, uint64_t addr);

bs_erl_caller_status bs_erl_caller(uint64_t bp, const bs_stack_copy *stack, const bs_mem_reader *mem,
                                   unsigned max_words, bs_is_erlang_code *is_erlang, void *ctx, uint64_t *ret);

#endif
