/* tools/tool_common.h - small helpers shared by the exhaustive checkers
 * (verify_math.c, verify_vmath.c). */
#ifndef SB_TOOL_COMMON_H
#define SB_TOOL_COMMON_H

#include <stdint.h>
#include <string.h>
#include <time.h>

static inline uint32_t f2u(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
static inline float u2f(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }

/* Monotonic seconds, for progress and timing lines. */
static inline double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
