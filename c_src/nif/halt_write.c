/* halt_write.c — writing the profile at the VM's halt (see halt_write.h). */
#include "halt_write.h"

#include <stdatomic.h>
#include <string.h>

#include "../writers/writers.h"

#include "nif_atoms.h"
#include "session_flush.h"
#include "write_request.h"

typedef struct bs_halt_plan {
    ErlNifMutex *lock;
    ErlNifEnv *env;       /* owns outputs and opts */
    ERL_NIF_TERM outputs; /* [{Format, Path}] */
    ERL_NIF_TERM opts;
    atomic_int written;   /* set under lock; read without it by bs_halt_pending */
} bs_halt_plan;

int bs_halt_plan_set(bs_session *s, ERL_NIF_TERM outputs, ERL_NIF_TERM write_opts)
{
    /* Only the owner sets the plan, so creating it needs no lock. */
    if (!s->halt_plan) {
        bs_halt_plan *p = enif_alloc(sizeof *p);
        if (!p)
            return -1;
        p->lock = enif_mutex_create("beamspy_halt_plan");
        if (!p->lock) {
            enif_free(p);
            return -1;
        }
        p->env = NULL;
        atomic_init(&p->written, 0);
        s->halt_plan = p;
    }
    ErlNifEnv *env = enif_alloc_env();
    if (!env)
        return -1;
    ERL_NIF_TERM out = enif_make_copy(env, outputs), opts = enif_make_copy(env, write_opts);
    bs_halt_plan *p = s->halt_plan;
    enif_mutex_lock(p->lock);
    ErlNifEnv *old = p->env;
    p->env = env;
    p->outputs = out;
    p->opts = opts;
    if (enif_is_empty_list(env, out)) /* the owner wrote the files itself */
        atomic_store(&p->written, 1);
    enif_mutex_unlock(p->lock);
    if (old)
        enif_free_env(old);
    return 0;
}

void bs_halt_write(ErlNifEnv *env, bs_session *s)
{
    bs_halt_plan *p = s->halt_plan;
    if (!p)
        return;
    enif_mutex_lock(p->lock);
    if (!atomic_load(&p->written) && p->env) {
        atomic_store(&p->written, 1);
        bs_session_stop(s, BS_STOP_REQUESTED, 1);
        bs_session_flush(s); /* the time since each process's last event */
        /* The plan's terms are read with the caller's env, which carries
         * the library's atoms; reading needs no particular env. */
        bs_write_request req;
        ERL_NIF_TERM list = p->outputs, head;
        if (bs_write_request_decode(env, p->opts, &req) == 0)
            while (enif_get_list_cell(env, list, &head, &list)) {
                int n;
                const ERL_NIF_TERM *e;
                char format[32], path[4096];
                ErlNifBinary bin;
                if (enif_get_tuple(env, head, &n, &e) && n == 2 &&
                    enif_get_atom(env, e[0], format, sizeof format, ERL_NIF_LATIN1) > 0 &&
                    enif_inspect_binary(env, e[1], &bin) && bin.size > 0 && bin.size < sizeof path &&
                    !memchr(bin.data, 0, bin.size)) {
                    memcpy(path, bin.data, bin.size);
                    path[bin.size] = '\0';
                    (void)bs_write_session_file(env, s, bs_format_from_name(format), path, &req, NULL, 0);
                }
            }
    }
    enif_mutex_unlock(p->lock);
}

int bs_halt_pending(bs_session *s)
{
    bs_halt_plan *p = s->halt_plan;
    return p && !atomic_load(&p->written);
}

void bs_halt_lock(bs_session *s)
{
    bs_halt_plan *p = s->halt_plan;
    if (p)
        enif_mutex_lock(p->lock);
}

void bs_halt_unlock(bs_session *s)
{
    bs_halt_plan *p = s->halt_plan;
    if (p)
        enif_mutex_unlock(p->lock);
}

void bs_halt_plan_free(bs_session *s)
{
    bs_halt_plan *p = s->halt_plan;
    if (!p)
        return;
    if (p->env)
        enif_free_env(p->env);
    enif_mutex_destroy(p->lock);
    enif_free(p);
    s->halt_plan = NULL;
}
