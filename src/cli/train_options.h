/* src/cli/train_options.h - the options of `samebits train`, their defaults
 * and ranges (README, "samebits train"). Separate from train.c so the
 * option fuzz target (fuzz/fuzz_cli_options.c) links without the library. */
#ifndef SAMEBITS_CLI_TRAIN_OPTIONS_H
#define SAMEBITS_CLI_TRAIN_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include "samebits/status.h"
#include "samebits/tensor.h" /* sb_device */

#include "train/train_internal.h" /* SB_TRAIN_MAX_EPOCHS, SB_TRAIN_MAX_BATCH_SIZE */

#define SB_TRAIN_MAX_LIMIT_BATCHES INT64_C(1000000000)

typedef struct sb_train_options {
    const char *data, *save, *resume, *trace;
    bool trace_hashes_only;
    sb_device device;                          /* where the model runs: --device */
    int64_t epochs, batch_size, limit_batches; /* limit_batches 0: no limit */
    int64_t micro_batch;                       /* 0: the whole batch */
    int64_t threads;                           /* 0: the library's default */
    double lr;
    uint64_t seed;
} sb_train_options;

/* Fills *o with the defaults, then parses argv (everything after "train").
 * SB_ERR_ARG with a message naming the option on any bad option or value;
 * also when --micro-batch does not divide --batch-size. On success
 * o->micro_batch is set (the batch size when not given). */
sb_status sb_cli_train_options(int argc, char **argv, sb_train_options *o);

#endif
