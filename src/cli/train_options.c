/* `samebits train` options: defaults, ranges and the table for the checked
 * parser (cli/options.h). */
#include <float.h>
#include "cli/options.h"
#include "cli/train_options.h"
#include "samebits/runtime.h"

sb_status sb_cli_train_options(int argc, char **argv, sb_train_options *o) {
    /* threads 0: the library's default (SB_NUM_THREADS, else every CPU);
     * the printed bits never depend on it. */
    *o = (sb_train_options){.data = "/usr/share/datasets/fashion-mnist", .epochs = 2,
                            .batch_size = 100, .lr = 0.01, .seed = 0};
    const sb_cli_option opts[] = {
        {.name = "--data", .kind = SB_CLI_TEXT, .dest = &o->data},
        {.name = "--save", .kind = SB_CLI_TEXT, .dest = &o->save},
        {.name = "--resume", .kind = SB_CLI_TEXT, .dest = &o->resume},
        {.name = "--trace", .kind = SB_CLI_TEXT, .dest = &o->trace},
        {.name = "--trace-hashes-only", .kind = SB_CLI_FLAG, .dest = &o->trace_hashes_only},
        {.name = "--epochs", .kind = SB_CLI_I64, .dest = &o->epochs, .imin = 1, .imax = SB_TRAIN_MAX_EPOCHS},
        {.name = "--batch-size", .kind = SB_CLI_I64, .dest = &o->batch_size, .imin = 1,
         .imax = SB_TRAIN_MAX_BATCH_SIZE},
        {.name = "--limit-batches", .kind = SB_CLI_I64, .dest = &o->limit_batches, .imin = 1,
         .imax = SB_TRAIN_MAX_LIMIT_BATCHES},
        {.name = "--threads", .kind = SB_CLI_I64, .dest = &o->threads, .imin = 1, .imax = SB_MAX_THREADS},
        {.name = "--seed", .kind = SB_CLI_U64, .dest = &o->seed, .umin = 0, .umax = UINT64_MAX},
        /* lr: used in float32 updates, so a normal float32 magnitude. */
        {.name = "--lr", .kind = SB_CLI_REAL, .dest = &o->lr, .rmin = FLT_MIN, .rmax = FLT_MAX},
    };
    return sb_cli_parse_options("train", opts, sizeof opts / sizeof *opts, argc, argv);
}
