/* bench_null_tracer.c — the null erl_tracer NIF of the benchmark suite.
 *
 * enabled/3 always answers `trace` and trace/5 returns at once, so a run
 * traced by this module pays exactly what ERTS charges for dispatching every
 * event to an erl_tracer NIF (tracer lookup, NIF environment setup, the
 * match spec and the {caller} lookup) and nothing else: the floor any
 * erl_tracer design, beamspy included, pays on this VM. Like beamspy, the
 * tracer state is a NIF resource (made by state/0), so ERTS handles the same
 * kind of term on every event. */
#include <erl_nif.h>

static ERL_NIF_TERM atom_trace;
static ERL_NIF_TERM atom_ok;
static ErlNifResourceType *state_type;

static int load(ErlNifEnv *env, void **priv, ERL_NIF_TERM info)
{
    (void)priv;
    (void)info;
    atom_trace = enif_make_atom(env, "trace");
    atom_ok = enif_make_atom(env, "ok");
    state_type = enif_open_resource_type(env, NULL, "bench_null_state", NULL,
                                         ERL_NIF_RT_CREATE | ERL_NIF_RT_TAKEOVER, NULL);
    return state_type ? 0 : 1;
}

static int upgrade(ErlNifEnv *env, void **priv, void **old_priv, ERL_NIF_TERM info)
{
    (void)old_priv;
    return load(env, priv, info);
}

static ERL_NIF_TERM state(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    (void)argv;
    void *obj = enif_alloc_resource(state_type, sizeof(long));
    if (!obj)
        return enif_make_badarg(env);
    ERL_NIF_TERM t = enif_make_resource(env, obj);
    enif_release_resource(obj);
    return t;
}

static ERL_NIF_TERM enabled(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)env;
    (void)argc;
    (void)argv;
    return atom_trace;
}

static ERL_NIF_TERM trace(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)env;
    (void)argc;
    (void)argv;
    return atom_ok;
}

static ErlNifFunc funcs[] = {
    {"state", 0, state, 0},
    {"enabled", 3, enabled, 0},
    {"trace", 5, trace, 0},
};

ERL_NIF_INIT(bench_null_tracer, funcs, load, NULL, upgrade, NULL)
