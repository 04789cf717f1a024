/* test_pprof.c — the pprof writer (pprof.c).
 *
 * Every output is gunzipped and decoded field by field as profile.proto
 * says (string table, functions, locations, samples with their values and
 * labels), and what a pprof reader would find is compared with the profile:
 * the stacks of each process and their self times and calls, the process as
 * the label "process" and not a frame, one location and one function per
 * frame name, the sample types, a profile of counts, stacks cut at
 * folded_max_depth ending in "[deeper]", and determinism. go tool pprof
 * itself reads real profiles in test/cli. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#include "writers/writers.h"
#include "test_util.h"

#define OK(x) assert_int_equal((x), 0)
#define MAX_ITEMS 64
#define MAX_STACK 8

typedef struct { const unsigned char *p, *end; } pb;

static uint64_t varint(pb *b)
{
    uint64_t v = 0;
    for (unsigned shift = 0; b->p < b->end; shift += 7) {
        unsigned char c = *b->p++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            return v;
        assert_true(shift < 63);
    }
    fail_msg("truncated varint");
    return 0;
}

/* Next field: its number, and its value (varint) or bytes (length-delimited). */
static int next_field(pb *b, unsigned *field, uint64_t *v, pb *bytes)
{
    if (b->p >= b->end)
        return 0;
    uint64_t tag = varint(b);
    *field = (unsigned)(tag >> 3);
    if ((tag & 7) == 0) {
        *v = varint(b);
    } else {
        assert_int_equal(tag & 7, 2);
        uint64_t len = varint(b);
        assert_true(len <= (uint64_t)(b->end - b->p));
        bytes->p = b->p;
        bytes->end = b->p + len;
        b->p += len;
    }
    return 1;
}

typedef struct decoded {
    char *strings[MAX_ITEMS];
    size_t n_strings;
    uint64_t sample_type[2][2];
    size_t n_sample_types;
    uint64_t default_type;
    uint64_t fn_id[MAX_ITEMS], fn_name[MAX_ITEMS];
    size_t n_fns;
    uint64_t loc_id[MAX_ITEMS], loc_fn[MAX_ITEMS];
    size_t n_locs;
    struct {
        uint64_t locs[MAX_STACK];
        size_t n_locs;
        uint64_t values[2];
        size_t n_values;
        uint64_t label_key, label_str;
    } samples[MAX_ITEMS];
    size_t n_samples;
} decoded;

static void packed(pb b, uint64_t *out, size_t *n, size_t cap)
{
    while (b.p < b.end) {
        assert_true(*n < cap);
        out[(*n)++] = varint(&b);
    }
}

static void decode(const unsigned char *data, size_t size, decoded *d)
{
    memset(d, 0, sizeof *d);
    pb b = {data, data + size}, m, in;
    unsigned f, g, h;
    uint64_t v;
    while (next_field(&b, &f, &v, &m)) {
        if (f == 6) {
            assert_true(d->n_strings < MAX_ITEMS);
            size_t len = (size_t)(m.end - m.p);
            char *s = malloc(len + 1);
            assert_non_null(s);
            memcpy(s, m.p, len);
            s[len] = '\0';
            d->strings[d->n_strings++] = s;
        } else if (f == 1) {
            assert_true(d->n_sample_types < 2);
            while (next_field(&m, &g, &v, &in))
                d->sample_type[d->n_sample_types][g - 1] = v;
            d->n_sample_types++;
        } else if (f == 14) {
            d->default_type = v;
        } else if (f == 5) {
            assert_true(d->n_fns < MAX_ITEMS);
            while (next_field(&m, &g, &v, &in)) {
                if (g == 1)
                    d->fn_id[d->n_fns] = v;
                if (g == 2)
                    d->fn_name[d->n_fns] = v;
            }
            d->n_fns++;
        } else if (f == 4) {
            assert_true(d->n_locs < MAX_ITEMS);
            while (next_field(&m, &g, &v, &in)) {
                if (g == 1)
                    d->loc_id[d->n_locs] = v;
                if (g == 4) {
                    pb line;
                    while (next_field(&in, &h, &v, &line))
                        if (h == 1)
                            d->loc_fn[d->n_locs] = v;
                }
            }
            d->n_locs++;
        } else if (f == 2) {
            assert_true(d->n_samples < MAX_ITEMS);
            while (next_field(&m, &g, &v, &in)) {
                if (g == 1)
                    packed(in, d->samples[d->n_samples].locs, &d->samples[d->n_samples].n_locs, MAX_STACK);
                if (g == 2)
                    packed(in, d->samples[d->n_samples].values, &d->samples[d->n_samples].n_values, 2);
                if (g == 3) {
                    pb label;
                    while (next_field(&in, &h, &v, &label)) {
                        if (h == 1)
                            d->samples[d->n_samples].label_key = v;
                        if (h == 2)
                            d->samples[d->n_samples].label_str = v;
                    }
                }
            }
            d->n_samples++;
        }
    }
}

static void free_decoded(decoded *d)
{
    for (size_t i = 0; i < d->n_strings; i++)
        free(d->strings[i]);
}

static const char *str(const decoded *d, uint64_t i)
{
    assert_true(i < d->n_strings);
    return d->strings[i];
}

static const char *loc_name(const decoded *d, uint64_t id)
{
    for (size_t i = 0; i < d->n_locs; i++)
        if (d->loc_id[i] == id)
            for (size_t k = 0; k < d->n_fns; k++)
                if (d->fn_id[k] == d->loc_fn[i])
                    return str(d, d->fn_name[k]);
    fail_msg("no location %llu", (unsigned long long)id);
    return NULL;
}

/* The stack of sample i as "process|root;...;leaf". */
static void stack_text(const decoded *d, size_t i, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "%s|", d->samples[i].label_str ? str(d, d->samples[i].label_str) : "");
    for (size_t k = d->samples[i].n_locs; k-- > 0;)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", loc_name(d, d->samples[i].locs[k]), k ? ";" : "");
}

/* Gunzips what bs_write_memory wrote for p under o, and decodes it. */
static void write_and_decode(const bs_profile *p, const bs_render_opts *o, decoded *d)
{
    char *data = NULL;
    size_t size = 0;
    OK(bs_write_memory(BS_FORMAT_PPROF, p, o, 0, &data, &size));
    assert_true(size > 18);
    assert_int_equal((unsigned char)data[0], 0x1f); /* gzip */
    assert_int_equal((unsigned char)data[1], 0x8b);
    size_t cap = 1 << 20;
    unsigned char *raw = malloc(cap);
    assert_non_null(raw);
    z_stream z = {0};
    assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
    z.next_in = (unsigned char *)data;
    z.avail_in = (uInt)size;
    z.next_out = raw;
    z.avail_out = (uInt)cap;
    assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
    assert_int_equal(z.avail_in, 0);
    size_t raw_size = cap - z.avail_out;
    inflateEnd(&z);
    free(data);
    decode(raw, raw_size, d);
    free(raw);
}

static const bs_key RUN = KEY(M_M, F_RUN, 0), LOOP = KEY(M_M, F_LOOP, 1), SORT = KEY(M_LISTS, F_SORT, 1);

/* A process: 10 ns of its own, run calls loop, which calls itself and then
 * lists:sort/1; loop has no time of its own at depth 2. */
static void add_worker(bs_profile *prof, const char *label)
{
    bs_proc p;
    OK(bs_proc_init(&p, NULL, 0, 1, 1));
    OK(bs_proc_call(&p, &RUN, BS_CALLER_ROOT, NULL, 10));          /* root: 10 */
    OK(bs_proc_call(&p, &LOOP, BS_CALLER_FRAME, &RUN, 100));        /* run: 90 */
    OK(bs_proc_call(&p, &LOOP, BS_CALLER_FRAME, &LOOP, 300));       /* loop #1: 200 */
    OK(bs_proc_call(&p, &SORT, BS_CALLER_FRAME, &LOOP, 300));       /* loop #2: 0 */
    OK(bs_proc_return_to(&p, &LOOP, 1300));                         /* sort: 1000 */
    OK(bs_proc_return_to(&p, &LOOP, 1300));
    OK(bs_proc_return_to(&p, &RUN, 1400));                          /* loop #1: +100 */
    OK(bs_proc_return_to(&p, NULL, 1500));                          /* run: +100 */
    bs_proc_flush(&p, 1500);
    OK(bs_profile_add_proc(prof, &p, label, tu_namer, NULL));
    bs_proc_free(&p);
}

static void make_profile(bs_profile *prof)
{
    OK(bs_profile_init(prof));
    add_worker(prof, "<0.80.0>");
    add_worker(prof, "<0.81.0> my_server");
    bs_profile_compute_totals(prof);
}

/* The value(s) of the sample whose stack is text; fails if there is none. */
static size_t find_sample(const decoded *d, const char *text)
{
    char buf[256];
    for (size_t i = 0; i < d->n_samples; i++) {
        stack_text(d, i, buf, sizeof buf);
        if (strcmp(buf, text) == 0)
            return i;
    }
    fail_msg("no sample %s", text);
    return 0;
}

static void test_stacks_times_calls(void **state)
{
    (void)state;
    bs_profile prof;
    make_profile(&prof);
    decoded d;
    write_and_decode(&prof, &(bs_render_opts){0}, &d);
    assert_string_equal(str(&d, 0), "");
    assert_int_equal(d.n_sample_types, 2);
    assert_string_equal(str(&d, d.sample_type[0][0]), "wall");
    assert_string_equal(str(&d, d.sample_type[0][1]), "nanoseconds");
    assert_string_equal(str(&d, d.sample_type[1][0]), "calls");
    assert_string_equal(str(&d, d.sample_type[1][1]), "count");
    assert_string_equal(str(&d, d.default_type), "wall");
    /* Every string once. */
    for (size_t i = 0; i < d.n_strings; i++)
        for (size_t k = 0; k < i; k++)
            assert_string_not_equal(d.strings[i], d.strings[k]);
    /* One location and one function per frame: m:run/0, m:loop/1,
     * lists:sort/1 and the two process frames (their own time). */
    assert_int_equal(d.n_fns, 5);
    assert_int_equal(d.n_locs, 5);
    const char *procs[] = {"<0.80.0>", "<0.81.0> my_server"};
    char want[128];
    uint64_t total = 0;
    for (size_t k = 0; k < 2; k++) {
        size_t i;
        snprintf(want, sizeof want, "%s|%s", procs[k], procs[k]);
        i = find_sample(&d, want);
        assert_int_equal(d.samples[i].values[0], 10);
        assert_string_equal(str(&d, d.samples[i].label_key), "process");
        snprintf(want, sizeof want, "%s|m:run/0", procs[k]);
        i = find_sample(&d, want);
        assert_int_equal(d.samples[i].values[0], 190);
        assert_int_equal(d.samples[i].values[1], 1);
        snprintf(want, sizeof want, "%s|m:run/0;m:loop/1", procs[k]);
        i = find_sample(&d, want);
        assert_int_equal(d.samples[i].values[0], 300);
        assert_int_equal(d.samples[i].values[1], 1);
        /* No time of its own, but its call is counted. */
        snprintf(want, sizeof want, "%s|m:run/0;m:loop/1;m:loop/1", procs[k]);
        i = find_sample(&d, want);
        assert_int_equal(d.samples[i].values[0], 0);
        assert_int_equal(d.samples[i].values[1], 1);
        snprintf(want, sizeof want, "%s|m:run/0;m:loop/1;m:loop/1;lists:sort/1", procs[k]);
        i = find_sample(&d, want);
        assert_int_equal(d.samples[i].values[0], 1000);
        assert_int_equal(d.samples[i].values[1], 1);
    }
    for (size_t i = 0; i < d.n_samples; i++)
        total += d.samples[i].values[0];
    assert_int_equal(d.n_samples, 10);
    assert_int_equal(total, 2 * 1500);
    free_decoded(&d);
    /* Same profile, same bytes. */
    char *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    OK(bs_write_memory(BS_FORMAT_PPROF, &prof, NULL, 0, &a, &na));
    OK(bs_write_memory(BS_FORMAT_PPROF, &prof, NULL, 0, &b, &nb));
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, na);
    free(a);
    free(b);
    bs_profile_free(&prof);
}

static void test_counts(void **state)
{
    (void)state;
    bs_profile prof;
    make_profile(&prof);
    prof.unit = BS_UNIT_COUNT; /* as folded input and CPU samples are */
    decoded d;
    write_and_decode(&prof, NULL, &d);
    assert_int_equal(d.n_sample_types, 1);
    assert_string_equal(str(&d, d.sample_type[0][0]), "samples");
    assert_string_equal(str(&d, d.sample_type[0][1]), "count");
    size_t i = find_sample(&d, "<0.80.0>|m:run/0;m:loop/1;m:loop/1;lists:sort/1");
    assert_int_equal(d.samples[i].n_values, 1);
    assert_int_equal(d.samples[i].values[0], 1000);
    assert_int_equal(d.n_samples, 8); /* no calls-only samples */
    free_decoded(&d);
    bs_profile_free(&prof);
}

static void test_deeper(void **state)
{
    (void)state;
    bs_profile prof;
    make_profile(&prof);
    decoded d;
    write_and_decode(&prof, &(bs_render_opts){.folded_max_depth = 2}, &d);
    /* Below two frames, the rest of the time goes to one "[deeper]" leaf. */
    size_t i = find_sample(&d, "<0.80.0>|m:run/0;m:loop/1;[deeper]");
    assert_int_equal(d.samples[i].values[0], 1000);
    assert_int_equal(d.samples[i].values[1], 0);
    uint64_t total = 0;
    for (size_t k = 0; k < d.n_samples; k++)
        total += d.samples[k].values[0];
    assert_int_equal(total, 2 * 1500);
    free_decoded(&d);
    bs_profile_free(&prof);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stacks_times_calls),
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_deeper),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
