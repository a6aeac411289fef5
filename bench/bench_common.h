/* bench/bench_common.h - what the step benchmarks share: a monotonic clock,
 * the median of a run's times, a failure message naming the benchmark, and
 * the LeNet-5 training data (Fashion-MNIST, or random images when the
 * dataset is absent: a step's cost hardly depends on the values). */
#ifndef SB_BENCH_COMMON_H
#define SB_BENCH_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "samebits.h"
#include "samebits/train.h"

static inline double bench_now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static inline int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n) (sorts v). */
static inline double bench_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return v[n / 2];
}

/* Prints "NAME: WHAT: sb_last_error()" and returns 1, for `return`. */
static inline int bench_fail(const char *name, const char *what) {
    fprintf(stderr, "%s: %s: %s\n", name, what, sb_last_error());
    return 1;
}

/* Fashion-MNIST's training set from dir, or 1000 uniform random images with
 * labels i % 10 when dir does not hold it. */
static inline sb_status bench_lenet_data(const char *dir, sb_dataset *train) {
    *train = (sb_dataset){0};
    if (sb_mnist_load(dir, true, train) == SB_OK) return SB_OK;
    int64_t ishape[4] = {1000, 1, 28, 28}, lshape[1] = {1000};
    sb_rng rng = sb_rng_make(1, 0);
    sb_status s = sb_tensor_new(&train->images, SB_F32, 4, ishape);
    if (s == SB_OK) s = sb_tensor_new(&train->labels, SB_I64, 1, lshape);
    if (s == SB_OK) s = sb_rng_uniform(&rng, 0, (float *)train->images->data, 1000 * 28 * 28);
    if (s != SB_OK) return s;
    int64_t *lab = (int64_t *)train->labels->data;
    for (int i = 0; i < 1000; i++) lab[i] = i % 10;
    return SB_OK;
}

#endif
