/* tools/verify_vmath.c - exhaustive check that the batch math kernels
 * (src/cpu/vmath.h) return the scalar functions' bits on all 2^32 inputs,
 * at every vector ISA level this machine supports.
 *
 *   verify_vmath [--threads T] [expf logf tanhf expm1f log1pf erff
 *                               exp2f log2f sinf cosf expf_sub erff_mul]
 *
 * No names means all twelve. expf_sub and erff_mul are the kernels with the
 * argument's operation in front, checked against sb_expf(x - c) and
 * sb_erff(x * c) for one c each (softmax's and GELU's operations; the
 * function after the operation is the kernel the plain names prove, so
 * these check the operation and the lanes handed to the scalar function). The scalar functions are the reference: they are
 * proven correctly rounded on all 2^32 inputs by tools/verify_math.c (make
 * verify-math), so equality here makes every batch kernel correctly rounded
 * too. The scalar level of the batch API is the scalar function itself and
 * is not rerun. Each vector level's kernel is called directly from its
 * kernel context (sb_cpu_kernels_for; not through sb_set_isa, which is
 * global) on chunks of 2^20 consecutive bit patterns, at a start offset that
 * varies with the chunk so that every input meets every lane position and
 * the ragged-end path over the run.
 *
 * Prints, per function and level, the inputs checked, the differences (the
 * first few listed) and seconds. Exit status 1 on any difference.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tool_common.h"
#include "cpu/kernels.h"
#include "cpu/vmath.h"
#include "samebits.h"

/* the argument's operation of the kernel (cpu/vmath_internal.h) */
typedef enum { ARG_X, ARG_SUB, ARG_MUL } arg_op;

typedef struct {
    const char *name;
    float (*scalar)(float);
    size_t slot; /* offset of the kernel in sb_vmath_table: an sb_vmath_fn
                    for ARG_X, else an sb_vmath_arg_fn called with c */
    arg_op op;
    float c;
} fn_info;

/* c of the arg kernels: GELU's sqrt(1/2); for the subtraction 1.25, so
 * that x - c is exact for some x and rounded for others */
#define SUB_C 1.25f
#define MUL_C 0.70710677f

static const fn_info fns[] = {
    {"expf", sb_expf, offsetof(sb_vmath_table, expf_n), ARG_X, 0.0f},
    {"logf", sb_logf, offsetof(sb_vmath_table, logf_n), ARG_X, 0.0f},
    {"tanhf", sb_tanhf, offsetof(sb_vmath_table, tanhf_n), ARG_X, 0.0f},
    {"expm1f", sb_expm1f, offsetof(sb_vmath_table, expm1f_n), ARG_X, 0.0f},
    {"log1pf", sb_log1pf, offsetof(sb_vmath_table, log1pf_n), ARG_X, 0.0f},
    {"erff", sb_erff, offsetof(sb_vmath_table, erff_n), ARG_X, 0.0f},
    {"exp2f", sb_exp2f, offsetof(sb_vmath_table, exp2f_n), ARG_X, 0.0f},
    {"log2f", sb_log2f, offsetof(sb_vmath_table, log2f_n), ARG_X, 0.0f},
    {"sinf", sb_sinf, offsetof(sb_vmath_table, sinf_n), ARG_X, 0.0f},
    {"cosf", sb_cosf, offsetof(sb_vmath_table, cosf_n), ARG_X, 0.0f},
    {"expf_sub", sb_expf, offsetof(sb_vmath_table, expf_sub_n), ARG_SUB, SUB_C},
    {"erff_mul", sb_erff, offsetof(sb_vmath_table, erff_mul_n), ARG_MUL, MUL_C},
};
#define NFNS (int)(sizeof fns / sizeof fns[0])

typedef struct {
    sb_isa_level isa;
    const sb_vmath_table *table;
} level_info;

static level_info levels[SB_ISA_COUNT];
static int nlevels;

#define CHUNK_BITS 20
#define CHUNK (1u << CHUNK_BITS)
#define NCHUNKS (1u << (32 - CHUNK_BITS))
#define MAX_BAD 8

typedef struct {
    const fn_info *fn;
    atomic_uint next_chunk;
    pthread_mutex_t lock;
    uint64_t checked[SB_ISA_COUNT], bad[SB_ISA_COUNT];
    uint32_t bad_x[SB_ISA_COUNT][MAX_BAD], bad_got[SB_ISA_COUNT][MAX_BAD],
        bad_want[SB_ISA_COUNT][MAX_BAD];
} job;


/* Whether the level has the kernel (a NULL slot would say it has not). */
static int has_kernel(const level_info *lv, const fn_info *fn) {
    void (*f)(void);
    memcpy(&f, (const char *)lv->table + fn->slot, sizeof f);
    return f != NULL;
}

/* y[i] = the level's kernel of x[i], i < n */
static void run_kernel(const level_info *lv, const fn_info *fn, const float *x, float *y, uint32_t n) {
    if (fn->op == ARG_X) {
        sb_vmath_fn f;
        memcpy(&f, (const char *)lv->table + fn->slot, sizeof f);
        f(x, y, n);
    } else {
        sb_vmath_arg_fn f;
        memcpy(&f, (const char *)lv->table + fn->slot, sizeof f);
        f(x, fn->c, y, n);
    }
}

/* the scalar reference: the function of the argument, the operation in
 * binary32 as the callers write it */
static float reference(const fn_info *fn, float x) {
    switch (fn->op) {
    case ARG_SUB: return fn->scalar(x - fn->c);
    case ARG_MUL: return fn->scalar(x * fn->c);
    case ARG_X: break;
    }
    return fn->scalar(x);
}

static void *worker(void *arg) {
    job *jb = arg;
    const fn_info *fn = jb->fn;
    /* 3 spare floats in front so that the start offset can vary */
    float *x = malloc((CHUNK + 3) * sizeof(float)), *want = malloc(CHUNK * sizeof(float));
    float *got = malloc((CHUNK + 3) * sizeof(float));
    if (!x || !want || !got) {
        fprintf(stderr, "verify_vmath: out of memory\n");
        exit(2);
    }
    for (;;) {
        unsigned c = atomic_fetch_add(&jb->next_chunk, 1);
        if (c >= NCHUNKS) break;
        uint32_t base = (uint32_t)c << CHUNK_BITS;
        unsigned off = c & 3;
        for (uint32_t k = 0; k < CHUNK; k++) {
            x[off + k] = u2f(base + k);
            want[k] = reference(fn, u2f(base + k));
        }
        for (int l = 0; l < nlevels; l++) {
            if (!has_kernel(&levels[l], fn)) continue; /* reported by main */
            /* chunk sizes that are not a multiple of the vector width
             * exercise the padded tail too */
            uint32_t split = CHUNK - 1 - (c % 61);
            run_kernel(&levels[l], fn, x + off, got + off, split);
            run_kernel(&levels[l], fn, x + off + split, got + off + split, CHUNK - split);
            for (uint32_t k = 0; k < CHUNK; k++)
                if (f2u(got[off + k]) != f2u(want[k])) {
                    sb_isa_level isa = levels[l].isa;
                    pthread_mutex_lock(&jb->lock);
                    uint64_t i = jb->bad[isa]++;
                    if (i < MAX_BAD) {
                        jb->bad_x[isa][i] = base + k;
                        jb->bad_got[isa][i] = f2u(got[off + k]);
                        jb->bad_want[isa][i] = f2u(want[k]);
                    }
                    pthread_mutex_unlock(&jb->lock);
                }
            pthread_mutex_lock(&jb->lock);
            jb->checked[levels[l].isa] += CHUNK;
            pthread_mutex_unlock(&jb->lock);
        }
    }
    free(x);
    free(want);
    free(got);
    return NULL;
}

static int run_fn(const fn_info *fn, int nthreads) {
    job jb;
    memset(&jb, 0, sizeof jb);
    jb.fn = fn;
    atomic_init(&jb.next_chunk, 0);
    pthread_mutex_init(&jb.lock, NULL);
    double t0 = now();
    pthread_t th[64];
    for (int t = 0; t < nthreads; t++) pthread_create(&th[t], NULL, worker, &jb);
    for (int t = 0; t < nthreads; t++) pthread_join(th[t], NULL);
    double secs = now() - t0;
    int failed = 0;
    for (int l = 0; l < nlevels; l++) {
        sb_isa_level isa = levels[l].isa;
        if (!has_kernel(&levels[l], fn)) continue;
        printf("%-7s %-7s inputs %llu  differences %llu  (%.1f s for the function, all levels)\n",
               fn->name, sb_isa_name(isa), (unsigned long long)jb.checked[isa],
               (unsigned long long)jb.bad[isa], secs);
        for (uint64_t i = 0; i < jb.bad[isa] && i < MAX_BAD; i++)
            printf("    x = 0x%08x (%a): batch 0x%08x, scalar 0x%08x\n", jb.bad_x[isa][i],
                   (double)u2f(jb.bad_x[isa][i]), jb.bad_got[isa][i], jb.bad_want[isa][i]);
        if (jb.bad[isa] || jb.checked[isa] != (1ull << 32)) failed = 1;
    }
    fflush(stdout);
    pthread_mutex_destroy(&jb.lock);
    return failed;
}

int main(int argc, char **argv) {
    int nthreads = 2;
    int want[NFNS] = {0}, any = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            nthreads = atoi(argv[++i]);
            if (nthreads < 1 || nthreads > 64) {
                fprintf(stderr, "verify_vmath: --threads must be 1..64\n");
                return 2;
            }
            continue;
        }
        int found = 0;
        for (int f = 0; f < NFNS; f++)
            if (strcmp(argv[i], fns[f].name) == 0) want[f] = found = any = 1;
        if (!found) {
            fprintf(stderr, "usage: verify_vmath [--threads T] [expf logf tanhf expm1f log1pf erff "
                            "exp2f log2f sinf cosf expf_sub erff_mul]\n");
            return 2;
        }
    }
    /* every vector level this build compiles and this CPU runs, through
     * its kernel context (the scalar level is the reference itself) */
    for (int l = 0; l < SB_ISA_COUNT; l++) {
        const sb_cpu_kernels *k = sb_cpu_kernels_for((sb_isa_level)l);
        if (l == SB_ISA_SCALAR || !k || !sb_isa_supported((sb_isa_level)l)) continue;
        levels[nlevels].isa = (sb_isa_level)l;
        levels[nlevels].table = k->vmath;
        nlevels++;
    }
    if (nlevels == 0) {
        printf("verify_vmath: no vector level on this machine; nothing to check\n");
        return 0;
    }
    printf("verify_vmath: %d thread(s), levels:", nthreads);
    for (int l = 0; l < nlevels; l++) printf(" %s", sb_isa_name(levels[l].isa));
    printf("\n");
    int failed = 0;
    double t0 = now();
    for (int f = 0; f < NFNS; f++) {
        if (any && !want[f]) continue;
        for (int l = 0; l < nlevels; l++)
            if (!has_kernel(&levels[l], &fns[f])) {
                printf("%-7s %-7s no vector kernel (the batch API uses the scalar loop)\n",
                       fns[f].name, sb_isa_name(levels[l].isa));
            }
        failed |= run_fn(&fns[f], nthreads);
    }
    printf("verify_vmath: %s (%.0f s)\n",
           failed ? "DIFFERENCES FOUND" : "every batch result equals the scalar function's",
           now() - t0);
    return failed;
}
