/* bspy_read.c — reads beamspy's own profile file (format:
 * docs/bspy-format.md, constants: bspy.h).
 *
 * The input is untrusted: every length and count is checked against the
 * format's bounds and against the bytes left in its section (and in the
 * file, when its size is known) before it is used, and arrays grow only as
 * their elements really arrive, so a forged count cannot make the reader
 * allocate more than about twice the input. Every invariant the profile
 * model promises writers is checked: node 0 is the root, each parent index
 * is below its child's, frames and span nodes exist, spans are sorted by
 * start and properly nested. Names are sanitised again like every other
 * input (a no-op for files beamspy wrote). The CRC-32 at the end catches
 * what the structure checks cannot; errors give the byte offset. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../engine/frame_name.h"
#include "../common/bspy.h"
#include "../common/crc32.h"
#include "read_source.h"

#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define BUF_BYTES 64u /* fuzz/: small inputs refill the buffer too (the largest take is 24) */
#else
#define BUF_BYTES (1u << 16)
#endif

typedef struct bspy_in {
    bs_read_source *src;
    const char *file;
    bs_read_error *err;
    bs_profile *p;
    uint64_t offset;     /* input offset of buf[pos] */
    uint64_t file_left;  /* bytes left in the file after buf[len]; UINT64_MAX unknown */
    uint64_t section_end;
    size_t pos, len, crc_pos;
    bs_crc32 crc;
    uint64_t total;      /* self times of all trees so far: the sum must fit 64 bits */
    uint32_t *frame_map; /* frame index in the file -> frame id in the profile */
    uint32_t n_frames;
    unsigned char buf[BUF_BYTES];
    char name[BS_BSPY_MAX_NAME + 1];
    char safe[BS_BSPY_MAX_NAME + 1];
} bspy_in;

static int fail_at(bspy_in *in, uint64_t offset, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bs_read_vfail(in->err, in->file, 0, offset, fmt, ap);
    va_end(ap);
    return -1;
}

#define FAIL(in, ...) fail_at((in), (in)->offset, __VA_ARGS__)

/* ---- bytes -------------------------------------------------------------- */

/* At least n (<= BUF_BYTES) bytes buffered, else -1 (end of input). */
static int fill(bspy_in *in, size_t n)
{
    if (in->len - in->pos >= n)
        return 0;
    bs_crc32_update(&in->crc, in->buf + in->crc_pos, in->pos - in->crc_pos);
    memmove(in->buf, in->buf + in->pos, in->len - in->pos);
    in->len -= in->pos;
    in->pos = in->crc_pos = 0;
    size_t got = bs_source_read(in->src, in->buf + in->len, BUF_BYTES - in->len);
    in->len += got;
    if (in->file_left != UINT64_MAX)
        in->file_left = got > in->file_left ? 0 : in->file_left - got;
    return in->len >= n ? 0 : -1;
}

/* Takes n bytes from the current section. */
static const unsigned char *take(bspy_in *in, size_t n, const char *what)
{
    if (in->offset + n > in->section_end) {
        FAIL(in, "%s runs past the end of its section", what);
        return NULL;
    }
    if (fill(in, n) < 0) {
        FAIL(in, "file ends inside %s (truncated)", what);
        return NULL;
    }
    const unsigned char *b = in->buf + in->pos;
    in->pos += n;
    in->offset += n;
    return b;
}

static uint32_t le32(const unsigned char *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint64_t le64(const unsigned char *b) { return le32(b) | (uint64_t)le32(b + 4) << 32; }

static int get_u32(bspy_in *in, uint32_t *v, const char *what)
{
    const unsigned char *b = take(in, 4, what);
    if (!b)
        return -1;
    *v = le32(b);
    return 0;
}

static int get_u64(bspy_in *in, uint64_t *v, const char *what)
{
    const unsigned char *b = take(in, 8, what);
    if (!b)
        return -1;
    *v = le64(b);
    return 0;
}

/* Copies n bytes (any size) of the current section into dst. */
static int get_bytes(bspy_in *in, char *dst, size_t n, const char *what)
{
    while (n) {
        size_t k = n < BUF_BYTES ? n : BUF_BYTES;
        const unsigned char *b = take(in, k, what);
        if (!b)
            return -1;
        memcpy(dst, b, k);
        dst += k;
        n -= k;
    }
    return 0;
}

/* Bytes left in the current section; also checks a count of elements of
 * `size` bytes (plus `after` bytes that must follow) fits in it. */
static int check_count(bspy_in *in, uint64_t count, uint64_t size, uint64_t after, const char *what)
{
    uint64_t left = in->section_end - in->offset;
    if (count > (left - (after < left ? after : left)) / size || after > left)
        return FAIL(in, "%s: %llu of them cannot fit in the %llu bytes left in the section", what,
                    (unsigned long long)count, (unsigned long long)left);
    return 0;
}

/* arr (elements of `size` bytes) grown to hold `need`, doubling, so memory
 * follows the elements really read, never a count from the file; NULL if
 * memory runs out (arr is then unchanged). */
static void *reserve(void *arr, uint32_t *cap, uint32_t need, size_t size)
{
    if (need <= *cap)
        return arr;
    uint64_t c = *cap ? *cap : 256;
    while (c < need)
        c *= 2;
    if (c > UINT32_MAX)
        c = UINT32_MAX;
    void *a = realloc(arr, (size_t)c * size);
    if (a)
        *cap = (uint32_t)c;
    return a;
}

/* ---- sections ----------------------------------------------------------- */

/* 1 if s[0..n) is valid UTF-8 without control characters. */
static int clean_text(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i], len = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
                                                : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        if (len == 0 || len > n - i || c < 0x20 || c == 0x7F)
            return 0;
        for (unsigned k = 1; k < len; k++)
            if ((s[i + k] & 0xC0) != 0x80)
                return 0;
        if ((c == 0xE0 && s[i + 1] < 0xA0) || (c == 0xED && s[i + 1] > 0x9F) ||
            (c == 0xF0 && s[i + 1] < 0x90) || (c == 0xF4 && s[i + 1] > 0x8F))
            return 0; /* overlong, surrogate or above U+10FFFF */
        i += len;
    }
    return 1;
}

/* A metadata string into dst[cap]: kept as is when it is clean text, made
 * safe like a frame name otherwise. */
static int get_meta_str(bspy_in *in, char *dst, size_t cap, const char *what)
{
    uint32_t n;
    if (get_u32(in, &n, what) < 0)
        return -1;
    if (n >= cap)
        return FAIL(in, "%s is %u bytes long (at most %zu)", what, n, cap - 1);
    if (get_bytes(in, in->name, n, what) < 0)
        return -1;
    if (memchr(in->name, '\0', n))
        return FAIL(in, "%s contains a NUL byte", what);
    if (clean_text((const unsigned char *)in->name, n)) {
        memcpy(dst, in->name, n);
        dst[n] = '\0';
    } else {
        bs_sanitize_name(dst, cap, in->name, n);
    }
    return 0;
}

static int read_meta(bspy_in *in, uint32_t *sleep_frame, uint32_t *gc_frame)
{
    bs_profile *p = in->p;
    uint32_t unit, flags;
    uint64_t start_unix;
    if (get_u32(in, &unit, "unit") < 0 || get_u32(in, &flags, "flags") < 0)
        return -1;
    if (unit > BS_UNIT_COUNT)
        return FAIL(in, "unknown unit %u", unit);
    if (flags & ~(BS_BSPY_META_TIMELINE | BS_BSPY_META_TIMELINE_TRUNCATED))
        return FAIL(in, "unknown metadata flags 0x%x", flags);
    p->unit = (bs_unit)unit;
    p->has_timeline = (flags & BS_BSPY_META_TIMELINE) != 0;
    p->timeline_truncated = (flags & BS_BSPY_META_TIMELINE_TRUNCATED) != 0;
    if (get_u64(in, &p->start_ns, "start_ns") < 0 || get_u64(in, &p->duration_ns, "duration_ns") < 0 ||
        get_u64(in, &start_unix, "start_unix_us") < 0 || get_u32(in, sleep_frame, "sleep frame") < 0 ||
        get_u32(in, gc_frame, "GC frame") < 0)
        return -1;
    memcpy(&p->meta.start_unix_us, &start_unix, sizeof start_unix); /* two's complement */
    bs_profile_meta *m = &p->meta;
    if (get_meta_str(in, m->node, sizeof m->node, "node") < 0 ||
        get_meta_str(in, m->otp_release, sizeof m->otp_release, "otp_release") < 0 ||
        get_meta_str(in, m->source, sizeof m->source, "source") < 0 ||
        get_meta_str(in, m->options, sizeof m->options, "options") < 0 ||
        get_meta_str(in, p->truncated, sizeof p->truncated, "truncated") < 0)
        return -1;
    return in->offset == in->section_end ? 0 : FAIL(in, "META section has %llu unexpected bytes",
                                                    (unsigned long long)(in->section_end - in->offset));
}

/* COMP: kinds this reader does not know (a later revision's) are skipped. */
static int read_compensation(bspy_in *in)
{
    bs_compensation *c = &in->p->compensation;
    uint32_t state, kinds;
    if (get_u32(in, &state, "compensation state") < 0 || get_u64(in, &c->subtracted_ns, "subtracted_ns") < 0 ||
        get_u64(in, &c->base_ns, "base_ns") < 0 || get_u64(in, &c->scaled_ns, "scaled_ns") < 0 ||
        get_u32(in, &kinds, "event kinds") < 0)
        return -1;
    if (state != BS_COMP_RAW && state != BS_COMP_APPLIED)
        return FAIL(in, "unknown compensation state %u", state);
    if (kinds > BS_BSPY_COMP_MAX_KINDS || in->section_end - in->offset != (uint64_t)kinds * BS_BSPY_COMP_KIND_BYTES)
        return FAIL(in, "COMP section does not hold %u event kinds", kinds);
    c->state = (bs_comp_state)state;
    for (uint32_t k = 0; k < kinds; k++) {
        uint32_t ns;
        uint64_t events;
        if (get_u32(in, &ns, "ns per event") < 0 || get_u64(in, &events, "events") < 0)
            return -1;
        if (k < BS_EVENT_KINDS) {
            c->ns[k] = ns;
            c->events[k] = events;
        }
    }
    return 0;
}

/* NOTE: one string, the profile's notes. */
static int read_notes(bspy_in *in)
{
    if (get_meta_str(in, in->p->notes, sizeof in->p->notes, "notes") < 0)
        return -1;
    return in->offset == in->section_end ? 0 : FAIL(in, "NOTE section has %llu unexpected bytes",
                                                    (unsigned long long)(in->section_end - in->offset));
}

static int read_frames(bspy_in *in)
{
    uint32_t n, cap = 0;
    if (get_u32(in, &n, "frame count") < 0 || check_count(in, n, 4, 0, "frames") < 0)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t len;
        if (get_u32(in, &len, "frame name length") < 0)
            return -1;
        if (len > BS_BSPY_MAX_NAME)
            return FAIL(in, "frame %u: name of %u bytes (at most %u)", i, len, BS_BSPY_MAX_NAME);
        if (get_bytes(in, in->name, len, "frame name") < 0)
            return -1;
        size_t safe_len = bs_sanitize_name(in->safe, sizeof in->safe, in->name, len);
        uint32_t id = bs_frame_table_intern(&in->p->frames, in->safe, safe_len);
        uint32_t *map = reserve(in->frame_map, &cap, i + 1, sizeof *map);
        if (id == UINT32_MAX || !map)
            return FAIL(in, "out of memory");
        in->frame_map = map;
        map[i] = id;
        in->n_frames = i + 1;
    }
    return in->offset == in->section_end ? 0 : FAIL(in, "FRAM section has %llu unexpected bytes",
                                                    (unsigned long long)(in->section_end - in->offset));
}

static int read_nodes(bspy_in *in, bs_ptree *t, uint32_t n)
{
    uint32_t cap = 0;
    for (uint32_t i = 0; i < n; i++) {
        const unsigned char *b = take(in, BS_BSPY_NODE_BYTES, "node");
        if (!b)
            return -1;
        bs_pnode *nodes = reserve(t->nodes, &cap, i + 1, sizeof *nodes);
        if (!nodes)
            return FAIL(in, "out of memory");
        t->nodes = nodes;
        bs_pnode *d = &nodes[i];
        uint32_t frame = le32(b + 4);
        d->parent = le32(b);
        d->self_ns = le64(b + 8);
        d->calls = le64(b + 16);
        d->total_ns = 0;
        t->n_nodes = i + 1;
        uint64_t at = in->offset - BS_BSPY_NODE_BYTES;
        if (i == 0 ? d->parent != UINT32_MAX : d->parent >= i)
            return fail_at(in, at, "node %u: parent %u is not %s", i, d->parent,
                           i == 0 ? "none (the root)" : "an earlier node");
        if (frame >= in->n_frames)
            return fail_at(in, at, "node %u: frame %u does not exist (%u frames)", i, frame, in->n_frames);
        d->frame = in->frame_map[frame];
        if (d->self_ns > UINT64_MAX - in->total) /* writers add up whole profiles */
            return fail_at(in, at, "node %u: self times add up to more than 2^64", i);
        in->total += d->self_ns;
    }
    return 0;
}

/* Spans sorted by start and properly nested: one that starts inside an
 * earlier one ends inside it too. `open` is a stack of end times. */
static int read_spans(bspy_in *in, bs_ptree *t, uint32_t n)
{
    uint32_t cap = 0, cap_open = 0, n_open = 0;
    uint64_t *open = NULL, *grown;
    int rc = 0;
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        const unsigned char *b = take(in, BS_BSPY_SPAN_BYTES, "span");
        bs_pspan *spans = b ? reserve(t->spans, &cap, i + 1, sizeof *spans) : NULL;
        if (!spans) {
            rc = b ? FAIL(in, "out of memory") : -1;
            break;
        }
        t->spans = spans;
        bs_pspan *s = &spans[i];
        *s = (bs_pspan){le32(b), le64(b + 4), le64(b + 12)};
        t->n_spans = i + 1;
        uint64_t at = in->offset - BS_BSPY_SPAN_BYTES;
        while (n_open && open[n_open - 1] <= s->start_ns)
            n_open--;
        if (s->node >= t->n_nodes)
            rc = fail_at(in, at, "span %u: node %u does not exist", i, s->node);
        else if (s->end_ns < s->start_ns)
            rc = fail_at(in, at, "span %u ends before it starts", i);
        else if (i > 0 && s->start_ns < t->spans[i - 1].start_ns)
            rc = fail_at(in, at, "span %u starts before the span before it", i);
        else if (n_open && s->end_ns > open[n_open - 1])
            rc = fail_at(in, at, "span %u overlaps an enclosing span", i);
        else if (!(grown = reserve(open, &cap_open, n_open + 1, sizeof *open)))
            rc = FAIL(in, "out of memory");
        else
            (open = grown)[n_open++] = s->end_ns;
    }
    free(open);
    return rc;
}

static int add_tree(bspy_in *in, bs_ptree **out)
{
    bs_profile *p = in->p;
    bs_ptree *trees = p->n_trees < UINT32_MAX - 1 ? reserve(p->trees, &p->cap_trees, p->n_trees + 1, sizeof *trees)
                                                   : NULL;
    if (!trees)
        return FAIL(in, "out of memory");
    p->trees = trees;
    *out = &trees[p->n_trees++];
    memset(*out, 0, sizeof **out);
    return 0;
}

static int read_tree(bspy_in *in)
{
    uint32_t flags, n_nodes, n_spans;
    bs_ptree *t = NULL;
    if (add_tree(in, &t) < 0 || get_u32(in, &flags, "tree flags") < 0 ||
        get_u64(in, &t->events, "events") < 0 || get_u64(in, &t->dropped, "dropped") < 0 ||
        get_u32(in, &n_nodes, "node count") < 0)
        return -1;
    if (flags & ~BS_BSPY_TREE_SYNTHETIC_ROOT)
        return FAIL(in, "unknown tree flags 0x%x", flags);
    t->synthetic_root = (flags & BS_BSPY_TREE_SYNTHETIC_ROOT) != 0;
    if (n_nodes == 0)
        return FAIL(in, "tree without nodes (node 0 is its root)");
    if (check_count(in, n_nodes, BS_BSPY_NODE_BYTES, 4, "nodes") < 0 || read_nodes(in, t, n_nodes) < 0 ||
        get_u32(in, &n_spans, "span count") < 0)
        return -1;
    if ((uint64_t)n_spans * BS_BSPY_SPAN_BYTES != in->section_end - in->offset)
        return FAIL(in, "%u spans do not fill the %llu bytes left in the section", n_spans,
                    (unsigned long long)(in->section_end - in->offset));
    return read_spans(in, t, n_spans);
}

/* ---- the file ----------------------------------------------------------- */

static int read_header(bspy_in *in)
{
    in->section_end = BS_BSPY_HEADER_LEN;
    const unsigned char *b = take(in, BS_BSPY_HEADER_LEN, "the header");
    if (!b)
        return -1;
    if (memcmp(b, BS_BSPY_MAGIC, BS_BSPY_MAGIC_LEN) != 0)
        return fail_at(in, 0, "not a .bspy file (bad magic bytes)");
    uint32_t version = le32(b + 8), flags = le32(b + 12);
    if (version != BS_BSPY_VERSION)
        return fail_at(in, 8, ".bspy version %u (this beamspy reads version %u)", version, BS_BSPY_VERSION);
    if (flags != 0)
        return fail_at(in, 12, "unknown header flags 0x%x", flags);
    return 0;
}

/* Reads the END. section: the CRC of everything before its body, then
 * nothing more. */
static int read_end(bspy_in *in)
{
    if (in->section_end - in->offset != 4)
        return FAIL(in, "END. section of %llu bytes (4 expected)",
                    (unsigned long long)(in->section_end - in->offset));
    if (fill(in, 4) < 0)
        return FAIL(in, "file ends inside the checksum (truncated)");
    bs_crc32_update(&in->crc, in->buf + in->crc_pos, in->pos - in->crc_pos);
    in->crc_pos = in->pos;
    uint32_t want = bs_crc32_value(&in->crc), got;
    if (get_u32(in, &got, "checksum") < 0)
        return -1;
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    if (got == 0)
        want = 0; /* fuzz/: a zero checksum lets mutated inputs through; others are checked */
#endif
    if (got != want)
        return fail_at(in, in->offset - 4, "checksum mismatch (file corrupt): stored %08x, computed %08x", got,
                       want);
    if (fill(in, 1) == 0)
        return FAIL(in, "unexpected bytes after the end of the profile");
    return 0;
}

static int read_sections(bspy_in *in)
{
    enum { WANT_META, WANT_FRAMES, TREES } state = WANT_META;
    uint32_t sleep_frame = 0, gc_frame = 0;
    int seen_comp = 0, seen_notes = 0;
    for (;;) {
        in->section_end = in->offset + BS_BSPY_SECTION_HEAD;
        const unsigned char *b = take(in, BS_BSPY_SECTION_HEAD, "a section header");
        if (!b)
            return -1;
        char tag[5] = {(char)b[0], (char)b[1], (char)b[2], (char)b[3], 0};
        uint64_t len = le64(b + 4), start = in->offset - BS_BSPY_SECTION_HEAD;
        if (len > UINT64_MAX - in->offset || (in->file_left != UINT64_MAX && len > in->file_left + (in->len - in->pos)))
            return fail_at(in, start, "section of %llu bytes is longer than the rest of the file (truncated?)",
                           (unsigned long long)len);
        in->section_end = in->offset + len;
        int rc;
        if (strcmp(tag, BS_BSPY_TAG_META) == 0 && state == WANT_META) {
            rc = read_meta(in, &sleep_frame, &gc_frame);
            state = WANT_FRAMES;
        } else if (strcmp(tag, BS_BSPY_TAG_FRAMES) == 0 && state == WANT_FRAMES) {
            rc = read_frames(in);
            if (rc == 0 && (sleep_frame >= in->n_frames || gc_frame >= in->n_frames))
                rc = fail_at(in, start, "SLEEP/GC frame index out of range (%u frames)", in->n_frames);
            if (rc == 0) {
                in->p->sleep_frame = in->frame_map[sleep_frame];
                in->p->gc_frame = in->frame_map[gc_frame];
            }
            state = TREES;
        } else if (strcmp(tag, BS_BSPY_TAG_TREE) == 0 && state == TREES) {
            rc = read_tree(in);
        } else if (strcmp(tag, BS_BSPY_TAG_END) == 0 && state == TREES) {
            return read_end(in);
        } else if (strcmp(tag, BS_BSPY_TAG_COMP) == 0 && state != WANT_META && !seen_comp) {
            rc = read_compensation(in);
            seen_comp = 1;
        } else if (strcmp(tag, BS_BSPY_TAG_NOTE) == 0 && state != WANT_META && !seen_notes) {
            rc = read_notes(in);
            seen_notes = 1;
        } else if (strcmp(tag, BS_BSPY_TAG_META) == 0 || strcmp(tag, BS_BSPY_TAG_FRAMES) == 0 ||
                   strcmp(tag, BS_BSPY_TAG_TREE) == 0 || strcmp(tag, BS_BSPY_TAG_END) == 0 ||
                   strcmp(tag, BS_BSPY_TAG_COMP) == 0 || strcmp(tag, BS_BSPY_TAG_NOTE) == 0 ||
                   state == WANT_META) {
            return fail_at(in, start, "section '%s' out of order",
                           clean_text((const unsigned char *)tag, 4) ? tag : "?");
        } else {
            /* a section of a later minor revision: skipped, still checksummed */
            for (rc = 0; rc == 0 && in->offset < in->section_end;) {
                uint64_t k = in->section_end - in->offset;
                rc = take(in, k < BUF_BYTES ? (size_t)k : BUF_BYTES, "an unknown section") ? 0 : -1;
            }
        }
        if (rc < 0)
            return -1;
    }
}

/* Bytes left in the input after what is already consumed, if it is a
 * regular file. */
static uint64_t bytes_left(const bs_read_source *src)
{
    struct stat st;
    int fd = fileno(src->fp);
    long at = fd >= 0 ? ftell(src->fp) : -1;
    if (fd < 0 || at < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < at)
        return UINT64_MAX;
    return (uint64_t)(st.st_size - at) + (src->head_len - src->head_pos);
}

int bs_read_bspy_source(bs_read_source *src, const char *name, bs_profile *out, bs_read_error *err)
{
    bspy_in *in = calloc(1, sizeof *in);
    if (!in || bs_profile_init(out) < 0) {
        free(in);
        bs_profile_free(out);
        return bs_read_fail(err, name, 0, 0, "out of memory");
    }
    in->src = src;
    in->file = name;
    in->err = err;
    in->p = out;
    in->file_left = bytes_left(src);
    bs_crc32_init(&in->crc);
    int rc = read_header(in) < 0 || read_sections(in) < 0 ? -1 : 0;
    if (rc == 0)
        bs_profile_compute_totals(out);
    else
        bs_profile_free(out);
    free(in->frame_map);
    free(in);
    return rc;
}

int bs_read_bspy(FILE *in, const char *name, bs_profile *out, bs_read_error *err)
{
    bs_read_source src = {.fp = in};
    return bs_read_bspy_source(&src, name, out, err);
}
