/* frame_table.h — interned frame names of a profile.
 *
 * Every distinct name is stored once (NUL-terminated, already made safe for
 * every output format by name_sanitize) and referred to by a dense id. */
#ifndef BS_FRAME_TABLE_H
#define BS_FRAME_TABLE_H

#include <stddef.h>
#include <stdint.h>

typedef struct bs_frame_table {
    char **names;
    uint32_t n, cap;
    uint32_t *slots;    /* open addressing on the name's hash -> id */
    uint32_t cap_slots; /* power of two */
} bs_frame_table;

void bs_frame_table_init(bs_frame_table *ft);
void bs_frame_table_free(bs_frame_table *ft);
/* Id of name (len bytes), added if new; UINT32_MAX on allocation failure. */
uint32_t bs_frame_table_intern(bs_frame_table *ft, const char *name, size_t len);
/* Id of name (len bytes), or UINT32_MAX when the table does not hold it. */
uint32_t bs_frame_table_find(const bs_frame_table *ft, const char *name, size_t len);
static inline const char *bs_frame_name(const bs_frame_table *ft, uint32_t id) { return ft->names[id]; }

#endif
