/* cpu_session.c — the CPU sampling of a session (see cpu_session.h). */
#include "cpu_session.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <erl_nif.h>

#include "../cpu/dwarf_unwind.h"
#include "../cpu/hot_counts.h"
#include "../cpu/erl_caller.h"
#include "../cpu/fragment_site.h"
#include "../cpu/gc_stacks.h"
#include "../cpu/process_ptrs.h"
#include "../cpu/perf_sampler.h"
#include "../cpu/sample_chains.h"
#include "../cpu/sched_work.h"
#include "../cpu/proc_mem.h"
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
#define UNWIND_MAX_BYTES (64u << 20) /* the DWARF unwinder's CFI and tables (dwarf_unwind.h) */
#define DWARF_MAX_FRAMES 128u        /* C frames unwound per sample */
#define DIRTY_SAVED_MAX 32u          /* callee-saved values kept per sample (dirty_work_pid) */
#define BS_CPU_FRAGMENT_RETS 64u     /* return addresses into shared fragments whose shape is kept (one
                                        fragment has 1-3 calls into C; a session sees a few dozen) */

/* Trees of samples that no traced process holds. */
enum extra_tree { EXTRA_SCHEDULER, EXTRA_DIRTY_CPU, EXTRA_DIRTY_IO, EXTRA_UNKNOWN, EXTRA_TREES };
static const char *const extra_labels[EXTRA_TREES] = {"[scheduler]", "[dirty cpu scheduler]",
                                                      "[dirty io scheduler]", "[unknown process]"};

typedef struct addr_slot {
    uint64_t addr;   /* 0: empty */
    uint32_t frame;
} addr_slot;

/* The innermost JIT frame of a sample (the join by registers): its
 * address (a return address minus 1 above the leaf) and r13 there. */
typedef struct jit_frame {
    int found;     /* the sample reached JIT code (Erlang code or a fragment) */
    uint32_t index; /* its place in the sample's stack, leaf first */
    int scheduler; /* set by tree_by_regs: it is the scheduler's loop */
    uint64_t addr;
    int has_r13;
    uint64_t r13;
} jit_frame;

struct bs_cpu {
    bs_session *s;
    unsigned hz;
    int all;                      /* every process is traced: keep the samples no one holds */
    int by_regs;                  /* a sample's process from its registers (r13), not from thread_slices */
    int regs_frames;              /* sample_stack notes the innermost JIT frame and its r13 (x86_64: by_regs,
                                     and times => samples for its collections' stacks) */
    bs_perf_sampler *sampler;   /* closed (NULL) by bs_cpu_stop: the perf events go with the stop */
    bs_perf_stats sampler_stats; /* the sampler's figures, copied at the stop for the notes */
    bs_symbols symbols;
    bs_thread_slices slices;
    bs_vm_thread threads[MAX_THREADS];
    unsigned n_threads;
    ErlNifTid drain_tid;
    long drain_ms;                /* BS_CPU_DRAIN_MS, shorter when a ring holds fewer samples than that at hz */
    int drain_started;
    _Atomic int stopping;
    /* What the sampler costs the VM in user space, said in the notes: the
     * drain thread's own CPU time (read by that thread as it ends) against
     * the whole VM's over the session. The kernel's work of taking a sample
     * is charged to the sampled threads and is not in drain_cpu_ns. */
    uint64_t drain_cpu_ns, vm_cpu_start_ns, vm_cpu_ns;
    int stopped;
    /* Drain thread only (and export, after stop): */
    bs_frame_table frames;        /* canonical texts, see canonical() */
    addr_slot *cache;
    bs_proc extra[EXTRA_TREES];
    int extra_used[EXTRA_TREES];
    uint64_t samples, dropped, unresolved_frames, frames_named, truncated_chains, other_frames, own_code, others;
    uint32_t truncated_frame, other_frame;
    uint32_t spin_frame;          /* [spin]: a scheduler's own samples spinning before it sleeps */
    bs_sched_sites spin_sites;    /* sched_work.h */
    uint64_t spins;
    bs_hot_counts hot;            /* top's window of samples per function (hot_counts.h), under hot_lock */
    ErlNifMutex *hot_lock;
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
    uint64_t traced_samples, tracer_samples, no_erlang, gc_samples;
    /* The C frames' unwinding (drain thread only): NULL when libdw is
     * missing or the rings with stack copies were refused (why in no_unwind). */
    bs_dwarf_unwinder *unwinder;
    char no_unwind[480];
    bs_proc_mem mem;
    int sample_cut; /* the sample being drained lost its outer frames: they had changed before the drain */
    uint64_t walks_other_site; /* walks on past a caller's frame that now held another of its calls */
    uint64_t saved_values[DIRTY_SAVED_MAX]; /* the sample's callee-saved register values (dwarf_unwind.h) */
    bs_unwind_saved saved;
    uint64_t regs_dirty_named; /* dirty samples named by a Process * their C frames kept */
    uint64_t walks_cut, c_leaf, reached_jit, fragment_first, callers_found, callers_refused, jit_leaf_fragment, erlang_any;
    /* Callers of shared fragments with a frame of their own (fragment_site.h):
     * found from the call site saved in the stack copy, from the kernel's
     * frame-pointer walk, or not found (by fragment: frag[i].missed). */
    uint64_t callers_site, callers_kernel, callers_missed;
    /* Callers of global::garbage_collect from the collection's start: the
     * tracer's enabled/3, on the scheduler thread as a chosen process's
     * collection starts (stack still in place), reads the return address the
     * fragment stored in the process (c_p->i, at ra_store_off) through the
     * Process * the drain learnt (ptrs) and logs it on that thread's log of
     * slices (unused there otherwise when joined by registers) or, with
     * times => samples, whose slices hold the pids, on its log of
     * gc_callers (caller_logs); a sample under the fragment between the
     * collection's start and end takes it. */
    bs_process_ptrs ptrs;
    bs_thread_slices gc_callers;  /* times => samples only: 256 KiB a thread (thread_slices.h) */
    _Atomic int64_t ra_store_off; /* -1 until decoded from the fragment's code */
    uint64_t gc_fragment;         /* its start: from the perf map at the open, else once seen (drain thread) */
    uint64_t callers_gc;
    /* The frames under that caller, taken as a sampled collection ends
     * (gc_stacks.h), from c_p->stop (stop_off, decoded from the fragment's
     * code as it takes its stack back); gc_stacks' logs are the slices'
     * logs, by index. gc_stacks_used: samples that took them. */
    _Atomic int64_t stop_off;     /* -1 until decoded */
    _Atomic int64_t fp_off;       /* c_p->frame_pointer, saved with stop: -1 until decoded */
    bs_gc_stacks gc_stacks;
    uint64_t gc_stacks_used, dirty_gc_stacks;
    struct fragment_ret {
        uint64_t ret, start;   /* a return address into a fragment (its call into C), the fragment's start */
        bs_fragment_shape shape;
        uint64_t missed;       /* samples under it whose caller was not found */
    } frag[BS_CPU_FRAGMENT_RETS];
    unsigned n_frag;
    /* The join by registers (by_regs): what became of the samples. */
    uint64_t regs_process, regs_late, regs_scheduler, regs_dirty, regs_dirty_gc, regs_no_jit, regs_no_r13, regs_bad_read, regs_not_pid;
    uint64_t dwarf[DWARF_MAX_FRAMES + 1];
    uint64_t unwound[BS_CPU_MAX_CHAIN];
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

enum frame_kind { KIND_UNKNOWN, KIND_ERLANG, KIND_OWN, KIND_TRACER, KIND_GC, KIND_OTHER };

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
 * breakpoint and trace code, beamspy's NIF library), the garbage collector
 * (the JIT's global::garbage_collect, erts_garbage_collect_*), or other
 * code. */
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
    else if (t[0] == 'J' && strstr(t + 1, "garbage_collect"))
        kind = KIND_GC;
    else if (t[0] == 'N') {
        const char *sym = strchr(t, '\x01');
        if (strncmp(t + 1, "beamspy", 7) == 0 || (sym && is_tracer_name(sym + 1)))
            kind = KIND_TRACER;
        else if (sym && strncmp(sym + 1, "erts_garbage_collect", 20) == 0)
            kind = KIND_GC;
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
static uint32_t sample_stack(bs_cpu *c, const bs_cpu_sample *smp, const uint64_t **ips, jit_frame *jf);
static int is_scheduler_fragment(bs_cpu *c, uint64_t addr);
static uint64_t pid_at(bs_cpu *c, uint64_t r13);
static uint32_t with_dirty_gc_stack(bs_cpu *c, const bs_cpu_sample *smp, const uint64_t **ips, uint32_t n);

/* The Process * of pid, the traced process that held the sample's thread,
 * from r13 at the sample's innermost JIT frame (x86_64; process_ptrs.h), so
 * that the callbacks of its collections can read their caller and stack
 * (bs_cpu_gc_start, bs_cpu_dirty_gc_start). */
static void learn_process_ptr(bs_cpu *c, const jit_frame *jf, uint64_t pid)
{
    if (jf->found && jf->has_r13 && bs_process_ptrs_find(&c->ptrs, pid) != jf->r13 &&
        !is_scheduler_fragment(c, jf->addr) && pid_at(c, jf->r13) == pid)
        bs_process_ptrs_learn(&c->ptrs, pid, jf->r13);
}

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
    const uint64_t *ips;
    jit_frame jf;
    uint32_t n_ips = sample_stack(c, smp, &ips, &jf); /* leaf first, C frames unwound where they can be */
    learn_process_ptr(c, &jf, pid);
    /* A collection on a dirty scheduler (its callbacks logged the pid on
     * this thread): the process's Erlang stack as the collection found it. */
    uint64_t dirty_before = c->dirty_gc_stacks;
    if (thread_extra(c, smp->tid) != EXTRA_SCHEDULER)
        n_ips = with_dirty_gc_stack(c, smp, &ips, n_ips);
    int in_gc = c->dirty_gc_stacks != dirty_before;
    for (uint32_t i = 0; i < n_ips && n < BS_CHAIN_MAX_FRAMES; i++) {
        /* A return address points after its call (see on_sample). */
        uint32_t f = frame_of(c, i == 0 ? ips[0] : ips[i] - 1);
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
        case KIND_GC:
            in_gc |= n == 0;
            break;
        default:
            break;
        }
    }
    /* A garbage collection: charged to the process itself, not to the
     * function it fell on. A call-traced process collects several times as
     * often as it would untraced (the json bench's decode: 1,160
     * collections with the VM's own call tracing, 1,618 with beamspy's, 238
     * untraced): most of that time is the tracer's doing, and charged to
     * the functions the collections fell on it would move their shares. */
    if (in_gc) {
        c->gc_samples++;
        n = 0;
    } else if (n == 0)
        c->no_erlang++; /* C code whose frames could not be unwound: the program's or the tracer's */
    (void)bs_sample_chains_add(&c->chains, pid, erl, n);
}

/* 1 when addr, a return address, lies in JIT code of an Erlang function
 * (bs_is_erlang_code for bs_erl_caller). */
/* The kind of code at addr ('E', 'J', 'N', 'U'; 0 when the frame table is
 * full), looked up as a frame is. JIT code found here goes into the stack
 * (and the address cache, so it is counted in the notes now); anything else
 * is a word the checks refused, not counted as a code address. */
static char code_kind(bs_cpu *c, uint64_t addr)
{
    uint64_t unresolved = c->unresolved_frames, named = c->frames_named;
    uint32_t f = frame_of(c, addr);
    char kind = f == UINT32_MAX ? 0 : bs_frame_name(&c->frames, f)[0];
    if (kind != 'E' && kind != 'J')
        c->unresolved_frames = unresolved, c->frames_named = named;
    return kind;
}

static int is_erlang_code(void *ctx, uint64_t addr)
{
    return code_kind(ctx, addr - 1) == 'E';
}

/* 1 when the return address ret lies in a shared fragment of the JIT (code
 * in the perf map that is no Erlang function: global::...). */
static int in_fragment(bs_cpu *c, uint64_t ret)
{
    return code_kind(c, ret - 1) == 'J';
}

static void set_jit_frame(bs_cpu *c, jit_frame *jf, uint32_t index, uint64_t addr, int has_r13, uint64_t r13)
{
    char kind = code_kind(c, addr);
    jf->found = kind == 'E' || kind == 'J';
    jf->index = index;
    jf->addr = addr, jf->has_r13 = has_r13, jf->r13 = r13;
}

#define GC_FRAGMENT "global::garbage_collect"

/* What the collecting fragment's code (head: from its start; after: from
 * the return of its call into the collector on) says of the running
 * process's struct: where it stores its caller's return address (c_p->i),
 * and where it takes the Erlang stack's top and frame pointer back after
 * the collection (c_p->stop and c_p->frame_pointer, saved as a pair: the
 * second is taken only 8 bytes after the first). */
static void learn_gc_fragment(bs_cpu *c, uint64_t start, const unsigned char *head, size_t head_len,
                              const unsigned char *after, size_t after_len)
{
    int64_t off = bs_fragment_ra_store(head, head_len);
    int64_t stop = bs_fragment_stop_load(after, after_len);
    int64_t fp = stop > 0 ? bs_fragment_fp_load(after, after_len) : -1;
    c->gc_fragment = start;
    if (stop > 0 && stop < 4096 && stop % 8 == 0) {
        if (fp == stop + 8)
            atomic_store_explicit(&c->fp_off, fp, memory_order_release);
        atomic_store_explicit(&c->stop_off, stop, memory_order_release);
    }
    if (off > 0 && off < 4096 && off % 8 == 0)
        atomic_store_explicit(&c->ra_store_off, off, memory_order_release);
}

/* The collecting fragment learnt from the perf map as the session opens, so
 * that collections on dirty schedulers take their stacks from the first one
 * on (else it is learnt from the first sample in it). Its code up to its
 * first `mov d(%r13), %rsp' stores into the process's struct, never loads. */
static void learn_gc_fragment_early(bs_cpu *c)
{
    uint64_t end = 0, start = bs_perf_map_named(&c->symbols.perf, GC_FRAGMENT, &end);
    unsigned char code[BS_FRAGMENT_CODE_MAX];
    size_t len = start && end > start ? (end - start < sizeof code ? (size_t)(end - start) : sizeof code) : 0;
    if (len > 0 && bs_proc_mem_read(&c->mem, start, code, len))
        learn_gc_fragment(c, start, code, len, code, len);
}

/* The fragment holding the return address ret (its start in the perf map)
 * and the shape of its code up to ret: kept for the first
 * BS_CPU_FRAGMENT_RETS return addresses, decoded anew for later ones
 * (*tmp); NULL when the code cannot be read. */
static struct fragment_ret *fragment_ret_of(bs_cpu *c, uint64_t ret, struct fragment_ret *tmp)
{
    for (unsigned i = 0; i < c->n_frag; i++)
        if (c->frag[i].ret == ret)
            return &c->frag[i];
    bs_symbol sym;
    if (bs_symbols_resolve(&c->symbols, ret - 1, &sym) != BS_SYM_JIT_OTHER || sym.start == 0 || sym.start >= ret)
        return NULL;
    unsigned char code[BS_FRAGMENT_CODE_MAX];
    size_t len = ret - sym.start < sizeof code ? (size_t)(ret - sym.start) : sizeof code;
    if (!bs_proc_mem_read(&c->mem, sym.start, code, len))
        return NULL;
    struct fragment_ret *f = c->n_frag < BS_CPU_FRAGMENT_RETS ? &c->frag[c->n_frag++] : tmp;
    f->ret = ret, f->start = sym.start, f->missed = 0;
    bs_fragment_shape_of(code, len, (size_t)(ret - sym.start), &f->shape);
    if (!c->gc_fragment && sym.name && strcmp(sym.name, GC_FRAGMENT) == 0) {
        /* The stack taken back after the call into the collector. */
        unsigned char after[32];
        size_t after_len = bs_proc_mem_read(&c->mem, ret, after, sizeof after) ? sizeof after : 0;
        learn_gc_fragment(c, sym.start, code, len, after, after_len);
    }
    return f;
}

static bs_gc_stack_log *gc_stack_log(bs_cpu *c, const bs_thread_log *log);

/* What the sample's thread logged last before the sample in logs
 * (thread_slices.h): a pid (bs_cpu_switch, bs_cpu_dirty_gc_start) or a
 * collection's caller (bs_cpu_gc_start); 0 when nothing, or nothing since
 * the last end. */
static uint64_t logged_at(bs_thread_slices *logs, const bs_cpu_sample *smp)
{
    bs_thread_log *log = bs_thread_slices_log(logs, smp->tid);
    uint64_t value = 0;
    return log && bs_thread_log_at(logs, log, smp->time_ns, &value) ? value : 0;
}

/* Where the collections' callers are logged: joined by registers, the
 * slices' own logs (which hold no pid on a normal scheduler there); with
 * times => samples, whose slices hold the pids, logs of their own. */
static bs_thread_slices *caller_logs(bs_cpu *c)
{
    return c->by_regs ? &c->slices : &c->gc_callers;
}

/* The return address into the Erlang function that called the collection
 * the sample was taken in (its thread's log at the sample's time, written by
 * bs_cpu_gc_start), only when the code before it calls the collecting
 * fragment at gc: 0 otherwise. */
static uint64_t collection_caller(bs_cpu *c, const bs_cpu_sample *smp, uint64_t gc)
{
    uint64_t ra = logged_at(caller_logs(c), smp);
    unsigned char call[5];
    if (ra < sizeof call ||
        !bs_proc_mem_read(&c->mem, ra - sizeof call, call, sizeof call) ||
        bs_fragment_site_call(call, sizeof call, ra - sizeof call, gc) != ra || !is_erlang_code(c, ra))
        return 0;
    return ra;
}

/* The caller's return address of a sample whose first JIT frame (at) is a
 * call into C from a fragment with a frame of its own, as it was at the
 * sample: from the call site the fragment saved (in the stack copy), else
 * from the kernel's frame-pointer walk when it started from the fragment's
 * frame (the C frames kept rbp). 0 when neither holds it. */
static uint64_t framed_fragment_caller(bs_cpu *c, const bs_cpu_sample *smp, const bs_stack_copy *stack,
                                       const bs_user_regs *at, const struct fragment_ret *f)
{
    uint64_t site, ret = 0;
    if (f->shape.has_site && bs_stack_read8(stack, at->sp + (uint64_t)f->shape.site_off, &site) && site) {
        unsigned char code[BS_FRAGMENT_SITE_SPAN];
        if (bs_proc_mem_read(&c->mem, site, code, sizeof code))
            ret = bs_fragment_site_call(code, sizeof code, site, f->start);
        if (ret && is_erlang_code(c, ret)) {
            c->callers_site++;
            return ret;
        }
    }
    if (smp->bp == at->bp && smp->n_ips >= 2 && is_erlang_code(c, smp->ips[1])) {
        c->callers_kernel++;
        return smp->ips[1];
    }
    if (f->start == c->gc_fragment && (ret = collection_caller(c, smp, f->start))) {
        c->callers_gc++;
        return ret;
    }
    return 0;
}

/* A sample whose leaf ip is in a fragment: 1 with *caller when the fragment
 * has a frame of its own but ip is where it is not set up (its first
 * instruction, after push rbp, or at its ret after leave): the caller's
 * return address is then on top of the stack, in the copy; 0 when the
 * fragment's frame is set up (the kernel's walk went through it at the
 * sample); -1 when the fragment has no frame or its code cannot be read. */
static int leaf_fragment_caller(bs_cpu *c, const bs_cpu_sample *smp, const bs_stack_copy *stack, uint64_t *caller)
{
    bs_symbol sym;
    unsigned char head[4], at_ip;
    if (bs_symbols_resolve(&c->symbols, smp->ip, &sym) != BS_SYM_JIT_OTHER || sym.start == 0 || sym.start > smp->ip ||
        !bs_proc_mem_read(&c->mem, sym.start, head, sizeof head) || !bs_proc_mem_read(&c->mem, smp->ip, &at_ip, 1))
        return -1;
    uint64_t off = smp->ip - sym.start;
    bs_fragment_shape shape;
    bs_fragment_shape_of(head, sizeof head, 0, &shape);
    if (!shape.frame)
        return -1;
    uint64_t top = off == 1 ? smp->sp + 8 : smp->sp;
    if (off != 0 && off != 1 && at_ip != 0xc3)
        return 0;
    return bs_stack_read8(stack, top, caller) && is_erlang_code(c, *caller) ? 1 : -1;
}

/* 1 when the return address held, read at the drain in the frame where a
 * call returned to ret at the sample, returns into the same Erlang
 * function: the function is still there, at this depth, making another (or
 * the same) call, so the frame pointer beside it is still its frame's. */
static int same_caller(bs_cpu *c, uint64_t held, uint64_t ret)
{
    return held == ret || (is_erlang_code(c, held) && frame_of(c, held - 1) == frame_of(c, ret - 1));
}

/* The chain of a C leaf under a fragment with a frame (c->dwarf[0..nd),
 * at), into c->unwound: the C frames, the fragment, its caller ret (0: not
 * known, the chain ends at the fragment), then the frames under the caller:
 * the kernel's walk when it went through the same frame at the sample, else
 * (in a collection: the fragment is global::garbage_collect) the stack the
 * collection's end took (gc_stacks.h), else the Erlang stack as the drain
 * reads it, only where the fragment's frame there still returns into ret's
 * function (same_caller; else the chain is cut after the caller). */
static size_t framed_fragment_chain(bs_cpu *c, const bs_cpu_sample *smp, const bs_stack_copy *stack,
                                    const bs_mem_reader *mem, size_t nd, const bs_user_regs *at, uint64_t ret,
                                    int in_collection)
{
    size_t n = 0;
    for (size_t i = 0; i < nd && n < BS_CPU_MAX_CHAIN; i++)
        c->unwound[n++] = c->dwarf[i];
    if (n < BS_CPU_MAX_CHAIN)
        c->unwound[n++] = at->ip;
    if (ret == 0 || n == BS_CPU_MAX_CHAIN)
        return n;
    if (smp->bp == at->bp && smp->n_ips >= 2 && smp->ips[1] == ret) {
        for (uint32_t j = 1; j < smp->n_ips && n < BS_CPU_MAX_CHAIN; j++)
            c->unwound[n++] = smp->ips[j];
        return n;
    }
    c->unwound[n++] = ret;
    bs_gc_stack_log *taken = in_collection ? gc_stack_log(c, bs_thread_slices_log(&c->slices, smp->tid)) : NULL;
    uint32_t m = taken ? bs_gc_stack_at(taken, smp->time_ns, ret, c->unwound + n - 1, BS_CPU_MAX_CHAIN - (n - 1)) : 0;
    if (m > 0) {
        c->gc_stacks_used++;
        return n - 1 + m;
    }
    uint64_t held, next_bp;
    if (at->bp > UINT64_MAX - 16 || !mem->read(mem->ctx, at->bp + 8, &held, 8) || !same_caller(c, held, ret) ||
        !mem->read(mem->ctx, at->bp, &next_bp, 8) || next_bp <= at->bp) {
        c->walks_cut++;
        c->sample_cut = 1;
        return n;
    }
    c->walks_other_site += held != ret;
    bs_user_regs from = {.ip = ret, .bp = next_bp};
    return n - 1 + bs_fp_walk(&from, stack, mem, c->unwound + n - 1, BS_CPU_MAX_CHAIN - (n - 1));
}

/* The sample's user stack, leaf first, into *ips (c->unwound or the
 * kernel's chain), and its innermost JIT frame into *jf. With registers
 * and a stack copy: a leaf in C code is
 * unwound through the C frames' CFI up to the first JIT frame, then by frame
 * pointers, and the kernel's chain joined where it meets them
 * (bs_callchain_splice); when that first JIT frame (or a JIT leaf) is a
 * shared fragment, the Erlang function that called it is taken from the top
 * of the Erlang stack (erl_caller.h). Else the kernel's chain as it is, and
 * a JIT frame only when the leaf is JIT code. */
static uint32_t sample_stack(bs_cpu *c, const bs_cpu_sample *smp, const uint64_t **ips, jit_frame *jf)
{
    *ips = smp->ips;
    c->sample_cut = 0;
    c->saved.n = 0;
    jf->found = 0;
    jf->scheduler = 0;
    if (!smp->has_regs)
        return smp->n_ips;
    if (!c->unwinder) {
        if (c->regs_frames)
            set_jit_frame(c, jf, 0, smp->ip, 1, smp->r13);
        return smp->n_ips;
    }
    bs_stack_copy stack = {.sp = smp->sp, .data = smp->stack, .size = smp->stack_size};
    bs_mem_reader mem = {.read = bs_proc_mem_read, .ctx = &c->mem};
    bs_user_regs regs = {.ip = smp->ip, .sp = smp->sp, .bp = smp->bp, .r13 = smp->r13, .has_r13 = 1}, at;
    int jit = 0;
    bs_proc_mem_forget(&c->mem);
    /* The callee-saved values only where dirty_work_pid reads them. */
    bs_unwind_saved *saved = thread_extra(c, smp->tid) != EXTRA_SCHEDULER ? &c->saved : NULL;
    size_t nd = bs_dwarf_unwind_saved(c->unwinder, &regs, &stack, c->dwarf, DWARF_MAX_FRAMES, &at, &jit, NULL,
                                      saved);
    if (c->regs_frames && jit)
        set_jit_frame(c, jf, (uint32_t)nd, nd == 0 ? smp->ip : at.ip - 1, at.has_r13, at.r13);
    uint64_t caller;
    if (nd == 0 && jit) { /* the leaf is JIT code: the kernel walked its frame pointers */
        if (smp->n_ips < 1 || !in_fragment(c, smp->ips[0] + 1))
            return smp->n_ips;
        int framed = leaf_fragment_caller(c, smp, &stack, &caller);
        if (framed == 0) {
            /* The kernel's walk went through the fragment's frame at the
             * sample: its next address is the caller, or the fragment was
             * not called from Erlang code (the scheduler's loop). */
            if (smp->n_ips >= 2 && is_erlang_code(c, smp->ips[1]))
                c->jit_leaf_fragment++, c->callers_kernel++;
            return smp->n_ips;
        }
        c->jit_leaf_fragment++;
        if (framed < 0 && bs_erl_caller(smp->bp, &stack, &mem, BS_ERL_CALLER_MAX_WORDS, is_erlang_code, c, &caller) !=
            BS_ERL_CALLER_FOUND) {
            c->callers_refused++;
            return smp->n_ips;
        }
        c->callers_found++;
        uint32_t n = 0;
        c->unwound[n++] = smp->ips[0];
        c->unwound[n++] = caller;
        for (uint32_t i = 1; i < smp->n_ips && n < BS_CPU_MAX_CHAIN; i++)
            c->unwound[n++] = smp->ips[i];
        *ips = c->unwound;
        return n;
    }
    c->c_leaf++;
    size_t n;
    struct fragment_ret tmp, *f = NULL;
    int under_fragment = 0, framed = 0;
    if (jit) {
        c->reached_jit++;
        under_fragment = in_fragment(c, at.ip) && !is_scheduler_fragment(c, at.ip - 1);
        framed = under_fragment && (f = fragment_ret_of(c, at.ip, &tmp)) != NULL && f->shape.frame;
    }
    if (framed) {
        c->fragment_first++;
        uint64_t ret = framed_fragment_caller(c, smp, &stack, &at, f);
        if (ret == 0)
            c->callers_missed++, f->missed++, c->sample_cut = 1;
        n = framed_fragment_chain(c, smp, &stack, &mem, nd, &at, ret, f->start == c->gc_fragment);
    } else {
        if (under_fragment) {
            c->fragment_first++;
            if (bs_erl_caller(at.bp, &stack, &mem, BS_ERL_CALLER_MAX_WORDS, is_erlang_code, c, &caller) ==
                BS_ERL_CALLER_FOUND) {
                c->callers_found++;
                c->dwarf[nd++] = at.ip; /* the fragment, then its caller and the walk from there */
                at.ip = caller;
            } else {
                c->callers_refused++;
            }
        }
        n = bs_callchain_splice(c->dwarf, nd, jit, &at, &stack, &mem, smp->ips, smp->n_ips, c->unwound,
                                BS_CPU_MAX_CHAIN);
    }
    /* The walk after the first JIT frame reads the Erlang process's stack
     * when the sample is drained, not when it was taken: a frame there that
     * is not JIT code (Erlang function or fragment) means the memory has
     * changed since (a garbage collection moved the stack): the chain is
     * cut there rather than continued through what is there now. */
    for (size_t i = nd + 1; i < n; i++) {
        char kind = code_kind(c, c->unwound[i] - 1);
        if (kind != 'E' && kind != 'J') {
            c->walks_cut++;
            c->sample_cut = 1;
            n = i;
            break;
        }
    }
    *ips = c->unwound;
    return (uint32_t)n;
}

/* A sample of a collection on a dirty scheduler (ips[0..n), the dirty
 * thread's C frames): the process's own Erlang stack where the collection
 * found it, taken as the collection started (gc_stacks.h), appended on the
 * root side as far as its frames are Erlang code. Returns the new length;
 * *ips is then c->unwound. */
static uint32_t with_dirty_gc_stack(bs_cpu *c, const bs_cpu_sample *smp, const uint64_t **ips, uint32_t n)
{
    bs_gc_stack_log *taken = gc_stack_log(c, bs_thread_slices_log(&c->slices, smp->tid));
    uint64_t frames[BS_GC_STACK_FRAMES];
    uint32_t m = taken ? bs_gc_stack_at(taken, smp->time_ns, 0, frames, BS_GC_STACK_FRAMES) : 0;
    if (m == 0)
        return n;
    if (*ips != c->unwound) {
        if (n > BS_CPU_MAX_CHAIN)
            n = BS_CPU_MAX_CHAIN;
        memmove(c->unwound, *ips, n * sizeof *c->unwound);
        *ips = c->unwound;
    }
    uint32_t added = 0;
    for (uint32_t i = 0; i < m && n < BS_CPU_MAX_CHAIN; i++, added++) {
        char kind = code_kind(c, frames[i] - 1);
        if (kind != 'E' && kind != 'J')
            break;
        c->unwound[n++] = frames[i];
    }
    c->dirty_gc_stacks += added > 0;
    return n;
}

/* The symbol of a C frame's text (frame_of: `N<file>\x01<symbol>'), or
 * NULL when the frame is not one. */
static const char *native_symbol(const char *t)
{
    const char *sep = t[0] == 'N' ? strchr(t, '\x01') : NULL;
    return sep ? sep + 1 : NULL;
}

/* 1 when a sample of a scheduler thread that ran no process, c->chain
 * (root first, n frames, from ips), spins before sleep (sched_work.h). */
static int spinning(bs_cpu *c, const uint64_t *ips, uint32_t n)
{
    bs_sched_frame frames[64];
    size_t m = 0;
    for (uint32_t i = n; i-- > 0 && m < sizeof frames / sizeof *frames;) {
        const char *t = bs_frame_name(&c->frames, c->chain[i]);
        const char *sym = native_symbol(t);
        frames[m++] = (bs_sched_frame){ips[n - 1 - i], sym, sym && strncmp(t + 1, "beam.", 5) == 0};
    }
    return bs_sched_work_of(&c->spin_sites, frames, m, c->unwinder != NULL) == BS_SCHED_WORK_SPIN;
}

/* Top's window: the sample (c->chain[from..n), root first) counts for its
 * innermost Erlang function, or as the scheduler's own. */
static void hot_sample(bs_cpu *c, uint32_t from, uint32_t n, int scheduler_own, int spin)
{
    enif_mutex_lock(c->hot_lock);
    c->hot.samples++;
    if (scheduler_own) {
        c->hot.scheduler++;
        c->hot.spin += spin != 0;
    } else {
        uint32_t i = n;
        while (i > from && bs_frame_name(&c->frames, c->chain[i - 1])[0] != 'E')
            i--;
        if (i > from)
            bs_hot_counts_add(&c->hot, c->chain[i - 1], bs_frame_name(&c->frames, c->chain[i - 1]) + 1);
        else
            c->hot.no_erlang++;
    }
    enif_mutex_unlock(c->hot_lock);
}

size_t bs_cpu_hot_take(bs_cpu *c, bs_hot_entry *out, size_t max, bs_hot_counts *totals)
{
    enif_mutex_lock(c->hot_lock);
    size_t n = bs_hot_counts_top(&c->hot, out, max);
    *totals = c->hot;
    totals->slots = NULL;
    bs_hot_counts_reset(&c->hot);
    enif_mutex_unlock(c->hot_lock);
    return n;
}

/* The join by registers ------------------------------------------------ */

/* Fragments of the JIT where a scheduler runs its own loop, not a
 * process's code: r13 there still holds the process it ran last (or none).
 * process_main calls the scheduler (erts_schedule: picking the next process,
 * port tasks, checking I/O, spinning before sleep). */
static const char *const scheduler_fragments[] = {"process_main"};

static int is_scheduler_fragment(bs_cpu *c, uint64_t addr)
{
    uint32_t f = frame_of(c, addr);
    if (f == UINT32_MAX)
        return 0;
    const char *t = bs_frame_name(&c->frames, f);
    if (t[0] != 'J')
        return 0;
    const char *name = strstr(t + 1, "::") ? strstr(t + 1, "::") + 2 : t + 1;
    for (size_t i = 0; i < sizeof scheduler_fragments / sizeof *scheduler_fragments; i++)
        if (strcmp(name, scheduler_fragments[i]) == 0)
            return 1;
    return 0;
}

/* The pid of the process at r13 (BEAMAsm's c_p: a Process *, whose first
 * word is its pid, ErtsPTabElementCommon's id): 0 when it cannot be read or
 * is not a local pid (_TAG_IMMED1_PID, 0x3). Read now, after the sample: a
 * process that exited since may have left another word there. */
static uint64_t pid_at(bs_cpu *c, uint64_t r13)
{
    uint64_t id;
    if (!r13 || (r13 & 7) || !bs_proc_mem_read_word(&c->mem, r13, &id)) {
        c->regs_bad_read++;
        return 0;
    }
    if ((id & 0xF) != 0x3) {
        c->regs_not_pid++;
        return 0;
    }
    return id;
}

/* The symbol of a frame's address (a return address but for the leaf),
 * or "" when none names it. */
static const char *symbol_at(bs_cpu *c, uint64_t addr)
{
    uint32_t f = frame_of(c, addr);
    const char *sym = f == UINT32_MAX ? NULL : native_symbol(bs_frame_name(&c->frames, f));
    return sym ? sym : "";
}

/* The pid a dirty scheduler works for at a sample with no JIT frame (ips,
 * leaf first: a dirty NIF or BIF, or a collection no callback logged): a
 * value its C frames kept in a callee-saved register, as the CFI restored
 * it (c->saved), that is the Process * of a pid seen in the samples
 * (process_ptrs.h: its first word that pid). Only when the frames are
 * under the dirty scheduler's loop (erts_dirty_process_main) and not in
 * its scheduling (erts_schedule: picking work, spinning, sleeping, where a
 * register may still hold the process it ran last); 0 otherwise. */
static uint64_t dirty_work_pid(bs_cpu *c, const uint64_t *ips, uint32_t n)
{
    int in_loop = 0;
    for (uint32_t i = 0; i < n && c->saved.n > 0; i++) {
        const char *name = symbol_at(c, i == 0 ? ips[0] : ips[i] - 1);
        if (strcmp(name, "erts_schedule") == 0)
            return 0;
        in_loop |= strcmp(name, "erts_dirty_process_main") == 0;
    }
    for (size_t k = 0; in_loop && k < c->saved.n; k++) {
        uint64_t v = c->saved.values[k], id;
        if ((v & 7) == 0 && bs_proc_mem_read_word(&c->mem, v, &id) && (id & 0xF) == 0x3 &&
            bs_process_ptrs_find(&c->ptrs, id) == v)
            return id;
    }
    return 0;
}

/* The tree of a sample by its registers: the process whose Process * r13
 * held at the sample's innermost JIT frame (the leaf's own r13, or as the
 * CFI of the C frames under it restored it); the scheduler's tree when
 * that frame is the scheduler's loop; in a whole-VM session the dirty
 * schedulers' (no JIT frame: dirty NIFs, BIFs and GCs run from C) or
 * `[unknown process]' when there is none. NULL, counted, when the sample
 * is left out (not one of the chosen processes, or no memory). */
static bs_call_tree *tree_by_regs(bs_cpu *c, const bs_cpu_sample *smp, const uint64_t *ips, uint32_t n,
                                  jit_frame *jf, int *scheduler_own, int *dirty_gc)
{
    bs_session *s = c->s;
    enum extra_tree extra = thread_extra(c, smp->tid);
    uint64_t pid = 0;
    if (!jf->found) {
        /* The process whose collection ran on this dirty scheduler then
         * (logged by bs_cpu_dirty_gc_start), if any. */
        if (extra != EXTRA_SCHEDULER && (pid = logged_at(&c->slices, smp))) {
            c->regs_dirty_gc++; /* a chosen process's collection on a dirty scheduler */
            *dirty_gc = 1;
        } else if (extra != EXTRA_SCHEDULER && (pid = dirty_work_pid(c, ips, n))) {
            c->regs_dirty_named++; /* its dirty NIF, BIF or collection, its C frames alone */
        } else if (extra != EXTRA_SCHEDULER) {
            c->regs_dirty++;
            *scheduler_own = 1; /* a dirty scheduler in C: its own loop or a process's dirty work */
        } else
            c->regs_no_jit++;
        extra = extra == EXTRA_SCHEDULER ? EXTRA_UNKNOWN : extra;
    } else if (is_scheduler_fragment(c, jf->addr)) {
        c->regs_scheduler++;
        jf->scheduler = 1;
        *scheduler_own = 1;
    } else if (!jf->has_r13) {
        c->regs_no_r13++;
        extra = EXTRA_UNKNOWN;
    } else if (!(pid = pid_at(c, jf->r13))) {
        extra = EXTRA_UNKNOWN;
    }
    if (pid) {
        bs_traced_proc *r = bs_pid_table_find(&s->pids, pid);
        if (!r && s->n_ignored && bs_session_is_ignored(s, pid)) {
            c->others++; /* never recorded (the tool's own jobs) */
            return NULL;
        }
        if (!r && c->all)
            r = bs_session_proc_try(s, pid, bs_now_ns(), &c->stopping);
        if (r) {
            c->regs_process++;
            /* r13 at the innermost JIT frame (not the scheduler's loop: left
             * above) is the process's struct: the leaf's own, or as the C
             * frames' CFI restored it (a process running BIFs may give no
             * sample with a JIT leaf); its first word was this pid. */
            if (jf->found && jf->has_r13)
                bs_process_ptrs_learn(&c->ptrs, pid, jf->r13);
            return &r->proc.tree;
        }
        if (c->all) {
            if (atomic_load(&s->recording)) { /* the table is full, or no memory: the session stops */
                c->dropped++;
                return NULL;
            }
            c->regs_late++; /* a process first seen in the samples drained after the stop */
            extra = EXTRA_UNKNOWN;
        }
    }
    if (!c->all) {
        c->others++; /* not one of the chosen processes */
        return NULL;
    }
    bs_call_tree *tree = extra_tree(c, extra);
    if (!tree)
        c->dropped++;
    return tree;
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
    const uint64_t *ips = NULL;
    uint32_t n = 0, from = 0;
    int cut = 0, scheduler_own = 0; /* scheduler_own: the thread ran no process */
    bs_call_tree *tree = NULL;
    if (c->by_regs) {
        jit_frame jf;
        n = sample_stack(c, smp, &ips, &jf);
        int dirty_gc = 0;
        if (!(tree = tree_by_regs(c, smp, ips, n, &jf, &scheduler_own, &dirty_gc)))
            return; /* counted there */
        if (dirty_gc)
            n = with_dirty_gc_stack(c, smp, &ips, n);
        /* The scheduler's loop: what lies beyond it is no caller of it but
         * the frames of the process it switched out (its stale frame
         * pointer), not the scheduler's work. */
        if (jf.scheduler && jf.index < n) {
            n = jf.index + 1;
            cut = 1;
        }
    } else {
        bs_thread_log *log = bs_thread_slices_log(&c->slices, smp->tid);
        uint64_t pid = 0;
        int known = log && bs_thread_log_at(&c->slices, log, smp->time_ns, &pid);
        if (known && pid) {
            bs_traced_proc *r = bs_pid_table_find(&c->s->pids, pid);
            if (r && r->proc.state != BS_EXITED)
                tree = &r->proc.tree;
        }
        if (!tree && !c->all) {
            c->others++; /* not one of the chosen processes */
            return;
        }
        scheduler_own = !tree && known && !pid; /* the thread ran no process */
        if (!tree)
            tree = extra_tree(c, !known ? EXTRA_UNKNOWN : pid ? EXTRA_UNKNOWN : thread_extra(c, smp->tid));
        if (!tree) {
            c->dropped++;
            return;
        }
        jit_frame jf;
        n = sample_stack(c, smp, &ips, &jf);
    }
    uint32_t at = 0;
    /* Root first. A return address points after its call: step back one
     * byte so that a call ending a function names that function. Frames of
     * beamspy's own code, and all below them, are left out (as tracing
     * leaves them out): apply's caller starts at the function applied. */
    if (n > BS_CPU_MAX_CHAIN)
        n = BS_CPU_MAX_CHAIN;
    int erlang = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t addr = ips[n - 1 - i];
        uint32_t f = frame_of(c, i + 1 == n ? addr : addr - 1);
        if (f == UINT32_MAX)
            goto full;
        c->chain[i] = f;
        if (c->own[f])
            from = i + 1;
        erlang |= bs_frame_name(&c->frames, f)[0] == 'E';
    }
    c->erlang_any += erlang;
    if (from == n && n > 0 && c->own[c->chain[n - 1]]) {
        c->own_code++; /* beamspy itself was running: not the program's time */
        return;
    }
    int spin = scheduler_own && spinning(c, ips, n);
    hot_sample(c, from, n, scheduler_own, spin);
    if (spin) { /* the scheduler's own, never anyone's work */
        bs_key k = {BS_CPU_FRAME_MODULE, c->spin_frame, 0};
        if ((at = bs_call_tree_child(tree, at, &k)) == BS_NO_NODE)
            goto full;
        c->spins++;
    }
    /* Outer frames missing: past the kernel's depth limit, or read from an
     * Erlang stack that had changed before the drain (walks_cut). */
    if ((smp->chain_truncated || (c->sample_cut && from == 0)) && !cut) {
        c->truncated_chains += smp->chain_truncated != 0;
        bs_key k = {BS_CPU_FRAME_MODULE, c->truncated_frame, 0};
        if ((at = bs_call_tree_child(tree, at, &k)) == BS_NO_NODE)
            goto full;
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

static uint64_t cpu_clock_ns(clockid_t clock)
{
    struct timespec t;
    return clock_gettime(clock, &t) == 0 ? (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec : 0;
}

static void *drain_loop(void *arg)
{
    bs_cpu *c = arg;
    const struct timespec pause = {0, c->drain_ms * 1000000L};
    while (!atomic_load(&c->stopping)) {
        (void)bs_perf_sampler_drain(c->sampler, on_sample, c);
        nanosleep(&pause, NULL);
    }
    c->drain_cpu_ns = cpu_clock_ns(CLOCK_THREAD_CPUTIME_ID); /* read by bs_cpu_stop after the join */
    return NULL;
}

bs_cpu *bs_cpu_open(ErlNifEnv *env, bs_session *s, unsigned hz, int all, int by_regs, char *why, size_t cap)
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
#if defined(__x86_64__)
    c->by_regs = by_regs && !s->cpu_times;
    c->regs_frames = c->by_regs || s->cpu_times;
#else
    (void)by_regs; /* r13 is BEAMAsm's c_p on x86_64 only: the join by scheduling events stays */
#endif
    for (int i = 0; i < s->n_excluded; i++)
        if (enif_get_atom(env, s->excluded[i], c->excluded[c->n_excluded], sizeof c->excluded[0], ERL_NIF_LATIN1) > 0)
            c->n_excluded++;
    atomic_init(&c->stopping, 0);
    bs_frame_table_init(&c->frames);
    bs_sample_chains_init(&c->chains, CHAINS_MAX_BYTES);
    c->cache = calloc(BS_CPU_ADDR_CACHE, sizeof *c->cache);
    c->truncated_frame = bs_frame_table_intern(&c->frames, "P[truncated]", 12);
    c->other_frame = bs_frame_table_intern(&c->frames, "P[other code]", 13);
    c->spin_frame = bs_frame_table_intern(&c->frames, "P[spin]", 7);
    c->hot_lock = enif_mutex_create("beamspy_cpu_hot");
    if (!c->hot_lock || bs_hot_counts_init(&c->hot) < 0) {
        snprintf(why, cap, "out of memory");
        goto fail_frames;
    }
    if (!c->cache || c->truncated_frame == UINT32_MAX || c->other_frame == UINT32_MAX || c->spin_frame == UINT32_MAX) {
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
    atomic_init(&c->ra_store_off, -1);
    atomic_init(&c->stop_off, -1);
    atomic_init(&c->fp_off, -1);
    c->saved = (bs_unwind_saved){.values = c->saved_values, .cap = DIRTY_SAVED_MAX, .n = 0};
    if (bs_thread_slices_init(&c->slices, tids, c->n_threads) < 0 || bs_process_ptrs_init(&c->ptrs) < 0 ||
        (s->cpu_times && bs_thread_slices_init(&c->gc_callers, tids, c->n_threads) < 0)) {
        free(tids);
        bs_thread_slices_free(&c->slices);
        bs_thread_slices_free(&c->gc_callers);
        snprintf(why, cap, "out of memory");
        goto fail_symbols;
    }
    /* The C frames are unwound when libdw is there and the kernel gives the
     * bigger rings (stack copies); else the kernel's frame-pointer chains,
     * and the notes say why. */
    char no[400];
    if (bs_dwarf_unwinder_open(&c->unwinder, (int)getpid(), UNWIND_MAX_BYTES, no, sizeof no) < 0) {
        c->unwinder = NULL;
        snprintf(c->no_unwind, sizeof c->no_unwind, "%s", no);
    }
    int opened = -1;
    if (c->unwinder) {
        opened = bs_perf_sampler_open_ex(&c->sampler, tids, c->n_threads, hz, 1, BS_PERF_STACK_BYTES, no, sizeof no);
        if (opened < 0) {
            snprintf(c->no_unwind, sizeof c->no_unwind, "the rings with stack copies were refused: %s", no);
            bs_dwarf_unwinder_close(c->unwinder);
            c->unwinder = NULL;
        }
    }
    if (opened < 0)
        opened = bs_perf_sampler_open(&c->sampler, tids, c->n_threads, hz, why, cap);
    free(tids);
    bs_proc_mem_init(&c->mem, (int)getpid());
    learn_gc_fragment_early(c);
    if (opened < 0)
        goto fail_slices;
    if (bs_gc_stacks_init(&c->gc_stacks, c->slices.n) < 0) {
        snprintf(why, cap, "out of memory");
        goto fail_sampler;
    }
    for (unsigned i = 0; i < c->slices.n; i++)
        bs_gc_stacks_bind(&c->gc_stacks, i, bs_perf_sampler_ring_head(c->sampler, c->slices.logs[i].tid));
    /* Drain before a busy thread's ring is half full: rings with stack
     * copies hold a few samples only (perf_sampler.h). */
    c->drain_ms = BS_CPU_DRAIN_MS;
    if (c->unwinder) {
        long per_ring = (long)BS_PERF_RING_PAGES_STACK * sysconf(_SC_PAGESIZE) / (BS_PERF_STACK_BYTES + 1536);
        long ms = 1000 * per_ring / (2 * (long)hz);
        c->drain_ms = ms < 1 ? 1 : ms < BS_CPU_DRAIN_MS ? ms : BS_CPU_DRAIN_MS;
    }
    c->vm_cpu_start_ns = cpu_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
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
    bs_gc_stacks_free(&c->gc_stacks);
    bs_perf_sampler_close(c->sampler);
fail_slices:
    bs_dwarf_unwinder_close(c->unwinder);
    bs_thread_slices_free(&c->slices);
    bs_thread_slices_free(&c->gc_callers);
    bs_process_ptrs_free(&c->ptrs);
fail_symbols:
    bs_symbols_free(&c->symbols);
fail_frames:
    bs_hot_counts_free(&c->hot);
    if (c->hot_lock)
        enif_mutex_destroy(c->hot_lock);
    free(c->cache);
    free(c->own);
    free(c->kinds);
    bs_sample_chains_free(&c->chains);
    bs_frame_table_free(&c->frames);
    free(c);
    return NULL;
}

int bs_cpu_by_registers(const bs_cpu *c)
{
    return c->by_regs;
}

/* Appends (t, value) to the calling thread's log, if it is a sampled one;
 * returns the log (NULL: not sampled). */
static bs_thread_log *log_here(bs_cpu *c, uint64_t t, uint64_t value)
{
    bs_thread_log *log = bs_thread_slices_log(&c->slices, bs_current_tid());
    if (log)
        bs_thread_log_switch(log, t, value);
    return log;
}

/* The calling thread's log of collections' stacks, by its log of slices. */
static bs_gc_stack_log *gc_stack_log(bs_cpu *c, const bs_thread_log *log)
{
    if (!log)
        return NULL;
    size_t i = (size_t)(log - c->slices.logs);
    return i < c->gc_stacks.n ? &c->gc_stacks.logs[i] : NULL;
}

/* Appends (t, ra) to the calling thread's log of collections' callers
 * (caller_logs), if it is a sampled thread; returns the thread's log of
 * slices (gc_callers has the same threads in the same order). */
static bs_thread_log *caller_log_here(bs_cpu *c, uint64_t t, uint64_t ra)
{
    bs_thread_slices *logs = caller_logs(c);
    bs_thread_log *log = bs_thread_slices_log(logs, bs_current_tid());
    if (!log)
        return NULL;
    bs_thread_log_switch(log, t, ra);
    return c->slices.logs + (log - logs->logs);
}

/* The Process * of pid, which runs a callback on this very thread (its
 * struct is in place; learnt from its own r13, its first word its pid), or
 * NULL. */
static const unsigned char *process_here(bs_cpu *c, uint64_t pid)
{
    uint64_t ptr = bs_process_ptrs_find(&c->ptrs, pid);
    if (!ptr)
        return NULL;
    const unsigned char *p = (const unsigned char *)(uintptr_t)ptr;
    uint64_t id;
    memcpy(&id, p, sizeof id);
    return id == pid ? p : NULL;
}

void bs_cpu_switch(bs_cpu *c, uint64_t pid, uint64_t t)
{
    if (!c->by_regs)
        log_here(c, t, pid);
}

void bs_cpu_dirty_gc_start(bs_cpu *c, uint64_t pid, uint64_t t)
{
    bs_gc_stack_log *stacks = gc_stack_log(c, log_here(c, t, pid));
    int64_t ra_off = atomic_load_explicit(&c->ra_store_off, memory_order_acquire);
    int64_t stop_off = atomic_load_explicit(&c->stop_off, memory_order_acquire);
    int64_t fp_off = atomic_load_explicit(&c->fp_off, memory_order_acquire);
    /* The process is not running: it waits for this collection, scheduled
     * out where c_p->i says, its stack in place until the collection moves
     * it: taken now, whether or not a sample comes. Its own frame is where
     * its frame pointer was saved with its stack top: above the y registers
     * of the function it runs, when that function has some (a collection a
     * BIF asked for); without that offset, taken as the stack's top. */
    const unsigned char *p = stacks && ra_off > 0 && stop_off > 0 ? process_here(c, pid) : NULL;
    if (stacks)
        bs_gc_stack_close(stacks, t); /* one whose end never came (tracing switched off meanwhile) */
    if (p) {
        uint64_t at, stop, fp = 0;
        memcpy(&at, p + ra_off, sizeof at);
        memcpy(&stop, p + stop_off, sizeof stop);
        if (fp_off > 0)
            memcpy(&fp, p + fp_off, sizeof fp);
        (void)bs_gc_stack_take_open(&c->gc_stacks, stacks, t, at, stop, fp, &c->mem);
    }
}

void bs_cpu_dirty_gc_end(bs_cpu *c, uint64_t t)
{
    bs_gc_stack_log *stacks = gc_stack_log(c, log_here(c, t, 0));
    if (stacks)
        bs_gc_stack_close(stacks, t);
}

void bs_cpu_gc_start(bs_cpu *c, uint64_t pid, uint64_t t)
{
    int64_t off = atomic_load_explicit(&c->ra_store_off, memory_order_acquire);
    const unsigned char *p = off > 0 ? process_here(c, pid) : NULL;
    if (!p)
        return;
    uint64_t ra;
    memcpy(&ra, p + off, sizeof ra);
    bs_gc_stack_log *stacks = gc_stack_log(c, caller_log_here(c, t, ra));
    if (stacks)
        bs_gc_stack_start(stacks, t, ra);
}

void bs_cpu_gc_end(bs_cpu *c, uint64_t pid, uint64_t t)
{
    if (atomic_load_explicit(&c->ra_store_off, memory_order_relaxed) <= 0)
        return;
    bs_gc_stack_log *stacks = gc_stack_log(c, caller_log_here(c, t, 0));
    int64_t off = atomic_load_explicit(&c->stop_off, memory_order_acquire);
    const unsigned char *p = stacks && stacks->ra && off > 0 ? process_here(c, pid) : NULL;
    if (!p) {
        if (stacks)
            stacks->ra = 0;
        return;
    }
    /* The collection has moved the stack: its top is where c_p->stop says. */
    uint64_t stop;
    memcpy(&stop, p + off, sizeof stop);
    (void)bs_gc_stack_end(&c->gc_stacks, stacks, t, stop, BS_GC_TOP_FRAGMENT, &c->mem); /* reads only its pid */
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
    uint64_t last = cpu_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    (void)bs_perf_sampler_drain(c->sampler, on_sample, c); /* what came in since */
    c->drain_cpu_ns += cpu_clock_ns(CLOCK_THREAD_CPUTIME_ID) - last;
    /* The perf events and their rings are closed now, not when the session's
     * resource is garbage collected (which can be long after a session's
     * owner was killed): its figures stay for the notes. */
    bs_perf_sampler_stats(c->sampler, &c->sampler_stats);
    bs_perf_sampler_close(c->sampler);
    c->sampler = NULL;
    uint64_t now = cpu_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    c->vm_cpu_ns = now > c->vm_cpu_start_ns ? now - c->vm_cpu_start_ns : 0;
}

void bs_cpu_close(bs_cpu *c)
{
    if (!c)
        return;
    bs_cpu_stop(c);
    bs_perf_sampler_close(c->sampler);
    bs_dwarf_unwinder_close(c->unwinder);
    bs_gc_stacks_free(&c->gc_stacks);
    bs_thread_slices_free(&c->slices);
    bs_thread_slices_free(&c->gc_callers);
    bs_process_ptrs_free(&c->ptrs);
    bs_symbols_free(&c->symbols);
    bs_hot_counts_free(&c->hot);
    enif_mutex_destroy(c->hot_lock);
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

/* " (N under <fragment>)" for the fragment whose callers were missed most
 * (into buf), or "" when none was. */
static const char *most_missed(bs_cpu *c, char *buf, size_t cap)
{
    const struct fragment_ret *top = NULL;
    uint64_t sum = 0;
    for (unsigned i = 0; i < c->n_frag; i++) {
        uint64_t m = 0;
        for (unsigned j = 0; j < c->n_frag; j++) /* every call into C of the same fragment */
            if (c->frag[j].start == c->frag[i].start)
                m += c->frag[j].missed;
        if (m > sum)
            top = &c->frag[i], sum = m;
    }
    bs_symbol sym;
    if (!top || bs_symbols_resolve(&c->symbols, top->ret - 1, &sym) != BS_SYM_JIT_OTHER || !sym.name)
        return "";
    snprintf(buf, cap, " (%llu under %s)", (unsigned long long)sum, sym.name);
    return buf;
}

int bs_cpu_export(bs_cpu *c, bs_profile *out, bs_key_namer namer, void *ctx)
{
    for (int i = 0; i < EXTRA_TREES; i++)
        if (c->extra_used[i] && c->extra[i].tree.n_nodes > 1 &&
            bs_profile_add_proc(out, &c->extra[i], extra_labels[i], namer, ctx) < 0)
            return -1;
    out->unit = BS_UNIT_COUNT;
    bs_perf_stats st = c->sampler_stats; /* after bs_cpu_stop */
    char note[1536], join[384];
    if (c->by_regs)
        snprintf(join, sizeof join,
                 "process of each sample read from r13 (no scheduling traced): %llu of processes (%llu in their "
                 "garbage collection on a dirty scheduler, %llu of them under the process's stack), %llu the "
                 "schedulers' loop, %llu dirty named by a Process * their C frames kept, %llu dirty with no "
                 "JIT frame, "
                 "%llu reached no JIT frame, %llu whose r13 was not a live process's",
                 (unsigned long long)c->regs_process, (unsigned long long)c->regs_dirty_gc,
                 (unsigned long long)c->dirty_gc_stacks,
                 (unsigned long long)c->regs_scheduler,
                 (unsigned long long)c->regs_dirty_named, (unsigned long long)c->regs_dirty,
                 (unsigned long long)c->regs_no_jit,
                 (unsigned long long)(c->regs_no_r13 + c->regs_bad_read + c->regs_not_pid + c->regs_late));
    else
        snprintf(join, sizeof join,
                 "process of each sample from the scheduling trace%s: %llu thread switches lost",
#if defined(__x86_64__)
                 "",
#else
                 " (registers name none on this architecture)",
#endif
                 (unsigned long long)atomic_load(&c->slices.lost));
    snprintf(note, sizeof note,
             "CPU samples at %u Hz of %u scheduler threads: %llu samples, %llu lost by the kernel, %llu with "
             "their outermost frames cut (perf_event_max_stack %u), %llu left out (memory), %llu in beamspy's "
             "own code and %llu of other processes or the schedulers left out; %llu of schedulers spinning before "
             "they sleep ([spin]); %llu of %llu code addresses named by no symbol; %s; the sampler's drain thread "
             "used %.1f ms of CPU, %.2f%% of the VM's %.1f ms over the session (the kernel's taking of the samples "
             "is in the sampled threads' time)",
             c->hz, c->n_threads, (unsigned long long)c->samples, (unsigned long long)st.lost,
             (unsigned long long)c->truncated_chains, st.max_stack, (unsigned long long)c->dropped,
             (unsigned long long)c->own_code, (unsigned long long)c->others, (unsigned long long)c->spins,
             (unsigned long long)c->unresolved_frames, (unsigned long long)c->frames_named, join,
             (double)c->drain_cpu_ns / 1e6, c->vm_cpu_ns ? 100.0 * (double)c->drain_cpu_ns / (double)c->vm_cpu_ns : 0.0,
             (double)c->vm_cpu_ns / 1e6);
    size_t used = strlen(out->notes);
    snprintf(out->notes + used, sizeof out->notes - used, "%s%s", used ? "; " : "", note);
    if (c->unwinder)
        snprintf(note, sizeof note,
                 "C frames unwound with DWARF (%u-byte stack copies): %llu of %llu samples with a C leaf reached "
                 "JIT code; %llu of %llu samples in shared JIT fragments reached their Erlang caller (%llu by the "
                 "call site saved, %llu by the collection's start), %llu not: it was only on the Erlang stack, "
                 "changed before the drain%s; %llu in a collection took the frames under their caller from its "
                 "end (%llu collections' stacks taken); %llu walks cut where it had changed, %llu went on where the "
                 "caller's frame made another of its calls; %llu samples hold an Erlang frame",
                 BS_PERF_STACK_BYTES, (unsigned long long)c->reached_jit, (unsigned long long)c->c_leaf,
                 (unsigned long long)(c->callers_site + c->callers_kernel + c->callers_found + c->callers_gc),
                 (unsigned long long)(c->fragment_first + c->jit_leaf_fragment), (unsigned long long)c->callers_site,
                 (unsigned long long)c->callers_gc,
                 (unsigned long long)(c->callers_missed + c->callers_refused), most_missed(c, join, sizeof join),
                 (unsigned long long)c->gc_stacks_used, (unsigned long long)atomic_load(&c->gc_stacks.taken),
                 (unsigned long long)c->walks_cut, (unsigned long long)c->walks_other_site,
                 (unsigned long long)c->erlang_any);
    else
        snprintf(note, sizeof note, "C frames not unwound: %s; samples in the VM's C code do not reach their Erlang caller",
                 c->no_unwind);
    used = strlen(out->notes);
    snprintf(out->notes + used, sizeof out->notes - used, "; %s", note);
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
    bs_perf_stats ps = c->sampler_stats; /* after bs_cpu_stop */
    uint64_t program = c->traced_samples - c->tracer_samples;
    /* st.untraced counts every chain charged to the process's node: those
     * of collections and of no Erlang function, and those whose functions
     * the process's tree does not hold. */
    uint64_t own_node = c->gc_samples + c->no_erlang;
    uint64_t not_in_tree = st.untraced > own_node ? st.untraced - own_node : 0;
    char note[1024];
    snprintf(note, sizeof note,
             "self times from CPU samples, not traced times: %llu samples at %u Hz of the traced processes "
             "(%.3f ms each); the tracer took %.1f%% of their sampled CPU (%llu samples in the VM's trace "
             "code or beamspy's); %llu samples in garbage collection (tracing makes a process collect "
             "several times as often: charged to the process itself, not to the functions they fell on); "
             "%llu samples reached no Erlang function and %llu no function traced in "
             "their process (both charged to the process itself); %llu samples of untraced functions "
             "charged to their nearest traced caller; %llu lost by the kernel, %llu not kept (memory); "
             "call counts and stacks are the trace's",
             (unsigned long long)program, c->hz, 1000.0 / c->hz,
             c->traced_samples ? 100.0 * (double)c->tracer_samples / (double)c->traced_samples : 0.0,
             (unsigned long long)c->tracer_samples, (unsigned long long)c->gc_samples,
             (unsigned long long)c->no_erlang, (unsigned long long)not_in_tree,
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
