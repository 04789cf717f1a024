/* seq_flow.c — storing seq_trace events, pairing sends with receives,
 * filtering, causal ordering and participants (see seq_flow.h; message
 * kinds and labels are in seq_label.c). */
#include "seq_flow.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Storing
 * ------------------------------------------------------------------------ */

void bs_seq_flow_init(bs_seq_flow *f, size_t max_events)
{
    memset(f, 0, sizeof *f);
    if (max_events == 0)
        max_events = BS_SEQ_MAX_EVENTS_DEFAULT;
    f->max_events = max_events > BS_SEQ_MAX_EVENTS_LIMIT ? BS_SEQ_MAX_EVENTS_LIMIT : max_events;
}

/* Length of s cut to at most cap bytes, never inside a UTF-8 character. */
static size_t cut_len(const char *s, size_t cap)
{
    size_t n = s ? strlen(s) : 0;
    if (n <= cap)
        return n;
    n = cap;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

static int grow(void **arr, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap * 2 : 64;
    while (n < need)
        n *= 2;
    void *p = realloc(*arr, n * size);
    if (!p)
        return -1;
    *arr = p;
    *cap = n;
    return 0;
}

int bs_seq_flow_add(bs_seq_flow *f, const bs_seq_event *e)
{
    if (f->n_events >= f->max_events) {
        f->dropped++;
        return 1;
    }
    if (grow((void **)&f->events, &f->cap_events, f->n_events + 1, sizeof *f->events) < 0)
        return -1;
    const char *src[6] = {e->label, e->from_node, e->from_pid, e->to_node, e->to_pid, e->text};
    size_t len[6], total = 0;
    for (int i = 0; i < 6; i++) {
        len[i] = cut_len(src[i], i == 5 ? BS_SEQ_TEXT_MAX : BS_SEQ_NAME_MAX);
        total += len[i] + 1;
    }
    char *block = malloc(total);
    if (!block)
        return -1;
    const char *dst[6];
    char *p = block;
    for (int i = 0; i < 6; i++) {
        if (len[i])
            memcpy(p, src[i], len[i]);
        p[len[i]] = '\0';
        dst[i] = p;
        p += len[i] + 1;
    }
    bs_seq_stored *s = &f->events[f->n_events++];
    s->e = *e;
    s->e.label = dst[0], s->e.from_node = dst[1], s->e.from_pid = dst[2];
    s->e.to_node = dst[3], s->e.to_pid = dst[4], s->e.text = dst[5];
    s->strings = block;
    return 0;
}

static char *copy_cut(const char *s)
{
    size_t n = cut_len(s, BS_SEQ_NAME_MAX);
    char *c = malloc(n + 1);
    if (c) {
        memcpy(c, s ? s : "", n);
        c[n] = '\0';
    }
    return c;
}

int bs_seq_flow_name(bs_seq_flow *f, const char *node, const char *pid, const char *name)
{
    if (!name || !*name)
        return 0;
    /* Names come once per process and node: a cap keeps a hostile input
     * from growing this without bound. */
    if (f->n_names >= f->max_events * 2 + 64)
        return 0;
    if (grow((void **)&f->names, &f->cap_names, f->n_names + 1, sizeof *f->names) < 0)
        return -1;
    bs_seq_name n = {copy_cut(node), copy_cut(pid), copy_cut(name)};
    if (!n.node || !n.pid || !n.name) {
        free(n.node), free(n.pid), free(n.name);
        return -1;
    }
    f->names[f->n_names++] = n;
    return 0;
}

void bs_seq_flow_free(bs_seq_flow *f)
{
    for (size_t i = 0; i < f->n_events; i++)
        free(f->events[i].strings);
    for (size_t i = 0; i < f->n_names; i++)
        free(f->names[i].node), free(f->names[i].pid), free(f->names[i].name);
    free(f->events);
    free(f->names);
    memset(f, 0, sizeof *f);
}

static int starts(const char *s, size_t n, const char *prefix)
{
    size_t m = strlen(prefix);
    return n >= m && memcmp(s, prefix, m) == 0;
}

/* ------------------------------------------------------------------------
 * Merging
 * ------------------------------------------------------------------------ */

typedef struct raw_msg {
    const bs_seq_event *send, *recv;
    const char *from_node, *from_pid, *to_node, *to_pid;
} raw_msg;

static int cmp_str(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "");
}

static int cmp_u64(uint64_t a, uint64_t b)
{
    return a < b ? -1 : a > b;
}

/* Pairing key: a send and its receive agree on all of these. */
static int cmp_pair_key(const void *pa, const void *pb)
{
    const bs_seq_event *a = *(const bs_seq_event *const *)pa, *b = *(const bs_seq_event *const *)pb;
    int c;
    if ((c = cmp_u64(a->cur, b->cur)) || (c = cmp_u64(a->prev, b->prev)) ||
        (c = cmp_str(a->label, b->label)) || (c = cmp_str(a->from_node, b->from_node)) ||
        (c = cmp_str(a->from_pid, b->from_pid)))
        return c;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return cmp_str(a->text, b->text);
}

static int same_pair(const bs_seq_event *a, const bs_seq_event *b)
{
    return a->cur == b->cur && a->prev == b->prev && !cmp_str(a->label, b->label) &&
           !cmp_str(a->from_node, b->from_node) && !cmp_str(a->from_pid, b->from_pid);
}

static int64_t msg_ts(const raw_msg *m)
{
    return m->send ? m->send->ts : m->recv->ts;
}

static const bs_seq_event *msg_event(const raw_msg *m)
{
    return m->send ? m->send : m->recv;
}

/* Causal order: Lamport serial first, then local time, then names. */
static int cmp_causal(const void *pa, const void *pb)
{
    const raw_msg *a = pa, *b = pb;
    const bs_seq_event *ea = msg_event(a), *eb = msg_event(b);
    int c;
    if ((c = cmp_u64(ea->cur, eb->cur)) || (c = cmp_u64(ea->prev, eb->prev)))
        return c;
    int64_t ta = msg_ts(a), tb = msg_ts(b);
    if (ta != tb)
        return ta < tb ? -1 : 1;
    if ((c = cmp_str(a->from_node, b->from_node)) || (c = cmp_str(a->from_pid, b->from_pid)) ||
        (c = cmp_str(a->to_node, b->to_node)) || (c = cmp_str(a->to_pid, b->to_pid)))
        return c;
    return cmp_str(ea->text, eb->text);
}

typedef struct name_ref {
    const char *node, *pid, *name;
} name_ref;

static int cmp_name_ref(const void *pa, const void *pb)
{
    const name_ref *a = pa, *b = pb;
    int c = cmp_str(a->node, b->node);
    return c ? c : cmp_str(a->pid, b->pid);
}

static const char *find_name(const name_ref *names, size_t n, const char *node, const char *pid)
{
    name_ref key = {node, pid, NULL};
    const name_ref *r = bsearch(&key, names, n, sizeof *names, cmp_name_ref);
    return r ? r->name : NULL;
}

/* Processes whose messages are noise in a request's flow (code loading, I/O,
 * logging), by registered name. */
static const char *const NOISE_NAMES[] = {
    "code_server", "erl_prim_loader", "logger", "user", "user_drv", "standard_error",
    "file_server_2", "init", "logger_proxy", "logger_std_h_default", NULL,
};
/* Messages that are noise whoever sends them (I/O protocol, code server). */
static const char *const NOISE_PREFIXES[] = {"{io_request,", "{io_reply,", "{code_call,", NULL};

static int is_noise_name(const char *name)
{
    if (!name)
        return 0;
    for (int i = 0; NOISE_NAMES[i]; i++)
        if (!strcmp(name, NOISE_NAMES[i]))
            return 1;
    return 0;
}

static int is_noise(const raw_msg *m, const name_ref *names, size_t n_names)
{
    const char *text = msg_event(m)->text;
    for (int i = 0; NOISE_PREFIXES[i]; i++)
        if (starts(text, strlen(text), NOISE_PREFIXES[i]))
            return 1;
    return is_noise_name(find_name(names, n_names, m->from_node, m->from_pid)) ||
           is_noise_name(find_name(names, n_names, m->to_node, m->to_pid)) ||
           is_noise_name(m->to_pid);
}

/* Whether re matches the text or either end's label. */
static int matches(const regex_t *re, const raw_msg *m, const name_ref *names, size_t n_names)
{
    if (regexec(re, msg_event(m)->text, 0, NULL, 0) == 0)
        return 1;
    char label[3 * BS_SEQ_NAME_MAX + 8];
    bs_seq_participant p = {m->from_node, m->from_pid, find_name(names, n_names, m->from_node, m->from_pid)};
    bs_seq_participant_label(&p, label, sizeof label);
    if (regexec(re, label, 0, NULL, 0) == 0)
        return 1;
    p = (bs_seq_participant){m->to_node, m->to_pid, find_name(names, n_names, m->to_node, m->to_pid)};
    bs_seq_participant_label(&p, label, sizeof label);
    return regexec(re, label, 0, NULL, 0) == 0;
}

int bs_seq_participant_label(const bs_seq_participant *p, char *buf, size_t cap)
{
    if (!strcmp(p->pid, "*"))
        return snprintf(buf, cap, "%s other processes", p->node);
    if (p->name && *p->name)
        return snprintf(buf, cap, "%s %s %s", p->node, p->pid, p->name);
    return snprintf(buf, cap, "%s %s", p->node, p->pid);
}

/* A distinct process seen in the messages. */
typedef struct proc_ref {
    const char *node, *pid;
    size_t first;      /* its first use: 2 * message index (+1 as receiver) */
    size_t node_first; /* first use of any process of its node */
    size_t part;       /* participant it is drawn as */
} proc_ref;

static int cmp_proc_key(const void *pa, const void *pb)
{
    const proc_ref *a = pa, *b = pb;
    int c = cmp_str(a->node, b->node);
    if (c || (c = cmp_str(a->pid, b->pid)))
        return c;
    return cmp_u64(a->first, b->first);
}

static int cmp_proc_order(const void *pa, const void *pb)
{
    const proc_ref *a = pa, *b = pb;
    int c = cmp_u64(a->node_first, b->node_first);
    if (c || (c = cmp_str(a->node, b->node)))
        return c;
    return cmp_u64(a->first, b->first);
}

typedef struct merge_state {
    const bs_seq_opts *o;
    raw_msg *raw;
    size_t n_raw;
    name_ref *names;
    size_t n_names;
    proc_ref *procs;
    size_t n_procs;
} merge_state;

static int pair_events(const bs_seq_flow *f, merge_state *st)
{
    size_t n = f->n_events;
    const bs_seq_event **ev = malloc((n ? n : 1) * sizeof *ev);
    st->raw = malloc((n ? n : 1) * sizeof *st->raw);
    if (!ev || !st->raw) {
        free(ev);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        ev[i] = &f->events[i].e;
    qsort(ev, n, sizeof *ev, cmp_pair_key);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        const bs_seq_event *send = NULL, *recv = NULL;
        while (j < n && same_pair(ev[i], ev[j])) {
            if (ev[j]->kind == BS_SEQ_SEND && !send)
                send = ev[j];
            else if (ev[j]->kind == BS_SEQ_RECV && !recv)
                recv = ev[j];
            j++;
        }
        raw_msg *m = &st->raw[st->n_raw++];
        m->send = send, m->recv = recv;
        const bs_seq_event *e = send ? send : recv;
        m->from_node = e->from_node, m->from_pid = e->from_pid;
        /* The receive names the process that got it; a send to a
         * registered name only names the name. */
        const bs_seq_event *t = recv ? recv : send;
        m->to_node = t->to_node, m->to_pid = t->to_pid;
        i = j;
    }
    free(ev);
    return 0;
}

static int filter_messages(merge_state *st, bs_seq_diagram *d, int *bad_pattern)
{
    regex_t inc, exc;
    int have_inc = st->o->include_re && *st->o->include_re, have_exc = st->o->exclude_re && *st->o->exclude_re;
    if (have_inc && regcomp(&inc, st->o->include_re, REG_EXTENDED | REG_NOSUB) != 0) {
        *bad_pattern = 1;
        return -1;
    }
    if (have_exc && regcomp(&exc, st->o->exclude_re, REG_EXTENDED | REG_NOSUB) != 0) {
        if (have_inc)
            regfree(&inc);
        *bad_pattern = 1;
        return -1;
    }
    size_t kept = 0;
    for (size_t i = 0; i < st->n_raw; i++) {
        raw_msg *m = &st->raw[i];
        if (!st->o->keep_noise && is_noise(m, st->names, st->n_names)) {
            d->noise++;
            continue;
        }
        if ((have_inc && !matches(&inc, m, st->names, st->n_names)) ||
            (have_exc && matches(&exc, m, st->names, st->n_names))) {
            d->filtered++;
            continue;
        }
        st->raw[kept++] = *m;
    }
    st->n_raw = kept;
    if (have_inc)
        regfree(&inc);
    if (have_exc)
        regfree(&exc);
    return 0;
}

static int collect_names(const bs_seq_flow *f, merge_state *st)
{
    st->names = malloc((f->n_names ? f->n_names : 1) * sizeof *st->names);
    if (!st->names)
        return -1;
    for (size_t i = 0; i < f->n_names; i++)
        st->names[i] = (name_ref){f->names[i].node, f->names[i].pid, f->names[i].name};
    /* Stable for equal keys (first name wins): sort by key, then index. */
    st->n_names = f->n_names;
    qsort(st->names, st->n_names, sizeof *st->names, cmp_name_ref);
    return 0;
}

/* Finds the proc_ref of (node, pid) in the key-sorted, deduplicated table. */
static proc_ref *find_proc(merge_state *st, const char *node, const char *pid)
{
    proc_ref key = {node, pid, 0, 0, 0};
    size_t lo = 0, hi = st->n_procs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = cmp_str(st->procs[mid].node, node);
        if (!c)
            c = cmp_str(st->procs[mid].pid, pid);
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    (void)key;
    return lo < st->n_procs ? &st->procs[lo] : NULL;
}

static int make_participants(merge_state *st, bs_seq_diagram *d)
{
    size_t n = st->n_raw * 2;
    st->procs = malloc((n ? n : 1) * sizeof *st->procs);
    if (!st->procs)
        return -1;
    for (size_t i = 0; i < st->n_raw; i++) {
        /* Ordinal of first use: a message's sender before its receiver. */
        st->procs[2 * i] = (proc_ref){st->raw[i].from_node, st->raw[i].from_pid, 2 * i, 0, 0};
        st->procs[2 * i + 1] = (proc_ref){st->raw[i].to_node, st->raw[i].to_pid, 2 * i + 1, 0, 0};
    }
    qsort(st->procs, n, sizeof *st->procs, cmp_proc_key);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || cmp_str(st->procs[u - 1].node, st->procs[i].node) ||
            cmp_str(st->procs[u - 1].pid, st->procs[i].pid))
            st->procs[u++] = st->procs[i];
    st->n_procs = u;
    /* The first message of each node: a pass over the key-sorted table
     * (grouped by node). */
    for (size_t i = 0; i < u;) {
        size_t j = i, first = st->procs[i].first;
        while (j < u && !cmp_str(st->procs[j].node, st->procs[i].node))
            first = st->procs[j].first < first ? st->procs[j].first : first, j++;
        for (size_t k = i; k < j; k++)
            st->procs[k].node_first = first;
        i = j;
    }
    /* Display order, to choose who gets a participant of its own. */
    proc_ref *order = malloc((u ? u : 1) * sizeof *order);
    d->parts = malloc((u ? u : 1) * 2 * sizeof *d->parts);
    if (!order || !d->parts) {
        free(order);
        return -1;
    }
    memcpy(order, st->procs, u * sizeof *order);
    qsort(order, u, sizeof *order, cmp_proc_order);
    size_t max = st->o->max_participants ? st->o->max_participants : BS_SEQ_MAX_PARTICIPANTS_DEFAULT;
    if (max > BS_SEQ_MAX_PARTICIPANTS_LIMIT)
        max = BS_SEQ_MAX_PARTICIPANTS_LIMIT;
    size_t own = 0;
    for (size_t i = 0; i < u; i++) {
        proc_ref *p = find_proc(st, order[i].node, order[i].pid);
        const char *pid = order[i].pid;
        if (own >= max) {
            d->folded++;
            pid = "*";
        } else {
            own++;
        }
        /* A node's "other processes" participant is shared. */
        size_t k = d->n_parts;
        if (pid[0] == '*')
            for (k = 0; k < d->n_parts; k++)
                if (!strcmp(d->parts[k].pid, "*") && !strcmp(d->parts[k].node, order[i].node))
                    break;
        if (k == d->n_parts)
            d->parts[d->n_parts++] = (bs_seq_participant){
                order[i].node, pid, pid[0] == '*' ? NULL : find_name(st->names, st->n_names, order[i].node, pid)};
        p->part = k;
    }
    free(order);
    /* Keep participants grouped by node: an "other processes" participant
     * was appended last; move each to after its node's own ones. */
    size_t *perm = malloc((d->n_parts ? d->n_parts : 1) * sizeof *perm);
    bs_seq_participant *sorted = malloc((d->n_parts ? d->n_parts : 1) * sizeof *sorted);
    if (!perm || !sorted) {
        free(perm), free(sorted);
        return -1;
    }
    size_t w = 0;
    for (size_t i = 0; i < d->n_parts; i++) {
        if (!strcmp(d->parts[i].pid, "*"))
            continue;
        int last_of_node = i + 1 == d->n_parts || strcmp(d->parts[i + 1].node, d->parts[i].node) ||
                           !strcmp(d->parts[i + 1].pid, "*");
        perm[i] = w;
        sorted[w++] = d->parts[i];
        if (last_of_node)
            for (size_t k = 0; k < d->n_parts; k++)
                if (!strcmp(d->parts[k].pid, "*") && !strcmp(d->parts[k].node, d->parts[i].node))
                    perm[k] = w, sorted[w++] = d->parts[k];
    }
    for (size_t k = 0; k < d->n_parts; k++) /* an "others" of a node with no own participant */
        if (!strcmp(d->parts[k].pid, "*")) {
            int placed = 0;
            for (size_t j = 0; j < w; j++)
                if (sorted[j].node == d->parts[k].node && !strcmp(sorted[j].pid, "*"))
                    placed = 1;
            if (!placed)
                perm[k] = w, sorted[w++] = d->parts[k];
        }
    memcpy(d->parts, sorted, w * sizeof *sorted);
    for (size_t i = 0; i < st->n_procs; i++)
        st->procs[i].part = perm[st->procs[i].part];
    free(perm), free(sorted);
    return 0;
}

static int make_messages(merge_state *st, bs_seq_diagram *d)
{
    d->msgs = malloc((st->n_raw ? st->n_raw : 1) * sizeof *d->msgs);
    if (!d->msgs)
        return -1;
    for (size_t i = 0; i < st->n_raw; i++) {
        const raw_msg *r = &st->raw[i];
        const bs_seq_event *e = msg_event(r);
        bs_seq_message *m = &d->msgs[d->n_msgs++];
        m->from = find_proc(st, r->from_node, r->from_pid)->part;
        m->to = find_proc(st, r->to_node, r->to_pid)->part;
        m->prev = e->prev, m->cur = e->cur;
        m->ts = msg_ts(r);
        m->sent = r->send != NULL, m->received = r->recv != NULL;
        m->text = e->text;
        m->token_label = e->label;
        m->kind = bs_seq_classify(e->text, &m->payload, &m->payload_len);
    }
    return 0;
}

int bs_seq_merge(const bs_seq_flow *f, const bs_seq_opts *o, bs_seq_diagram *d, int *bad_pattern)
{
    static const bs_seq_opts defaults = {0};
    merge_state st = {o ? o : &defaults, NULL, 0, NULL, 0, NULL, 0};
    memset(d, 0, sizeof *d);
    *bad_pattern = 0;
    d->dropped_events = f->dropped;
    int rc = -1;
    if (collect_names(f, &st) < 0 || pair_events(f, &st) < 0 || filter_messages(&st, d, bad_pattern) < 0)
        goto out;
    qsort(st.raw, st.n_raw, sizeof *st.raw, cmp_causal);
    if (make_participants(&st, d) < 0 || make_messages(&st, d) < 0)
        goto out;
    rc = 0;
out:
    free(st.raw), free(st.names), free(st.procs);
    if (rc < 0) {
        uint64_t dropped = d->dropped_events;
        bs_seq_diagram_free(d);
        d->dropped_events = dropped;
    }
    return rc;
}

void bs_seq_diagram_free(bs_seq_diagram *d)
{
    free(d->parts);
    free(d->msgs);
    memset(d, 0, sizeof *d);
}
