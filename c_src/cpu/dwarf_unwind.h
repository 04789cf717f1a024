/* dwarf_unwind.h — unwinds the native (C) part of a CPU sample's user stack
 * with the modules' DWARF call-frame information, the way
 * `perf --call-graph dwarf` does, then hands over to frame pointers.
 *
 * Why: Debian's beam.smp (and most libraries) keep no frame pointers, so a
 * sample taken in the VM's C code (BIFs, GC, allocation) gives the kernel's
 * frame-pointer walk garbage. With PERF_SAMPLE_REGS_USER (ip, sp, bp) and
 * PERF_SAMPLE_STACK_USER (a copy of the top of the user stack) the C frames
 * unwind through the .eh_frame (or .debug_frame) CFI of the module each
 * address is in. JIT code has no CFI but keeps frame pointers (+JPperf true):
 * unwinding stops at the first address outside every module with CFI and
 * reports the registers there, and bs_fp_walk goes on from them.
 *
 * The DWARF unwind reads memory only from the stack copy; the frame-pointer
 * walk may go on through a reader of the process (bs_mem_reader), since
 * the JIT's frames are on the Erlang process's stack, not in the copy. The CFI
 * comes from elfutils' libdw (BS_HAVE_LIBDW, which the Makefile defines when
 * libdw-dev is there); without it bs_dwarf_unwinder_open fails and says so,
 * and bs_fp_walk / bs_callchain_splice still work.
 *
 * Modules: the executable mappings of /proc/<ospid>/maps, each file's ELF
 * opened once (by path, device and inode) and kept until close. An address in
 * no known mapping rereads the maps (a library loaded since), at most once per
 * BS_DWARF_REMAP_MS; an address in a mapping without CFI (the JIT's anonymous
 * or memfd mappings) never does. The vdso is taken from this process's own
 * copy (same kernel, same image) when ospid is this process.
 *
 * Memory cap: max_bytes covers the CFI sections of the files kept open
 * (.eh_frame, .eh_frame_hdr, .debug_frame: what libdw reads and caches its
 * parsed entries from, so its caches grow at most in proportion) plus the
 * module tables. A file whose CFI would pass the cap is not opened: its
 * addresses count as addresses without CFI (the unwind stops there) and
 * bs_dwarf_unwinder_stats' files_over_cap counts it. The mapped files
 * themselves are mmap'ed read-only (address space, shared page cache).
 * At most BS_DWARF_MAX_MAPPINGS executable mappings are tracked.
 *
 * Not thread-safe (libdw's CFI caches are not): one caller at a time per
 * unwinder. No recursion; each frame costs one libdw frame lookup (malloc'd
 * and freed by libdw) and a bounded DWARF expression evaluation. */
#ifndef BS_CPU_DWARF_UNWIND_H
#define BS_CPU_DWARF_UNWIND_H

#include <stddef.h>
#include <stdint.h>

#define BS_DWARF_REMAP_MS 1000
#define BS_DWARF_MAX_MAPPINGS 4096

/* x86_64: rip, rsp, rbp and r13 of the sampled thread (or of a frame);
 * has_r13 0 when r13 is not known (not sampled, or a frame's CFI does not
 * say where its caller's value is). */
typedef struct bs_user_regs {
    uint64_t ip, sp, bp, r13;
    int has_r13;
} bs_user_regs;

/* A copy of the user stack taken at the sample: the bytes at [sp, sp + size). */
typedef struct bs_stack_copy {
    uint64_t sp;
    const unsigned char *data;
    size_t size;
} bs_stack_copy;

/* Why bs_dwarf_unwind stopped. */
typedef enum {
    BS_UNWIND_JIT,         /* an address outside every module with CFI: *at is that frame */
    BS_UNWIND_NO_CFI,      /* an address inside a module, but no CFI covers it */
    BS_UNWIND_STACK_END,   /* a value the CFI needs lies outside the stack copy */
    BS_UNWIND_OUTERMOST,   /* the CFI says there is no caller (_start, thread start) */
    BS_UNWIND_BAD_FRAME,   /* the CFI gave a caller that cannot be (sp not growing, ip 0) */
    BS_UNWIND_FULL         /* cap addresses written */
} bs_unwind_stop;

typedef struct bs_dwarf_unwinder bs_dwarf_unwinder;

typedef struct bs_dwarf_stats {
    uint64_t maps_reads;     /* reads of /proc/<ospid>/maps */
    uint64_t files_open;     /* ELF files with CFI kept open */
    uint64_t files_over_cap; /* files left out because of max_bytes */
    uint64_t bytes;          /* what the cap counts */
} bs_dwarf_stats;

/* Opens an unwinder for OS process ospid (its /proc/<ospid>/maps and the
 * files mapped there). 0 on success; -1 with a reason in why (cap bytes)
 * when libdw is missing, the maps cannot be read or memory runs out. */
int bs_dwarf_unwinder_open(bs_dwarf_unwinder **out, int ospid, size_t max_bytes, char *why, size_t cap);

/* Unwinds from regs through frames that have CFI, reading memory only from
 * stack. Writes the addresses of the frames (leaf first: regs->ip, then the
 * return addresses) to out, at most cap. Stops at the first address outside
 * every module with CFI (JIT code: not written; *reached_jit = 1), or for
 * another reason (*reached_jit = 0; stop, when not NULL, says which). *at
 * gets the registers of the frame where it stopped (ip, and sp, bp and r13
 * as the CFI recovered them, callee-saved registers restored from where a
 * frame saved them; bp 0 and has_r13 0 when not known), so a caller can go
 * on with bs_fp_walk and read the JIT frame's r13. Returns the number of addresses written. */
size_t bs_dwarf_unwind(bs_dwarf_unwinder *u, const bs_user_regs *regs, const bs_stack_copy *stack,
                       uint64_t *out, size_t cap, bs_user_regs *at, int *reached_jit, bs_unwind_stop *stop);

/* The values the callee-saved registers (rbx, rbp, r12-r15) held in the
 * frames unwound, as the CFI restored them from where a callee saved them
 * (and r13 of the leaf): each distinct value once, at most cap. What a C
 * function keeps across its calls (the Process * a dirty scheduler works
 * for, for one) is among them when a function below it saved the register. */
typedef struct bs_unwind_saved {
    uint64_t *values;
    size_t cap, n;
} bs_unwind_saved;

/* bs_dwarf_unwind, and the callee-saved values into *saved (n reset). */
size_t bs_dwarf_unwind_saved(bs_dwarf_unwinder *u, const bs_user_regs *regs, const bs_stack_copy *stack,
                             uint64_t *out, size_t cap, bs_user_regs *at, int *reached_jit, bs_unwind_stop *stop,
                             bs_unwind_saved *saved);

/* Reads of the process's memory outside the stack copy. The JIT's frames of
 * an Erlang process live on that process's own stack, not on the scheduler's
 * C stack that PERF_SAMPLE_STACK_USER copies: measured on OTP 25, the bp
 * recovered at the first JIT frame points there on nearly every sample whose
 * leaf is C code. read gives len bytes at addr into buf and returns 1, or 0
 * (unmapped, refused). Memory read after the sample may have changed since:
 * read it as soon as the sample is drained. proc_mem.h reads a process. */
typedef struct bs_mem_reader {
    int (*read)(void *ctx, uint64_t addr, void *buf, size_t len);
    void *ctx;
} bs_mem_reader;

/* Frame-pointer walk from *at: at->ip, then the return address at bp + 8 of
 * each frame, the next frame at [bp], while both words can be read (from
 * the stack copy, else through mem when not NULL), frames go up the stack
 * and the return address is not 0. Returns the number of addresses written
 * (at most cap). */
size_t bs_fp_walk(const bs_user_regs *at, const bs_stack_copy *stack, const bs_mem_reader *mem, uint64_t *out,
                  size_t cap);

/* Joins a sample's chains: the DWARF part (dwarf, n_dwarf), then the
 * frame-pointer walk from *at (when reached_jit; through mem as bs_fp_walk
 * does), then the
 * kernel's frame-pointer callchain (kernel, n_kernel: user addresses only,
 * leaf first) from where it meets the walk's last two addresses, so frames
 * beyond the stack copy still come from the kernel. Without a DWARF part
 * (n_dwarf 0 and !reached_jit), the kernel's chain as it is. Writes at most
 * cap addresses to out; returns how many. */
size_t bs_callchain_splice(const uint64_t *dwarf, size_t n_dwarf, int reached_jit, const bs_user_regs *at,
                           const bs_stack_copy *stack, const bs_mem_reader *mem, const uint64_t *kernel,
                           size_t n_kernel, uint64_t *out, size_t cap);

/* The 8 bytes at addr into *v when they lie inside the copy: 1, else 0. */
int bs_stack_read8(const bs_stack_copy *stack, uint64_t addr, uint64_t *v);

/* On (the default): a frame whose CFI row has the simple form (CFA = register
 * + offset, registers saved at CFA + offset: nearly all compiled code) is
 * unwound from a copy of that row, cached by pc (cfi_rule.h). Off: every
 * frame through libdw's lookup and expressions; the tests compare the two. */
void bs_dwarf_unwinder_use_rows(bs_dwarf_unwinder *u, int on);

void bs_dwarf_unwinder_stats(const bs_dwarf_unwinder *u, bs_dwarf_stats *out);

void bs_dwarf_unwinder_close(bs_dwarf_unwinder *u);

#endif
