/* render_opts.h — every option a writer understands, in one place.
 *
 * Front ends (the NIF, the CLI) only fill this in; writers only read it.
 * Zero-initialised means "all defaults", documented at each field. */
#ifndef BS_RENDER_OPTS_H
#define BS_RENDER_OPTS_H

#include <stdint.h>

/* What a write is about to produce, known after the filters and before the
 * first byte (see output_size.h). */
typedef struct bs_write_report {
    int format;                /* a bs_format */
    uint64_t spans;            /* spans in the file (after the cap) */
    uint64_t spans_capped;     /* spans the timeline cap left out */
    uint64_t timeline_cap;     /* the cap that applied; 0: none */
    uint64_t projected_bytes;  /* estimated size of the file */
    uint64_t warn_bytes;       /* sizes above this are announced; 0: bs_size_warn_bytes() */
    /* folded only (whole units): stacks with time that rounds to no line,
     * their time, and the time of every stack in the file, in ns */
    uint64_t stacks_rounded_out;
    uint64_t rounded_out_ns;
    uint64_t total_ns;
    /* size_limit.h: recursion folded because the whole file would be too
     * big to open: the mode applied (0: none), the projected size of the
     * whole file and the threshold it was above */
    int auto_collapse;
    uint64_t full_bytes;
    uint64_t openable_bytes;
} bs_write_report;

typedef enum bs_palette {
    BS_PALETTE_HOT = 0,  /* default: warm reds/oranges/yellows, hue from the name */
    BS_PALETTE_BEAM      /* OTP apps, Elixir stdlib, user code, SLEEP/GC in distinct hues */
} bs_palette;

typedef struct bs_render_opts {
    const char *title;        /* SVG/HTML heading; NULL: "Flame Graph" (or "Flame Chart") */
    const char *subtitle;     /* NULL: none */
    const char *count_name;   /* unit shown in tooltips; NULL: "µs" for recorded
                                 profiles, "samples" for folded input */
    unsigned width;           /* SVG width in px; 0: 1200 */
    double min_width;         /* SVG: frames narrower than this many px are pruned; 0: 0.1 */
    int inverted;             /* SVG: icicle graph (root at the top) */
    int flamechart;           /* SVG: x is time (needs a timeline), not alphabetical merge */
    bs_palette palette;
    int drop_sleep;           /* leave SLEEP, WAIT and RUNNABLE frames out (all writers) */
    int drop_wait;            /* leave WAIT frames out (whole-VM views hide idle time) */
    int order_by_cpu;         /* processes by running time, most first (whole-VM views) */
    int merge_processes;      /* one tree for all processes (applied before writing) */
    int collapse_recursion;   /* recursion folded into one frame (all writers): 0 no,
                                 1 direct (f calling f), 2 all (f anywhere below f) */
    const char *include_re;   /* keep only stacks with a frame matching (POSIX ERE); NULL: all */
    const char *exclude_re;   /* drop stacks with a frame matching (POSIX ERE); NULL: none */
    unsigned folded_max_depth;/* folded: deeper frames summed into "[deeper]"; 0: 1024 */
    uint64_t timeline_cap;    /* spans at most in a speedscope or Chrome trace file (the
                                 shallowest are kept, span_cap.h); 0: the format's default
                                 (BS_TIMELINE_CAP_SPEEDSCOPE, BS_TIMELINE_CAP_CHROME);
                                 UINT64_MAX: no cap */
    /* Called (if set) once the filters and the cap are applied, before the
     * file is written: the CLI prints its warnings from here. */
    void (*on_report)(void *ctx, const bs_write_report *r);
    uint64_t size_warn_bytes; /* projected sizes above this are announced; 0: BEAMSPY_SIZE_WARN_BYTES
                                 from the environment (the NIF reads the VM's), else 100 MB */
    void *report_ctx;
    int full;                 /* write every stack even above the size viewers open; 0: where
                                 on_report is set (the change is said there), a stack format
                                 projected above openable_bytes gets its recursion collapsed
                                 (size_limit.h) */
    uint64_t openable_bytes;  /* 0: BEAMSPY_OPENABLE_BYTES from the environment, else
                                 BS_OPENABLE_BYTES (200 MB) */
} bs_render_opts;

#endif
