/* crc32.h — CRC-32 (IEEE 802.3, as zlib's crc32() and `python3 -c
 * "import zlib"` compute it) for the .bspy format's checksum.
 *
 * Four-byte-at-a-time table lookup ("slicing by 4"), ~1 GB/s: the tables
 * live in the caller's state, so there is no global to initialise. */
#ifndef BS_CRC32_H
#define BS_CRC32_H

#include <stddef.h>
#include <stdint.h>

typedef struct bs_crc32 {
    uint32_t table[4][256];
    uint32_t state;
} bs_crc32;

void bs_crc32_init(bs_crc32 *c);
void bs_crc32_update(bs_crc32 *c, const void *data, size_t n);
/* CRC of all bytes given so far (the state is unchanged). */
static inline uint32_t bs_crc32_value(const bs_crc32 *c) { return c->state ^ 0xFFFFFFFFu; }

#endif
