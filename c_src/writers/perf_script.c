/* perf_script.c — `perf script` text as stackcollapse-perf.pl and speedscope
 * read it.
 *
 * Each Erlang process is a thread of "beam.smp" (pid 1, tid = 1, 2, ... in
 * profile order); each stack with self time becomes samples whose frames run
 * leaf first down to the process frame, so stackcollapse-perf.pl (which puts
 * the command name at the root and merges threads) still tells processes
 * apart.
 *
 * The two readers weigh samples differently, and both must show self time:
 * stackcollapse-perf.pl sums the period (the number before the event name),
 * speedscope ignores it and gives each sample the time between the midpoints
 * to its neighbours (the first and last of a thread: to their own
 * timestamp). One sample per stack cannot satisfy speedscope with unequal
 * weights, so each stack is written as a pair of samples on a virtual clock
 * where the stack owns the interval [s, e), e - s = its self time in ns:
 * the first at s + 1 ns, the second at e - 1 ns (the very first of a thread
 * at s, the very last at e). The midpoints then fall exactly on s and e, so
 * speedscope weighs the pair e - s; the periods of the pair add up to e - s,
 * so stackcollapse-perf.pl sums the same. Periods are nanoseconds, as perf's
 * own cpu-clock; stacks under 3 ns cannot hold two distinct instants and
 * are left out (the folded writer rounds them to 0 µs as well). Counts read
 * from folded files are written as 1 µs per sample.
 *
 * The timeline is not used: this is a sampling format and both readers
 * aggregate, so per-span samples would only multiply the size. The virtual
 * clock starts at 1 s and runs through the processes one after the other,
 * so timestamps increase through the whole file. Stacks deeper than
 * folded_max_depth frames (1024 by default) end in one "[deeper]" frame
 * that carries the rest of their time, as in the folded writer. Symbols get
 * no '(' (cut by stackcollapse-perf.pl; written '['), quotes (deleted by
 * it; written '`'), "->" (split into inlined frames by it; written "=>") or
 * "+0x" (stripped as an offset by both; written "+0X"). The dso is "beam"
 * and the address the frame id: both readers require them, neither shows
 * the address. */
#include "writers.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace_common.h"

#define MIN_WEIGHT_NS 3
#define CLOCK_START_NS 1000000000ull
#define DSO "beam"

typedef struct perf_writer {
    FILE *out;
    const bs_profile *p;
    int drop_sleep;
    uint64_t clock;          /* virtual ns */
    uint32_t tid;
    uint64_t remaining;      /* samples of this thread not written yet */
    int first;               /* the next sample is the thread's first */
    bs_frame_strings lines;  /* "\t<addr> <symbol> (beam)\n" per frame */
} perf_writer;

/* The symbol as both readers keep it verbatim. */
static void put_symbol(FILE *out, const char *name)
{
    if (!*name) {
        putc('?', out);
        return;
    }
    for (const char *s = name; *s; s++) {
        char c = *s;
        switch (c) {
        case '(': c = '['; break;
        case ')': c = ']'; break;
        case '"':
        case '\'': c = '`'; break;
        case ';': c = ':'; break;
        case '-': if (s[1] == '>') c = '='; break; /* "->" becomes "=>" */
        case 'x': if (s - name >= 2 && s[-1] == '0' && s[-2] == '+') c = 'X'; break; /* "+0x" */
        default: if ((unsigned char)c < 0x20 || c == 0x7f) c = '?'; break;
        }
        putc(c, out);
    }
}

/* Weight of node i in ns, 0 if nothing of its own is written. */
static uint64_t weight_of(void *ctx, const bs_ptree *t, uint32_t i)
{
    const perf_writer *w = ctx;
    if (i == 0 && t->synthetic_root)
        return 0;
    if (w->drop_sleep && i > 0 && bs_profile_is_sched_out(w->p, t->nodes[i].frame))
        return 0;
    return t->nodes[i].self_ns * (w->p->unit == BS_UNIT_COUNT ? 1000 : 1);
}

/* A made-up address per frame (the frame id + 1, in hex): both readers need
 * one and neither shows it, so it is kept short. */
static void put_frame_address(char *buf, size_t *n, uint64_t frame)
{
    static const char hex[] = "0123456789abcdef";
    uint64_t addr = frame + 1;
    char digits[16];
    size_t k = 0;
    do {
        digits[k++] = hex[addr & 15];
        addr >>= 4;
    } while (addr);
    while (k)
        buf[(*n)++] = digits[--k];
}

static void make_frame_line(FILE *out, const char *name, uint32_t frame, void *ctx)
{
    (void)ctx;
    char addr[24];
    size_t n = 0;
    addr[n++] = '\t';
    put_frame_address(addr, &n, frame);
    addr[n++] = ' ';
    fwrite(addr, 1, n, out);
    put_symbol(out, name);
    fputs(" (" DSO ")\n", out);
}

/* One sample: the header, then the frames leaf first, then a blank line. */
static int put_sample(perf_writer *w, const bs_ptree *t, uint32_t node, int deeper, uint64_t at, uint64_t period)
{
    char head[3 * BS_NUMBER_MAX + 48];
    size_t n = 0;
    memcpy(head, "beam.smp 1/", 11);
    n += 11;
    n += bs_fmt_uint(head + n, w->tid);
    head[n++] = ' ';
    n += bs_fmt_uint(head + n, at / 1000000000u);
    char frac[BS_NUMBER_MAX];
    size_t fl = bs_fmt_uint(frac, at % 1000000000u);
    head[n++] = '.';
    for (size_t z = fl; z < 9; z++)
        head[n++] = '0';
    memcpy(head + n, frac, fl);
    n += fl;
    head[n++] = ':';
    head[n++] = ' ';
    n += bs_fmt_uint(head + n, period);
    memcpy(head + n, " cpu-clock:\n", 12);
    n += 12;
    if (deeper) {
        head[n++] = '\t';
        put_frame_address(head, &n, w->p->frames.n);
        memcpy(head + n, " " BS_DEEPER_FRAME " (" DSO ")\n", 17);
        n += 17;
    }
    fwrite(head, 1, n, w->out);
    uint32_t stop = t->synthetic_root ? 0 : UINT32_MAX;
    for (uint32_t at_node = node; at_node != stop; at_node = at_node ? t->nodes[at_node].parent : UINT32_MAX) {
        size_t len;
        const char *line = bs_frame_string(&w->lines, w->p, t->nodes[at_node].frame, make_frame_line, NULL, &len);
        if (!line)
            return -1;
        fwrite(line, 1, len, w->out);
    }
    putc('\n', w->out);
    return 0;
}

static int count_sample(void *ctx, const bs_ptree *t, uint32_t node, int deeper, uint64_t weight)
{
    (void)t, (void)node, (void)deeper;
    if (weight >= MIN_WEIGHT_NS)
        ((perf_writer *)ctx)->remaining++;
    return 0;
}

/* A stack owning [s, e) of the virtual clock, as two samples (see the top). */
static int put_pair(void *ctx, const bs_ptree *t, uint32_t node, int deeper, uint64_t weight)
{
    perf_writer *w = ctx;
    if (weight < MIN_WEIGHT_NS)
        return 0;
    uint64_t s = w->clock, e = s + weight;
    uint64_t a = w->first ? s : s + 1, b = w->remaining == 1 ? e : e - 1;
    if (put_sample(w, t, node, deeper, a, weight / 2) < 0 || put_sample(w, t, node, deeper, b, weight - weight / 2) < 0)
        return -1;
    w->clock = e;
    w->first = 0;
    w->remaining--;
    return 0;
}

static int write_thread(perf_writer *w, const bs_ptree *t, unsigned max_depth)
{
    bs_sample_visitor count = {weight_of, count_sample, w}, pairs = {weight_of, put_pair, w};
    w->remaining = 0;
    w->first = 1;
    if (bs_walk_samples(t, max_depth, &count) < 0)
        return -1;
    return bs_walk_samples(t, max_depth, &pairs);
}

int bs_write_perf(FILE *out, const bs_profile *p, const bs_render_opts *o)
{
    perf_writer w = {.out = out, .p = p, .drop_sleep = o && o->drop_sleep, .clock = CLOCK_START_NS};
    if (bs_frame_strings_init(&w.lines, p->frames.n) < 0)
        return -1;
    int rc = 0;
    for (uint32_t ti = 0; ti < p->n_trees && rc == 0; ti++) {
        w.tid = ti + 1;
        rc = write_thread(&w, &p->trees[ti], o ? o->folded_max_depth : 0);
    }
    if (rc == 0 && ferror(out))
        rc = -1;
    bs_frame_strings_free(&w.lines);
    return rc;
}
