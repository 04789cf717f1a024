/* seq_nif.c — seq_write(Flow, Outputs, Opts): decodes the events of a
 * sequence capture, merges them (engine/seq_flow.c) and writes each output
 * with the format writers (writers/seq_*.c), atomically.
 *
 *   Flow    = #{events => [{send | recv, Prev, Cur, Ts, FromNode, FromPid,
 *                            ToNode, ToPid, Text, Label}],
 *               names => [{Node, Pid, Who}], dropped => N}
 *             (binaries for texts, integers for the rest; Who is a
 *             registered name or an initial call {M, F, Arity}, spelled
 *             here as names asks)
 *   Outputs = [{mermaid | svg | chrome | json, Path}]
 *   Opts    = #{noise => boolean(), include => iodata(), exclude => iodata(),
 *               label_chars => N, max_participants => N, max_events => N,
 *               title => iodata(), names => erlang | elixir}
 * Returns {ok, [{ok, Path, Written, LeftOut} | {error, Path, Errno}], Summary}
 * or {error, bad_pattern}; badarg for any term of another shape. Runs on a
 * dirty I/O scheduler; memory is bounded by max_events (BS_SEQ_MAX_EVENTS_*
 * in seq_flow.h): further events are counted as dropped, not kept. */
#include "seq_nif.h"

#include <errno.h>
#include <string.h>

#include "../engine/seq_flow.h"
#include "../writers/seq_writers.h"
#include "nif_atoms.h"
#include "defaults.h"
#include "name_nif.h"
#include "write_request.h"

/* Copies a binary (or iolist) into buf, cut at cap - 1 bytes; 0 if t is
 * not one. NULs inside become spaces: the writers take C strings. */
static int get_text(ErlNifEnv *env, ERL_NIF_TERM t, char *buf, size_t cap)
{
    ErlNifBinary bin;
    if (!enif_inspect_iolist_as_binary(env, t, &bin))
        return 0;
    size_t n = bin.size < cap - 1 ? bin.size : cap - 1;
    memcpy(buf, bin.data, n);
    buf[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if (!buf[i])
            buf[i] = ' ';
    return 1;
}

static int get_u64(ErlNifEnv *env, ERL_NIF_TERM t, uint64_t *out)
{
    ErlNifUInt64 v;
    if (!enif_get_uint64(env, t, &v))
        return 0;
    *out = v;
    return 1;
}

typedef struct event_bufs {
    char label[BS_SEQ_NAME_MAX + 1], from_node[BS_SEQ_NAME_MAX + 1], from_pid[BS_SEQ_NAME_MAX + 1],
        to_node[BS_SEQ_NAME_MAX + 1], to_pid[BS_SEQ_NAME_MAX + 1], text[BS_SEQ_TEXT_MAX + 1];
} event_bufs;

/* Adds one event tuple; 0 ok (or dropped at the cap), -1 bad shape, -2 memory. */
static int add_event(ErlNifEnv *env, bs_seq_flow *f, ERL_NIF_TERM t, event_bufs *b)
{
    int arity;
    const ERL_NIF_TERM *el;
    char kind[8];
    ErlNifSInt64 ts;
    bs_seq_event e;
    memset(&e, 0, sizeof e);
    if (!enif_get_tuple(env, t, &arity, &el) || arity != 10 ||
        !enif_get_atom(env, el[0], kind, sizeof kind, ERL_NIF_LATIN1) || !get_u64(env, el[1], &e.prev) ||
        !get_u64(env, el[2], &e.cur) || !enif_get_int64(env, el[3], &ts) ||
        !get_text(env, el[4], b->from_node, sizeof b->from_node) ||
        !get_text(env, el[5], b->from_pid, sizeof b->from_pid) ||
        !get_text(env, el[6], b->to_node, sizeof b->to_node) || !get_text(env, el[7], b->to_pid, sizeof b->to_pid) ||
        !get_text(env, el[8], b->text, sizeof b->text) || !get_text(env, el[9], b->label, sizeof b->label))
        return -1;
    if (!strcmp(kind, "send"))
        e.kind = BS_SEQ_SEND;
    else if (!strcmp(kind, "recv"))
        e.kind = BS_SEQ_RECV;
    else
        return -1;
    e.ts = ts;
    e.label = b->label, e.from_node = b->from_node, e.from_pid = b->from_pid;
    e.to_node = b->to_node, e.to_pid = b->to_pid, e.text = b->text;
    return bs_seq_flow_add(f, &e) < 0 ? -2 : 0;
}

/* {Node, Pid, Who}: Who, the collector's raw registered name or initial
 * call, spelled here in style (name_nif.h), as every frame is. */
static int add_name(ErlNifEnv *env, bs_seq_flow *f, ERL_NIF_TERM t, bs_name_style style)
{
    int arity;
    const ERL_NIF_TERM *el;
    char node[BS_SEQ_NAME_MAX + 1], pid[BS_SEQ_NAME_MAX + 1], name[BS_SEQ_NAME_MAX + 1];
    if (!enif_get_tuple(env, t, &arity, &el) || arity != 3 || !get_text(env, el[0], node, sizeof node) ||
        !get_text(env, el[1], pid, sizeof pid) || bs_nif_process_name(env, el[2], style, name, sizeof name) == 0)
        return -1;
    return bs_seq_flow_name(f, node, pid, name) < 0 ? -2 : 0;
}

static int opt_uint(ErlNifEnv *env, ERL_NIF_TERM map, const char *key, unsigned long max, size_t *out)
{
    ERL_NIF_TERM v;
    unsigned long n;
    if (!enif_get_map_value(env, map, enif_make_atom(env, key), &v))
        return 1;
    if (!enif_get_ulong(env, v, &n) || n == 0 || n > max)
        return 0;
    *out = n;
    return 1;
}

static int opt_text(ErlNifEnv *env, ERL_NIF_TERM map, const char *key, char *buf, size_t cap, const char **out)
{
    ERL_NIF_TERM v;
    if (!enif_get_map_value(env, map, enif_make_atom(env, key), &v))
        return 1;
    if (!get_text(env, v, buf, cap))
        return 0;
    *out = buf;
    return 1;
}

typedef struct seq_opts_bufs {
    /* the Erlang side refuses longer texts (beamspy_opts:max_of/1) */
    char include[BS_MAX_PATTERN_BYTES + 1], exclude[BS_MAX_PATTERN_BYTES + 1], title[BS_MAX_TITLE_BYTES + 1];
} seq_opts_bufs;

static int decode_opts(ErlNifEnv *env, ERL_NIF_TERM map, bs_seq_opts *o, size_t *max_events, bs_name_style *style,
                       seq_opts_bufs *b)
{
    const bs_atoms *a = &bs_priv_of(env)->atoms;
    ERL_NIF_TERM v;
    memset(o, 0, sizeof *o);
    *style = BS_NAMES_ERLANG;
    if (!enif_is_map(env, map))
        return 0;
    if (enif_get_map_value(env, map, enif_make_atom(env, "noise"), &v))
        o->keep_noise = v == a->true;
    if (enif_get_map_value(env, map, enif_make_atom(env, "names"), &v)) {
        if (v == enif_make_atom(env, "elixir"))
            *style = BS_NAMES_ELIXIR;
        else if (v != enif_make_atom(env, "erlang"))
            return 0;
    }
    return opt_uint(env, map, "label_chars", BS_SEQ_LABEL_CHARS_LIMIT, &o->label_chars) &&
           opt_uint(env, map, "max_participants", BS_SEQ_MAX_PARTICIPANTS_LIMIT, &o->max_participants) &&
           opt_uint(env, map, "max_events", BS_SEQ_MAX_EVENTS_LIMIT, max_events) &&
           opt_text(env, map, "include", b->include, sizeof b->include, &o->include_re) &&
           opt_text(env, map, "exclude", b->exclude, sizeof b->exclude, &o->exclude_re) &&
           opt_text(env, map, "title", b->title, sizeof b->title, &o->title);
}

static ERL_NIF_TERM make_uint(ErlNifEnv *env, uint64_t v)
{
    return enif_make_uint64(env, (ErlNifUInt64)v);
}

static ERL_NIF_TERM write_outputs(ErlNifEnv *env, ERL_NIF_TERM outputs, const bs_seq_diagram *d,
                                  const bs_seq_opts *o)
{
    const bs_atoms *a = &bs_priv_of(env)->atoms;
    ERL_NIF_TERM results = enif_make_list(env, 0), head, tail = outputs;
    while (enif_get_list_cell(env, tail, &head, &tail)) {
        int arity;
        const ERL_NIF_TERM *el;
        char fmt[16], path[4096];
        if (!enif_get_tuple(env, head, &arity, &el) || arity != 2 ||
            !enif_get_atom(env, el[0], fmt, sizeof fmt, ERL_NIF_LATIN1) || !get_text(env, el[1], path, sizeof path))
            return enif_make_badarg(env);
        bs_seq_format f = bs_seq_format_from_name(fmt);
        bs_seq_write_info info = {0, 0};
        ERL_NIF_TERM r;
        if (f == BS_SEQ_FORMAT_UNKNOWN)
            r = enif_make_tuple3(env, a->error, el[1], a->unknown_format);
        else if (bs_seq_write_file(path, f, d, o, &info) < 0)
            r = enif_make_tuple3(env, a->error, el[1], bs_errno_atom(env, errno));
        else
            r = enif_make_tuple4(env, a->ok, el[1], make_uint(env, info.written), make_uint(env, info.left_out));
        results = enif_make_list_cell(env, r, results);
    }
    ERL_NIF_TERM rev;
    enif_make_reverse_list(env, results, &rev);
    return rev;
}

ERL_NIF_TERM bs_nif_seq_write(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    const bs_atoms *a = &bs_priv_of(env)->atoms;
    ERL_NIF_TERM events, names, dropped_t, head, tail;
    ErlNifUInt64 dropped = 0;
    bs_seq_opts o;
    seq_opts_bufs ob;
    size_t max_events = BS_SEQ_MAX_EVENTS_DEFAULT;
    bs_name_style style;
    if (!enif_is_map(env, argv[0]) || !enif_get_map_value(env, argv[0], enif_make_atom(env, "events"), &events) ||
        !enif_get_map_value(env, argv[0], enif_make_atom(env, "names"), &names) ||
        !enif_is_list(env, argv[1]) || !decode_opts(env, argv[2], &o, &max_events, &style, &ob))
        return enif_make_badarg(env);
    if (enif_get_map_value(env, argv[0], a->dropped, &dropped_t) && !enif_get_uint64(env, dropped_t, &dropped))
        return enif_make_badarg(env);
    bs_seq_flow f;
    bs_seq_flow_init(&f, max_events);
    f.dropped = dropped;
    event_bufs *b = enif_alloc(sizeof *b);
    if (!b)
        return enif_raise_exception(env, a->enomem);
    int rc = 0;
    tail = events;
    while (rc == 0 && enif_get_list_cell(env, tail, &head, &tail))
        rc = add_event(env, &f, head, b);
    tail = names;
    while (rc == 0 && enif_get_list_cell(env, tail, &head, &tail))
        rc = add_name(env, &f, head, style);
    enif_free(b);
    if (rc != 0) {
        bs_seq_flow_free(&f);
        return rc == -1 ? enif_make_badarg(env) : enif_raise_exception(env, a->enomem);
    }
    bs_seq_diagram d;
    int bad = 0;
    if (bs_seq_merge(&f, &o, &d, &bad) < 0) {
        bs_seq_flow_free(&f);
        return bad ? enif_make_tuple2(env, a->error, enif_make_atom(env, "bad_pattern"))
                   : enif_raise_exception(env, a->enomem);
    }
    ERL_NIF_TERM files = write_outputs(env, argv[1], &d, &o);
    ERL_NIF_TERM keys[] = {enif_make_atom(env, "messages"), enif_make_atom(env, "participants"),
                           enif_make_atom(env, "noise"), enif_make_atom(env, "filtered"),
                           enif_make_atom(env, "folded"), enif_make_atom(env, "dropped_events")};
    ERL_NIF_TERM vals[] = {make_uint(env, d.n_msgs), make_uint(env, d.n_parts), make_uint(env, d.noise),
                           make_uint(env, d.filtered), make_uint(env, d.folded), make_uint(env, d.dropped_events)};
    ERL_NIF_TERM summary;
    enif_make_map_from_arrays(env, keys, vals, 6, &summary);
    bs_seq_diagram_free(&d);
    bs_seq_flow_free(&f);
    if (enif_is_exception(env, files))
        return files;
    return enif_make_tuple3(env, a->ok, files, summary);
}
