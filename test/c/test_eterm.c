/* test_eterm.c — the external-term-format decoder (dist/eterm.h): terms
 * encoded with libei's ei_x_encode_* (and a few from term_to_binary, and
 * hand-made bytes for what ei cannot encode) decode into the expected tree;
 * every truncation and many one-byte corruptions of a term holding every
 * kind fail cleanly with an offset inside the input; the depth, element-count
 * and node caps; map_get on atom and binary keys; the printer's Erlang
 * syntax and its output cap. Every input is decoded from a copy that ends
 * right before an unmapped page: libei is not instrumented, so a read past
 * the input has to crash to be seen. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <ctype.h>
#include <ei.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dist/eterm.h"
#include "test_util.h"

/* ------------------------------- helpers ------------------------------ */

/* n bytes copied to the end of a mapping whose next page is unreadable. */
typedef struct guarded {
    char *map;
    size_t map_len;
    char *data;
} guarded;

static char *guard_copy(guarded *g, const void *src, size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t pages = (n + page - 1) / page + 1;
    g->map_len = pages * page;
    g->map = mmap(NULL, g->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(g->map != MAP_FAILED);
    assert_int_equal(mprotect(g->map + (pages - 1) * page, page, PROT_NONE), 0);
    g->data = g->map + (pages - 1) * page - n;
    if (n)
        memcpy(g->data, src, n);
    return g->data;
}

static void guard_free(guarded *g)
{
    munmap(g->map, g->map_len);
}

/* Decodes n bytes from index start (versioned or not) out of a guarded
 * copy; returns the tree or NULL with the message in err. The copy is gone
 * when this returns, so the tree must stand on its own. */
static bs_eterm_tree *try_decode(const void *bytes, size_t n, int start, int versioned, int *end, char *err,
                                 size_t err_size)
{
    guarded g;
    const char *p = guard_copy(&g, bytes, n);
    int index = start;
    bs_eterm_tree *t = (bs_eterm_tree *)&g; /* must be overwritten */
    int rc = versioned ? bs_eterm_decode_versioned(p, (int)n, &index, &t, err, err_size)
                       : bs_eterm_decode(p, (int)n, &index, &t, err, err_size);
    guard_free(&g);
    if (rc == 0) {
        assert_non_null(t);
        assert_true(index > start && index <= (int)n);
    } else {
        assert_int_equal(rc, -1);
        assert_null(t);
        assert_int_equal(index, start);
    }
    if (end)
        *end = index;
    return rc == 0 ? t : NULL;
}

/* The error's offset ("offset N: ..."); fails the test if it has none. */
static int error_offset(const char *err)
{
    int off = -1;
    assert_int_equal(sscanf(err, "offset %d:", &off), 1);
    assert_non_null(strchr(err, ':'));
    assert_null(strchr(err, '\n'));
    return off;
}

/* Decodes a whole versioned ei_x buffer; it must succeed and use every byte. */
static bs_eterm_tree *decode_x(const ei_x_buff *x)
{
    char err[256];
    int end;
    bs_eterm_tree *t = try_decode(x->buff, (size_t)x->index, 0, 1, &end, err, sizeof err);
    if (!t)
        fail_msg("decode failed: %s", err);
    assert_int_equal(end, x->index);
    return t;
}

/* Expects decoding to fail, the message to contain what and the offset to
 * be want_offset (or anything inside the input if want_offset < 0). */
static void expect_error(const void *bytes, size_t n, int versioned, int want_offset, const char *what)
{
    char err[256];
    bs_eterm_tree *t = try_decode(bytes, n, 0, versioned, NULL, err, sizeof err);
    if (t) {
        bs_eterm_free(t);
        fail_msg("decode should have failed (%s)", what);
    }
    int off = error_offset(err);
    if (!strstr(err, what))
        fail_msg("error \"%s\" does not mention \"%s\"", err, what);
    if (want_offset >= 0 && off != want_offset)
        fail_msg("error \"%s\": offset %d, expected %d", err, off, want_offset);
    assert_true(off >= 0 && off <= (int)n);
}

static void new_x(ei_x_buff *x)
{
    assert_int_equal(ei_x_new_with_version(x), 0);
}

/* The printed form of t (cap 4096). */
static const char *show(const bs_eterm *t)
{
    static char buf[4097]; /* test helper: one at a time */
    bs_eterm_format(buf, sizeof buf, t);
    return buf;
}

static void expect_print(const ei_x_buff *x, const char *want)
{
    bs_eterm_tree *t = decode_x(x);
    assert_string_equal(show(bs_eterm_root(t)), want);
    bs_eterm_free(t);
}

static void expect_print_bytes(const void *bytes, size_t n, const char *want)
{
    char err[256];
    bs_eterm_tree *t = try_decode(bytes, n, 0, 0, NULL, err, sizeof err);
    if (!t)
        fail_msg("decode failed: %s", err);
    assert_string_equal(show(bs_eterm_root(t)), want);
    bs_eterm_free(t);
}

static erlang_pid make_pid(const char *node, unsigned num, unsigned serial, unsigned creation)
{
    erlang_pid p;
    memset(&p, 0, sizeof p);
    snprintf(p.node, sizeof p.node, "%s", node);
    p.num = num;
    p.serial = serial;
    p.creation = creation;
    return p;
}

/* term_to_binary(fun lists:map/2) and term_to_binary(fun() -> ok end) from
 * the shell of OTP 25 (a closure of erl_eval with its environment). */
static const unsigned char EXPORT_FUN[] = {131, 113, 100, 0, 5, 108, 105, 115, 116, 115, 100, 0, 3, 109, 97, 112, 97, 2};
static const unsigned char CLOSURE[] = {
    131, 112, 0,   0,   0,   143, 0,   6,   83,  97,  170, 70,  21,  144, 209, 189, 241, 235, 98,  209, 166,
    235, 8,   0,   0,   0,   43,  0,   0,   0,   1,   100, 0,   8,   101, 114, 108, 95,  101, 118, 97,  108,
    97,  43,  98,  0,   50,  155, 13,  88,  100, 0,   13,  110, 111, 110, 111, 100, 101, 64,  110, 111, 104,
    111, 115, 116, 0,   0,   0,   9,   0,   0,   0,   0,   0,   0,   0,   0,   104, 6,   97,  1,   106, 100,
    0,   4,   110, 111, 110, 101, 100, 0,   4,   110, 111, 110, 101, 116, 0,   0,   0,   0,   108, 0,   0,
    0,   1,   104, 5,   100, 0,   6,   99,  108, 97,  117, 115, 101, 97,  1,   106, 106, 108, 0,   0,   0,
    1,   104, 3,   100, 0,   4,   97,  116, 111, 109, 97,  1,   100, 0,   2,   111, 107, 106, 106};

/* A term with every kind in it, nested: used for truncation and corruption. */
static void encode_everything(ei_x_buff *x)
{
    new_x(x);
    ei_x_encode_map_header(x, 5);
    ei_x_encode_atom(x, "status");
    ei_x_encode_tuple_header(x, 3);
    ei_x_encode_atom(x, "ok");
    ei_x_encode_long(x, 300);
    ei_x_encode_double(x, -2.5);
    ei_x_encode_binary(x, "name", 4);
    ei_x_encode_list_header(x, 6);
    ei_x_encode_atom_len_as(x, "h\xC3\xA9llo", 6, ERLANG_UTF8, ERLANG_UTF8);
    ei_x_encode_string(x, "abc");
    ei_x_encode_longlong(x, -1234567890123LL);
    ei_x_encode_ulonglong(x, ULLONG_MAX);
    ei_x_encode_binary(x, "\0\1\2", 3);
    ei_x_encode_bitstring(x, "\xFF\x80", 0, 9);
    ei_x_encode_atom(x, "tail");
    ei_x_encode_atom(x, "who");
    erlang_pid pid = make_pid("beamspy@host", 81, 2, 7);
    ei_x_encode_pid(x, &pid);
    ei_x_encode_tuple_header(x, 4);
    erlang_ref ref;
    memset(&ref, 0, sizeof ref);
    snprintf(ref.node, sizeof ref.node, "a@b");
    ref.len = 3;
    ref.n[0] = 1, ref.n[1] = 2, ref.n[2] = 3;
    ref.creation = 5;
    ei_x_encode_ref(x, &ref);
    erlang_port port;
    memset(&port, 0, sizeof port);
    snprintf(port.node, sizeof port.node, "a@b");
    port.id = 42;
    port.creation = 5;
    ei_x_encode_port(x, &port);
    ei_x_append_buf(x, (const char *)EXPORT_FUN + 1, sizeof EXPORT_FUN - 1);
    ei_x_append_buf(x, (const char *)CLOSURE + 1, sizeof CLOSURE - 1);
    ei_x_encode_atom_len_as(x, "\xE9t\xE9", 3, ERLANG_LATIN1, ERLANG_LATIN1);
    ei_x_encode_empty_list(x);
    ei_x_encode_empty_list(x);
}

/* -------------------------------- kinds ------------------------------- */

static void test_integers(void **state)
{
    (void)state;
    const long long values[] = {0, 1, 255, 256, -1, INT_MAX, INT_MIN, 1LL << 40, -(1LL << 40), LLONG_MAX, LLONG_MIN};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        ei_x_buff x;
        new_x(&x);
        ei_x_encode_longlong(&x, values[i]);
        bs_eterm_tree *t = decode_x(&x);
        int ok = 0;
        assert_int_equal(bs_eterm_kind_of(bs_eterm_root(t)), BS_ET_INT);
        assert_true(bs_eterm_int(bs_eterm_root(t), &ok) == values[i]);
        assert_true(ok);
        char want[32];
        snprintf(want, sizeof want, "%lld", values[i]);
        assert_string_equal(show(bs_eterm_root(t)), want);
        bs_eterm_free(t);
        ei_x_free(&x);
    }
    /* 2^63 .. 2^64-1 and beyond: OTHER (big), printed exactly */
    ei_x_buff x;
    new_x(&x);
    ei_x_encode_ulonglong(&x, ULLONG_MAX);
    bs_eterm_tree *t = decode_x(&x);
    int ok = 1;
    assert_int_equal(bs_eterm_kind_of(bs_eterm_root(t)), BS_ET_OTHER);
    assert_int_equal(bs_eterm_other_kind(bs_eterm_root(t)), BS_ET_OTHER_BIG);
    assert_true(bs_eterm_int(bs_eterm_root(t), &ok) == 0 && !ok);
    assert_string_equal(show(bs_eterm_root(t)), "16#FFFFFFFFFFFFFFFF");
    bs_eterm_free(t);
    ei_x_free(&x);
    const unsigned char two_64[] = {'n', 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    expect_print_bytes(two_64, sizeof two_64, "16#10000000000000000");
    const unsigned char minus_two_64[] = {'o', 0, 0, 0, 10, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0};
    expect_print_bytes(minus_two_64, sizeof minus_two_64, "-16#10000000000000000");
    const unsigned char big_zero[] = {'n', 3, 1, 0, 0, 0};
    expect_print_bytes(big_zero, sizeof big_zero, "0"); /* fits: INT */
    const unsigned char big_in_range[] = {'o', 0, 0, 0, 12, 1, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    expect_print_bytes(big_in_range, sizeof big_in_range, "-5");
}

static void test_floats(void **state)
{
    (void)state;
    const struct {
        double value;
        const char *text;
    } cases[] = {{1.5, "1.5"},        {0.1, "0.1"},       {-2.5e-7, "-2.5e-7"}, {1e100, "1.0e100"},
                 {100.0, "100.0"},    {1e16, "1.0e16"},   {0.0, "0.0"},         {-0.0, "-0.0"},
                 {1.0 / 3, "0.3333333333333333"}, {123456789.125, "123456789.125"}, {0.001, "0.001"},
                 {1e-4, "0.0001"}, {1e21, "1.0e21"}, {123e18, "1.23e20"}, {5e-324, "5.0e-324"},
                 {1.7976931348623157e308, "1.7976931348623157e308"}, {1000.0, "1.0e3"}, {12000.0, "1.2e4"}, {120.0, "120.0"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ei_x_buff x;
        new_x(&x);
        ei_x_encode_double(&x, cases[i].value);
        bs_eterm_tree *t = decode_x(&x);
        int ok = 0;
        assert_int_equal(bs_eterm_kind_of(bs_eterm_root(t)), BS_ET_FLOAT);
        assert_true(bs_eterm_float(bs_eterm_root(t), &ok) == cases[i].value && ok);
        assert_string_equal(show(bs_eterm_root(t)), cases[i].text);
        bs_eterm_free(t);
        ei_x_free(&x);
    }
    /* the old FLOAT_EXT: 31 bytes of "%.20e" text */
    unsigned char old[32] = {'c'};
    snprintf((char *)old + 1, 31, "%.20e", 1.5);
    expect_print_bytes(old, sizeof old, "1.5");
    /* its text filled to the end with digits: libei's sscanf must stop there */
    memset(old + 1, '7', 31);
    expect_print_bytes(old, sizeof old, "7.777777777777777e30");
    memset(old + 1, 'x', 31);
    expect_error(old, sizeof old, 0, 0, "float");
}

static void test_atoms(void **state)
{
    (void)state;
    ei_x_buff x;
    new_x(&x);
    ei_x_encode_tuple_header(&x, 6);
    ei_x_encode_atom(&x, "ok");
    ei_x_encode_atom(&x, "");
    ei_x_encode_atom_len_as(&x, "h\xC3\xA9llo \xE2\x9C\x93", 10, ERLANG_UTF8, ERLANG_UTF8);
    ei_x_encode_atom_len_as(&x, "\xE9t\xE9", 3, ERLANG_LATIN1, ERLANG_LATIN1); /* Latin-1 on the wire */
    ei_x_encode_atom(&x, "Hello World");
    ei_x_encode_atom_len(&x, "a\0b", 3);
    bs_eterm_tree *t = decode_x(&x);
    const bs_eterm *r = bs_eterm_root(t);
    assert_int_equal(bs_eterm_kind_of(r), BS_ET_TUPLE);
    assert_int_equal(bs_eterm_size(r), 6);
    assert_true(bs_eterm_is_atom(bs_eterm_item(r, 0), "ok"));
    assert_false(bs_eterm_is_atom(bs_eterm_item(r, 0), "o"));
    assert_false(bs_eterm_is_atom(bs_eterm_item(r, 0), "okk"));
    assert_true(bs_eterm_is_atom(bs_eterm_item(r, 1), ""));
    assert_string_equal(bs_eterm_text(bs_eterm_item(r, 2)), "h\xC3\xA9llo \xE2\x9C\x93");
    assert_int_equal(bs_eterm_text_len(bs_eterm_item(r, 2)), 10);
    assert_string_equal(bs_eterm_text(bs_eterm_item(r, 3)), "\xC3\xA9t\xC3\xA9"); /* now UTF-8 */
    assert_int_equal(bs_eterm_text_len(bs_eterm_item(r, 3)), 5);
    assert_int_equal(bs_eterm_text_len(bs_eterm_item(r, 5)), 3);
    assert_memory_equal(bs_eterm_text(bs_eterm_item(r, 5)), "a\0b", 4);
    assert_string_equal(show(r), "{ok,'','h\xC3\xA9llo \xE2\x9C\x93','\xC3\xA9t\xC3\xA9','Hello World','a\\x00b'}");
    bs_eterm_free(t);
    ei_x_free(&x);

    /* raw encodings: every atom tag, and the length limits */
    const unsigned char small_latin1[] = {'s', 2, 'h', 'i'};
    expect_print_bytes(small_latin1, sizeof small_latin1, "hi");
    const unsigned char old_atom[] = {'d', 0, 3, 'e', 'n', 'd'};
    expect_print_bytes(old_atom, sizeof old_atom, "'end'"); /* a reserved word */
    static unsigned char longest[3 + 1020];
    longest[0] = 'v', longest[1] = 1020 >> 8, longest[2] = 1020 & 0xFF;
    memset(longest + 3, 'a', 1020);
    bs_eterm_tree *lt = try_decode(longest, sizeof longest, 0, 0, NULL, NULL, 0);
    assert_non_null(lt);
    assert_int_equal(bs_eterm_text_len(bs_eterm_root(lt)), 1020);
    bs_eterm_free(lt);
    static unsigned char too_long[3 + 1021];
    too_long[0] = 'v', too_long[1] = 1021 >> 8, too_long[2] = 1021 & 0xFF;
    memset(too_long + 3, 'a', 1021);
    expect_error(too_long, sizeof too_long, 0, 0, "too long");
    static unsigned char latin1[3 + 600];
    latin1[0] = 'd', latin1[1] = 600 >> 8, latin1[2] = 600 & 0xFF;
    memset(latin1 + 3, 0xE9, 600); /* 1200 bytes as UTF-8 */
    expect_error(latin1, sizeof latin1, 0, 0, "too long");
    latin1[1] = 0, latin1[2] = 255;
    lt = try_decode(latin1, 3 + 255, 0, 0, NULL, NULL, 0);
    assert_non_null(lt);
    assert_int_equal(bs_eterm_text_len(bs_eterm_root(lt)), 510);
    bs_eterm_free(lt);
}

static void test_binaries_and_strings(void **state)
{
    (void)state;
    ei_x_buff x;
    new_x(&x);
    ei_x_encode_list_header(&x, 7);
    ei_x_encode_binary(&x, "a\0b", 3);
    ei_x_encode_binary(&x, "", 0);
    ei_x_encode_string(&x, "abc");
    ei_x_encode_string(&x, "");
    ei_x_encode_string_len(&x, "\x01\x02\xFF", 3);
    ei_x_encode_binary(&x, "h\xC3\xA9llo\n\"q\\", 10);
    ei_x_encode_binary(&x, "\xC3", 1); /* not UTF-8 */
    ei_x_encode_empty_list(&x);
    bs_eterm_tree *t = decode_x(&x);
    const bs_eterm *r = bs_eterm_root(t);
    assert_int_equal(bs_eterm_kind_of(r), BS_ET_LIST);
    assert_int_equal(bs_eterm_size(r), 7);
    assert_null(bs_eterm_tail(r));
    const bs_eterm *bin = bs_eterm_item(r, 0);
    assert_int_equal(bs_eterm_kind_of(bin), BS_ET_BINARY);
    assert_int_equal(bs_eterm_text_len(bin), 3);
    assert_memory_equal(bs_eterm_text(bin), "a\0b", 4); /* NUL after the bytes */
    assert_int_equal(bs_eterm_kind_of(bs_eterm_item(r, 1)), BS_ET_BINARY);
    assert_string_equal(bs_eterm_text(bs_eterm_item(r, 1)), "");
    assert_int_equal(bs_eterm_kind_of(bs_eterm_item(r, 2)), BS_ET_STRING);
    assert_string_equal(bs_eterm_text(bs_eterm_item(r, 2)), "abc");
    assert_int_equal(bs_eterm_size(bs_eterm_item(r, 2)), 0);
    /* "" is [] on the wire */
    assert_int_equal(bs_eterm_kind_of(bs_eterm_item(r, 3)), BS_ET_LIST);
    assert_int_equal(bs_eterm_size(bs_eterm_item(r, 3)), 0);
    assert_string_equal(show(r), "[<<97,0,98>>,<<>>,\"abc\",[],[1,2,255],<<\"h\xC3\xA9llo\\n\\\"q\\\\\"/utf8>>,<<195>>]");
    bs_eterm_free(t);
    ei_x_free(&x);
}

/* bs_eterm_describe, what the tool says of a term a node sent (a badrpc
 * reason, an unexpected reply) in place of libei's recursive printer: a
 * term nested 100,000 deep is refused at depth 256 with the reason, the
 * index left where it was; an ordinary one is formatted and skipped. */
static void test_describe_bounded(void **state)
{
    (void)state;
    ei_x_buff x;
    assert_int_equal(ei_x_new(&x), 0);
    for (int k = 0; k < 100000; k++)
        assert_int_equal(ei_x_encode_list_header(&x, 1), 0);
    assert_int_equal(ei_x_encode_atom(&x, "a"), 0);
    for (int k = 0; k < 100000; k++)
        assert_int_equal(ei_x_encode_empty_list(&x), 0);
    char out[200];
    int i = 0;
    assert_int_equal(bs_eterm_describe(x.buff, x.index, &i, out, sizeof out), -1);
    assert_int_equal(i, 0);
    assert_non_null(strstr(out, "(unreadable term: offset "));
    assert_non_null(strstr(out, "nested more than 256 deep"));
    ei_x_free(&x);

    assert_int_equal(ei_x_new(&x), 0);
    assert_int_equal(ei_x_encode_tuple_header(&x, 2), 0);
    assert_int_equal(ei_x_encode_atom(&x, "EXIT"), 0);
    assert_int_equal(ei_x_encode_list_header(&x, 2), 0);
    assert_int_equal(ei_x_encode_long(&x, 1), 0);
    assert_int_equal(ei_x_encode_atom(&x, "undef"), 0);
    assert_int_equal(ei_x_encode_empty_list(&x), 0);
    i = 0;
    assert_int_equal(bs_eterm_describe(x.buff, x.index, &i, out, sizeof out), 0);
    assert_string_equal(out, "{'EXIT',[1,undef]}");
    assert_int_equal(i, x.index);
    ei_x_free(&x);
}

static void test_nested_and_map_get(void **state)
{
    (void)state;
    ei_x_buff x;
    new_x(&x);
    /* #{status => running, <<"name">> => {ok, [1, 2.5, x]}, 7 => seven,
     *   nested => #{deep => [{a, b}]}} */
    ei_x_encode_map_header(&x, 4);
    ei_x_encode_atom(&x, "status");
    ei_x_encode_atom(&x, "running");
    ei_x_encode_binary(&x, "name", 4);
    ei_x_encode_tuple_header(&x, 2);
    ei_x_encode_atom(&x, "ok");
    ei_x_encode_list_header(&x, 3);
    ei_x_encode_long(&x, 1);
    ei_x_encode_double(&x, 2.5);
    ei_x_encode_atom(&x, "x");
    ei_x_encode_empty_list(&x);
    ei_x_encode_long(&x, 7);
    ei_x_encode_atom(&x, "seven");
    ei_x_encode_atom(&x, "nested");
    ei_x_encode_map_header(&x, 1);
    ei_x_encode_atom(&x, "deep");
    ei_x_encode_list_header(&x, 1);
    ei_x_encode_tuple_header(&x, 2);
    ei_x_encode_atom(&x, "a");
    ei_x_encode_atom(&x, "b");
    ei_x_encode_empty_list(&x);
    bs_eterm_tree *t = decode_x(&x);
    const bs_eterm *m = bs_eterm_root(t);
    assert_int_equal(bs_eterm_kind_of(m), BS_ET_MAP);
    assert_int_equal(bs_eterm_size(m), 4);
    assert_true(bs_eterm_is_atom(bs_eterm_map_get(m, "status"), "running"));
    const bs_eterm *name = bs_eterm_map_get(m, "name"); /* a binary key */
    const bs_eterm *list = bs_eterm_tagged(name, "ok");
    assert_non_null(list);
    assert_null(bs_eterm_tagged(name, "error"));
    assert_int_equal(bs_eterm_size(list), 3);
    int ok = 0;
    assert_true(bs_eterm_int(bs_eterm_item(list, 0), &ok) == 1 && ok);
    assert_true(bs_eterm_float(bs_eterm_item(list, 1), &ok) == 2.5 && ok);
    assert_true(bs_eterm_is_atom(bs_eterm_item(list, 2), "x"));
    assert_null(bs_eterm_item(list, 3));
    assert_null(bs_eterm_map_get(m, "seven")); /* values are not keys */
    assert_null(bs_eterm_map_get(m, "7"));      /* integers never match */
    assert_null(bs_eterm_map_get(m, "nam"));
    const bs_eterm *deep = bs_eterm_map_get(bs_eterm_map_get(m, "nested"), "deep");
    assert_true(bs_eterm_is_atom(bs_eterm_item(bs_eterm_item(deep, 0), 1), "b"));
    /* the map's items in order */
    assert_true(bs_eterm_is_atom(bs_eterm_map_key(m, 0), "status"));
    assert_true(bs_eterm_is_atom(bs_eterm_map_value(m, 0), "running"));
    assert_int_equal(bs_eterm_kind_of(bs_eterm_map_key(m, 1)), BS_ET_BINARY);
    assert_true(bs_eterm_map_key(m, 2) == bs_eterm_item(m, 4));
    assert_true(bs_eterm_map_value(m, 3) == bs_eterm_item(m, 7));
    assert_null(bs_eterm_map_key(m, 4));
    assert_null(bs_eterm_item(m, 8));
    assert_string_equal(show(m), "#{status => running,<<\"name\">> => {ok,[1,2.5,x]},7 => seven,"
                                 "nested => #{deep => [{a,b}]}}");
    bs_eterm_free(t);
    ei_x_free(&x);
}

static void test_improper_lists(void **state)
{
    (void)state;
    ei_x_buff x;
    new_x(&x);
    ei_x_encode_list_header(&x, 2);
    ei_x_encode_long(&x, 1);
    ei_x_encode_long(&x, 2);
    ei_x_encode_long(&x, 3); /* the tail */
    bs_eterm_tree *t = decode_x(&x);
    const bs_eterm *r = bs_eterm_root(t);
    assert_int_equal(bs_eterm_size(r), 2);
    int ok = 0;
    assert_true(bs_eterm_int(bs_eterm_tail(r), &ok) == 3 && ok);
    assert_null(bs_eterm_item(r, 2)); /* the tail is not an element */
    assert_string_equal(show(r), "[1,2|3]");
    bs_eterm_free(t);
    ei_x_free(&x);
    /* a string as the tail stays a string; a list tail is not merged */
    const unsigned char string_tail[] = {'l', 0, 0, 0, 1, 'a', 1, 'k', 0, 2, 'b', 'c'};
    expect_print_bytes(string_tail, sizeof string_tail, "[1|\"bc\"]");
    /* an empty STRING_EXT is [], also as a tail (a proper list then) */
    const unsigned char empty_string_tail[] = {'l', 0, 0, 0, 1, 'a', 1, 'k', 0, 0};
    bs_eterm_tree *et = try_decode(empty_string_tail, sizeof empty_string_tail, 0, 0, NULL, NULL, 0);
    assert_non_null(et);
    assert_null(bs_eterm_tail(bs_eterm_root(et)));
    assert_string_equal(show(bs_eterm_root(et)), "[1]");
    bs_eterm_free(et);
    const unsigned char empty_string[] = {'k', 0, 0};
    et = try_decode(empty_string, sizeof empty_string, 0, 0, NULL, NULL, 0);
    assert_int_equal(bs_eterm_kind_of(bs_eterm_root(et)), BS_ET_LIST);
    assert_int_equal(bs_eterm_size(bs_eterm_root(et)), 0);
    bs_eterm_free(et);
    const unsigned char list_tail[] = {'l', 0, 0, 0, 1, 'a', 1, 'l', 0, 0, 0, 1, 'a', 2, 'j'};
    expect_print_bytes(list_tail, sizeof list_tail, "[1|[2]]");
    const unsigned char empty_list_ext[] = {'l', 0, 0, 0, 0, 'j'};
    expect_error(empty_list_ext, sizeof empty_list_ext, 0, 0, "list of 0 elements");
}

static void test_pids_refs_ports_funs(void **state)
{
    (void)state;
    ei_x_buff x;
    new_x(&x);
    ei_x_encode_list_header(&x, 7);
    erlang_pid pid = make_pid("beamspy@host", 81, 3, 1);
    ei_x_encode_pid(&x, &pid);
    erlang_pid pid2 = make_pid("a-b@c", 0x7FFF, 0x1FFF, 0x12345678);
    ei_x_encode_pid(&x, &pid2);
    erlang_ref ref;
    memset(&ref, 0, sizeof ref);
    snprintf(ref.node, sizeof ref.node, "n@h");
    ref.len = 5;
    ref.creation = 9;
    ei_x_encode_ref(&x, &ref);
    erlang_port port;
    memset(&port, 0, sizeof port);
    snprintf(port.node, sizeof port.node, "n@h");
    port.id = 7;
    port.creation = 9;
    ei_x_encode_port(&x, &port);
    ei_x_append_buf(&x, (const char *)EXPORT_FUN + 1, sizeof EXPORT_FUN - 1);
    ei_x_append_buf(&x, (const char *)CLOSURE + 1, sizeof CLOSURE - 1);
    ei_x_encode_bitstring(&x, "\xAB\xC0", 0, 13);
    ei_x_encode_empty_list(&x);
    bs_eterm_tree *t = decode_x(&x);
    const bs_eterm *r = bs_eterm_root(t);
    const bs_eterm_pid *p = bs_eterm_pid_of(bs_eterm_item(r, 0));
    assert_non_null(p);
    assert_string_equal(p->node, "beamspy@host");
    assert_int_equal(p->number, 81);
    assert_int_equal(p->serial, 3);
    assert_int_equal(p->creation, 1);
    p = bs_eterm_pid_of(bs_eterm_item(r, 1));
    assert_int_equal(p->number, 0x7FFF);
    assert_int_equal(p->serial, 0x1FFF);
    assert_int_equal(p->creation, 0x12345678);
    assert_null(bs_eterm_pid_of(bs_eterm_item(r, 2)));
    assert_int_equal(bs_eterm_other_kind(bs_eterm_item(r, 2)), BS_ET_OTHER_REF);
    assert_int_equal(bs_eterm_other_kind(bs_eterm_item(r, 3)), BS_ET_OTHER_PORT);
    assert_int_equal(bs_eterm_other_kind(bs_eterm_item(r, 4)), BS_ET_OTHER_FUN);
    assert_int_equal(bs_eterm_other_kind(bs_eterm_item(r, 5)), BS_ET_OTHER_FUN);
    assert_int_equal(bs_eterm_other_kind(bs_eterm_item(r, 6)), BS_ET_OTHER_BITSTRING);
    assert_int_equal(bs_eterm_other_kind(bs_eterm_item(r, 0)), BS_ET_OTHER_NONE);
    assert_string_equal(show(r), "[<beamspy@host.81.3>,<'a-b@c'.32767.8191>,#Ref<...>,#Port<...>,#Fun<...>,"
                                 "#Fun<...>,#Bitstring<13 bits>]");
    bs_eterm_free(t);
    ei_x_free(&x);

    /* straight from term_to_binary */
    expect_print_bytes(EXPORT_FUN + 1, sizeof EXPORT_FUN - 1, "#Fun<...>");
    bs_eterm_tree *ft = try_decode(CLOSURE, sizeof CLOSURE, 0, 1, NULL, NULL, 0);
    assert_non_null(ft);
    bs_eterm_free(ft);
    /* the old pid, port and reference encodings */
    const unsigned char old_pid[] = {'g', 's', 1, 'n', 0, 0, 0, 5, 0, 0, 0, 6, 2};
    expect_print_bytes(old_pid, sizeof old_pid, "<n.5.6>");
    const unsigned char old_port[] = {'f', 's', 1, 'n', 0, 0, 0, 5, 2};
    expect_print_bytes(old_port, sizeof old_port, "#Port<...>");
    const unsigned char v4_port[] = {'x', 's', 1, 'n', 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 2};
    expect_print_bytes(v4_port, sizeof v4_port, "#Port<...>");
    const unsigned char old_ref[] = {'e', 's', 1, 'n', 0, 0, 0, 5, 2};
    expect_print_bytes(old_ref, sizeof old_ref, "#Ref<...>");
    const unsigned char new_ref[] = {'r', 0, 2, 's', 1, 'n', 1, 0, 0, 0, 5, 0, 0, 0, 6};
    expect_print_bytes(new_ref, sizeof new_ref, "#Ref<...>");
    const unsigned char too_many_ids[] = {'Z', 0, 6, 's', 1, 'n', 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                          0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    expect_error(too_many_ids, sizeof too_many_ids, 0, 0, "at most 5");
    const unsigned char pid_node_not_atom[] = {'X', 'a', 1, 0, 0, 0, 5, 0, 0, 0, 6, 0, 0, 0, 2};
    expect_error(pid_node_not_atom, sizeof pid_node_not_atom, 0, 1, "not an atom");
    /* a closure whose size field is one byte off either way */
    unsigned char bad[sizeof CLOSURE + 1];
    memcpy(bad, CLOSURE, sizeof CLOSURE);
    bad[sizeof CLOSURE] = 'j';
    bad[5] = 144;
    expect_error(bad, sizeof bad, 1, 1, "fun's size");
    bad[5] = 142;
    expect_error(bad, sizeof CLOSURE, 1, 1, "fun's size");
    /* a closure whose module is not an atom */
    memcpy(bad, CLOSURE, sizeof CLOSURE);
    bad[31] = 'a'; /* 'd' of erl_eval becomes a small integer */
    expect_error(bad, sizeof CLOSURE, 1, 31, "a fun's module is not an atom");
}

/* ------------------------------- errors -------------------------------- */

static void test_every_truncation_fails_cleanly(void **state)
{
    (void)state;
    ei_x_buff x;
    encode_everything(&x);
    int n = x.index;
    bs_eterm_tree *whole = decode_x(&x);
    assert_string_equal(show(bs_eterm_root(whole)),
                        "#{status => {ok,300,-2.5},<<\"name\">> => ['h\xC3\xA9llo',\"abc\",-1234567890123,"
                        "16#FFFFFFFFFFFFFFFF,<<0,1,2>>,#Bitstring<9 bits>|tail],who => <beamspy@host.81.2>,"
                        "{#Ref<...>,#Port<...>,#Fun<...>,#Fun<...>} => '\xC3\xA9t\xC3\xA9',[] => []}");
    bs_eterm_free(whole);
    for (int len = 0; len < n; len++) {
        for (int versioned = 0; versioned <= 1; versioned++) {
            int start = versioned ? 0 : 1;
            if (start > len)
                continue;
            char err[256];
            bs_eterm_tree *t = try_decode(x.buff, (size_t)len, start, versioned, NULL, err, sizeof err);
            if (t) {
                bs_eterm_free(t);
                fail_msg("a prefix of %d of %d bytes decoded", len, n);
            }
            int off = error_offset(err);
            if (off < start || off > len)
                fail_msg("prefix of %d bytes: offset %d outside [%d, %d]: %s", len, off, start, len, err);
        }
    }
    ei_x_free(&x);
}

/* Each byte replaced by a few values: decoded or refused, never a crash,
 * and a decoded tree prints. */
static void test_corrupted_bytes(void **state)
{
    (void)state;
    ei_x_buff x;
    encode_everything(&x);
    int n = x.index;
    unsigned char *copy = malloc((size_t)n);
    assert_non_null(copy);
    int decoded = 0, refused = 0;
    for (int i = 1; i < n; i++) {
        unsigned char orig = (unsigned char)x.buff[i];
        const unsigned char values[] = {0x00, 0xFF, 0x7F, 0x80, (unsigned char)(orig + 1), (unsigned char)(orig - 1),
                                        'j', 'h', 'l', 't', 'm', 'X', 'p'};
        for (size_t v = 0; v < sizeof values; v++) {
            memcpy(copy, x.buff, (size_t)n);
            copy[i] = values[v];
            char err[256];
            int end = 0;
            bs_eterm_tree *t = try_decode(copy, (size_t)n, 0, 1, &end, err, sizeof err);
            if (t) {
                decoded++;
                char out[256];
                size_t len = bs_eterm_format(out, sizeof out, bs_eterm_root(t));
                assert_true(len < sizeof out && strlen(out) == len);
                bs_eterm_free(t);
            } else {
                refused++;
                int off = error_offset(err);
                assert_true(off >= 0 && off <= n);
            }
        }
    }
    assert_true(decoded > 0 && refused > 0);
    free(copy);
    ei_x_free(&x);
}

static void test_depth_cap(void **state)
{
    (void)state;
    size_t deepest = tu_small() ? 20000 : 100000;
    unsigned char *buf = malloc(deepest * 2 + 3);
    assert_non_null(buf);
    for (size_t levels = BS_ETERM_MAX_DEPTH - 1; levels <= BS_ETERM_MAX_DEPTH + 1; levels++) {
        for (size_t i = 0; i < levels; i++)
            buf[2 * i] = 'h', buf[2 * i + 1] = 1;
        buf[2 * levels] = 'w', buf[2 * levels + 1] = 1, buf[2 * levels + 2] = 'z';
        char err[256];
        bs_eterm_tree *t = try_decode(buf, 2 * levels + 3, 0, 0, NULL, err, sizeof err);
        if (levels <= BS_ETERM_MAX_DEPTH) { /* the atom at depth 256 is fine */
            assert_non_null(t);
            const bs_eterm *e = bs_eterm_root(t);
            for (size_t i = 0; i < levels; i++)
                e = bs_eterm_item(e, 0);
            assert_true(bs_eterm_is_atom(e, "z"));
            char out[64];
            assert_int_equal(bs_eterm_format(out, sizeof out, bs_eterm_root(t)), 63);
            bs_eterm_free(t);
        } else {
            assert_null(t);
            assert_int_equal(error_offset(err), (int)(2 * levels));
            assert_non_null(strstr(err, "nested more than 256 deep"));
        }
    }
    /* far deeper: refused at the same place, without deep recursion */
    for (size_t i = 0; i < deepest; i++)
        buf[2 * i] = 'h', buf[2 * i + 1] = 1;
    buf[2 * deepest] = 'j';
    expect_error(buf, 2 * deepest + 1, 0, 2 * (BS_ETERM_MAX_DEPTH + 1), "deep");
    /* lists and maps count the same way */
    unsigned char lists[6 * 300];
    size_t k = 0;
    for (int i = 0; i < 290; i++) {
        lists[k++] = 'l', lists[k++] = 0, lists[k++] = 0, lists[k++] = 0, lists[k++] = 1;
    }
    lists[k++] = 'j';
    for (int i = 0; i < 290; i++)
        lists[k++] = 'j';
    expect_error(lists, k, 0, 5 * 257, "deep");
    free(buf);
}

static void test_counts_and_memory_caps(void **state)
{
    (void)state;
    /* headers that promise more than the input can hold: refused at the header */
    const unsigned char tuple[] = {'h', 255, 'j', 'j', 'j'};
    expect_error(tuple, sizeof tuple, 0, 0, "tuple of 255 elements does not fit in the 3 bytes left");
    const unsigned char huge_tuple[] = {'i', 0xFF, 0xFF, 0xFF, 0xFF, 'j'};
    expect_error(huge_tuple, sizeof huge_tuple, 0, 0, "more than 2^31");
    const unsigned char big_tuple[] = {'i', 0x7F, 0xFF, 0xFF, 0xFF, 'j'};
    expect_error(big_tuple, sizeof big_tuple, 0, 0, "does not fit");
    const unsigned char map[] = {'t', 0x40, 0, 0, 0, 'j', 'j'};
    expect_error(map, sizeof map, 0, 0, "map of 2147483648 elements");
    const unsigned char list[] = {'l', 0, 0, 0, 2, 'j', 'j'}; /* 2 elements and a tail: 3 terms */
    expect_error(list, sizeof list, 0, 0, "does not fit");
    const unsigned char binary[] = {'m', 0xFF, 0xFF, 0xFF, 0xFF, 1};
    expect_error(binary, sizeof binary, 0, 0, "more than 2^31");
    const unsigned char short_binary[] = {'m', 0, 0, 0x10, 0, 1, 2, 3};
    expect_error(short_binary, sizeof short_binary, 0, 0, "binary needs 4101 bytes, only 8 left");
    const unsigned char big[] = {'o', 0x7F, 0xFF, 0xFF, 0xFF, 0, 1};
    expect_error(big, sizeof big, 0, 0, "bignum needs");
    /* what enclosing headers still owe counts too: the inner tuple's 3
     * elements and the outer tuple's last 2 need 5 bytes, there are 3 */
    const unsigned char owed[] = {'h', 3, 'h', 3, 'j', 'j', 'j'};
    expect_error(owed, sizeof owed, 0, 2, "does not fit");
    /* a fun with 4 billion free variables */
    unsigned char fun[sizeof CLOSURE];
    memcpy(fun, CLOSURE, sizeof fun);
    fun[27] = fun[28] = fun[29] = fun[30] = 0xFF;
    expect_error(fun, sizeof fun, 1, 1, "does not fit");

    /* the worst cases for memory per input byte stay well inside the cap */
    size_t n = tu_small() ? 20000 : 1000000;
    unsigned char *buf = malloc(n + 6);
    assert_non_null(buf);
    buf[0] = 'l', buf[1] = (unsigned char)(n >> 24), buf[2] = (unsigned char)(n >> 16);
    buf[3] = (unsigned char)(n >> 8), buf[4] = (unsigned char)n;
    memset(buf + 5, 'j', n + 1);
    bs_eterm_tree *t = try_decode(buf, n + 6, 0, 0, NULL, NULL, 0);
    assert_non_null(t);
    assert_int_equal(bs_eterm_size(bs_eterm_root(t)), n);
    assert_true(bs_eterm_tree_memory(t) >= 16 * n);
    assert_true(bs_eterm_tree_memory(t) <= 20 * (n + 6) + BS_ETERM_MEMORY_SLACK);
    bs_eterm_free(t);
    /* a tuple of empty atoms: two bytes each, each with its own text */
    buf[0] = 'i';
    size_t atoms = n / 2;
    buf[1] = (unsigned char)(atoms >> 24), buf[2] = (unsigned char)(atoms >> 16);
    buf[3] = (unsigned char)(atoms >> 8), buf[4] = (unsigned char)atoms;
    for (size_t i = 0; i < atoms; i++)
        buf[5 + 2 * i] = 's', buf[6 + 2 * i] = 0;
    t = try_decode(buf, 5 + 2 * atoms, 0, 0, NULL, NULL, 0);
    assert_non_null(t);
    assert_true(bs_eterm_is_atom(bs_eterm_item(bs_eterm_root(t), atoms - 1), ""));
    assert_true(bs_eterm_tree_memory(t) <= 20 * (5 + 2 * atoms) + BS_ETERM_MEMORY_SLACK);
    bs_eterm_free(t);
    free(buf);
}

static void test_node_cap(void **state)
{
    (void)state;
    /* a list of 16M elements: refused at its header, nothing allocated */
    size_t n = BS_ETERM_MAX_NODES;
    unsigned char *buf = malloc(n + 6);
    assert_non_null(buf);
    buf[0] = 'l', buf[1] = (unsigned char)(n >> 24), buf[2] = (unsigned char)(n >> 16);
    buf[3] = (unsigned char)(n >> 8), buf[4] = (unsigned char)n;
    memset(buf + 5, 'j', n + 1);
    expect_error(buf, n + 6, 0, 0, "more than 16777216 subterms");
    free(buf);
}

static void test_error_messages(void **state)
{
    (void)state;
    const unsigned char unknown[] = {'h', 2, 'j', 7};
    expect_error(unknown, sizeof unknown, 0, 3, "unknown term tag 7");
    const unsigned char compressed[] = {131, 'P', 0, 0, 0, 1, 0};
    expect_error(compressed, sizeof compressed, 1, 1, "compressed");
    expect_error(compressed, sizeof compressed, 0, 0, "version byte 131 where a term should start");
    const unsigned char no_version[] = {'j'};
    expect_error(no_version, sizeof no_version, 1, 0, "expected the version byte 131, found 106");
    expect_error(no_version, 0, 1, 0, "ends where the version byte should be");
    expect_error(no_version, 0, 0, 0, "ends where a term should start");
    const unsigned char old_fun[] = {'u', 0, 0, 0, 0};
    expect_error(old_fun, sizeof old_fun, 0, 0, "FUN_EXT");
    const unsigned char cache_ref[] = {'R', 0};
    expect_error(cache_ref, sizeof cache_ref, 0, 0, "atom cache");
    const unsigned char bad_bits[] = {'M', 0, 0, 0, 1, 0, 0xFF}; /* one byte, 0 bits in it */
    expect_error(bad_bits, sizeof bad_bits, 0, 0, "bit string");

    /* bad arguments */
    char err[128];
    bs_eterm_tree *t = NULL;
    int index = 0;
    assert_int_equal(bs_eterm_decode("j", 1, NULL, &t, err, sizeof err), -1);
    assert_string_equal(err, "offset 0: invalid arguments (buffer, length or index)");
    assert_int_equal(bs_eterm_decode("j", 1, &index, NULL, err, sizeof err), -1);
    index = 2;
    assert_int_equal(bs_eterm_decode("j", 1, &index, &t, err, sizeof err), -1);
    index = -1;
    assert_int_equal(bs_eterm_decode("j", 1, &index, &t, err, sizeof err), -1);
    index = 0;
    assert_int_equal(bs_eterm_decode(NULL, 1, &index, &t, err, sizeof err), -1);
    assert_int_equal(bs_eterm_decode("j", -1, &index, &t, NULL, 0), -1); /* no message wanted */
    assert_null(t);
    /* a short message buffer is cut, still NUL-terminated */
    char tiny[12];
    index = 0;
    assert_int_equal(bs_eterm_decode("\x07", 1, &index, &t, tiny, sizeof tiny), -1);
    assert_string_equal(tiny, "offset 0: u");
}

static void test_consecutive_terms(void **state)
{
    (void)state;
    /* two terms back to back, the second decoded from where the first ended */
    const unsigned char two[] = {'x', 'x', 'a', 5, 'h', 1, 's', 2, 'o', 'k', 'j'};
    int end;
    char err[128];
    bs_eterm_tree *t = try_decode(two, sizeof two, 2, 0, &end, err, sizeof err);
    assert_non_null(t);
    assert_int_equal(end, 4);
    assert_string_equal(show(bs_eterm_root(t)), "5");
    bs_eterm_free(t);
    t = try_decode(two, sizeof two, 4, 0, &end, err, sizeof err);
    assert_non_null(t);
    assert_int_equal(end, 10);
    assert_string_equal(show(bs_eterm_root(t)), "{ok}");
    bs_eterm_free(t);
    t = try_decode(two, sizeof two, 10, 0, &end, err, sizeof err);
    assert_non_null(t);
    assert_int_equal(end, 11);
    bs_eterm_free(t);
}

/* ------------------------------- printing ------------------------------ */

static void test_print_syntax(void **state)
{
    (void)state;
    ei_x_buff x;
    new_x(&x);
    ei_x_encode_tuple_header(&x, 2);
    ei_x_encode_atom(&x, "error");
    ei_x_encode_tuple_header(&x, 2);
    ei_x_encode_atom(&x, "badarg");
    ei_x_encode_list_header(&x, 2);
    ei_x_encode_long(&x, 1);
    ei_x_encode_long(&x, 2);
    ei_x_encode_empty_list(&x);
    bs_eterm_tree *t = decode_x(&x);
    const bs_eterm *reason = bs_eterm_tagged(bs_eterm_root(t), "error");
    assert_string_equal(show(reason), "{badarg,[1,2]}");
    assert_string_equal(show(bs_eterm_root(t)), "{error,{badarg,[1,2]}}");
    bs_eterm_free(t);
    ei_x_free(&x);

    new_x(&x);
    ei_x_encode_map_header(&x, 2);
    ei_x_encode_atom(&x, "a");
    ei_x_encode_binary(&x, "x", 1);
    ei_x_encode_binary(&x, "k", 1);
    ei_x_encode_atom(&x, "hello world");
    expect_print(&x, "#{a => <<\"x\">>,<<\"k\">> => 'hello world'}");
    ei_x_free(&x);

    const struct {
        const char *name;
        const char *printed;
    } atoms[] = {{"ok", "ok"},         {"node@host", "node@host"}, {"a_B9@", "a_B9@"}, {"Caps", "'Caps'"},
                 {"9lives", "'9lives'"}, {"receive", "'receive'"},   {"it's", "'it\\'s'"}, {"a\\b", "'a\\\\b'"},
                 {"tab\there", "'tab\\there'"}, {"\x01\x7F", "'\\x01\\d'"}, {"\xC3\xA9", "'\xC3\xA9'"},
                 {"a-b", "'a-b'"}};
    for (size_t i = 0; i < sizeof atoms / sizeof atoms[0]; i++) {
        new_x(&x);
        ei_x_encode_atom_len_as(&x, atoms[i].name, (int)strlen(atoms[i].name), ERLANG_UTF8, ERLANG_UTF8);
        expect_print(&x, atoms[i].printed);
        ei_x_free(&x);
    }
    /* a UTF-8 atom whose bytes are not UTF-8 (ei does not check): escaped */
    const unsigned char bad_utf8[] = {'w', 3, 'a', 0xC3, 0x28};
    expect_print_bytes(bad_utf8, sizeof bad_utf8, "'a\\xC3('");
    const unsigned char esc_string[] = {'k', 0, 4, 'a', '"', '\n', 0x1B};
    expect_print_bytes(esc_string, sizeof esc_string, "\"a\\\"\\n\\e\"");
    const unsigned char latin1_string[] = {'k', 0, 2, 'a', 0xE9}; /* bytes above 127: a list */
    expect_print_bytes(latin1_string, sizeof latin1_string, "[97,233]");
    const unsigned char c1_binary[] = {'m', 0, 0, 0, 2, 0xC2, 0x85}; /* U+0085 is a control */
    expect_print_bytes(c1_binary, sizeof c1_binary, "<<194,133>>");
}

static void test_print_cap(void **state)
{
    (void)state;
    ei_x_buff x;
    new_x(&x);
    ei_x_encode_list_header(&x, 2000);
    for (int i = 0; i < 2000; i++)
        ei_x_encode_long(&x, i);
    ei_x_encode_empty_list(&x);
    bs_eterm_tree *t = decode_x(&x);
    const bs_eterm *r = bs_eterm_root(t);
    char full[16384];
    size_t full_len = bs_eterm_format(full, sizeof full, r);
    assert_true(full_len < sizeof full - 1 && full[full_len - 1] == ']');
    for (size_t cap = 3; cap < 40; cap++) {
        char out[64];
        size_t len = bs_eterm_format(out, cap + 1, r);
        assert_true(len <= cap && len + 5 > cap); /* numbers here have at most 4 digits */
        assert_string_equal(out + len - 3, "...");
        assert_memory_equal(out, full, len - 3);
        /* never inside a number */
        assert_false(len > 3 && isdigit((unsigned char)full[len - 4]) && isdigit((unsigned char)full[len - 3]));
    }
    /* bs_eterm_print: at most BS_ETERM_PRINT_MAX bytes */
    char *mem = NULL;
    size_t mem_len = 0;
    FILE *f = open_memstream(&mem, &mem_len);
    assert_non_null(f);
    int printed = bs_eterm_print(f, r);
    assert_true(printed <= BS_ETERM_PRINT_MAX && printed + 5 > BS_ETERM_PRINT_MAX);
    assert_int_equal(bs_eterm_print_max(f, r, 10), 10);
    assert_int_equal(bs_eterm_print_max(f, r, 0), 3); /* raised to 3 */
    fclose(f);
    assert_int_equal(mem_len, (size_t)printed + 13);
    assert_memory_equal(mem, full, (size_t)printed - 3);
    assert_memory_equal(mem + printed - 3, "...", 3);
    assert_memory_equal(mem + printed, "[0,1,2,...", 10);
    assert_memory_equal(mem + printed + 10, "...", 3);
    free(mem);
    bs_eterm_free(t);
    ei_x_free(&x);

    /* never cut inside a UTF-8 character */
    new_x(&x);
    ei_x_encode_binary(&x, "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xE2\x9C\x93\xE2\x9C\x93", 14);
    t = decode_x(&x);
    const char *want = "<<\"\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xE2\x9C\x93\xE2\x9C\x93\"/utf8>>";
    assert_string_equal(show(bs_eterm_root(t)), want);
    for (size_t cap = 3; cap < strlen(want); cap++) {
        char out[64];
        size_t len = bs_eterm_format(out, cap + 1, bs_eterm_root(t));
        assert_true(len <= cap && len >= 3);
        assert_string_equal(out + len - 3, "...");
        assert_true(tu_utf8_valid(out, len));
        assert_memory_equal(out, want, len - 3);
        assert_true(len + 8 > cap); /* cut no more than one piece short ("/utf8" is one) */
    }
    /* tiny buffers */
    char small[4] = "zzz";
    assert_int_equal(bs_eterm_format(small, 0, bs_eterm_root(t)), 0);
    assert_string_equal(small, "zzz");
    assert_int_equal(bs_eterm_format(small, 1, bs_eterm_root(t)), 0);
    assert_string_equal(small, "");
    assert_int_equal(bs_eterm_format(small, 3, bs_eterm_root(t)), 2);
    assert_string_equal(small, "..");
    bs_eterm_free(t);
    ei_x_free(&x);
}

static void test_accessors_on_wrong_kinds(void **state)
{
    (void)state;
    int ok = 1;
    assert_int_equal(bs_eterm_kind_of(NULL), BS_ET_OTHER);
    assert_true(bs_eterm_int(NULL, &ok) == 0 && !ok);
    assert_true(bs_eterm_int(NULL, NULL) == 0);
    ok = 1;
    assert_true(bs_eterm_float(NULL, &ok) == 0.0 && !ok);
    assert_null(bs_eterm_text(NULL));
    assert_int_equal(bs_eterm_text_len(NULL), 0);
    assert_int_equal(bs_eterm_size(NULL), 0);
    assert_null(bs_eterm_item(NULL, 0));
    assert_null(bs_eterm_tail(NULL));
    assert_null(bs_eterm_map_get(NULL, "a"));
    assert_null(bs_eterm_map_key(NULL, 0));
    assert_null(bs_eterm_map_value(NULL, 0));
    assert_false(bs_eterm_is_atom(NULL, "a"));
    assert_null(bs_eterm_tagged(NULL, "ok"));
    assert_null(bs_eterm_pid_of(NULL));
    assert_int_equal(bs_eterm_other_kind(NULL), BS_ET_OTHER_NONE);
    assert_null(bs_eterm_root(NULL));
    assert_int_equal(bs_eterm_tree_memory(NULL), 0);
    bs_eterm_free(NULL);
    char out[8];
    assert_int_equal(bs_eterm_format(out, sizeof out, NULL), 0);
    assert_string_equal(out, "");
    assert_string_equal(bs_eterm_kind_name(BS_ET_MAP), "map");
    assert_string_equal(bs_eterm_kind_name(BS_ET_OTHER), "other");

    ei_x_buff x;
    new_x(&x);
    ei_x_encode_tuple_header(&x, 3);
    ei_x_encode_atom(&x, "ok");
    ei_x_encode_long(&x, 1);
    ei_x_encode_map_header(&x, 1);
    ei_x_encode_long(&x, 1);
    ei_x_encode_atom(&x, "one");
    bs_eterm_tree *t = decode_x(&x);
    const bs_eterm *r = bs_eterm_root(t);
    assert_null(bs_eterm_tagged(r, "ok")); /* 3 elements */
    assert_null(bs_eterm_text(r));
    assert_null(bs_eterm_map_get(r, "ok"));
    assert_null(bs_eterm_tail(r));
    assert_true(bs_eterm_int(bs_eterm_item(r, 0), &ok) == 0 && !ok);
    assert_null(bs_eterm_item(bs_eterm_item(r, 1), 0));
    assert_int_equal(bs_eterm_size(bs_eterm_item(r, 2)), 1);
    assert_null(bs_eterm_map_get(bs_eterm_item(r, 2), "1"));
    assert_null(bs_eterm_map_get(bs_eterm_item(r, 2), NULL));
    assert_false(bs_eterm_is_atom(bs_eterm_item(r, 0), NULL));
    assert_null(bs_eterm_map_key(r, 0));
    bs_eterm_free(t);
    ei_x_free(&x);
}

/* argv[1], if given, runs only the test cases whose name matches it (run.sh
 * runs each case in its own process). */
int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_integers),
        cmocka_unit_test(test_floats),
        cmocka_unit_test(test_atoms),
        cmocka_unit_test(test_binaries_and_strings),
        cmocka_unit_test(test_nested_and_map_get),
        cmocka_unit_test(test_describe_bounded),
        cmocka_unit_test(test_improper_lists),
        cmocka_unit_test(test_pids_refs_ports_funs),
        cmocka_unit_test(test_every_truncation_fails_cleanly),
        cmocka_unit_test(test_corrupted_bytes),
        cmocka_unit_test(test_depth_cap),
        cmocka_unit_test(test_counts_and_memory_caps),
        cmocka_unit_test(test_node_cap),
        cmocka_unit_test(test_error_messages),
        cmocka_unit_test(test_consecutive_terms),
        cmocka_unit_test(test_print_syntax),
        cmocka_unit_test(test_print_cap),
        cmocka_unit_test(test_accessors_on_wrong_kinds),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
