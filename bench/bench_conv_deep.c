/* conv2d on the shapes of ResNet-18 at CIFAR size (batch 32, 32x32 input:
 * the stem, then stages at 8x8, 4x4, 2x2 and 1x1 with 64..512 channels),
 * the deep stages with many channels over few pixels. For each layer and
 * pass (forward, input gradient, weight gradient) it prints the best time
 * of the public op (the fast path) at 1 and 2 threads and whether its bits
 * equal the reference kernel's (bench_conv_layers.h).
 *
 *   bench_conv_deep [--quick] [--csv] [--only LAYER PASS]
 *
 * --csv prints "layer,pass,ms_1t,ms_2t,bits" lines for
 * bench/bench_conv_deep.py, which sets them beside PyTorch. --only runs the
 * one layer whose name starts with LAYER, pass 0 (forward), 1 (input
 * gradient) or 2 (weight gradient), once at one thread without checking:
 * a workload for callgrind's instruction counts, free of the wall-clock
 * noise of a shared machine. */
#include "bench_conv_layers.h"

/* name, batch, c_in, h (= w), c_out, kernel, stride, pad, groups */
static const bench_conv_layer layers[] = {
    {"stem 3->64 7x7/2 @32", 32, 3, 32, 64, 7, 2, 3, 1},
    {"64->64 3x3 @8", 32, 64, 8, 64, 3, 1, 1, 1},
    {"64->128 3x3/2 @8", 32, 64, 8, 128, 3, 2, 1, 1},
    {"64->128 1x1/2 @8", 32, 64, 8, 128, 1, 2, 0, 1},
    {"128->128 3x3 @4", 32, 128, 4, 128, 3, 1, 1, 1},
    {"128->256 3x3/2 @4", 32, 128, 4, 256, 3, 2, 1, 1},
    {"256->256 3x3 @2", 32, 256, 2, 256, 3, 1, 1, 1},
    {"256->512 3x3/2 @2", 32, 256, 2, 512, 3, 2, 1, 1},
    {"256->512 1x1/2 @2", 32, 256, 2, 512, 1, 2, 0, 1},
    {"512->512 3x3 @1", 32, 512, 1, 512, 3, 1, 1, 1},
};

int main(int argc, char **argv) {
    bench_conv_opts o = {.prog = "bench_conv_deep", .name_width = 28, .min_time_s = 0.3,
                         .only_pass = -1, .all_same = true};
    bench_conv_args(&o, argc, argv);
    int threads0 = sb_num_threads();
    if (!o.csv && !o.only_layer) {
        printf("conv2d, ResNet-18 at 32x32, batch 32, isa %s; best ms of the fast op\n",
               sb_isa_name(sb_isa()));
        printf("%-28s %-12s %9s %9s  %s\n", "layer (c->o kxk /stride @hxw)", "pass", "1 thread",
               "2 threads", "bits vs reference");
    }
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++) bench_conv_measure(&o, &layers[i]);
    sb_set_num_threads(threads0);
    return o.all_same ? 0 : 1;
}
