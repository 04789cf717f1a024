/* callgrind.c — the callgrind profile format, for KCachegrind/QCachegrind and
 * callgrind_annotate.
 *
 * Callgrind describes functions, not stacks: each function has a self cost
 * and, per function it calls, the number of calls and their inclusive cost.
 * The call trees of the profile are summed into that shape: a function's self
 * cost is the self time of every node of its frame, an edge caller -> callee
 * carries the calls and the total time of every node of the callee under a
 * node of the caller. Within recursion an edge's inclusive cost counts nested
 * calls again, as callgrind's own output does; KCachegrind shows such cycles
 * as such. Processes are functions of the file "(processes)" that call the
 * frames at their roots, so each process is an entry point; SLEEP, GC and
 * other pseudo frames belong to "(beamspy)"; every other function belongs to
 * its module (the name up to ':', or for Elixir names up to the last '.'
 * before the arity).
 *
 * Costs are nanoseconds of wall time (event "ns") for recorded profiles and
 * samples for counts read from folded files. An edge without calls (folded
 * input has no counts; a frame already running when recording began was
 * not called while recorded) is written with one call: callgrind readers
 * take a call line with 0 calls for the caller's own cost. Names and files are written
 * once with an id ("fn=(3) lists:sort/1") and by id afterwards, as valgrind's
 * name compression does. Functions come in frame-id order and edges in
 * callee order, so the output is deterministic. */
#include "writers.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct cg_edge {
    uint32_t caller, callee; /* frame ids; UINT32_MAX caller: slot unused */
    uint64_t calls;
    uint64_t inclusive;
} cg_edge;

typedef struct cg_state {
    FILE *out;
    const bs_profile *p;
    uint64_t *self;       /* per frame */
    unsigned char *used;  /* per frame: has self time, calls or is called */
    uint32_t *file_of;    /* per frame: index into files */
    cg_edge *edges;       /* open addressing on (caller, callee) */
    size_t cap_edges, n_edges;
    char **files;         /* distinct file names, in order of first use */
    uint32_t n_files;
    unsigned char *file_written;
} cg_state;

static size_t edge_slot(const cg_state *s, uint32_t caller, uint32_t callee)
{
    uint64_t h = ((uint64_t)caller * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)callee * 0xC2B2AE3D27D4EB4Full);
    size_t mask = s->cap_edges - 1;
    size_t i = (size_t)(h ^ (h >> 29)) & mask;
    while (s->edges[i].caller != UINT32_MAX && (s->edges[i].caller != caller || s->edges[i].callee != callee))
        i = (i + 1) & mask;
    return i;
}

/* Room for every edge of the profile: at most one per node. */
static int alloc_edges(cg_state *s)
{
    size_t nodes = 0;
    for (uint32_t t = 0; t < s->p->n_trees; t++)
        nodes += s->p->trees[t].n_nodes;
    size_t cap = 16;
    while (cap < 2 * nodes + 2) {
        if (cap > SIZE_MAX / 4 / sizeof(cg_edge))
            return -1;
        cap *= 2;
    }
    s->edges = malloc(cap * sizeof *s->edges);
    if (!s->edges)
        return -1;
    for (size_t i = 0; i < cap; i++)
        s->edges[i].caller = UINT32_MAX;
    s->cap_edges = cap;
    return 0;
}

static void add_edge(cg_state *s, uint32_t caller, const bs_pnode *callee)
{
    size_t i = edge_slot(s, caller, callee->frame);
    cg_edge *e = &s->edges[i];
    if (e->caller == UINT32_MAX) {
        e->caller = caller;
        e->callee = callee->frame;
        e->calls = 0;
        e->inclusive = 0;
        s->n_edges++;
    }
    e->calls += callee->calls;
    e->inclusive += callee->total_ns;
}

/* The file a frame's function belongs to, as a string of length *len in
 * name (or a fixed name). */
static const char *file_name_of(const char *name, int is_process, size_t *len)
{
    if (is_process) {
        *len = strlen("(processes)");
        return "(processes)";
    }
    const char *colon = strchr(name, ':');
    const char *slash = strrchr(name, '/');
    if (colon && colon != name && (!slash || colon < slash)) {
        *len = (size_t)(colon - name);
        return name;
    }
    if (slash && name[0] != '<' && name[0] != '[') {
        const char *dot = NULL;
        for (const char *c = name; c < slash; c++)
            if (*c == '.')
                dot = c;
        if (dot && dot != name) {
            *len = (size_t)(dot - name);
            return name;
        }
    }
    *len = strlen("(beamspy)");
    return "(beamspy)";
}

static int intern_file(cg_state *s, const char *name, size_t len, uint32_t *id)
{
    for (uint32_t i = 0; i < s->n_files; i++)
        if (strlen(s->files[i]) == len && memcmp(s->files[i], name, len) == 0) {
            *id = i;
            return 0;
        }
    char **grown = realloc(s->files, (s->n_files + 1) * sizeof *grown);
    if (!grown)
        return -1;
    s->files = grown;
    char *copy = malloc(len + 1);
    if (!copy)
        return -1;
    memcpy(copy, name, len);
    copy[len] = '\0';
    s->files[s->n_files] = copy;
    *id = s->n_files++;
    return 0;
}

/* Sums the trees into per-frame self costs and per-edge calls. */
static int aggregate(cg_state *s)
{
    const bs_profile *p = s->p;
    uint32_t n_frames = p->frames.n;
    unsigned char *is_process = calloc(n_frames ? n_frames : 1, 1);
    if (!is_process)
        return -1;
    for (uint32_t t = 0; t < p->n_trees; t++) {
        const bs_ptree *tree = &p->trees[t];
        for (uint32_t i = 0; i < tree->n_nodes; i++) {
            const bs_pnode *n = &tree->nodes[i];
            if (i == 0 && tree->synthetic_root)
                continue;
            if (i == 0)
                is_process[n->frame] = 1;
            s->self[n->frame] += n->self_ns;
            s->used[n->frame] = 1;
            if (n->parent == UINT32_MAX || (n->parent == 0 && tree->synthetic_root))
                continue;
            add_edge(s, tree->nodes[n->parent].frame, n);
        }
    }
    /* The file table grows one name at a time: modules are few next to
     * frames, and a linear search keeps it simple. */
    int rc = 0;
    for (uint32_t f = 0; f < n_frames && rc == 0; f++) {
        if (!s->used[f])
            continue;
        size_t len;
        const char *file = file_name_of(bs_frame_name(&p->frames, f), is_process[f], &len);
        rc = intern_file(s, file, len, &s->file_of[f]);
    }
    free(is_process);
    return rc;
}

static int cmp_edge(const void *a, const void *b)
{
    const cg_edge *x = a, *y = b;
    if (x->caller != y->caller)
        return x->caller < y->caller ? -1 : 1;
    return x->callee < y->callee ? -1 : x->callee > y->callee;
}

/* "fl=(3) lists" the first time, "fl=(3)" after. */
static void put_file(cg_state *s, const char *key, uint32_t file)
{
    if (s->file_written[file]) {
        fprintf(s->out, "%s=(%u)\n", key, file + 1);
        return;
    }
    s->file_written[file] = 1;
    fprintf(s->out, "%s=(%u) %s\n", key, file + 1, s->files[file]);
}

static void put_function(cg_state *s, const char *key, uint32_t frame, unsigned char *fn_written)
{
    if (fn_written[frame]) {
        fprintf(s->out, "%s=(%u)\n", key, frame + 1);
        return;
    }
    fn_written[frame] = 1;
    const char *name = bs_frame_name(&s->p->frames, frame);
    fprintf(s->out, "%s=(%u) %s\n", key, frame + 1, *name ? name : "?");
}

static void put_header(cg_state *s, uint64_t total)
{
    const bs_profile *p = s->p;
    FILE *out = s->out;
    fputs("# callgrind format\nversion: 1\ncreator: beamspy\n", out);
    if (p->meta.source[0])
        fprintf(out, "cmd: %s\n", p->meta.source);
    if (p->meta.node[0])
        fprintf(out, "desc: Node: %s\n", p->meta.node);
    if (p->meta.otp_release[0])
        fprintf(out, "desc: OTP: %s\n", p->meta.otp_release);
    if (p->truncated[0])
        fprintf(out, "desc: Truncated: %s\n", p->truncated);
    char times[BS_COMPENSATION_TEXT_CAP];
    if (bs_compensation_text(&p->compensation, times, sizeof times))
        fprintf(out, "desc: Times: %s\n", times);
    fputs("positions: line\n", out);
    if (p->unit == BS_UNIT_NS) {
        fputs("event: ns : Wall time (ns, traced)\nevents: ns\n", out);
    } else {
        fputs("event: samples : Samples\nevents: samples\n", out);
    }
    fprintf(out, "summary: %llu\n\n", (unsigned long long)total);
}

static int put_body(cg_state *s)
{
    const bs_profile *p = s->p;
    uint32_t n_frames = p->frames.n;
    /* Edges sorted by caller then callee, compacted to the front. */
    size_t k = 0;
    for (size_t i = 0; i < s->cap_edges; i++)
        if (s->edges[i].caller != UINT32_MAX)
            s->edges[k++] = s->edges[i];
    qsort(s->edges, k, sizeof *s->edges, cmp_edge);
    unsigned char *fn_written = calloc(n_frames ? n_frames : 1, 1);
    s->file_written = calloc(s->n_files ? s->n_files : 1, 1);
    if (!fn_written || !s->file_written) {
        free(fn_written);
        return -1;
    }
    size_t e = 0;
    for (uint32_t f = 0; f < n_frames; f++) {
        if (!s->used[f])
            continue;
        put_file(s, "fl", s->file_of[f]);
        put_function(s, "fn", f, fn_written);
        fprintf(s->out, "0 %llu\n", (unsigned long long)s->self[f]);
        while (e < k && s->edges[e].caller < f)
            e++;
        for (; e < k && s->edges[e].caller == f; e++) {
            const cg_edge *edge = &s->edges[e];
            if (s->file_of[edge->callee] != s->file_of[f])
                put_file(s, "cfl", s->file_of[edge->callee]);
            put_function(s, "cfn", edge->callee, fn_written);
            /* A call line with 0 calls is read as the caller's own cost. */
            fprintf(s->out, "calls=%llu 0\n0 %llu\n", (unsigned long long)(edge->calls ? edge->calls : 1),
                    (unsigned long long)edge->inclusive);
        }
        putc('\n', s->out);
    }
    free(fn_written);
    return 0;
}

int bs_write_callgrind(FILE *out, const bs_profile *p, const bs_render_opts *o)
{
    (void)o; /* filters were applied by bs_write_file */
    cg_state s = {.out = out, .p = p};
    uint32_t n = p->frames.n ? p->frames.n : 1;
    s.self = calloc(n, sizeof *s.self);
    s.used = calloc(n, 1);
    s.file_of = calloc(n, sizeof *s.file_of);
    int rc = -1;
    if (s.self && s.used && s.file_of && alloc_edges(&s) == 0 && aggregate(&s) == 0) {
        uint64_t total = 0;
        for (uint32_t f = 0; f < p->frames.n; f++)
            total += s.self[f];
        put_header(&s, total);
        rc = put_body(&s);
    }
    if (rc < 0 && !errno)
        errno = ENOMEM;
    for (uint32_t i = 0; i < s.n_files; i++)
        free(s.files[i]);
    free(s.files);
    free(s.file_written);
    free(s.edges);
    free(s.file_of);
    free(s.used);
    free(s.self);
    if (rc == 0 && ferror(out))
        rc = -1;
    return rc;
}
