/* loaded_objects.c — the dynamic loader's count of loads and unloads
 * (dl_iterate_phdr), see loaded_objects.h. */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include "cpu/loaded_objects.h"

#include <link.h>
#include <stddef.h>
#include <unistd.h>

static int first_object(struct dl_phdr_info *info, size_t size, void *data)
{
    uint64_t *gen = data;
    /* dlpi_adds and dlpi_subs are there when the structure is big enough to hold them. */
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
        *gen = (uint64_t)info->dlpi_adds + (uint64_t)info->dlpi_subs;
    return 1; /* the counters are the same in every entry: stop at the first */
}

uint64_t bs_loaded_objects_generation(void)
{
    uint64_t gen = UINT64_MAX;
    (void)dl_iterate_phdr(first_object, &gen);
    return gen;
}

int bs_loaded_objects_changed(int ospid, uint64_t since)
{
    if (ospid != (int)getpid() || since == UINT64_MAX)
        return 1;
    return bs_loaded_objects_generation() != since;
}
