/* seq_mermaid.c — a Mermaid sequenceDiagram of a merged flow.
 *
 * Participants get ids P1..Pn (ids cannot hold pids or colons) and a label
 * through `as`; they are declared in node order, each node's inside a
 * `box` titled with the node name. Arrows: `->>` a message, `-->>` a
 * reply, `-)` a cast, `-x` a message that was sent and never received
 * (the receiver died, or its node had no collector). Text goes through one
 * pass that turns what Mermaid would misread into its entities: `#` (cuts
 * the text), `;` and `&` (parse errors), `<` and `>`; control characters
 * become spaces and bytes that are not UTF-8 become U+FFFD. The diagram stops
 * at BS_SEQ_MERMAID_MAX_MESSAGES messages or BS_SEQ_MERMAID_MAX_BYTES bytes
 * (Mermaid renders a placeholder above 50,000 characters), with a note
 * saying how many messages were left out. */
#include "seq_writers.h"

#include <string.h>

/* Writes s (n bytes) Mermaid-escaped; returns the bytes written. */
static size_t mermaid_text(FILE *out, const char *s, size_t n)
{
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        const char *rep = NULL;
        switch (c) {
        case '#': rep = "#35;"; break;
        case ';': rep = "#59;"; break;
        case '&': rep = "#38;"; break;
        case '<': rep = "#lt;"; break;
        case '>': rep = "#gt;"; break;
        default: break;
        }
        if (rep) {
            fputs(rep, out);
            w += strlen(rep);
            i++;
            continue;
        }
        if (c < 0x20 || c == 0x7F) {
            fputc(' ', out);
            w++, i++;
            continue;
        }
        if (c < 0x80) {
            fputc(c, out);
            w++, i++;
            continue;
        }
        /* A UTF-8 sequence: copied if valid, else U+FFFD. */
        size_t len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        int ok = len > 0 && i + len <= n && !(c == 0xC0 || c == 0xC1 || c > 0xF4);
        for (size_t k = 1; ok && k < len; k++)
            ok = ((unsigned char)s[i + k] & 0xC0) == 0x80;
        if (ok) {
            fwrite(s + i, 1, len, out);
            w += len, i += len;
        } else {
            fputs("\xEF\xBF\xBD", out);
            w += 3, i++;
        }
    }
    return w;
}

static size_t mermaid_str(FILE *out, const char *s)
{
    return mermaid_text(out, s, strlen(s));
}

static const char *arrow(const bs_seq_message *m)
{
    if (m->sent && !m->received)
        return "-x";
    switch (m->kind) {
    case BS_SEQ_MSG_REPLY: return "-->>";
    case BS_SEQ_MSG_CAST: return "-)";
    default: return "->>";
    }
}

int bs_write_seq_mermaid(FILE *out, const bs_seq_diagram *d, const bs_seq_opts *o, bs_seq_write_info *info)
{
    size_t bytes = 0;
    char label[3 * BS_SEQ_NAME_MAX + 32];
    bytes += (size_t)fprintf(out, "sequenceDiagram\n");
    if (o->title && *o->title) {
        bytes += (size_t)fprintf(out, "    title ");
        bytes += mermaid_str(out, o->title);
        bytes += (size_t)fprintf(out, "\n");
    }
    for (size_t i = 0; i < d->n_parts;) {
        const char *node = d->parts[i].node;
        bytes += (size_t)fprintf(out, "    box ");
        bytes += mermaid_str(out, node);
        bytes += (size_t)fprintf(out, "\n");
        for (; i < d->n_parts && !strcmp(d->parts[i].node, node); i++) {
            bs_seq_participant_label(&d->parts[i], label, sizeof label);
            bytes += (size_t)fprintf(out, "    participant P%zu as ", i + 1);
            bytes += mermaid_str(out, label);
            bytes += (size_t)fprintf(out, "\n");
        }
        bytes += (size_t)fprintf(out, "    end\n");
    }
    size_t chars = o->label_chars ? o->label_chars : BS_SEQ_LABEL_CHARS_DEFAULT;
    if (chars > BS_SEQ_LABEL_CHARS_LIMIT)
        chars = BS_SEQ_LABEL_CHARS_LIMIT;
    /* Room kept for the closing note. */
    size_t budget = BS_SEQ_MERMAID_MAX_BYTES - 200, shown = 0;
    char text[BS_SEQ_LABEL_CHARS_LIMIT * 4 + 16];
    for (size_t i = 0; i < d->n_msgs; i++) {
        const bs_seq_message *m = &d->msgs[i];
        size_t n = bs_seq_message_label(m, chars, text, sizeof text);
        /* Escaping at most quadruples a byte ("#35;"); a line is bounded. */
        if (shown >= BS_SEQ_MERMAID_MAX_MESSAGES || bytes + n * 4 + 32 > budget)
            break;
        bytes += (size_t)fprintf(out, "    P%zu%sP%zu: ", m->from + 1, arrow(m), m->to + 1);
        bytes += mermaid_text(out, text, n);
        bytes += (size_t)fprintf(out, "\n");
        shown++;
    }
    if (shown < d->n_msgs && d->n_parts > 0)
        fprintf(out, "    Note over P1: %zu more messages not shown (the .json output has them all)\n",
                d->n_msgs - shown);
    if (info)
        info->written = shown, info->left_out = d->n_msgs - shown;
    return ferror(out) ? -1 : 0;
}
