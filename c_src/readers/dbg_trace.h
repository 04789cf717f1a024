/* dbg_trace.h — reading the files OTP's dbg trace ports write
 * (dbg:trace_port(file, Name), wrap sets {Name, wrap, Suffix, Size, Count},
 * and the stream of dbg:trace_port(ip, Port) saved to a file).
 *
 * The format (trace_file_drv.c and trace_ip_drv.c in runtime_tools, read
 * by dbg:trace_client/3): a sequence of records, each a tag byte, a 32-bit
 * big-endian number and a body. Tag 0: the number is the body's size and
 * the body is term_to_binary of one trace message ({trace, Pid, Tag, ...},
 * {trace_ts, ..., Timestamp}, {seq_trace, ...}). Tag 1 (ip ports only): the
 * port dropped that many messages; no body.
 *
 * Readers live apart from the writers (c_src/writers): they need ei and
 * c_src/dist/eterm.c (the hostile-input term decoder), which the NIF never
 * links. Everything read is untrusted: a truncated or corrupt file is an
 * error with the file and the byte offset of the bad record, never a crash.
 *
 * Caps (each said on stderr when hit, never silently):
 *   - max_term_bytes: a record body larger than this is skipped (the
 *     decoded term takes up to 32 bytes per encoded byte);
 *   - max_processes: events of processes beyond it are dropped;
 *   - max_memory: the call trees and timeline of the engine (bs_budget);
 *   - max_spans: calls kept in the timeline (the rest are only summed). */
#ifndef BS_DBG_TRACE_H
#define BS_DBG_TRACE_H

#include <stdint.h>
#include <stdio.h>

#include "../engine/frame_name.h"
#include "../engine/profile.h"
#include "defaults.h"
#include "readers.h"

#define BS_DBG_DEFAULT_MAX_TERM (4u * 1024 * 1024)
#define BS_DBG_DEFAULT_MAX_PROCESSES 100000u
#define BS_DBG_DEFAULT_MAX_MEMORY ((size_t)1 << 30)
#define BS_DBG_DEFAULT_MAX_SPANS ((unsigned)BS_DEFAULT_TIMELINE_CALLS) /* as --timeline's */
#define BS_DBG_RECORD_HEADER 5

typedef struct bs_dbg_opts {
    uint64_t max_term_bytes;  /* 0: BS_DBG_DEFAULT_MAX_TERM */
    uint32_t max_processes;   /* 0: BS_DBG_DEFAULT_MAX_PROCESSES */
    size_t max_memory;        /* 0: BS_DBG_DEFAULT_MAX_MEMORY */
    uint64_t max_spans;       /* 0: BS_DBG_DEFAULT_MAX_SPANS; UINT64_MAX: no timeline */
    int no_sleep;             /* do not charge scheduled-out time to SLEEP */
    int gc;                   /* charge garbage collection to GC */
    bs_name_style names;
    /* Called with one line (no newline) for everything the user should
     * know: the mode, caps hit, drops, wrap order. NULL: stderr. */
    void (*note)(void *ctx, const char *line);
    void *note_ctx;
} bs_dbg_opts;

/* ---- records ------------------------------------------------------------- */

typedef struct bs_dbg_records {
    FILE *fp;
    const char *name;
    uint64_t offset;          /* of the next record */
    uint64_t count;           /* records read so far */
    uint64_t max_term;
    unsigned char *buf;       /* body of the last term record */
    size_t cap;
} bs_dbg_records;

typedef enum { BS_DBG_REC_EOF = 0, BS_DBG_REC_TERM, BS_DBG_REC_DROP, BS_DBG_REC_TOO_BIG } bs_dbg_rec_kind;

typedef struct bs_dbg_record {
    bs_dbg_rec_kind kind;
    uint64_t offset;          /* where the record starts */
    uint64_t number;          /* 1 for the file's first record */
    uint32_t size;            /* body bytes (TERM, TOO_BIG) or messages dropped (DROP) */
    const unsigned char *body;/* TERM: size bytes, valid until the next call */
} bs_dbg_record;

void bs_dbg_records_init(bs_dbg_records *r, FILE *fp, const char *name, uint64_t max_term);
void bs_dbg_records_free(bs_dbg_records *r);
/* The next record. Returns 0 (out filled; kind EOF at a clean end) or -1
 * with err filled (truncated record, unknown tag, read error). */
int bs_dbg_next_record(bs_dbg_records *r, bs_dbg_record *out, bs_read_error *err);

/* ---- wrap sets ------------------------------------------------------------ */

/* Reorders paths in place into reading order: files named PREFIX<digits>
 * SUFFIX with the same PREFIX and SUFFIX form a wrap set, read oldest
 * first (trace_file_drv fills indexes 0..Count in a ring and deletes the
 * oldest: the newest is the one just before the gap of missing indexes;
 * when files are missing in several places, the first record's timestamp
 * of each file decides, then the modification time). A set takes the place
 * of its first file among the arguments; other files keep their order.
 * Each set with more than one file is described through note. Returns 0 or
 * -1 (out of memory). */
int bs_dbg_order_files(char **paths, int n, const bs_dbg_opts *o);

/* ---- whole inputs --------------------------------------------------------- */

/* Reads every file (in the given order, as one stream) into a profile:
 * with return_to, return_from or exception_from events the stacks are
 * rebuilt (stack_rebuild.h); with calls only, each process gets flat call
 * counts and, with timestamps, a timeline of its calls. Returns 0, or -1
 * with err filled (malformed input: file and byte offset, also for a trace
 * message no VM writes and for times no single trace holds, see
 * dbg_profile.c; or "out of memory" with offset 0). */
int bs_dbg_read_profile(char *const *paths, int n, const bs_dbg_opts *o, bs_profile *out, bs_read_error *err);

/* Prints every message of the files like dbg's default handler (one line
 * each: "(<0.80.0>) call w:fib/1 (Timestamp: {1795,641638,621192})").
 * Returns 0, or -1 with err filled (err->offset 0 and "cannot write" for
 * an output error). */
int bs_dbg_print_text(char *const *paths, int n, const bs_dbg_opts *o, FILE *out, bs_read_error *err);

#endif
