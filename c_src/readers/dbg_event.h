/* dbg_event.h — one trace message of a dbg trace-port file, classified
 * (readers only). The message is decoded into an eterm tree first; this
 * only looks at its shape, checking every element it uses. */
#ifndef BS_DBG_EVENT_H
#define BS_DBG_EVENT_H

#include <stdint.h>

#include "../dist/eterm.h"

typedef enum bs_dbg_ev {
    BS_DBG_EV_CALL,
    BS_DBG_EV_RETURN_TO,
    BS_DBG_EV_RETURN_FROM,      /* and exception_from */
    BS_DBG_EV_IN,               /* in, in_exiting */
    BS_DBG_EV_OUT,              /* out, out_exiting */
    BS_DBG_EV_EXIT,             /* exit, out_exited */
    BS_DBG_EV_GC_START,
    BS_DBG_EV_GC_END,
    BS_DBG_EV_REGISTER,
    BS_DBG_EV_OTHER,            /* a trace message of another kind (send, spawn, link...) */
    BS_DBG_EV_SEQ_TRACE,
    BS_DBG_EV_UNKNOWN           /* not a trace message */
} bs_dbg_ev;

typedef enum { BS_DBG_CALLER_NONE, BS_DBG_CALLER_UNDEFINED, BS_DBG_CALLER_MFA } bs_dbg_caller;

/* What a timestamp is: each kind has its own origin, so times of two kinds
 * cannot be compared. {Mega, Sec, Micro} before the year 2000 is taken for
 * CPU time (flag cpu_timestamp: thread CPU time, which OTP documents can
 * seem to go back); later, for wall-clock time (flag timestamp, erlang:now
 * semantics: never goes back). */
typedef enum { BS_DBG_TS_NONE, BS_DBG_TS_WALL, BS_DBG_TS_CPU, BS_DBG_TS_MONOTONIC } bs_dbg_ts_kind;

/* An {M, F, Arity} or {M, F, Args} of an event. */
typedef struct bs_dbg_mfa {
    const bs_eterm *module, *function; /* atoms */
    uint32_t arity;
} bs_dbg_mfa;

typedef struct bs_dbg_event {
    bs_dbg_ev kind;
    const bs_eterm *root;       /* the whole message */
    const bs_eterm *tag;        /* the event's tag atom (element 3) */
    const bs_eterm_pid *pid;    /* the traced process (NULL: a port) */
    int has_mfa;                /* CALL, RETURN_TO (0: undefined), RETURN_FROM */
    bs_dbg_mfa mfa;
    bs_dbg_caller caller_kind;  /* CALL: what the match spec sent */
    bs_dbg_mfa caller;
    const bs_eterm *name;       /* REGISTER: the atom */
    size_t n_elems;             /* elements of the message without the timestamp */
    int has_ts;
    bs_dbg_ts_kind ts_kind;
    const bs_eterm *ts_term;
    uint64_t ts_ns;             /* a time in ns, order-preserving (see dbg_event.c) */
    /* A trace message that no VM writes (a non-pid where the pid goes, a
     * call whose function is not {M, F, Arity | Args}, a bad timestamp...):
     * what is wrong, one line; "" when well-formed. */
    char bad[200];
} bs_dbg_event;

/* Classifies t. Never fails: a term that is not a trace message is UNKNOWN;
 * a trace message of a known tag with malformed parts says why in bad. */
void bs_dbg_classify(const bs_eterm *t, bs_dbg_event *ev);

#endif
