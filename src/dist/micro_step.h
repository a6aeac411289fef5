/* src/dist/micro_step.h - one training step over micro-batches, spread over
 * the processes of a communicator (contract section 17, "Micro-batches").
 *
 * A step over a batch of B samples is K = B / m micro-batches of m samples
 * (the batch's positions in the shuffled order, cut in order; the last
 * batch of an epoch may hold fewer, K_b = ceil(n_b / m), the last one
 * short). Each micro-batch's gradient and mean loss are computed exactly as
 * a whole batch would be (forward, mean cross-entropy, backward); the
 * step's gradient and loss are the order-free exact reduction of the K_b
 * micro-batch results divided by (float)K_b, one IEEE division per element.
 * Process r of R (R divides K) computes micro-batches r*K/R .. (r+1)*K/R - 1,
 * so the result is the same for every R. Buffers (batch-norm running
 * statistics): every micro-batch's forward starts from the step's incoming
 * buffers; afterwards each float32 buffer element is the exact reduction
 * of the K_b micro-batches' values divided by (float)K_b, each int64 one
 * the mean of their values (an integer: num_batches_tracked advances by 1
 * per step). K = 1 on one process is today's whole-batch step, bit for
 * bit. */
#ifndef SAMEBITS_DIST_MICRO_STEP_H
#define SAMEBITS_DIST_MICRO_STEP_H

#include "dist/comm.h"
#include "samebits/train.h"

typedef struct sb_micro_trainer sb_micro_trainer;

/* micro_batch must divide batch_size, K = batch_size / micro_batch must be
 * at most SB_EXACT_MAX_TERMS and a multiple of comm->size. The gradients
 * must be CPU tensors, the buffers float32 or int64 CPU tensors. */
sb_status sb_micro_trainer_new(sb_micro_trainer **out, sb_module *model, int64_t batch_size,
                               int64_t micro_batch, sb_comm *comm);
void sb_micro_trainer_free(sb_micro_trainer *t);

/* The step's gradient into the model's parameter gradients, for batch b of
 * the loader's current epoch; `loader` must cut the data in micro-batches
 * (its batch size is micro_batch). *loss: the step's loss (the same on
 * every process). The caller then runs the optimizer. */
sb_status sb_micro_trainer_gradient(sb_micro_trainer *t, sb_graph *g, sb_loader *loader, int64_t b,
                                    float *loss);

#endif
