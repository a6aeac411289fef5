/* The cost of the order-free exact reduction (contract section 17) on
 * LeNet-5's gradient: 61,706 parameters + the loss, K micro-batch results.
 * For each K it prints the median time of the local work of one step
 * (exponent codes of the K inputs, their fixed-point terms, the final
 * rounding: what a single process does; across processes each rank does
 * its share plus two allreduces) and the bytes per element a process sends
 * to an allreduce, against 4 for float32, for the reference loops
 * (src/dist/exact_sum.c) and for the CPU backend's loops that training uses
 * (src/cpu/exact.c, at the best ISA level, or SB_ISA's, on one thread: the
 * time is this thread's CPU time). Compare the time with bench_lenet_step's
 * step time.
 *
 *   bench_exact_sum [--quick] [K ...]     (default K: 1 2 4 8 100 1000)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cpu/exact_internal.h"
#include "dist/exact_sum.h"
#include "samebits/runtime.h"

/* CPU time of this thread: on a shared machine wall time mostly measures
 * the other processes. */
static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float gradient_like(void) { /* magnitudes over ~12 binades, both signs */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    uint32_t u = (uint32_t)((rng >> 32) & 0x807fffffu) | (uint32_t)(110 + (rng >> 8) % 12) << 23;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

int main(int argc, char **argv) {
    int quick = argc > 1 && !strcmp(argv[1], "--quick"), runs = quick ? 5 : 31;
    const size_t n = 61706 + 1;
    int64_t ks[16] = {1, 2, 4, 8, 100, 1000};
    size_t nk = 6;
    if (argc > 1 + quick) {
        nk = 0;
        for (int a = 1 + quick; a < argc && nk < 16; a++) {
            long long k = strtoll(argv[a], NULL, 10);
            if (k < 1 || k > SB_EXACT_MAX_TERMS) { fprintf(stderr, "bench_exact_sum: bad K %s\n", argv[a]); return 2; }
            ks[nk++] = k;
        }
    }
    sb_set_num_threads(1); /* the time is this thread's CPU time */
    for (size_t t = 0; t < nk; t++) {
        int64_t k = ks[t];
        /* the inputs are the rows of one (k, n) matrix, as a training step holds them */
        float **xs = malloc((size_t)k * sizeof *xs), *out = malloc(n * sizeof *out);
        float *rows = malloc((size_t)k * n * sizeof *rows);
        for (int64_t j = 0; j < k; j++) {
            xs[j] = rows + (size_t)j * n;
            for (size_t i = 0; i < n; i++) xs[j][i] = gradient_like();
        }
        uint8_t *codes = malloc(n);
        int64_t *acc = malloc(n * sizeof *acc);
        double ms[64], fast[64];
        for (int r = 0; r < runs; r++) {
            double t0 = now_ms();
            memset(codes, 0, n);
            memset(acc, 0, n * sizeof *acc);
            sb_cpu_exact_codes_max(rows, k, (int64_t)n, (int64_t)n, codes);
            sb_cpu_exact_add(rows, k, (int64_t)n, (int64_t)n, codes, k, acc);
            sb_cpu_exact_finish(acc, codes, (int64_t)n, k, out);
            fast[r] = now_ms() - t0;
        }
        for (int r = 0; r < runs; r++) {
            double t0 = now_ms();
            memset(codes, 0, n);
            memset(acc, 0, n * sizeof *acc);
            for (int64_t j = 0; j < k; j++) sb_exact_codes_max(xs[j], n, codes);
            for (int64_t j = 0; j < k; j++) sb_exact_add(xs[j], n, codes, k, acc);
            sb_exact_finish(acc, codes, n, k, out);
            ms[r] = now_ms() - t0;
        }
        qsort(ms, (size_t)runs, sizeof *ms, cmp_double);
        qsort(fast, (size_t)runs, sizeof *fast, cmp_double);
        printf("exact_sum_ms %.3f fast_ms %.3f (%s) k %lld elements %zu per_input_ms %.4f fast %.4f "
               "bytes_per_element %d (float32: 4)\n", ms[runs / 2], fast[runs / 2], sb_isa_name(sb_isa()),
               (long long)k, n, ms[runs / 2] / (double)k, fast[runs / 2] / (double)k, 1 + sb_exact_word_bits(k) / 8);
        free(rows);
        free(xs); free(out); free(codes); free(acc);
    }
    return 0;
}
