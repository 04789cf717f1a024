/* seq_json.c — a merged flow as JSON, for scripts.
 *
 * {"format":"beamspy-seq","version":1,
 *  "participants":[{"id":"P1","node":..,"pid":..,"name":..|null}],
 *  "messages":[{"n":1,"from":"P1","to":"P2","kind":"call","serial":[0,1],
 *               "sent":true,"received":true,"label":..,"text":..,"token":..}],
 *  "dropped_events":0,"noise":0,"filtered":0,"folded_processes":0}
 * Messages in causal order; "text" is the message as Erlang prints it (cut
 * at 1024 bytes), "label" what the diagrams show. Every message is written. */
#include "seq_writers.h"

#include <inttypes.h>

#include "../common/json_escape.h"

int bs_write_seq_json(FILE *out, const bs_seq_diagram *d, const bs_seq_opts *o, bs_seq_write_info *info)
{
    size_t chars = o->label_chars ? o->label_chars : BS_SEQ_LABEL_CHARS_DEFAULT;
    if (chars > BS_SEQ_LABEL_CHARS_LIMIT)
        chars = BS_SEQ_LABEL_CHARS_LIMIT;
    char label[BS_SEQ_LABEL_CHARS_LIMIT * 4 + 16];
    fputs("{\"format\":\"beamspy-seq\",\"version\":1,\"participants\":[", out);
    for (size_t i = 0; i < d->n_parts; i++) {
        const bs_seq_participant *p = &d->parts[i];
        fprintf(out, "%s\n{\"id\":\"P%zu\",\"node\":", i ? "," : "", i + 1);
        bs_json_write_string(out, p->node);
        fputs(",\"pid\":", out);
        bs_json_write_string(out, p->pid);
        fputs(",\"name\":", out);
        if (p->name)
            bs_json_write_string(out, p->name);
        else
            fputs("null", out);
        fputc('}', out);
    }
    fputs("],\"messages\":[", out);
    for (size_t i = 0; i < d->n_msgs; i++) {
        const bs_seq_message *m = &d->msgs[i];
        fprintf(out, "%s\n{\"n\":%zu,\"from\":\"P%zu\",\"to\":\"P%zu\",\"kind\":\"%s\",\"serial\":[%" PRIu64
                     ",%" PRIu64 "],\"sent\":%s,\"received\":%s,\"label\":",
                i ? "," : "", i + 1, m->from + 1, m->to + 1, bs_seq_msg_kind_name(m->kind), m->prev, m->cur,
                m->sent ? "true" : "false", m->received ? "true" : "false");
        bs_seq_message_label(m, chars, label, sizeof label);
        bs_json_write_string(out, label);
        fputs(",\"text\":", out);
        bs_json_write_string(out, m->text);
        fputs(",\"token\":", out);
        bs_json_write_string(out, m->token_label ? m->token_label : "");
        fputc('}', out);
    }
    fprintf(out, "],\n\"dropped_events\":%" PRIu64 ",\"noise\":%" PRIu64 ",\"filtered\":%" PRIu64
                 ",\"folded_processes\":%" PRIu64 "}\n",
            d->dropped_events, d->noise, d->filtered, d->folded);
    if (info)
        info->written = d->n_msgs, info->left_out = 0;
    return ferror(out) ? -1 : 0;
}
