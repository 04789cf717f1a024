/* fuzz_dbg.c — libFuzzer target for the dbg trace-port reader
 * (c_src/readers/dbg_trace.h).
 *
 * The input is written to a file (the reader takes paths, as the command
 * line gives them) and read twice: into a profile, and as the --text
 * listing. Either read fails with a message whose byte offset lies inside
 * the input, or the profile is well-formed (fuzz_common.h) and every writer
 * accepts it. The caps are lowered so that forged sizes and counts hit them
 * within a fuzzing run. */
#include <unistd.h>

#include "fuzz_common.h"
#include "readers/dbg_trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void quiet(void *ctx, const char *line)
{
    (void)ctx;
    CHECK(line[0] != '\0' && strchr(line, '\n') == NULL);
}

static void check_failure(const bs_read_error *e, size_t size)
{
    fuzz_check_error(e);
    CHECK(e->line == 0);
    if (strcmp(e->msg, "out of memory") != 0)
        CHECK(e->offset <= size);
}

static char path[64];

static void remove_input(void) { unlink(path); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!path[0]) {
        snprintf(path, sizeof path, "/tmp/fuzz-dbg-%ld.trace", (long)getpid());
        atexit(remove_input);
    }
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    CHECK(size == 0 || fwrite(data, 1, size, f) == size);
    CHECK(fclose(f) == 0);

    char *paths[] = {path};
    bs_dbg_opts o = {.max_term_bytes = 4096, .max_processes = 64, .max_memory = 16u << 20, .max_spans = 1000,
                     .gc = 1, .note = quiet};
    bs_profile p;
    bs_read_error e;
    memset(&e, 0, sizeof e);
    if (bs_dbg_read_profile(paths, 1, &o, &p, &e) == 0) {
        fuzz_check_profile(&p);
        fuzz_all_writers(&p);
        bs_profile_free(&p);
    } else {
        check_failure(&e, size);
    }
    FILE *out = fopen("/dev/null", "w");
    CHECK(out != NULL);
    memset(&e, 0, sizeof e);
    if (bs_dbg_print_text(paths, 1, &o, out, &e) != 0)
        check_failure(&e, size);
    fclose(out);
    return 0;
}
