/* frame_key.h — the identity of a stack frame while recording.
 *
 * The engine never sees BEAM terms: whoever feeds it events (the NIF, a reader,
 * a test) picks two opaque 64-bit words and an arity that identify a function,
 * and turns them back into a name only when a profile is built. module == 0 is
 * reserved for the engine's own pseudo-frames (SLEEP, WAIT, RUNNABLE, GC); module ==
 * BS_SPAN_MODULE marks a telemetry span frame (span_frames.h), whose function
 * word names the span for whoever names frames. */
#ifndef BS_FRAME_KEY_H
#define BS_FRAME_KEY_H

#include <stdint.h>

typedef struct bs_key {
    uint64_t module;
    uint64_t function;
    uint32_t arity;
} bs_key;

/* SLEEP: scheduled out, reason unknown; WAIT: waiting in a receive;
 * RUNNABLE: scheduled out while able to run (stack_rebuild.h). */
enum bs_pseudo_frame { BS_PSEUDO_SLEEP = 1, BS_PSEUDO_GC = 2, BS_PSEUDO_WAIT = 3, BS_PSEUDO_RUNNABLE = 4 };

static inline int bs_key_eq(const bs_key *a, const bs_key *b)
{
    return a->module == b->module && a->function == b->function && a->arity == b->arity;
}

static inline int bs_key_is_pseudo(const bs_key *k) { return k->module == 0; }

#define BS_SPAN_MODULE UINT64_MAX

static inline int bs_key_is_span(const bs_key *k) { return k->module == BS_SPAN_MODULE; }

static inline bs_key bs_key_pseudo(enum bs_pseudo_frame which)
{
    bs_key k = {0, (uint64_t)which, 0};
    return k;
}

static inline uint64_t bs_key_hash(const bs_key *k, uint32_t parent)
{
    uint64_t h = k->module * 0x9E3779B97F4A7C15ull;
    h ^= (k->function + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full;
    h ^= ((uint64_t)k->arity << 32 | parent) * 0x165667B19E3779F9ull;
    h ^= h >> 29;
    return h;
}

#endif
