/* debug_file.h — where the separate debug file of an ELF object is: the
 * file distributions ship apart from a stripped library (Debian's
 * libc6-dbg for libc.so.6, any *-dbgsym package), whose .symtab names the
 * static functions the library's own .dynsym leaves out. perf reads them;
 * symbols.c reads them too, so that both name a sample alike.
 *
 * The path comes from the object's GNU build-id note (read with libelf):
 * <debug_dir>/.build-id/<first byte in hex>/<the other bytes>.debug, the
 * layout of GDB and perf. A file found there is used only when its own
 * build-id is the object's (a stale file of another build names nothing). */
#ifndef BS_CPU_DEBUG_FILE_H
#define BS_CPU_DEBUG_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "cpu/libelf_dl.h"

#define BS_DEBUG_DIR "/usr/lib/debug" /* where distributions install debug files */
#define BS_BUILD_ID_MAX 64            /* bytes; GNU ld writes 20 (SHA-1) */

#ifdef BS_HAVE_LIBELF
/* The GNU build-id of e into id (at most BS_BUILD_ID_MAX bytes): its
 * length, or 0 when e has none. */
size_t bs_elf_build_id(const bs_libelf_fns *L, Elf *e, uint8_t *id);

/* The path of the debug file for build-id id[0..len) under debug_dir into
 * out: 0, or -1 (no build-id, or the path does not fit in cap). */
int bs_debug_file_path(const char *debug_dir, const uint8_t *id, size_t len, char *out, size_t cap);
#endif

#endif
