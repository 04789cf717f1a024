/* hot_counts.h — samples per function over a window, for `beamspy top':
 * each sample of a CPU session counts once for its innermost Erlang
 * function (a BIF's or the VM's C time goes to the Erlang function that
 * called it); the scheduler's own samples and those that reach no Erlang
 * function are counted apart. The reader takes the window (the counts, most
 * first) and a new window starts.
 *
 * A fixed table of BS_HOT_SLOTS functions, each with a copy of its name
 * (module, function, arity; names longer than BS_HOT_NAME_MAX bytes are
 * cut), so the reader never touches the session's frame table. Functions
 * past the table's size in one window are counted in `others'. No lock:
 * the caller holds one (the drain thread adds, a NIF call takes).
 * Memory: BS_HOT_SLOTS × (BS_HOT_NAME_MAX + 16) bytes (about 1.1 MiB). */
#ifndef BS_HOT_COUNTS_H
#define BS_HOT_COUNTS_H

#include <stddef.h>
#include <stdint.h>

#define BS_HOT_SLOTS 4096u /* power of two */
#define BS_HOT_NAME_MAX 255u

typedef struct bs_hot_slot {
    uint32_t frame;               /* the session's frame id; UINT32_MAX: empty */
    uint64_t count;
    char name[BS_HOT_NAME_MAX + 1]; /* "module\1function\1arity" */
} bs_hot_slot;

typedef struct bs_hot_counts {
    bs_hot_slot *slots;
    unsigned used;
    uint64_t samples;   /* every sample of the window */
    uint64_t scheduler; /* of schedulers running no process ([spin] included) */
    uint64_t spin;      /* of those, [spin] */
    uint64_t no_erlang; /* of processes, reaching no Erlang function */
    uint64_t others;    /* of functions the table had no room for */
} bs_hot_counts;

/* One function of a window taken. */
typedef struct bs_hot_entry {
    uint64_t count;
    char name[BS_HOT_NAME_MAX + 1];
} bs_hot_entry;

int bs_hot_counts_init(bs_hot_counts *h);
void bs_hot_counts_free(bs_hot_counts *h);

/* A sample of function frame, named name (copied when first seen in the
 * window: "module\1function\1arity"). */
void bs_hot_counts_add(bs_hot_counts *h, uint32_t frame, const char *name);

/* The window's max most sampled functions into out, most first (ties by
 * name); their number. The counts in *h stay for the caller to read until
 * bs_hot_counts_reset. */
size_t bs_hot_counts_top(const bs_hot_counts *h, bs_hot_entry *out, size_t max);

/* A new window. */
void bs_hot_counts_reset(bs_hot_counts *h);

#endif
