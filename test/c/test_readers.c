/* test_readers.c — the folded-stacks reader, the .bspy writer and reader,
 * and bs_read_profile_file (readers/readers.h).
 *
 * Folded: the grammar (counts, fractions truncated, tabs and runs of
 * blanks, CRLF, BOM, blank lines, last line without LF, flamegraph.pl's
 * differential "stack c1 c2", eflame's uncounted pid lines and its `sleep`
 * frame), every kind of malformed input the folded reader must name
 * with the line number and byte offset of the error (also far past the
 * first blocks of input), pid roots vs the
 * synthetic root, lines that share prefixes with the previous line in every
 * way the prefix shortcut can be fooled, a 100,000-frame line, repeated and
 * distinct stacks (memory follows distinct stacks; the whole-stack cache
 * filling up and switching off), reading from a pipe, and random profiles
 * with hostile names that must survive write -> read -> write unchanged.
 * .bspy: profile -> file -> profile is equal in every field (frames, trees,
 * spans, metadata, flags), the bytes are deterministic, hostile names
 * survive; every truncation and every corrupted byte is detected with an
 * offset; forged counts, parents, frames, spans and sections are refused.
 * Memory output (bs_write_memory) is byte for byte the file output. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/bspy.h"
#include "common/crc32.h"
#include "writers/folded.h"
#include "readers/readers.h"
#include "writers/writers.h"
#include "test_util.h"

#define OK(x) assert_int_equal((x), 0)

/* ---- helpers ------------------------------------------------------------ */

/* A regular file holding data (the readers use its size when they can). */
static FILE *file_of(const void *data, size_t len)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    if (len)
        assert_int_equal(fwrite(data, 1, len, f), len);
    rewind(f);
    return f;
}

static int read_folded_n(const char *text, size_t len, bs_profile *p, bs_read_error *e)
{
    FILE *f = file_of(text, len);
    memset(e, 0, sizeof *e);
    int rc = bs_read_folded(f, "in.folded", p, e);
    fclose(f);
    return rc;
}

static int read_folded_s(const char *text, bs_profile *p, bs_read_error *e)
{
    return read_folded_n(text, strlen(text), p, e);
}

static int read_bspy_n(const void *data, size_t len, bs_profile *p, bs_read_error *e)
{
    /* in memory (no size known, as for a pipe), or a file for no bytes */
    FILE *f = len ? fmemopen((void *)data, len, "rb") : file_of(data, len);
    assert_non_null(f);
    memset(e, 0, sizeof *e);
    int rc = bs_read_bspy(f, "in.bspy", p, e);
    fclose(f);
    return rc;
}

/* Every tree as text: "[root]" or "[synthetic root]", then one line per
 * node in index order: "  stack = self". Caller frees. */
static char *dump(const bs_profile *p)
{
    tu_str b = {0};
    tu_put(&b, "%s", "");
    for (uint32_t ti = 0; ti < p->n_trees; ti++) {
        const bs_ptree *t = &p->trees[ti];
        tu_put(&b, "[%s%s]", t->synthetic_root ? "synthetic " : "", bs_frame_name(&p->frames, t->nodes[0].frame));
        if (t->nodes[0].self_ns)
            tu_put(&b, " = %llu", (unsigned long long)t->nodes[0].self_ns);
        tu_put(&b, "\n");
        for (uint32_t i = 1; i < t->n_nodes; i++) {
            uint32_t chain[256], d = 0;
            for (uint32_t n = i; n != 0 && d < 256; n = t->nodes[n].parent)
                chain[d++] = n;
            tu_put(&b, " ");
            while (d--)
                tu_put(&b, " %s", bs_frame_name(&p->frames, t->nodes[chain[d]].frame));
            tu_put(&b, " = %llu\n", (unsigned long long)t->nodes[i].self_ns);
        }
    }
    return b.s;
}

static void assert_reads_as_n(const char *text, size_t len, const char *want)
{
    bs_profile p;
    bs_read_error e;
    if (read_folded_n(text, len, &p, &e) != 0)
        fail_msg("read failed: line %llu: %s", (unsigned long long)e.line, e.msg);
    assert_int_equal(p.unit, BS_UNIT_COUNT);
    char *got = dump(&p);
    assert_string_equal(got, want);
    free(got);
    bs_profile_free(&p);
}

static void assert_reads_as(const char *text, const char *want) { assert_reads_as_n(text, strlen(text), want); }

static void assert_fails_at(const char *text, size_t len, uint64_t line, uint64_t offset, const char *msg_part)
{
    bs_profile p;
    bs_read_error e;
    assert_int_equal(read_folded_n(text, len, &p, &e), -1);
    assert_string_equal(e.file, "in.folded");
    if (e.line != line || e.offset != offset || !strstr(e.msg, msg_part))
        fail_msg("want line %llu offset %llu '%s', got line %llu offset %llu '%s'", (unsigned long long)line,
                 (unsigned long long)offset, msg_part, (unsigned long long)e.line, (unsigned long long)e.offset,
                 e.msg);
    assert_int_equal(p.n_trees, 0); /* nothing half-read is left */
    bs_profile_free(&p);
}

#define FAILS_AT(lit, line, off, part) assert_fails_at((lit), sizeof(lit) - 1, (line), (off), (part))

static char *folded_text(const bs_profile *p)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    bs_folded_opts o = {.ns_per_unit = 1};
    OK(bs_write_folded(out, p, &o));
    assert_int_equal(fclose(out), 0);
    return text;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Folded text with equal stacks summed and lines sorted: two texts that a
 * reader turns into the same stacks and weights normalise to the same. */
static char *normalise(const char *text)
{
    size_t n = 0, cap = 1024;
    char **lines = malloc(cap * sizeof *lines), *copy = strdup(text);
    assert_true(lines && copy);
    for (char *l = strtok(copy, "\n"); l; l = strtok(NULL, "\n")) {
        if (n == cap)
            lines = realloc(lines, (cap *= 2) * sizeof *lines);
        lines[n++] = l;
    }
    qsort(lines, n, sizeof *lines, cmp_str);
    tu_str out = {0};
    tu_put(&out, "%s", "");
    for (size_t i = 0; i < n;) {
        const char *sp = strrchr(lines[i], ' ');
        size_t stack_len = (size_t)(sp - lines[i]);
        unsigned long long sum = 0;
        size_t j = i;
        for (; j < n && strncmp(lines[j], lines[i], stack_len + 1) == 0 && strrchr(lines[j], ' ') == lines[j] + stack_len; j++)
            sum += strtoull(lines[j] + stack_len + 1, NULL, 10);
        tu_put(&out, "%.*s %llu\n", (int)stack_len, lines[i], sum);
        i = j;
    }
    free(lines);
    free(copy);
    return out.s;
}

static void assert_same_stacks(const char *a, const char *b)
{
    char *na = normalise(a), *nb = normalise(b);
    if (strcmp(na, nb) != 0) {
        size_t i = 0, line = 1;
        while (na[i] == nb[i])
            line += na[i++] == '\n';
        fail_msg("line %zu of the sorted stacks differs: '%.80s' vs '%.80s'", line, na + i - (i > 40 ? 40 : i),
                 nb + i - (i > 40 ? 40 : i));
    }
    free(na);
    free(nb);
}

static unsigned char *bspy_bytes(const bs_profile *p, size_t *len)
{
    char *data = NULL;
    FILE *out = open_memstream(&data, len);
    assert_non_null(out);
    OK(bs_write_bspy(out, p, NULL));
    assert_int_equal(fclose(out), 0);
    return (unsigned char *)data;
}

/* Every field of two profiles is equal. */
static void assert_profiles_equal(const bs_profile *a, const bs_profile *b)
{
    assert_int_equal(a->frames.n, b->frames.n);
    for (uint32_t i = 0; i < a->frames.n; i++)
        assert_string_equal(bs_frame_name(&a->frames, i), bs_frame_name(&b->frames, i));
    assert_int_equal(a->unit, b->unit);
    assert_string_equal(a->meta.node, b->meta.node);
    assert_string_equal(a->meta.otp_release, b->meta.otp_release);
    assert_string_equal(a->meta.source, b->meta.source);
    assert_string_equal(a->meta.options, b->meta.options);
    assert_true(a->meta.start_unix_us == b->meta.start_unix_us);
    assert_string_equal(a->truncated, b->truncated);
    assert_string_equal(a->notes, b->notes);
    assert_int_equal(a->sleep_frame, b->sleep_frame);
    assert_int_equal(a->gc_frame, b->gc_frame);
    assert_int_equal(a->start_ns, b->start_ns);
    assert_int_equal(a->duration_ns, b->duration_ns);
    assert_int_equal(a->has_timeline, b->has_timeline);
    assert_int_equal(a->timeline_truncated, b->timeline_truncated);
    assert_int_equal(a->n_trees, b->n_trees);
    for (uint32_t ti = 0; ti < a->n_trees; ti++) {
        const bs_ptree *x = &a->trees[ti], *y = &b->trees[ti];
        assert_int_equal(x->n_nodes, y->n_nodes);
        assert_int_equal(x->synthetic_root, y->synthetic_root);
        assert_int_equal(x->events, y->events);
        assert_int_equal(x->dropped, y->dropped);
        for (uint32_t i = 0; i < x->n_nodes; i++) {
            assert_int_equal(x->nodes[i].parent, y->nodes[i].parent);
            assert_int_equal(x->nodes[i].frame, y->nodes[i].frame);
            assert_int_equal(x->nodes[i].self_ns, y->nodes[i].self_ns);
            assert_int_equal(x->nodes[i].total_ns, y->nodes[i].total_ns);
            assert_int_equal(x->nodes[i].calls, y->nodes[i].calls);
        }
        assert_int_equal(x->n_spans, y->n_spans);
        for (uint32_t i = 0; i < x->n_spans; i++) { /* (not memcmp: padding) */
            assert_int_equal(x->spans[i].node, y->spans[i].node);
            assert_int_equal(x->spans[i].start_ns, y->spans[i].start_ns);
            assert_int_equal(x->spans[i].end_ns, y->spans[i].end_ns);
        }
    }
}

/* ---- folded: grammar ---------------------------------------------------- */

static void test_folded_basic(void **state)
{
    (void)state;
    assert_reads_as("a;b 3\na;c 2\na 1\na;b 4\n", "[synthetic all]\n"
                                                  "  a = 1\n"
                                                  "  a b = 7\n"
                                                  "  a c = 2\n");
    bs_profile p;
    bs_read_error e;
    OK(read_folded_s("a;b 3\na;c 2\na 1\n", &p, &e));
    assert_int_equal(p.trees[0].nodes[0].total_ns, 6); /* totals computed */
    assert_int_equal(p.trees[0].nodes[1].total_ns, 6);
    assert_int_equal(p.trees[0].nodes[1].calls, 0);    /* folded input has no call counts */
    assert_string_equal(p.meta.source, "in.folded");
    assert_int_equal(p.has_timeline, 0);
    bs_profile_free(&p);
    /* empty input: a valid profile without trees */
    OK(read_folded_n("", 0, &p, &e));
    assert_int_equal(p.n_trees, 0);
    bs_profile_free(&p);
    OK(read_folded_s("\n\n  \n\r\n", &p, &e));
    assert_int_equal(p.n_trees, 0);
    bs_profile_free(&p);
}

/* Each kind of malformed folded input, and its neighbours. */
static void test_folded_malformed_table(void **state)
{
    (void)state;
    FAILS_AT("not a valid line\n", 1, 0, "expected 'frame;frame;... count'");
    assert_reads_as("a;b;d 2.5\n", "[synthetic all]\n  a = 0\n  a b = 0\n  a b d = 2\n"); /* truncated */
    assert_reads_as("a;b 5.\n", "[synthetic all]\n  a = 0\n  a b = 5\n");
    FAILS_AT("a;b .5\n", 1, 0, "expected");
    FAILS_AT("a;b 1.2.3\n", 1, 0, "expected");
    assert_reads_as("a;b\t7\n", "[synthetic all]\n  a = 0\n  a b = 7\n");
    assert_reads_as("a;b;e  3\n", "[synthetic all]\n  a = 0\n  a b = 0\n  a b e = 3\n"); /* no "e " */
    assert_reads_as("x;y 4\r\n", "[synthetic all]\n  x = 0\n  x y = 4\n");
    FAILS_AT("a;;f 1\n", 1, 0, "empty frame name at column 3");
    FAILS_AT(";lead 2\n", 1, 0, "empty frame name at column 1");
    FAILS_AT("trail; 2\n", 1, 0, "empty frame name at column 7");
    assert_reads_as("w;z 12 34\n", "[synthetic all]\n  w = 0\n  w z = 34\n"); /* differential: last column */
    assert_reads_as("caf\xe9 1\n", "[synthetic all]\n  caf\xEF\xBF\xBD = 1\n");
    assert_reads_as("a\x01" "b;c\x7f 1\n", "[synthetic all]\n  a?b = 0\n  a?b c? = 1\n");
    assert_fails_at("a;b\0c 1\n", 8, 1, 0, "a NUL byte at column 4: folded stacks are text");
    assert_fails_at("x 1\ny;\0 2\n", 11, 2, 4, "a NUL byte at column 3");
    FAILS_AT(" 5\n", 1, 0, "no stack before the count");
    FAILS_AT("a;b 18446744073709551616\n", 1, 0, "does not fit in 64 bits");
    FAILS_AT("a;b 99999999999999999999999\n", 1, 0, "does not fit in 64 bits");
    assert_reads_as("a 18446744073709551615\n", "[synthetic all]\n  a = 18446744073709551615\n");
    FAILS_AT("a;b\n", 1, 0, "expected");
    FAILS_AT("a;b -3\n", 1, 0, "expected");
    FAILS_AT("a;b 1e3\n", 1, 0, "expected");
    assert_reads_as("a;b 1000000000000000000\n", "[synthetic all]\n  a = 0\n  a b = 1000000000000000000\n");
    /* counts that add up past 2^64 */
    char big[256];
    snprintf(big, sizeof big, "a 1000000000000000000\n");
    tu_str many = {0};
    for (int i = 0; i < 19; i++)
        tu_put(&many, "%s", big);
    bs_profile p;
    bs_read_error e;
    assert_int_equal(read_folded_s(many.s, &p, &e), -1);
    assert_int_equal(e.line, 19);
    assert_non_null(strstr(e.msg, "2^64"));
    bs_profile_free(&p);
    free(many.s);
}

static void test_folded_error_line_and_offset(void **state)
{
    (void)state;
    /* lines: "a 1" (0), "" (4), "b;c 2" (5), "bad" (11) */
    FAILS_AT("a 1\n\nb;c 2\nbad\nd 4\n", 4, 11, "ends in 'bad'");
    FAILS_AT("a 1\r\n\r\nb;;c 2\r\n", 3, 7, "column 3");
    FAILS_AT("\xEF\xBB\xBF" "a 1\nno count", 2, 7, "expected"); /* last line without LF */
    /* the excerpt in the message is printable ASCII */
    bs_profile p;
    bs_read_error e;
    assert_int_equal(read_folded_s("ok 1\nx\x01\x1b[31m\xff\n", &p, &e), -1);
    assert_int_equal(e.line, 2);
    for (const char *c = e.msg; *c; c++)
        assert_true(*c >= 0x20 && *c < 0x7F);
    bs_profile_free(&p);
    /* a NULL err is allowed */
    FILE *f = file_of("bad\n", 4);
    assert_int_equal(bs_read_folded(f, "x", &p, NULL), -1);
    fclose(f);
    bs_profile_free(&p);
}

/* Input is read in blocks that grow from 64 KiB to 4 MiB: lines cut by a
 * block boundary are whole, and line numbers and offsets stay exact far
 * into the input. */
static void test_folded_block_boundaries(void **state)
{
    (void)state;
    const int lines = tu_small() ? 30000 : 200000;
    tu_str t = {0};
    uint64_t s = 3, want_total = 0;
    for (int i = 0; i < lines; i++) {
        unsigned k = (unsigned)(tu_rand(&s) % 7), pad = (unsigned)(tu_rand(&s) % 90);
        tu_put(&t, "<0.%u.0>;m:f%u/1;m:g%.*s/0 %u\n", k % 2, k, (int)pad,
               "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", k + 1);
        want_total += k + 1;
    }
    bs_profile p;
    bs_read_error e;
    OK(read_folded_n(t.s, t.len, &p, &e));
    assert_int_equal(p.n_trees, 2);
    assert_int_equal(p.trees[0].nodes[0].total_ns + p.trees[1].nodes[0].total_ns, want_total);
    bs_profile_free(&p);
    size_t bad_at = t.len;
    tu_put(&t, "no count here\nx 1\n");
    assert_fails_at(t.s, t.len, (uint64_t)lines + 1, bad_at, "expected");
    free(t.s);
}

static void test_folded_pid_roots(void **state)
{
    (void)state;
    assert_reads_as("<0.1.0>;m:f/1 3\n"
                    "<0.2.0> my_server;m:g/0 2\n"
                    "<0.1.0> 1\n"
                    "x;y 4\n"
                    "<0.1.0>;m:f/1;m:h/2 5\n"
                    "<0.1>;a 1\n"
                    "<0.1.0>x;a 1\n"
                    "<0.1.0> ;a 1\n"
                    "<12.345.6789> '$name';a 1\n",
                    "[<0.1.0>] = 1\n"
                    "  m:f/1 = 3\n"
                    "  m:f/1 m:h/2 = 5\n"
                    "[<0.2.0> my_server]\n"
                    "  m:g/0 = 2\n"
                    "[synthetic all]\n"
                    "  x = 0\n"
                    "  x y = 4\n"
                    "  <0.1> = 0\n"
                    "  <0.1> a = 1\n"
                    "  <0.1.0>x = 0\n"
                    "  <0.1.0>x a = 1\n"
                    "  <0.1.0>_ = 0\n"
                    "  <0.1.0>_ a = 1\n"
                    "[<12.345.6789> '$name']\n"
                    "  a = 1\n");
}

static void test_folded_crlf_bom_blank_lines(void **state)
{
    (void)state;
    assert_reads_as("\xEF\xBB\xBF" "a;b 1\r\n\r\n   \r\n\t\na;b 2 \t\r\nc 3", "[synthetic all]\n"
                                                                           "  a = 0\n"
                                                                           "  a b = 3\n"
                                                                           "  c = 3\n");
    /* a BOM anywhere else is a name's first character, which names never
     * start with (written first in a file, it would be taken for a BOM:
     * found by fuzz/fuzz_folded); inside a name it stays */
    assert_reads_as("a 1\n\xEF\xBB\xBF" "a 1\nb\xEF\xBB\xBF;\xEF\xBB\xBF 1\n",
                    "[synthetic all]\n  a = 1\n  ?a = 1\n  b\xEF\xBB\xBF = 0\n  b\xEF\xBB\xBF ? = 1\n");
}

static void test_folded_differential(void **state)
{
    (void)state;
    /* difffolded.pl output: stack c1 c2; widths (and so ours) come from c2 */
    assert_reads_as("a;b 10 4\na;c 5 5\na;d 0 3\n", "[synthetic all]\n"
                                                    "  a = 0\n"
                                                    "  a b = 4\n"
                                                    "  a c = 5\n"
                                                    "  a d = 3\n");
    assert_reads_as("a;b 2.5 7\n", "[synthetic all]\n  a = 0\n  a b = 7\n");
    assert_reads_as("12 34\n", "[synthetic all]\n  12 = 34\n"); /* no stack left: "12" is the frame */
    assert_reads_as("x 12 7 5\n", "[synthetic all]\n  x_12 = 5\n"); /* one extra column only */
}

static void test_folded_eflame(void **state)
{
    (void)state;
    /* eflame's stacks.out: one uncounted line per 1 ms, pid first, `sleep`
     * when scheduled out; and the same after stack_to_flame.sh (uniq -c). */
    static const char raw[] = "<0.327.0>;erlang:apply/2;w:-w4/1-fun-1-/2;w:worker/2;w:fib/1\n"
                              "<0.327.0>;erlang:apply/2;w:-w4/1-fun-1-/2;w:worker/2;w:fib/1\n"
                              "<0.327.0>;erlang:apply/2;w:-w4/1-fun-1-/2;w:worker/2;sleep\n"
                              "<0.328.0>;erlang:apply/2;w:-w4/1-fun-1-/2;w:worker/2;w:fib/1\n";
    static const char want[] = "[<0.327.0>]\n"
                               "  erlang:apply/2 = 0\n"
                               "  erlang:apply/2 w:-w4/1-fun-1-/2 = 0\n"
                               "  erlang:apply/2 w:-w4/1-fun-1-/2 w:worker/2 = 0\n"
                               "  erlang:apply/2 w:-w4/1-fun-1-/2 w:worker/2 w:fib/1 = 2\n"
                               "  erlang:apply/2 w:-w4/1-fun-1-/2 w:worker/2 SLEEP = 1\n"
                               "[<0.328.0>]\n"
                               "  erlang:apply/2 = 0\n"
                               "  erlang:apply/2 w:-w4/1-fun-1-/2 = 0\n"
                               "  erlang:apply/2 w:-w4/1-fun-1-/2 w:worker/2 = 0\n"
                               "  erlang:apply/2 w:-w4/1-fun-1-/2 w:worker/2 w:fib/1 = 1\n";
    assert_reads_as(raw, want);
    assert_reads_as("<0.327.0>;erlang:apply/2;w:-w4/1-fun-1-/2;w:worker/2;w:fib/1   2\n"
                    "<0.327.0>;erlang:apply/2;w:-w4/1-fun-1-/2;w:worker/2;sleep   1\n"
                    "<0.328.0>;erlang:apply/2;w:-w4/1-fun-1-/2;w:worker/2;w:fib/1   1\n",
                    want);
    bs_profile p;
    bs_read_error e;
    OK(read_folded_s(raw, &p, &e));
    assert_int_equal(p.trees[0].nodes[5].frame, p.sleep_frame); /* drop_sleep works on eflame input */
    bs_profile_free(&p);
    /* outside pid trees "sleep" is an ordinary name, and an uncounted line
     * must start with a pid */
    assert_reads_as("libc;sleep 2\n", "[synthetic all]\n  libc = 0\n  libc sleep = 2\n");
    FAILS_AT("<0.1.0>;a\nb;c\n", 2, 10, "expected");
}

/* The shortcut for frames shared with the previous line must only reuse
 * frames that are whole and equal in both lines. */
static void test_folded_shared_prefixes(void **state)
{
    (void)state;
    assert_reads_as("a;bc 1\n"
                    "a;b 1\n"     /* "a;b" is a byte prefix of "a;bc" */
                    "a;b;c 1\n"
                    "a;bc;d 1\n"
                    "ab;c 1\n"    /* "a" vs "ab" */
                    "a;bc;d 1\n"  /* the same stack twice, not adjacent */
                    "a;bc;d 1\n"  /* ... and adjacent */
                    "a 1\n"       /* a prefix of everything */
                    "a;bc;d;e 1\n"
                    "<0.1.0>;a 1\n"
                    "<0.1.0>;a;b 1\n"
                    "a;b 1\n",    /* same text after the pid, other tree */
                    "[synthetic all]\n"
                    "  a = 1\n"
                    "  a bc = 1\n"
                    "  a b = 2\n"
                    "  a b c = 1\n"
                    "  a bc d = 3\n"
                    "  ab = 0\n"
                    "  ab c = 1\n"
                    "  a bc d e = 1\n"
                    "[<0.1.0>]\n"
                    "  a = 1\n"
                    "  a b = 1\n");
}

static void test_folded_deep_stack(void **state)
{
    (void)state;
    const uint32_t depth = tu_small() ? 10000 : 100000;
    tu_str t = {0};
    tu_put(&t, "<0.9.0>");
    for (uint32_t i = 0; i < depth; i++)
        tu_put(&t, ";m:fib/1");
    tu_put(&t, " 7\n<0.9.0>");
    for (uint32_t i = 0; i < depth / 2; i++)
        tu_put(&t, ";m:fib/1");
    tu_put(&t, " 3\n");
    bs_profile p;
    bs_read_error e;
    OK(read_folded_s(t.s, &p, &e));
    assert_int_equal(p.n_trees, 1);
    assert_int_equal(p.trees[0].n_nodes, depth + 1); /* recursion is not collapsed */
    assert_int_equal(p.trees[0].nodes[depth].self_ns, 7);
    assert_int_equal(p.trees[0].nodes[depth / 2].self_ns, 3);
    assert_int_equal(p.trees[0].nodes[0].total_ns, 10);
    bs_profile_free(&p);
    free(t.s);
}

static void test_folded_line_too_long(void **state)
{
    (void)state;
    if (tu_small())
        return; /* 64 MiB through valgrind is too slow; the other variants run it */
    size_t n = (64u << 20) + 10;
    char *text = malloc(n + 16);
    assert_non_null(text);
    memcpy(text, "a 1\n", 4);
    memset(text + 4, 'x', n - 4);
    memcpy(text + n, " 1\n", 3);
    assert_fails_at(text, n + 3, 2, 4, "longer than 64 MiB");
    free(text);
}

/* Memory follows distinct stacks: a million lines of 30 stacks make 30
 * stacks' worth of nodes. */
static void test_folded_repeated_stacks(void **state)
{
    (void)state;
    const int lines = tu_small() ? 20000 : 1000000;
    tu_str t = {0};
    uint64_t s = 5, want_total = 0;
    for (int i = 0; i < lines; i++) {
        unsigned k = (unsigned)(tu_rand(&s) % 30);
        tu_put(&t, "proc_lib:init_p/5;gen_server:loop/7;m:f%u/1;m:g%u/2 %u\n", k % 5, k, k + 1);
        want_total += k + 1;
    }
    bs_profile p;
    bs_read_error e;
    OK(read_folded_s(t.s, &p, &e));
    assert_int_equal(p.trees[0].n_nodes, 1 + 2 + 5 + 30);
    assert_int_equal(p.trees[0].nodes[0].total_ns, want_total);
    bs_profile_free(&p);
    free(t.s);
}

/* More distinct stacks than the whole-stack cache holds: it fills up,
 * switches itself off, and the result is still exact. */
static void test_folded_distinct_stacks(void **state)
{
    (void)state;
    const int lines = tu_small() ? 70000 : 150000; /* 2 stacks each: > 131072 */
    tu_str t = {0};
    for (int i = 0; i < lines; i++)
        tu_put(&t, "r;x%d;y%d 1\nr;x%d 2\n", i, i % 7, i);
    bs_profile p;
    bs_read_error e;
    OK(read_folded_s(t.s, &p, &e));
    const bs_ptree *tr = &p.trees[0];
    assert_int_equal(tr->n_nodes, 2 + 2 * (uint32_t)lines);
    assert_int_equal(tr->nodes[0].total_ns, 3 * (uint64_t)lines);
    for (uint32_t i = 2; i < tr->n_nodes; i += 2) {
        assert_int_equal(tr->nodes[i].self_ns, 2);     /* x<i> */
        assert_int_equal(tr->nodes[i + 1].self_ns, 1); /* x<i>;y<i%7> */
        assert_int_equal(tr->nodes[i + 1].parent, i);
    }
    bs_profile_free(&p);
    free(t.s);
}

static void test_folded_from_pipe(void **state)
{
    (void)state;
    int fds[2];
    OK(pipe(fds));
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        FILE *w = fdopen(fds[1], "w");
        for (int i = 0; i < 200000; i++)
            fprintf(w, "<0.%d.0>;a;b%d 2\n", i % 3, i % 11);
        fclose(w);
        _exit(0);
    }
    close(fds[1]);
    FILE *r = fdopen(fds[0], "r");
    bs_profile p;
    bs_read_error e;
    OK(bs_read_folded(r, "-", &p, &e));
    fclose(r);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_int_equal(p.n_trees, 3);
    uint64_t total = 0;
    for (uint32_t i = 0; i < p.n_trees; i++)
        total += p.trees[i].nodes[0].total_ns;
    assert_int_equal(total, 400000);
    bs_profile_free(&p);
}

/* ---- hostile names ------------------------------------------------------ */

typedef struct hostile {
    char names[48][48];
    size_t lens[48];
} hostile;

/* ("sleep" is missing on purpose: under a pid it is read as eflame's SLEEP.) */
static const char *const AWKWARD[] = {
    "<script>alert(1)</script>", "</script><!--", "a&b&amp;", "\"quoted\"", "it's", "back\\slash",
    "semi;colon", "tab\there", "new\nline", "cr\rret", "nul\0byte", "\xF0\x9F\x94\xA5 fire", "caf\xC3\xA9",
    "bad\xC3", "\xFF\xFE", "f 12", "f 1.5", "f 1.", "trailing ", "  lead", "<0.1.0>", "SLEEP", "GC",
    "]]>", "${x}", "%s%n", "`tick`", "#59;", "-->", "\xE2\x80\xAErtl", "x;", ";x", "12",
};
#define N_AWKWARD (sizeof AWKWARD / sizeof AWKWARD[0])

static int hostile_namer(void *ctx, const bs_key *k, char *buf, size_t cap)
{
    const hostile *h = ctx;
    size_t i = (size_t)(k->function % 48), n = h->lens[i] < cap - 1 ? h->lens[i] : cap - 1;
    memcpy(buf, h->names[i], n);
    buf[n] = '\0';
    return (int)n;
}

static void fill_hostile(hostile *h, uint64_t *s)
{
    for (size_t i = 0; i < 48; i++) {
        if (i < N_AWKWARD) {
            const char *a = AWKWARD[i];
            h->lens[i] = strncmp(a, "nul", 3) == 0 ? 8 : strlen(a); /* "nul\0byte" */
            memcpy(h->names[i], a, h->lens[i]);
            continue;
        }
        h->lens[i] = 1 + (size_t)(tu_rand(s) % 40);
        for (size_t j = 0; j < h->lens[i]; j++) {
            static const char pick[] = " ;\t\n\r0123456789.'\\\"<>&";
            uint64_t r = tu_rand(s);
            h->names[i][j] = (char)((r & 1) ? pick[(r >> 8) % (sizeof pick - 1)] : (char)(r >> 16));
        }
    }
}

/* A profile of four processes with n random calls (and returns, reschedules,
 * GCs) each, of functions with hostile names. */
static void hostile_profile(bs_profile *prof, uint64_t seed, int timeline, size_t n)
{
    static hostile h;
    uint64_t s = seed;
    fill_hostile(&h, &s);
    tu_event *ev = malloc(n * sizeof *ev);
    assert_non_null(ev);
    bs_span_quota quota;
    bs_span_quota_init(&quota, n * 5 / 6);
    OK(bs_profile_init(prof));
    for (int pi = 0; pi < 4; pi++) {
        tu_random_events(ev, n, seed * 7 + (uint64_t)pi, 47);
        bs_proc p;
        OK(bs_proc_init(&p, NULL, 0, 1, 1));
        if (timeline)
            bs_proc_enable_timeline(&p, &quota);
        for (size_t i = 0; i < n; i++)
            OK(tu_feed(&p, &ev[i]));
        bs_proc_flush(&p, ev[n - 1].t + 5000);
        static const char *const labels[] = {"<0.80.0>", "<0.81.0> my_server", "<0.82.0> '<b>&\"'", "weird\x01label"};
        OK(bs_profile_add_proc(prof, &p, labels[pi], hostile_namer, &h));
        bs_proc_free(&p);
    }
    free(ev);
    bs_profile_compute_totals(prof);
}

/* Folded text written from hostile names reads back to the same text. */
static void test_folded_hostile_round_trip(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        bs_profile prof, back, again;
        bs_read_error e;
        hostile_profile(&prof, seed, 0, 3000);
        char *w1 = folded_text(&prof);
        char why[128] = "";
        if (tu_check_folded(w1, strlen(w1), why, sizeof why) != 0)
            fail_msg("seed %llu: %s", (unsigned long long)seed, why);
        if (read_folded_s(w1, &back, &e) != 0)
            fail_msg("line %llu: %s", (unsigned long long)e.line, e.msg);
        char *w2 = folded_text(&back);
        /* the engine may give two sibling calls the same name (here: arities
         * are not in the names); the reader merges them, nothing else changes */
        assert_same_stacks(w1, w2);
        OK(read_folded_s(w2, &again, &e));
        char *w3 = folded_text(&again);
        assert_string_equal(w2, w3); /* from then on, exactly the same text */
        free(w3);
        /* every name of the original that has time reads back identically */
        assert_int_equal(back.trees[0].nodes[0].total_ns, prof.trees[0].nodes[0].total_ns);
        free(w1), free(w2);
        bs_profile_free(&prof), bs_profile_free(&back), bs_profile_free(&again);
    }
}

/* ---- .bspy -------------------------------------------------------------- */

static void test_bspy_round_trip(void **state)
{
    (void)state;
    bs_profile prof, back;
    bs_read_error e;
    hostile_profile(&prof, 11, 1, 3000);
    assert_true(prof.has_timeline);
    assert_true(prof.timeline_truncated); /* the quota was too small */
    snprintf(prof.meta.node, sizeof prof.meta.node, "app@host-\xC3\xA9");
    snprintf(prof.meta.otp_release, sizeof prof.meta.otp_release, "27");
    snprintf(prof.meta.source, sizeof prof.meta.source, "beamspy:apply({m, f, [<<\"a;b\">>]})");
    snprintf(prof.meta.options, sizeof prof.meta.options, "#{timeline => true, output => \"x.bspy\"}");
    prof.meta.start_unix_us = -1234567; /* before the epoch, still kept */
    prof.start_ns = 987654321;
    prof.duration_ns = 123456789;
    prof.trees[1].events = 77;
    prof.trees[1].dropped = 3;
    prof.trees[2].synthetic_root = 1;
    bs_profile_set_truncated(&prof, "max_memory");
    snprintf(prof.notes, sizeof prof.notes, "CPU samples at 199 Hz: 12 samples; C frames unwound with DWARF \xE2\x9C\x93");
    size_t len, len2;
    unsigned char *bytes = bspy_bytes(&prof, &len);
    if (read_bspy_n(bytes, len, &back, &e) != 0)
        fail_msg("offset %llu: %s", (unsigned long long)e.offset, e.msg);
    assert_profiles_equal(&prof, &back);
    unsigned char *again = bspy_bytes(&back, &len2); /* deterministic, and stable */
    assert_int_equal(len, len2);
    assert_memory_equal(bytes, again, len);
    free(again);
    again = bspy_bytes(&prof, &len2);
    assert_memory_equal(bytes, again, len);
    /* the layout: magic, version, flags, then META */
    assert_memory_equal(bytes, "\x89" "BSPY\r\n\x1a\x01\0\0\0\0\0\0\0META", 20);
    free(bytes), free(again);
    bs_profile_free(&back);
    /* an empty profile, units in counts */
    bs_profile empty;
    OK(bs_profile_init(&empty));
    empty.unit = BS_UNIT_COUNT;
    bytes = bspy_bytes(&empty, &len);
    OK(read_bspy_n(bytes, len, &back, &e));
    assert_profiles_equal(&empty, &back);
    free(bytes);
    bs_profile_free(&back), bs_profile_free(&empty), bs_profile_free(&prof);
}

/* folded -> profile -> .bspy -> profile: the same folded text. */
static void test_bspy_from_folded(void **state)
{
    (void)state;
    static const char text[] = "<0.1.0>;a;b 3\n<0.1.0>;a 2\nx;y 4\n<0.2.0> srv;c 1\n";
    bs_profile p, q;
    bs_read_error e;
    OK(read_folded_s(text, &p, &e));
    size_t len;
    unsigned char *bytes = bspy_bytes(&p, &len);
    OK(read_bspy_n(bytes, len, &q, &e));
    assert_profiles_equal(&p, &q);
    char *w = folded_text(&q);
    assert_string_equal(w, "<0.1.0>;a 2\n<0.1.0>;a;b 3\nx;y 4\n<0.2.0> srv;c 1\n");
    free(w), free(bytes);
    bs_profile_free(&p), bs_profile_free(&q);
}

static void test_bspy_truncated(void **state)
{
    (void)state;
    bs_profile prof, back;
    bs_read_error e;
    hostile_profile(&prof, 3, 1, 40);
    size_t len;
    unsigned char *bytes = bspy_bytes(&prof, &len);
    size_t step = tu_small() ? 7 : 1;
    for (size_t cut = 0; cut < len; cut += (cut < 64 || cut > len - 64) ? 1 : step) {
        if (read_bspy_n(bytes, cut, &back, &e) == 0)
            fail_msg("a file cut at %zu of %zu bytes was accepted", cut, len);
        assert_true(e.offset <= cut);
        assert_int_equal(e.line, 0);
        assert_true(strstr(e.msg, "truncated") || strstr(e.msg, "bad magic"));
        assert_int_equal(back.n_trees, 0);
        bs_profile_free(&back);
    }
    /* and bytes after the end */
    unsigned char *longer = malloc(len + 1);
    memcpy(longer, bytes, len);
    longer[len] = '\n';
    assert_int_equal(read_bspy_n(longer, len + 1, &back, &e), -1);
    assert_int_equal(e.offset, len);
    assert_non_null(strstr(e.msg, "after the end"));
    free(longer), free(bytes);
    bs_profile_free(&prof);
}

static void test_bspy_corrupt_bytes(void **state)
{
    (void)state;
    bs_profile prof, back;
    bs_read_error e;
    hostile_profile(&prof, 5, 1, 40);
    size_t len;
    unsigned char *bytes = bspy_bytes(&prof, &len);
    size_t step = tu_small() ? 7 : 1;
    int by_checksum = 0;
    for (size_t i = 0; i < len; i += step) {
        unsigned flip = i % 3 == 0 ? 0xFF : 1u << (i % 8);
        bytes[i] ^= (unsigned char)flip;
        if (read_bspy_n(bytes, len, &back, &e) == 0)
            fail_msg("byte %zu ^ %u was not detected", i, flip);
        if (e.offset > len)
            fail_msg("byte %zu ^ %u: offset %llu: %s", i, flip, (unsigned long long)e.offset, e.msg);
        by_checksum += strstr(e.msg, "checksum") != NULL;
        bs_profile_free(&back);
        bytes[i] ^= (unsigned char)flip;
    }
    assert_true(by_checksum > 0); /* self times, names...: only the CRC sees those */
    OK(read_bspy_n(bytes, len, &back, &e));
    bs_profile_free(&back);
    free(bytes);
    bs_profile_free(&prof);
}

/* A hand-built file: sections are appended, END. adds the CRC. */
typedef struct mk {
    tu_str b;
} mk;

static void mk_bytes(mk *m, const void *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tu_put(&m->b, "%c", ((const char *)p)[i]);
}

static void mk_u32(mk *m, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16), (unsigned char)(v >> 24)};
    mk_bytes(m, b, 4);
}

static void mk_u64(mk *m, uint64_t v)
{
    mk_u32(m, (uint32_t)v);
    mk_u32(m, (uint32_t)(v >> 32));
}

static void mk_start(mk *m)
{
    memset(m, 0, sizeof *m);
    tu_put(&m->b, "%s", "");
    mk_bytes(m, BS_BSPY_MAGIC, 8);
    mk_u32(m, 1);
    mk_u32(m, 0);
    mk_bytes(m, "META", 4);
    mk_u64(m, 40 + 5 * 4);
    mk_u32(m, 0), mk_u32(m, 0), mk_u64(m, 0), mk_u64(m, 0), mk_u64(m, 0), mk_u32(m, 0), mk_u32(m, 1);
    for (int i = 0; i < 5; i++)
        mk_u32(m, 0);
    mk_bytes(m, "FRAM", 4);
    mk_u64(m, 4 + 4 + 5 + 4 + 2 + 4 + 1);
    mk_u32(m, 3);
    mk_u32(m, 5), mk_bytes(m, "SLEEP", 5);
    mk_u32(m, 2), mk_bytes(m, "GC", 2);
    mk_u32(m, 1), mk_bytes(m, "f", 1);
}

static void mk_tree_head(mk *m, uint64_t section_len, uint32_t n_nodes)
{
    mk_bytes(m, "TREE", 4);
    mk_u64(m, section_len);
    mk_u32(m, 0), mk_u64(m, 0), mk_u64(m, 0), mk_u32(m, n_nodes);
}

static void mk_node(mk *m, uint32_t parent, uint32_t frame, uint64_t self)
{
    mk_u32(m, parent), mk_u32(m, frame), mk_u64(m, self), mk_u64(m, 0);
}

static void mk_end(mk *m)
{
    mk_bytes(m, "END.", 4);
    mk_u64(m, 4);
    bs_crc32 c;
    bs_crc32_init(&c);
    bs_crc32_update(&c, m->b.s, m->b.len);
    mk_u32(m, bs_crc32_value(&c));
}

/* A valid tree of n nodes (a chain) and the spans given. */
static void mk_tree(mk *m, uint32_t n, const uint64_t (*spans)[3], uint32_t n_spans)
{
    mk_tree_head(m, BS_BSPY_TREE_FIXED + 24ull * n + 20ull * n_spans, n);
    for (uint32_t i = 0; i < n; i++)
        mk_node(m, i ? i - 1 : UINT32_MAX, 2, 1);
    mk_u32(m, n_spans);
    for (uint32_t i = 0; i < n_spans; i++)
        mk_u32(m, (uint32_t)spans[i][0]), mk_u64(m, spans[i][1]), mk_u64(m, spans[i][2]);
}

static void assert_mk(mk *m, int ok, const char *msg_part)
{
    bs_profile p;
    bs_read_error e;
    int rc = read_bspy_n(m->b.s, m->b.len, &p, &e);
    if (ok && rc != 0)
        fail_msg("refused: offset %llu: %s", (unsigned long long)e.offset, e.msg);
    if (!ok && (rc == 0 || !strstr(e.msg, msg_part)))
        fail_msg("want '%s', got rc %d '%s'", msg_part, rc, rc ? e.msg : "");
    bs_profile_free(&p);
    free(m->b.s);
}

static void test_bspy_forged(void **state)
{
    (void)state;
    mk m;
    mk_start(&m), mk_end(&m), assert_mk(&m, 1, "");
    uint64_t nested[][3] = {{0, 0, 10}, {1, 0, 4}, {2, 1, 3}, {1, 5, 10}, {2, 10, 10}, {0, 12, 12}, {1, 12, 13}};
    mk_start(&m), mk_tree(&m, 3, nested, 7), mk_end(&m), assert_mk(&m, 1, "");
    /* counts that cannot fit: nothing is allocated by them */
    mk_start(&m), mk_tree_head(&m, BS_BSPY_TREE_FIXED + 24, 0xFFFFFFFFu), mk_node(&m, UINT32_MAX, 2, 1),
        mk_u32(&m, 0), mk_end(&m), assert_mk(&m, 0, "cannot fit");
    mk_start(&m), mk_tree_head(&m, (uint64_t)1 << 62, 0x7FFFFFFFu), mk_end(&m), assert_mk(&m, 0, "truncated");
    /* ... and from a regular file, whose size is known, before reading on */
    mk_start(&m), mk_tree_head(&m, (uint64_t)1 << 62, 0x7FFFFFFFu), mk_end(&m);
    FILE *f = file_of(m.b.s, m.b.len);
    bs_profile p;
    bs_read_error e;
    assert_int_equal(bs_read_bspy(f, "f.bspy", &p, &e), -1);
    assert_int_equal(e.offset, 16 + 12 + 60 + 12 + 24);
    assert_non_null(strstr(e.msg, "longer than the rest of the file"));
    fclose(f);
    free(m.b.s);
    mk_start(&m), mk_tree_head(&m, BS_BSPY_TREE_FIXED + 24, 1), mk_node(&m, UINT32_MAX, 2, 1), mk_u32(&m, 1000000),
        mk_end(&m), assert_mk(&m, 0, "spans do not fill");
    mk_start(&m), mk_tree_head(&m, BS_BSPY_TREE_FIXED, 0), mk_u32(&m, 0), mk_end(&m), assert_mk(&m, 0, "without nodes");
    /* the tree invariants */
    mk_start(&m), mk_tree_head(&m, BS_BSPY_TREE_FIXED + 48, 2), mk_node(&m, UINT32_MAX, 2, 1),
        mk_node(&m, 1, 2, 1), mk_u32(&m, 0), mk_end(&m), assert_mk(&m, 0, "node 1: parent 1 is not an earlier node");
    mk_start(&m), mk_tree_head(&m, BS_BSPY_TREE_FIXED + 24, 1), mk_node(&m, 0, 2, 1), mk_u32(&m, 0), mk_end(&m),
        assert_mk(&m, 0, "node 0: parent 0 is not none");
    mk_start(&m), mk_tree_head(&m, BS_BSPY_TREE_FIXED + 24, 1), mk_node(&m, UINT32_MAX, 3, 1), mk_u32(&m, 0),
        mk_end(&m), assert_mk(&m, 0, "frame 3 does not exist");
    mk_start(&m), mk_tree_head(&m, BS_BSPY_TREE_FIXED + 48, 2), mk_node(&m, UINT32_MAX, 2, UINT64_MAX),
        mk_node(&m, 0, 2, 1), mk_u32(&m, 0), mk_end(&m), assert_mk(&m, 0, "more than 2^64");
    /* ... also over several trees: writers add up whole profiles (found by fuzz/fuzz_bspy) */
    mk_start(&m), mk_tree_head(&m, BS_BSPY_TREE_FIXED + 24, 1), mk_node(&m, UINT32_MAX, 2, UINT64_MAX - 2),
        mk_u32(&m, 0), mk_tree_head(&m, BS_BSPY_TREE_FIXED + 24, 1), mk_node(&m, UINT32_MAX, 2, 3), mk_u32(&m, 0),
        mk_end(&m), assert_mk(&m, 0, "more than 2^64");
    uint64_t bad_node[][3] = {{3, 0, 1}};
    mk_start(&m), mk_tree(&m, 3, bad_node, 1), mk_end(&m), assert_mk(&m, 0, "node 3 does not exist");
    uint64_t backwards[][3] = {{0, 5, 4}};
    mk_start(&m), mk_tree(&m, 1, backwards, 1), mk_end(&m), assert_mk(&m, 0, "ends before it starts");
    uint64_t unsorted[][3] = {{0, 5, 6}, {0, 4, 6}};
    mk_start(&m), mk_tree(&m, 1, unsorted, 2), mk_end(&m), assert_mk(&m, 0, "starts before");
    uint64_t overlap[][3] = {{0, 0, 10}, {1, 5, 11}};
    mk_start(&m), mk_tree(&m, 2, overlap, 2), mk_end(&m), assert_mk(&m, 0, "overlaps");
    /* header and sections */
    mk_start(&m), mk_end(&m), m.b.s[8] = 2, assert_mk(&m, 0, "version 2");
    mk_start(&m), mk_end(&m), m.b.s[12] = 1, assert_mk(&m, 0, "header flags");
    mk_start(&m), mk_tree(&m, 1, NULL, 0), mk_bytes(&m, "META", 4), mk_u64(&m, 0), mk_end(&m),
        assert_mk(&m, 0, "out of order");
    mk_start(&m), mk_bytes(&m, "NEW!", 4), mk_u64(&m, 3), mk_bytes(&m, "xyz", 3), mk_tree(&m, 2, NULL, 0), mk_end(&m),
        assert_mk(&m, 1, ""); /* a later minor revision's section is skipped */
    mk_start(&m), m.b.s[m.b.len - 1] ^= 1, mk_end(&m), assert_mk(&m, 1, ""); /* "f" -> "g": CRC recomputed */
    /* NOTE: one string that fills its section, once */
    mk_start(&m), mk_bytes(&m, "NOTE", 4), mk_u64(&m, 4 + 5), mk_u32(&m, 5), mk_bytes(&m, "lost!", 5), mk_end(&m),
        assert_mk(&m, 1, "");
    mk_start(&m), mk_bytes(&m, "NOTE", 4), mk_u64(&m, 4 + 6), mk_u32(&m, 5), mk_bytes(&m, "lost!?", 6), mk_end(&m),
        assert_mk(&m, 0, "NOTE section has 1 unexpected bytes");
    mk_start(&m), mk_bytes(&m, "NOTE", 4), mk_u64(&m, 4 + 3), mk_u32(&m, 3), mk_bytes(&m, "a\0b", 3), mk_end(&m),
        assert_mk(&m, 0, "notes contains a NUL byte");
    mk_start(&m), mk_bytes(&m, "NOTE", 4), mk_u64(&m, 4 + 3000), mk_u32(&m, 3000);
    for (int i = 0; i < 3000; i++)
        mk_bytes(&m, "x", 1);
    mk_end(&m), assert_mk(&m, 0, "notes is 3000 bytes long (at most 2047)");
    mk_start(&m);
    for (int i = 0; i < 2; i++)
        mk_bytes(&m, "NOTE", 4), mk_u64(&m, 4 + 1), mk_u32(&m, 1), mk_bytes(&m, "n", 1);
    mk_end(&m), assert_mk(&m, 0, "section 'NOTE' out of order");
    mk_start(&m), mk_bytes(&m, "END.", 4), mk_u64(&m, 4), mk_u32(&m, 0), assert_mk(&m, 0, "checksum mismatch");
    mk_start(&m), mk_bytes(&m, "END.", 4), mk_u64(&m, 5), mk_bytes(&m, "12345", 5),
        assert_mk(&m, 0, "END. section of 5 bytes");
    /* a frame name longer than the format allows */
    mk_start(&m);
    memcpy(m.b.s + 16 + 12 + 40 + 20 + 12 + 4, "\xff\xff\x01\x00", 4); /* SLEEP's length */
    mk_end(&m), assert_mk(&m, 0, "at most 65535");
    /* a metadata string longer than its field, or than its section */
    mk_start(&m);
    memcpy(m.b.s + 16 + 12 + 40, "\x2c\x01", 2); /* node: 300 bytes */
    mk_end(&m), assert_mk(&m, 0, "node is 300 bytes long (at most 255)");
    mk_start(&m);
    m.b.s[16 + 12 + 40] = 40;
    mk_end(&m), assert_mk(&m, 0, "node runs past the end of its section");
}

static void test_bspy_meta_strings(void **state)
{
    (void)state;
    bs_profile p, q;
    bs_read_error e;
    OK(bs_profile_init(&p));
    /* clean text is kept as is, ';' included; other text is made safe */
    snprintf(p.meta.options, sizeof p.meta.options, "a;b \"c\" <d>&");
    snprintf(p.meta.node, sizeof p.meta.node, "bad\x01\xff");
    size_t len;
    unsigned char *bytes = bspy_bytes(&p, &len);
    OK(read_bspy_n(bytes, len, &q, &e));
    assert_string_equal(q.meta.options, "a;b \"c\" <d>&");
    assert_string_equal(q.meta.node, "bad?\xEF\xBF\xBD");
    free(bytes);
    bs_profile_free(&p), bs_profile_free(&q);
}

/* ---- bs_read_profile_file ----------------------------------------------- */

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static void read_through_fifo(const char *path, const void *data, size_t len, bs_profile *p)
{
    unlink(path);
    OK(mkfifo(path, 0600));
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        FILE *w = fopen(path, "wb");
        fwrite(data, 1, len, w);
        fclose(w);
        _exit(0);
    }
    bs_read_error e;
    if (bs_read_profile_file(path, p, &e) != 0)
        fail_msg("%s: %s", path, e.msg);
    int status;
    waitpid(pid, &status, 0);
    unlink(path);
}

static void test_read_profile_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/bs_readers_XXXXXX", path[256];
    assert_non_null(mkdtemp(dir));
    bs_profile prof, got;
    bs_read_error e;
    hostile_profile(&prof, 9, 1, 3000);
    size_t len;
    unsigned char *bytes = bspy_bytes(&prof, &len);
    char *text = folded_text(&prof);
    /* by content, whatever the name */
    snprintf(path, sizeof path, "%s/profile.folded", dir);
    write_file(path, bytes, len);
    OK(bs_read_profile_file(path, &got, &e));
    assert_profiles_equal(&prof, &got);
    bs_profile_free(&got);
    snprintf(path, sizeof path, "%s/stacks.bspy", dir);
    write_file(path, text, strlen(text));
    OK(bs_read_profile_file(path, &got, &e));
    char *again = folded_text(&got);
    assert_same_stacks(text, again);
    free(again);
    bs_profile_free(&got);
    /* through a pipe, which cannot be rewound after sniffing */
    snprintf(path, sizeof path, "%s/fifo", dir);
    read_through_fifo(path, bytes, len, &got);
    assert_profiles_equal(&prof, &got);
    bs_profile_free(&got);
    read_through_fifo(path, text, strlen(text), &got);
    again = folded_text(&got);
    assert_same_stacks(text, again);
    free(again);
    bs_profile_free(&got);
    read_through_fifo(path, "a 1\n", 4, &got); /* shorter than the magic */
    assert_int_equal(got.trees[0].nodes[1].self_ns, 1);
    bs_profile_free(&got);
    /* errors name the file */
    snprintf(path, sizeof path, "%s/missing", dir);
    assert_int_equal(bs_read_profile_file(path, &got, &e), -1);
    assert_string_equal(e.file, path);
    assert_non_null(strstr(e.msg, "cannot open"));
    bs_profile_free(&got);
    assert_int_equal(bs_read_profile_file(dir, &got, &e), -1); /* a directory */
    bs_profile_free(&got);
    snprintf(path, sizeof path, "%s/cut.bspy", dir);
    write_file(path, bytes, len / 2);
    assert_int_equal(bs_read_profile_file(path, &got, &e), -1);
    assert_non_null(strstr(e.msg, "truncated"));
    bs_profile_free(&got);
    unlink(path);
    snprintf(path, sizeof path, "%s/profile.folded", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/stacks.bspy", dir);
    unlink(path);
    rmdir(dir);
    free(bytes), free(text);
    bs_profile_free(&prof);
}

/* bs_write_file picks the .bspy writer by extension. */
static void test_write_file_bspy(void **state)
{
    (void)state;
    char dir[] = "/tmp/bs_readers_XXXXXX", path[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/p.bspy", dir);
    bs_profile prof, got;
    bs_read_error e;
    hostile_profile(&prof, 13, 1, 3000);
    OK(bs_write_file(path, BS_FORMAT_UNKNOWN, &prof, NULL));
    OK(bs_read_profile_file(path, &got, &e));
    assert_profiles_equal(&prof, &got);
    bs_profile_free(&got), bs_profile_free(&prof);
    unlink(path);
    rmdir(dir);
}

/* The bytes of a whole file (caller frees). */
static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t cap = 1 << 16, n = 0, got;
    unsigned char *buf = malloc(cap);
    assert_non_null(buf);
    while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
    }
    fclose(f);
    *len = n;
    return buf;
}

/* bs_write_memory writes the bytes bs_write_file writes, in every format
 * and with filters; bad input and the size cap are refused with errno and
 * nothing left allocated. */
static void test_write_memory_equals_file(void **state)
{
    (void)state;
    static const bs_format formats[] = {BS_FORMAT_FOLDED, BS_FORMAT_SVG, BS_FORMAT_HTML, BS_FORMAT_SPEEDSCOPE,
                                        BS_FORMAT_CHROME, BS_FORMAT_PERF, BS_FORMAT_BSPY};
    char dir[] = "/tmp/bs_memout_XXXXXX", path[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/p.out", dir);
    bs_profile prof;
    hostile_profile(&prof, 17, 1, 3000);
    snprintf(prof.meta.node, sizeof prof.meta.node, "app@host");
    bs_render_opts plain = {0}, filtered = {0};
    filtered.merge_processes = 1;
    filtered.exclude_re = "lists";
    filtered.title = "in <memory> & \"quoted\"";
    const bs_render_opts *opts[] = {&plain, &filtered};
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        for (size_t k = 0; k < 2; k++) {
            OK(bs_write_file(path, formats[i], &prof, opts[k]));
            size_t flen, mlen;
            unsigned char *fbytes = slurp(path, &flen);
            char *mbytes = NULL;
            OK(bs_write_memory(formats[i], &prof, opts[k], 0, &mbytes, &mlen));
            assert_non_null(mbytes);
            assert_true(flen > 0);
            assert_int_equal(mlen, flen);
            assert_memory_equal(mbytes, fbytes, flen);
            /* one byte short of the output: refused, nothing handed back */
            char *small = (char *)1;
            size_t slen = 7;
            assert_int_equal(bs_write_memory(formats[i], &prof, opts[k], flen - 1, &small, &slen), -1);
            assert_int_equal(errno, EFBIG);
            assert_null(small);
            assert_int_equal(slen, 0);
            /* exactly the output's size: accepted */
            OK(bs_write_memory(formats[i], &prof, opts[k], flen, &small, &slen));
            assert_int_equal(slen, flen);
            free(small);
            free(fbytes), free(mbytes);
        }
    }
    /* the memory output reads back as the profile (.bspy) */
    char *bytes;
    size_t len;
    bs_profile back;
    bs_read_error e;
    OK(bs_write_memory(BS_FORMAT_BSPY, &prof, NULL, 0, &bytes, &len));
    OK(read_bspy_n(bytes, len, &back, &e));
    assert_profiles_equal(&prof, &back);
    free(bytes);
    bs_profile_free(&back);
    /* unknown format, bad filter */
    assert_int_equal(bs_write_memory(BS_FORMAT_UNKNOWN, &prof, NULL, 0, &bytes, &len), -1);
    assert_int_equal(errno, EINVAL);
    assert_null(bytes);
    bs_render_opts bad = {0};
    bad.include_re = "(unclosed";
    assert_int_equal(bs_write_memory(BS_FORMAT_FOLDED, &prof, &bad, 0, &bytes, &len), -1);
    assert_int_equal(errno, EINVAL);
    assert_null(bytes);
    bs_profile_free(&prof);
    unlink(path);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_folded_basic),
        cmocka_unit_test(test_folded_malformed_table),
        cmocka_unit_test(test_folded_error_line_and_offset),
        cmocka_unit_test(test_folded_block_boundaries),
        cmocka_unit_test(test_folded_pid_roots),
        cmocka_unit_test(test_folded_crlf_bom_blank_lines),
        cmocka_unit_test(test_folded_differential),
        cmocka_unit_test(test_folded_eflame),
        cmocka_unit_test(test_folded_shared_prefixes),
        cmocka_unit_test(test_folded_deep_stack),
        cmocka_unit_test(test_folded_line_too_long),
        cmocka_unit_test(test_folded_repeated_stacks),
        cmocka_unit_test(test_folded_distinct_stacks),
        cmocka_unit_test(test_folded_from_pipe),
        cmocka_unit_test(test_folded_hostile_round_trip),
        cmocka_unit_test(test_bspy_round_trip),
        cmocka_unit_test(test_bspy_from_folded),
        cmocka_unit_test(test_bspy_truncated),
        cmocka_unit_test(test_bspy_corrupt_bytes),
        cmocka_unit_test(test_bspy_forged),
        cmocka_unit_test(test_bspy_meta_strings),
        cmocka_unit_test(test_read_profile_file),
        cmocka_unit_test(test_write_file_bspy),
        cmocka_unit_test(test_write_memory_equals_file),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
