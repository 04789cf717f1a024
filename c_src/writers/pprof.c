/* pprof.c — Google's profile.proto (github.com/google/pprof, proto/
 * profile.proto), gzipped: what `go tool pprof`, Pyroscope and Grafana read.
 *
 * Each stack with weight of its own is one Sample: its locations leaf first
 * (one Location and one Function per frame name, shared by every stack, ids
 * frame id + 1; the "[deeper]" frame of stacks cut at folded_max_depth, as
 * the folded writer cuts them, gets the id after the last frame), and the
 * process it ran in as the label "process" (the root frame of the tree is a
 * label, not a frame, so pprof's views merge processes unless asked to
 * split them with -tagfocus or -tags; a process's own time outside any
 * call is the one stack of its root frame). Values: recorded profiles give
 * "wall"/"nanoseconds" (self time, whole nanoseconds) and, when the profile
 * has call counts, "calls"/"count" (the calls of the node, the exact counts
 * the tracer saw; a node with calls and no time of its own is a sample of
 * 0 ns, so that a function's calls add up); profiles of
 * counts (folded input, CPU samples) give "samples"/"count". Names are the
 * profile's own (Erlang or Elixir spelling), in the string table once.
 *
 * Protocol buffers allow a message's fields in any order, so samples are
 * encoded and compressed as the trees are walked; the functions, locations
 * and string table follow. Memory: a string index and a flag per frame, a
 * depth per node of one tree, and one stack's encoding (at most
 * folded_max_depth + 2 locations). */
#include "writers.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "trace_common.h"

/* profile.proto's field numbers. */
enum {
    PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_LOCATION = 4, PROFILE_FUNCTION = 5,
    PROFILE_STRING_TABLE = 6, PROFILE_TIME_NANOS = 9, PROFILE_DURATION_NANOS = 10,
    PROFILE_PERIOD_TYPE = 11, PROFILE_PERIOD = 12, PROFILE_DEFAULT_SAMPLE_TYPE = 14,
    VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2,
    SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3,
    LABEL_KEY = 1, LABEL_STR = 2,
    LOCATION_ID = 1, LOCATION_LINE = 4,
    LINE_FUNCTION_ID = 1,
    FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3,
};
#define WIRE_VARINT 0
#define WIRE_LEN 2

/* A growable byte buffer for one message. */
typedef struct pb_buf {
    unsigned char *data;
    size_t len, cap;
} pb_buf;

static int pb_reserve(pb_buf *b, size_t more)
{
    if (b->len + more <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more)
        cap *= 2;
    unsigned char *d = realloc(b->data, cap);
    if (!d) {
        errno = ENOMEM;
        return -1;
    }
    b->data = d;
    b->cap = cap;
    return 0;
}

static int pb_varint(pb_buf *b, uint64_t v)
{
    if (pb_reserve(b, 10) < 0)
        return -1;
    do {
        unsigned char c = v & 0x7f;
        v >>= 7;
        b->data[b->len++] = (unsigned char)(c | (v ? 0x80 : 0));
    } while (v);
    return 0;
}

static int pb_tag(pb_buf *b, unsigned field, unsigned wire)
{
    return pb_varint(b, ((uint64_t)field << 3) | wire);
}

static int pb_uint(pb_buf *b, unsigned field, uint64_t v)
{
    return pb_tag(b, field, WIRE_VARINT) < 0 ? -1 : pb_varint(b, v);
}

static int pb_bytes(pb_buf *b, unsigned field, const void *data, size_t len)
{
    if (pb_tag(b, field, WIRE_LEN) < 0 || pb_varint(b, len) < 0 || pb_reserve(b, len) < 0)
        return -1;
    if (len)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    return 0;
}

typedef struct pprof_writer {
    FILE *out;
    const bs_profile *p;
    int drop_sleep;
    int with_calls;         /* the second value, calls/count */
    z_stream z;
    unsigned char zout[16384];
    pb_buf msg, inner;      /* a message, and one nested in it */
    uint32_t *frame_string; /* per frame (and [deeper]): string index, 0 = none yet */
    unsigned char *used;    /* per frame (and [deeper]): in some sample */
    const char **strings;   /* the string table, in index order */
    uint32_t n_strings, cap_strings;
    uint32_t process_key;   /* string index of "process" */
    uint32_t label;         /* string index of the current process, 0: none */
} pprof_writer;

/* Compresses len bytes (flush: finish the stream) to the file. */
static int z_write(pprof_writer *w, const void *data, size_t len, int flush)
{
    w->z.next_in = (unsigned char *)(uintptr_t)data;
    w->z.avail_in = (uInt)len;
    for (;;) {
        w->z.next_out = w->zout;
        w->z.avail_out = sizeof w->zout;
        int rc = deflate(&w->z, flush ? Z_FINISH : Z_NO_FLUSH);
        if (rc == Z_STREAM_ERROR)
            return -1;
        size_t n = sizeof w->zout - w->z.avail_out;
        if (n && fwrite(w->zout, 1, n, w->out) != n)
            return -1;
        if (flush ? rc == Z_STREAM_END : w->z.avail_in == 0 && w->z.avail_out != 0)
            return 0;
    }
}

/* Writes w->msg as field `field` of the Profile, and empties it. */
static int put_message(pprof_writer *w, unsigned field)
{
    unsigned char head[16];
    pb_buf h = {head, 0, sizeof head};
    pb_tag(&h, field, WIRE_LEN);
    pb_varint(&h, w->msg.len);
    int rc = z_write(w, head, h.len, 0) < 0 || z_write(w, w->msg.data, w->msg.len, 0) < 0 ? -1 : 0;
    w->msg.len = 0;
    return rc;
}

static int intern(pprof_writer *w, const char *s, uint32_t *index)
{
    if (w->n_strings == w->cap_strings) {
        uint32_t cap = w->cap_strings ? w->cap_strings * 2 : 64;
        const char **more = realloc(w->strings, (size_t)cap * sizeof *more);
        if (!more) {
            errno = ENOMEM;
            return -1;
        }
        w->strings = more;
        w->cap_strings = cap;
    }
    w->strings[w->n_strings] = s;
    *index = w->n_strings++;
    return 0;
}

static const char *frame_text(const pprof_writer *w, uint32_t frame)
{
    if (frame == w->p->frames.n)
        return BS_DEEPER_FRAME;
    const char *name = bs_frame_name(&w->p->frames, frame);
    return name && *name ? name : "?";
}

/* The index of a string of the header (a few), added once. */
static int intern_once(pprof_writer *w, const char *s, uint32_t *index)
{
    for (uint32_t i = 0; i < w->n_strings; i++)
        if (strcmp(w->strings[i], s) == 0) {
            *index = i;
            return 0;
        }
    return intern(w, s, index);
}

/* The string index of a frame's name, interned on first use. */
static int frame_string(pprof_writer *w, uint32_t frame, uint32_t *index)
{
    if (!w->frame_string[frame] && intern(w, frame_text(w, frame), &w->frame_string[frame]) < 0)
        return -1;
    *index = w->frame_string[frame];
    return 0;
}

static uint64_t weight_of(void *ctx, const bs_ptree *t, uint32_t i)
{
    const pprof_writer *w = ctx;
    if (i == 0 && t->synthetic_root)
        return 0;
    if (w->drop_sleep && i > 0 && bs_profile_is_sched_out(w->p, t->nodes[i].frame))
        return 0;
    return t->nodes[i].self_ns;
}

/* One Sample: node's stack (deeper: with "[deeper]" under it), its weight
 * and calls. */
static int put_stack(pprof_writer *w, const bs_ptree *t, uint32_t node, int deeper, uint64_t weight, uint64_t calls)
{
    pb_buf *in = &w->inner;
    in->len = 0;
    if (deeper) {
        w->used[w->p->frames.n] = 1;
        if (pb_varint(in, (uint64_t)w->p->frames.n + 1) < 0)
            return -1;
    }
    /* Leaf first, down to (not including) the process frame; the process's
     * own time (outside any call) keeps it, as pprof leaves out samples
     * without locations. */
    uint32_t at = node;
    do {
        uint32_t frame = t->nodes[at].frame;
        w->used[frame] = 1;
        if (pb_varint(in, (uint64_t)frame + 1) < 0)
            return -1;
        at = at ? t->nodes[at].parent : 0;
    } while (at != 0);
    if (pb_bytes(&w->msg, SAMPLE_LOCATION_ID, in->data, in->len) < 0)
        return -1;
    in->len = 0;
    if (pb_varint(in, weight) < 0 || (w->with_calls && pb_varint(in, calls) < 0) ||
        pb_bytes(&w->msg, SAMPLE_VALUE, in->data, in->len) < 0)
        return -1;
    if (w->label) {
        in->len = 0;
        if (pb_uint(in, LABEL_KEY, w->process_key) < 0 || pb_uint(in, LABEL_STR, w->label) < 0 ||
            pb_bytes(&w->msg, SAMPLE_LABEL, in->data, in->len) < 0)
            return -1;
    }
    return put_message(w, PROFILE_SAMPLE);
}

/* A ValueType as field `field` of the Profile. */
static int put_sample(void *ctx, const bs_ptree *t, uint32_t node, int deeper, uint64_t weight)
{
    return put_stack(ctx, t, node, deeper, weight, deeper ? 0 : t->nodes[node].calls);
}

/* The calls of nodes without weight of their own (bs_walk_samples leaves
 * them out), so that each function's calls add up: a sample of weight 0
 * each, down to max_depth (calls below it are not counted, as their frames
 * are cut). */
static int put_calls_only(pprof_writer *w, const bs_ptree *t, unsigned max_depth)
{
    uint32_t *depth = malloc((size_t)t->n_nodes * sizeof *depth);
    if (!depth) {
        errno = ENOMEM;
        return -1;
    }
    int rc = 0;
    depth[0] = 0;
    for (uint32_t i = 1; i < t->n_nodes && rc == 0; i++) {
        uint32_t parent = t->nodes[i].parent;
        /* Parents come first; past max_depth the depth stops growing. */
        depth[i] = parent < i && depth[parent] <= max_depth ? depth[parent] + 1 : UINT32_MAX;
        if (depth[i] <= max_depth && t->nodes[i].calls && weight_of(w, t, i) == 0)
            rc = put_stack(w, t, i, 0, 0, t->nodes[i].calls);
    }
    free(depth);
    return rc;
}

static int put_value_type(pprof_writer *w, unsigned field, const char *type, const char *unit)
{
    uint32_t t, u;
    if (intern_once(w, type, &t) < 0 || intern_once(w, unit, &u) < 0 || pb_uint(&w->msg, VALUE_TYPE_TYPE, t) < 0 ||
        pb_uint(&w->msg, VALUE_TYPE_UNIT, u) < 0)
        return -1;
    return put_message(w, field);
}

/* The header fields: sample types, period, times. */
static int put_head(pprof_writer *w)
{
    const bs_profile *p = w->p;
    const char *type = p->unit == BS_UNIT_NS ? "wall" : "samples";
    const char *unit = p->unit == BS_UNIT_NS ? "nanoseconds" : "count";
    uint32_t empty;
    if (intern(w, "", &empty) < 0 || intern_once(w, "process", &w->process_key) < 0 ||
        put_value_type(w, PROFILE_SAMPLE_TYPE, type, unit) < 0 ||
        (w->with_calls && put_value_type(w, PROFILE_SAMPLE_TYPE, "calls", "count") < 0) ||
        put_value_type(w, PROFILE_PERIOD_TYPE, type, unit) < 0)
        return -1;
    /* Scalar fields of the Profile go out as they are. */
    w->msg.len = 0;
    /* pprof shows the last sample type unless told: the time (or count). */
    uint32_t default_type;
    if (intern_once(w, type, &default_type) < 0 || pb_uint(&w->msg, PROFILE_PERIOD, 1) < 0 ||
        pb_uint(&w->msg, PROFILE_DEFAULT_SAMPLE_TYPE, default_type) < 0 ||
        (p->meta.start_unix_us > 0 && pb_uint(&w->msg, PROFILE_TIME_NANOS, (uint64_t)p->meta.start_unix_us * 1000u) < 0) ||
        (p->duration_ns && pb_uint(&w->msg, PROFILE_DURATION_NANOS, p->duration_ns) < 0) ||
        z_write(w, w->msg.data, w->msg.len, 0) < 0)
        return -1;
    w->msg.len = 0;
    return 0;
}

/* One Function and one Location (same id) per frame some sample used. */
static int put_frames(pprof_writer *w)
{
    for (uint32_t f = 0; f <= w->p->frames.n; f++) {
        if (!w->used[f])
            continue;
        uint32_t name;
        if (frame_string(w, f, &name) < 0)
            return -1;
        if (pb_uint(&w->msg, FUNCTION_ID, (uint64_t)f + 1) < 0 || pb_uint(&w->msg, FUNCTION_NAME, name) < 0 ||
            pb_uint(&w->msg, FUNCTION_SYSTEM_NAME, name) < 0 || put_message(w, PROFILE_FUNCTION) < 0)
            return -1;
        w->inner.len = 0;
        if (pb_uint(&w->inner, LINE_FUNCTION_ID, (uint64_t)f + 1) < 0 || pb_uint(&w->msg, LOCATION_ID, (uint64_t)f + 1) < 0 ||
            pb_bytes(&w->msg, LOCATION_LINE, w->inner.data, w->inner.len) < 0 || put_message(w, PROFILE_LOCATION) < 0)
            return -1;
    }
    return 0;
}

static int put_strings(pprof_writer *w)
{
    for (uint32_t i = 0; i < w->n_strings; i++) {
        w->msg.len = 0;
        if (pb_bytes(&w->msg, PROFILE_STRING_TABLE, w->strings[i], strlen(w->strings[i])) < 0 ||
            z_write(w, w->msg.data, w->msg.len, 0) < 0)
            return -1;
    }
    w->msg.len = 0;
    return 0;
}

static int has_calls(const bs_profile *p)
{
    if (p->unit != BS_UNIT_NS)
        return 0;
    for (uint32_t t = 0; t < p->n_trees; t++)
        for (uint32_t i = 0; i < p->trees[t].n_nodes; i++)
            if (p->trees[t].nodes[i].calls)
                return 1;
    return 0;
}

static int write_all(pprof_writer *w, const bs_render_opts *o)
{
    if (put_head(w) < 0)
        return -1;
    bs_sample_visitor v = {weight_of, put_sample, w};
    for (uint32_t ti = 0; ti < w->p->n_trees; ti++) {
        const bs_ptree *t = &w->p->trees[ti];
        if (!t->n_nodes)
            continue;
        w->label = 0;
        if (!t->synthetic_root && frame_string(w, t->nodes[0].frame, &w->label) < 0)
            return -1;
        unsigned max_depth = o && o->folded_max_depth ? o->folded_max_depth : BS_DEFAULT_SAMPLE_DEPTH;
        if (bs_walk_samples(t, max_depth, &v) < 0 || (w->with_calls && put_calls_only(w, t, max_depth) < 0))
            return -1;
    }
    if (put_frames(w) < 0 || put_strings(w) < 0 || z_write(w, NULL, 0, 1) < 0)
        return -1;
    return ferror(w->out) ? -1 : 0;
}

int bs_write_pprof(FILE *out, const bs_profile *p, const bs_render_opts *o)
{
    pprof_writer w = {.out = out, .p = p, .drop_sleep = o && o->drop_sleep, .with_calls = has_calls(p)};
    size_t n = (size_t)p->frames.n + 1;
    w.frame_string = calloc(n, sizeof *w.frame_string);
    w.used = calloc(n, 1);
    /* 15 + 16: a gzip header and trailer around the deflate stream. */
    int z_ok = deflateInit2(&w.z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
    int rc = -1;
    if (!w.frame_string || !w.used || !z_ok)
        errno = ENOMEM;
    else
        rc = write_all(&w, o);
    if (z_ok)
        deflateEnd(&w.z);
    free(w.frame_string);
    free(w.used);
    free(w.strings);
    free(w.msg.data);
    free(w.inner.data);
    return rc;
}
