/* perf_map.c — parses the JIT's perf map and keeps its ranges sorted for
 * lookups (see perf_map.h for the grammar, the merge and the memory cap). */
#include "cpu/perf_map.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Names live in chunks that never move, so pointers to them stay valid. */
#define CHUNK_BYTES 65536
struct bs_perf_chunk {
    struct bs_perf_chunk *next;
    size_t used, cap;
    char data[];
};

/* --- parsing a line ---------------------------------------------------- */

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* A hex number at line[*i]: 0 and *i past it, or -1. */
static int parse_hex(const char *line, size_t len, size_t *i, int allow_0x, uint64_t *v)
{
    size_t j = *i;
    if (allow_0x && j + 1 < len && line[j] == '0' && (line[j + 1] == 'x' || line[j + 1] == 'X'))
        j += 2;
    size_t digits = 0;
    uint64_t x = 0;
    while (j < len && hex_value(line[j]) >= 0) {
        if (x >> 60)
            return -1; /* more than 64 bits */
        x = x << 4 | (uint64_t)hex_value(line[j]);
        j++;
        digits++;
    }
    if (!digits)
        return -1;
    *i = j;
    *v = x;
    return 0;
}

/* Appends the UTF-8 encoding of code point c to out; -1 if it is not one. */
static int put_utf8(char *out, size_t *o, uint32_t c)
{
    if (c < 0x80) {
        out[(*o)++] = (char)c;
    } else if (c < 0x800) {
        out[(*o)++] = (char)(0xC0 | c >> 6);
        out[(*o)++] = (char)(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        if (c >= 0xD800 && c < 0xE000)
            return -1;
        out[(*o)++] = (char)(0xE0 | c >> 12);
        out[(*o)++] = (char)(0x80 | (c >> 6 & 0x3F));
        out[(*o)++] = (char)(0x80 | (c & 0x3F));
    } else if (c < 0x110000) {
        out[(*o)++] = (char)(0xF0 | c >> 18);
        out[(*o)++] = (char)(0x80 | (c >> 12 & 0x3F));
        out[(*o)++] = (char)(0x80 | (c >> 6 & 0x3F));
        out[(*o)++] = (char)(0x80 | (c & 0x3F));
    } else {
        return -1;
    }
    return 0;
}

/* One escape sequence after a backslash at s[*i] (s[*i] is the character
 * after it); decoded into out. 0, or -1 if it is not one. The output is
 * never longer than the input it decodes (\x{10FFFF} is 10 bytes -> 4). */
static int decode_escape(const char *s, size_t len, size_t *i, char *out, size_t *o)
{
    size_t j = *i;
    if (j >= len)
        return -1;
    char c = s[j++];
    uint32_t v = 0;
    switch (c) {
    case 'n': v = '\n'; break;
    case 'r': v = '\r'; break;
    case 't': v = '\t'; break;
    case 'v': v = '\v'; break;
    case 'b': v = '\b'; break;
    case 'f': v = '\f'; break;
    case 'e': v = 27; break;
    case 's': v = ' '; break;
    case 'd': v = 127; break;
    case '^':
        if (j >= len)
            return -1;
        v = (uint32_t)(unsigned char)s[j++] & 31;
        break;
    case 'x':
        if (j < len && s[j] == '{') {
            j++;
            size_t n = 0;
            while (j < len && s[j] != '}') {
                int h = hex_value(s[j]);
                if (h < 0 || ++n > 6)
                    return -1;
                v = v << 4 | (uint32_t)h;
                j++;
            }
            if (j >= len || n == 0)
                return -1;
            j++; /* } */
        } else {
            for (int n = 0; n < 2; n++) {
                int h = j < len ? hex_value(s[j]) : -1;
                if (h < 0)
                    return -1;
                v = v << 4 | (uint32_t)h;
                j++;
            }
        }
        break;
    default:
        if (c >= '0' && c <= '7') {
            v = (uint32_t)(c - '0');
            for (int n = 0; n < 2 && j < len && s[j] >= '0' && s[j] <= '7'; n++)
                v = v << 3 | (uint32_t)(s[j++] - '0');
            break;
        }
        if ((unsigned char)c < 0x20 || c == 0x7F)
            return -1;
        v = (unsigned char)c; /* \' \\ \" and any other char: itself */
        if (v >= 0x80) {       /* a UTF-8 sequence: copied as it is */
            out[(*o)++] = c;
            *i = j;
            return 0;
        }
        break;
    }
    if (v == 0 || put_utf8(out, o, v) < 0)
        return -1; /* a NUL inside a name would cut it */
    *i = j;
    return 0;
}

/* An atom at s[*i]: quoted ('...', escapes decoded) or bare up to the first
 * `stop` byte. Decoded into out + *o, NUL-terminated. 0, or -1. */
static int parse_atom(const char *s, size_t len, size_t *i, char stop, char *out, size_t *o)
{
    size_t j = *i, start = *o;
    if (j < len && s[j] == '\'') {
        j++;
        for (;;) {
            if (j >= len)
                return -1;
            if (s[j] == '\'') {
                j++;
                break;
            }
            if (s[j] == '\\') {
                j++;
                if (decode_escape(s, len, &j, out, o) < 0)
                    return -1;
            } else {
                out[(*o)++] = s[j++];
            }
        }
    } else {
        while (j < len && s[j] != stop)
            out[(*o)++] = s[j++];
    }
    if (*o == start)
        return -1;
    out[(*o)++] = '\0';
    *i = j;
    return 0;
}

static const char PROLOGUE[] = "-CodeInfoPrologue";

/* The name as `$M:F/A[-CodeInfoPrologue]` into out; -1 if it is not one. */
static int parse_erlang_name(const char *s, size_t len, bs_perf_line *out)
{
    size_t i = 1, o = 0; /* past the $ */
    if (parse_atom(s, len, &i, ':', out->text, &o) < 0 || i >= len || s[i] != ':')
        return -1;
    i++;
    if (i >= len || s[i] == ':')
        return -1; /* M::name */
    size_t fun_at = o;
    if (parse_atom(s, len, &i, '/', out->text, &o) < 0 || i >= len || s[i] != '/')
        return -1;
    i++;
    unsigned arity = 0;
    size_t digits = 0;
    while (i < len && s[i] >= '0' && s[i] <= '9') {
        arity = arity * 10 + (unsigned)(s[i++] - '0');
        if (++digits > 3)
            return -1; /* at most 255 */
    }
    if (!digits || arity > 255)
        return -1;
    int prologue = 0;
    if (i < len) {
        if (len - i != sizeof PROLOGUE - 1 || memcmp(s + i, PROLOGUE, len - i) != 0)
            return -1;
        prologue = 1;
    }
    out->kind = BS_PERF_ERLANG;
    out->module = out->text;
    out->function = out->text + fun_at;
    out->arity = arity;
    out->prologue = prologue;
    return 0;
}

int bs_perf_map_parse_line(const char *line, size_t len, bs_perf_line *out, size_t *column, const char **why)
{
    size_t i = 0;
#define REFUSE(col, msg)   \
    do {                   \
        *column = (col);   \
        *why = (msg);      \
        return -1;         \
    } while (0)
    if (len > BS_PERF_MAP_MAX_LINE)
        REFUSE(BS_PERF_MAP_MAX_LINE, "line too long");
    for (size_t k = 0; k < len; k++)
        if ((unsigned char)line[k] < 0x20 || line[k] == 0x7F)
            REFUSE(k, "control character");
    if (parse_hex(line, len, &i, 1, &out->start) < 0)
        REFUSE(i, "no hex start address");
    if (i >= len || line[i] != ' ')
        REFUSE(i, "no space after the start address");
    while (i < len && line[i] == ' ')
        i++;
    size_t size_at = i;
    if (parse_hex(line, len, &i, 1, &out->size) < 0)
        REFUSE(i, "no hex size");
    if (out->size == 0)
        REFUSE(size_at, "size 0");
    if (out->start + out->size < out->start)
        REFUSE(size_at, "range past the end of the address space");
    if (i >= len || line[i] != ' ')
        REFUSE(i, "no space after the size");
    while (i < len && line[i] == ' ')
        i++;
    if (i >= len)
        REFUSE(i, "no name");
    const char *name = line + i;
    size_t name_len = len - i;
    if (name[0] == '$' && parse_erlang_name(name, name_len, out) == 0)
        return 0;
    /* The JIT's own code, or a name not read as an Erlang function. */
    size_t skip = name[0] == '$' && name_len > 1 ? 1 : 0;
    memcpy(out->text, name + skip, name_len - skip);
    out->text[name_len - skip] = '\0';
    out->kind = BS_PERF_OTHER;
    out->module = NULL;
    out->function = out->text;
    out->arity = 0;
    out->prologue = 0;
    return 0;
#undef REFUSE
}

/* --- the table --------------------------------------------------------- */

int bs_perf_map_init(bs_perf_map *m, const char *path, size_t max_bytes)
{
    memset(m, 0, sizeof *m);
    m->max_bytes = max_bytes;
    m->path = strdup(path);
    return m->path ? 0 : -1;
}

void bs_perf_map_free(bs_perf_map *m)
{
    struct bs_perf_chunk *c = m->chunks;
    while (c) {
        struct bs_perf_chunk *next = c->next;
        free(c);
        c = next;
    }
    free(m->entries);
    free(m->ranges);
    free(m->path);
    memset(m, 0, sizeof *m);
}

/* A copy of s (n bytes and a NUL) in the chunks, or NULL (out of memory or
 * over max_bytes). */
static const char *keep_name(bs_perf_map *m, const char *s, size_t n)
{
    struct bs_perf_chunk *c = m->chunks;
    if (!c || c->cap - c->used < n + 1) {
        size_t cap = n + 1 > CHUNK_BYTES ? n + 1 : CHUNK_BYTES;
        size_t cost = sizeof *c + cap;
        if (m->stats.bytes + cost > m->max_bytes)
            return NULL;
        c = malloc(cost);
        if (!c)
            return NULL;
        c->next = m->chunks;
        c->used = 0;
        c->cap = cap;
        m->chunks = c;
        m->stats.bytes += cost;
    }
    char *p = c->data + c->used;
    memcpy(p, s, n);
    p[n] = '\0';
    c->used += n + 1;
    return p;
}

/* Bytes of the entry and range arrays at these capacities (ranges: up to
 * two per entry after splits). */
static size_t table_bytes(size_t entries)
{
    return entries * (sizeof(bs_perf_entry) + 2 * sizeof(struct bs_perf_range));
}

/* Adds a parsed line as an entry (not yet in the ranges): 0, 1 (dropped:
 * max_bytes), -1 (out of memory). */
static int add_entry(bs_perf_map *m, const bs_perf_line *l, uint64_t *starts_ends)
{
    if (m->n_entries == m->cap_entries) {
        size_t cap = m->cap_entries ? m->cap_entries * 2 : 1024;
        if (cap > UINT32_MAX)
            return 1;
        size_t grow = table_bytes(cap) - table_bytes(m->cap_entries);
        if (m->stats.bytes + grow > m->max_bytes) {
            cap = m->cap_entries + (m->max_bytes - m->stats.bytes) / table_bytes(1);
            if (cap <= m->cap_entries)
                return 1;
            grow = table_bytes(cap) - table_bytes(m->cap_entries);
        }
        bs_perf_entry *e = realloc(m->entries, cap * sizeof *e);
        if (!e)
            return -1;
        m->entries = e;
        m->cap_entries = cap;
        m->stats.bytes += grow;
    }
    const char *module = NULL;
    if (l->module) {
        size_t n = strlen(l->module);
        if (m->last_module && strcmp(m->last_module, l->module) == 0)
            module = m->last_module; /* a module's lines come together */
        else if (!(module = keep_name(m, l->module, n)))
            return 1;
        m->last_module = module;
    }
    const char *function = keep_name(m, l->function, strlen(l->function));
    if (!function)
        return 1;
    bs_perf_entry *e = &m->entries[m->n_entries];
    e->module = module;
    e->function = function;
    e->arity = l->arity;
    e->kind = (uint8_t)l->kind;
    e->prologue = (uint8_t)l->prologue;
    starts_ends[0] = l->start;
    starts_ends[1] = l->start + l->size;
    m->n_entries++;
    return 0;
}

static int range_by_start(const void *a, const void *b)
{
    const struct bs_perf_range *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->entry < y->entry ? -1 : x->entry > y->entry;
}

/* Max-heap of indices into iv by entry (the latest line on top). */
static void heap_push(uint32_t *h, size_t *n, const struct bs_perf_range *iv, uint32_t x)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (iv[h[p]].entry >= iv[x].entry)
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

static void heap_pop(uint32_t *h, size_t *n, const struct bs_perf_range *iv)
{
    uint32_t x = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && iv[h[c + 1]].entry > iv[h[c]].entry)
            c++;
        if (iv[x].entry >= iv[h[c]].entry)
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = x;
}

/* Merges the new ranges (sorted) with the table's: where ranges overlap,
 * the one of the later line (larger entry) wins. A sweep over the ranges
 * by start with a heap of those open: each step emits the piece up to the
 * next start or the top's end. 0, or -1 (out of memory: table unchanged). */
static int merge_ranges(bs_perf_map *m, struct bs_perf_range *fresh, size_t n_fresh)
{
    size_t n = m->n_ranges + n_fresh;
    struct bs_perf_range *all = malloc(n * sizeof *all);
    uint32_t *heap = malloc(n * sizeof *heap);
    struct bs_perf_range *out = malloc(2 * n * sizeof *out);
    if (!all || !heap || !out) {
        free(all);
        free(heap);
        free(out);
        return -1;
    }
    /* both inputs are sorted: merge them */
    size_t a = 0, b = 0, k = 0;
    while (a < m->n_ranges || b < n_fresh) {
        if (b >= n_fresh || (a < m->n_ranges && range_by_start(&m->ranges[a], &fresh[b]) <= 0))
            all[k++] = m->ranges[a++];
        else
            all[k++] = fresh[b++];
    }
    size_t hn = 0, i = 0, no = 0;
    uint64_t pos = n ? all[0].start : 0;
    for (;;) {
        while (i < n && all[i].start <= pos)
            heap_push(heap, &hn, all, (uint32_t)i++);
        while (hn && all[heap[0]].end <= pos)
            heap_pop(heap, &hn, all);
        if (!hn) {
            if (i >= n)
                break;
            pos = all[i].start;
            continue;
        }
        const struct bs_perf_range *top = &all[heap[0]];
        uint64_t end = top->end;
        if (i < n && all[i].start < end)
            end = all[i].start;
        if (no && out[no - 1].entry == top->entry && out[no - 1].end == pos)
            out[no - 1].end = end; /* the same line, cut by one that lost */
        else
            out[no++] = (struct bs_perf_range){pos, end, top->entry};
        pos = end;
    }
    free(all);
    free(heap);
    struct bs_perf_range *shrunk = no ? realloc(out, no * sizeof *out) : NULL;
    if (no && !shrunk)
        shrunk = out; /* keep the larger block */
    else if (!no)
        free(out);
    free(m->ranges);
    m->ranges = shrunk;
    m->n_ranges = no;
    m->stats.ranges = no;
    return 0;
}

/* Parses the whole lines in buf[0..len) into entries; the bytes consumed
 * (up to and with the last newline). */
static size_t parse_lines(bs_perf_map *m, const char *buf, size_t len, uint64_t **se, size_t *n_se,
                          size_t *cap_se, int *oom)
{
    size_t done = 0;
    while (done < len) {
        const char *nl = memchr(buf + done, '\n', len - done);
        if (!nl)
            break;
        size_t n = (size_t)(nl - (buf + done));
        m->line_no++;
        size_t col;
        const char *why;
        if (bs_perf_map_parse_line(buf + done, n, &m->scratch, &col, &why) < 0) {
            if (!m->stats.malformed++) {
                m->stats.bad_line = m->line_no;
                m->stats.bad_column = col;
                m->stats.bad_why = why;
            }
        } else {
            if (*n_se == *cap_se) {
                size_t cap = *cap_se ? *cap_se * 2 : 2048;
                uint64_t *p = realloc(*se, cap * sizeof *p);
                if (!p) {
                    *oom = 1;
                    return done;
                }
                *se = p;
                *cap_se = cap;
            }
            int r = add_entry(m, &m->scratch, *se + *n_se);
            if (r < 0) {
                *oom = 1;
                return done;
            }
            if (r > 0)
                m->stats.dropped++;
            else
                *n_se += 2;
        }
        done += n + 1;
    }
    return done;
}

long bs_perf_map_read(bs_perf_map *m, uint64_t now_ms)
{
    m->last_read_ms = now_ms;
    m->have_read = 1;
    int fd = open(m->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        m->stats.read_errno = errno;
        return -1;
    }
    enum { BUF = 65536 };
    char *buf = malloc(BUF);
    uint64_t *se = NULL; /* start, end of each new entry */
    size_t n_se = 0, cap_se = 0, fill = 0;
    int oom = !buf, skipping = 0, failed = 0;
    size_t first = m->n_entries;
    uint64_t off = m->offset, line_no0 = m->line_no;
    uint64_t malformed0 = m->stats.malformed, dropped0 = m->stats.dropped;
    while (!oom) {
        ssize_t got = pread(fd, buf + fill, BUF - fill, (off_t)(off + fill));
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            m->stats.read_errno = errno;
            failed = 1;
            break;
        }
        if (got == 0)
            break;
        fill += (size_t)got;
        while (fill && !oom) { /* the whole lines in buf */
            size_t used;
            if (skipping) { /* the rest of a line too long to keep */
                const char *nl = memchr(buf, '\n', fill);
                used = nl ? (size_t)(nl - buf) + 1 : fill;
                skipping = !nl;
            } else {
                used = parse_lines(m, buf, fill, &se, &n_se, &cap_se, &oom);
                if (!oom && used == 0 && fill == BUF) {
                    m->line_no++;
                    if (!m->stats.malformed++) {
                        m->stats.bad_line = m->line_no;
                        m->stats.bad_column = BS_PERF_MAP_MAX_LINE;
                        m->stats.bad_why = "line too long";
                    }
                    used = fill;
                    skipping = 1;
                }
            }
            if (!used)
                break;
            off += used;
            memmove(buf, buf + used, fill - used);
            fill -= used;
        }
    }
    close(fd);
    free(buf);
    size_t added = m->n_entries - first;
    struct bs_perf_range *fresh = added && !oom ? malloc(added * sizeof *fresh) : NULL;
    if (added && !oom && fresh) {
        for (size_t j = 0; j < added; j++)
            fresh[j] = (struct bs_perf_range){se[2 * j], se[2 * j + 1], (uint32_t)(first + j)};
        qsort(fresh, added, sizeof *fresh, range_by_start);
        if (merge_ranges(m, fresh, added) < 0)
            oom = 1;
    } else if (added) {
        oom = 1;
    }
    free(fresh);
    free(se);
    if (oom) {
        /* Nothing of this read is kept (its names stay in the chunks until
         * bs_perf_map_free): the next read starts from the same line. */
        m->n_entries = first;
        m->line_no = line_no0;
        m->stats.malformed = malformed0;
        m->stats.dropped = dropped0;
        if (!malformed0)
            m->stats.bad_line = 0, m->stats.bad_column = 0, m->stats.bad_why = NULL;
        errno = ENOMEM;
        m->stats.read_errno = ENOMEM;
        return -1;
    }
    m->offset = off;
    m->stats.lines += added;
    if (failed) {
        errno = m->stats.read_errno;
        return -1;
    }
    m->stats.reads++;
    m->stats.read_errno = 0;
    return (long)added;
}

/* The range covering addr, or NULL. */
static const struct bs_perf_range *range_of(const bs_perf_map *m, uint64_t addr)
{
    size_t lo = 0, hi = m->n_ranges;
    while (lo < hi) { /* the first range with end > addr */
        size_t mid = lo + (hi - lo) / 2;
        if (m->ranges[mid].end <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->n_ranges && m->ranges[lo].start <= addr ? &m->ranges[lo] : NULL;
}

const bs_perf_entry *bs_perf_map_find(const bs_perf_map *m, uint64_t addr)
{
    const struct bs_perf_range *r = range_of(m, addr);
    return r ? &m->entries[r->entry] : NULL;
}

uint64_t bs_perf_map_start(const bs_perf_map *m, uint64_t addr)
{
    const struct bs_perf_range *r = range_of(m, addr);
    return r ? r->start : 0;
}

uint64_t bs_perf_map_named(const bs_perf_map *m, const char *name, uint64_t *end)
{
    for (size_t i = 0; i < m->n_ranges; i++) {
        const bs_perf_entry *e = &m->entries[m->ranges[i].entry];
        if (e->kind == BS_PERF_OTHER && strcmp(e->function, name) == 0) {
            *end = m->ranges[i].end;
            return m->ranges[i].start;
        }
    }
    return 0;
}

const bs_perf_entry *bs_perf_map_lookup(bs_perf_map *m, uint64_t addr, uint64_t now_ms)
{
    const bs_perf_entry *e = bs_perf_map_find(m, addr);
    if (e)
        return e;
    if (m->have_read && now_ms - m->last_read_ms < BS_PERF_MAP_REREAD_MS)
        return NULL;
    if (bs_perf_map_read(m, now_ms) <= 0)
        return NULL;
    return bs_perf_map_find(m, addr);
}
