/* src/train/train_internal.h - shared between the training pieces. */
#ifndef SAMEBITS_TRAIN_INTERNAL_H
#define SAMEBITS_TRAIN_INTERNAL_H
#include "samebits/train.h"
/* Checkpoints restore the optimizer's step counter. */
void sb_optimizer_set_steps(sb_optimizer *opt, int64_t steps);
#endif
