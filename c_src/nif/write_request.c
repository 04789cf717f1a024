/* write_request.c — decoding of session_write's options (see write_request.h). */
#include "write_request.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../common/text_fit.h"
#include "../engine/collapse_recursion.h"
#include "../writers/output_size.h"
#include "profile_export.h"
#include "session.h"

#include "nif_atoms.h"

/* Copies an iolist/binary value of key into buf; 1 if absent, 1 if copied,
 * 0 on a bad value. */
static int get_text(ErlNifEnv *env, ERL_NIF_TERM map, const char *key, char *buf, size_t cap, int *present)
{
    ERL_NIF_TERM v;
    ErlNifBinary bin;
    *present = 0;
    if (!enif_get_map_value(env, map, enif_make_atom(env, key), &v))
        return 1;
    if (!enif_inspect_iolist_as_binary(env, v, &bin))
        return 0;
    if (memchr(bin.data, '\0', bin.size))
        return 0;
    /* Longer than the field (the options of a recording can be): cut at a
     * word, saying how much is missing. */
    bs_text_fit(buf, cap, (const char *)bin.data, bin.size);
    *present = 1;
    return 1;
}

static int get_flag(ErlNifEnv *env, ERL_NIF_TERM map, const char *key, int *out)
{
    ERL_NIF_TERM v;
    if (!enif_get_map_value(env, map, enif_make_atom(env, key), &v))
        return 1;
    const bs_atoms *a = &bs_priv_of(env)->atoms;
    if (v != a->true && v != a->false)
        return 0;
    *out = v == a->true;
    return 1;
}

static int get_number(ErlNifEnv *env, ERL_NIF_TERM map, const char *key, double *out)
{
    ERL_NIF_TERM v;
    long l;
    if (!enif_get_map_value(env, map, enif_make_atom(env, key), &v))
        return 1;
    if (enif_get_double(env, v, out))
        return 1;
    if (enif_get_long(env, v, &l)) {
        *out = (double)l;
        return 1;
    }
    return 0;
}

int bs_write_request_decode(ErlNifEnv *env, ERL_NIF_TERM map, bs_write_request *req)
{
    const bs_atoms *a = &bs_priv_of(env)->atoms;
    memset(req, 0, sizeof *req);
    if (!enif_is_map(env, map))
        return -1;
    ERL_NIF_TERM v;
    req->names = BS_NAMES_ERLANG;
    if (enif_get_map_value(env, map, a->names, &v) && v == a->elixir)
        req->names = BS_NAMES_ELIXIR;
    req->labels = enif_make_new_map(env);
    if (enif_get_map_value(env, map, a->labels, &v) && enif_is_map(env, v))
        req->labels = v;

    if (enif_get_map_value(env, map, a->capture, &v) && !enif_get_uint(env, v, &req->capture))
        return -1;
    int ok = 1, present;
    bs_render_opts *r = &req->render;
    ok &= get_text(env, map, "title", req->title, sizeof req->title, &present);
    r->title = present ? req->title : NULL;
    ok &= get_text(env, map, "subtitle", req->subtitle, sizeof req->subtitle, &present);
    r->subtitle = present ? req->subtitle : NULL;
    ok &= get_text(env, map, "count_name", req->count_name, sizeof req->count_name, &present);
    r->count_name = present ? req->count_name : NULL;
    ok &= get_text(env, map, "include", req->include_re, sizeof req->include_re, &present);
    r->include_re = present ? req->include_re : NULL;
    ok &= get_text(env, map, "exclude", req->exclude_re, sizeof req->exclude_re, &present);
    r->exclude_re = present ? req->exclude_re : NULL;
    ok &= get_flag(env, map, "inverted", &r->inverted);
    ok &= get_flag(env, map, "flamechart", &r->flamechart);
    ok &= get_flag(env, map, "drop_sleep", &r->drop_sleep);
    ok &= get_flag(env, map, "drop_wait", &r->drop_wait);
    ok &= get_flag(env, map, "order_by_cpu", &r->order_by_cpu);
    ok &= get_flag(env, map, "merge_processes", &r->merge_processes);
    if (enif_get_map_value(env, map, enif_make_atom(env, "collapse_recursion"), &v)) {
        if (v == a->true || v == enif_make_atom(env, "direct"))
            r->collapse_recursion = BS_COLLAPSE_DIRECT;
        else if (v == enif_make_atom(env, "all"))
            r->collapse_recursion = BS_COLLAPSE_ALL;
        else if (v != a->false)
            return -1;
    }
    ok &= get_flag(env, map, "report", &req->report);
    ok &= get_flag(env, map, "full", &r->full);
    if (enif_get_map_value(env, map, enif_make_atom(env, "timeline_cap"), &v)) {
        ErlNifUInt64 cap;
        if (v == enif_make_atom(env, "infinity"))
            r->timeline_cap = UINT64_MAX;
        else if (v == enif_make_atom(env, "auto"))
            r->timeline_cap = 0;
        else if (enif_get_uint64(env, v, &cap) && cap > 0 && cap < UINT64_MAX)
            r->timeline_cap = cap;
        else
            return -1;
    }
    double width = 0, min_width = 0;
    ok &= get_number(env, map, "width", &width);
    ok &= get_number(env, map, "min_width", &min_width);
    if (width < 0 || width > 100000 || min_width < 0 || min_width > 100000)
        return -1;
    r->width = (unsigned)width;
    r->min_width = min_width;
    if (enif_get_map_value(env, map, enif_make_atom(env, "palette"), &v)) {
        if (v == enif_make_atom(env, "beam"))
            r->palette = BS_PALETTE_BEAM;
        else if (v != enif_make_atom(env, "hot"))
            return -1;
    }

    bs_profile_meta *m = &req->meta;
    ok &= get_text(env, map, "node", m->node, sizeof m->node, &present);
    ok &= get_text(env, map, "otp_release", m->otp_release, sizeof m->otp_release, &present);
    ok &= get_text(env, map, "source", m->source, sizeof m->source, &present);
    ok &= get_text(env, map, "options_text", m->options, sizeof m->options, &present);
    ErlNifSInt64 start = 0;
    if (enif_get_map_value(env, map, enif_make_atom(env, "start_unix_us"), &v) && !enif_get_int64(env, v, &start))
        return -1;
    m->start_unix_us = start;
    return ok ? 0 : -1;
}

/* The stopped session's profile as req asks (names, labels, capture);
 * -1 (nothing left allocated) when memory runs out. */
static int export_as_asked(ErlNifEnv *env, struct bs_session *s, const bs_write_request *req, bs_profile *p)
{
    if (bs_export_profile(env, s, req->names, req->labels, req->capture, p) < 0) {
        bs_profile_free(p);
        return -1;
    }
    return 0;
}

/* The report of the file being written, turned into its warning. */
typedef struct warning_buf {
    char *text;
    size_t cap;
} warning_buf;

static void keep_warning(void *ctx, const bs_write_report *r)
{
    warning_buf *w = ctx;
    bs_write_warning_text(r, w->text, w->cap);
}

int bs_write_session_file(ErlNifEnv *env, struct bs_session *s, bs_format f, const char *path,
                          const bs_write_request *req, char *warning, size_t warning_cap)
{
    bs_render_opts render = req->render;
    warning_buf wb = {warning, warning_cap};
    /* The VM keeps its own environment (os:putenv/2): getenv would not see it. */
    char env_value[32];
    size_t env_len = sizeof env_value;
    if (enif_getenv("BEAMSPY_SIZE_WARN_BYTES", env_value, &env_len) == 0) {
        char *end;
        unsigned long long v = strtoull(env_value, &end, 10);
        if (end != env_value && !*end && env_value[0] != '-' && v > 0)
            render.size_warn_bytes = v;
    }
    env_len = sizeof env_value;
    if (enif_getenv("BEAMSPY_OPENABLE_BYTES", env_value, &env_len) == 0) {
        char *end;
        unsigned long long v = strtoull(env_value, &end, 10);
        if (end != env_value && !*end && env_value[0] != '-' && v > 0)
            render.openable_bytes = v;
    }
    if (warning && warning_cap) {
        warning[0] = '\0';
        render.on_report = keep_warning;
        render.report_ctx = &wb;
    }
    if (f == BS_FORMAT_UNKNOWN)
        return EINVAL;
    bs_profile p;
    if (export_as_asked(env, s, req, &p) < 0)
        return ENOMEM;
    p.meta = req->meta;
    errno = 0;
    int rc = bs_write_file(path, f, &p, &render);
    int e = errno ? errno : EIO;
    bs_profile_free(&p);
    return rc < 0 ? e : 0;
}

int bs_encode_profile(ErlNifEnv *env, bs_profile *p, bs_format f, const bs_write_request *req, ERL_NIF_TERM *out)
{
    p->meta = req->meta;
    char *data;
    size_t size;
    errno = 0;
    int rc = bs_write_memory(f, p, &req->render, 0, &data, &size);
    int e = errno ? errno : ENOMEM;
    bs_profile_free(p);
    if (rc < 0)
        return e;
    /* Copied into a binary the VM owns; the profile is freed first, so the
     * peak is the profile's or twice the output, whichever is larger. */
    ErlNifBinary bin;
    if (!enif_alloc_binary(size, &bin)) {
        free(data);
        return ENOMEM;
    }
    if (size)
        memcpy(bin.data, data, size);
    free(data);
    *out = enif_make_binary(env, &bin);
    return 0;
}

int bs_encode_session(ErlNifEnv *env, struct bs_session *s, bs_format f, const bs_write_request *req,
                      ERL_NIF_TERM *out)
{
    if (f == BS_FORMAT_UNKNOWN)
        return EINVAL;
    bs_profile p;
    if (export_as_asked(env, s, req, &p) < 0)
        return ENOMEM;
    return bs_encode_profile(env, &p, f, req, out);
}
