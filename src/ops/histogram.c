/* Tensor-level bincount and histc (include/samebits/index.h; contract
 * section 18, "bincount and histc"): validation, the histc range rule, and
 * the reference kernels of src/ref/histogram.c, which run on the CPU (the
 * work is a single pass of integer counting; a weighted bin's adds are a
 * sequential chain in ascending position). */
#include <math.h>
#include <stdlib.h>
#include "samebits/index.h"
#include "core/fpenv.h"
#include "ops/validate.h"
#include "ref/ref_histogram.h"

sb_status sb_bincount(const sb_tensor *x, const sb_tensor *weights, sb_tensor *out) {
    SB_FPENV_GUARD();
    const char *fn = "sb_bincount";
    SB_TRY(sb_check_host_tensor(fn, "x", x, SB_I64, 1));
    if (weights) SB_TRY(sb_check_host_tensor(fn, "weights", weights, SB_F32, 1));
    SB_TRY(sb_check_host_tensor(fn, "out", out, weights ? SB_F32 : SB_I64, 1));
    int64_t n = x->shape[0], nbins = out->shape[0];
    if (weights && weights->shape[0] != n)
        return sb_fail(SB_ERR_SHAPE, "%s: weights has %lld elements but x has %lld (they must match)",
                       fn, (long long)weights->shape[0], (long long)n);
    SB_TRY(sb_pw_check_out(fn, "out", out));
    if (sb_pw_overlap(out, x)) return sb_fail(SB_ERR_ARG, "%s: out overlaps x", fn);
    if (weights && sb_pw_overlap(out, weights))
        return sb_fail(SB_ERR_ARG, "%s: out overlaps weights", fn);
    const int64_t *xv = x->data;
    for (int64_t i = 0; i < n; i++)
        if (xv[i * x->strides[0]] < 0 || xv[i * x->strides[0]] >= nbins)
            return sb_fail(SB_ERR_RANGE,
                           "%s: x element %lld is %lld, outside [0, %lld) (out's length; x must "
                           "be non-negative)",
                           fn, (long long)i, (long long)xv[i * x->strides[0]], (long long)nbins);
    sb_ref_bincount(n, xv, x->strides[0], weights ? weights->data : NULL,
                    weights ? weights->strides[0] : 0, nbins, weights ? NULL : out->data,
                    out->strides[0], weights ? out->data : NULL, out->strides[0]);
    return SB_OK;
}

/* The range of the bins: [min, max] as given, or x's own when they are
 * equal (widened by 1 each way, in double then rounded, as PyTorch). */
static sb_status histc_range(const char *fn, const float *x, int64_t n, float *lo, float *hi) {
    if (*lo > *hi || *lo != *lo || *hi != *hi)
        return sb_fail(SB_ERR_ARG, "%s: min = %g, max = %g: max must not be below min", fn,
                       (double)*lo, (double)*hi);
    if (*lo == *hi && n > 0) {
        float a = x[0], b = x[0];
        for (int64_t i = 0; i < n; i++) {
            if (!isfinite(x[i]))
                return sb_fail(SB_ERR_ARG, "%s: min == max takes the range from x, which holds "
                               "%g at element %lld (the range must be finite)",
                               fn, (double)x[i], (long long)i);
            a = x[i] < a ? x[i] : a;
            b = x[i] > b ? x[i] : b;
        }
        *lo = a;
        *hi = b;
    }
    if (*lo == *hi) {
        *lo = (float)((double)*lo - 1.0);
        *hi = (float)((double)*hi + 1.0);
    }
    if (!isfinite(*lo) || !isfinite(*hi) || !(*lo < *hi))
        return sb_fail(SB_ERR_ARG, "%s: the range [%g, %g] is not finite with min < max", fn,
                       (double)*lo, (double)*hi);
    return SB_OK;
}

sb_status sb_histc(const sb_tensor *x, int64_t bins, float min, float max, sb_tensor *out) {
    SB_FPENV_GUARD();
    const char *fn = "sb_histc";
    SB_TRY(sb_check_host_tensor(fn, "x", x, SB_F32, -1));
    SB_TRY(sb_check_host_tensor(fn, "out", out, SB_F32, 1));
    if (bins < 1)
        return sb_fail(SB_ERR_ARG, "%s: bins = %lld must be at least 1", fn, (long long)bins);
    if (out->shape[0] != bins)
        return sb_fail(SB_ERR_SHAPE, "%s: out has %lld elements, expected bins = %lld", fn,
                       (long long)out->shape[0], (long long)bins);
    SB_TRY(sb_pw_check_out(fn, "out", out));
    if (sb_pw_overlap(out, x)) return sb_fail(SB_ERR_ARG, "%s: out overlaps x", fn);
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, x, out));
    const void *host;
    void *owned;
    SB_TRY(sb_ops_read_host(fn, be, x, &host, &owned));
    int64_t n = sb_tensor_numel(x);
    float lo = min, hi = max;
    sb_status st = histc_range(fn, host, n, &lo, &hi);
    int64_t *counts = st == SB_OK ? sb_malloc(fn, (size_t)bins * sizeof *counts) : NULL;
    if (st == SB_OK && !counts) st = SB_ERR_NOMEM;
    if (st == SB_OK) sb_ref_histc(n, host, 1, bins, lo, hi, counts, out->data, out->strides[0]);
    free(counts);
    free(owned);
    return st;
}
