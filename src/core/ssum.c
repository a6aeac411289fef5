/* sb_ssum: the raw-buffer canonical sum (include/samebits/kernels.h), on the
 * fast backend's threaded, vectorised sum. (A public entry point, so it
 * belongs with the ops above the backends, not in core.) */
#include "samebits/kernels.h"
#include "core/checked.h"
#include "core/fpenv.h"
#include "core/internal.h"
#include "cpu/sum_internal.h"

float sb_ssum(int64_t n, const float *x, int64_t incx) {
    SB_FPENV_GUARD();
    if (n < 0) { sb_fail(SB_ERR_ARG, "sb_ssum: n = %lld is negative", (long long)n); return sb_f32_from_bits(0x7fc00000u); }
    if (n > 0 && !x) { sb_fail(SB_ERR_NULL, "sb_ssum: x is NULL"); return sb_f32_from_bits(0x7fc00000u); }
    if (incx < 1) { sb_fail(SB_ERR_ARG, "sb_ssum: incx = %lld must be >= 1", (long long)incx); return sb_f32_from_bits(0x7fc00000u); }
    /* x[(n-1)*incx] must be addressable: the last offset and its byte count fit. */
    int64_t last;
    size_t bytes;
    if (n > 0 && (!sb_checked_mul(n - 1, incx, &last) || !sb_checked_bytes(last, sizeof(float), &bytes) ||
                  last > SB_NUMEL_MAX)) {
        sb_fail(SB_ERR_ARG, "sb_ssum: n = %lld with incx = %lld reaches past any addressable buffer",
                (long long)n, (long long)incx);
        return sb_f32_from_bits(0x7fc00000u);
    }
    return sb_cpu_sum_canonical(x, n, incx);
}
