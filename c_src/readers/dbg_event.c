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
 * is time order; only differences are ever shown. A message with one of
 * these tags whose parts have another shape is said to be bad (a VM never
 * writes it: the file is corrupt). */
#include "dbg_event.h"

#include <stdio.h>
#include <string.h>

/* 2000-01-01 in Unix seconds: {Mega, Sec, Micro} from then on is wall time. */
#define BS_DBG_WALL_CLOCK_FROM 946684800ull

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

/* The time of a timestamp term in *ns and its kind; BS_DBG_TS_NONE when t
 * is not a timestamp. {Mega, Sec, Micro} as erlang:now gives it: Sec and
 * Micro below 10^6, Mega below 18,000 (the year 2540) so that the time in
 * ns fits 64 bits. */
/* A monotonic timestamp: an integer, moved to unsigned order. */
static bs_dbg_ts_kind monotonic_ns(const bs_eterm *t, uint64_t *ns)
{
    int ok;
    long long v = bs_eterm_int(t, &ok);
    if (!ok)
        return BS_DBG_TS_NONE;
    *ns = (uint64_t)v + ((uint64_t)1 << 63);
    return BS_DBG_TS_MONOTONIC;
}

static bs_dbg_ts_kind timestamp_ns(const bs_eterm *t, uint64_t *ns)
{
    uint64_t a, b, c;
    switch (bs_eterm_kind_of(t)) {
    case BS_ET_INT:
        return monotonic_ns(t, ns);
    case BS_ET_TUPLE:
        if (bs_eterm_size(t) == 3 && get_u64(bs_eterm_item(t, 0), &a) && get_u64(bs_eterm_item(t, 1), &b) &&
            get_u64(bs_eterm_item(t, 2), &c) && a < 18000 && b < 1000000 && c < 1000000) {
            *ns = ((a * 1000000 + b) * 1000000 + c) * 1000;
            return a * 1000000 + b >= BS_DBG_WALL_CLOCK_FROM ? BS_DBG_TS_WALL : BS_DBG_TS_CPU;
        }
        if (bs_eterm_size(t) == 2 && bs_eterm_kind_of(bs_eterm_item(t, 0)) == BS_ET_INT &&
            bs_eterm_kind_of(bs_eterm_item(t, 1)) == BS_ET_INT)
            return monotonic_ns(bs_eterm_item(t, 0), ns); /* {Monotonic, Unique} */
        return BS_DBG_TS_NONE;
    default:
        return BS_DBG_TS_NONE;
    }
}

static void say_bad(bs_dbg_event *ev, const char *what, const bs_eterm *t, const char *want)
{
    char text[96];
    bs_eterm_format(text, sizeof text, t);
    snprintf(ev->bad, sizeof ev->bad, "%s%s%s%s%s", what, t ? " " : "", t ? text : "", want[0] ? ", " : "", want);
}

static int is(const bs_eterm *tag, const char *name) { return bs_eterm_is_atom(tag, name); }

/* Says why ev is bad and leaves the classifying function. */
#define BAD(...)                                                                                                \
    do {                                                                                                       \
        say_bad(__VA_ARGS__);                                                                                  \
        return;                                                                                                \
    } while (0)

#define MFA_FORM "not {Module, Function, Arity | Args}"

static void classify_trace(bs_dbg_event *ev)
{
    const bs_eterm *t = ev->root, *tag = ev->tag;
    size_t n = ev->n_elems;
    const bs_eterm *d4 = n > 3 ? bs_eterm_item(t, 3) : NULL;
    if (is(tag, "call")) {
        if (n != 4 && n != 5)
            BAD(ev, n < 4 ? "a call message without a function" : "a call message of more than 5 elements", NULL, "");
        if (!get_mfa(d4, &ev->mfa))
            BAD(ev, "a call of", d4, MFA_FORM);
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
    if (is(tag, "return_to")) {
        if (n != 4)
            BAD(ev, "a return_to message of other than 4 elements", NULL, "");
        if (get_mfa(d4, &ev->mfa))
            ev->has_mfa = 1;
        else if (!bs_eterm_is_atom(d4, "undefined"))
            BAD(ev, "a return_to of", d4, MFA_FORM " or undefined");
        ev->kind = BS_DBG_EV_RETURN_TO;
        return;
    }
    if (is(tag, "return_from") || is(tag, "exception_from")) {
        if (n != 5)
            BAD(ev, is(tag, "return_from") ? "a return_from message of other than 5 elements"
                                                      : "an exception_from message of other than 5 elements",
                           NULL, "");
        if (!get_mfa(d4, &ev->mfa))
            BAD(ev, is(tag, "return_from") ? "a return_from of" : "an exception_from of", d4, MFA_FORM);
        ev->kind = BS_DBG_EV_RETURN_FROM;
        ev->has_mfa = 1;
        return;
    }
    static const struct {
        const char *tag;
        bs_dbg_ev kind;
    } state_tags[] = {
        {"in", BS_DBG_EV_IN},
        {"in_exiting", BS_DBG_EV_IN},
        {"out", BS_DBG_EV_OUT},
        {"out_exiting", BS_DBG_EV_OUT},
        {"out_exited", BS_DBG_EV_EXIT},
        {"exit", BS_DBG_EV_EXIT},
        {"gc_minor_start", BS_DBG_EV_GC_START},
        {"gc_major_start", BS_DBG_EV_GC_START},
        {"gc_start", BS_DBG_EV_GC_START},
        {"gc_minor_end", BS_DBG_EV_GC_END},
        {"gc_major_end", BS_DBG_EV_GC_END},
        {"gc_end", BS_DBG_EV_GC_END},
        {"register", BS_DBG_EV_REGISTER},
    };
    for (size_t i = 0; i < sizeof state_tags / sizeof *state_tags; i++) {
        if (!is(tag, state_tags[i].tag))
            continue;
        if (n != 4)
            BAD(ev, "a message of other than 4 elements with tag", tag, "");
        if (state_tags[i].kind == BS_DBG_EV_REGISTER && bs_eterm_kind_of(d4) != BS_ET_ATOM)
            BAD(ev, "a register of", d4, "not an atom");
        ev->kind = state_tags[i].kind;
        if (ev->kind == BS_DBG_EV_REGISTER)
            ev->name = d4;
        return;
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
            ev->ts_kind = timestamp_ns(ev->ts_term, &ev->ts_ns);
            ev->has_ts = ev->ts_kind != BS_DBG_TS_NONE;
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
    ev->kind = BS_DBG_EV_OTHER;
    if (ts) {
        ev->ts_term = bs_eterm_item(t, n - 1);
        ev->ts_kind = timestamp_ns(ev->ts_term, &ev->ts_ns);
        ev->has_ts = ev->ts_kind != BS_DBG_TS_NONE;
        if (!ev->has_ts)
            BAD(ev, "a timestamp of", ev->ts_term,
                           "not {Mega, Sec, Micro} (Sec and Micro 0..999999), an integer or {Monotonic, Unique}");
    }
    const bs_eterm *who = bs_eterm_item(t, 1);
    ev->pid = bs_eterm_pid_of(who);
    if (ev->pid)
        classify_trace(ev);
    else if (bs_eterm_other_kind(who) != BS_ET_OTHER_PORT)
        say_bad(ev, "a traced process", who, "not a pid or a port");
}
