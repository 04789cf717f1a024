/* bspy_write.c — writes a profile as a .bspy file (format:
 * docs/bspy-format.md, constants: bspy.h).
 *
 * Everything a writer needs later is kept: frames, every tree with its
 * nodes and spans, units, timeline flags, truncation and metadata. Totals
 * are not stored (a reader recomputes them from the self times). Section
 * lengths are computed before a section is written, so the file streams to
 * a pipe; a CRC-32 of every byte before it ends the file. Output is
 * deterministic: the same profile gives the same bytes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../common/bspy.h"
#include "../common/crc32.h"
#include "writers.h"

typedef struct bspy_out {
    FILE *fp;
    int failed;
    size_t len;
    bs_crc32 crc;
    unsigned char buf[1 << 16];
} bspy_out;

static void flush(bspy_out *o)
{
    bs_crc32_update(&o->crc, o->buf, o->len);
    if (o->len && fwrite(o->buf, 1, o->len, o->fp) != o->len)
        o->failed = 1;
    o->len = 0;
}

static void put(bspy_out *o, const void *data, size_t n)
{
    const unsigned char *p = data;
    while (n) {
        if (o->len == sizeof o->buf)
            flush(o);
        size_t k = sizeof o->buf - o->len < n ? sizeof o->buf - o->len : n;
        memcpy(o->buf + o->len, p, k);
        o->len += k;
        p += k;
        n -= k;
    }
}

static void put_u32(bspy_out *o, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    put(o, b, 4);
}

static void put_u64(bspy_out *o, uint64_t v)
{
    put_u32(o, (uint32_t)v);
    put_u32(o, (uint32_t)(v >> 32));
}

static void put_section(bspy_out *o, const char *tag, uint64_t length)
{
    put(o, tag, 4);
    put_u64(o, length);
}

static void put_str(bspy_out *o, const char *s, size_t cap)
{
    size_t n = strnlen(s, cap - 1);
    put_u32(o, (uint32_t)n);
    put(o, s, n);
}

static void write_meta(bspy_out *o, const bs_profile *p)
{
    const bs_profile_meta *m = &p->meta;
    const char *strs[] = {m->node, m->otp_release, m->source, m->options, p->truncated};
    const size_t caps[] = {sizeof m->node, sizeof m->otp_release, sizeof m->source, sizeof m->options,
                           sizeof p->truncated};
    uint64_t len = 4 + 4 + 8 + 8 + 8 + 4 + 4;
    for (int i = 0; i < 5; i++)
        len += 4 + strnlen(strs[i], caps[i] - 1);
    put_section(o, BS_BSPY_TAG_META, len);
    put_u32(o, (uint32_t)p->unit);
    put_u32(o, (p->has_timeline ? BS_BSPY_META_TIMELINE : 0) |
                   (p->timeline_truncated ? BS_BSPY_META_TIMELINE_TRUNCATED : 0));
    put_u64(o, p->start_ns);
    put_u64(o, p->duration_ns);
    put_u64(o, (uint64_t)m->start_unix_us);
    put_u32(o, p->sleep_frame);
    put_u32(o, p->gc_frame);
    for (int i = 0; i < 5; i++)
        put_str(o, strs[i], caps[i]);
}

/* Whether times were compensated for tracer overhead, and by how much
 * (compensation.h); omitted when unknown, as version-1 files before it. */
static void write_compensation(bspy_out *o, const bs_profile *p)
{
    const bs_compensation *c = &p->compensation;
    if (c->state == BS_COMP_UNKNOWN)
        return;
    put_section(o, BS_BSPY_TAG_COMP, BS_BSPY_COMP_FIXED + (uint64_t)BS_EVENT_KINDS * BS_BSPY_COMP_KIND_BYTES);
    put_u32(o, (uint32_t)c->state);
    put_u64(o, c->subtracted_ns);
    put_u64(o, c->base_ns);
    put_u64(o, c->scaled_ns);
    put_u32(o, BS_EVENT_KINDS);
    for (int k = 0; k < BS_EVENT_KINDS; k++) {
        put_u32(o, c->ns[k]);
        put_u64(o, c->events[k]);
    }
}

/* NOTE: the profile's notes (how CPU samples were taken and what became
 * of them, spans dropped, ...); omitted when there are none. */
static void write_notes(bspy_out *o, const bs_profile *p)
{
    size_t n = strnlen(p->notes, sizeof p->notes - 1);
    if (n == 0)
        return;
    put_section(o, BS_BSPY_TAG_NOTE, 4 + (uint64_t)n);
    put_str(o, p->notes, sizeof p->notes);
}

static int write_frames(bspy_out *o, const bs_profile *p)
{
    uint64_t len = 4;
    for (uint32_t i = 0; i < p->frames.n; i++) {
        size_t n = strlen(bs_frame_name(&p->frames, i));
        if (n > BS_BSPY_MAX_NAME)
            return -1;
        len += 4 + n;
    }
    put_section(o, BS_BSPY_TAG_FRAMES, len);
    put_u32(o, p->frames.n);
    for (uint32_t i = 0; i < p->frames.n; i++) {
        const char *name = bs_frame_name(&p->frames, i);
        size_t n = strlen(name);
        put_u32(o, (uint32_t)n);
        put(o, name, n);
    }
    return 0;
}

static void write_tree(bspy_out *o, const bs_ptree *t)
{
    uint32_t n_spans = t->spans ? t->n_spans : 0;
    put_section(o, BS_BSPY_TAG_TREE,
                BS_BSPY_TREE_FIXED + (uint64_t)t->n_nodes * BS_BSPY_NODE_BYTES +
                    (uint64_t)n_spans * BS_BSPY_SPAN_BYTES);
    put_u32(o, t->synthetic_root ? BS_BSPY_TREE_SYNTHETIC_ROOT : 0);
    put_u64(o, t->events);
    put_u64(o, t->dropped);
    put_u32(o, t->n_nodes);
    for (uint32_t i = 0; i < t->n_nodes; i++) {
        const bs_pnode *n = &t->nodes[i];
        put_u32(o, i == 0 ? UINT32_MAX : n->parent);
        put_u32(o, n->frame);
        put_u64(o, n->self_ns);
        put_u64(o, n->calls);
    }
    put_u32(o, n_spans);
    for (uint32_t i = 0; i < n_spans; i++) {
        put_u32(o, t->spans[i].node);
        put_u64(o, t->spans[i].start_ns);
        put_u64(o, t->spans[i].end_ns);
    }
}

int bs_write_bspy(FILE *out, const bs_profile *p, const bs_render_opts *opts)
{
    (void)opts; /* filters were applied by bs_write_file; nothing else applies */
    bspy_out *o = malloc(sizeof *o);
    if (!o)
        return -1;
    o->fp = out;
    o->failed = 0;
    o->len = 0;
    bs_crc32_init(&o->crc);
    put(o, BS_BSPY_MAGIC, BS_BSPY_MAGIC_LEN);
    put_u32(o, BS_BSPY_VERSION);
    put_u32(o, 0);
    write_meta(o, p);
    write_compensation(o, p);
    write_notes(o, p);
    int rc = write_frames(o, p);
    for (uint32_t i = 0; rc == 0 && i < p->n_trees; i++)
        write_tree(o, &p->trees[i]);
    if (rc == 0) {
        put_section(o, BS_BSPY_TAG_END, 4);
        flush(o);
        put_u32(o, bs_crc32_value(&o->crc));
        flush(o);
    }
    if (rc < 0)
        errno = EINVAL; /* a frame name longer than the format allows */
    else if (o->failed || ferror(out))
        rc = -1;
    free(o);
    return rc;
}
