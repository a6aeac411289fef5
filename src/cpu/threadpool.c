/* The persistent thread pool behind sb_parallel_for (src/cpu/cpu.h).
 *
 * One job at a time: the caller publishes fn/ctx and a count of ranges,
 * wakes the workers, and everyone (the caller included) claims range
 * indices from one atomic counter until none are left. Dynamic claiming
 * balances uneven ranges; it cannot change results, because each range
 * owns its outputs and computes them the same way whoever runs it.
 *
 * Joining is optional. A worker joins the current job through the job's
 * ticket; when the caller has run out of ranges it closes the ticket and
 * waits only for the workers that joined. A worker that arrives after the
 * close leaves the job alone. So the caller never waits for a worker that
 * is still waking up: jobs are often shorter than a wake-up.
 *
 * Jobs also come back to back (one per op), microseconds apart, so a thread
 * about to wait polls for a while before it sleeps (spin_ns; nobody polls
 * when the pool has more threads than there are CPUs, where polling would
 * steal time from the threads that have work).
 *
 * Workers are started lazily and restarted when sb_set_num_threads()
 * changes the count. A call made while another thread is using the pool,
 * or from inside a range, runs inline instead of waiting or nesting.
 *
 * Every range of a job runs under the kernel context of the thread that
 * submitted it (cpu/kernels.h), pinned on each thread for the job: a
 * concurrent sb_set_isa() changes the next job, never half of this one. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "core/fpenv.h"
#include "core/internal.h"
#include "cpu/cpu.h"
#include "cpu/kernels.h"

/* The ticket: job number in bits 16..31, "closed" in bit 15, the number of
 * workers that joined in bits 0..14. */
#define TICKET_JOB(t) ((t) >> 16)
#define TICKET_CLOSED 0x8000u
#define TICKET_COUNT(t) ((t) & 0x7fffu)

static struct {
    pthread_mutex_t submit; /* held by the caller whose job is running */
    pthread_mutex_t lock;   /* pairs with the condition variables */
    pthread_cond_t wake, done;
    pthread_t threads[SB_MAX_THREADS];
    int nworkers;
    /* Atomic so that waiting threads can poll them; a change a sleeper
     * waits for is also made under `lock`, so it cannot be missed. */
    atomic_uint ticket;
    atomic_int left; /* joined workers that have finished the job */
    atomic_bool shutdown;
    /* the job */
    sb_range_fn fn;
    void *ctx;
    const sb_cpu_kernels *kernels;
    int64_t n, grain, nranges;
    atomic_int next; /* nranges is kept below INT32_MAX / 2 */
} pool = {.submit = PTHREAD_MUTEX_INITIALIZER,
          .lock = PTHREAD_MUTEX_INITIALIZER,
          .wake = PTHREAD_COND_INITIALIZER,
          .done = PTHREAD_COND_INITIALIZER};

#define SPIN_NS 300000
static atomic_long spin_ns = 0;

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

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

/* A worker's wait for a job numbered other than `seen` (or shutdown). */
static bool job_arrived(unsigned seen) {
    return TICKET_JOB(atomic_load(&pool.ticket)) != seen || atomic_load(&pool.shutdown);
}

static void wait_for_job(unsigned seen) {
    int64_t deadline = now_ns() + atomic_load(&spin_ns);
    for (int i = 0; !job_arrived(seen); i++) {
        if ((i & 63) == 63 && now_ns() > deadline) {
            pthread_mutex_lock(&pool.lock);
            while (!job_arrived(seen)) pthread_cond_wait(&pool.wake, &pool.lock);
            pthread_mutex_unlock(&pool.lock);
            return;
        }
        cpu_relax();
    }
}

/* The caller's wait for the `joined` workers of its job to finish. */
static void wait_for_workers(int joined) {
    int64_t deadline = now_ns() + atomic_load(&spin_ns);
    for (int i = 0; atomic_load(&pool.left) < joined; i++) {
        if ((i & 63) == 63 && now_ns() > deadline) {
            pthread_mutex_lock(&pool.lock);
            while (atomic_load(&pool.left) < joined) pthread_cond_wait(&pool.done, &pool.lock);
            pthread_mutex_unlock(&pool.lock);
            return;
        }
        cpu_relax();
    }
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

/* `arg` carries the job number current when the worker was created, so it
 * waits for the next one. */
static void *worker_main(void *arg) {
    in_region = true;
    unsigned seen = (unsigned)(uintptr_t)arg;
    for (;;) {
        wait_for_job(seen);
        if (atomic_load(&pool.shutdown)) break;
        unsigned t = atomic_load(&pool.ticket);
        seen = TICKET_JOB(t);
        /* Join while the ticket is open and still this job's. */
        bool joined = false;
        while (!joined && !(t & TICKET_CLOSED) && TICKET_JOB(t) == seen)
            joined = atomic_compare_exchange_weak(&pool.ticket, &t, t + 1);
        if (!joined) continue;
        /* A thread inherits its creator's environment, which may be a
         * caller's flush-to-zero or rounding mode. */
        sb_fpenv env = sb_fpenv_enter();
        (void)env; /* a worker keeps the contract's environment */
        const sb_cpu_kernels *was = sb_kernels_pin(pool.kernels);
        run_ranges();
        sb_kernels_pin(was);
        atomic_fetch_add(&pool.left, 1);
        pthread_mutex_lock(&pool.lock);
        pthread_cond_signal(&pool.done);
        pthread_mutex_unlock(&pool.lock);
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
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    atomic_store(&spin_ns, want + 1 <= cpus ? SPIN_NS : 0);
    unsigned job = TICKET_JOB(atomic_load(&pool.ticket));
    for (int i = 0; i < want; i++) {
        if (pthread_create(&pool.threads[i], NULL, worker_main, (void *)(uintptr_t)job) != 0)
            break;
        pool.nworkers++;
    }
}

static void run_inline(int64_t n, int64_t grain, sb_range_fn fn, void *ctx,
                       const sb_cpu_kernels *kernels) {
    bool was = in_region;
    in_region = true;
    const sb_cpu_kernels *was_kernels = sb_kernels_pin(kernels);
    for (int64_t begin = 0; begin < n; begin += grain)
        fn(ctx, begin, begin + grain < n ? begin + grain : n);
    sb_kernels_pin(was_kernels);
    in_region = was;
}

void sb_parallel_for(int64_t n, int64_t grain, sb_range_fn fn, void *ctx) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    SB_FPENV_GUARD();
    const sb_cpu_kernels *kernels = sb_kernels();
    int threads = sb_num_threads();
    int64_t nranges = (n + grain - 1) / grain;
    if (threads == 1 || nranges <= 1 || nranges > INT32_MAX / 2 || in_region ||
        pthread_mutex_trylock(&pool.submit) != 0) {
        run_inline(n, grain, fn, ctx, kernels);
        return;
    }
    /* Keep the pool at the configured size so that jobs of different widths
     * do not restart threads; idle workers simply find no range to claim. */
    resize_workers(threads - 1);

    /* The job's fields are written before the ticket opens it (a
     * sequentially consistent store): a worker that joins sees them. */
    pthread_mutex_lock(&pool.lock);
    pool.fn = fn;
    pool.ctx = ctx;
    pool.kernels = kernels;
    pool.n = n;
    pool.grain = grain;
    pool.nranges = nranges;
    atomic_store(&pool.next, 0);
    atomic_store(&pool.left, 0);
    unsigned job = (TICKET_JOB(atomic_load(&pool.ticket)) + 1) & 0xffffu;
    atomic_store(&pool.ticket, job << 16);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);

    in_region = true;
    const sb_cpu_kernels *was_kernels = sb_kernels_pin(kernels);
    run_ranges();
    sb_kernels_pin(was_kernels);
    in_region = false;

    /* No range is left to claim: close the job and wait for those inside. */
    unsigned t = atomic_fetch_or(&pool.ticket, TICKET_CLOSED);
    wait_for_workers((int)TICKET_COUNT(t));
    pthread_mutex_unlock(&pool.submit);
}
