/* dwarf_unwind.c — the DWARF (CFI) unwinder of a CPU sample's C frames
 * (dwarf_unwind.h): the process's executable mappings and their files' CFI
 * through libdw, and the loop over frames. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/dwarf_unwind.h"

#ifdef BS_HAVE_LIBDW

#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>

#include "cpu/cfi_expr.h"
#include "cpu/cfi_rule.h"
#include "cpu/libdw_dl.h"
#include "cpu/loaded_objects.h"

#define REG_BP 6
#define REG_SP 7
#define REG_R13 13
#define REG_RA 16

/* One mapped file (or the vdso image), opened once. */
typedef struct cfi_file {
    char *path;
    unsigned long long dev_major, dev_minor, inode;
    int fd;                 /* -1 for the vdso image */
    unsigned char *image;   /* the vdso's copy, else NULL */
    Elf *elf;               /* NULL when the file has no usable CFI (or is over the cap) */
    Dwarf_CFI *eh;          /* .eh_frame (ours to end) */
    Dwarf *dw;              /* for .debug_frame */
    Dwarf_CFI *dbg;         /* .debug_frame (owned by dw) */
    size_t bytes;           /* what the cap counts for it */
} cfi_file;

/* One executable mapping: [start, end); file -1 when no file (anonymous, memfd, deleted). */
typedef struct mapping {
    uint64_t start, end;
    uint64_t bias; /* address - bias = the file's ELF virtual address */
    int file;
} mapping;

struct bs_dwarf_unwinder {
    int ospid;
    size_t max_bytes;
    size_t bytes;
    mapping *maps;
    size_t n_maps;
    cfi_file *files;
    size_t n_files, cap_files;
    uint64_t last_maps_read_ns;
    uint64_t maps_generation; /* bs_loaded_objects_generation() at the last read */
    bs_cfi_cache cache;
    int rows; /* simple rows applied directly (cfi_rule.h) */
    bs_dwarf_stats stats;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void file_close(cfi_file *f)
{
    if (f->eh) dwarf_cfi_end(f->eh);
    if (f->dw) dwarf_end(f->dw);
    if (f->elf) elf_end(f->elf);
    if (f->fd >= 0) close(f->fd);
    free(f->image);
    free(f->path);
    memset(f, 0, sizeof *f);
    f->fd = -1;
}

/* The size of the CFI sections of elf (what the cap counts). */
static size_t cfi_section_bytes(Elf *elf, int *has_debug_frame)
{
    size_t shstrndx, total = 0;
    *has_debug_frame = 0;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0) return 0;
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn != NULL; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        if (gelf_getshdr(scn, &sh) == NULL) continue;
        const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
        if (name == NULL) continue;
        if (strcmp(name, ".debug_frame") == 0) *has_debug_frame = 1;
        if (strcmp(name, ".eh_frame") == 0 || strcmp(name, ".eh_frame_hdr") == 0 ||
            strcmp(name, ".debug_frame") == 0)
            total += sh.sh_size;
    }
    return total;
}

/* Opens f's ELF (from fd, or from its vdso image) and its CFI within the
 * cap. Leaves f->elf NULL when there is nothing to unwind with. */
static void file_open_cfi(bs_dwarf_unwinder *u, cfi_file *f, size_t image_size)
{
    f->elf = f->image ? elf_memory((char *)f->image, image_size) : elf_begin(f->fd, ELF_C_READ_MMAP, NULL);
    if (f->elf == NULL || elf_kind(f->elf) != ELF_K_ELF) goto none;
    int has_debug_frame;
    size_t bytes = cfi_section_bytes(f->elf, &has_debug_frame) + image_size;
    if (bytes == 0) goto none;
    if (u->bytes + bytes > u->max_bytes) {
        u->stats.files_over_cap++;
        goto none;
    }
    f->eh = dwarf_getcfi_elf(f->elf);
    if (has_debug_frame) {
        f->dw = dwarf_begin_elf(f->elf, DWARF_C_READ, NULL);
        if (f->dw) f->dbg = dwarf_getcfi(f->dw);
    }
    if (f->eh == NULL && f->dbg == NULL) goto none;
    f->bytes = bytes;
    u->bytes += bytes;
    u->stats.files_open++;
    return;
none:
    if (f->eh) dwarf_cfi_end(f->eh);
    if (f->dw) dwarf_end(f->dw);
    if (f->elf) elf_end(f->elf);
    f->eh = NULL, f->dw = NULL, f->dbg = NULL, f->elf = NULL;
    if (f->fd >= 0) close(f->fd);
    f->fd = -1;
    free(f->image);
    f->image = NULL;
}

/* This process's vdso image (the kernel maps the same one into every
 * process), copied: NULL when there is none (valgrind hides it). */
static unsigned char *vdso_copy(size_t size)
{
    unsigned long base = getauxval(AT_SYSINFO_EHDR);
    if (base == 0 || size == 0 || size > (1u << 20)) return NULL;
    unsigned char *copy = malloc(size);
    if (copy) memcpy(copy, (const void *)base, size);
    return copy;
}

/* The index of the file of a mapping line, opened the first time; -1 when
 * it cannot be (memory, the mapping cap: then its addresses have no CFI). */
static int file_of(bs_dwarf_unwinder *u, const char *path, unsigned long long maj, unsigned long long min,
                   unsigned long long inode, size_t map_size)
{
    for (size_t i = 0; i < u->n_files; i++) {
        cfi_file *f = &u->files[i];
        if (f->inode == inode && f->dev_major == maj && f->dev_minor == min && strcmp(f->path, path) == 0)
            return (int)i;
    }
    if (u->n_files == BS_DWARF_MAX_MAPPINGS) return -1;
    if (u->n_files == u->cap_files) {
        size_t cap = u->cap_files ? 2 * u->cap_files : 16;
        if (u->bytes + (cap - u->cap_files) * sizeof(cfi_file) > u->max_bytes) return -1;
        cfi_file *grown = realloc(u->files, cap * sizeof *grown);
        if (grown == NULL) return -1;
        u->bytes += (cap - u->cap_files) * sizeof(cfi_file);
        u->files = grown, u->cap_files = cap;
    }
    cfi_file *f = &u->files[u->n_files];
    memset(f, 0, sizeof *f);
    f->fd = -1;
    f->path = strdup(path);
    if (f->path == NULL) return -1;
    f->dev_major = maj, f->dev_minor = min, f->inode = inode;
    u->n_files++;
    if (strcmp(path, "[vdso]") == 0) {
        f->image = vdso_copy(map_size);
        if (f->image) file_open_cfi(u, f, map_size);
    } else if (path[0] == '/' && strstr(path, " (deleted)") == NULL) {
        f->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (f->fd >= 0) file_open_cfi(u, f, 0);
    }
    return (int)(f - u->files);
}

/* address - bias = ELF virtual address, from the PT_LOAD segment that maps
 * the mapping's file offset. 0 when no segment does. */
static int mapping_bias(Elf *elf, uint64_t start, uint64_t offset, uint64_t *bias)
{
    size_t n;
    if (elf_getphdrnum(elf, &n) != 0) return 0;
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf, (int)i, &ph) == NULL || ph.p_type != PT_LOAD) continue;
        uint64_t seg_page = ph.p_offset & ~(uint64_t)4095;
        if (offset < seg_page || offset >= ph.p_offset + ph.p_filesz) continue;
        *bias = start - (ph.p_vaddr - ph.p_offset + offset);
        return 1;
    }
    return 0;
}

/* Rereads /proc/<ospid>/maps into u->maps (files already open are kept). */
static int read_maps(bs_dwarf_unwinder *u, char *why, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", u->ospid);
    FILE *in = fopen(path, "re");
    if (in == NULL) {
        if (why) snprintf(why, cap, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    u->stats.maps_reads++;
    u->last_maps_read_ns = now_ns();
    u->maps_generation = bs_loaded_objects_generation();
    mapping *maps = NULL;
    size_t n = 0, room = 0;
    char *line = NULL;
    size_t line_cap = 0;
    int rc = 0;
    while (getline(&line, &line_cap, in) > 0) {
        unsigned long long start, end, offset, maj, min, inode;
        char perms[8];
        int path_at = 0;
        if (sscanf(line, "%llx-%llx %7s %llx %llx:%llx %llu %n", &start, &end, perms, &offset, &maj, &min, &inode,
                   &path_at) < 7)
            continue;
        if (strlen(perms) < 3 || perms[2] != 'x' || end <= start) continue;
        char *name = line + path_at;
        name[strcspn(name, "\n")] = '\0';
        if (n == BS_DWARF_MAX_MAPPINGS) break;
        if (n == room) {
            room = room ? 2 * room : 64;
            mapping *grown = realloc(maps, room * sizeof *grown);
            if (grown == NULL) {
                if (why) snprintf(why, cap, "out of memory reading %s", path);
                rc = -1;
                break;
            }
            maps = grown;
        }
        mapping *m = &maps[n++];
        m->start = start, m->end = end, m->bias = 0, m->file = -1;
        if (name[0] == '\0') continue; /* anonymous: JIT code */
        int fi = file_of(u, name, maj, min, inode, (size_t)(end - start));
        if (fi < 0 || u->files[fi].elf == NULL) continue;
        if (!mapping_bias(u->files[fi].elf, start, offset, &m->bias)) continue;
        m->file = fi;
    }
    free(line);
    fclose(in);
    if (rc != 0) {
        free(maps);
        return rc;
    }
    /* The cap counts the table at its largest. */
    size_t old_bytes = u->n_maps * sizeof(mapping), new_bytes = n * sizeof(mapping);
    if (new_bytes > old_bytes && u->bytes + (new_bytes - old_bytes) > u->max_bytes) {
        if (why) snprintf(why, cap, "the table of %zu executable mappings of %s needs %zu bytes: over the cap of %zu",
                          n, path, new_bytes, u->max_bytes);
        free(maps);
        return -1;
    }
    free(u->maps);
    u->maps = maps, u->n_maps = n;
    bs_cfi_cache_clear(&u->cache); /* a pc may now be other code */
    if (new_bytes > old_bytes) u->bytes += new_bytes - old_bytes;
    return 0;
}

static const mapping *find_mapping(const bs_dwarf_unwinder *u, uint64_t addr)
{
    size_t lo = 0, hi = u->n_maps;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (addr < u->maps[mid].start) hi = mid;
        else if (addr >= u->maps[mid].end) lo = mid + 1;
        else return &u->maps[mid];
    }
    return NULL;
}

/* The mapping of addr, rereading the maps (rate-limited) when none has it. */
static const mapping *lookup(bs_dwarf_unwinder *u, uint64_t addr)
{
    const mapping *m = find_mapping(u, addr);
    if (m != NULL) return m;
    if (now_ns() - u->last_maps_read_ns < (uint64_t)BS_DWARF_REMAP_MS * 1000000u) return NULL;
    if (!bs_loaded_objects_changed(u->ospid, u->maps_generation)) return NULL; /* JIT code: no file maps it */
    if (read_maps(u, NULL, 0) != 0) return NULL;
    return find_mapping(u, addr);
}

int bs_dwarf_unwinder_open(bs_dwarf_unwinder **out, int ospid, size_t max_bytes, char *why, size_t cap)
{
    *out = NULL;
    if (bs_libdw() == NULL) {
        snprintf(why, cap, "%s", BS_LIBDW_MISSING);
        return -1;
    }
    if (elf_version(EV_CURRENT) == EV_NONE) {
        snprintf(why, cap, "libelf refused its version: %s", elf_errmsg(-1));
        return -1;
    }
    bs_dwarf_unwinder *u = calloc(1, sizeof *u);
    if (u == NULL) {
        snprintf(why, cap, "out of memory");
        return -1;
    }
    u->ospid = ospid;
    u->max_bytes = max_bytes;
    u->bytes = sizeof *u;
    u->rows = 1;
    /* The rows' cache when the cap has room for it (else every frame goes through libdw). */
    size_t cache_bytes = BS_CFI_CACHE_SLOTS * sizeof(bs_cfi_rule);
    if (u->bytes + cache_bytes <= max_bytes / 2) {
        u->cache.slots = calloc(BS_CFI_CACHE_SLOTS, sizeof(bs_cfi_rule));
        if (u->cache.slots) u->bytes += cache_bytes;
    }
    if (read_maps(u, why, cap) != 0) {
        bs_dwarf_unwinder_close(u);
        return -1;
    }
    *out = u;
    return 0;
}

void bs_dwarf_unwinder_close(bs_dwarf_unwinder *u)
{
    if (u == NULL) return;
    for (size_t i = 0; i < u->n_files; i++) file_close(&u->files[i]);
    free(u->files);
    free(u->maps);
    free(u->cache.slots);
    free(u);
}

void bs_dwarf_unwinder_use_rows(bs_dwarf_unwinder *u, int on)
{
    u->rows = on;
}

void bs_dwarf_unwinder_stats(const bs_dwarf_unwinder *u, bs_dwarf_stats *out)
{
    *out = u->stats;
    out->bytes = u->bytes;
}

/* The frame of pc in file f (its ELF address elf_pc), from .eh_frame, else
 * .debug_frame. NULL when neither covers it. Freed by the caller. */
static Dwarf_Frame *frame_at(const cfi_file *f, uint64_t elf_pc)
{
    Dwarf_Frame *frame = NULL;
    if (f->eh && dwarf_cfi_addrframe(f->eh, elf_pc, &frame) == 0) return frame;
    frame = NULL;
    if (f->dbg && dwarf_cfi_addrframe(f->dbg, elf_pc, &frame) == 0) return frame;
    return NULL;
}

/* The caller's registers of the frame described by frame with registers cur,
 * evaluating its CFA and saved registers' expressions (the general path,
 * for the rows bs_cfi_rule_from_frame does not take); *exact_pc is set when the caller's pc is where it was interrupted (this is
 * a signal frame), not after a call. Returns BS_UNWIND_FULL when they are
 * there, else why not. */
static bs_unwind_stop caller_regs(Dwarf_Frame *frame, const bs_cfi_regs *cur, const bs_stack_copy *stack,
                                  bs_cfi_regs *caller, int *exact_pc)
{
    Dwarf_Op *ops;
    size_t nops;
    uint64_t cfa;
    int is_value;
    bool signalp;
    /* x86_64's return address column is 16: anything else is not x86_64 CFI. */
    if (dwarf_frame_info(frame, NULL, NULL, &signalp) != REG_RA) return BS_UNWIND_BAD_FRAME;
    *exact_pc = signalp;
    if (dwarf_frame_cfa(frame, &ops, &nops) != 0 || nops == 0) return BS_UNWIND_BAD_FRAME;
    bs_cfi_status st = bs_cfi_eval(ops, nops, cur, 0, 0, stack, &is_value, &cfa);
    if (st != BS_CFI_OK) return st == BS_CFI_NO_MEMORY ? BS_UNWIND_STACK_END : BS_UNWIND_BAD_FRAME;
    caller->valid = 0;
    bs_unwind_stop ra_status = BS_UNWIND_OUTERMOST;
    for (int k = 0; k < BS_CFI_RECOVERED; k++) {
        int reg = bs_cfi_recovered[k];
        Dwarf_Op mem[3];
        Dwarf_Op *rops = NULL;
        size_t rn = 0;
        if (dwarf_frame_register(frame, reg, mem, &rops, &rn) != 0) continue;
        uint64_t v;
        if (rn == 0) {
            /* same value: unchanged by this frame; else undefined */
            if (rops != NULL || !(cur->valid & (UINT32_C(1) << reg))) continue;
            v = cur->r[reg];
        } else {
            st = bs_cfi_eval(rops, rn, cur, cfa, 1, stack, &is_value, &v);
            if (st == BS_CFI_OK && !is_value && !bs_stack_read8(stack, v, &v)) st = BS_CFI_NO_MEMORY;
            if (st != BS_CFI_OK) {
                if (reg == REG_RA) ra_status = st == BS_CFI_NO_MEMORY ? BS_UNWIND_STACK_END : BS_UNWIND_BAD_FRAME;
                continue;
            }
        }
        caller->r[reg] = v;
        caller->valid |= UINT32_C(1) << reg;
    }
    return bs_cfi_finish(cfa, cur, caller, ra_status);
}

/* The valid callee-saved values of regs, each once, into saved. */
static void note_saved(bs_unwind_saved *saved, const bs_cfi_regs *regs)
{
    for (int k = 0; k < BS_CFI_RECOVERED; k++) {
        int reg = bs_cfi_recovered[k];
        if (reg == REG_RA || !(regs->valid & (UINT32_C(1) << reg)) || regs->r[reg] == 0)
            continue;
        size_t i = 0;
        while (i < saved->n && saved->values[i] != regs->r[reg])
            i++;
        if (i == saved->n && saved->n < saved->cap)
            saved->values[saved->n++] = regs->r[reg];
    }
}

size_t bs_dwarf_unwind_saved(bs_dwarf_unwinder *u, const bs_user_regs *regs, const bs_stack_copy *stack,
                             uint64_t *out, size_t cap, bs_user_regs *at, int *reached_jit, bs_unwind_stop *stop,
                             bs_unwind_saved *saved)
{
    bs_cfi_regs cur = {.valid = 0};
    cur.r[REG_RA] = regs->ip, cur.r[REG_SP] = regs->sp, cur.r[REG_BP] = regs->bp, cur.r[REG_R13] = regs->r13;
    cur.valid = (UINT32_C(1) << REG_RA) | (UINT32_C(1) << REG_SP) | (UINT32_C(1) << REG_BP) |
                (regs->has_r13 ? UINT32_C(1) << REG_R13 : 0);
    size_t n = 0;
    int exact_pc = 1; /* the leaf's pc is where it is; a return address is after the call */
    bs_unwind_stop why;
    *reached_jit = 0;
    if (saved) {
        saved->n = 0;
        note_saved(saved, &cur);
    }
    for (;;) {
        uint64_t pc = cur.r[REG_RA];
        at->ip = pc;
        at->sp = cur.r[REG_SP];
        at->bp = (cur.valid & (UINT32_C(1) << REG_BP)) ? cur.r[REG_BP] : 0;
        at->has_r13 = (cur.valid & (UINT32_C(1) << REG_R13)) != 0;
        at->r13 = at->has_r13 ? cur.r[REG_R13] : 0;
        const mapping *m = lookup(u, pc);
        if (m == NULL || m->file < 0) {
            *reached_jit = 1;
            why = BS_UNWIND_JIT;
            break;
        }
        if (n == cap) {
            why = BS_UNWIND_FULL;
            break;
        }
        out[n++] = pc;
        uint64_t look = exact_pc ? pc : pc - 1;
        bs_cfi_regs caller;
        const bs_cfi_rule *rule = u->rows ? bs_cfi_cache_get(&u->cache, look) : NULL;
        if (rule != NULL) {
            why = bs_cfi_rule_apply(rule, &cur, stack, &caller);
            exact_pc = rule->signal_frame;
        } else {
            Dwarf_Frame *frame = frame_at(&u->files[m->file], look - m->bias);
            if (frame == NULL) {
                why = BS_UNWIND_NO_CFI;
                break;
            }
            bs_cfi_rule fresh;
            if (u->rows && bs_cfi_rule_from_frame(frame, &fresh)) {
                bs_cfi_cache_put(&u->cache, look, &fresh);
                why = bs_cfi_rule_apply(&fresh, &cur, stack, &caller);
                exact_pc = fresh.signal_frame;
            } else {
                why = caller_regs(frame, &cur, stack, &caller, &exact_pc);
            }
            free(frame);
        }
        if (why != BS_UNWIND_FULL) break;
        cur = caller;
        if (saved)
            note_saved(saved, &cur);
    }
    if (stop) *stop = why;
    return n;
}

#else /* !BS_HAVE_LIBDW */

struct bs_dwarf_unwinder {
    int unused;
};

int bs_dwarf_unwinder_open(bs_dwarf_unwinder **out, int ospid, size_t max_bytes, char *why, size_t cap)
{
    (void)ospid, (void)max_bytes;
    *out = NULL;
    snprintf(why, cap,
             "built without elfutils' libdw: the C frames of CPU samples cannot be unwound "
             "(install libdw-dev, e.g. apt-get install libdw-dev, and rebuild)");
    return -1;
}

size_t bs_dwarf_unwind_saved(bs_dwarf_unwinder *u, const bs_user_regs *regs, const bs_stack_copy *stack,
                             uint64_t *out, size_t cap, bs_user_regs *at, int *reached_jit, bs_unwind_stop *stop,
                             bs_unwind_saved *saved)
{
    (void)u, (void)stack, (void)out, (void)cap;
    if (saved)
        saved->n = 0;
    *at = *regs;
    *reached_jit = 0;
    if (stop) *stop = BS_UNWIND_NO_CFI;
    return 0;
}

void bs_dwarf_unwinder_use_rows(bs_dwarf_unwinder *u, int on)
{
    (void)u, (void)on;
}

void bs_dwarf_unwinder_stats(const bs_dwarf_unwinder *u, bs_dwarf_stats *out)
{
    (void)u;
    memset(out, 0, sizeof *out);
}

void bs_dwarf_unwinder_close(bs_dwarf_unwinder *u)
{
    (void)u;
}

#endif

size_t bs_dwarf_unwind(bs_dwarf_unwinder *u, const bs_user_regs *regs, const bs_stack_copy *stack,
                       uint64_t *out, size_t cap, bs_user_regs *at, int *reached_jit, bs_unwind_stop *stop)
{
    return bs_dwarf_unwind_saved(u, regs, stack, out, cap, at, reached_jit, stop, NULL);
}
