/* session_flush.c — the end of a recording's time (session_flush.h). */
#include "session_flush.h"

#include "cpu_session.h"

void bs_session_flush(bs_session *s)
{
    enif_mutex_lock(s->insert_lock);
    if (!s->flushed && s->cpu && !s->cpu_times) { /* the trees hold samples, not time: nothing to charge */
        s->flushed = 1;
        bs_cpu_stop(s->cpu);
    } else if (!s->flushed) {
        if (s->cpu) /* times => samples: the trace's trees, and the samples beside them */
            bs_cpu_stop(s->cpu);
        s->flushed = 1;
        for (uint32_t i = 0; i < s->pids.cap; i++) {
            bs_traced_proc *r = atomic_load(&s->pids.slots[i].record);
            if (r)
                bs_proc_flush(&r->proc, s->stop_ns);
        }
    }
    enif_mutex_unlock(s->insert_lock);
}
