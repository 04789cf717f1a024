/* symbols.c — resolves code addresses: the JIT's perf map first, then the
 * mapping of /proc/<ospid>/maps that holds the address and its file's ELF
 * symbols (libelf) or, built without libelf, dladdr(). See symbols.h. */
#define _GNU_SOURCE /* dladdr */
#include "cpu/symbols.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpu/debug_file.h"
#include "cpu/libelf_dl.h"
#include "cpu/loaded_objects.h"

#define MAX_LOADS 16 /* PT_LOAD segments kept per object (ld makes 2-4) */

typedef struct sym {
    uint64_t value, size; /* ELF virtual address */
    const char *name;
    int rank;             /* among symbols at one address: lower is kept */
} sym;

typedef struct load_seg {
    uint64_t vaddr, offset, memsz;
} load_seg;

struct bs_sym_object {
    char *path;
    const char *base;     /* basename, inside path */
    int tried;            /* symbols read (or tried) */
    int elf_ok;           /* segments known */
    sym *syms;
    size_t n_syms;
    char *names;
    load_seg loads[MAX_LOADS];
    size_t n_loads;
};

struct bs_sym_mapping {
    uint64_t start, end, offset;
    int exec;
    struct bs_sym_object *object; /* NULL: anonymous or a pseudo-file */
    const char *pseudo;           /* "[vdso]", "[heap]" ..., in object-less mappings: NULL */
};

static uint64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

const char *bs_symbols_backend(void)
{
#ifdef BS_HAVE_LIBELF
    return bs_libelf() ? "libelf (.symtab and .dynsym)" : "file names only (this system has no libelf.so.1)";
#else
    return "dladdr (dynamic symbols only: built without libelf)";
#endif
}

const bs_perf_map_stats *bs_symbols_perf_map_stats(const bs_symbols *s)
{
    return &s->perf.stats;
}

/* --- objects ----------------------------------------------------------- */

static struct bs_sym_object *object_of(bs_symbols *s, const char *path)
{
    for (size_t i = 0; i < s->n_objects; i++)
        if (strcmp(s->objects[i]->path, path) == 0)
            return s->objects[i];
    size_t cost = sizeof(struct bs_sym_object) + strlen(path) + 1 + sizeof(void *);
    if (s->stats.bytes + cost > s->max_bytes)
        return NULL;
    struct bs_sym_object **grown = realloc(s->objects, (s->n_objects + 1) * sizeof *grown);
    if (!grown)
        return NULL;
    s->objects = grown;
    struct bs_sym_object *o = calloc(1, sizeof *o);
    if (!o || !(o->path = strdup(path))) {
        free(o);
        return NULL;
    }
    const char *slash = strrchr(o->path, '/');
    o->base = slash ? slash + 1 : o->path;
    s->objects[s->n_objects++] = o;
    s->stats.objects++;
    s->stats.bytes += cost;
    return o;
}

static void object_free(struct bs_sym_object *o)
{
    free(o->syms);
    free(o->names);
    free(o->path);
    free(o);
}

#ifdef BS_HAVE_LIBELF
static size_t leading_underscores(const char *name)
{
    size_t k = 0;
    while (name[k] == '_')
        k++;
    return k;
}

/* By address, then the name kept for an address first: the choice perf
 * makes among aliases (its choose_best_symbol), so that both tools name a
 * function alike: sized before unsized, not weak before weak, global
 * before local (rank_of), then fewer leading underscores
 * (pthread_mutex_lock, not __pthread_mutex_lock), then the longer name. */
static int sym_order(const void *a, const void *b)
{
    const sym *x = a, *y = b;
    if (x->value != y->value)
        return x->value < y->value ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank - y->rank;
    size_t ux = leading_underscores(x->name), uy = leading_underscores(y->name);
    if (ux != uy)
        return ux < uy ? -1 : 1;
    size_t lx = strlen(x->name), ly = strlen(y->name);
    if (lx != ly)
        return lx > ly ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Rank of a symbol among those at its address: sized before unsized,
 * global before local before weak. */
static int rank_of(const GElf_Sym *e)
{
    int bind = GELF_ST_BIND(e->st_info);
    return (e->st_size ? 0 : 4) + (bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 2 : 1);
}

static int wanted(const GElf_Sym *e)
{
    int type = GELF_ST_TYPE(e->st_info);
    return (type == STT_FUNC || type == STT_GNU_IFUNC) && e->st_shndx != SHN_UNDEF && e->st_value != 0;
}

static int has_symtab(const bs_libelf_fns *L, Elf *e)
{
    Elf_Scn *scn = NULL;
    while ((scn = L->elf_nextscn(e, scn)) != NULL) {
        GElf_Shdr sh;
        if (L->gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
            return 1;
    }
    return 0;
}

/* The separate debug file of e (debug_file.h), opened: its Elf and, in
 * *fd, its descriptor; or NULL. */
static Elf *debug_elf(const bs_symbols *s, const bs_libelf_fns *L, Elf *e, int *fd)
{
    uint8_t id[BS_BUILD_ID_MAX], did[BS_BUILD_ID_MAX];
    size_t len = bs_elf_build_id(L, e, id);
    char path[sizeof s->debug_dir + 2 * BS_BUILD_ID_MAX + 32];
    if (len == 0 || bs_debug_file_path(s->debug_dir, id, len, path, sizeof path) < 0)
        return NULL;
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0)
        return NULL;
    Elf *d = L->elf_begin(*fd, ELF_C_READ_MMAP, NULL);
    if (d && L->elf_kind(d) == ELF_K_ELF && bs_elf_build_id(L, d, did) == len && memcmp(id, did, len) == 0)
        return d;
    if (d)
        L->elf_end(d);
    close(*fd);
    return NULL;
}

/* Pass 0 counts the FUNC symbols of e (.symtab, and .dynsym unless
 * symtab_only) and their names' bytes into *k and *nb; pass 1 copies them
 * into o from o->syms[*k] and o->names + *nb, within count and name_bytes. */
static void collect_symbols(const bs_libelf_fns *L, Elf *e, int symtab_only, struct bs_sym_object *o, int pass,
                            size_t count, size_t name_bytes, size_t *k, size_t *nb)
{
    Elf_Scn *scn = NULL;
    while ((scn = L->elf_nextscn(e, scn)) != NULL) {
        GElf_Shdr sh;
        if (!L->gelf_getshdr(scn, &sh) || sh.sh_entsize == 0 ||
            !(sh.sh_type == SHT_SYMTAB || (sh.sh_type == SHT_DYNSYM && !symtab_only)))
            continue;
        Elf_Data *d = L->elf_getdata(scn, NULL);
        if (!d)
            continue;
        size_t n = sh.sh_size / sh.sh_entsize;
        for (size_t i = 0; i < n; i++) {
            GElf_Sym es;
            if (!L->gelf_getsym(d, (int)i, &es) || !wanted(&es))
                continue;
            const char *name = L->elf_strptr(e, sh.sh_link, es.st_name);
            if (!name || !name[0])
                continue;
            size_t len = strlen(name) + 1;
            if (pass == 1) {
                if (*k >= count || *nb + len > name_bytes)
                    return; /* cannot happen: the same files twice */
                memcpy(o->names + *nb, name, len);
                o->syms[*k] = (sym){es.st_value, es.st_size, o->names + *nb, rank_of(&es)};
            }
            (*k)++;
            *nb += len;
        }
    }
}

/* Reads the PT_LOAD segments and the FUNC symbols of o's file and, when
 * the file has no .symtab (stripped), of its separate debug file's
 * .symtab (debug_file.h): the same virtual addresses. */
static void object_load(bs_symbols *s, struct bs_sym_object *o)
{
    o->tried = 1;
    const bs_libelf_fns *L = bs_libelf();
    if (!L) { /* no libelf.so.1 here: the file's name alone */
        s->stats.objects_failed++;
        return;
    }
    int fd = open(o->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        s->stats.objects_failed++;
        return;
    }
    L->elf_version(EV_CURRENT);
    Elf *e = L->elf_begin(fd, ELF_C_READ_MMAP, NULL), *dbg = NULL;
    int dbg_fd = -1;
    size_t phnum = 0;
    if (!e || L->elf_kind(e) != ELF_K_ELF || L->elf_getphdrnum(e, &phnum) != 0) {
        s->stats.objects_failed++;
        goto done;
    }
    for (size_t i = 0; i < phnum && o->n_loads < MAX_LOADS; i++) {
        GElf_Phdr ph;
        if (L->gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD)
            o->loads[o->n_loads++] = (load_seg){ph.p_vaddr, ph.p_offset, ph.p_memsz};
    }
    o->elf_ok = 1;
    if (!has_symtab(L, e) && (dbg = debug_elf(s, L, e, &dbg_fd)) != NULL)
        s->stats.debug_files++;
    /* Two passes: count, then copy (one allocation each for the table and
     * the names, checked against the cap first). */
    size_t count = 0, name_bytes = 0;
    for (int pass = 0; pass < 2; pass++) {
        size_t k = 0, nb = 0;
        collect_symbols(L, e, 0, o, pass, count, name_bytes, &k, &nb);
        if (dbg)
            collect_symbols(L, dbg, 1, o, pass, count, name_bytes, &k, &nb);
        if (pass == 0) {
            count = k;
            name_bytes = nb;
            size_t cost = count * sizeof(sym) + name_bytes;
            if (count == 0)
                break;
            if (s->stats.bytes + cost > s->max_bytes) {
                s->stats.objects_over_cap++;
                goto done;
            }
            o->syms = malloc(count * sizeof(sym));
            o->names = malloc(name_bytes);
            if (!o->syms || !o->names) {
                free(o->syms);
                free(o->names);
                o->syms = NULL;
                o->names = NULL;
                goto done;
            }
            s->stats.bytes += cost;
        } else {
            count = k;
        }
    }
    if (o->syms) {
        qsort(o->syms, count, sizeof(sym), sym_order);
        size_t u = 0; /* one symbol per address: the best ranked */
        for (size_t i = 0; i < count; i++)
            if (u == 0 || o->syms[u - 1].value != o->syms[i].value)
                o->syms[u++] = o->syms[i];
        o->n_syms = u;
        s->stats.symbols += u;
    }
    s->stats.objects_loaded++;
done:
    if (dbg)
        L->elf_end(dbg);
    if (dbg_fd >= 0)
        close(dbg_fd);
    if (e)
        L->elf_end(e);
    close(fd);
}

/* The ELF virtual address of addr in mapping m, from the PT_LOAD segment
 * that holds its file offset; 0 and *va, or -1. */
static int elf_vaddr(const struct bs_sym_mapping *m, uint64_t addr, uint64_t *va)
{
    const struct bs_sym_object *o = m->object;
    uint64_t fo = addr - m->start + m->offset;
    for (size_t i = 0; i < o->n_loads; i++) {
        const load_seg *l = &o->loads[i];
        if (fo >= l->offset && fo - l->offset < l->memsz) {
            *va = fo - l->offset + l->vaddr;
            return 0;
        }
    }
    return -1;
}

/* The symbol covering va, or NULL. */
static const sym *symbol_at(const struct bs_sym_object *o, uint64_t va)
{
    size_t lo = 0, hi = o->n_syms;
    while (lo < hi) { /* the first symbol with value > va */
        size_t mid = lo + (hi - lo) / 2;
        if (o->syms[mid].value <= va)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const sym *y = &o->syms[lo - 1];
    if (y->size ? va - y->value < y->size : va == y->value)
        return y;
    return NULL;
}
#endif

/* Fills out for a native address in mapping m. */
static void resolve_native(bs_symbols *s, const struct bs_sym_mapping *m, uint64_t addr, bs_symbol *out)
{
    struct bs_sym_object *o = m->object;
    out->kind = m->exec ? BS_SYM_NATIVE : BS_SYM_UNKNOWN;
    out->object = o->base;
    out->offset = addr - m->start + m->offset; /* the file offset, unless better below */
#ifdef BS_HAVE_LIBELF
    if (!o->tried)
        object_load(s, o);
    uint64_t va;
    if (o->elf_ok && elf_vaddr(m, addr, &va) == 0) {
        out->offset = va;
        const sym *y = m->exec ? symbol_at(o, va) : NULL;
        if (y) {
            out->name = y->name;
            out->offset = va - y->value;
        }
    }
#else
    Dl_info info;
    if (s->ospid == getpid() && dladdr((void *)(uintptr_t)addr, &info)) {
        if (info.dli_fbase)
            out->offset = addr - (uint64_t)(uintptr_t)info.dli_fbase;
        if (m->exec && info.dli_sname && info.dli_saddr) {
            out->name = info.dli_sname; /* the dynamic linker's: valid while the object is loaded */
            out->offset = addr - (uint64_t)(uintptr_t)info.dli_saddr;
        }
    }
    (void)s;
#endif
}

/* --- mappings ---------------------------------------------------------- */

/* Reads /proc/<ospid>/maps into s->maps: 0, or -1. */
static int read_maps(bs_symbols *s, char *why, size_t cap)
{
    s->last_maps_ms = now_ms();
    s->maps_generation = bs_loaded_objects_generation();
    FILE *f = fopen(s->maps_path, "re");
    if (!f) {
        if (why)
            snprintf(why, cap, "cannot read %s: %s", s->maps_path, strerror(errno));
        return -1;
    }
    s->stats.maps_reads++;
    struct bs_sym_mapping *maps = NULL;
    size_t n = 0, n_cap = 0;
    char *line = NULL;
    size_t line_cap = 0;
    int failed = 0;
    while (getline(&line, &line_cap, f) > 0) {
        unsigned long long start, end, offset;
        char perms[8];
        int path_at = -1;
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &offset, &path_at) < 4 ||
            path_at < 0)
            continue;
        char *path = line + path_at;
        path[strcspn(path, "\n")] = '\0';
        if (n == n_cap) {
            size_t c = n_cap ? n_cap * 2 : 256;
            if (s->stats.bytes + c * sizeof *maps > s->max_bytes) {
                failed = 1;
                break;
            }
            struct bs_sym_mapping *g = realloc(maps, c * sizeof *g);
            if (!g) {
                failed = 1;
                break;
            }
            maps = g;
            n_cap = c;
        }
        struct bs_sym_mapping *m = &maps[n++];
        *m = (struct bs_sym_mapping){start, end, offset, perms[2] == 'x', NULL, NULL};
        size_t plen = strlen(path);
        int deleted = plen >= 10 && strcmp(path + plen - 10, " (deleted)") == 0;
        if (path[0] == '/' && strncmp(path, "/memfd:", 7) != 0) {
            /* A deleted file (a library replaced on disk) keeps its name,
             * " (deleted)" and all, and only offsets: the file at that path
             * now, if any, is another one. */
            m->object = object_of(s, path);
            if (!m->object) {
                failed = 1;
                break;
            }
            if (deleted)
                m->object->tried = 1;
        } else if (path[0] == '[') {
            if (strcmp(path, "[vdso]") == 0)
                m->pseudo = "[vdso]";
            else if (strcmp(path, "[vsyscall]") == 0)
                m->pseudo = "[vsyscall]";
        }
    }
    free(line);
    fclose(f);
    if (failed) {
        free(maps);
        if (why)
            snprintf(why, cap, "out of memory reading %s (cap %zu bytes)", s->maps_path, s->max_bytes);
        return -1;
    }
    free(s->maps);
    s->maps = maps;
    s->n_maps = n;
    return 0;
}

static const struct bs_sym_mapping *mapping_of(const bs_symbols *s, uint64_t addr)
{
    size_t lo = 0, hi = s->n_maps;
    while (lo < hi) { /* the first mapping with end > addr */
        size_t mid = lo + (hi - lo) / 2;
        if (s->maps[mid].end <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < s->n_maps && s->maps[lo].start <= addr)
        return &s->maps[lo];
    return NULL;
}

/* --- the API ----------------------------------------------------------- */

int bs_symbols_init_with_map(bs_symbols *s, int ospid, const char *perf_map_path, size_t max_bytes,
                             char *why, size_t cap)
{
    memset(s, 0, sizeof *s);
    s->ospid = ospid;
    s->max_bytes = max_bytes;
    snprintf(s->debug_dir, sizeof s->debug_dir, "%s", BS_DEBUG_DIR);
    snprintf(s->maps_path, sizeof s->maps_path, "/proc/%d/maps", ospid);
    char path[64];
    if (!perf_map_path) {
        snprintf(path, sizeof path, "/tmp/perf-%d.map", ospid);
        perf_map_path = path;
    }
    if (bs_perf_map_init(&s->perf, perf_map_path, max_bytes) < 0) {
        snprintf(why, cap, "out of memory");
        return -1;
    }
    if (read_maps(s, why, cap) < 0) {
        bs_symbols_free(s);
        return -1;
    }
    s->perf_ok = bs_perf_map_read(&s->perf, now_ms()) >= 0;
    return 0;
}

int bs_symbols_init(bs_symbols *s, int ospid, size_t max_bytes, char *why, size_t cap)
{
    return bs_symbols_init_with_map(s, ospid, NULL, max_bytes, why, cap);
}

static void from_perf(const bs_perf_entry *e, bs_symbol *out)
{
    if (e->kind == BS_PERF_ERLANG) {
        out->kind = BS_SYM_ERLANG;
        out->module = e->module;
        out->function = e->function;
        out->arity = e->arity;
    } else {
        out->kind = BS_SYM_JIT_OTHER;
        out->name = e->function;
    }
}

int bs_symbols_resolve(bs_symbols *s, uint64_t addr, bs_symbol *out)
{
    memset(out, 0, sizeof *out);
    s->stats.resolved++;
    const bs_perf_entry *e = bs_perf_map_find(&s->perf, addr);
    if (e) {
        from_perf(e, out);
        out->start = bs_perf_map_start(&s->perf, addr);
        return (int)out->kind;
    }
    const struct bs_sym_mapping *m = mapping_of(s, addr);
    if (!m) {
        uint64_t now = now_ms();
        if (now - s->last_maps_ms >= BS_SYMBOLS_REMAP_MS && bs_loaded_objects_changed(s->ospid, s->maps_generation) &&
            read_maps(s, NULL, 0) == 0)
            m = mapping_of(s, addr);
    }
    if (m && m->object) {
        resolve_native(s, m, addr, out);
        if (out->kind == BS_SYM_UNKNOWN)
            s->stats.unknown++;
        return (int)out->kind;
    }
    /* Anonymous memory (the JIT's code among it), or no mapping: the perf
     * map again, as it may have grown. */
    e = bs_perf_map_lookup(&s->perf, addr, now_ms());
    if (e) {
        from_perf(e, out);
        out->start = bs_perf_map_start(&s->perf, addr);
        return (int)out->kind;
    }
    out->kind = BS_SYM_UNKNOWN;
    if (m && m->pseudo) {
        out->object = m->pseudo;
        out->offset = addr - m->start;
    }
    s->stats.unknown++;
    return (int)out->kind;
}

void bs_symbols_free(bs_symbols *s)
{
    for (size_t i = 0; i < s->n_objects; i++)
        object_free(s->objects[i]);
    free(s->objects);
    free(s->maps);
    bs_perf_map_free(&s->perf);
    memset(s, 0, sizeof *s);
}
