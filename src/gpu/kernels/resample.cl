/* src/gpu/kernels/resample.cl - interpolation and grid sampling, forward
 * and backward (contract section 8; src/ref/interpolate.c,
 * src/ref/grid_sample.c), in the portable dialect. The program text is
 * sum_acc.cl, src/ref/grid_geometry.h (the source coordinates and corners,
 * one text with the reference) and this file.
 *
 * Interpolation reads the reference's own tap and reader tables
 * (sb_interp_tables_build, run on the host and uploaded): geometry g holds
 * planes, the nearest flag, then per axis k at g + 2 + 9k: in, out, taps
 * and the offsets, into g itself, of idx, gfirst, gout, gbeg, and, into
 * the weight table wt, of w and gw (src/ref/ref_interp.h says what they
 * are). The forward is a work-item per output nesting the axes as the
 * reference's `nest` does; the backward a work-item per input element
 * summing, through sb_acc, the terms of its readers in the reference's
 * order (outputs row-major, taps in order within one output): a gather, so
 * no order depends on which work-item runs.
 *
 * Grid sampling: geometry n, c, h, w, oh, ow, mode, padding,
 * align_corners. The forward is a work-item per output, dgrid a work-item
 * per grid point (the canonical sum over channels), dx a work-item per
 * input element of one batch entry, summing its readers (grid points
 * row-major, corners in order: the reference's sb_grid_readers_build, run
 * on the host from the grid) through sb_acc. */

#define SB_INTERP_GEOM_AXIS 9

// y (planes, out0, out1, out2) from x (planes, in0, in1, in2)
SB_KERNEL sb_interp_forward(SB_GLOBAL const SB_LONG *g, SB_GLOBAL const float *wt,
                            SB_GLOBAL const float *x, SB_LONG x0, SB_GLOBAL float *y, SB_LONG y0) {
    SB_GLOBAL const SB_LONG *a0 = g + 2, *a1 = a0 + SB_INTERP_GEOM_AXIS, *a2 = a1 + SB_INTERP_GEOM_AXIS;
    const SB_LONG in1 = a1[0], in2 = a2[0], out0 = a0[1], out1 = a1[1], out2 = a2[1];
    const int t0 = (int)a0[2], t1 = (int)a1[2], t2 = (int)a2[2];
    const SB_LONG plane_in = a0[0] * in1 * in2, plane_out = out0 * out1 * out2;
    SB_FOR_EACH(e, g[0] * plane_out) {
        SB_LONG o2 = e % out2, o1 = (e / out2) % out1, o0 = (e / (out2 * out1)) % out0;
        SB_LONG xp = x0 + (e / plane_out) * plane_in;
        SB_GLOBAL const SB_LONG *i0 = g + a0[3] + o0 * t0, *i1 = g + a1[3] + o1 * t1,
                                *i2 = g + a2[3] + o2 * t2;
        if (g[1]) { /* nearest: a bit copy of the one tap */
            y[y0 + e] = x[xp + (i0[0] * in1 + i1[0]) * in2 + i2[0]];
            continue;
        }
        SB_GLOBAL const float *w0 = wt + a0[4] + o0 * t0, *w1 = wt + a1[4] + o1 * t1,
                              *w2 = wt + a2[4] + o2 * t2;
        /* the reference's nest: each axis sums value * weight over its taps
         * left to right, the first product as it is */
        float acc0 = 0.0f;
        for (int j0 = 0; j0 < t0; j0++) {
            float acc1 = 0.0f;
            for (int j1 = 0; j1 < t1; j1++) {
                SB_LONG row = xp + (i0[j0] * in1 + i1[j1]) * in2;
                float acc2 = 0.0f;
                for (int j2 = 0; j2 < t2; j2++) {
                    float p = x[row + i2[j2]] * w2[j2];
                    acc2 = j2 == 0 ? p : acc2 + p;
                }
                float p = acc2 * w1[j1];
                acc1 = j1 == 0 ? p : acc1 + p;
            }
            float p = acc1 * w0[j0];
            acc0 = j0 == 0 ? p : acc0 + p;
        }
        y[y0 + e] = acc0;
    }
}

// dx (planes, in0, in1, in2) from dy (planes, out0, out1, out2)
SB_KERNEL sb_interp_backward(SB_GLOBAL const SB_LONG *g, SB_GLOBAL const float *wt,
                             SB_GLOBAL const float *dy, SB_LONG dy0, SB_GLOBAL float *dx,
                             SB_LONG dx0) {
    SB_GLOBAL const SB_LONG *a0 = g + 2, *a1 = a0 + SB_INTERP_GEOM_AXIS, *a2 = a1 + SB_INTERP_GEOM_AXIS;
    const SB_LONG in0 = a0[0], in1 = a1[0], in2 = a2[0], out1 = a1[1], out2 = a2[1];
    const SB_LONG plane_in = in0 * in1 * in2, plane_out = a0[1] * out1 * out2;
    /* each axis's reader tables */
    SB_GLOBAL const SB_LONG *f0 = g + a0[5], *o0 = g + a0[6], *b0 = g + a0[7];
    SB_GLOBAL const SB_LONG *f1 = g + a1[5], *o1 = g + a1[6], *b1 = g + a1[7];
    SB_GLOBAL const SB_LONG *f2 = g + a2[5], *o2 = g + a2[6], *b2 = g + a2[7];
    SB_GLOBAL const float *gw0 = wt + a0[8], *gw1 = wt + a1[8], *gw2 = wt + a2[8];
    SB_FOR_EACH(e, g[0] * plane_in) {
        SB_LONG i2 = e % in2, i1 = (e / in2) % in1, i0 = (e / (in2 * in1)) % in0;
        SB_LONG dyp = dy0 + (e / plane_in) * plane_out;
        sb_acc acc;
        sb_acc_init(&acc);
        /* outputs in row-major order; within one output, its taps */
        for (SB_LONG g0 = f0[i0]; g0 < f0[i0 + 1]; g0++)
            for (SB_LONG g1 = f1[i1]; g1 < f1[i1 + 1]; g1++) {
                SB_LONG dyr = dyp + (o0[g0] * out1 + o1[g1]) * out2;
                for (SB_LONG g2 = f2[i2]; g2 < f2[i2 + 1]; g2++) {
                    const float d = dy[dyr + o2[g2]];
                    for (SB_LONG e0 = b0[g0]; e0 < b0[g0 + 1]; e0++)
                        for (SB_LONG e1 = b1[g1]; e1 < b1[g1 + 1]; e1++) {
                            const float w01 = gw0[e0] * gw1[e1];
                            for (SB_LONG e2 = b2[g2]; e2 < b2[g2 + 1]; e2++)
                                sb_acc_add(&acc, d * (w01 * gw2[e2]));
                        }
                }
            }
        dx[dx0 + e] = sb_acc_result(&acc);
    }
}

/* The geometry of grid sampling, as sb_grid_geom. */
typedef struct sb_grid_dims {
    SB_LONG n, c, h, w, oh, ow;
    int mode, padding;
    bool align_corners;
} sb_grid_dims;

SB_INLINE sb_grid_dims sb_grid_dims_of(SB_GLOBAL const SB_LONG *g) {
    sb_grid_dims d = {g[0], g[1], g[2], g[3], g[4], g[5], (int)g[6], (int)g[7], g[8] != 0};
    return d;
}

/* The source position of grid point p of batch b and its gradient factors
 * (the reference's `source`). */
SB_INLINE void sb_grid_source_of(const sb_grid_dims *d, SB_GLOBAL const float *grid, SB_LONG grid0,
                                 SB_LONG b, SB_LONG p, float *ix, float *iy, float *mx, float *my) {
    SB_LONG at = grid0 + (b * d->oh * d->ow + p) * 2;
    *ix = sb_grid_source(grid[at], d->w, d->padding, d->align_corners, mx);
    *iy = sb_grid_source(grid[at + 1], d->h, d->padding, d->align_corners, my);
}

// y (n, c, oh, ow) from x (n, c, h, w) and grid (n, oh, ow, 2)
SB_KERNEL sb_grid_forward(SB_GLOBAL const SB_LONG *g, SB_GLOBAL const float *x, SB_LONG x0,
                          SB_GLOBAL const float *grid, SB_LONG grid0, SB_GLOBAL float *y,
                          SB_LONG y0) {
    const sb_grid_dims d = sb_grid_dims_of(g);
    const SB_LONG plane_in = d.h * d.w, plane_out = d.oh * d.ow;
    SB_FOR_EACH(e, d.n * d.c * plane_out) {
        SB_LONG p = e % plane_out, bc = e / plane_out, b = bc / d.c;
        float ix, iy, mx, my;
        sb_grid_source_of(&d, grid, grid0, b, p, &ix, &iy, &mx, &my);
        SB_LONG xc = x0 + bc * plane_in;
        if (d.mode == SB_GRID_NEAREST) {
            int64_t q = sb_grid_nearest(ix, iy, d.h, d.w);
            y[y0 + e] = q < 0 ? 0.0f : x[xc + q];
            continue;
        }
        sb_grid_corners k;
        sb_grid_bilinear(ix, iy, d.h, d.w, &k);
        float acc = 0.0f;
        for (int j = 0; j < 4; j++) {
            float v = k.pos[j] < 0 ? 0.0f : x[xc + k.pos[j]];
            float t = v * k.w[j];
            acc = j == 0 ? t : acc + t;
        }
        y[y0 + e] = acc;
    }
}

// dgrid (n, oh, ow, 2): per grid point, the canonical sum over channels
SB_KERNEL sb_grid_dgrid(SB_GLOBAL const SB_LONG *g, SB_GLOBAL const float *x, SB_LONG x0,
                        SB_GLOBAL const float *grid, SB_LONG grid0, SB_GLOBAL const float *dy,
                        SB_LONG dy0, SB_GLOBAL float *dgrid, SB_LONG dgrid0) {
    const sb_grid_dims d = sb_grid_dims_of(g);
    const SB_LONG plane_in = d.h * d.w, plane_out = d.oh * d.ow;
    SB_FOR_EACH(e, d.n * plane_out) {
        SB_LONG p = e % plane_out, b = e / plane_out;
        SB_LONG at = dgrid0 + e * 2;
        if (d.mode == SB_GRID_NEAREST) {
            dgrid[at] = dgrid[at + 1] = 0.0f;
            continue;
        }
        float ix, iy, mx, my;
        sb_grid_source_of(&d, grid, grid0, b, p, &ix, &iy, &mx, &my);
        sb_grid_corners k;
        sb_grid_bilinear(ix, iy, d.h, d.w, &k);
        const float ex = 1.0f - k.fx, sy = 1.0f - k.fy;
        sb_acc ax, ay;
        sb_acc_init(&ax);
        sb_acc_init(&ay);
        for (SB_LONG c = 0; c < d.c; c++) {
            SB_LONG xc = x0 + (b * d.c + c) * plane_in;
            float v[4];
            for (int j = 0; j < 4; j++) v[j] = k.pos[j] < 0 ? 0.0f : x[xc + k.pos[j]];
            float dv = dy[dy0 + (b * d.c + c) * plane_out + p];
            sb_acc_add(&ax, ((v[1] - v[0]) * sy + (v[3] - v[2]) * k.fy) * dv);
            sb_acc_add(&ay, ((v[2] - v[0]) * ex + (v[3] - v[1]) * k.fx) * dv);
        }
        dgrid[at] = mx * sb_acc_result(&ax);
        dgrid[at + 1] = my * sb_acc_result(&ay);
    }
}

// dx (n, c, h, w) from every batch entry's readers: entry b's tables at
// rd + b * (h * w + 1 + terms) (first: h * w + 1, then out: the grid point
// of each reader) and wt + b * terms (the readers' weights), terms the
// (grid point, corner) count of an entry
SB_KERNEL sb_grid_dx(SB_GLOBAL const SB_LONG *g, SB_LONG terms, SB_GLOBAL const SB_LONG *rd,
                     SB_GLOBAL const float *wt, SB_GLOBAL const float *dy, SB_LONG dy0,
                     SB_GLOBAL float *dx, SB_LONG dx0) {
    const sb_grid_dims d = sb_grid_dims_of(g);
    const SB_LONG plane_in = d.h * d.w, plane_out = d.oh * d.ow;
    SB_FOR_EACH(e, d.n * d.c * plane_in) {
        SB_LONG q = e % plane_in, bc = e / plane_in, b = bc / d.c;
        SB_GLOBAL const SB_LONG *first = rd + b * (plane_in + 1 + terms);
        SB_GLOBAL const SB_LONG *out = first + plane_in + 1;
        SB_GLOBAL const float *w = wt + b * terms;
        SB_LONG dyc = dy0 + bc * plane_out;
        sb_acc acc;
        sb_acc_init(&acc);
        for (SB_LONG r = first[q]; r < first[q + 1]; r++) sb_acc_add(&acc, dy[dyc + out[r]] * w[r]);
        dx[dx0 + e] = sb_acc_result(&acc);
    }
}

/* ---- grid sampling's reader tables, built on the device ----
 * The reference's tables (src/ref/grid_sample.c, sb_grid_readers_build):
 * batch entry b's terms e = p * corners + j (grid point p, corner j, one
 * corner for nearest) in order, grouped by the input position they read,
 * e ascending within a group; a corner outside the input reads nothing.
 * That is the terms sorted by (position, e): sb_grid_reader_terms writes
 * the pairs of every entry (entry b's `terms` pairs at b * terms: one
 * column of sort.cl's merge sort) and each term's weight, the merge sort
 * orders them, sb_grid_reader_tables turns the sorted pairs into the
 * tables sb_grid_dx reads. */

#define SB_GRID_NO_READER 0xffffffffu /* the key of a corner outside: after every position */

// keys / pos / wt at b * terms + e: term e's input position (or
// SB_GRID_NO_READER), e itself and its weight
SB_KERNEL sb_grid_reader_terms(SB_GLOBAL const SB_LONG *g, SB_LONG terms,
                               SB_GLOBAL const float *grid, SB_LONG grid0, SB_GLOBAL SB_U32 *keys,
                               SB_LONG k0, SB_GLOBAL SB_LONG *pos, SB_LONG p0,
                               SB_GLOBAL float *wt, SB_LONG w0) {
    const sb_grid_dims d = sb_grid_dims_of(g);
    const int corners = d.mode == SB_GRID_NEAREST ? 1 : 4;
    SB_FOR_EACH(i, d.n * terms) {
        SB_LONG b = i / terms, e = i % terms, p = e / corners;
        float ix, iy, mx, my, w = 1.0f;
        int64_t q;
        sb_grid_source_of(&d, grid, grid0, b, p, &ix, &iy, &mx, &my);
        if (corners == 1) {
            q = sb_grid_nearest(ix, iy, d.h, d.w);
        } else {
            sb_grid_corners k;
            sb_grid_bilinear(ix, iy, d.h, d.w, &k);
            q = k.pos[e % 4];
            w = k.w[e % 4];
        }
        keys[k0 + i] = q < 0 ? SB_GRID_NO_READER : (SB_U32)q;
        pos[p0 + i] = e;
        wt[w0 + i] = w;
    }
}

// From every entry's sorted terms (keys, pos): its tables at
// rd + b * (h * w + 1 + terms) = first (the first sorted term of each
// position, a binary search), then out (the grid point of each sorted
// term), and swt + b * terms the weights in sorted order
SB_KERNEL sb_grid_reader_tables(SB_GLOBAL const SB_LONG *g, SB_LONG terms,
                                SB_GLOBAL const SB_U32 *keys, SB_LONG k0,
                                SB_GLOBAL const SB_LONG *pos, SB_LONG p0,
                                SB_GLOBAL const float *wt, SB_LONG w0, SB_GLOBAL SB_LONG *rd,
                                SB_GLOBAL float *swt) {
    const sb_grid_dims d = sb_grid_dims_of(g);
    const int corners = d.mode == SB_GRID_NEAREST ? 1 : 4;
    const SB_LONG plane_in = d.h * d.w, per = plane_in + 1 + terms;
    SB_FOR_EACH(j, d.n * per) {
        SB_LONG b = j / per, i = j % per, at = b * terms;
        if (i <= plane_in) { /* the terms whose key is below i */
            SB_LONG a = 0, z = terms;
            while (a < z) {
                SB_LONG m = a + (z - a) / 2;
                if ((SB_LONG)keys[k0 + at + m] < i) a = m + 1;
                else z = m;
            }
            rd[j] = a;
        } else {
            SB_LONG r = i - plane_in - 1, t = pos[p0 + at + r];
            rd[j] = t / corners;
            swt[at + r] = wt[w0 + at + t];
        }
    }
}
