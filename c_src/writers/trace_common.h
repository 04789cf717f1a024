/* trace_common.h — what the speedscope, Chrome trace and perf script writers
 * share: microsecond numbers written without printf's floating point or the
 * locale, the walk over a process's spans in nesting order, the samples of a
 * call tree with a depth limit, and per-frame strings escaped once and
 * reused for every event.
 *
 * Why two ways to write microseconds. Readers that only compare the numbers
 * we write (speedscope's `at`) are exact with three decimals (whole
 * nanoseconds). Chrome trace readers do arithmetic on them, two kinds:
 * speedscope ends an `X` event at ts + dur in binary floating point, where
 * 0.1 + 0.2 is not 0.3, so with decimal fractions a child that ends with its
 * parent ends after it about half of the time; Perfetto rounds ts and dur
 * to nanoseconds separately (llround(v * 1000)), so whatever we write must
 * also round to the right nanoseconds one by one. Multiples of 2^-12 µs
 * (0.244 ns) satisfy both: binary floating point adds them exactly, and the
 * nearest multiple is within 0.122 ns of the true time, so ts, dur, and
 * their difference all round back to the exact nanoseconds. */
#ifndef BS_TRACE_COMMON_H
#define BS_TRACE_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../engine/profile.h"

#define BS_EXPORTER "beamspy@0.1.0"

/* Room for any number written below, with its NUL. */
#define BS_NUMBER_MAX 40

/* v in decimal. Returns the length. */
size_t bs_fmt_uint(char *buf, uint64_t v);
/* ns as microseconds with up to three decimals, trailing zeros dropped:
 * 1500 -> "1.5", 2000 -> "2", 7 -> "0.007". Returns the length. */
size_t bs_fmt_us(char *buf, uint64_t ns);

/* ns in units of 2^-12 µs, rounded to the nearest (ns * 4096 / 1000 =
 * ns * 512 / 125 never ends in exactly one half, so there are no ties). */
uint64_t bs_ns_to_binary_us(uint64_t ns);
/* k * 2^-12 µs written exactly in decimal ("1.000244140625", "3", "0.5"). */
size_t bs_fmt_binary_us(char *buf, uint64_t k);

/* Earliest span start over all trees; 0 when there are no spans. */
uint64_t bs_spans_origin(const bs_profile *p);
/* 1 if some tree has spans. */
int bs_profile_has_spans(const bs_profile *p);

/* Called for the spans of one tree in nesting order. open gets a span with its
 * end already clamped into the span around it; close (may be NULL) gets every
 * opened span once, innermost first, at times that never decrease. A callback
 * returns 0, or -1 to stop the walk. */
typedef struct bs_span_visitor {
    int (*open)(void *ctx, uint32_t node, uint64_t start_ns, uint64_t end_ns);
    int (*close)(void *ctx, uint32_t node, uint64_t at_ns);
    void *ctx;
} bs_span_visitor;

typedef struct bs_span_walk_opts {
    int skip_sleep;  /* spans of SLEEP frames are left out */
    int skip_empty;  /* zero-length spans, and spans inside them, are left out */
} bs_span_walk_opts;

/* Walks t->spans. The engine records them sorted by (start, depth) and
 * properly nested, but a span of a frame can be missing (quota) and data read
 * from files may be wrong, so nesting is taken from the call tree (a span
 * encloses the next one only if its node is an ancestor) and times are
 * clamped so that what the visitor sees is always properly nested. Returns 0,
 * or -1 (allocation failure, errno ENOMEM, or a callback's -1). */
int bs_walk_spans(const bs_profile *p, const bs_ptree *t, const bs_span_walk_opts *o, const bs_span_visitor *v);

/* Stacks written as samples (speedscope's sampled profiles, perf script):
 * each node at most max_depth frames below the process frame with its own
 * weight, and for each node exactly max_depth deep whose subtree weighs more
 * than itself, one sample of the frame "[deeper]" under it with the rest, as
 * the folded writer does: without it a 100,000-deep recursion writes
 * 100,000 stacks of up to 100,000 frames. */
#define BS_DEEPER_FRAME "[deeper]"
#define BS_DEFAULT_SAMPLE_DEPTH 1024

typedef struct bs_sample_visitor {
    /* What node weighs (0: nothing of its own is written). */
    uint64_t (*weight)(void *ctx, const bs_ptree *t, uint32_t node);
    /* A sample: node's stack (deeper: with "[deeper]" under it) and its weight > 0. */
    int (*sample)(void *ctx, const bs_ptree *t, uint32_t node, int deeper, uint64_t weight);
    void *ctx;
} bs_sample_visitor;

/* Calls v->sample in node order. max_depth 0 means BS_DEFAULT_SAMPLE_DEPTH.
 * Returns 0, or -1 (allocation failure, errno ENOMEM, or the callback's -1). */
int bs_walk_samples(const bs_ptree *t, unsigned max_depth, const bs_sample_visitor *v);
/* 1 if some tree of p has a node deeper than max_depth (0: the default),
 * 0 if not, -1 if memory ran out. */
int bs_profile_deeper_than(const bs_profile *p, unsigned max_depth);

/* Strings made once per frame id on first use (escaped JSON names, perf
 * frame lines) and kept for the rest of the write. */
typedef struct bs_frame_strings {
    char **text;
    size_t *len;
    uint32_t n;
} bs_frame_strings;

/* Writes the string of one frame (name, id, the caller's context) to out. */
typedef void (*bs_frame_string_maker)(FILE *out, const char *name, uint32_t frame, void *ctx);

int bs_frame_strings_init(bs_frame_strings *fs, uint32_t n_frames);
void bs_frame_strings_free(bs_frame_strings *fs);
/* The string of frame id (made with make on first use), or NULL on failure. */
const char *bs_frame_string(bs_frame_strings *fs, const bs_profile *p, uint32_t frame,
                            bs_frame_string_maker make, void *ctx, size_t *len);

#endif
