/* src/optim/optim_internal.h - validation shared by the optimizers. */
#ifndef SAMEBITS_OPTIM_INTERNAL_H
#define SAMEBITS_OPTIM_INTERNAL_H

#include <stdint.h>
#include "samebits/optim.h"

/* One buffer an update touches: its name for messages and its memory. */
typedef struct sb_optim_buf {
    const char *name;
    const float *ptr; /* NULL: not used by this call (skipped) */
} sb_optim_buf;

/* Fails unless n >= 0 and the used buffers are pairwise disjoint over n
 * floats. NULL checks of required buffers are the caller's. */
sb_status sb_optim_check_buffers(const char *fn, int64_t n, const sb_optim_buf *bufs, int count);

/* Fails unless t is a used F32, CPU, contiguous tensor of param's shape. */
sb_status sb_optim_check_state_tensor(const char *fn, const char *name, const sb_tensor *t,
                                      const sb_tensor *param);

/* Fails unless x is finite (names the field and the value). */
sb_status sb_optim_check_finite(const char *fn, const char *field, double x);

#endif
