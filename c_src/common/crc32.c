/* crc32.c — CRC-32, reflected polynomial 0xEDB88320 (see crc32.h). */
#include "crc32.h"

void bs_crc32_init(bs_crc32 *c)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t r = i;
        for (int k = 0; k < 8; k++)
            r = (r >> 1) ^ (0xEDB88320u & (0u - (r & 1u)));
        c->table[0][i] = r;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 4; t++)
            c->table[t][i] = (c->table[t - 1][i] >> 8) ^ c->table[0][c->table[t - 1][i] & 0xFF];
    c->state = 0xFFFFFFFFu;
}

void bs_crc32_update(bs_crc32 *c, const void *data, size_t n)
{
    const unsigned char *p = data;
    uint32_t s = c->state;
    for (; n >= 4; p += 4, n -= 4) {
        s ^= (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        s = c->table[3][s & 0xFF] ^ c->table[2][(s >> 8) & 0xFF] ^ c->table[1][(s >> 16) & 0xFF] ^
            c->table[0][s >> 24];
    }
    while (n--)
        s = (s >> 8) ^ c->table[0][(s ^ *p++) & 0xFF];
    c->state = s;
}
