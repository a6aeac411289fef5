/* tests/test_checkpoint_durability.c - the saving and checking half of the
 * checkpoint durability test (tests/check_durability.sh kills it).
 *
 *   test_checkpoint_durability                 self-check: states 1..3 saved
 *                                              and verified in turn
 *   test_checkpoint_durability --save-loop P   saves states 1, 2, 3, ... to P
 *                                              until killed
 *   test_checkpoint_durability --verify P      exit 0 if P loads and equals
 *                                              the state it names, else 1
 *
 * State k is a LeNet-5 initialised with seed k after one SGD-with-momentum
 * step from gradients of k/1024, saved with epoch = k: a checkpoint "equals
 * one of the saved states" when it loads and matches, bit for bit, the state
 * rebuilt from the k it records. */
#include <unistd.h>
#include "harness.h"
#include "samebits/train.h"

#define SB_TRY_TEST(expr)                                                      \
    do {                                                                       \
        sb_status s_ = (expr);                                                 \
        if (s_ != SB_OK) return s_;                                            \
    } while (0)

/* Model and optimizer of state k (k = 0: a blank pair to load into). */
static sb_status make_state(int64_t k, sb_module **model, sb_optimizer **opt, sb_train_state *st) {
    sb_sgd_config cfg = sb_sgd_default_config(0.01);
    cfg.momentum = 0.9;
    SB_TRY_TEST(sb_model_lenet5(model));
    SB_TRY_TEST(sb_module_init(*model, (uint64_t)k));
    SB_TRY_TEST(sb_optimizer_sgd(opt, *model, &cfg));
    *st = (sb_train_state){.seed = (uint64_t)k, .epoch = k, .batch_size = 64, .model = "lenet5"};
    if (k == 0) return SB_OK;
    sb_named p[16];
    size_t n = 0;
    SB_TRY_TEST(sb_module_parameters(*model, p, 16, &n));
    for (size_t i = 0; i < n && i < 16; i++) SB_TRY_TEST(sb_tensor_fill(p[i].grad, (float)k / 1024.0f));
    return sb_optimizer_step(*opt);
}

/* SHA-256 over the model's parameters and the optimizer's state. */
static sb_status digest_of(sb_module *model, sb_optimizer *opt, unsigned char d[32]) {
    unsigned char dm[32], dopt[32];
    SB_TRY_TEST(sb_module_hash(model, dm));
    sb_named s[32];
    size_t n = 0;
    SB_TRY_TEST(sb_optimizer_state(opt, s, 32, &n));
    const sb_tensor *t[32];
    for (size_t i = 0; i < n && i < 32; i++) t[i] = s[i].value;
    SB_TRY_TEST(sb_hash_tensors(t, n < 32 ? n : 32, dopt));
    unsigned char both[72];
    memcpy(both, dm, 32);
    memcpy(both + 32, dopt, 32);
    int64_t steps = sb_optimizer_steps(opt);
    memcpy(both + 64, &steps, 8);
    sb_sha256_bytes(both, sizeof both, d);
    return SB_OK;
}

/* 0: path loads and equals the state it records; 1 otherwise (why on stderr). */
static int verify(const char *path) {
    sb_module *m = NULL, *em = NULL;
    sb_optimizer *o = NULL, *eo = NULL;
    sb_train_state st, est;
    int rc = 1;
    unsigned char got[32], want[32];
    if (make_state(0, &m, &o, &st) != SB_OK) goto out;
    if (sb_checkpoint_load(path, m, o, &st) != SB_OK) {
        fprintf(stderr, "%s: does not load: %s\n", path, sb_last_error());
        goto out;
    }
    if (st.epoch < 1 || make_state(st.epoch, &em, &eo, &est) != SB_OK) {
        fprintf(stderr, "%s: records state %lld, which was never saved\n", path, (long long)st.epoch);
        goto out;
    }
    if (digest_of(m, o, got) != SB_OK || digest_of(em, eo, want) != SB_OK) goto out;
    if (memcmp(got, want, 32) != 0 || st.seed != est.seed) {
        fprintf(stderr, "%s: loads, but differs from state %lld\n", path, (long long)st.epoch);
        goto out;
    }
    rc = 0;
out:
    if (rc && !*sb_last_error()) fprintf(stderr, "%s: %s\n", path, sb_last_error());
    sb_optimizer_free(o);
    sb_optimizer_free(eo);
    sb_module_free(m);
    sb_module_free(em);
    return rc;
}

static int save_loop(const char *path) {
    for (int64_t k = 1;; k++) {
        sb_module *m = NULL;
        sb_optimizer *o = NULL;
        sb_train_state st;
        if (make_state(k, &m, &o, &st) != SB_OK || sb_checkpoint_save(path, m, o, &st) != SB_OK) {
            fprintf(stderr, "save %lld: %s\n", (long long)k, sb_last_error());
            return 1;
        }
        sb_optimizer_free(o);
        sb_module_free(m);
    }
}

int main(int argc, char **argv) {
    SB_TEST_MAIN_NAME(argv[0]);
    if (argc == 3 && !strcmp(argv[1], "--save-loop")) return save_loop(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "--verify")) return verify(argv[2]);
    char path[] = "/tmp/sb_durability_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    if (fd >= 0) close(fd);
    for (int64_t k = 1; k <= 3; k++) {
        sb_module *m = NULL;
        sb_optimizer *o = NULL;
        sb_train_state st;
        CHECK_OK(make_state(k, &m, &o, &st));
        CHECK_OK(sb_checkpoint_save(path, m, o, &st));
        CHECK(verify(path) == 0, "state %lld saved and verified", (long long)k);
        sb_optimizer_free(o);
        sb_module_free(m);
    }
    /* The check must be able to fail: a flipped byte is not a saved state. */
    FILE *f = fopen(path, "r+b");
    CHECK(f && fseek(f, -64, SEEK_END) == 0 && fputc(0x5a ^ 0xff, f) != EOF, "corrupting the copy");
    if (f) fclose(f);
    fprintf(stderr, "(expected) ");
    CHECK(verify(path) == 1, "a corrupted checkpoint is reported damaged");
    remove(path);
    return sb_test_finish();
}
