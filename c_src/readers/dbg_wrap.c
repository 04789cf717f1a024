/* dbg_wrap.c — puts the files of dbg wrap sets in reading order
 * (bs_dbg_order_files, dbg_trace.h).
 *
 * trace_file_drv writes Name ++ Index ++ Suffix with Index counting 0, 1,
 * ... Count and then 0 again, deleting the oldest file once Count files
 * exist: at any time the files form a run of a ring with at least one
 * index missing, and the newest file is the one before the gap. dbg's
 * reader (wrap_sortfix in dbg.erl) gives up when more than one index is
 * missing in a row; here any single gap works, however long (the oldest
 * files deleted by hand, or a set that never wrapped), and since Count is
 * not in the names, the ring is taken as 0 .. highest index present, which
 * orders the same. When indexes are missing in several places the names
 * cannot tell, so the contents do: the first timestamp of each file, else
 * each file's modification time. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dbg_event.h"
#include "dbg_trace.h"

typedef struct wfile {
    char *path;
    size_t prefix_len;   /* bytes of path before the index */
    size_t index_len;    /* digits of the index (0: not a wrap name) */
    uint32_t index;
    int group;           /* first argument of its set */
    uint64_t key;        /* sort key within the set */
} wfile;

/* Splits the last run of digits of the file name (not the directory) off
 * the path: the driver writes indexes without leading zeros. */
static void parse_name(wfile *f)
{
    const char *base = strrchr(f->path, '/');
    base = base ? base + 1 : f->path;
    size_t len = strlen(f->path), end = len;
    while (end > (size_t)(base - f->path) && !(f->path[end - 1] >= '0' && f->path[end - 1] <= '9'))
        end--;
    size_t start = end;
    while (start > (size_t)(base - f->path) && f->path[start - 1] >= '0' && f->path[start - 1] <= '9')
        start--;
    if (start == end || end - start > 9 || (f->path[start] == '0' && end - start > 1))
        return;
    f->prefix_len = start;
    f->index_len = end - start;
    f->index = (uint32_t)strtoul(f->path + start, NULL, 10);
}

static const char *base_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static int same_set(const wfile *a, const wfile *b)
{
    if (!a->index_len || !b->index_len || a->prefix_len != b->prefix_len)
        return 0;
    const char *sa = a->path + a->prefix_len + a->index_len, *sb = b->path + b->prefix_len + b->index_len;
    return memcmp(a->path, b->path, a->prefix_len) == 0 && strcmp(sa, sb) == 0;
}

/* The first timestamp in a file (0 if none within its first records). */
static uint64_t first_timestamp(const char *path, const bs_dbg_opts *o)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return 0;
    bs_dbg_records r;
    bs_dbg_records_init(&r, fp, path, o->max_term_bytes);
    uint64_t ts = 0;
    for (int k = 0; k < 16 && !ts; k++) {
        bs_dbg_record rec;
        bs_read_error e;
        if (bs_dbg_next_record(&r, &rec, &e) < 0 || rec.kind == BS_DBG_REC_EOF)
            break;
        if (rec.kind != BS_DBG_REC_TERM || rec.size > INT32_MAX)
            continue;
        bs_eterm_tree *t = NULL;
        int index = 0;
        if (bs_eterm_decode_versioned((const char *)rec.body, (int)rec.size, &index, &t, NULL, 0) < 0)
            break;
        bs_dbg_event ev;
        bs_dbg_classify(bs_eterm_root(t), &ev);
        if (ev.has_ts)
            ts = ev.ts_ns;
        bs_eterm_free(t);
    }
    bs_dbg_records_free(&r);
    fclose(fp);
    return ts;
}

static uint64_t mtime_ns(const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return 0;
    return (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
}

static int by_key(const void *a, const void *b)
{
    const wfile *x = *(wfile *const *)a, *y = *(wfile *const *)b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static void note(const bs_dbg_opts *o, const char *line)
{
    if (o->note)
        o->note(o->note_ctx, line);
    else
        fprintf(stderr, "beamspy: %s\n", line);
}

/* Orders the m files of one set (set[] points into the argument list). */
static void order_set(wfile **set, int m, const bs_dbg_opts *o)
{
    uint32_t top = 0;
    for (int i = 0; i < m; i++)
        if (set[i]->index > top)
            top = set[i]->index;
    for (int i = 0; i < m; i++)
        set[i]->key = set[i]->index;
    qsort(set, (size_t)m, sizeof *set, by_key);
    /* Gaps between neighbours in ring order (0 .. top); the wrap from top to
     * the lowest index counts when the lowest is not 0. */
    int gaps = 0, after_gap = 0;
    for (int i = 0; i < m; i++) {
        uint32_t next = i + 1 < m ? set[i + 1]->index : set[0]->index + top + 1;
        if (next - set[i]->index > 1) {
            gaps++;
            after_gap = (i + 1) % m;
        }
    }
    const char *how = "by index";
    if (gaps == 1) {
        for (int i = 0; i < m; i++) /* rotate: the file after the gap is the oldest */
            set[i]->key = (uint64_t)((i - after_gap + m) % m);
        how = after_gap ? "by index, wrapped around" : "by index";
    } else if (gaps > 1) {
        int all_ts = 1;
        for (int i = 0; i < m && all_ts; i++)
            all_ts = (set[i]->key = first_timestamp(set[i]->path, o)) != 0;
        if (all_ts) {
            how = "by first timestamp (indexes missing in several places)";
        } else {
            for (int i = 0; i < m; i++)
                set[i]->key = mtime_ns(set[i]->path);
            how = "by modification time (indexes missing in several places, no timestamps)";
        }
    }
    qsort(set, (size_t)m, sizeof *set, by_key);
    char line[700];
    const wfile *first = set[0];
    const char *base = base_of(first->path);
    snprintf(line, sizeof line, "wrap set %.*s<N>%s: %d files, read %s from %s to %s%s",
             (int)(first->prefix_len - (size_t)(base - first->path)), base,
             first->path + first->prefix_len + first->index_len, m, how, base, base_of(set[m - 1]->path),
             gaps > 1 ? "; records between the missing files are lost" : "");
    note(o, line);
}

int bs_dbg_order_files(char **paths, int n, const bs_dbg_opts *o)
{
    wfile *files = calloc((size_t)n + 1, sizeof *files);
    wfile **set = calloc((size_t)n + 1, sizeof *set);
    char **out = calloc((size_t)n + 1, sizeof *out);
    if (!files || !set || !out) {
        free(files);
        free(set);
        free(out);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        files[i].path = paths[i];
        files[i].group = -1;
        parse_name(&files[i]);
    }
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (files[i].group >= 0)
            continue;
        int m = 0;
        set[m++] = &files[i];
        files[i].group = i;
        for (int j = i + 1; j < n; j++)
            if (files[j].group < 0 && same_set(&files[i], &files[j])) {
                files[j].group = i;
                set[m++] = &files[j];
            }
        if (m > 1)
            order_set(set, m, o);
        for (int j = 0; j < m; j++)
            out[k++] = set[j]->path;
    }
    memcpy(paths, out, (size_t)n * sizeof *paths);
    free(files);
    free(set);
    free(out);
    return 0;
}
