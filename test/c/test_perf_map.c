/* test_perf_map.c — the JIT's perf map (cpu/perf_map.h): every shape of
 * line the JIT of OTP 25, 27 and 29 writes (lines copied from real maps),
 * malformed lines refused with where and why, a file read as it grows (a
 * partial last line left for later), overlapping ranges where the later line
 * wins, lines out of address order, the memory cap, and a map written by a
 * real VM (`erl +JPperf true`, started here) read whole. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cpu/perf_map.h"

typedef struct shape {
    const char *line;
    bs_perf_kind kind;
    const char *module, *function; /* function: the OTHER name */
    unsigned arity;
    int prologue;
    uint64_t start, size;
} shape;

/* Real lines: OTP 25 (Debian bookworm), 27 (trixie), 29 (sid), an Elixir
 * 1.14 node, and a module with unusual atoms compiled and loaded on OTP 25
 * and 29 (the two wrote the same names). */
static const shape SHAPES[] = {
    {"0x7f3e7fe05000 68 $global::apply_fun_shared", BS_PERF_OTHER, NULL, "global::apply_fun_shared", 0, 0,
     0x7f3e7fe05000, 0x68},
    {"0x7f3e7fe05068 90 $global::arith_compare_shared", BS_PERF_OTHER, NULL, "global::arith_compare_shared", 0,
     0, 0x7f3e7fe05068, 0x90},
    {"0x7f3e7fe07180 1b0 $erts_code_purger::codeHeader", BS_PERF_OTHER, NULL, "erts_code_purger::codeHeader", 0,
     0, 0x7f3e7fe07180, 0x1b0},
    {"0x7f3e7fe070b8 50 $erts_beamasm::codeFooter", BS_PERF_OTHER, NULL, "erts_beamasm::codeFooter", 0, 0,
     0x7f3e7fe070b8, 0x50},
    {"0x7f3e3d8a81b0 30 $lists:keyfind/3-CodeInfoPrologue", BS_PERF_ERLANG, "lists", "keyfind", 3, 1,
     0x7f3e3d8a81b0, 0x30},
    {"0x7f3e3d8a81e0 70 $lists:keyfind/3", BS_PERF_ERLANG, "lists", "keyfind", 3, 0, 0x7f3e3d8a81e0, 0x70},
    {"0x7f3e7fe1ad58 30 $init:'-collect_loaded_mfas/2-lc$^0/1-0-'/2-CodeInfoPrologue", BS_PERF_ERLANG, "init",
     "-collect_loaded_mfas/2-lc$^0/1-0-", 2, 1, 0x7f3e7fe1ad58, 0x30},
    {"0x7f3e7fe0b9d0 30 $erl_init:'-restart/0-fun-0-'/0-CodeInfoPrologue", BS_PERF_ERLANG, "erl_init",
     "-restart/0-fun-0-", 0, 1, 0x7f3e7fe0b9d0, 0x30},
    {"0x7f3e3e44d7a0 30 $erlang:'=='/2-CodeInfoPrologue", BS_PERF_ERLANG, "erlang", "==", 2, 1, 0x7f3e3e44d7a0,
     0x30},
    {"0x7f3e3e4d4970 30 $prim_socket:'-supports/2-inlined-0-'/3-CodeInfoPrologue", BS_PERF_ERLANG, "prim_socket",
     "-supports/2-inlined-0-", 3, 1, 0x7f3e3e4d4970, 0x30},
    {"0x7f3e3d477848 30 $peer:'-encode_port_data/1-lbc$^0/2-0-'/2-CodeInfoPrologue", BS_PERF_ERLANG, "peer",
     "-encode_port_data/1-lbc$^0/2-0-", 2, 1, 0x7f3e3d477848, 0x30},
    /* OTP 27 */
    {"0x7fb66e200040 70 $global::apply_fun_shared", BS_PERF_OTHER, NULL, "global::apply_fun_shared", 0, 0,
     0x7fb66e200040, 0x70},
    {"0x7fb66e202800 170 $erts_code_purger::codeHeader", BS_PERF_OTHER, NULL, "erts_code_purger::codeHeader", 0,
     0, 0x7fb66e202800, 0x170},
    {"0x7fb66e20272b 75 $erts_beamasm::codeFooter", BS_PERF_OTHER, NULL, "erts_beamasm::codeFooter", 0, 0,
     0x7fb66e20272b, 0x75},
    {"0x7fb66e3be278 60 $lists:keyfind/3", BS_PERF_ERLANG, "lists", "keyfind", 3, 0, 0x7fb66e3be278, 0x60},
    {"0x7fb66e216c50 30 $init:'-collect_loaded_mfas/2-lc$^0/1-0-'/2-CodeInfoPrologue", BS_PERF_ERLANG, "init",
     "-collect_loaded_mfas/2-lc$^0/1-0-", 2, 1, 0x7fb66e216c50, 0x30},
    {"0x7fb66e2898c8 30 $erlang:'=='/2-CodeInfoPrologue", BS_PERF_ERLANG, "erlang", "==", 2, 1, 0x7fb66e2898c8,
     0x30},
    {"0x7fb66e46ff88 30 $peer:'-encode_port_data/1-lbc$^0/2-0-'/2-CodeInfoPrologue", BS_PERF_ERLANG, "peer",
     "-encode_port_data/1-lbc$^0/2-0-", 2, 1, 0x7fb66e46ff88, 0x30},
    /* OTP 29 */
    {"0x7f3b90000040 68 $global::apply_fun_shared", BS_PERF_OTHER, NULL, "global::apply_fun_shared", 0, 0,
     0x7f3b90000040, 0x68},
    {"0x7f3b9000281e 7a $erts_beamasm::codeFooter", BS_PERF_OTHER, NULL, "erts_beamasm::codeFooter", 0, 0,
     0x7f3b9000281e, 0x7a},
    {"0x7f3b9023add8 30 $lists:keyfind/3-CodeInfoPrologue", BS_PERF_ERLANG, "lists", "keyfind", 3, 1,
     0x7f3b9023add8, 0x30},
    {"0x7f3b9023ae08 60 $lists:keyfind/3", BS_PERF_ERLANG, "lists", "keyfind", 3, 0, 0x7f3b9023ae08, 0x60},
    {"0x7f3b902558a4 20d4 $lists::codeFooter", BS_PERF_OTHER, NULL, "lists::codeFooter", 0, 0, 0x7f3b902558a4,
     0x20d4},
    {"0x7f3b90257a40 3c8 $proc_lib::codeHeader", BS_PERF_OTHER, NULL, "proc_lib::codeHeader", 0, 0,
     0x7f3b90257a40, 0x3c8},
    {"0x7f3b90057668 30 $prim_socket:'-supports/2-inlined-0-'/3-CodeInfoPrologue", BS_PERF_ERLANG, "prim_socket",
     "-supports/2-inlined-0-", 3, 1, 0x7f3b90057668, 0x30},
    /* Elixir */
    {"0x7f3593950440 100 $Elixir.CsFoo.Bar::codeHeader", BS_PERF_OTHER, NULL, "Elixir.CsFoo.Bar::codeHeader", 0,
     0, 0x7f3593950440, 0x100},
    {"0x7f3593950540 30 $'Elixir.CsFoo.Bar':'__info__'/1-CodeInfoPrologue", BS_PERF_ERLANG, "Elixir.CsFoo.Bar",
     "__info__", 1, 1, 0x7f3593950540, 0x30},
    {"0x7f35939506f8 48 $'Elixir.CsFoo.Bar':baz/2", BS_PERF_ERLANG, "Elixir.CsFoo.Bar", "baz", 2, 0,
     0x7f35939506f8, 0x48},
    {"0x7f3593950770 20 $'Elixir.CsFoo.Bar':'ok?'/1", BS_PERF_ERLANG, "Elixir.CsFoo.Bar", "ok?", 1, 0,
     0x7f3593950770, 0x20},
    {"0x7f35939507c0 20 $'Elixir.CsFoo.Bar':'weird name'/1", BS_PERF_ERLANG, "Elixir.CsFoo.Bar", "weird name", 1,
     0, 0x7f35939507c0, 0x20},
    {"0x7f3593950938 16 $'Elixir.CsFoo.Bar':'-inlined-__info__/1-'/1", BS_PERF_ERLANG, "Elixir.CsFoo.Bar",
     "-inlined-__info__/1-", 1, 0, 0x7f3593950938, 0x16},
    {"0x7f35d086a7a0 30 $'Elixir.Kernel':'MACRO-!'/2", BS_PERF_ERLANG, "Elixir.Kernel", "MACRO-!", 2, 0,
     0x7f35d086a7a0, 0x30},
    {"0x7f35d086a7a0 30 $'Elixir.Kernel':'!=='/2", BS_PERF_ERLANG, "Elixir.Kernel", "!==", 2, 0, 0x7f35d086a7a0,
     0x30},
    {"0x7f359395094e 1c2 $Elixir.CsFoo.Bar::codeFooter", BS_PERF_OTHER, NULL, "Elixir.CsFoo.Bar::codeFooter", 0,
     0, 0x7f359395094e, 0x1c2},
    /* unusual atoms (OTP 25 and 29 alike) */
    {"0x7fea2343f7f0 28 $csqm:'a\\'b'/0", BS_PERF_ERLANG, "csqm", "a'b", 0, 0, 0x7fea2343f7f0, 0x28},
    {"0x7fea2343f848 28 $csqm:h\xc3\xa9llo/0", BS_PERF_ERLANG, "csqm", "h\xc3\xa9llo", 0, 0, 0x7fea2343f848, 0x28},
    {"0x7fea2343f8a0 28 $csqm:'l\\nb'/0", BS_PERF_ERLANG, "csqm", "l\nb", 0, 0, 0x7fea2343f8a0, 0x28},
    {"0x7fea2343f8f8 28 $csqm:'sl\\\\x'/0", BS_PERF_ERLANG, "csqm", "sl\\x", 0, 0, 0x7fea2343f8f8, 0x28},
    {"0x7fea2343f950 28 $csqm:'\xce\xb1\xce\xb2'/0", BS_PERF_ERLANG, "csqm", "\xce\xb1\xce\xb2", 0, 0,
     0x7fea2343f950, 0x28},
    {"0x7fea2343f9a8 20 $csqm:'sp ace'/1", BS_PERF_ERLANG, "csqm", "sp ace", 1, 0, 0x7fea2343f9a8, 0x20},
    {"0x7fea2343f9f8 60 $csqm:module_info/0", BS_PERF_ERLANG, "csqm", "module_info", 0, 0, 0x7fea2343f9f8, 0x60},
    /* other escapes Erlang may write, and other perf map writers */
    {"7f00 10 $m:'\\x{3b1}\\x41\\101\\s\\^A\\t'/255", BS_PERF_ERLANG, "m", "\xce\xb1" "AA \x01\t", 255, 0, 0x7f00,
     0x10},
    {"0x1000 8 $'a:b':'c/d'/1", BS_PERF_ERLANG, "a:b", "c/d", 1, 0, 0x1000, 8},
    {"0x1000 8 LazyCompile:~foo /x.js:1", BS_PERF_OTHER, NULL, "LazyCompile:~foo /x.js:1", 0, 0, 0x1000, 8},
    {"0x1000 8 $m:f/256", BS_PERF_OTHER, NULL, "m:f/256", 0, 0, 0x1000, 8},
    {"0x1000 8 $m:'f/1", BS_PERF_OTHER, NULL, "m:'f/1", 0, 0, 0x1000, 8},
    {"0x1000 8 $m:f/1-Other", BS_PERF_OTHER, NULL, "m:f/1-Other", 0, 0, 0x1000, 8},
    {"0x1000 8 $", BS_PERF_OTHER, NULL, "$", 0, 0, 0x1000, 8},
    {"0x1000  8  $m:f/1", BS_PERF_ERLANG, "m", "f", 1, 0, 0x1000, 8},
};

static void test_real_shapes(void **state)
{
    (void)state;
    static bs_perf_line l;
    for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++) {
        const shape *s = &SHAPES[i];
        size_t col = 99;
        const char *why = NULL;
        int r = bs_perf_map_parse_line(s->line, strlen(s->line), &l, &col, &why);
        if (r != 0)
            fail_msg("line %zu refused at %zu (%s): %s", i, col, why, s->line);
        assert_int_equal(l.kind, s->kind);
        assert_int_equal(l.start, s->start);
        assert_int_equal(l.size, s->size);
        assert_string_equal(l.function, s->function);
        if (s->module) {
            assert_non_null(l.module);
            assert_string_equal(l.module, s->module);
        } else {
            assert_null(l.module);
        }
        assert_int_equal(l.arity, s->arity);
        assert_int_equal(l.prologue, s->prologue);
    }
}

static void test_malformed(void **state)
{
    (void)state;
    static const struct {
        const char *line;
        size_t column;
        const char *why;
    } BAD[] = {
        {"", 0, "no hex start address"},
        {"zz 10 $m:f/1", 0, "no hex start address"},
        {"0x 10 $m:f/1", 0, "no hex start address"},
        {"0x1000", 6, "no space after the start address"},
        {"0x1000g 10 $m:f/1", 6, "no space after the start address"},
        {"0x1000 $m:f/1", 7, "no hex size"},
        {"0x1000 0 $m:f/1", 7, "size 0"},
        {"0xffffffffffffffff 2 $m:f/1", 19, "range past the end of the address space"},
        {"0x10000000000000000 2 $m:f/1", 0, "no hex start address"},
        {"0x1000 10", 9, "no space after the size"},
        {"0x1000 10 ", 10, "no name"},
        {"0x1000 10x $m:f/1", 9, "no space after the size"},
        {"0x1000 10 $m:f/1\r", 16, "control character"},
        {"0x1000\t10 $m:f/1", 6, "control character"},
    };
    static bs_perf_line l;
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        size_t col = 99;
        const char *why = NULL;
        assert_int_equal(bs_perf_map_parse_line(BAD[i].line, strlen(BAD[i].line), &l, &col, &why), -1);
        assert_non_null(why);
        if (strcmp(why, BAD[i].why) != 0 || col != BAD[i].column)
            fail_msg("\"%s\": %zu %s, expected %zu %s", BAD[i].line, col, why, BAD[i].column, BAD[i].why);
    }
    /* a NUL inside a line is a control character too */
    size_t col;
    const char *why;
    assert_int_equal(bs_perf_map_parse_line("0x10 8 $m:f\0/1", 14, &l, &col, &why), -1);
    assert_int_equal(col, 11);
    /* an escape that would put a NUL in a name: not an Erlang name */
    assert_int_equal(bs_perf_map_parse_line("0x10 8 $m:'\\000'/1", 18, &l, &col, &why), 0);
    assert_int_equal(l.kind, BS_PERF_OTHER);
    /* too long */
    static char longline[BS_PERF_MAP_MAX_LINE + 2];
    memset(longline, 'a', sizeof longline);
    memcpy(longline, "0x10 8 ", 7);
    assert_int_equal(bs_perf_map_parse_line(longline, BS_PERF_MAP_MAX_LINE + 1, &l, &col, &why), -1);
    assert_string_equal(why, "line too long");
    assert_int_equal(bs_perf_map_parse_line(longline, BS_PERF_MAP_MAX_LINE, &l, &col, &why), 0);
    assert_int_equal(strlen(l.function), BS_PERF_MAP_MAX_LINE - 7);
}

/* A temporary file name of this test. */
static void temp_path(char *buf, size_t cap, const char *what)
{
    snprintf(buf, cap, "/tmp/bs_test_perf_map_%d_%s.map", (int)getpid(), what);
}

static void append(const char *path, const char *text)
{
    FILE *f = fopen(path, "ab");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}

static void assert_entry(const bs_perf_entry *e, const char *module, const char *function, unsigned arity)
{
    assert_non_null(e);
    if (module) {
        assert_int_equal(e->kind, BS_PERF_ERLANG);
        assert_string_equal(e->module, module);
    } else {
        assert_int_equal(e->kind, BS_PERF_OTHER);
    }
    assert_string_equal(e->function, function);
    assert_int_equal(e->arity, arity);
}

static void test_grows(void **state)
{
    (void)state;
    char path[128];
    temp_path(path, sizeof path, "grows");
    unlink(path);
    bs_perf_map m;
    assert_int_equal(bs_perf_map_init(&m, path, 1 << 20), 0);
    /* no file yet: an error with its errno, and nothing found */
    assert_int_equal(bs_perf_map_read(&m, 0), -1);
    assert_int_not_equal(m.stats.read_errno, 0);
    assert_null(bs_perf_map_find(&m, 0x1000));
    append(path, "0x1000 10 $global::apply_fun_shared\n0x2000 20 $lists:key");
    assert_int_equal(bs_perf_map_read(&m, 1000), 1);
    assert_int_equal(m.stats.read_errno, 0);
    assert_entry(bs_perf_map_find(&m, 0x100f), NULL, "global::apply_fun_shared", 0);
    assert_null(bs_perf_map_find(&m, 0x1010));
    assert_null(bs_perf_map_find(&m, 0x2000)); /* its line is not whole yet */
    assert_int_equal(bs_perf_map_read(&m, 1001), 0);
    append(path, "find/3\n0x1800 8 $m:f/1\n");
    /* lookup: a miss within BS_PERF_MAP_REREAD_MS of the last read does
     * not read; after it, it does */
    assert_null(bs_perf_map_lookup(&m, 0x2004, 1001 + BS_PERF_MAP_REREAD_MS - 1));
    assert_entry(bs_perf_map_lookup(&m, 0x2004, 1001 + BS_PERF_MAP_REREAD_MS), "lists", "keyfind", 3);
    assert_entry(bs_perf_map_find(&m, 0x1807), "m", "f", 1);
    assert_entry(bs_perf_map_find(&m, 0x1000), NULL, "global::apply_fun_shared", 0);
    assert_null(bs_perf_map_find(&m, 0x17ff));
    assert_null(bs_perf_map_find(&m, 0x2020));
    /* where the range of an address starts (a fragment's code is read from there) */
    assert_int_equal(bs_perf_map_start(&m, 0x100f), 0x1000);
    assert_int_equal(bs_perf_map_start(&m, 0x2013), 0x2000);
    assert_int_equal(bs_perf_map_start(&m, 0x2020), 0);
    /* a fragment found by its name (the collector's, as a session opens);
     * an Erlang function's name is no fragment's */
    uint64_t end = 0;
    assert_int_equal(bs_perf_map_named(&m, "global::apply_fun_shared", &end), 0x1000);
    assert_int_equal(end, 0x1010);
    assert_int_equal(bs_perf_map_named(&m, "global::garbage_collect", &end), 0);
    assert_int_equal(bs_perf_map_named(&m, "f", &end), 0);
    assert_int_equal(m.stats.lines, 3);
    assert_int_equal(m.stats.ranges, 3);
    /* a malformed line is counted with where, and the next ones still read */
    append(path, "0x3000 zz $m:g/1\n0x3000 8 $m:g/2\n");
    assert_int_equal(bs_perf_map_read(&m, 5000), 1);
    assert_int_equal(m.stats.malformed, 1);
    assert_int_equal(m.stats.bad_line, 4);
    assert_int_equal(m.stats.bad_column, 7);
    assert_string_equal(m.stats.bad_why, "no hex size");
    assert_entry(bs_perf_map_find(&m, 0x3000), "m", "g", 2);
    /* a line longer than the read buffer is refused whole and skipped */
    FILE *f = fopen(path, "ab");
    assert_non_null(f);
    for (int i = 0; i < 70000; i++)
        fputc('x', f);
    fputs("\n0x4000 8 $m:h/0\n", f);
    fclose(f);
    assert_int_equal(bs_perf_map_read(&m, 6000), 1);
    assert_int_equal(m.stats.malformed, 2);
    assert_entry(bs_perf_map_find(&m, 0x4000), "m", "h", 0);
    bs_perf_map_free(&m);
    unlink(path);
}

static void test_overlap_and_order(void **state)
{
    (void)state;
    char path[128];
    temp_path(path, sizeof path, "overlap");
    unlink(path);
    /* out of address order (modules allocated downwards), then code purged
     * and its memory reused by a later load: later lines win where they
     * overlap, the older lines keep what is left on either side */
    append(path, "0x5000 100 $old:big/0\n"
                 "0x3000 10 $low:a/0\n0x3010 10 $low:b/0\n"
                 "0x5040 10 $new:mid/1\n");
    bs_perf_map m;
    assert_int_equal(bs_perf_map_init(&m, path, 1 << 20), 0);
    assert_int_equal(bs_perf_map_read(&m, 0), 4);
    assert_entry(bs_perf_map_find(&m, 0x3005), "low", "a", 0);
    assert_entry(bs_perf_map_find(&m, 0x3015), "low", "b", 0);
    assert_entry(bs_perf_map_find(&m, 0x503f), "old", "big", 0);
    assert_entry(bs_perf_map_find(&m, 0x5040), "new", "mid", 1);
    assert_entry(bs_perf_map_find(&m, 0x504f), "new", "mid", 1);
    assert_entry(bs_perf_map_find(&m, 0x5050), "old", "big", 0);
    assert_entry(bs_perf_map_find(&m, 0x50ff), "old", "big", 0);
    assert_null(bs_perf_map_find(&m, 0x5100));
    assert_int_equal(m.stats.ranges, 5);
    /* in a later read: a line over the end of one range and the start of
     * the next, and one covering a range whole */
    append(path, "0x3008 10 $re:x/2\n0x5000 60 $re:y/0\n");
    assert_int_equal(bs_perf_map_read(&m, 10), 2);
    assert_entry(bs_perf_map_find(&m, 0x3007), "low", "a", 0);
    assert_entry(bs_perf_map_find(&m, 0x3008), "re", "x", 2);
    assert_entry(bs_perf_map_find(&m, 0x3017), "re", "x", 2);
    assert_entry(bs_perf_map_find(&m, 0x3018), "low", "b", 0);
    assert_entry(bs_perf_map_find(&m, 0x5000), "re", "y", 0);
    assert_entry(bs_perf_map_find(&m, 0x5045), "re", "y", 0); /* new:mid is gone */
    assert_entry(bs_perf_map_find(&m, 0x505f), "re", "y", 0);
    assert_entry(bs_perf_map_find(&m, 0x5060), "old", "big", 0);
    /* the same range twice in one read: the second wins */
    append(path, "0x9000 10 $first:f/0\n0x9000 10 $second:f/0\n");
    assert_int_equal(bs_perf_map_read(&m, 20), 2);
    assert_entry(bs_perf_map_find(&m, 0x9000), "second", "f", 0);
    /* every range is sorted and apart from the next */
    for (size_t i = 0; i + 1 < m.n_ranges; i++) {
        const struct bs_perf_range *r = &m.ranges[i];
        assert_true(r->start < r->end && r->end <= r[1].start);
    }
    bs_perf_map_free(&m);
    unlink(path);
}

static void test_cap(void **state)
{
    (void)state;
    char path[128];
    temp_path(path, sizeof path, "cap");
    unlink(path);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    for (int i = 0; i < 20000; i++)
        fprintf(f, "0x%x 10 $mod%d:fun%d/1\n", 0x100000 + i * 0x10, i / 50, i);
    fclose(f);
    bs_perf_map m;
    size_t cap = 256 * 1024;
    assert_int_equal(bs_perf_map_init(&m, path, cap), 0);
    assert_true(bs_perf_map_read(&m, 0) > 0);
    assert_true(m.stats.bytes <= cap);
    assert_true(m.stats.dropped > 0);
    assert_int_equal(m.stats.lines + m.stats.dropped, 20000);
    assert_int_equal(m.stats.malformed, 0);
    /* what was kept resolves; what was dropped does not */
    assert_entry(bs_perf_map_find(&m, 0x100000), "mod0", "fun0", 1);
    assert_null(bs_perf_map_find(&m, 0x100000 + 19999 * 0x10));
    /* the whole file fits in a larger cap */
    bs_perf_map_free(&m);
    assert_int_equal(bs_perf_map_init(&m, path, 16 << 20), 0);
    assert_int_equal(bs_perf_map_read(&m, 0), 20000);
    assert_int_equal(m.stats.dropped, 0);
    assert_entry(bs_perf_map_find(&m, 0x100000 + 19999 * 0x10 + 0xf), "mod399", "fun19999", 1);
    bs_perf_map_free(&m);
    unlink(path);
}

/* A real VM with the JIT's perf map: every line of its map is read (none
 * malformed), and the middle of lists:keyfind/3's code resolves to it. */
static void test_real_vm_map(void **state)
{
    (void)state;
    char out[128];
    temp_path(out, sizeof out, "vm_pid");
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "erl +JPperf true -noshell -eval 'io:format(\"~s~n\", [os:getpid()]), "
             "lists:keyfind(a, 1, [{a}]), halt().' > %s 2>&1",
             out);
    int rc = system(cmd);
    FILE *f = fopen(out, "r");
    assert_non_null(f);
    int pid = 0;
    int got = fscanf(f, "%d", &pid);
    fclose(f);
    unlink(out);
    if (rc != 0 || got != 1)
        fail_msg("erl +JPperf true did not run (status %d)", rc);
    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", pid);
    /* the lines of the file and keyfind's, read apart from the parser */
    f = fopen(path, "r");
    assert_non_null(f);
    char line[8192];
    uint64_t lines = 0, kf_start = 0, kf_size = 0;
    while (fgets(line, sizeof line, f)) {
        lines++;
        unsigned long long a, s;
        char name[4096];
        if (sscanf(line, "%llx %llx %4095s", &a, &s, name) == 3 && strcmp(name, "$lists:keyfind/3") == 0)
            kf_start = a, kf_size = s;
    }
    fclose(f);
    assert_true(lines > 1000);
    assert_true(kf_size > 0);
    bs_perf_map m;
    assert_int_equal(bs_perf_map_init(&m, path, 64 << 20), 0);
    assert_int_equal(bs_perf_map_read(&m, 0), (long)lines);
    assert_int_equal(m.stats.malformed, 0);
    assert_int_equal(m.stats.dropped, 0);
    assert_entry(bs_perf_map_find(&m, kf_start + kf_size / 2), "lists", "keyfind", 3);
    const bs_perf_entry *pro = bs_perf_map_find(&m, kf_start - 1);
    assert_entry(pro, "lists", "keyfind", 3);
    assert_int_equal(pro->prologue, 1);
    bs_perf_map_free(&m);
    unlink(path);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_shapes),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_grows),
        cmocka_unit_test(test_overlap_and_order),
        cmocka_unit_test(test_cap),
        cmocka_unit_test(test_real_vm_map),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
