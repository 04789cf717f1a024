/* svg_driver.c — a small command-line front to the SVG writers, for the
 * browser tests (test/browser/svg.test.js builds it against every engine
 * and formats source) and for timing them. Reads folded stacks with the
 * test helper in test/c/svg_test_util.h, not with the product's reader.
 *
 *   svg_driver svg IN.folded OUT.svg [options]
 *   svg_driver diff BEFORE.folded AFTER.folded OUT.svg [options]
 *   svg_driver bench N_STACKS OUT.svg [options]   synthetic profile of N distinct stacks
 *
 * options: --us (counts are microseconds: a recorded profile; default: samples)
 *          --inverted --beam --flamechart --drop-sleep --min-width PX
 *          --width PX --title TEXT --subtitle TEXT
 * Prints "read_ms=... write_ms=... bytes=..." on stderr. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "writers/diff_svg.h"
#include "writers/writers.h"
#include "svg_test_util.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void read_folded(const char *path, bs_profile *p, int us)
{
    FILE *in = fopen(path, "r");
    if (!in) {
        perror(path);
        exit(2);
    }
    tu_folded_builder b;
    tu_folded_begin(&b, p, us ? BS_UNIT_NS : BS_UNIT_COUNT, us ? 1000 : 1);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, in)) > 0) {
        size_t len = (size_t)n;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            len--;
        tu_folded_line(&b, line, len);
    }
    free(line);
    fclose(in);
    tu_folded_end(&b);
}

/* N distinct stacks: random walks (depth 5-40) over 2,000 BEAM-like names,
 * each ending in a frame unique to the stack. */
static void synthetic(bs_profile *p, unsigned long n_stacks)
{
    static const char *const mods[] = {"lists", "maps", "ets", "gen_server", "my_app_worker", "my_app_db",
                                       "Elixir.Enum", "Elixir.MyApp.Repo", "proc_lib", "erlang"};
    tu_folded_builder b;
    tu_folded_begin(&b, p, BS_UNIT_NS, 1000);
    uint64_t s = 42;
    char line[4096];
    for (unsigned long i = 0; i < n_stacks; i++) {
        size_t len = (size_t)snprintf(line, sizeof line, "<0.%lu.0>", 80 + i % 4);
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        unsigned depth = 5 + (unsigned)((s >> 33) % 36);
        for (unsigned d = 0; d < depth; d++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            unsigned f = (unsigned)((s >> 33) % (d < 3 ? 4 : 2000));
            len += (size_t)snprintf(line + len, sizeof line - len, ";%s:f%u/%u", mods[f % 10], f, d % 4);
        }
        len += (size_t)snprintf(line + len, sizeof line - len, ";leaf%lu/0 %lu", i, 1 + (unsigned long)(s >> 60));
        tu_folded_line(&b, line, len);
    }
    tu_folded_end(&b);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: see svg_driver.c\n");
        return 2;
    }
    const char *cmd = argv[1];
    int n_inputs = strcmp(cmd, "diff") == 0 ? 2 : 1;
    const char *out_path = argv[2 + n_inputs];
    bs_render_opts o = {0};
    int us = 0;
    for (int i = 3 + n_inputs; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        if (strcmp(a, "--us") == 0) us = 1;
        else if (strcmp(a, "--inverted") == 0) o.inverted = 1;
        else if (strcmp(a, "--beam") == 0) o.palette = BS_PALETTE_BEAM;
        else if (strcmp(a, "--flamechart") == 0) o.flamechart = 1;
        else if (strcmp(a, "--drop-sleep") == 0) o.drop_sleep = 1;
        else if (strcmp(a, "--min-width") == 0) o.min_width = atof(v), i++;
        else if (strcmp(a, "--width") == 0) o.width = (unsigned)atoi(v), i++;
        else if (strcmp(a, "--title") == 0) o.title = v, i++;
        else if (strcmp(a, "--subtitle") == 0) o.subtitle = v, i++;
        else { fprintf(stderr, "unknown option %s\n", a); return 2; }
    }
    bs_profile a, b;
    double t0 = now_ms();
    if (strcmp(cmd, "bench") == 0)
        synthetic(&a, strtoul(argv[2], NULL, 10));
    else
        read_folded(argv[2], &a, us);
    if (n_inputs == 2)
        read_folded(argv[3], &b, us);
    double t1 = now_ms();
    FILE *out = fopen(out_path, "w");
    if (!out) {
        perror(out_path);
        return 2;
    }
    int rc = n_inputs == 2 ? bs_write_diff_svg(out, &a, &b, &o) : bs_write_svg(out, &a, &o);
    long bytes = ftell(out);
    if (fclose(out) != 0)
        rc = -1;
    double t2 = now_ms();
    size_t nodes = 0;
    for (uint32_t t = 0; t < a.n_trees; t++)
        nodes += a.trees[t].n_nodes;
    fprintf(stderr, "read_ms=%.1f write_ms=%.1f bytes=%ld nodes=%zu\n", t1 - t0, t2 - t1, bytes, nodes);
    bs_profile_free(&a);
    if (n_inputs == 2)
        bs_profile_free(&b);
    return rc == 0 ? 0 : 1;
}
