/* Reference kernels of the index family (contract "Index, scatter and
 * embedding"): one walk over the iteration shape in row-major order. For the
 * scatter-add that order is the contract: every destination element gets
 * its terms in ascending source position, one rounding per add. */
#include "ref/ref_index.h"

/* The offsets of position p (row-major odometer idx) on the dense side, the
 * index and the table (without the table's coordinate along dim). */
typedef struct walk {
    int64_t idx[SB_MAX_DIMS];
    int64_t dense, index, table;
} walk;

static void step(const sb_ref_index_geom *g, walk *w) {
    for (int k = g->ndim - 1; k >= 0; k--) {
        int64_t ts = k == g->dim ? 0 : g->table_stride[k];
        if (++w->idx[k] < g->shape[k]) {
            w->dense += g->dense_stride[k];
            w->index += g->index_stride[k];
            w->table += ts;
            return;
        }
        w->idx[k] = 0;
        w->dense -= (g->shape[k] - 1) * g->dense_stride[k];
        w->index -= (g->shape[k] - 1) * g->index_stride[k];
        w->table -= (g->shape[k] - 1) * ts;
    }
}

static int64_t count(const sb_ref_index_geom *g) {
    int64_t n = 1;
    for (int k = 0; k < g->ndim; k++) n *= g->shape[k];
    return n;
}

void sb_ref_index_gather(const sb_ref_index_geom *g, const float *table, const int64_t *index,
                         float *dense) {
    walk w = {{0}, 0, 0, 0};
    int64_t n = count(g), ts = g->table_stride[g->dim];
    for (int64_t e = 0; e < n; e++) {
        dense[w.dense] = table[w.table + index[w.index] * ts];
        step(g, &w);
    }
}

void sb_ref_index_scatter_add(const sb_ref_index_geom *g, const float *dense,
                              const int64_t *index, bool scale, float alpha, float *table) {
    walk w = {{0}, 0, 0, 0};
    int64_t n = count(g), ts = g->table_stride[g->dim];
    for (int64_t e = 0; e < n; e++) {
        float t = scale ? alpha * dense[w.dense] : dense[w.dense];
        float *d = &table[w.table + index[w.index] * ts];
        *d = *d + t;
        step(g, &w);
    }
}
