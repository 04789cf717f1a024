/* html.c — the self-contained interactive HTML page.
 *
 * One file that works from file:// with no network: the stylesheet and the
 * scripts are inlined (they live in assets/profile.html.{css,js} and
 * assets/profile.html.transforms.js, the page's live transforms, and are
 * embedded at build time), a Content-Security-Policy allows no request at
 * all and no script but ours (by their SHA-256), and the profile is embedded as
 * JSON in <script type="application/json" id="beamspy-data">. Every string in
 * that JSON goes through bs_json_write_string, which writes '<' as \u003c,
 * so no frame name can end the element; the script inserts names with
 * textContent only.
 *
 * The data is compact: the frame table once, then per process four parallel
 * arrays (distance to the parent, frame id, self time, calls); the page
 * computes totals, merges and lays out by itself. Numbers go through a small
 * buffer instead of one fprintf each: a 100,000-node profile is 400,000
 * numbers. */
#include "writers.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "assets/profile.html.css.h"
#include "assets/profile.html.js.h"
#include "assets/profile.html.transforms.js.h"
#include "../common/json_escape.h"

#define DEFAULT_TITLE "beamspy profile"

/* Decimal numbers separated by commas, written in 4 KiB chunks. */
typedef struct number_list {
    FILE *out;
    size_t len;
    int first;
    char buf[4096];
} number_list;

static void numbers_begin(number_list *nl, FILE *out)
{
    nl->out = out;
    nl->len = 0;
    nl->first = 1;
    putc('[', out);
}

static void numbers_put(number_list *nl, uint64_t v)
{
    char digits[24];
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    if (nl->len + n + 1 > sizeof nl->buf) {
        fwrite(nl->buf, 1, nl->len, nl->out);
        nl->len = 0;
    }
    if (!nl->first)
        nl->buf[nl->len++] = ',';
    nl->first = 0;
    while (n)
        nl->buf[nl->len++] = digits[--n];
}

static void numbers_end(number_list *nl)
{
    fwrite(nl->buf, 1, nl->len, nl->out);
    putc(']', nl->out);
}

/* ,"key":"value" — the key is always a literal of ours, never user text. */
static void json_string_field(FILE *out, const char *key, const char *value)
{
    fprintf(out, ",\"%s\":", key);
    bs_json_write_string(out, value);
}

/* A fixed-size text field of the profile, NUL-terminated or not. */
static void json_fixed_field(FILE *out, const char *key, const char *field, size_t cap)
{
    char copy[sizeof ((bs_profile_meta *)0)->options]; /* the longest field */
    size_t n = strnlen(field, cap);
    if (n >= sizeof copy)
        n = sizeof copy - 1;
    memcpy(copy, field, n);
    copy[n] = '\0';
    json_string_field(out, key, copy);
}

static void write_settings(FILE *out, const bs_profile *p, const bs_render_opts *o)
{
    const char *title = o->title && *o->title ? o->title : DEFAULT_TITLE;
    fputs("\"version\":1", out);
    json_string_field(out, "title", title);
    json_string_field(out, "subtitle", o->subtitle ? o->subtitle : "");
    json_string_field(out, "unit", p->unit == BS_UNIT_COUNT ? "count" : "ns");
    /* Recorded times are scaled to µs/ms/s by the page; a count_name only
     * names unitless weights. */
    json_string_field(out, "countName", o->count_name && *o->count_name ? o->count_name : "samples");
    json_string_field(out, "palette", o->palette == BS_PALETTE_BEAM ? "beam" : "hot");
    fprintf(out, ",\"hideSleep\":%s", o->drop_sleep ? "true" : "false");
    fprintf(out, ",\"orderedByCpu\":%s", p->ordered_by_cpu ? "true" : "false");
    fprintf(out, ",\"sleepFrame\":%" PRIu32 ",\"gcFrame\":%" PRIu32, p->sleep_frame, p->gc_frame);
    fprintf(out, ",\"waitFrame\":%" PRIu32 ",\"runnableFrame\":%" PRIu32, p->wait_frame, p->runnable_frame);
}

static void write_meta(FILE *out, const bs_profile *p)
{
    const bs_profile_meta *m = &p->meta;
    fprintf(out, ",\"meta\":{\"startUnixUs\":%" PRId64 ",\"durationNs\":%" PRIu64, m->start_unix_us,
            p->duration_ns);
    json_fixed_field(out, "node", m->node, sizeof m->node);
    json_fixed_field(out, "otp", m->otp_release, sizeof m->otp_release);
    json_fixed_field(out, "source", m->source, sizeof m->source);
    json_fixed_field(out, "options", m->options, sizeof m->options);
    json_fixed_field(out, "truncated", p->truncated, sizeof p->truncated);
    json_fixed_field(out, "notes", p->notes, sizeof p->notes);
    char times[BS_COMPENSATION_TEXT_CAP];
    bs_compensation_text(&p->compensation, times, sizeof times);
    json_fixed_field(out, "times", times, sizeof times);
    fprintf(out, ",\"hasTimeline\":%s,\"timelineTruncated\":%s}", p->has_timeline ? "true" : "false",
            p->timeline_truncated ? "true" : "false");
}

static void write_frames(FILE *out, const bs_profile *p)
{
    fputs(",\n\"frames\":[", out);
    for (uint32_t i = 0; i < p->frames.n; i++) {
        if (i)
            fputs(i % 64 ? "," : ",\n", out); /* short lines for editors and diffs */
        bs_json_write_string(out, bs_frame_name(&p->frames, i));
    }
    putc(']', out);
}

/* The tree contract the page relies on: parents before children, frame ids
 * in the table. A broken tree is refused rather than drawn wrong. */
static int tree_is_valid(const bs_profile *p, const bs_ptree *t)
{
    for (uint32_t i = 0; i < t->n_nodes; i++) {
        const bs_pnode *n = &t->nodes[i];
        if (n->frame >= p->frames.n || (i > 0 && n->parent >= i))
            return 0;
    }
    return 1;
}

static void write_tree(FILE *out, const bs_ptree *t, number_list *nl)
{
    fprintf(out, "{\"syntheticRoot\":%s,\"events\":%" PRIu64 ",\"dropped\":%" PRIu64 ",\n\"parent\":",
            t->synthetic_root ? "true" : "false", t->events, t->dropped);
    numbers_begin(nl, out);
    for (uint32_t i = 0; i < t->n_nodes; i++)
        numbers_put(nl, i ? i - t->nodes[i].parent : 0);
    numbers_end(nl);
    fputs(",\n\"frame\":", out);
    numbers_begin(nl, out);
    for (uint32_t i = 0; i < t->n_nodes; i++)
        numbers_put(nl, t->nodes[i].frame);
    numbers_end(nl);
    fputs(",\n\"self\":", out);
    numbers_begin(nl, out);
    for (uint32_t i = 0; i < t->n_nodes; i++)
        numbers_put(nl, t->nodes[i].self_ns);
    numbers_end(nl);
    fputs(",\n\"calls\":", out);
    numbers_begin(nl, out);
    for (uint32_t i = 0; i < t->n_nodes; i++)
        numbers_put(nl, t->nodes[i].calls);
    numbers_end(nl);
    putc('}', out);
}

static void write_head(FILE *out, const char *title)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n", out);
    /* No request of any kind, and no script but the two below. */
    fprintf(out,
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "script-src 'sha256-%s' 'sha256-%s'; style-src 'unsafe-inline'\">\n",
            BS_ASSET_profile_html_transforms_js_sha256, BS_ASSET_profile_html_js_sha256);
    fputs("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>", out);
    for (const char *s = title; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default: putc(*s, out); break;
        }
    }
    fputs("</title>\n<style>\n", out);
    fputs(BS_ASSET_profile_html_css, out);
    fputs("</style>\n</head>\n<body>\n"
          "<noscript>This profile needs JavaScript to be shown.</noscript>\n", out);
}

int bs_write_html(FILE *out, const bs_profile *p, const bs_render_opts *opts)
{
    bs_render_opts o = opts ? *opts : (bs_render_opts){0};
    for (uint32_t i = 0; i < p->n_trees; i++) {
        if (!tree_is_valid(p, &p->trees[i])) {
            errno = EINVAL;
            return -1;
        }
    }
    /* The page shows the title; it comes from the user, so it is escaped for
     * the <title> element here and set with textContent by the script. */
    write_head(out, o.title && *o.title ? o.title : DEFAULT_TITLE);
    fputs("<script type=\"application/json\" id=\"beamspy-data\">{", out);
    write_settings(out, p, &o);
    write_meta(out, p);
    write_frames(out, p);
    fputs(",\n\"processes\":[", out);
    number_list nl;
    for (uint32_t i = 0; i < p->n_trees; i++) {
        if (i)
            fputs(",\n", out);
        write_tree(out, &p->trees[i], &nl);
    }
    /* The transforms first: the page's script uses what they define. */
    fputs("]}</script>\n<script>", out);
    fputs(BS_ASSET_profile_html_transforms_js, out);
    fputs("</script>\n<script>", out);
    fputs(BS_ASSET_profile_html_js, out);
    fputs("</script>\n</body>\n</html>\n", out);
    return ferror(out) ? -1 : 0;
}
