/* Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as
 * easy as 1, 2, 3", SC'11) and samebits' block layout on top of it.
 *
 * Only 32x32->64 integer multiplies, xors and additions modulo 2^32: the
 * same bits on every machine and on the GPU, with no floating point. */
#include "core/fpenv.h"
#include "samebits/random.h"

enum {
    PHILOX_M0 = 0xD2511F53u, /* multiplier for words 0 and 1 */
    PHILOX_M1 = 0xCD9E8D57u, /* multiplier for words 2 and 3 */
    PHILOX_W0 = 0x9E3779B9u, /* key increment: golden ratio */
    PHILOX_W1 = 0xBB67AE85u, /* key increment: sqrt(3) - 1 */
    PHILOX_ROUNDS = 10
};

void sb_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int round = 0; round < PHILOX_ROUNDS; round++) {
        /* The key advances between rounds, never before the first. */
        if (round > 0) { k0 += PHILOX_W0; k1 += PHILOX_W1; }
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        uint32_t n3 = (uint32_t)p0;
        c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

void sb_rng_block(uint64_t seed, uint64_t stream, uint64_t index, unsigned domain,
                  uint32_t out[4]) {
    SB_FPENV_GUARD();
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    const uint32_t counter[4] = {
        (uint32_t)index,
        ((uint32_t)(index >> 32) & 0x00FFFFFFu) | ((uint32_t)(domain & 0xFFu) << 24),
        (uint32_t)stream,
        (uint32_t)(stream >> 32),
    };
    sb_philox4x32_10(counter, key, out);
}
