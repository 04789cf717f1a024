/* sched_watch.h — sampling sessions: which target processes run, and where
 * they stopped.
 *
 * A session made with `run_states => true` traces only `running` (in/out)
 * for the sampled processes and feeds nothing to the engine: each process
 * record keeps whether its last event was `in`, when its last `in` and
 * `out` were (ERTS monotonic time, the clock of erlang:monotonic_time/1),
 * where its last `out` left it, and how many slices it has had. The
 * sampler asks with session_run_states/3 what each process was doing at
 * the time a sample was due (it is often late: a sampler that shares a
 * scheduler with a busy process runs only once that process is scheduled
 * out), and may ask to be told at a running process's next `out` (one
 * message, sent once). Cost: one callback per time slice of a target, a
 * clock read and a few atomic stores; no allocation but the messages
 * asked for. */
#ifndef BS_SCHED_WATCH_H
#define BS_SCHED_WATCH_H

#include <erl_nif.h>

#include "nif_atoms.h"
#include "session.h"

/* A scheduling event (tag in, out, *_exiting, out_exited) of process r. */
void bs_run_state_event(ErlNifEnv *env, const bs_atoms *a, bs_session *s, bs_traced_proc *r,
                        ERL_NIF_TERM tag, ERL_NIF_TERM mfa);

/* session_run_states(Session, Pids, T) -> [State], one per pid, in order,
 * what it was doing at time T (native ERTS monotonic ns, not later than
 * now):
 *   {running, Slices}  it ran at T and still runs: it will tell the owner
 *                      at its next `out`: {beamspy_out, Pid, Slices, MFA}
 *                      (MFA: where it stopped running, or 0);
 *   {stopped, MFA}     it ran at T and stopped since, at MFA, without
 *                      running again (its stack now is where it stopped);
 *   out                it did not run at T;
 *   unknown            no event seen yet, or too many since T to tell. */
ERL_NIF_TERM bs_nif_session_run_states(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);

#endif
