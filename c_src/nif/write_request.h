/* write_request.h — an Erlang options map turned into what writers need.
 *
 * beamspy_tracer:session_write/4, session_encode/3 and session_profile/2 take a map of
 * rendering options and metadata from the Erlang side; this decodes it into
 * C structures, copying every string (the request outlives no term). */
#ifndef BS_WRITE_REQUEST_H
#define BS_WRITE_REQUEST_H

#include <erl_nif.h>

#include "../engine/frame_name.h"
#include "../engine/profile.h"
#include "../writers/render_opts.h"
#include "../writers/writers.h"
#include "defaults.h"

struct bs_session;

typedef struct bs_write_request {
    bs_render_opts render;
    bs_name_style names;
    bs_profile_meta meta;
    ERL_NIF_TERM labels;   /* map pid => label, or an empty map */
    unsigned capture;      /* capture mode: only this capture (1-based); 0 = all */
    int report;            /* session_write returns {ok, Warning} (the text of output_size.h) */
    /* the Erlang side refuses longer texts (beamspy_opts:max_of/1) */
    char title[BS_MAX_TITLE_BYTES + 1], subtitle[BS_MAX_TITLE_BYTES + 1], count_name[64];
    char include_re[BS_MAX_PATTERN_BYTES + 1], exclude_re[BS_MAX_PATTERN_BYTES + 1];
} bs_write_request;

/* Returns 0, or -1 if a key has a value of the wrong type. Unknown keys are
 * ignored (the Erlang side validates options). */
int bs_write_request_decode(ErlNifEnv *env, ERL_NIF_TERM map, bs_write_request *req);

/* Exports the stopped session's profile as req asks and writes it to path
 * in format f (atomically). warning (may be NULL) gets what the user must
 * be told about the file (timeline cap, projected size; "" if nothing).
 * Returns 0, or an errno value (EINVAL: bad filter or format; ENOMEM). */
int bs_write_session_file(ErlNifEnv *env, struct bs_session *s, bs_format f, const char *path,
                          const bs_write_request *req, char *warning, size_t warning_cap);

/* Exports the stopped session's profile as req asks and writes it in format
 * f into a new binary (*out), the same bytes session_write would put in a
 * file; nothing touches the file system. Returns 0, or an errno value
 * (EINVAL: bad filter or format; ENOMEM; EFBIG: over BS_MEMORY_OUTPUT_MAX). */
int bs_encode_session(ErlNifEnv *env, struct bs_session *s, bs_format f, const bs_write_request *req,
                      ERL_NIF_TERM *out);

/* Writes p (given the metadata of req) in format f into a new binary
 * (*out) and frees p, in every case. Returns 0, or an errno value as
 * bs_encode_session. */
int bs_encode_profile(ErlNifEnv *env, bs_profile *p, bs_format f, const bs_write_request *req, ERL_NIF_TERM *out);

/* file:open/2-style reason (enoent, eacces, ...) for a failed output file. */
ERL_NIF_TERM bs_errno_atom(ErlNifEnv *env, int e);

#endif
