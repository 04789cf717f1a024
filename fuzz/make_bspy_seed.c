/* make_bspy_seed.c — writes .bspy seed files for the fuzz corpus.
 *
 *   make_bspy_seed IN.folded OUT.bspy    the profile of a folded file
 *   make_bspy_seed --timeline OUT.bspy   a recorded profile: two processes,
 *                                        spans, SLEEP/GC, metadata, awkward names
 * scripts/fuzz.sh runs it so the seeds always match the current format. */
#include <stdio.h>
#include <string.h>

#include "engine/profile.h"
#include "readers/readers.h"
#include "writers/writers.h"
#include "test_util.h"

static int recorded(bs_profile *prof)
{
    static const char *const labels[] = {"<0.80.0>", "<0.81.0> '<srv>&\"'"};
    bs_span_quota quota;
    bs_span_quota_init(&quota, 1000);
    if (bs_profile_init(prof) < 0)
        return -1;
    for (int pi = 0; pi < 2; pi++) {
        tu_event ev[60];
        tu_random_events(ev, 60, 42 + (uint64_t)pi, 20);
        bs_proc p;
        if (bs_proc_init(&p, NULL, 0, 1, 1) < 0)
            return -1;
        bs_proc_enable_timeline(&p, &quota);
        for (size_t i = 0; i < 60; i++)
            tu_feed(&p, &ev[i]);
        bs_proc_flush(&p, ev[59].t + 100);
        int rc = bs_profile_add_proc(prof, &p, labels[pi], tu_namer, NULL);
        bs_proc_free(&p);
        if (rc < 0)
            return -1;
    }
    snprintf(prof->meta.node, sizeof prof->meta.node, "app@host");
    snprintf(prof->meta.otp_release, sizeof prof->meta.otp_release, "27");
    snprintf(prof->meta.source, sizeof prof->meta.source, "beamspy:apply({m, f, []})");
    snprintf(prof->meta.options, sizeof prof->meta.options, "#{timeline => true}");
    prof->meta.start_unix_us = 1700000000000000;
    prof->duration_ns = 123456;
    bs_profile_compute_totals(prof);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: make_bspy_seed IN.folded|--timeline OUT.bspy\n");
        return 2;
    }
    bs_profile p;
    bs_read_error e;
    if (strcmp(argv[1], "--timeline") == 0 ? recorded(&p) < 0 : bs_read_profile_file(argv[1], &p, &e) < 0) {
        fprintf(stderr, "make_bspy_seed: cannot read %s\n", argv[1]);
        return 1;
    }
    FILE *out = fopen(argv[2], "wb");
    int rc = out && bs_write_bspy(out, &p, NULL) == 0 && fclose(out) == 0 ? 0 : 1;
    bs_profile_free(&p);
    return rc;
}
