/* seq_svg.c — a self-contained SVG sequence diagram of a merged flow.
 *
 * One column per participant (headed by its pid and name, columns of a node
 * under a box naming the node), a lifeline below each, one row per message
 * in causal order: an arrow from sender to receiver (dashed for replies,
 * ending in a cross when never received, a loop for a message to itself)
 * with the short label above it. Hovering a message shows its full text
 * (an SVG <title>): no script, no external resource. At most
 * BS_SEQ_SVG_MAX_MESSAGES rows; a last line says how many were left out. */
#include "seq_writers.h"

#include <string.h>

#include "xml_escape.h"

#define COL_W 190
#define ROW_H 28
#define TOP 84
#define LEFT 20

static int col_x(size_t i)
{
    return LEFT + COL_W / 2 + (int)i * COL_W;
}

static void header(FILE *out, const bs_seq_diagram *d)
{
    for (size_t i = 0; i < d->n_parts;) {
        size_t j = i;
        while (j < d->n_parts && !strcmp(d->parts[j].node, d->parts[i].node))
            j++;
        int x0 = col_x(i) - COL_W / 2 + 4, x1 = col_x(j - 1) + COL_W / 2 - 4;
        fprintf(out, "<rect class=\"node\" x=\"%d\" y=\"6\" width=\"%d\" height=\"70\"/>\n", x0, x1 - x0);
        fprintf(out, "<text class=\"nodename\" x=\"%d\" y=\"20\">", (x0 + x1) / 2);
        bs_xml_write_label(out, d->parts[i].node, (size_t)(x1 - x0) / 7);
        fputs("</text>\n", out);
        for (size_t k = i; k < j; k++) {
            const bs_seq_participant *p = &d->parts[k];
            int x = col_x(k);
            fprintf(out, "<g class=\"part\"><title>");
            char label[3 * BS_SEQ_NAME_MAX + 32];
            bs_seq_participant_label(p, label, sizeof label);
            bs_xml_write(out, label);
            fprintf(out, "</title><rect x=\"%d\" y=\"28\" width=\"%d\" height=\"42\"/>", x - COL_W / 2 + 10, COL_W - 20);
            fprintf(out, "<text x=\"%d\" y=\"45\">", x);
            bs_xml_write_label(out, strcmp(p->pid, "*") ? p->pid : "other processes", 24);
            fprintf(out, "</text><text x=\"%d\" y=\"62\">", x);
            bs_xml_write_label(out, p->name ? p->name : "", 24);
            fputs("</text></g>\n", out);
        }
        i = j;
    }
}

int bs_write_seq_svg(FILE *out, const bs_seq_diagram *d, const bs_seq_opts *o, bs_seq_write_info *info)
{
    size_t chars = o->label_chars ? o->label_chars : BS_SEQ_LABEL_CHARS_DEFAULT;
    if (chars > BS_SEQ_LABEL_CHARS_LIMIT)
        chars = BS_SEQ_LABEL_CHARS_LIMIT;
    size_t rows = d->n_msgs < BS_SEQ_SVG_MAX_MESSAGES ? d->n_msgs : BS_SEQ_SVG_MAX_MESSAGES;
    size_t parts = d->n_parts ? d->n_parts : 1;
    int width = LEFT * 2 + (int)parts * COL_W, height = TOP + (int)(rows + 2) * ROW_H;
    fprintf(out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\">\n<title>",
            width, height, width, height);
    bs_xml_write(out, o->title && *o->title ? o->title : "beamspy sequence diagram");
    fputs("</title>\n<style>\n"
          "text{font-family:Verdana,sans-serif;font-size:12px;text-anchor:middle;fill:#222}\n"
          ".node{fill:#eef3fb;stroke:#9ab}.nodename{font-weight:bold}\n"
          ".part rect{fill:#fff;stroke:#456}.life{stroke:#bbb;stroke-dasharray:4 3}\n"
          ".msg line,.msg path{stroke:#245;stroke-width:1.4;fill:none;marker-end:url(#arrow)}\n"
          ".msg.reply line,.msg.reply path{stroke-dasharray:6 3}.msg.lost line{stroke:#b33;marker-end:url(#cross)}\n"
          ".msg text{font-size:11px}.msg:hover line,.msg:hover path{stroke:#e60;stroke-width:2.5}\n"
          ".msg .hit{stroke:transparent;stroke-width:14;marker-end:none}\n"
          "</style>\n<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"8\" "
          "markerHeight=\"8\" orient=\"auto\"><path d=\"M0,0L10,5L0,10z\" fill=\"#245\"/></marker>"
          "<marker id=\"cross\" viewBox=\"0 0 10 10\" refX=\"5\" refY=\"5\" markerWidth=\"10\" markerHeight=\"10\">"
          "<path d=\"M0,0L10,10M10,0L0,10\" stroke=\"#b33\" stroke-width=\"2\"/></marker></defs>\n",
          out);
    header(out, d);
    for (size_t i = 0; i < d->n_parts; i++)
        fprintf(out, "<line class=\"life\" x1=\"%d\" y1=\"70\" x2=\"%d\" y2=\"%d\"/>\n", col_x(i), col_x(i),
                height - 8);
    char label[BS_SEQ_LABEL_CHARS_LIMIT * 4 + 16];
    for (size_t i = 0; i < rows; i++) {
        const bs_seq_message *m = &d->msgs[i];
        int y = TOP + (int)(i + 1) * ROW_H, x1 = col_x(m->from), x2 = col_x(m->to);
        const char *cls = m->sent && !m->received ? " lost" : m->kind == BS_SEQ_MSG_REPLY ? " reply" : "";
        fprintf(out, "<g class=\"msg%s\" data-n=\"%zu\"><title>", cls, i + 1);
        fprintf(out, "%zu. %s%s\n", i + 1, bs_seq_msg_kind_name(m->kind),
                m->sent && !m->received ? " (never received)" : !m->sent ? " (send not seen)" : "");
        bs_xml_write(out, m->text);
        fputs("</title>", out);
        if (x1 == x2)
            fprintf(out, "<path d=\"M%d,%dh30v12h-28\"/>", x1, y - 6);
        else
            fprintf(out, "<line class=\"hit\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/><line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>",
                    x1, y, x2, y, x1, y, x2, y);
        bs_seq_message_label(m, chars, label, sizeof label);
        int tx = x1 == x2 ? x1 + 36 : (x1 + x2) / 2;
        fprintf(out, "<text x=\"%d\" y=\"%d\"%s>", tx, y - 5, x1 == x2 ? " style=\"text-anchor:start\"" : "");
        int span = x1 > x2 ? x1 - x2 : x2 - x1;
        bs_xml_write_label(out, label, (size_t)(span > COL_W ? span : COL_W) / 7);
        fputs("</text></g>\n", out);
    }
    if (rows < d->n_msgs)
        fprintf(out, "<text x=\"%d\" y=\"%d\">%zu more messages not drawn (the .json output has them all)</text>\n",
                width / 2, TOP + (int)(rows + 1) * ROW_H + 16, d->n_msgs - rows);
    fputs("</svg>\n", out);
    if (info)
        info->written = rows, info->left_out = d->n_msgs - rows;
    return ferror(out) ? -1 : 0;
}
