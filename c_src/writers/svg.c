/* svg.c — the SVG flame graph writer (bs_write_svg, see writers.h).
 *
 * One graph of all processes: root "all", the process frames under it,
 * widths by total time, siblings by name (flamegraph.pl's convention), or,
 * with flamechart and a recorded timeline, x by time. This file only says
 * what a frame looks like (palette colour, tooltip with self and total time,
 * calls and share); flame_layout.c places the frames and svg_document.c
 * writes the document. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "flame_layout.h"
#include "palette.h"
#include "svg_document.h"
#include "writers.h"
#include "xml_escape.h"

typedef struct graph_style {
    const bs_profile *p;
    const bs_render_opts *o;
} graph_style;

static void graph_fill(void *ctx, const bs_flame_frame *f, char *buf, size_t cap)
{
    const graph_style *s = ctx;
    bs_palette_fill(s->o->palette, f->name, f->is_process, buf, cap);
}

static void graph_describe(void *ctx, FILE *out, const bs_flame_frame *f, uint64_t grand_total)
{
    const graph_style *s = ctx;
    char self[160], total[160];
    bs_svg_format_amount(self, sizeof self, f->self, s->p->unit, s->o->count_name);
    bs_svg_format_amount(total, sizeof total, f->value, s->p->unit, s->o->count_name);
    fputs(" (self ", out);
    bs_xml_write(out, self);
    fputs(", total ", out);
    bs_xml_write(out, total);
    if (f->calls > 0)
        fprintf(out, ", %" PRIu64 " call%s", f->calls, f->calls == 1 ? "" : "s");
    double share = grand_total > 0 ? 100.0 * (double)f->value / (double)grand_total : 100.0;
    fprintf(out, ", %.2f%%)", share);
}

/* What the reader must know about what is drawn, or "" (into buf). */
static void describe_limits(const bs_profile *p, const bs_render_opts *o, int chart, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    if (o->flamechart && !chart)
        n += (size_t)snprintf(buf + n, cap - n, "no timeline was recorded: flame graph instead of a flame chart");
    if (chart && p->timeline_truncated && n < cap)
        n += (size_t)snprintf(buf + n, cap - n, "%stimeline truncated: some calls are missing", n ? "; " : "");
    if (p->truncated[0] && n < cap)
        n += (size_t)snprintf(buf + n, cap - n, "%srecording stopped early (%s)", n ? "; " : "", p->truncated);
    if (p->notes[0] && n < cap)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? "; " : "", p->notes);
    char times[BS_COMPENSATION_TEXT_CAP];
    if (bs_compensation_text(&p->compensation, times, sizeof times) && n < cap)
        snprintf(buf + n, cap - n, "%s%s", n ? "; " : "", times);
}

int bs_write_svg(FILE *out, const bs_profile *p, const bs_render_opts *opts)
{
    bs_render_opts o = opts ? *opts : (bs_render_opts){0};
    bs_flame_layout layout;
    if (bs_flame_layout_init(&layout, p, o.drop_sleep) < 0) {
        errno = ENOMEM;
        return -1;
    }
    int chart = o.flamechart && p->has_timeline;
    /* Room for all of it: the notes, why recording stopped, the times. */
    char note[sizeof p->notes + sizeof p->truncated + BS_COMPENSATION_TEXT_CAP + 256];
    describe_limits(p, &o, chart, note, sizeof note);
    graph_style style = {p, &o};
    bs_svg_doc doc = {
        .layout = &layout,
        .chart = chart,
        .title = o.title ? o.title : chart ? "Flame Chart" : "Flame Graph",
        .subtitle = o.subtitle,
        .note = note,
        .width = o.width,
        .min_width = o.min_width,
        .inverted = o.inverted,
        .style = {graph_fill, graph_describe, &style},
    };
    int rc = bs_svg_write_document(out, &doc);
    bs_flame_layout_free(&layout);
    return rc;
}
