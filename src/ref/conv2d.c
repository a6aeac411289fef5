/* Reference conv2d forward and backward (contract section "GEMM family",
 * conv2d). Direct loops, one output element at a time, in exactly the term
 * order the contract fixes; an im2col + GEMM implementation produces the same
 * chains and therefore the same bits.
 *
 * Layouts: x (n, c_in, h, w), weight (c_out, c_in/groups, kh, kw),
 * y / dy (n, c_out, oh, ow). Group g owns input channels
 * g*icg .. g*icg+icg-1 and output channels g*ocg .. g*ocg+ocg-1. */
#include <math.h>
#include "core/canonical_sum.h"
#include "ref/ref_linalg.h"

/* x[n][ch][ih][iw], or +0.0f where (ih, iw) is zero padding. */
static float x_padded(const sb_conv2d_geom *g, const float *x, int64_t n, int64_t ch, int64_t ih,
                      int64_t iw) {
    if (ih < 0 || ih >= g->h || iw < 0 || iw >= g->w) return 0.0f;
    return x[((n * g->c_in + ch) * g->h + ih) * g->w + iw];
}

static float w_at(const sb_conv2d_geom *g, const float *weight, int64_t oc, int64_t c, int64_t i,
                  int64_t j) {
    int64_t icg = g->c_in / g->groups;
    return weight[((oc * icg + c) * g->kh + i) * g->kw + j];
}

float sb_ref_conv2d_y_chain(const sb_conv2d_geom *g, const float *x, const float *weight, int64_t n,
                            int64_t oc, int64_t r, int64_t s) {
    int64_t icg = g->c_in / g->groups, ch0 = oc / (g->c_out / g->groups) * icg;
    /* Padded taps are terms too: the chain has the same icg*kh*kw terms at
     * every output position, as in im2col, so 0*inf = NaN and the sign of
     * zero follow the weights everywhere. */
    float acc = 0.0f;
    for (int64_t c = 0; c < icg; c++)
        for (int64_t i = 0; i < g->kh; i++)
            for (int64_t j = 0; j < g->kw; j++) {
                int64_t ih = r * g->stride_h - g->pad_h + i * g->dilation_h;
                int64_t iw = s * g->stride_w - g->pad_w + j * g->dilation_w;
                acc = fmaf(x_padded(g, x, n, ch0 + c, ih, iw), w_at(g, weight, oc, c, i, j), acc);
            }
    return acc;
}

void sb_ref_conv2d_forward(const sb_conv2d_geom *g, const float *x, const float *weight,
                           const float *bias, float *y) {
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t oc = 0; oc < g->c_out; oc++)
            for (int64_t r = 0; r < g->oh; r++)
                for (int64_t s = 0; s < g->ow; s++) {
                    float acc = sb_ref_conv2d_y_chain(g, x, weight, n, oc, r, s);
                    y[((n * g->c_out + oc) * g->oh + r) * g->ow + s] =
                        bias ? acc + bias[oc] : acc;
                }
}

/* The output index o with o*stride - pad + tap*dilation == pos, or -1 when
 * no output position reads input `pos` through this tap. */
static int64_t reader(int64_t pos, int64_t tap, int64_t stride, int64_t pad, int64_t dilation,
                      int64_t out_size) {
    int64_t t = pos + pad - tap * dilation;
    if (t < 0 || t % stride != 0 || t / stride >= out_size) return -1;
    return t / stride;
}

float sb_ref_conv2d_dx_chain(const sb_conv2d_geom *g, const float *dy, const float *weight,
                             int64_t n, int64_t ch, int64_t ih, int64_t iw) {
    int64_t icg = g->c_in / g->groups, ocg = g->c_out / g->groups;
    int64_t oc0 = (ch / icg) * ocg, c = ch % icg;
    /* Only taps that really read (ih, iw) are terms: the input has no
     * padding to multiply, and this is the chain a transposed convolution
     * without inserted zeros computes. */
    float acc = 0.0f;
    for (int64_t o = 0; o < ocg; o++)
        for (int64_t i = 0; i < g->kh; i++) {
            int64_t r = reader(ih, i, g->stride_h, g->pad_h, g->dilation_h, g->oh);
            if (r < 0) continue;
            for (int64_t j = 0; j < g->kw; j++) {
                int64_t s = reader(iw, j, g->stride_w, g->pad_w, g->dilation_w, g->ow);
                if (s < 0) continue;
                float d = dy[((n * g->c_out + oc0 + o) * g->oh + r) * g->ow + s];
                acc = fmaf(d, w_at(g, weight, oc0 + o, c, i, j), acc);
            }
        }
    return acc;
}

void sb_ref_conv2d_backward_input(const sb_conv2d_geom *g, const float *dy, const float *weight,
                                  float *dx) {
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t ch = 0; ch < g->c_in; ch++)
            for (int64_t ih = 0; ih < g->h; ih++)
                for (int64_t iw = 0; iw < g->w; iw++)
                    dx[((n * g->c_in + ch) * g->h + ih) * g->w + iw] =
                        sb_ref_conv2d_dx_chain(g, dy, weight, n, ch, ih, iw);
}

float sb_ref_conv2d_dw_chain(const sb_conv2d_geom *g, const float *dy, const float *x,
                             int64_t oc, int64_t c, int64_t i, int64_t j) {
    int64_t ch0 = oc / (g->c_out / g->groups) * (g->c_in / g->groups);
    /* Every (n, r, s) is a term, padded ones with x = +0.0f: the same
     * fixed-length chain as dY . im2col(X)^T. */
    float acc = 0.0f;
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t r = 0; r < g->oh; r++)
            for (int64_t s = 0; s < g->ow; s++) {
                int64_t ih = r * g->stride_h - g->pad_h + i * g->dilation_h;
                int64_t iw = s * g->stride_w - g->pad_w + j * g->dilation_w;
                float d = dy[((n * g->c_out + oc) * g->oh + r) * g->ow + s];
                acc = fmaf(d, x_padded(g, x, n, ch0 + c, ih, iw), acc);
            }
    return acc;
}

void sb_ref_conv2d_backward_weight(const sb_conv2d_geom *g, const float *dy, const float *x,
                                   float *dweight) {
    int64_t icg = g->c_in / g->groups;
    for (int64_t oc = 0; oc < g->c_out; oc++)
        for (int64_t c = 0; c < icg; c++)
            for (int64_t i = 0; i < g->kh; i++)
                for (int64_t j = 0; j < g->kw; j++)
                    dweight[((oc * icg + c) * g->kh + i) * g->kw + j] =
                        sb_ref_conv2d_dw_chain(g, dy, x, oc, c, i, j);
}

void sb_ref_conv2d_backward_bias(const sb_conv2d_geom *g, const float *dy, float *dbias) {
    for (int64_t oc = 0; oc < g->c_out; oc++) {
        sb_sum_acc acc;
        sb_sum_init(&acc);
        for (int64_t n = 0; n < g->n; n++) {
            const float *plane = dy + (n * g->c_out + oc) * g->oh * g->ow;
            for (int64_t q = 0; q < g->oh * g->ow; q++) sb_sum_add(&acc, plane[q]);
        }
        dbias[oc] = sb_sum_result(&acc);
    }
}
