/* stop_signals.h — Ctrl-C and SIGTERM for the commands that record from
 * nodes (record, seq): the first one asks the command to finish (write what
 * it has), a second one ends the tool at once. The signals are blocked
 * except while the command waits between polls (it passes `waiting_mask` to
 * ppoll/pselect), so calls on the wire are never torn. */
#ifndef BS_STOP_SIGNALS_H
#define BS_STOP_SIGNALS_H

#include <signal.h>

typedef struct bs_stop_signals {
    sigset_t blocked;      /* SIGINT and SIGTERM */
    sigset_t waiting_mask; /* the mask to wait with: the caller's, without them */
    struct sigaction old_int, old_term;
} bs_stop_signals;

/* Blocks the signals and installs the handler; clears the request. */
void bs_stop_signals_catch(bs_stop_signals *s);

/* The handlers and mask as they were before bs_stop_signals_catch. */
void bs_stop_signals_restore(const bs_stop_signals *s);

/* Whether a stop signal came since bs_stop_signals_catch. */
int bs_stop_requested(void);

/* CLOCK_MONOTONIC in milliseconds. */
long long bs_now_ms(void);

#endif
