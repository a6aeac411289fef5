/* tools/verify_math.c - exhaustive proof that samebits' binary32 math
 * functions are correctly rounded: every one of the 2^32 inputs of each
 * function is compared bit for bit with MPFR's correctly rounded result.
 *
 *   verify_math [--shard I/N] [--threads T] [--magnitudes LO:HI]
 *               [expf expm1f logf log1pf tanhf erff exp2f log2f sinf cosf]
 *
 * No function names means all of them.  --shard I/N checks the I-th of N
 * interleaved slices of the input space (0 <= I < N), so the proof can be
 * split across machines; the union of all shards is the full proof.
 * --magnitudes LO:HI (hexadecimal bit patterns) checks only the inputs of
 * either sign whose |x| bits lie in [LO, HI): the range a change touched,
 * when the code for every other input is unchanged and already proven.
 *
 * Calling MPFR 2^32 times per function would take days, so a filter decides
 * most inputs: glibc's binary64 function (error < 2 ulp = 2^-51 relative, used
 * here and only here as an oracle) gives y; if y*(1 +- 2^-40) both round to
 * the same float F, the true result rounds to F too (rounding is monotone),
 * and sb's result must be F bit for bit.  Every other input - near a rounding
 * boundary, or where sb disagrees with F - goes to MPFR (precision 24,
 * emin/emax of binary32, mpfr_subnormalize, RNDN), whose answer is final.
 * NaN results are checked for the exact bits the contract fixes (a NaN
 * input is returned quieted; invalid operations give 0x7fc00000).
 *
 * Per function it prints inputs checked, MPFR consultations, misrounded
 * inputs (the first few listed) and seconds, plus the inputs whose result is
 * closest to a rounding boundary (the hard cases, used by tests/test_math.c).
 * Exit status 1 if anything is misrounded.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gmp.h>
#include <mpfr.h>

#include "tool_common.h"
#include "samebits/math.h"

typedef struct {
    const char *name;
    float (*sb)(float);
    double (*ref)(double);
    int (*mp)(mpfr_ptr, mpfr_srcptr, mpfr_rnd_t);
} fn_info;

static const fn_info fns[] = {
    {"expf", sb_expf, exp, mpfr_exp},       {"expm1f", sb_expm1f, expm1, mpfr_expm1},
    {"logf", sb_logf, log, mpfr_log},       {"log1pf", sb_log1pf, log1p, mpfr_log1p},
    {"tanhf", sb_tanhf, tanh, mpfr_tanh},   {"erff", sb_erff, erf, mpfr_erf},
    {"exp2f", sb_exp2f, exp2, mpfr_exp2},   {"log2f", sb_log2f, log2, mpfr_log2},
    {"sinf", sb_sinf, sin, mpfr_sin},       {"cosf", sb_cosf, cos, mpfr_cos},
};
#define NFNS (int)(sizeof fns / sizeof fns[0])

#define CHUNK_BITS 20
#define NCHUNKS (1u << (32 - CHUNK_BITS))
#define MAX_BAD 8
#define NHARD 12

typedef struct {
    uint32_t x;
    double dist; /* distance of f(x) to the nearest rounding boundary, relative */
} hard_case;

typedef struct {
    uint32_t x, got, want;
} bad_case;

/* Shared state of one function's run. */
typedef struct {
    const fn_info *fn;
    unsigned shard, nshards;
    uint32_t mag_lo, mag_hi; /* |x| bits checked: [mag_lo, mag_hi) */
    atomic_uint next_chunk;
    atomic_uint done_chunks;
    unsigned my_chunks;
    pthread_mutex_t lock;
    uint64_t checked, mpfr_calls, bad;
    bad_case bads[MAX_BAD];
    hard_case hard[NHARD];
    int nhard;
    double t0;
} job;


/* The correctly rounded binary32 result according to MPFR. */
static float mpfr_ref(const fn_info *fn, float x, mpfr_t mx, mpfr_t my) {
    mpfr_set_flt(mx, x, MPFR_RNDN); /* exact */
    int t = fn->mp(my, mx, MPFR_RNDN);
    t = mpfr_check_range(my, t, MPFR_RNDN);
    mpfr_subnormalize(my, t, MPFR_RNDN);
    return mpfr_get_flt(my, MPFR_RNDN);
}

/* Relative distance of y to the nearest midpoint between binary32 values. */
static double boundary_dist(double y) {
    float f = (float)y;
    if (isinf(f) || y == 0) return INFINITY;
    double up = (double)nextafterf(f, INFINITY), dn = (double)nextafterf(f, -INFINITY);
    double best = INFINITY;
    if (!isinf(up)) best = fabs(y - ((double)f + up) / 2);
    if (!isinf(dn) && fabs(y - ((double)f + dn) / 2) < best) best = fabs(y - ((double)f + dn) / 2);
    return best / fabs(y);
}

typedef struct {
    hard_case hard[NHARD];
    int nhard;
} hard_list;

static void hard_insert(hard_case *h, int *n, hard_case c) {
    if (*n == NHARD && c.dist >= h[NHARD - 1].dist) return;
    int i = *n < NHARD ? (*n)++ : NHARD - 1;
    while (i > 0 && h[i - 1].dist > c.dist) {
        h[i] = h[i - 1];
        i--;
    }
    h[i] = c;
}

/* Whether chunk c holds an input with |x| bits in [mag_lo, mag_hi) (a chunk
 * never straddles the sign bit). */
static int chunk_in_range(const job *jb, unsigned c) {
    uint32_t m = ((uint32_t)c << CHUNK_BITS) & 0x7fffffffu;
    return m < jb->mag_hi && m + (1u << CHUNK_BITS) > jb->mag_lo;
}

static void *worker(void *arg) {
    job *jb = arg;
    const fn_info *fn = jb->fn;
    mpfr_set_emin(-148); /* binary32: 2^-149 = 0.5 * 2^-148 */
    mpfr_set_emax(128);
    mpfr_t mx, my;
    mpfr_init2(mx, 24);
    mpfr_init2(my, 24);
    uint64_t checked = 0, calls = 0;
    hard_list hl = {.nhard = 0};
    for (;;) {
        unsigned c = atomic_fetch_add(&jb->next_chunk, 1);
        if (c >= NCHUNKS) break;
        if (c % jb->nshards != jb->shard || !chunk_in_range(jb, c)) continue;
        uint32_t base = (uint32_t)c << CHUNK_BITS;
        for (uint32_t k = 0; k < (1u << CHUNK_BITS); k++) {
            uint32_t u = base + k;
            if ((u & 0x7fffffffu) < jb->mag_lo || (u & 0x7fffffffu) >= jb->mag_hi) continue;
            float x = u2f(u);
            float got = fn->sb(x);
            uint32_t gb = f2u(got), want;
            checked++;
            if (isnan(x)) {
                want = u | 0x00400000u;
            } else {
                double y = fn->ref((double)x);
                int decided = 0;
                if (isnan(y)) {
                    want = 0x7fc00000u;
                    decided = 1;
                } else if (isinf(y) || y == 0) {
                    want = f2u((float)y); /* exact special values: +-inf, +-0 */
                    decided = 1;
                } else {
                    double d = y * 0x1p-40;
                    uint32_t lo = f2u((float)(y - d)), hi = f2u((float)(y + d));
                    if (lo == hi && lo == gb) {
                        want = lo;
                        decided = 1;
                    }
                }
                if (!decided) {
                    calls++;
                    want = f2u(mpfr_ref(fn, x, mx, my));
                    hard_case hc = {u, boundary_dist(y)};
                    hard_insert(hl.hard, &hl.nhard, hc);
                }
            }
            if (gb != want) {
                pthread_mutex_lock(&jb->lock);
                if (jb->bad < MAX_BAD) {
                    bad_case b = {u, gb, want};
                    jb->bads[jb->bad] = b;
                }
                jb->bad++;
                pthread_mutex_unlock(&jb->lock);
            }
        }
        unsigned done = atomic_fetch_add(&jb->done_chunks, 1) + 1;
        if (done % 256 == 0 || done == jb->my_chunks)
            fprintf(stderr, "  %s: %u/%u chunks, %.0f s\n", fn->name, done, jb->my_chunks,
                    now() - jb->t0);
    }
    pthread_mutex_lock(&jb->lock);
    jb->checked += checked;
    jb->mpfr_calls += calls;
    for (int i = 0; i < hl.nhard; i++) hard_insert(jb->hard, &jb->nhard, hl.hard[i]);
    pthread_mutex_unlock(&jb->lock);
    mpfr_clear(mx);
    mpfr_clear(my);
    mpfr_free_cache();
    return NULL;
}

static int run_fn(const fn_info *fn, unsigned shard, unsigned nshards, int nthreads,
                  uint32_t mag_lo, uint32_t mag_hi) {
    job jb;
    memset(&jb, 0, sizeof jb);
    jb.fn = fn;
    jb.shard = shard;
    jb.nshards = nshards;
    jb.mag_lo = mag_lo;
    jb.mag_hi = mag_hi;
    atomic_init(&jb.next_chunk, 0);
    atomic_init(&jb.done_chunks, 0);
    for (unsigned c = 0; c < NCHUNKS; c++)
        jb.my_chunks += (c % nshards == shard) && chunk_in_range(&jb, c);
    pthread_mutex_init(&jb.lock, NULL);
    jb.t0 = now();
    pthread_t th[64];
    for (int i = 0; i < nthreads; i++) pthread_create(&th[i], NULL, worker, &jb);
    for (int i = 0; i < nthreads; i++) pthread_join(th[i], NULL);
    double secs = now() - jb.t0;
    printf("%s: inputs %llu, mpfr calls %llu, misrounded %llu, seconds %.1f\n", fn->name,
           (unsigned long long)jb.checked, (unsigned long long)jb.mpfr_calls,
           (unsigned long long)jb.bad, secs);
    for (uint64_t i = 0; i < jb.bad && i < MAX_BAD; i++)
        printf("  MISROUNDED %s(%a) [0x%08x]: got %a [0x%08x], want %a [0x%08x]\n", fn->name,
               (double)u2f(jb.bads[i].x), jb.bads[i].x, (double)u2f(jb.bads[i].got),
               jb.bads[i].got, (double)u2f(jb.bads[i].want), jb.bads[i].want);
    for (int i = 0; i < jb.nhard; i++)
        printf("  hard %s(0x%08x = %a): %.2e from a rounding boundary (relative)\n", fn->name,
               jb.hard[i].x, (double)u2f(jb.hard[i].x), jb.hard[i].dist);
    fflush(stdout);
    pthread_mutex_destroy(&jb.lock);
    return jb.bad != 0;
}

int main(int argc, char **argv) {
    unsigned shard = 0, nshards = 1;
    int nthreads = 2;
    uint32_t mag_lo = 0, mag_hi = 0x80000000u;
    int want[NFNS] = {0}, any = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--shard") && i + 1 < argc) {
            if (sscanf(argv[++i], "%u/%u", &shard, &nshards) != 2 || nshards == 0 ||
                shard >= nshards || nshards > NCHUNKS) {
                fprintf(stderr, "verify_math: bad --shard '%s' (want I/N, 0 <= I < N)\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--magnitudes") && i + 1 < argc) {
            if (sscanf(argv[++i], "%x:%x", &mag_lo, &mag_hi) != 2 || mag_lo >= mag_hi ||
                mag_hi > 0x80000000u) {
                fprintf(stderr, "verify_math: bad --magnitudes '%s' (want LO:HI in hex, "
                                "LO < HI <= 80000000)\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            nthreads = atoi(argv[++i]);
            if (nthreads < 1 || nthreads > 64) {
                fprintf(stderr, "verify_math: --threads must be 1..64\n");
                return 2;
            }
        } else {
            int found = 0;
            for (int f = 0; f < NFNS; f++)
                if (!strcmp(argv[i], fns[f].name)) want[f] = found = any = 1;
            if (!found) {
                fprintf(stderr, "verify_math: unknown argument '%s'\n", argv[i]);
                return 2;
            }
        }
    }
    printf("verify_math: shard %u/%u, %d threads, |x| bits [0x%08x, 0x%08x), MPFR %s\n", shard,
           nshards, nthreads, mag_lo, mag_hi, mpfr_get_version());
    int fail = 0;
    for (int f = 0; f < NFNS; f++)
        if (!any || want[f]) fail |= run_fn(&fns[f], shard, nshards, nthreads, mag_lo, mag_hi);
    printf("verify_math: %s\n", fail ? "MISROUNDED INPUTS FOUND" : "all checked inputs correctly rounded");
    return fail;
}
