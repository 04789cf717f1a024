/* cpu_hot_nif.c — session_cpu_hot/2 (see cpu_hot_nif.h). */
#include "cpu_hot_nif.h"

#include <stdlib.h>
#include <string.h>

#include "cpu_session.h"
#include "nif_atoms.h"
#include "session.h"

#define HOT_MAX 100u

/* A name part as an atom (it exists: the code is loaded), or a binary when
 * it is no Latin-1 atom. */
static ERL_NIF_TERM part(ErlNifEnv *env, const char *s, size_t len)
{
    ERL_NIF_TERM t;
    if (enif_make_existing_atom_len(env, s, len, &t, ERL_NIF_LATIN1))
        return t;
    unsigned char *b = enif_make_new_binary(env, len, &t);
    if (b)
        memcpy(b, s, len);
    return t;
}

/* {M, F, A} of "module\1function\1arity". */
static ERL_NIF_TERM mfa(ErlNifEnv *env, const char *name)
{
    const char *sep1 = strchr(name, '\x01');
    const char *sep2 = sep1 ? strchr(sep1 + 1, '\x01') : NULL;
    if (!sep1 || !sep2)
        return part(env, name, strlen(name));
    return enif_make_tuple3(env, part(env, name, (size_t)(sep1 - name)),
                            part(env, sep1 + 1, (size_t)(sep2 - sep1 - 1)),
                            enif_make_uint(env, (unsigned)strtoul(sep2 + 1, NULL, 10)));
}

static int put(ErlNifEnv *env, ERL_NIF_TERM *map, const char *key, ERL_NIF_TERM value)
{
    return enif_make_map_put(env, *map, enif_make_atom(env, key), value, map);
}

ERL_NIF_TERM bs_nif_session_cpu_hot(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    const bs_priv *priv = bs_priv_of(env);
    bs_session *s = NULL;
    unsigned max;
    if (!enif_get_resource(env, argv[0], priv->session_type, (void **)&s) || !enif_get_uint(env, argv[1], &max))
        return enif_make_badarg(env);
    if (!s->cpu || s->cpu_times)
        return enif_make_tuple2(env, enif_make_atom(env, "error"), enif_make_atom(env, "no_cpu"));
    if (max > HOT_MAX)
        max = HOT_MAX;
    bs_hot_entry *top = malloc((max ? max : 1) * sizeof *top);
    if (!top)
        return enif_make_tuple2(env, enif_make_atom(env, "error"), enif_make_atom(env, "enomem"));
    bs_hot_counts w;
    size_t n = bs_cpu_hot_take(s->cpu, top, max, &w);
    ERL_NIF_TERM list = enif_make_list(env, 0);
    for (size_t i = n; i-- > 0;)
        list = enif_make_list_cell(
            env, enif_make_tuple2(env, mfa(env, top[i].name), enif_make_uint64(env, top[i].count)), list);
    free(top);
    ERL_NIF_TERM map = enif_make_new_map(env);
    int ok = put(env, &map, "hz", enif_make_uint(env, bs_cpu_hz(s->cpu))) &&
             put(env, &map, "samples", enif_make_uint64(env, w.samples)) &&
             put(env, &map, "scheduler", enif_make_uint64(env, w.scheduler)) &&
             put(env, &map, "spin", enif_make_uint64(env, w.spin)) &&
             put(env, &map, "no_erlang", enif_make_uint64(env, w.no_erlang)) &&
             put(env, &map, "others", enif_make_uint64(env, w.others)) && put(env, &map, "functions", list);
    if (!ok)
        return enif_make_badarg(env);
    return enif_make_tuple2(env, enif_make_atom(env, "ok"), map);
}
