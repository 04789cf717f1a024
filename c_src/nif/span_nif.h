/* span_nif.h — telemetry span events into a session (beamspy_telemetry's
 * handler calls span_event/3 in the process that emitted the event). */
#ifndef BS_SPAN_NIF_H
#define BS_SPAN_NIF_H

#include <erl_nif.h>
#include <stddef.h>

#include "session.h"

/* Reads spans_only and max_spans from session_new's option map. 0 or -1. */
int bs_span_session_opts(ErlNifEnv *env, bs_session *s, ERL_NIF_TERM opts);
/* Span counts of every process (call only once recording has stopped). */
void bs_span_totals(bs_session *s, bs_span_counts *c, uint64_t *open);
/* "" when no span event was seen, else one line saying what happened to them. */
void bs_span_notes(bs_session *s, char *buf, size_t cap);

ERL_NIF_TERM bs_nif_span_event(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM bs_nif_span_exit(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM bs_nif_span_info(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);

#endif
