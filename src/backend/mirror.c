/* The mirror device: the CPU's kernels over memory of its own, so that the
 * device paths of ops, autograd, modules and optimizers run (and are
 * tested) on any machine, with the same bits as the CPU.
 *
 * It behaves like a discrete device towards the rest of the library: it
 * says its memory is not host-addressable, so every helper stages through
 * upload/download as it must for a GPU. Its allocator keeps each block in a
 * registry, so that
 *   - upload, download and the kernels that take auxiliary buffers refuse a
 *     pointer that is not live mirror memory (a host buffer passed where a
 *     device one belongs, a missed copy);
 *   - released memory is poisoned (NaN bytes) before it goes back;
 *   - tests can count live blocks to prove that every tensor was released
 *     through its backend. */
#include <pthread.h>
#include <stdlib.h>
#include "backend/backend.h"
#include "core/internal.h"

typedef struct block {
    struct block *prev, *next;
    size_t bytes;
    uint64_t magic;
    uint64_t pad[4]; /* data stays 64-byte aligned after the header */
} block;

enum { HEADER = sizeof(block) };
static const uint64_t MAGIC = 0x6d6972726f72ULL; /* "mirror" */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static block *live;
static size_t live_count;

static sb_status mirror_alloc(const sb_backend *be, size_t bytes, void **out) {
    if (bytes > SIZE_MAX - HEADER) return sb_fail(SB_ERR_NOMEM, "%s: %zu bytes is too large", be->name, bytes);
    block *b = NULL;
    if (posix_memalign((void **)&b, 64, HEADER + bytes) != 0)
        return sb_fail(SB_ERR_NOMEM, "%s: out of memory allocating %zu bytes", be->name, bytes);
    memset(b, 0, HEADER + bytes);
    b->bytes = bytes;
    b->magic = MAGIC;
    pthread_mutex_lock(&lock);
    b->next = live;
    if (live) live->prev = b;
    live = b;
    live_count++;
    pthread_mutex_unlock(&lock);
    *out = (char *)b + HEADER;
    return SB_OK;
}

static void mirror_release(const sb_backend *be, void *p) {
    (void)be;
    if (!p) return;
    block *b = (block *)((char *)p - HEADER);
    pthread_mutex_lock(&lock);
    if (b->prev) b->prev->next = b->next;
    else live = b->next;
    if (b->next) b->next->prev = b->prev;
    live_count--;
    pthread_mutex_unlock(&lock);
    memset(p, 0xff, b->bytes); /* NaN: a read after release shows */
    b->magic = 0;
    free(b);
}

/* True when [p, p + bytes) lies inside one live block. */
static bool is_mirror_memory(const void *p, size_t bytes) {
    uintptr_t a = (uintptr_t)p;
    bool found = false;
    pthread_mutex_lock(&lock);
    for (block *b = live; b && !found; b = b->next) {
        uintptr_t lo = (uintptr_t)b + HEADER;
        found = a >= lo && a - lo <= b->bytes && bytes <= b->bytes - (a - lo);
    }
    pthread_mutex_unlock(&lock);
    return found;
}

static sb_status need_mirror(const sb_backend *be, const char *what, const void *p, size_t bytes) {
    if (bytes == 0 || is_mirror_memory(p, bytes)) return SB_OK;
    return sb_fail(SB_ERR_INTERNAL, "%s: %s (%zu bytes at %p) is not live %s memory", be->name,
                   what, bytes, p, be->name);
}

static sb_status mirror_upload(const sb_backend *be, void *dst, const void *src, size_t bytes) {
    SB_TRY(need_mirror(be, "the upload destination", dst, bytes));
    if (bytes) memcpy(dst, src, bytes);
    return SB_OK;
}

static sb_status mirror_download(const sb_backend *be, void *dst, const void *src, size_t bytes) {
    SB_TRY(need_mirror(be, "the download source", src, bytes));
    if (bytes) memcpy(dst, src, bytes);
    return SB_OK;
}

static sb_status mirror_synchronize(const sb_backend *be) {
    (void)be;
    return SB_OK;
}

/* The class losses take a targets array that src/ops stages onto the
 * device: check that it really is device memory. */
static sb_status mirror_class_loss_forward(const sb_backend *be, bool logits, const float *a,
                                           const int64_t *targets, int64_t N, int64_t C,
                                           sb_loss_reduction reduction, float eps,
                                           int64_t ignore_index, float *loss) {
    SB_TRY(need_mirror(be, "targets", targets, (size_t)N * sizeof *targets));
    return sb_cpu_backend_ops.class_loss_forward(be, logits, a, targets, N, C, reduction, eps,
                                                 ignore_index, loss);
}

static sb_status mirror_class_loss_backward(const sb_backend *be, bool logits, const float *a,
                                            const int64_t *targets, int64_t N, int64_t C,
                                            sb_loss_reduction reduction, float eps,
                                            int64_t ignore_index, const float *dloss, float *da) {
    SB_TRY(need_mirror(be, "targets", targets, (size_t)N * sizeof *targets));
    return sb_cpu_backend_ops.class_loss_backward(be, logits, a, targets, N, C, reduction, eps,
                                                  ignore_index, dloss, da);
}

static sb_status mirror_class_loss_nd_forward(const sb_backend *be, const sb_class_problem *p,
                                              const float *input, const int64_t *targets,
                                              float *loss) {
    SB_TRY(need_mirror(be, "targets", targets, (size_t)(p->N * p->inner) * sizeof *targets));
    return sb_cpu_backend_ops.class_loss_nd_forward(be, p, input, targets, loss);
}

static sb_status mirror_class_loss_nd_backward(const sb_backend *be, const sb_class_problem *p,
                                               const float *input, const int64_t *targets,
                                               const float *dloss, float *dinput) {
    SB_TRY(need_mirror(be, "targets", targets, (size_t)(p->N * p->inner) * sizeof *targets));
    return sb_cpu_backend_ops.class_loss_nd_backward(be, p, input, targets, dloss, dinput);
}

/* The CTC index block (lengths, offsets, labels) is staged device memory. */
static sb_status mirror_ctc_block(const sb_backend *be, const sb_ctc_problem *p) {
    return need_mirror(be, "the CTC lengths", p->in_len, (size_t)(3 * p->N) * sizeof *p->in_len);
}

static sb_status mirror_ctc_loss_forward(const sb_backend *be, const sb_ctc_problem *p,
                                         const float *log_probs, float *loss) {
    SB_TRY(mirror_ctc_block(be, p));
    return sb_cpu_backend_ops.ctc_loss_forward(be, p, log_probs, loss);
}

static sb_status mirror_ctc_loss_backward(const sb_backend *be, const sb_ctc_problem *p,
                                          const float *log_probs, const float *dloss,
                                          float *dlog_probs) {
    SB_TRY(mirror_ctc_block(be, p));
    return sb_cpu_backend_ops.ctc_loss_backward(be, p, log_probs, dloss, dlog_probs);
}

static sb_backend_ops mirror_ops;
static sb_backend mirror;
static pthread_once_t mirror_once = PTHREAD_ONCE_INIT;

static void mirror_init(void) {
    mirror_ops = sb_cpu_backend_ops;
    mirror_ops.class_loss_forward = mirror_class_loss_forward;
    mirror_ops.class_loss_backward = mirror_class_loss_backward;
    mirror_ops.class_loss_nd_forward = mirror_class_loss_nd_forward;
    mirror_ops.class_loss_nd_backward = mirror_class_loss_nd_backward;
    mirror_ops.ctc_loss_forward = mirror_ctc_loss_forward;
    mirror_ops.ctc_loss_backward = mirror_ctc_loss_backward;
    mirror = (sb_backend){
        .name = "mirror",
        .device = SB_DEVICE_MIRROR,
        .host_addressable = false,
        .alloc = mirror_alloc,
        .release = mirror_release,
        .upload = mirror_upload,
        .download = mirror_download,
        .copy = sb_host_copy,
        .fill = sb_host_fill,
        .synchronize = mirror_synchronize,
        .ops = &mirror_ops,
    };
}

const sb_backend *sb_backend_mirror_get(void) {
    pthread_once(&mirror_once, mirror_init);
    return &mirror;
}

size_t sb_backend_mirror_live_blocks(void) {
    pthread_mutex_lock(&lock);
    size_t n = live_count;
    pthread_mutex_unlock(&lock);
    return n;
}
