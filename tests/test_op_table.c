/* The op table (src/ops/op_table.h): its rows are consistent with each
 * other, and `test_op_table --dump` prints it together with the layout of
 * every struct and the size of every scalar type the Python package
 * mirrors, for tests/python/test_bindings.py to compare with
 * python/samebits/_lib.py. The table's agreement with the headers is a
 * compile-time matter (src/ops/op_table.c). */
#include <stdalign.h>
#include <stddef.h>
#include "core/checked.h"
#include "harness.h"
#include "ops/op_table.h"
#include "samebits/train.h"

/* The structs python/samebits/_lib.py mirrors as ctypes.Structure, each
 * with every field in declaration order (the test compares the names with
 * the header too, so a field added there and not here fails). */
#define SB_MIRRORED_STRUCTS(S, F)                                                          \
    S(sb_tensor) F(sb_tensor, dtype) F(sb_tensor, device) F(sb_tensor, ndim)              \
        F(sb_tensor, shape) F(sb_tensor, strides) F(sb_tensor, data) F(sb_tensor, owner)  \
    S(sb_named) F(sb_named, name) F(sb_named, value) F(sb_named, grad)                    \
    S(sb_dataset) F(sb_dataset, images) F(sb_dataset, labels) F(sb_dataset, count)        \
    S(sb_conv2d_params) F(sb_conv2d_params, stride_h) F(sb_conv2d_params, stride_w)       \
        F(sb_conv2d_params, pad_h) F(sb_conv2d_params, pad_w)                             \
        F(sb_conv2d_params, dilation_h) F(sb_conv2d_params, dilation_w)                   \
        F(sb_conv2d_params, groups)                                                       \
    S(sb_conv_transpose2d_params) F(sb_conv_transpose2d_params, stride_h)                 \
        F(sb_conv_transpose2d_params, stride_w) F(sb_conv_transpose2d_params, pad_h)      \
        F(sb_conv_transpose2d_params, pad_w) F(sb_conv_transpose2d_params, output_pad_h)  \
        F(sb_conv_transpose2d_params, output_pad_w)                                       \
        F(sb_conv_transpose2d_params, dilation_h)                                         \
        F(sb_conv_transpose2d_params, dilation_w) F(sb_conv_transpose2d_params, groups)   \
    S(sb_pool2d_params) F(sb_pool2d_params, kernel_h) F(sb_pool2d_params, kernel_w)       \
        F(sb_pool2d_params, stride_h) F(sb_pool2d_params, stride_w)                       \
        F(sb_pool2d_params, pad_h) F(sb_pool2d_params, pad_w)                             \
        F(sb_pool2d_params, ceil_mode) F(sb_pool2d_params, count_include_pad)             \
        F(sb_pool2d_params, dilation_h) F(sb_pool2d_params, dilation_w)                   \
        F(sb_pool2d_params, divisor_override)                                             \
    S(sb_pad2d_params) F(sb_pad2d_params, left) F(sb_pad2d_params, right)                 \
        F(sb_pad2d_params, top) F(sb_pad2d_params, bottom) F(sb_pad2d_params, mode)       \
        F(sb_pad2d_params, value)                                                         \
    S(sb_interpolate_params) F(sb_interpolate_params, mode)                               \
        F(sb_interpolate_params, align_corners) F(sb_interpolate_params, scales)          \
    S(sb_grid_sample_params) F(sb_grid_sample_params, mode)                               \
        F(sb_grid_sample_params, padding_mode) F(sb_grid_sample_params, align_corners)    \
    S(sb_elementwise_loss) F(sb_elementwise_loss, kind) F(sb_elementwise_loss, beta)         \
        F(sb_elementwise_loss, log_target)                                                \
    S(sb_class_loss) F(sb_class_loss, kind) F(sb_class_loss, label_smoothing)             \
        F(sb_class_loss, ignore_index)                                                    \
    S(sb_ctc_loss) F(sb_ctc_loss, blank) F(sb_ctc_loss, zero_infinity)                    \
    S(sb_rnn_sequence) F(sb_rnn_sequence, mode) F(sb_rnn_sequence, reverse)               \
        F(sb_rnn_sequence, steps) F(sb_rnn_sequence, batch_sizes)                         \
    S(sb_sgd_config) F(sb_sgd_config, lr) F(sb_sgd_config, momentum)                      \
        F(sb_sgd_config, dampening) F(sb_sgd_config, weight_decay)                        \
        F(sb_sgd_config, nesterov) F(sb_sgd_config, maximize)                             \
    S(sb_adam_config) F(sb_adam_config, lr) F(sb_adam_config, beta1)                      \
        F(sb_adam_config, beta2) F(sb_adam_config, eps) F(sb_adam_config, weight_decay)   \
        F(sb_adam_config, amsgrad) F(sb_adam_config, decoupled_weight_decay)              \
        F(sb_adam_config, maximize)                                                       \
    S(sb_rng) F(sb_rng, seed) F(sb_rng, stream) F(sb_rng, counter)

/* The C types of the table's parameters that the bindings pass by value as
 * ctypes scalars: the test checks each ctypes type's size against these. */
#define SB_SCALAR_TYPES(T)                                                                 \
    T(sb_status) T(sb_dtype) T(sb_device) T(sb_isa_level) T(sb_binary_op) T(sb_unary_op)   \
    T(sb_loss_reduction) T(sb_sdpa_causal) T(sb_scatter_reduce_op) T(bool) T(char) T(int)   \
    T(unsigned) T(float) T(double) T(int64_t) T(uint64_t) T(uint32_t) T(size_t)

/* The public constants the bindings restate. */
#define SB_MIRRORED_CONSTANTS(C)                                                           \
    C(SB_MAX_DIMS) C(SB_F32) C(SB_I32) C(SB_I64) C(SB_DEVICE_CPU) C(SB_DEVICE_CUDA)      \
    C(SB_DEVICE_OPENCL) C(SB_PAD_CONSTANT) C(SB_PAD_REFLECT) C(SB_PAD_REPLICATE)           \
    C(SB_PAD_CIRCULAR) C(SB_INTERP_NEAREST) C(SB_INTERP_NEAREST_EXACT) C(SB_INTERP_LINEAR) \
    C(SB_INTERP_CUBIC) C(SB_SCATTER_SUM) C(SB_SCATTER_PROD) C(SB_SCATTER_MEAN) C(SB_SCATTER_AMAX) \
    C(SB_SCATTER_AMIN) C(SB_GRID_BILINEAR) C(SB_GRID_NEAREST) C(SB_GRID_ZEROS) C(SB_GRID_BORDER) \
    C(SB_GRID_REFLECTION) C(SB_NUMEL_MAX) C(SB_RNN_TANH) C(SB_RNN_RELU) C(SB_RNN_LSTM)      \
    C(SB_RNN_GRU)

static const char *or_dash(const char *s) { return s ? s : "-"; }

static void dump(void) {
    for (size_t i = 0; i < sb_op_table_count; i++) {
        const sb_op_info *o = &sb_op_table[i];
        printf("op\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o->name, o->ret, o->params, o->family,
               or_dash(o->trace), o->shape_fn ? o->shape_rule : "-",
               o->reference_fn ? o->reference : "-", o->backward_fn ? o->backward : "-", o->verify);
    }
    for (size_t i = 0; i < sb_support_table_count; i++) {
        const sb_op_info *o = &sb_support_table[i];
        printf("support\t%s\t%s\t%s\t%s\n", o->name, o->ret, o->params, o->family);
    }
#define DUMP_STRUCT(s) printf("struct\t%s\t%zu\t%zu\n", #s, sizeof(s), alignof(s));
#define DUMP_FIELD(s, f) \
    printf("field\t%s\t%s\t%zu\t%zu\n", #s, #f, offsetof(s, f), sizeof(((s *)0)->f));
    SB_MIRRORED_STRUCTS(DUMP_STRUCT, DUMP_FIELD)
#define DUMP_TYPE(t) printf("type\t%s\t%zu\n", #t, sizeof(t));
    SB_SCALAR_TYPES(DUMP_TYPE)
#define DUMP_CONSTANT(c) printf("const\t%s\t%lld\n", #c, (long long)(c));
    SB_MIRRORED_CONSTANTS(DUMP_CONSTANT)
}

static const sb_op_info *find(const char *name) {
    for (size_t i = 0; i < sb_op_table_count; i++)
        if (!strcmp(sb_op_table[i].name, name)) return &sb_op_table[i];
    return NULL;
}

static bool prefixed(const char *s, const char *prefix) { return !strncmp(s, prefix, strlen(prefix)); }

static void check_rows(void) {
    CHECK(sb_op_table_count >= 100, "the table has %zu ops", sb_op_table_count);
    for (size_t i = 0; i < sb_op_table_count; i++) {
        const sb_op_info *o = &sb_op_table[i];
        CHECK(o->fn != NULL && prefixed(o->name, "sb_"), "%s: no function", o->name);
        CHECK(find(o->name) == o, "%s: listed twice", o->name);
        bool in_support = false;
        for (size_t j = 0; j < sb_support_table_count; j++)
            in_support = in_support || !strcmp(sb_support_table[j].name, o->name);
        CHECK(!in_support, "%s: in both tables", o->name);
        CHECK(o->family[0] != '\0', "%s: no family", o->name);
        CHECK(o->params[0] == '(' && o->params[strlen(o->params) - 1] == ')', "%s: parameters %s",
              o->name, o->params);
        /* a backward is itself a table op, returns a status, and has no backward */
        if (o->backward_fn) {
            const sb_op_info *b = find(o->backward);
            CHECK(b != NULL, "%s: backward %s is not in the table", o->name, o->backward);
            CHECK(b && b->backward_fn == NULL, "%s: backward %s has a backward", o->name, o->backward);
            CHECK(b && !strcmp(b->ret, "sb_status"), "%s: backward %s returns %s", o->name,
                  o->backward, b ? b->ret : "?");
        }
        /* an output-shape rule is a table op of the same family */
        if (o->shape_fn) {
            const sb_op_info *r = find(o->shape_rule);
            CHECK(r != NULL && !strcmp(r->family, o->family), "%s: shape rule %s", o->name,
                  o->shape_rule);
        }
        CHECK(o->reference_fn == NULL || prefixed(o->reference, "sb_"), "%s: reference %s", o->name,
              o->reference);
        /* trace names are unique and name the autograd wrapper's record */
        if (o->trace) {
            CHECK(o->trace[0] != '\0' && !strchr(o->trace, '.'), "%s: trace name '%s'", o->name,
                  o->trace);
            CHECK(sb_op_by_trace_name(o->trace) == o, "%s: trace name '%s' used twice", o->name,
                  o->trace);
        }
        CHECK(o->verify && o->verify[0] != '\0' &&
                  (!prefixed(o->verify, "exempt") || strlen(o->verify) > strlen("exempt: ") + 8),
              "%s: verify column '%s' (a case name, or exempt with a reason)", o->name,
              o->verify ? o->verify : "(null)");
    }
    CHECK(sb_op_by_trace_name("no_such_op") == NULL, "an unknown trace name was found");
    CHECK(sb_op_by_trace_name(NULL) == NULL, "a NULL trace name was found");
    const sb_op_info *lin = sb_op_by_trace_name("linear");
    CHECK(lin && lin->fn == (sb_op_fn)sb_linear_forward, "'linear' is not sb_linear_forward");
    for (size_t i = 0; i < sb_support_table_count; i++)
        CHECK(sb_support_table[i].fn != NULL && sb_support_table[i].verify == NULL,
              "support row %s", sb_support_table[i].name);
}

int main(int argc, char **argv) {
    SB_TEST_MAIN_NAME(argv[0]);
    if (argc == 2 && !strcmp(argv[1], "--dump")) {
        dump();
        return 0;
    }
    if (argc != 1) {
        fprintf(stderr, "usage: %s [--dump]\n", argv[0]);
        return 2;
    }
    check_rows();
    return sb_test_finish();
}
