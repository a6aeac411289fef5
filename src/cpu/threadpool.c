/* The persistent thread pool behind sb_parallel_for (src/cpu/cpu.h).
 *
 * One job at a time: the caller publishes fn/ctx and a count of ranges,
 * wakes the workers, and everyone (the caller included) claims range
 * indices from one atomic counter until none are left. Dynamic claiming
 * balances uneven ranges; it cannot change results, because each range
 * owns its outputs and computes them the same way whoever runs it.
 *
 * Workers are started lazily and restarted when sb_set_num_threads()
 * changes the count. A call made while another thread is using the pool,
 * or from inside a range, runs inline instead of waiting or nesting. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>
#include "core/fpenv.h"
#include "core/internal.h"
#include "cpu/cpu.h"

static struct {
    pthread_mutex_t submit; /* held by the caller whose job is running */
    pthread_mutex_t lock;   /* guards everything below */
    pthread_cond_t wake, done;
    pthread_t threads[SB_MAX_THREADS];
    int nworkers, active;
    unsigned long generation;
    bool shutdown;
    /* the job */
    sb_range_fn fn;
    void *ctx;
    int64_t n, grain, nranges;
    atomic_int_fast64_t next;
} pool = {.submit = PTHREAD_MUTEX_INITIALIZER,
          .lock = PTHREAD_MUTEX_INITIALIZER,
          .wake = PTHREAD_COND_INITIALIZER,
          .done = PTHREAD_COND_INITIALIZER};

static atomic_int wanted_threads = 0; /* 0: not yet read from the environment */
static _Thread_local bool in_region = false;

bool sb_in_parallel_region(void) { return in_region; }

static int default_threads(void) {
    const char *env = getenv("SB_NUM_THREADS");
    if (env && *env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end == '\0' && v >= 1 && v <= SB_MAX_THREADS) return (int)v;
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus < 1 ? 1 : cpus > SB_MAX_THREADS ? SB_MAX_THREADS : (int)cpus;
}

int sb_num_threads(void) {
    int n = atomic_load(&wanted_threads);
    if (n == 0) {
        int expected = 0;
        atomic_compare_exchange_strong(&wanted_threads, &expected, default_threads());
        n = atomic_load(&wanted_threads);
    }
    return n;
}

sb_status sb_set_num_threads(int n) {
    if (n < 1 || n > SB_MAX_THREADS)
        return sb_fail(SB_ERR_ARG, "sb_set_num_threads: n = %d must be in [1, %d]", n,
                       SB_MAX_THREADS);
    atomic_store(&wanted_threads, n);
    return SB_OK;
}

int64_t sb_parallel_grain(int64_t n, int64_t min_grain) {
    int64_t parts = 4 * (int64_t)sb_num_threads();
    int64_t g = (n + parts - 1) / parts;
    if (g < min_grain) g = min_grain;
    return g < 1 ? 1 : g;
}

static void run_ranges(void) {
    for (;;) {
        int64_t r = atomic_fetch_add(&pool.next, 1);
        if (r >= pool.nranges) return;
        int64_t begin = r * pool.grain;
        int64_t end = begin + pool.grain < pool.n ? begin + pool.grain : pool.n;
        pool.fn(pool.ctx, begin, end);
    }
}

/* `arg` carries the generation current when the worker was created: a
 * worker that first reads pool.generation itself may run after the job that
 * follows its creation was published, take that job's generation as already
 * seen, and never join it while the caller waits for it forever. */
static void *worker_main(void *arg) {
    in_region = true;
    unsigned long seen = (unsigned long)(uintptr_t)arg;
    pthread_mutex_lock(&pool.lock);
    for (;;) {
        while (pool.generation == seen && !pool.shutdown) pthread_cond_wait(&pool.wake, &pool.lock);
        if (pool.shutdown) break;
        seen = pool.generation;
        pthread_mutex_unlock(&pool.lock);
        /* A thread inherits its creator's environment, which may be a
         * caller's flush-to-zero or rounding mode. */
        sb_fpenv env = sb_fpenv_enter();
        (void)env; /* a worker keeps the contract's environment */
        run_ranges();
        pthread_mutex_lock(&pool.lock);
        if (--pool.active == 0) pthread_cond_signal(&pool.done);
    }
    pthread_mutex_unlock(&pool.lock);
    return NULL;
}

/* Called with pool.submit held. */
static void stop_workers(void) {
    pthread_mutex_lock(&pool.lock);
    pool.shutdown = true;
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);
    for (int i = 0; i < pool.nworkers; i++) pthread_join(pool.threads[i], NULL);
    pool.nworkers = 0;
    pool.shutdown = false;
}

/* Called with pool.submit held. Starting fewer workers than asked (the
 * system refused a thread) only costs speed. */
static void resize_workers(int want) {
    if (pool.nworkers == want) return;
    stop_workers();
    for (int i = 0; i < want; i++) {
        if (pthread_create(&pool.threads[i], NULL, worker_main,
                           (void *)(uintptr_t)pool.generation) != 0)
            break;
        pool.nworkers++;
    }
}

static void run_inline(int64_t n, int64_t grain, sb_range_fn fn, void *ctx) {
    bool was = in_region;
    in_region = true;
    for (int64_t begin = 0; begin < n; begin += grain)
        fn(ctx, begin, begin + grain < n ? begin + grain : n);
    in_region = was;
}

void sb_parallel_for(int64_t n, int64_t grain, sb_range_fn fn, void *ctx) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    SB_FPENV_GUARD();
    int threads = sb_num_threads();
    if (threads == 1 || n <= grain || in_region || pthread_mutex_trylock(&pool.submit) != 0) {
        run_inline(n, grain, fn, ctx);
        return;
    }
    int64_t nranges = (n + grain - 1) / grain;
    /* Keep the pool at the configured size so that jobs of different widths
     * do not restart threads; idle workers simply find no range to claim. */
    resize_workers(threads - 1);

    pthread_mutex_lock(&pool.lock);
    pool.fn = fn;
    pool.ctx = ctx;
    pool.n = n;
    pool.grain = grain;
    pool.nranges = nranges;
    atomic_store(&pool.next, 0);
    pool.active = pool.nworkers;
    pool.generation++;
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);

    in_region = true;
    run_ranges();
    in_region = false;

    pthread_mutex_lock(&pool.lock);
    while (pool.active > 0) pthread_cond_wait(&pool.done, &pool.lock);
    pthread_mutex_unlock(&pool.lock);
    pthread_mutex_unlock(&pool.submit);
}
