/* src/ops/op_table.h - the op table: one entry per public op entry point,
 * the single place that says what an op is called, what it takes, and where
 * its pieces live. Internal: not installed.
 *
 * SB_OP_TABLE(OP) calls OP once per op with
 *   OP(name, return type, (parameters),
 *      family, trace name, output-shape rule, reference, backward,
 *      verify)
 *   name          the public C function (include/samebits/<family>.h);
 *   parameters    its parameter list exactly as declared (types and names);
 *   family        the op family (the header it lives in, or activation);
 *   trace name    the record name `samebits train --trace` writes for the
 *                 op's autograd wrapper sb_ag_<trace name> (NULL: the op has
 *                 no wrapper); src/io/trace_writer.c refuses any other name;
 *   output-shape  the public function that computes the output's spatial
 *   rule          size (SB_OP_NONE: the shape is stated in the header);
 *   reference     the plain C kernel that is the contract for it
 *                 (src/ref; SB_OP_NONE for ops that only validate, view or
 *                 move data);
 *   backward      the public backward entry point (SB_OP_NONE: none);
 *   verify        the `samebits verify` case name that replays its vectors,
 *                 or "exempt: <reason>".
 * SB_SUPPORT_TABLE(FN) lists, as FN(name, return type, (parameters), family),
 * the public functions that are not ops but that the Python bindings call.
 *
 * The table is tied to the real declarations: src/ops/op_table.c redeclares
 * every function from the table's return type and parameters, so a header
 * change without a table change is a build error ("conflicting types"); it
 * also takes the address of every rule, reference and backward named here.
 * tests/test_op_table.c prints the table and the layout of every struct the
 * Python package mirrors, and tests/python/test_bindings.py compares that
 * with python/samebits/_lib.py (_SIGS and the ctypes Structures).
 *
 * Adding an op: its contract section, the reference, ONE entry here, tests,
 * then optionally a fast kernel (docs/ARCHITECTURE.md "Adding an op end to
 * end"). */
#ifndef SAMEBITS_OP_TABLE_H
#define SAMEBITS_OP_TABLE_H

#include <stddef.h>

/* The empty rule / reference / backward column. */
#define SB_OP_NONE 0

/* Any function, for the pointer columns (cast back only by who knows the
 * real type, e.g. through the name). */
typedef void (*sb_op_fn)(void);

/* One row of either table, as compiled by src/ops/op_table.c. Strings are
 * the table's tokens; a column that is SB_OP_NONE has a NULL pointer. */
typedef struct sb_op_info {
    const char *name;       /* "sb_matmul" */
    const char *ret;        /* "sb_status" */
    const char *params;     /* "(const sb_tensor *a, ...)" */
    const char *family;     /* "linalg" */
    const char *trace;      /* "linear", or NULL */
    const char *shape_rule; /* "sb_conv2d_output_size", or NULL */
    const char *reference;  /* "sb_ref_sgemm", or NULL */
    const char *backward;   /* "sb_matmul_backward", or NULL */
    const char *verify;     /* "matmul", or "exempt: ..." (NULL in the support table) */
    sb_op_fn fn, shape_fn, reference_fn, backward_fn;
} sb_op_info;

extern const sb_op_info sb_op_table[];
extern const size_t sb_op_table_count;
extern const sb_op_info sb_support_table[];
extern const size_t sb_support_table_count;

/* The op whose autograd wrapper records under `trace` (no "sb_ag_" prefix,
 * no ".d_inN" suffix), or NULL. */
const sb_op_info *sb_op_by_trace_name(const char *trace);

#define SB_OP_TABLE(OP) \
    OP(sb_matmul, sb_status, \
       (const sb_tensor *a, const sb_tensor *b, bool trans_a, bool trans_b, sb_tensor *out), \
       linalg, "matmul", SB_OP_NONE, sb_ref_sgemm, sb_matmul_backward, \
       "matmul") \
    OP(sb_matmul_backward, sb_status, \
       (const sb_tensor *dout, const sb_tensor *a, const sb_tensor *b, bool trans_a, bool trans_b, \
        sb_tensor *da, sb_tensor *db), \
       linalg, NULL, SB_OP_NONE, sb_ref_sgemm, SB_OP_NONE, \
       "matmul") \
    OP(sb_linear_forward, sb_status, \
       (const sb_tensor *x, const sb_tensor *w, const sb_tensor *bias, sb_tensor *y), \
       linalg, "linear", SB_OP_NONE, sb_ref_sgemm, sb_linear_backward, \
       "linear") \
    OP(sb_linear_backward, sb_status, \
       (const sb_tensor *dy, const sb_tensor *x, const sb_tensor *w, sb_tensor *dx, sb_tensor *dw, \
        sb_tensor *db), \
       linalg, NULL, SB_OP_NONE, sb_ref_sgemm, SB_OP_NONE, \
       "linear") \
    OP(sb_conv2d_output_size, sb_status, \
       (int64_t in_h, int64_t in_w, int64_t kernel_h, int64_t kernel_w, \
        const sb_conv2d_params *params, int64_t *out_h, int64_t *out_w), \
       conv, NULL, SB_OP_NONE, SB_OP_NONE, SB_OP_NONE, \
       "conv2d") \
    OP(sb_conv2d_forward, sb_status, \
       (const sb_tensor *x, const sb_tensor *w, const sb_tensor *bias, \
        const sb_conv2d_params *params, sb_tensor *y), \
       conv, "conv2d", sb_conv2d_output_size, sb_ref_conv2d_forward, sb_conv2d_backward, \
       "conv2d") \
    OP(sb_conv2d_backward, sb_status, \
       (const sb_tensor *dy, const sb_tensor *x, const sb_tensor *w, const sb_conv2d_params *params, \
        sb_tensor *dx, sb_tensor *dw, sb_tensor *db), \
       conv, NULL, SB_OP_NONE, sb_ref_conv2d_backward_input, SB_OP_NONE, \
       "conv2d") \
    OP(sb_conv_transpose2d_output_size, sb_status, \
       (int64_t in_h, int64_t in_w, int64_t kernel_h, int64_t kernel_w, \
        const sb_conv_transpose2d_params *params, int64_t *out_h, int64_t *out_w), \
       conv, NULL, SB_OP_NONE, SB_OP_NONE, SB_OP_NONE, \
       "exempt: composed of conv2d's chains, whose vectors the conv2d case replays") \
    OP(sb_conv_transpose2d_forward, sb_status, \
       (const sb_tensor *x, const sb_tensor *w, const sb_tensor *bias, \
        const sb_conv_transpose2d_params *params, sb_tensor *y), \
       conv, "conv_transpose2d", SB_OP_NONE, sb_ref_conv2d_backward_input, \
       sb_conv_transpose2d_backward, \
       "exempt: composed of conv2d's chains, whose vectors the conv2d case replays") \
    OP(sb_conv_transpose2d_backward, sb_status, \
       (const sb_tensor *dy, const sb_tensor *x, const sb_tensor *w, \
        const sb_conv_transpose2d_params *params, sb_tensor *dx, sb_tensor *dw, sb_tensor *db), \
       conv, NULL, SB_OP_NONE, sb_ref_conv2d_forward, SB_OP_NONE, \
       "exempt: composed of conv2d's chains, whose vectors the conv2d case replays") \
    OP(sb_pool2d_output_size, sb_status, \
       (int64_t in_h, int64_t in_w, const sb_pool2d_params *params, int64_t *out_h, int64_t *out_w), \
       conv, NULL, SB_OP_NONE, SB_OP_NONE, SB_OP_NONE, \
       "max_pool2d") \
    OP(sb_max_pool2d_forward, sb_status, \
       (const sb_tensor *x, const sb_pool2d_params *params, sb_tensor *y, sb_tensor *indices), \
       conv, "max_pool2d", sb_pool2d_output_size, sb_ref_max_pool2d_forward, sb_max_pool2d_backward, \
       "max_pool2d") \
    OP(sb_max_pool2d_backward, sb_status, \
       (const sb_tensor *dy, const sb_tensor *indices, const sb_pool2d_params *params, \
        sb_tensor *dx), \
       conv, NULL, SB_OP_NONE, sb_ref_max_pool2d_backward, SB_OP_NONE, \
       "max_pool2d") \
    OP(sb_avg_pool2d_forward, sb_status, \
       (const sb_tensor *x, const sb_pool2d_params *params, sb_tensor *y), \
       conv, "avg_pool2d", sb_pool2d_output_size, sb_ref_avg_pool2d_forward, sb_avg_pool2d_backward, \
       "avg_pool2d") \
    OP(sb_avg_pool2d_backward, sb_status, \
       (const sb_tensor *dy, const sb_pool2d_params *params, sb_tensor *dx), \
       conv, NULL, SB_OP_NONE, sb_ref_avg_pool2d_backward, SB_OP_NONE, \
       "avg_pool2d") \
    OP(sb_adaptive_max_pool2d_forward, sb_status, \
       (const sb_tensor *x, sb_tensor *y, sb_tensor *indices), \
       conv, "adaptive_max_pool2d", SB_OP_NONE, sb_ref_max_pool2d_forward, \
       sb_adaptive_max_pool2d_backward, "adaptive_max_pool2d") \
    OP(sb_adaptive_max_pool2d_backward, sb_status, \
       (const sb_tensor *dy, const sb_tensor *indices, sb_tensor *dx), \
       conv, NULL, SB_OP_NONE, sb_ref_max_pool2d_backward, SB_OP_NONE, \
       "adaptive_max_pool2d") \
    OP(sb_adaptive_avg_pool2d_forward, sb_status, \
       (const sb_tensor *x, sb_tensor *y), \
       conv, "adaptive_avg_pool2d", SB_OP_NONE, sb_ref_avg_pool2d_forward, \
       sb_adaptive_avg_pool2d_backward, "adaptive_avg_pool2d") \
    OP(sb_adaptive_avg_pool2d_backward, sb_status, \
       (const sb_tensor *dy, sb_tensor *dx), \
       conv, NULL, SB_OP_NONE, sb_ref_avg_pool2d_backward, SB_OP_NONE, \
       "adaptive_avg_pool2d") \
    OP(sb_pad2d_forward, sb_status, \
       (const sb_tensor *x, const sb_pad2d_params *params, sb_tensor *y), \
       conv, NULL, SB_OP_NONE, sb_ref_pad2d_forward, sb_pad2d_backward, \
       "pad2d") \
    OP(sb_pad2d_backward, sb_status, \
       (const sb_tensor *dy, const sb_pad2d_params *params, sb_tensor *dx), \
       conv, NULL, SB_OP_NONE, sb_ref_pad2d_backward, SB_OP_NONE, \
       "pad2d") \
    OP(sb_interpolate_forward, sb_status, \
       (const sb_tensor *x, const sb_interpolate_params *params, sb_tensor *y), \
       conv, NULL, SB_OP_NONE, sb_ref_interpolate_forward, sb_interpolate_backward, \
       "interpolate") \
    OP(sb_interpolate_backward, sb_status, \
       (const sb_tensor *dy, const sb_interpolate_params *params, sb_tensor *dx), \
       conv, NULL, SB_OP_NONE, sb_ref_interpolate_backward, SB_OP_NONE, \
       "interpolate") \
    OP(sb_grid_sample_forward, sb_status, \
       (const sb_tensor *x, const sb_tensor *grid, const sb_grid_sample_params *params, \
        sb_tensor *y), \
       conv, NULL, SB_OP_NONE, sb_ref_grid_sample_forward, sb_grid_sample_backward, \
       "grid_sample") \
    OP(sb_grid_sample_backward, sb_status, \
       (const sb_tensor *dy, const sb_tensor *x, const sb_tensor *grid, \
        const sb_grid_sample_params *params, sb_tensor *dx, sb_tensor *dgrid), \
       conv, NULL, SB_OP_NONE, sb_ref_grid_sample_backward, SB_OP_NONE, \
       "grid_sample") \
    OP(sb_binary, sb_status, \
       (sb_binary_op op, const sb_tensor *a, const sb_tensor *b, sb_tensor *out), \
       elementwise, "binary", SB_OP_NONE, sb_ref_binary, sb_binary_backward, \
       "binary") \
    OP(sb_add, sb_status, \
       (const sb_tensor *a, const sb_tensor *b, sb_tensor *out), \
       elementwise, "add", SB_OP_NONE, sb_ref_binary, sb_binary_backward, \
       "exempt: sb_binary with SB_BINARY_ADD, which verify runs") \
    OP(sb_sub, sb_status, \
       (const sb_tensor *a, const sb_tensor *b, sb_tensor *out), \
       elementwise, NULL, SB_OP_NONE, sb_ref_binary, sb_binary_backward, \
       "exempt: sb_binary with SB_BINARY_SUB, which verify runs") \
    OP(sb_mul, sb_status, \
       (const sb_tensor *a, const sb_tensor *b, sb_tensor *out), \
       elementwise, NULL, SB_OP_NONE, sb_ref_binary, sb_binary_backward, \
       "exempt: sb_binary with SB_BINARY_MUL, which verify runs") \
    OP(sb_div, sb_status, \
       (const sb_tensor *a, const sb_tensor *b, sb_tensor *out), \
       elementwise, NULL, SB_OP_NONE, sb_ref_binary, sb_binary_backward, \
       "exempt: sb_binary with SB_BINARY_DIV, which verify runs") \
    OP(sb_maximum, sb_status, \
       (const sb_tensor *a, const sb_tensor *b, sb_tensor *out), \
       elementwise, NULL, SB_OP_NONE, sb_ref_binary, sb_binary_backward, \
       "exempt: sb_binary with SB_BINARY_MAXIMUM, which verify runs") \
    OP(sb_minimum, sb_status, \
       (const sb_tensor *a, const sb_tensor *b, sb_tensor *out), \
       elementwise, NULL, SB_OP_NONE, sb_ref_binary, sb_binary_backward, \
       "exempt: sb_binary with SB_BINARY_MINIMUM, which verify runs") \
    OP(sb_binary_scalar, sb_status, \
       (sb_binary_op op, const sb_tensor *x, float s, sb_tensor *out), \
       elementwise, NULL, SB_OP_NONE, sb_ref_binary, SB_OP_NONE, \
       "binary") \
    OP(sb_add_scalar, sb_status, \
       (const sb_tensor *x, float s, sb_tensor *out), \
       elementwise, NULL, SB_OP_NONE, sb_ref_binary, SB_OP_NONE, \
       "exempt: sb_binary_scalar with SB_BINARY_ADD, which verify runs") \
    OP(sb_sub_scalar, sb_status, \
       (const sb_tensor *x, float s, sb_tensor *out), \
       elementwise, NULL, SB_OP_NONE, sb_ref_binary, SB_OP_NONE, \
       "exempt: sb_binary_scalar with SB_BINARY_SUB, which verify runs") \
    OP(sb_mul_scalar, sb_status, \
       (const sb_tensor *x, float s, sb_tensor *out), \
       elementwise, NULL, SB_OP_NONE, sb_ref_binary, SB_OP_NONE, \
       "exempt: sb_binary_scalar with SB_BINARY_MUL, which verify runs") \
    OP(sb_div_scalar, sb_status, \
       (const sb_tensor *x, float s, sb_tensor *out), \
       elementwise, NULL, SB_OP_NONE, sb_ref_binary, SB_OP_NONE, \
       "exempt: sb_binary_scalar with SB_BINARY_DIV, which verify runs") \
    OP(sb_binary_backward, sb_status, \
       (sb_binary_op op, const sb_tensor *dy, const sb_tensor *a, const sb_tensor *b, sb_tensor *da, \
        sb_tensor *db), \
       elementwise, NULL, SB_OP_NONE, sb_ref_binary_backward, SB_OP_NONE, \
       "binary") \
    OP(sb_reduce_to_shape, sb_status, \
       (const sb_tensor *grad, sb_tensor *out), \
       elementwise, NULL, SB_OP_NONE, SB_OP_NONE, SB_OP_NONE, \
       "exempt: the sum inside sb_binary_backward, which verify runs broadcast") \
    OP(sb_unary, sb_status, \
       (sb_unary_op op, const sb_tensor *x, sb_tensor *out), \
       elementwise, NULL, SB_OP_NONE, sb_ref_unary, sb_unary_backward, \
       "unary") \
    OP(sb_neg, sb_status, \
       (const sb_tensor *x, sb_tensor *out), \
       elementwise, NULL, SB_OP_NONE, sb_ref_unary, sb_unary_backward, \
       "exempt: sb_unary with SB_UNARY_NEG, which verify runs") \
    OP(sb_abs, sb_status, \
       (const sb_tensor *x, sb_tensor *out), \
       elementwise, NULL, SB_OP_NONE, sb_ref_unary, sb_unary_backward, \
       "exempt: sb_unary with SB_UNARY_ABS, which verify runs") \
    OP(sb_sqrt, sb_status, \
       (const sb_tensor *x, sb_tensor *out), \
       elementwise, NULL, SB_OP_NONE, sb_ref_unary, sb_unary_backward, \
       "exempt: sb_unary with SB_UNARY_SQRT, which verify runs") \
    OP(sb_exp, sb_status, \
       (const sb_tensor *x, sb_tensor *out), \
       elementwise, NULL, SB_OP_NONE, sb_ref_unary, sb_unary_backward, \
       "exempt: sb_unary with SB_UNARY_EXP, which verify runs") \
    OP(sb_log, sb_status, \
       (const sb_tensor *x, sb_tensor *out), \
       elementwise, NULL, SB_OP_NONE, sb_ref_unary, sb_unary_backward, \
       "exempt: sb_unary with SB_UNARY_LOG, which verify runs") \
    OP(sb_square, sb_status, \
       (const sb_tensor *x, sb_tensor *out), \
       elementwise, NULL, SB_OP_NONE, sb_ref_unary, sb_unary_backward, \
       "exempt: sb_unary with SB_UNARY_SQUARE, which verify runs") \
    OP(sb_reciprocal, sb_status, \
       (const sb_tensor *x, sb_tensor *out), \
       elementwise, NULL, SB_OP_NONE, sb_ref_unary, sb_unary_backward, \
       "exempt: sb_unary with SB_UNARY_RECIPROCAL, which verify runs") \
    OP(sb_sin, sb_status, \
       (const sb_tensor *x, sb_tensor *out), \
       elementwise, NULL, SB_OP_NONE, sb_ref_unary, sb_unary_backward, \
       "exempt: sb_unary with SB_UNARY_SIN, which verify runs") \
    OP(sb_cos, sb_status, \
       (const sb_tensor *x, sb_tensor *out), \
       elementwise, NULL, SB_OP_NONE, sb_ref_unary, sb_unary_backward, \
       "exempt: sb_unary with SB_UNARY_COS, which verify runs") \
    OP(sb_exp2, sb_status, \
       (const sb_tensor *x, sb_tensor *out), \
       elementwise, NULL, SB_OP_NONE, sb_ref_unary, sb_unary_backward, \
       "exempt: sb_unary with SB_UNARY_EXP2, which verify runs") \
    OP(sb_log2, sb_status, \
       (const sb_tensor *x, sb_tensor *out), \
       elementwise, NULL, SB_OP_NONE, sb_ref_unary, sb_unary_backward, \
       "exempt: sb_unary with SB_UNARY_LOG2, which verify runs") \
    OP(sb_rsqrt, sb_status, \
       (const sb_tensor *x, sb_tensor *out), \
       elementwise, NULL, SB_OP_NONE, sb_ref_unary, sb_unary_backward, \
       "exempt: sb_unary with SB_UNARY_RSQRT, which verify runs") \
    OP(sb_unary_backward, sb_status, \
       (sb_unary_op op, const sb_tensor *x, const sb_tensor *y, const sb_tensor *dy, sb_tensor *dx), \
       elementwise, NULL, SB_OP_NONE, sb_ref_unary_backward, SB_OP_NONE, \
       "unary") \
    OP(sb_relu_forward, sb_status, \
       (const sb_tensor *x, sb_tensor *y), \
       activation, "relu", SB_OP_NONE, sb_ref_relu_forward, sb_relu_backward, \
       "activation") \
    OP(sb_relu_backward, sb_status, \
       (const sb_tensor *x, const sb_tensor *dy, sb_tensor *dx), \
       activation, NULL, SB_OP_NONE, sb_ref_relu_backward, SB_OP_NONE, \
       "activation") \
    OP(sb_leaky_relu_forward, sb_status, \
       (const sb_tensor *x, float negative_slope, sb_tensor *y), \
       activation, NULL, SB_OP_NONE, sb_ref_leaky_relu_forward, sb_leaky_relu_backward, \
       "activation") \
    OP(sb_leaky_relu_backward, sb_status, \
       (const sb_tensor *x, const sb_tensor *dy, float negative_slope, sb_tensor *dx), \
       activation, NULL, SB_OP_NONE, sb_ref_leaky_relu_backward, SB_OP_NONE, \
       "activation") \
    OP(sb_tanh_forward, sb_status, \
       (const sb_tensor *x, sb_tensor *y), \
       activation, "tanh", SB_OP_NONE, sb_ref_tanh_forward, sb_tanh_backward, \
       "activation") \
    OP(sb_tanh_backward, sb_status, \
       (const sb_tensor *y, const sb_tensor *dy, sb_tensor *dx), \
       activation, NULL, SB_OP_NONE, sb_ref_tanh_backward, SB_OP_NONE, \
       "activation") \
    OP(sb_sigmoid_forward, sb_status, \
       (const sb_tensor *x, sb_tensor *y), \
       activation, "sigmoid", SB_OP_NONE, sb_ref_sigmoid_forward, sb_sigmoid_backward, \
       "activation") \
    OP(sb_sigmoid_backward, sb_status, \
       (const sb_tensor *y, const sb_tensor *dy, sb_tensor *dx), \
       activation, NULL, SB_OP_NONE, sb_ref_sigmoid_backward, SB_OP_NONE, \
       "activation") \
    OP(sb_silu_forward, sb_status, \
       (const sb_tensor *x, sb_tensor *y), \
       activation, NULL, SB_OP_NONE, sb_ref_silu_forward, sb_silu_backward, \
       "activation") \
    OP(sb_silu_backward, sb_status, \
       (const sb_tensor *x, const sb_tensor *dy, sb_tensor *dx), \
       activation, NULL, SB_OP_NONE, sb_ref_silu_backward, SB_OP_NONE, \
       "activation") \
    OP(sb_gelu_forward, sb_status, \
       (const sb_tensor *x, bool approximate_tanh, sb_tensor *y), \
       activation, "gelu", SB_OP_NONE, sb_ref_gelu_forward, sb_gelu_backward, \
       "activation") \
    OP(sb_gelu_backward, sb_status, \
       (const sb_tensor *x, const sb_tensor *dy, bool approximate_tanh, sb_tensor *dx), \
       activation, NULL, SB_OP_NONE, sb_ref_gelu_backward, SB_OP_NONE, \
       "activation") \
    OP(sb_softplus_forward, sb_status, \
       (const sb_tensor *x, float beta, float threshold, sb_tensor *y), \
       activation, NULL, SB_OP_NONE, sb_ref_softplus_forward, sb_softplus_backward, \
       "activation") \
    OP(sb_hardtanh_forward, sb_status, \
       (const sb_tensor *x, float min_val, float max_val, sb_tensor *y), \
       activation, NULL, SB_OP_NONE, sb_ref_hardtanh_forward, sb_hardtanh_backward, \
       "activation") \
    OP(sb_hardtanh_backward, sb_status, \
       (const sb_tensor *x, const sb_tensor *dy, float min_val, float max_val, sb_tensor *dx), \
       activation, NULL, SB_OP_NONE, sb_ref_hardtanh_backward, SB_OP_NONE, \
       "activation") \
    OP(sb_hardsigmoid_forward, sb_status, \
       (const sb_tensor *x, sb_tensor *y), \
       activation, NULL, SB_OP_NONE, sb_ref_hardsigmoid_forward, sb_hardsigmoid_backward, \
       "activation") \
    OP(sb_hardsigmoid_backward, sb_status, \
       (const sb_tensor *x, const sb_tensor *dy, sb_tensor *dx), \
       activation, NULL, SB_OP_NONE, sb_ref_hardsigmoid_backward, SB_OP_NONE, \
       "activation") \
    OP(sb_hardswish_forward, sb_status, \
       (const sb_tensor *x, sb_tensor *y), \
       activation, NULL, SB_OP_NONE, sb_ref_hardswish_forward, sb_hardswish_backward, \
       "activation") \
    OP(sb_hardswish_backward, sb_status, \
       (const sb_tensor *x, const sb_tensor *dy, sb_tensor *dx), \
       activation, NULL, SB_OP_NONE, sb_ref_hardswish_backward, SB_OP_NONE, \
       "activation") \
    OP(sb_softplus_backward, sb_status, \
       (const sb_tensor *x, const sb_tensor *dy, float beta, float threshold, sb_tensor *dx), \
       activation, NULL, SB_OP_NONE, sb_ref_softplus_backward, SB_OP_NONE, \
       "activation") \
    OP(sb_elu_forward, sb_status, \
       (const sb_tensor *x, float alpha, float scale, float input_scale, sb_tensor *y), \
       activation, NULL, SB_OP_NONE, sb_ref_elu_forward, sb_elu_backward, \
       "activation") \
    OP(sb_elu_backward, sb_status, \
       (const sb_tensor *x, const sb_tensor *dy, float alpha, float scale, float input_scale, sb_tensor *dx), \
       activation, NULL, SB_OP_NONE, sb_ref_elu_backward, SB_OP_NONE, \
       "activation") \
    OP(sb_mish_forward, sb_status, \
       (const sb_tensor *x, sb_tensor *y), \
       activation, NULL, SB_OP_NONE, sb_ref_mish_forward, sb_mish_backward, \
       "activation") \
    OP(sb_mish_backward, sb_status, \
       (const sb_tensor *x, const sb_tensor *dy, sb_tensor *dx), \
       activation, NULL, SB_OP_NONE, sb_ref_mish_backward, SB_OP_NONE, \
       "activation") \
    OP(sb_logsigmoid_forward, sb_status, \
       (const sb_tensor *x, sb_tensor *y), \
       activation, NULL, SB_OP_NONE, sb_ref_logsigmoid_forward, sb_logsigmoid_backward, \
       "activation") \
    OP(sb_logsigmoid_backward, sb_status, \
       (const sb_tensor *x, const sb_tensor *dy, sb_tensor *dx), \
       activation, NULL, SB_OP_NONE, sb_ref_logsigmoid_backward, SB_OP_NONE, \
       "activation") \
    OP(sb_hardshrink_forward, sb_status, \
       (const sb_tensor *x, float lambd, sb_tensor *y), \
       activation, NULL, SB_OP_NONE, sb_ref_hardshrink_forward, sb_hardshrink_backward, \
       "activation") \
    OP(sb_hardshrink_backward, sb_status, \
       (const sb_tensor *x, const sb_tensor *dy, float lambd, sb_tensor *dx), \
       activation, NULL, SB_OP_NONE, sb_ref_hardshrink_backward, SB_OP_NONE, \
       "activation") \
    OP(sb_softshrink_forward, sb_status, \
       (const sb_tensor *x, float lambd, sb_tensor *y), \
       activation, NULL, SB_OP_NONE, sb_ref_softshrink_forward, sb_softshrink_backward, \
       "activation") \
    OP(sb_softshrink_backward, sb_status, \
       (const sb_tensor *x, const sb_tensor *dy, float lambd, sb_tensor *dx), \
       activation, NULL, SB_OP_NONE, sb_ref_softshrink_backward, SB_OP_NONE, \
       "activation") \
    OP(sb_threshold_forward, sb_status, \
       (const sb_tensor *x, float threshold, float value, sb_tensor *y), \
       activation, NULL, SB_OP_NONE, sb_ref_threshold_forward, sb_threshold_backward, \
       "activation") \
    OP(sb_threshold_backward, sb_status, \
       (const sb_tensor *x, const sb_tensor *dy, float threshold, sb_tensor *dx), \
       activation, NULL, SB_OP_NONE, sb_ref_threshold_backward, SB_OP_NONE, \
       "activation") \
    OP(sb_prelu_forward, sb_status, \
       (const sb_tensor *x, const sb_tensor *weight, sb_tensor *y), \
       activation, NULL, SB_OP_NONE, sb_ref_prelu_forward, sb_prelu_backward, \
       "prelu") \
    OP(sb_prelu_backward, sb_status, \
       (const sb_tensor *x, const sb_tensor *weight, const sb_tensor *dy, sb_tensor *dx, \
        sb_tensor *dweight), \
       activation, NULL, SB_OP_NONE, sb_ref_prelu_backward, SB_OP_NONE, \
       "prelu") \
    OP(sb_sum, sb_status, \
       (const sb_tensor *x, const int *dims, int ndims, bool keepdim, sb_tensor *out), \
       reduce, "sum", SB_OP_NONE, sb_ref_reduce, sb_sum_backward, \
       "reduce") \
    OP(sb_mean, sb_status, \
       (const sb_tensor *x, const int *dims, int ndims, bool keepdim, sb_tensor *out), \
       reduce, "mean", SB_OP_NONE, sb_ref_reduce, sb_mean_backward, \
       "reduce") \
    OP(sb_var, sb_status, \
       (const sb_tensor *x, const int *dims, int ndims, int64_t correction, bool keepdim, \
        sb_tensor *out), \
       reduce, NULL, SB_OP_NONE, sb_ref_reduce, SB_OP_NONE, \
       "reduce") \
    OP(sb_std, sb_status, \
       (const sb_tensor *x, const int *dims, int ndims, int64_t correction, bool keepdim, \
        sb_tensor *out), \
       reduce, NULL, SB_OP_NONE, sb_ref_reduce, SB_OP_NONE, \
       "reduce") \
    OP(sb_max, sb_status, \
       (const sb_tensor *x, const int *dims, int ndims, bool keepdim, sb_tensor *out, \
        sb_tensor *indices), \
       reduce, NULL, SB_OP_NONE, sb_ref_reduce_extreme, sb_max_backward, \
       "reduce") \
    OP(sb_min, sb_status, \
       (const sb_tensor *x, const int *dims, int ndims, bool keepdim, sb_tensor *out, \
        sb_tensor *indices), \
       reduce, NULL, SB_OP_NONE, sb_ref_reduce_extreme, sb_max_backward, \
       "reduce") \
    OP(sb_argmax, sb_status, \
       (const sb_tensor *x, const int *dims, int ndims, bool keepdim, sb_tensor *indices), \
       reduce, NULL, SB_OP_NONE, sb_ref_reduce_extreme, SB_OP_NONE, \
       "reduce") \
    OP(sb_argmin, sb_status, \
       (const sb_tensor *x, const int *dims, int ndims, bool keepdim, sb_tensor *indices), \
       reduce, NULL, SB_OP_NONE, sb_ref_reduce_extreme, SB_OP_NONE, \
       "reduce") \
    OP(sb_sum_backward, sb_status, \
       (const sb_tensor *dy, const int *dims, int ndims, bool keepdim, sb_tensor *dx), \
       reduce, NULL, SB_OP_NONE, SB_OP_NONE, SB_OP_NONE, \
       "reduce") \
    OP(sb_mean_backward, sb_status, \
       (const sb_tensor *dy, const int *dims, int ndims, bool keepdim, sb_tensor *dx), \
       reduce, NULL, SB_OP_NONE, SB_OP_NONE, SB_OP_NONE, \
       "reduce") \
    OP(sb_max_backward, sb_status, \
       (const sb_tensor *dy, const sb_tensor *indices, const int *dims, int ndims, bool keepdim, \
        sb_tensor *dx), \
       reduce, NULL, SB_OP_NONE, sb_ref_reduce_scatter, SB_OP_NONE, \
       "reduce") \
    OP(sb_cumsum, sb_status, \
       (const sb_tensor *x, int dim, sb_tensor *out), \
       reduce, NULL, SB_OP_NONE, sb_ref_cumulative, sb_cumsum_backward, \
       "cumulative") \
    OP(sb_cumsum_backward, sb_status, \
       (const sb_tensor *dy, int dim, sb_tensor *dx), \
       reduce, NULL, SB_OP_NONE, sb_ref_cumulative, SB_OP_NONE, \
       "cumulative") \
    OP(sb_cumprod, sb_status, \
       (const sb_tensor *x, int dim, sb_tensor *out), \
       reduce, NULL, SB_OP_NONE, sb_ref_cumulative, sb_cumprod_backward, \
       "cumulative") \
    OP(sb_cumprod_backward, sb_status, \
       (const sb_tensor *x, const sb_tensor *y, const sb_tensor *dy, int dim, sb_tensor *dx), \
       reduce, NULL, SB_OP_NONE, sb_ref_cumulative, SB_OP_NONE, \
       "cumulative") \
    OP(sb_gather, sb_status, \
       (const sb_tensor *x, int dim, const sb_tensor *index, sb_tensor *out), \
       index, "gather", SB_OP_NONE, sb_ref_index_gather, sb_gather_backward, \
       "exempt: copies bits (no arithmetic); its backward's adds are tested in test_index") \
    OP(sb_gather_backward, sb_status, \
       (const sb_tensor *dy, int dim, const sb_tensor *index, sb_tensor *dx), \
       index, NULL, SB_OP_NONE, sb_ref_index_scatter_add, SB_OP_NONE, \
       "exempt: sb_scatter_add into zeros; test_index checks the order bit for bit") \
    OP(sb_scatter_add, sb_status, \
       (int dim, const sb_tensor *index, const sb_tensor *src, sb_tensor *out), \
       index, NULL, SB_OP_NONE, sb_ref_index_scatter_add, SB_OP_NONE, \
       "exempt: no verify vectors yet; test_index checks the order bit for bit") \
    OP(sb_index_select, sb_status, \
       (const sb_tensor *x, int dim, const sb_tensor *index, sb_tensor *out), \
       index, "index_select", SB_OP_NONE, sb_ref_index_gather, sb_index_select_backward, \
       "exempt: copies bits (no arithmetic); its backward's adds are tested in test_index") \
    OP(sb_index_select_backward, sb_status, \
       (const sb_tensor *dy, int dim, const sb_tensor *index, sb_tensor *dx), \
       index, NULL, SB_OP_NONE, sb_ref_index_scatter_add, SB_OP_NONE, \
       "exempt: sb_index_add into zeros; test_index checks the order bit for bit") \
    OP(sb_index_add, sb_status, \
       (int dim, const sb_tensor *index, const sb_tensor *source, float alpha, sb_tensor *out), \
       index, NULL, SB_OP_NONE, sb_ref_index_scatter_add, SB_OP_NONE, \
       "exempt: no verify vectors yet; test_index checks the order bit for bit") \
    OP(sb_embedding_forward, sb_status, \
       (const sb_tensor *weight, const sb_tensor *indices, sb_tensor *out), \
       index, "embedding", SB_OP_NONE, sb_ref_index_gather, sb_embedding_backward, \
       "exempt: sb_index_select over the flattened indices (copies bits); test_embedding checks it") \
    OP(sb_embedding_backward, sb_status, \
       (const sb_tensor *dy, const sb_tensor *indices, int64_t padding_idx, sb_tensor *dweight), \
       index, NULL, SB_OP_NONE, sb_ref_index_scatter_add, SB_OP_NONE, \
       "exempt: sb_index_select_backward of the kept rows; test_embedding checks the order bit for bit") \
    OP(sb_scatter_reduce, sb_status, \
       (int dim, const sb_tensor *index, const sb_tensor *src, sb_scatter_reduce_op reduce, \
        bool include_self, sb_tensor *out), \
       index, NULL, SB_OP_NONE, sb_ref_scatter_reduce, SB_OP_NONE, \
       "scatter_reduce") \
    OP(sb_bincount, sb_status, \
       (const sb_tensor *x, const sb_tensor *weights, sb_tensor *out), \
       index, NULL, SB_OP_NONE, sb_ref_bincount, SB_OP_NONE, \
       "histogram") \
    OP(sb_histc, sb_status, \
       (const sb_tensor *x, int64_t bins, float min, float max, sb_tensor *out), \
       index, NULL, SB_OP_NONE, sb_ref_histc, SB_OP_NONE, \
       "histogram") \
    OP(sb_sort, sb_status, \
       (const sb_tensor *x, int dim, bool descending, sb_tensor *values, sb_tensor *indices), \
       index, NULL, SB_OP_NONE, sb_ref_sort, sb_sort_backward, \
       "sort") \
    OP(sb_topk, sb_status, \
       (const sb_tensor *x, int64_t k, int dim, bool largest, sb_tensor *values, \
        sb_tensor *indices), \
       index, NULL, SB_OP_NONE, sb_ref_sort, sb_sort_backward, \
       "sort") \
    OP(sb_kthvalue, sb_status, \
       (const sb_tensor *x, int64_t k, int dim, bool keepdim, sb_tensor *values, \
        sb_tensor *indices), \
       index, NULL, SB_OP_NONE, sb_ref_sort, sb_sort_backward, \
       "sort") \
    OP(sb_median, sb_status, \
       (const sb_tensor *x, int dim, bool keepdim, sb_tensor *values, sb_tensor *indices), \
       index, NULL, SB_OP_NONE, sb_ref_sort, sb_sort_backward, \
       "sort") \
    OP(sb_sort_backward, sb_status, \
       (const sb_tensor *dy, int dim, const sb_tensor *indices, sb_tensor *dx), \
       index, NULL, SB_OP_NONE, sb_ref_sort_scatter, SB_OP_NONE, \
       "sort") \
    OP(sb_softmax_forward, sb_status, \
       (const sb_tensor *x, int dim, sb_tensor *y), \
       loss, "softmax", SB_OP_NONE, sb_ref_softmax_forward, sb_softmax_backward, \
       "softmax") \
    OP(sb_softmax_backward, sb_status, \
       (const sb_tensor *y, const sb_tensor *dy, int dim, sb_tensor *dx), \
       loss, NULL, SB_OP_NONE, sb_ref_softmax_backward, SB_OP_NONE, \
       "softmax") \
    OP(sb_log_softmax_forward, sb_status, \
       (const sb_tensor *x, int dim, sb_tensor *y), \
       loss, "log_softmax", SB_OP_NONE, sb_ref_log_softmax_forward, sb_log_softmax_backward, \
       "log_softmax") \
    OP(sb_log_softmax_backward, sb_status, \
       (const sb_tensor *y, const sb_tensor *dy, int dim, sb_tensor *dx), \
       loss, NULL, SB_OP_NONE, sb_ref_log_softmax_backward, SB_OP_NONE, \
       "log_softmax") \
    OP(sb_cross_entropy_forward, sb_status, \
       (const sb_tensor *logits, const sb_tensor *targets, sb_loss_reduction reduction, \
        float label_smoothing, int64_t ignore_index, sb_tensor *loss), \
       loss, "cross_entropy", SB_OP_NONE, sb_ref_cross_entropy_forward, sb_cross_entropy_backward, \
       "cross_entropy") \
    OP(sb_cross_entropy_backward, sb_status, \
       (const sb_tensor *logits, const sb_tensor *targets, sb_loss_reduction reduction, \
        float label_smoothing, int64_t ignore_index, const sb_tensor *dloss, sb_tensor *dlogits), \
       loss, NULL, SB_OP_NONE, sb_ref_cross_entropy_backward, SB_OP_NONE, \
       "cross_entropy") \
    OP(sb_nll_loss_forward, sb_status, \
       (const sb_tensor *logp, const sb_tensor *targets, sb_loss_reduction reduction, \
        int64_t ignore_index, sb_tensor *loss), \
       loss, NULL, SB_OP_NONE, sb_ref_nll_loss_forward, sb_nll_loss_backward, \
       "nll_loss") \
    OP(sb_nll_loss_backward, sb_status, \
       (const sb_tensor *logp, const sb_tensor *targets, sb_loss_reduction reduction, \
        int64_t ignore_index, const sb_tensor *dloss, sb_tensor *dlogp), \
       loss, NULL, SB_OP_NONE, sb_ref_nll_loss_backward, SB_OP_NONE, \
       "nll_loss") \
    OP(sb_class_loss_forward, sb_status, \
       (const sb_class_loss *params, const sb_tensor *input, const sb_tensor *targets, \
        const sb_tensor *weight, sb_loss_reduction reduction, sb_tensor *loss), \
       loss, NULL, SB_OP_NONE, sb_ref_class_loss_forward, sb_class_loss_backward, \
       "class_loss") \
    OP(sb_class_loss_backward, sb_status, \
       (const sb_class_loss *params, const sb_tensor *input, const sb_tensor *targets, \
        const sb_tensor *weight, sb_loss_reduction reduction, const sb_tensor *dloss, \
        sb_tensor *dinput), \
       loss, NULL, SB_OP_NONE, sb_ref_class_loss_backward, SB_OP_NONE, \
       "class_loss") \
    OP(sb_ctc_loss_forward, sb_status, \
       (const sb_ctc_loss *params, const sb_tensor *log_probs, const sb_tensor *targets, \
        const sb_tensor *input_lengths, const sb_tensor *target_lengths, \
        sb_loss_reduction reduction, sb_tensor *loss), \
       loss, NULL, SB_OP_NONE, sb_ref_ctc_loss_forward, sb_ctc_loss_backward, \
       "ctc_loss") \
    OP(sb_ctc_loss_backward, sb_status, \
       (const sb_ctc_loss *params, const sb_tensor *log_probs, const sb_tensor *targets, \
        const sb_tensor *input_lengths, const sb_tensor *target_lengths, \
        sb_loss_reduction reduction, const sb_tensor *dloss, sb_tensor *dlog_probs), \
       loss, NULL, SB_OP_NONE, sb_ref_ctc_loss_backward, SB_OP_NONE, \
       "ctc_loss") \
    OP(sb_mse_forward, sb_status, \
       (const sb_tensor *x, const sb_tensor *target, sb_loss_reduction reduction, sb_tensor *loss), \
       loss, "mse", SB_OP_NONE, sb_ref_elementwise_loss_forward, sb_mse_backward, \
       "mse") \
    OP(sb_mse_backward, sb_status, \
       (const sb_tensor *x, const sb_tensor *target, sb_loss_reduction reduction, \
        const sb_tensor *dloss, \
        sb_tensor *dx, sb_tensor *dtarget), \
       loss, NULL, SB_OP_NONE, sb_ref_elementwise_loss_backward, SB_OP_NONE, \
       "mse") \
    OP(sb_elementwise_loss_forward, sb_status, \
       (const sb_elementwise_loss *params, const sb_tensor *x, const sb_tensor *target, \
        const sb_tensor *weight, const sb_tensor *pos_weight, sb_loss_reduction reduction, \
        sb_tensor *loss), \
       loss, NULL, SB_OP_NONE, sb_ref_elementwise_loss_forward, sb_elementwise_loss_backward, \
       "elementwise_loss") \
    OP(sb_elementwise_loss_backward, sb_status, \
       (const sb_elementwise_loss *params, const sb_tensor *x, const sb_tensor *target, \
        const sb_tensor *weight, const sb_tensor *pos_weight, sb_loss_reduction reduction, \
        const sb_tensor *dloss, sb_tensor *dx, sb_tensor *dtarget), \
       loss, NULL, SB_OP_NONE, sb_ref_elementwise_loss_backward, SB_OP_NONE, \
       "elementwise_loss") \
    OP(sb_batch_norm_forward, sb_status, \
       (const sb_tensor *x, const sb_tensor *gamma, const sb_tensor *beta, sb_tensor *running_mean, \
        sb_tensor *running_var, bool training, float momentum, float eps, sb_tensor *y, \
        sb_tensor *save_mean, sb_tensor *save_rstd), \
       norm, "batch_norm", SB_OP_NONE, sb_ref_batch_norm_forward, sb_batch_norm_backward, \
       "batch_norm") \
    OP(sb_batch_norm_backward, sb_status, \
       (const sb_tensor *dy, const sb_tensor *x, const sb_tensor *gamma, const sb_tensor *save_mean, \
        const sb_tensor *save_rstd, bool training, sb_tensor *dx, sb_tensor *dgamma, \
        sb_tensor *dbeta), \
       norm, NULL, SB_OP_NONE, sb_ref_batch_norm_backward, SB_OP_NONE, \
       "batch_norm") \
    OP(sb_layer_norm_forward, sb_status, \
       (const sb_tensor *x, int normalized_ndim, const sb_tensor *gamma, const sb_tensor *beta, \
        float eps, \
        sb_tensor *y, sb_tensor *save_mean, sb_tensor *save_rstd), \
       norm, "layer_norm", SB_OP_NONE, sb_ref_layer_norm_forward, sb_layer_norm_backward, \
       "layer_norm") \
    OP(sb_layer_norm_backward, sb_status, \
       (const sb_tensor *dy, const sb_tensor *x, int normalized_ndim, const sb_tensor *gamma, \
        const sb_tensor *save_mean, const sb_tensor *save_rstd, sb_tensor *dx, sb_tensor *dgamma, \
        sb_tensor *dbeta), \
       norm, NULL, SB_OP_NONE, sb_ref_layer_norm_backward, SB_OP_NONE, \
       "layer_norm") \
    OP(sb_rms_norm_forward, sb_status, \
       (const sb_tensor *x, int normalized_ndim, const sb_tensor *weight, float eps, sb_tensor *y, \
        sb_tensor *save_rrms), \
       norm, "rms_norm", SB_OP_NONE, sb_ref_rms_norm_forward, sb_rms_norm_backward, \
       "rms_norm") \
    OP(sb_rms_norm_backward, sb_status, \
       (const sb_tensor *dy, const sb_tensor *x, int normalized_ndim, const sb_tensor *weight, \
        const sb_tensor *save_rrms, sb_tensor *dx, sb_tensor *dweight), \
       norm, NULL, SB_OP_NONE, sb_ref_rms_norm_backward, SB_OP_NONE, \
       "rms_norm") \
    OP(sb_group_norm_forward, sb_status, \
       (const sb_tensor *x, int64_t groups, const sb_tensor *gamma, const sb_tensor *beta, \
        float eps, sb_tensor *y, sb_tensor *save_mean, sb_tensor *save_rstd), \
       norm, "group_norm", SB_OP_NONE, sb_ref_group_norm_forward, sb_group_norm_backward, \
       "group_norm") \
    OP(sb_group_norm_backward, sb_status, \
       (const sb_tensor *dy, const sb_tensor *x, int64_t groups, const sb_tensor *gamma, \
        const sb_tensor *save_mean, const sb_tensor *save_rstd, sb_tensor *dx, sb_tensor *dgamma, \
        sb_tensor *dbeta), \
       norm, NULL, SB_OP_NONE, sb_ref_group_norm_backward, SB_OP_NONE, \
       "group_norm") \
    OP(sb_dropout_forward, sb_status, \
       (const sb_tensor *x, float p, bool training, uint64_t seed, uint64_t stream, uint64_t offset, \
        sb_tensor *y, sb_tensor *mask), \
       dropout, "dropout", SB_OP_NONE, sb_ref_dropout_forward, sb_dropout_backward, \
       "dropout") \
    OP(sb_dropout_backward, sb_status, \
       (const sb_tensor *dy, const sb_tensor *mask, float p, bool training, sb_tensor *dx), \
       dropout, NULL, SB_OP_NONE, sb_ref_dropout_backward, SB_OP_NONE, \
       "dropout") \
    OP(sb_sdpa_default_scale, sb_status, \
       (int64_t e, float *scale), \
       attention, NULL, SB_OP_NONE, SB_OP_NONE, SB_OP_NONE, \
       "exempt: two binary64 operations; test_attention checks it is correctly rounded") \
    OP(sb_sdpa_forward, sb_status, \
       (const sb_tensor *q, const sb_tensor *k, const sb_tensor *v, const sb_tensor *mask, \
        sb_sdpa_causal causal, float scale, float dropout_p, uint64_t seed, uint64_t stream, \
        uint64_t offset, sb_tensor *out, sb_tensor *probs), \
       attention, "sdpa", SB_OP_NONE, sb_ref_sdpa_forward, sb_sdpa_backward, \
       "sdpa") \
    OP(sb_sdpa_backward, sb_status, \
       (const sb_tensor *dout, const sb_tensor *q, const sb_tensor *k, const sb_tensor *v, \
        const sb_tensor *mask, sb_sdpa_causal causal, float scale, float dropout_p, \
        uint64_t seed, uint64_t stream, uint64_t offset, const sb_tensor *probs, sb_tensor *dq, \
        sb_tensor *dk, sb_tensor *dv), \
       attention, NULL, SB_OP_NONE, sb_ref_sdpa_backward, SB_OP_NONE, \
       "sdpa") \
    OP(sb_rnn_forward, sb_status, \
       (const sb_rnn_sequence *seq, const sb_tensor *gx, const sb_tensor *h0, const sb_tensor *c0, \
        const sb_tensor *w_hh, const sb_tensor *b_hh, const sb_tensor *w_hr, sb_tensor *y, \
        sb_tensor *h_n, sb_tensor *c_n, sb_tensor *h_prev, sb_tensor *saved), \
       recurrent, NULL, SB_OP_NONE, SB_OP_NONE, sb_rnn_backward, \
       "exempt: a sequence of public ops (matmul, add, mul, activations), each replayed by its own case") \
    OP(sb_rnn_backward, sb_status, \
       (const sb_rnn_sequence *seq, const sb_tensor *w_hh, const sb_tensor *w_hr, \
        const sb_tensor *saved, const sb_tensor *dy, const sb_tensor *dh_n, const sb_tensor *dc_n, \
        sb_tensor *dgx, sb_tensor *dgh, sb_tensor *dh_all, sb_tensor *dh0, sb_tensor *dc0), \
       recurrent, NULL, SB_OP_NONE, SB_OP_NONE, SB_OP_NONE, \
       "exempt: a sequence of public ops (matmul, add, mul, activation backward rules), each replayed by its own case") \
    OP(sb_sgd_default_config, sb_sgd_config, \
       (double lr), \
       optim, NULL, SB_OP_NONE, SB_OP_NONE, SB_OP_NONE, \
       "sgd") \
    OP(sb_sgd_check_config, sb_status, \
       (const sb_sgd_config *cfg), \
       optim, NULL, SB_OP_NONE, SB_OP_NONE, SB_OP_NONE, \
       "exempt: validation only (no result bits)") \
    OP(sb_sgd_factors_for, sb_status, \
       (const sb_sgd_config *cfg, sb_sgd_factors *out), \
       optim, NULL, SB_OP_NONE, SB_OP_NONE, SB_OP_NONE, \
       "exempt: the factors inside sb_sgd_step_tensor, which verify runs") \
    OP(sb_sgd_step, sb_status, \
       (const sb_sgd_config *cfg, int64_t step, int64_t n, float *param, const float *grad, \
        float *momentum_buf), \
       optim, NULL, SB_OP_NONE, sb_ref_sgd_update, SB_OP_NONE, \
       "exempt: the raw-buffer form of sb_sgd_step_tensor, which verify runs") \
    OP(sb_sgd_step_tensor, sb_status, \
       (const sb_sgd_config *cfg, int64_t step, sb_tensor *param, const sb_tensor *grad, \
        sb_tensor *momentum_buf), \
       optim, NULL, SB_OP_NONE, sb_ref_sgd_update, SB_OP_NONE, \
       "sgd") \
    OP(sb_adam_default_config, sb_adam_config, \
       (double lr), \
       optim, NULL, SB_OP_NONE, SB_OP_NONE, SB_OP_NONE, \
       "adam") \
    OP(sb_adamw_default_config, sb_adam_config, \
       (double lr), \
       optim, NULL, SB_OP_NONE, SB_OP_NONE, SB_OP_NONE, \
       "adam") \
    OP(sb_adam_check_config, sb_status, \
       (const sb_adam_config *cfg), \
       optim, NULL, SB_OP_NONE, SB_OP_NONE, SB_OP_NONE, \
       "exempt: validation only (no result bits)") \
    OP(sb_adam_factors_for, sb_status, \
       (const sb_adam_config *cfg, int64_t step, sb_adam_factors *out), \
       optim, NULL, SB_OP_NONE, SB_OP_NONE, SB_OP_NONE, \
       "exempt: the factors inside sb_adam_step_tensor, which verify runs") \
    OP(sb_adam_step, sb_status, \
       (const sb_adam_config *cfg, int64_t step, int64_t n, float *param, const float *grad, \
        float *exp_avg, float *exp_avg_sq, float *max_exp_avg_sq), \
       optim, NULL, SB_OP_NONE, sb_ref_adam_update, SB_OP_NONE, \
       "exempt: the raw-buffer form of sb_adam_step_tensor, which verify runs") \
    OP(sb_adam_step_tensor, sb_status, \
       (const sb_adam_config *cfg, int64_t step, sb_tensor *param, const sb_tensor *grad, \
        sb_tensor *exp_avg, sb_tensor *exp_avg_sq, sb_tensor *max_exp_avg_sq), \
       optim, NULL, SB_OP_NONE, sb_ref_adam_update, SB_OP_NONE, \
       "adam") \
    OP(sb_sgemm, sb_status, \
       (char transa, char transb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, \
        const float *b, int64_t ldb, float *c, int64_t ldc), \
       kernels, NULL, SB_OP_NONE, sb_ref_sgemm, SB_OP_NONE, \
       "sgemm") \
    OP(sb_ssum, sb_status, \
       (int64_t n, const float *x, int64_t incx, float *out), \
       kernels, NULL, SB_OP_NONE, sb_sum_canonical, SB_OP_NONE, \
       "ssum") \
    OP(sb_expf, float, \
       (float x), \
       math, NULL, SB_OP_NONE, sb_expf, SB_OP_NONE, \
       "math") \
    OP(sb_expm1f, float, \
       (float x), \
       math, NULL, SB_OP_NONE, sb_expm1f, SB_OP_NONE, \
       "math") \
    OP(sb_logf, float, \
       (float x), \
       math, NULL, SB_OP_NONE, sb_logf, SB_OP_NONE, \
       "math") \
    OP(sb_log1pf, float, \
       (float x), \
       math, NULL, SB_OP_NONE, sb_log1pf, SB_OP_NONE, \
       "math") \
    OP(sb_tanhf, float, \
       (float x), \
       math, NULL, SB_OP_NONE, sb_tanhf, SB_OP_NONE, \
       "math") \
    OP(sb_erff, float, \
       (float x), \
       math, NULL, SB_OP_NONE, sb_erff, SB_OP_NONE, \
       "math") \
    OP(sb_exp2f, float, \
       (float x), \
       math, NULL, SB_OP_NONE, sb_exp2f, SB_OP_NONE, \
       "math") \
    OP(sb_log2f, float, \
       (float x), \
       math, NULL, SB_OP_NONE, sb_log2f, SB_OP_NONE, \
       "math") \
    OP(sb_sinf, float, \
       (float x), \
       math, NULL, SB_OP_NONE, sb_sinf, SB_OP_NONE, \
       "math") \
    OP(sb_cosf, float, \
       (float x), \
       math, NULL, SB_OP_NONE, sb_cosf, SB_OP_NONE, \
       "math") \
    OP(sb_powf, float, \
       (float x, float y), \
       math, NULL, SB_OP_NONE, sb_powf, SB_OP_NONE, \
       "powf") \
    OP(sb_philox4x32_10, void, \
       (const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]), \
       random, NULL, SB_OP_NONE, sb_philox4x32_10, SB_OP_NONE, \
       "exempt: the block function under sb_rng_block, which verify runs") \
    OP(sb_rng_block, void, \
       (uint64_t seed, uint64_t stream, uint64_t index, unsigned domain, uint32_t out[4]), \
       random, NULL, SB_OP_NONE, sb_rng_block, SB_OP_NONE, \
       "rng") \
    OP(sb_rng_uniform_at, float, \
       (uint64_t seed, uint64_t stream, uint64_t index), \
       random, NULL, SB_OP_NONE, sb_rng_uniform_at, SB_OP_NONE, \
       "exempt: one element of sb_rng_uniform, which verify runs") \
    OP(sb_rng_normal_at, float, \
       (uint64_t seed, uint64_t stream, uint64_t index), \
       random, NULL, SB_OP_NONE, sb_rng_normal_at, SB_OP_NONE, \
       "rng") \
    OP(sb_rng_bounded_at, uint32_t, \
       (uint64_t seed, uint64_t stream, uint64_t index, uint32_t bound), \
       random, NULL, SB_OP_NONE, sb_rng_bounded_at, SB_OP_NONE, \
       "rng") \
    OP(sb_rng_make, sb_rng, \
       (uint64_t seed, uint64_t stream), \
       random, NULL, SB_OP_NONE, sb_rng_make, SB_OP_NONE, \
       "rng") \
    OP(sb_rng_uniform, sb_status, \
       (const sb_rng *rng, uint64_t index, float *out, int64_t n), \
       random, NULL, SB_OP_NONE, sb_rng_uniform, SB_OP_NONE, \
       "rng") \
    OP(sb_rng_uniform_range, sb_status, \
       (const sb_rng *rng, uint64_t index, float lo, float hi, float *out, int64_t n), \
       random, NULL, SB_OP_NONE, sb_rng_uniform_range, SB_OP_NONE, \
       "rng") \
    OP(sb_rng_normal, sb_status, \
       (const sb_rng *rng, uint64_t index, float mean, float std, float *out, int64_t n), \
       random, NULL, SB_OP_NONE, sb_rng_normal, SB_OP_NONE, \
       "rng") \
    OP(sb_rng_bounded, sb_status, \
       (const sb_rng *rng, uint64_t index, uint32_t bound, uint32_t *out, int64_t n), \
       random, NULL, SB_OP_NONE, sb_rng_bounded, SB_OP_NONE, \
       "rng") \
    OP(sb_rng_next_uniform, sb_status, \
       (sb_rng *rng, float *out, int64_t n), \
       random, NULL, SB_OP_NONE, sb_rng_next_uniform, SB_OP_NONE, \
       "exempt: sb_rng_uniform at the generator counter; verify runs it") \
    OP(sb_rng_next_normal, sb_status, \
       (sb_rng *rng, float mean, float std, float *out, int64_t n), \
       random, NULL, SB_OP_NONE, sb_rng_next_normal, SB_OP_NONE, \
       "exempt: sb_rng_normal at the generator counter; verify runs it") \
    OP(sb_rng_next_bounded, sb_status, \
       (sb_rng *rng, uint32_t bound, uint32_t *out, int64_t n), \
       random, NULL, SB_OP_NONE, sb_rng_next_bounded, SB_OP_NONE, \
       "exempt: sb_rng_bounded at the generator counter; verify runs it") \
    OP(sb_rng_permutation, sb_status, \
       (uint64_t seed, uint64_t stream, int64_t n, int64_t *perm), \
       random, NULL, SB_OP_NONE, sb_rng_permutation, SB_OP_NONE, \
       "rng") \
    OP(sb_tensor_reshape, sb_status, \
       (sb_tensor **out, const sb_tensor *src, int ndim, const int64_t *shape), \
       tensor, "reshape", SB_OP_NONE, SB_OP_NONE, SB_OP_NONE, \
       "exempt: a view (no arithmetic)") \
    OP(sb_tensor_flatten, sb_status, \
       (sb_tensor **out, const sb_tensor *src, int start_dim, int end_dim), \
       tensor, "flatten", SB_OP_NONE, SB_OP_NONE, SB_OP_NONE, \
       "exempt: a view (no arithmetic); verify runs it through sb_ag_flatten") \
    OP(sb_tensor_transpose, sb_status, \
       (sb_tensor **out, const sb_tensor *src, int dim0, int dim1), \
       tensor, "transpose", SB_OP_NONE, SB_OP_NONE, SB_OP_NONE, \
       "exempt: a view (no arithmetic)") \
    OP(sb_tensor_copy, sb_status, \
       (sb_tensor *dst, const sb_tensor *src), \
       tensor, NULL, SB_OP_NONE, SB_OP_NONE, SB_OP_NONE, \
       "exempt: copies bits (no arithmetic)") \
    OP(sb_tensor_fill, sb_status, \
       (sb_tensor *t, float value), \
       tensor, NULL, SB_OP_NONE, SB_OP_NONE, SB_OP_NONE, \
       "exempt: stores one value (no arithmetic)") \
    /* end of SB_OP_TABLE */

#define SB_SUPPORT_TABLE(FN) \
    FN(sb_last_error, const char *, \
       (void), status) \
    FN(sb_status_name, const char *, \
       (sb_status status), status) \
    FN(sb_clear_error, void, \
       (void), status) \
    FN(sb_tensor_wrap, sb_status, \
       (sb_tensor **out, void *data, sb_dtype dtype, int ndim, const int64_t *shape, \
        const int64_t *strides), tensor) \
    FN(sb_tensor_free, void, \
       (sb_tensor *t), tensor) \
    FN(sb_tensor_new_on, sb_status, \
       (sb_tensor **out, sb_device device, sb_dtype dtype, int ndim, const int64_t *shape), \
       tensor) \
    FN(sb_tensor_to, sb_status, \
       (sb_tensor **out, const sb_tensor *src, sb_device device), tensor) \
    FN(sb_isa, sb_isa_level, \
       (void), runtime) \
    FN(sb_isa_name, const char *, \
       (sb_isa_level level), runtime) \
    FN(sb_isa_from_name, sb_status, \
       (const char *name, sb_isa_level *level), runtime) \
    FN(sb_set_isa, sb_status, \
       (sb_isa_level level), runtime) \
    FN(sb_set_num_threads, sb_status, \
       (int n), runtime) \
    FN(sb_num_threads, int, \
       (void), runtime) \
    FN(sb_hash_tensors, sb_status, \
       (const sb_tensor *const *tensors, size_t count, unsigned char digest[32]), hash) \
    FN(sb_hex_digest, void, \
       (const unsigned char digest[32], char hex[65]), hash) \
    FN(sb_mnist_load, sb_status, \
       (const char *dir, bool train, sb_dataset *out), io) \
    FN(sb_dataset_free, void, \
       (sb_dataset *ds), io) \
    FN(sb_module_init, sb_status, \
       (sb_module *m, uint64_t seed), nn) \
    FN(sb_module_free, void, \
       (sb_module *m), nn) \
    FN(sb_module_parameters, sb_status, \
       (sb_module *m, sb_named *out, size_t cap, size_t *count), nn) \
    FN(sb_module_buffers, sb_status, \
       (sb_module *m, sb_named *out, size_t cap, size_t *count), nn) \
    FN(sb_module_hash, sb_status, \
       (sb_module *m, unsigned char digest[32]), nn) \
    FN(sb_model_lenet5, sb_status, \
       (sb_module **out), train) \
    /* end of SB_SUPPORT_TABLE */

#endif
