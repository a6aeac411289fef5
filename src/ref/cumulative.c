/* Reference cumsum / cumprod, forward and backward (contract section 10,
 * "Cumulative sum and product"). Each column is a sequential chain in a
 * fixed index order with one float32 rounding per operation; nothing here
 * depends on how columns are scheduled. */
#include "ref/ref_cumulative.h"

/* s = +0, then s = s + a_i for i ascending (forward) or descending
 * (backward); out_i = s. Starting from +0 is PyTorch's: a leading -0
 * becomes +0. */
static void running_sum(int64_t n, const float *a, int64_t as, float *out, int64_t os,
                        int reverse) {
    float s = 0.0f;
    for (int64_t k = 0; k < n; k++) {
        int64_t i = reverse ? n - 1 - k : k;
        s = s + a[i * as];
        out[i * os] = s;
    }
}

/* p = 1, then p = p * x_i ascending; out_i = p. */
static void running_product(int64_t n, const float *x, int64_t xs, float *out, int64_t os) {
    float p = 1.0f;
    for (int64_t i = 0; i < n; i++) {
        p = p * x[i * xs];
        out[i * os] = p;
    }
}

/* dx of y = cumprod(x) for one column (PyTorch's cumprod_backward made
 * sequential). z is the first i with x_i == 0 (n if none), z2 the second.
 *   n == 1:  dx_0 = dy_0 (bits copied).
 *   k < z:   dx_k = r_k / x_k, r = +0 then r = r + y_i * dy_i for i from
 *            z - 1 down to k (the product rounded, then the sum).
 *   k == z:  dx_z = S * P with q = 1, S = +0, then for i from z to z2 - 1:
 *            q = q * x_i when i > z, S = S + q * dy_i; P = y_{z-1}, or 1
 *            when z == 0.
 *   k > z:   dx_k = +0. */
static void product_backward(int64_t n, const float *x, int64_t xs, const float *y, int64_t ys,
                             const float *dy, int64_t dys, float *dx, int64_t os) {
    if (n == 1) {
        dx[0] = dy[0];
        return;
    }
    int64_t z = n;
    for (int64_t i = 0; i < n; i++)
        if (x[i * xs] == 0.0f) {
            z = i;
            break;
        }
    float r = 0.0f;
    for (int64_t k = z - 1; k >= 0; k--) {
        r = r + y[k * ys] * dy[k * dys];
        dx[k * os] = r / x[k * xs];
    }
    if (z == n) return;
    float q = 1.0f, s = 0.0f;
    for (int64_t i = z; i < n; i++) {
        if (i > z) {
            if (x[i * xs] == 0.0f) break;
            q = q * x[i * xs];
        }
        s = s + q * dy[i * dys];
    }
    float p = z == 0 ? 1.0f : y[(z - 1) * ys];
    dx[z * os] = s * p;
    for (int64_t k = z + 1; k < n; k++) dx[k * os] = 0.0f;
}

void sb_ref_cum_column(sb_ref_cum_kind kind, int64_t n, const float *a, int64_t as, const float *b,
                       int64_t bs, const float *c, int64_t cs, float *out, int64_t os) {
    switch (kind) {
    case SB_CUM_SUM: running_sum(n, a, as, out, os, 0); break;
    case SB_CUM_SUM_BACKWARD: running_sum(n, a, as, out, os, 1); break;
    case SB_CUM_PROD: running_product(n, a, as, out, os); break;
    case SB_CUM_PROD_BACKWARD: product_backward(n, a, as, b, bs, c, cs, out, os); break;
    }
}

int64_t sb_ref_cum_columns(const sb_ref_cum_geom *g) {
    int64_t cols = 1;
    for (int k = 0; k < g->ndim; k++)
        if (k != g->dim) cols *= g->shape[k];
    return cols;
}

void sb_ref_cum_column_at(const sb_ref_cum_geom *g, int64_t col, int64_t *xo, int64_t *yo,
                          int64_t *dyo, int64_t *oo) {
    int64_t rest = col;
    *xo = *yo = *dyo = *oo = 0;
    for (int k = g->ndim - 1; k >= 0; k--) {
        if (k == g->dim) continue;
        int64_t i = rest % g->shape[k];
        rest /= g->shape[k];
        *xo += i * g->x_stride[k];
        *yo += i * g->y_stride[k];
        *dyo += i * g->dy_stride[k];
        *oo += i * g->out_stride[k];
    }
}

void sb_ref_cumulative(sb_ref_cum_kind kind, const sb_ref_cum_geom *g, const float *x,
                       const float *y, const float *dy, float *out) {
    int d = g->dim;
    int64_t n = g->shape[d], cols = sb_ref_cum_columns(g);
    if (n == 0) return;
    for (int64_t c = 0; c < cols; c++) {
        int64_t xo, yo, dyo, oo;
        sb_ref_cum_column_at(g, c, &xo, &yo, &dyo, &oo);
        sb_ref_cum_column(kind, n, x + xo, g->x_stride[d], y ? y + yo : NULL, g->y_stride[d],
                          dy ? dy + dyo : NULL, g->dy_stride[d], out + oo, g->out_stride[d]);
    }
}
