/* writers.h — the output formats and the entry points that write a profile
 * to a file or into memory.
 *
 * Each writer streams one format from a profile to a FILE and returns 0 or -1
 * (write or allocation error). They are deterministic (same profile, same
 * options: same bytes) and escape every name they write. bs_write_stream
 * applies the filters of the options and picks the writer; bs_write_file
 * writes through it atomically (temporary file, then rename),
 * bs_write_memory into a buffer. The formats, their names and extensions
 * are the rows of format_registry.h. */
#ifndef BS_WRITERS_H
#define BS_WRITERS_H

#include <stdio.h>

#include "../engine/profile.h"
#include "format_registry.h"
#include "format_writers.h" /* each format's writer */
#include "render_opts.h"

/* Writes p in format f (not BS_FORMAT_UNKNOWN) to out, after applying the
 * filters of o to a copy (p is not changed). The one path every output
 * takes: files (bs_write_file) and memory (bs_write_memory). Returns 0, or
 * -1 with errno set (EINVAL: unknown format or bad filter; ENOMEM). */
int bs_write_stream(FILE *out, bs_format f, const bs_profile *p, const bs_render_opts *o);

/* The largest output bs_write_memory hands back: 1 GiB. A profile is
 * bounded by its session's max_memory (default 256 MiB) and each writer by
 * its own caps, so only a very large profile in a verbose format comes near. */
#define BS_MEMORY_OUTPUT_MAX ((size_t)1 << 30)

/* Writes p in format f into memory (open_memstream): the same bytes as
 * bs_write_file writes for the same arguments. On success *data (malloc'd,
 * the caller frees it) holds *size bytes. Returns 0, or -1 with errno set:
 * EINVAL (unknown format, bad filter), ENOMEM (an allocation failed), EFBIG
 * (the output would exceed max_bytes; 0 means BS_MEMORY_OUTPUT_MAX). Nothing
 * is left allocated on error. */
int bs_write_memory(bs_format f, const bs_profile *p, const bs_render_opts *o, size_t max_bytes,
                    char **data, size_t *size);

/* Writes p to path in format f (BS_FORMAT_UNKNOWN: from the extension).
 * Filters in o are applied to a copy; p is not changed. Returns 0, or -1
 * with errno set (EINVAL for an unknown format); the target is untouched on
 * error. */
int bs_write_file(const char *path, bs_format f, const bs_profile *p, const bs_render_opts *o);

#endif
