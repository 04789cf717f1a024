/* render_driver.c — the smallest `beamspy render`: reads one profile file
 * (folded or .bspy) and writes each output named, its format from the
 * extension, with default options. bench/render/run.sh uses it when
 * bin/beamspy has no `render` command, and to time reading and writing
 * apart (with -v, on stderr: "read MS" and "write OUT MS"). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "readers/readers.h"
#include "writers/writers.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    int verbose = argc > 1 && strcmp(argv[1], "-v") == 0;
    if (argc < 2 + verbose) {
        fprintf(stderr, "usage: render_driver [-v] INPUT [OUTPUT...]\n");
        return 2;
    }
    const char *in = argv[1 + verbose];
    bs_profile p;
    bs_read_error e;
    double t0 = now_ms();
    if (bs_read_profile_file(in, &p, &e) != 0) {
        fprintf(stderr, "%s:%llu: %s (offset %llu)\n", e.file, (unsigned long long)e.line, e.msg,
                (unsigned long long)e.offset);
        return 1;
    }
    if (verbose)
        fprintf(stderr, "read %.0f\n", now_ms() - t0);
    bs_render_opts o;
    memset(&o, 0, sizeof o);
    int rc = 0;
    for (int i = 2 + verbose; i < argc; i++) {
        t0 = now_ms();
        if (bs_write_file(argv[i], BS_FORMAT_UNKNOWN, &p, &o) != 0) {
            perror(argv[i]);
            rc = 1;
        } else if (verbose) {
            fprintf(stderr, "write %s %.0f\n", argv[i], now_ms() - t0);
        }
    }
    bs_profile_free(&p);
    return rc;
}
