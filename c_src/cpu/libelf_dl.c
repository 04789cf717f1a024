/* libelf_dl.c — libelf through dlopen (see libelf_dl.h). */
#include "cpu/libelf_dl.h"

#ifdef BS_HAVE_LIBELF
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#include "common/dl_load.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bs_libelf_fns table;
static int loaded;

#define LOAD(h, name) BS_DL_LOAD(h, table, name)

static void load(void)
{
    void *h = dlopen("libelf.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return;
    LOAD(h, elf_version);
    LOAD(h, elf_begin);
    LOAD(h, elf_end);
    LOAD(h, elf_kind);
    LOAD(h, elf_getphdrnum);
    LOAD(h, elf_nextscn);
    LOAD(h, elf_getdata);
    LOAD(h, elf_strptr);
    LOAD(h, gelf_getphdr);
    LOAD(h, gelf_getshdr);
    LOAD(h, gelf_getsym);
    LOAD(h, gelf_getnote);
    loaded = 1; /* every function found; else the handle stays open, unused */
}

const bs_libelf_fns *bs_libelf(void)
{
    pthread_once(&once, load);
    return loaded ? &table : NULL;
}
#else
typedef int bs_libelf_dl_unused; /* ISO C: a translation unit is not empty */
#endif
