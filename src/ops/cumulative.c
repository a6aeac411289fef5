/* Tensor-level cumsum / cumprod, forward and backward (include/samebits/
 * reduce.h; contract section 10, "Cumulative sum and product"): validation
 * and the mapping onto the device's cumulative entry. On the CPU the
 * threaded kernel of src/cpu/cumulative.c runs, bit for bit
 * src/ref/cumulative.c. */
#include <stdio.h>
#include "samebits/reduce.h"
#include "core/fpenv.h"
#include "ops/validate.h"

/* One input slot of a call: its name and tensor (NULL: unused). */
typedef struct operand {
    const char *name;
    const sb_tensor *t;
} operand;

/* Checks every operand (float32, out's shape), dim, and that out is written
 * on no operand's memory; then fills the geometry and runs. a is x (or dy
 * for the cumsum backward), b y and c dy of the cumprod backward. */
static sb_status run(const char *fn, sb_ref_cum_kind kind, int dim, operand a, operand b,
                     operand c, const char *oname, sb_tensor *out) {
    const operand in[3] = {a, b, c};
    for (int i = 0; i < 3; i++)
        if (in[i].name) SB_TRY(sb_check_tensor(fn, in[i].name, in[i].t, SB_F32, -1));
    SB_TRY(sb_check_tensor(fn, oname, out, SB_F32, -1));
    int nd = sb_ops_rank_of(out), d = 0;
    SB_TRY(sb_ops_wrap_dim(fn, dim, out->ndim, &d));
    for (int i = 0; i < 3; i++)
        if (in[i].name) SB_TRY(sb_check_same_shape(fn, oname, out, in[i].name, in[i].t));
    SB_TRY(sb_pw_check_out(fn, oname, out));
    for (int i = 0; i < 3; i++)
        if (in[i].name && sb_pw_overlap(out, in[i].t))
            return sb_fail(SB_ERR_ARG, "%s: %s overlaps %s", fn, oname, in[i].name);
    const sb_backend *be;
    /* the device check names the tensors as the caller knows them */
    char names[64];
    snprintf(names, sizeof names, "%s, %s, %s, %s", a.name, b.name ? b.name : "-",
             c.name ? c.name : "-", oname);
    const sb_tensor *const all[4] = {a.t, b.t, c.t, out};
    SB_TRY(sb_ops_backend_of(fn, names, 4, all, &be));
    sb_ref_cum_geom g = {.ndim = nd, .dim = d};
    for (int k = 0; k < nd; k++) {
        g.shape[k] = sb_ops_size_at(out, k);
        g.x_stride[k] = sb_ops_stride_at(a.t, k);
        g.y_stride[k] = b.t ? sb_ops_stride_at(b.t, k) : 0;
        g.dy_stride[k] = c.t ? sb_ops_stride_at(c.t, k) : 0;
        g.out_stride[k] = sb_ops_stride_at(out, k);
    }
    return SB_BACKEND_RUN(fn, be, cumulative, kind, &g, a.t->data, b.t ? b.t->data : NULL,
                          c.t ? c.t->data : NULL, out->data);
}

static const operand none = {NULL, NULL};

sb_status sb_cumsum(const sb_tensor *x, int dim, sb_tensor *out) {
    SB_FPENV_GUARD();
    return run("sb_cumsum", SB_CUM_SUM, dim, (operand){"x", x}, none, none, "out", out);
}

sb_status sb_cumsum_backward(const sb_tensor *dy, int dim, sb_tensor *dx) {
    SB_FPENV_GUARD();
    return run("sb_cumsum_backward", SB_CUM_SUM_BACKWARD, dim, (operand){"dy", dy}, none, none,
               "dx", dx);
}

sb_status sb_cumprod(const sb_tensor *x, int dim, sb_tensor *out) {
    SB_FPENV_GUARD();
    return run("sb_cumprod", SB_CUM_PROD, dim, (operand){"x", x}, none, none, "out", out);
}

sb_status sb_cumprod_backward(const sb_tensor *x, const sb_tensor *y, const sb_tensor *dy, int dim,
                              sb_tensor *dx) {
    SB_FPENV_GUARD();
    return run("sb_cumprod_backward", SB_CUM_PROD_BACKWARD, dim, (operand){"x", x},
               (operand){"y", y}, (operand){"dy", dy}, "dx", dx);
}
