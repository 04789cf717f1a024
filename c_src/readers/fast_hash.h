/* fast_hash.h — a quick non-cryptographic hash of bytes (readers only).
 *
 * Readers hash every frame of every input line, so this is on the hot path;
 * it takes 8 bytes per step (the frame table's byte-wise FNV is only paid
 * for names seen the first time). Hostile input can make it collide, which
 * costs time, never correctness: every hit is confirmed by comparing bytes. */
#ifndef BS_FAST_HASH_H
#define BS_FAST_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t bs_fast_hash(const char *s, size_t n)
{
    uint64_t h = 0x243F6A8885A308D3ull ^ (n * 0x9E3779B97F4A7C15ull), w;
    for (; n >= 8; s += 8, n -= 8) {
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 32;
    }
    w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
    return h ^ (h >> 29);
}

#endif
