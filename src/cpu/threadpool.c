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
    pthread_mutex_t lock;   /* pairs with the condition variables */
    pthread_cond_t wake, done;
    pthread_t threads[SB_MAX_THREADS];
    int nworkers;
    /* Atomic so that waiting threads can poll them before they sleep; a
     * change is also made under `lock`, so a sleeper cannot miss it. */
    atomic_int active;
    atomic_ulong generation;
    atomic_bool shutdown;
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

/* Jobs come back to back (one per op), microseconds apart, and waking a
 * sleeping thread costs tens of microseconds: a thread about to wait first
 * polls for this many rounds (some tens of microseconds) before sleeping. */
#define SPIN_ROUNDS 4000

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
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
    for (;;) {
        for (int i = 0; i < SPIN_ROUNDS && atomic_load(&pool.generation) == seen &&
                        !atomic_load(&pool.shutdown);
             i++)
            cpu_relax();
        if (atomic_load(&pool.generation) == seen) {
            pthread_mutex_lock(&pool.lock);
            while (atomic_load(&pool.generation) == seen && !atomic_load(&pool.shutdown))
                pthread_cond_wait(&pool.wake, &pool.lock);
            pthread_mutex_unlock(&pool.lock);
        }
        if (atomic_load(&pool.shutdown)) break;
        /* Every worker takes part in every job (the caller waits for all of
         * them before publishing the next), so this is seen + 1. */
        seen = atomic_load(&pool.generation);
        /* A thread inherits its creator's environment, which may be a
         * caller's flush-to-zero or rounding mode. */
        sb_fpenv env = sb_fpenv_enter();
        (void)env; /* a worker keeps the contract's environment */
        run_ranges();
        if (atomic_fetch_sub(&pool.active, 1) == 1) {
            pthread_mutex_lock(&pool.lock);
            pthread_cond_signal(&pool.done);
            pthread_mutex_unlock(&pool.lock);
        }
    }
    return NULL;
}

/* Called with pool.submit held. */
static void stop_workers(void) {
    pthread_mutex_lock(&pool.lock);
    atomic_store(&pool.shutdown, true);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);
    for (int i = 0; i < pool.nworkers; i++) pthread_join(pool.threads[i], NULL);
    pool.nworkers = 0;
    atomic_store(&pool.shutdown, false);
}

/* Called with pool.submit held. Starting fewer workers than asked (the
 * system refused a thread) only costs speed. */
static void resize_workers(int want) {
    if (pool.nworkers == want) return;
    stop_workers();
    for (int i = 0; i < want; i++) {
        if (pthread_create(&pool.threads[i], NULL, worker_main,
                           (void *)(uintptr_t)atomic_load(&pool.generation)) != 0)
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

    /* The job's fields are written before the generation moves (a
     * sequentially consistent store): a worker that sees the new generation
     * sees the job. */
    pthread_mutex_lock(&pool.lock);
    pool.fn = fn;
    pool.ctx = ctx;
    pool.n = n;
    pool.grain = grain;
    pool.nranges = nranges;
    atomic_store(&pool.next, 0);
    atomic_store(&pool.active, pool.nworkers);
    atomic_fetch_add(&pool.generation, 1);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);

    in_region = true;
    run_ranges();
    in_region = false;

    for (int i = 0; i < SPIN_ROUNDS && atomic_load(&pool.active) > 0; i++) cpu_relax();
    if (atomic_load(&pool.active) > 0) {
        pthread_mutex_lock(&pool.lock);
        while (atomic_load(&pool.active) > 0) pthread_cond_wait(&pool.done, &pool.lock);
        pthread_mutex_unlock(&pool.lock);
    }
    pthread_mutex_unlock(&pool.submit);
}
