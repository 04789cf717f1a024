/* dbg_event.c — classifies a decoded trace message (see dbg_event.h).
 *
 * Messages (erlang:trace/3): {trace, Pid, Tag, Data...} and {trace_ts, Pid,
 * Tag, Data..., Timestamp}; {seq_trace, Label, Info[, Timestamp]}. A call
 * is {M, F, Args} or {M, F, Arity} (flag arity); with a match spec whose
 * message is {caller} (dbg's idiom) a fifth element is the caller {M, F, A}
 * or undefined; beamspy's own {cp, {caller}} form is read too. Timestamps:
 * {Mega, Sec, Micro} (flag timestamp, also cpu_timestamp), an integer
 * (monotonic_timestamp, in the VM's native unit: nanoseconds on Linux and
 * macOS) or {Monotonic, Unique} (strict_monotonic_timestamp). Monotonic
 * values may be negative: they are shifted by 2^63 so that unsigned order
 * is time order; only differences are ever shown. */
#include "dbg_event.h"

#include <string.h>

static int get_u64(const bs_eterm *t, uint64_t *v)
{
    int ok;
    long long x = bs_eterm_int(t, &ok);
    if (!ok || x < 0)
        return 0;
    *v = (uint64_t)x;
    return 1;
}

static int get_mfa(const bs_eterm *t, bs_dbg_mfa *m)
{
    if (bs_eterm_kind_of(t) != BS_ET_TUPLE || bs_eterm_size(t) != 3)
        return 0;
    const bs_eterm *mod = bs_eterm_item(t, 0), *fun = bs_eterm_item(t, 1), *a = bs_eterm_item(t, 2);
    if (bs_eterm_kind_of(mod) != BS_ET_ATOM || bs_eterm_kind_of(fun) != BS_ET_ATOM)
        return 0;
    uint64_t arity;
    switch (bs_eterm_kind_of(a)) {
    case BS_ET_INT:
        if (!get_u64(a, &arity) || arity > 255)
            return 0;
        break;
    case BS_ET_LIST:
        arity = bs_eterm_size(a);
        if (bs_eterm_tail(a) || arity > 255)
            return 0;
        break;
    case BS_ET_STRING: /* arguments that are all small integers */
        arity = bs_eterm_text_len(a);
        if (arity > 255)
            return 0;
        break;
    default:
        return 0;
    }
    m->module = mod;
    m->function = fun;
    m->arity = (uint32_t)arity;
    return 1;
}

static int timestamp_ns(const bs_eterm *t, uint64_t *ns)
{
    uint64_t a, b, c;
    int ok;
    switch (bs_eterm_kind_of(t)) {
    case BS_ET_INT: {
        long long v = bs_eterm_int(t, &ok);
        *ns = (uint64_t)v + ((uint64_t)1 << 63);
        return 1;
    }
    case BS_ET_TUPLE:
        if (bs_eterm_size(t) == 3 && get_u64(bs_eterm_item(t, 0), &a) && get_u64(bs_eterm_item(t, 1), &b) &&
            get_u64(bs_eterm_item(t, 2), &c) && a < 1000000000ull && b < 1000000000ull && c < 1000000000ull) {
            *ns = ((a * 1000000 + b) * 1000000 + c) * 1000; /* < 2^64 for a < 18,446 */
            return a < 18000;
        }
        if (bs_eterm_size(t) == 2 && bs_eterm_kind_of(bs_eterm_item(t, 0)) == BS_ET_INT &&
            bs_eterm_kind_of(bs_eterm_item(t, 1)) == BS_ET_INT)
            return timestamp_ns(bs_eterm_item(t, 0), ns);
        return 0;
    default:
        return 0;
    }
}

static int is(const bs_eterm *tag, const char *name) { return bs_eterm_is_atom(tag, name); }

static void classify_trace(bs_dbg_event *ev)
{
    const bs_eterm *t = ev->root, *tag = ev->tag;
    size_t n = ev->n_elems;
    const bs_eterm *d4 = n > 3 ? bs_eterm_item(t, 3) : NULL;
    if (is(tag, "call") && (n == 4 || n == 5) && get_mfa(d4, &ev->mfa)) {
        ev->kind = BS_DBG_EV_CALL;
        ev->has_mfa = 1;
        const bs_eterm *extra = n == 5 ? bs_eterm_item(t, 4) : NULL;
        const bs_eterm *cp = bs_eterm_tagged(extra, "cp");
        if (cp)
            extra = cp;
        if (extra && bs_eterm_is_atom(extra, "undefined"))
            ev->caller_kind = BS_DBG_CALLER_UNDEFINED;
        else if (extra && get_mfa(extra, &ev->caller))
            ev->caller_kind = BS_DBG_CALLER_MFA;
        return;
    }
    if (is(tag, "return_to") && n == 4) {
        if (get_mfa(d4, &ev->mfa))
            ev->has_mfa = 1;
        else if (!bs_eterm_is_atom(d4, "undefined"))
            return;
        ev->kind = BS_DBG_EV_RETURN_TO;
        return;
    }
    if ((is(tag, "return_from") || is(tag, "exception_from")) && n == 5 && get_mfa(d4, &ev->mfa)) {
        ev->kind = BS_DBG_EV_RETURN_FROM;
        ev->has_mfa = 1;
        return;
    }
    if (n == 4 && (is(tag, "in") || is(tag, "in_exiting")))
        ev->kind = BS_DBG_EV_IN;
    else if (n == 4 && (is(tag, "out") || is(tag, "out_exiting")))
        ev->kind = BS_DBG_EV_OUT;
    else if ((n == 4 && is(tag, "out_exited")) || (n == 4 && is(tag, "exit")))
        ev->kind = BS_DBG_EV_EXIT;
    else if (n == 4 && (is(tag, "gc_minor_start") || is(tag, "gc_major_start") || is(tag, "gc_start")))
        ev->kind = BS_DBG_EV_GC_START;
    else if (n == 4 && (is(tag, "gc_minor_end") || is(tag, "gc_major_end") || is(tag, "gc_end")))
        ev->kind = BS_DBG_EV_GC_END;
    else if (n == 4 && is(tag, "register") && bs_eterm_kind_of(d4) == BS_ET_ATOM) {
        ev->kind = BS_DBG_EV_REGISTER;
        ev->name = d4;
    }
}

void bs_dbg_classify(const bs_eterm *t, bs_dbg_event *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->kind = BS_DBG_EV_UNKNOWN;
    ev->root = t;
    if (bs_eterm_kind_of(t) != BS_ET_TUPLE || bs_eterm_size(t) < 3)
        return;
    const bs_eterm *first = bs_eterm_item(t, 0);
    size_t n = bs_eterm_size(t);
    if (bs_eterm_is_atom(first, "seq_trace")) {
        ev->kind = BS_DBG_EV_SEQ_TRACE;
        ev->n_elems = 3;
        if (n == 4) {
            ev->ts_term = bs_eterm_item(t, 3);
            ev->has_ts = timestamp_ns(ev->ts_term, &ev->ts_ns);
        }
        return;
    }
    int ts = bs_eterm_is_atom(first, "trace_ts");
    if (!ts && !bs_eterm_is_atom(first, "trace"))
        return;
    if (ts && n < 4)
        return;
    ev->n_elems = ts ? n - 1 : n;
    ev->tag = bs_eterm_item(t, 2);
    if (bs_eterm_kind_of(ev->tag) != BS_ET_ATOM)
        return;
    if (ts) {
        ev->ts_term = bs_eterm_item(t, n - 1);
        ev->has_ts = timestamp_ns(ev->ts_term, &ev->ts_ns);
    }
    ev->kind = BS_DBG_EV_OTHER;
    ev->pid = bs_eterm_pid_of(bs_eterm_item(t, 1));
    if (ev->pid)
        classify_trace(ev);
}
