/* profile_import.h — the profile term of beamspy:profile/2 turned back into
 * an engine profile, so a profile already in hand can be rendered
 * (beamspy:render/3). */
#ifndef BS_PROFILE_IMPORT_H
#define BS_PROFILE_IMPORT_H

#include <stddef.h>

#include <erl_nif.h>

#include "../engine/profile.h"

/* Most nodes a term may hold (over every process): what the writers can
 * take in memory without surprise. */
#define BS_IMPORT_MAX_NODES (1u << 26)

/* Reads #{processes := [{Label, [{Id, Parent, Frame, SelfNs, TotalNs,
 * Calls}]}], ...} (truncated and duration_ns are kept when present; totals
 * are computed again from the self times). Node
 * ids must be 0, 1, 2, ... in order, node 0 the process (Parent
 * undefined), every other node's parent an earlier node. Returns 0, or -1
 * with why filled (out is then freed). */
int bs_profile_from_term(ErlNifEnv *env, ERL_NIF_TERM term, bs_profile *out, char *why, size_t why_cap);

#endif
