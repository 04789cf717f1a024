/* test_html.c — the interactive HTML writer (html.c) and the JSON string
 * escaper it shares with the JSON writers (json_escape.c).
 *
 * The page must be one self-contained file whose profile data sits in exactly
 * one <script type="application/json" id="beamspy-data"> block that no frame
 * name can end. Checked here: the escaper byte for byte; the page's structure
 * (one data block, two scripts, a CSP that allows no request, no `</` and no
 * `<!--` inside the data); that the data is valid JSON (a strict parser
 * below) and round-trips every name — hostile ones included — and every
 * number of the profile; the title escaped in <title>; determinism (twice,
 * and from a clone); a broken tree refused; bs_write_file by extension with
 * drop_sleep; and the size of a 100,000-node profile. The page's behaviour
 * is tested in a real browser by test/browser/html.test.js. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/json_escape.h"
#include "writers/writers.h"
#include "test_util.h"

#define OK(x) assert_int_equal((x), 0)

/* ---- A strict JSON parser (RFC 8259), just enough for the checks ---- */

typedef enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;

typedef struct jval {
    jtype type;
    int boolean;
    uint64_t u;        /* J_NUM: value when a non-negative integer */
    int is_uint;
    char *str;         /* J_STR: decoded UTF-8 (NUL-terminated; may hold NULs) */
    size_t len;
    struct jval *items; /* J_ARR / J_OBJ values */
    char **keys;        /* J_OBJ keys */
    size_t n;
} jval;

typedef struct jparser {
    const char *s, *end;
    const char *err;
} jparser;

static void jfree(jval *v)
{
    free(v->str);
    for (size_t i = 0; i < v->n; i++) {
        jfree(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
}

static void jws(jparser *p)
{
    while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r'))
        p->s++;
}

static int jfail(jparser *p, const char *why)
{
    if (!p->err)
        p->err = why;
    return -1;
}

static int hex4(jparser *p, unsigned *out)
{
    if (p->end - p->s < 4)
        return jfail(p, "short \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = *p->s++;
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return jfail(p, "bad hex digit");
    }
    *out = v;
    return 0;
}

static void put_utf8(tu_str *b, unsigned cp)
{
    if (cp < 0x80) {
        tu_put(b, "%c", (char)cp);
    } else if (cp < 0x800) {
        tu_put(b, "%c%c", (char)(0xC0 | cp >> 6), (char)(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        tu_put(b, "%c%c%c", (char)(0xE0 | cp >> 12), (char)(0x80 | (cp >> 6 & 0x3F)), (char)(0x80 | (cp & 0x3F)));
    } else {
        tu_put(b, "%c%c%c%c", (char)(0xF0 | cp >> 18), (char)(0x80 | (cp >> 12 & 0x3F)),
               (char)(0x80 | (cp >> 6 & 0x3F)), (char)(0x80 | (cp & 0x3F)));
    }
}

static int jstring(jparser *p, char **out, size_t *len)
{
    tu_str b = {0};
    tu_put(&b, "%s", "");
    p->s++; /* opening quote */
    const char *start = p->s;
    for (;;) {
        if (p->s >= p->end)
            goto bad;
        unsigned char c = (unsigned char)*p->s;
        if (c == '"')
            break;
        if (c < 0x20) {
            jfail(p, "raw control character in a string");
            goto bad;
        }
        if (c != '\\') {
            tu_put(&b, "%c", (char)c);
            p->s++;
            continue;
        }
        p->s++;
        if (p->s >= p->end)
            goto bad;
        char e = *p->s++;
        unsigned cp;
        switch (e) {
        case '"': tu_put(&b, "\""); break;
        case '\\': tu_put(&b, "\\"); break;
        case '/': tu_put(&b, "/"); break;
        case 'b': tu_put(&b, "\b"); break;
        case 'f': tu_put(&b, "\f"); break;
        case 'n': tu_put(&b, "\n"); break;
        case 'r': tu_put(&b, "\r"); break;
        case 't': tu_put(&b, "\t"); break;
        case 'u':
            if (hex4(p, &cp) < 0)
                goto bad;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                unsigned lo;
                if (p->end - p->s < 6 || p->s[0] != '\\' || p->s[1] != 'u')
                    goto bad;
                p->s += 2;
                if (hex4(p, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF)
                    goto bad;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                goto bad;
            }
            if (cp == 0) { /* tu_put cannot append a NUL: do it by hand */
                tu_put(&b, "%c", 'x');
                b.s[b.len - 1] = '\0';
            } else {
                put_utf8(&b, cp);
            }
            break;
        default:
            goto bad;
        }
    }
    if (!tu_utf8_valid(start, (size_t)(p->s - start))) {
        jfail(p, "invalid UTF-8 in a string");
        goto bad;
    }
    p->s++;
    *out = b.s;
    *len = b.len;
    return 0;
bad:
    free(b.s);
    return jfail(p, "bad string");
}

static int jnumber(jparser *p, jval *v)
{
    const char *s = p->s;
    int neg = 0, frac = 0;
    if (s < p->end && *s == '-')
        neg = 1, s++;
    if (s >= p->end || *s < '0' || *s > '9')
        return jfail(p, "bad number");
    if (*s == '0' && s + 1 < p->end && s[1] >= '0' && s[1] <= '9')
        return jfail(p, "leading zero");
    uint64_t u = 0;
    int overflow = 0;
    while (s < p->end && *s >= '0' && *s <= '9') {
        if (u > (UINT64_MAX - 9) / 10)
            overflow = 1;
        u = u * 10 + (uint64_t)(*s++ - '0');
    }
    if (s < p->end && *s == '.') {
        frac = 1, s++;
        if (s >= p->end || *s < '0' || *s > '9')
            return jfail(p, "bad fraction");
        while (s < p->end && *s >= '0' && *s <= '9')
            s++;
    }
    if (s < p->end && (*s == 'e' || *s == 'E')) {
        frac = 1, s++;
        if (s < p->end && (*s == '+' || *s == '-'))
            s++;
        if (s >= p->end || *s < '0' || *s > '9')
            return jfail(p, "bad exponent");
        while (s < p->end && *s >= '0' && *s <= '9')
            s++;
    }
    v->type = J_NUM;
    v->is_uint = !neg && !frac && !overflow;
    v->u = u;
    p->s = s;
    return 0;
}

static int jvalue(jparser *p, jval *v, int depth);

static int jcontainer(jparser *p, jval *v, int depth, int object)
{
    size_t cap = 0;
    v->type = object ? J_OBJ : J_ARR;
    p->s++;
    jws(p);
    if (p->s < p->end && *p->s == (object ? '}' : ']')) {
        p->s++;
        return 0;
    }
    for (;;) {
        if (v->n == cap) {
            cap = cap ? cap * 2 : 8;
            v->items = realloc(v->items, cap * sizeof *v->items);
            if (object)
                v->keys = realloc(v->keys, cap * sizeof *v->keys);
            if (!v->items || (object && !v->keys))
                abort();
        }
        jval *item = &v->items[v->n];
        memset(item, 0, sizeof *item);
        if (object) {
            size_t klen;
            jws(p);
            if (p->s >= p->end || *p->s != '"' || jstring(p, &v->keys[v->n], &klen) < 0)
                return jfail(p, "bad key");
            jws(p);
            if (p->s >= p->end || *p->s++ != ':') {
                v->n++;
                return jfail(p, "missing ':'");
            }
        }
        v->n++;
        if (jvalue(p, item, depth + 1) < 0)
            return -1;
        jws(p);
        if (p->s < p->end && *p->s == ',') {
            p->s++;
            continue;
        }
        if (p->s < p->end && *p->s == (object ? '}' : ']')) {
            p->s++;
            return 0;
        }
        return jfail(p, "expected ',' or a closing bracket");
    }
}

static int jvalue(jparser *p, jval *v, int depth)
{
    memset(v, 0, sizeof *v);
    if (depth > 64)
        return jfail(p, "too deep");
    jws(p);
    if (p->s >= p->end)
        return jfail(p, "unexpected end");
    switch (*p->s) {
    case '{': return jcontainer(p, v, depth, 1);
    case '[': return jcontainer(p, v, depth, 0);
    case '"': v->type = J_STR; return jstring(p, &v->str, &v->len);
    case 't':
    case 'f':
    case 'n': {
        static const char *const words[] = {"true", "false", "null"};
        for (int i = 0; i < 3; i++) {
            size_t n = strlen(words[i]);
            if ((size_t)(p->end - p->s) >= n && memcmp(p->s, words[i], n) == 0) {
                v->type = i == 2 ? J_NULL : J_BOOL;
                v->boolean = i == 0;
                p->s += n;
                return 0;
            }
        }
        return jfail(p, "bad literal");
    }
    default: return jnumber(p, v);
    }
}

/* Parses exactly one JSON value spanning [s, s+len). */
static int jparse(const char *s, size_t len, jval *out, const char **why)
{
    jparser p = {s, s + len, NULL};
    int rc = jvalue(&p, out, 0);
    if (rc == 0) {
        jws(&p);
        if (p.s != p.end)
            rc = jfail(&p, "trailing characters");
    }
    *why = p.err;
    return rc;
}

static const jval *jget(const jval *obj, const char *key)
{
    assert_int_equal(obj->type, J_OBJ);
    for (size_t i = 0; i < obj->n; i++)
        if (strcmp(obj->keys[i], key) == 0)
            return &obj->items[i];
    fail_msg("no key %s", key);
    return NULL;
}

/* ---- Writing a page and finding its parts ---- */

static char *write_page(const bs_profile *p, const bs_render_opts *o, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    assert_non_null(f);
    OK(bs_write_html(f, p, o));
    assert_int_equal(fclose(f), 0);
    return buf;
}

static size_t count_of(const char *hay, size_t len, const char *needle)
{
    size_t n = 0, m = strlen(needle);
    for (size_t i = 0; i + m <= len; i++)
        if (memcmp(hay + i, needle, m) == 0)
            n++;
    return n;
}

static const char *find(const char *hay, size_t len, const char *needle)
{
    size_t m = strlen(needle);
    for (size_t i = 0; i + m <= len; i++)
        if (memcmp(hay + i, needle, m) == 0)
            return hay + i;
    return NULL;
}

#define DATA_OPEN "<script type=\"application/json\" id=\"beamspy-data\">"

/* Checks the page's structure and parses its data block into data. */
static void check_page(const char *page, size_t len, jval *data)
{
    assert_true(tu_utf8_valid(page, len));
    assert_int_equal(strlen(page), len); /* no NUL byte */
    assert_int_equal(memcmp(page, "<!DOCTYPE html>\n", 16), 0);
    assert_int_equal(count_of(page, len, "type=\"application/json\""), 1);
    assert_int_equal(count_of(page, len, "<script"), 3); /* data, then the transforms and the page's script */
    assert_int_equal(count_of(page, len, "</script>"), 3);
    assert_int_equal(count_of(page, len, "Content-Security-Policy\" content=\"default-src 'none'; script-src 'sha256-"), 1);
    assert_null(find(page, len, "<script src"));
    assert_null(find(page, len, "<link"));
    assert_null(find(page, len, "http://"));
    assert_null(find(page, len, "https://"));
    const char *open = find(page, len, DATA_OPEN);
    assert_non_null(open);
    const char *body = open + strlen(DATA_OPEN);
    const char *close = find(body, len - (size_t)(body - page), "</script>");
    assert_non_null(close);
    size_t blen = (size_t)(close - body);
    /* Nothing in the data may end the element or open a comment. */
    assert_null(find(body, blen, "</"));
    assert_null(find(body, blen, "<!--"));
    assert_null(find(body, blen, "<"));
    const char *why = NULL;
    if (jparse(body, blen, data, &why) < 0)
        fail_msg("data block is not JSON: %s", why ? why : "?");
    assert_int_equal(data->type, J_OBJ);
    /* The script comes after the data and the page ends with the document. */
    assert_non_null(find(close, len - (size_t)(close - page), "</script>\n<script>"));
    assert_int_equal(strcmp(page + len - 16, "</body>\n</html>\n"), 0);
}

/* ---- Profiles ---- */

/* Appends a tree of n nodes rooted at label; the caller fills the nodes. */
static bs_ptree *tree_of(bs_profile *p, const char *label, uint32_t n)
{
    OK(bs_profile_add_tree(p, label));
    bs_ptree *t = &p->trees[p->n_trees - 1];
    bs_pnode *nodes = realloc(t->nodes, (size_t)n * sizeof *nodes);
    assert_non_null(nodes);
    memset(nodes + 1, 0, (size_t)(n - 1) * sizeof *nodes);
    t->nodes = nodes;
    t->n_nodes = n;
    return t;
}

static uint32_t frame(bs_profile *p, const char *name)
{
    uint32_t id = bs_frame_table_intern(&p->frames, name, strlen(name));
    assert_int_not_equal(id, UINT32_MAX);
    return id;
}

static void set_node(bs_ptree *t, uint32_t i, uint32_t parent, uint32_t fr, uint64_t self, uint64_t calls)
{
    t->nodes[i] = (bs_pnode){.parent = parent, .frame = fr, .self_ns = self, .calls = calls};
}

static const char *const HOSTILE[] = {
    "'</script><img src=x onerror=alert(1)>':f/0",
    "m:'<!--'/0",
    "m:'</SCRIPT >'/1",
    "m:'a\"b\\\\c'/2",
    "m:'&amp;&lt;'/0",
    "m:'it''s'/0",
    "m:'\xe2\x80\xa8line\xe2\x80\xa9sep'/0",
    "m:'\xf0\x9f\x94\xa5 caf\xc3\xa9'/0",
    "m:']]>'/0",
    "raw\x01\x1f\x7f\x63ontrol", /* \x63 = 'c', written so the hex escape ends */
};
#define N_HOSTILE (sizeof HOSTILE / sizeof HOSTILE[0])

/* <0.80.0>: top -> hostile[i] -> SLEEP, and a recursive chain m:f/1 x 3;
 * <0.81.0> named: top -> m:f/1. Self times in ns. */
static void make_profile(bs_profile *p)
{
    OK(bs_profile_init(p));
    uint32_t top = frame(p, "m:top/0"), f = frame(p, "m:f/1");
    uint32_t n = 2 + 2 * (uint32_t)N_HOSTILE + 3;
    bs_ptree *t = tree_of(p, "<0.80.0>", n);
    set_node(t, 0, UINT32_MAX, t->nodes[0].frame, 5, 0);
    set_node(t, 1, 0, top, 1000, 1);
    uint32_t at = 2;
    for (size_t i = 0; i < N_HOSTILE; i++) {
        set_node(t, at, 1, frame(p, HOSTILE[i]), 100 + i, 1 + i);
        set_node(t, at + 1, at, p->sleep_frame, 7, 0);
        at += 2;
    }
    set_node(t, at, 1, f, 10, 1);
    set_node(t, at + 1, at, f, 20, 1);
    set_node(t, at + 2, at + 1, f, 30, 1);
    t->events = 42;
    bs_ptree *u = tree_of(p, "<0.81.0> my_server", 3);
    set_node(u, 1, 0, top, 1ull << 40, 1);
    set_node(u, 2, 1, f, UINT64_MAX / 4, 3);
    bs_profile_compute_totals(p);
    snprintf(p->meta.node, sizeof p->meta.node, "a@</script>");
    snprintf(p->meta.otp_release, sizeof p->meta.otp_release, "25");
    p->meta.start_unix_us = 1763770000123456;
    p->duration_ns = 123456789;
    bs_profile_set_truncated(p, "max_memory");
    p->timeline_truncated = 1;
}

/* ---- Tests ---- */

static char *escaped(const char *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    bs_json_write_string(f, s);
    assert_int_equal(fclose(f), 0);
    return buf;
}

static void test_json_escape(void **state)
{
    (void)state;
    static const struct { const char *in, *want; } cases[] = {
        {"", "\"\""},
        {"plain mod:fun/1", "\"plain mod:fun/1\""},
        {"a\"b\\c", "\"a\\\"b\\\\c\""},
        {"</script>", "\"\\u003c/script\\u003e\""},
        {"<!-- & -->", "\"\\u003c!-- \\u0026 --\\u003e\""},
        {"\n\r\t\b\f", "\"\\n\\r\\t\\b\\f\""},
        {"\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\""},
        {"\xe2\x80\xa8|\xe2\x80\xa9", "\"\\u2028|\\u2029\""},
        {"caf\xc3\xa9 \xf0\x9f\x94\xa5 \xe2\x80\xa7", "\"caf\xc3\xa9 \xf0\x9f\x94\xa5 \xe2\x80\xa7\""},
        {"bad\xff|\xc3|\xe0\x80\xaf|\xed\xa0\x80|\xf4\x90\x80\x80", "\"bad\\ufffd|\\ufffd|\\ufffd\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd\\ufffd\""},
        {"end\xe2\x80", "\"end\\ufffd\\ufffd\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = escaped(cases[i].in);
        assert_string_equal(got, cases[i].want);
        free(got);
    }
    char *null_is_empty = escaped(NULL);
    assert_string_equal(null_is_empty, "\"\"");
    free(null_is_empty);
}

static void test_structure_and_round_trip(void **state)
{
    (void)state;
    bs_profile p;
    make_profile(&p);
    size_t len;
    char *page = write_page(&p, &(bs_render_opts){0}, &len);
    jval data;
    check_page(page, len, &data);
    assert_non_null(find(page, len, "<title>beamspy profile</title>"));
    assert_string_equal(jget(&data, "title")->str, "beamspy profile");
    assert_string_equal(jget(&data, "unit")->str, "ns");
    assert_false(jget(&data, "hideSleep")->boolean);
    assert_int_equal(jget(&data, "sleepFrame")->u, p.sleep_frame);
    const jval *meta = jget(&data, "meta");
    assert_string_equal(jget(meta, "node")->str, "a@</script>");
    assert_string_equal(jget(meta, "otp")->str, "25");
    assert_string_equal(jget(meta, "truncated")->str, "max_memory");
    assert_true(jget(meta, "timelineTruncated")->boolean);
    assert_int_equal(jget(meta, "startUnixUs")->u, 1763770000123456ull);
    assert_int_equal(jget(meta, "durationNs")->u, 123456789);

    /* Every name comes back exactly, hostile or not. */
    const jval *frames = jget(&data, "frames");
    assert_int_equal(frames->n, p.frames.n);
    for (uint32_t i = 0; i < p.frames.n; i++)
        assert_string_equal(frames->items[i].str, bs_frame_name(&p.frames, i));

    /* And every node: parent by distance, frame, self, calls. */
    const jval *procs = jget(&data, "processes");
    assert_int_equal(procs->n, p.n_trees);
    for (uint32_t t = 0; t < p.n_trees; t++) {
        const bs_ptree *tree = &p.trees[t];
        const jval *parent = jget(&procs->items[t], "parent"), *fr = jget(&procs->items[t], "frame"),
                   *self = jget(&procs->items[t], "self"), *calls = jget(&procs->items[t], "calls");
        assert_false(jget(&procs->items[t], "syntheticRoot")->boolean);
        assert_int_equal(parent->n, tree->n_nodes);
        assert_int_equal(fr->n, tree->n_nodes);
        assert_int_equal(self->n, tree->n_nodes);
        assert_int_equal(calls->n, tree->n_nodes);
        for (uint32_t i = 0; i < tree->n_nodes; i++) {
            assert_true(parent->items[i].is_uint && self->items[i].is_uint);
            assert_int_equal(parent->items[i].u, i ? i - tree->nodes[i].parent : 0);
            assert_int_equal(fr->items[i].u, tree->nodes[i].frame);
            assert_int_equal(self->items[i].u, tree->nodes[i].self_ns);
            assert_int_equal(calls->items[i].u, tree->nodes[i].calls);
        }
    }
    assert_int_equal(jget(&procs->items[0], "events")->u, 42);
    jfree(&data);
    free(page);
    bs_profile_free(&p);
}

static void test_title_and_options(void **state)
{
    (void)state;
    bs_profile p;
    make_profile(&p);
    p.unit = BS_UNIT_COUNT;
    bs_render_opts o = {.title = "</title><script>alert(1)</script> & 'x'", .subtitle = "sub</script>",
                        .count_name = "ticks", .drop_sleep = 1, .palette = BS_PALETTE_BEAM};
    size_t len;
    char *page = write_page(&p, &o, &len);
    jval data;
    check_page(page, len, &data);
    assert_non_null(find(page, len, "<title>&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt; &amp; &#39;x&#39;</title>"));
    assert_string_equal(jget(&data, "title")->str, o.title);
    assert_string_equal(jget(&data, "subtitle")->str, o.subtitle);
    assert_string_equal(jget(&data, "unit")->str, "count");
    assert_string_equal(jget(&data, "countName")->str, "ticks");
    assert_string_equal(jget(&data, "palette")->str, "beam");
    assert_true(jget(&data, "hideSleep")->boolean);
    jfree(&data);
    free(page);
    bs_profile_free(&p);
}

static void test_deterministic(void **state)
{
    (void)state;
    bs_profile p, copy;
    make_profile(&p);
    size_t a_len, b_len, c_len;
    char *a = write_page(&p, NULL, &a_len);
    char *b = write_page(&p, NULL, &b_len);
    OK(bs_profile_clone(&p, &copy));
    char *c = write_page(&copy, NULL, &c_len);
    assert_int_equal(a_len, b_len);
    assert_int_equal(a_len, c_len);
    assert_memory_equal(a, b, a_len);
    assert_memory_equal(a, c, a_len);
    free(a);
    free(b);
    free(c);
    bs_profile_free(&p);
    bs_profile_free(&copy);
}

static void test_empty_and_synthetic(void **state)
{
    (void)state;
    bs_profile p;
    OK(bs_profile_init(&p));
    size_t len;
    char *page = write_page(&p, NULL, &len);
    jval data;
    check_page(page, len, &data);
    assert_int_equal(jget(&data, "processes")->n, 0);
    jfree(&data);
    free(page);

    bs_ptree *t = tree_of(&p, "all", 2);
    t->synthetic_root = 1;
    set_node(t, 1, 0, frame(&p, "main;x"), 3, 1);
    page = write_page(&p, NULL, &len);
    check_page(page, len, &data);
    assert_true(jget(&jget(&data, "processes")->items[0], "syntheticRoot")->boolean);
    jfree(&data);
    free(page);
    bs_profile_free(&p);
}

static void test_broken_tree_refused(void **state)
{
    (void)state;
    bs_profile p;
    make_profile(&p);
    p.trees[0].nodes[3].parent = 3; /* not smaller than its own index */
    FILE *f = fopen("/dev/null", "w");
    assert_non_null(f);
    errno = 0;
    assert_int_equal(bs_write_html(f, &p, NULL), -1);
    assert_int_equal(errno, EINVAL);
    p.trees[0].nodes[3].parent = 1;
    p.trees[0].nodes[3].frame = p.frames.n; /* not in the frame table */
    assert_int_equal(bs_write_html(f, &p, NULL), -1);
    fclose(f);
    bs_profile_free(&p);
}

static void test_write_file_by_extension(void **state)
{
    (void)state;
    bs_profile p;
    make_profile(&p);
    char dir[] = "/tmp/bs_test_html_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/out.HTML", dir);
    OK(bs_write_file(path, BS_FORMAT_UNKNOWN, &p, &(bs_render_opts){.drop_sleep = 1}));
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *page = NULL;
    size_t len = 0, cap = 0, n;
    char chunk[65536];
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            page = realloc(page, cap);
            assert_non_null(page);
        }
        memcpy(page + len, chunk, n);
        len += n;
    }
    fclose(f);
    page[len] = '\0';
    jval data;
    check_page(page, len, &data);
    /* The filter ran first: no node of any tree is SLEEP any more. */
    const jval *procs = jget(&data, "processes");
    for (size_t t = 0; t < procs->n; t++) {
        const jval *fr = jget(&procs->items[t], "frame");
        for (size_t i = 0; i < fr->n; i++)
            assert_int_not_equal(fr->items[i].u, p.sleep_frame);
    }
    jfree(&data);
    free(page);
    OK(unlink(path));
    OK(rmdir(dir));
    bs_profile_free(&p);
}

/* 100,000 nodes (10,000 under valgrind) in 4 processes: valid, and small —
 * the data stays within ~30 bytes a node. */
static void test_large_profile_size(void **state)
{
    (void)state;
    uint32_t per_tree = tu_small() ? 2500 : 25000;
    bs_profile p;
    OK(bs_profile_init(&p));
    uint32_t funs[1000];
    char name[64];
    for (uint32_t i = 0; i < 1000; i++) {
        snprintf(name, sizeof name, "module_%u:function_%u/%u", i % 50, i, i % 4);
        funs[i] = frame(&p, name);
    }
    uint64_t seed = 7;
    for (int t = 0; t < 4; t++) {
        snprintf(name, sizeof name, "<0.%d.0>", 90 + t);
        bs_ptree *tree = tree_of(&p, name, per_tree);
        for (uint32_t i = 1; i < per_tree; i++) {
            uint32_t parent = tu_rand(&seed) % 4 ? i - 1 : (uint32_t)(tu_rand(&seed) % i);
            set_node(tree, i, parent, funs[tu_rand(&seed) % 1000], tu_rand(&seed) % 5000000, 1 + tu_rand(&seed) % 100);
        }
    }
    bs_profile_compute_totals(&p);
    size_t len;
    char *page = write_page(&p, NULL, &len);
    jval data;
    check_page(page, len, &data);
    size_t nodes = 4 * (size_t)per_tree, fixed = 60000 + 30 * 1000;
    if (len > fixed + 30 * nodes)
        fail_msg("%zu bytes for %zu nodes", len, nodes);
    jfree(&data);
    free(page);
    bs_profile_free(&p);
}

/* argv[1], if given, runs only the test cases whose name matches it (run.sh
 * runs each case in its own process). */
int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_escape),
        cmocka_unit_test(test_structure_and_round_trip),
        cmocka_unit_test(test_title_and_options),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_empty_and_synthetic),
        cmocka_unit_test(test_broken_tree_refused),
        cmocka_unit_test(test_write_file_by_extension),
        cmocka_unit_test(test_large_profile_size),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
