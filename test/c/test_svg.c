/* test_svg.c — the SVG flame graph writer (svg.c, bs_write_svg), the
 * differential flame graph (diff_svg.c) and their parts: XML escaping
 * (xml_escape.c), palettes (palette.c), the layout (flame_layout.c) and the
 * document (svg_document.c).
 *
 * Golden files: small fixed profiles must give exactly the files in
 * test/c/golden/ (svg_small.svg, svg_beam_inverted.svg, svg_diff.svg).
 * After an intended change of the output, regenerate them with
 *     BS_UPDATE_GOLDEN=1 test/c/build/gcc/test_svg
 * (run from the repository root) and review the diff.
 *
 * Also: well-formed XML (a strict checker, xml_check.h) for frame names
 * holding every awkward character ("</script>", "]]>", quotes, emoji, bytes
 * that are not UTF-8, U+FFFE, control characters) in every mode; exact
 * escaping and label cutting; pruning below min_width; the frame cap
 * (raised threshold; frames over 1 px kept over the soft cap);
 * stacks cut at BS_SVG_MAX_DEPTH;
 * inverted geometry; flame charts from a real recorded timeline and the
 * fallback without one; same name same colour in both palettes and the BEAM
 * palette's kinds; the size bound for 200,000 distinct stacks; byte-for-byte
 * determinism; diff colours (grown red, shrunk blue, same white, removed
 * code drawn from BEFORE, new code marked new) with normalisation and pids
 * matched by name; the embedded assets match their source files; and
 * bs_write_file picks this writer for ".svg". */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <unistd.h>

#include "assets/svg_flamegraph.css.h"
#include "assets/svg_flamegraph.js.h"
#include "writers/diff_svg.h"
#include "writers/text_wrap.h"
#include "writers/palette.h"
#include "writers/svg_document.h"
#include "writers/writers.h"
#include "writers/xml_escape.h"
#include "svg_test_util.h"
#include "test_util.h"
#include "xml_check.h"

#define OK(x) assert_int_equal((x), 0)

/* ------------------------------------------------------------ helpers */

static char *svg_of(const bs_profile *p, const bs_render_opts *o, size_t *len_out)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    OK(bs_write_svg(out, p, o));
    assert_int_equal(fclose(out), 0);
    if (len_out)
        *len_out = len;
    return text;
}

static char *diff_of(const bs_profile *before, const bs_profile *after, const bs_render_opts *o)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    OK(bs_write_diff_svg(out, before, after, o));
    assert_int_equal(fclose(out), 0);
    return text;
}

static void assert_wellformed(const char *svg)
{
    char why[256];
    if (xc_check(svg, strlen(svg), why, sizeof why) != 0)
        fail_msg("not well-formed XML: %s", why);
}

/* Occurrences of needle (strchr + strncmp: sanitizers check the whole
 * haystack on every strstr call, which is quadratic over a big SVG). */
static size_t count_of(const char *hay, const char *needle)
{
    size_t n = 0, len = strlen(needle);
    for (const char *p = hay; (p = strchr(p, needle[0])) != NULL; p++)
        if (strncmp(p, needle, len) == 0)
            n++;
    return n;
}

static size_t frames_in(const char *svg) { return count_of(svg, "<g data-x="); }

/* The <g> line of the first frame whose tooltip starts with name and " (". */
static const char *frame_line(const char *svg, const char *name)
{
    char key[512];
    snprintf(key, sizeof key, "<title>%s (", name);
    const char *t = strstr(svg, key);
    if (!t)
        return NULL;
    while (t > svg && t[-1] != '\n')
        t--;
    return t;
}

/* Value of attribute attr of the element starting with `elem` in the line. */
static double attr_in(const char *line, const char *elem, const char *attr)
{
    const char *e = strstr(line, elem);
    assert_non_null(e);
    char key[64];
    snprintf(key, sizeof key, " %s=\"", attr);
    const char *a = strstr(e, key);
    assert_non_null(a);
    return strtod(a + strlen(key), NULL);
}

static void fill_of(const char *line, char *buf, size_t cap)
{
    const char *f = strstr(line, "fill=\"");
    assert_non_null(f);
    f += 6;
    size_t n = strcspn(f, "\"");
    assert_true(n < cap);
    memcpy(buf, f, n);
    buf[n] = '\0';
}

static void from_folded(bs_profile *p, const char *text) { tu_profile_from_folded(p, text, BS_UNIT_NS, 1000); }

static void check_golden(const char *svg, const char *path)
{
    const char *update = getenv("BS_UPDATE_GOLDEN");
    if (update && *update && strcmp(update, "0") != 0) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(svg, f);
        OK(fclose(f));
        return;
    }
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("%s missing: run with BS_UPDATE_GOLDEN=1 from the repository root", path);
    tu_str want = {0};
    tu_put(&want, "%s", "");
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf - 1, f)) > 0) {
        buf[n] = '\0';
        tu_put(&want, "%s", buf);
    }
    fclose(f);
    if (strcmp(want.s, svg) != 0) {
        size_t i = 0;
        while (want.s[i] && want.s[i] == svg[i])
            i++;
        fail_msg("%s differs at byte %zu: got \"%.60s\", want \"%.60s\" (BS_UPDATE_GOLDEN=1 regenerates)", path, i,
                 svg + i, want.s + i);
    }
    free(want.s);
}

/* ------------------------------------------------------------ golden */

static const char SMALL[] = "<0.80.0>;m:top/0 3\n"
                            "<0.80.0>;m:top/0;m:a/0 2\n"
                            "<0.80.0>;m:top/0;m:a/0;SLEEP 5\n"
                            "<0.80.0>;m:top/0;m:a/0;GC 2\n"
                            "<0.80.0>;m:top/0;m:c/0 3\n"
                            "<0.80.0>;m:top/0;lists:sort/1 4\n"
                            "<0.81.0> my_server;m:top/0 2\n"
                            "<0.81.0> my_server;m:top/0;m:a/0;'Elixir.Enum':map/2 4\n"
                            "<0.81.0> my_server;m:top/0;m:a/0;m:a_function_with_a_rather_long_name/3 9\n";

static void test_golden_flame_graph(void **state)
{
    (void)state;
    bs_profile p;
    from_folded(&p, SMALL);
    char *svg = svg_of(&p, NULL, NULL);
    assert_wellformed(svg);
    check_golden(svg, "test/c/golden/svg_small.svg");
    free(svg);
    bs_profile_free(&p);
}

static void test_golden_beam_inverted(void **state)
{
    (void)state;
    bs_profile p;
    from_folded(&p, SMALL);
    bs_render_opts o = {.palette = BS_PALETTE_BEAM, .inverted = 1, .title = "BEAM palette", .subtitle = "inverted",
                        .width = 800};
    char *svg = svg_of(&p, &o, NULL);
    assert_wellformed(svg);
    check_golden(svg, "test/c/golden/svg_beam_inverted.svg");
    free(svg);
    bs_profile_free(&p);
}

static const char BEFORE[] = "<0.80.0>;m:top/0;m:grow/0 10\n"
                             "<0.80.0>;m:top/0;m:shrink/0 30\n"
                             "<0.80.0>;m:top/0;m:same/0 20\n"
                             "<0.80.0>;m:top/0;m:gone/0 40\n";
static const char AFTER[] = "<0.99.0>;m:top/0;m:grow/0 40\n"
                            "<0.99.0>;m:top/0;m:shrink/0 10\n"
                            "<0.99.0>;m:top/0;m:same/0 20\n"
                            "<0.99.0>;m:top/0;m:new/0 30\n";

static void test_golden_diff(void **state)
{
    (void)state;
    bs_profile before, after;
    from_folded(&before, BEFORE);
    from_folded(&after, AFTER);
    char *svg = diff_of(&before, &after, NULL);
    assert_wellformed(svg);
    check_golden(svg, "test/c/golden/svg_diff.svg");
    free(svg);
    bs_profile_free(&before);
    bs_profile_free(&after);
}

/* ------------------------------------------------------------ escaping */

static char *escaped(const char *s, size_t label_chars)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    if (label_chars)
        bs_xml_write_label(out, s, label_chars);
    else
        bs_xml_write(out, s);
    OK(fclose(out));
    return text;
}

static void assert_escaped(const char *in, size_t label_chars, const char *want)
{
    char *got = escaped(in, label_chars);
    assert_string_equal(got, want);
    free(got);
}

static void test_xml_escaping(void **state)
{
    (void)state;
    assert_escaped("a&b<c>d\"e'f", 0, "a&amp;b&lt;c&gt;d&quot;e&#39;f");
    assert_escaped("</script>]]><!--", 0, "&lt;/script&gt;]]&gt;&lt;!--");
    assert_escaped("x\xffy", 0, "x\xEF\xBF\xBDy");            /* not UTF-8 */
    assert_escaped("\xC0\x80", 0, "\xEF\xBF\xBD\xEF\xBF\xBD"); /* overlong NUL */
    assert_escaped("\xED\xA0\x80", 0, "\xEF\xBF\xBD");      /* a surrogate */
    assert_escaped("a\xEF\xBF\xBE", 0, "a\xEF\xBF\xBD");     /* U+FFFE */
    assert_escaped("\xEF\xBF\xBD ok", 0, "\xEF\xBF\xBD ok"); /* a real U+FFFD stays */
    assert_escaped("t\tn\nc\x01", 0, "t\xEF\xBF\xBDn\xEF\xBF\xBD" "c\xEF\xBF\xBD");
    assert_escaped("\xF0\x9F\x94\xA5 \xC2\xB5s \xE4\xB8\xAD", 0, "\xF0\x9F\x94\xA5 \xC2\xB5s \xE4\xB8\xAD");
    assert_escaped("\xF0\x9F\x94", 0, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"); /* cut emoji */
    /* labels: code points, ".." when cut, nothing below 3 */
    assert_escaped("abcdef", 5, "abc..");
    assert_escaped("abcde", 5, "abcde");
    assert_escaped("abc", 2, "");
    assert_escaped("a&b&c&d", 5, "a&amp;b..");
    assert_escaped("\xF0\x9F\x94\xA5\xF0\x9F\x94\xA5\xF0\x9F\x94\xA5\xF0\x9F\x94\xA5\xF0\x9F\x94\xA5", 4,
                   "\xF0\x9F\x94\xA5\xF0\x9F\x94\xA5..");
}

/* Every name a BEAM program or a hostile input file could produce, interned
 * raw (no sanitising: the writers must not depend on it). */
static const char *const AWKWARD[] = {
    "</script><script>alert(1)</script>", "]]>", "<![CDATA[x", "a&b", "&amp;", "\"quoted\"", "'single'",
    "<!-- c -->", "--", "\xF0\x9F\x94\xA5 fire", "\xE2\x80\xAE rtl", "bad \xff\xfe byte", "\xEF\xBF\xBF",
    "ctl\x01\x1f", "tab\there", "\\back\\slash", "x > y < z", "<0.1.0>", "&#0;", "&#x1;", "%s%n",
};
#define N_AWKWARD (sizeof AWKWARD / sizeof AWKWARD[0])

static void awkward_profile(bs_profile *p, int with_pid)
{
    tu_str text = {0};
    tu_put(&text, "%s", "");
    for (size_t i = 0; i < N_AWKWARD; i++)
        for (size_t j = 0; j < N_AWKWARD; j += 5)
            tu_put(&text, "%s%s;%s %zu\n", with_pid ? "<0.7.0> ]]>&<;" : "", AWKWARD[i], AWKWARD[j], 1 + i * j);
    from_folded(p, text.s);
    free(text.s);
}

static void test_wellformed_awkward_names(void **state)
{
    (void)state;
    bs_profile p, q;
    awkward_profile(&p, 1);
    awkward_profile(&q, 0);
    const char *evil = "</script>]]>&\"'<!--\xff\xF0\x9F\x94\xA5";
    bs_render_opts opts[] = {
        {0},
        {.inverted = 1, .palette = BS_PALETTE_BEAM},
        {.title = evil, .subtitle = evil, .count_name = evil},
        {.flamechart = 1, .width = 100, .min_width = 0.01},
    };
    for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++) {
        char *svg = svg_of(&p, &opts[k], NULL);
        assert_wellformed(svg);
        assert_true(frames_in(svg) > N_AWKWARD);
        assert_non_null(strstr(svg, "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;"));
        /* the only raw "</script>" ends the one script element */
        assert_int_equal(count_of(svg, "</script>"), 1);
        free(svg);
        svg = svg_of(&q, &opts[k], NULL);
        assert_wellformed(svg);
        free(svg);
        svg = diff_of(&p, &q, &opts[k]);
        assert_wellformed(svg);
        free(svg);
    }
    bs_profile_free(&p);
    bs_profile_free(&q);
}

/* ------------------------------------------------------------ layout */

static void test_pruning(void **state)
{
    (void)state;
    tu_str text = {0};
    tu_put(&text, "<0.5.0>;m:wide/0 1000000\n<0.5.0>;m:mid/0 1000\n");
    for (int i = 0; i < 1000; i++)
        tu_put(&text, "<0.5.0>;m:tiny%d/0;m:deeper/0 1\n", i); /* 0.0012 px each */
    bs_profile p;
    from_folded(&p, text.s);
    free(text.s);
    char *svg = svg_of(&p, NULL, NULL);
    assert_wellformed(svg);
    assert_null(strstr(svg, "m:tiny"));
    assert_null(strstr(svg, "m:deeper"));
    assert_non_null(frame_line(svg, "m:mid/0")); /* 1.18 px */
    assert_int_equal(frames_in(svg), 4);         /* all, process, wide, mid */
    /* pruned frames keep their room: wide starts after mid and the tinies */
    assert_int_equal((long)attr_in(frame_line(svg, "m:wide/0"), "<g", "data-x"), 1000 * 1000 + 1000 * 1000);
    free(svg);
    bs_render_opts o = {.min_width = 2.0};
    svg = svg_of(&p, &o, NULL);
    assert_null(strstr(svg, "m:mid/0"));
    assert_int_equal(frames_in(svg), 3);
    free(svg);
    bs_profile_free(&p);
}

/* n chains of `depth` distinct frames, chain i weighing weight(i). */
static void chains(bs_profile *p, int n, int depth, int light_every)
{
    tu_str text = {0};
    tu_put(&text, "%s", "");
    for (int i = 0; i < n; i++) {
        tu_put(&text, "<0.5.0>");
        for (int d = 0; d < depth; d++)
            tu_put(&text, ";c%d:f%d/0", i, d);
        tu_put(&text, " %d\n", light_every && i % light_every == 0 ? 1 : 4);
    }
    from_folded(p, text.s);
    free(text.s);
}

static void test_frame_cap(void **state)
{
    (void)state;
    bs_profile p;
    /* 3000 chains of 10: half at 0.157 px, half at 0.63 px. 30,000 frames
     * at 0.1 px is over the cap; the threshold just above the light chains
     * keeps the heavy half (15,000). */
    chains(&p, 3000, 10, 2);
    char *svg = svg_of(&p, NULL, NULL);
    assert_int_equal(frames_in(svg), 1 + 1 + 1500 * 10);
    assert_non_null(strstr(svg, "frames narrower than 0.16 px left out"));
    free(svg);
    bs_profile_free(&p);
    /* 1000 equal chains of 25 (1.18 px each): a real picture, not slivers;
     * it stays, over the soft cap and under the hard one. */
    chains(&p, 1000, 25, 0);
    svg = svg_of(&p, NULL, NULL);
    assert_int_equal(frames_in(svg), 2 + 25000);
    assert_non_null(strstr(svg, "frames narrower than 1.00 px left out"));
    free(svg);
    bs_profile_free(&p);
}

/* bs_wrap_text: lines of at most N characters broken at spaces, words
 * never cut unless longer than a line, UTF-8 never split. */
static void test_wrap_text(void **state)
{
    (void)state;
    bs_text_line l[16];
    const char *t = "one two three four five";
    size_t n = bs_wrap_text(t, 9, l, 16);
    assert_int_equal(n, 3);
    const char *want[] = {"one two", "three", "four five"};
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(l[i].len, strlen(want[i]));
        assert_memory_equal(t + l[i].start, want[i], l[i].len);
    }
    /* Counting first (no room) gives the same count. */
    assert_int_equal(bs_wrap_text(t, 9, NULL, 0), 3);
    /* A line exactly as long as the limit; spaces at the ends dropped. */
    const char *padded = "  abcd efgh  ";
    assert_int_equal(bs_wrap_text(padded, 4, l, 16), 2);
    assert_int_equal(l[0].len, 4);
    assert_memory_equal(padded + l[1].start, "efgh", 4);
    /* A word longer than a line is split, nothing is lost. */
    assert_int_equal(bs_wrap_text("abcdefghij", 4, l, 16), 3);
    assert_int_equal(l[2].len, 2);
    /* Characters, not bytes: "µs µs µs" is 8 characters, 11 bytes. */
    const char *u = "\xC2\xB5s \xC2\xB5s \xC2\xB5s";
    assert_int_equal(bs_wrap_text(u, 8, l, 16), 1);
    assert_int_equal(bs_wrap_text(u, 5, l, 16), 2);
    assert_int_equal(l[0].len, 7); /* "µs µs" */
    assert_int_equal(bs_wrap_text("", 10, l, 16), 0);
    assert_int_equal(bs_wrap_text("   ", 10, l, 16), 0);
}

/* A subtitle longer than the width: one <tspan> per line, each line short
 * enough for the width, the words all there in order, and the frames
 * moved down by the extra lines. */
static void test_subtitle_wrapped(void **state)
{
    (void)state;
    bs_profile p;
    from_folded(&p, "a;b 10\na;c 5\n");
    char sub[600];
    size_t n = 0;
    for (int i = 0; n + 40 < sizeof sub; i++)
        n += (size_t)snprintf(sub + n, sizeof sub - n, "%sword%d and more", i ? ", " : "", i);
    bs_render_opts one = {.subtitle = "short"}, many = {.subtitle = sub, .width = 600};
    char *a = svg_of(&p, &one, NULL), *b = svg_of(&p, &many, NULL);
    assert_wellformed(b);
    assert_int_equal(count_of(a, "<tspan "), 1);
    size_t lines = count_of(b, "<tspan ");
    /* 580 px at 7.6 px a character: 76 characters a line at most. */
    assert_true(lines >= (strlen(sub) + 75) / 76 && lines <= strlen(sub) / 40 + 1);
    char joined[700] = "";
    size_t j = 0;
    for (const char *at = b; (at = strstr(at, "<tspan ")) != NULL;) {
        const char *text = strchr(at, '>') + 1, *end = strstr(text, "</tspan>");
        assert_true(end - text <= 76);
        j += (size_t)snprintf(joined + j, sizeof joined - j, "%s%.*s", j ? " " : "", (int)(end - text), text);
        at = end;
    }
    assert_string_equal(joined, sub);
    /* The root row is lower by 16 px per extra line. */
    double ya = attr_in(frame_line(a, "all"), "rect", "y"), yb = attr_in(frame_line(b, "all"), "rect", "y");
    assert_true(yb - ya > 16.0 * (double)(lines - 1) - 0.5 && yb - ya < 16.0 * (double)(lines - 1) + 0.5);
    free(a);
    free(b);
    bs_profile_free(&p);
}

/* A recursion 3000 deep: cut at BS_SVG_MAX_DEPTH rows, said in the subtitle,
 * in the graph and in the chart. */
static void test_deep_stacks(void **state)
{
    (void)state;
    const bs_key F = KEY(M_M, F_F, 1);
    bs_span_quota quota;
    bs_span_quota_init(&quota, 10000);
    bs_proc p;
    OK(bs_proc_init(&p, NULL, 0, 0, 0));
    bs_proc_enable_timeline(&p, &quota);
    OK(bs_proc_call(&p, &F, BS_CALLER_ROOT, NULL, 0));
    for (uint64_t i = 1; i < 3000; i++)
        OK(bs_proc_call(&p, &F, BS_CALLER_FRAME, &F, i * 10));
    OK(bs_proc_return_to(&p, NULL, 40000));
    bs_proc_flush(&p, 40000);
    bs_profile prof;
    OK(bs_profile_init(&prof));
    OK(bs_profile_add_proc(&prof, &p, "<0.9.0>", tu_namer, NULL));
    bs_proc_free(&p);
    bs_profile_compute_totals(&prof);
    for (int chart = 0; chart < 2; chart++) {
        bs_render_opts o = {.flamechart = chart};
        char *svg = svg_of(&prof, &o, NULL);
        assert_wellformed(svg);
        assert_int_equal(frames_in(svg), 1 + BS_SVG_MAX_DEPTH); /* all, the process, m:f/1 down to the cut */
        assert_non_null(strstr(svg, "stacks cut at 1024 frames"));
        assert_non_null(strstr(svg, chart ? ">Flame Chart<" : ">Flame Graph<"));
        free(svg);
    }
    bs_profile_free(&prof);
}

static void test_inverted(void **state)
{
    (void)state;
    bs_profile p;
    from_folded(&p, SMALL);
    char *flame = svg_of(&p, NULL, NULL);
    bs_render_opts o = {.inverted = 1};
    char *icicle = svg_of(&p, &o, NULL);
    double root_y = attr_in(frame_line(flame, "all"), "<rect", "y");
    double top_y = attr_in(frame_line(flame, "m:top/0"), "<rect", "y");
    double leaf_y = attr_in(frame_line(flame, "m:b/0") ? frame_line(flame, "m:b/0") : frame_line(flame, "GC"), "<rect", "y");
    assert_true(root_y > top_y && top_y > leaf_y); /* flame: root at the bottom */
    double iroot_y = attr_in(frame_line(icicle, "all"), "<rect", "y");
    double itop_y = attr_in(frame_line(icicle, "m:top/0"), "<rect", "y");
    assert_true(iroot_y < itop_y);                 /* icicle: root at the top */
    assert_true(iroot_y >= 36 && iroot_y < 60);
    assert_int_equal((int)(itop_y - iroot_y), 32); /* two rows: all, process, top */
    /* same frames, same x, same fills */
    assert_int_equal(frames_in(flame), frames_in(icicle));
    assert_true(attr_in(frame_line(flame, "m:c/0"), "<rect", "x") == attr_in(frame_line(icicle, "m:c/0"), "<rect", "x"));
    free(flame);
    free(icicle);
    bs_profile_free(&p);
}

/* A recorded process with a timeline: top [0,1000) calling a [100,300),
 * b [300,500) (which calls a [350,450)) and a again [600,700). */
static void chart_profile(bs_profile *prof, int timeline)
{
    const bs_key TOP = KEY(M_M, F_TOP, 0), A = KEY(M_M, F_A, 0), B = KEY(M_M, F_B, 0);
    bs_span_quota quota;
    bs_span_quota_init(&quota, 1000);
    bs_proc p;
    OK(bs_proc_init(&p, NULL, 0, 0, 0));
    if (timeline)
        bs_proc_enable_timeline(&p, &quota);
    OK(bs_proc_call(&p, &TOP, BS_CALLER_ROOT, NULL, 0));
    OK(bs_proc_call(&p, &A, BS_CALLER_FRAME, &TOP, 100));
    OK(bs_proc_return_to(&p, &TOP, 300));
    OK(bs_proc_call(&p, &B, BS_CALLER_FRAME, &TOP, 300));
    OK(bs_proc_call(&p, &A, BS_CALLER_FRAME, &B, 350));
    OK(bs_proc_return_to(&p, &B, 450));
    OK(bs_proc_return_to(&p, &TOP, 500));
    OK(bs_proc_call(&p, &A, BS_CALLER_FRAME, &TOP, 600));
    OK(bs_proc_return_to(&p, &TOP, 700));
    OK(bs_proc_return_to(&p, NULL, 1000));
    bs_proc_flush(&p, 1000);
    OK(bs_profile_init(prof));
    OK(bs_profile_add_proc(prof, &p, "<0.90.0>", tu_namer, NULL));
    bs_proc_free(&p);
    bs_profile_compute_totals(prof);
}

/* "x:w" of every frame in document order, for comparing layouts. */
static void positions(const char *svg, tu_str *out)
{
    tu_put(out, "%s", "");
    for (const char *g = svg; (g = strstr(g, "<g data-x=\"")) != NULL; g++) {
        unsigned long long x = strtoull(g + 11, NULL, 10);
        const char *w = strstr(g, "data-w=\"");
        tu_put(out, "%llu:%llu ", x, strtoull(w + 8, NULL, 10));
    }
}

static void test_flamechart(void **state)
{
    (void)state;
    bs_profile p;
    chart_profile(&p, 1);
    assert_true(p.has_timeline);
    bs_render_opts o = {.flamechart = 1};
    char *svg = svg_of(&p, &o, NULL);
    assert_wellformed(svg);
    assert_non_null(strstr(svg, "<text id=\"title\" x=\"600.0\" y=\"24\">Flame Chart</text>"));
    tu_str pos = {0};
    positions(svg, &pos);
    /* all, process, top, then the calls in time order, each entry its own frame */
    assert_string_equal(pos.s, "0:1000 0:1000 0:1000 100:200 300:200 350:100 600:100 ");
    assert_non_null(strstr(svg, "<title>m:top/0 (self 0.500 \xC2\xB5s, total 1.00 \xC2\xB5s, 1 call, 100.00%)"));
    assert_non_null(strstr(svg, "<title>m:b/0 (self 0.100 \xC2\xB5s, total 0.200 \xC2\xB5s, 1 call, 20.00%)"));
    free(pos.s);
    free(svg);
    /* the same profile as a graph merges the two entries of top;a */
    svg = svg_of(&p, NULL, NULL);
    pos = (tu_str){0};
    positions(svg, &pos);
    assert_string_equal(pos.s, "0:1000 0:1000 0:1000 0:300 300:200 300:100 ");
    assert_null(strstr(svg, "id=\"subtitle\""));
    free(pos.s);
    free(svg);
    bs_profile_free(&p);

    /* no timeline: the graph, and the subtitle says why */
    chart_profile(&p, 0);
    assert_false(p.has_timeline);
    svg = svg_of(&p, &o, NULL);
    assert_wellformed(svg);
    assert_non_null(strstr(svg, "no timeline was recorded: flame graph instead of a flame chart"));
    assert_non_null(strstr(svg, ">Flame Graph</text>"));
    free(svg);
    bs_profile_free(&p);
}

/* ------------------------------------------------------------ palettes */

static void test_palettes(void **state)
{
    (void)state;
    assert_int_equal(bs_code_kind_of("lists:sort/1"), BS_CODE_OTP);
    assert_int_equal(bs_code_kind_of("gen_server:call/3"), BS_CODE_OTP);
    assert_int_equal(bs_code_kind_of("erlang:apply/2"), BS_CODE_OTP);
    assert_int_equal(bs_code_kind_of("beam_ssa_opt:module/2"), BS_CODE_OTP);
    assert_int_equal(bs_code_kind_of(":ets.lookup/2"), BS_CODE_OTP);
    assert_int_equal(bs_code_kind_of("'Elixir.Enum':map/2"), BS_CODE_ELIXIR);
    assert_int_equal(bs_code_kind_of("Enum.map/2"), BS_CODE_ELIXIR);
    assert_int_equal(bs_code_kind_of("Elixir.Enum.map/2"), BS_CODE_ELIXIR);
    assert_int_equal(bs_code_kind_of("Kernel.+/2"), BS_CODE_ELIXIR);
    assert_int_equal(bs_code_kind_of("String.Chars.Integer.to_string/1"), BS_CODE_ELIXIR);
    assert_int_equal(bs_code_kind_of("elixir_expand:expand/3"), BS_CODE_ELIXIR);
    static const char *const otp[] = {"application", "c", "code", "epp", "eprof", "erlang", "ets", "lists",
                                      "maps", "proc_lib", "supervisor", "timer", "zlib", "ssl_cipher", "mnesia_tm"};
    for (size_t i = 0; i < sizeof otp / sizeof otp[0]; i++) { /* the lookup is a binary search */
        char name[64];
        snprintf(name, sizeof name, "%s:f/1", otp[i]);
        if (bs_code_kind_of(name) != BS_CODE_OTP)
            fail_msg("%s is not OTP", name);
    }
    assert_int_equal(bs_code_kind_of("my_app:run/0"), BS_CODE_USER);
    assert_int_equal(bs_code_kind_of("codec:encode/1"), BS_CODE_USER); /* not "code" */
    assert_int_equal(bs_code_kind_of("listsx:f/0"), BS_CODE_USER);
    assert_int_equal(bs_code_kind_of("MyApp.Worker.run/1"), BS_CODE_USER);
    assert_int_equal(bs_code_kind_of("'Elixir.MyApp':run/1"), BS_CODE_USER);
    assert_int_equal(bs_code_kind_of("SLEEP"), BS_CODE_SLEEP);
    assert_int_equal(bs_code_kind_of("GC"), BS_CODE_GC);
    assert_int_equal(bs_code_kind_of("<0.85.0> my_server"), BS_CODE_PROCESS);

    /* same name, same colour, wherever it is, in both palettes */
    bs_profile p;
    from_folded(&p, "<0.1.0>;m:x/0;lists:sort/1 5\n<0.1.0>;m:y/0;lists:sort/1 7\n"
                    "<0.2.0>;Enum.map/2;lists:sort/1 3\n<0.2.0>;my_app:run/0;SLEEP 4\n<0.2.0>;my_app:run/0;GC 4\n");
    for (int pal = 0; pal < 2; pal++) {
        bs_render_opts o = {.palette = pal ? BS_PALETTE_BEAM : BS_PALETTE_HOT};
        char *svg = svg_of(&p, &o, NULL);
        char first[32], fill[32];
        const char *line = frame_line(svg, "lists:sort/1");
        assert_non_null(line);
        fill_of(line, first, sizeof first);
        int seen = 0;
        for (; line; line = frame_line(strchr(line, '\n'), "lists:sort/1"), seen++) {
            fill_of(line, fill, sizeof fill);
            assert_string_equal(fill, first);
        }
        assert_int_equal(seen, 3);
        if (pal) { /* kinds differ in colour */
            char user[32], elixir[32], sleep[32], gc[32], proc[32];
            fill_of(frame_line(svg, "my_app:run/0"), user, sizeof user);
            fill_of(frame_line(svg, "Enum.map/2"), elixir, sizeof elixir);
            fill_of(frame_line(svg, "SLEEP"), sleep, sizeof sleep);
            fill_of(frame_line(svg, "GC"), gc, sizeof gc);
            fill_of(frame_line(svg, "&lt;0.1.0&gt;"), proc, sizeof proc);
            const char *all[] = {first, user, elixir, sleep, gc, proc};
            for (int i = 0; i < 6; i++)
                for (int j = i + 1; j < 6; j++)
                    assert_string_not_equal(all[i], all[j]);
            assert_string_equal(sleep, "rgb(190,200,215)");
        }
        free(svg);
    }
    bs_profile_free(&p);
    char a[32], b[32];
    bs_palette_fill(BS_PALETTE_HOT, "m:f/1", 0, a, sizeof a);
    bs_palette_fill(BS_PALETTE_HOT, "m:f/1", 0, b, sizeof b);
    assert_string_equal(a, b);
}

/* ------------------------------------------------------------ size, determinism */

static void synthetic_stacks(bs_profile *p, unsigned n)
{
    static const char *const mods[] = {"lists", "maps", "ets", "gen_server", "my_app", "my_db", "'Elixir.Enum'"};
    tu_folded_builder b;
    tu_folded_begin(&b, p, BS_UNIT_NS, 1000);
    uint64_t s = 7;
    char line[2048];
    for (unsigned i = 0; i < n; i++) {
        size_t len = (size_t)snprintf(line, sizeof line, "<0.%u.0>", 80 + i % 3);
        unsigned depth = 4 + (unsigned)(tu_rand(&s) % 20);
        for (unsigned d = 0; d < depth; d++) {
            unsigned f = (unsigned)(tu_rand(&s) % (d < 2 ? 3 : 500));
            len += (size_t)snprintf(line + len, sizeof line - len, ";%s:f%u/%u", mods[f % 7], f, d % 3);
        }
        len += (size_t)snprintf(line + len, sizeof line - len, ";leaf%u/0 %u", i, 1 + (unsigned)(tu_rand(&s) % 50));
        tu_folded_line(&b, line, len);
    }
    tu_folded_end(&b);
}

static void test_size_bound(void **state)
{
    (void)state;
    unsigned n = tu_small() ? 20000 : 200000;
    bs_profile p;
    synthetic_stacks(&p, n);
    size_t len;
    char *svg = svg_of(&p, NULL, &len);
    assert_wellformed(svg);
    assert_true(len < 5u * 1000 * 1000);
    assert_true(frames_in(svg) > 100);
    assert_true(frames_in(svg) <= BS_SVG_HARD_MAX_FRAMES);
    free(svg);
    bs_profile_free(&p);
}

static void test_determinism(void **state)
{
    (void)state;
    bs_profile p, c;
    synthetic_stacks(&p, 500);
    OK(bs_profile_clone(&p, &c));
    bs_render_opts o = {.palette = BS_PALETTE_BEAM};
    char *one = svg_of(&p, &o, NULL), *two = svg_of(&p, &o, NULL), *three = svg_of(&c, &o, NULL);
    assert_string_equal(one, two);
    assert_string_equal(one, three);
    free(one);
    free(two);
    free(three);
    one = diff_of(&p, &c, NULL);
    two = diff_of(&p, &c, NULL);
    assert_string_equal(one, two);
    free(one);
    free(two);
    bs_profile_free(&p);
    bs_profile_free(&c);
}

/* ------------------------------------------------------------ diff */

static void assert_red(const char *svg, const char *name)
{
    char fill[32];
    int r, g, b;
    const char *line = frame_line(svg, name);
    if (!line)
        fail_msg("%s not drawn", name);
    fill_of(line, fill, sizeof fill);
    assert_int_equal(sscanf(fill, "rgb(%d,%d,%d)", &r, &g, &b), 3);
    if (!(r == 255 && g < 200 && g == b))
        fail_msg("%s is %s, not red", name, fill);
}

static void assert_blue(const char *svg, const char *name)
{
    char fill[32];
    int r, g, b;
    const char *line = frame_line(svg, name);
    if (!line)
        fail_msg("%s not drawn", name);
    fill_of(line, fill, sizeof fill);
    assert_int_equal(sscanf(fill, "rgb(%d,%d,%d)", &r, &g, &b), 3);
    if (!(b == 255 && r < 200 && r == g))
        fail_msg("%s is %s, not blue", name, fill);
}

static void check_diff(const char *svg)
{
    assert_wellformed(svg);
    assert_red(svg, "m:grow/0");
    assert_red(svg, "m:new/0");
    assert_blue(svg, "m:shrink/0");
    assert_blue(svg, "m:gone/0"); /* only in BEFORE: drawn, by its (scaled) width */
    char fill[32];
    fill_of(frame_line(svg, "m:same/0"), fill, sizeof fill);
    assert_string_equal(fill, "rgb(255,255,255)");
    /* pids differ between runs: processes are matched by name */
    assert_int_equal(count_of(svg, "<title>&lt;process&gt; ("), 1);
    assert_non_null(strstr(svg, "<title>m:grow/0 (self before 10.0 \xC2\xB5s, after 40.0 \xC2\xB5s, +300.0%"));
    assert_non_null(strstr(svg, "<title>m:new/0 (self before 0 \xC2\xB5s, after 30.0 \xC2\xB5s, new"));
    assert_non_null(strstr(svg, "<title>m:gone/0 (self before 40.0 \xC2\xB5s, after 0 \xC2\xB5s, -100.0%"));
    /* widths: after's, plus the removed code */
    assert_int_equal((long)attr_in(frame_line(svg, "all"), "<g", "data-w"), 140000);
    assert_int_equal((long)attr_in(frame_line(svg, "m:gone/0"), "<g", "data-w"), 40000);
    assert_int_equal((long)attr_in(frame_line(svg, "m:grow/0"), "<g", "data-w"), 40000);
}

static void test_diff_colours(void **state)
{
    (void)state;
    bs_profile before, after, doubled;
    from_folded(&before, BEFORE);
    from_folded(&after, AFTER);
    char *svg = diff_of(&before, &after, NULL);
    check_diff(svg);
    assert_non_null(strstr(svg, "before scaled by 1 to the total of after"));
    free(svg);
    /* BEFORE twice as long overall: normalised, the picture is the same */
    tu_str text = {0};
    tu_put(&text, "%s", "");
    for (const char *l = BEFORE; *l;) {
        const char *lf = strchr(l, '\n');
        const char *sp = lf;
        while (sp > l && *sp != ' ')
            sp--;
        tu_put(&text, "%.*s %ld\n", (int)(sp - l), l, 2 * strtol(sp + 1, NULL, 10));
        l = lf + 1;
    }
    from_folded(&doubled, text.s);
    free(text.s);
    svg = diff_of(&doubled, &after, NULL);
    check_diff(svg);
    assert_non_null(strstr(svg, "before scaled by 0.5 to the total of after"));
    free(svg);
    bs_profile_free(&before);
    bs_profile_free(&after);
    bs_profile_free(&doubled);
}

/* ------------------------------------------------------------ plumbing */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s (run from the repository root)", path);
    tu_str s = {0};
    tu_put(&s, "%s", "");
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf - 1, f)) > 0) {
        buf[n] = '\0';
        tu_put(&s, "%s", buf);
    }
    fclose(f);
    return s.s;
}

static void test_assets_up_to_date(void **state)
{
    (void)state;
    char *js = slurp("c_src/writers/assets/svg_flamegraph.js");
    char *css = slurp("c_src/writers/assets/svg_flamegraph.css");
    if (strcmp(js, BS_ASSET_svg_flamegraph_js) != 0 || strcmp(css, BS_ASSET_svg_flamegraph_css) != 0)
        fail_msg("build/gen/assets/svg_flamegraph.{js,css}.h differ from their sources: run `make assets`");
    free(js);
    free(css);
}

static void test_write_file_and_empty(void **state)
{
    (void)state;
    char path[] = "/tmp/bs_test_svg_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char svg_path[64];
    snprintf(svg_path, sizeof svg_path, "%s.svg", path);
    bs_profile p;
    from_folded(&p, SMALL);
    OK(bs_write_file(svg_path, BS_FORMAT_UNKNOWN, &p, NULL));
    char *text = slurp(svg_path);
    char *direct = svg_of(&p, NULL, NULL);
    assert_string_equal(text, direct);
    free(text);
    free(direct);
    unlink(svg_path);
    unlink(path);
    bs_profile_free(&p);

    /* nothing recorded: a valid document with only the root */
    OK(bs_profile_init(&p));
    text = svg_of(&p, NULL, NULL);
    assert_wellformed(text);
    assert_int_equal(frames_in(text), 1);
    free(text);
    OK(bs_profile_add_tree(&p, "<0.1.0>"));
    text = svg_of(&p, NULL, NULL);
    assert_wellformed(text);
    assert_int_equal(frames_in(text), 1);
    free(text);
    bs_profile_free(&p);
}

static void test_amounts(void **state)
{
    (void)state;
    char buf[64];
    bs_svg_format_amount(buf, sizeof buf, 0, BS_UNIT_NS, NULL);
    assert_string_equal(buf, "0 \xC2\xB5s");
    bs_svg_format_amount(buf, sizeof buf, 850, BS_UNIT_NS, NULL);
    assert_string_equal(buf, "0.850 \xC2\xB5s");
    bs_svg_format_amount(buf, sizeof buf, 12345, BS_UNIT_NS, NULL);
    assert_string_equal(buf, "12.3 \xC2\xB5s");
    bs_svg_format_amount(buf, sizeof buf, 4560000, BS_UNIT_NS, NULL);
    assert_string_equal(buf, "4.56 ms");
    bs_svg_format_amount(buf, sizeof buf, 1234000000, BS_UNIT_NS, NULL);
    assert_string_equal(buf, "1.234 s");
    bs_svg_format_amount(buf, sizeof buf, 12345, BS_UNIT_NS, "us");
    assert_string_equal(buf, "12.3 us");
    bs_svg_format_amount(buf, sizeof buf, 42, BS_UNIT_COUNT, NULL);
    assert_string_equal(buf, "42 samples");
    bs_svg_format_amount(buf, sizeof buf, 1, BS_UNIT_COUNT, "hits");
    assert_string_equal(buf, "1 hits");

    /* counts read from folded input say "samples"; drop_sleep leaves SLEEP out */
    bs_profile p;
    tu_profile_from_folded(&p, "a;b 3\na;SLEEP 5\n", BS_UNIT_COUNT, 1);
    char *svg = svg_of(&p, NULL, NULL);
    assert_non_null(strstr(svg, "<title>b (self 3 samples, total 3 samples, 37.50%)</title>"));
    assert_non_null(strstr(svg, "<title>all (self 0 samples, total 8 samples, 100.00%)</title>"));
    free(svg);
    bs_render_opts o = {.drop_sleep = 1};
    svg = svg_of(&p, &o, NULL);
    assert_null(strstr(svg, "SLEEP"));
    assert_non_null(strstr(svg, "<title>b (self 3 samples, total 3 samples, 100.00%)</title>"));
    free(svg);
    bs_profile_free(&p);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_flame_graph),
        cmocka_unit_test(test_golden_beam_inverted),
        cmocka_unit_test(test_golden_diff),
        cmocka_unit_test(test_xml_escaping),
        cmocka_unit_test(test_wellformed_awkward_names),
        cmocka_unit_test(test_pruning),
        cmocka_unit_test(test_frame_cap),
        cmocka_unit_test(test_deep_stacks),
        cmocka_unit_test(test_inverted),
        cmocka_unit_test(test_flamechart),
        cmocka_unit_test(test_palettes),
        cmocka_unit_test(test_size_bound),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_diff_colours),
        cmocka_unit_test(test_assets_up_to_date),
        cmocka_unit_test(test_write_file_and_empty),
        cmocka_unit_test(test_amounts),
        cmocka_unit_test(test_wrap_text),
        cmocka_unit_test(test_subtitle_wrapped),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
