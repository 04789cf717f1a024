/* debug_file.c — the separate debug file of an ELF object, from its build-id
 * (see debug_file.h). */
#include "cpu/debug_file.h"

#ifdef BS_HAVE_LIBELF
#include <stdio.h>
#include <string.h>

size_t bs_elf_build_id(const bs_libelf_fns *L, Elf *e, uint8_t *id)
{
    Elf_Scn *scn = NULL;
    while ((scn = L->elf_nextscn(e, scn)) != NULL) {
        GElf_Shdr sh;
        if (!L->gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
            continue;
        Elf_Data *d = L->elf_getdata(scn, NULL);
        if (!d || !d->d_buf)
            continue;
        size_t at = 0, name_at, desc_at;
        GElf_Nhdr nh;
        while (at < d->d_size) {
            size_t next = L->gelf_getnote(d, at, &nh, &name_at, &desc_at);
            if (next == 0 || next <= at)
                break; /* libelf found no whole note here */
            if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && nh.n_descsz > 0 &&
                nh.n_descsz <= BS_BUILD_ID_MAX && memcmp((const char *)d->d_buf + name_at, "GNU", 4) == 0) {
                memcpy(id, (const char *)d->d_buf + desc_at, nh.n_descsz);
                return nh.n_descsz;
            }
            at = next;
        }
    }
    return 0;
}

int bs_debug_file_path(const char *debug_dir, const uint8_t *id, size_t len, char *out, size_t cap)
{
    if (len < 2 || len > BS_BUILD_ID_MAX)
        return -1;
    char hex[2 * BS_BUILD_ID_MAX + 1];
    for (size_t i = 0; i < len; i++)
        snprintf(hex + 2 * i, 3, "%02x", id[i]);
    int n = snprintf(out, cap, "%s/.build-id/%.2s/%s.debug", debug_dir, hex, hex + 2);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}
#else
typedef int bs_debug_file_unused; /* ISO C: a translation unit is not empty */
#endif
