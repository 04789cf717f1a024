/* fuzz_seq.c — libFuzzer target for sequence flows: what collectors on
 * other nodes send (message texts, names, serials) merged and written.
 *
 * The input is lines of tab-separated fields, as a collector's events:
 * KIND PREV CUR FROM_NODE FROM_PID TO_NODE TO_PID TEXT (KIND s, r, or n
 * for a name: NODE PID NAME); the first byte picks the options (noise kept,
 * participant and label caps). Whatever comes in: the merge succeeds, each
 * event is in at most one message, message endpoints are participants,
 * the JSON and the Chrome trace parse, the SVG is well-formed XML, and no
 * Mermaid message line holds a raw ';', '#' or '&' outside an entity, a
 * control character, or a line break. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/seq_flow.h"
#include "writers/seq_writers.h"
#include "json_check.h"
#include "xml_check.h"

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                 \
        }                                                                            \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef int (*seq_writer)(FILE *, const bs_seq_diagram *, const bs_seq_opts *, bs_seq_write_info *);

static char *write_mem(seq_writer w, const bs_seq_diagram *d, const bs_seq_opts *o, size_t *len)
{
    char *text = NULL;
    FILE *out = open_memstream(&text, len);
    CHECK(out != NULL);
    CHECK(w(out, d, o, NULL) == 0);
    CHECK(fclose(out) == 0);
    return text;
}

/* Splits line at tabs into at most max fields (NUL-terminated in place). */
static int split(char *line, char **fields, int max)
{
    int n = 0;
    fields[n++] = line;
    for (char *p = line; *p && n < max; p++)
        if (*p == '\t') {
            *p = '\0';
            fields[n++] = p + 1;
        }
    return n;
}

static void check_mermaid(const char *text)
{
    const char *line = text;
    while (*line) {
        const char *end = strchr(line, '\n');
        CHECK(end != NULL); /* every line ends */
        if (line[0] == ' ' && line[4] == 'P' && strstr(line, ": ") && strstr(line, ": ") < end) {
            for (const char *p = strstr(line, ": ") + 2; p < end; p++) {
                CHECK((unsigned char)*p >= 0x20 && *p != 0x7F);
                if (*p == '#')
                    CHECK(p[1] == 'l' || p[1] == 'g' || (p[1] >= '0' && p[1] <= '9'));
                if (*p == ';') { /* only the end of an entity */
                    const char *q = p - 1;
                    while (q > line && *q != '#' && *q != ' ')
                        q--;
                    CHECK(*q == '#');
                }
                CHECK(*p != '&');
            }
        }
        line = end + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    bs_seq_opts o = {0};
    o.keep_noise = data[0] & 1;
    o.max_participants = (size_t)((data[0] >> 1) & 7);
    o.label_chars = (data[0] & 0x80) ? 8 : 0;
    char *text = malloc(size);
    CHECK(text != NULL);
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    bs_seq_flow f;
    bs_seq_flow_init(&f, 64);
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *fl[8];
        int n = split(line, fl, 8);
        if (fl[0][0] == 'n' && n >= 3) {
            CHECK(bs_seq_flow_name(&f, fl[1], fl[2], n > 3 ? fl[3] : "") == 0);
            continue;
        }
        if (n < 8)
            continue;
        bs_seq_event e = {fl[0][0] == 's' ? BS_SEQ_SEND : BS_SEQ_RECV, strtoull(fl[1], NULL, 10),
                          strtoull(fl[2], NULL, 10), 0, "1", fl[3], fl[4], fl[5], fl[6], fl[7]};
        CHECK(bs_seq_flow_add(&f, &e) >= 0);
    }
    bs_seq_diagram d;
    int bad = 0;
    CHECK(bs_seq_merge(&f, &o, &d, &bad) == 0);
    CHECK(d.n_msgs <= f.n_events);
    for (size_t i = 0; i < d.n_msgs; i++)
        CHECK(d.msgs[i].from < d.n_parts && d.msgs[i].to < d.n_parts && (d.msgs[i].sent || d.msgs[i].received));
    size_t len;
    char *out = write_mem(bs_write_seq_mermaid, &d, &o, &len);
    check_mermaid(out);
    free(out);
    char why[200];
    jc_val v;
    out = write_mem(bs_write_seq_json, &d, &o, &len);
    CHECK(jc_parse(out, len, &v, why, sizeof why) == 0);
    jc_free(&v);
    free(out);
    out = write_mem(bs_write_seq_chrome, &d, &o, &len);
    CHECK(jc_parse(out, len, &v, why, sizeof why) == 0);
    jc_free(&v);
    free(out);
    out = write_mem(bs_write_seq_svg, &d, &o, &len);
    CHECK(xc_check(out, len, why, sizeof why) == 0);
    free(out);
    bs_seq_diagram_free(&d);
    bs_seq_flow_free(&f);
    free(text);
    return 0;
}
