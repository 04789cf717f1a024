/* capture.h — capture mode: record the next N calls of one function, in
 * whatever process makes them (beamspy:capture/3).
 *
 * A meta trace pattern on the function fires in every process; its match
 * spec switches call tracing on for the calling process, with this session
 * as tracer, and its {exception_trace} reports the function's return to the
 * meta tracer. Meta events arrive with tracer state {beamspy_meta, Session}.
 * Between captures a process records nothing; the owner switches its tracing
 * off when told a capture is done (see session_capturing/2). */
#ifndef BS_CAPTURE_H
#define BS_CAPTURE_H

#include <erl_nif.h>

#include "nif_atoms.h"
#include "session.h"

/* A meta event (call, return_from, exception_from) of process r at time t.
 * Returns 0, or -1 if the recording refused it (memory). */
int bs_capture_on_meta(ErlNifEnv *env, const bs_atoms *a, bs_session *s, bs_traced_proc *r,
                       ERL_NIF_TERM tag, ERL_NIF_TERM term, uint64_t t);

/* The process exited during a capture: close it. */
void bs_capture_on_exit(ErlNifEnv *env, bs_session *s, bs_traced_proc *r, uint64_t t);

#endif
