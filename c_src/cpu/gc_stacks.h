/* gc_stacks.h — the Erlang stack of each garbage collection a CPU sample
 * landed in, taken on the collecting thread as the collection ends.
 *
 * A collection moves its process's stack, and the sampler's drain reads the
 * frames under a sample's Erlang caller only milliseconds later: by then
 * they are gone (the walk is cut). The tracer's callbacks of the collection's
 * start and end run on the collecting scheduler thread. At the start the
 * thread notes the head of its perf ring (perf_sampler.h) and the caller's
 * return address; at the end, only when the head moved (the kernel wrote a
 * sample, or a lost-record, meanwhile), it copies the top of the process's
 * stack, now in its new place, with process_vm_readv (never a fault) and
 * walks its frame pointers there: the same return addresses as before the
 * collection. The drain takes the entry of a sample's thread whose
 * collection held the sample's time.
 *
 * One writer per thread log (its thread), one reader (the drain), no lock:
 * a ring of BS_GC_STACK_RING entries per thread; an entry overwritten while
 * it was read, or before, is not used (the walk is cut as before). Memory:
 * BS_GC_STACK_COPY bytes of copy and BS_GC_STACK_RING entries of
 * BS_GC_STACK_FRAMES return addresses per thread, and one walk (about 50
 * KiB). A
 * collection with no sample costs two loads of the ring's head. */
#ifndef BS_CPU_GC_STACKS_H
#define BS_CPU_GC_STACKS_H

#include <stdatomic.h>
#include <stdint.h>

#include "cpu/proc_mem.h"

#define BS_GC_STACK_FRAMES 128u  /* return addresses kept per collection (the kernel's own walk stops at 127) */
#define BS_GC_STACK_RING 32u     /* entries per thread, a power of two: more than a drain period's samples */
#define BS_GC_STACK_COPY 16384u  /* bytes of the process's stack copied from its top */

typedef struct bs_gc_stack {
    _Atomic uint64_t seq;        /* 2k+1 while entry k is written, 2k+2 once it is */
    _Atomic uint64_t t_start, t_end;
    _Atomic uint64_t n;
    _Atomic uint64_t ret[BS_GC_STACK_FRAMES]; /* the caller's return address first */
} bs_gc_stack;

typedef struct bs_gc_stack_log {
    const uint64_t *ring_head;   /* the thread's perf ring head (NULL: not sampled) */
    /* The writer's own: the collection under way. */
    uint64_t head_at_start, t_start, ra;
    _Atomic uint64_t written;    /* entries published (writer) */
    uint64_t read;               /* entries the reader is past */
    unsigned char *copy;         /* BS_GC_STACK_COPY bytes */
    uint64_t *walk;              /* BS_GC_STACK_FRAMES: the walk before it is published (off the
                                    scheduler's own stack) */
    bs_gc_stack *ring;
} bs_gc_stack_log;

typedef struct bs_gc_stacks {
    bs_gc_stack_log *logs;
    unsigned n;
    _Atomic uint64_t taken;      /* entries published */
} bs_gc_stacks;

/* n logs, all unsampled until bs_gc_stacks_bind; 0, or -1 when out of memory. */
int bs_gc_stacks_init(bs_gc_stacks *g, unsigned n);
void bs_gc_stacks_free(bs_gc_stacks *g);
/* Log i's thread has its perf ring head at ring_head. */
void bs_gc_stacks_bind(bs_gc_stacks *g, unsigned i, const uint64_t *ring_head);

/* Writer side, on the collecting thread: its collection starts at t, called
 * from the return address ra (0: not known: nothing is taken at its end). */
void bs_gc_stack_start(bs_gc_stack_log *log, uint64_t t, uint64_t ra);

/* What lies on top of the stack when a collection ends. */
typedef enum {
    BS_GC_TOP_FRAGMENT, /* a collection called from Erlang code on a normal
                           scheduler: the collecting fragment's own frame,
                           which returns to ra */
    BS_GC_TOP_PROCESS   /* a collection on a dirty scheduler: the process
                           was scheduled out at ra (c_p->i, in the function
                           it runs), its own frame at its frame pointer:
                           on top, or above the function's y registers */
} bs_gc_top;

/* It ends at t, the process's stack top now at stop: when a sample was taken
 * meanwhile, the stack's return addresses are copied out (through mem,
 * bs_proc_mem_copy) and published. Returns 1 when published. */
int bs_gc_stack_end(bs_gc_stacks *g, bs_gc_stack_log *log, uint64_t t, uint64_t stop, bs_gc_top top,
                    const bs_proc_mem *mem);

/* A collection whose samples cannot be known in advance worth walking at
 * its start (on a dirty scheduler: the process waits, its stack in place;
 * such collections are few and long, and the drain often reads their
 * samples before they end): the process's stack (BS_GC_TOP_PROCESS, top at
 * stop) walked from fp, its own frame (c_p->frame_pointer: above the y
 * registers of the function it runs, which the JIT saves with stop; 0: the
 * frame is at stop), published at t, open (t_end BS_GC_STACK_OPEN) until
 * bs_gc_stack_close. Nothing is taken when fp lies outside the copied top
 * of the stack. Returns 1 when published. */
#define BS_GC_STACK_OPEN UINT64_MAX
int bs_gc_stack_take_open(bs_gc_stacks *g, bs_gc_stack_log *log, uint64_t t, uint64_t ra, uint64_t stop,
                          uint64_t fp, const bs_proc_mem *mem);
/* The log's newest entry, if open, ends at t. */
void bs_gc_stack_close(bs_gc_stack_log *log, uint64_t t);

/* Reader side (the drain, samples of the log's thread in time order): the
 * return addresses of the collection that held time t and was called from
 * ra (0: from anywhere), into out (at most cap): how many, 0 when none is
 * known. */
uint32_t bs_gc_stack_at(bs_gc_stack_log *log, uint64_t t, uint64_t ra, uint64_t *out, uint32_t cap);

#endif
