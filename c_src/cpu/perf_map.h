/* perf_map.h — the JIT's perf map (/tmp/perf-<ospid>.map, written by
 * `erl +JPperf true` on OTP 25 and `+JPperf map` from OTP 26): parses its
 * lines, reads the file incrementally as it grows, and finds the entry that
 * covers an address.
 *
 * A line is `<start> <size> <name>\n`: start hex with or without 0x, size
 * hex, name the rest of the line. The names the JIT writes (OTP 25 to 29):
 *   $lists:keyfind/3                     an Erlang function
 *   $lists:keyfind/3-CodeInfoPrologue    the word-aligned header in front of
 *                                        it: resolved as the function itself
 *   $'Elixir.Foo.Bar':baz/2              quoted atoms (module or function),
 *   $lists:'-filter/2-lc$^0/1-0-'/1      unquoted here; escapes \' \\ \n \t
 *   $m:'a\'b'/0  $m:'\316\261'/0         \r \v \b \f \e \s \d \ooo \xHH
 *                                        \x{H..} \^X are decoded, UTF-8 kept
 *   $global::apply_fun_shared            the JIT's own code (shared
 *   $lists::codeHeader / ::codeFooter    fragments, module headers/footers):
 *                                        BS_PERF_OTHER, name without the $
 * Any other non-empty name (another JIT's map, a name this parser does not
 * understand as an Erlang function) is kept as BS_PERF_OTHER with its whole
 * text, so the address still gets a name. Refused as malformed (with the
 * column and why): no hex start or size, a size of 0 or a range past 2^64,
 * no name, a NUL or control byte in the line, a line longer than
 * BS_PERF_MAP_MAX_LINE.
 *
 * The table keeps non-overlapping ranges sorted by address (binary search);
 * where ranges overlap (code purged and its memory reused by a later load)
 * the later line wins for the overlapping part. Appends are mostly but not
 * always increasing (each module's code is allocated on its own): every read
 * merges its new lines with the table in O(n log n).
 *
 * Memory: counted against max_bytes are the entry table at its capacity
 * (it doubles), 72 bytes an entry (the entry and room for the two ranges a
 * split can make of it), and the names in 64 KiB chunks (a module's name
 * once for its consecutive lines). A line that would pass max_bytes is not
 * added and is counted in `dropped` (the caller says so). Measured: OTP 25's
 * map at boot, 16,161 lines, counts 1.4 MB; OTP 29's, 18,825 lines, 2.7 MB
 * (the table just doubled): 64 MiB holds about 500,000 lines. A read that
 * adds lines also borrows, until it returns, 76 bytes per range (old and
 * new) and 40 per new line for the merge, plus a 64 KiB read buffer.
 * Not thread-safe: one caller at a time. */
#ifndef BS_CPU_PERF_MAP_H
#define BS_CPU_PERF_MAP_H

#include <stddef.h>
#include <stdint.h>

/* Longest line accepted, newline excluded. */
#define BS_PERF_MAP_MAX_LINE 4096
/* bs_perf_map_lookup rereads the file on a miss at most once per this many
 * milliseconds (a map that does not cover an address usually still does not
 * a moment later: modules load rarely). */
#define BS_PERF_MAP_REREAD_MS 200

typedef enum { BS_PERF_ERLANG, BS_PERF_OTHER } bs_perf_kind;

/* One parsed line. module and function point into text (NUL-terminated,
 * unquoted); for BS_PERF_OTHER module is NULL and function is the name. */
typedef struct bs_perf_line {
    uint64_t start, size;
    bs_perf_kind kind;
    int prologue;           /* the -CodeInfoPrologue of the function */
    const char *module;
    const char *function;
    unsigned arity;
    char text[BS_PERF_MAP_MAX_LINE + 2];
} bs_perf_line;

/* Parses one line (without its newline): 0 and *out filled, or -1 with
 * *column (0-based byte in line) and *why (a static string) set. Pure: it
 * reads only line[0..len). */
int bs_perf_map_parse_line(const char *line, size_t len, bs_perf_line *out, size_t *column, const char **why);

/* An entry of the table; names owned by the table until bs_perf_map_free. */
typedef struct bs_perf_entry {
    const char *module;   /* NULL for BS_PERF_OTHER */
    const char *function; /* the function, or the OTHER name */
    uint32_t arity;
    uint8_t kind;         /* bs_perf_kind */
    uint8_t prologue;
} bs_perf_entry;

typedef struct bs_perf_map_stats {
    uint64_t lines;        /* lines added to the table */
    uint64_t malformed;    /* lines refused */
    uint64_t dropped;      /* lines not added: max_bytes reached */
    uint64_t reads;        /* reads of the file that found it */
    uint64_t ranges;       /* ranges in the table now */
    uint64_t bytes;        /* memory held now (counted against max_bytes) */
    int read_errno;        /* errno of the last failed open/read, else 0 */
    /* the first malformed line: its number (1-based) and column, and why */
    uint64_t bad_line;
    size_t bad_column;
    const char *bad_why;
} bs_perf_map_stats;

/* A piece of the address space and the entry that names it. */
struct bs_perf_range {
    uint64_t start, end; /* [start, end) */
    uint32_t entry;      /* index in entries: a later line has a larger one */
};
struct bs_perf_chunk;

typedef struct bs_perf_map {
    char *path;
    size_t max_bytes;
    uint64_t offset;       /* bytes of whole lines read so far */
    uint64_t line_no;      /* lines seen so far (for bad_line) */
    uint64_t last_read_ms;
    int have_read;
    bs_perf_entry *entries;
    size_t n_entries, cap_entries;
    struct bs_perf_range *ranges; /* sorted, non-overlapping */
    size_t n_ranges;
    struct bs_perf_chunk *chunks; /* the names */
    const char *last_module;
    bs_perf_map_stats stats;
    bs_perf_line scratch;
} bs_perf_map;

/* 0, or -1 (out of memory). Reads nothing yet. */
int bs_perf_map_init(bs_perf_map *m, const char *path, size_t max_bytes);
void bs_perf_map_free(bs_perf_map *m);
/* Reads the lines appended since the last read (a partial last line is left
 * for the next one): the number of lines added, or -1 with errno (the file
 * could not be opened or read, or memory ran out; stats.read_errno). */
long bs_perf_map_read(bs_perf_map *m, uint64_t now_ms);
/* The entry covering addr, or NULL; never reads. */
const bs_perf_entry *bs_perf_map_find(const bs_perf_map *m, uint64_t addr);
/* Where the range covering addr starts (a line's start, unless a later line
 * covers it), or 0; never reads. */
uint64_t bs_perf_map_start(const bs_perf_map *m, uint64_t addr);
/* Where the lowest range named name (a line of no Erlang function, such as
 * "global::garbage_collect") starts, its end in *end; 0 when there is none.
 * Never reads; a scan of every range. */
uint64_t bs_perf_map_named(const bs_perf_map *m, const char *name, uint64_t *end);
/* bs_perf_map_find, and on a miss a read first when the last one was
 * BS_PERF_MAP_REREAD_MS or more before now_ms (or there was none). */
const bs_perf_entry *bs_perf_map_lookup(bs_perf_map *m, uint64_t addr, uint64_t now_ms);

#endif
