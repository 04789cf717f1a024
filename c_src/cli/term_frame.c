/* term_frame.c — raw frames from a node spelled by the engine (see
 * term_frame.h). */
#include "term_frame.h"

#include <string.h>

/* 1 if t is {Module, Function, Arity} with atoms and an arity 0..255. */
static int is_mfa(const bs_eterm *t)
{
    int ok = 0;
    const bs_eterm *a = bs_eterm_item(t, 2);
    long long arity = bs_eterm_int(a, &ok);
    return bs_eterm_kind_of(t) == BS_ET_TUPLE && bs_eterm_size(t) == 3 &&
           bs_eterm_kind_of(bs_eterm_item(t, 0)) == BS_ET_ATOM && bs_eterm_kind_of(bs_eterm_item(t, 1)) == BS_ET_ATOM &&
           ok && arity >= 0 && arity <= 255;
}

/* 1 if t is a process label {PidText, [] | Registered | {M, F, Arity}}. */
static int is_label(const bs_eterm *t)
{
    const bs_eterm *name = bs_eterm_item(t, 1);
    bs_eterm_kind k = bs_eterm_kind_of(name);
    return bs_eterm_kind_of(t) == BS_ET_TUPLE && bs_eterm_size(t) == 2 &&
           bs_eterm_kind_of(bs_eterm_item(t, 0)) == BS_ET_BINARY &&
           ((k == BS_ET_LIST && bs_eterm_size(name) == 0) || k == BS_ET_ATOM || is_mfa(name));
}

const char *bs_term_frame(const bs_eterm *frame, bs_name_style style, char *buf, size_t cap)
{
    bs_eterm_kind k = bs_eterm_kind_of(frame);
    if (is_mfa(frame)) {
        const bs_eterm *m = bs_eterm_item(frame, 0), *f = bs_eterm_item(frame, 1);
        int ok = 0;
        bs_format_mfa(buf, cap, style, bs_eterm_text(m), bs_eterm_text_len(m), bs_eterm_text(f),
                      bs_eterm_text_len(f), (unsigned)bs_eterm_int(bs_eterm_item(frame, 2), &ok));
    } else if (is_label(frame)) {
        const bs_eterm *pid = bs_eterm_item(frame, 0), *name = bs_eterm_item(frame, 1);
        const char *n = NULL, *f = NULL;
        size_t n_len = 0, f_len = 0;
        unsigned arity = 0;
        if (bs_eterm_kind_of(name) == BS_ET_ATOM) {
            n = bs_eterm_text(name);
            n_len = bs_eterm_text_len(name);
        } else if (is_mfa(name)) {
            int ok = 0;
            n = bs_eterm_text(bs_eterm_item(name, 0));
            n_len = bs_eterm_text_len(bs_eterm_item(name, 0));
            f = bs_eterm_text(bs_eterm_item(name, 1));
            f_len = bs_eterm_text_len(bs_eterm_item(name, 1));
            arity = (unsigned)bs_eterm_int(bs_eterm_item(name, 2), &ok);
        }
        bs_format_label(buf, cap, style, bs_eterm_text(pid), bs_eterm_text_len(pid), n, n_len, f, f_len, arity);
    } else if (k == BS_ET_BINARY || k == BS_ET_STRING || k == BS_ET_ATOM) {
        bs_sanitize_name(buf, cap, bs_eterm_text(frame), bs_eterm_text_len(frame));
    } else {
        char printed[1024];
        size_t n = bs_eterm_format(printed, sizeof printed, frame);
        bs_sanitize_name(buf, cap, printed, n);
    }
    return buf;
}

int bs_term_stacks_folded(FILE *out, const bs_eterm *stacks, bs_name_style style, char *err, size_t err_size)
{
    if (bs_eterm_kind_of(stacks) != BS_ET_LIST) {
        snprintf(err, err_size, "the stacks are a %s, not a list", bs_eterm_kind_name(bs_eterm_kind_of(stacks)));
        return -1;
    }
    for (size_t i = 0; i < bs_eterm_size(stacks); i++) {
        const bs_eterm *s = bs_eterm_item(stacks, i), *frames = bs_eterm_item(s, 1);
        int ok = 0;
        long long count = bs_eterm_int(bs_eterm_item(s, 2), &ok);
        if (bs_eterm_kind_of(s) != BS_ET_TUPLE || bs_eterm_size(s) != 3 || !ok || count < 0 ||
            bs_eterm_kind_of(frames) != BS_ET_LIST) {
            snprintf(err, err_size, "stack %zu is not {Root, [Frame], Count}", i + 1);
            return -1;
        }
        char name[1024];
        if (fputs(bs_term_frame(bs_eterm_item(s, 0), style, name, sizeof name), out) < 0)
            goto write_failed;
        for (size_t f = 0; f < bs_eterm_size(frames); f++) {
            const bs_eterm *frame = bs_eterm_item(frames, f);
            if (fprintf(out, ";%s", bs_term_frame(frame, style, name, sizeof name)) < 0)
                goto write_failed;
        }
        if (fprintf(out, " %lld\n", count) < 0)
            goto write_failed;
    }
    return 0;
write_failed:
    snprintf(err, err_size, "out of memory");
    return -1;
}
