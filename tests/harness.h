/* tests/harness.h - the tiny test harness every tests/test_*.c uses.
 *
 * CHECK(cond, fmt, ...) counts one check; a failure prints where and why.
 * Each test binary ends with `return sb_test_finish();`, which prints
 * "<binary>: N passed, N failed" and exits non-zero if anything failed.
 * tests/run.sh runs every binary and prints the grand total.
 * SB_TEST_QUICK=1 (set for sanitizer runs) asks tests to use fewer samples.
 */
#ifndef SAMEBITS_TEST_HARNESS_H
#define SAMEBITS_TEST_HARNESS_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "samebits.h"

static long sb_test_passed, sb_test_failed;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (cond) {                                                            \
            sb_test_passed++;                                                  \
        } else {                                                               \
            sb_test_failed++;                                                  \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__,   \
                    #cond);                                                    \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
        }                                                                      \
    } while (0)

static inline uint32_t sb_test_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* Bitwise equality of two floats: the only equality samebits promises. */
#define CHECK_BITS(got, want, ...)                                             \
    do {                                                                       \
        float g_ = (got), w_ = (want);                                         \
        CHECK(sb_test_bits(g_) == sb_test_bits(w_),                           \
              "got %a (0x%08" PRIx32 ") want %a (0x%08" PRIx32 "): ", g_,      \
              sb_test_bits(g_), w_, sb_test_bits(w_));                         \
        if (sb_test_bits(g_) != sb_test_bits(w_)) {                            \
            fprintf(stderr, "    ");                                           \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
        }                                                                      \
    } while (0)

/* A call must fail with `want` and leave a message containing `needle`. */
#define CHECK_ERROR(call, want, needle)                                        \
    do {                                                                       \
        sb_clear_error();                                                      \
        sb_status s_ = (call);                                                 \
        CHECK(s_ == (want), "%s returned %s (%s), expected %s", #call,         \
              sb_status_name(s_), sb_last_error(), sb_status_name(want));      \
        CHECK(strstr(sb_last_error(), (needle)) != NULL,                      \
              "%s: message \"%s\" lacks \"%s\"", #call, sb_last_error(),       \
              (needle));                                                       \
    } while (0)

#define CHECK_OK(call)                                                         \
    do {                                                                       \
        sb_status s_ = (call);                                                 \
        CHECK(s_ == SB_OK, "%s returned %s: %s", #call, sb_status_name(s_),    \
              sb_last_error());                                                \
    } while (0)

/* sb_ssum's result, with its status counted as one check (a failed call
 * gives a quiet NaN, which no CHECK_BITS against a real sum accepts). */
static inline float sb_test_ssum(int64_t n, const float *x, int64_t incx) {
    float s;
    uint32_t nan_bits = 0x7fc00000u;
    memcpy(&s, &nan_bits, sizeof s);
    sb_status st = sb_ssum(n, x, incx, &s);
    CHECK(st == SB_OK, "sb_ssum(n = %lld, incx = %lld) returned %s: %s", (long long)n,
          (long long)incx, sb_status_name(st), sb_last_error());
    return s;
}

static inline int sb_test_quick(void) {
    const char *q = getenv("SB_TEST_QUICK");
    return q && *q && *q != '0';
}

static const char *sb_test_name = "test";
#define SB_TEST_MAIN_NAME(argv0) (sb_test_name = (argv0))

static inline int sb_test_finish(void) {
    const char *slash = strrchr(sb_test_name, '/');
    printf("%s: %ld passed, %ld failed\n", slash ? slash + 1 : sb_test_name,
           sb_test_passed, sb_test_failed);
    return sb_test_failed ? 1 : 0;
}

#endif
