/* fuzz_perf_map.c — libFuzzer target for the JIT's perf map
 * (cpu/perf_map.h).
 *
 * Each line of the input (up to each newline) goes through
 * bs_perf_map_parse_line: refused with a column inside the line and a
 * reason, or accepted with a non-empty range that does not wrap, names that
 * are NUL-terminated and no longer than the line, an arity of at most 255
 * and a module for Erlang names. Then the input is a map file, written in
 * two parts with a read after each (the first part may end inside a line),
 * under a small memory cap: the cap holds, ranges stay sorted and apart,
 * and the last whole line, when nothing was dropped, names its own range. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu/perf_map.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bs_perf_line line, last;

static void write_file(const char *path, const char *mode, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, mode);
    CHECK(f != NULL);
    CHECK(fwrite(data, 1, size, f) == size);
    CHECK(fclose(f) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    int have_last = 0;
    size_t at = 0;
    while (at < size) {
        const char *nl = memchr(text + at, '\n', size - at);
        if (!nl)
            break;
        size_t len = (size_t)(nl - (text + at));
        size_t col = (size_t)-1;
        const char *why = NULL;
        if (bs_perf_map_parse_line(text + at, len, &line, &col, &why) == 0) {
            CHECK(line.size > 0 && line.start + line.size > line.start);
            CHECK(line.function && strlen(line.function) <= len);
            if (line.kind == BS_PERF_ERLANG) {
                CHECK(line.module && line.module[0] && line.function[0]);
                CHECK(strlen(line.module) + strlen(line.function) <= len);
                CHECK(line.arity <= 255);
            } else {
                CHECK(line.kind == BS_PERF_OTHER && !line.module && line.arity == 0 && !line.prologue);
            }
            last = line;
            have_last = 1;
        } else {
            CHECK(why && why[0]);
            CHECK(col <= len || (len > BS_PERF_MAP_MAX_LINE && col == BS_PERF_MAP_MAX_LINE));
            have_last = 0;
        }
        at += len + 1;
    }

    char path[64];
    snprintf(path, sizeof path, "/tmp/bs_fuzz_perf_map_%d.map", (int)getpid());
    size_t half = size / 2;
    write_file(path, "wb", data, half);
    bs_perf_map m;
    size_t cap = 96 * 1024;
    CHECK(bs_perf_map_init(&m, path, cap) == 0);
    CHECK(bs_perf_map_read(&m, 0) >= 0);
    write_file(path, "ab", data + half, size - half);
    CHECK(bs_perf_map_read(&m, 1) >= 0);
    unlink(path);
    CHECK(m.stats.bytes <= cap);
    CHECK(m.offset <= size);
    for (size_t i = 0; i < m.n_ranges; i++) {
        const struct bs_perf_range *r = &m.ranges[i];
        CHECK(r->start < r->end && r->entry < m.n_entries);
        if (i + 1 < m.n_ranges)
            CHECK(r->end <= r[1].start);
    }
    if (have_last && m.stats.dropped == 0) {
        const bs_perf_entry *e = bs_perf_map_find(&m, last.start);
        const bs_perf_entry *f = bs_perf_map_find(&m, last.start + last.size - 1);
        CHECK(e && e == f && e->kind == (uint8_t)last.kind && strcmp(e->function, last.function) == 0);
        CHECK(e->arity == last.arity && e->prologue == (uint8_t)last.prologue);
        CHECK(!last.module || (e->module && strcmp(e->module, last.module) == 0));
    }
    bs_perf_map_free(&m);
    return 0;
}
