/* libdw_dl.c — libdw through dlopen (see libdw_dl.h). */
#define BS_LIBDW_DL_IMPL
#include "cpu/libdw_dl.h"

#ifdef BS_HAVE_LIBDW
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#include "common/dl_load.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
bs_libdw_fns bs_libdw_table;
static int loaded;

#define LOAD(h, name) BS_DL_LOAD(h, bs_libdw_table, name)

static void load(void)
{
    /* libdw.so.1 needs libelf.so.1: the dynamic loader brings the one
     * libdw was built with, and its elf_ functions are taken from there
     * (RTLD_DEFAULT would find libelf_dl.h's copy, the same library). */
    void *h = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return;
    LOAD(h, elf_version);
    LOAD(h, elf_begin);
    LOAD(h, elf_memory);
    LOAD(h, elf_end);
    LOAD(h, elf_kind);
    LOAD(h, elf_errmsg);
    LOAD(h, elf_getphdrnum);
    LOAD(h, elf_getshdrstrndx);
    LOAD(h, elf_nextscn);
    LOAD(h, elf_strptr);
    LOAD(h, gelf_getphdr);
    LOAD(h, gelf_getshdr);
    LOAD(h, dwarf_getcfi_elf);
    LOAD(h, dwarf_begin_elf);
    LOAD(h, dwarf_getcfi);
    LOAD(h, dwarf_cfi_end);
    LOAD(h, dwarf_end);
    LOAD(h, dwarf_cfi_addrframe);
    LOAD(h, dwarf_frame_info);
    LOAD(h, dwarf_frame_cfa);
    LOAD(h, dwarf_frame_register);
    loaded = 1; /* every function found; else the handle stays open, unused */
}

const bs_libdw_fns *bs_libdw(void)
{
    pthread_once(&once, load);
    return loaded ? &bs_libdw_table : NULL;
}
#else
typedef int bs_libdw_dl_unused; /* ISO C: a translation unit is not empty */
#endif
