/* eterm.c — decodes one term of Erlang's external term format with libei
 * into a read-only tree held by one arena, and prints trees in Erlang
 * syntax. eterm.h has the caps, what each kind keeps, and why the decoder
 * checks every byte a libei call will read before making the call. */
#include "eterm.h"
#include "../engine/frame_name.h"

#include <ei.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct bs_eterm {
    unsigned char kind;     /* bs_eterm_kind */
    unsigned char other;    /* bs_eterm_other (OTHER only) */
    unsigned char improper; /* LIST: items[n] is the tail */
    unsigned char negative; /* OTHER big: the sign */
    uint32_t n;             /* text bytes; TUPLE/LIST elements; MAP 2 * pairs; big: digit bytes */
    union {
        long long i;  /* INT; OTHER bit string: its length in bits */
        double f;     /* FLOAT */
        char *text;   /* ATOM, BINARY, STRING: n bytes and a NUL; big: little-endian digits */
        bs_eterm *items;
        bs_eterm_pid *pid;
    } u;
};
_Static_assert(sizeof(struct bs_eterm) == 16, "eterm.h's memory figures assume 16-byte terms");

/* ------------------------------- arena -------------------------------- */

typedef struct arena_chunk {
    struct arena_chunk *next;
    size_t size; /* bytes in data */
    size_t used;
    max_align_t data[];
} arena_chunk;

struct bs_eterm_tree {
    bs_eterm root;
    arena_chunk *chunks;  /* the chunk small requests come from first */
    size_t memory;        /* bytes from malloc: this struct and all chunks */
    size_t cap;           /* memory never goes above it */
    size_t next_chunk;    /* data size of the next shared chunk */
    int malloc_failed;
};

#define CHUNK_FIRST 4096
#define CHUNK_LARGEST (1024 * 1024)

/* size bytes aligned to align (a power of two), or NULL when the cap would
 * be passed or malloc fails (then t->malloc_failed is set). Shared chunks
 * double from 4 KiB to 1 MiB; a request above a sixteenth of the next one
 * gets a chunk of its own, so at most an eighth of a shared chunk is ever
 * left unused. */
static void *arena_alloc(bs_eterm_tree *t, size_t size, size_t align)
{
    arena_chunk *c = t->chunks;
    if (c) {
        size_t off = (c->used + align - 1) & ~(align - 1);
        if (off <= c->size && size <= c->size - off) {
            c->used = off + size;
            return (unsigned char *)c->data + off;
        }
    }
    int own = size > t->next_chunk / 16;
    size_t data = own ? size : t->next_chunk;
    size_t room = t->cap - t->memory;
    if (room < sizeof(arena_chunk) || size > room - sizeof(arena_chunk))
        return NULL;
    room -= sizeof(arena_chunk);
    if (data > room)
        data = room; /* the last chunk the cap allows */
    arena_chunk *nc = malloc(sizeof *nc + data);
    if (!nc) {
        t->malloc_failed = 1;
        return NULL;
    }
    nc->size = data;
    nc->used = size;
    t->memory += sizeof *nc + data;
    if (own && c) { /* keep the current shared chunk in front */
        nc->next = c->next;
        c->next = nc;
    } else {
        nc->next = c;
        t->chunks = nc;
        if (!own && t->next_chunk < CHUNK_LARGEST)
            t->next_chunk *= 2;
    }
    return nc->data;
}

void bs_eterm_free(bs_eterm_tree *t)
{
    if (!t)
        return;
    arena_chunk *c = t->chunks;
    while (c) {
        arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    free(t);
}

const bs_eterm *bs_eterm_root(const bs_eterm_tree *t)
{
    return t ? &t->root : NULL;
}

size_t bs_eterm_tree_memory(const bs_eterm_tree *t)
{
    return t ? t->memory : 0;
}

/* ------------------------------ decoding ------------------------------ */

typedef struct decoder {
    const char *buf;
    int len;
    int pos;          /* where the next term starts */
    uint64_t owed;    /* terms promised by open headers and not started yet */
    uint64_t nodes;   /* terms stored in the tree */
    bs_eterm_tree *tree;
    char *err;
    size_t err_size;
    /* scratch for libei (one call at a time; never held across recursion) */
    char atom[MAXATOMLEN_UTF8];
    erlang_pid pid;
    erlang_port port;
    erlang_ref ref;
} decoder;

static int fail(decoder *d, int at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Records the error (the first one only: callers return at once) and gives -1. */
static int fail(decoder *d, int at, const char *fmt, ...)
{
    if (d->err && d->err_size) {
        int n = snprintf(d->err, d->err_size, "offset %d: ", at);
        if (n >= 0 && (size_t)n < d->err_size) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(d->err + n, d->err_size - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

/* 0 if the given number of bytes (maybe huge) from offset at lie inside the
 * input. */
static int need(decoder *d, int at, int64_t bytes, const char *what)
{
    if (bytes <= (int64_t)d->len - at)
        return 0;
    return fail(d, at, "%s needs %" PRId64 " bytes, only %d left", what, bytes, d->len - at);
}

/* The length ei_get_type reports for the term at offset at (its header must
 * have been checked with need). Negative for 32-bit fields above 2^31. */
static int64_t reported_size(const decoder *d, int at)
{
    int type = 0, size = 0;
    ei_get_type(d->buf, &at, &type, &size);
    return size;
}

/* Big-endian fields ei_get_type does not report (bounds checked first). */
static uint32_t be16_at(const decoder *d, int at)
{
    const unsigned char *p = (const unsigned char *)d->buf + at;
    return (uint32_t)p[0] << 8 | p[1];
}

static uint32_t be32_at(const decoder *d, int at)
{
    const unsigned char *p = (const unsigned char *)d->buf + at;
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* After a libei call that started at offset at: it must have succeeded and
 * ended exactly where the checked extent ends. */
static int ei_result(decoder *d, int rc, int at, int ended, int64_t end, const char *what)
{
    if (rc < 0 || ended != end)
        return fail(d, at, "libei could not decode %s", what);
    d->pos = ended;
    return 0;
}

/* The next n terms (after the current header, which ends at d->pos) must
 * each have at least one byte, as must every term still owed by enclosing
 * headers; this bounds every allocation by the input size. */
static int claim(decoder *d, int at, uint64_t n, const char *what)
{
    uint64_t left = (uint64_t)(d->len - d->pos);
    if (n > left || d->owed > left - n)
        return fail(d, at, "%s of %" PRIu64 " elements does not fit in the %" PRIu64 " bytes left", what, n, left);
    d->owed += n;
    return 0;
}

static void *tree_alloc(decoder *d, int at, size_t size, size_t align)
{
    void *p = arena_alloc(d->tree, size, align);
    if (!p) {
        if (d->tree->malloc_failed)
            fail(d, at, "out of memory");
        else
            fail(d, at, "the term needs more than %zu bytes of memory", d->tree->cap);
    }
    return p;
}

/* A copy of n bytes followed by a NUL. */
static char *tree_text(decoder *d, int at, const char *bytes, size_t n)
{
    char *p = tree_alloc(d, at, n + 1, 1);
    if (p) {
        if (n)
            memcpy(p, bytes, n);
        p[n] = '\0';
    }
    return p;
}

/* Slots for n terms (n > 0), counted against BS_ETERM_MAX_NODES. */
static bs_eterm *tree_items(decoder *d, int at, uint64_t n)
{
    if (n > BS_ETERM_MAX_NODES - d->nodes) {
        fail(d, at, "the term has more than %u subterms", BS_ETERM_MAX_NODES);
        return NULL;
    }
    d->nodes += n;
    bs_eterm *items = tree_alloc(d, at, (size_t)n * sizeof(bs_eterm), _Alignof(bs_eterm));
    if (items)
        memset(items, 0, (size_t)n * sizeof(bs_eterm));
    return items;
}

static int decode_term(decoder *d, bs_eterm *out, unsigned depth, int store);

/* The next n terms into items (or, without store, each checked and dropped). */
static int decode_terms(decoder *d, bs_eterm *items, uint64_t n, unsigned depth, int store)
{
    for (uint64_t i = 0; i < n; i++) {
        bs_eterm scratch;
        d->owed--;
        if (decode_term(d, items ? &items[i] : &scratch, depth, store) < 0)
            return -1;
    }
    return 0;
}

/* Where the atom at offset at ends (header and name inside the input). */
static int atom_extent(decoder *d, int at, const char *what, int *end)
{
    if (at >= d->len)
        return fail(d, at, "the input ends where %s should start", what);
    int tag = (unsigned char)d->buf[at];
    int header = (tag == ERL_ATOM_EXT || tag == ERL_ATOM_UTF8_EXT)               ? 3
                 : (tag == ERL_SMALL_ATOM_EXT || tag == ERL_SMALL_ATOM_UTF8_EXT) ? 2
                                                                                   : 0;
    if (!header)
        return fail(d, at, "%s is not an atom (tag %d)", what, tag);
    if (need(d, at, header, what) < 0)
        return -1;
    int64_t n = reported_size(d, at);
    if (need(d, at, header + n, what) < 0)
        return -1;
    *end = at + header + (int)n;
    return 0;
}

static int decode_atom(decoder *d, bs_eterm *out, int store)
{
    const int at = d->pos;
    int end;
    if (atom_extent(d, at, "an atom", &end) < 0)
        return -1;
    int tag = (unsigned char)d->buf[at];
    int header = (tag == ERL_ATOM_EXT || tag == ERL_ATOM_UTF8_EXT) ? 3 : 2;
    int p = at;
    if (ei_decode_atom_as(d->buf, &p, d->atom, sizeof d->atom, ERLANG_UTF8, NULL, NULL) < 0 || p != end)
        return fail(d, at, "atom of %d bytes is too long (at most 1020 bytes of UTF-8)", end - at - header);
    /* libei turns Latin-1 into UTF-8: each byte above 127 becomes two */
    size_t n = (size_t)(end - at - header);
    if (tag == ERL_ATOM_EXT || tag == ERL_SMALL_ATOM_EXT)
        for (int i = at + header; i < end; i++)
            n += (unsigned char)d->buf[i] >= 0x80;
    if (n >= sizeof d->atom || d->atom[n] != '\0')
        return fail(d, at, "libei could not decode an atom");
    out->kind = BS_ET_ATOM;
    out->n = (uint32_t)n;
    if (store && !(out->u.text = tree_text(d, at, d->atom, n)))
        return -1;
    d->pos = end;
    return 0;
}

static int decode_integer(decoder *d, bs_eterm *out, int tag)
{
    const int at = d->pos;
    int64_t end = (int64_t)at + (tag == ERL_SMALL_INTEGER_EXT ? 2 : 5);
    if (need(d, at, end - at, "an integer") < 0)
        return -1;
    long long v = 0;
    int p = at;
    int rc = ei_decode_longlong(d->buf, &p, &v);
    if (ei_result(d, rc, at, p, end, "an integer") < 0)
        return -1;
    out->kind = BS_ET_INT;
    out->u.i = v;
    return 0;
}

/* A bignum: INT when it fits in a long long, else OTHER (big) with its
 * sign and digits read from the input. */
static int decode_big(decoder *d, bs_eterm *out, int tag, int store)
{
    const int at = d->pos;
    int header = tag == ERL_SMALL_BIG_EXT ? 3 : 6; /* tag, digit count, sign */
    if (need(d, at, header, "a bignum") < 0)
        return -1;
    int64_t digits = reported_size(d, at);
    if (digits < 0)
        return fail(d, at, "bignum of more than 2^31 bytes");
    if (need(d, at, header + digits, "a bignum") < 0)
        return -1;
    int64_t end = (int64_t)at + header + digits;
    long long v = 0;
    int p = at;
    if (ei_decode_longlong(d->buf, &p, &v) == 0) {
        if (ei_result(d, 0, at, p, end, "a bignum") < 0)
            return -1;
        out->kind = BS_ET_INT;
        out->u.i = v;
        return 0;
    }
    out->kind = BS_ET_OTHER;
    out->other = BS_ET_OTHER_BIG;
    out->negative = d->buf[at + header - 1] != 0;
    out->n = (uint32_t)digits;
    if (store && !(out->u.text = tree_text(d, at, d->buf + at + header, (size_t)digits)))
        return -1;
    d->pos = (int)end;
    return 0;
}

static int decode_float(decoder *d, bs_eterm *out, int tag)
{
    const int at = d->pos;
    double f = 0;
    int p;
    if (tag == ERL_FLOAT_EXT) {
        /* 31 bytes of text that libei hands to sscanf: give it a NUL-ended copy */
        char text[33];
        if (need(d, at, 32, "a float") < 0)
            return -1;
        memcpy(text, d->buf + at, 32);
        text[32] = '\0';
        p = 0;
        if (ei_decode_double(text, &p, &f) < 0 || p != 32)
            return fail(d, at, "float text is not a number");
        d->pos = at + 32;
    } else {
        if (need(d, at, 9, "a float") < 0)
            return -1;
        p = at;
        int rc = ei_decode_double(d->buf, &p, &f);
        if (ei_result(d, rc, at, p, (int64_t)at + 9, "a float") < 0)
            return -1;
    }
    out->kind = BS_ET_FLOAT;
    out->u.f = f;
    return 0;
}

/* STRING_EXT (kind STRING) and BINARY_EXT (kind BINARY). */
static int decode_bytes(decoder *d, bs_eterm *out, int tag, int store)
{
    const int at = d->pos;
    int binary = tag == ERL_BINARY_EXT;
    int header = binary ? 5 : 3;
    const char *what = binary ? "a binary" : "a string";
    if (need(d, at, header, what) < 0)
        return -1;
    int64_t n = reported_size(d, at);
    if (n < 0)
        return fail(d, at, "binary of more than 2^31 bytes");
    if (need(d, at, header + n, what) < 0)
        return -1;
    char *text = NULL;
    if (store && !(text = tree_alloc(d, at, (size_t)n + 1, 1)))
        return -1;
    int p = at, rc;
    if (binary) {
        long got = -1;
        rc = ei_decode_binary(d->buf, &p, text, &got);
        if (rc == 0 && got != n)
            rc = -1;
    } else {
        rc = ei_decode_string(d->buf, &p, text);
    }
    if (ei_result(d, rc, at, p, at + header + n, what) < 0)
        return -1;
    if (text)
        text[n] = '\0';
    if (!binary && n == 0) { /* "" is [] */
        out->kind = BS_ET_LIST;
        return 0;
    }
    out->kind = binary ? BS_ET_BINARY : BS_ET_STRING;
    out->n = (uint32_t)n;
    out->u.text = text;
    return 0;
}

static int decode_bitstring(decoder *d, bs_eterm *out)
{
    const int at = d->pos;
    if (need(d, at, 6, "a bit string") < 0) /* tag, length, bits in the last byte */
        return -1;
    int64_t n = reported_size(d, at);
    if (n < 0)
        return fail(d, at, "bit string of more than 2^31 bytes");
    if (need(d, at, 6 + n, "a bit string") < 0)
        return -1;
    size_t bits = 0;
    int p = at;
    if (ei_decode_bitstring(d->buf, &p, NULL, NULL, &bits) < 0)
        return fail(d, at, "bit string with a bad last-byte bit count");
    if (ei_result(d, 0, at, p, at + 6 + n, "a bit string") < 0)
        return -1;
    out->kind = BS_ET_OTHER;
    out->other = BS_ET_OTHER_BITSTRING;
    out->u.i = (long long)bits;
    return 0;
}

/* Tuples, lists and maps: the header through libei, then the elements. */
static int decode_container(decoder *d, bs_eterm *out, int tag, unsigned depth, int store)
{
    const int at = d->pos;
    int header, kind, rc, n = 0, p = at;
    const char *what;
    switch (tag) {
    case ERL_SMALL_TUPLE_EXT:
    case ERL_LARGE_TUPLE_EXT:
        header = tag == ERL_SMALL_TUPLE_EXT ? 2 : 5, kind = BS_ET_TUPLE, what = "a tuple";
        if (need(d, at, header, what) < 0)
            return -1;
        rc = ei_decode_tuple_header(d->buf, &p, &n);
        break;
    case ERL_MAP_EXT:
        header = 5, kind = BS_ET_MAP, what = "a map";
        if (need(d, at, header, what) < 0)
            return -1;
        rc = ei_decode_map_header(d->buf, &p, &n);
        break;
    default: /* ERL_NIL_EXT, ERL_LIST_EXT */
        header = tag == ERL_NIL_EXT ? 1 : 5, kind = BS_ET_LIST, what = "a list";
        if (need(d, at, header, what) < 0)
            return -1;
        rc = ei_decode_list_header(d->buf, &p, &n);
        break;
    }
    if (ei_result(d, rc, at, p, (int64_t)at + header, what) < 0)
        return -1;
    if (n < 0)
        return fail(d, at, "%s of more than 2^31 elements", what);
    if (tag == ERL_LIST_EXT && n == 0)
        return fail(d, at, "a list of 0 elements before its tail");
    uint64_t count = (uint64_t)n * (kind == BS_ET_MAP ? 2 : 1);
    uint64_t slots = count + (tag == ERL_LIST_EXT); /* a list's tail is a term too */
    if (claim(d, at, slots, what) < 0)
        return -1;
    bs_eterm *items = NULL;
    if (store && slots && !(items = tree_items(d, at, slots)))
        return -1;
    out->kind = (unsigned char)kind;
    out->n = (uint32_t)count;
    out->u.items = items;
    if (decode_terms(d, items, count, depth + 1, store) < 0)
        return -1;
    if (tag == ERL_LIST_EXT) {
        bs_eterm tail;
        bs_eterm *t = items ? &items[count] : &tail;
        d->owed--;
        if (decode_term(d, t, depth + 1, store) < 0)
            return -1;
        out->improper = !(t->kind == BS_ET_LIST && t->n == 0 && !t->improper);
    }
    return 0;
}

/* Pids, ports and references: a node atom and fixed fields, decoded by
 * libei once their extent is known to be inside the input. */
static int decode_node_term(decoder *d, bs_eterm *out, int tag, int store)
{
    const int at = d->pos;
    int atom_at = at + 1, fixed, atom_end, rc, p = at;
    uint32_t ids = 0;
    const char *what;
    switch (tag) {
    case ERL_PID_EXT: fixed = 9, what = "a pid"; break;        /* number 4, serial 4, creation 1 */
    case ERL_NEW_PID_EXT: fixed = 12, what = "a pid"; break;   /* ... creation 4 */
    case ERL_PORT_EXT: fixed = 5, what = "a port"; break;      /* id 4, creation 1 */
    case ERL_NEW_PORT_EXT: fixed = 8, what = "a port"; break;  /* id 4, creation 4 */
    case ERL_V4_PORT_EXT: fixed = 12, what = "a port"; break;  /* id 8, creation 4 */
    case ERL_REFERENCE_EXT: fixed = 5, what = "a reference"; break; /* id 4, creation 1 */
    default: /* NEW_REFERENCE_EXT, NEWER_REFERENCE_EXT: id count first */
        what = "a reference";
        if (need(d, at, 3, what) < 0)
            return -1;
        ids = be16_at(d, at + 1);
        if (ids > 5)
            return fail(d, at, "reference of %u ids (at most 5)", ids);
        atom_at = at + 3;
        fixed = (tag == ERL_NEW_REFERENCE_EXT ? 1 : 4) + 4 * (int)ids;
        break;
    }
    if (atom_extent(d, atom_at, "the node name", &atom_end) < 0)
        return -1;
    if (need(d, at, (int64_t)atom_end - at + fixed, what) < 0)
        return -1;
    int64_t end = (int64_t)atom_end + fixed;
    out->kind = BS_ET_OTHER;
    if (tag == ERL_PID_EXT || tag == ERL_NEW_PID_EXT) {
        rc = ei_decode_pid(d->buf, &p, &d->pid);
        if (ei_result(d, rc, at, p, end, what) < 0)
            return -1;
        out->kind = BS_ET_PID;
        if (store) {
            bs_eterm_pid *pid = tree_alloc(d, at, sizeof *pid, _Alignof(bs_eterm_pid));
            if (!pid)
                return -1;
            d->pid.node[sizeof d->pid.node - 1] = '\0';
            if (!(pid->node = tree_text(d, at, d->pid.node, strlen(d->pid.node))))
                return -1;
            pid->number = d->pid.num;
            pid->serial = d->pid.serial;
            pid->creation = d->pid.creation;
            out->u.pid = pid;
        }
    } else if (tag == ERL_PORT_EXT || tag == ERL_NEW_PORT_EXT || tag == ERL_V4_PORT_EXT) {
        rc = ei_decode_port(d->buf, &p, &d->port);
        if (ei_result(d, rc, at, p, end, what) < 0)
            return -1;
        out->other = BS_ET_OTHER_PORT;
    } else {
        rc = ei_decode_ref(d->buf, &p, &d->ref);
        if (ei_result(d, rc, at, p, end, what) < 0)
            return -1;
        out->other = BS_ET_OTHER_REF;
    }
    return 0;
}

/* One part of a fun, checked through the general decoder (nothing stored)
 * and required to be of the given kind. */
static int fun_part(decoder *d, unsigned depth, bs_eterm_kind kind, const char *what)
{
    bs_eterm part;
    int at = d->pos;
    d->owed--;
    if (decode_term(d, &part, depth, 0) < 0)
        return -1;
    if (part.kind != kind)
        return fail(d, at, "a fun's %s is not %s", what,
                    kind == BS_ET_ATOM ? "an atom" : kind == BS_ET_INT ? "an integer" : "a pid");
    return 0;
}

/* NEW_FUN_EXT (closures) and EXPORT_EXT (fun M:F/A): every part checked,
 * nothing kept. libei's ei_decode_fun is not used: it trusts the fun's
 * size and free-variable count. */
static int decode_fun(decoder *d, bs_eterm *out, int tag, unsigned depth)
{
    const int at = d->pos;
    if (tag == ERL_EXPORT_EXT) {
        d->pos = at + 1;
        if (claim(d, at, 3, "an external fun") < 0 || fun_part(d, depth + 1, BS_ET_ATOM, "module") < 0 ||
            fun_part(d, depth + 1, BS_ET_ATOM, "function") < 0 || fun_part(d, depth + 1, BS_ET_INT, "arity") < 0)
            return -1;
    } else {
        /* tag, size 4, arity 1, uniq 16, index 4, free-variable count 4 */
        if (need(d, at, 30, "a fun") < 0)
            return -1;
        uint32_t size = be32_at(d, at + 1), free_vars = be32_at(d, at + 26);
        int64_t end = (int64_t)at + 1 + size;
        if (size < 29)
            return fail(d, at, "fun of size %u is smaller than its fixed fields", size);
        if (need(d, at, end - at, "a fun") < 0)
            return -1;
        d->pos = at + 30;
        if (claim(d, at, 4 + (uint64_t)free_vars, "a fun") < 0 ||
            fun_part(d, depth + 1, BS_ET_ATOM, "module") < 0 ||
            fun_part(d, depth + 1, BS_ET_INT, "old index") < 0 ||
            fun_part(d, depth + 1, BS_ET_INT, "old uniq") < 0 || fun_part(d, depth + 1, BS_ET_PID, "pid") < 0 ||
            decode_terms(d, NULL, free_vars, depth + 1, 0) < 0)
            return -1;
        if (d->pos != end)
            return fail(d, at, "fun's size says it ends at offset %" PRId64 ", its contents end at %d", end,
                        d->pos);
    }
    out->kind = BS_ET_OTHER;
    out->other = BS_ET_OTHER_FUN;
    return 0;
}

/* The term at d->pos into *out (all of it when store; otherwise only its
 * kind and scalar value, nothing allocated), at the given nesting depth. */
static int decode_term(decoder *d, bs_eterm *out, unsigned depth, int store)
{
    const int at = d->pos;
    memset(out, 0, sizeof *out);
    if (depth > BS_ETERM_MAX_DEPTH)
        return fail(d, at, "terms nested more than %d deep", BS_ETERM_MAX_DEPTH);
    if (at >= d->len)
        return fail(d, at, "the input ends where a term should start");
    int tag = (unsigned char)d->buf[at];
    switch (tag) {
    case ERL_SMALL_INTEGER_EXT:
    case ERL_INTEGER_EXT:
        return decode_integer(d, out, tag);
    case ERL_SMALL_BIG_EXT:
    case ERL_LARGE_BIG_EXT:
        return decode_big(d, out, tag, store);
    case ERL_FLOAT_EXT:
    case NEW_FLOAT_EXT:
        return decode_float(d, out, tag);
    case ERL_ATOM_EXT:
    case ERL_SMALL_ATOM_EXT:
    case ERL_ATOM_UTF8_EXT:
    case ERL_SMALL_ATOM_UTF8_EXT:
        return decode_atom(d, out, store);
    case ERL_STRING_EXT:
    case ERL_BINARY_EXT:
        return decode_bytes(d, out, tag, store);
    case ERL_BIT_BINARY_EXT:
        return decode_bitstring(d, out);
    case ERL_SMALL_TUPLE_EXT:
    case ERL_LARGE_TUPLE_EXT:
    case ERL_NIL_EXT:
    case ERL_LIST_EXT:
    case ERL_MAP_EXT:
        return decode_container(d, out, tag, depth, store);
    case ERL_PID_EXT:
    case ERL_NEW_PID_EXT:
    case ERL_PORT_EXT:
    case ERL_NEW_PORT_EXT:
    case ERL_V4_PORT_EXT:
    case ERL_REFERENCE_EXT:
    case ERL_NEW_REFERENCE_EXT:
    case ERL_NEWER_REFERENCE_EXT:
        return decode_node_term(d, out, tag, store);
    case ERL_NEW_FUN_EXT:
    case ERL_EXPORT_EXT:
        return decode_fun(d, out, tag, depth);
    case ERL_FUN_EXT:
        return fail(d, at, "old-style fun (FUN_EXT) is not supported");
    case BS_ETERM_VERSION_MAGIC:
        return fail(d, at, "version byte 131 where a term should start");
    case 'P':
        return fail(d, at, "compressed term is not supported");
    case 'R':
        return fail(d, at, "atom cache reference outside a distribution message");
    default:
        if (tag >= 0x21 && tag < 0x7F)
            return fail(d, at, "unknown term tag %d ('%c')", tag, tag);
        return fail(d, at, "unknown term tag %d", tag);
    }
}

static void set_error(char *err, size_t err_size, const char *msg)
{
    if (err && err_size)
        snprintf(err, err_size, "%s", msg);
}

static int decode_top(const char *buf, int len, int *index, bs_eterm_tree **out, char *err, size_t err_size,
                      int versioned)
{
    if (err && err_size)
        err[0] = '\0';
    if (out)
        *out = NULL;
    if (!out || !index || len < 0 || (len > 0 && !buf) || *index < 0 || *index > len) {
        set_error(err, err_size, "offset 0: invalid arguments (buffer, length or index)");
        return -1;
    }
    decoder *d = calloc(1, sizeof *d); /* 4 KiB of libei scratch: not on the stack */
    bs_eterm_tree *t = calloc(1, sizeof *t);
    if (!d || !t) {
        free(d);
        free(t);
        set_error(err, err_size, "offset 0: out of memory");
        return -1;
    }
    size_t avail = (size_t)(len - *index);
    t->memory = sizeof *t;
    t->cap = avail > (SIZE_MAX - BS_ETERM_MEMORY_SLACK) / BS_ETERM_MEMORY_PER_BYTE
                 ? SIZE_MAX
                 : avail * BS_ETERM_MEMORY_PER_BYTE + BS_ETERM_MEMORY_SLACK;
    t->next_chunk = CHUNK_FIRST;
    d->buf = buf;
    d->len = len;
    d->pos = *index;
    d->nodes = 1; /* the root */
    d->tree = t;
    d->err = err;
    d->err_size = err_size;
    int rc = 0;
    if (versioned) {
        int p = d->pos, version = 0;
        if (d->pos >= len)
            rc = fail(d, d->pos, "the input ends where the version byte should be");
        else if (ei_decode_version(buf, &p, &version) < 0 || version != BS_ETERM_VERSION_MAGIC || p != d->pos + 1)
            rc = fail(d, d->pos, "expected the version byte 131, found %d", (unsigned char)buf[d->pos]);
        else
            d->pos = p;
    }
    if (rc == 0)
        rc = decode_term(d, &t->root, 0, 1);
    if (rc == 0) {
        *index = d->pos;
        *out = t;
    } else {
        bs_eterm_free(t);
    }
    free(d);
    return rc;
}

int bs_eterm_decode(const char *buf, int len, int *index, bs_eterm_tree **out, char *err, size_t err_size)
{
    return decode_top(buf, len, index, out, err, err_size, 0);
}

int bs_eterm_decode_versioned(const char *buf, int len, int *index, bs_eterm_tree **out, char *err,
                              size_t err_size)
{
    return decode_top(buf, len, index, out, err, err_size, 1);
}

/* ------------------------------ accessors ----------------------------- */

bs_eterm_kind bs_eterm_kind_of(const bs_eterm *t)
{
    return t ? (bs_eterm_kind)t->kind : BS_ET_OTHER;
}

const char *bs_eterm_kind_name(bs_eterm_kind k)
{
    switch (k) {
    case BS_ET_INT: return "integer";
    case BS_ET_FLOAT: return "float";
    case BS_ET_ATOM: return "atom";
    case BS_ET_BINARY: return "binary";
    case BS_ET_STRING: return "string";
    case BS_ET_TUPLE: return "tuple";
    case BS_ET_LIST: return "list";
    case BS_ET_MAP: return "map";
    case BS_ET_PID: return "pid";
    case BS_ET_OTHER: break;
    }
    return "other";
}

bs_eterm_other bs_eterm_other_kind(const bs_eterm *t)
{
    return t && t->kind == BS_ET_OTHER ? (bs_eterm_other)t->other : BS_ET_OTHER_NONE;
}

long long bs_eterm_int(const bs_eterm *t, int *ok)
{
    int is_int = t && t->kind == BS_ET_INT;
    if (ok)
        *ok = is_int;
    return is_int ? t->u.i : 0;
}

double bs_eterm_float(const bs_eterm *t, int *ok)
{
    int is_float = t && t->kind == BS_ET_FLOAT;
    if (ok)
        *ok = is_float;
    return is_float ? t->u.f : 0.0;
}

static int has_text(const bs_eterm *t)
{
    return t && (t->kind == BS_ET_ATOM || t->kind == BS_ET_BINARY || t->kind == BS_ET_STRING);
}

const char *bs_eterm_text(const bs_eterm *t)
{
    return has_text(t) ? t->u.text : NULL;
}

size_t bs_eterm_text_len(const bs_eterm *t)
{
    return has_text(t) ? t->n : 0;
}

size_t bs_eterm_size(const bs_eterm *t)
{
    if (!t)
        return 0;
    if (t->kind == BS_ET_TUPLE || t->kind == BS_ET_LIST)
        return t->n;
    return t->kind == BS_ET_MAP ? t->n / 2 : 0;
}

const bs_eterm *bs_eterm_item(const bs_eterm *t, size_t i)
{
    if (!t || (t->kind != BS_ET_TUPLE && t->kind != BS_ET_LIST && t->kind != BS_ET_MAP) || i >= t->n)
        return NULL;
    return &t->u.items[i];
}

const bs_eterm *bs_eterm_tail(const bs_eterm *t)
{
    return t && t->kind == BS_ET_LIST && t->improper ? &t->u.items[t->n] : NULL;
}

const bs_eterm *bs_eterm_map_key(const bs_eterm *map, size_t pair)
{
    return map && map->kind == BS_ET_MAP && pair < map->n / 2 ? &map->u.items[2 * pair] : NULL;
}

const bs_eterm *bs_eterm_map_value(const bs_eterm *map, size_t pair)
{
    return map && map->kind == BS_ET_MAP && pair < map->n / 2 ? &map->u.items[2 * pair + 1] : NULL;
}

static int text_equals(const bs_eterm *t, const char *s)
{
    size_t n = strlen(s);
    return t->n == n && memcmp(t->u.text, s, n) == 0;
}

const bs_eterm *bs_eterm_map_get(const bs_eterm *map, const char *key)
{
    if (!map || map->kind != BS_ET_MAP || !key)
        return NULL;
    for (uint32_t i = 0; i + 1 < map->n; i += 2) {
        const bs_eterm *k = &map->u.items[i];
        if ((k->kind == BS_ET_ATOM || k->kind == BS_ET_BINARY) && text_equals(k, key))
            return &map->u.items[i + 1];
    }
    return NULL;
}

int bs_eterm_is_atom(const bs_eterm *t, const char *name)
{
    return t && name && t->kind == BS_ET_ATOM && text_equals(t, name);
}

const bs_eterm *bs_eterm_tagged(const bs_eterm *t, const char *tag)
{
    if (!t || t->kind != BS_ET_TUPLE || t->n != 2 || !bs_eterm_is_atom(&t->u.items[0], tag))
        return NULL;
    return &t->u.items[1];
}

const bs_eterm_pid *bs_eterm_pid_of(const bs_eterm *t)
{
    return t && t->kind == BS_ET_PID ? t->u.pid : NULL;
}

/* ------------------------------ printing ------------------------------ */

/* Output into cap bytes; once something does not fit, overflow is set and
 * the walk stops (so printing a huge term costs about cap, not its size).
 * Pieces (numbers, escapes, UTF-8 characters, punctuation) go in whole or
 * not at all; only runs of plain ASCII text may be cut. safe is the last
 * place where "..." can replace the rest: the end of a piece or any place
 * in a run, with 3 bytes left after it. */
typedef struct sink {
    char *buf;
    size_t cap;
    size_t len;
    size_t safe;
    int overflow;
} sink;

static void put(sink *s, const char *p, size_t n)
{
    if (s->overflow)
        return;
    if (n > s->cap - s->len) {
        s->overflow = 1;
        return;
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    if (s->cap - s->len >= 3)
        s->safe = s->len;
}

/* Plain ASCII text: as much as fits. */
static void put_run(sink *s, const char *p, size_t n)
{
    if (s->overflow)
        return;
    size_t start = s->len;
    if (n > s->cap - s->len) {
        n = s->cap - s->len;
        s->overflow = 1;
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    if (s->cap >= 3) {
        size_t last = s->len < s->cap - 3 ? s->len : s->cap - 3;
        if (last >= start)
            s->safe = last;
    }
}

static void puts_(sink *s, const char *p)
{
    put(s, p, strlen(p));
}

static void putf(sink *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void putf(sink *s, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0)
        put(s, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* A cut rendering ends with "..." at the last safe place (so never inside
 * a number, an escape or a UTF-8 character). */
static void finish(sink *s)
{
    if (!s->overflow)
        return;
    if (s->cap < 3) {
        memset(s->buf, '.', s->cap);
        s->len = s->cap;
        return;
    }
    memcpy(s->buf + s->safe, "...", 3);
    s->len = s->safe + 3;
}

/* Length of the valid UTF-8 sequence of at least two bytes at p (n bytes
 * left), or 0. */
static size_t utf8_multibyte(const unsigned char *p, size_t n)
{
    size_t len;
    uint32_t cp;
    if (p[0] >= 0xC2 && p[0] <= 0xDF)
        len = 2, cp = p[0] & 0x1F;
    else if (p[0] >= 0xE0 && p[0] <= 0xEF)
        len = 3, cp = p[0] & 0x0F;
    else if (p[0] >= 0xF0 && p[0] <= 0xF4)
        len = 4, cp = p[0] & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    /* C1 controls (U+0080..U+009F) are not printable */
    return cp < 0xA0 ? 0 : len;
}

/* The escape Erlang writes for byte c inside quotes, or NULL. */
static const char *named_escape(unsigned char c)
{
    switch (c) {
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    case '\v': return "\\v";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case 0x1B: return "\\e";
    case 0x7F: return "\\d";
    case '\\': return "\\\\";
    }
    return NULL;
}

/* 1 if every byte is printable ASCII, has a named escape, or is part of a
 * printable UTF-8 character; *non_ascii says whether any such character was
 * seen (allow_utf8 0: any byte above 127 makes it unprintable). */
static int printable(const unsigned char *p, size_t n, int allow_utf8, int *non_ascii)
{
    *non_ascii = 0;
    for (size_t i = 0; i < n;) {
        if ((p[i] >= 0x20 && p[i] < 0x7F) || named_escape(p[i])) {
            i++;
            continue;
        }
        size_t k = allow_utf8 && p[i] >= 0x80 ? utf8_multibyte(p + i, n - i) : 0;
        if (!k)
            return 0;
        *non_ascii = 1;
        i += k;
    }
    return 1;
}

/* Bytes between quotes: printable ASCII and valid UTF-8 as they are, the
 * quote and backslash escaped, other bytes as \xHH. */
static void put_quoted(sink *s, const unsigned char *p, size_t n, char quote)
{
    put(s, &quote, 1);
    for (size_t i = 0; i < n && !s->overflow;) {
        size_t run = i;
        while (run < n && p[run] >= 0x20 && p[run] < 0x7F && p[run] != (unsigned char)quote && p[run] != '\\')
            run++;
        if (run > i) {
            put_run(s, (const char *)p + i, run - i);
            i = run;
            continue;
        }
        const char *esc = named_escape(p[i]);
        size_t k;
        if (p[i] == (unsigned char)quote) {
            char e[2] = {'\\', quote};
            put(s, e, 2);
            i++;
        } else if (esc) {
            puts_(s, esc);
            i++;
        } else if (p[i] >= 0x80 && (k = utf8_multibyte(p + i, n - i)) != 0) {
            put(s, (const char *)p + i, k);
            i += k;
        } else {
            putf(s, "\\x%02X", p[i]);
            i++;
        }
    }
    put(s, &quote, 1);
}

/* Quoted exactly when the engine's speller would quote it (frame_name.h):
 * one rule for atoms in every printed text. */
static void put_atom(sink *s, const char *name, size_t n)
{
    if (bs_atom_needs_quotes(name, n))
        put_quoted(s, (const unsigned char *)name, n, '\'');
    else
        put_run(s, name, n);
}

/* Erlang's own float syntax (io_lib_format:fwrite_g): the fewest digits
 * that read back as f, written plainly ("100.0", "0.001") unless the
 * exponent form is shorter ("1.0e16", "2.5e-7"). */
static void put_float(sink *s, double f)
{
    if (isnan(f) || isinf(f)) {
        puts_(s, isnan(f) ? "nan" : f < 0 ? "-inf" : "inf");
        return;
    }
    if (f == 0) {
        puts_(s, signbit(f) ? "-0.0" : "0.0");
        return;
    }
    char text[40];
    for (int precision = 0; precision <= 17; precision++) {
        snprintf(text, sizeof text, "%.*e", precision, f);
        if (strtod(text, NULL) == f)
            break;
    }
    /* text is [-]d[.ddd]e[+-]xx: the digits, and where the point goes */
    char digits[24];
    size_t n = 0;
    const char *p = text;
    if (*p == '-') {
        puts_(s, "-");
        p++;
    }
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9' && n < sizeof digits - 1)
            digits[n++] = *p;
    while (n > 1 && digits[n - 1] == '0')
        n--;
    digits[n] = '\0';
    long place = (*p == 'e' ? strtol(p + 1, NULL, 10) : 0) + 1;
    if (place > 0 && place < (long)n) {
        put(s, digits, (size_t)place);
        puts_(s, ".");
        put(s, digits + place, n - (size_t)place);
        return;
    }
    if (place == 0) {
        puts_(s, "0.");
        puts_(s, digits);
        return;
    }
    char exponent[24];
    snprintf(exponent, sizeof exponent, "%ld", place - 1);
    long exp_cost = (long)strlen(exponent) + 1 + (n == 1 ? 2 : 1);
    if (place < 0 && 2 - place <= exp_cost) {
        puts_(s, "0.");
        for (long i = 0; i < -place; i++)
            puts_(s, "0");
        puts_(s, digits);
    } else if (place > 0 && place - (long)n + 2 <= exp_cost) {
        puts_(s, digits);
        for (long i = 0; i < place - (long)n; i++)
            puts_(s, "0");
        puts_(s, ".0");
    } else {
        put(s, digits, 1);
        puts_(s, ".");
        puts_(s, n == 1 ? "0" : digits + 1);
        puts_(s, "e");
        puts_(s, exponent);
    }
}

/* A bignum beyond 64 bits, exactly, in Erlang's base-16 syntax. */
static void put_big(sink *s, const bs_eterm *t)
{
    const unsigned char *digits = (const unsigned char *)t->u.text;
    size_t top = t->n;
    while (top > 0 && digits[top - 1] == 0)
        top--;
    puts_(s, t->negative && top ? "-16#" : "16#");
    if (!top) {
        puts_(s, "0");
        return;
    }
    putf(s, "%X", digits[top - 1]);
    for (size_t i = top - 1; i-- > 0 && !s->overflow;)
        putf(s, "%02X", digits[i]);
}

static void put_binary(sink *s, const bs_eterm *t)
{
    const unsigned char *p = (const unsigned char *)t->u.text;
    int non_ascii;
    puts_(s, "<<");
    if (t->n && printable(p, t->n, 1, &non_ascii)) {
        put_quoted(s, p, t->n, '"');
        if (non_ascii)
            puts_(s, "/utf8");
    } else {
        for (uint32_t i = 0; i < t->n && !s->overflow; i++)
            putf(s, i ? ",%u" : "%u", p[i]);
    }
    puts_(s, ">>");
}

/* STRING_EXT (never empty): "text" when printable ASCII, else the list of
 * its bytes. */
static void put_string(sink *s, const bs_eterm *t)
{
    const unsigned char *p = (const unsigned char *)t->u.text;
    int non_ascii;
    if (printable(p, t->n, 0, &non_ascii)) {
        put_quoted(s, p, t->n, '"');
    } else {
        puts_(s, "[");
        for (uint32_t i = 0; i < t->n && !s->overflow; i++)
            putf(s, i ? ",%u" : "%u", p[i]);
        puts_(s, "]");
    }
}

static void put_term(sink *s, const bs_eterm *t)
{
    if (s->overflow)
        return;
    switch ((bs_eterm_kind)t->kind) {
    case BS_ET_INT:
        putf(s, "%lld", t->u.i);
        break;
    case BS_ET_FLOAT:
        put_float(s, t->u.f);
        break;
    case BS_ET_ATOM:
        put_atom(s, t->u.text, t->n);
        break;
    case BS_ET_BINARY:
        put_binary(s, t);
        break;
    case BS_ET_STRING:
        put_string(s, t);
        break;
    case BS_ET_TUPLE:
    case BS_ET_LIST:
        puts_(s, t->kind == BS_ET_TUPLE ? "{" : "[");
        for (uint32_t i = 0; i < t->n && !s->overflow; i++) {
            if (i)
                puts_(s, ",");
            put_term(s, &t->u.items[i]);
        }
        if (t->kind == BS_ET_LIST && t->improper) {
            puts_(s, "|");
            put_term(s, &t->u.items[t->n]);
        }
        puts_(s, t->kind == BS_ET_TUPLE ? "}" : "]");
        break;
    case BS_ET_MAP:
        puts_(s, "#{");
        for (uint32_t i = 0; i + 1 < t->n && !s->overflow; i += 2) {
            if (i)
                puts_(s, ",");
            put_term(s, &t->u.items[i]);
            puts_(s, " => ");
            put_term(s, &t->u.items[i + 1]);
        }
        puts_(s, "}");
        break;
    case BS_ET_PID:
        puts_(s, "<");
        put_atom(s, t->u.pid->node, strlen(t->u.pid->node));
        putf(s, ".%u.%u>", t->u.pid->number, t->u.pid->serial);
        break;
    case BS_ET_OTHER:
        switch ((bs_eterm_other)t->other) {
        case BS_ET_OTHER_BIG: put_big(s, t); break;
        case BS_ET_OTHER_REF: puts_(s, "#Ref<...>"); break;
        case BS_ET_OTHER_PORT: puts_(s, "#Port<...>"); break;
        case BS_ET_OTHER_FUN: puts_(s, "#Fun<...>"); break;
        case BS_ET_OTHER_BITSTRING: putf(s, "#Bitstring<%lld bits>", t->u.i); break;
        case BS_ET_OTHER_NONE: puts_(s, "#Term<...>"); break;
        }
        break;
    }
}

size_t bs_eterm_format(char *buf, size_t size, const bs_eterm *t)
{
    if (!buf || size == 0)
        return 0;
    sink s = {buf, size - 1, 0, 0, 0};
    if (t)
        put_term(&s, t);
    finish(&s);
    buf[s.len] = '\0';
    return s.len;
}

int bs_eterm_print_max(FILE *out, const bs_eterm *t, size_t max_bytes)
{
    if (!out)
        return -1;
    if (max_bytes < 3)
        max_bytes = 3;
    if (max_bytes > BS_ETERM_PRINT_MAX_LIMIT)
        max_bytes = BS_ETERM_PRINT_MAX_LIMIT;
    char *buf = malloc(max_bytes + 1);
    if (!buf)
        return -1;
    size_t n = bs_eterm_format(buf, max_bytes + 1, t);
    int rc = fwrite(buf, 1, n, out) == n ? (int)n : -1;
    free(buf);
    return rc;
}

int bs_eterm_print(FILE *out, const bs_eterm *t)
{
    return bs_eterm_print_max(out, t, BS_ETERM_PRINT_MAX);
}

int bs_eterm_describe(const char *buf, int len, int *index, char *out, size_t out_size)
{
    bs_eterm_tree *tree = NULL;
    char why[160];
    if (bs_eterm_decode(buf, len, index, &tree, why, sizeof why) < 0) {
        if (out_size)
            snprintf(out, out_size, "(unreadable term: %s)", why);
        return -1;
    }
    bs_eterm_format(out, out_size, bs_eterm_root(tree));
    bs_eterm_free(tree);
    return 0;
}
