/* profile_export.h — a stopped session turned into a profile, a term or a file. */
#ifndef BS_PROFILE_EXPORT_H
#define BS_PROFILE_EXPORT_H

#include <erl_nif.h>

#include "../engine/frame_name.h"
#include "../engine/profile.h"
#include "session.h"

/* labels: a map pid => label (see bs_nif_label), spelled in style as the
 * process frame; default is the pid itself.
 * In capture mode each finished capture is a tree labelled "<pid> (call K)"
 * (a capture still running at the stop is added as "<pid> (call K, incomplete)");
 * capture > 0 keeps only capture number `capture`.
 * Returns 0 or -1. The caller frees the profile. */
int bs_export_profile(ErlNifEnv *env, bs_session *s, bs_name_style style, ERL_NIF_TERM labels,
                      unsigned capture, bs_profile *out);

ERL_NIF_TERM bs_profile_to_term(ErlNifEnv *env, const bs_session *s, const bs_profile *p);

/* The compensation of a stopped session, summed over its processes (the
 * `compensation' of bs_profile_to_term, without building the profile). */
ERL_NIF_TERM bs_session_compensation_term(ErlNifEnv *env, bs_session *s);

#endif
