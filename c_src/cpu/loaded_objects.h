/* loaded_objects.h — whether this process has loaded or unloaded a shared
 * object (dlopen, dlclose) since a moment: the dynamic loader's own
 * counters, read without a system call. The sampler's symbol and CFI
 * tables reread /proc/<pid>/maps for an address no mapping holds; in this
 * process only a load or an unload can add a file mapping, so when the
 * counters have not moved a reread would find nothing new, and costs
 * about a millisecond on a VM with many threads. */
#ifndef BS_LOADED_OBJECTS_H
#define BS_LOADED_OBJECTS_H

#include <stdint.h>

/* The number of loads plus unloads of shared objects in this process so
 * far (glibc's dlpi_adds + dlpi_subs); UINT64_MAX when the loader does not
 * say (then callers must assume anything may have changed). */
uint64_t bs_loaded_objects_generation(void);

/* 1 when the mappings of process ospid may have gained a file since
 * generation `since' was read: always for another process, for this one
 * only when a shared object was loaded or unloaded since. */
int bs_loaded_objects_changed(int ospid, uint64_t since);

#endif
