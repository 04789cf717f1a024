/* test_term_frame.c — raw frames from a node spelled by the engine
 * (cli/term_frame.h, cli/dump_names.h): sample stacks (process labels
 * included), dump frames and reasons and top's functions are {M, F, A}
 * terms, labels and texts, spelled once,
 * in Erlang or Elixir, exactly as traced frames are (frame_name.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <ei.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/dump_names.h"
#include "cli/term_frame.h"

/* Decodes what build() encoded after the version byte. */
static bs_eterm_tree *decode(ei_x_buff *x)
{
    bs_eterm_tree *t = NULL;
    int index = 0;
    char err[200];
    assert_int_equal(bs_eterm_decode_versioned(x->buff, x->index, &index, &t, err, sizeof err), 0);
    ei_x_free(x);
    return t;
}

static void new_buff(ei_x_buff *x)
{
    assert_int_equal(ei_x_new_with_version(x), 0);
}

static void put_mfa(ei_x_buff *x, const char *m, const char *f, long a)
{
    assert_int_equal(ei_x_encode_tuple_header(x, 3) | ei_x_encode_atom(x, m) | ei_x_encode_atom(x, f) |
                         ei_x_encode_long(x, a),
                     0);
}

static void put_text(ei_x_buff *x, const char *s)
{
    assert_int_equal(ei_x_encode_binary(x, s, (long)strlen(s)), 0);
}

static void check_frame(void (*put)(ei_x_buff *), bs_name_style style, const char *want)
{
    ei_x_buff x;
    new_buff(&x);
    put(&x);
    bs_eterm_tree *t = decode(&x);
    char buf[256];
    assert_string_equal(bs_term_frame(bs_eterm_root(t), style, buf, sizeof buf), want);
    bs_eterm_free(t);
}

static void reserved(ei_x_buff *x) { put_mfa(x, "m", "receive", 0); }
static void elixir_mod(ei_x_buff *x) { put_mfa(x, "Elixir.Foo.Bar", "baz", 2); }
static void fun_name(ei_x_buff *x) { put_mfa(x, "m", "-f/0-fun-0-", 1); }
static void label(ei_x_buff *x) { put_text(x, "worker 12"); }
static void unsafe_text(ei_x_buff *x) { put_text(x, "a;b\nc"); }
static void undefined_atom(ei_x_buff *x) { assert_int_equal(ei_x_encode_atom(x, "undefined"), 0); }
static void big_arity(ei_x_buff *x) { put_mfa(x, "m", "f", 300); }
/* Process labels as beamspy_session:labels/1 sends them: {PidText, Name}. */
static void put_label_head(ei_x_buff *x)
{
    assert_int_equal(ei_x_encode_tuple_header(x, 2), 0);
    put_text(x, "<0.9.0>");
}
static void label_none(ei_x_buff *x)
{
    put_label_head(x);
    assert_int_equal(ei_x_encode_empty_list(x), 0);
}
static void label_registered(ei_x_buff *x)
{
    put_label_head(x);
    assert_int_equal(ei_x_encode_atom(x, "Elixir.MyApp.Server"), 0);
}
static void label_call(ei_x_buff *x)
{
    put_label_head(x);
    put_mfa(x, "my_worker", "init", 1);
}

static void test_frames_spelled_as_the_engine_does(void **state)
{
    (void)state;
    check_frame(reserved, BS_NAMES_ERLANG, "m:'receive'/0");
    check_frame(reserved, BS_NAMES_ELIXIR, ":m.receive/0");
    check_frame(elixir_mod, BS_NAMES_ERLANG, "'Elixir.Foo.Bar':baz/2");
    check_frame(elixir_mod, BS_NAMES_ELIXIR, "Foo.Bar.baz/2");
    check_frame(fun_name, BS_NAMES_ERLANG, "m:'-f/0-fun-0-'/1");
    /* Texts are only made safe; other terms are printed. */
    check_frame(label, BS_NAMES_ELIXIR, "worker_12");
    check_frame(unsafe_text, BS_NAMES_ERLANG, "a:b?c");
    check_frame(undefined_atom, BS_NAMES_ELIXIR, "undefined");
    check_frame(big_arity, BS_NAMES_ERLANG, "{m,f,300}");
    /* Process labels: the pid, then the name or the initial call, spelled
     * in the same style as the frames. */
    check_frame(label_none, BS_NAMES_ELIXIR, "<0.9.0>");
    check_frame(label_registered, BS_NAMES_ERLANG, "<0.9.0> Elixir.MyApp.Server");
    check_frame(label_registered, BS_NAMES_ELIXIR, "<0.9.0> MyApp.Server");
    check_frame(label_call, BS_NAMES_ERLANG, "<0.9.0> my_worker:init/1");
    check_frame(label_call, BS_NAMES_ELIXIR, "<0.9.0> :my_worker.init/1");
}

/* [{<<"<0.1.0> w">>, [{m, 'receive', 0}, <<"SLEEP">>], 3}, {<<"<0.2.0>">>, [], 1}] */
static void put_stacks(ei_x_buff *x)
{
    assert_int_equal(ei_x_encode_list_header(x, 2), 0);
    assert_int_equal(ei_x_encode_tuple_header(x, 3), 0);
    put_text(x, "<0.1.0> w");
    assert_int_equal(ei_x_encode_list_header(x, 2), 0);
    put_mfa(x, "m", "receive", 0);
    put_text(x, "SLEEP");
    assert_int_equal(ei_x_encode_empty_list(x) | ei_x_encode_long(x, 3), 0);
    assert_int_equal(ei_x_encode_tuple_header(x, 3), 0);
    put_text(x, "<0.2.0>");
    assert_int_equal(ei_x_encode_empty_list(x) | ei_x_encode_long(x, 1), 0);
    assert_int_equal(ei_x_encode_empty_list(x), 0);
}

static void check_stacks(void (*put)(ei_x_buff *), bs_name_style style, int want_rc, const char *want)
{
    ei_x_buff x;
    new_buff(&x);
    put(&x);
    bs_eterm_tree *t = decode(&x);
    char *text = NULL, err[200] = "";
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    assert_int_equal(bs_term_stacks_folded(out, bs_eterm_root(t), style, err, sizeof err), want_rc);
    assert_int_equal(fclose(out), 0);
    if (want_rc == 0)
        assert_string_equal(text, want);
    else
        assert_string_equal(err, want);
    free(text);
    bs_eterm_free(t);
}

static void bad_count(ei_x_buff *x)
{
    assert_int_equal(ei_x_encode_list_header(x, 1) | ei_x_encode_tuple_header(x, 3), 0);
    put_text(x, "<0.1.0>");
    assert_int_equal(ei_x_encode_empty_list(x) | ei_x_encode_atom(x, "many") | ei_x_encode_empty_list(x), 0);
}

static void not_a_list(ei_x_buff *x) { put_text(x, "stacks"); }

static void test_sampled_stacks_to_folded(void **state)
{
    (void)state;
    check_stacks(put_stacks, BS_NAMES_ERLANG, 0, "<0.1.0> w;m:'receive'/0;SLEEP 3\n<0.2.0> 1\n");
    check_stacks(put_stacks, BS_NAMES_ELIXIR, 0, "<0.1.0> w;:m.receive/0;SLEEP 3\n<0.2.0> 1\n");
    check_stacks(bad_count, BS_NAMES_ERLANG, -1, "stack 1 is not {Root, [Frame], Count}");
    check_stacks(not_a_list, BS_NAMES_ERLANG, -1, "the stacks are a binary, not a list");
}

/* {{gen, do_call, 4}, <<"gen.erl:12">>} and
 * [<<"waiting for a reply in ">>, {gen, do_call, 4}, <<" (called from ">>, {'Elixir.A', b, 1}, <<")">>] */
static void put_entry(ei_x_buff *x)
{
    assert_int_equal(ei_x_encode_tuple_header(x, 2), 0);
    put_mfa(x, "gen", "do_call", 4);
    put_text(x, "gen.erl:12");
}

static void put_reason(ei_x_buff *x)
{
    assert_int_equal(ei_x_encode_list_header(x, 5), 0);
    put_text(x, "waiting for a reply in ");
    put_mfa(x, "gen", "do_call", 4);
    put_text(x, " (called from ");
    put_mfa(x, "Elixir.A", "b", 1);
    put_text(x, ")");
    assert_int_equal(ei_x_encode_empty_list(x), 0);
}

static void test_dump_frames_and_reasons(void **state)
{
    (void)state;
    char buf[256];
    ei_x_buff x;
    new_buff(&x);
    put_entry(&x);
    bs_eterm_tree *t = decode(&x);
    assert_string_equal(bs_dump_frame(bs_eterm_root(t), 0, buf, sizeof buf), "gen:do_call/4 (gen.erl:12)");
    assert_string_equal(bs_dump_frame(bs_eterm_root(t), 1, buf, sizeof buf), ":gen.do_call/4 (gen.erl:12)");
    bs_eterm_free(t);
    new_buff(&x);
    put_reason(&x);
    t = decode(&x);
    assert_string_equal(bs_dump_reason(bs_eterm_root(t), 0, buf, sizeof buf),
                        "waiting for a reply in gen:do_call/4 (called from 'Elixir.A':b/1)");
    assert_string_equal(bs_dump_reason(bs_eterm_root(t), 1, buf, sizeof buf),
                        "waiting for a reply in :gen.do_call/4 (called from A.b/1)");
    /* Cut at the buffer, never past it. */
    assert_int_equal(strlen(bs_dump_reason(bs_eterm_root(t), 1, buf, 20)), 19);
    bs_eterm_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frames_spelled_as_the_engine_does),
        cmocka_unit_test(test_sampled_stacks_to_folded),
        cmocka_unit_test(test_dump_frames_and_reasons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
