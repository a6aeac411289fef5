/* `samebits train` options: defaults, ranges and the table for the checked
 * parser (cli/options.h). */
#include <float.h>
#include <inttypes.h>
#include <string.h>
#include "cli/options.h"
#include "cli/train_options.h"
#include "core/internal.h" /* sb_fail, SB_TRY */
#include "dist/exact_sum.h"   /* SB_EXACT_MAX_TERMS */
#include "samebits/runtime.h"

sb_status sb_cli_train_options(int argc, char **argv, sb_train_options *o) {
    /* threads 0: the library's default (SB_NUM_THREADS, else every CPU);
     * the printed bits never depend on it. */
    *o = (sb_train_options){.data = "/usr/share/datasets/fashion-mnist", .device = SB_DEVICE_CPU,
                            .epochs = 2, .batch_size = 100, .lr = 0.01, .seed = 0};
    const char *device = "cpu";
    const sb_cli_option opts[] = {
        {.name = "--data", .kind = SB_CLI_TEXT, .dest = &o->data},
        {.name = "--save", .kind = SB_CLI_TEXT, .dest = &o->save},
        {.name = "--resume", .kind = SB_CLI_TEXT, .dest = &o->resume},
        {.name = "--trace", .kind = SB_CLI_TEXT, .dest = &o->trace},
        {.name = "--trace-hashes-only", .kind = SB_CLI_FLAG, .dest = &o->trace_hashes_only},
        {.name = "--device", .kind = SB_CLI_TEXT, .dest = &device},
        {.name = "--epochs", .kind = SB_CLI_I64, .dest = &o->epochs, .imin = 1, .imax = SB_TRAIN_MAX_EPOCHS},
        {.name = "--batch-size", .kind = SB_CLI_I64, .dest = &o->batch_size, .imin = 1,
         .imax = SB_TRAIN_MAX_BATCH_SIZE},
        {.name = "--limit-batches", .kind = SB_CLI_I64, .dest = &o->limit_batches, .imin = 1,
         .imax = SB_TRAIN_MAX_LIMIT_BATCHES},
        {.name = "--micro-batch", .kind = SB_CLI_I64, .dest = &o->micro_batch, .imin = 1,
         .imax = SB_TRAIN_MAX_BATCH_SIZE},
        {.name = "--threads", .kind = SB_CLI_I64, .dest = &o->threads, .imin = 1, .imax = SB_MAX_THREADS},
        {.name = "--seed", .kind = SB_CLI_U64, .dest = &o->seed, .umin = 0, .umax = UINT64_MAX},
        /* lr: used in float32 updates, so a normal float32 magnitude. */
        {.name = "--lr", .kind = SB_CLI_REAL, .dest = &o->lr, .rmin = FLT_MIN, .rmax = FLT_MAX},
    };
    SB_TRY(sb_cli_parse_options("train", opts, sizeof opts / sizeof *opts, argc, argv));
    /* The names sb_device_name gives (spelled here: this file links without
     * the library, see train_options.h). */
    static const struct { const char *name; sb_device device; } devices[] = {
        {"cpu", SB_DEVICE_CPU}, {"cuda", SB_DEVICE_CUDA}, {"mirror", SB_DEVICE_MIRROR},
        {"opencl", SB_DEVICE_OPENCL}};
    size_t k = 0;
    while (k < sizeof devices / sizeof *devices && strcmp(device, devices[k].name) != 0) k++;
    if (k == sizeof devices / sizeof *devices)
        return sb_fail(SB_ERR_ARG, "train: --device '%.40s' must be cpu, mirror, cuda or opencl", device);
    o->device = devices[k].device;
    /* Checkpoints hold host tensors (safetensors are read and written on the host). */
    if (o->device != SB_DEVICE_CPU && (o->save || o->resume))
        return sb_fail(SB_ERR_ARG, "train: --save and --resume need --device cpu (checkpoints hold host "
                       "tensors)");
    if (!o->micro_batch) o->micro_batch = o->batch_size;
    if (o->batch_size % o->micro_batch)
        return sb_fail(SB_ERR_ARG, "train: --micro-batch = %" PRId64 " must divide --batch-size = %" PRId64,
                       o->micro_batch, o->batch_size);
    if (o->batch_size / o->micro_batch > SB_EXACT_MAX_TERMS)
        return sb_fail(SB_ERR_ARG, "train: --batch-size / --micro-batch = %" PRId64 " micro-batches per step; at most %" PRId64,
                       o->batch_size / o->micro_batch, SB_EXACT_MAX_TERMS);
    if (o->device != SB_DEVICE_CPU && o->micro_batch != o->batch_size)
        return sb_fail(SB_ERR_ARG, "train: --micro-batch needs --device cpu (micro-batch gradients are "
                       "combined on the host)");
    return SB_OK;
}
