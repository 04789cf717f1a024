/* dbg_stream.h — the trace messages of several dbg files as one stream
 * (readers only). */
#ifndef BS_DBG_STREAM_H
#define BS_DBG_STREAM_H

#include "dbg_event.h"
#include "dbg_trace.h"

/* Called for each record: ev is the classified message of a term record,
 * NULL for a drop record or a skipped (too big) one. Returns 0, or -1 to
 * stop (err filled by the visitor). */
typedef int (*bs_dbg_visit)(void *ctx, const char *file, const bs_dbg_record *rec, const bs_dbg_event *ev,
                            bs_read_error *err);

/* Every record of every file, in order. Returns 0 or -1 (err filled). */
int bs_dbg_each_event(char *const *paths, int n, const bs_dbg_opts *o, bs_dbg_visit visit, void *ctx,
                      bs_read_error *err);

#endif
