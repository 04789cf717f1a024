/* atomic_file.h — output files appear whole or not at all.
 *
 * A regular file (or a name that does not exist yet) is written to a
 * temporary file beside the target (same directory, so the final rename is
 * atomic) and only a successful commit renames it into place; on any error
 * the temporary is removed and the target is left untouched.
 *
 * Other targets:
 *   - a character or block device, a FIFO or a socket (/dev/null,
 *     /dev/stdout, a named pipe): written through directly, never replaced
 *     (renaming over a device node would turn it into a regular file);
 *     such a write is not atomic;
 *   - a directory: refused (EISDIR);
 *   - a symbolic link: followed, and whatever it points to is handled as
 *     above: a link to a regular file keeps being a link and its target file
 *     is replaced atomically (the temporary goes beside the target file); a
 *     dangling link is refused (ENOENT). */
#ifndef BS_ATOMIC_FILE_H
#define BS_ATOMIC_FILE_H

#include <stdio.h>

typedef struct bs_atomic_file {
    FILE *fp;
    int direct;             /* written through, nothing to rename */
    char tmp_path[4096];
    char final_path[4096];
} bs_atomic_file;

/* Returns 0, or -1 with errno set. */
int bs_atomic_open(bs_atomic_file *af, const char *path);
/* Flushes, syncs and renames; returns 0 or -1 (the target is then untouched,
 * unless it is written through directly). */
int bs_atomic_commit(bs_atomic_file *af);
void bs_atomic_abort(bs_atomic_file *af);

#endif
