/* src/ref/sort_rank.h - the order of the selection family (contract
 * section 18, "Sort, topk, kthvalue and median"; ref_sort.h states it):
 * the sort key of a value, the (key, position) order, an element's rank in
 * its column and the first rank a column writes. One text for every
 * implementation: the reference (and through it the CPU kernels) includes
 * it as C, and the OpenCL pointwise program embeds it before sort.cl (its
 * #include lines are dropped there, and column data is then in global
 * memory). Not installed. */
#ifndef SAMEBITS_SORT_RANK_H
#define SAMEBITS_SORT_RANK_H

#ifdef __OPENCL_VERSION__
#ifndef SB_OPENCL_INT64_T
#define SB_OPENCL_INT64_T
typedef long int64_t;
#endif
#ifndef SB_OPENCL_UINT32_T
#define SB_OPENCL_UINT32_T
typedef uint uint32_t;
#endif
#define SB_SORT_MEM __global
#define SB_SORT_BITS(v) as_uint(v)
#else
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#define SB_SORT_MEM
static inline uint32_t sb_sort_bits(float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}
#define SB_SORT_BITS(v) sb_sort_bits(v)
#endif

/* An unsigned integer whose order is the value's order with -0 equal to +0
 * and every NaN equal and above +inf; complemented for a descending order. */
static inline uint32_t sb_sort_key_of(float v, bool descending) {
    uint32_t u = SB_SORT_BITS(v);
    uint32_t key;
    if ((u & 0x7fffffffu) > 0x7f800000u)
        key = 0xffffffffu; /* every NaN: one value, above +inf */
    else if ((u & 0x7fffffffu) == 0)
        key = 0x80000000u; /* -0 and +0: one value */
    else
        key = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return descending ? ~key : key;
}

/* The order: (key a, position i) is below (key b, position j). Positions
 * differ, so it is a strict total order; the GPU's merge sort
 * (src/gpu/kernels/sort.cl) sorts by it. */
static inline bool sb_sort_before(uint32_t a, int64_t i, uint32_t b, int64_t j) {
    return a < b || (a == b && i < j);
}

/* The rank of position i in the column x[0], x[xs], ... (n elements): the
 * number of positions j whose (key, j) is below (key, i). */
static inline int64_t sb_sort_rank(SB_SORT_MEM const float *x, int64_t xs, int64_t n, int64_t i,
                                   bool descending) {
    uint32_t ki = sb_sort_key_of(x[i * xs], descending);
    int64_t rank = 0;
    for (int64_t j = 0; j < n; j++)
        if (sb_sort_before(sb_sort_key_of(x[j * xs], descending), j, ki, i)) rank++;
    return rank;
}

/* The first rank a column writes: start, or for the median the lower
 * middle (n - 1) / 2 when the column has no NaN and the rank of its first
 * NaN (n minus the number of NaNs) when it has. */
static inline int64_t sb_sort_first_rank(bool median, int64_t start, SB_SORT_MEM const float *x,
                                         int64_t xs, int64_t n) {
    if (!median) return start;
    int64_t nans = 0;
    for (int64_t i = 0; i < n; i++)
        if (x[i * xs] != x[i * xs]) nans++;
    return nans ? n - nans : (n - 1) / 2;
}

#endif
