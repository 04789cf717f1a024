/* test_erl_caller.c — the Erlang caller of a shared JIT fragment taken from
 * the top of the Erlang stack (cpu/erl_caller.h), on hand-built Erlang
 * stacks laid out as BeamAsm lays them out with frame pointers: the
 * function's frame [saved bp][return address into its caller] at bp, its Y
 * registers (tagged terms) below, and the fragment's return address into
 * the function on top (lowest). The caller is found, read through the stack
 * copy or through the process reader (proc_mem.h, this process's own
 * memory); the first CP-shaped word that is not in Erlang code is refused
 * and never skipped (a stale return address below it must not be taken); no
 * CP within the bound, an unreadable word and a bp near 0 say so. The chain
 * the NIF builds from it (fragment, caller, then the frame-pointer walk) is
 * checked in order. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <string.h>
#include <unistd.h>

#include "cpu/dwarf_unwind.h"
#include "cpu/erl_caller.h"
#include "cpu/proc_mem.h"

/* "Erlang code" of the tests: [0x10000, 0x20000). */
#define CODE_LO 0x10000u
#define CODE_HI 0x20000u

static int in_code(void *ctx, uint64_t addr)
{
    int *asked = ctx;
    ++*asked;
    return addr >= CODE_LO && addr < CODE_HI;
}

#define NIL 0x3bu                   /* an immediate */
#define SMALL(n) (((uint64_t)(n) << 4) | 0xfu)
#define LIST(p) ((uint64_t)(p) | 1u) /* a list pointer */
#define BOXED(p) ((uint64_t)(p) | 2u)

/* An Erlang stack of 64 words; frame pointer of the function at word fp. */
typedef struct estack {
    uint64_t w[64];
} estack;

static uint64_t addr_of(const estack *s, int i)
{
    return (uint64_t)(uintptr_t)&s->w[i];
}

/* The function's frame at word 40: [40] = saved bp (word 48's address),
 * [41] = return address into its caller 0x12000; Y registers at 37..39;
 * the fragment's return address into the function, 0x11004, at 36; below
 * it (35 and down) stale words of an older frame, among them an old
 * return address 0x15000 at 34. Word 48: the caller's frame [48] = 0 (end),
 * [49] = 0x13000. */
static void build(estack *s)
{
    memset(s, 0, sizeof *s);
    s->w[48] = 0;
    s->w[49] = 0x13000;
    s->w[40] = addr_of(s, 48);
    s->w[41] = 0x12000;
    s->w[39] = SMALL(7);
    s->w[38] = LIST(0x7f0000001000ull);
    s->w[37] = BOXED(0x7f0000002000ull);
    s->w[36] = 0x11004;
    s->w[35] = NIL;
    s->w[34] = 0x15000;
}

static void test_found_through_copy(void **state)
{
    (void)state;
    estack s;
    build(&s);
    bs_stack_copy copy = {.sp = addr_of(&s, 0), .data = (const unsigned char *)s.w, .size = sizeof s.w};
    int asked = 0;
    uint64_t ret = 1;
    assert_int_equal(bs_erl_caller(addr_of(&s, 40), &copy, NULL, BS_ERL_CALLER_MAX_WORDS, in_code, &asked, &ret),
                     BS_ERL_CALLER_FOUND);
    assert_int_equal(ret, 0x11004);
    assert_int_equal(asked, 1); /* the terms above it are never taken for code */
}

static void test_found_through_reader(void **state)
{
    (void)state;
    estack s;
    build(&s);
    bs_proc_mem pm;
    bs_proc_mem_init(&pm, (int)getpid());
    bs_mem_reader mem = {bs_proc_mem_read, &pm};
    /* a copy that holds only the words from 38 up: 37 and 36 come through the reader */
    bs_stack_copy copy = {.sp = addr_of(&s, 38), .data = (const unsigned char *)&s.w[38], .size = 26 * 8};
    int asked = 0;
    uint64_t ret = 0;
    assert_int_equal(bs_erl_caller(addr_of(&s, 40), &copy, &mem, BS_ERL_CALLER_MAX_WORDS, in_code, &asked, &ret),
                     BS_ERL_CALLER_FOUND);
    assert_int_equal(ret, 0x11004);
    assert_true(pm.calls >= 1);
    /* no copy at all */
    bs_proc_mem_forget(&pm);
    assert_int_equal(bs_erl_caller(addr_of(&s, 40), NULL, &mem, BS_ERL_CALLER_MAX_WORDS, in_code, &asked, &ret),
                     BS_ERL_CALLER_FOUND);
    assert_int_equal(ret, 0x11004);
}

static void test_not_code_refused(void **state)
{
    (void)state;
    estack s;
    build(&s);
    s.w[36] = 0x7f0000003000ull; /* CP-shaped, not Erlang code (the stack changed since the sample) */
    bs_stack_copy copy = {.sp = addr_of(&s, 0), .data = (const unsigned char *)s.w, .size = sizeof s.w};
    int asked = 0;
    uint64_t ret = 1;
    assert_int_equal(bs_erl_caller(addr_of(&s, 40), &copy, NULL, BS_ERL_CALLER_MAX_WORDS, in_code, &asked, &ret),
                     BS_ERL_CALLER_NOT_CODE);
    assert_int_equal(ret, 0); /* the old return address at 34 is not taken */
    s.w[36] = 0; /* a zero word is no return address either */
    assert_int_equal(bs_erl_caller(addr_of(&s, 40), &copy, NULL, BS_ERL_CALLER_MAX_WORDS, in_code, &asked, &ret),
                     BS_ERL_CALLER_NOT_CODE);
}

static void test_none_within_bound(void **state)
{
    (void)state;
    estack s;
    build(&s);
    bs_stack_copy copy = {.sp = addr_of(&s, 0), .data = (const unsigned char *)s.w, .size = sizeof s.w};
    int asked = 0;
    uint64_t ret = 1;
    /* 3 words below bp are all terms */
    assert_int_equal(bs_erl_caller(addr_of(&s, 40), &copy, NULL, 3, in_code, &asked, &ret), BS_ERL_CALLER_NONE);
    assert_int_equal(ret, 0);
    assert_int_equal(asked, 0);
    /* 4 reach it */
    assert_int_equal(bs_erl_caller(addr_of(&s, 40), &copy, NULL, 4, in_code, &asked, &ret), BS_ERL_CALLER_FOUND);
}

static void test_unreadable(void **state)
{
    (void)state;
    estack s;
    build(&s);
    /* the copy ends above the words needed and there is no reader */
    bs_stack_copy copy = {.sp = addr_of(&s, 38), .data = (const unsigned char *)&s.w[38], .size = 26 * 8};
    int asked = 0;
    uint64_t ret = 1;
    assert_int_equal(bs_erl_caller(addr_of(&s, 40), &copy, NULL, BS_ERL_CALLER_MAX_WORDS, in_code, &asked, &ret),
                     BS_ERL_CALLER_UNREAD);
    /* unmapped memory through the reader */
    bs_proc_mem pm;
    bs_proc_mem_init(&pm, (int)getpid());
    bs_mem_reader mem = {bs_proc_mem_read, &pm};
    assert_int_equal(bs_erl_caller(0x1000, NULL, &mem, BS_ERL_CALLER_MAX_WORDS, in_code, &asked, &ret),
                     BS_ERL_CALLER_UNREAD);
    /* a bp near 0 never wraps around */
    assert_int_equal(bs_erl_caller(16, NULL, &mem, 8, in_code, &asked, &ret), BS_ERL_CALLER_UNREAD);
    assert_int_equal(ret, 0);
}

/* The chain cpu_session builds for a C leaf under a fragment: the C frames,
 * the fragment's return address, the caller found, then the frame-pointer
 * walk from the function's frame (its caller, and on). */
static void test_chain_with_caller(void **state)
{
    (void)state;
    estack s;
    build(&s);
    bs_stack_copy copy = {.sp = addr_of(&s, 0), .data = (const unsigned char *)s.w, .size = sizeof s.w};
    int asked = 0;
    uint64_t caller;
    assert_int_equal(bs_erl_caller(addr_of(&s, 40), &copy, NULL, BS_ERL_CALLER_MAX_WORDS, in_code, &asked, &caller),
                     BS_ERL_CALLER_FOUND);
    uint64_t dwarf[4] = {0x401000, 0x402000, 0x30000 /* the fragment */};
    bs_user_regs at = {.ip = caller, .sp = addr_of(&s, 0), .bp = addr_of(&s, 40)};
    uint64_t kernel[1] = {0x401000}, out[16];
    size_t n = bs_callchain_splice(dwarf, 3, 1, &at, &copy, NULL, kernel, 1, out, 16);
    uint64_t want[] = {0x401000, 0x402000, 0x30000, 0x11004, 0x12000, 0x13000};
    assert_int_equal(n, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(out[i], want[i]);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_found_through_copy),
        cmocka_unit_test(test_found_through_reader),
        cmocka_unit_test(test_not_code_refused),
        cmocka_unit_test(test_none_within_bound),
        cmocka_unit_test(test_unreadable),
        cmocka_unit_test(test_chain_with_caller),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
