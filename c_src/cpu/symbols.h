/* symbols.h — names any code address of an OS process (the VM's own, for
 * its CPU samples): JIT code through the JIT's perf map (perf_map.h),
 * native code through /proc/<ospid>/maps and the ELF symbols of the mapped
 * file.
 *
 * Native addresses: the mapping that holds the address gives the file; its
 * symbols are loaded once per file (the first time one of its addresses is
 * resolved) and searched by binary search. With libelf (BS_HAVE_LIBELF, the
 * Makefile defines it when libelf-dev is there) they are the FUNC and IFUNC
 * symbols of .symtab when present and of .dynsym (a stripped file's
 * .symtab is read from its separate debug file, debug_file.h); an address gets the
 * nearest symbol at or before it *whose size covers it* (a symbol without
 * size covers nothing but its own address: a stripped static function after
 * it is not charged to it). Without libelf, dladdr() names what the dynamic
 * linker knows (exported symbols of loaded objects, no sizes), and
 * bs_symbols_backend() says so. An address with no symbol keeps its object
 * and offset: never dropped. offset is then the address in the file's ELF
 * virtual addresses (the load bias taken off, from the PT_LOAD segment that
 * maps the mapping's file offset: what addr2line -e <object> takes); when the
 * file cannot be read as ELF, the file offset.
 * /proc/<ospid>/maps is read again when an address falls outside every
 * known mapping, at most once per BS_SYMBOLS_REMAP_MS.
 *
 * JIT addresses: the perf map /tmp/perf-<ospid>.map is read at init and
 * again on a miss (perf_map.h: at most every BS_PERF_MAP_REREAD_MS). A
 * function's -CodeInfoPrologue resolves as the function itself. An
 * anonymous mapping's address not in the map is BS_SYM_UNKNOWN without an
 * object.
 *
 * Memory: max_bytes bounds the perf map's table (perf_map.h) and, apart,
 * the native symbols (each object's table and names); an object whose
 * symbols would pass it gets none (its addresses still resolve to object +
 * offset) and stats.objects_over_cap counts it. Not thread-safe: one caller
 * at a time. Resolving never allocates once an object's symbols are in. */
#ifndef BS_CPU_SYMBOLS_H
#define BS_CPU_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "cpu/perf_map.h"

#define BS_SYMBOLS_REMAP_MS 200

typedef enum { BS_SYM_ERLANG, BS_SYM_JIT_OTHER, BS_SYM_NATIVE, BS_SYM_UNKNOWN } bs_sym_kind;

typedef struct bs_symbol {
    bs_sym_kind kind;
    const char *module;   /* ERLANG: "lists", "Elixir.Foo.Bar" (owned by the table) */
    const char *function; /* ERLANG: "keyfind", "-filter/2-lc$^0/1-0-" (unquoted) */
    unsigned arity;
    const char *name;     /* JIT_OTHER: "global::apply_fun_shared", "lists::codeHeader";
                             NATIVE: the symbol ("erts_garbage_collect_nobump") or NULL */
    const char *object;   /* NATIVE/UNKNOWN-in-a-file: basename ("beam.smp", "libc.so.6") */
    uint64_t offset;      /* NATIVE: from the symbol (or from the object's load base without one) */
    uint64_t start;       /* ERLANG, JIT_OTHER: where the perf map's range holding the address starts */
} bs_symbol;

typedef struct bs_symbols_stats {
    uint64_t resolved;         /* calls of bs_symbols_resolve */
    uint64_t unknown;          /* of them, BS_SYM_UNKNOWN */
    uint64_t maps_reads;       /* reads of /proc/<ospid>/maps */
    uint64_t objects;          /* files mapped executable */
    uint64_t objects_loaded;   /* of them, whose symbols were read */
    uint64_t objects_failed;   /* of them, not readable as ELF (offset only) */
    uint64_t objects_over_cap; /* of them, whose symbols would pass max_bytes */
    uint64_t debug_files;      /* separate debug files read (debug_file.h) */
    uint64_t symbols;          /* symbols held */
    uint64_t bytes;            /* memory for native symbols and mappings */
} bs_symbols_stats;

struct bs_sym_object;
struct bs_sym_mapping;

typedef struct bs_symbols {
    int ospid;
    size_t max_bytes;
    char maps_path[64];
    char debug_dir[128];          /* where debug files are looked for: BS_DEBUG_DIR (tests change it) */
    bs_perf_map perf;
    int perf_ok;                  /* the map was read at least once */
    struct bs_sym_mapping *maps;  /* executable mappings, sorted */
    size_t n_maps;
    struct bs_sym_object **objects;
    size_t n_objects;
    uint64_t last_maps_ms;
    uint64_t maps_generation;     /* bs_loaded_objects_generation() at the last read */
    bs_symbols_stats stats;
} bs_symbols;

/* 0, or -1 with why (a sentence): /proc/<ospid>/maps unreadable, out of
 * memory. A missing perf map is not an error (bs_symbols_perf_map_stats
 * says read_errno): JIT addresses are then UNKNOWN. */
int bs_symbols_init(bs_symbols *s, int ospid, size_t max_bytes, char *why, size_t cap);
/* The same with the perf map at perf_map_path (tests; NULL: the default). */
int bs_symbols_init_with_map(bs_symbols *s, int ospid, const char *perf_map_path, size_t max_bytes,
                             char *why, size_t cap);
/* Fills *out (every field; strings owned by s until bs_symbols_free) and
 * returns out->kind. */
int bs_symbols_resolve(bs_symbols *s, uint64_t addr, bs_symbol *out);
void bs_symbols_free(bs_symbols *s);
/* "libelf (.symtab and .dynsym)" or "dladdr (dynamic symbols only: built without libelf)". */
const char *bs_symbols_backend(void);
const bs_perf_map_stats *bs_symbols_perf_map_stats(const bs_symbols *s);

#endif
