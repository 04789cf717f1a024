/* libdw_dl.h — elfutils' libdw (and the libelf functions the DWARF unwinder
 * uses), loaded when first needed (dlopen of libdw.so.1, which brings its
 * libelf.so.1) rather than linked, as libelf_dl.h does for the symbols.
 *
 * The NIF goes to nodes of other machines: linked against libdw it would not
 * load at all where libdw.so.1 is missing; loaded here, only the unwinding
 * of C frames (mode cpu) depends on it, and without it mode cpu takes the
 * kernel's frame-pointer chains and says so. Built only where libdw's
 * headers are (BS_HAVE_LIBDW): the types come from them.
 *
 * The files of the unwinder (dwarf_unwind.c, cfi_rule.c, cfi_expr.c) include
 * this header after libdw's: the macros below make their calls go through
 * the table, which is filled once per OS process (a process-wide fact, like
 * the library itself) and read-only afterwards. Call bs_libdw() and check it
 * before any of them. */
#ifndef BS_LIBDW_DL_H
#define BS_LIBDW_DL_H

#ifdef BS_HAVE_LIBDW
#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>

typedef struct bs_libdw_fns {
    unsigned (*elf_version)(unsigned);
    Elf *(*elf_begin)(int, Elf_Cmd, Elf *);
    Elf *(*elf_memory)(char *, size_t);
    int (*elf_end)(Elf *);
    Elf_Kind (*elf_kind)(Elf *);
    const char *(*elf_errmsg)(int);
    int (*elf_getphdrnum)(Elf *, size_t *);
    int (*elf_getshdrstrndx)(Elf *, size_t *);
    Elf_Scn *(*elf_nextscn)(Elf *, Elf_Scn *);
    char *(*elf_strptr)(Elf *, size_t, size_t);
    GElf_Phdr *(*gelf_getphdr)(Elf *, int, GElf_Phdr *);
    GElf_Shdr *(*gelf_getshdr)(Elf_Scn *, GElf_Shdr *);
    Dwarf_CFI *(*dwarf_getcfi_elf)(Elf *);
    Dwarf *(*dwarf_begin_elf)(Elf *, Dwarf_Cmd, Elf_Scn *);
    Dwarf_CFI *(*dwarf_getcfi)(Dwarf *);
    int (*dwarf_cfi_end)(Dwarf_CFI *);
    int (*dwarf_end)(Dwarf *);
    int (*dwarf_cfi_addrframe)(Dwarf_CFI *, Dwarf_Addr, Dwarf_Frame **);
    int (*dwarf_frame_info)(Dwarf_Frame *, Dwarf_Addr *, Dwarf_Addr *, bool *);
    int (*dwarf_frame_cfa)(Dwarf_Frame *, Dwarf_Op **, size_t *);
    int (*dwarf_frame_register)(Dwarf_Frame *, int, Dwarf_Op *, Dwarf_Op **, size_t *);
} bs_libdw_fns;

/* The table, or NULL when this system has no libdw.so.1 (or one without
 * these functions). */
const bs_libdw_fns *bs_libdw(void);

/* What the unwinder's open says when bs_libdw() is NULL. */
#define BS_LIBDW_MISSING "libdw.so.1 not found (apt install libdw1)"

#ifndef BS_LIBDW_DL_IMPL
extern bs_libdw_fns bs_libdw_table;
#define elf_version bs_libdw_table.elf_version
#define elf_begin bs_libdw_table.elf_begin
#define elf_memory bs_libdw_table.elf_memory
#define elf_end bs_libdw_table.elf_end
#define elf_kind bs_libdw_table.elf_kind
#define elf_errmsg bs_libdw_table.elf_errmsg
#define elf_getphdrnum bs_libdw_table.elf_getphdrnum
#define elf_getshdrstrndx bs_libdw_table.elf_getshdrstrndx
#define elf_nextscn bs_libdw_table.elf_nextscn
#define elf_strptr bs_libdw_table.elf_strptr
#define gelf_getphdr bs_libdw_table.gelf_getphdr
#define gelf_getshdr bs_libdw_table.gelf_getshdr
#define dwarf_getcfi_elf bs_libdw_table.dwarf_getcfi_elf
#define dwarf_begin_elf bs_libdw_table.dwarf_begin_elf
#define dwarf_getcfi bs_libdw_table.dwarf_getcfi
#define dwarf_cfi_end bs_libdw_table.dwarf_cfi_end
#define dwarf_end bs_libdw_table.dwarf_end
#define dwarf_cfi_addrframe bs_libdw_table.dwarf_cfi_addrframe
#define dwarf_frame_info bs_libdw_table.dwarf_frame_info
#define dwarf_frame_cfa bs_libdw_table.dwarf_frame_cfa
#define dwarf_frame_register bs_libdw_table.dwarf_frame_register
#endif
#endif

#endif
