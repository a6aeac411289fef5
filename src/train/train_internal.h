/* src/train/train_internal.h - shared between the training pieces. */
#ifndef SAMEBITS_TRAIN_INTERNAL_H
#define SAMEBITS_TRAIN_INTERNAL_H
#include "samebits/io.h"
#include "samebits/train.h"

/* Ranges of the training counters, shared by `samebits train`'s options and
 * the checkpoint metadata (docs/FORMATS.md): wide enough for any real run,
 * narrow enough that every count derived from them (epoch * batches + b,
 * step + 1) fits in int64. */
#define SB_TRAIN_MAX_EPOCHS INT64_C(1000000)
#define SB_TRAIN_MAX_BATCH_SIZE INT64_C(1000000000)
#define SB_TRAIN_MAX_STEPS (INT64_C(1) << 62)

/* Checkpoints restore the optimizer's step counter (0..SB_TRAIN_MAX_STEPS,
 * checked by the caller). */
void sb_optimizer_set_steps(sb_optimizer *opt, int64_t steps);

/* ---- checkpoint metadata ----
 * The counters and settings a checkpoint keeps as safetensors metadata
 * strings: format, model, optimizer, seed (full u64), epoch, batch_size,
 * optimizer_steps, micro_batch (docs/FORMATS.md, "Checkpoints"; a file without
 * micro_batch was trained on whole batches). */
#define SB_CHECKPOINT_FORMAT "samebits-checkpoint-1"
enum { SB_CHECKPOINT_META_COUNT = 8 };

typedef struct sb_checkpoint_meta {
    sb_train_state state;
    const char *optimizer; /* "adam", "adamw", "sgd" */
    int64_t optimizer_steps;
    int64_t micro_batch; /* divides state.batch_size; 0 when saving: the whole batch */
} sb_checkpoint_meta;

/* The text form; kv points into the struct itself. */
typedef struct sb_checkpoint_meta_text {
    char seed[24], epoch[24], batch_size[24], steps[24], micro_batch[24];
    sb_kv kv[SB_CHECKPOINT_META_COUNT];
} sb_checkpoint_meta_text;

/* Validates m (every counter in range, model named) and formats it. */
sb_status sb_checkpoint_meta_format(const char *fn, const sb_checkpoint_meta *m,
                                    sb_checkpoint_meta_text *out);
/* Reads and checks every field of st's metadata: the format tag, model and
 * optimizer names equal to the expected ones (want_model, want_optimizer;
 * NULL accepts any), every counter decimal and in range. *out (its
 * optimizer pointing into st) is written only on success. */
sb_status sb_checkpoint_meta_parse(const char *fn, const char *path, const sb_safetensors *st,
                                   const char *want_model, const char *want_optimizer,
                                   sb_checkpoint_meta *out);
/* sb_checkpoint_save/_load with the micro-batch size (contract section 17)
 * that is part of the run's identity; the public functions save the whole
 * batch and ignore it on load. */
sb_status sb_checkpoint_save_micro(const char *path, sb_module *model, sb_optimizer *opt,
                                   const sb_train_state *state, int64_t micro_batch);
sb_status sb_checkpoint_load_micro(const char *path, sb_module *model, sb_optimizer *opt,
                                   sb_train_state *state, int64_t *micro_batch);
#endif
