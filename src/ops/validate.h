/* src/ops/validate.h - the argument checks of every tensor-level op, and the
 * dispatch onto one device's backend. Not installed.
 *
 * Every op validates here, once, before it touches a backend: the messages
 * are the same whichever device the tensors live on. Each check names the
 * public function `fn` and the argument in its message and returns SB_OK or
 * the failing status with sb_last_error() set. */
#ifndef SAMEBITS_OPS_VALIDATE_H
#define SAMEBITS_OPS_VALIDATE_H

#include <stdbool.h>
#include <stdint.h>
#include "backend/backend.h"
#include "core/internal.h"

/* ---- shapes, layouts, aliasing ---- */

/* Ops along one dim (index, sort, cumulative) take a 0-dim tensor as one of
 * shape [1]: its rank, sizes and strides as they see them. */
static inline int sb_ops_rank_of(const sb_tensor *t) { return t->ndim ? t->ndim : 1; }
static inline int64_t sb_ops_size_at(const sb_tensor *t, int k) { return t->ndim ? t->shape[k] : 1; }
static inline int64_t sb_ops_stride_at(const sb_tensor *t, int k) {
    return t->ndim ? t->strides[k] : 0;
}

/* *d = dim wrapped into [0, rank) (negative counts from the end), for a
 * tensor of ndim dimensions (0-dim: rank 1). */
static inline sb_status sb_ops_wrap_dim(const char *fn, int dim, int ndim, int *d) {
    int nd = ndim ? ndim : 1;
    if (dim < -nd || dim >= nd)
        return sb_fail(SB_ERR_ARG, "%s: dim = %d is out of range for a tensor with %d dimensions", fn,
                       dim, ndim);
    *d = dim < 0 ? dim + nd : dim;
    return SB_OK;
}

/* t must have exactly (ndim, shape). */
sb_status sb_expect_shape(const char *fn, const char *name, const sb_tensor *t, int ndim,
                          const int64_t *shape);
/* sb_check_contiguous, except that empty tensors always pass. */
sb_status sb_check_contig(const char *fn, const char *name, const sb_tensor *t);
/* float32, rank in [min_nd, max_nd], contiguous. */
sb_status sb_check_dense(const char *fn, const char *name, const sb_tensor *t, int min_nd,
                         int max_nd);
/* Fails when `out` (may be NULL) shares memory with `t` (may be NULL). */
sb_status sb_check_no_alias(const char *fn, const char *oname, const sb_tensor *out,
                            const char *name, const sb_tensor *t);

/* Makes `view` a view of t broadcast to (ndim, shape). */
sb_status sb_pw_broadcast_view(const char *fn, const char *name, const sb_tensor *t, int ndim,
                               const int64_t *shape, sb_tensor *view);
/* out must not overlap itself. */
sb_status sb_pw_check_out(const char *fn, const char *name, const sb_tensor *out);
/* out may share memory with `in_view` (broadcast to out's shape) only with
 * the identical layout; `in_orig` is the caller's tensor (for its extent). */
sb_status sb_pw_check_alias(const char *fn, const char *in_name, const sb_tensor *in_orig,
                            const sb_tensor *in_view, const char *out_name,
                            const sb_tensor *out);
/* t must have exactly (nd, shape); the message says "expected <what> [..]". */
sb_status sb_pw_check_shape(const char *fn, const char *name, const sb_tensor *t, int nd,
                            const int64_t *shape, const char *what);
/* true if the memory spans of a and b intersect (empty tensors never do). */
bool sb_pw_overlap(const sb_tensor *a, const sb_tensor *b);
/* Validates the common unary-shaped call: each of in[0..nin-1] is F32 with
 * out's shape; out is F32, non-self-overlapping, aliases only identically. */
sb_status sb_pw_check_same(const char *fn, int nin, const sb_tensor *const *in,
                           const char *const *names, const sb_tensor *out, const char *out_name);

/* ---- devices ---- */

/* All non-NULL tensors of ts[0..n-1] must live on one device; *be is its
 * backend. `names` lists the tensors' names separated by commas (as
 * SB_OPS_BACKEND writes them). With every tensor NULL, *be is the CPU's. */
sb_status sb_ops_backend_of(const char *fn, const char *names, int n,
                            const sb_tensor *const *ts, const sb_backend **be);
#define SB_OPS_BACKEND(fn, be, ...)                                                      \
    sb_ops_backend_of((fn), #__VA_ARGS__,                                                \
                      (int)(sizeof((const sb_tensor *[]){__VA_ARGS__}) /                 \
                            sizeof(const sb_tensor *)),                                  \
                      (const sb_tensor *[]){__VA_ARGS__}, (be))

/* The elements of t (any strides, any dtype) in row-major order as a
 * contiguous host buffer, for checks that must read values (index ranges,
 * mask values). *host is t's own memory when that is already contiguous
 * host memory, else a copy to free() (*owned set). */
sb_status sb_ops_read_host(const char *fn, const sb_backend *be, const sb_tensor *t,
                           const void **host, void **owned);

/* Every value of the SB_I64 tensor `index` (named iname) in [0, size), the
 * size of tname along dim d: checked before anything is written
 * (SB_ERR_RANGE naming the element's row-major position and value). */
sb_status sb_ops_check_index_values(const char *fn, const sb_backend *be, const sb_tensor *index,
                                    const char *iname, int64_t size, const char *tname, int d);

/* ---- staging on the tensors' device (src/ops/loss.c) ----
 * A float32 input as a contiguous buffer: its own data, or a fresh copy on
 * the same device in *copy (free with sb_tensor_free; NULL when not needed). */
sb_status sb_loss_input(const sb_tensor *t, sb_tensor **copy, const float **data);
/* A float32 output as a contiguous buffer: its own data, or scratch on the
 * same device that sb_loss_output_done copies back (and frees). */
sb_status sb_loss_output(sb_tensor *t, sb_tensor **scratch, float **data);
sb_status sb_loss_output_done(sb_tensor *t, sb_tensor *scratch);
/* reduction is SB_LOSS_NONE, _MEAN or _SUM. */
sb_status sb_loss_check_reduction(const char *fn, sb_loss_reduction reduction);
/* A float32 loss or dloss `t` of `like`'s shape (NONE) or 0-d (MEAN/SUM). */
sb_status sb_loss_check_shape(const char *fn, const char *name, const sb_tensor *t,
                              sb_loss_reduction reduction, const sb_tensor *like);

#endif
