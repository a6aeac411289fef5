/* SGEMM throughput of samebits (sb_sgemm) next to OpenBLAS (cblas_sgemm)
 * and BLIS (bli_sgemm) on the same row-major inputs, at 1 and 2 threads;
 * best of several runs; the ratio is samebits against the better of the
 * two. Sizes are m x k x n: op(A) is m x k, op(B) is k x n: squares, the
 * skinny products of LeNet's layers, and the 64-row products of ResNet's
 * convolutions at 56x56 and of its 7x7 stem. For the smaller sizes the
 * samebits result is also compared bit for bit with sb_ref_sgemm.
 *
 * Rows marked T take that operand transposed (row-major storage of op(X)^T):
 * linear's forward x . W^T ('N','T'), its weight gradient dY^T . X ('T','N',
 * k = the batch's rows), and an LSTM step's h . W_hh^T both ways.
 *
 * BLIS (Debian libblis-pthread-dev) is opened with dlopen, RTLD_LOCAL: it
 * exports a CBLAS too, whose cblas_sgemm must not stand in for OpenBLAS's.
 * Without it the BLIS column says so. */
#include <cblas.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "samebits.h"
#include "ref/ref_linalg.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float rand_float(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (float)((int64_t)(rng >> 40) - (1 << 23)) / (float)(1 << 23);
}

/* BLIS's typed API (blis.h): the two calls used, with dim_t and inc_t as
 * int64_t (BLIS's default, and Debian's: its "32bit" packages are about
 * the BLAS interface's integers); open_blis checks the size. */
typedef enum { BLIS_NO_TRANSPOSE = 0 } blis_trans;
typedef void (*bli_sgemm_fn)(blis_trans, blis_trans, int64_t, int64_t, int64_t, const float *,
                             const float *, int64_t, int64_t, const float *, int64_t, int64_t,
                             const float *, float *, int64_t, int64_t);
typedef void (*bli_threads_fn)(int64_t);
static bli_sgemm_fn blis_sgemm;
static bli_threads_fn blis_threads;

static void open_blis(void) {
    const char *names[] = {"libblis.so.4", "libblis.so"};
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !blis_sgemm; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!h) continue;
        int64_t (*int_bits)(void) = (int64_t(*)(void))dlsym(h, "bli_info_get_int_type_size");
        blis_sgemm = (bli_sgemm_fn)dlsym(h, "bli_sgemm");
        blis_threads = (bli_threads_fn)dlsym(h, "bli_thread_set_num_threads");
        /* the declarations above hold for 64-bit dim_t/inc_t only */
        if (!blis_sgemm || !blis_threads || !int_bits || int_bits() != 64) blis_sgemm = NULL;
    }
}

/* One product: op(A) is m x k, op(B) is k x n; ta / tb: stored transposed. */
typedef struct product {
    bool ta, tb;
    int64_t m, k, n;
} product;

static int64_t lda_of(const product *p) { return p->ta ? p->m : p->k; }
static int64_t ldb_of(const product *p) { return p->tb ? p->k : p->n; }

/* Best seconds of `reps` runs (at least ~0.3 s in all). */
static double best_time(int which, const product *p, const float *a, const float *b, float *c) {
    /* Both libraries' workers poll for a while after a call before they
     * sleep (OpenBLAS's for milliseconds); let the other library's go idle
     * first so that neither is timed against the other's spinning threads. */
    struct timespec idle = {0, 200 * 1000 * 1000};
    nanosleep(&idle, NULL);
    int64_t m = p->m, n = p->n, k = p->k, lda = lda_of(p), ldb = ldb_of(p);
    double best = 1e30, spent = 0.0;
    for (int r = 0; r < 50 && (r < 3 || spent < 0.3); r++) {
        double t0 = now();
        if (which == 0) {
            if (sb_sgemm(p->ta ? 'T' : 'N', p->tb ? 'T' : 'N', m, n, k, a, lda, b, ldb, c, n) !=
                SB_OK) {
                fprintf(stderr, "sb_sgemm: %s\n", sb_last_error());
                exit(1);
            }
        } else if (which == 1) {
            cblas_sgemm(CblasRowMajor, p->ta ? CblasTrans : CblasNoTrans,
                        p->tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, a,
                        (int)lda, b, (int)ldb, 0.0f, c, (int)n);
        } else {
            /* BLIS takes each operand's row and column strides: a transposed
             * operand is the stored one read with the two swapped. */
            const float one = 1.0f, zero = 0.0f;
            blis_sgemm(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, m, n, k, &one, a, p->ta ? 1 : lda,
                       p->ta ? lda : 1, b, p->tb ? 1 : ldb, p->tb ? ldb : 1, &zero, c, n, 1);
        }
        double t = now() - t0;
        spent += t;
        if (t < best) best = t;
    }
    return best;
}

int main(void) {
    static const product sizes[] = {
        /* squares, LeNet's skinny layers, ResNet's 64-row convolution products */
        {false, false, 256, 256, 256},   {false, false, 512, 512, 512},
        {false, false, 1024, 1024, 1024}, {false, false, 2048, 2048, 2048},
        {false, false, 100, 400, 120},   {false, false, 100, 120, 84},
        {false, false, 64, 256, 3136},   {false, false, 64, 576, 3136},
        {false, false, 64, 147, 12544},
        /* linear 512x768 -> 3072: forward x . W^T, weight gradient dY^T . X */
        {false, true, 512, 768, 3072},   {true, false, 3072, 512, 768},
        /* an LSTM step (batch 32, hidden 256): h . W_hh^T, stored and transposed */
        {false, true, 32, 256, 1024},    {false, false, 32, 256, 1024},
        /* its weight gradient over 64 steps: k = 2048 rows */
        {true, false, 1024, 2048, 256}};
    open_blis();
    int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
    FILE *la = fopen("/proc/loadavg", "r");
    char load[128] = "?";
    if (la) {
        if (!fgets(load, sizeof load, la)) strcpy(load, "?\n");
        fclose(la);
    }
    printf("bench_sgemm: samebits ISA %s, OpenBLAS %s core; load average %s", sb_isa_name(sb_isa()),
           openblas_get_corename(), load);
    if (!blis_sgemm) printf("BLIS: not installed (Debian libblis-pthread-dev); its column is empty\n");
    printf("%-18s %3s %12s %12s %12s %7s\n", "m x k x n", "thr", "samebits", "OpenBLAS", "BLIS",
           "ratio");
    bool all_same = true;
    for (int s = 0; s < nsizes; s++) {
        const product *p = &sizes[s];
        int64_t m = p->m, k = p->k, n = p->n;
        float *a = malloc((size_t)(m * k) * 4), *b = malloc((size_t)(k * n) * 4),
              *c = malloc((size_t)(m * n) * 4);
        if (!a || !b || !c) return 1;
        for (int64_t i = 0; i < m * k; i++) a[i] = rand_float();
        for (int64_t i = 0; i < k * n; i++) b[i] = rand_float();
        char ta = p->ta ? 'T' : 'N', tb = p->tb ? 'T' : 'N';
        if (m * n * k <= 1024 * 1024 * 1024) {
            float *r = malloc((size_t)(m * n) * 4);
            if (!r) return 1;
            sb_ref_sgemm(ta, tb, m, n, k, a, lda_of(p), b, ldb_of(p), r, n, false);
            for (int t = 1; t <= 2; t++) {
                sb_set_num_threads(t);
                if (sb_sgemm(ta, tb, m, n, k, a, lda_of(p), b, ldb_of(p), c, n) != SB_OK ||
                    memcmp(c, r, (size_t)(m * n) * 4) != 0) all_same = false;
            }
            free(r);
        }
        for (int t = 1; t <= 2; t++) {
            sb_set_num_threads(t);
            openblas_set_num_threads(t);
            if (blis_threads) blis_threads(t);
            double flops = 2.0 * (double)m * (double)n * (double)k;
            double ts = best_time(0, p, a, b, c), to = best_time(1, p, a, b, c);
            double tbl = blis_sgemm ? best_time(2, p, a, b, c) : 0.0;
            double peer = tbl > 0.0 && tbl < to ? tbl : to;
            char label[64], blis[32] = "-";
            snprintf(label, sizeof label, "%lld%sx%lldx%lld%s", (long long)m, p->ta ? "T" : "",
                     (long long)k, (long long)n, p->tb ? "T" : "");
            if (tbl > 0.0) snprintf(blis, sizeof blis, "%.1f GF/s", flops / tbl * 1e-9);
            printf("%-18s %3d %8.1f GF/s %8.1f GF/s %12s %6.1f%%\n", label, t, flops / ts * 1e-9,
                   flops / to * 1e-9, blis, 100.0 * peer / ts);
            fflush(stdout);
        }
        free(a); free(b); free(c);
    }
    printf("bits: %s\n", all_same ? "identical to reference" : "DIFFERENT FROM REFERENCE");
    return all_same ? 0 : 1;
}
