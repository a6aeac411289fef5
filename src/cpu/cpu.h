/* src/cpu/cpu.h - the fast CPU backend's shared machinery: instruction-set
 * dispatch and the thread pool. Not installed.
 *
 * Every fast kernel lives under src/cpu/, one op family per file, with its
 * per-ISA inner loops in files named *_sse2.c, *_avx2.c, *_avx512.c and
 * *_neon.c (compiled with that ISA's flags, and to nothing on other
 * architectures). Which of them runs is never decided in the family: every
 * level's kernels are gathered in its kernel context (cpu/kernels.h, filled
 * in cpu/kernels.c), and a family's entry point calls what sb_kernels()
 * holds, then splits independent outputs over threads with
 * sb_parallel_for(); the reference kernels under src/ref/ stay the contract
 * that every one of them must reproduce bit for bit (tests/test_fast_*.c).
 */
#ifndef SAMEBITS_CPU_H
#define SAMEBITS_CPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "samebits/runtime.h"

/* Which per-ISA files this build compiles (see the Makefile). */
#if defined(__x86_64__)
#define SB_HAVE_X86_KERNELS 1
#else
#define SB_HAVE_X86_KERNELS 0
#endif
#if defined(__aarch64__)
#define SB_HAVE_NEON_KERNELS 1
#else
#define SB_HAVE_NEON_KERNELS 0
#endif

/* ---- thread pool ---------------------------------------------------------
 * fn(ctx, begin, end) is called on disjoint ranges that together cover
 * [0, n), each at most `grain` items long (grain >= 1), from the calling
 * thread and the pool's workers. Which thread runs which range is not fixed,
 * so a range must write only outputs no other range writes, and compute
 * them in an order that does not depend on the range bounds. Returns when
 * every range has run. Calls from inside a range, or while another thread
 * is using the pool, run inline on the caller. Every range runs with the
 * contract's floating-point environment (round to nearest, no flush to
 * zero). */
typedef void (*sb_range_fn)(void *ctx, int64_t begin, int64_t end);
void sb_parallel_for(int64_t n, int64_t grain, sb_range_fn fn, void *ctx);

/* A grain that splits n items into about 4 ranges per thread, but never
 * ranges smaller than min_grain (so small work stays on one thread). */
int64_t sb_parallel_grain(int64_t n, int64_t min_grain);

/* True on a pool worker (or inside a range run by the caller). */
bool sb_in_parallel_region(void);

/* ---- scratch memory --------------------------------------------------------
 * A 64-byte aligned buffer of at least `bytes`, private to the calling
 * thread and slot, with undefined contents; it stays valid until the next
 * sb_scratch call with the same slot on the same thread. NULL when memory
 * runs out (callers then fall back to a path that needs none). Distinct
 * slots let a kernel hold one buffer while calling another kernel that
 * takes its own (conv2d's im2col around the GEMM's packing). */
typedef enum sb_scratch_slot {
    SB_SCRATCH_GEMM = 0,  /* sb_cpu_sgemm's packed panels */
    SB_SCRATCH_CONV,      /* conv2d's im2col / gathered operands */
    SB_SCRATCH_CONV_AUX,  /* conv2d's second buffer */
    SB_SCRATCH_OPS,       /* other op families */
    SB_SCRATCH_SLOTS
} sb_scratch_slot;
void *sb_scratch(sb_scratch_slot slot, size_t bytes);

/* ---- GEMM ------------------------------------------------------------------
 * The fast GEMM family kernel with sb_ref_sgemm's exact semantics
 * (src/ref/ref_linalg.h): every C[i][j] is the contract's fmaf chain over
 * p = 0..k-1, started from +0.0f, or from the C[i][j] already stored when
 * continue_chain is true. Arguments are already validated. */
void sb_cpu_sgemm(char transa, char transb, int64_t m, int64_t n, int64_t k, const float *a,
                  int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
                  bool continue_chain);

/* The implicit GEMM of stride-1 convolutions: for i < m, q < n,
 *     C[i][q] = chain over p = 0..k-1 of fmaf(A[i][p], b[boff[p] + q], acc)
 * from +0.0f, A row-major (lda), C row-major (ldc), on the calling thread
 * (it is meant to run inside a range). b must be readable up to
 * max(boff) + n + 32 floats. Returns false, computing nothing, when the
 * current ISA level has no kernel for it; the caller then takes another
 * path. */
bool sb_cpu_sgemm_offset(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                         const float *b, const int64_t *boff, float *c, int64_t ldc);
/* Whether the current ISA level has implicit-GEMM kernels. */
bool sb_cpu_sgemm_offset_available(void);
/* The same product with A packed once for many calls (a convolution's
 * weights, shared by every sample): the floats the packed A of an m x k
 * product takes (0 when the current ISA level has no kernel for it), A
 * packed into them, and the product from them, which gives the bits of
 * sb_cpu_sgemm_offset. Pack and run under the same kernel context. */
int64_t sb_cpu_sgemm_offset_packed_floats(int64_t m, int64_t k);
void sb_cpu_sgemm_offset_pack(int64_t m, int64_t k, const float *a, int64_t lda, float *apack);

/* The gathered product of a convolution's position classes (src/cpu/
 * conv2d_few.c): A (m x k) packed once, each call a product over a subset
 * of its k terms. For i < m, q < n:
 *     C[i][q] = chain over s = 0..ks-1 of fmaf(A[i][kidx[s]], b[boff[s] + q], acc)
 * from +0.0f (continue_chain: from C's value, the chain of earlier terms
 * going on), on the calling thread, where aoff[s] = kidx[s] * mr and mr =
 * sb_cpu_sgemm_gather_mr(m) (the packed panels' height). A is packed by
 * sb_cpu_sgemm_gather_pack into sb_cpu_sgemm_gather_floats(m, k) floats,
 * term p of row i being a[i*lda + acol[p]] (acol NULL: a[i*lda + p]),
 * panels [panel0, panel1) of the ceil(m / mr) per call (so that threads
 * can share the packing). b
 * must be readable up to max(boff) + n + 32 floats. Every ISA level runs
 * it (one without vector kernels one chain at a time). */
int sb_cpu_sgemm_gather_mr(int64_t m);
int64_t sb_cpu_sgemm_gather_floats(int64_t m, int64_t k);
void sb_cpu_sgemm_gather_pack(int64_t m, int64_t k, const float *a, int64_t lda,
                              const int64_t *acol, int64_t panel0, int64_t panel1, float *apack);
void sb_cpu_sgemm_gather(int64_t m, int64_t n, int64_t k, int64_t ks, const float *apack,
                         const int64_t *aoff, const float *b, const int64_t *boff, float *c,
                         int64_t ldc, bool continue_chain);
void sb_cpu_sgemm_offset_packed(int64_t m, int64_t n, int64_t k, const float *apack,
                                const float *b, const int64_t *boff, float *c, int64_t ldc);

#endif
