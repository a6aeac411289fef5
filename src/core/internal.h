/* src/core/internal.h - helpers every samebits source file may use.
 * Not installed; public code sees only include/. It includes only the public
 * headers its own declarations need (status codes, tensors): each source
 * file includes the public headers of the functions it calls. */
#ifndef SAMEBITS_INTERNAL_H
#define SAMEBITS_INTERNAL_H

#include <stdint.h>
#include <string.h>
#include "samebits/status.h"
#include "samebits/tensor.h"

/* Record a failure for sb_last_error() and return `status`, so a check reads
 *     if (!x) return sb_fail(SB_ERR_NULL, "sb_matmul: a is NULL");        */
sb_status sb_fail(sb_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A public function that failed inside another one names itself: the
 * current message's "callee:" prefix becomes "fn:". Returns `status`. */
sb_status sb_fail_as(const char *fn, sb_status status);

/* Propagate a failing status unchanged (its message is already set). */
#define SB_TRY(expr)                                                           \
    do {                                                                       \
        sb_status sb_try_status_ = (expr);                                     \
        if (sb_try_status_ != SB_OK) return sb_try_status_;                   \
    } while (0)

/* Argument validation shared by every tensor-level op; `fn` names the
 * public function in the message. Each returns SB_OK or sets the error.
 * sb_check_header: t is not NULL and its header is sound - ndim in
 * 0..SB_MAX_DIMS, a valid dtype and device, shapes >= 0, size and strides
 * representable (src/core/checked.h) - so its shape may be read. Every entry
 * point that reads a caller's tensor calls it first (sb_check_tensor does). */
sb_status sb_check_header(const char *fn, const char *name, const sb_tensor *t);
sb_status sb_check_tensor(const char *fn, const char *name, const sb_tensor *t,
                          sb_dtype dtype, int ndim /* -1: any */);
/* sb_check_tensor, and t must be on the CPU (code that reads t->data). */
sb_status sb_check_host_tensor(const char *fn, const char *name, const sb_tensor *t,
                               sb_dtype dtype, int ndim);
sb_status sb_check_contiguous(const char *fn, const char *name, const sb_tensor *t);
sb_status sb_check_same_shape(const char *fn, const char *name_a, const sb_tensor *a,
                              const char *name_b, const sb_tensor *b);
/* Who frees a tensor's data and header (sb_tensor.owner). */
enum { SB_OWN_WRAP = 0, SB_OWN_HEAP = 1, SB_OWN_ARENA = 2, SB_OWN_DEVICE = 3 };
/* Validates dtype/ndim/shape of a new tensor; *numel its element count. */
sb_status sb_tensor_check_shape(const char *fn, sb_dtype dtype, int ndim, const int64_t *shape,
                                int64_t *numel);
/* sb_tensor_new_in without the zero fill: for a result its op writes
 * element by element before anything reads it (autograd's outputs). */
sb_status sb_tensor_new_in_unfilled(sb_tensor **out, sb_arena *arena, sb_dtype dtype, int ndim,
                                    const int64_t *shape);
/* Fills a header: device CPU, contiguous strides unless `strides` given. */
void sb_tensor_set_header(sb_tensor *t, sb_dtype dtype, int ndim, const int64_t *shape,
                          const int64_t *strides, void *data, unsigned owner);
/* Outputs (already validated, NULL entries skipped) must not share a byte
 * with one another or with any of the listed inputs; the message names both. */
sb_status sb_check_disjoint(const char *fn, int n_out, const char *const *out_names,
                            const sb_tensor *const *outs, int n_in, const char *const *in_names,
                            const sb_tensor *const *ins);
/* out may be exactly `in` (same data, shape and strides: an in-place call)
 * or share no byte with it; a partial overlap is refused. */
sb_status sb_check_in_place(const char *fn, const char *out_name, const sb_tensor *out,
                            const char *in_name, const sb_tensor *in);
/* Writes "[2, 3, 4]" into buf; never reads past ndim (an invalid ndim
 * prints as such). */
const char *sb_shape_str(const sb_tensor *t, char *buf, size_t len);

/* Exact bit-level views of a float. */
static inline uint32_t sb_f32_bits(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
static inline float sb_f32_from_bits(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }

/* NaN test as a quiet self-comparison. isnan() would do, but under
 * -fsignaling-nans GCC turns it into a call to __isnanf, which costs more
 * than the max-pool or ReLU loop around it. */
static inline int sb_isnanf(float x) { return x != x; }

/* Allocation helpers that set an error message on failure. */
void *sb_malloc(const char *fn, size_t bytes);
void *sb_calloc(const char *fn, size_t count, size_t size);

#endif
