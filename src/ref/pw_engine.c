/* The strided pointwise engine of the reference: applies a contiguous raw
 * kernel to views of any strides, one row at a time (src/ref/ref_pointwise.h).
 * The fast engine, sb_cpu_pw_run, threads the same row walk. */
#include "core/internal.h"
#include "ref/ref_pointwise.h"

enum { PW_CHUNK = 256 };

void sb_pw_run(int nin, const sb_tensor *in, sb_tensor *out, sb_pw_kernel kernel, const void *ctx) {
    int nd = out->ndim;
    int64_t numel = sb_tensor_numel(out);
    if (numel == 0) return;
    int64_t len = nd ? out->shape[nd - 1] : 1;
    int64_t nouter = numel / len;
    int64_t istr[SB_PW_MAX_IN], ostr = nd ? out->strides[nd - 1] : 0;
    for (int k = 0; k < nin; k++) istr[k] = nd ? in[k].strides[nd - 1] : 0;
    float buf[SB_PW_MAX_IN][PW_CHUNK], obuf[PW_CHUNK];
    int64_t idx[SB_MAX_DIMS] = {0}, off[SB_PW_MAX_IN + 1] = {0};
    for (int64_t o = 0; o < nouter; o++) {
        for (int64_t c = 0; c < len; c += PW_CHUNK) {
            int64_t m = len - c < PW_CHUNK ? len - c : PW_CHUNK;
            const float *ptr[SB_PW_MAX_IN];
            for (int k = 0; k < nin; k++) {
                const float *base = (const float *)in[k].data + off[k] + c * istr[k];
                if (istr[k] == 1 || m == 1) {
                    ptr[k] = base;
                } else {
                    for (int64_t i = 0; i < m; i++) buf[k][i] = base[i * istr[k]];
                    ptr[k] = buf[k];
                }
            }
            float *obase = (float *)out->data + off[nin] + c * ostr;
            if (ostr == 1 || m == 1) {
                kernel(ctx, m, ptr, obase);
            } else {
                kernel(ctx, m, ptr, obuf);
                for (int64_t i = 0; i < m; i++) obase[i * ostr] = obuf[i];
            }
        }
        /* next row: row-major odometer over dims 0..nd-2 */
        for (int d = nd - 2; d >= 0; d--) {
            if (++idx[d] < out->shape[d]) {
                for (int k = 0; k < nin; k++) off[k] += in[k].strides[d];
                off[nin] += out->strides[d];
                break;
            }
            idx[d] = 0;
            for (int k = 0; k < nin; k++) off[k] -= (out->shape[d] - 1) * in[k].strides[d];
            off[nin] -= (out->shape[d] - 1) * out->strides[d];
        }
    }
}

