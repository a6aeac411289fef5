/* src/cpu/gemm_internal.h - the micro-kernel interface of the fast GEMM
 * (src/cpu/gemm.c). Not installed.
 *
 * A micro-kernel computes one full MR x NR tile of C from packed panels:
 *
 *     a[p*MR + i] = op(A)[i0 + i][pc + p]   (MR values per k step)
 *     b[p*NR + j] = op(B)[pc + p][j0 + j]   (NR values per k step)
 *
 * and for every (i, j), in p = 0..kc-1 order,
 *
 *     acc = load_c ? C[i][j] : +0.0f;  acc = fma(a[p*MR+i], b[p*NR+j], acc);
 *     C[i][j] = acc
 *
 * with one correctly rounded fused multiply-add per step and nothing else:
 * each C[i][j] is its own accumulator (one vector lane), so the chain the
 * contract fixes is run term after term whatever the vector width. gemm.c
 * passes load_c = true for every k block after the first (and for the first
 * one under continue_chain), which continues the same chain across blocks.
 * Edge tiles are run on a padded MR x NR scratch tile by the caller, so a
 * micro-kernel always reads and writes a full tile (rows ldc apart). */
#ifndef SAMEBITS_CPU_GEMM_INTERNAL_H
#define SAMEBITS_CPU_GEMM_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include "cpu/cpu.h"

typedef void (*sb_gemm_ukernel_fn)(int64_t kc, const float *a, const float *b, float *c,
                                   int64_t ldc, bool load_c);

/* Tile sizes per level: MR rows (broadcast operand) x NR columns (vector
 * operand). NR is a whole number of vectors; MR x NR/width accumulators plus
 * the B vectors fill most of the register file. */
#define SB_GEMM_MR_SCALAR 4
#define SB_GEMM_NR_SCALAR 4
#define SB_GEMM_MR_SSE2 4
#define SB_GEMM_NR_SSE2 8
#define SB_GEMM_MR_AVX2 6
#define SB_GEMM_NR_AVX2 16
#define SB_GEMM_MR_AVX512 12
#define SB_GEMM_NR_AVX512 32
#define SB_GEMM_MR_NEON 8
#define SB_GEMM_NR_NEON 12
#define SB_GEMM_MR_MAX 12
#define SB_GEMM_NR_MAX 32

/* Portable C, plain fmaf (gemm.c). */
void sb_gemm_ukernel_scalar(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                            bool load_c);
#if SB_HAVE_X86_KERNELS
void sb_gemm_ukernel_sse2(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                          bool load_c);
void sb_gemm_ukernel_avx2(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                          bool load_c);
void sb_gemm_ukernel_avx512(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                            bool load_c);
#endif
/* Flexible kernels (AVX-512, AVX2 and NEON, gemm_flex.h): an MR x NR tile at rows x cols of C
 * (rows <= MR, cols <= NR) done in place, with B rows `bstride` floats
 * apart (NR for a packed panel, ldb for op(B) read where it lies). */
typedef void (*sb_gemm_flex_fn)(int64_t kc, const float *a, const float *b, int64_t bstride,
                                float *c, int64_t ldc, bool load_c, int rows, int cols);
/* Implicit-GEMM kernels (AVX-512, AVX2 and NEON): as the flexible ones, with B row p
 * at b + boff[p] (see sb_cpu_sgemm_offset in cpu.h). */
typedef void (*sb_gemm_offset_fn)(int64_t kc, const float *a, const float *b, const int64_t *boff,
                                  float *c, int64_t ldc, bool load_c, int rows, int cols);
/* Gathered-A kernels: as the offset ones, with A's MR values of step p at
 * a + aoff[p] (sb_cpu_sgemm_gather in cpu.h). */
typedef void (*sb_gemm_gather_fn)(int64_t kc, const float *a, const int64_t *aoff, const float *b,
                                  const int64_t *boff, float *c, int64_t ldc, bool load_c,
                                  int rows, int cols);
/* The three kernels of one row count MRF of one level (gemm_flex.h's
 * FLEX_KERNELS defines them): sb_gemm_flex_<isa>_<MRF>,
 * sb_gemm_offset_<isa>_<MRF> and sb_gemm_gather_<isa>_<MRF>. */
#define SB_GEMM_TILE_KERNELS_DECL(ISA, MRF)                                                    \
    void sb_gemm_flex_##ISA##_##MRF(int64_t kc, const float *a, const float *b,                 \
                                    int64_t bstride, float *c, int64_t ldc, bool load_c,        \
                                    int rows, int cols);                                        \
    void sb_gemm_offset_##ISA##_##MRF(int64_t kc, const float *a, const float *b,               \
                                      const int64_t *boff, float *c, int64_t ldc, bool load_c,  \
                                      int rows, int cols);                                    \
    void sb_gemm_gather_##ISA##_##MRF(int64_t kc, const float *a, const int64_t *aoff,          \
                                      const float *b, const int64_t *boff, float *c,           \
                                      int64_t ldc, bool load_c, int rows, int cols);
#if SB_HAVE_X86_KERNELS
/* AVX-512: 4-, 6-, 8- and 12-row tiles of 32 columns. */
SB_GEMM_TILE_KERNELS_DECL(avx512, 4)
SB_GEMM_TILE_KERNELS_DECL(avx512, 6)
SB_GEMM_TILE_KERNELS_DECL(avx512, 8)
SB_GEMM_TILE_KERNELS_DECL(avx512, 12)
/* AVX2: 4- and 6-row tiles of 16 columns. */
SB_GEMM_TILE_KERNELS_DECL(avx2, 4)
SB_GEMM_TILE_KERNELS_DECL(avx2, 6)
#endif

/* One row of C times B^T with B row-major (n x k, row j at b + j*ldb):
 * c[j] = the chain over p = 0..k-1 of fmaf(a[p], b[j*ldb + p], .) from c[j]
 * (load_c) or +0, for j < n. Packing op(B) = B^T for a row or two (a KV-cache
 * decode step's linear layers) costs many times the multiply-adds it
 * feeds; this reads B where it lies. */
typedef void (*sb_gemv_t_fn)(int64_t n, int64_t k, const float *a, const float *b, int64_t ldb,
                             float *c, bool load_c);
/* The same, one output at a time with fmaf (gemm.c): the chains the vector
 * gemv_t kernels leave over past their last whole block of outputs. */
void sb_gemv_t_chains(int64_t n, int64_t k, const float *a, const float *b, int64_t ldb, float *c,
                      bool load_c);
#if SB_HAVE_X86_KERNELS
void sb_gemv_t_avx2(int64_t n, int64_t k, const float *a, const float *b, int64_t ldb, float *c,
                    bool load_c);
#endif

/* A packed panel of op(B) = B^T (B row-major, row j at b + j*ldb):
 * dst[p*nr + q] = b[q*ldb + p] for p < kc and q < cols, +0 for cols <= q < nr.
 * Only moves data, so any level's gives the same panel; the scalar loop of
 * gemm.c runs where a level has none. */
typedef void (*sb_gemm_pack_bt_fn)(int64_t kc, int64_t cols, int nr, const float *b, int64_t ldb,
                                   float *dst);
#if SB_HAVE_X86_KERNELS
void sb_gemm_pack_bt_avx2(int64_t kc, int64_t cols, int nr, const float *b, int64_t ldb,
                          float *dst);
#endif

/* One flexible kernel of a level: its row count, and its flex, offset and
 * gather entry points (NR columns, the level's fixed NR). */
typedef struct sb_gemm_flex_kernel {
    int mr;
    sb_gemm_flex_fn flex;
    sb_gemm_offset_fn offset;
    sb_gemm_gather_fn gather;
} sb_gemm_flex_kernel;

/* A level's GEMM kernels (its member of the kernel context, cpu/kernels.h):
 * the fixed micro-kernel of mr x nr tiles, and nflex flexible kernels of
 * nr columns, tallest first (nflex = 0: none; then no implicit GEMM
 * either). gemm.c picks among them per call. */
typedef struct sb_gemm_kernels {
    int mr, nr;
    sb_gemm_ukernel_fn ukernel;
    int nflex;
    const sb_gemm_flex_kernel *flex;
    sb_gemv_t_fn gemv_t; /* NULL: a few rows times B^T go through packing too */
    sb_gemm_pack_bt_fn pack_bt; /* NULL: gemm.c's scalar transposing copy */
} sb_gemm_kernels;

#if SB_HAVE_NEON_KERNELS
void sb_gemm_ukernel_neon(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                          bool load_c);
/* NEON: 8- and 4-row tiles of 12 columns (three q-vectors). */
SB_GEMM_TILE_KERNELS_DECL(neon, 8)
SB_GEMM_TILE_KERNELS_DECL(neon, 4)
void sb_gemv_t_neon(int64_t n, int64_t k, const float *a, const float *b, int64_t ldb, float *c,
                    bool load_c);
#endif

#endif
