/* The AVX2 + FMA3 GEMM micro-kernel: a 6 x 16 tile of C in 12 ymm
 * accumulators (src/cpu/gemm_internal.h). Each vfmadd231ps lane is one
 * step C[i][j] = fma(A[i][p], B[p][j], C[i][j]) of the contract's chain. */
#include <string.h>
#include "cpu/cpu.h"

typedef int sb_gemm_avx2_unit_not_empty;

#if SB_HAVE_X86_KERNELS
#include <immintrin.h>
#include "cpu/gemm_internal.h"

#define MR SB_GEMM_MR_AVX2
#define NR SB_GEMM_NR_AVX2

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)

#define DECL(r) __m256 c##r##a, c##r##b;
#define ZERO(r) c##r##a = _mm256_setzero_ps(); c##r##b = _mm256_setzero_ps();
#define LOAD(r) c##r##a = _mm256_loadu_ps(c + (r) * ldc); \
                c##r##b = _mm256_loadu_ps(c + (r) * ldc + 8);
#define STORE(r) _mm256_storeu_ps(c + (r) * ldc, c##r##a); \
                 _mm256_storeu_ps(c + (r) * ldc + 8, c##r##b);
#define FMA_ROW(r, o) { __m256 ar = _mm256_broadcast_ss(a + (o) * MR + (r)); \
                        c##r##a = _mm256_fmadd_ps(ar, b0, c##r##a);           \
                        c##r##b = _mm256_fmadd_ps(ar, b1, c##r##b); }
#define STEP(o) { __m256 b0 = _mm256_loadu_ps(b + (o) * NR);      \
                  __m256 b1 = _mm256_loadu_ps(b + (o) * NR + 8);  \
                  FMA_ROW(0, o) FMA_ROW(1, o) FMA_ROW(2, o)                  \
                  FMA_ROW(3, o) FMA_ROW(4, o) FMA_ROW(5, o) }

void sb_gemm_ukernel_avx2(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                          bool load_c) {
    ROWS(DECL)
    if (load_c) {
        ROWS(LOAD)
    } else {
        ROWS(ZERO)
    }
    int64_t p = 0;
    for (; p + 4 <= kc; p += 4) {
        _mm_prefetch((const char *)(b + 8 * NR), _MM_HINT_T0);
        STEP(0) STEP(1) STEP(2) STEP(3)
        a += 4 * MR;
        b += 4 * NR;
    }
    for (; p < kc; p++) {
        STEP(0)
        a += MR;
        b += NR;
    }
    ROWS(STORE)
}

/* The flexible and implicit-GEMM kernels (gemm_flex.h): MR x 16 tiles for
 * MR in {4, 6}, edges masked in place (vmaskmovps), B read in place or
 * through a per-step offset table. */
#define FLEX_ISA avx2
#define FLEX_VEC __m256
#define FLEX_W 8
#define FLEX_NV 2
#define FLEX_MASK __m256i
#define FLEX_MASK_FIRST(n) \
    _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define FLEX_LOADM(m, p) _mm256_maskload_ps((p), (m))
#define FLEX_STOREM(m, p, v) _mm256_maskstore_ps((p), (m), (v))
#define FLEX_ZERO() _mm256_setzero_ps()
#define FLEX_SET1(x) _mm256_set1_ps(x)
#define FLEX_FMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#include "cpu/gemm_flex.h"

FLEX_KERNELS(4)
FLEX_KERNELS(6)

/* t[e] lane q = r[q*ld + e] for q, e < 8: eight rows of eight floats
 * transposed in registers (unpack, shuffle, then 128-bit halves). */
static inline void transpose8x8(const float *r, int64_t ld, __m256 t[8]) {
    __m256 u0 = _mm256_unpacklo_ps(_mm256_loadu_ps(r), _mm256_loadu_ps(r + ld));
    __m256 u1 = _mm256_unpackhi_ps(_mm256_loadu_ps(r), _mm256_loadu_ps(r + ld));
    __m256 u2 = _mm256_unpacklo_ps(_mm256_loadu_ps(r + 2 * ld), _mm256_loadu_ps(r + 3 * ld));
    __m256 u3 = _mm256_unpackhi_ps(_mm256_loadu_ps(r + 2 * ld), _mm256_loadu_ps(r + 3 * ld));
    __m256 u4 = _mm256_unpacklo_ps(_mm256_loadu_ps(r + 4 * ld), _mm256_loadu_ps(r + 5 * ld));
    __m256 u5 = _mm256_unpackhi_ps(_mm256_loadu_ps(r + 4 * ld), _mm256_loadu_ps(r + 5 * ld));
    __m256 u6 = _mm256_unpacklo_ps(_mm256_loadu_ps(r + 6 * ld), _mm256_loadu_ps(r + 7 * ld));
    __m256 u7 = _mm256_unpackhi_ps(_mm256_loadu_ps(r + 6 * ld), _mm256_loadu_ps(r + 7 * ld));
    /* s_e: terms e and e + 4 of rows 0-3 (s0-s3) and rows 4-7 (s4-s7) */
    __m256 s0 = _mm256_shuffle_ps(u0, u2, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 s1 = _mm256_shuffle_ps(u0, u2, _MM_SHUFFLE(3, 2, 3, 2));
    __m256 s2 = _mm256_shuffle_ps(u1, u3, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 s3 = _mm256_shuffle_ps(u1, u3, _MM_SHUFFLE(3, 2, 3, 2));
    __m256 s4 = _mm256_shuffle_ps(u4, u6, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 s5 = _mm256_shuffle_ps(u4, u6, _MM_SHUFFLE(3, 2, 3, 2));
    __m256 s6 = _mm256_shuffle_ps(u5, u7, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 s7 = _mm256_shuffle_ps(u5, u7, _MM_SHUFFLE(3, 2, 3, 2));
    t[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
    t[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    t[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
    t[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    t[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
    t[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    t[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
    t[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

/* Stores lanes [0, w) of each t[e] at dst + e*nr, w <= 8. Whole vectors
 * or halves where w allows (vmaskmovps stores are microcoded and slow on
 * AMD), else through a copy. */
static inline void store_cols8(const __m256 t[8], int64_t w, int nr, float *dst) {
    for (int e = 0; e < 8; e++) {
        if (w == 8) {
            _mm256_storeu_ps(dst + e * nr, t[e]);
        } else if (w == 4) {
            _mm_storeu_ps(dst + e * nr, _mm256_castps256_ps128(t[e]));
        } else {
            float lanes[8];
            _mm256_storeu_ps(lanes, t[e]);
            memcpy(dst + e * nr, lanes, (size_t)w * sizeof(float));
        }
    }
}

/* gemm.c's panel of op(B) = B^T (gemm_internal.h, sb_gemm_pack_bt_fn):
 * eight rows of B at a time, eight terms at a time, transposed in
 * registers. The last cols % 8 rows go through the same transpose from a
 * block padded with zero rows (a panel of MR 12 rows has 4 of them: one
 * float at a time they cost as much as the 8 transposed ones). Columns
 * past that block are zero; the last kc % 8 terms go one float at a
 * time. */
void sb_gemm_pack_bt_avx2(int64_t kc, int64_t cols, int nr, const float *b, int64_t ldb,
                          float *dst) {
    int64_t whole = cols / 8 * 8, rest = cols - whole, kc8 = kc / 8 * 8;
    for (int64_t q0 = 0; q0 < whole; q0 += 8) {
        const float *r = b + q0 * ldb;
        for (int64_t p = 0; p < kc8; p += 8) {
            __m256 t[8];
            transpose8x8(r + p, ldb, t);
            for (int e = 0; e < 8; e++) _mm256_storeu_ps(dst + (p + e) * nr + q0, t[e]);
        }
    }
    int64_t padded = whole; /* columns [0, padded) written for the first kc8 terms */
    if (rest) {
        const float *r = b + whole * ldb;
        float blk[8 * 8] = {0}; /* rows >= rest stay zero */
        int64_t w = nr - whole < 8 ? nr - whole : 8;
        for (int64_t p = 0; p < kc8; p += 8) {
            for (int64_t q = 0; q < rest; q++) memcpy(blk + 8 * q, r + q * ldb + p, 8 * sizeof(float));
            __m256 t[8];
            transpose8x8(blk, 8, t);
            store_cols8(t, w, nr, dst + p * nr + whole);
        }
        padded = whole + w;
    }
    if (padded < nr)
        for (int64_t p = 0; p < kc8; p++)
            memset(dst + p * nr + padded, 0, (size_t)(nr - padded) * sizeof(float));
    for (int64_t p = kc8; p < kc; p++)
        for (int64_t q = 0; q < nr; q++) dst[p * nr + q] = q < cols ? b[q * ldb + p] : 0.0f;
}

/* sb_gemv_t_fn (gemm_internal.h): eight outputs at a time; their eight rows
 * of B are read eight terms at a time and transposed in registers, so that
 * lane q of t[p] holds B[j0 + q][p0 + p] and each vfmadd231ps advances eight
 * chains by one term, in order. Outputs past the last eight run the same
 * chain one at a time (sb_gemv_t_chains). */
void sb_gemv_t_avx2(int64_t n, int64_t k, const float *a, const float *b, int64_t ldb, float *c,
                    bool load_c) {
    int64_t j0 = 0;
    for (; j0 + 8 <= n; j0 += 8) {
        const float *r = b + j0 * ldb;
        __m256 acc = load_c ? _mm256_loadu_ps(c + j0) : _mm256_setzero_ps();
        int64_t p = 0;
        for (; p + 8 <= k; p += 8) {
            __m256 t[8];
            transpose8x8(r + p, ldb, t);
            for (int e = 0; e < 8; e++) acc = _mm256_fmadd_ps(_mm256_set1_ps(a[p + e]), t[e], acc);
        }
        for (; p < k; p++) {
            __m256 col = _mm256_setr_ps(r[p], r[ldb + p], r[2 * ldb + p], r[3 * ldb + p],
                                        r[4 * ldb + p], r[5 * ldb + p], r[6 * ldb + p],
                                        r[7 * ldb + p]);
            acc = _mm256_fmadd_ps(_mm256_set1_ps(a[p]), col, acc);
        }
        _mm256_storeu_ps(c + j0, acc);
    }
    sb_gemv_t_chains(n - j0, k, a, b + j0 * ldb, ldb, c + j0, load_c);
}
#endif
