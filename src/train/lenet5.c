/* The reference LeNet-5 of the reproducible-training literature. */
#include "core/fpenv.h"
#include "core/internal.h"
#include "samebits/train.h"

sb_status sb_model_lenet5(sb_module **out) {
    SB_FPENV_GUARD();
    if (!out) return sb_fail(SB_ERR_NULL, "sb_model_lenet5: out is NULL");
    *out = NULL;
    sb_conv2d_params pad2 = SB_CONV2D_PARAMS_DEFAULT, plain = SB_CONV2D_PARAMS_DEFAULT;
    pad2.pad_h = pad2.pad_w = 2;
    sb_pool2d_params pool = SB_POOL2D_PARAMS(2, 2);
    sb_module *layers[13] = {0};
    sb_status s = SB_OK;
    int n = 0;
#define ADD(call) do { if (s == SB_OK) { s = (call); n++; } } while (0)
    ADD(sb_nn_conv2d(&layers[n], 1, 6, 5, 5, &pad2, true));
    ADD(sb_nn_relu(&layers[n]));
    ADD(sb_nn_max_pool2d(&layers[n], &pool));
    ADD(sb_nn_conv2d(&layers[n], 6, 16, 5, 5, &plain, true));
    ADD(sb_nn_relu(&layers[n]));
    ADD(sb_nn_max_pool2d(&layers[n], &pool));
    ADD(sb_nn_flatten(&layers[n], 1, -1));
    ADD(sb_nn_linear(&layers[n], 400, 120, true));
    ADD(sb_nn_relu(&layers[n]));
    ADD(sb_nn_linear(&layers[n], 120, 84, true));
    ADD(sb_nn_relu(&layers[n]));
    ADD(sb_nn_linear(&layers[n], 84, 10, true));
#undef ADD
    if (s != SB_OK) {
        for (int i = 0; i < 13; i++) sb_module_free(layers[i]);
        return s;
    }
    return sb_nn_sequential(out, layers, (size_t)n);
}
