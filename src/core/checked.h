/* src/core/checked.h - overflow-checked size arithmetic, in one place.
 *
 * Every size computed from a caller's values (shapes, counts, strides, byte
 * sizes, geometry parameters) goes through these helpers, so no product or
 * sum of sizes can wrap around silently. Each returns true and stores the
 * result when it is representable, and false (storing nothing) when not.
 *
 * Tensor sizes are capped at SB_NUMEL_MAX elements: sixteen times that still
 * fits in int64, so a byte count (at most 8 bytes an element) or an index
 * plus one more extent computed by a kernel can never overflow. */
#ifndef SAMEBITS_CHECKED_H
#define SAMEBITS_CHECKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SB_NUMEL_MAX (INT64_MAX / 16)

static inline bool sb_checked_mul(int64_t a, int64_t b, int64_t *out) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) return false;
    *out = r;
    return true;
}

static inline bool sb_checked_add(int64_t a, int64_t b, int64_t *out) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) return false;
    *out = r;
    return true;
}

/* count * size in bytes as a size_t (32-bit targets included). */
static inline bool sb_checked_bytes(int64_t count, size_t size, size_t *out) {
    size_t r;
    if (count < 0 || (uint64_t)count > SIZE_MAX) return false;
    if (__builtin_mul_overflow((size_t)count, size, &r)) return false;
    *out = r;
    return true;
}

/* The element count of `shape` (ndim entries, each >= 0), at most
 * SB_NUMEL_MAX. The extent - the product with every 0 counted as 1 - must
 * fit too, because the contiguous strides of a shape such as
 * [0, 2^62, 2^62] are that large although it holds no element. */
static inline bool sb_checked_numel(int ndim, const int64_t *shape, int64_t *numel) {
    int64_t n = 1, extent = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) return false;
        if (!sb_checked_mul(extent, shape[i] ? shape[i] : 1, &extent) || extent > SB_NUMEL_MAX)
            return false;
        n = shape[i] ? n * shape[i] : 0; /* n <= extent: cannot overflow */
    }
    *numel = n;
    return true;
}

/* Row-major strides of `shape` (a zero-size dimension counts as 1), for a
 * shape that passed sb_checked_numel; false otherwise. */
static inline bool sb_checked_contiguous_strides(int ndim, const int64_t *shape, int64_t *strides) {
    int64_t numel, stride = 1;
    if (!sb_checked_numel(ndim, shape, &numel)) return false;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = stride;
        stride *= shape[i] ? shape[i] : 1; /* bounded by the extent checked above */
    }
    return true;
}

/* The largest element offset (in elements, either direction) a strided view
 * of `shape` reaches: the sum of |stride| * (shape - 1). False when it
 * exceeds SB_NUMEL_MAX - no buffer is that large, and its byte offsets would
 * not fit in int64. */
static inline bool sb_checked_span(int ndim, const int64_t *shape, const int64_t *strides,
                                   int64_t *span) {
    int64_t s = 0, term;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 0) { *span = 0; return true; } /* no element is ever addressed */
    }
    for (int i = 0; i < ndim; i++) {
        if (strides[i] == INT64_MIN) return false;
        int64_t a = strides[i] < 0 ? -strides[i] : strides[i];
        if (!sb_checked_mul(a, shape[i] - 1, &term) || !sb_checked_add(s, term, &s) ||
            s > SB_NUMEL_MAX)
            return false;
    }
    *span = s;
    return true;
}

#endif
