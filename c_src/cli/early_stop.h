/* early_stop.h — telling the user that a limit ended a recording early
 * (record and run): which limit, after how long, how much was recorded and
 * the option that raises it. */
#ifndef BS_EARLY_STOP_H
#define BS_EARLY_STOP_H

typedef struct bs_early_stop {
    char limit[64];                   /* "" (not stopped early), "max_events", ... */
    int have_figures;                 /* the fields below are known */
    unsigned long long after_ms;      /* since the recording began */
    unsigned long long events, memory; /* recorded by then (memory in bytes) */
    unsigned long long limit_value;   /* 0 unknown */
} bs_early_stop;

/* One line on stderr: "beamspy: [NODE: ]recording stopped early after 3.5 s:
 * max_events (10000000 events) reached; 10000000 events, 212.0 MiB
 * recorded; raise it with --max-events N". Nothing when e->limit is "". */
void bs_early_stop_report(const bs_early_stop *e, const char *node);

#endif
