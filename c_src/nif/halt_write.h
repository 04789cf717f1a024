/* halt_write.h — option until_halt (`beamspy run`): the profile is written
 * by the process that halts the VM, inside its tracer callback, before
 * erlang:halt/0-2 (or init:stop/0-1) runs.
 *
 * Writing there, on the halting process's own scheduler thread, depends on
 * no other process being scheduled: a scheduler thread blocked in a
 * callback cannot be counted on to let another process (the session's
 * owner) run. The owner therefore prepares the plan beforehand (outputs and
 * write options, labels of the processes seen so far) and refreshes it; the
 * plan lives in an environment of its own, guarded by a mutex.
 *
 * A limit (max_memory, ...) stops recording before the VM halts: the owner
 * then writes the profile itself (session_write), holding the plan's lock,
 * and the halting process still calls bs_halt_write, which waits for that
 * write to end rather than let the VM halt in the middle of it. */
#ifndef BS_HALT_WRITE_H
#define BS_HALT_WRITE_H

#include <erl_nif.h>

#include "session.h"

/* Replaces the session's plan: outputs [{Format, PathBinary}], write options (a
 * map, as session_write/4 takes); no outputs: nothing is left to write at the
 * halt. Returns 0, or -1 when out of memory. */
int bs_halt_plan_set(bs_session *s, ERL_NIF_TERM outputs, ERL_NIF_TERM write_opts);

/* Stops recording and writes the plan's outputs, once per session (later
 * callers return at once). Called by a tracer callback whose record is not
 * busy. */
void bs_halt_write(ErlNifEnv *env, bs_session *s);

/* Whether a halting process must still come to bs_halt_write although
 * recording has stopped: a plan is set and has not been written. */
int bs_halt_pending(bs_session *s);

/* Held around the owner's own writes (session_write), so that a halting
 * process waits for them to end; no-ops without a plan. */
void bs_halt_lock(bs_session *s);
void bs_halt_unlock(bs_session *s);

/* Frees the plan (session destruction). */
void bs_halt_plan_free(bs_session *s);

#endif
