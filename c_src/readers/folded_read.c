/* folded_read.c — folded stacks (flamegraph.pl's input, eflame, inferno,
 * beamspy's own folded output) read back into a profile (see readers.h;
 * for users: docs/input-formats.md).
 *
 * Grammar (a superset of what flamegraph.pl, inferno and speedscope write):
 *   line  = stack 1*BLANK count          BLANK = SP / HTAB
 *   stack = frame *( ";" frame )         no frame may be empty
 *   count = 1*DIGIT [ "." *DIGIT ]       < 2^64, and so is their sum; a
 *                                        fraction is truncated (as inferno)
 * A line may end in CR (CRLF files) and blanks; empty and blank lines are
 * skipped, and so is a UTF-8 byte-order mark at the start. A line with two
 * counts, `stack c1 c2`, is flamegraph.pl's differential input: the last
 * column (the one flamegraph.pl draws) is used. A line without a count whose
 * first frame is a pid is one sample: eflame's stacks.out (and in pid stacks
 * a frame named `sleep`, eflame's scheduled-out marker, is SLEEP). The
 * reader is strict: the first line that does not fit stops the read with its
 * line number, so a file is never half-read without anyone noticing. A NUL
 * byte is such a line (no tool writes one; C tools would cut the name
 * there). Other bytes of frame names are only made safe (bs_sanitize_name),
 * never rejected.
 *
 * A first frame that is a pid (`<0.85.0>`, optionally `<0.85.0> name`) makes
 * the line part of that process's tree; all other lines share one tree with
 * a synthetic root. Counts are unitless (BS_UNIT_COUNT) and go to self_ns;
 * calls stay 0 (folded input does not say how often a stack was entered).
 *
 * Why it is fast (bench/render: 520 MB in about a second): input is read in
 * 4 MiB blocks and lines are parsed in place, with no per-line allocation;
 * a whole stack seen before is found with one hash (stack_cache.h); each
 * distinct raw frame text is hashed into a reader-local table while its end
 * is searched for, so a name is sanitised and interned only the first time
 * it is seen; frames shared with the previous line (depth-first output
 * shares long prefixes) are not looked up again; and new nodes are added
 * without searching (tree_build.h). Memory grows with distinct names and
 * distinct stacks, never with lines. */
#include "read_source.h"

#include <stdlib.h>
#include <string.h>

#include "../engine/frame_name.h"
#include "fast_hash.h"
#include "stack_cache.h"
#include "tree_build.h"

#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define FIRST_BLOCK_BYTES 64u /* fuzz/: small inputs cross block boundaries too */
#else
#define FIRST_BLOCK_BYTES (64u << 10) /* small inputs never pay for a big buffer */
#endif
#define BLOCK_BYTES (4u << 20)
#define MAX_LINE_BYTES (64u << 20)
#define PAD_BYTES 8u
#define MAX_NAME_BYTES 4096u
#define NONE UINT32_MAX
#define ROOT_UNKNOWN UINT32_MAX        /* root_tree[]: not looked at yet */
#define ROOT_NOT_PID (UINT32_MAX - 1u) /* root_tree[]: the name is not a pid */

/* A distinct raw frame text and the frame id it was interned as. */
typedef struct name_slot {
    uint64_t hash;
    size_t off;     /* into the arena */
    uint32_t len;
    uint32_t frame; /* NONE: empty slot */
} name_slot;

typedef struct folded_reader {
    bs_profile *p;
    const char *file;
    bs_read_error *err;
    uint64_t line_no, line_off;
    /* raw frame text -> frame id */
    name_slot *names;
    uint32_t n_names, cap_names;
    char *arena;
    size_t arena_len, arena_cap;
    /* per frame id: tree index when the frame is a pid label */
    uint32_t *root_tree;
    uint32_t cap_root_tree;
    bs_tree_build *trees;
    uint32_t n_trees, cap_trees;
    uint32_t synthetic_tree;
    /* the previous line's stack, where its frames end, and their nodes */
    char *prev;
    size_t prev_len, prev_cap;
    uint32_t *prev_end, *prev_node;
    uint32_t prev_depth, prev_cap_depth, prev_tree;
    bs_stack_cache cache;
    uint64_t total;
    char name_buf[MAX_NAME_BYTES];
} folded_reader;

/* An error on the current line. */
static int fail(folded_reader *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bs_read_vfail(r->err, r->file, r->line_no, r->line_off, fmt, ap);
    va_end(ap);
    return -1;
}

static int fail_oom(folded_reader *r) { return fail(r, "out of memory"); }

static inline int is_blank(char c) { return c == ' ' || c == '\t'; }
static inline int is_digit(char c) { return c >= '0' && c <= '9'; }

/* s[0..len) is a pid, `<a.b.c>`, alone or followed by a space and a name. */
static int is_pid_text(const char *s, size_t len)
{
    size_t i = 0;
    if (len == 0 || s[i++] != '<')
        return 0;
    for (int part = 0; part < 3; part++) {
        size_t digits = i;
        while (i < len && is_digit(s[i]))
            i++;
        if (i == digits || i == len || s[i++] != (part < 2 ? '.' : '>'))
            return 0;
    }
    return i == len || (s[i] == ' ' && i + 1 < len);
}

/* End of the frame that starts at s[pos] (the next ';', or len) and a hash
 * of its bytes, found in one pass 8 bytes at a time (SWAR: a word holds a
 * ';' when some byte of word ^ ";;;;;;;;" is zero). Reads up to 7 bytes past
 * len: the line buffer is padded with zeros. */
static size_t scan_frame(const char *s, size_t pos, size_t len, uint64_t *hash)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && defined(__GNUC__)
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t h = 0x243F6A8885A308D3ull, w;
    for (size_t i = pos;; i += 8) {
        memcpy(&w, s + i, 8);
        uint64_t x = w ^ (ones * ';');
        uint64_t semi = (x - ones) & ~x & highs; /* lowest set bit: first ';' */
        size_t left = len - i;
        if (!semi && left > 8) {
            h = (h ^ w) * 0xFF51AFD7ED558CCDull;
            h ^= h >> 32;
            continue;
        }
        size_t k = semi ? (size_t)__builtin_ctzll(semi) / 8 : 8;
        if (k > left)
            k = left;
        if (k)
            h = (h ^ (k == 8 ? w : w & ((1ull << (8 * k)) - 1))) * 0xFF51AFD7ED558CCDull;
        h = (h ^ (i + k - pos)) * 0xC4CEB9FE1A85EC53ull;
        *hash = h ^ (h >> 29);
        return i + k;
    }
#else
    const char *semi = memchr(s + pos, ';', len - pos);
    size_t end = semi ? (size_t)(semi - s) : len;
    *hash = bs_fast_hash(s + pos, end - pos);
    return end;
#endif
}

/* ---- raw names ---------------------------------------------------------- */

static int grow_names(folded_reader *r)
{
    uint32_t cap = r->cap_names ? r->cap_names * 2 : 1024;
    if (cap < r->cap_names)
        return -1;
    name_slot *slots = malloc((size_t)cap * sizeof *slots);
    if (!slots)
        return -1;
    for (uint32_t i = 0; i < cap; i++)
        slots[i].frame = NONE;
    for (uint32_t i = 0; i < r->cap_names; i++) {
        if (r->names[i].frame == NONE)
            continue;
        uint32_t j = (uint32_t)r->names[i].hash & (cap - 1);
        while (slots[j].frame != NONE)
            j = (j + 1) & (cap - 1);
        slots[j] = r->names[i];
    }
    free(r->names);
    r->names = slots;
    r->cap_names = cap;
    return 0;
}

static int ensure_root_tree(folded_reader *r, uint32_t n)
{
    if (n <= r->cap_root_tree)
        return 0;
    uint32_t cap = r->cap_root_tree ? r->cap_root_tree : 1024;
    while (cap < n)
        cap *= 2;
    uint32_t *t = realloc(r->root_tree, (size_t)cap * sizeof *t);
    if (!t)
        return -1;
    for (uint32_t i = r->cap_root_tree; i < cap; i++)
        t[i] = ROOT_UNKNOWN;
    r->root_tree = t;
    r->cap_root_tree = cap;
    return 0;
}

/* Sanitises and interns a raw name seen for the first time, and keeps its
 * raw text in slot i. */
static uint32_t add_name(folded_reader *r, uint32_t i, const char *s, uint32_t len, uint64_t h)
{
    size_t safe_len = bs_sanitize_name(r->name_buf, sizeof r->name_buf, s, len);
    uint32_t frame = bs_frame_table_intern(&r->p->frames, r->name_buf, safe_len);
    if (frame == NONE || ensure_root_tree(r, r->p->frames.n) < 0)
        return NONE;
    if (r->arena_len + len > r->arena_cap) {
        size_t cap = r->arena_cap ? r->arena_cap : 1u << 16;
        while (cap < r->arena_len + len)
            cap *= 2;
        char *a = realloc(r->arena, cap);
        if (!a)
            return NONE;
        r->arena = a;
        r->arena_cap = cap;
    }
    memcpy(r->arena + r->arena_len, s, len);
    r->names[i] = (name_slot){h, r->arena_len, len, frame};
    r->arena_len += len;
    r->n_names++;
    return frame;
}

/* Frame id of the raw text s[0..len) (len > 0) whose scan_frame hash is h.
 * NONE: out of memory. */
static uint32_t frame_of(folded_reader *r, const char *s, size_t len, uint64_t h)
{
    if ((r->n_names + 1) * 2 > r->cap_names && grow_names(r) < 0)
        return NONE;
    uint32_t mask = r->cap_names - 1, i = (uint32_t)h & mask;
    for (;;) {
        const name_slot *e = &r->names[i];
        if (e->frame == NONE)
            return add_name(r, i, s, (uint32_t)len, h);
        if (e->hash == h && e->len == len && memcmp(r->arena + e->off, s, len) == 0)
            return e->frame;
        i = (i + 1) & mask;
    }
}

/* ---- trees -------------------------------------------------------------- */

static uint32_t new_tree(folded_reader *r, uint32_t root_frame, int synthetic)
{
    if (r->n_trees == r->cap_trees) {
        uint32_t cap = r->cap_trees ? r->cap_trees * 2 : 16;
        if (cap < r->cap_trees)
            return NONE;
        bs_tree_build *t = realloc(r->trees, (size_t)cap * sizeof *t);
        if (!t)
            return NONE;
        r->trees = t;
        r->cap_trees = cap;
    }
    if (bs_tree_build_init(&r->trees[r->n_trees], root_frame, synthetic) < 0)
        return NONE;
    return r->n_trees++;
}

/* The tree a stack whose first frame is `frame` belongs to; *is_pid says
 * whether that frame is the tree's root (else it is a child of the
 * synthetic root). */
static uint32_t tree_of_first_frame(folded_reader *r, uint32_t frame, int *is_pid)
{
    const char *name = bs_frame_name(&r->p->frames, frame);
    if (r->root_tree[frame] == ROOT_UNKNOWN && !is_pid_text(name, strlen(name)))
        r->root_tree[frame] = ROOT_NOT_PID;
    if (r->root_tree[frame] == ROOT_NOT_PID) {
        *is_pid = 0;
        if (r->synthetic_tree == NONE) {
            uint32_t all = bs_frame_table_intern(&r->p->frames, "all", 3);
            if (all == NONE || ensure_root_tree(r, r->p->frames.n) < 0)
                return NONE;
            r->synthetic_tree = new_tree(r, all, 1);
        }
        return r->synthetic_tree;
    }
    *is_pid = 1;
    if (r->root_tree[frame] == ROOT_UNKNOWN)
        r->root_tree[frame] = new_tree(r, frame, 0);
    return r->root_tree[frame];
}

/* ---- lines -------------------------------------------------------------- */

static size_t common_prefix(const char *a, const char *b, size_t n)
{
    size_t i = 0;
    uint64_t x, y;
    for (; i + 8 <= n; i += 8) {
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y)
            break;
    }
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

/* How many leading frames of s[0..len) are the previous line's frames. */
static uint32_t shared_frames(const folded_reader *r, const char *s, size_t len)
{
    size_t same = common_prefix(s, r->prev, len < r->prev_len ? len : r->prev_len);
    uint32_t k = 0;
    while (k < r->prev_depth && r->prev_end[k] < same)
        k++; /* the ';' ending frame k is inside the common prefix */
    if (k < r->prev_depth && r->prev_end[k] == same && (same == len || s[same] == ';'))
        k++; /* both end frame k right there */
    return k;
}

/* Records that frame `depth` of the current line ends at `end` in `node`. */
static int remember(folded_reader *r, uint32_t depth, size_t end, uint32_t node)
{
    if (depth == r->prev_cap_depth) {
        uint32_t cap = r->prev_cap_depth ? r->prev_cap_depth * 2 : 64;
        uint32_t *e = realloc(r->prev_end, (size_t)cap * sizeof *e);
        if (e)
            r->prev_end = e;
        uint32_t *n = realloc(r->prev_node, (size_t)cap * sizeof *n);
        if (n)
            r->prev_node = n;
        if (!e || !n)
            return -1;
        r->prev_cap_depth = cap;
    }
    r->prev_end[depth] = (uint32_t)end;
    r->prev_node[depth] = node;
    return 0;
}

/* Walks the frames of stack s[0..len) from the root, creating the nodes it
 * lacks; *tree_out and *node_out get where it ends. */
static int walk_stack(folded_reader *r, const char *s, size_t len, uint32_t *tree_out, uint32_t *node_out)
{
    uint32_t depth = shared_frames(r, s, len), tree = 0, node = 0;
    size_t pos = depth ? (size_t)r->prev_end[depth - 1] + 1 : 0;
    int fresh = 0, is_pid = 0;
    if (depth) {
        tree = r->prev_tree;
        node = r->prev_node[depth - 1];
        is_pid = !r->trees[tree].synthetic_root;
    }
    r->prev_depth = 0; /* until this line is fully recorded */
    while (pos <= len) {
        uint64_t h;
        size_t end = scan_frame(s, pos, len, &h);
        if (end == pos)
            return fail(r, "empty frame name at column %zu", pos + 1);
        uint32_t frame = frame_of(r, s + pos, end - pos, h);
        if (frame == NONE)
            return fail_oom(r);
        if (pos == 0) {
            tree = tree_of_first_frame(r, frame, &is_pid);
            if (tree == NONE)
                return fail_oom(r);
        } else if (is_pid && end - pos == 5 && memcmp(s + pos, "sleep", 5) == 0) {
            frame = r->p->sleep_frame; /* eflame's scheduled-out frame */
        }
        bs_tree_build *t = &r->trees[tree];
        if (pos == 0 && is_pid)
            node = 0;
        else
            node = fresh ? bs_tree_build_new_child(t, node, frame) : bs_tree_build_child(t, node, frame, &fresh);
        if (node == NONE || remember(r, depth, end, node) < 0)
            return fail_oom(r);
        depth++;
        pos = end + 1;
    }
    if (len > r->prev_cap) {
        size_t cap = r->prev_cap ? r->prev_cap : 4096;
        while (cap < len)
            cap *= 2;
        char *b = realloc(r->prev, cap);
        if (!b)
            return fail_oom(r);
        r->prev = b;
        r->prev_cap = cap;
    }
    memcpy(r->prev, s, len);
    r->prev_len = len;
    r->prev_depth = depth;
    r->prev_tree = tree;
    *tree_out = tree;
    *node_out = node;
    return 0;
}

/* Adds count to the node of stack s[0..len). */
static int add_stack(folded_reader *r, const char *s, size_t len, uint64_t count)
{
    uint64_t hash = 0;
    uint32_t tree, node;
    if (bs_stack_cache_get(&r->cache, s, len, &hash, &tree, &node)) {
        r->prev_depth = 0; /* its frame boundaries are not known */
    } else {
        if (walk_stack(r, s, len, &tree, &node) < 0)
            return -1;
        bs_stack_cache_put(&r->cache, s, len, hash, tree, node);
    }
    if (count > UINT64_MAX - r->total)
        return fail(r, "the counts add up to more than 2^64");
    r->total += count;
    r->trees[tree].nodes[node].self_ns += count;
    return 0;
}

/* Start of the number `1*DIGIT ["." *DIGIT]` that ends s[0..len), or
 * SIZE_MAX if there is none; *value gets its integer part (*too_big when it
 * does not fit 64 bits). */
static size_t number_before(const char *s, size_t len, uint64_t *value, int *too_big)
{
    size_t i = len, int_end = len;
    while (i > 0 && is_digit(s[i - 1]))
        i--;
    if (i > 0 && s[i - 1] == '.') {
        int_end = --i;
        while (i > 0 && is_digit(s[i - 1]))
            i--;
    }
    if (i == int_end)
        return SIZE_MAX;
    uint64_t v = 0;
    *too_big = 0;
    for (size_t k = i; k < int_end; k++) {
        unsigned d = (unsigned)(s[k] - '0');
        if (v > (UINT64_MAX - d) / 10) {
            *too_big = 1;
            break;
        }
        v = v * 10 + d;
    }
    *value = v;
    return i;
}

/* The end of the line, printable ASCII only, for a message. */
static void excerpt(const char *s, size_t len, char out[32])
{
    size_t n = len > 24 ? 24 : len;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[len - n + i];
        out[i] = c >= 0x20 && c < 0x7F ? (char)c : '?';
    }
    out[n] = '\0';
}

static int read_line(folded_reader *r, const char *s, size_t len)
{
    while (len > 0 && (is_blank(s[len - 1]) || s[len - 1] == '\r'))
        len--;
    if (len == 0)
        return 0;
    const char *nul = memchr(s, '\0', len);
    if (nul)
        return fail(r, "a NUL byte at column %zu: folded stacks are text", (size_t)(nul - s) + 1);
    uint64_t count, first;
    int too_big, ignored;
    size_t at = number_before(s, len, &count, &too_big);
    if (at == SIZE_MAX || at == 0 || !is_blank(s[at - 1])) {
        /* eflame's stacks.out: one line per 1 ms sample, pid first, no count */
        const char *semi = memchr(s, ';', len);
        if (is_pid_text(s, semi ? (size_t)(semi - s) : len))
            return add_stack(r, s, len, 1);
        char tail[32];
        excerpt(s, len, tail);
        return fail(r, "expected 'frame;frame;... count', the line ends in '%s'", tail);
    }
    if (too_big)
        return fail(r, "count does not fit in 64 bits");
    size_t end = at;
    while (end > 0 && is_blank(s[end - 1]))
        end--;
    if (end == 0)
        return fail(r, "no stack before the count");
    /* flamegraph.pl's differential input "stack c1 c2": keep c2 */
    size_t c1 = number_before(s, end, &first, &ignored);
    if (c1 != SIZE_MAX && c1 > 0 && is_blank(s[c1 - 1])) {
        size_t e = c1;
        while (e > 0 && is_blank(s[e - 1]))
            e--;
        if (e > 0)
            end = e;
    }
    return add_stack(r, s, end, count);
}

/* ---- the read loop and the profile it builds ---------------------------- */

static int read_all(folded_reader *r, bs_read_source *src)
{
    size_t cap = FIRST_BLOCK_BYTES, len = 0;
    uint64_t base = 0; /* input offset of buf[0] */
    char *buf = malloc(cap + PAD_BYTES);
    if (!buf)
        return fail_oom(r);
    int rc = 0, eof = 0, first = 1;
    while (rc == 0) {
        size_t want = cap - len, got = bs_source_read(src, buf + len, want);
        len += got;
        memset(buf + len, 0, PAD_BYTES); /* scan_frame may look past the end */
        if (got < want) {
            if (ferror(src->fp)) {
                rc = bs_read_fail(r->err, r->file, 0, base + len, "read error");
                break;
            }
            eof = 1;
        }
        size_t pos = 0;
        if (first && len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
            pos = 3;
        first = 0;
        for (;;) {
            char *nl = memchr(buf + pos, '\n', len - pos);
            if (!nl && !(eof && pos < len))
                break;
            size_t line_len = nl ? (size_t)(nl - buf) - pos : len - pos;
            r->line_no++;
            r->line_off = base + pos;
            if ((rc = read_line(r, buf + pos, line_len)) < 0)
                break;
            pos += line_len + 1;
            if (!nl)
                pos = len;
        }
        if (rc < 0 || eof)
            break;
        memmove(buf, buf + pos, len - pos);
        base += pos;
        len -= pos;
        int one_line_fills_it = len == cap;
        if (one_line_fills_it && cap >= MAX_LINE_BYTES) {
            r->line_no++;
            r->line_off = base;
            rc = bs_read_fail(r->err, r->file, r->line_no, base, "line longer than %u MiB", MAX_LINE_BYTES >> 20);
            break;
        }
        if (one_line_fills_it || cap < BLOCK_BYTES) { /* or more input is coming */
            char *b = realloc(buf, cap * 2 + PAD_BYTES);
            if (!b) {
                rc = fail_oom(r);
                break;
            }
            buf = b;
            cap *= 2;
        }
    }
    free(buf);
    return rc;
}

/* Moves the built trees into the profile, in order of first appearance. */
static int build_profile(folded_reader *r)
{
    bs_profile *p = r->p;
    if (r->n_trees == 0)
        return 0;
    p->trees = calloc(r->n_trees, sizeof *p->trees);
    if (!p->trees)
        return fail_oom(r);
    p->cap_trees = r->n_trees;
    for (uint32_t i = 0; i < r->n_trees; i++)
        bs_tree_build_finish(&r->trees[i], &p->trees[p->n_trees++]);
    bs_profile_compute_totals(p);
    return 0;
}

static void free_reader(folded_reader *r)
{
    for (uint32_t i = 0; i < r->n_trees; i++)
        bs_tree_build_free(&r->trees[i]);
    free(r->trees);
    free(r->names);
    free(r->arena);
    free(r->root_tree);
    free(r->prev);
    free(r->prev_end);
    free(r->prev_node);
    bs_stack_cache_free(&r->cache);
}

int bs_read_folded_source(bs_read_source *src, const char *name, bs_profile *out, bs_read_error *err)
{
    folded_reader *r = calloc(1, sizeof *r);
    if (!r || bs_profile_init(out) < 0) {
        free(r);
        bs_profile_free(out);
        return bs_read_fail(err, name, 0, 0, "out of memory");
    }
    r->p = out;
    r->file = name;
    r->err = err;
    r->synthetic_tree = NONE;
    bs_stack_cache_init(&r->cache);
    out->unit = BS_UNIT_COUNT;
    snprintf(out->meta.source, sizeof out->meta.source, "%s", name ? name : "-");
    int rc = ensure_root_tree(r, out->frames.n) < 0 ? fail_oom(r) : read_all(r, src);
    if (rc == 0)
        rc = build_profile(r);
    free_reader(r);
    free(r);
    if (rc < 0)
        bs_profile_free(out);
    return rc;
}

int bs_read_folded(FILE *in, const char *name, bs_profile *out, bs_read_error *err)
{
    bs_read_source src = {.fp = in};
    return bs_read_folded_source(&src, name, out, err);
}
