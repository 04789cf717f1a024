/* load_factor.h — how much wall time the OS gives the traced processes'
 * threads, measured while recording (engine/compensation.h says why). */
#ifndef BS_LOAD_FACTOR_H
#define BS_LOAD_FACTOR_H

#include <stdint.h>

#include "pid_table.h"

/* Called for each event of a process whose session compensates, inside the
 * callback (the record is this thread's). sched_event: the process is
 * scheduled in or out (it may change threads: the stretch ends). */
void bs_load_factor_event(bs_traced_proc *r, int sched_event, uint64_t now_ns);

#endif
