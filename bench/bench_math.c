/* bench/bench_math.c - throughput of the batch correctly rounded math
 * kernels (src/cpu/vmath.h) at every ISA level this machine supports,
 * next to glibc's scalar functions (which are not correctly rounded, and
 * are here only as the speed yardstick) on the same arrays; then powf,
 * which has only a scalar version, against glibc's.
 *
 *   bench_math [n] [milliseconds per measurement]
 *
 * Inputs are typical of their use in a network: exp on [-20, 20] (softmax,
 * sigmoid), log on (0, 1e6], tanh and erf on [-5, 5] (activations, GELU),
 * expm1 on [-10, 2] (ELU), log1p on (-0.5, 10] (softplus), exp2 on
 * [-20, 20], log2 on (0, 1e6], sin and cos on [-10, 10] and on
 * [-1000, 1000] (rotary embeddings' angles). Each figure is the best of
 * several timed repetitions over an array of n floats (default 16384: in
 * cache, so the math is measured rather than memory). The "samebits
 * scalar" row is the batch API at the scalar level: the loop over the
 * scalar function. One thread; the machine may be shared, so take the
 * ratios, not the absolute figures, as the result.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/vmath.h"
#include "samebits.h"

typedef struct {
    const char *name;
    void (*batch)(const float *, float *, int64_t);
    float (*libm)(float);
    float lo, hi;
} fn_info;

static const fn_info fns[] = {
    {"expf", sb_cpu_expf_n, expf, -20.0f, 20.0f},
    {"logf", sb_cpu_logf_n, logf, 0.0f, 1e6f},
    {"tanhf", sb_cpu_tanhf_n, tanhf, -5.0f, 5.0f},
    {"expm1f", sb_cpu_expm1f_n, expm1f, -10.0f, 2.0f},
    {"log1pf", sb_cpu_log1pf_n, log1pf, -0.5f, 10.0f},
    {"erff", sb_cpu_erff_n, erff, -5.0f, 5.0f},
    {"exp2f", sb_cpu_exp2f_n, exp2f, -20.0f, 20.0f},
    {"log2f", sb_cpu_log2f_n, log2f, 0.0f, 1e6f},
    {"sinf", sb_cpu_sinf_n, sinf, -10.0f, 10.0f},
    {"cosf", sb_cpu_cosf_n, cosf, -10.0f, 10.0f},
    {"sinf", sb_cpu_sinf_n, sinf, -1000.0f, 1000.0f},
    {"cosf", sb_cpu_cosf_n, cosf, -1000.0f, 1000.0f},
};
#define NFNS (int)(sizeof fns / sizeof fns[0])

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static float *gx, *gy;
static int64_t gn;
static const fn_info *gfn;

static void run_batch(void) { gfn->batch(gx, gy, gn); }

/* powf, which has only a scalar version: x in [0.5, 2), y in [-8, 8). */
static float *gz; /* powf's exponents */

static void run_sb_powf(void) {
    for (int64_t i = 0; i < gn; i++) gy[i] = sb_powf(gx[i], gz[i]);
}
static void run_libm_powf(void) {
    for (int64_t i = 0; i < gn; i++) gy[i] = powf(gx[i], gz[i]);
}
static void run_libm(void) {
    float (*f)(float) = gfn->libm;
    for (int64_t i = 0; i < gn; i++) gy[i] = f(gx[i]);
}

/* Best ns per element over repetitions filling about `ms` milliseconds. */
static double measure(void (*run)(void), double ms) {
    run(); /* warm up caches and the ISA choice */
    double best = 1e30, t_end = now() + ms * 1e-3;
    int reps = 0;
    do {
        double t0 = now();
        run();
        double dt = now() - t0;
        if (dt < best) best = dt;
        reps++;
    } while (now() < t_end || reps < 5);
    return best * 1e9 / (double)gn;
}

int main(int argc, char **argv) {
    gn = argc > 1 ? atoll(argv[1]) : 16384;
    double ms = argc > 2 ? atof(argv[2]) : 200.0;
    if (gn < 1 || ms <= 0) {
        fprintf(stderr, "usage: bench_math [n >= 1] [ms > 0]\n");
        return 2;
    }
    gx = malloc((size_t)gn * sizeof(float));
    gy = malloc((size_t)gn * sizeof(float));
    if (!gx || !gy) return 1;

    sb_isa_level levels[SB_ISA_COUNT];
    int nlev = 0;
    for (int l = 0; l < SB_ISA_COUNT; l++)
        if (sb_isa_supported((sb_isa_level)l)) levels[nlev++] = (sb_isa_level)l;

    printf("bench_math: n = %lld floats, best of ~%.0f ms per figure, 1 thread\n",
           (long long)gn, ms);
    printf("%-7s %-16s %10s %10s %12s\n", "func", "implementation", "ns/elem", "Mfloat/s",
           "vs libm");
    uint64_t lcg = 12345;
    for (int f = 0; f < NFNS; f++) {
        gfn = &fns[f];
        for (int64_t i = 0; i < gn; i++) {
            lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
            double u = (double)(lcg >> 11) * 0x1p-53; /* [0, 1) */
            float v = (float)(gfn->lo + (gfn->hi - gfn->lo) * u);
            gx[i] = v > gfn->lo ? v : gfn->hi; /* log: never 0 */
        }
        double libm_ns = measure(run_libm, ms);
        printf("%-7s %-16s %10.3f %10.1f %12s   on [%g, %g]\n", gfn->name, "glibc scalar", libm_ns,
               1e3 / libm_ns, "1.00x", (double)gfn->lo, (double)gfn->hi);
        for (int l = 0; l < nlev; l++) {
            sb_set_isa(levels[l]);
            double ns = measure(run_batch, ms);
            char label[32];
            snprintf(label, sizeof label, "samebits %s", sb_isa_name(levels[l]));
            printf("%-7s %-16s %10.3f %10.1f %11.2fx\n", gfn->name, label, ns, 1e3 / ns,
                   libm_ns / ns);
        }
        fflush(stdout);
    }
    sb_set_isa(sb_isa_best());
    gz = malloc((size_t)gn * sizeof(float));
    if (!gz) return 1;
    printf("scalar only (no batch version):\n");
    for (int64_t i = 0; i < gn; i++) {
        lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(lcg >> 11) * 0x1p-53, w = (double)(lcg & 0x7ff) / 2048.0;
        gx[i] = (float)(0.5 + 1.5 * u);
        gz[i] = (float)(16.0 * w - 8.0);
    }
    double libm_ns = measure(run_libm_powf, ms);
    double ns = measure(run_sb_powf, ms);
    printf("%-7s %-16s %10.3f %10.1f %12s\n", "powf", "glibc scalar", libm_ns, 1e3 / libm_ns,
           "1.00x");
    printf("%-7s %-16s %10.3f %10.1f %11.2fx\n", "powf", "samebits scalar", ns, 1e3 / ns,
           libm_ns / ns);
    free(gx);
    free(gy);
    free(gz);
    return 0;
}
