/* format_nif.c — beamspy_tracer:formats/0 (format_nif.h). */
#include "format_nif.h"

#include <string.h>

#include "../writers/format_registry.h"

static ERL_NIF_TERM row(ErlNifEnv *env, const char *name, const char *const exts[BS_FORMAT_MAX_EXTENSIONS],
                        int timeline)
{
    ERL_NIF_TERM list = enif_make_list(env, 0);
    size_t n = 0;
    while (n < BS_FORMAT_MAX_EXTENSIONS && exts[n])
        n++;
    while (n-- > 0)
        list = enif_make_list_cell(env, enif_make_string(env, exts[n], ERL_NIF_LATIN1), list);
    return enif_make_tuple3(env, enif_make_atom(env, name), list,
                            enif_make_atom(env, timeline ? "true" : "false"));
}

ERL_NIF_TERM bs_nif_formats(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc, (void)argv;
    size_t n, n_seq;
    const bs_format_desc *f = bs_format_table(&n);
    const bs_seq_format_desc *s = bs_seq_format_table(&n_seq);
    ERL_NIF_TERM profile = enif_make_list(env, 0), sequence = enif_make_list(env, 0);
    for (size_t i = n; i-- > 0;)
        profile = enif_make_list_cell(env, row(env, f[i].name, f[i].extensions, f[i].timeline), profile);
    for (size_t i = n_seq; i-- > 0;)
        sequence = enif_make_list_cell(env, row(env, s[i].name, s[i].extensions, 0), sequence);
    ERL_NIF_TERM map = enif_make_new_map(env);
    enif_make_map_put(env, map, enif_make_atom(env, "profile"), profile, &map);
    enif_make_map_put(env, map, enif_make_atom(env, "sequence"), sequence, &map);
    return map;
}
