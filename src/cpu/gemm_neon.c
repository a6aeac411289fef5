/* The aarch64 Advanced SIMD GEMM kernels (src/cpu/gemm_internal.h): the
 * fixed micro-kernel of 8 x 12 tiles in 24 q-register accumulators, the
 * flexible and implicit-GEMM kernels of 8 x 12 and 4 x 12 tiles
 * (gemm_flex.h), and gemv_t. vfmaq_f32 and vfmaq_laneq_f32 are FMLA, a
 * fused multiply-add with one rounding, so every lane runs
 * C[i][j] = fma(A[i][p], B[p][j], C[i][j]) exactly as the contract. */
#include "cpu/cpu.h"

typedef int sb_gemm_neon_unit_not_empty;

#if SB_HAVE_NEON_KERNELS
#include <arm_neon.h>
#include "cpu/gemm_internal.h"

#define MR SB_GEMM_MR_NEON
#define NR SB_GEMM_NR_NEON

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

#define DECL(r) float32x4_t c##r##a, c##r##b, c##r##c;
#define ZERO(r) c##r##a = vdupq_n_f32(0.0f); c##r##b = c##r##a; c##r##c = c##r##a;
#define LOAD(r) c##r##a = vld1q_f32(c + (r) * ldc); c##r##b = vld1q_f32(c + (r) * ldc + 4); \
                c##r##c = vld1q_f32(c + (r) * ldc + 8);
#define STORE(r) vst1q_f32(c + (r) * ldc, c##r##a); vst1q_f32(c + (r) * ldc + 4, c##r##b); \
                 vst1q_f32(c + (r) * ldc + 8, c##r##c);
/* Row r's A value is lane r % 4 of a0 (rows 0-3) or a1 (rows 4-7). */
#define FMA_ROW(r, av, lane) c##r##a = vfmaq_laneq_f32(c##r##a, b0, av, lane); \
                             c##r##b = vfmaq_laneq_f32(c##r##b, b1, av, lane); \
                             c##r##c = vfmaq_laneq_f32(c##r##c, b2, av, lane);

void sb_gemm_ukernel_neon(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                          bool load_c) {
    ROWS(DECL)
    if (load_c) {
        ROWS(LOAD)
    } else {
        ROWS(ZERO)
    }
    for (int64_t p = 0; p < kc; p++) {
        float32x4_t a0 = vld1q_f32(a), a1 = vld1q_f32(a + 4);
        float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4), b2 = vld1q_f32(b + 8);
        FMA_ROW(0, a0, 0) FMA_ROW(1, a0, 1) FMA_ROW(2, a0, 2) FMA_ROW(3, a0, 3)
        FMA_ROW(4, a1, 0) FMA_ROW(5, a1, 1) FMA_ROW(6, a1, 2) FMA_ROW(7, a1, 3)
        a += MR;
        b += NR;
    }
    ROWS(STORE)
}

/* The flexible and implicit-GEMM kernels (gemm_flex.h): MR x 12 tiles (three
 * q-vectors of columns) for MR in {8, 4}, edges done in place. NEON has no
 * masked loads or stores: a mask is a lane count, a full vector is one
 * vld1q/vst1q, and only the last vector of an edge tile goes lane by lane
 * (never touching memory past `cols`, as a masked load would not). A tile
 * of all 12 columns has its own loop with constant full masks, so its
 * loads and stores are plain ones (FLEX_FULL_TILE). */
static inline __attribute__((always_inline)) float32x4_t flex_neon_load(int n, const float *p) {
    if (n >= 4) return vld1q_f32(p);
    float32x4_t v = vdupq_n_f32(0.0f);
    if (n > 0) v = vld1q_lane_f32(p, v, 0);
    if (n > 1) v = vld1q_lane_f32(p + 1, v, 1);
    if (n > 2) v = vld1q_lane_f32(p + 2, v, 2);
    return v;
}

static inline __attribute__((always_inline)) void flex_neon_store(int n, float *p,
                                                                  float32x4_t v) {
    if (n >= 4) {
        vst1q_f32(p, v);
        return;
    }
    if (n > 0) vst1q_lane_f32(p, v, 0);
    if (n > 1) vst1q_lane_f32(p + 1, v, 1);
    if (n > 2) vst1q_lane_f32(p + 2, v, 2);
}

#define FLEX_ISA neon
#define FLEX_VEC float32x4_t
#define FLEX_W 4
#define FLEX_NV 3
#define FLEX_MASK int
#define FLEX_MASK_FIRST(n) (n)
#define FLEX_LOADM(m, p) flex_neon_load((m), (p))
#define FLEX_STOREM(m, p, v) flex_neon_store((m), (p), (v))
#define FLEX_ZERO() vdupq_n_f32(0.0f)
#define FLEX_SET1(x) vdupq_n_f32(x)
#define FLEX_FMA(a, b, c) vfmaq_f32((c), (a), (b))
#define FLEX_FULL_TILE 1
#include "cpu/gemm_flex.h"

FLEX_KERNELS(8)
FLEX_KERNELS(4)

/* Advances the chains of four outputs j0..j0+3 (rows r, r + ldb, ... of B)
 * over terms p..p+3: the 4 x 4 block of B is transposed in registers, so
 * that lane q of t[e] holds B[j0 + q][p + e], and each vfmaq_f32 advances
 * the four chains by one term, e ascending. */
static inline __attribute__((always_inline)) float32x4_t
gemv_t_neon_block(float32x4_t acc, const float *a, const float *r, int64_t ldb) {
    float32x4x2_t t01 = vtrnq_f32(vld1q_f32(r), vld1q_f32(r + ldb));
    float32x4x2_t t23 = vtrnq_f32(vld1q_f32(r + 2 * ldb), vld1q_f32(r + 3 * ldb));
    float32x4_t t0 = vcombine_f32(vget_low_f32(t01.val[0]), vget_low_f32(t23.val[0]));
    float32x4_t t1 = vcombine_f32(vget_low_f32(t01.val[1]), vget_low_f32(t23.val[1]));
    float32x4_t t2 = vcombine_f32(vget_high_f32(t01.val[0]), vget_high_f32(t23.val[0]));
    float32x4_t t3 = vcombine_f32(vget_high_f32(t01.val[1]), vget_high_f32(t23.val[1]));
    acc = vfmaq_f32(acc, vdupq_n_f32(a[0]), t0);
    acc = vfmaq_f32(acc, vdupq_n_f32(a[1]), t1);
    acc = vfmaq_f32(acc, vdupq_n_f32(a[2]), t2);
    acc = vfmaq_f32(acc, vdupq_n_f32(a[3]), t3);
    return acc;
}

/* One term p of the same four chains (the k % 4 terms past the blocks). */
static inline __attribute__((always_inline)) float32x4_t
gemv_t_neon_term(float32x4_t acc, float a, const float *r, int64_t ldb) {
    float32x4_t col = vdupq_n_f32(r[0]);
    col = vld1q_lane_f32(r + ldb, col, 1);
    col = vld1q_lane_f32(r + 2 * ldb, col, 2);
    col = vld1q_lane_f32(r + 3 * ldb, col, 3);
    return vfmaq_f32(acc, vdupq_n_f32(a), col);
}

/* sb_gemv_t_fn (gemm_internal.h): eight outputs at a time in two
 * independent q-vector chains (their FMAs overlap), then four, then the
 * last n % 4 one at a time (sb_gemv_t_chains: fmaf, the same single
 * rounding). */
void sb_gemv_t_neon(int64_t n, int64_t k, const float *a, const float *b, int64_t ldb, float *c,
                    bool load_c) {
    int64_t j0 = 0;
    for (; j0 + 8 <= n; j0 += 8) {
        const float *r = b + j0 * ldb, *s = r + 4 * ldb;
        float32x4_t acc0 = load_c ? vld1q_f32(c + j0) : vdupq_n_f32(0.0f);
        float32x4_t acc1 = load_c ? vld1q_f32(c + j0 + 4) : vdupq_n_f32(0.0f);
        int64_t p = 0;
        for (; p + 4 <= k; p += 4) {
            acc0 = gemv_t_neon_block(acc0, a + p, r + p, ldb);
            acc1 = gemv_t_neon_block(acc1, a + p, s + p, ldb);
        }
        for (; p < k; p++) {
            acc0 = gemv_t_neon_term(acc0, a[p], r + p, ldb);
            acc1 = gemv_t_neon_term(acc1, a[p], s + p, ldb);
        }
        vst1q_f32(c + j0, acc0);
        vst1q_f32(c + j0 + 4, acc1);
    }
    for (; j0 + 4 <= n; j0 += 4) {
        const float *r = b + j0 * ldb;
        float32x4_t acc = load_c ? vld1q_f32(c + j0) : vdupq_n_f32(0.0f);
        int64_t p = 0;
        for (; p + 4 <= k; p += 4) acc = gemv_t_neon_block(acc, a + p, r + p, ldb);
        for (; p < k; p++) acc = gemv_t_neon_term(acc, a[p], r + p, ldb);
        vst1q_f32(c + j0, acc);
    }
    sb_gemv_t_chains(n - j0, k, a, b + j0 * ldb, ldb, c + j0, load_c);
}
#endif
