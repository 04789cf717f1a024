/* attach_all.c — several nodes attached at once by a few threads (see
 * attach_all.h). The threads share nothing but the index of the next node
 * (under a mutex); each writes only its own nodes' slots. */
#include "attach_all.h"

#include <pthread.h>

#include "cli.h"

typedef struct attach_work {
    const bs_remote_opts *o;
    bs_remote *nodes;
    int *codes;
    int n, next;
    pthread_mutex_t lock;
} attach_work;

static void *attach_worker(void *arg)
{
    attach_work *w = arg;
    for (;;) {
        pthread_mutex_lock(&w->lock);
        int i = w->next < w->n ? w->next++ : -1;
        pthread_mutex_unlock(&w->lock);
        if (i < 0)
            return NULL;
        w->codes[i] = bs_remote_attach(w->o, i, &w->nodes[i]);
    }
}

void bs_attach_all(const bs_remote_opts *o, bs_remote *nodes, int n, int *codes)
{
    attach_work w = {.o = o, .nodes = nodes, .codes = codes, .n = n, .next = 0};
    pthread_t threads[BS_ATTACH_WORKERS];
    int started = 0, workers = n < BS_ATTACH_WORKERS ? n : BS_ATTACH_WORKERS;
    ei_init(); /* once, here: its own set-up is not made for threads */
    if (n > 1 && pthread_mutex_init(&w.lock, NULL) == 0) {
        while (started < workers && pthread_create(&threads[started], NULL, attach_worker, &w) == 0)
            started++;
        for (int t = 0; t < started; t++)
            pthread_join(threads[t], NULL);
        pthread_mutex_destroy(&w.lock);
    }
    for (int i = w.next; i < n; i++) /* one node, or no thread could be made */
        codes[i] = bs_remote_attach(o, i, &nodes[i]);
}
