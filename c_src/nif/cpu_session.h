/* cpu_session.h — `mode => cpu': CPU samples of the VM's scheduler threads
 * taken by the kernel, charged to the Erlang process each thread ran.
 *
 * Which process a sample is (the join), two ways. By registers (x86_64,
 * bs_cpu_open's by_regs; beamspy_cpu:join/0 on the Erlang side): BEAMAsm
 * keeps the running Process * in r13 and its first word is the pid; the
 * sample's r13 at its innermost JIT frame (its own when the leaf is JIT
 * code, else as the DWARF unwinder restored it from the C frames' CFI)
 * names the process, read by the drain with process_vm_readv and kept if it
 * is a local pid. Nothing is traced for it: a whole-VM session adds a
 * record for each process seen (bs_session_proc_try), one of chosen
 * processes keeps those whose records exist (the targets, given at the
 * session's creation, and their spawns, traced with `procs'). Samples
 * under the scheduler's loop (the fragment process_main) are the
 * scheduler's. By scheduling events (elsewhere, and times => samples): the
 * session traces `running' (in/out) of its target processes; each callback
 * logs, on the scheduler thread itself, which process that thread now runs
 * (cpu/thread_slices.h). The kernel
 * samples every scheduler thread (normal, dirty CPU, dirty I/O) at `hz'
 * with their user-space call chains (cpu/perf_sampler.h: the JIT keeps
 * frame pointers when the VM runs with +JPperf true). A drain thread of the
 * NIF empties the kernel's buffers every BS_CPU_DRAIN_MS (more often at
 * high rates, when the rings hold stack copies), unwinds the C frames of
 * samples taken in the VM's C code (cpu/dwarf_unwind.h, when libdw.so.1 is
 * there; docs/cpu-unwind.md), names each
 * address (cpu/symbols.h: the JIT's perf map for Erlang code, ELF symbols
 * for the VM's C code and libraries) and adds the stack, root first, to
 * the call tree of the sample's process (its record in the session's pid
 * table): one sample is a weight of 1 at
 * the stack's leaf. When the session traces every process (`all'), samples
 * while the thread ran none go to a tree of the scheduler itself
 * (`[scheduler]', `[dirty cpu scheduler]', `[dirty io scheduler]'; by
 * registers also the dirty schedulers' samples, which have no JIT frame),
 * and samples whose process is not known (a thread log lapped or still
 * empty; by registers no JIT frame reached, or no pid read at r13) to
 * `[unknown process]'; a scheduler's samples spinning before it sleeps go
 * under `[spin]' in its tree (cpu/sched_work.h); a session of chosen processes leaves them out (they are other
 * processes' work as well as the scheduler's) and counts them. A chain the kernel cut at its limit
 * (perf_event_max_stack) keeps its innermost frames under `[truncated]'.
 *
 * Every sample also counts in a window of samples per innermost Erlang
 * function (cpu/hot_counts.h, under a mutex) that `beamspy top' takes and
 * restarts (bs_cpu_hot_take).
 *
 * With option times => samples (session field cpu_times) the calls are
 * traced as usual and the samples of traced processes are kept apart
 * (bs_cpu_traced_export): the trees stay the trace's.
 *
 * Memory: the trees are charged to the session's budget (max_memory); the
 * address cache is BS_CPU_ADDR_CACHE entries (1 MiB); the frame table holds
 * one entry per distinct code address named (at most BS_CPU_MAX_FRAMES; any
 * further one is `[other code]'); the thread logs 256 KiB a thread; the
 * kernel's ring buffers as perf_sampler.h says; the kept chains of times
 * => samples at most CHAINS_MAX_BYTES (64 MiB, sample_chains.h); the DWARF
 * unwinder at most 64 MiB (its CFI and tables) and one sample's frames. */
#ifndef BS_CPU_SESSION_H
#define BS_CPU_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include <erl_nif.h>

#include "../cpu/hot_counts.h"
#include "../engine/frame_name.h"
#include "../engine/profile.h"

#define BS_CPU_DRAIN_MS 10
#define BS_CPU_ADDR_CACHE 65536u /* power of two */
#define BS_CPU_MAX_FRAMES 1000000u
#define BS_CPU_MIN_HZ 1u
#define BS_CPU_MAX_HZ 10000u

/* The module word of a CPU frame's key (frame_key.h): its function word is
 * the frame's id in the session's CPU frame table. */
#define BS_CPU_FRAME_MODULE (UINT64_MAX - 1)

struct bs_session;
typedef struct bs_cpu bs_cpu;

/* Opens sampling of this VM's scheduler threads at hz for session s and
 * starts the drain thread. NULL, with a sentence in why (what failed, and
 * how to fix it), when it cannot. */
bs_cpu *bs_cpu_open(ErlNifEnv *env, struct bs_session *s, unsigned hz, int all, int by_regs, char *why, size_t cap);

/* 1 when the session's samples name their process by their registers
 * (by_regs asked for, x86_64, not times => samples): no scheduling events
 * are needed, and a whole-VM session adds a record for each process seen. */
int bs_cpu_by_registers(const bs_cpu *c);

/* From the tracer's callback, on the scheduler thread: from t on this
 * thread runs pid (0: none, after an `out'). Nothing when by registers. */
void bs_cpu_switch(bs_cpu *c, uint64_t pid, uint64_t t);
/* Joined by registers, or times => samples: the calling thread (a dirty
 * scheduler) starts a garbage collection of the process pid at t, or ends
 * it: its samples there name no process otherwise (no JIT frame, no `in').
 * The process's Erlang stack is taken as it starts, for those samples
 * (gc_stacks.h). */
void bs_cpu_dirty_gc_start(bs_cpu *c, uint64_t pid, uint64_t t);
void bs_cpu_dirty_gc_end(bs_cpu *c, uint64_t t);
/* Joined by registers (from enabled/3) or times => samples (from trace/5),
 * on a normal scheduler thread: the
 * process pid starts a garbage collection there at t (its Erlang caller is
 * logged for the samples taken in it), or the collection ends (bs_cpu_gc_end:
 * when a sample was taken in it, the Erlang frames under the caller are taken
 * from the process's stack, gc_stacks.h). */
void bs_cpu_gc_start(bs_cpu *c, uint64_t pid, uint64_t t);
void bs_cpu_gc_end(bs_cpu *c, uint64_t pid, uint64_t t);

/* Stops sampling, joins the drain thread and drains what is left; the trees
 * are final afterwards. Idempotent. */
void bs_cpu_stop(bs_cpu *c);

/* Stops if needed and frees everything; NULL-safe. */
void bs_cpu_close(bs_cpu *c);

/* Top's window (cpu/hot_counts.h): its max most sampled functions, most
 * first, into out, and its totals into *totals (slots NULL); a new window
 * starts. Any thread. */
size_t bs_cpu_hot_take(bs_cpu *c, bs_hot_entry *out, size_t max, bs_hot_counts *totals);

/* The sampling rate. */
unsigned bs_cpu_hz(const bs_cpu *c);

/* The name of a CPU frame key in style; its length, or -1. */
int bs_cpu_frame_name(const bs_cpu *c, uint64_t frame, bs_name_style style, char *buf, size_t cap);

/* Adds the trees of samples outside any traced process, sets the profile's
 * unit (samples) and its note on how they were taken. After bs_cpu_stop. */
int bs_cpu_export(bs_cpu *c, bs_profile *out, bs_key_namer namer, void *ctx);

/* Option times => samples: the session traces calls as usual (its trees
 * are the trace's) and the sampler runs beside it; each sample of a traced
 * process is the tracer's cost (a frame of the VM's trace code or of
 * beamspy's before any Erlang function of the program) or is kept as the
 * chain of its Erlang functions. This sets the self times of the traced
 * trees out->trees[i] (pids[i]: the process of tree i, 0 for none) from
 * those samples (engine/sampled_times.h) and adds a note saying what the
 * times are. After bs_cpu_stop and the trees' export; the profile's
 * frames are named by namer as the trees' were. */
int bs_cpu_traced_export(bs_cpu *c, bs_profile *out, const uint64_t *pids, uint32_t n_pids, bs_key_namer namer,
                         void *ctx);

#endif
