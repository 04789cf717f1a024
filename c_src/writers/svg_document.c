/* svg_document.c — the SVG around the frames (see svg_document.h).
 *
 * The layout is walked at least twice: first only to count the frames and
 * find the deepest (the height goes into the <svg> element before any frame
 * is written) and to keep their widths, up to the hard cap, for choosing
 * the pruning threshold; last to write the frames as they are visited. So
 * nothing but the layout's index and at most BS_SVG_HARD_MAX_FRAMES widths
 * are held in memory. */
#include "svg_document.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "assets/svg_flamegraph.css.h"
#include "assets/svg_flamegraph.js.h"
#include "text_wrap.h"
#include "xml_escape.h"

/* Geometry in px, as flamegraph.pl draws it. The script reads ROW from
 * #frames and uses the same label rule (CHAR_WIDTH) and TEXT_DY. */
#define ROW 16
#define RECT_H 15
#define PAD_X 10
#define PAD_TOP 36
#define SUBTITLE_H 24
/* Subtitle lines: 12 px text, 16 px apart, wrapped at a width per
 * character above Verdana's and DejaVu Sans' widest common glyphs (digits,
 * 'm', 'w' are 7-7.6 px at 12 px) so that no line runs past the edges. */
#define SUBTITLE_LINE 16
#define SUBTITLE_CHAR_WIDTH 7.6
#define SUBTITLE_MIN_CHARS 20
/* The controls of the title row, right-aligned (widths at 12 px with room
 * to spare: "ignore case" is ~75 px, "Reset Search" ~85 px). */
#define IGNORECASE_W 80
#define RESET_SEARCH_W 90
#define CONTROL_GAP 14
#define SEARCH_BOX_W 240
#define SEARCH_BOX_MIN_W 120
/* The title is 17 px: Verdana averages about 0.62 em a character. */
#define TITLE_CHAR_WIDTH (17 * 0.62)
#define PAD_BOTTOM 34
#define CHAR_WIDTH (12 * 0.59)
#define TEXT_DY 10.5
#define DEFAULT_WIDTH 1200
#define DEFAULT_MIN_WIDTH 0.1

typedef struct geometry {
    unsigned width, height, top;
    double plot_width, scale; /* px per profile unit */
    int inverted;
} geometry;

typedef struct measure {
    uint64_t frames;
    uint32_t max_depth;
    int cut;             /* some stack is deeper than BS_SVG_MAX_DEPTH */
    uint64_t stop_after; /* UINT64_MAX: count them all */
    uint64_t *values;    /* if not NULL: every frame's value (room for stop_after + 1) */
} measure;

static int measure_frame(void *ctx, const bs_flame_frame *f)
{
    measure *m = ctx;
    if (m->values)
        m->values[m->frames] = f->value;
    m->frames++;
    if (f->depth > m->max_depth)
        m->max_depth = f->depth;
    m->cut |= f->cut;
    return m->frames > m->stop_after ? 1 : 0;
}

static int walk(const bs_svg_doc *d, uint64_t min_value, bs_flame_visit visit, void *ctx)
{
    return d->chart ? bs_flame_walk_chart(d->layout, min_value, BS_SVG_MAX_DEPTH, visit, ctx)
                    : bs_flame_walk_graph(d->layout, min_value, BS_SVG_MAX_DEPTH, visit, ctx);
}

/* Smallest width in profile units that is at least min_px wide. */
static uint64_t min_value_of(double min_px, const geometry *g)
{
    if (g->scale <= 0)
        return 1;
    double v = min_px / g->scale;
    if (v >= 1.8e19)
        return UINT64_MAX;
    uint64_t u = (uint64_t)v; /* rounded up by hand: no libm */
    if ((double)u < v)
        u++;
    return u < 1 ? 1 : u;
}

static int cmp_desc(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? 1 : a > b ? -1 : 0;
}

/* Counts the frames kept at *min_value, doubling it while more than the
 * hard cap remain (then counting them all if even that does not help). */
static int count_under_hard_cap(const bs_svg_doc *d, const geometry *g, uint64_t *min_value, measure *m,
                                uint64_t *values)
{
    for (;;) {
        *m = (measure){.stop_after = BS_SVG_HARD_MAX_FRAMES, .values = values};
        int rc = walk(d, *min_value, measure_frame, m);
        if (rc <= 0)
            return rc;
        if ((double)*min_value * g->scale * 2 > g->plot_width || *min_value > UINT64_MAX / 2) {
            *m = (measure){.stop_after = UINT64_MAX}; /* over the cap even so: draw them */
            return walk(d, *min_value, measure_frame, m) < 0 ? -1 : 1;
        }
        *min_value *= 2;
    }
}

/* Picks the pruning threshold (in profile units) and measures the frames
 * it keeps. A frame is kept iff its value reaches the threshold (a callee is
 * never wider than its caller), so when more than BS_SVG_MAX_FRAMES remain,
 * the values of all frames give the exact threshold that keeps the widest
 * BS_SVG_MAX_FRAMES (fewer where values tie) — but it is not raised past
 * BS_SVG_VISIBLE_WIDTH px: frames that wide are a real picture (a balanced
 * tree), not slivers, and stay up to the hard cap. Returns 0 or -1. */
static int choose_pruning(const bs_svg_doc *d, const geometry *g, uint64_t *min_value, measure *m)
{
    uint64_t *values = malloc((BS_SVG_HARD_MAX_FRAMES + 1) * sizeof *values);
    if (!values)
        return -1;
    int rc = count_under_hard_cap(d, g, min_value, m, values);
    if (rc == 0 && m->frames > BS_SVG_MAX_FRAMES) {
        qsort(values, m->frames, sizeof *values, cmp_desc);
        uint64_t exact = values[BS_SVG_MAX_FRAMES] + 1, visible = min_value_of(BS_SVG_VISIBLE_WIDTH, g);
        if (exact > visible)
            exact = visible;
        if (exact > *min_value) {
            *min_value = exact;
            *m = (measure){.stop_after = UINT64_MAX};
            rc = walk(d, *min_value, measure_frame, m);
        }
    }
    free(values);
    return rc < 0 ? -1 : 0;
}

/* Writes an asset inside CDATA; "]]>" in it, which would end the section,
 * is split across two sections. */
static void write_cdata(FILE *out, const char *text)
{
    fputs("<![CDATA[\n", out);
    for (const char *end; (end = strstr(text, "]]>")) != NULL; text = end + 2) {
        fwrite(text, 1, (size_t)(end - text) + 2, out);
        fputs("]]><![CDATA[", out);
    }
    fputs(text, out);
    fputs("]]>", out);
}

/* What was left out beyond what the caller asked for. */
typedef struct pruning {
    uint64_t asked, min_value; /* thresholds in profile units; raised for the frame cap */
    double px;                 /* min_value in px */
    int cut;                   /* stacks cut at BS_SVG_MAX_DEPTH */
} pruning;

/* The user's subtitle, then what the reader must know, joined by dashes,
 * in a new string; NULL when there is nothing to say (or no memory: the
 * caller fails the write then, see subtitle_lines). */
static char *subtitle_text(const bs_svg_doc *d, const pruning *pr, int *failed)
{
    static const char dash[] = " \xE2\x80\x94 ";
    *failed = 0;
    if (!((d->subtitle && *d->subtitle) || (d->note && *d->note) || pr->min_value > pr->asked || pr->cut))
        return NULL;
    size_t cap = (d->subtitle ? strlen(d->subtitle) : 0) + (d->note ? strlen(d->note) : 0) + 256;
    char *text = malloc(cap);
    if (!text) {
        *failed = 1;
        return NULL;
    }
    size_t n = 0;
    text[0] = '\0';
    const char *sep = "";
    if (d->subtitle && *d->subtitle) {
        n += (size_t)snprintf(text + n, cap - n, "%s", d->subtitle);
        sep = dash;
    }
    if (d->note && *d->note) {
        n += (size_t)snprintf(text + n, cap - n, "%s%s", sep, d->note);
        sep = dash;
    }
    if (pr->min_value > pr->asked) {
        n += (size_t)snprintf(text + n, cap - n, "%sframes narrower than %.2f px left out (over %d frames)", sep,
                              pr->px, BS_SVG_MAX_FRAMES);
        sep = dash;
    }
    if (pr->cut)
        snprintf(text + n, cap - n, "%sstacks cut at %d frames", sep, BS_SVG_MAX_DEPTH);
    return text;
}

/* The subtitle broken into lines that fit the width (text_wrap.h). */
typedef struct subtitle {
    char *text;          /* NULL: no subtitle */
    bs_text_line *lines;
    size_t n_lines;
} subtitle;

static int subtitle_lines(const bs_svg_doc *d, const pruning *pr, unsigned width, subtitle *st)
{
    int failed;
    *st = (subtitle){subtitle_text(d, pr, &failed), NULL, 0};
    if (!st->text)
        return failed ? -1 : 0;
    double room = (width - 2.0 * PAD_X) / SUBTITLE_CHAR_WIDTH;
    size_t max_chars = room < SUBTITLE_MIN_CHARS ? SUBTITLE_MIN_CHARS : (size_t)room;
    st->n_lines = bs_wrap_text(st->text, max_chars, NULL, 0);
    st->lines = malloc((st->n_lines ? st->n_lines : 1) * sizeof *st->lines);
    if (!st->lines) {
        free(st->text);
        st->text = NULL;
        return -1;
    }
    bs_wrap_text(st->text, max_chars, st->lines, st->n_lines);
    return 0;
}

/* One <tspan> per line, centred, SUBTITLE_LINE px apart. */
static int write_subtitle(FILE *out, const subtitle *st, const geometry *g)
{
    fprintf(out, "<text id=\"subtitle\" x=\"%.1f\" y=\"48\">", g->width / 2.0);
    for (size_t i = 0; i < st->n_lines; i++) {
        char *line = strndup(st->text + st->lines[i].start, st->lines[i].len);
        if (!line)
            return -1;
        fprintf(out, "<tspan x=\"%.1f\" dy=\"%d\">", g->width / 2.0, i ? SUBTITLE_LINE : 0);
        bs_xml_write(out, line);
        fputs("</tspan>", out);
        free(line);
    }
    fputs("</text>\n", out);
    return 0;
}

/* Characters (code points) of s, as the browser lays them out. */
static size_t utf8_chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

static int write_head(FILE *out, const bs_svg_doc *d, const geometry *g, const subtitle *st)
{
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
                 "<svg version=\"1.1\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
                 "xmlns=\"http://www.w3.org/2000/svg\">\n",
            g->width, g->height, g->width, g->height);
    fputs("<style type=\"text/css\">", out);
    write_cdata(out, BS_ASSET_svg_flamegraph_css);
    fputs("</style>\n<script type=\"text/ecmascript\">", out);
    write_cdata(out, BS_ASSET_svg_flamegraph_js);
    fputs("</script>\n", out);
    fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"rgb(238,238,232)\"/>\n", g->width, g->height);
    fprintf(out, "<text id=\"title\" x=\"%.1f\" y=\"24\">", g->width / 2.0);
    bs_xml_write(out, d->title);
    fputs("</text>\n", out);
    if (st->text && write_subtitle(out, st, g) < 0)
        return -1;
    unsigned base = g->height - PAD_BOTTOM / 2;
    fprintf(out, "<text id=\"details\" x=\"%d\" y=\"%u\"> </text>\n", PAD_X, base);
    fprintf(out, "<text id=\"unzoom\" class=\"hide\" x=\"%d\" y=\"24\">Reset Zoom</text>\n", PAD_X);
    /* Right-aligned from the edge: "ignore case", then Search (which
     * grows leftwards into "Reset Search"), then the search box, so that
     * none overlaps another whatever the Search control says. */
    /* Signed: a graph narrower than the controls (--width 30) puts them at
     * 0, never at a wrapped-around unsigned position. */
    long ic_end = (long)g->width - PAD_X, search_end = ic_end - IGNORECASE_W - CONTROL_GAP;
    /* The box ends left of "Reset Search" and starts right of the centred
     * title (as wide as there is room, SEARCH_BOX_MIN_W at the least). */
    double title_end = g->width / 2.0 + (double)utf8_chars(d->title) * TITLE_CHAR_WIDTH / 2 + CONTROL_GAP;
    double box_end = (double)search_end - RESET_SEARCH_W - CONTROL_GAP;
    int box_w = box_end - title_end >= SEARCH_BOX_W ? SEARCH_BOX_W
                : box_end - title_end >= SEARCH_BOX_MIN_W ? (int)(box_end - title_end) : SEARCH_BOX_MIN_W;
    long box_x = (long)box_end - box_w;
    fprintf(out, "<text id=\"search\" x=\"%ld\" y=\"24\">Search</text>\n", search_end > 0 ? search_end : 0);
    fprintf(out, "<text id=\"ignorecase\" x=\"%ld\" y=\"24\">ignore case</text>\n", ic_end > 0 ? ic_end : 0);
    fprintf(out, "<text id=\"matched\" x=\"%u\" y=\"%u\"> </text>\n", g->width - 110, base);
    fprintf(out, "<foreignObject id=\"searchform\" class=\"hide\" x=\"%ld\" y=\"8\" width=\"%d\" height=\"22\">"
                 "<input xmlns=\"http://www.w3.org/1999/xhtml\" id=\"searchbox\" type=\"text\" "
                 "placeholder=\"regular expression\" spellcheck=\"false\"/></foreignObject>\n",
            box_x > 0 ? box_x : 0, box_w);
    return ferror(out) ? -1 : 0;
}

typedef struct frame_writer {
    FILE *out;
    const bs_svg_doc *d;
    const geometry *g;
    uint64_t grand_total;
} frame_writer;

static int write_frame(void *ctx, const bs_flame_frame *f)
{
    frame_writer *w = ctx;
    FILE *out = w->out;
    const geometry *g = w->g;
    double x = PAD_X + (double)f->start * g->scale, width = (double)f->value * g->scale;
    if (f->depth == 0)
        x = PAD_X, width = g->plot_width;
    unsigned y = g->inverted ? g->top + f->depth * ROW : g->height - PAD_BOTTOM - (f->depth + 1) * ROW;
    char fill[32];
    w->d->style.fill(w->d->style.ctx, f, fill, sizeof fill);
    fprintf(out, "<g data-x=\"%" PRIu64 "\" data-w=\"%" PRIu64 "\"><title>", f->start, f->value);
    bs_xml_write(out, f->name);
    w->d->style.describe(w->d->style.ctx, out, f, w->grand_total);
    fprintf(out, "</title><rect x=\"%.1f\" y=\"%u\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>", x, y, width, RECT_H, fill);
    double room = (width - 6) / CHAR_WIDTH;
    size_t chars = room >= 3 ? (size_t)room : 0; /* floor, as the script's Math.floor */
    if (chars >= 3) {
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">", x + 3, y + TEXT_DY);
        bs_xml_write_label(out, f->name, chars);
        fputs("</text></g>\n", out);
    } else {
        fputs("<text/></g>\n", out);
    }
    return ferror(out) ? -1 : 0;
}

int bs_svg_write_document(FILE *out, const bs_svg_doc *d)
{
    geometry g = {.width = d->width ? d->width : DEFAULT_WIDTH, .inverted = d->inverted};
    if (g.width < 2 * PAD_X + 10)
        g.width = 2 * PAD_X + 10;
    g.plot_width = g.width - 2.0 * PAD_X;
    uint64_t total = d->chart ? d->layout->chart_total : d->layout->total;
    g.scale = total > 0 ? g.plot_width / (double)total : 0;
    pruning pr = {.asked = min_value_of(d->min_width > 0 ? d->min_width : DEFAULT_MIN_WIDTH, &g)};
    pr.min_value = pr.asked;
    measure m;
    if (choose_pruning(d, &g, &pr.min_value, &m) < 0)
        return -1;
    pr.px = (double)pr.min_value * g.scale;
    pr.cut = m.cut;
    subtitle st;
    if (subtitle_lines(d, &pr, g.width, &st) < 0)
        return -1;
    g.top = PAD_TOP + (st.n_lines ? SUBTITLE_H + (unsigned)(st.n_lines - 1) * SUBTITLE_LINE : 0);
    g.height = g.top + (m.max_depth + 1) * ROW + PAD_BOTTOM;
    int head = write_head(out, d, &g, &st);
    free(st.text);
    free(st.lines);
    if (head < 0)
        return -1;
    fprintf(out, "<g id=\"frames\" data-total=\"%" PRIu64 "\" data-left=\"%d\" data-width=\"%.1f\" data-row=\"%d\">\n",
            total, PAD_X, g.plot_width, ROW);
    frame_writer w = {out, d, &g, total};
    if (walk(d, pr.min_value, write_frame, &w) != 0)
        return -1;
    fputs("</g>\n</svg>\n", out);
    return ferror(out) ? -1 : 0;
}

void bs_svg_format_amount(char *buf, size_t cap, uint64_t v, bs_unit unit, const char *count_name)
{
    if (unit == BS_UNIT_COUNT) {
        snprintf(buf, cap, "%" PRIu64 " %s", v, count_name ? count_name : "samples");
        return;
    }
    double us = (double)v / 1000.0;
    if (count_name)
        snprintf(buf, cap, "%.1f %s", us, count_name);
    else if (v == 0)
        snprintf(buf, cap, "0 \xC2\xB5s");
    else if (v < 1000)
        snprintf(buf, cap, "%.3f \xC2\xB5s", us);
    else if (v < 10000)
        snprintf(buf, cap, "%.2f \xC2\xB5s", us);
    else if (v < 1000000)
        snprintf(buf, cap, "%.1f \xC2\xB5s", us);
    else if (v < 1000000000)
        snprintf(buf, cap, "%.2f ms", us / 1000.0);
    else
        snprintf(buf, cap, "%.3f s", us / 1e6);
}
