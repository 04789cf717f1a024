/* test_function_arg.c — the --function text of record and seq
 * (cli/function_arg.h): every spelling, Erlang's quoted atoms included,
 * gives the same module and function; malformed texts say what is wrong;
 * and a node's refusal ({bad_function, ...} as beamspy_capture returns it,
 * encoded here with libei) is said in words. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <ei.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/function_arg.h"

#define OK(x) assert_int_equal((x), 0)

static void parses_as(const char *text, const char *module, const char *function, int arity)
{
    bs_function_arg f;
    char why[200] = "";
    if (bs_function_arg_parse(text, &f, why, sizeof why) != 0)
        fail_msg("%s: refused: %s", text, why);
    assert_string_equal(f.module, module);
    assert_string_equal(f.function, function);
    assert_int_equal(f.arity, arity);
}

static void refused(const char *text, const char *words)
{
    bs_function_arg f;
    char why[200] = "";
    assert_int_equal(bs_function_arg_parse(text, &f, why, sizeof why), -1);
    if (!strstr(why, words))
        fail_msg("%s: '%s' not in '%s'", text, words, why);
}

static void test_spellings(void **state)
{
    (void)state;
    parses_as("bs_dist_wl:handle/1", "bs_dist_wl", "handle", 1);
    parses_as("'Elixir.Jason':decode/2", "Elixir.Jason", "decode", 2);
    parses_as("Elixir.Jason:decode/2", "Elixir.Jason", "decode", 2);
    parses_as("Jason.decode/2", "Elixir.Jason", "decode", 2);
    parses_as("Elixir.Jason.decode/2", "Elixir.Jason", "decode", 2);
    parses_as("MyApp.Repo.Query.run!/0", "Elixir.MyApp.Repo.Query", "run!", 0);
    parses_as(":lists.reverse/1", "lists", "reverse", 1);
    parses_as("'my mod':'a fun'/3", "my mod", "a fun", 3);
}

static void test_quoted_atoms(void **state)
{
    (void)state;
    parses_as("'a\\'b':'c\\\\d'/255", "a'b", "c\\d", 255);
    parses_as("'a:b':f/1", "a:b", "f", 1); /* a colon inside the quotes is the module's */
    parses_as("m:'f/2'/1", "m", "f/2", 1);
}

static void test_malformed(void **state)
{
    (void)state;
    refused("nonsense", "no /arity");
    refused("m:f/256", "0 to 255");
    refused("m:f/-1", "no /arity");
    refused("m:f/1x", "0 to 255");
    refused("'Elixir.Jason:decode/2", "not closed");
    refused("'':f/1", "not closed, empty");
    refused("'m'f/1", "expected :fun/arity after the quoted module");
    refused("m:/1", "expected mod:fun/arity");
    refused(":f/1", "expected :module.fun/arity");
    refused("decode/2", "expected a module and a function");
    refused("Jason./2", "expected a module and a function");
    refused("m:'f/1", "expected mod:fun/arity");
    refused("'a\\nb':f/1", "not closed");
}

/* {bad_function, Inner} where Inner is built by the caller. */
static bs_eterm_tree *refusal(void (*inner)(ei_x_buff *))
{
    ei_x_buff x;
    OK(ei_x_new_with_version(&x));
    OK(ei_x_encode_tuple_header(&x, 2));
    OK(ei_x_encode_atom(&x, "bad_function"));
    inner(&x);
    bs_eterm_tree *t = NULL;
    int index = 0;
    char err[200];
    OK(bs_eterm_decode_versioned(x.buff, x.index, &index, &t, err, sizeof err));
    ei_x_free(&x);
    return t;
}

static void not_loaded_nofile(ei_x_buff *x)
{
    OK(ei_x_encode_tuple_header(x, 3));
    OK(ei_x_encode_atom(x, "not_loaded"));
    OK(ei_x_encode_atom(x, "Elixir.Jason"));
    OK(ei_x_encode_atom(x, "nofile"));
}

static void undef(ei_x_buff *x)
{
    OK(ei_x_encode_tuple_header(x, 2));
    OK(ei_x_encode_atom(x, "undef"));
    OK(ei_x_encode_tuple_header(x, 3));
    OK(ei_x_encode_atom(x, "Elixir.Jason"));
    OK(ei_x_encode_atom(x, "decode"));
    OK(ei_x_encode_long(x, 3));
}

static void other(ei_x_buff *x) { OK(ei_x_encode_atom(x, "weird")); }

static void test_refusal_in_words(void **state)
{
    (void)state;
    bs_function_arg f;
    char why[200], text[700];
    OK(bs_function_arg_parse("'Elixir.Jason':decode/3", &f, why, sizeof why));
    bs_eterm_tree *t = refusal(not_loaded_nofile);
    OK(bs_function_arg_refusal(text, sizeof text, &f, "app@host", bs_eterm_root(t)));
    assert_string_equal(text, "module Jason is not loaded on app@host and could not be loaded: nofile (no "
                              "Elixir.Jason.beam on the node's code path)");
    bs_eterm_free(t);
    t = refusal(undef);
    OK(bs_function_arg_refusal(text, sizeof text, &f, "app@host", bs_eterm_root(t)));
    assert_string_equal(text, "Jason.decode/3 does not exist on app@host: module Jason is loaded but has no "
                              "function decode/3");
    bs_eterm_free(t);
    OK(bs_function_arg_parse("my_mod:run/0", &f, why, sizeof why));
    t = refusal(undef);
    OK(bs_function_arg_refusal(text, sizeof text, &f, "n@h", bs_eterm_root(t)));
    assert_string_equal(text, "my_mod:run/0 does not exist on n@h: module my_mod is loaded but has no function run/0");
    bs_eterm_free(t);
    t = refusal(other);
    strcpy(text, "untouched");
    assert_int_equal(bs_function_arg_refusal(text, sizeof text, &f, "n@h", bs_eterm_root(t)), -1);
    assert_string_equal(text, "untouched");
    bs_eterm_free(t);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spellings),
        cmocka_unit_test(test_quoted_atoms),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_refusal_in_words),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
