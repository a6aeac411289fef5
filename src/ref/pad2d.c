/* Reference 2-D padding, forward and backward (contract section "Padding").
 *
 * The forward copies: every output is one input element (its bits) or the
 * constant. The backward gathers: each input sums, with the canonical sum,
 * the gradients of the outputs that copied it, in (r, s) lexicographic
 * order; reflect, replicate and circular padding copy an input several
 * times, so the order is what fixes the bits (a scatter-add in whatever
 * order threads arrive would not). */
#include "core/canonical_sum.h"
#include "ref/ref_pad.h"

/* Per axis the copies of input i are: the direct one at i + before, plus
 *   reflect:   before - i (1 <= i <= before) and before + 2*(size-1) - i
 *              (when that lies in the trailing pads);
 *   replicate: the leading pads for i = 0, the trailing ones for i = size-1
 *              (joined with the direct copy into one range);
 *   circular:  i + before - size and i + before + size when in range. */
int sb_pad_copies(sb_pad_mode mode, int64_t i, int64_t size, int64_t before, int64_t out,
                  int64_t lo[3], int64_t hi[3]) {
    int n = 0;
    int64_t direct = i + before;
    if (mode == SB_PAD_REPLICATE) {
        lo[0] = i == 0 ? 0 : direct;
        hi[0] = i == size - 1 ? out : direct + 1;
        return 1;
    }
    int64_t cand[3] = {-1, direct, -1};
    if (mode == SB_PAD_REFLECT) {
        if (i >= 1 && i <= before) cand[0] = before - i;
        int64_t far = before + 2 * (size - 1) - i;
        if (far >= before + size && far < out) cand[2] = far;
    } else if (mode == SB_PAD_CIRCULAR) {
        if (direct - size >= 0) cand[0] = direct - size;
        if (direct + size < out) cand[2] = direct + size;
    }
    for (int k = 0; k < 3; k++)
        if (cand[k] >= 0) {
            lo[n] = cand[k];
            hi[n] = cand[k] + 1;
            n++;
        }
    return n;
}

void sb_ref_pad2d_forward(const sb_pad2d_geom *g, const float *x, float *y) {
    for (int64_t p = 0; p < g->planes; p++) {
        const float *xp = x + p * g->h * g->w;
        float *yp = y + p * g->oh * g->ow;
        for (int64_t r = 0; r < g->oh; r++) {
            int64_t h = sb_pad_source(g->mode, r, g->h, g->top);
            for (int64_t s = 0; s < g->ow; s++) {
                int64_t w = sb_pad_source(g->mode, s, g->w, g->left);
                yp[r * g->ow + s] = h < 0 || w < 0 ? g->value : xp[h * g->w + w];
            }
        }
    }
}

void sb_ref_pad2d_backward(const sb_pad2d_geom *g, const float *dy, float *dx) {
    for (int64_t p = 0; p < g->planes; p++) {
        const float *dyp = dy + p * g->oh * g->ow;
        float *dxp = dx + p * g->h * g->w;
        for (int64_t h = 0; h < g->h; h++) {
            int64_t rlo[3], rhi[3];
            int nr = sb_pad_copies(g->mode, h, g->h, g->top, g->oh, rlo, rhi);
            for (int64_t w = 0; w < g->w; w++) {
                int64_t slo[3], shi[3];
                int ns = sb_pad_copies(g->mode, w, g->w, g->left, g->ow, slo, shi);
                sb_sum_acc acc;
                sb_sum_init(&acc);
                for (int a = 0; a < nr; a++)
                    for (int64_t r = rlo[a]; r < rhi[a]; r++)
                        for (int b = 0; b < ns; b++)
                            for (int64_t s = slo[b]; s < shi[b]; s++)
                                sb_sum_add(&acc, dyp[r * g->ow + s]);
                dxp[h * g->w + w] = sb_sum_result(&acc);
            }
        }
    }
}
