/* samebits/train.h - what a training loop needs around the modules:
 * optimizers over a module's parameters, a shuffling batch loader,
 * checkpoints, and the reference LeNet-5 model.
 */
#ifndef SAMEBITS_TRAIN_H
#define SAMEBITS_TRAIN_H

#include <stdbool.h>
#include <stdint.h>
#include "samebits/export.h"
#include "samebits/io.h"
#include "samebits/nn.h"
#include "samebits/optim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- optimizers over a module ---- */
typedef struct sb_optimizer sb_optimizer;

SB_API sb_status sb_optimizer_sgd(sb_optimizer **out, sb_module *model, const sb_sgd_config *cfg);
/* Adam, or AdamW when cfg->decoupled_weight_decay. */
SB_API sb_status sb_optimizer_adam(sb_optimizer **out, sb_module *model, const sb_adam_config *cfg);
SB_API void sb_optimizer_free(sb_optimizer *opt);
/* One update of every parameter from its gradient, in declaration order. */
SB_API sb_status sb_optimizer_step(sb_optimizer *opt);
SB_API int64_t sb_optimizer_steps(const sb_optimizer *opt);
/* Optimizer state tensors (named "<param>.exp_avg" etc.), for checkpoints. */
SB_API sb_status sb_optimizer_state(sb_optimizer *opt, sb_named *out, size_t cap, size_t *count);
SB_API const char *sb_optimizer_kind(const sb_optimizer *opt);

/* ---- batches ---- */
/* Epoch e visits the examples in the order of the Philox permutation
 * sb_rng_permutation(seed, SB_STREAM_SHUFFLE + e, count) (or in index order
 * when shuffle is false); batch b holds positions [b*B, min((b+1)*B, count)),
 * so the last batch may be smaller. */
#define SB_STREAM_SHUFFLE UINT64_C(0x5348554600000000)

typedef struct sb_loader sb_loader;
SB_API sb_status sb_loader_new(sb_loader **out, const sb_dataset *data, int64_t batch_size, bool shuffle,
                        uint64_t seed);
SB_API void sb_loader_free(sb_loader *l);
SB_API sb_status sb_loader_set_epoch(sb_loader *l, int64_t epoch);
SB_API int64_t sb_loader_num_batches(const sb_loader *l);
/* Gathers batch b of the current epoch into arena tensors. */
SB_API sb_status sb_loader_batch(sb_loader *l, int64_t b, sb_arena *arena, sb_tensor **images,
                          sb_tensor **labels);

/* ---- checkpoints ---- */
/* Everything needed to resume bit for bit: parameters (named as in
 * sb_module_parameters, so other tools read the weights), buffers,
 * optimizer state, and counters/settings in the metadata. Written
 * atomically; a previous file at path survives any failure. */
typedef struct sb_train_state {
    uint64_t seed;
    int64_t epoch;      /* epochs completed */
    int64_t batch_size;
    char model[32];     /* e.g. "lenet5" */
} sb_train_state;

SB_API sb_status sb_checkpoint_save(const char *path, sb_module *model, sb_optimizer *opt,
                             const sb_train_state *state);
/* Loads into an already built model/optimizer of the same architecture;
 * refuses a file whose tensors, shapes or settings do not match. */
SB_API sb_status sb_checkpoint_load(const char *path, sb_module *model, sb_optimizer *opt,
                             sb_train_state *state);

/* ---- models ---- */
/* LeNet-5: conv(1->6, 5x5, pad 2) relu maxpool2 conv(6->16, 5x5) relu
 * maxpool2 flatten linear(400->120) relu linear(120->84) relu linear(84->10). */
SB_API sb_status sb_model_lenet5(sb_module **out);

#ifdef __cplusplus
}
#endif
#endif
