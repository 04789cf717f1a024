/* fragment_site.c — decodes a shared JIT fragment's prologue and checks a
 * saved call site (fragment_site.h). */
#include <string.h>

#include "cpu/fragment_site.h"

static int32_t disp32(const unsigned char *p)
{
    uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    int32_t d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* 1 with *disp when code[i..] is REX.W opcode ModRM(mod 01/10, reg, rm rbx)
 * disp: `op reg, disp(%rbx)` with an 8- or 32-bit displacement. */
static int rbx_operand(const unsigned char *code, size_t len, size_t i, unsigned char op, unsigned reg, int64_t *disp)
{
    if (i + 3 > len || code[i] != 0x48 || code[i + 1] != op)
        return 0;
    unsigned char modrm = code[i + 2];
    if ((modrm & 7) != 3 || ((modrm >> 3) & 7) != reg)
        return 0;
    if ((modrm >> 6) == 1 && i + 4 <= len) {
        *disp = (int8_t)code[i + 3];
        return 1;
    }
    if ((modrm >> 6) == 2 && i + 7 <= len) {
        *disp = disp32(code + i + 3);
        return 1;
    }
    return 0;
}

void bs_fragment_shape_of(const unsigned char *code, size_t len, size_t ret_off, bs_fragment_shape *out)
{
    memset(out, 0, sizeof *out);
    if (ret_off > len)
        ret_off = len;
    out->frame = len >= 4 && code[0] == 0x55 && code[1] == 0x48 && code[2] == 0x89 && code[3] == 0xe5;
    int64_t store = 0, stack = 0, d;
    int have_store = 0, have_stack = 0;
    for (size_t i = 0; i + 3 <= ret_off; i++) {
        if (!have_store && rbx_operand(code, ret_off, i, 0x89, 2 /* rdx */, &d))
            store = d, have_store = 1;
        else if (rbx_operand(code, ret_off, i, 0x8d, 4 /* rsp */, &d))
            stack = d, have_stack = 1; /* the last switch before the call counts */
    }
    if (have_store && have_stack) {
        out->has_site = 1;
        out->site_off = store - stack;
    }
}

uint64_t bs_fragment_site_call(const unsigned char *code, size_t len, uint64_t site, uint64_t target)
{
    for (size_t i = 0; i + 5 <= len; i++) {
        if (code[i] != 0xe8)
            continue;
        uint64_t ret = site + i + 5;
        if (ret + (uint64_t)(int64_t)disp32(code + i + 1) == target)
            return ret;
    }
    return 0;
}

int64_t bs_fragment_ra_store(const unsigned char *code, size_t len)
{
    static const unsigned char load_ra[] = {0x48, 0x8b, 0x44, 0x24, 0x08}; /* mov 0x8(%rsp),%rax */
    if (len < 4 || code[0] != 0x55 || code[1] != 0x48 || code[2] != 0x89 || code[3] != 0xe5)
        return -1;
    for (size_t i = 4; i + sizeof load_ra + 4 <= len; i++) {
        if (memcmp(code + i, load_ra, sizeof load_ra) != 0)
            continue;
        const unsigned char *st = code + i + sizeof load_ra; /* REX.WB 89 /0 with rm r13 */
        if (st[0] != 0x49 || st[1] != 0x89)
            return -1;
        if (st[2] == 0x45)
            return (int8_t)st[3];
        if (st[2] == 0x85 && i + sizeof load_ra + 7 <= len)
            return disp32(st + 3);
        return -1;
    }
    return -1;
}

/* The displacement of the first `mov d(%r13), %reg' (REX.WB 8b /r, rm r13:
 * mod 01 with disp8 or mod 10 with disp32) among len bytes of code, or -1. */
static int64_t r13_load(const unsigned char *code, size_t len, unsigned reg)
{
    const unsigned char disp8 = (unsigned char)(0x45 | reg << 3), disp32_form = (unsigned char)(0x85 | reg << 3);
    for (size_t i = 0; i + 4 <= len; i++) {
        if (code[i] != 0x49 || code[i + 1] != 0x8b)
            continue;
        if (code[i + 2] == disp8)
            return (int8_t)code[i + 3];
        if (code[i + 2] == disp32_form && i + 7 <= len)
            return disp32(code + i + 3);
    }
    return -1;
}

int64_t bs_fragment_stop_load(const unsigned char *code, size_t len)
{
    return r13_load(code, len, 4); /* rsp */
}

int64_t bs_fragment_fp_load(const unsigned char *code, size_t len)
{
    return r13_load(code, len, 5); /* rbp */
}
