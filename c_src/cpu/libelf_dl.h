/* libelf_dl.h — elfutils' libelf, loaded when first needed (dlopen of
 * libelf.so.1) rather than linked.
 *
 * The NIF is loaded into a user's VM, and `bin/beamspy' delivers it to
 * nodes of other machines. Linked against libelf, it would not load at all
 * where libelf.so.1 is missing (slim container images), whatever mode is
 * used; loaded here, only the names of C functions (mode cpu) depend on
 * it, and without it the resolver falls back to naming the file alone.
 * Built only where libelf's headers are (BS_HAVE_LIBELF): the types come
 * from them. The table is made once per OS process (the library stays
 * loaded: a process-wide fact, like the library itself). */
#ifndef BS_LIBELF_DL_H
#define BS_LIBELF_DL_H

#ifdef BS_HAVE_LIBELF
#include <gelf.h>
#include <libelf.h>

typedef struct bs_libelf {
    unsigned (*elf_version)(unsigned);
    Elf *(*elf_begin)(int, Elf_Cmd, Elf *);
    int (*elf_end)(Elf *);
    Elf_Kind (*elf_kind)(Elf *);
    int (*elf_getphdrnum)(Elf *, size_t *);
    Elf_Scn *(*elf_nextscn)(Elf *, Elf_Scn *);
    Elf_Data *(*elf_getdata)(Elf_Scn *, Elf_Data *);
    char *(*elf_strptr)(Elf *, size_t, size_t);
    GElf_Phdr *(*gelf_getphdr)(Elf *, int, GElf_Phdr *);
    GElf_Shdr *(*gelf_getshdr)(Elf_Scn *, GElf_Shdr *);
    GElf_Sym *(*gelf_getsym)(Elf_Data *, int, GElf_Sym *);
    size_t (*gelf_getnote)(Elf_Data *, size_t, GElf_Nhdr *, size_t *, size_t *);
} bs_libelf_fns;

/* The functions of libelf.so.1, or NULL when this system has no libelf. */
const bs_libelf_fns *bs_libelf(void);
#endif

#endif
