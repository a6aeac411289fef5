/* Reference 2-D max and average pooling, forward and backward (contract
 * section "Pooling").
 *
 * x is (planes, h, w) with planes = N*C, y / dy (planes, oh, ow). Window
 * (r, s) covers rows r*stride_h - pad_h + i*dil_h (i = 0..kh-1) and columns
 * s*stride_w - pad_w + j*dil_w (j = 0..kw-1), or for adaptive pooling the rows
 * floor(r*h/oh) .. ceil((r+1)*h/oh)-1 and likewise for columns
 * (sb_pool_window in ref_linalg.h); the caller guarantees each window holds at
 * least one in-bounds element. Backward passes gather: each input element
 * sums its own contributions in window order, so the result never depends on
 * the order in which windows are visited (scatter races on a GPU would). */
#include <math.h>
#include "core/internal.h"
#include "core/canonical_sum.h"
#include "ref/ref_linalg.h"

void sb_ref_max_pool2d_forward(const sb_pool2d_geom *g, const float *x, float *y, int64_t *indices) {
    sb_pool_axis rows = sb_pool_rows(g), cols = sb_pool_cols(g);
    int64_t dh = sb_pool_step(&rows), dw = sb_pool_step(&cols);
    for (int64_t p = 0; p < g->planes; p++) {
        const float *xp = x + p * g->h * g->w;
        for (int64_t r = 0; r < g->oh; r++)
            for (int64_t s = 0; s < g->ow; s++) {
                int64_t h0, h1, w0, w1;
                sb_pool_window(&rows, r, &h0, &h1);
                sb_pool_window(&cols, s, &w0, &w1);
                /* Padding is -inf in spirit: it never wins, so only
                 * in-bounds elements are candidates. A candidate replaces
                 * the best only when it is NaN (and the best is not) or
                 * compares strictly greater: the first NaN, else the first
                 * maximum, wins; +0 and -0 tie, so the first of them wins. */
                int64_t best = h0 * g->w + w0;
                for (int64_t ih = h0; ih < h1; ih += dh)
                    for (int64_t iw = w0; iw < w1; iw += dw) {
                        float v = xp[ih * g->w + iw], b = xp[best];
                        if (!sb_isnanf(b) && (sb_isnanf(v) || v > b)) best = ih * g->w + iw;
                    }
                int64_t q = (p * g->oh + r) * g->ow + s;
                y[q] = xp[best];
                if (indices) indices[q] = best;
            }
    }
}

void sb_ref_max_pool2d_backward(const sb_pool2d_geom *g, const float *dy, const int64_t *indices,
                                float *dx) {
    sb_pool_axis rows = sb_pool_rows(g), cols = sb_pool_cols(g);
    for (int64_t p = 0; p < g->planes; p++) {
        const float *dyp = dy + p * g->oh * g->ow;
        const int64_t *ip = indices + p * g->oh * g->ow;
        for (int64_t ih = 0; ih < g->h; ih++)
            for (int64_t iw = 0; iw < g->w; iw++) {
                int64_t r0, r1, s0, s1, me = ih * g->w + iw;
                /* a window in this range whose index is `me` holds it */
                sb_pool_windows_of(&rows, ih, &r0, &r1);
                sb_pool_windows_of(&cols, iw, &s0, &s1);
                sb_sum_acc acc;
                sb_sum_init(&acc);
                for (int64_t r = r0; r < r1; r++)
                    for (int64_t s = s0; s < s1; s++)
                        if (ip[r * g->ow + s] == me) sb_sum_add(&acc, dyp[r * g->ow + s]);
                dx[p * g->h * g->w + me] = sb_sum_result(&acc);
            }
    }
}

float sb_ref_avg_pool2d_divisor(const sb_pool2d_geom *g, int64_t r, int64_t s) {
    sb_pool_axis rows = sb_pool_rows(g), cols = sb_pool_cols(g);
    return sb_pool_divisor(&rows, &cols, g->count_include_pad, g->divisor, r, s);
}

void sb_ref_avg_pool2d_forward(const sb_pool2d_geom *g, const float *x, float *y) {
    sb_pool_axis rows = sb_pool_rows(g), cols = sb_pool_cols(g);
    for (int64_t p = 0; p < g->planes; p++) {
        const float *xp = x + p * g->h * g->w;
        for (int64_t r = 0; r < g->oh; r++)
            for (int64_t s = 0; s < g->ow; s++) {
                int64_t h0, h1, w0, w1;
                sb_pool_window(&rows, r, &h0, &h1);
                sb_pool_window(&cols, s, &w0, &w1);
                sb_sum_acc acc;
                sb_sum_init(&acc);
                for (int64_t ih = h0; ih < h1; ih++)
                    for (int64_t iw = w0; iw < w1; iw++) sb_sum_add(&acc, xp[ih * g->w + iw]);
                y[(p * g->oh + r) * g->ow + s] =
                    sb_sum_result(&acc) / sb_ref_avg_pool2d_divisor(g, r, s);
            }
    }
}

void sb_ref_avg_pool2d_backward(const sb_pool2d_geom *g, const float *dy, float *dx) {
    sb_pool_axis rows = sb_pool_rows(g), cols = sb_pool_cols(g);
    for (int64_t p = 0; p < g->planes; p++) {
        const float *dyp = dy + p * g->oh * g->ow;
        for (int64_t ih = 0; ih < g->h; ih++)
            for (int64_t iw = 0; iw < g->w; iw++) {
                int64_t r0, r1, s0, s1;
                sb_pool_windows_of(&rows, ih, &r0, &r1);
                sb_pool_windows_of(&cols, iw, &s0, &s1);
                sb_sum_acc acc;
                sb_sum_init(&acc);
                for (int64_t r = r0; r < r1; r++)
                    for (int64_t s = s0; s < s1; s++)
                        sb_sum_add(&acc, dyp[r * g->ow + s] / sb_ref_avg_pool2d_divisor(g, r, s));
                dx[(p * g->h + ih) * g->w + iw] = sb_sum_result(&acc);
            }
    }
}
