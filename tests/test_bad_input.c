/* tests/test_bad_input.c - every public C entry point against hostile input.
 *
 * Part 1, tensor ops: a table gives each op one valid call (its tensors:
 * name, dtype, shape, role) and the driver derives the bad calls from it, slot
 * by slot: NULL, the wrong dtype, hand-built headers (ndim 100 and -1, a
 * negative shape, an invalid dtype or device, a CUDA tensor, a size that
 * overflows, no data), the wrong rank, a mismatched shape, a huge dimension,
 * a zero-size dimension, an output aliasing another argument, and a
 * non-contiguous (every other element) view. Each refused call must return
 * the expected status, name the function and the parameter in sb_last_error(),
 * and leave every buffer - outputs and inputs - byte for byte as it was (they
 * are filled with a sentinel first). An accepted strided call must give the
 * contiguous call's bits and leave the gaps between its elements untouched.
 *
 * Part 2, everything else (sizes, raw buffers, files, modules, graphs,
 * optimizers, loaders, traces): hand-written cases with the same checks.
 *
 * `test_bad_input --list` prints every function the suite exercised;
 * tests/check_bad_input_coverage.sh compares that with the functions declared
 * in include/samebits/ (every *.h) and the exemptions in tests/bad_input_exempt.txt. */
#include <math.h>
#include <stdarg.h>
#include <unistd.h>
#include "harness.h"
#include "backend/backend.h" /* sb_backend_mirror_live_blocks */
#include "samebits/train.h"
#include "samebits/gpt.h"

/* ---- the set of functions exercised (for --list) ---- */

static const char *covered[400];
static int n_covered;

static void cover(const char *fn) {
    for (int i = 0; i < n_covered; i++)
        if (strcmp(covered[i], fn) == 0) return;
    if (n_covered < (int)(sizeof covered / sizeof *covered)) covered[n_covered++] = fn;
}

/* The message names `fn` and `name` (NULL: any of the `names`). */
static int names_it(const char *fn, const char *name) {
    const char *m = sb_last_error();
    if (strncmp(m, fn, strlen(fn)) != 0 || m[strlen(fn)] != ':') return 0;
    return !name || strstr(m, name) != NULL;
}

/* ---- part 1: tensor ops --------------------------------------------------- */

#define MAX_SLOTS 11

enum {
    IN = 0,
    OUT = 1,         /* written by the op: filled with the sentinel */
    INOUT = 2,       /* read and updated (running statistics) */
    OPT = 4,         /* may be NULL */
    FREE_RANK = 8,   /* another rank is valid (broadcast operands) */
    FREE_SHAPE = 16, /* other sizes are valid too (nothing ties them) */
};

typedef struct slot {
    const char *name;
    sb_dtype dtype;
    int ndim;
    int64_t shape[4];
    unsigned flags;
} slot;

typedef sb_status (*op_call)(sb_tensor *const *t);
typedef void (*op_init)(sb_tensor *const *t);

typedef struct op_case {
    const char *fn;
    op_call call;
    op_init init; /* makes inputs valid where random values are not (indices) */
    slot s[MAX_SLOTS];
} op_case;

#define CALL(id, expr) \
    static sb_status c_##id(sb_tensor *const *t) { (void)t; return (expr); }

#define F SB_F32
#define L SB_I64
#define S1(a) 1, {a}
#define S2(a, b) 2, {a, b}
#define S3(a, b, c) 3, {a, b, c}
#define S4(a, b, c, d) 4, {a, b, c, d}
#define S0 0, {0}

static const sb_conv2d_params conv_p = {1, 1, 1, 1, 1, 1, 1};
static const sb_conv_transpose2d_params convt_p = {2, 2, 1, 1, 1, 1, 1, 1, 2};
static const sb_pool2d_params pool_p = {2, 2, 2, 2, 0, 0, false, false, 0, 0, 0};
static const sb_pad2d_params pad_p = {1, 2, 2, 1, SB_PAD_REFLECT, 0.0f};
static const sb_interpolate_params interp_p = {SB_INTERP_CUBIC, true, {0.0, 0.0, 0.0}};
static const sb_grid_sample_params grid_p = {SB_GRID_BILINEAR, SB_GRID_REFLECTION, false};
static const int dim1[1] = {1};

CALL(add, sb_add(t[0], t[1], t[2]))
CALL(sub, sb_sub(t[0], t[1], t[2]))
CALL(mul, sb_mul(t[0], t[1], t[2]))
CALL(div, sb_div(t[0], t[1], t[2]))
CALL(maximum, sb_maximum(t[0], t[1], t[2]))
CALL(minimum, sb_minimum(t[0], t[1], t[2]))
CALL(binary, sb_binary(SB_BINARY_MUL, t[0], t[1], t[2]))
CALL(add_scalar, sb_add_scalar(t[0], 2.0f, t[1]))
CALL(sub_scalar, sb_sub_scalar(t[0], 2.0f, t[1]))
CALL(mul_scalar, sb_mul_scalar(t[0], 2.0f, t[1]))
CALL(div_scalar, sb_div_scalar(t[0], 2.0f, t[1]))
CALL(binary_scalar, sb_binary_scalar(SB_BINARY_SUB, t[0], 2.0f, t[1]))
CALL(binary_backward, sb_binary_backward(SB_BINARY_MUL, t[0], t[1], t[2], t[3], t[4]))
CALL(reduce_to_shape, sb_reduce_to_shape(t[0], t[1]))
CALL(unary, sb_unary(SB_UNARY_SQUARE, t[0], t[1]))
CALL(sin, sb_sin(t[0], t[1]))
CALL(cos, sb_cos(t[0], t[1]))
CALL(exp2, sb_exp2(t[0], t[1]))
CALL(log2, sb_log2(t[0], t[1]))
CALL(rsqrt, sb_rsqrt(t[0], t[1]))
CALL(neg, sb_neg(t[0], t[1]))
CALL(abs, sb_abs(t[0], t[1]))
CALL(sqrt, sb_sqrt(t[0], t[1]))
CALL(exp, sb_exp(t[0], t[1]))
CALL(log, sb_log(t[0], t[1]))
CALL(square, sb_square(t[0], t[1]))
CALL(reciprocal, sb_reciprocal(t[0], t[1]))
CALL(unary_backward, sb_unary_backward(SB_UNARY_EXP, t[0], t[1], t[2], t[3]))
CALL(relu_f, sb_relu_forward(t[0], t[1]))
CALL(relu_b, sb_relu_backward(t[0], t[1], t[2]))
CALL(leaky_f, sb_leaky_relu_forward(t[0], 0.1f, t[1]))
CALL(leaky_b, sb_leaky_relu_backward(t[0], t[1], 0.1f, t[2]))
CALL(prelu_f, sb_prelu_forward(t[0], t[1], t[2]))
CALL(prelu_b, sb_prelu_backward(t[0], t[1], t[2], t[3], t[4]))
CALL(tanh_f, sb_tanh_forward(t[0], t[1]))
CALL(tanh_b, sb_tanh_backward(t[0], t[1], t[2]))
CALL(sigmoid_f, sb_sigmoid_forward(t[0], t[1]))
CALL(sigmoid_b, sb_sigmoid_backward(t[0], t[1], t[2]))
CALL(silu_f, sb_silu_forward(t[0], t[1]))
CALL(silu_b, sb_silu_backward(t[0], t[1], t[2]))
CALL(gelu_f, sb_gelu_forward(t[0], true, t[1]))
CALL(gelu_b, sb_gelu_backward(t[0], t[1], false, t[2]))
CALL(softplus_f, sb_softplus_forward(t[0], 1.0f, 20.0f, t[1]))
CALL(softplus_b, sb_softplus_backward(t[0], t[1], 1.0f, 20.0f, t[2]))
CALL(hardtanh_f, sb_hardtanh_forward(t[0], 0.0f, 6.0f, t[1]))
CALL(hardtanh_b, sb_hardtanh_backward(t[0], t[1], -1.0f, 1.0f, t[2]))
CALL(hardsigmoid_f, sb_hardsigmoid_forward(t[0], t[1]))
CALL(hardsigmoid_b, sb_hardsigmoid_backward(t[0], t[1], t[2]))
CALL(hardswish_f, sb_hardswish_forward(t[0], t[1]))
CALL(hardswish_b, sb_hardswish_backward(t[0], t[1], t[2]))
CALL(elu_f, sb_elu_forward(t[0], 1.0f, 1.0f, 1.0f, t[1]))
CALL(elu_b, sb_elu_backward(t[0], t[1], 1.0f, 1.0f, 1.0f, t[2]))
CALL(mish_f, sb_mish_forward(t[0], t[1]))
CALL(mish_b, sb_mish_backward(t[0], t[1], t[2]))
CALL(logsigmoid_f, sb_logsigmoid_forward(t[0], t[1]))
CALL(logsigmoid_b, sb_logsigmoid_backward(t[0], t[1], t[2]))
CALL(hardshrink_f, sb_hardshrink_forward(t[0], 0.5f, t[1]))
CALL(hardshrink_b, sb_hardshrink_backward(t[0], t[1], 0.5f, t[2]))
CALL(softshrink_f, sb_softshrink_forward(t[0], 0.5f, t[1]))
CALL(softshrink_b, sb_softshrink_backward(t[0], t[1], 0.5f, t[2]))
CALL(threshold_f, sb_threshold_forward(t[0], 0.1f, 20.0f, t[1]))
CALL(threshold_b, sb_threshold_backward(t[0], t[1], 0.1f, t[2]))
CALL(matmul, sb_matmul(t[0], t[1], false, false, t[2]))
CALL(matmul_b, sb_matmul_backward(t[0], t[1], t[2], false, false, t[3], t[4]))
CALL(linear_f, sb_linear_forward(t[0], t[1], t[2], t[3]))
CALL(linear_b, sb_linear_backward(t[0], t[1], t[2], t[3], t[4], t[5]))
CALL(conv_f, sb_conv2d_forward(t[0], t[1], t[2], &conv_p, t[3]))
CALL(conv_b, sb_conv2d_backward(t[0], t[1], t[2], &conv_p, t[3], t[4], t[5]))
CALL(convt_f, sb_conv_transpose2d_forward(t[0], t[1], t[2], &convt_p, t[3]))
CALL(convt_b, sb_conv_transpose2d_backward(t[0], t[1], t[2], &convt_p, t[3], t[4], t[5]))
CALL(maxpool_f, sb_max_pool2d_forward(t[0], &pool_p, t[1], t[2]))
CALL(maxpool_b, sb_max_pool2d_backward(t[0], t[1], &pool_p, t[2]))
CALL(avgpool_f, sb_avg_pool2d_forward(t[0], &pool_p, t[1]))
CALL(amaxpool_f, sb_adaptive_max_pool2d_forward(t[0], t[1], t[2]))
CALL(amaxpool_b, sb_adaptive_max_pool2d_backward(t[0], t[1], t[2]))
CALL(aavgpool_f, sb_adaptive_avg_pool2d_forward(t[0], t[1]))
CALL(aavgpool_b, sb_adaptive_avg_pool2d_backward(t[0], t[1]))
CALL(avgpool_b, sb_avg_pool2d_backward(t[0], &pool_p, t[1]))
CALL(pad_f, sb_pad2d_forward(t[0], &pad_p, t[1]))
CALL(pad_b, sb_pad2d_backward(t[0], &pad_p, t[1]))
CALL(interp_f, sb_interpolate_forward(t[0], &interp_p, t[1]))
CALL(interp_b, sb_interpolate_backward(t[0], &interp_p, t[1]))
CALL(grid_f, sb_grid_sample_forward(t[0], t[1], &grid_p, t[2]))
CALL(grid_b, sb_grid_sample_backward(t[0], t[1], t[2], &grid_p, t[3], t[4]))
CALL(sum, sb_sum(t[0], dim1, 1, false, t[1]))
CALL(mean, sb_mean(t[0], dim1, 1, false, t[1]))
CALL(var, sb_var(t[0], dim1, 1, 1, false, t[1]))
CALL(std, sb_std(t[0], dim1, 1, 1, false, t[1]))
CALL(max, sb_max(t[0], dim1, 1, false, t[1], t[2]))
CALL(min, sb_min(t[0], dim1, 1, false, t[1], t[2]))
CALL(argmax, sb_argmax(t[0], dim1, 1, false, t[1]))
CALL(argmin, sb_argmin(t[0], dim1, 1, false, t[1]))
CALL(sum_b, sb_sum_backward(t[0], dim1, 1, false, t[1]))
CALL(mean_b, sb_mean_backward(t[0], dim1, 1, false, t[1]))
CALL(max_b, sb_max_backward(t[0], t[1], dim1, 1, false, t[2]))
CALL(cumsum, sb_cumsum(t[0], 1, t[1]))
CALL(cumsum_b, sb_cumsum_backward(t[0], 1, t[1]))
CALL(cumprod, sb_cumprod(t[0], 1, t[1]))
CALL(cumprod_b, sb_cumprod_backward(t[0], t[1], t[2], 1, t[3]))
CALL(gather, sb_gather(t[0], 1, t[1], t[2]))
CALL(gather_b, sb_gather_backward(t[0], 1, t[1], t[2]))
CALL(scatter_add, sb_scatter_add(1, t[0], t[1], t[2]))
CALL(index_select, sb_index_select(t[0], 1, t[1], t[2]))
CALL(index_select_b, sb_index_select_backward(t[0], 1, t[1], t[2]))
CALL(embedding_f, sb_embedding_forward(t[0], t[1], t[2]))
CALL(embedding_b, sb_embedding_backward(t[0], t[1], 1, t[2]))
CALL(index_add, sb_index_add(1, t[0], t[1], 0.5f, t[2]))
CALL(scatter_reduce, sb_scatter_reduce(1, t[0], t[1], SB_SCATTER_MEAN, false, t[2]))
CALL(bincount, sb_bincount(t[0], t[1], t[2]))
CALL(histc, sb_histc(t[0], 4, -1.0f, 1.0f, t[1]))
CALL(sort, sb_sort(t[0], 1, false, t[1], t[2]))
CALL(topk, sb_topk(t[0], 2, 1, true, t[1], t[2]))
CALL(kthvalue, sb_kthvalue(t[0], 2, 1, false, t[1], t[2]))
CALL(median, sb_median(t[0], 1, true, t[1], t[2]))
CALL(sort_b, sb_sort_backward(t[0], 1, t[1], t[2]))
CALL(softmax_f, sb_softmax_forward(t[0], 1, t[1]))
CALL(softmax_b, sb_softmax_backward(t[0], t[1], 1, t[2]))
CALL(logsoftmax_f, sb_log_softmax_forward(t[0], 1, t[1]))
CALL(logsoftmax_b, sb_log_softmax_backward(t[0], t[1], 1, t[2]))
CALL(ce_f, sb_cross_entropy_forward(t[0], t[1], SB_LOSS_MEAN, 0.1f, -100, t[2]))
CALL(ce_b, sb_cross_entropy_backward(t[0], t[1], SB_LOSS_MEAN, 0.1f, -100, t[2], t[3]))
CALL(nll_f, sb_nll_loss_forward(t[0], t[1], SB_LOSS_NONE, -100, t[2]))
CALL(nll_b, sb_nll_loss_backward(t[0], t[1], SB_LOSS_NONE, -100, t[2], t[3]))
static const sb_class_loss class_p = {SB_LOSS_CROSS_ENTROPY, 0.1f, -100};
CALL(class_f, sb_class_loss_forward(&class_p, t[0], t[1], t[2], SB_LOSS_MEAN, t[3]))
CALL(class_b, sb_class_loss_backward(&class_p, t[0], t[1], t[2], SB_LOSS_NONE, t[3], t[4]))
static const sb_ctc_loss ctc_p = {2, true}; /* zero labels are valid: blank is 2 */
CALL(ctc_f, sb_ctc_loss_forward(&ctc_p, t[0], t[1], t[2], t[3], SB_LOSS_MEAN, t[4]))
CALL(ctc_b, sb_ctc_loss_backward(&ctc_p, t[0], t[1], t[2], t[3], SB_LOSS_NONE, t[4], t[5]))
CALL(mse_f, sb_mse_forward(t[0], t[1], SB_LOSS_SUM, t[2]))
CALL(mse_b, sb_mse_backward(t[0], t[1], SB_LOSS_SUM, t[2], t[3], t[4]))
static const sb_elementwise_loss bcel_p = {SB_LOSS_BCE_WITH_LOGITS, 0.0f, false};
CALL(eloss_f, sb_elementwise_loss_forward(&bcel_p, t[0], t[1], t[2], t[3], SB_LOSS_MEAN, t[4]))
CALL(eloss_b, sb_elementwise_loss_backward(&bcel_p, t[0], t[1], t[2], t[3], SB_LOSS_MEAN, t[4], t[5],
                                           NULL))
CALL(bn_f, sb_batch_norm_forward(t[0], t[1], t[2], t[3], t[4], true, 0.1f, 1e-5f, t[5], t[6], t[7]))
CALL(bn_b, sb_batch_norm_backward(t[0], t[1], t[2], t[3], t[4], true, t[5], t[6], t[7]))
CALL(ln_f, sb_layer_norm_forward(t[0], 1, t[1], t[2], 1e-5f, t[3], t[4], t[5]))
CALL(ln_b, sb_layer_norm_backward(t[0], t[1], 1, t[2], t[3], t[4], t[5], t[6], t[7]))
CALL(rms_f, sb_rms_norm_forward(t[0], 1, t[1], 1e-5f, t[2], t[3]))
CALL(rms_b, sb_rms_norm_backward(t[0], t[1], 1, t[2], t[3], t[4], t[5]))
CALL(gn_f, sb_group_norm_forward(t[0], 2, t[1], t[2], 1e-5f, t[3], t[4], t[5]))
CALL(gn_b, sb_group_norm_backward(t[0], t[1], 2, t[2], t[3], t[4], t[5], t[6], t[7]))
CALL(dropout_f, sb_dropout_forward(t[0], 0.5f, true, 1, 2, 0, t[1], t[2]))
CALL(dropout_b, sb_dropout_backward(t[0], t[1], 0.5f, true, t[2]))
CALL(sdpa_f, sb_sdpa_forward(t[0], t[1], t[2], t[3], SB_SDPA_CAUSAL_TOP_LEFT, 0.5f, 0.25f, 1, 2, 0,
                             t[4], t[5]))
CALL(sdpa_b, sb_sdpa_backward(t[0], t[1], t[2], t[3], t[4], SB_SDPA_CAUSAL_TOP_LEFT, 0.5f, 0.25f, 1, 2,
                              0, t[5], t[6], t[7], t[8]))
/* An LSTM with a projection (H = 3, P = 2) over 2 steps of batch sizes 2, 1
 * (R = 3, N = 2), and a GRU (H = 3) over the same steps. */
static const int64_t rnn_batch_sizes[2] = {2, 1};
static const sb_rnn_sequence lstm_seq = {SB_RNN_LSTM, false, 2, rnn_batch_sizes};
static const sb_rnn_sequence gru_seq = {SB_RNN_GRU, true, 2, rnn_batch_sizes};
CALL(rnn_f, sb_rnn_forward(&lstm_seq, t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9],
                           t[10]))
CALL(rnn_b, sb_rnn_backward(&lstm_seq, t[0], t[1], t[2], t[3], t[4], t[5], t[6], NULL, t[7], t[8],
                            t[9]))
CALL(gru_b, sb_rnn_backward(&gru_seq, t[0], NULL, t[1], t[2], t[3], NULL, t[4], t[5], t[6], t[7],
                            NULL))
CALL(copy, sb_tensor_copy(t[1], t[0]))
CALL(sgd_t, sb_sgd_step_tensor(&(sb_sgd_config){.lr = 0.1, .momentum = 0.9}, 2, t[0], t[1], t[2]))
CALL(adam_t, sb_adam_step_tensor(&(sb_adam_config){.lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                                                     .amsgrad = true},
                                 2, t[0], t[1], t[2], t[3], t[4]))

static void init_maxpool_b(sb_tensor *const *t) {
    /* indices from a real forward pass over dx's shape */
    sb_tensor *y = NULL, *x = NULL;
    sb_tensor_new(&x, SB_F32, 4, t[2]->shape);
    sb_tensor_new(&y, SB_F32, 4, t[0]->shape);
    sb_max_pool2d_forward(x, &pool_p, y, t[1]); /* refused for a strided t[1]: indices stay 0 */
    sb_tensor_free(x);
    sb_tensor_free(y);
}
static void init_amaxpool_b(sb_tensor *const *t) {
    sb_tensor *y = NULL, *x = NULL;
    sb_tensor_new(&x, SB_F32, 4, t[2]->shape);
    sb_tensor_new(&y, SB_F32, 4, t[0]->shape);
    sb_adaptive_max_pool2d_forward(x, y, t[1]); /* refused for a strided t[1]: indices stay 0 */
    sb_tensor_free(x);
    sb_tensor_free(y);
}
static void init_dropout_mask(sb_tensor *const *t) {
    float *m = t[1]->data;
    for (int64_t i = 0; i < sb_tensor_numel(t[1]); i++) m[i * t[1]->strides[t[1]->ndim - 1]] = (float)(i & 1);
}
static void init_positive(sb_tensor *const *t) { /* variances, rstd: > 0 */
    for (int k = 0; k < MAX_SLOTS && t[k]; k++) {
        if (t[k]->dtype != SB_F32) continue;
        float *p = t[k]->data;
        int64_t n = sb_tensor_numel(t[k]), st = t[k]->ndim ? t[k]->strides[t[k]->ndim - 1] : 1;
        for (int64_t i = 0; i < n; i++) p[i * st] = p[i * st] < 0 ? -p[i * st] + 0.25f : p[i * st] + 0.25f;
    }
}

#define BIN(id, fn) {fn, c_##id, NULL, {{"a", F, S2(2, 3), FREE_RANK}, {"b", F, S2(2, 3), FREE_RANK}, {"out", F, S2(2, 3), OUT}}}
#define SCAL(id, fn) {fn, c_##id, NULL, {{"x", F, S2(2, 3), IN}, {"out", F, S2(2, 3), OUT}}}
#define UN(id, fn, xn, yn) {fn, c_##id, NULL, {{xn, F, S2(2, 3), IN}, {yn, F, S2(2, 3), OUT}}}
#define UNB(id, fn, xn) {fn, c_##id, NULL, {{xn, F, S2(2, 3), IN}, {"dy", F, S2(2, 3), IN}, {"dx", F, S2(2, 3), OUT}}}

static const op_case ops[] = {
    BIN(add, "sb_add"), BIN(sub, "sb_sub"), BIN(mul, "sb_mul"), BIN(div, "sb_div"),
    BIN(maximum, "sb_maximum"), BIN(minimum, "sb_minimum"), BIN(binary, "sb_binary"),
    SCAL(add_scalar, "sb_add_scalar"), SCAL(sub_scalar, "sb_sub_scalar"),
    SCAL(mul_scalar, "sb_mul_scalar"), SCAL(div_scalar, "sb_div_scalar"),
    SCAL(binary_scalar, "sb_binary_scalar"),
    {"sb_binary_backward", c_binary_backward, NULL,
     {{"dy", F, S2(2, 3), IN}, {"a", F, S2(2, 3), IN}, {"b", F, S1(3), IN},
      {"da", F, S2(2, 3), OUT | OPT}, {"db", F, S1(3), OUT | OPT}}},
    {"sb_reduce_to_shape", c_reduce_to_shape, NULL,
     {{"grad", F, S2(2, 3), IN | FREE_RANK | FREE_SHAPE}, {"out", F, S1(3), OUT | FREE_RANK}}},
    UN(unary, "sb_unary", "x", "out"), UN(neg, "sb_neg", "x", "out"), UN(abs, "sb_abs", "x", "out"),
    UN(sqrt, "sb_sqrt", "x", "out"), UN(exp, "sb_exp", "x", "out"), UN(log, "sb_log", "x", "out"),
    UN(square, "sb_square", "x", "out"), UN(reciprocal, "sb_reciprocal", "x", "out"),
    UN(sin, "sb_sin", "x", "out"), UN(cos, "sb_cos", "x", "out"), UN(exp2, "sb_exp2", "x", "out"),
    UN(log2, "sb_log2", "x", "out"), UN(rsqrt, "sb_rsqrt", "x", "out"),
    {"sb_unary_backward", c_unary_backward, NULL,
     {{"x", F, S2(2, 3), IN}, {"y", F, S2(2, 3), IN}, {"dy", F, S2(2, 3), IN},
      {"dx", F, S2(2, 3), OUT}}},
    UN(relu_f, "sb_relu_forward", "x", "y"), UNB(relu_b, "sb_relu_backward", "x"),
    UN(leaky_f, "sb_leaky_relu_forward", "x", "y"), UNB(leaky_b, "sb_leaky_relu_backward", "x"),
    UN(tanh_f, "sb_tanh_forward", "x", "y"), UNB(tanh_b, "sb_tanh_backward", "y"),
    UN(sigmoid_f, "sb_sigmoid_forward", "x", "y"), UNB(sigmoid_b, "sb_sigmoid_backward", "y"),
    UN(silu_f, "sb_silu_forward", "x", "y"), UNB(silu_b, "sb_silu_backward", "x"),
    UN(gelu_f, "sb_gelu_forward", "x", "y"), UNB(gelu_b, "sb_gelu_backward", "x"),
    UN(softplus_f, "sb_softplus_forward", "x", "y"), UNB(softplus_b, "sb_softplus_backward", "x"),
    UN(hardtanh_f, "sb_hardtanh_forward", "x", "y"), UNB(hardtanh_b, "sb_hardtanh_backward", "x"),
    UN(hardsigmoid_f, "sb_hardsigmoid_forward", "x", "y"),
    UNB(hardsigmoid_b, "sb_hardsigmoid_backward", "x"),
    UN(hardswish_f, "sb_hardswish_forward", "x", "y"), UNB(hardswish_b, "sb_hardswish_backward", "x"),
    UN(elu_f, "sb_elu_forward", "x", "y"), UNB(elu_b, "sb_elu_backward", "x"),
    UN(mish_f, "sb_mish_forward", "x", "y"), UNB(mish_b, "sb_mish_backward", "x"),
    UN(logsigmoid_f, "sb_logsigmoid_forward", "x", "y"),
    UNB(logsigmoid_b, "sb_logsigmoid_backward", "x"),
    UN(hardshrink_f, "sb_hardshrink_forward", "x", "y"),
    UNB(hardshrink_b, "sb_hardshrink_backward", "x"),
    UN(softshrink_f, "sb_softshrink_forward", "x", "y"),
    UNB(softshrink_b, "sb_softshrink_backward", "x"),
    UN(threshold_f, "sb_threshold_forward", "x", "y"),
    UNB(threshold_b, "sb_threshold_backward", "x"),
    {"sb_matmul", c_matmul, NULL,
     {{"a", F, S2(2, 3), IN}, {"b", F, S2(3, 4), IN}, {"out", F, S2(2, 4), OUT}}},
    {"sb_matmul_backward", c_matmul_b, NULL,
     {{"dout", F, S2(2, 4), IN}, {"a", F, S2(2, 3), IN}, {"b", F, S2(3, 4), IN},
      {"da", F, S2(2, 3), OUT | OPT}, {"db", F, S2(3, 4), OUT | OPT}}},
    {"sb_linear_forward", c_linear_f, NULL,
     {{"x", F, S2(2, 3), IN}, {"w", F, S2(4, 3), IN}, {"bias", F, S1(4), IN | OPT},
      {"y", F, S2(2, 4), OUT}}},
    {"sb_linear_backward", c_linear_b, NULL,
     {{"dy", F, S2(2, 4), IN}, {"x", F, S2(2, 3), IN}, {"w", F, S2(4, 3), IN},
      {"dx", F, S2(2, 3), OUT | OPT}, {"dw", F, S2(4, 3), OUT | OPT}, {"db", F, S1(4), OUT | OPT}}},
    {"sb_conv2d_forward", c_conv_f, NULL,
     {{"x", F, S4(2, 3, 4, 4), IN}, {"w", F, S4(5, 3, 3, 3), IN}, {"bias", F, S1(5), IN | OPT},
      {"y", F, S4(2, 5, 4, 4), OUT}}},
    {"sb_conv2d_backward", c_conv_b, NULL,
     {{"dy", F, S4(2, 5, 4, 4), IN}, {"x", F, S4(2, 3, 4, 4), IN}, {"w", F, S4(5, 3, 3, 3), IN},
      {"dx", F, S4(2, 3, 4, 4), OUT | OPT}, {"dw", F, S4(5, 3, 3, 3), OUT | OPT},
      {"db", F, S1(5), OUT | OPT}}},
    {"sb_conv_transpose2d_forward", c_convt_f, NULL,
     {{"x", F, S4(2, 4, 3, 3), IN}, {"w", F, S4(4, 3, 3, 3), IN}, {"bias", F, S1(6), IN | OPT},
      {"y", F, S4(2, 6, 6, 6), OUT}}},
    {"sb_conv_transpose2d_backward", c_convt_b, NULL,
     {{"dy", F, S4(2, 6, 6, 6), IN}, {"x", F, S4(2, 4, 3, 3), IN}, {"w", F, S4(4, 3, 3, 3), IN},
      {"dx", F, S4(2, 4, 3, 3), OUT | OPT}, {"dw", F, S4(4, 3, 3, 3), OUT | OPT},
      {"db", F, S1(6), OUT | OPT}}},
    {"sb_max_pool2d_forward", c_maxpool_f, NULL,
     {{"x", F, S4(2, 3, 4, 4), IN}, {"y", F, S4(2, 3, 2, 2), OUT}, {"indices", L, S4(2, 3, 2, 2), OUT | OPT}}},
    {"sb_max_pool2d_backward", c_maxpool_b, init_maxpool_b,
     {{"dy", F, S4(2, 3, 2, 2), IN}, {"indices", L, S4(2, 3, 2, 2), IN}, {"dx", F, S4(2, 3, 4, 4), OUT}}},
    {"sb_avg_pool2d_forward", c_avgpool_f, NULL,
     {{"x", F, S4(2, 3, 4, 4), IN}, {"y", F, S4(2, 3, 2, 2), OUT}}},
    {"sb_avg_pool2d_backward", c_avgpool_b, NULL,
     {{"dy", F, S4(2, 3, 2, 2), IN}, {"dx", F, S4(2, 3, 4, 4), OUT}}},
    {"sb_adaptive_max_pool2d_forward", c_amaxpool_f, NULL,
     {{"x", F, S4(2, 3, 5, 4), IN}, {"y", F, S4(2, 3, 3, 3), OUT}, {"indices", L, S4(2, 3, 3, 3), OUT | OPT}}},
    {"sb_adaptive_max_pool2d_backward", c_amaxpool_b, init_amaxpool_b,
     {{"dy", F, S4(2, 3, 3, 3), IN}, {"indices", L, S4(2, 3, 3, 3), IN}, {"dx", F, S4(2, 3, 5, 4), OUT}}},
    {"sb_adaptive_avg_pool2d_forward", c_aavgpool_f, NULL,
     {{"x", F, S4(2, 3, 5, 4), IN}, {"y", F, S4(2, 3, 3, 3), OUT}}},
    {"sb_adaptive_avg_pool2d_backward", c_aavgpool_b, NULL,
     {{"dy", F, S4(2, 3, 3, 3), IN}, {"dx", F, S4(2, 3, 5, 4), OUT}}},
    {"sb_pad2d_forward", c_pad_f, NULL,
     {{"x", F, S4(2, 3, 4, 5), IN}, {"y", F, S4(2, 3, 7, 8), OUT}}},
    {"sb_pad2d_backward", c_pad_b, NULL,
     {{"dy", F, S4(2, 3, 7, 8), IN}, {"dx", F, S4(2, 3, 4, 5), OUT}}},
    {"sb_interpolate_forward", c_interp_f, NULL,
     {{"x", F, S4(2, 3, 4, 5), IN}, {"y", F, S4(2, 3, 7, 3), OUT}}},
    {"sb_interpolate_backward", c_interp_b, NULL,
     {{"dy", F, S4(2, 3, 7, 3), IN}, {"dx", F, S4(2, 3, 4, 5), OUT}}},
    {"sb_grid_sample_forward", c_grid_f, NULL,
     {{"x", F, S4(2, 3, 4, 5), IN}, {"grid", F, S4(2, 6, 7, 2), IN}, {"y", F, S4(2, 3, 6, 7), OUT}}},
    {"sb_grid_sample_backward", c_grid_b, NULL,
     {{"dy", F, S4(2, 3, 6, 7), IN}, {"x", F, S4(2, 3, 4, 5), IN}, {"grid", F, S4(2, 6, 7, 2), IN},
      {"dx", F, S4(2, 3, 4, 5), OUT | OPT}, {"dgrid", F, S4(2, 6, 7, 2), OUT | OPT}}},
    {"sb_sum", c_sum, NULL, {{"x", F, S2(2, 3), IN}, {"out", F, S1(2), OUT}}},
    {"sb_mean", c_mean, NULL, {{"x", F, S2(2, 3), IN}, {"out", F, S1(2), OUT}}},
    {"sb_var", c_var, NULL, {{"x", F, S2(2, 3), IN}, {"out", F, S1(2), OUT}}},
    {"sb_std", c_std, NULL, {{"x", F, S2(2, 3), IN}, {"out", F, S1(2), OUT}}},
    {"sb_max", c_max, NULL, {{"x", F, S2(2, 3), IN}, {"out", F, S1(2), OUT}, {"indices", L, S1(2), OUT | OPT}}},
    {"sb_min", c_min, NULL, {{"x", F, S2(2, 3), IN}, {"out", F, S1(2), OUT}, {"indices", L, S1(2), OUT | OPT}}},
    {"sb_argmax", c_argmax, NULL, {{"x", F, S2(2, 3), IN}, {"indices", L, S1(2), OUT}}},
    {"sb_argmin", c_argmin, NULL, {{"x", F, S2(2, 3), IN}, {"indices", L, S1(2), OUT}}},
    {"sb_sum_backward", c_sum_b, NULL, {{"dy", F, S1(2), IN}, {"dx", F, S2(2, 3), OUT}}},
    {"sb_mean_backward", c_mean_b, NULL, {{"dy", F, S1(2), IN}, {"dx", F, S2(2, 3), OUT}}},
    {"sb_max_backward", c_max_b, NULL,
     {{"dy", F, S1(2), IN}, {"indices", L, S1(2), IN}, {"dx", F, S2(2, 3), OUT}}},
    {"sb_cumsum", c_cumsum, NULL, {{"x", F, S2(2, 3), IN}, {"out", F, S2(2, 3), OUT}}},
    {"sb_cumsum_backward", c_cumsum_b, NULL, {{"dy", F, S2(2, 3), IN}, {"dx", F, S2(2, 3), OUT}}},
    {"sb_cumprod", c_cumprod, NULL, {{"x", F, S2(2, 3), IN}, {"out", F, S2(2, 3), OUT}}},
    {"sb_cumprod_backward", c_cumprod_b, NULL,
     {{"x", F, S2(2, 3), IN}, {"y", F, S2(2, 3), IN}, {"dy", F, S2(2, 3), IN}, {"dx", F, S2(2, 3), OUT}}},
    {"sb_gather", c_gather, NULL,
     {{"x", F, S2(2, 3), IN}, {"index", L, S2(2, 4), IN}, {"out", F, S2(2, 4), OUT}}},
    {"sb_gather_backward", c_gather_b, NULL,
     {{"dy", F, S2(2, 4), IN}, {"index", L, S2(2, 4), IN}, {"dx", F, S2(2, 3), OUT}}},
    {"sb_scatter_add", c_scatter_add, NULL,
     {{"index", L, S2(2, 4), IN}, {"src", F, S2(2, 4), IN}, {"out", F, S2(2, 3), INOUT}}},
    {"sb_index_select", c_index_select, NULL,
     {{"x", F, S2(2, 3), IN}, {"index", L, S1(4), IN}, {"out", F, S2(2, 4), OUT}}},
    {"sb_index_select_backward", c_index_select_b, NULL,
     {{"dy", F, S2(2, 4), IN}, {"index", L, S1(4), IN}, {"dx", F, S2(2, 3), OUT}}},
    {"sb_embedding_forward", c_embedding_f, NULL,
     {{"weight", F, S2(3, 4), IN | FREE_SHAPE}, {"indices", L, S2(2, 5), IN},
      {"out", F, S3(2, 5, 4), OUT}}},
    {"sb_embedding_backward", c_embedding_b, NULL,
     {{"dy", F, S3(2, 5, 4), IN}, {"indices", L, S2(2, 5), IN}, {"dweight", F, S2(3, 4), OUT}}},
    {"sb_index_add", c_index_add, NULL,
     {{"index", L, S1(4), IN}, {"source", F, S2(2, 4), IN}, {"out", F, S2(2, 3), INOUT}}},
    {"sb_scatter_reduce", c_scatter_reduce, NULL,
     {{"index", L, S2(2, 4), IN}, {"src", F, S2(2, 4), IN}, {"out", F, S2(2, 3), INOUT}}},
    {"sb_bincount", c_bincount, NULL,
     {{"x", L, S1(5), IN}, {"weights", F, S1(5), IN | OPT}, {"out", F, S1(3), OUT | FREE_SHAPE}}},
    {"sb_histc", c_histc, NULL, {{"x", F, S2(2, 3), IN | FREE_RANK | FREE_SHAPE}, {"out", F, S1(4), OUT}}},
    {"sb_sort", c_sort, NULL,
     {{"x", F, S2(2, 3), IN}, {"values", F, S2(2, 3), OUT}, {"indices", L, S2(2, 3), OUT}}},
    {"sb_topk", c_topk, NULL,
     {{"x", F, S2(2, 3), IN}, {"values", F, S2(2, 2), OUT}, {"indices", L, S2(2, 2), OUT}}},
    {"sb_kthvalue", c_kthvalue, NULL,
     {{"x", F, S2(2, 3), IN}, {"values", F, S1(2), OUT}, {"indices", L, S1(2), OUT}}},
    {"sb_median", c_median, NULL,
     {{"x", F, S2(2, 3), IN}, {"values", F, S2(2, 1), OUT}, {"indices", L, S2(2, 1), OUT}}},
    {"sb_sort_backward", c_sort_b, NULL,
     {{"dy", F, S2(2, 2), IN}, {"indices", L, S2(2, 2), IN}, {"dx", F, S2(2, 3), OUT}}},
    {"sb_softmax_forward", c_softmax_f, NULL, {{"x", F, S2(2, 3), IN}, {"y", F, S2(2, 3), OUT}}},
    {"sb_softmax_backward", c_softmax_b, NULL,
     {{"y", F, S2(2, 3), IN}, {"dy", F, S2(2, 3), IN}, {"dx", F, S2(2, 3), OUT}}},
    {"sb_log_softmax_forward", c_logsoftmax_f, NULL, {{"x", F, S2(2, 3), IN}, {"y", F, S2(2, 3), OUT}}},
    {"sb_log_softmax_backward", c_logsoftmax_b, NULL,
     {{"y", F, S2(2, 3), IN}, {"dy", F, S2(2, 3), IN}, {"dx", F, S2(2, 3), OUT}}},
    {"sb_cross_entropy_forward", c_ce_f, NULL,
     {{"logits", F, S2(2, 3), IN}, {"targets", L, S1(2), IN}, {"loss", F, S0, OUT}}},
    {"sb_cross_entropy_backward", c_ce_b, NULL,
     {{"logits", F, S2(2, 3), IN}, {"targets", L, S1(2), IN}, {"dloss", F, S0, IN},
      {"dlogits", F, S2(2, 3), OUT}}},
    {"sb_nll_loss_forward", c_nll_f, NULL,
     {{"logp", F, S2(2, 3), IN}, {"targets", L, S1(2), IN}, {"loss", F, S1(2), OUT}}},
    {"sb_nll_loss_backward", c_nll_b, NULL,
     {{"logp", F, S2(2, 3), IN}, {"targets", L, S1(2), IN}, {"dloss", F, S1(2), IN},
      {"dlogp", F, S2(2, 3), OUT}}},
    {"sb_class_loss_forward", c_class_f, NULL,
     {{"input", F, S3(2, 3, 4), IN}, {"targets", L, S2(2, 4), IN}, {"weight", F, S1(3), IN | OPT},
      {"loss", F, S0, OUT}}},
    {"sb_class_loss_backward", c_class_b, NULL,
     {{"input", F, S3(2, 3, 4), IN}, {"targets", L, S2(2, 4), IN}, {"weight", F, S1(3), IN | OPT},
      {"dloss", F, S2(2, 4), IN}, {"dinput", F, S3(2, 3, 4), OUT}}},
    {"sb_ctc_loss_forward", c_ctc_f, NULL,
     {{"log_probs", F, S3(4, 2, 3), IN | FREE_SHAPE}, {"targets", L, S2(2, 2), IN},
      {"input_lengths", L, S1(2), IN}, {"target_lengths", L, S1(2), IN}, {"loss", F, S0, OUT}}},
    {"sb_ctc_loss_backward", c_ctc_b, NULL,
     {{"log_probs", F, S3(4, 2, 3), IN | FREE_SHAPE}, {"targets", L, S2(2, 2), IN},
      {"input_lengths", L, S1(2), IN}, {"target_lengths", L, S1(2), IN}, {"dloss", F, S1(2), IN},
      {"dlog_probs", F, S3(4, 2, 3), OUT}}},
    {"sb_mse_forward", c_mse_f, NULL,
     {{"x", F, S2(2, 3), IN}, {"target", F, S2(2, 3), IN}, {"loss", F, S0, OUT}}},
    {"sb_mse_backward", c_mse_b, NULL,
     {{"x", F, S2(2, 3), IN}, {"target", F, S2(2, 3), IN}, {"dloss", F, S0, IN},
      {"dx", F, S2(2, 3), OUT | OPT}, {"dtarget", F, S2(2, 3), OUT | OPT}}},
    {"sb_elementwise_loss_forward", c_eloss_f, NULL,
     {{"x", F, S2(2, 3), IN}, {"target", F, S2(2, 3), IN}, {"weight", F, S2(2, 3), IN | OPT},
      {"pos_weight", F, S2(2, 3), IN | OPT}, {"loss", F, S0, OUT}}},
    {"sb_elementwise_loss_backward", c_eloss_b, NULL,
     {{"x", F, S2(2, 3), IN}, {"target", F, S2(2, 3), IN}, {"weight", F, S2(2, 3), IN | OPT},
      {"pos_weight", F, S2(2, 3), IN | OPT}, {"dloss", F, S0, IN}, {"dx", F, S2(2, 3), OUT}}},
    {"sb_batch_norm_forward", c_bn_f, init_positive,
     {{"x", F, S3(2, 3, 4), IN}, {"gamma", F, S1(3), IN | OPT}, {"beta", F, S1(3), IN | OPT},
      {"running_mean", F, S1(3), INOUT | OPT}, {"running_var", F, S1(3), INOUT | OPT},
      {"y", F, S3(2, 3, 4), OUT}, {"save_mean", F, S1(3), OUT | OPT}, {"save_rstd", F, S1(3), OUT | OPT}}},
    {"sb_batch_norm_backward", c_bn_b, init_positive,
     {{"dy", F, S3(2, 3, 4), IN}, {"x", F, S3(2, 3, 4), IN}, {"gamma", F, S1(3), IN | OPT},
      {"save_mean", F, S1(3), IN}, {"save_rstd", F, S1(3), IN}, {"dx", F, S3(2, 3, 4), OUT | OPT},
      {"dgamma", F, S1(3), OUT | OPT}, {"dbeta", F, S1(3), OUT | OPT}}},
    {"sb_layer_norm_forward", c_ln_f, NULL,
     {{"x", F, S2(2, 3), IN}, {"gamma", F, S1(3), IN | OPT}, {"beta", F, S1(3), IN | OPT},
      {"y", F, S2(2, 3), OUT}, {"save_mean", F, S1(2), OUT | OPT}, {"save_rstd", F, S1(2), OUT | OPT}}},
    {"sb_layer_norm_backward", c_ln_b, init_positive,
     {{"dy", F, S2(2, 3), IN}, {"x", F, S2(2, 3), IN}, {"gamma", F, S1(3), IN | OPT},
      {"save_mean", F, S1(2), IN}, {"save_rstd", F, S1(2), IN}, {"dx", F, S2(2, 3), OUT | OPT},
      {"dgamma", F, S1(3), OUT | OPT}, {"dbeta", F, S1(3), OUT | OPT}}},
    {"sb_rms_norm_forward", c_rms_f, NULL,
     {{"x", F, S2(2, 3), IN}, {"weight", F, S1(3), IN | OPT}, {"y", F, S2(2, 3), OUT},
      {"save_rrms", F, S1(2), OUT | OPT}}},
    {"sb_rms_norm_backward", c_rms_b, init_positive,
     {{"dy", F, S2(2, 3), IN}, {"x", F, S2(2, 3), IN}, {"weight", F, S1(3), IN | OPT},
      {"save_rrms", F, S1(2), IN}, {"dx", F, S2(2, 3), OUT | OPT},
      {"dweight", F, S1(3), OUT | OPT}}},
    {"sb_group_norm_forward", c_gn_f, NULL,
     {{"x", F, S3(2, 4, 3), IN}, {"gamma", F, S1(4), IN | OPT}, {"beta", F, S1(4), IN | OPT},
      {"y", F, S3(2, 4, 3), OUT}, {"save_mean", F, S2(2, 2), OUT | OPT},
      {"save_rstd", F, S2(2, 2), OUT | OPT}}},
    {"sb_group_norm_backward", c_gn_b, init_positive,
     {{"dy", F, S3(2, 4, 3), IN}, {"x", F, S3(2, 4, 3), IN}, {"gamma", F, S1(4), IN | OPT},
      {"save_mean", F, S2(2, 2), IN}, {"save_rstd", F, S2(2, 2), IN}, {"dx", F, S3(2, 4, 3), OUT | OPT},
      {"dgamma", F, S1(4), OUT | OPT}, {"dbeta", F, S1(4), OUT | OPT}}},
    {"sb_prelu_forward", c_prelu_f, NULL,
     {{"x", F, S3(2, 3, 4), IN}, {"weight", F, S1(3), IN}, {"y", F, S3(2, 3, 4), OUT}}},
    {"sb_prelu_backward", c_prelu_b, NULL,
     {{"x", F, S3(2, 3, 4), IN}, {"weight", F, S1(3), IN}, {"dy", F, S3(2, 3, 4), IN},
      {"dx", F, S3(2, 3, 4), OUT | OPT}, {"dweight", F, S1(3), OUT | OPT}}},
    {"sb_dropout_forward", c_dropout_f, NULL,
     {{"x", F, S2(2, 3), IN}, {"y", F, S2(2, 3), OUT}, {"mask", F, S2(2, 3), OUT | OPT}}},
    {"sb_dropout_backward", c_dropout_b, init_dropout_mask,
     {{"dy", F, S2(2, 3), IN}, {"mask", F, S2(2, 3), IN}, {"dx", F, S2(2, 3), OUT}}},
    {"sb_sdpa_forward", c_sdpa_f, NULL,
     {{"q", F, S3(2, 3, 2), IN}, {"k", F, S3(2, 4, 2), IN}, {"v", F, S3(2, 4, 3), IN},
      {"mask", F, S2(3, 4), IN | OPT | FREE_RANK}, {"out", F, S3(2, 3, 3), OUT},
      {"probs", F, S3(2, 3, 4), OUT | OPT}}},
    {"sb_sdpa_backward", c_sdpa_b, NULL,
     {{"dout", F, S3(2, 3, 3), IN}, {"q", F, S3(2, 3, 2), IN}, {"k", F, S3(2, 4, 2), IN},
      {"v", F, S3(2, 4, 3), IN}, {"mask", F, S2(3, 4), IN | OPT | FREE_RANK},
      {"probs", F, S3(2, 3, 4), IN}, {"dq", F, S3(2, 3, 2), OUT | OPT},
      {"dk", F, S3(2, 4, 2), OUT | OPT}, {"dv", F, S3(2, 4, 3), OUT | OPT}}},
    {"sb_rnn_forward", c_rnn_f, NULL,
     {{"gx", F, S2(3, 12), IN}, {"h0", F, S2(2, 2), IN}, {"c0", F, S2(2, 3), IN},
      {"w_hh", F, S2(12, 2), IN}, {"b_hh", F, S1(12), IN | OPT}, {"w_hr", F, S2(2, 3), IN | OPT},
      {"y", F, S2(3, 2), OUT}, {"h_n", F, S2(2, 2), OUT}, {"c_n", F, S2(2, 3), OUT},
      {"h_prev", F, S2(3, 2), OUT | OPT}, {"saved", F, S3(7, 3, 3), OUT | OPT}}},
    {"sb_rnn_backward", c_rnn_b, NULL,
     {{"w_hh", F, S2(12, 2), IN}, {"w_hr", F, S2(2, 3), IN | OPT}, {"saved", F, S3(7, 3, 3), IN},
      {"dy", F, S2(3, 2), IN}, {"dh_n", F, S2(2, 2), IN}, {"dc_n", F, S2(2, 3), IN},
      {"dgx", F, S2(3, 12), OUT}, {"dh_all", F, S2(3, 2), OUT | OPT}, {"dh0", F, S2(2, 2), OUT},
      {"dc0", F, S2(2, 3), OUT}}},
    {"sb_rnn_backward", c_gru_b, NULL,
     {{"w_hh", F, S2(9, 3), IN}, {"saved", F, S3(5, 3, 3), IN}, {"dy", F, S2(3, 3), IN},
      {"dh_n", F, S2(2, 3), IN}, {"dgx", F, S2(3, 9), OUT}, {"dgh", F, S2(3, 9), OUT},
      {"dh_all", F, S2(3, 3), OUT | OPT}, {"dh0", F, S2(2, 3), OUT}}},
    {"sb_tensor_copy", c_copy, NULL, {{"src", F, S2(2, 3), IN}, {"dst", F, S2(2, 3), OUT}}},
    {"sb_sgd_step_tensor", c_sgd_t, NULL,
     {{"param", F, S2(2, 3), INOUT}, {"grad", F, S2(2, 3), IN}, {"momentum_buf", F, S2(2, 3), INOUT | OPT}}},
    {"sb_adam_step_tensor", c_adam_t, NULL,
     {{"param", F, S2(2, 3), INOUT}, {"grad", F, S2(2, 3), IN}, {"exp_avg", F, S2(2, 3), INOUT},
      {"exp_avg_sq", F, S2(2, 3), INOUT}, {"max_exp_avg_sq", F, S2(2, 3), INOUT | OPT}}},
};

/* One call's tensors: headers the mutations edit and the buffers behind them.
 * Every buffer has room for the largest slot twice over, so an output pointed
 * at another slot's buffer or laid out with stride 2 stays inside it. */
typedef struct fixture {
    int n;
    sb_tensor hdr[MAX_SLOTS];
    sb_tensor *t[MAX_SLOTS];
    unsigned char *buf[MAX_SLOTS];
    unsigned char *snap[MAX_SLOTS];
    size_t cap;
} fixture;

static size_t slot_bytes(const slot *s) {
    int64_t n = 1;
    for (int i = 0; i < s->ndim; i++) n *= s->shape[i];
    return (size_t)n * sb_dtype_size(s->dtype);
}

static void contiguous_header(sb_tensor *h, const slot *s, void *data) {
    memset(h, 0, sizeof *h);
    h->dtype = s->dtype;
    h->ndim = s->ndim;
    h->data = data;
    int64_t st = 1;
    for (int i = s->ndim - 1; i >= 0; i--) {
        h->shape[i] = s->shape[i];
        h->strides[i] = st;
        st *= s->shape[i];
    }
}

/* Fills inputs from a fixed stream, outputs with the sentinel 0xA5 bytes, and
 * lays each slot out with element stride `step` (1 or 2) along its last axis. */
static void fixture_fill(fixture *f, const op_case *op, int step) {
    uint32_t r = 12345;
    for (int k = 0; k < f->n; k++) {
        const slot *s = &op->s[k];
        memset(f->buf[k], 0xA5, f->cap);
        contiguous_header(&f->hdr[k], s, f->buf[k]);
        if (step > 1 && s->ndim > 0) {
            for (int i = 0; i < s->ndim; i++) f->hdr[k].strides[i] *= step;
        }
        if (s->flags & OUT) { f->t[k] = &f->hdr[k]; continue; }
        int64_t n = 1;
        for (int i = 0; i < s->ndim; i++) n *= s->shape[i];
        int64_t st = s->ndim ? f->hdr[k].strides[s->ndim - 1] : 1; /* row-major: position i*step */
        (void)st;
        for (int64_t i = 0; i < n; i++) {
            r = r * 1664525u + 1013904223u;
            int64_t at = i * step;
            if (s->dtype == SB_F32) ((float *)f->buf[k])[at] = (float)((int32_t)(r >> 8) % 2001 - 1000) / 1000.0f;
            else ((int64_t *)f->buf[k])[at] = 0;
        }
        f->t[k] = &f->hdr[k];
    }
    if (op->init) op->init(f->t);
}

static void fixture_new(fixture *f, const op_case *op) {
    memset(f, 0, sizeof *f);
    size_t big = 16;
    for (int k = 0; k < MAX_SLOTS && op->s[k].name; k++) {
        f->n = k + 1;
        if (slot_bytes(&op->s[k]) > big) big = slot_bytes(&op->s[k]);
    }
    f->cap = 2 * big;
    for (int k = 0; k < f->n; k++) {
        f->buf[k] = malloc(f->cap);
        f->snap[k] = malloc(f->cap);
    }
}

static void fixture_free(fixture *f) {
    for (int k = 0; k < f->n; k++) { free(f->buf[k]); free(f->snap[k]); }
}

static void snapshot(fixture *f) {
    for (int k = 0; k < f->n; k++) memcpy(f->snap[k], f->buf[k], f->cap);
}

static int untouched(const fixture *f) {
    for (int k = 0; k < f->n; k++)
        if (memcmp(f->snap[k], f->buf[k], f->cap) != 0) return 0;
    return 1;
}

typedef enum { MUST_FAIL, MAY_PASS } expectation;

/* Runs a mutated call: it must fail with `want` (0: any error) naming fn and
 * `name` (NULL: any parameter), leaving every buffer untouched - unless
 * `may` says success is allowed too. */
static void expect_refused(const op_case *op, fixture *f, const char *what, int slotk,
                           sb_status want, const char *name, expectation may) {
    snapshot(f);
    sb_clear_error();
    if (getenv("SB_BAD_INPUT_TRACE")) fprintf(stderr, "   %s %s\n", op->s[slotk].name, what);
    sb_status st = op->call(f->t);
    if (st == SB_OK && may == MAY_PASS) return;
    const char *sname = op->s[slotk].name;
    CHECK(st != SB_OK && (want == 0 || st == want), "%s, %s %s: returned %s (%s), expected %s", op->fn,
          sname, what, sb_status_name(st), sb_last_error(), want ? sb_status_name(want) : "an error");
    if (st == SB_OK) return;
    if (name) {
        CHECK(names_it(op->fn, name), "%s, %s %s: message \"%s\" does not name %s and %s", op->fn, sname,
              what, sb_last_error(), op->fn, name);
    } else {
        int any = 0;
        for (int k = 0; k < f->n; k++) any |= names_it(op->fn, op->s[k].name);
        CHECK(any, "%s, %s %s: message \"%s\" names no parameter of %s", op->fn, sname, what,
              sb_last_error(), op->fn);
    }
    CHECK(untouched(f), "%s, %s %s: a refused call wrote to memory (%s)", op->fn, sname, what,
          sb_last_error());
}

/* Output k shares buffer j. */
static void alias_case(const op_case *op, fixture *f, unsigned char *const *base, int k, int j,
                       const char *what) {
    snapshot(f);
    sb_clear_error();
    sb_status st = op->call(f->t);
    if (st != SB_OK) {
        CHECK(names_it(op->fn, op->s[k].name) || names_it(op->fn, op->s[j].name),
              "%s, %s %s: message \"%s\" names neither", op->fn, op->s[k].name, what, sb_last_error());
        CHECK(untouched(f), "%s, %s %s: a refused call wrote to memory", op->fn, op->s[k].name, what);
        return;
    }
    int same = 1;
    for (int m = 0; m < f->n; m++) {
        if (!(op->s[m].flags & (OUT | INOUT)) || !f->t[m]) continue;
        same &= memcmp(f->t[m]->data, base[m], slot_bytes(&op->s[m])) == 0;
    }
    CHECK(same, "%s, %s %s: accepted, and the results differ from the call on separate memory", op->fn,
          op->s[k].name, what);
}

static void run_op(const op_case *op) {
    cover(op->fn);
    if (getenv("SB_BAD_INPUT_TRACE")) fprintf(stderr, "== %s\n", op->fn);
    fixture f;
    fixture_new(&f, op);

    /* The valid call, whose outputs the strided calls must reproduce. */
    fixture_fill(&f, op, 1);
    sb_status st = op->call(f.t);
    CHECK(st == SB_OK, "%s: the valid call failed: %s", op->fn, sb_last_error());
    unsigned char *base[MAX_SLOTS];
    for (int k = 0; k < f.n; k++) {
        base[k] = malloc(f.cap);
        memcpy(base[k], f.buf[k], f.cap);
    }

    for (int k = 0; k < f.n; k++) {
        const slot *s = &op->s[k];
        sb_tensor *h = &f.hdr[k];

        if (!(s->flags & OPT)) {
            fixture_fill(&f, op, 1);
            f.t[k] = NULL;
            expect_refused(op, &f, "NULL", k, SB_ERR_NULL, s->name, MUST_FAIL);
        }

        fixture_fill(&f, op, 1);
        h->dtype = s->dtype == SB_F32 ? SB_I64 : SB_F32;
        expect_refused(op, &f, "with the wrong dtype", k, SB_ERR_DTYPE, s->name, MUST_FAIL);

        /* Hand-built headers: refused before a shape entry is read. */
        struct { const char *what; sb_status want; } hb[] = {
            {"with ndim 100", SB_ERR_SHAPE}, {"with ndim -1", SB_ERR_SHAPE},
            {"with a negative shape", SB_ERR_SHAPE}, {"with dtype 77", SB_ERR_DTYPE},
            {"with device 9", SB_ERR_DEVICE}, {"on the CUDA device", SB_ERR_DEVICE},
            {"with an overflowing size", SB_ERR_SHAPE}, {"with overflowing strides", SB_ERR_SHAPE},
            {"with no data", SB_ERR_NULL},
        };
        for (int m = 0; m < (int)(sizeof hb / sizeof *hb); m++) {
            fixture_fill(&f, op, 1);
            switch (m) {
            case 0: h->ndim = 100; break;
            case 1: h->ndim = -1; break;
            case 2: if (s->ndim == 0) continue; h->shape[0] = -2; break;
            case 3: h->dtype = (sb_dtype)77; break;
            case 4: h->device = (sb_device)9; break;
            case 5: h->device = SB_DEVICE_CUDA; break;
            case 6: if (s->ndim == 0) continue;
                h->shape[0] = (int64_t)1 << 62; h->shape[s->ndim - 1] = (int64_t)1 << 62;
                if (s->ndim == 1) h->shape[0] = INT64_MAX;
                break;
            case 7: if (s->ndim == 0) continue; h->strides[0] = INT64_MAX / 2; h->shape[0] = 3; break;
            case 8: h->data = NULL; break;
            }
            expect_refused(op, &f, hb[m].what, k, hb[m].want, s->name, MUST_FAIL);
        }

        /* Shapes that do not fit the call. */
        if (!(s->flags & (FREE_RANK | FREE_SHAPE)) && s->ndim < 4) {
            fixture_fill(&f, op, 1);
            for (int i = s->ndim; i > 0; i--) h->shape[i] = h->shape[i - 1], h->strides[i] = h->strides[i - 1];
            h->shape[0] = 1;
            h->strides[0] = h->ndim ? h->strides[1] * h->shape[1] : 1;
            h->ndim++;
            expect_refused(op, &f, "with one more dimension", k, 0, NULL, MUST_FAIL);
        }
        if (!(s->flags & FREE_SHAPE) && s->ndim > 0) {
            fixture_fill(&f, op, 1);
            h->shape[0] += 2;
            for (int i = 1; i < s->ndim; i++) h->strides[i - 1] = 0; /* stays inside the buffer */
            expect_refused(op, &f, "with a mismatched shape", k, 0, NULL, MUST_FAIL);
            fixture_fill(&f, op, 1);
            h->shape[0] = (int64_t)1 << 40;
            h->strides[0] = 0;
            expect_refused(op, &f, "with a huge dimension", k, 0, NULL, MUST_FAIL);
            fixture_fill(&f, op, 1);
            h->shape[0] = 0;
            expect_refused(op, &f, "with a zero-size dimension", k, 0, NULL, MAY_PASS);
        }

        /* An output on the memory of another argument: refused, or harmless
         * (every output still holds the bits of the separate-memory call). */
        if (s->flags & (OUT | INOUT)) {
            for (int j = 0; j < f.n; j++) {
                if (j == k) continue;
                for (int shift = 0; shift < 2; shift++) { /* exactly on it, or one element on */
                    fixture_fill(&f, op, 1);
                    h->data = f.buf[j] + shift * sb_dtype_size(s->dtype);
                    char what[80];
                    snprintf(what, sizeof what, "on the memory of %s%s", op->s[j].name,
                             shift ? " shifted by one element" : "");
                    alias_case(op, &f, base, k, j, what);
                }
            }
        }
    }

    /* Every tensor a non-contiguous view (stride 2): refused, or the same bits
     * as the contiguous call with the gaps left alone. */
    fixture_fill(&f, op, 2);
    snapshot(&f);
    sb_clear_error();
    st = op->call(f.t);
    if (st != SB_OK) {
        int any = 0;
        for (int k = 0; k < f.n; k++) any |= names_it(op->fn, op->s[k].name);
        CHECK(any && untouched(&f), "%s, strided views: refused with \"%s\" (must name a parameter, write nothing)",
              op->fn, sb_last_error());
    } else {
        for (int k = 0; k < f.n; k++) {
            if (!(op->s[k].flags & (OUT | INOUT))) continue;
            size_t es = sb_dtype_size(op->s[k].dtype), n = slot_bytes(&op->s[k]) / es;
            for (size_t i = 0; i < n; i++) {
                CHECK(memcmp(f.buf[k] + 2 * i * es, base[k] + i * es, es) == 0,
                      "%s, strided views: %s element %zu differs from the contiguous call", op->fn,
                      op->s[k].name, i);
                CHECK(memcmp(f.buf[k] + (2 * i + 1) * es, f.snap[k] + (2 * i + 1) * es, es) == 0,
                      "%s, strided views: %s gap after element %zu was written", op->fn, op->s[k].name, i);
            }
        }
    }
    for (int k = 0; k < f.n; k++) free(base[k]);
    fixture_free(&f);
}

/* ---- part 2: everything else ---------------------------------------------- */

/* A call that must fail with `want`, naming `fn` (and `needle`). */
#define BAD(fn, call, want, needle)                                                              \
    do {                                                                                         \
        cover(#fn);                                                                              \
        sb_clear_error();                                                                        \
        sb_status s_ = (sb_status)(call);                                                        \
        CHECK(s_ == (want), "%s returned %s (%s), expected %s", #call, sb_status_name(s_),       \
              sb_last_error(), sb_status_name(want));                                            \
        CHECK(names_it(#fn, needle), "%s: message \"%s\" does not name %s and \"%s\"", #call,     \
              sb_last_error(), #fn, needle);                                                     \
    } while (0)

/* The same for a function that reports the error of the public function it
 * called (`via`), which names the parameter. */
#define BAD_VIA(fn, via, call, want, needle)                                                     \
    do {                                                                                         \
        cover(#fn);                                                                              \
        sb_clear_error();                                                                        \
        sb_status s_ = (sb_status)(call);                                                        \
        CHECK(s_ == (want), "%s returned %s (%s), expected %s", #call, sb_status_name(s_),       \
              sb_last_error(), sb_status_name(want));                                            \
        CHECK(names_it(#fn, needle) || names_it(via, needle) || strstr(sb_last_error(), via),    \
              "%s: message \"%s\" names neither %s nor %s with \"%s\"", #call, sb_last_error(), \
              #fn, via, needle);                                                                 \
    } while (0)

/* A function without a status that must tolerate the input (NULL etc.). */
#define TOLERATES(fn, stmt) do { cover(#fn); stmt; } while (0)


/* A value-returning function that must answer `cond` for the bad input. */
#define ANSWERS(fn, cond) do { cover(#fn); CHECK((cond), "%s: %s", #fn, #cond); } while (0)

static sb_tensor *make(sb_dtype dt, int nd, int64_t a, int64_t b) {
    sb_tensor *t = NULL;
    int64_t shape[2] = {a, b};
    sb_tensor_new(&t, dt, nd, shape);
    return t;
}

/* Tensors, views and arenas: the sizes callers pass. */
static void bad_tensor_api(void) {
    sb_tensor *t = (sb_tensor *)1, *v = (sb_tensor *)1, *x = make(SB_F32, 2, 2, 3);
    int64_t neg[2] = {2, -3}, wide[3] = {0, (int64_t)1 << 62, (int64_t)1 << 62};
    BAD(sb_tensor_new, sb_tensor_new(&t, SB_F32, 2, neg), SB_ERR_SHAPE, "shape[1]");
    CHECK(t == NULL, "failed sb_tensor_new leaves NULL");
    BAD(sb_tensor_new, sb_tensor_new(&t, SB_F32, 3, wide), SB_ERR_SHAPE, "too large");
    BAD(sb_tensor_new, sb_tensor_new(&t, SB_F32, -1, neg), SB_ERR_SHAPE, "ndim -1");
    BAD(sb_tensor_new, sb_tensor_new(&t, (sb_dtype)-1, 1, neg), SB_ERR_DTYPE, "dtype");
    BAD(sb_tensor_new, sb_tensor_new(NULL, SB_F32, 1, neg), SB_ERR_NULL, "out");
    sb_arena *a = NULL;
    CHECK_OK(sb_arena_new(&a, 0));
    BAD(sb_tensor_new_in, sb_tensor_new_in(&t, a, SB_F32, 3, wide), SB_ERR_SHAPE, "too large");
    BAD(sb_tensor_new_in, sb_tensor_new_in(&t, NULL, SB_F32, 1, neg), SB_ERR_NULL, "arena");
    BAD(sb_tensor_wrap, sb_tensor_wrap(&t, x->data, SB_F32, 9, neg, NULL), SB_ERR_SHAPE, "ndim 9");
    int64_t s2[2] = {2, 3}, far[2] = {INT64_MAX, 1};
    BAD(sb_tensor_wrap, sb_tensor_wrap(&t, x->data, SB_F32, 2, s2, far), SB_ERR_SHAPE, "strides");
    BAD(sb_tensor_reshape, sb_tensor_reshape(&v, x, 3, wide), SB_ERR_SHAPE, "");
    CHECK(v == NULL, "failed reshape leaves NULL");
    BAD(sb_tensor_reshape, sb_tensor_reshape(&v, x, 100, s2), SB_ERR_SHAPE, "ndim 100");
    BAD(sb_tensor_reshape, sb_tensor_reshape(&v, x, 2, NULL), SB_ERR_NULL, "shape");
    BAD(sb_tensor_flatten, sb_tensor_flatten(&v, x, 5, -7), SB_ERR_ARG, "dims");
    BAD(sb_tensor_flatten, sb_tensor_flatten(&v, NULL, 0, 1), SB_ERR_NULL, "src");
    BAD(sb_tensor_transpose, sb_tensor_transpose(&v, x, 0, INT32_MIN), SB_ERR_ARG, "dims");
    BAD(sb_tensor_transpose, sb_tensor_transpose(NULL, x, 0, 1), SB_ERR_NULL, "out");
    BAD(sb_tensor_fill, sb_tensor_fill(NULL, 1.0f), SB_ERR_NULL, "t");
    sb_tensor h = {.dtype = SB_F32, .ndim = 100, .data = x->data};
    BAD(sb_tensor_fill, sb_tensor_fill(&h, 1.0f), SB_ERR_SHAPE, "ndim 100");
    ANSWERS(sb_tensor_numel, sb_tensor_numel(NULL) == 0 && sb_tensor_numel(&h) == -1);
    ANSWERS(sb_tensor_is_contiguous, !sb_tensor_is_contiguous(NULL) && !sb_tensor_is_contiguous(&h));
    sb_tensor *i64 = make(SB_I64, 1, 4, 0);
    ANSWERS(sb_tensor_f32, sb_tensor_f32(NULL) == NULL && sb_tensor_f32(i64) == NULL);
    ANSWERS(sb_dtype_size, sb_dtype_size((sb_dtype)77) == 0 && sb_dtype_size((sb_dtype)-1) == 0);
    ANSWERS(sb_dtype_name, strcmp(sb_dtype_name((sb_dtype)77), "invalid dtype") == 0);
    BAD(sb_arena_new, sb_arena_new(NULL, 64), SB_ERR_NULL, "out");
    cover("sb_arena_alloc");
    CHECK(sb_arena_alloc(a, SIZE_MAX) == NULL && names_it("sb_arena_alloc", "too large"), "arena SIZE_MAX: %s",
          sb_last_error());
    CHECK(sb_arena_alloc(NULL, 8) == NULL && names_it("sb_arena_alloc", "arena"), "arena NULL: %s",
          sb_last_error());
    ANSWERS(sb_arena_used, sb_arena_used(NULL) == 0);
    TOLERATES(sb_arena_reset, sb_arena_reset(NULL));
    TOLERATES(sb_arena_free, sb_arena_free(NULL));
    TOLERATES(sb_tensor_free, sb_tensor_free(NULL));
    sb_arena_free(a);
    sb_tensor_free(x);
    sb_tensor_free(i64);
}

/* Geometry helpers, raw-buffer kernels, status and runtime settings. */
static void bad_sizes_and_kernels(void) {
    int64_t oh = -7, ow = -7;
    sb_conv2d_params cp = {1, 1, 1, 1, 1, 1, 1};
    float sdpa_scale = 5.0f;
    BAD(sb_sdpa_default_scale, sb_sdpa_default_scale(0, &sdpa_scale), SB_ERR_ARG, "e = 0");
    BAD(sb_sdpa_default_scale, sb_sdpa_default_scale(-3, &sdpa_scale), SB_ERR_ARG, "e = -3");
    BAD(sb_sdpa_default_scale, sb_sdpa_default_scale(4, NULL), SB_ERR_NULL, "scale");
    CHECK(sdpa_scale == 5.0f, "sb_sdpa_default_scale: a refused call wrote the scale");
    BAD(sb_conv2d_output_size, sb_conv2d_output_size(INT64_MAX, 4, 3, 3, &cp, &oh, &ow), SB_ERR_ARG, "height");
    BAD(sb_conv2d_output_size, sb_conv2d_output_size(-1, 4, 3, 3, &cp, &oh, &ow), SB_ERR_ARG, "negative");
    BAD(sb_conv2d_output_size, sb_conv2d_output_size(4, 4, INT64_MAX, 3, &cp, &oh, &ow), SB_ERR_ARG, "kernel_h");
    cp.stride_h = 0;
    BAD(sb_conv2d_output_size, sb_conv2d_output_size(4, 4, 3, 3, &cp, &oh, &ow), SB_ERR_ARG, "stride_h");
    BAD(sb_conv2d_output_size, sb_conv2d_output_size(4, 4, 3, 3, NULL, NULL, &ow), SB_ERR_NULL, "out_h");
    sb_conv_transpose2d_params tp = {2, 2, 1, 1, 1, 1, 1, 1, 1};
    BAD(sb_conv_transpose2d_output_size, sb_conv_transpose2d_output_size(INT64_MAX, 4, 3, 3, &tp, &oh, &ow), SB_ERR_ARG, "height");
    BAD(sb_conv_transpose2d_output_size, sb_conv_transpose2d_output_size(0, 4, 3, 3, &tp, &oh, &ow), SB_ERR_SHAPE, "height");
    BAD(sb_conv_transpose2d_output_size, sb_conv_transpose2d_output_size(4, 4, 3, INT64_MAX, &tp, &oh, &ow), SB_ERR_ARG, "kernel_w");
    BAD(sb_conv_transpose2d_output_size, sb_conv_transpose2d_output_size(1, 1, 1, 1, &tp, &oh, &ow), SB_ERR_SHAPE, "padding");
    tp.output_pad_w = 2;
    BAD(sb_conv_transpose2d_output_size, sb_conv_transpose2d_output_size(4, 4, 3, 3, &tp, &oh, &ow), SB_ERR_ARG, "output_pad");
    tp.output_pad_w = 1;
    tp.groups = 0;
    BAD(sb_conv_transpose2d_output_size, sb_conv_transpose2d_output_size(4, 4, 3, 3, &tp, &oh, &ow), SB_ERR_ARG, "groups");
    BAD(sb_conv_transpose2d_output_size, sb_conv_transpose2d_output_size(4, 4, 3, 3, NULL, &oh, NULL), SB_ERR_NULL, "out_h");
    sb_pool2d_params pp = {2, 2, 0, 0, 1, 1, true, false, 0, 0, 0};
    BAD(sb_pool2d_output_size, sb_pool2d_output_size(INT64_MAX, 4, &pp, &oh, &ow), SB_ERR_ARG, "height");
    BAD(sb_pool2d_output_size, sb_pool2d_output_size(4, 4, NULL, &oh, &ow), SB_ERR_NULL, "params");
    pp.kernel_w = -2;
    BAD(sb_pool2d_output_size, sb_pool2d_output_size(4, 4, &pp, &oh, &ow), SB_ERR_ARG, "kernel_w");
    pp.kernel_w = 2;
    pp.dilation_h = -1;
    BAD(sb_pool2d_output_size, sb_pool2d_output_size(4, 4, &pp, &oh, &ow), SB_ERR_ARG, "dilation_h");
    pp.dilation_h = (int64_t)INT32_MAX + 1;
    BAD(sb_pool2d_output_size, sb_pool2d_output_size(4, 4, &pp, &oh, &ow), SB_ERR_ARG, "dilation_h");
    pp.dilation_h = 1;
    pp.divisor_override = INT64_MIN;
    BAD(sb_pool2d_output_size, sb_pool2d_output_size(4, 4, &pp, &oh, &ow), SB_ERR_ARG, "divisor_override");
    pp.divisor_override = 0;
    pp.dilation_w = 3; /* width 2, padding 1: the one window's taps are -1 and 2 */
    BAD(sb_pool2d_output_size, sb_pool2d_output_size(4, 2, &pp, &oh, &ow), SB_ERR_SHAPE, "no input element");
    CHECK(oh == -7 && ow == -7, "refused output sizes leave the outputs alone");

    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, c[8];
    for (int i = 0; i < 8; i++) c[i] = -1.0f;
    BAD(sb_sgemm, sb_sgemm('X', 'N', 2, 2, 2, x, 2, x, 2, c, 2), SB_ERR_ARG, "transa");
    BAD(sb_sgemm, sb_sgemm('N', 'N', -2, 2, 2, x, 2, x, 2, c, 2), SB_ERR_ARG, "m = -2");
    BAD(sb_sgemm, sb_sgemm('N', 'N', 2, 2, 2, x, 1, x, 2, c, 2), SB_ERR_ARG, "lda");
    BAD(sb_sgemm, sb_sgemm('N', 'N', 2, 2, 2, NULL, 2, x, 2, c, 2), SB_ERR_NULL, "a is NULL");
    BAD(sb_sgemm, sb_sgemm('N', 'N', (int64_t)1 << 40, 2, 2, x, (int64_t)1 << 40, x, 2, c, 2), SB_ERR_ARG, "too large");
    BAD(sb_sgemm, sb_sgemm('N', 'N', 2, 2, 2, x, 2, x, 2, x + 1, 2), SB_ERR_ARG, "overlaps");
    for (int i = 0; i < 8; i++) CHECK(c[i] == -1.0f, "refused sgemm wrote c[%d]", i);
    float sum = -1.0f;
    BAD(sb_ssum, sb_ssum(-1, x, 1, &sum), SB_ERR_ARG, "n = -1");
    BAD(sb_ssum, sb_ssum(4, x, 0, &sum), SB_ERR_ARG, "incx");
    BAD(sb_ssum, sb_ssum(4, NULL, 1, &sum), SB_ERR_NULL, "x is NULL");
    BAD(sb_ssum, sb_ssum(4, x, 1, NULL), SB_ERR_NULL, "out is NULL");
    BAD(sb_ssum, sb_ssum((int64_t)1 << 62, x, 4, &sum), SB_ERR_ARG, "incx");
    BAD(sb_ssum, sb_ssum(INT64_MAX, x, INT64_MAX, &sum), SB_ERR_ARG, "incx");
    CHECK(sum == -1.0f, "refused ssum wrote its out");

    ANSWERS(sb_status_name, strcmp(sb_status_name((sb_status)999), "unknown status") == 0);
    sb_tensor_new(NULL, SB_F32, 0, NULL);
    CHECK(names_it("sb_tensor_new", "out"), "sb_last_error after a failure: %s", sb_last_error());
    cover("sb_last_error");
    cover("sb_clear_error");
    sb_clear_error();
    CHECK(sb_last_error()[0] == '\0', "sb_clear_error empties the message");

    sb_isa_level lvl = sb_isa();
    BAD(sb_set_isa, sb_set_isa((sb_isa_level)99), SB_ERR_ARG, "");
    BAD(sb_set_isa, sb_set_isa((sb_isa_level)-1), SB_ERR_ARG, "");
    CHECK(sb_isa() == lvl, "a refused sb_set_isa keeps the level");
    ANSWERS(sb_isa, sb_isa() < SB_ISA_COUNT);
    ANSWERS(sb_isa_best, sb_isa_supported(sb_isa_best()));
    ANSWERS(sb_isa_supported, !sb_isa_supported((sb_isa_level)99) && !sb_isa_supported((sb_isa_level)-5));
    ANSWERS(sb_isa_name, sb_isa_name((sb_isa_level)99) != NULL && sb_isa_name((sb_isa_level)-5) != NULL);
    BAD(sb_isa_from_name, sb_isa_from_name("avx9000", &lvl), SB_ERR_ARG, "avx9000");
    BAD(sb_isa_from_name, sb_isa_from_name(NULL, &lvl), SB_ERR_NULL, "");
    int threads = sb_num_threads();
    BAD(sb_set_num_threads, sb_set_num_threads(-3), SB_ERR_ARG, "");
    BAD(sb_set_num_threads, sb_set_num_threads(INT32_MAX), SB_ERR_ARG, "");
    ANSWERS(sb_num_threads, sb_num_threads() == threads);
}

/* Random numbers: NULL outputs and negative or huge counts. */
static void bad_random(void) {
    sb_rng r = sb_rng_make(1, 2);
    float f[4] = {-1, -1, -1, -1};
    uint32_t u[4] = {7, 7, 7, 7};
    int64_t perm[4] = {9, 9, 9, 9};
    BAD(sb_rng_uniform, sb_rng_uniform(&r, 0, f, -1), SB_ERR_ARG, "n");
    BAD(sb_rng_uniform, sb_rng_uniform(&r, 0, NULL, 4), SB_ERR_NULL, "out");
    BAD(sb_rng_uniform, sb_rng_uniform(NULL, 0, f, 4), SB_ERR_NULL, "rng");
    BAD(sb_rng_uniform, sb_rng_uniform(&r, UINT64_MAX - 1, f, 4), SB_ERR_RANGE, "");
    BAD(sb_rng_uniform_range, sb_rng_uniform_range(&r, 0, 2.0f, 1.0f, f, 4), SB_ERR_ARG, "");
    BAD(sb_rng_uniform_range, sb_rng_uniform_range(&r, 0, 0.0f, 1.0f, f, INT64_MIN), SB_ERR_ARG, "n");
    BAD(sb_rng_normal, sb_rng_normal(&r, 0, 0.0f, -1.0f, f, 4), SB_ERR_ARG, "std");
    BAD(sb_rng_normal, sb_rng_normal(&r, 0, 0.0f, 1.0f, NULL, 4), SB_ERR_NULL, "out");
    BAD(sb_rng_bounded, sb_rng_bounded(&r, 0, 0, u, 4), SB_ERR_ARG, "bound");
    BAD(sb_rng_bounded, sb_rng_bounded(&r, 0, 5, u, -4), SB_ERR_ARG, "n");
    BAD(sb_rng_next_uniform, sb_rng_next_uniform(&r, f, -1), SB_ERR_ARG, "n");
    BAD(sb_rng_next_uniform, sb_rng_next_uniform(NULL, f, 4), SB_ERR_NULL, "rng");
    BAD(sb_rng_next_normal, sb_rng_next_normal(&r, 0.0f, 1.0f, NULL, 4), SB_ERR_NULL, "out");
    BAD(sb_rng_next_bounded, sb_rng_next_bounded(&r, 0, u, 4), SB_ERR_ARG, "bound");
    CHECK(r.counter == 0, "refused next_* calls do not advance the counter (%llu)", (unsigned long long)r.counter);
    BAD(sb_rng_permutation, sb_rng_permutation(1, 2, -4, perm), SB_ERR_ARG, "n");
    BAD(sb_rng_permutation, sb_rng_permutation(1, 2, 4, NULL), SB_ERR_NULL, "perm");
    BAD(sb_rng_permutation, sb_rng_permutation(1, 2, INT64_MAX, perm), SB_ERR_ARG, "");
    for (int i = 0; i < 4; i++)
        CHECK(f[i] == -1.0f && u[i] == 7 && perm[i] == 9, "refused rng calls wrote element %d", i);
}

/* Hashing, files and datasets. */
static void bad_io(void) {
    unsigned char d[32];
    sb_sha256_ctx ctx;
    sb_sha256_init(&ctx);
    sb_tensor h = {.dtype = SB_F32, .ndim = 100};
    BAD(sb_sha256_tensor, sb_sha256_tensor(&ctx, &h), SB_ERR_SHAPE, "ndim 100");
    BAD(sb_sha256_tensor, sb_sha256_tensor(NULL, &h), SB_ERR_NULL, "ctx");
    const sb_tensor *list[2] = {&h, NULL};
    BAD_VIA(sb_hash_tensors, "sb_sha256_tensor", sb_hash_tensors(list, 1, d), SB_ERR_SHAPE, "ndim 100");
    BAD_VIA(sb_hash_tensors, "sb_sha256_tensor", sb_hash_tensors(list + 1, 1, d), SB_ERR_NULL, "tensor");
    BAD(sb_hash_tensors, sb_hash_tensors(list, 1, NULL), SB_ERR_NULL, "digest");

    const char *missing = "/nonexistent/samebits-bad-input";
    sb_idx *idx = (sb_idx *)1;
    BAD(sb_idx_read, sb_idx_read(missing, &idx), SB_ERR_IO, missing);
    CHECK(idx == NULL, "failed sb_idx_read leaves NULL");
    BAD(sb_idx_read, sb_idx_read(NULL, &idx), SB_ERR_NULL, "");
    sb_dataset ds;
    memset(&ds, 0x5a, sizeof ds);
    BAD(sb_mnist_load, sb_mnist_load(missing, true, &ds), SB_ERR_IO, "");
    BAD(sb_mnist_load, sb_mnist_load(NULL, true, &ds), SB_ERR_NULL, "");
    TOLERATES(sb_idx_free, sb_idx_free(NULL));
    TOLERATES(sb_dataset_free, sb_dataset_free(NULL));

    sb_safetensors *st = (sb_safetensors *)1;
    BAD(sb_safetensors_read, sb_safetensors_read(missing, &st), SB_ERR_IO, missing);
    BAD(sb_safetensors_read, sb_safetensors_read(NULL, &st), SB_ERR_NULL, "");
    char path[] = "/tmp/sb_bad_input_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    if (fd >= 0) close(fd);
    sb_named_tensor nt[2] = {{"a", &h}, {"b", NULL}};
    BAD(sb_safetensors_write, sb_safetensors_write(path, nt, 1, NULL, 0), SB_ERR_SHAPE, "ndim 100");
    BAD(sb_safetensors_write, sb_safetensors_write(path, nt + 1, 1, NULL, 0), SB_ERR_NULL, "");
    BAD(sb_safetensors_write, sb_safetensors_write(NULL, nt, 1, NULL, 0), SB_ERR_NULL, "");
    sb_tensor *x = make(SB_F32, 1, 3, 0);
    sb_named_tensor ok[2] = {{"a", x}, {"a", x}};
    BAD(sb_safetensors_write, sb_safetensors_write(path, ok, 2, NULL, 0), SB_ERR_ARG, "");
    CHECK_OK(sb_safetensors_write(path, ok, 1, NULL, 0));
    CHECK_OK(sb_safetensors_read(path, &st));
    const sb_tensor *got = NULL;
    const char *name = NULL, *value = NULL;
    BAD(sb_safetensors_get, sb_safetensors_get(st, "zz", &got), SB_ERR_ARG, "zz");
    BAD(sb_safetensors_get, sb_safetensors_get(NULL, "a", &got), SB_ERR_NULL, "");
    BAD(sb_safetensors_at, sb_safetensors_at(st, 1, &name, &got), SB_ERR_RANGE, "");
    BAD(sb_safetensors_at, sb_safetensors_at(st, SIZE_MAX, &name, &got), SB_ERR_RANGE, "");
    BAD(sb_safetensors_get_meta, sb_safetensors_get_meta(st, "nokey", &value), SB_ERR_ARG, "nokey");
    BAD(sb_safetensors_meta_at, sb_safetensors_meta_at(st, SIZE_MAX, &name, &value), SB_ERR_RANGE, "");
    ANSWERS(sb_safetensors_count, sb_safetensors_count(NULL) == 0 && sb_safetensors_count(st) == 1);
    ANSWERS(sb_safetensors_meta_count, sb_safetensors_meta_count(NULL) == 0);
    sb_safetensors_free(st);
    TOLERATES(sb_safetensors_free, sb_safetensors_free(NULL));
    remove(path);
    sb_tensor_free(x);
}

/* Modules, graphs and autograd ops. */
static void bad_modules_and_graphs(void) {
    sb_module *m = (sb_module *)1;
    BAD(sb_nn_linear, sb_nn_linear(&m, -1, 4, true), SB_ERR_ARG, "");
    CHECK(m == NULL, "failed constructor leaves NULL");
    BAD_VIA(sb_nn_linear, "sb_tensor_new", sb_nn_linear(&m, (int64_t)1 << 40, (int64_t)1 << 40, true), SB_ERR_SHAPE, "too large");
    BAD(sb_nn_linear, sb_nn_linear(NULL, 3, 4, true), SB_ERR_NULL, "out");
    BAD(sb_nn_conv2d, sb_nn_conv2d(&m, 3, 4, 0, 3, NULL, true), SB_ERR_ARG, "");
    BAD(sb_nn_conv_transpose2d, sb_nn_conv_transpose2d(&m, 3, 4, 3, 0, NULL, true), SB_ERR_ARG, "kernel");
    BAD(sb_nn_conv_transpose2d, sb_nn_conv_transpose2d(NULL, 3, 4, 3, 3, NULL, true), SB_ERR_NULL, "out");
    BAD(sb_nn_conv_transpose2d, sb_nn_conv_transpose2d(&m, INT64_MAX, INT64_MAX, 3, 3, NULL, true), SB_ERR_SHAPE, "too large");
    BAD_VIA(sb_nn_conv2d, "sb_tensor_new", sb_nn_conv2d(&m, INT64_MAX, INT64_MAX, 3, 3, NULL, true), SB_ERR_SHAPE, "too large");
    sb_pool2d_params bad_pool = {0, 2, 0, 0, 0, 0, false, false, 0, 0, 0};
    BAD(sb_nn_max_pool2d, sb_nn_max_pool2d(&m, NULL), SB_ERR_NULL, "");
    BAD(sb_nn_avg_pool2d, sb_nn_avg_pool2d(&m, NULL), SB_ERR_NULL, "");
    (void)bad_pool; /* kernel 0 is refused by the forward pass, not the constructor */
    BAD(sb_nn_relu, sb_nn_relu(NULL), SB_ERR_NULL, "out");
    BAD(sb_nn_tanh, sb_nn_tanh(NULL), SB_ERR_NULL, "out");
    BAD(sb_nn_sigmoid, sb_nn_sigmoid(NULL), SB_ERR_NULL, "out");
    BAD(sb_nn_gelu, sb_nn_gelu(NULL, false), SB_ERR_NULL, "out");
    BAD(sb_nn_flatten, sb_nn_flatten(NULL, 1, -1), SB_ERR_NULL, "out");
    BAD(sb_nn_batch_norm, sb_nn_batch_norm(&m, -3, 1e-5f, 0.1f, true), SB_ERR_ARG, "");
    BAD(sb_nn_batch_norm, sb_nn_batch_norm(&m, 3, -1.0f, 0.1f, true), SB_ERR_ARG, "");
    int64_t ln_shape[2] = {3, -4};
    BAD(sb_nn_layer_norm, sb_nn_layer_norm(&m, 2, ln_shape, 1e-5f, true), SB_ERR_ARG, "");
    BAD(sb_nn_layer_norm, sb_nn_layer_norm(&m, 1 << 30, ln_shape, 1e-5f, true), SB_ERR_ARG, "");
    BAD(sb_nn_layer_norm, sb_nn_layer_norm(&m, 2, NULL, 1e-5f, true), SB_ERR_ARG, "shape");
    BAD(sb_nn_rms_norm, sb_nn_rms_norm(&m, 2, ln_shape, 1e-5f, true), SB_ERR_ARG, "");
    BAD(sb_nn_rms_norm, sb_nn_rms_norm(&m, 2, NULL, 1e-5f, true), SB_ERR_ARG, "shape");
    BAD(sb_nn_rms_norm, sb_nn_rms_norm(&m, 1, ln_shape, 0.0f, true), SB_ERR_ARG, "eps");
    BAD(sb_nn_dropout, sb_nn_dropout(&m, 1.5f, 1, 2), SB_ERR_ARG, "");
    BAD(sb_nn_sequential, sb_nn_sequential(&m, NULL, 3), SB_ERR_NULL, "children");
    TOLERATES(sb_module_free, sb_module_free(NULL));
    ANSWERS(sb_module_kind, sb_module_kind(NULL) != NULL);
    ANSWERS(sb_module_is_training, !sb_module_is_training(NULL));
    TOLERATES(sb_module_train, sb_module_train(NULL, true));
    ANSWERS(sb_module_num_scalars, sb_module_num_scalars(NULL) == 0);
    size_t count = 7;
    BAD(sb_module_parameters, sb_module_parameters(NULL, NULL, 0, &count), SB_ERR_NULL, "module");
    BAD(sb_module_buffers, sb_module_buffers(NULL, NULL, 0, &count), SB_ERR_NULL, "module");
    BAD(sb_module_init, sb_module_init(NULL, 1), SB_ERR_NULL, "module");
    unsigned char d[32];
    BAD(sb_module_hash, sb_module_hash(NULL, d), SB_ERR_NULL, "module");

    sb_module *lin = NULL;
    CHECK_OK(sb_nn_linear(&lin, 3, 4, true));
    sb_named few[1];
    BAD(sb_module_parameters, sb_module_parameters(lin, NULL, 2, &count), SB_ERR_NULL, "out");
    CHECK_OK(sb_module_parameters(lin, few, 1, &count)); /* cap too small: only the count */
    CHECK(count == 2, "parameter count %zu", count);
    sb_graph *g = NULL;
    BAD(sb_graph_new, sb_graph_new(NULL), SB_ERR_NULL, "out");
    CHECK_OK(sb_graph_new(&g));
    sb_variable *v = NULL, *y = NULL, *p = NULL;
    sb_tensor hb = {.dtype = SB_F32, .ndim = 100};
    BAD(sb_graph_input, sb_graph_input(g, &hb, &v), SB_ERR_SHAPE, "ndim 100");
    BAD(sb_graph_input, sb_graph_input(NULL, &hb, &v), SB_ERR_NULL, "graph");
    sb_tensor *x = make(SB_F32, 2, 2, 3), *x4 = make(SB_F32, 2, 2, 4), *w = make(SB_F32, 2, 4, 3);
    BAD(sb_graph_param, sb_graph_param(g, x, x4, &p), SB_ERR_SHAPE, "");
    BAD(sb_graph_param, sb_graph_param(g, &hb, x, &p), SB_ERR_SHAPE, "ndim 100");
    BAD(sb_module_forward, sb_module_forward(lin, g, NULL, &y), SB_ERR_NULL, "");
    BAD(sb_module_forward, sb_module_forward(NULL, g, v, &y), SB_ERR_NULL, "module");
    sb_variable bad_var = {.value = &hb};
    sb_variable *vx = NULL, *vw = NULL, *vx4 = NULL;
    sb_tensor hb64 = {.dtype = SB_I64, .ndim = 100};
    sb_conv2d_params cp = SB_CONV2D_PARAMS_DEFAULT;
    CHECK_OK(sb_graph_input(g, x, &vx));
    CHECK_OK(sb_graph_input(g, x4, &vx4));
    CHECK_OK(sb_graph_input(g, w, &vw));
    BAD(sb_module_forward, sb_module_forward(lin, g, &bad_var, &y), SB_ERR_SHAPE, "ndim 100");
    BAD_VIA(sb_ag_linear, "sb_linear_forward", sb_ag_linear(g, vx4, vw, NULL, &y), SB_ERR_SHAPE, "");
    BAD(sb_ag_linear, sb_ag_linear(g, &bad_var, vw, NULL, &y), SB_ERR_SHAPE, "ndim 100");
    BAD_VIA(sb_ag_conv2d, "sb_conv2d_forward", sb_ag_conv2d(g, vx, vw, NULL, &cp, &y), SB_ERR_SHAPE, "");
    BAD(sb_ag_conv2d, sb_ag_conv2d(g, &bad_var, vw, NULL, &cp, &y), SB_ERR_SHAPE, "ndim 100");
    sb_conv_transpose2d_params ctp = SB_CONV_TRANSPOSE2D_PARAMS_DEFAULT;
    BAD(sb_ag_conv_transpose2d, sb_ag_conv_transpose2d(g, vx, vw, NULL, &ctp, &y), SB_ERR_SHAPE, "4 dims");
    BAD(sb_ag_conv_transpose2d, sb_ag_conv_transpose2d(g, &bad_var, vw, NULL, &ctp, &y), SB_ERR_SHAPE, "ndim 100");
    BAD(sb_ag_conv_transpose2d, sb_ag_conv_transpose2d(g, vx, vw, NULL, NULL, &y), SB_ERR_NULL, "params");
    sb_pool2d_params pool = {2, 2, 0, 0, 0, 0, false, false, 0, 0, 0};
    BAD(sb_ag_max_pool2d, sb_ag_max_pool2d(g, vx, &pool, &y), SB_ERR_SHAPE, "");
    BAD(sb_ag_avg_pool2d, sb_ag_avg_pool2d(g, &bad_var, &pool, &y), SB_ERR_SHAPE, "ndim 100");
    BAD(sb_ag_adaptive_max_pool2d, sb_ag_adaptive_max_pool2d(g, vx, 1, 1, &y), SB_ERR_SHAPE, "");
    BAD(sb_ag_adaptive_avg_pool2d, sb_ag_adaptive_avg_pool2d(g, &bad_var, 1, 1, &y), SB_ERR_SHAPE,
        "ndim 100");
    BAD(sb_ag_sdpa, sb_ag_sdpa(g, &bad_var, vx, vx, NULL, 0, 1.0f, 0.0f, 0, 0, 0, &y), SB_ERR_SHAPE,
        "ndim 100");
    BAD(sb_ag_sdpa, sb_ag_sdpa(NULL, vx, vx, vx, NULL, 0, 1.0f, 0.0f, 0, 0, 0, &y), SB_ERR_NULL, "graph");
    BAD_VIA(sb_ag_sdpa, "sb_sdpa_forward",
            sb_ag_sdpa(g, vx, vx4, vx, NULL, 0, 1.0f, 0.0f, 0, 0, 0, &y), SB_ERR_SHAPE, "");
    BAD_VIA(sb_ag_sdpa, "sb_sdpa_forward",
            sb_ag_sdpa(g, vx, vx, vx, NULL, 0, NAN, 0.0f, 0, 0, 0, &y), SB_ERR_ARG, "scale");
    BAD(sb_ag_relu, sb_ag_relu(g, &bad_var, &y), SB_ERR_SHAPE, "ndim 100");
    BAD(sb_ag_relu, sb_ag_relu(NULL, vx, &y), SB_ERR_NULL, "");
    BAD(sb_ag_tanh, sb_ag_tanh(g, NULL, &y), SB_ERR_NULL, "");
    BAD(sb_ag_sigmoid, sb_ag_sigmoid(g, &bad_var, &y), SB_ERR_SHAPE, "ndim 100");
    BAD(sb_ag_gelu, sb_ag_gelu(g, &bad_var, true, &y), SB_ERR_SHAPE, "ndim 100");
    BAD_VIA(sb_ag_flatten, "sb_tensor_flatten", sb_ag_flatten(g, vx, 3, 7, &y), SB_ERR_ARG, "dims");
    BAD(sb_ag_add, sb_ag_add(g, vx, vw, &y), SB_ERR_SHAPE, "");
    BAD(sb_ag_binary, sb_ag_binary(g, (sb_binary_op)17, vx, vx, &y), SB_ERR_ARG, "op = 17");
    BAD(sb_ag_binary, sb_ag_binary(g, SB_BINARY_MUL, vx, vw, &y), SB_ERR_SHAPE, "broadcast");
    BAD(sb_ag_binary, sb_ag_binary(g, SB_BINARY_DIV, &bad_var, vx, &y), SB_ERR_SHAPE, "ndim 100");
    BAD_VIA(sb_ag_matmul, "sb_matmul", sb_ag_matmul(g, vx, vw, false, false, &y), SB_ERR_SHAPE, "");
    BAD(sb_ag_matmul, sb_ag_matmul(g, vx, &bad_var, false, false, &y), SB_ERR_SHAPE, "ndim 100");
    BAD(sb_ag_matmul, sb_ag_matmul(NULL, vx, vw, false, false, &y), SB_ERR_NULL, "graph");
    BAD_VIA(sb_ag_reshape, "sb_tensor_reshape", sb_ag_reshape(g, vx, 2, (const int64_t[]){4, 2}, &y), SB_ERR_SHAPE, "");
    BAD(sb_ag_reshape, sb_ag_reshape(g, &bad_var, 1, (const int64_t[]){6}, &y), SB_ERR_SHAPE, "ndim 100");
    BAD_VIA(sb_ag_transpose, "sb_tensor_transpose", sb_ag_transpose(g, vx, 0, 5, &y), SB_ERR_ARG, "");
    BAD(sb_ag_transpose, sb_ag_transpose(g, vx, 0, 1, NULL), SB_ERR_NULL, "y");
    BAD_VIA(sb_ag_softmax, "sb_softmax_forward", sb_ag_softmax(g, vx, 4, &y), SB_ERR_ARG, "dim");
    BAD_VIA(sb_ag_log_softmax, "sb_log_softmax_forward", sb_ag_log_softmax(g, vx, -3, &y), SB_ERR_ARG, "dim");
    BAD(sb_ag_sum, sb_ag_sum(g, vx, (const int[]){0, -2}, 2, false, &y), SB_ERR_ARG, "repeats");
    BAD(sb_ag_sum, sb_ag_sum(g, vx, NULL, 1, false, &y), SB_ERR_ARG, "NULL");
    BAD(sb_ag_mean, sb_ag_mean(g, vx, (const int[]){2}, 1, true, &y), SB_ERR_ARG, "out of range");
    BAD(sb_ag_batch_norm, sb_ag_batch_norm(g, &bad_var, NULL, NULL, NULL, NULL, true, 0.1f, 1e-5f, &y),
        SB_ERR_SHAPE, "ndim 100");
    BAD(sb_ag_layer_norm, sb_ag_layer_norm(g, vx, 5, NULL, NULL, 1e-5f, &y), SB_ERR_ARG, "");
    BAD(sb_ag_rms_norm, sb_ag_rms_norm(g, vx, 0, NULL, 1e-5f, &y), SB_ERR_ARG, "normalized_ndim");
    BAD_VIA(sb_ag_rms_norm, "sb_rms_norm_forward", sb_ag_rms_norm(g, vx, 1, NULL, -1.0f, &y), SB_ERR_ARG, "eps");
    BAD(sb_ag_group_norm, sb_ag_group_norm(g, vx, 0, NULL, NULL, 1e-5f, &y), SB_ERR_ARG, "groups");
    BAD_VIA(sb_ag_dropout, "sb_dropout_forward", sb_ag_dropout(g, vx, -0.5f, true, 1, 2, 0, &y), SB_ERR_ARG, "p = ");
    sb_tensor *tg = make(SB_I64, 1, 5, 0);
    BAD_VIA(sb_ag_cross_entropy, "sb_cross_entropy_forward", sb_ag_cross_entropy(g, vx, tg, SB_LOSS_MEAN, 0.0f, &y), SB_ERR_SHAPE, "targets");
    BAD_VIA(sb_ag_cross_entropy, "sb_cross_entropy_forward", sb_ag_cross_entropy(g, vx, &hb64, SB_LOSS_MEAN, 0.0f, &y), SB_ERR_SHAPE, "ndim 100");
    BAD_VIA(sb_ag_mse, "sb_mse_forward", sb_ag_mse(g, vx, x4, SB_LOSS_MEAN, &y), SB_ERR_SHAPE, "");
    BAD_VIA(sb_ag_mse, "sb_mse_forward", sb_ag_mse(g, vx, &hb, SB_LOSS_MEAN, &y), SB_ERR_SHAPE, "ndim 100");
    sb_tensor *ix = make(SB_I64, 1, 2, 0); /* {0, 0} */
    BAD(sb_ag_index_select, sb_ag_index_select(g, vx, 2, ix, &y), SB_ERR_ARG, "dim = 2");
    BAD(sb_ag_embedding, sb_ag_embedding(g, vx, ix, 2, &y), SB_ERR_ARG, "padding_idx");
    BAD(sb_ag_embedding, sb_ag_embedding(g, vx, x, SB_NO_PADDING, &y), SB_ERR_DTYPE, "indices");
    BAD(sb_ag_embedding, sb_ag_embedding(g, vx, &hb64, SB_NO_PADDING, &y), SB_ERR_SHAPE, "ndim 100");
    BAD(sb_ag_index_select, sb_ag_index_select(g, vx, 0, &hb64, &y), SB_ERR_SHAPE, "ndim 100");
    BAD(sb_ag_index_select, sb_ag_index_select(g, vx, 0, x, &y), SB_ERR_DTYPE, "index");
    BAD(sb_ag_gather, sb_ag_gather(g, &bad_var, 0, ix, &y), SB_ERR_SHAPE, "ndim 100");
    BAD_VIA(sb_ag_gather, "sb_gather", sb_ag_gather(g, vx, 0, ix, &y), SB_ERR_SHAPE, "index has 1");
    BAD(sb_graph_backward, sb_graph_backward(g, vx), SB_ERR_SHAPE, "");
    BAD(sb_graph_backward, sb_graph_backward(NULL, vx), SB_ERR_NULL, "graph");
    ANSWERS(sb_graph_num_nodes, sb_graph_num_nodes(NULL) == 0);
    ANSWERS(sb_graph_arena, sb_graph_arena(NULL) == NULL);
    TOLERATES(sb_graph_reset, sb_graph_reset(NULL));
    TOLERATES(sb_graph_free, sb_graph_free(NULL));
    sb_graph_free(g);
    sb_module_free(lin);
    sb_tensor_free(x);
    sb_tensor_free(x4);
    sb_tensor_free(w);
    sb_tensor_free(tg);
    sb_tensor_free(ix);
}

/* Update rules on raw buffers, optimizers, loaders, checkpoints. */
static void bad_training(void) {
    sb_sgd_config sgd = sb_sgd_default_config(0.1);
    sb_adam_config adam = sb_adam_default_config(0.1);
    ANSWERS(sb_sgd_default_config, sb_sgd_default_config(-1.0).lr == -1.0); /* checked where used */
    ANSWERS(sb_adam_default_config, sb_adam_default_config(0.1).beta1 == 0.9);
    ANSWERS(sb_adamw_default_config, sb_adamw_default_config(0.1).decoupled_weight_decay);
    sb_sgd_config bad_sgd = sgd;
    bad_sgd.lr = -1.0 / 0.0;
    BAD(sb_sgd_check_config, sb_sgd_check_config(&bad_sgd), SB_ERR_ARG, "lr");
    BAD(sb_sgd_check_config, sb_sgd_check_config(NULL), SB_ERR_NULL, "cfg");
    sb_sgd_factors sf;
    BAD(sb_sgd_factors_for, sb_sgd_factors_for(&bad_sgd, &sf), SB_ERR_ARG, "lr");
    sb_adam_config bad_adam = adam;
    bad_adam.beta2 = 1.0;
    BAD(sb_adam_check_config, sb_adam_check_config(&bad_adam), SB_ERR_ARG, "beta2");
    sb_adam_factors af;
    BAD(sb_adam_factors_for, sb_adam_factors_for(&adam, 0, &af), SB_ERR_ARG, "step");
    float p[4] = {1, 2, 3, 4}, gr[4] = {1, 1, 1, 1}, m1[4] = {0}, m2[4] = {0};
    BAD(sb_sgd_step, sb_sgd_step(&sgd, 1, -4, p, gr, NULL), SB_ERR_ARG, "n");
    BAD(sb_sgd_step, sb_sgd_step(&sgd, 1, INT64_MAX, p, gr, NULL), SB_ERR_ARG, "n");
    BAD(sb_sgd_step, sb_sgd_step(&sgd, 1, 4, p, p + 1, NULL), SB_ERR_ARG, "overlap");
    BAD(sb_sgd_step, sb_sgd_step(&sgd, 1, 4, NULL, gr, NULL), SB_ERR_NULL, "param");
    BAD(sb_adam_step, sb_adam_step(&adam, 1, 4, p, gr, m1, m1, NULL), SB_ERR_ARG, "overlap");
    BAD(sb_adam_step, sb_adam_step(&adam, 1, -1, p, gr, m1, m2, NULL), SB_ERR_ARG, "n");
    BAD(sb_adam_step, sb_adam_step(&adam, -5, 4, p, gr, m1, m2, NULL), SB_ERR_ARG, "step");
    CHECK(p[0] == 1 && p[3] == 4 && m1[0] == 0 && m2[0] == 0, "refused steps wrote nothing");

    sb_optimizer *opt = (sb_optimizer *)1;
    sb_module *model = NULL;
    CHECK_OK(sb_nn_linear(&model, 3, 2, true));
    BAD_VIA(sb_optimizer_sgd, "sb_sgd_check_config", sb_optimizer_sgd(&opt, model, &bad_sgd), SB_ERR_ARG, "lr");
    CHECK(opt == NULL, "failed optimizer leaves NULL");
    BAD(sb_optimizer_sgd, sb_optimizer_sgd(&opt, NULL, &sgd), SB_ERR_NULL, "model");
    BAD_VIA(sb_optimizer_adam, "sb_adam_check_config", sb_optimizer_adam(&opt, model, &bad_adam), SB_ERR_ARG, "beta2");
    BAD(sb_optimizer_adam, sb_optimizer_adam(&opt, model, NULL), SB_ERR_NULL, "cfg");
    BAD(sb_optimizer_step, sb_optimizer_step(NULL), SB_ERR_NULL, "optimizer");
    size_t count;
    BAD(sb_optimizer_state, sb_optimizer_state(NULL, NULL, 0, &count), SB_ERR_NULL, "optimizer");
    ANSWERS(sb_optimizer_steps, sb_optimizer_steps(NULL) == 0);
    ANSWERS(sb_optimizer_kind, sb_optimizer_kind(NULL) != NULL);
    TOLERATES(sb_optimizer_free, sb_optimizer_free(NULL));

    sb_loader *l = (sb_loader *)1;
    sb_dataset ds = {make(SB_F32, 2, 5, 3), make(SB_I64, 1, 5, 0), 5};
    BAD(sb_loader_new, sb_loader_new(&l, &ds, 0, true, 1), SB_ERR_ARG, "batch_size");
    BAD(sb_loader_new, sb_loader_new(&l, &ds, -7, true, 1), SB_ERR_ARG, "batch_size");
    BAD(sb_loader_new, sb_loader_new(&l, NULL, 2, true, 1), SB_ERR_NULL, "data");
    CHECK_OK(sb_loader_new(&l, &ds, INT64_MAX, true, 1));
    ANSWERS(sb_loader_num_batches, sb_loader_num_batches(l) == 1 && sb_loader_num_batches(NULL) == 0);
    sb_arena *a = NULL;
    CHECK_OK(sb_arena_new(&a, 0));
    sb_tensor *im = NULL, *lb = NULL;
    BAD(sb_loader_batch, sb_loader_batch(l, 1, a, &im, &lb), SB_ERR_RANGE, "batch 1");
    BAD(sb_loader_batch, sb_loader_batch(l, -1, a, &im, &lb), SB_ERR_RANGE, "");
    BAD(sb_loader_batch, sb_loader_batch(l, 0, NULL, &im, &lb), SB_ERR_NULL, "");
    BAD(sb_loader_set_epoch, sb_loader_set_epoch(l, -1), SB_ERR_ARG, "epoch");
    BAD(sb_loader_set_epoch, sb_loader_set_epoch(NULL, 0), SB_ERR_NULL, "");
    TOLERATES(sb_loader_free, sb_loader_free(NULL));
    sb_loader_free(l);
    sb_arena_free(a);
    sb_dataset_free(&ds);

    sb_train_state state = {.seed = 1, .epoch = 0, .batch_size = 2, .model = "linear"};
    CHECK_OK(sb_optimizer_sgd(&opt, model, &sgd));
    /* A checkpoint claiming optimizer_steps = INT64_MAX (the next step's
     * increment overflowed): refused on loading, the model left alone. */
    {
        char ck[] = "/tmp/sb_bad_input_ck_XXXXXX";
        int cfd = mkstemp(ck);
        if (cfd >= 0) close(cfd);
        CHECK_OK(sb_checkpoint_save(ck, model, opt, &state));
        sb_safetensors *st = NULL;
        CHECK_OK(sb_safetensors_read(ck, &st));
        size_t nt = sb_safetensors_count(st), nm = sb_safetensors_meta_count(st);
        sb_named_tensor tensors[16];
        sb_kv meta[16];
        size_t km = 0;
        for (size_t i = 0; i < nt && i < 16; i++) CHECK_OK(sb_safetensors_at(st, i, &tensors[i].name, &tensors[i].tensor));
        for (size_t i = 0; i < nm && i < 16; i++) {
            CHECK_OK(sb_safetensors_meta_at(st, i, &meta[km].key, &meta[km].value));
            if (!strcmp(meta[km].key, SB_SAFETENSORS_SHA256_KEY)) continue;
            if (!strcmp(meta[km].key, "optimizer_steps")) meta[km].value = "9223372036854775807";
            km++;
        }
        CHECK_OK(sb_safetensors_write(ck, tensors, nt, meta, km));
        sb_safetensors_free(st);
        unsigned char before[32], after[32];
        CHECK_OK(sb_module_hash(model, before));
        int64_t steps = sb_optimizer_steps(opt);
        BAD(sb_checkpoint_load, sb_checkpoint_load(ck, model, opt, &state), SB_ERR_FORMAT, "optimizer_steps");
        CHECK_OK(sb_module_hash(model, after));
        CHECK(memcmp(before, after, 32) == 0 && sb_optimizer_steps(opt) == steps, "a refused load changed the model");
        remove(ck);
    }
    BAD_VIA(sb_checkpoint_save, "sb_safetensors_write", sb_checkpoint_save("/nonexistent/dir/ckpt", model, opt, &state), SB_ERR_IO, "/nonexistent/dir/ckpt");
    BAD(sb_checkpoint_save, sb_checkpoint_save(NULL, model, opt, &state), SB_ERR_NULL, "");
    BAD_VIA(sb_checkpoint_load, "sb_safetensors_read", sb_checkpoint_load("/nonexistent/ckpt", model, opt, &state), SB_ERR_IO, "/nonexistent/ckpt");
    BAD(sb_checkpoint_load, sb_checkpoint_load("/nonexistent/ckpt", NULL, opt, &state), SB_ERR_NULL, "");
    sb_module *lenet = NULL;
    BAD(sb_model_lenet5, sb_model_lenet5(NULL), SB_ERR_NULL, "out");
    CHECK_OK(sb_model_lenet5(&lenet));
    sb_module_free(lenet);
    sb_optimizer_free(opt);
    sb_module_free(model);
}

/* Traces: the writer's arguments and the reader's. */
static void bad_traces(void) {
    BAD(sb_trace_open, sb_trace_open(NULL, 0), SB_ERR_NULL, "");
    BAD(sb_trace_open, sb_trace_open("/nonexistent/dir/trace", 0), SB_ERR_IO, "");
    BAD(sb_trace_open, sb_trace_open("/tmp/sb_bad_input_trace", 0x80), SB_ERR_ARG, "flags");
    ANSWERS(sb_trace_active, !sb_trace_active());
    sb_tensor hb = {.dtype = SB_F32, .ndim = 100};
    char path[] = "/tmp/sb_bad_input_trace_XXXXXX";
    int fd = mkstemp(path);
    if (fd >= 0) close(fd);
    CHECK_OK(sb_trace_open(path, 0));
    BAD(sb_trace_record, sb_trace_record("x", &hb), SB_ERR_SHAPE, "ndim 100");
    BAD(sb_trace_record, sb_trace_record("bad name", &hb), SB_ERR_ARG, "name");
    BAD(sb_trace_record, sb_trace_record(NULL, &hb), SB_ERR_NULL, "name");
    TOLERATES(sb_trace_step, CHECK_OK(sb_trace_step(UINT64_MAX))); /* every step number is valid */
    TOLERATES(sb_trace_inject_ulp, sb_trace_inject_ulp(UINT64_MAX, UINT64_MAX));
    CHECK_OK(sb_trace_close());
    BAD(sb_trace_close, sb_trace_close(), SB_ERR_ARG, "");
    TOLERATES(sb_trace_abort, sb_trace_abort());
    sb_trace_reader *r = (sb_trace_reader *)1;
    BAD(sb_trace_reader_open_path, sb_trace_reader_open_path(&r, "/nonexistent/trace"), SB_ERR_IO, "/nonexistent/trace");
    BAD(sb_trace_reader_open_path, sb_trace_reader_open_path(NULL, path), SB_ERR_NULL, "");
    BAD(sb_trace_reader_open, sb_trace_reader_open(&r, NULL, "x"), SB_ERR_NULL, "");
    CHECK_OK(sb_trace_reader_open_path(&r, path));
    sb_trace_entry e;
    bool done = false;
    BAD(sb_trace_reader_next, sb_trace_reader_next(r, NULL, &done), SB_ERR_NULL, "");
    BAD(sb_trace_reader_next, sb_trace_reader_next(NULL, &e, &done), SB_ERR_NULL, "");
    memset(&e, 0, sizeof e);
    BAD(sb_trace_reader_values, sb_trace_reader_values(r, &e), SB_ERR_ARG, "");
    BAD(sb_trace_reader_values, sb_trace_reader_values(NULL, &e), SB_ERR_NULL, "");
    BAD(sb_trace_reader_set_max_values, sb_trace_reader_set_max_values(NULL, 1024), SB_ERR_NULL, "r is NULL");
    BAD(sb_trace_reader_set_max_values, sb_trace_reader_set_max_values(r, 0), SB_ERR_ARG, "max_bytes = 0");
    BAD(sb_trace_reader_set_max_values, sb_trace_reader_set_max_values(r, UINT64_MAX), SB_ERR_ARG, "max_bytes");
    sb_trace_reader_free(r);
    TOLERATES(sb_trace_reader_free, sb_trace_reader_free(NULL));
    remove(path);
    remove("/tmp/sb_bad_input_trace");
}

/* Devices: creation on a device, copies to one, moving a module. The mirror
 * test device is built into every library; the CUDA device has no backend in
 * this program (the CPU tests do not link libsamebits_cuda), so it stands
 * for an unavailable device. A refusal leaves *out NULL, moves nothing and
 * allocates nothing on the device (the mirror counts its live blocks). */
static void bad_devices(void) {
    int64_t s2[2] = {2, 3}, neg[2] = {2, -3}, wide[3] = {0, (int64_t)1 << 62, (int64_t)1 << 62};
    size_t live = sb_backend_mirror_live_blocks();
    sb_tensor *t = (sb_tensor *)1;
    BAD(sb_tensor_new_on, sb_tensor_new_on(NULL, SB_DEVICE_MIRROR, SB_F32, 2, s2), SB_ERR_NULL, "out");
    BAD(sb_tensor_new_on, sb_tensor_new_on(&t, (sb_device)99, SB_F32, 2, s2), SB_ERR_DEVICE, "device 99");
    CHECK(t == NULL, "a refused sb_tensor_new_on leaves *out NULL");
    BAD(sb_tensor_new_on, sb_tensor_new_on(&t, (sb_device)-1, SB_F32, 2, s2), SB_ERR_DEVICE, "device -1");
    BAD(sb_tensor_new_on, sb_tensor_new_on(&t, SB_DEVICE_CUDA, SB_F32, 2, s2), SB_ERR_DEVICE, "no backend");
    for (int dev = SB_DEVICE_CPU; dev <= SB_DEVICE_MIRROR; dev += SB_DEVICE_MIRROR) {
        /* the same shape checks, and messages, on the host and on a device */
        BAD(sb_tensor_new_on, sb_tensor_new_on(&t, (sb_device)dev, SB_F32, 2, neg), SB_ERR_SHAPE, "shape[1]");
        BAD(sb_tensor_new_on, sb_tensor_new_on(&t, (sb_device)dev, SB_F32, 3, wide), SB_ERR_SHAPE, "too large");
        BAD(sb_tensor_new_on, sb_tensor_new_on(&t, (sb_device)dev, SB_F32, 9, s2), SB_ERR_SHAPE, "ndim 9");
        BAD(sb_tensor_new_on, sb_tensor_new_on(&t, (sb_device)dev, (sb_dtype)77, 2, s2), SB_ERR_DTYPE, "dtype");
        BAD(sb_tensor_new_on, sb_tensor_new_on(&t, (sb_device)dev, SB_F32, 2, NULL), SB_ERR_NULL, "shape");
        CHECK(t == NULL, "a refused sb_tensor_new_on leaves *out NULL");
    }
    CHECK(sb_backend_mirror_live_blocks() == live, "refused creations allocated mirror memory");

    sb_tensor *x = make(SB_F32, 2, 2, 3), *m = NULL;
    for (int i = 0; i < 6; i++) ((float *)x->data)[i] = (float)i - 2.5f;
    BAD(sb_tensor_to, sb_tensor_to(NULL, x, SB_DEVICE_MIRROR), SB_ERR_NULL, "out");
    t = (sb_tensor *)1;
    BAD(sb_tensor_to, sb_tensor_to(&t, NULL, SB_DEVICE_MIRROR), SB_ERR_NULL, "src");
    CHECK(t == NULL, "a refused sb_tensor_to leaves *out NULL");
    BAD(sb_tensor_to, sb_tensor_to(&t, x, (sb_device)99), SB_ERR_DEVICE, "device 99");
    BAD(sb_tensor_to, sb_tensor_to(&t, x, SB_DEVICE_CUDA), SB_ERR_DEVICE, "no backend");
    sb_tensor h = *x;
    h.ndim = 100;
    BAD(sb_tensor_to, sb_tensor_to(&t, &h, SB_DEVICE_MIRROR), SB_ERR_SHAPE, "ndim 100");
    h = *x;
    h.device = (sb_device)99;
    BAD(sb_tensor_to, sb_tensor_to(&t, &h, SB_DEVICE_CPU), SB_ERR_DEVICE, "device");
    h = *x;
    h.dtype = (sb_dtype)77;
    BAD(sb_tensor_to, sb_tensor_to(&t, &h, SB_DEVICE_MIRROR), SB_ERR_DTYPE, "dtype");
    CHECK(t == NULL && sb_backend_mirror_live_blocks() == live, "refused copies allocated mirror memory");
    /* across devices both ways: the values come back bit for bit */
    sb_tensor *back = NULL;
    CHECK_OK(sb_tensor_to(&m, x, SB_DEVICE_MIRROR));
    CHECK(m && m->device == SB_DEVICE_MIRROR, "sb_tensor_to made a mirror tensor");
    BAD(sb_tensor_to, sb_tensor_to(&t, m, SB_DEVICE_CUDA), SB_ERR_DEVICE, "no backend");
    CHECK_OK(sb_tensor_to(&back, m, SB_DEVICE_CPU));
    CHECK(back && memcmp(back->data, x->data, 6 * sizeof(float)) == 0, "mirror -> cpu changed the values");
    sb_tensor_free(back);
    sb_tensor_free(m);
    sb_tensor_free(x);
    CHECK(sb_backend_mirror_live_blocks() == live, "mirror memory leaked");

    /* a module: refused moves leave every parameter where and what it was */
    sb_module *lin = NULL;
    unsigned char before[32], after[32];
    CHECK_OK(sb_nn_linear(&lin, 3, 2, true));
    CHECK_OK(sb_module_init(lin, 7));
    CHECK_OK(sb_module_hash(lin, before));
    sb_named p0[2], p1[2];
    size_t n0 = 0, n1 = 0;
    CHECK_OK(sb_module_parameters(lin, p0, 2, &n0));
    BAD(sb_module_to, sb_module_to(NULL, SB_DEVICE_MIRROR), SB_ERR_NULL, "module");
    BAD(sb_module_to, sb_module_to(lin, (sb_device)99), SB_ERR_DEVICE, "device 99");
    BAD(sb_module_to, sb_module_to(lin, (sb_device)-1), SB_ERR_DEVICE, "device -1");
    BAD(sb_module_to, sb_module_to(lin, SB_DEVICE_CUDA), SB_ERR_DEVICE, "no backend");
    CHECK_OK(sb_module_parameters(lin, p1, 2, &n1));
    CHECK(n0 == 2 && n1 == 2 && p0[0].value == p1[0].value && p1[0].value->device == SB_DEVICE_CPU &&
          p0[1].value == p1[1].value, "a refused sb_module_to moved a parameter");
    /* on the mirror device, then refused again: still there, same bits */
    CHECK_OK(sb_module_to(lin, SB_DEVICE_MIRROR));
    CHECK_OK(sb_module_parameters(lin, p0, 2, &n0));
    BAD(sb_module_to, sb_module_to(lin, SB_DEVICE_CUDA), SB_ERR_DEVICE, "no backend");
    CHECK_OK(sb_module_parameters(lin, p1, 2, &n1));
    CHECK(p0[0].value == p1[0].value && p1[0].value->device == SB_DEVICE_MIRROR,
          "a refused sb_module_to moved a mirror parameter");
    CHECK_OK(sb_module_to(lin, SB_DEVICE_CPU));
    CHECK_OK(sb_module_hash(lin, after));
    CHECK(memcmp(before, after, 32) == 0, "cpu -> mirror -> cpu changed the parameters");
    sb_module_free(lin);
    CHECK(sb_backend_mirror_live_blocks() == live, "a module left mirror memory behind");
}

/* The GPT, its cache and sampling: configurations, tokens, positions past
 * the context, and sampling settings; a refused forward leaves the cache as
 * it was, a refused draw leaves the token. */
static void bad_gpt(void) {
    sb_gpt_config c = sb_gpt_default_config(5), bad = c;
    c.context = 4; c.d_model = 8; c.heads = 2; c.layers = 1;
    sb_module *m = (sb_module *)1, *lin = NULL;
    BAD(sb_model_gpt, sb_model_gpt(NULL, &c), SB_ERR_NULL, "out");
    BAD(sb_model_gpt, sb_model_gpt(&m, NULL), SB_ERR_NULL, "cfg");
    CHECK(m == NULL, "a refused sb_model_gpt leaves NULL");
    bad = c; bad.vocab = 0;
    BAD(sb_model_gpt, sb_model_gpt(&m, &bad), SB_ERR_ARG, "vocab");
    bad = c; bad.heads = 3;
    BAD(sb_model_gpt, sb_model_gpt(&m, &bad), SB_ERR_ARG, "heads");
    bad = c; bad.heads = 8; /* head size 1: no rotary pairs */
    BAD(sb_model_gpt, sb_model_gpt(&m, &bad), SB_ERR_ARG, "even");
    bad = c; bad.context = 0;
    BAD(sb_model_gpt, sb_model_gpt(&m, &bad), SB_ERR_ARG, "context");
    bad = c; bad.layers = -1;
    BAD(sb_model_gpt, sb_model_gpt(&m, &bad), SB_ERR_ARG, "layers");
    bad = c; bad.norm_eps = NAN;
    BAD(sb_model_gpt, sb_model_gpt(&m, &bad), SB_ERR_ARG, "norm_eps");
    bad = c; bad.rope_base = 1.0f;
    BAD(sb_model_gpt, sb_model_gpt(&m, &bad), SB_ERR_ARG, "rope_base");
    CHECK_OK(sb_model_gpt(&m, &c));
    CHECK_OK(sb_module_init(m, 1));
    CHECK_OK(sb_nn_linear(&lin, 2, 2, false));
    sb_gpt_config got;
    BAD(sb_gpt_get_config, sb_gpt_get_config(lin, &got), SB_ERR_ARG, "linear");
    BAD(sb_gpt_get_config, sb_gpt_get_config(NULL, &got), SB_ERR_NULL, "gpt");
    BAD(sb_gpt_get_config, sb_gpt_get_config(m, NULL), SB_ERR_NULL, "cfg");
    sb_gpt_cache *cache = (sb_gpt_cache *)1;
    BAD(sb_gpt_cache_new, sb_gpt_cache_new(&cache, m, 0), SB_ERR_ARG, "batch");
    CHECK(cache == NULL, "a refused sb_gpt_cache_new leaves NULL");
    BAD(sb_gpt_cache_new, sb_gpt_cache_new(&cache, lin, 1), SB_ERR_ARG, "linear");
    BAD(sb_gpt_cache_new, sb_gpt_cache_new(&cache, NULL, 1), SB_ERR_NULL, "gpt");
    BAD(sb_gpt_cache_new, sb_gpt_cache_new(&cache, m, INT64_MAX), SB_ERR_ARG, "batch");
    BAD(sb_gpt_cache_new, sb_gpt_cache_new(NULL, m, 1), SB_ERR_NULL, "out");
    CHECK_OK(sb_gpt_cache_new(&cache, m, 1));
    ANSWERS(sb_gpt_cache_length, sb_gpt_cache_length(cache) == 0 && sb_gpt_cache_length(NULL) == 0);
    TOLERATES(sb_gpt_cache_free, sb_gpt_cache_free(NULL));
    sb_graph *g = NULL;
    CHECK_OK(sb_graph_new(&g));
    sb_tensor *tok = make(SB_I64, 2, 1, 3), *two = make(SB_I64, 2, 2, 3), *f32 = make(SB_F32, 2, 1, 3);
    sb_tensor *long_tok = make(SB_I64, 2, 1, 5);
    sb_variable *y = NULL;
    ((int64_t *)tok->data)[1] = 5; /* outside the vocabulary 0..4 */
    BAD(sb_gpt_forward, sb_gpt_forward(m, g, tok, cache, &y), SB_ERR_RANGE, "vocabulary");
    ((int64_t *)tok->data)[1] = -1;
    BAD(sb_gpt_forward, sb_gpt_forward(m, g, tok, NULL, &y), SB_ERR_RANGE, "tokens[1]");
    ((int64_t *)tok->data)[1] = 2;
    BAD(sb_gpt_forward, sb_gpt_forward(m, g, f32, NULL, &y), SB_ERR_DTYPE, "tokens");
    BAD(sb_gpt_forward, sb_gpt_forward(m, g, long_tok, NULL, &y), SB_ERR_RANGE, "context");
    BAD(sb_gpt_forward, sb_gpt_forward(m, g, two, cache, &y), SB_ERR_SHAPE, "cache");
    BAD(sb_gpt_forward, sb_gpt_forward(lin, g, tok, NULL, &y), SB_ERR_ARG, "linear");
    BAD(sb_gpt_forward, sb_gpt_forward(m, NULL, tok, NULL, &y), SB_ERR_NULL, "graph");
    BAD(sb_gpt_forward, sb_gpt_forward(m, g, NULL, NULL, &y), SB_ERR_NULL, "tokens");
    BAD(sb_gpt_forward, sb_gpt_forward(m, g, tok, NULL, NULL), SB_ERR_NULL, "logits");
    CHECK(sb_gpt_cache_length(cache) == 0, "refused forwards left the cache empty");
    CHECK_OK(sb_gpt_forward(m, g, tok, cache, &y)); /* positions 0..2 */
    sb_graph_reset(g);
    BAD(sb_gpt_forward, sb_gpt_forward(m, g, tok, cache, &y), SB_ERR_RANGE, "context");
    CHECK(sb_gpt_cache_length(cache) == 3, "a refused forward left the cache at 3 positions");
    const float logits[3] = {1.0f, 2.0f, 0.5f}, with_nan[3] = {1.0f, NAN, 0.5f}, with_inf[3] = {1.0f, 0.0f, INFINITY};
    sb_sample_config sc = sb_sample_default_config(), bs = sc;
    int64_t token = -7;
    BAD(sb_sample_token, sb_sample_token(with_nan, 3, &sc, 0, 0, &token), SB_ERR_ARG, "logits[1]");
    BAD(sb_sample_token, sb_sample_token(with_inf, 3, &sc, 0, 0, &token), SB_ERR_ARG, "logits[2]");
    BAD(sb_sample_token, sb_sample_token(logits, 0, &sc, 0, 0, &token), SB_ERR_ARG, "vocab");
    bs = sc; bs.temperature = -1.0f;
    BAD(sb_sample_token, sb_sample_token(logits, 3, &bs, 0, 0, &token), SB_ERR_ARG, "temperature");
    bs = sc; bs.temperature = INFINITY;
    BAD(sb_sample_token, sb_sample_token(logits, 3, &bs, 0, 0, &token), SB_ERR_ARG, "temperature");
    bs = sc; bs.top_k = -1;
    BAD(sb_sample_token, sb_sample_token(logits, 3, &bs, 0, 0, &token), SB_ERR_ARG, "top_k");
    bs = sc; bs.top_p = 0.0f;
    BAD(sb_sample_token, sb_sample_token(logits, 3, &bs, 0, 0, &token), SB_ERR_ARG, "top_p");
    bs = sc; bs.top_p = NAN;
    BAD(sb_sample_token, sb_sample_token(logits, 3, &bs, 0, 0, &token), SB_ERR_ARG, "top_p");
    BAD(sb_sample_token, sb_sample_token(NULL, 3, &sc, 0, 0, &token), SB_ERR_NULL, "logits");
    BAD(sb_sample_token, sb_sample_token(logits, 3, NULL, 0, 0, &token), SB_ERR_NULL, "cfg");
    BAD(sb_sample_token, sb_sample_token(logits, 3, &sc, 0, 0, NULL), SB_ERR_NULL, "token");
    CHECK(token == -7, "refused draws wrote no token");
    sb_tensor_free(tok);
    sb_tensor_free(two);
    sb_tensor_free(f32);
    sb_tensor_free(long_tok);
    sb_graph_free(g);
    sb_gpt_cache_free(cache);
    sb_module_free(lin);
    sb_module_free(m);
}

int main(int argc, char **argv) {
    SB_TEST_MAIN_NAME(argv[0]);
    int list = argc > 1 && strcmp(argv[1], "--list") == 0;
    if (list) { FILE *r = freopen("/dev/null", "w", stderr); (void)r; }
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) run_op(&ops[i]);
    bad_tensor_api();
    bad_devices();
    bad_sizes_and_kernels();
    bad_random();
    bad_io();
    bad_modules_and_graphs();
    bad_training();
    bad_traces();
    bad_gpt();
    if (list) {
        for (int i = 0; i < n_covered; i++) printf("%s\n", covered[i]);
        return 0; /* failures are the plain run's to report */
    }
    return sb_test_finish();
}
