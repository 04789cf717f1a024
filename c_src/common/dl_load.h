/* dl_load.h — fills a table of function pointers from a library opened
 * with dlopen (libelf_dl.c, libdw_dl.c): BS_DL_LOAD(handle, table, name)
 * stores dlsym(handle, "name") into table.name, or returns from the calling
 * void function when the library lacks it (the table then stays unused). */
#ifndef BS_DL_LOAD_H
#define BS_DL_LOAD_H

#include <dlfcn.h>

/* dlsym returns a data pointer; POSIX says it converts to a function pointer. */
#define BS_DL_LOAD(h, table, name)                                 \
    do {                                                           \
        void *sym_ = dlsym(h, #name);                              \
        if (!sym_)                                                 \
            return;                                                \
        *(void **)&(table).name = sym_;                            \
    } while (0)

#endif
