/* Training pieces against hostile input: the loader's batch count for any
 * batch size, checkpoint metadata read back with checked ranges (the seed
 * as a full u64), and the optimizer's step counter at its limit. */
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "harness.h"
#include "samebits.h"
#include "samebits/train.h"
#include "train/train_internal.h"

static char dir[64];

/* A dataset of n 1x2x2 images and labels (owned by the caller). */
static void make_dataset(sb_dataset *ds, int64_t n) {
    int64_t ishape[4] = {n, 1, 2, 2}, lshape[1] = {n};
    sb_tensor_new(&ds->images, SB_F32, 4, ishape);
    sb_tensor_new(&ds->labels, SB_I64, 1, lshape);
    for (int64_t i = 0; i < n * 4; i++) ((float *)ds->images->data)[i] = (float)i;
    for (int64_t i = 0; i < n; i++) ((int64_t *)ds->labels->data)[i] = i % 10;
    ds->count = n;
}

static void test_loader_batch_counts(void) {
    sb_dataset ds = {0};
    make_dataset(&ds, 10);
    /* ceil(10 / B) for small and huge B: (count + B - 1) / B overflowed for
     * B near INT64_MAX and gave 0 batches (nothing trained, exit 0). */
    const int64_t sizes[] = {1, 3, 10, 11, INT64_C(1) << 62, INT64_MAX - 1, INT64_MAX};
    const int64_t want[] = {10, 4, 1, 1, 1, 1, 1};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        sb_loader *l = NULL;
        CHECK_OK(sb_loader_new(&l, &ds, sizes[i], true, 7));
        CHECK(sb_loader_num_batches(l) == want[i], "batch size %lld: %lld batches, want %lld",
              (long long)sizes[i], (long long)sb_loader_num_batches(l), (long long)want[i]);
        sb_arena *a = NULL;
        sb_tensor *x = NULL, *y = NULL;
        CHECK_OK(sb_arena_new(&a, 0));
        int64_t last = want[i] - 1;
        CHECK_OK(sb_loader_batch(l, last, a, &x, &y));
        CHECK(x && x->shape[0] == 10 - last * (sizes[i] < 10 ? sizes[i] : 10), "last batch rows for %lld",
              (long long)sizes[i]);
        CHECK_ERROR(sb_loader_batch(l, want[i], a, &x, &y), SB_ERR_RANGE, "outside");
        sb_arena_free(a);
        sb_loader_free(l);
    }
    sb_loader *l = (sb_loader *)&ds;
    CHECK_ERROR(sb_loader_new(&l, &ds, 0, true, 7), SB_ERR_ARG, "batch_size 0");
    CHECK(l == NULL, "no loader on failure");
    CHECK_ERROR(sb_loader_new(&l, &ds, -5, true, 7), SB_ERR_ARG, "batch_size -5");
    /* A hand-built dataset whose count disagrees with its tensors. */
    ds.count = 11;
    CHECK_ERROR(sb_loader_new(&l, &ds, 2, true, 7), SB_ERR_SHAPE, "count = 11");
    ds.count = 10;
    sb_dataset_free(&ds);
}

typedef struct {
    sb_module *model;
    sb_optimizer *opt;
} lenet;

static void lenet_new(lenet *n, uint64_t seed) {
    sb_adam_config cfg = sb_adam_default_config(0.01);
    sb_model_lenet5(&n->model);
    sb_module_init(n->model, seed);
    sb_optimizer_adam(&n->opt, n->model, &cfg);
}

static void lenet_free(lenet *n) {
    sb_optimizer_free(n->opt);
    sb_module_free(n->model);
}

static void path_in(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", dir, name); }

/* Copies checkpoint src to dst with metadata key set to value (all tensors
 * kept), as a hand-edited or damaged file would be. */
static void rewrite_meta(const char *src, const char *dst, const char *key, const char *value) {
    sb_safetensors *st = NULL;
    if (sb_safetensors_read(src, &st) != SB_OK) { CHECK(0, "reading %s: %s", src, sb_last_error()); return; }
    size_t n = sb_safetensors_count(st), nm = sb_safetensors_meta_count(st);
    sb_named_tensor *list = calloc(n, sizeof *list);
    sb_kv *kv = calloc(nm, sizeof *kv);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) sb_safetensors_at(st, i, &list[i].name, &list[i].tensor);
    for (size_t i = 0; i < nm; i++) {
        sb_safetensors_meta_at(st, i, &kv[k].key, &kv[k].value);
        if (!strcmp(kv[k].key, SB_SAFETENSORS_SHA256_KEY)) continue;
        if (!strcmp(kv[k].key, key)) kv[k].value = value;
        k++;
    }
    CHECK_OK(sb_safetensors_write(dst, list, n, kv, k));
    free(list);
    free(kv);
    sb_safetensors_free(st);
}

static void test_checkpoint_seed_u64(void) {
    char p[256];
    path_in(p, sizeof p, "seed.safetensors");
    lenet a, b;
    lenet_new(&a, 1);
    lenet_new(&b, 2);
    sb_train_state s = {UINT64_MAX, 3, 100, "lenet5"};
    CHECK_OK(sb_checkpoint_save(p, a.model, a.opt, &s));
    sb_train_state got = {0, 0, 0, "lenet5"};
    CHECK_OK(sb_checkpoint_load(p, b.model, b.opt, &got));
    CHECK(got.seed == UINT64_MAX, "seed 2^64-1 read back as %llu", (unsigned long long)got.seed);
    CHECK(got.epoch == 3 && got.batch_size == 100, "epoch and batch size read back");
    s.seed = (UINT64_C(1) << 63);
    CHECK_OK(sb_checkpoint_save(p, a.model, a.opt, &s));
    CHECK_OK(sb_checkpoint_load(p, b.model, b.opt, &got));
    CHECK(got.seed == UINT64_C(1) << 63, "seed 2^63 read back as %llu", (unsigned long long)got.seed);
    /* the micro-batch size is part of the run's identity: kept exactly, the
     * whole batch when saved by the public function */
    int64_t micro = 0;
    CHECK_OK(sb_checkpoint_load_micro(p, b.model, b.opt, &got, &micro));
    CHECK(micro == 100, "public save records the whole batch as micro-batch, got %lld", (long long)micro);
    CHECK_OK(sb_checkpoint_save_micro(p, a.model, a.opt, &s, 25));
    CHECK_OK(sb_checkpoint_load_micro(p, b.model, b.opt, &got, &micro));
    CHECK(micro == 25, "micro-batch 25 read back as %lld", (long long)micro);
    CHECK_ERROR(sb_checkpoint_save_micro(p, a.model, a.opt, &s, 30), SB_ERR_ARG, "micro_batch 30 does not divide");
    lenet_free(&a);
    lenet_free(&b);
}

/* Every counter is checked at load; a refused file changes nothing. */
static void test_checkpoint_bad_meta(void) {
    char good[256], bad[256];
    path_in(good, sizeof good, "good.safetensors");
    path_in(bad, sizeof bad, "bad.safetensors");
    lenet a, b;
    lenet_new(&a, 1);
    lenet_new(&b, 2);
    sb_train_state s = {5, 1, 100, "lenet5"};
    CHECK_OK(sb_checkpoint_save(good, a.model, a.opt, &s));
    static const struct { const char *key, *value; } cases[] = {
        {"optimizer_steps", "9223372036854775807"}, /* overflowed at the next step */
        {"optimizer_steps", "4611686018427387905"},
        {"optimizer_steps", "-1"},
        {"seed", "18446744073709551616"},
        {"seed", "-1"},
        {"seed", "+5"},
        {"seed", ""},
        {"epoch", "1000001"},
        {"epoch", "99999999999999999999"},
        {"epoch", " 1"},
        {"epoch", "1e3"},
        {"batch_size", "0"},
        {"batch_size", "1000000001"},
        {"batch_size", "0x10"},
        {"micro_batch", "0"},
        {"micro_batch", "3"},   /* does not divide batch_size 100 */
        {"micro_batch", "101"},
    };
    unsigned char before[32], after[32];
    sb_module_hash(b.model, before);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        rewrite_meta(good, bad, cases[i].key, cases[i].value);
        sb_train_state got = {7, 7, 7, "lenet5"};
        CHECK_ERROR(sb_checkpoint_load(bad, b.model, b.opt, &got), SB_ERR_FORMAT, cases[i].key);
        CHECK(strstr(sb_last_error(), "bad.safetensors") != NULL, "message names the file: %s", sb_last_error());
        CHECK(got.seed == 7 && got.epoch == 7 && got.batch_size == 7, "state untouched (%s=%s)",
              cases[i].key, cases[i].value);
        CHECK(sb_optimizer_steps(b.opt) == 0, "steps untouched (%s=%s)", cases[i].key, cases[i].value);
    }
    sb_module_hash(b.model, after);
    CHECK(!memcmp(before, after, 32), "model untouched by refused checkpoints");
    /* The largest accepted step count loads; one more step is refused
     * rather than overflowing. */
    char maxsteps[32];
    snprintf(maxsteps, sizeof maxsteps, "%lld", (long long)SB_TRAIN_MAX_STEPS);
    rewrite_meta(good, bad, "optimizer_steps", maxsteps);
    sb_train_state got = {0, 0, 0, "lenet5"};
    CHECK_OK(sb_checkpoint_load(bad, b.model, b.opt, &got));
    CHECK(sb_optimizer_steps(b.opt) == SB_TRAIN_MAX_STEPS, "max steps restored");
    CHECK_ERROR(sb_optimizer_step(b.opt), SB_ERR_RANGE, "step counter is at its limit");
    CHECK(sb_optimizer_steps(b.opt) == SB_TRAIN_MAX_STEPS, "counter unchanged");
    /* The writer refuses what the reader would refuse: nothing is written. */
    char never[256];
    path_in(never, sizeof never, "never.safetensors");
    sb_train_state neg = {1, -1, 100, "lenet5"}, big = {1, 0, SB_TRAIN_MAX_BATCH_SIZE + 1, "lenet5"};
    CHECK_ERROR(sb_checkpoint_save(never, a.model, a.opt, &neg), SB_ERR_ARG, "epoch -1");
    CHECK_ERROR(sb_checkpoint_save(never, a.model, a.opt, &big), SB_ERR_ARG, "batch_size");
    CHECK(access(never, F_OK) != 0, "nothing written for a refused state");
    lenet_free(&a);
    lenet_free(&b);
}

/* Files in dir whose name contains ".tmp.". */
static int count_temp_files(void) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".tmp.")) n++;
    if (d) closedir(d);
    return n;
}

/* Durability: a child process saves the checkpoint over and over and is
 * SIGKILLed at a random moment, many times. After every kill the file at
 * the path must load (the old or a new version, never a torn one); killed
 * saves leave temp files behind, and the next save by a live process
 * removes every one of them. */
static void test_killed_saves(void) {
    char ck[256];
    path_in(ck, sizeof ck, "killed.safetensors");
    lenet a, b;
    lenet_new(&a, 1);
    lenet_new(&b, 2);
    sb_train_state s = {9, 1, 100, "lenet5"};
    CHECK_OK(sb_checkpoint_save(ck, a.model, a.opt, &s));
    int kills = sb_test_quick() ? 20 : 100, damaged = 0, with_temp = 0;
    /* Each child's own save already removes the temps of the children
     * killed before it; the count is checked after the last kill. */
    uint64_t rnd = 0x2545f4914f6cdd1dULL;
    for (int k = 0; k < kills; k++) {
        pid_t child = fork();
        if (child == 0) {
            for (;;) sb_checkpoint_save(ck, a.model, a.opt, &s);
        }
        rnd = rnd * 6364136223846793005ULL + 1442695040888963407ULL;
        struct timespec t = {0, (long)(1000000 + (rnd >> 33) % 20000000)}; /* 1..21 ms */
        nanosleep(&t, NULL);
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        sb_train_state got = {0, 0, 0, "lenet5"};
        if (sb_checkpoint_load(ck, b.model, b.opt, &got) != SB_OK || got.seed != 9) damaged++;
        char temp[300];
        snprintf(temp, sizeof temp, "%s.tmp.%ld", ck, (long)child);
        with_temp += access(temp, F_OK) == 0; /* killed inside a save */
    }
    CHECK(damaged == 0, "%d of %d killed saves damaged the checkpoint", damaged, kills);
    /* Most kills should land inside a save (the child does nothing else);
     * otherwise this test proves little. */
    CHECK(with_temp > 0, "no kill left a temp file (%d kills)", kills);
    CHECK_OK(sb_checkpoint_save(ck, a.model, a.opt, &s));
    CHECK(count_temp_files() == 0, "%d stray temp files after the next save", count_temp_files());
    if (getenv("SB_TEST_VERBOSE"))
        fprintf(stderr, "killed saves: %d kills, %d left temp files, %d damaged\n", kills, with_temp, damaged);
    unlink(ck);
    lenet_free(&a);
    lenet_free(&b);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    strcpy(dir, "/tmp/sb_test_train_XXXXXX");
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
    test_loader_batch_counts();
    test_checkpoint_seed_u64();
    test_checkpoint_bad_meta();
    test_killed_saves();
    const char *names[] = {"seed.safetensors", "good.safetensors", "bad.safetensors"};
    for (size_t i = 0; i < 3; i++) {
        char p[256];
        path_in(p, sizeof p, names[i]);
        unlink(p);
    }
    rmdir(dir);
    return sb_test_finish();
}
