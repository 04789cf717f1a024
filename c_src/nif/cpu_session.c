/* cpu_session.c — the CPU sampling of a session (see cpu_session.h). */
#include "cpu_session.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <erl_nif.h>

#include "../cpu/perf_sampler.h"
#include "../cpu/sample_chains.h"
#include "../cpu/symbols.h"
#include "../cpu/thread_slices.h"
#include "../cpu/vm_threads.h"
#include "../engine/frame_table.h"
#include "../engine/sampled_times.h"
#include "session.h"

#define MAX_THREADS 1024u
#define BS_CPU_MAX_CHAIN 512u /* frames of one sample kept (the kernel gives at most perf_event_max_stack) */
#define SYMBOLS_MAX_BYTES (64u << 20)
#define CHAINS_MAX_BYTES (64u << 20) /* option times => samples: the kept chains (sample_chains.h) */

/* Trees of samples that no traced process holds. */
enum extra_tree { EXTRA_SCHEDULER, EXTRA_DIRTY_CPU, EXTRA_DIRTY_IO, EXTRA_UNKNOWN, EXTRA_TREES };
static const char *const extra_labels[EXTRA_TREES] = {"[scheduler]", "[dirty cpu scheduler]",
                                                      "[dirty io scheduler]", "[unknown process]"};

typedef struct addr_slot {
    uint64_t addr;   /* 0: empty */
    uint32_t frame;
} addr_slot;

struct bs_cpu {
    bs_session *s;
    unsigned hz;
    int all;                      /* every process is traced: keep the samples no one holds */
    bs_perf_sampler *sampler;
    bs_symbols symbols;
    bs_thread_slices slices;
    bs_vm_thread threads[MAX_THREADS];
    unsigned n_threads;
    ErlNifTid drain_tid;
    int drain_started;
    _Atomic int stopping;
    int stopped;
    /* Drain thread only (and export, after stop): */
    bs_frame_table frames;        /* canonical texts, see canonical() */
    addr_slot *cache;
    bs_proc extra[EXTRA_TREES];
    int extra_used[EXTRA_TREES];
    uint64_t samples, dropped, unresolved_frames, frames_named, truncated_chains, other_frames, own_code, others;
    uint32_t truncated_frame, other_frame;
    unsigned char *own;           /* per frame id: 1 for beamspy's own modules */
    uint32_t own_cap;
    char excluded[BS_MAX_EXCLUDED][256]; /* beamspy's own modules, as text */
    int n_excluded;
    uint32_t chain[BS_CPU_MAX_CHAIN];
    /* Option times => samples (s->cpu_times): the samples of traced
     * processes, kept apart from their traced trees (cpu_traced_sample). */
    bs_sample_chains chains;
    unsigned char *kinds;         /* per frame id: enum frame_kind, 0 not yet known */
    uint32_t kinds_cap;
    uint64_t traced_samples, tracer_samples, no_erlang;
};

/* Canonical frame texts (\x01 separates parts; names never hold it):
 *   "E" module \1 function \1 arity   Erlang code (JIT)
 *   "J" name                          other JIT code (the VM's shared fragments)
 *   "N" object \1 symbol              native code (symbol may be empty)
 *   "U"                               no mapping holds the address
 *   "P" text                          a pseudo frame ([truncated], [other code]) */
static uint32_t intern(bs_cpu *c, const char *text)
{
    if (c->frames.n >= BS_CPU_MAX_FRAMES) {
        c->other_frames++;
        return c->other_frame;
    }
    return bs_frame_table_intern(&c->frames, text, strlen(text));
}

static uint32_t frame_of(bs_cpu *c, uint64_t addr)
{
    addr_slot *slot = &c->cache[(addr >> 2) * 0x9E3779B97F4A7C15ull >> 48 & (BS_CPU_ADDR_CACHE - 1)];
    if (slot->addr == addr && addr)
        return slot->frame;
    bs_symbol sym;
    char text[1024];
    if (bs_symbols_resolve(&c->symbols, addr, &sym) < 0)
        sym.kind = BS_SYM_UNKNOWN;
    switch (sym.kind) {
    case BS_SYM_ERLANG:
        snprintf(text, sizeof text, "E%s\x01%s\x01%u", sym.module ? sym.module : "?",
                 sym.function ? sym.function : "?", sym.arity);
        break;
    case BS_SYM_JIT_OTHER:
        snprintf(text, sizeof text, "J%s", sym.name ? sym.name : "?");
        break;
    case BS_SYM_NATIVE:
        snprintf(text, sizeof text, "N%s\x01%s", sym.object ? sym.object : "?", sym.name ? sym.name : "");
        break;
    default:
        if (sym.kind == BS_SYM_UNKNOWN && sym.object)
            snprintf(text, sizeof text, "N%s\x01", sym.object);
        else
            snprintf(text, sizeof text, "U");
        c->unresolved_frames++;
        break;
    }
    uint32_t id = intern(c, text);
    if (id == UINT32_MAX)
        return UINT32_MAX;
    if (id >= c->own_cap) { /* grown with the frame table */
        uint32_t cap = c->own_cap ? c->own_cap * 2 : 1024;
        while (cap <= id)
            cap *= 2;
        unsigned char *own = realloc(c->own, cap);
        if (!own)
            return UINT32_MAX;
        memset(own + c->own_cap, 0, cap - c->own_cap);
        c->own = own;
        c->own_cap = cap;
    }
    if (sym.kind == BS_SYM_ERLANG && sym.module)
        for (int i = 0; i < c->n_excluded; i++)
            if (strcmp(sym.module, c->excluded[i]) == 0)
                c->own[id] = 1;
    /* An address no one names yet may be code loaded since (the JIT's map
     * grows): asked again next time (symbols.h bounds the rereads). */
    if (sym.kind != BS_SYM_UNKNOWN) {
        slot->addr = addr;
        slot->frame = id;
    }
    c->frames_named++;
    return id;
}

static bs_call_tree *extra_tree(bs_cpu *c, enum extra_tree which)
{
    if (!c->extra_used[which]) {
        if (bs_proc_init(&c->extra[which], &c->s->budget, 0, 0, 0) < 0)
            return NULL;
        c->extra_used[which] = 1;
    }
    return &c->extra[which].tree;
}

static enum extra_tree thread_extra(const bs_cpu *c, int tid)
{
    for (unsigned i = 0; i < c->n_threads; i++)
        if (c->threads[i].tid == tid)
            return c->threads[i].kind == BS_THREAD_DIRTY_CPU  ? EXTRA_DIRTY_CPU
                   : c->threads[i].kind == BS_THREAD_DIRTY_IO ? EXTRA_DIRTY_IO
                                                              : EXTRA_SCHEDULER;
    return EXTRA_SCHEDULER;
}

/* Option times => samples --------------------------------------------- */

enum frame_kind { KIND_UNKNOWN, KIND_ERLANG, KIND_OWN, KIND_TRACER, KIND_OTHER };

/* Native symbols of the VM's call tracing (breakpoints, match specs of
 * trace patterns, calls of the tracer NIF, the caller's lookup), matched
 * from their start; and parts
 * of names matched anywhere (the JIT's breakpoint fragments, return_to
 * tracing). */
static const char *const tracer_prefixes[] = {"erts_generic_breakpoint", "erts_call_trace", "erts_trace_",
                                              "erts_tracer", "erts_is_tracer", "erts_match_set_run_trace",
                                              "erts_bif_trace", "trace_", "erts_nif_call_function",
                                              "erts_find_function_from_pc"};
static const char *const tracer_parts[] = {"generic_bp_", "debug_bp", "return_to_trace", "return_trace"};

static int is_tracer_name(const char *name)
{
    for (size_t i = 0; i < sizeof tracer_prefixes / sizeof *tracer_prefixes; i++)
        if (strncmp(name, tracer_prefixes[i], strlen(tracer_prefixes[i])) == 0)
            return 1;
    for (size_t i = 0; i < sizeof tracer_parts / sizeof *tracer_parts; i++)
        if (strstr(name, tracer_parts[i]))
            return 1;
    return 0;
}

/* What a frame is, from its canonical text (see intern): the program's
 * Erlang code, beamspy's own Erlang code, the tracer's machinery (the VM's
 * breakpoint and trace code, beamspy's NIF library), or other code. */
static enum frame_kind frame_kind(bs_cpu *c, uint32_t f)
{
    if (f >= c->kinds_cap) {
        uint32_t cap = c->kinds_cap ? c->kinds_cap : 1024;
        while (cap <= f)
            cap *= 2;
        unsigned char *k = realloc(c->kinds, cap);
        if (!k)
            return KIND_OTHER;
        memset(k + c->kinds_cap, 0, cap - c->kinds_cap);
        c->kinds = k;
        c->kinds_cap = cap;
    }
    if (c->kinds[f])
        return (enum frame_kind)c->kinds[f];
    const char *t = bs_frame_name(&c->frames, f);
    enum frame_kind kind = KIND_OTHER;
    if (t[0] == 'E')
        kind = f < c->own_cap && c->own[f] ? KIND_OWN : KIND_ERLANG;
    else if (t[0] == 'J' && is_tracer_name(t + 1))
        kind = KIND_TRACER;
    else if (t[0] == 'N') {
        const char *sym = strchr(t, '\x01');
        if (strncmp(t + 1, "beamspy", 7) == 0 || (sym && is_tracer_name(sym + 1)))
            kind = KIND_TRACER;
    }
    c->kinds[f] = (unsigned char)kind;
    return kind;
}

/* A sample while a traced process ran: the tracer's cost when a frame of
 * the tracer's machinery (or beamspy's own Erlang code) comes before any
 * Erlang function of the program; else its Erlang functions, innermost
 * first (a BIF's or the VM's C time goes to the function that called it),
 * are kept for the export (cpu_traced_export). The traced trees are never
 * touched here: the tracer's callbacks own them. */
static void traced_sample(bs_cpu *c, const bs_cpu_sample *smp)
{
    bs_thread_log *log = bs_thread_slices_log(&c->slices, smp->tid);
    uint64_t pid = 0;
    if (!log || !bs_thread_log_at(&c->slices, log, smp->time_ns, &pid) || !pid ||
        !bs_pid_table_find(&c->s->pids, pid)) {
        c->others++; /* no traced process held the thread */
        return;
    }
    c->traced_samples++;
    uint32_t erl[BS_CHAIN_MAX_FRAMES], n = 0;
    for (uint32_t i = 0; i < smp->n_ips && n < BS_CHAIN_MAX_FRAMES; i++) {
        /* A return address points after its call (see on_sample). */
        uint32_t f = frame_of(c, i == 0 ? smp->ips[0] : smp->ips[i] - 1);
        if (f == UINT32_MAX) {
            c->dropped++;
            return;
        }
        switch (frame_kind(c, f)) {
        case KIND_ERLANG:
            erl[n++] = f;
            break;
        case KIND_OWN:
        case KIND_TRACER:
            if (n == 0) {
                c->tracer_samples++;
                return;
            }
            break;
        default:
            break;
        }
    }
    if (n == 0)
        c->no_erlang++; /* the VM's C code (no frame pointers): the program's or the tracer's */
    (void)bs_sample_chains_add(&c->chains, pid, erl, n);
}

static void on_sample(void *ctx, const bs_cpu_sample *smp)
{
    bs_cpu *c = ctx;
    int reason = atomic_load(&c->s->stop_reason);
    if (reason != BS_STOP_NONE && reason != BS_STOP_REQUESTED)
        return; /* stopped by a limit: nothing more is added */
    c->samples++;
    if (c->s->cpu_times) {
        traced_sample(c, smp);
        return;
    }
    bs_thread_log *log = bs_thread_slices_log(&c->slices, smp->tid);
    uint64_t pid = 0;
    int known = log && bs_thread_log_at(&c->slices, log, smp->time_ns, &pid);
    bs_call_tree *tree = NULL;
    if (known && pid) {
        bs_traced_proc *r = bs_pid_table_find(&c->s->pids, pid);
        if (r && r->proc.state != BS_EXITED)
            tree = &r->proc.tree;
    }
    if (!tree && !c->all) {
        c->others++; /* not one of the chosen processes */
        return;
    }
    if (!tree)
        tree = extra_tree(c, !known ? EXTRA_UNKNOWN : pid ? EXTRA_UNKNOWN : thread_extra(c, smp->tid));
    if (!tree) {
        c->dropped++;
        return;
    }
    uint32_t at = 0;
    if (smp->chain_truncated) {
        c->truncated_chains++;
        bs_key k = {BS_CPU_FRAME_MODULE, c->truncated_frame, 0};
        if ((at = bs_call_tree_child(tree, at, &k)) == BS_NO_NODE)
            goto full;
    }
    /* Root first. A return address points after its call: step back one
     * byte so that a call ending a function names that function. Frames of
     * beamspy's own code, and all below them, are left out (as tracing
     * leaves them out): apply's caller starts at the function applied. */
    uint32_t n = smp->n_ips < BS_CPU_MAX_CHAIN ? smp->n_ips : BS_CPU_MAX_CHAIN, from = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t addr = smp->ips[n - 1 - i];
        uint32_t f = frame_of(c, i + 1 == n ? addr : addr - 1);
        if (f == UINT32_MAX)
            goto full;
        c->chain[i] = f;
        if (c->own[f])
            from = i + 1;
    }
    if (from == n && n > 0 && c->own[c->chain[n - 1]]) {
        c->own_code++; /* beamspy itself was running: not the program's time */
        return;
    }
    for (uint32_t i = from; i < n; i++) {
        bs_key k = {BS_CPU_FRAME_MODULE, c->chain[i], 0};
        if ((at = bs_call_tree_child(tree, at, &k)) == BS_NO_NODE)
            goto full;
    }
    tree->nodes[at].self_ns += 1;
    tree->nodes[at].calls += 1;
    return;
full:
    c->dropped++;
    if (bs_budget_is_exhausted(&c->s->budget))
        bs_session_stop_for_limit(NULL, c->s, BS_STOP_MAX_MEMORY);
}

static void *drain_loop(void *arg)
{
    bs_cpu *c = arg;
    const struct timespec pause = {0, BS_CPU_DRAIN_MS * 1000000L};
    while (!atomic_load(&c->stopping)) {
        (void)bs_perf_sampler_drain(c->sampler, on_sample, c);
        nanosleep(&pause, NULL);
    }
    return NULL;
}

bs_cpu *bs_cpu_open(ErlNifEnv *env, bs_session *s, unsigned hz, int all, char *why, size_t cap)
{
    if (hz < BS_CPU_MIN_HZ || hz > BS_CPU_MAX_HZ) {
        snprintf(why, cap, "the sampling rate must be %u to %u Hz, not %u", BS_CPU_MIN_HZ, BS_CPU_MAX_HZ, hz);
        return NULL;
    }
    bs_cpu *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(why, cap, "out of memory");
        return NULL;
    }
    c->s = s;
    c->hz = hz;
    c->all = all;
    for (int i = 0; i < s->n_excluded; i++)
        if (enif_get_atom(env, s->excluded[i], c->excluded[c->n_excluded], sizeof c->excluded[0], ERL_NIF_LATIN1) > 0)
            c->n_excluded++;
    atomic_init(&c->stopping, 0);
    bs_frame_table_init(&c->frames);
    bs_sample_chains_init(&c->chains, CHAINS_MAX_BYTES);
    c->cache = calloc(BS_CPU_ADDR_CACHE, sizeof *c->cache);
    c->truncated_frame = bs_frame_table_intern(&c->frames, "P[truncated]", 12);
    c->other_frame = bs_frame_table_intern(&c->frames, "P[other code]", 13);
    if (!c->cache || c->truncated_frame == UINT32_MAX || c->other_frame == UINT32_MAX) {
        snprintf(why, cap, "out of memory");
        goto fail_frames;
    }
    /* On the heap: a scheduler's stack is small. */
    bs_vm_thread *found = malloc(MAX_THREADS * sizeof *found);
    int *tids = malloc(MAX_THREADS * sizeof *tids);
    int n = found && tids ? bs_vm_threads_list(found, MAX_THREADS) : -1;
    for (int i = 0; i < n && i < (int)MAX_THREADS; i++)
        if (found[i].kind != BS_THREAD_OTHER) {
            tids[c->n_threads] = found[i].tid;
            c->threads[c->n_threads++] = found[i];
        }
    free(found);
    if (n < 0) {
        free(tids);
        snprintf(why, cap, "cannot list the VM's threads in /proc/self/task");
        goto fail_frames;
    }
    if (c->n_threads == 0) {
        free(tids);
        snprintf(why, cap, "no scheduler thread found in /proc/self/task (is this an Erlang VM?)");
        goto fail_frames;
    }
    if (bs_symbols_init(&c->symbols, (int)getpid(), SYMBOLS_MAX_BYTES, why, cap) < 0) {
        free(tids);
        goto fail_frames;
    }
    if (bs_thread_slices_init(&c->slices, tids, c->n_threads) < 0) {
        free(tids);
        snprintf(why, cap, "out of memory");
        goto fail_symbols;
    }
    int opened = bs_perf_sampler_open(&c->sampler, tids, c->n_threads, hz, why, cap);
    free(tids);
    if (opened < 0)
        goto fail_slices;
    if (enif_thread_create("beamspy_cpu_drain", &c->drain_tid, drain_loop, c, NULL) != 0) {
        snprintf(why, cap, "cannot start the sampler's drain thread");
        goto fail_sampler;
    }
    c->drain_started = 1;
    if (bs_perf_sampler_enable(c->sampler) < 0) {
        snprintf(why, cap, "the kernel refused to start sampling (PERF_EVENT_IOC_ENABLE)");
        atomic_store(&c->stopping, 1);
        enif_thread_join(c->drain_tid, NULL);
        c->drain_started = 0;
        goto fail_sampler;
    }
    return c;
fail_sampler:
    bs_perf_sampler_close(c->sampler);
fail_slices:
    bs_thread_slices_free(&c->slices);
fail_symbols:
    bs_symbols_free(&c->symbols);
fail_frames:
    free(c->cache);
    free(c->own);
    free(c->kinds);
    bs_sample_chains_free(&c->chains);
    bs_frame_table_free(&c->frames);
    free(c);
    return NULL;
}

void bs_cpu_switch(bs_cpu *c, uint64_t pid, uint64_t t)
{
    bs_thread_log *log = bs_thread_slices_log(&c->slices, bs_current_tid());
    if (log)
        bs_thread_log_switch(log, t, pid);
}

void bs_cpu_stop(bs_cpu *c)
{
    if (c->stopped)
        return;
    c->stopped = 1;
    (void)bs_perf_sampler_disable(c->sampler);
    atomic_store(&c->stopping, 1);
    if (c->drain_started)
        enif_thread_join(c->drain_tid, NULL);
    c->drain_started = 0;
    (void)bs_perf_sampler_drain(c->sampler, on_sample, c); /* what came in since */
}

void bs_cpu_close(bs_cpu *c)
{
    if (!c)
        return;
    bs_cpu_stop(c);
    bs_perf_sampler_close(c->sampler);
    bs_thread_slices_free(&c->slices);
    bs_symbols_free(&c->symbols);
    for (int i = 0; i < EXTRA_TREES; i++)
        if (c->extra_used[i])
            bs_proc_free(&c->extra[i]);
    free(c->cache);
    free(c->own);
    free(c->kinds);
    bs_sample_chains_free(&c->chains);
    bs_frame_table_free(&c->frames);
    free(c);
}

unsigned bs_cpu_hz(const bs_cpu *c)
{
    return c->hz;
}

int bs_cpu_frame_name(const bs_cpu *c, uint64_t frame, bs_name_style style, char *buf, size_t cap)
{
    if (frame >= c->frames.n || cap < 16)
        return -1;
    const char *t = bs_frame_name(&c->frames, (uint32_t)frame);
    const char *sep1 = strchr(t + 1, '\x01');
    const char *sep2 = sep1 ? strchr(sep1 + 1, '\x01') : NULL;
    switch (t[0]) {
    case 'E':
        if (!sep1 || !sep2)
            break;
        return (int)bs_format_mfa(buf, cap, style, t + 1, (size_t)(sep1 - t - 1), sep1 + 1,
                                  (size_t)(sep2 - sep1 - 1), (unsigned)strtoul(sep2 + 1, NULL, 10));
    case 'J':
        return snprintf(buf, cap, "[JIT] %s", t + 1) < (int)cap ? (int)strlen(buf) : (int)cap - 1;
    case 'N':
        if (!sep1)
            break;
        if (sep1[1])
            snprintf(buf, cap, "%s [%.*s]", sep1 + 1, (int)(sep1 - t - 1), t + 1);
        else
            snprintf(buf, cap, "[%.*s]", (int)(sep1 - t - 1), t + 1);
        return (int)strlen(buf);
    case 'P':
        snprintf(buf, cap, "%s", t + 1);
        return (int)strlen(buf);
    default:
        break;
    }
    snprintf(buf, cap, "[unknown code]");
    return (int)strlen(buf);
}

int bs_cpu_export(bs_cpu *c, bs_profile *out, bs_key_namer namer, void *ctx)
{
    for (int i = 0; i < EXTRA_TREES; i++)
        if (c->extra_used[i] && c->extra[i].tree.n_nodes > 1 &&
            bs_profile_add_proc(out, &c->extra[i], extra_labels[i], namer, ctx) < 0)
            return -1;
    out->unit = BS_UNIT_COUNT;
    bs_perf_stats st;
    bs_perf_sampler_stats(c->sampler, &st);
    char note[512];
    snprintf(note, sizeof note,
             "CPU samples at %u Hz of %u scheduler threads: %llu samples, %llu lost by the kernel, %llu with "
             "their outermost frames cut (perf_event_max_stack %u), %llu left out (memory), %llu thread "
             "switches lost, %llu in beamspy's own code and %llu of other processes or the schedulers left "
             "out; %llu of %llu code addresses named by no symbol",
             c->hz, c->n_threads, (unsigned long long)c->samples, (unsigned long long)st.lost,
             (unsigned long long)c->truncated_chains, st.max_stack, (unsigned long long)c->dropped,
             (unsigned long long)atomic_load(&c->slices.lost), (unsigned long long)c->own_code,
             (unsigned long long)c->others,
             (unsigned long long)c->unresolved_frames,
             (unsigned long long)c->frames_named);
    size_t used = strlen(out->notes);
    snprintf(out->notes + used, sizeof out->notes - used, "%s%s", used ? "; " : "", note);
    return 0;
}

/* The profile's frame id of each chain frame (the sampler's frame ids),
 * named as the traced trees' frames were; UINT32_MAX for one no tree has. */
static int map_chain_frames(bs_cpu *c, const bs_profile *out, bs_key_namer namer, void *ctx, uint32_t *mapped)
{
    uint32_t *by_frame = malloc((c->frames.n ? c->frames.n : 1) * sizeof *by_frame);
    if (!by_frame)
        return -1;
    memset(by_frame, 0xff, (c->frames.n ? c->frames.n : 1) * sizeof *by_frame); /* UINT32_MAX: not named yet */
    char name[1024];
    for (uint32_t i = 0; i < c->chains.n_frames; i++) {
        uint32_t f = c->chains.frames[i];
        if (f >= c->frames.n) {
            mapped[i] = UINT32_MAX;
            continue;
        }
        if (by_frame[f] == UINT32_MAX) {
            bs_key k = {BS_CPU_FRAME_MODULE, f, 0};
            int len = namer(ctx, &k, name, sizeof name);
            uint32_t id = len < 0 ? UINT32_MAX : bs_profile_find_frame(out, name);
            by_frame[f] = id == UINT32_MAX ? UINT32_MAX - 1 : id;
        }
        mapped[i] = by_frame[f] == UINT32_MAX - 1 ? UINT32_MAX : by_frame[f];
    }
    free(by_frame);
    return 0;
}

int bs_cpu_traced_export(bs_cpu *c, bs_profile *out, const uint64_t *pids, uint32_t n_pids, bs_key_namer namer,
                         void *ctx)
{
    uint32_t nf = out->frames.n;
    int rc = -1;
    uint32_t *mapped = malloc((c->chains.n_frames ? c->chains.n_frames : 1) * sizeof *mapped);
    unsigned char *keep = calloc(nf ? nf : 1, 1);
    uint64_t *scratch = calloc((size_t)(nf ? nf : 1) * 4, sizeof *scratch);
    bs_sample_chain *list = malloc((c->chains.n ? c->chains.n : 1) * sizeof *list);
    if (!mapped || !keep || !scratch || !list || bs_sample_chains_index(&c->chains) < 0 ||
        map_chain_frames(c, out, namer, ctx, mapped) < 0)
        goto done;
    const uint32_t pseudo[] = {out->sleep_frame, out->wait_frame, out->runnable_frame, out->gc_frame};
    for (size_t i = 0; i < sizeof pseudo / sizeof *pseudo; i++)
        if (pseudo[i] < nf)
            keep[pseudo[i]] = 1;
    bs_sampled_scratch sc = {nf, scratch, scratch + nf, scratch + 2 * (size_t)nf, scratch + 3 * (size_t)nf};
    bs_sampled_stats st = {0, 0, 0};
    uint64_t ns_per_sample = 1000000000ull / c->hz;
    for (uint32_t ti = 0; ti < n_pids && ti < out->n_trees; ti++) {
        const bs_chain_ref *refs;
        uint32_t n = pids[ti] ? bs_sample_chains_of(&c->chains, pids[ti], &refs) : 0;
        for (uint32_t j = 0; j < n; j++) {
            const bs_chain_entry *e = &c->chains.entries[refs[j].entry];
            list[j] = (bs_sample_chain){mapped + e->off, e->n, e->count};
        }
        if (pids[ti] && bs_sampled_times_apply(&out->trees[ti], keep, list, n, ns_per_sample, &sc, &st) < 0)
            goto done;
    }
    bs_perf_stats ps;
    bs_perf_sampler_stats(c->sampler, &ps);
    uint64_t program = c->traced_samples - c->tracer_samples;
    char note[768];
    snprintf(note, sizeof note,
             "self times from CPU samples, not traced times: %llu samples at %u Hz of the traced processes "
             "(%.3f ms each); the tracer took %.1f%% of their sampled CPU (%llu samples in the VM's trace "
             "code or beamspy's); %llu samples reached no Erlang function and %llu no function traced in "
             "their process (both charged to the process itself); %llu samples of untraced functions "
             "charged to their nearest traced caller; %llu lost by the kernel, %llu not kept (memory); "
             "call counts and stacks are the trace's",
             (unsigned long long)program, c->hz, 1000.0 / c->hz,
             c->traced_samples ? 100.0 * (double)c->tracer_samples / (double)c->traced_samples : 0.0,
             (unsigned long long)c->tracer_samples, (unsigned long long)c->no_erlang,
             (unsigned long long)(st.untraced > c->no_erlang ? st.untraced - c->no_erlang : 0),
             (unsigned long long)st.to_caller, (unsigned long long)ps.lost,
             (unsigned long long)(c->chains.dropped + c->dropped));
    size_t used = strlen(out->notes);
    snprintf(out->notes + used, sizeof out->notes - used, "%s%s", used ? "; " : "", note);
    rc = 0;
done:
    free(mapped);
    free(keep);
    free(scratch);
    free(list);
    return rc;
}
