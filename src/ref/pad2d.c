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
