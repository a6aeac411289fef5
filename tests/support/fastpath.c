/* Configurations of the fast-backend differential tests (fastpath.h). */
#include "fastpath.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../harness.h"
#include "samebits.h"

static const int full_threads[] = {1, 2, 3, 4, 7};
static const int quick_threads[] = {1, 3};

typedef struct {
    sb_isa_level isa;
    int threads;
    char name[32];
} config;

static config configs[SB_ISA_COUNT * 5];
static int nconfigs = -1;
static int initial_threads;

/* SB_TEST_THREADS="1,2,3" replaces the thread counts (at most 5, each
 * 1..64): the portability matrix runs these tests under qemu, where the
 * full list costs minutes. */
static int env_threads(int out[5]) {
    const char *s = getenv("SB_TEST_THREADS");
    int n = 0;
    while (s && *s && n < 5) {
        char *end;
        long t = strtol(s, &end, 10);
        if (end == s || t < 1 || t > 64) {
            fprintf(stderr, "fastpath: SB_TEST_THREADS must list thread counts 1..64: '%s'\n", s);
            exit(2);
        }
        out[n++] = (int)t;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

static void build(void) {
    if (nconfigs >= 0) return;
    initial_threads = sb_num_threads();
    static int env_list[5];
    const int *threads = sb_test_quick() ? quick_threads : full_threads;
    int nthreads = sb_test_quick() ? 2 : 5;
    int nenv = env_threads(env_list);
    if (nenv > 0) {
        threads = env_list;
        nthreads = nenv;
    }
    nconfigs = 0;
    for (int isa = 0; isa < SB_ISA_COUNT; isa++) {
        if (!sb_isa_supported((sb_isa_level)isa)) continue;
        for (int t = 0; t < nthreads; t++) {
            config *c = &configs[nconfigs++];
            c->isa = (sb_isa_level)isa;
            c->threads = threads[t];
            snprintf(c->name, sizeof c->name, "%s/%dt", sb_isa_name(c->isa), c->threads);
        }
    }
}

int sb_test_config_count(void) {
    build();
    return nconfigs;
}

void sb_test_config_apply(int c) {
    build();
    if (sb_set_isa(configs[c].isa) != SB_OK || sb_set_num_threads(configs[c].threads) != SB_OK) {
        fprintf(stderr, "fastpath: cannot apply %s: %s\n", configs[c].name, sb_last_error());
        exit(1);
    }
}

const char *sb_test_config_name(int c) {
    build();
    return configs[c].name;
}

void sb_test_config_reset(void) {
    build();
    sb_set_isa(sb_isa_best());
    sb_set_num_threads(initial_threads);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

uint64_t sb_test_seed(uint64_t seed) {
    uint64_t old = rng_state;
    rng_state = seed ? seed : 0x9e3779b97f4a7c15ull;
    return old;
}

uint32_t sb_test_rand32(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

float sb_test_unif(float lo, float hi) {
    return lo + (hi - lo) * (float)(sb_test_rand32() >> 8) * 0x1p-24f;
}

float sb_test_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

float sb_test_adversarial(float ordinary) {
    static const uint32_t special[] = {
        0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7fc12345u,
        0xffc00001u, 0x00000001u, 0x807fffffu, 0x00400000u, 0x7f7fffffu, 0xff7fffffu,
        0x3f800000u, 0xbf800000u, 0x00800000u, 0x80800000u};
    uint32_t r = sb_test_rand32() % 16;
    if (r == 0) return sb_test_from_bits(special[sb_test_rand32() % (sizeof special / sizeof special[0])]);
    if (r == 1) return sb_test_unif(-1e30f, 1e30f);
    if (r == 2) return sb_test_unif(-1e-30f, 1e-30f);
    return sb_test_unif(-ordinary, ordinary);
}
