/* test_callgrind.c — the callgrind writer (callgrind.c).
 *
 * Every output is read back the way callgrind_annotate and KCachegrind read
 * it (header lines, then fl=/fn=/cfl=/cfn= with name compression, cost lines
 * "<line> <cost>", calls= lines that make the next cost line a call's
 * inclusive cost) and the functions, self costs, call counts and inclusive
 * costs found are compared with what the profile says. Cases: two processes
 * with recursion and a module-crossing call, Elixir names, a profile of
 * counts (folded input: calls unknown), truncation noted in the header,
 * dispatch by extension and by valgrind's file names, determinism. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "readers/readers.h"
#include "writers/writers.h"
#include "test_util.h"

#define OK(x) assert_int_equal((x), 0)
#define MAX_IDS 64
#define MAX_EDGES 64

/* What a reader of the file ends up with. */
typedef struct cg_read {
    char events[32];
    char truncated[128];
    unsigned long long summary;
    char *files[MAX_IDS + 1];  /* by compressed id */
    char *fns[MAX_IDS + 1];
    int n_functions;
    struct { char name[128], file[64]; unsigned long long self; } functions[MAX_IDS];
    int n_edges;
    struct { char caller[128], callee[128]; unsigned long long calls, inclusive; } edges[MAX_EDGES];
} cg_read;

/* "(3) name" or "(3)": the name, defining it the first time. */
static const char *uncompress(char **table, const char *text)
{
    assert_true(text[0] == '(');
    char *end;
    long id = strtol(text + 1, &end, 10);
    assert_true(id > 0 && id <= MAX_IDS && *end == ')');
    if (end[1] == ' ') {
        assert_null(table[id]); /* each id is defined once */
        table[id] = strdup(end + 2);
    } else {
        assert_true(end[1] == '\0');
    }
    assert_non_null(table[id]);
    return table[id];
}

static void parse(char *text, cg_read *r)
{
    memset(r, 0, sizeof *r);
    int in_header = 1, function = -1;
    const char *file = NULL, *cfile = NULL, *cfn = NULL;
    unsigned long long calls = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#')
            continue;
        if (in_header) {
            if (strncmp(line, "events: ", 8) == 0) {
                snprintf(r->events, sizeof r->events, "%s", line + 8);
                in_header = 0;
            } else if (strncmp(line, "desc: Truncated: ", 17) == 0) {
                snprintf(r->truncated, sizeof r->truncated, "%s", line + 17);
            } else {
                assert_true(strncmp(line, "version: 1", 10) == 0 || strncmp(line, "creator: ", 9) == 0 ||
                            strncmp(line, "cmd: ", 5) == 0 || strncmp(line, "desc: ", 6) == 0 ||
                            strncmp(line, "positions: line", 15) == 0 || strncmp(line, "event: ", 7) == 0);
            }
            continue;
        }
        if (strncmp(line, "summary: ", 9) == 0) {
            r->summary = strtoull(line + 9, NULL, 10);
        } else if (strncmp(line, "fl=", 3) == 0) {
            file = uncompress(r->files, line + 3);
        } else if (strncmp(line, "fn=", 3) == 0) {
            assert_non_null(file);
            const char *name = uncompress(r->fns, line + 3);
            function = r->n_functions++;
            assert_true(function < MAX_IDS);
            snprintf(r->functions[function].name, sizeof r->functions[function].name, "%s", name);
            snprintf(r->functions[function].file, sizeof r->functions[function].file, "%s", file);
        } else if (strncmp(line, "cfl=", 4) == 0) {
            cfile = uncompress(r->files, line + 4);
        } else if (strncmp(line, "cfn=", 4) == 0) {
            cfn = uncompress(r->fns, line + 4);
        } else if (strncmp(line, "calls=", 6) == 0) {
            calls = strtoull(line + 6, NULL, 10);
            assert_true(calls > 0); /* 0 would make the cost the caller's */
            assert_non_null(cfn);
        } else {
            char *end;
            assert_true(strtoull(line, &end, 10) == 0 && *end == ' ');
            unsigned long long cost = strtoull(end + 1, NULL, 10);
            assert_true(function >= 0);
            if (calls) {
                int e = r->n_edges++;
                assert_true(e < MAX_EDGES);
                memcpy(r->edges[e].caller, r->functions[function].name, sizeof r->edges[e].caller);
                snprintf(r->edges[e].callee, sizeof r->edges[e].callee, "%s", cfn);
                r->edges[e].calls = calls;
                r->edges[e].inclusive = cost;
                calls = 0;
                cfile = NULL;
            } else {
                r->functions[function].self += cost;
            }
        }
    }
    (void)cfile;
}

static void free_read(cg_read *r)
{
    for (int i = 0; i <= MAX_IDS; i++) {
        free(r->files[i]);
        free(r->fns[i]);
    }
}

static char *write_mem(const bs_profile *p)
{
    char *text = NULL;
    size_t n = 0;
    FILE *out = open_memstream(&text, &n);
    assert_non_null(out);
    OK(bs_write_callgrind(out, p, &(bs_render_opts){0}));
    assert_int_equal(fclose(out), 0);
    return text;
}

static int function_index(const cg_read *r, const char *name)
{
    for (int i = 0; i < r->n_functions; i++)
        if (strcmp(r->functions[i].name, name) == 0)
            return i;
    return -1;
}

static void assert_function(const cg_read *r, const char *name, const char *file, unsigned long long self)
{
    int i = function_index(r, name);
    if (i < 0)
        fail_msg("no function %s", name);
    assert_string_equal(r->functions[i].file, file);
    assert_int_equal(r->functions[i].self, self);
}

static void assert_edge(const cg_read *r, const char *caller, const char *callee, unsigned long long calls,
                        unsigned long long inclusive)
{
    for (int i = 0; i < r->n_edges; i++)
        if (strcmp(r->edges[i].caller, caller) == 0 && strcmp(r->edges[i].callee, callee) == 0) {
            assert_int_equal(r->edges[i].calls, calls);
            assert_int_equal(r->edges[i].inclusive, inclusive);
            return;
        }
    fail_msg("no call %s -> %s", caller, callee);
}

static const bs_key RUN = KEY(M_M, F_RUN, 0), LOOP = KEY(M_M, F_LOOP, 1), SORT = KEY(M_LISTS, F_SORT, 1),
                    FOO = KEY(M_FOO, F_X, 2);

/* A process: run calls loop(3) which recurses twice (loop -> loop -> loop),
 * the innermost calls lists:sort/1; back in run, Elixir.Foo:x/2 twice. */
static void add_worker(bs_profile *prof, const char *label)
{
    bs_proc p;
    OK(bs_proc_init(&p, NULL, 0, 1, 1));
    OK(bs_proc_call(&p, &RUN, BS_CALLER_ROOT, NULL, 100));
    OK(bs_proc_call(&p, &LOOP, BS_CALLER_FRAME, &RUN, 200));        /* loop #1 */
    OK(bs_proc_call(&p, &LOOP, BS_CALLER_FRAME, &LOOP, 300));       /* loop #2 */
    OK(bs_proc_call(&p, &LOOP, BS_CALLER_FRAME, &LOOP, 450));       /* loop #3 */
    OK(bs_proc_call(&p, &SORT, BS_CALLER_FRAME, &LOOP, 500));
    OK(bs_proc_return_to(&p, &LOOP, 1500));                         /* sort: 1000 */
    OK(bs_proc_return_to(&p, &LOOP, 1600));                         /* #3: 50 + 100 */
    OK(bs_proc_return_to(&p, &LOOP, 1700));                         /* #2: 150 + 100 */
    OK(bs_proc_return_to(&p, &RUN, 1800));                          /* #1: 100 + 100 */
    OK(bs_proc_call(&p, &FOO, BS_CALLER_FRAME, &RUN, 1800));
    OK(bs_proc_return_to(&p, &RUN, 2000));
    OK(bs_proc_call(&p, &FOO, BS_CALLER_FRAME, &RUN, 2100));
    OK(bs_proc_return_to(&p, &RUN, 2400));                          /* Foo: 200 + 300 */
    OK(bs_proc_return_to(&p, NULL, 2500));                          /* run: 100+100+100 */
    bs_proc_flush(&p, 2500);
    OK(bs_profile_add_proc(prof, &p, label, tu_namer, NULL));
    bs_proc_free(&p);
}

static void make_profile(bs_profile *prof)
{
    OK(bs_profile_init(prof));
    add_worker(prof, "<0.80.0>");
    add_worker(prof, "<0.81.0> my_server");
    bs_profile_compute_totals(prof);
    snprintf(prof->meta.source, sizeof prof->meta.source, "beamspy:apply(m:run/0)");
}

static void test_functions_and_calls(void **state)
{
    (void)state;
    bs_profile prof;
    make_profile(&prof);
    char *text = write_mem(&prof);
    cg_read r;
    parse(text, &r);
    assert_string_equal(r.events, "ns");
    /* Self costs summed over both processes and over every depth of the
     * recursion; each function belongs to its module. */
    assert_function(&r, "<0.80.0>", "(processes)", 100);
    assert_function(&r, "<0.81.0> my_server", "(processes)", 100);
    assert_function(&r, "m:run/0", "m", 2 * 300);
    assert_function(&r, "m:loop/1", "m", 2 * (100 + 150 + 50 + 100 + 100 + 100));
    assert_function(&r, "lists:sort/1", "lists", 2 * 1000);
    assert_function(&r, "'Elixir.Foo':x/2", "'Elixir.Foo'", 2 * 500);
    assert_int_equal(r.n_functions, 6);
    assert_int_equal(r.summary, 2 * 2500);
    /* Calls and inclusive costs per edge; recursion counts nested calls in
     * the loop -> loop edge (two per process, inclusive 1250 + 1100). */
    assert_edge(&r, "<0.80.0>", "m:run/0", 1, 2400);
    assert_edge(&r, "<0.81.0> my_server", "m:run/0", 1, 2400);
    assert_edge(&r, "m:run/0", "m:loop/1", 2, 2 * 1600);
    assert_edge(&r, "m:loop/1", "m:loop/1", 4, 2 * (1400 + 1150));
    assert_edge(&r, "m:loop/1", "lists:sort/1", 2, 2 * 1000);
    assert_edge(&r, "m:run/0", "'Elixir.Foo':x/2", 4, 2 * 500);
    assert_int_equal(r.n_edges, 6);
    assert_string_equal(r.truncated, "");
    free_read(&r);
    free(text);
    bs_profile_free(&prof);
}

/* Same profile, same bytes. */
static void test_determinism(void **state)
{
    (void)state;
    bs_profile a, b;
    make_profile(&a);
    make_profile(&b);
    char *ta = write_mem(&a), *tb = write_mem(&b);
    assert_string_equal(ta, tb);
    free(ta);
    free(tb);
    bs_profile_free(&a);
    bs_profile_free(&b);
}

/* Counts read from folded stacks have no calls: every edge has one. */
static void test_count_profile(void **state)
{
    (void)state;
    static const char folded[] = "<0.90.0>;m:run/0;Elixir.Foo.Bar.baz/1 7\n<0.90.0>;m:run/0 3\n";
    FILE *in = fmemopen((void *)folded, sizeof folded - 1, "r");
    assert_non_null(in);
    bs_profile prof;
    bs_read_error err;
    OK(bs_read_folded(in, "mem", &prof, &err));
    fclose(in);
    assert_int_equal(prof.unit, BS_UNIT_COUNT);
    bs_profile_set_truncated(&prof, "max_events (10 events)");
    char *text = write_mem(&prof);
    cg_read r;
    parse(text, &r);
    assert_string_equal(r.events, "samples");
    assert_string_equal(r.truncated, "max_events (10 events)");
    assert_function(&r, "m:run/0", "m", 3);
    assert_function(&r, "Elixir.Foo.Bar.baz/1", "Elixir.Foo.Bar", 7);
    assert_edge(&r, "m:run/0", "Elixir.Foo.Bar.baz/1", 1, 7);
    assert_edge(&r, "<0.90.0>", "m:run/0", 1, 10);
    assert_int_equal(r.summary, 10);
    free_read(&r);
    free(text);
    bs_profile_free(&prof);
}

static void test_dispatch(void **state)
{
    (void)state;
    assert_int_equal(bs_format_from_path("out/p.callgrind"), BS_FORMAT_CALLGRIND);
    assert_int_equal(bs_format_from_path("callgrind.out.1234"), BS_FORMAT_CALLGRIND);
    assert_int_equal(bs_format_from_path("/tmp/x/callgrind.out.beam"), BS_FORMAT_CALLGRIND);
    assert_int_equal(bs_format_from_path("callgrind.out."), BS_FORMAT_UNKNOWN);
    assert_int_equal(bs_format_from_path("/tmp/callgrind.out/x.txt"), BS_FORMAT_UNKNOWN);
    assert_int_equal(bs_format_from_name("callgrind"), BS_FORMAT_CALLGRIND);
    assert_string_equal(bs_format_extension(BS_FORMAT_CALLGRIND), ".callgrind");
    char dir[] = "/tmp/bs_cg_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof path, "%s/callgrind.out.42", dir);
    bs_profile prof;
    make_profile(&prof);
    OK(bs_write_file(path, BS_FORMAT_UNKNOWN, &prof, NULL));
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char head[32] = {0};
    assert_true(fread(head, 1, 18, f) == 18);
    fclose(f);
    assert_string_equal(head, "# callgrind format");
    OK(remove(path));
    OK(rmdir(dir));
    bs_profile_free(&prof);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_functions_and_calls),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_count_profile),
        cmocka_unit_test(test_dispatch),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
