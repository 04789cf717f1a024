/* test_format_registry.c — the table of output formats (format_registry.c):
 * every row well formed, names and extensions found back (any case, the
 * longest extension winning, valgrind's callgrind.out.* names), the lists
 * the help texts and errors print, and bs_write_memory writing each format
 * with its row's writer. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "writers/output_size.h"
#include "writers/seq_writers.h"
#include "writers/size_limit.h"
#include "writers/writers.h"
#include "test_util.h"

#define OK(x) assert_int_equal((x), 0)

static void upper(char *s)
{
    for (; *s; s++)
        if (*s >= 'a' && *s <= 'z')
            *s = (char)(*s - 'a' + 'A');
}

static void test_profile_rows(void **state)
{
    (void)state;
    size_t n;
    const bs_format_desc *t = bs_format_table(&n);
    assert_true(n >= 9);
    for (size_t i = 0; i < n; i++) {
        assert_non_null(t[i].name);
        assert_non_null(t[i].write);
        assert_non_null(t[i].extensions[0]);
        assert_true(strlen(t[i].help) <= 46);
        assert_ptr_equal(bs_format_desc_of(t[i].format), &t[i]);
        assert_int_equal(bs_format_from_name(t[i].name), t[i].format);
        assert_string_equal(bs_format_name(t[i].format), t[i].name);
        assert_string_equal(bs_format_extension(t[i].format), t[i].extensions[0]);
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(t[i].name, t[j].name);
        for (size_t k = 0; k < BS_FORMAT_MAX_EXTENSIONS && t[i].extensions[k]; k++) {
            char path[128];
            assert_int_equal(t[i].extensions[k][0], '.');
            snprintf(path, sizeof path, "/tmp/dir.svg/out%s", t[i].extensions[k]);
            assert_int_equal(bs_format_from_path(path), t[i].format);
            upper(path);
            assert_int_equal(bs_format_from_path(path), t[i].format);
        }
    }
    assert_null(bs_format_desc_of(BS_FORMAT_UNKNOWN));
    assert_int_equal(bs_format_from_name("png"), BS_FORMAT_UNKNOWN);
    assert_string_equal(bs_format_name(BS_FORMAT_UNKNOWN), "unknown");
    assert_string_equal(bs_format_extension(BS_FORMAT_UNKNOWN), "");
    assert_int_equal(bs_format_from_path("x.png"), BS_FORMAT_UNKNOWN);
    assert_int_equal(bs_format_from_path("x.json"), BS_FORMAT_UNKNOWN);
    assert_int_equal(bs_format_from_path("/a/callgrind.out.77"), BS_FORMAT_CALLGRIND);
    assert_int_equal(bs_format_from_path("/a/callgrind.out."), BS_FORMAT_UNKNOWN);
    /* Time order and caps, as the writers and the NIF read them. */
    assert_true(bs_format_desc_of(BS_FORMAT_SPEEDSCOPE)->timeline);
    assert_true(bs_format_desc_of(BS_FORMAT_BSPY)->timeline);
    assert_false(bs_format_desc_of(BS_FORMAT_SVG)->timeline);
    assert_int_equal(bs_timeline_cap_for(BS_FORMAT_CHROME, NULL), BS_TIMELINE_CAP_CHROME);
    assert_int_equal(bs_timeline_cap_for(BS_FORMAT_FOLDED, NULL), 0);
    assert_true(bs_size_limit_applies(BS_FORMAT_CALLGRIND));
    assert_false(bs_size_limit_applies(BS_FORMAT_HTML));
}

static void test_seq_rows(void **state)
{
    (void)state;
    size_t n;
    const bs_seq_format_desc *t = bs_seq_format_table(&n);
    assert_int_equal(n, 4);
    for (size_t i = 0; i < n; i++) {
        assert_non_null(t[i].write);
        assert_ptr_equal(bs_seq_format_desc_of(t[i].format), &t[i]);
        assert_int_equal(bs_seq_format_from_name(t[i].name), t[i].format);
        for (size_t k = 0; k < BS_FORMAT_MAX_EXTENSIONS && t[i].extensions[k]; k++) {
            char path[64];
            snprintf(path, sizeof path, "flow%s", t[i].extensions[k]);
            assert_int_equal(bs_seq_format_from_path(path), t[i].format);
        }
    }
    /* The longest extension wins: .trace.json and .seq.json over .json. */
    assert_int_equal(bs_seq_format_from_path("x.trace.json"), BS_SEQ_FORMAT_CHROME);
    assert_int_equal(bs_seq_format_from_path("x.seq.json"), BS_SEQ_FORMAT_JSON);
    assert_int_equal(bs_seq_format_from_path("x.folded"), BS_SEQ_FORMAT_UNKNOWN);
    char buf[128];
    size_t len = bs_seq_format_extension_list(buf, sizeof buf, ", ");
    assert_string_equal(buf, ".mmd, .seq.svg, .svg, .trace.json, .seq.json, .json");
    assert_int_equal(len, strlen(buf));
}

static void test_lists(void **state)
{
    (void)state;
    size_t n;
    const bs_format_desc *t = bs_format_table(&n);
    char buf[512], want[512] = "";
    for (size_t i = 0; i < n; i++) {
        if (i)
            strcat(want, ", ");
        strcat(want, t[i].name);
    }
    assert_int_equal(bs_format_names(buf, sizeof buf, ", "), strlen(want));
    assert_string_equal(buf, want);
    /* Cut to the buffer, still terminated, the whole length returned. */
    char small[8];
    assert_int_equal(bs_format_names(small, sizeof small, ", "), strlen(want));
    assert_int_equal(strlen(small), 7);
    assert_memory_equal(small, want, 7);
    /* The help list: one line per row, under 80 columns, with the name, every
     * extension and the help. */
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    assert_non_null(f);
    bs_format_list_usage(f, "  ");
    assert_int_equal(fclose(f), 0);
    size_t lines = 0;
    for (char *line = text, *end; *line; line = end + 1, lines++) {
        end = strchr(line, '\n');
        assert_non_null(end);
        assert_true(end - line < 80);
        *end = '\0';
        assert_true(lines < n);
        assert_non_null(strstr(line, t[lines].name));
        assert_non_null(strstr(line, t[lines].help));
        for (size_t k = 0; k < BS_FORMAT_MAX_EXTENSIONS && t[lines].extensions[k]; k++)
            assert_non_null(strstr(line, t[lines].extensions[k]));
    }
    assert_int_equal(lines, n);
    free(text);
}

/* A process: run calls sort, which returns. */
static void make_profile(bs_profile *prof)
{
    static const bs_key RUN = KEY(M_M, F_RUN, 0), SORT = KEY(M_LISTS, F_SORT, 1);
    OK(bs_profile_init(prof));
    bs_proc p;
    OK(bs_proc_init(&p, NULL, 0, 1, 1));
    OK(bs_proc_call(&p, &RUN, BS_CALLER_ROOT, NULL, 100));
    OK(bs_proc_call(&p, &SORT, BS_CALLER_FRAME, &RUN, 2000));
    OK(bs_proc_return_to(&p, &RUN, 9000));
    OK(bs_proc_return_to(&p, NULL, 10000));
    bs_proc_flush(&p, 10000);
    OK(bs_profile_add_proc(prof, &p, "<0.80.0>", tu_namer, NULL));
    bs_proc_free(&p);
    bs_profile_compute_totals(prof);
}

/* bs_write_memory writes every format with its row's writer: the same
 * bytes as the writer called directly. */
static void test_dispatch(void **state)
{
    (void)state;
    bs_profile prof;
    make_profile(&prof);
    size_t n;
    const bs_format_desc *t = bs_format_table(&n);
    bs_render_opts o = {0};
    for (size_t i = 0; i < n; i++) {
        char *via = NULL, *direct = NULL;
        size_t via_size = 0, direct_size = 0;
        OK(bs_write_memory(t[i].format, &prof, &o, 0, &via, &via_size));
        FILE *f = open_memstream(&direct, &direct_size);
        assert_non_null(f);
        OK(t[i].write(f, &prof, &o));
        assert_int_equal(fclose(f), 0);
        assert_true(via_size > 0);
        assert_int_equal(via_size, direct_size);
        assert_memory_equal(via, direct, via_size);
        free(via);
        free(direct);
    }
    char *data = NULL;
    size_t size = 0;
    assert_int_equal(bs_write_memory(BS_FORMAT_UNKNOWN, &prof, &o, 0, &data, &size), -1);
    bs_profile_free(&prof);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profile_rows),
        cmocka_unit_test(test_seq_rows),
        cmocka_unit_test(test_lists),
        cmocka_unit_test(test_dispatch),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
