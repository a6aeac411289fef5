/* Fast dropout (contract "Dropout", reference src/ref/dropout.c).
 *
 * Element i's uniform is sb_rng_uniform_at(seed, stream, offset + i): a
 * counter-based draw that depends on nothing computed before it. So any
 * element range can run the reference kernel on its own, with the offset
 * moved to the range's first element, and drops exactly the elements the
 * whole-tensor call drops. */
#include "cpu/ops_internal.h"
#include "ref/ref_loss.h"

enum { MIN_GRAIN = 16384 }; /* elements per thread range, at least */

typedef struct drop_job {
    const float *x, *mask; /* x is dy for backward */
    float *y, *mask_out;   /* y is dx for backward */
    float p;
    bool train;
    uint64_t seed, stream, offset;
} drop_job;

static void forward_range(void *vjob, int64_t begin, int64_t end) {
    const drop_job *j = vjob;
    sb_ref_dropout_forward(j->x + begin, end - begin, j->p, j->train, j->seed, j->stream,
                           j->offset + (uint64_t)begin, j->y + begin,
                           j->mask_out ? j->mask_out + begin : NULL);
}

static void backward_range(void *vjob, int64_t begin, int64_t end) {
    const drop_job *j = vjob;
    sb_ref_dropout_backward(j->x + begin, j->mask ? j->mask + begin : NULL, end - begin, j->p,
                            j->train, j->y + begin);
}

void sb_cpu_dropout_forward(const float *x, int64_t n, float p, bool train, uint64_t seed,
                            uint64_t stream, uint64_t offset, float *y, float *mask) {
    drop_job j = {.x = x, .y = y, .mask_out = mask, .p = p, .train = train, .seed = seed,
                  .stream = stream, .offset = offset};
    sb_parallel_for(n, sb_parallel_grain(n, MIN_GRAIN), forward_range, &j);
}

void sb_cpu_dropout_backward(const float *dy, const float *mask, int64_t n, float p, bool train,
                             float *dx) {
    drop_job j = {.x = dy, .mask = mask, .y = dx, .p = p, .train = train};
    sb_parallel_for(n, sb_parallel_grain(n, MIN_GRAIN), backward_range, &j);
}
