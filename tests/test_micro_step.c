/* Tests of a training step over micro-batches (src/dist/micro_step.h) with
 * a model that has buffers: a small conv + batch-norm + linear net trained
 * two epochs with 4 micro-batches per step ends with the same parameter and
 * buffer bytes on 1 process (accumulation), 2 and 4 processes (forked, with
 * a shared-memory communicator: the same role MPI plays in samebits-mpi);
 * with one micro-batch per step it equals a plain whole-batch step bit for
 * bit; the running statistics move and num_batches_tracked counts steps;
 * a number of processes that does not divide K is refused. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"
#include "dist/micro_step.h"

enum { N_IMAGES = 72, SIDE = 6, BATCH = 16, EPOCHS = 2, MAX_RANKS = 4, SLOT = 4096, STATE = 16384 };

/* ---- a communicator of forked processes over shared memory ---- */
typedef struct shared {
    pthread_barrier_t barrier;
    int64_t slot[MAX_RANKS][SLOT];
    unsigned char state[MAX_RANKS][STATE]; /* each process's final parameters and buffers */
    size_t state_len[MAX_RANKS];
    int failed[MAX_RANKS];
} shared;

static shared *sh;

static sb_status shm_max_u8(sb_comm *c, uint8_t *v, size_t n) {
    if (n > SLOT) return SB_ERR_ARG;
    for (size_t i = 0; i < n; i++) sh->slot[c->rank][i] = v[i];
    pthread_barrier_wait(&sh->barrier);
    for (int r = 0; r < c->size; r++)
        for (size_t i = 0; i < n; i++) v[i] = sh->slot[r][i] > v[i] ? (uint8_t)sh->slot[r][i] : v[i];
    pthread_barrier_wait(&sh->barrier);
    return SB_OK;
}

static sb_status shm_sum_i64(sb_comm *c, int64_t *v, size_t n, int bits) {
    (void)bits;
    if (n > SLOT) return SB_ERR_ARG;
    memcpy(sh->slot[c->rank], v, n * sizeof *v);
    pthread_barrier_wait(&sh->barrier);
    /* processes combined in reverse order: the grouping must not matter */
    memset(v, 0, n * sizeof *v);
    for (int r = c->size - 1; r >= 0; r--)
        for (size_t i = 0; i < n; i++) v[i] += sh->slot[r][i];
    pthread_barrier_wait(&sh->barrier);
    return SB_OK;
}

static sb_status shm_agree(sb_comm *c, const unsigned char d[32], const char *what) {
    (void)c, (void)d, (void)what;
    return SB_OK;
}

/* ---- the model and data ---- */
static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint32_t rnd(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return (uint32_t)(rng >> 32); }

static sb_dataset make_data(void) {
    sb_dataset d = {0};
    rng = 0x2545f4914f6cdd1dull; /* the same data on every call */
    int64_t ishape[4] = {N_IMAGES, 1, SIDE, SIDE}, lshape[1] = {N_IMAGES};
    CHECK(sb_tensor_new(&d.images, SB_F32, 4, ishape) == SB_OK, "%s", sb_last_error());
    CHECK(sb_tensor_new(&d.labels, SB_I64, 1, lshape) == SB_OK, "%s", sb_last_error());
    float *x = d.images->data;
    int64_t *y = d.labels->data;
    for (int64_t i = 0; i < N_IMAGES * SIDE * SIDE; i++) x[i] = (float)(rnd() % 256) / 255.0f;
    for (int64_t i = 0; i < N_IMAGES; i++) y[i] = rnd() % 10;
    d.count = N_IMAGES;
    return d;
}

/* conv 1->4 3x3, batch norm, relu, flatten, linear 64->10 */
static sb_module *make_model(void) {
    sb_conv2d_params plain = SB_CONV2D_PARAMS_DEFAULT;
    sb_module *layers[5] = {0}, *m = NULL;
    CHECK(sb_nn_conv2d(&layers[0], 1, 4, 3, 3, &plain, true) == SB_OK, "%s", sb_last_error());
    CHECK(sb_nn_batch_norm(&layers[1], 4, 1e-5f, 0.1f, true) == SB_OK, "%s", sb_last_error());
    CHECK(sb_nn_relu(&layers[2]) == SB_OK, "%s", sb_last_error());
    CHECK(sb_nn_flatten(&layers[3], 1, -1) == SB_OK, "%s", sb_last_error());
    CHECK(sb_nn_linear(&layers[4], 4 * (SIDE - 2) * (SIDE - 2), 10, true) == SB_OK, "%s", sb_last_error());
    CHECK(sb_nn_sequential(&m, layers, 5) == SB_OK, "%s", sb_last_error());
    CHECK(sb_module_init(m, 42) == SB_OK, "%s", sb_last_error());
    return m;
}

/* Every parameter's and buffer's bytes, in order, into out; the length. */
static size_t model_state(sb_module *m, unsigned char *out, size_t cap) {
    sb_named items[16];
    size_t np = 0, nb = 0, len = 0;
    sb_module_parameters(m, items, 16, &np);
    sb_module_buffers(m, items + np, 16 - np, &nb);
    for (size_t i = 0; i < np + nb && i < 16; i++) {
        size_t bytes = (size_t)sb_tensor_numel(items[i].value) * sb_dtype_size(items[i].value->dtype);
        if (len + bytes > cap) return 0;
        memcpy(out + len, items[i].value->data, bytes);
        len += bytes;
    }
    return len;
}

/* Trains EPOCHS epochs of batches of BATCH in micro-batches of `micro` as
 * process `rank` of `size`; the final state into out. */
static sb_status train(int micro, sb_comm *comm, unsigned char *out, size_t *len) {
    const sb_dataset data = make_data();
    sb_module *model = make_model();
    sb_sgd_config cfg = {.lr = 0.1f, .momentum = 0.9f};
    sb_optimizer *opt = NULL;
    sb_graph *g = NULL;
    sb_loader *loader = NULL;
    sb_micro_trainer *t = NULL;
    sb_status s = sb_optimizer_sgd(&opt, model, &cfg);
    if (s == SB_OK) s = sb_graph_new(&g);
    if (s == SB_OK) s = sb_loader_new(&loader, &data, micro, true, 7);
    if (s == SB_OK) s = sb_micro_trainer_new(&t, model, BATCH, micro, comm);
    int64_t steps = N_IMAGES / BATCH + (N_IMAGES % BATCH != 0); /* the last batch is short */
    for (int e = 0; s == SB_OK && e < EPOCHS; e++) {
        sb_module_train(model, true);
        s = sb_loader_set_epoch(loader, e);
        for (int64_t b = 0; s == SB_OK && b < steps; b++) {
            float loss;
            s = sb_micro_trainer_gradient(t, g, loader, b, &loss);
            if (s == SB_OK) s = sb_optimizer_step(opt);
        }
    }
    if (s == SB_OK) *len = model_state(model, out, STATE);
    sb_micro_trainer_free(t);
    sb_loader_free(loader);
    sb_graph_free(g);
    sb_optimizer_free(opt);
    sb_module_free(model);
    sb_dataset_free((sb_dataset *)&data);
    return s;
}

/* The same EPOCHS with plain whole-batch steps (no micro-batch code). */
static size_t train_whole_batch(unsigned char *out) {
    sb_dataset data = make_data();
    sb_module *model = make_model();
    sb_sgd_config cfg = {.lr = 0.1f, .momentum = 0.9f};
    sb_optimizer *opt = NULL;
    sb_graph *g = NULL;
    sb_loader *loader = NULL;
    size_t len = 0;
    sb_status s = sb_optimizer_sgd(&opt, model, &cfg);
    if (s == SB_OK) s = sb_graph_new(&g);
    if (s == SB_OK) s = sb_loader_new(&loader, &data, BATCH, true, 7);
    for (int e = 0; s == SB_OK && e < EPOCHS; e++) {
        sb_module_train(model, true);
        s = sb_loader_set_epoch(loader, e);
        for (int64_t b = 0; s == SB_OK && b < sb_loader_num_batches(loader); b++) {
            sb_tensor *x, *y;
            sb_variable *in, *logits, *loss;
            sb_graph_reset(g);
            s = sb_loader_batch(loader, b, sb_graph_arena(g), &x, &y);
            if (s == SB_OK) s = sb_graph_input(g, x, &in);
            if (s == SB_OK) s = sb_module_forward(model, g, in, &logits);
            if (s == SB_OK) s = sb_ag_cross_entropy(g, logits, y, SB_LOSS_MEAN, 0.0f, &loss);
            if (s == SB_OK) s = sb_graph_backward(g, loss);
            if (s == SB_OK) s = sb_optimizer_step(opt);
        }
    }
    CHECK(s == SB_OK, "whole-batch training: %s", sb_last_error());
    if (s == SB_OK) len = model_state(model, out, STATE);
    sb_loader_free(loader);
    sb_graph_free(g);
    sb_optimizer_free(opt);
    sb_module_free(model);
    sb_dataset_free(&data);
    return len;
}

/* Runs `size` forked processes training in micro-batches of `micro`;
 * process 0's state into out (after checking every process ended with
 * the same bytes). */
static size_t run_processes(int micro, int size, unsigned char *out) {
    pthread_barrierattr_t attr;
    pthread_barrierattr_init(&attr);
    pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&sh->barrier, &attr, (unsigned)size);
    pid_t pids[MAX_RANKS];
    fflush(NULL);
    for (int r = 0; r < size; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            sb_comm comm = {r, size, shm_max_u8, shm_sum_i64, shm_agree, NULL};
            sb_status s = train(micro, &comm, sh->state[r], &sh->state_len[r]);
            sh->failed[r] = s != SB_OK;
            if (s != SB_OK) fprintf(stderr, "process %d of %d: %s\n", r, size, sb_last_error());
            _exit(0);
        }
    }
    for (int r = 0; r < size; r++) {
        int status = 0;
        waitpid(pids[r], &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0 && !sh->failed[r], "process %d of %d failed", r, size);
    }
    pthread_barrier_destroy(&sh->barrier);
    for (int r = 1; r < size; r++)
        CHECK(sh->state_len[r] == sh->state_len[0] && !memcmp(sh->state[r], sh->state[0], sh->state_len[0]),
              "process %d of %d ends with other bits than process 0", r, size);
    memcpy(out, sh->state[0], sh->state_len[0]);
    return sh->state_len[0];
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    sb_set_num_threads(1);
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(sh != MAP_FAILED, "mmap");
    if (sh == MAP_FAILED) return sb_test_finish();
    static unsigned char whole[STATE], k1[STATE], one[STATE], other[STATE], k2[STATE];
    size_t len;

    /* K = 1: today's whole-batch step, buffers included */
    size_t wl = train_whole_batch(whole);
    CHECK(train(BATCH, sb_comm_single(), k1, &len) == SB_OK, "%s", sb_last_error());
    CHECK(wl > 0 && len == wl && !memcmp(k1, whole, wl), "one micro-batch per step differs from the whole-batch step");

    /* K = 4: 1 process (accumulation), 2 and 4 processes: the same bits */
    int micro = BATCH / 4;
    CHECK(train(micro, sb_comm_single(), one, &len) == SB_OK, "%s", sb_last_error());
    for (int size = 1; size <= 4; size *= 2) {
        size_t got = run_processes(micro, size, other);
        CHECK(got == len && !memcmp(other, one, len), "K=4 on %d processes differs from 1 process", size);
    }
    /* the statistics are per micro-batch: K = 2 gives other bits */
    size_t l2 = run_processes(BATCH / 2, 2, k2);
    CHECK(l2 == len && memcmp(k2, one, len), "K=2 gives the bits of K=4");

    /* the buffers moved and the counter counts steps (2 epochs of 5) */
    sb_module *m = make_model();
    sb_named bufs[3];
    size_t nb = 0;
    sb_module_buffers(m, bufs, 3, &nb);
    CHECK(nb == 3, "the model has running_mean, running_var, num_batches_tracked");
    size_t off = len - 4 * 4 * 2 - 8; /* the buffers come last: 4 + 4 floats, one int64 */
    float rm[4];
    int64_t count;
    memcpy(rm, one + off, sizeof rm);
    memcpy(&count, one + len - 8, sizeof count);
    CHECK(count == EPOCHS * 5, "num_batches_tracked %lld after %d steps", (long long)count, EPOCHS * 5);
    CHECK(rm[0] != 0.0f || rm[1] != 0.0f, "running_mean moved");
    sb_module_free(m);

    /* 3 processes cannot share 4 micro-batches */
    sb_module *model = make_model();
    sb_micro_trainer *t = NULL;
    sb_comm three = {0, 3, shm_max_u8, shm_sum_i64, shm_agree, NULL};
    CHECK(sb_micro_trainer_new(&t, model, BATCH, micro, &three) == SB_ERR_ARG && !t &&
              strstr(sb_last_error(), "cannot be shared by 3 processes"), "3 processes for 4 micro-batches: %s",
          sb_last_error());
    sb_module_free(model);
    munmap(sh, sizeof *sh);
    return sb_test_finish();
}
