/* seq_chrome.c — a merged flow as a Chrome trace (Perfetto, chrome://tracing).
 *
 * One trace process per node and one track (tid) per participant, named
 * with `M` metadata events. Each message is a short `X` slice on the
 * sender's track ("send LABEL", the full text in args) and one on the
 * receiver's ("recv LABEL"), joined by a flow: `s` inside the send slice,
 * `f` with "bp":"e" inside the receive slice, the message number as id.
 * Time is the causal order, not the nodes' clocks (which do not agree):
 * message k is sent at 10*k µs and received 5 µs later; otherData says so. */
#include "seq_writers.h"

#include <string.h>

#include "../common/json_escape.h"

/* The trace pid of participant i's node: 1 + index of its node. */
static size_t node_pid(const bs_seq_diagram *d, size_t i)
{
    size_t pid = 1;
    for (size_t k = 1; k <= i; k++)
        if (strcmp(d->parts[k].node, d->parts[k - 1].node))
            pid++;
    return pid;
}

static void slice(FILE *out, const char *what, const char *label, const bs_seq_message *m, size_t pid,
                  size_t tid, size_t ts)
{
    fprintf(out, ",\n{\"ph\":\"X\",\"pid\":%zu,\"tid\":%zu,\"ts\":%zu,\"dur\":1,\"cat\":\"seq\",\"name\":", pid,
            tid, ts);
    char name[BS_SEQ_LABEL_CHARS_LIMIT * 4 + 32];
    snprintf(name, sizeof name, "%s %s", what, label);
    bs_json_write_string(out, name);
    fputs(",\"args\":{\"message\":", out);
    bs_json_write_string(out, m->text);
    fputs("}}", out);
}

int bs_write_seq_chrome(FILE *out, const bs_seq_diagram *d, const bs_seq_opts *o, bs_seq_write_info *info)
{
    size_t chars = o->label_chars ? o->label_chars : BS_SEQ_LABEL_CHARS_DEFAULT;
    if (chars > BS_SEQ_LABEL_CHARS_LIMIT)
        chars = BS_SEQ_LABEL_CHARS_LIMIT;
    char label[BS_SEQ_LABEL_CHARS_LIMIT * 4 + 16], name[3 * BS_SEQ_NAME_MAX + 32];
    fputs("{\"traceEvents\":[\n{\"ph\":\"M\",\"pid\":0,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":"
          "\"beamspy sequence\"}}",
          out);
    for (size_t i = 0; i < d->n_parts; i++) {
        size_t pid = node_pid(d, i);
        if (i == 0 || strcmp(d->parts[i].node, d->parts[i - 1].node)) {
            fprintf(out, ",\n{\"ph\":\"M\",\"pid\":%zu,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":", pid);
            bs_json_write_string(out, d->parts[i].node);
            fputs("}}", out);
        }
        bs_seq_participant copy = d->parts[i];
        bs_seq_participant_label(&copy, name, sizeof name);
        fprintf(out, ",\n{\"ph\":\"M\",\"pid\":%zu,\"tid\":%zu,\"name\":\"thread_name\",\"args\":{\"name\":", pid,
                i + 1);
        /* The node is the trace process already: name the track by pid. */
        bs_json_write_string(out, name + strlen(d->parts[i].node) + 1);
        fputs("}}", out);
    }
    for (size_t i = 0; i < d->n_msgs; i++) {
        const bs_seq_message *m = &d->msgs[i];
        size_t ts = 10 * (i + 1);
        size_t fp = node_pid(d, m->from), tp = node_pid(d, m->to);
        bs_seq_message_label(m, chars, label, sizeof label);
        if (m->sent) {
            slice(out, "send", label, m, fp, m->from + 1, ts);
            fprintf(out, ",\n{\"ph\":\"s\",\"pid\":%zu,\"tid\":%zu,\"ts\":%zu,\"id\":%zu,\"cat\":\"seq\",\"name\":\"message\"}",
                    fp, m->from + 1, ts, i + 1);
        }
        if (m->received) {
            slice(out, "recv", label, m, tp, m->to + 1, ts + 5);
            if (m->sent)
                fprintf(out,
                        ",\n{\"ph\":\"f\",\"bp\":\"e\",\"pid\":%zu,\"tid\":%zu,\"ts\":%zu,\"id\":%zu,\"cat\":\"seq\","
                        "\"name\":\"message\"}",
                        tp, m->to + 1, ts + 5, i + 1);
        }
    }
    fputs("\n],\"otherData\":{\"generator\":\"beamspy seq\",\"time\":"
          "\"causal order, not clock time: message k is sent at 10k us and received at 10k+5 us\"}}\n",
          out);
    if (info)
        info->written = d->n_msgs, info->left_out = 0;
    return ferror(out) ? -1 : 0;
}
