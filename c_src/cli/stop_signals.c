/* stop_signals.c — see stop_signals.h. */
#include "stop_signals.h"

#include <time.h>

/* Set by the handler only; a signal handler has no other way to say it. */
static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

void bs_stop_signals_catch(bs_stop_signals *s)
{
    sigemptyset(&s->blocked);
    sigaddset(&s->blocked, SIGINT);
    sigaddset(&s->blocked, SIGTERM);
    sigprocmask(SIG_BLOCK, &s->blocked, &s->waiting_mask);
    sigdelset(&s->waiting_mask, SIGINT);
    sigdelset(&s->waiting_mask, SIGTERM);
    struct sigaction sa = {.sa_handler = on_stop_signal};
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND; /* a second Ctrl-C ends the tool at once */
    sigaction(SIGINT, &sa, &s->old_int);
    sigaction(SIGTERM, &sa, &s->old_term);
    stop_requested = 0;
}

void bs_stop_signals_restore(const bs_stop_signals *s)
{
    sigaction(SIGINT, &s->old_int, NULL);
    sigaction(SIGTERM, &s->old_term, NULL);
    sigprocmask(SIG_UNBLOCK, &s->blocked, NULL);
}

int bs_stop_requested(void)
{
    return stop_requested != 0;
}

long long bs_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
