/* Tensor-level dropout: argument checks around the device's kernels (on the
 * CPU the threaded kernels of src/cpu/dropout.c, src/ref/dropout.c run per
 * element range). Dropout is
 * elementwise, so every tensor may have any strides (element i is the i-th
 * in row-major logical order, whatever the memory layout). */
#include <math.h>
#include "samebits/dropout.h"
#include "samebits/random.h"
#include <stdlib.h>
#include "core/fpenv.h"
#include "ops/validate.h"
#include "ref/ref_loss.h"

static sb_status check_p(const char *fn, float p) {
    if (!(p >= 0.0f && p <= 1.0f))
        return sb_fail(SB_ERR_ARG, "%s: p = %g is outside [0, 1]", fn, (double)p);
    return SB_OK;
}

sb_status sb_dropout_forward(const sb_tensor *x, float p, bool training, uint64_t seed,
                             uint64_t stream, uint64_t offset, sb_tensor *y, sb_tensor *mask) {
    SB_FPENV_GUARD();
    const char *fn = "sb_dropout_forward";
    SB_TRY(sb_check_tensor(fn, "x", x, SB_F32, -1));
    SB_TRY(sb_check_tensor(fn, "y", y, SB_F32, -1));
    SB_TRY(sb_check_same_shape(fn, "y", y, "x", x));
    if (mask) {
        SB_TRY(sb_check_tensor(fn, "mask", mask, SB_F32, -1));
        SB_TRY(sb_check_same_shape(fn, "mask", mask, "x", x));
    }
    SB_TRY(check_p(fn, p));
    /* y (or mask) may be x itself (in place), but not overlap it partly or each other. */
    SB_TRY(sb_check_disjoint(fn, 2, (const char *const[]){"y", "mask"}, (const sb_tensor *const[]){y, mask},
                             0, NULL, NULL));
    SB_TRY(sb_check_in_place(fn, "y", y, "x", x));
    SB_TRY(sb_check_in_place(fn, "mask", mask, "x", x));
    uint64_t n = (uint64_t)sb_tensor_numel(x);
    if (offset > SB_RNG_INDEX_LIMIT || n > SB_RNG_INDEX_LIMIT - offset)
        return sb_fail(SB_ERR_RANGE, "%s: offset %llu + %llu elements passes the index limit 2^56",
                       fn, (unsigned long long)offset, (unsigned long long)n);

    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, x, y, mask));
    sb_tensor *x_copy = NULL, *y_scratch = NULL, *m_scratch = NULL;
    const float *xd = NULL;
    float *yd = NULL, *md = NULL;
    sb_status st = sb_loss_input(x, &x_copy, &xd);
    if (st == SB_OK) st = sb_loss_output(y, &y_scratch, &yd);
    if (st == SB_OK && mask) st = sb_loss_output(mask, &m_scratch, &md);
    if (st == SB_OK)
        st = SB_BACKEND_RUN(fn, be, dropout_forward, xd, (int64_t)n, p, training, seed, stream, offset,
                            yd, md);
    sb_tensor_free(x_copy);
    if (st != SB_OK) {
        sb_tensor_free(y_scratch);
        sb_tensor_free(m_scratch);
        return st;
    }
    st = sb_loss_output_done(y, y_scratch);
    if (mask) {
        sb_status st2 = sb_loss_output_done(mask, m_scratch);
        if (st == SB_OK) st = st2;
    }
    return st;
}

sb_status sb_dropout_backward(const sb_tensor *dy, const sb_tensor *mask, float p, bool training,
                              sb_tensor *dx) {
    SB_FPENV_GUARD();
    const char *fn = "sb_dropout_backward";
    SB_TRY(sb_check_tensor(fn, "dy", dy, SB_F32, -1));
    SB_TRY(sb_check_tensor(fn, "dx", dx, SB_F32, -1));
    SB_TRY(sb_check_same_shape(fn, "dx", dx, "dy", dy));
    SB_TRY(check_p(fn, p));
    if (training) {
        if (!mask) return sb_fail(SB_ERR_NULL, "%s: mask is NULL (required when training is true)", fn);
        SB_TRY(sb_check_tensor(fn, "mask", mask, SB_F32, -1));
        SB_TRY(sb_check_same_shape(fn, "mask", mask, "dy", dy));
    }
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, dy, mask, dx));
    sb_tensor *dy_copy = NULL, *m_copy = NULL, *dx_scratch = NULL;
    const float *dyd = NULL, *md = NULL;
    float *dxd = NULL;
    SB_TRY(sb_check_in_place(fn, "dx", dx, "dy", dy)); /* exactly dy, or apart from it */
    SB_TRY(sb_check_in_place(fn, "dx", dx, "mask", mask));
    sb_status st = sb_loss_input(dy, &dy_copy, &dyd);
    if (st == SB_OK && training) st = sb_loss_input(mask, &m_copy, &md);
    int64_t n = sb_tensor_numel(dy);
    /* A mask value other than 0 or 1 is not a dropout mask: reject it
     * before writing anything (read on the host, wherever it lives). */
    if (st == SB_OK && training) {
        sb_tensor dense = *mask;
        const void *host = NULL;
        void *owned = NULL;
        dense.data = (void *)md;
        dense.ndim = 1;
        dense.shape[0] = n;
        dense.strides[0] = 1;
        st = sb_ops_read_host(fn, be, &dense, &host, &owned);
        const float *hm = host;
        for (int64_t i = 0; st == SB_OK && i < n; i++)
            if (hm[i] != 0.0f && hm[i] != 1.0f)
                st = sb_fail(SB_ERR_ARG, "%s: mask element %lld is %g, expected 0 or 1", fn,
                             (long long)i, (double)hm[i]);
        free(owned);
    }
    if (st == SB_OK) st = sb_loss_output(dx, &dx_scratch, &dxd);
    if (st == SB_OK) st = SB_BACKEND_RUN(fn, be, dropout_backward, dyd, md, n, p, training, dxd);
    sb_tensor_free(dy_copy);
    sb_tensor_free(m_copy);
    if (st != SB_OK) { sb_tensor_free(dx_scratch); return st; }
    return sb_loss_output_done(dx, dx_scratch);
}
