/* test_fragment_site.c — the shape of BeamAsm's shared fragments decoded
 * from their code, and the check of a saved call site (cpu/fragment_site.h),
 * on the bytes of real fragments and a real call site: copied from the
 * running JIT of Debian's OTP 25.2 (+JPperf true) and of OTP 27.3
 * (Debian 13), where the scheduler's registers and so the saved site sit
 * at other offsets from rbx. A fragment with no frame, one that saves no
 * site (garbage_collect) and a site whose code calls another fragment (or
 * nothing) give nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cpu/fragment_site.h"

/* global::call_light_bif_shared, OTP 25: push rbp; mov rbp,rsp;
 * mov 0x230(%r13),%rdi; mov %rdx,-0x78(%rbx); mov %rcx,-0x70(%rbx);
 * mov %rdi,-0x68(%rbx); cmpl $0,0x24(%rcx); jne; cmp $3,%r12; je;
 * dec %r14; jle; (store E and the frame pointer); mov %r15,0x50(%r13);
 * mov %r14,0x68(%r13); lea -0x80(%rbx),%rsp; mov %r13,%rdi;
 * mov %rbx,%rsi; call *%rax — the return address is at offset 0x5b. */
static const unsigned char light_bif_25[] = {
    0x55, 0x48, 0x89, 0xe5, 0x49, 0x8b, 0xbd, 0x30, 0x02, 0x00, 0x00, 0x48, 0x89, 0x53, 0x88, 0x48, 0x89, 0x4b,
    0x90, 0x48, 0x89, 0x7b, 0x98, 0x83, 0x79, 0x24, 0x00, 0x0f, 0x85, 0x1c, 0x01, 0x00, 0x00, 0x49, 0x83, 0xfc,
    0x03, 0x0f, 0x84, 0x12, 0x01, 0x00, 0x00, 0x49, 0xff, 0xce, 0x0f, 0x8e, 0x11, 0x01, 0x00, 0x00, 0x66, 0x48,
    0x0f, 0x6e, 0xc4, 0x66, 0x48, 0x0f, 0x6e, 0xcd, 0x66, 0x0f, 0x6c, 0xc1, 0x41, 0x0f, 0x11, 0x45, 0x58, 0x4d,
    0x89, 0x7d, 0x50, 0x4d, 0x89, 0x75, 0x68, 0x48, 0x8d, 0x63, 0x80, 0x4c, 0x89, 0xef, 0x48, 0x89, 0xde, 0xff,
    0xd0};

/* The same fragment on OTP 27: rdx saved at -0x38(%rbx), the C stack at -0x40(%rbx). */
static const unsigned char light_bif_27[] = {
    0x55, 0x48, 0x89, 0xe5, 0x49, 0x8b, 0xbd, 0x20, 0x02, 0x00, 0x00, 0x48, 0x89, 0x53, 0xc8, 0x48, 0x89,
    0x4b, 0xd0, 0x48, 0x89, 0x7b, 0xd8, 0x83, 0x79, 0x24, 0x00, 0x0f, 0x85, 0x1c, 0x01, 0x00, 0x00, 0x49,
    0x83, 0xfc, 0x03, 0x0f, 0x84, 0x12, 0x01, 0x00, 0x00, 0x41, 0xff, 0xce, 0x0f, 0x8e, 0x11, 0x01, 0x00,
    0x00, 0xc4, 0xe1, 0xf9, 0x6e, 0xcc, 0xc4, 0xe3, 0xf1, 0x22, 0xc5, 0x01, 0xc4, 0xc1, 0x7a, 0x7f, 0x45,
    0x58, 0x4d, 0x89, 0x7d, 0x50, 0x45, 0x89, 0x75, 0x78, 0x48, 0x8d, 0x63, 0xc0, 0xc5, 0xf8, 0x77, 0x4c,
    0x89, 0xef, 0x48, 0x89, 0xde, 0xff, 0xd0};

/* global::i_length_body_shared, OTP 25: rsi to -0x78(%rbx), rdx to -0x70(%rbx). */
static const unsigned char length_25[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x89, 0x73, 0x88, 0x48, 0x89, 0x53,
                                          0x90, 0x49, 0x89, 0x65, 0x58, 0x4d, 0x89, 0x75, 0x68, 0x48, 0x8d,
                                          0x63, 0x80, 0x4c, 0x89, 0xef, 0x48, 0x8d, 0x34, 0xf3, 0xff, 0x15,
                                          0x8b, 0x0a, 0x00, 0x00};

/* global::garbage_collect, OTP 25: a frame, rdx consumed, no site saved. */
static const unsigned char gc_25[] = {
    0x55, 0x48, 0x89, 0xe5, 0x4c, 0x29, 0xfa, 0x48, 0xc1, 0xea, 0x03, 0x48, 0x8d, 0x72, 0xf8, 0x48, 0x8b,
    0x44, 0x24, 0x08, 0x49, 0x89, 0x85, 0x00, 0x01, 0x00, 0x00, 0x66, 0x48, 0x0f, 0x6e, 0xc4, 0x66, 0x48,
    0x0f, 0x6e, 0xcd, 0x66, 0x0f, 0x6c, 0xc1, 0x41, 0x0f, 0x11, 0x45, 0x58, 0x4d, 0x89, 0x7d, 0x50, 0x48,
    0x8d, 0x63, 0x80, 0x4c, 0x89, 0xef, 0x48, 0x89, 0xda, 0x4d, 0x89, 0xf0, 0xff, 0x15, 0x53, 0x12, 0x00,
    0x00};

/* global::garbage_collect, OTP 27 (Debian trixie; sid's OTP 29 has the
 * same bytes up to its call): the return address into c_p->i at 0xf8. */
static const unsigned char gc_27[] = {
    0x55, 0x48, 0x89, 0xe5, 0x4c, 0x29, 0xfa, 0x48, 0xc1, 0xea, 0x03, 0x48, 0x8d, 0x72, 0xf8, 0x48, 0x8b, 0x44,
    0x24, 0x08, 0x49, 0x89, 0x85, 0xf8, 0x00, 0x00, 0x00, 0xc4, 0xe1, 0xf9, 0x6e, 0xcc, 0xc4, 0xe3, 0xf1, 0x22,
    0xc5, 0x01, 0xc4, 0xc1, 0x7a, 0x7f, 0x45, 0x58, 0x4d, 0x89, 0x7d, 0x50, 0x48, 0x8d, 0x63, 0xc0, 0xc5, 0xf8,
    0x77, 0x4c, 0x89, 0xef, 0x48, 0x89, 0xda, 0x45, 0x89, 0xf0, 0xff, 0x15, 0xc2, 0x15, 0x00, 0x00};

/* A call site in bs_cpu_wl:bif_loop/2 (OTP 25) at SITE:
 * movabs $exp,%rcx; movabs $bif,%rax; lea -0x1b(%rip),%rdx (SITE itself);
 * nopl; rex call call_light_bif_shared (at LIGHT_BIF). */
#define SITE 0x7f9222fc1e1cull
#define LIGHT_BIF 0x7f9265805420ull
static const unsigned char site_25[] = {0x48, 0xb9, 0x08, 0xbb, 0x73, 0x25, 0x92, 0x7f, 0x00, 0x00, 0x48, 0xb8,
                                        0x70, 0x73, 0xd5, 0x08, 0x43, 0x56, 0x00, 0x00, 0x48, 0x8d, 0x15, 0xe5,
                                        0xff, 0xff, 0xff, 0x0f, 0x1f, 0x00, 0x40, 0xe8, 0xe0, 0x35, 0x84, 0x42};

static void test_light_bif_shapes(void **state)
{
    (void)state;
    bs_fragment_shape sh;
    bs_fragment_shape_of(light_bif_25, sizeof light_bif_25, sizeof light_bif_25, &sh);
    assert_true(sh.frame);
    assert_true(sh.has_site);
    assert_int_equal(sh.site_off, 8); /* -0x78 - -0x80 */
    bs_fragment_shape_of(light_bif_27, sizeof light_bif_27, sizeof light_bif_27, &sh);
    assert_true(sh.frame);
    assert_true(sh.has_site);
    assert_int_equal(sh.site_off, 8); /* -0x38 - -0x40 */
    bs_fragment_shape_of(length_25, sizeof length_25, sizeof length_25, &sh);
    assert_true(sh.frame);
    assert_true(sh.has_site);
    assert_int_equal(sh.site_off, 16); /* rdx, not rsi: -0x70 - -0x80 */
}

static void test_no_site(void **state)
{
    (void)state;
    bs_fragment_shape sh;
    bs_fragment_shape_of(gc_25, sizeof gc_25, sizeof gc_25, &sh);
    assert_true(sh.frame);
    assert_false(sh.has_site);
    /* Up to a return address before the switch to the C stack: no site. */
    bs_fragment_shape_of(light_bif_25, sizeof light_bif_25, 0x20, &sh);
    assert_true(sh.frame);
    assert_false(sh.has_site);
    /* No push rbp; mov rbp, rsp first: no frame. */
    bs_fragment_shape_of(light_bif_25 + 4, sizeof light_bif_25 - 4, sizeof light_bif_25 - 4, &sh);
    assert_false(sh.frame);
    assert_true(sh.has_site);
    /* Its first 4 bytes alone (a sample in the fragment's own code): a frame. */
    bs_fragment_shape_of(light_bif_25, 4, 0, &sh);
    assert_true(sh.frame);
    assert_false(sh.has_site);
    bs_fragment_shape_of(light_bif_25, 3, 3, &sh);
    assert_false(sh.frame);
    assert_false(sh.has_site);
}

static void test_site_call(void **state)
{
    (void)state;
    assert_int_equal(bs_fragment_site_call(site_25, sizeof site_25, SITE, LIGHT_BIF), SITE + sizeof site_25);
    assert_int_equal(bs_fragment_site_call(site_25, sizeof site_25, SITE, LIGHT_BIF + 0x10), 0);
    assert_int_equal(bs_fragment_site_call(site_25, sizeof site_25 - 1, SITE, LIGHT_BIF), 0); /* cut */
    assert_int_equal(bs_fragment_site_call(site_25, 0, SITE, LIGHT_BIF), 0);
}

/* Where the collecting fragment stores its caller's return address in the
 * process (c_p->i): decoded from its code, on each release's bytes. */
static void test_ra_store(void **state)
{
    (void)state;
    assert_int_equal(bs_fragment_ra_store(gc_25, sizeof gc_25), 0x100);
    assert_int_equal(bs_fragment_ra_store(gc_27, sizeof gc_27), 0xf8);
    /* A disp8 store (mov %rax, 0x40(%r13)). */
    unsigned char short_store[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x8b, 0x44, 0x24, 0x08, 0x49, 0x89, 0x45, 0x40};
    assert_int_equal(bs_fragment_ra_store(short_store, sizeof short_store), 0x40);
    /* Fragments that store no return address, or not into r13. */
    assert_int_equal(bs_fragment_ra_store(light_bif_25, sizeof light_bif_25), -1);
    assert_int_equal(bs_fragment_ra_store(length_25, sizeof length_25), -1);
    short_store[10] = 0x8b; /* mov 0x40(%r13), %rax: a load */
    assert_int_equal(bs_fragment_ra_store(short_store, sizeof short_store), -1);
    /* No frame first, or cut before the store's displacement. */
    assert_int_equal(bs_fragment_ra_store(gc_25 + 4, sizeof gc_25 - 4), -1);
    assert_int_equal(bs_fragment_ra_store(gc_25, 25), -1);
    assert_int_equal(bs_fragment_ra_store(gc_25, 0), -1);
}

/* What follows the collector's call in global::garbage_collect, OTP 25:
 * sub %rax,%r14; mov 0x58(%r13),%rsp; mov 0x60(%r13),%rbp;
 * mov 0x50(%r13),%r15; leave; ret. */
static const unsigned char gc_25_after[] = {0x49, 0x29, 0xc6, 0x49, 0x8b, 0x65, 0x58, 0x49, 0x8b,
                                            0x6d, 0x60, 0x4d, 0x8b, 0x7d, 0x50, 0xc9, 0xc3};

static void test_stop_load(void **state)
{
    (void)state;
    assert_int_equal(bs_fragment_stop_load(gc_25_after, sizeof gc_25_after), 0x58);
    /* A disp32 load: mov 0x120(%r13), %rsp. */
    const unsigned char far_load[] = {0x49, 0x8b, 0xa5, 0x20, 0x01, 0x00, 0x00};
    assert_int_equal(bs_fragment_stop_load(far_load, sizeof far_load), 0x120);
    /* Loads into other registers (rbp, r15) are not it; cut displacements neither. */
    assert_int_equal(bs_fragment_stop_load(gc_25_after + 7, sizeof gc_25_after - 7), -1);
    assert_int_equal(bs_fragment_stop_load(gc_25_after, 6), -1);
    assert_int_equal(bs_fragment_stop_load(far_load, 6), -1);
    assert_int_equal(bs_fragment_stop_load(gc_25, sizeof gc_25), -1);
}

static void test_fp_load(void **state)
{
    (void)state;
    assert_int_equal(bs_fragment_fp_load(gc_25_after, sizeof gc_25_after), 0x60);
    /* A disp32 load: mov 0x128(%r13), %rbp. */
    const unsigned char far_load[] = {0x49, 0x8b, 0xad, 0x28, 0x01, 0x00, 0x00};
    assert_int_equal(bs_fragment_fp_load(far_load, sizeof far_load), 0x128);
    assert_int_equal(bs_fragment_fp_load(far_load, 6), -1);
    /* The loads of rsp and r15 only: not it. */
    const unsigned char no_rbp[] = {0x49, 0x8b, 0x65, 0x58, 0x4d, 0x8b, 0x7d, 0x50, 0xc9, 0xc3};
    assert_int_equal(bs_fragment_fp_load(no_rbp, sizeof no_rbp), -1);
    assert_int_equal(bs_fragment_fp_load(gc_25, sizeof gc_25), -1);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_light_bif_shapes),
        cmocka_unit_test(test_no_site),
        cmocka_unit_test(test_site_call),
        cmocka_unit_test(test_ra_store),
        cmocka_unit_test(test_stop_load),
        cmocka_unit_test(test_fp_load),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
