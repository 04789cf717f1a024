/* test_frame_name.c — frame spelling and sanitising (frame_name.h): Erlang
 * quoting ('Elixir.Foo':bar/1, reserved words, quotes and backslashes inside
 * atoms), Elixir style (Foo.bar/1, :lists.sort/1), sanitising (';' -> ':',
 * control characters -> '?', invalid UTF-8 -> U+FFFD, trailing blank
 * replaced, long names cut at a UTF-8 boundary) and, on random bytes, that the
 * result is always valid UTF-8 within the buffer. Also the frame table. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "engine/frame_table.h"
#include "test_util.h"

static void check_mfa(bs_name_style style, const char *m, const char *f, unsigned arity, const char *want)
{
    char buf[256];
    size_t n = bs_format_mfa(buf, sizeof buf, style, m, strlen(m), f, strlen(f), arity);
    assert_string_equal(buf, want);
    assert_int_equal(n, strlen(want));
}

static void check_sanitize(const char *src, size_t len, size_t cap, const char *want)
{
    char buf[256];
    assert_true(cap <= sizeof buf);
    size_t n = bs_sanitize_name(buf, cap, src, len);
    assert_string_equal(buf, want);
    assert_int_equal(n, strlen(want));
}

#define SAN(lit, want) check_sanitize((lit), sizeof(lit) - 1, 256, (want))

static void check_label(bs_name_style style, const char *name, const char *function, unsigned arity,
                        const char *want)
{
    char buf[256];
    size_t n = bs_format_label(buf, sizeof buf, style, "<0.90.0>", 8, name, name ? strlen(name) : 0, function,
                               function ? strlen(function) : 0, arity);
    assert_string_equal(buf, want);
    assert_int_equal(n, strlen(want));
}

/* A process's root frame: the pid, then its registered name (as it is, or
 * as Elixir shows it) or its initial call (spelled as a frame), made safe. */
static void test_labels(void **state)
{
    (void)state;
    check_label(BS_NAMES_ERLANG, NULL, NULL, 0, "<0.90.0>");
    check_label(BS_NAMES_ELIXIR, NULL, NULL, 0, "<0.90.0>");
    check_label(BS_NAMES_ERLANG, "my_server", NULL, 0, "<0.90.0> my_server");
    check_label(BS_NAMES_ELIXIR, "my_server", NULL, 0, "<0.90.0> :my_server");
    check_label(BS_NAMES_ERLANG, "Elixir.MyApp.Server", NULL, 0, "<0.90.0> Elixir.MyApp.Server");
    check_label(BS_NAMES_ELIXIR, "Elixir.MyApp.Server", NULL, 0, "<0.90.0> MyApp.Server");
    check_label(BS_NAMES_ERLANG, "my_worker", "init", 1, "<0.90.0> my_worker:init/1");
    check_label(BS_NAMES_ELIXIR, "Elixir.MyApp.Worker", "init", 1, "<0.90.0> MyApp.Worker.init/1");
    check_label(BS_NAMES_ERLANG, "Elixir.MyApp.Worker", "init", 1, "<0.90.0> 'Elixir.MyApp.Worker':init/1");
    check_label(BS_NAMES_ERLANG, "a;b\n", NULL, 0, "<0.90.0> a:b?");
    check_label(BS_NAMES_ERLANG, "worker 12", NULL, 0, "<0.90.0> worker_12");
}

static void test_erlang_quoting(void **state)
{
    (void)state;
    check_mfa(BS_NAMES_ERLANG, "lists", "sort", 1, "lists:sort/1");
    check_mfa(BS_NAMES_ERLANG, "m", "f", 1, "m:f/1");
    check_mfa(BS_NAMES_ERLANG, "Elixir.Foo", "bar", 1, "'Elixir.Foo':bar/1");
    check_mfa(BS_NAMES_ERLANG, "m", "end", 0, "m:'end'/0");
    check_mfa(BS_NAMES_ERLANG, "case", "receive", 2, "'case':'receive'/2");
    check_mfa(BS_NAMES_ERLANG, "m", "maybe", 0, "m:'maybe'/0");
    check_mfa(BS_NAMES_ERLANG, "m", "ends", 0, "m:ends/0"); /* only the whole word is reserved */
    check_mfa(BS_NAMES_ERLANG, "m", "it's", 2, "m:'it\\'s'/2");
    check_mfa(BS_NAMES_ERLANG, "m", "back\\slash", 0, "m:'back\\\\slash'/0");
    check_mfa(BS_NAMES_ERLANG, "m", "Upper", 0, "m:'Upper'/0");
    check_mfa(BS_NAMES_ERLANG, "m", "_x", 0, "m:'_x'/0");
    check_mfa(BS_NAMES_ERLANG, "m", "9a", 0, "m:'9a'/0");
    check_mfa(BS_NAMES_ERLANG, "m", "", 0, "m:''/0");
    check_mfa(BS_NAMES_ERLANG, "m", "a@b_C9", 3, "m:a@b_C9/3");
    check_mfa(BS_NAMES_ERLANG, "m", "with space", 0, "m:'with space'/0");
    check_mfa(BS_NAMES_ERLANG, "m", "-worker/2-fun-0-", 3, "m:'-worker/2-fun-0-'/3");
    check_mfa(BS_NAMES_ERLANG, "erlang", "+", 2, "erlang:'+'/2");
    /* a stray UTF-8 lead byte does not swallow the quote after it */
    check_mfa(BS_NAMES_ERLANG, "m", "\xE2" "a'b", 0, "m:'\xEF\xBF\xBD" "a\\'b'/0");
    check_mfa(BS_NAMES_ERLANG, "m", "f", 255, "m:f/255");
    check_mfa(BS_NAMES_ERLANG, "m", "f", 4294967295u, "m:f/4294967295");

    assert_false(bs_atom_needs_quotes("ok", 2));
    assert_true(bs_atom_needs_quotes("end", 3));
    assert_true(bs_atom_needs_quotes("end", 2) == 0); /* "en" */
    assert_true(bs_atom_needs_quotes("", 0));
    assert_true(bs_atom_needs_quotes("a.b", 3));
}

static void test_elixir_style(void **state)
{
    (void)state;
    check_mfa(BS_NAMES_ELIXIR, "Elixir.Foo", "bar", 1, "Foo.bar/1");
    check_mfa(BS_NAMES_ELIXIR, "Elixir.Foo.Bar", "baz?", 2, "Foo.Bar.baz?/2");
    check_mfa(BS_NAMES_ELIXIR, "lists", "sort", 1, ":lists.sort/1");
    check_mfa(BS_NAMES_ELIXIR, "erlang", "+", 2, ":erlang.+/2");
    /* As Exception.format_mfa/3 writes them: funs, names that are not
     * identifiers (ExUnit's test names), operators, reserved words. */
    check_mfa(BS_NAMES_ELIXIR, "Elixir.Foo", "-fun-0-", 0, "Foo.\"-fun-0-\"/0");
    check_mfa(BS_NAMES_ELIXIR, "Elixir.Foo", "-run/2-fun-0-", 1, "anonymous fn/1 in Foo.run/2");
    check_mfa(BS_NAMES_ELIXIR, "Elixir.Foo", "-valid?/1-fun-12-", 0, "anonymous fn/0 in Foo.valid?/1");
    check_mfa(BS_NAMES_ELIXIR, "m", "-worker/2-fun-0-", 3, "anonymous fn/3 in :m.worker/2");
    check_mfa(BS_NAMES_ELIXIR, "Elixir.FooTest", "-test adds/1-fun-0-", 0,
              "anonymous fn/0 in FooTest.\"test adds\"/1");
    check_mfa(BS_NAMES_ELIXIR, "Elixir.FooTest", "test adds", 1, "FooTest.\"test adds\"/1");
    check_mfa(BS_NAMES_ELIXIR, "Elixir.Kernel", "==", 2, "Kernel.==/2");
    check_mfa(BS_NAMES_ELIXIR, "bs_dist_wl", "receive", 0, ":bs_dist_wl.receive/0");
    check_mfa(BS_NAMES_ELIXIR, "Elixir.Foo", "a\"b", 0, "Foo.\"a\\\"b\"/0");
    check_mfa(BS_NAMES_ELIXIR, "Elixir.Foo", "-x-fun-0-", 0, "Foo.\"-x-fun-0-\"/0");
}

static void test_sanitize(void **state)
{
    (void)state;
    SAN("m:f/1", "m:f/1");
    SAN("a;b;c", "a:b:c");
    SAN("a\x01" "b\x1f" "c\x7f", "a?b?c?");
    SAN("a\nb\rc\td", "a?b?c?d");
    SAN("a\0b", "a?b"); /* an embedded NUL never ends the name early */
    SAN("caf\xC3\xA9", "caf\xC3\xA9");                          /* valid 2-byte */
    SAN("\xE2\x82\xAC\xF0\x9F\x98\x80", "\xE2\x82\xAC\xF0\x9F\x98\x80"); /* 3 and 4 bytes */
    SAN("a\xFF" "b", "a\xEF\xBF\xBD" "b");
    SAN("\x80", "\xEF\xBF\xBD");                            /* lone continuation */
    SAN("\xC0\xAF", "\xEF\xBF\xBD\xEF\xBF\xBD");            /* overlong '/' */
    SAN("\xED\xA0\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"); /* surrogate */
    SAN("\xF4\x90\x80\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"); /* > U+10FFFF */
    SAN("a\xE2\x82", "a\xEF\xBF\xBD\xEF\xBF\xBD");           /* truncated sequence */
    SAN("abc ", "abc_");
    SAN("abc\t", "abc?");
    SAN("abc  ", "abc _");
    SAN(" ", "_");
    SAN("", "");
}

static void test_sanitize_cuts_at_char_boundary(void **state)
{
    (void)state;
    /* "ééééé" (2 bytes each): a cap of n bytes holds at most n-1 plus the NUL */
    const char *e5 = "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9";
    check_sanitize(e5, 10, 8, "\xC3\xA9\xC3\xA9\xC3\xA9");
    check_sanitize(e5, 10, 7, "\xC3\xA9\xC3\xA9\xC3\xA9");
    check_sanitize(e5, 10, 6, "\xC3\xA9\xC3\xA9");
    check_sanitize(e5, 10, 2, "");
    check_sanitize(e5, 10, 1, "");
    /* 4-byte characters */
    const char *smile3 = "\xF0\x9F\x98\x80\xF0\x9F\x98\x80\xF0\x9F\x98\x80";
    for (size_t cap = 1; cap <= 14; cap++) {
        char buf[32];
        size_t n = bs_sanitize_name(buf, cap, smile3, 12);
        assert_int_equal(n, ((cap - 1) / 4) * 4);
        assert_int_equal(buf[n], '\0');
        assert_memory_equal(buf, smile3, n);
    }
    /* a cut that leaves a blank at the end still replaces it */
    check_sanitize("ab cd", 5, 4, "ab_");
    /* cap 0 writes nothing */
    char untouched[4] = "xyz";
    assert_int_equal(bs_sanitize_name(untouched, 0, "abc", 3), 0);
    assert_string_equal(untouched, "xyz");
}

/* Long atoms: the name is cut at a character boundary, never inside a
 * multi-byte character (which would show up as U+FFFD), and stays valid. */
static void test_long_names(void **state)
{
    (void)state;
    char mod[1200], fun[1200];
    /* "abc" + 300 x "é" (603 bytes) and 300 x "ü" (600 bytes): together more
     * than any internal buffer, with odd offsets so that a byte-wise cut
     * would split a character. */
    size_t ml = 0, fl = 0;
    memcpy(mod, "abc", 3);
    ml = 3;
    for (int i = 0; i < 300; i++, ml += 2)
        memcpy(mod + ml, "\xC3\xA9", 2);
    for (int i = 0; i < 300; i++, fl += 2)
        memcpy(fun + fl, "\xC3\xBC", 2);
    static const char fffd[] = "\xEF\xBF\xBD";
    size_t caps[] = {16, 17, 18, 19, 64, 255, 256, 1000, 1024, 2048, 4096};
    for (size_t ci = 0; ci < sizeof caps / sizeof caps[0]; ci++) {
        for (int style = 0; style < 2; style++) {
            char buf[4096];
            size_t cap = caps[ci];
            size_t n = bs_format_mfa(buf, cap, style ? BS_NAMES_ELIXIR : BS_NAMES_ERLANG, mod, ml, fun, fl, 1);
            assert_true(n < cap);
            assert_int_equal(strlen(buf), n);
            assert_true(tu_utf8_valid(buf, n));
            if (strstr(buf, fffd))
                fail_msg("cap %zu style %d: a character was split: %s", cap, style, buf);
            /* a prefix of the full name */
            const char *want = style ? ":abc" : "'abc";
            assert_memory_equal(buf, want, n < 4 ? n : 4);
        }
    }
    /* short enough for the internal buffer: nothing is lost */
    char buf[4096];
    size_t n = bs_format_mfa(buf, sizeof buf, BS_NAMES_ERLANG, mod, 203, fun, 200, 1);
    assert_int_equal(n, 1 + 203 + 1 + 1 + 1 + 200 + 1 + 2);
    assert_memory_equal(buf + n - 3, "'/1", 3);
}

/* Random bytes in, always valid UTF-8 out: no control characters, no ';', no
 * trailing blank, within the buffer. */
static void test_random_names_always_safe(void **state)
{
    (void)state;
    uint64_t s = 0x5EED;
    char src[600], buf[700];
    for (int iter = 0; iter < 20000; iter++) {
        size_t len = (size_t)(tu_rand(&s) % sizeof src);
        for (size_t i = 0; i < len; i++) {
            uint64_t r = tu_rand(&s);
            /* bias towards UTF-8 lead/continuation bytes and separators */
            static const unsigned char pick[] = {';', ' ', '\t', '\n', 0x80, 0xBF, 0xC3, 0xE2, 0xF0, 0xED, 0xFF, '\'', '\\'};
            src[i] = (char)((r & 3) == 0 ? pick[(r >> 8) % sizeof pick] : (unsigned char)(r >> 16));
        }
        size_t cap = 1 + (size_t)(tu_rand(&s) % sizeof buf);
        size_t n;
        if (iter % 2) {
            n = bs_sanitize_name(buf, cap, src, len);
        } else {
            if (cap < 16)
                cap = 16;
            size_t split = len ? (size_t)(tu_rand(&s) % len) : 0;
            n = bs_format_mfa(buf, cap, iter % 4 ? BS_NAMES_ELIXIR : BS_NAMES_ERLANG, src, split,
                              src + split, len - split, (unsigned)(tu_rand(&s) % 300));
        }
        assert_true(n < cap);
        assert_int_equal(buf[n], '\0');
        assert_true(tu_utf8_valid(buf, n));
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)buf[i];
            assert_false(c < 0x20 || c == 0x7F || c == ';');
        }
        assert_false(n > 0 && (buf[n - 1] == ' ' || buf[n - 1] == '\t'));
    }
}

static void test_frame_table(void **state)
{
    (void)state;
    bs_frame_table ft;
    bs_frame_table_init(&ft);
    uint32_t a = bs_frame_table_intern(&ft, "m:f/1", 5);
    uint32_t b = bs_frame_table_intern(&ft, "m:f/2", 5);
    uint32_t a2 = bs_frame_table_intern(&ft, "m:f/1xxx", 5); /* only len bytes count */
    uint32_t pre = bs_frame_table_intern(&ft, "m:f", 3);    /* a prefix is another name */
    assert_int_not_equal(a, b);
    assert_int_equal(a, a2);
    assert_int_not_equal(pre, a);
    assert_string_equal(bs_frame_name(&ft, a), "m:f/1");
    assert_string_equal(bs_frame_name(&ft, pre), "m:f");
    /* many names: ids dense and stable across rehashing */
    char name[32];
    for (int i = 0; i < 5000; i++) {
        int len = snprintf(name, sizeof name, "mod%d:fun/%d", i, i % 7);
        uint32_t id = bs_frame_table_intern(&ft, name, (size_t)len);
        assert_int_equal(id, (uint32_t)i + 3);
    }
    for (int i = 0; i < 5000; i++) {
        int len = snprintf(name, sizeof name, "mod%d:fun/%d", i, i % 7);
        assert_int_equal(bs_frame_table_intern(&ft, name, (size_t)len), (uint32_t)i + 3);
        assert_string_equal(bs_frame_name(&ft, (uint32_t)i + 3), name);
    }
    assert_int_equal(ft.n, 5003);
    bs_frame_table_free(&ft);
}

/* argv[1], if given, runs only the test cases whose name matches it (run.sh
 * runs each case in its own process). */
int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_erlang_quoting),
        cmocka_unit_test(test_labels),
        cmocka_unit_test(test_elixir_style),
        cmocka_unit_test(test_sanitize),
        cmocka_unit_test(test_sanitize_cuts_at_char_boundary),
        cmocka_unit_test(test_long_names),
        cmocka_unit_test(test_random_names_always_safe),
        cmocka_unit_test(test_frame_table),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
