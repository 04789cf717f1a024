/* svg_document.h — the SVG document around the frames of a flame graph.
 *
 * Shared by the flame graph (svg.c) and the differential graph
 * (diff_svg.c): geometry, the title and subtitle, the embedded stylesheet
 * and script (c_src/writers/assets/svg_flamegraph.{css,js}), the controls
 * (Reset Zoom, Search, ignore case, Matched) and one <g> per frame with a <title>
 * tooltip, a <rect> and a <text> label. The element and id contract is
 * flamegraph.pl's (#frames, details, unzoom, search, ignorecase, matched,
 * title), so tools that drive those files drive ours; the script is ours.
 * Each frame's <g> carries its exact position in profile units (data-x,
 * data-w) so zooming needs no rounded pixel values.
 *
 * Size is bounded: frames narrower than min_width px are left out with
 * their children; when more than BS_SVG_MAX_FRAMES would remain, the
 * threshold is raised to keep the widest ones (see choose_pruning in
 * svg_document.c) and the subtitle says so; stacks are cut at
 * BS_SVG_MAX_DEPTH rows. */
#ifndef BS_SVG_DOCUMENT_H
#define BS_SVG_DOCUMENT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../engine/profile.h"
#include "flame_layout.h"

/* Chromium opens an SVG at roughly 0.1-0.2 ms per frame (measured with
 * generated SVGs): 20,000 frames is a 2-4 s open and about 4-5 MB. Past it, the
 * narrowest frames go (see choose_pruning in svg_document.c), but frames of
 * BS_SVG_VISIBLE_WIDTH px or more only to stay under the hard cap. */
#define BS_SVG_MAX_FRAMES 20000
#define BS_SVG_HARD_MAX_FRAMES 80000
#define BS_SVG_VISIBLE_WIDTH 1.0
/* Rows below the root; deeper frames are left out (as the folded writer's
 * "[deeper]" cut) and the subtitle says so. */
#define BS_SVG_MAX_DEPTH 1024

/* What differs between kinds of graph: a frame's colour and its tooltip. */
typedef struct bs_svg_style {
    /* Writes "rgb(r,g,b)" for f into buf. */
    void (*fill)(void *ctx, const bs_flame_frame *f, char *buf, size_t cap);
    /* Writes the tooltip text that follows the name, XML-escaped, e.g.
     * " (self 1.20 ms, total 3.00 ms, 4 calls, 12.50%)". grand_total is the
     * value of "all". */
    void (*describe)(void *ctx, FILE *out, const bs_flame_frame *f, uint64_t grand_total);
    void *ctx;
} bs_svg_style;

typedef struct bs_svg_doc {
    const bs_flame_layout *layout;
    int chart;              /* walk in time order (layout's chart order) */
    const char *title;      /* heading, as is */
    const char *subtitle;   /* the user's subtitle, or NULL */
    const char *note;       /* what the writer must tell (fallbacks, truncation), or NULL */
    unsigned width;         /* px; 0: 1200 */
    double min_width;       /* px; <= 0: 0.1 */
    int inverted;           /* root at the top */
    bs_svg_style style;
} bs_svg_doc;

/* Writes the whole document. Returns 0, or -1 on a write or allocation
 * error. Deterministic. */
int bs_svg_write_document(FILE *out, const bs_svg_doc *d);

/* An amount of the profile's unit as people read it. Nanosecond profiles:
 * "0.850 µs", "12.3 µs", "4.56 ms", "1.234 s" when count_name is NULL, else
 * the number of microseconds followed by count_name. Unitless profiles: the
 * count followed by count_name (default "samples"). */
void bs_svg_format_amount(char *buf, size_t cap, uint64_t v, bs_unit unit, const char *count_name);

#endif
