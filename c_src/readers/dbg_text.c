/* dbg_text.c — `beamspy convert --text`: every message of dbg trace-port
 * files as a line, in the words of dbg's default handler (dbg:dhandler/2,
 * what dbg:trace_client/2 prints), without a node to run it on:
 *   (<0.80.0>) call w:fib(3)
 *   (<0.80.0>) call w:fib/1 ({w,run,0}) (Timestamp: {1795,641638,621192})
 *   (<0.80.0>) returned from w:fib/1 -> 2
 *   (<0.80.0>) returning to w:run/0
 *   *** Dropped 12 messages.
 * The traced process is spelled like the profiles spell it (<0.80.0>, the
 * first node seen being 0); pids inside terms keep their node name
 * (<app@host.81.0>), as a C reader cannot know a shell's node numbers.
 * Each term is printed at most BS_ETERM_PRINT_MAX bytes long. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "read_source.h"
#include "dbg_procs.h"
#include "dbg_stream.h"

typedef struct printer {
    FILE *out;
    bs_dbg_procs procs; /* only to number nodes */
} printer;

static void term(FILE *out, const bs_eterm *t) { bs_eterm_print(out, t); }

/* dbg's ffunc: M:F(A1,A2) for arguments, M:F/A for an arity. */
static void func(FILE *out, const bs_eterm *mfa)
{
    const bs_eterm *a = bs_eterm_item(mfa, 2);
    if (bs_eterm_kind_of(mfa) != BS_ET_TUPLE || bs_eterm_size(mfa) != 3) {
        term(out, mfa);
        return;
    }
    term(out, bs_eterm_item(mfa, 0));
    fputc(':', out);
    term(out, bs_eterm_item(mfa, 1));
    if (bs_eterm_kind_of(a) == BS_ET_LIST && !bs_eterm_tail(a)) {
        fputc('(', out);
        for (size_t i = 0; i < bs_eterm_size(a); i++) {
            if (i)
                fputc(',', out);
            term(out, bs_eterm_item(a, i));
        }
        fputc(')', out);
    } else if (bs_eterm_kind_of(a) == BS_ET_STRING) {
        fputc('(', out);
        const unsigned char *s = (const unsigned char *)bs_eterm_text(a);
        for (size_t i = 0; i < bs_eterm_text_len(a); i++)
            fprintf(out, "%s%u", i ? "," : "", s[i]);
        fputc(')', out);
    } else {
        fputc('/', out);
        term(out, a);
    }
}

static void message(printer *pr, const bs_dbg_event *ev)
{
    FILE *out = pr->out;
    const bs_eterm *t = ev->root;
    size_t n = ev->n_elems;
    const bs_eterm *e4 = n > 3 ? bs_eterm_item(t, 3) : NULL, *e5 = n > 4 ? bs_eterm_item(t, 4) : NULL;
    fputc('(', out);
    int oom = 0;
    uint32_t i = ev->pid ? bs_dbg_procs_get(&pr->procs, ev->pid, &oom) : UINT32_MAX;
    if (i != UINT32_MAX) {
        char label[64];
        bs_dbg_proc_label(&pr->procs, &pr->procs.procs[i], label, sizeof label);
        fputs(label, out);
    } else {
        term(out, bs_eterm_item(t, 1));
    }
    fputs(") ", out);
    if (bs_eterm_is_atom(ev->tag, "receive") && n == 4) {
        fputs("<< ", out);
        term(out, e4);
    } else if (bs_eterm_is_atom(ev->tag, "send") && n == 5) {
        term(out, e5);
        fputs(" ! ", out);
        term(out, e4);
    } else if (bs_eterm_is_atom(ev->tag, "call") && (n == 4 || n == 5)) {
        fputs("call ", out);
        func(out, e4);
        if (e5) {
            fputs(" (", out);
            term(out, e5);
            fputc(')', out);
        }
    } else if (bs_eterm_is_atom(ev->tag, "return_from") && n == 5) {
        fputs("returned from ", out);
        func(out, e4);
        fputs(" -> ", out);
        term(out, e5);
    } else if (bs_eterm_is_atom(ev->tag, "return_to") && n == 4) {
        fputs("returning to ", out);
        func(out, e4);
    } else if (bs_eterm_is_atom(ev->tag, "spawn") && n == 5) {
        fputs("spawn ", out);
        term(out, e4);
        fputs(" as ", out);
        func(out, e5);
    } else {
        term(out, ev->tag);
        for (size_t k = 3; k < n; k++) {
            fputc(' ', out);
            term(out, bs_eterm_item(t, k));
        }
    }
    if (ev->ts_term) {
        fputs(" (Timestamp: ", out);
        term(out, ev->ts_term);
        fputc(')', out);
    }
    fputc('\n', out);
}

static int print_one(void *ctx, const char *file, const bs_dbg_record *rec, const bs_dbg_event *ev,
                     bs_read_error *err)
{
    printer *pr = ctx;
    FILE *out = pr->out;
    if (!ev) {
        if (rec->kind == BS_DBG_REC_DROP)
            fprintf(out, "*** Dropped %u messages.\n", rec->size);
        else
            fprintf(out, "*** Skipped a record of %u bytes at byte %llu of %s (--max-term-size).\n", rec->size,
                    (unsigned long long)rec->offset, file);
    } else if (ev->kind == BS_DBG_EV_SEQ_TRACE) {
        fputs("SeqTrace ", out);
        if (ev->ts_term) {
            term(out, ev->ts_term);
            fputc(' ', out);
        }
        fputc('[', out);
        term(out, bs_eterm_item(ev->root, 1));
        fputs("]: ", out);
        term(out, bs_eterm_item(ev->root, 2));
        fputc('\n', out);
    } else if (ev->kind == BS_DBG_EV_UNKNOWN) {
        term(out, ev->root);
        fputc('\n', out);
    } else {
        message(pr, ev);
    }
    if (ferror(out))
        return bs_read_fail(err, file, 0, 0, "cannot write the listing: %s", strerror(errno ? errno : EIO));
    return 0;
}

int bs_dbg_print_text(char *const *paths, int n, const bs_dbg_opts *o, FILE *out, bs_read_error *err)
{
    printer pr = {.out = out};
    bs_dbg_procs_init(&pr.procs, UINT32_MAX);
    int rc = bs_dbg_each_event(paths, n, o, print_one, &pr, err);
    bs_dbg_procs_free(&pr.procs);
    return rc;
}
