/* Tests of the runtime API (include/samebits/runtime.h) and of the machinery
 * behind the fast kernels: ISA selection (src/cpu/isa.c) and the thread pool
 * sb_parallel_for (src/cpu/threadpool.c): every index exactly once, ranges
 * no longer than the grain, nested and concurrent calls, pool resizing, and
 * the contract's floating-point environment inside every range. */
#include <fenv.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"
#include "core/fpenv.h"
#include "cpu/cpu.h"

/* ---- environment variables, each read once: checked in fresh children ---- */

static int child_isa_env(const char *value, sb_isa_level want) {
    pid_t pid = fork();
    if (pid == 0) {
        setenv("SB_ISA", value, 1);
        _exit(sb_isa() == want ? 0 : 1);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static int child_threads_env(const char *value, int want) {
    pid_t pid = fork();
    if (pid == 0) {
        setenv("SB_NUM_THREADS", value, 1);
        _exit(sb_num_threads() == want ? 0 : 1);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void test_env(void) {
    fflush(stdout);
    fflush(stderr);
    CHECK(child_isa_env("scalar", SB_ISA_SCALAR), "SB_ISA=scalar must select scalar");
    CHECK(child_isa_env(sb_isa_name(sb_isa_best()), sb_isa_best()), "SB_ISA=<best>");
    fprintf(stderr, "(a warning about SB_ISA=avx9 is expected next)\n");
    CHECK(child_isa_env("avx9", SB_ISA_SCALAR), "an unknown SB_ISA falls back to scalar");
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int def = cpus < 1 ? 1 : cpus > SB_MAX_THREADS ? SB_MAX_THREADS : (int)cpus;
    CHECK(child_threads_env("3", 3), "SB_NUM_THREADS=3");
    CHECK(child_threads_env("0", def), "SB_NUM_THREADS=0 is ignored");
    CHECK(child_threads_env("12x", def), "SB_NUM_THREADS=12x is ignored");
}

/* ---- ISA levels ---- */

static void test_isa(void) {
    CHECK(sb_isa_supported(SB_ISA_SCALAR), "scalar is always supported");
    CHECK(sb_isa_supported(sb_isa_best()), "the best level is supported");
    CHECK(!sb_isa_supported(SB_ISA_COUNT) && !sb_isa_supported((sb_isa_level)-1),
          "invalid levels are not supported");
#if defined(__x86_64__)
    CHECK(sb_isa_supported(SB_ISA_SSE2), "x86-64 always has SSE2");
    CHECK(!sb_isa_supported(SB_ISA_NEON), "no NEON on x86-64");
#elif defined(__aarch64__)
    CHECK(sb_isa_supported(SB_ISA_NEON), "aarch64 has NEON");
    CHECK(!sb_isa_supported(SB_ISA_AVX2), "no AVX2 on aarch64");
#endif
    for (int l = 0; l < SB_ISA_COUNT; l++) {
        sb_isa_level got = SB_ISA_COUNT;
        CHECK_OK(sb_isa_from_name(sb_isa_name((sb_isa_level)l), &got));
        CHECK(got == (sb_isa_level)l, "round trip of %s gave %d", sb_isa_name((sb_isa_level)l), got);
        if (sb_isa_supported((sb_isa_level)l)) {
            CHECK_OK(sb_set_isa((sb_isa_level)l));
            CHECK(sb_isa() == (sb_isa_level)l, "sb_set_isa(%s) not in effect", sb_isa_name((sb_isa_level)l));
        } else {
            sb_isa_level before = sb_isa();
            CHECK_ERROR(sb_set_isa((sb_isa_level)l), SB_ERR_ARG, "not supported");
            CHECK(sb_isa() == before, "a refused level changed the level");
        }
    }
    CHECK(strcmp(sb_isa_name(SB_ISA_AVX2), "avx2") == 0, "name of avx2");
    CHECK(strcmp(sb_isa_name(SB_ISA_COUNT), "?") == 0 && strcmp(sb_isa_name((sb_isa_level)-3), "?") == 0,
          "invalid levels are named ?");
    CHECK_ERROR(sb_set_isa(SB_ISA_COUNT), SB_ERR_ARG, "is not an sb_isa_level");
    CHECK_ERROR(sb_set_isa((sb_isa_level)-1), SB_ERR_ARG, "sb_set_isa: level -1");
    sb_isa_level lv = SB_ISA_AVX2;
    CHECK_ERROR(sb_isa_from_name("AVX9", &lv), SB_ERR_ARG, "unknown level \"AVX9\"");
    CHECK(lv == SB_ISA_AVX2, "a refused name changed the output");
    CHECK_ERROR(sb_isa_from_name("", &lv), SB_ERR_ARG, "unknown level");
    CHECK_ERROR(sb_isa_from_name(NULL, &lv), SB_ERR_NULL, "name is NULL");
    CHECK_ERROR(sb_isa_from_name("avx2", NULL), SB_ERR_NULL, "level is NULL");
    CHECK_OK(sb_set_isa(sb_isa_best()));
}

/* ---- threads ---- */

static void test_thread_count(void) {
    int before = sb_num_threads();
    CHECK(before >= 1 && before <= SB_MAX_THREADS, "default %d out of range", before);
    CHECK_ERROR(sb_set_num_threads(0), SB_ERR_ARG, "sb_set_num_threads: n = 0 must be in [1, 256]");
    CHECK_ERROR(sb_set_num_threads(-5), SB_ERR_ARG, "n = -5");
    CHECK_ERROR(sb_set_num_threads(SB_MAX_THREADS + 1), SB_ERR_ARG, "n = 257");
    CHECK(sb_num_threads() == before, "a refused count changed the count");
    CHECK_OK(sb_set_num_threads(1));
    CHECK(sb_num_threads() == 1, "1 thread");
    CHECK_OK(sb_set_num_threads(SB_MAX_THREADS));
    CHECK(sb_num_threads() == SB_MAX_THREADS, "max threads");
    CHECK_OK(sb_set_num_threads(before));
    CHECK_OK(sb_set_num_threads(4));
    for (int64_t n = 0; n < 1000; n += 37)
        for (int64_t mg = 1; mg < 300; mg *= 7) {
            int64_t g = sb_parallel_grain(n, mg);
            CHECK(g >= 1 && g >= mg, "grain(%lld, %lld) = %lld", (long long)n, (long long)mg, (long long)g);
            CHECK(g * 16 >= n, "grain(%lld, %lld) = %lld makes more than 16 ranges", (long long)n,
                  (long long)mg, (long long)g);
        }
    CHECK_OK(sb_set_num_threads(before));
}

typedef struct cover {
    atomic_int *hits;
    int64_t grain;
    atomic_int too_long, empty, outside, env_bad;
} cover;

static void cover_fn(void *ctx, int64_t begin, int64_t end) {
    cover *c = ctx;
    if (end - begin > c->grain) atomic_fetch_add(&c->too_long, 1);
    if (end <= begin) atomic_fetch_add(&c->empty, 1);
    if (!sb_in_parallel_region()) atomic_fetch_add(&c->outside, 1);
    if (!sb_fpenv_is_default()) atomic_fetch_add(&c->env_bad, 1);
    for (int64_t i = begin; i < end; i++) atomic_fetch_add(&c->hits[i], 1);
}

/* Runs one sb_parallel_for and checks every index was visited once. */
static void check_cover(int64_t n, int64_t grain, int threads) {
    atomic_int *hits = calloc((size_t)(n > 0 ? n : 1), sizeof *hits);
    cover c = {.hits = hits, .grain = grain < 1 ? 1 : grain};
    sb_parallel_for(n, grain, cover_fn, &c);
    long wrong = 0;
    for (int64_t i = 0; i < n; i++) wrong += atomic_load(&hits[i]) != 1;
    CHECK(wrong == 0 && c.too_long == 0 && c.empty == 0 && c.outside == 0 && c.env_bad == 0,
          "n=%lld grain=%lld threads=%d: %ld indices not hit exactly once, %d ranges too long, "
          "%d empty, %d outside a region, %d in another fp environment",
          (long long)n, (long long)grain, threads, wrong, (int)c.too_long, (int)c.empty,
          (int)c.outside, (int)c.env_bad);
    free(hits);
}

static void test_cover(void) {
    static const int64_t ns[] = {0, 1, 2, 3, 7, 8, 64, 100, 1000, 1025, 10007};
    static const int64_t grains[] = {0, 1, 2, 3, 7, 64, 5000, 100000};
    static const int threads[] = {1, 2, 3, 4, 7};
    int before = sb_num_threads();
    for (int t = 0; t < 5; t++) {
        CHECK_OK(sb_set_num_threads(threads[t]));
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
            for (size_t g = 0; g < sizeof grains / sizeof grains[0]; g++)
                check_cover(ns[i], grains[g], threads[t]);
    }
    /* Changing the count between calls restarts the workers; a worker that
     * started late once missed its first job and the caller waited forever. */
    int rounds = sb_test_quick() ? 100 : 400;
    for (int r = 0; r < rounds; r++) {
        CHECK_OK(sb_set_num_threads(2 + r % 4));
        check_cover(50 + r % 13, 3, 2 + r % 4);
    }
    CHECK_OK(sb_set_num_threads(before));
}

/* Ranges that themselves call sb_parallel_for run the inner call inline. */
typedef struct nest {
    atomic_int *hits; /* outer x inner */
    int64_t inner;
    atomic_int bad;
} nest;

typedef struct nest_inner {
    nest *outer;
    int64_t row;
} nest_inner;

static void inner_fn(void *ctx, int64_t begin, int64_t end) {
    nest_inner *in = ctx;
    if (!sb_in_parallel_region()) atomic_fetch_add(&in->outer->bad, 1);
    for (int64_t j = begin; j < end; j++)
        atomic_fetch_add(&in->outer->hits[in->row * in->outer->inner + j], 1);
}

static void outer_fn(void *ctx, int64_t begin, int64_t end) {
    nest *o = ctx;
    for (int64_t i = begin; i < end; i++) {
        nest_inner in = {o, i};
        sb_parallel_for(o->inner, 2, inner_fn, &in);
    }
}

static void test_nested(void) {
    int before = sb_num_threads();
    CHECK_OK(sb_set_num_threads(3));
    int64_t outer = 37, inner = 29;
    atomic_int *hits = calloc((size_t)(outer * inner), sizeof *hits);
    nest o = {.hits = hits, .inner = inner};
    sb_parallel_for(outer, 1, outer_fn, &o);
    long wrong = 0;
    for (int64_t i = 0; i < outer * inner; i++) wrong += atomic_load(&hits[i]) != 1;
    CHECK(wrong == 0 && o.bad == 0, "nested: %ld cells not hit once, %d inner ranges outside", wrong,
          (int)o.bad);
    CHECK(!sb_in_parallel_region(), "the caller is outside a region after the call");
    free(hits);
    CHECK_OK(sb_set_num_threads(before));
}

/* Two application threads using the pool at the same time. */
typedef struct sum_job {
    const int64_t *x;
    int64_t *partial; /* one slot per index: written by exactly one range */
} sum_job;

static void square_fn(void *ctx, int64_t begin, int64_t end) {
    sum_job *s = ctx;
    for (int64_t i = begin; i < end; i++) s->partial[i] = s->x[i] * s->x[i];
}

typedef struct client {
    int id, rounds;
    long errors;
} client;

static void *client_main(void *arg) {
    client *cl = arg;
    int64_t n = 3000 + cl->id * 17;
    int64_t *x = malloc((size_t)n * sizeof *x), *sq = malloc((size_t)n * sizeof *sq);
    for (int64_t i = 0; i < n; i++) x[i] = i + cl->id;
    for (int r = 0; r < cl->rounds; r++) {
        memset(sq, 0, (size_t)n * sizeof *sq);
        sum_job s = {x, sq};
        sb_parallel_for(n, 1 + r % 50, square_fn, &s);
        for (int64_t i = 0; i < n; i++) cl->errors += sq[i] != x[i] * x[i];
    }
    free(x);
    free(sq);
    return NULL;
}

static void test_concurrent(void) {
    int before = sb_num_threads();
    CHECK_OK(sb_set_num_threads(3));
    client cl[2] = {{.id = 0, .rounds = sb_test_quick() ? 100 : 400},
                    {.id = 1, .rounds = sb_test_quick() ? 100 : 400}};
    pthread_t th[2];
    int started = 0;
    for (int i = 0; i < 2; i++) started += pthread_create(&th[i], NULL, client_main, &cl[i]) == 0;
    CHECK(started == 2, "could not start the client threads");
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    CHECK(cl[0].errors == 0 && cl[1].errors == 0, "concurrent callers got %ld and %ld wrong values",
          cl[0].errors, cl[1].errors);
    CHECK_OK(sb_set_num_threads(before));
}

/* A caller in another rounding mode: every range runs in the contract's
 * environment, and the caller's mode is back after the call. */
static void test_fpenv(void) {
    int before = sb_num_threads();
    CHECK_OK(sb_set_num_threads(4));
    if (fesetround(FE_UPWARD) == 0) {
        check_cover(1000, 7, 4);
        CHECK(fegetround() == FE_UPWARD, "sb_parallel_for did not restore the caller's rounding mode");
        fesetround(FE_TONEAREST);
    }
    CHECK_OK(sb_set_num_threads(before));
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_env();
    test_isa();
    test_thread_count();
    test_cover();
    test_nested();
    test_concurrent();
    test_fpenv();
    return sb_test_finish();
}
