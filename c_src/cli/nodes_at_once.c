/* nodes_at_once.c — several nodes attached or detached at once by a few
 * threads (see nodes_at_once.h). The threads share nothing but the index
 * of the next node (under a mutex); each writes only its own nodes' slots. */
#include "nodes_at_once.h"

#include <pthread.h>

#include "cli.h"

typedef struct node_work {
    void (*one)(struct node_work *w, int i); /* node i's work */
    const bs_remote_opts *o;
    bs_remote *nodes;
    int *codes;
    int n, next;
    pthread_mutex_t lock;
} node_work;

static void *node_worker(void *arg)
{
    node_work *w = arg;
    for (;;) {
        pthread_mutex_lock(&w->lock);
        int i = w->next < w->n ? w->next++ : -1;
        pthread_mutex_unlock(&w->lock);
        if (i < 0)
            return NULL;
        w->one(w, i);
    }
}

/* w->one for every node, by up to BS_NODE_WORKERS threads. */
static void run_all(node_work *w)
{
    pthread_t threads[BS_NODE_WORKERS];
    int started = 0, workers = w->n < BS_NODE_WORKERS ? w->n : BS_NODE_WORKERS;
    w->next = 0;
    if (w->n > 1 && pthread_mutex_init(&w->lock, NULL) == 0) {
        while (started < workers && pthread_create(&threads[started], NULL, node_worker, w) == 0)
            started++;
        for (int t = 0; t < started; t++)
            pthread_join(threads[t], NULL);
        pthread_mutex_destroy(&w->lock);
    }
    for (int i = w->next; i < w->n; i++) /* one node, or no thread could be made */
        w->one(w, i);
}

static void attach_one(node_work *w, int i)
{
    w->codes[i] = bs_remote_attach(w->o, i, &w->nodes[i]);
}

void bs_attach_all(const bs_remote_opts *o, bs_remote *nodes, int n, int *codes)
{
    node_work w = {.one = attach_one, .o = o, .nodes = nodes, .codes = codes, .n = n};
    ei_init(); /* once, here: its own set-up is not made for threads */
    run_all(&w);
}

static void detach_one(node_work *w, int i)
{
    bs_remote_detach(&w->nodes[i]);
}

void bs_detach_all(bs_remote *nodes, int n)
{
    node_work w = {.one = detach_one, .nodes = nodes, .n = n};
    run_all(&w);
}
