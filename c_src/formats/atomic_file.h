/* atomic_file.h — output files appear whole or not at all.
 *
 * Writers write to a temporary file beside the target (same directory, so the
 * final rename is atomic) and only a successful commit renames it into place;
 * on any error the temporary is removed and the target is left untouched. */
#ifndef BS_ATOMIC_FILE_H
#define BS_ATOMIC_FILE_H

#include <stdio.h>

typedef struct bs_atomic_file {
    FILE *fp;
    char tmp_path[4096];
    char final_path[4096];
} bs_atomic_file;

/* Returns 0, or -1 with errno set. */
int bs_atomic_open(bs_atomic_file *af, const char *path);
/* Flushes, syncs and renames; returns 0 or -1 (the target is then untouched). */
int bs_atomic_commit(bs_atomic_file *af);
void bs_atomic_abort(bs_atomic_file *af);

#endif
