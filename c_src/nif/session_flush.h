/* session_flush.h — the end of a recording's time, after a waiting stop:
 * the CPU sampler (mode => cpu) stops and drains, and every process is
 * charged up to the stop. Above session.h and cpu_session.h, so that the
 * session itself knows nothing of the sampler. */
#ifndef BS_SESSION_FLUSH_H
#define BS_SESSION_FLUSH_H

#include "session.h"

/* After a waiting stop: stops the CPU sampler, if any, and charges every
 * process up to stop_ns (the time since its last event: a server waiting
 * all along has no other). Once: the owner's stop and a halting process's
 * write may both come here. */
void bs_session_flush(bs_session *s);

#endif
