/* Depthwise conv2d on the zoo's shapes, batch 8: MobileNet-v2 / v3,
 * EfficientNet and MnasNet's 3x3 (stride 1 and 2) at ImageNet size, ConvNeXt's
 * 7x7 (padding 3), and the same layers at the 64x64 input of the zoo's tests.
 * For each layer and pass (forward, input gradient, weight gradient) it
 * prints the best time of the public op (the fast path) at 1 and 2 threads
 * and whether its bits equal the reference kernel's (bench_conv_layers.h).
 *
 *   bench_conv_dw [--quick] [--csv] [--only LAYER PASS]
 *
 * --csv prints "layer,pass,ms_1t,ms_2t,bits" lines for bench/bench_conv_dw.py,
 * which sets them beside PyTorch. Layer names encode the geometry:
 * "dw C KxK[/S] @H" (C channels, groups = C, padding K//2). */
#include "bench_conv_layers.h"

/* c channels at h x h, a k x k depthwise kernel, stride, padding k/2 */
#define DW(name, c, h, k, stride) {name, 8, c, h, c, k, stride, (k) / 2, c}

static const bench_conv_layer layers[] = {
    /* ImageNet size: MobileNet-v2's first, a stride-2, an expanded, and
     * ConvNeXt-T's first 7x7 */
    DW("dw 32 3x3 @112", 32, 112, 3, 1),
    DW("dw 96 3x3/2 @56", 96, 56, 3, 2),
    DW("dw 96 3x3 @56", 96, 56, 3, 1),
    DW("dw 144 3x3 @56", 144, 56, 3, 1),
    DW("dw 96 7x7 @56", 96, 56, 7, 1),
    /* the zoo's tests at 64x64 input */
    DW("dw 32 3x3 @32", 32, 32, 3, 1),
    DW("dw 144 3x3/2 @16", 144, 16, 3, 2),
    DW("dw 576 3x3 @4", 576, 4, 3, 1),
    DW("dw 240 5x5 @4", 240, 4, 5, 1),
    DW("dw 96 7x7 @16", 96, 16, 7, 1),
    DW("dw 768 7x7 @2", 768, 2, 7, 1),
};

int main(int argc, char **argv) {
    bench_conv_opts o = {.prog = "bench_conv_dw", .name_width = 22, .min_time_s = 0.3,
                         .only_pass = -1, .all_same = true};
    bench_conv_args(&o, argc, argv);
    int threads0 = sb_num_threads();
    if (!o.csv && !o.only_layer) {
        printf("depthwise conv2d, batch 8, isa %s; best ms of the fast op\n", sb_isa_name(sb_isa()));
        printf("%-22s %-12s %9s %9s  %s\n", "layer (c kxk /stride @hxw)", "pass", "1 thread",
               "2 threads", "bits vs reference");
    }
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++) bench_conv_measure(&o, &layers[i]);
    sb_set_num_threads(threads0);
    return o.all_same ? 0 : 1;
}
