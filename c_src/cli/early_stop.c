/* early_stop.c — the message of a recording a limit ended early (see
 * early_stop.h). */
#include "early_stop.h"

#include <stdio.h>
#include <string.h>

#include "remote.h"

typedef struct limit_words {
    const char *name;   /* as the node names it */
    const char *option; /* what raises it */
} limit_words;

static const limit_words LIMITS[] = {
    {"max_events", "--max-events N"},
    {"max_memory", "--max-memory SIZE (it is what protects the node: mind its free memory)"},
    {"max_processes", "--max-processes N"},
    {"max_duration", "--duration T"},
};

/* "(10000000 events)", "(256.0 MiB)", ... or "" when the value is unknown. */
static void limit_value_text(const bs_early_stop *e, char *buf, size_t size)
{
    char bytes[32];
    buf[0] = '\0';
    if (!e->limit_value)
        return;
    if (strcmp(e->limit, "max_memory") == 0)
        snprintf(buf, size, " (%s)", bs_human_bytes((long long)e->limit_value, 0, bytes, sizeof bytes));
    else if (strcmp(e->limit, "max_events") == 0)
        snprintf(buf, size, " (%llu events)", e->limit_value);
    else if (strcmp(e->limit, "max_processes") == 0)
        snprintf(buf, size, " (%llu processes)", e->limit_value);
    else if (strcmp(e->limit, "max_duration") == 0)
        snprintf(buf, size, " (%.1f s)", (double)e->limit_value / 1000);
}

void bs_early_stop_report(const bs_early_stop *e, const char *node)
{
    if (!e->limit[0])
        return;
    const char *option = NULL;
    for (size_t i = 0; i < sizeof LIMITS / sizeof LIMITS[0]; i++)
        if (strcmp(LIMITS[i].name, e->limit) == 0)
            option = LIMITS[i].option;
    char value[64], when[48] = "", what[96] = "", raise[128] = "", bytes[32];
    limit_value_text(e, value, sizeof value);
    if (e->have_figures) {
        snprintf(when, sizeof when, " after %.1f s", (double)e->after_ms / 1000);
        snprintf(what, sizeof what, "; %llu events, %s recorded", e->events,
                 bs_human_bytes((long long)e->memory, 0, bytes, sizeof bytes));
    }
    if (option)
        snprintf(raise, sizeof raise, "; raise it with %s", option);
    fprintf(stderr, "beamspy: %s%srecording stopped early%s: %s%s reached%s%s\n", node ? node : "", node ? ": " : "",
            when, e->limit, value, what, raise);
}
