/* The batch math kernels (src/cpu/vmath.h) must return exactly the scalar
 * functions' bits (include/samebits/math.h) at every ISA level this machine
 * supports, for every input. The exhaustive proof over all 2^32 inputs is
 * tools/verify_vmath.c (make verify-vmath); this test samples densely:
 *  - specials: +-0, +-inf, quiet and signalling NaNs with payloads of both
 *    signs, FLT_MIN/FLT_MAX/denormal extremes;
 *  - every power of two of both signs and its +-1..3-ulp neighbours;
 *  - every float in windows around each function's thresholds (overflow,
 *    underflow, subnormal results, saturation, branch points, log near 1)
 *    and every float near +-0;
 *  - the inputs closest to a rounding boundary (the scalar slow paths);
 *  - a strided sweep of all 2^32 bit patterns (every 1031st) and
 *    LCG-random patterns;
 *  - lengths 0..20 and 23..79 (around every block width: 4, 8, 16 floats)
 *    at four start offsets, in place and out of place, with guard words
 *    that must stay untouched;
 *  - for the functions behind a unary op (sin, cos, exp2, log2), the op
 *    itself (sb_unary, which splits the array over the thread pool) on a
 *    subset of the same inputs at every ISA level and 1, 2, 3, 4 and 7
 *    threads;
 *  - the kernels with the argument's operation in front (expf_sub_n,
 *    erff_mul_n) the same way, against the scalar function of the
 *    argument computed in binary32 (the thresholds moved by c, so that
 *    their windows still straddle them).
 * The reference is the scalar function called element by element.
 */
#include <math.h>
#include "cpu/vmath.h"
#include "cpu/vmath_internal.h"
#include "harness.h"
#include "samebits.h"
#include "support/fastpath.h"

typedef struct {
    const char *name;
    void (*batch)(const float *, float *, int64_t);
    float (*scalar)(float);
    float thresholds[12]; /* windows of every float around these; 0 ends */
    /* the inputs closest to a rounding boundary in the exhaustive run of
     * tools/verify_math.c (tests/test_math.c): they reach the scalar
     * functions' double-double slow paths */
    uint32_t hard[20];
    int op; /* the sb_unary_op it serves, or -1 */
} fn_info;

/* The arg kernels with a c of each kind: softmax's x - m (a c whose
 * subtraction is exact for some inputs and rounded for others) and GELU's
 * x * sqrt(1/2). */
#define SUB_C 1.25f
#define MUL_C 0.70710677f
static void expf_sub_batch(const float *x, float *y, int64_t n) { sb_cpu_expf_sub_n(x, SUB_C, y, n); }
static float expf_sub_scalar(float x) { return sb_expf(x - SUB_C); }
static void erff_mul_batch(const float *x, float *y, int64_t n) { sb_cpu_erff_mul_n(x, MUL_C, y, n); }
static float erff_mul_scalar(float x) { return sb_erff(x * MUL_C); }

static const fn_info fns[] = {
    {"expf", sb_cpu_expf_n, sb_expf, {88.72283935546875f, 89.0f, -87.33654f, -103.97208f, -104.0f, 0x1p-25f, 1.0f},
     {0xc16912cdu, 0xbbf0edf1u, 0xb3000000u, 0xbae0e25cu, 0x377eff81u, 0x40315b33u,
      0x4001b249u, 0x39c6be5bu, 0x38e69cc1u, 0x3d1a274eu, 0x383a3ef1u, 0xbc2a461au}, -1},
    {"logf", sb_cpu_logf_n, sb_logf, {1.0f, 0x1p-126f, 0.75f, 1.5f, 2.0f, 0.5f},
     {0x1f116ab8u, 0x3c413d3au, 0x4c5d65a5u, 0x41178febu, 0x4d604ebeu, 0x65d890d3u,
      0x66a8c860u, 0x6f31a8ecu, 0x2c4c24b7u, 0x5ee8984eu, 0x79e7ec37u, 0x3bf86ef0u}, -1},
    {"tanhf", sb_cpu_tanhf_n, sb_tanhf, {10.0f, 9.010913f, -10.0f, 0x1p-12f, 0.5f},
     {0x3ac37de2u, 0xbac37de2u, 0x3eee0566u, 0xbeee0566u, 0xc0acb4d0u, 0x40acb4d0u,
      0x3cd41b91u, 0xbcd41b91u, 0xc0c5e8cau, 0x40c5e8cau, 0x3d7c3055u, 0xbd7c3055u}, -1},
    {"expm1f", sb_cpu_expm1f_n, sb_expm1f, {-18.0f, 89.0f, 88.72283935546875f, 0.0054f, -0.0054f, 0x1p-25f},
     {0x3dc252ddu, 0x34ca62c1u, 0x3a254e7au, 0xb675cbfcu, 0x33b504f3u, 0xbb7b3b6cu,
      0x36322b1bu, 0xb3800000u, 0x40315b33u, 0x4001b249u, 0x3b643f1bu, 0xc169ee19u}, -1},
    {"log1pf", sb_cpu_log1pf_n, sb_log1pf, {-1.0f, -0x1p-8f, 0x1p-7f, 0x1p29f, 0x1p53f, -0.5f},
     {0x3710001bu, 0x3efd81adu, 0x55185f82u, 0x66a8c860u, 0x6f31a8ecu, 0xb70fffe5u,
      0x35400003u, 0x41078febu, 0x65d890d3u, 0xb53ffffdu, 0xbb0ec8c4u, 0xb76fffb5u}, -1},
    {"erff", sb_cpu_erff_n, sb_erff, {4.0f, 3.9192f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 2.0f, 2.5f, 3.0f, 3.75f},
     {0x3940ead6u, 0xb940ead6u, 0x39c0057du, 0xb9c0057du, 0x36aea466u, 0xb6aea466u,
      0x358e9d2du, 0xb58e9d2du, 0x122a320cu, 0x12aa320cu, 0x132a320cu, 0x13aa320cu}, -1},
    /* exp2f: overflow at 128, the tie 2^-150, the subnormal results, and
     * integers (exact powers of two) */
    {"exp2f", sb_cpu_exp2f_n, sb_exp2f, {128.0f, -150.0f, -149.0f, -126.0f, 1.0f, 0x1p-7f, 0x1p-25f},
     {0x3b429d37u, 0xb52d1f9au, 0xbcf3a937u, 0xc3160000u, 0xb8d3d026u, 0xbaec2b40u,
      0x3a07857cu, 0xbe1f29deu, 0x3c02a9adu, 0x36879cf7u, 0xb466d4cbu, 0x33b8aa3bu}, SB_UNARY_EXP2},
    {"log2f", sb_cpu_log2f_n, sb_log2f, {1.0f, 0x1p-126f, 0.75f, 1.5f, 2.0f, 0.5f, 0x1p127f},
     {0x3ea07ab9u, 0x002452a4u, 0x7f114a90u, 0x0048a548u, 0x7e914a90u, 0x00914a90u,
      0x7e114a90u, 0x01114a90u, 0x7d914a90u, 0x01914a90u, 0x7d114a90u, 0x02114a90u}, SB_UNARY_LOG2},
    /* sinf, cosf: pi/4 (the Cody-Waite range starts), multiples of pi/2
     * (|r| <= 2^-22 goes to the scalar code), 2^28 (Payne-Hanek above),
     * 2^-12 (cos rounds to 1); the hard cases of the whole run and of the
     * Cody-Waite range's run (tests/test_math.c, hard and hard_cw) */
    {"sinf", sb_cpu_sinf_n, sb_sinf,
     {0.78539819f, 1.5707964f, 3.1415927f, 4.712389f, 6.2831855f, 1570.7964f, 0x1p28f, 0x1p-12f,
      1647099.3f, 102.10176f},
     {0x73243f06u, 0xc6199998u, 0xf3243f06u, 0x46199998u, 0x67a9242bu, 0xe7a9242bu, 0x55cafb2au,
      0xd5cafb2au, 0x4371ade3u, 0xc371ade3u, 0x5f208d82u, 0xdf208d82u, 0x45a8abb3u, 0xc5a8abb3u,
      0x4967cb9bu, 0xc967cb9bu, 0x4aa5a796u, 0xcaa5a796u, 0x42d44528u, 0xc2d44528u}, SB_UNARY_SIN},
    {"cosf", sb_cpu_cosf_n, sb_cosf,
     {0.78539819f, 1.5707964f, 3.1415927f, 4.712389f, 6.2831855f, 1570.7964f, 0x1p28f, 0x1p-12f,
      1647099.3f, 102.10176f},
     {0x7a4b1a27u, 0xd9443c0au, 0xe115cb11u, 0xfa4b1a27u, 0x59443c0au, 0x5f18b878u, 0x6115cb11u,
      0xdf18b878u, 0xb9800000u, 0x39800000u, 0xbc107fe6u, 0x3c107fe6u, 0x424790ceu, 0xc24790ceu,
      0x47a0e238u, 0xc7a0e238u, 0x4a01dca4u, 0xca01dca4u, 0x42378db8u, 0xc2378db8u}, SB_UNARY_COS},
    /* expf's thresholds + 1.25, erff's / sqrt(1/2) */
    {"expf_sub", expf_sub_batch, expf_sub_scalar,
     {89.97283935546875f, 90.25f, -86.08654f, -102.72208f, -102.75f, 1.25f, 2.25f}, {0}, -1},
    {"erff_mul", erff_mul_batch, erff_mul_scalar,
     {5.656854f, 5.542562f, 0.70710677f, 1.0606601f, 1.4142135f, 1.7677670f, 2.1213202f,
      2.8284271f, 3.5355339f, 4.2426405f, 5.3033009f},
     {0}, -1},
};
#define NFNS (int)(sizeof fns / sizeof fns[0])

static float u2f(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }
static uint32_t f2u(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }

typedef struct {
    float *v;
    int64_t n, cap;
} vec;

static void push(vec *a, float x) {
    if (a->n == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 1 << 16;
        a->v = realloc(a->v, (size_t)a->cap * sizeof(float));
        if (!a->v) { fprintf(stderr, "out of memory\n"); exit(1); }
    }
    a->v[a->n++] = x;
}
static void push_bits(vec *a, uint32_t u) { push(a, u2f(u)); }

/* Every float whose bit pattern is within `radius` of x's, both signs. */
static void push_window(vec *a, float x, uint32_t radius) {
    uint32_t c = f2u(x) & 0x7fffffffu;
    uint32_t lo = c > radius ? c - radius : 0, hi = c + radius;
    if (hi > 0x7f800000u) hi = 0x7f800000u;
    for (uint32_t u = lo; u <= hi; u++) {
        push_bits(a, u);
        push_bits(a, u | 0x80000000u);
    }
}

static uint64_t lcg = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(lcg >> 32);
}

static void build_inputs(vec *a, const fn_info *fn, int quick) {
    a->n = 0;
    static const uint32_t specials[] = {
        0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u,
        0x7f800001u, 0xff800001u, 0x7fa12345u, 0xffbfffffu, 0x7fffffffu, 0xffffffffu,
        0x7fc00001u, 0x00000001u, 0x80000001u, 0x007fffffu, 0x807fffffu, 0x00800000u,
        0x80800000u, 0x7f7fffffu, 0xff7fffffu, 0x3f800000u, 0xbf800000u,
    };
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) push_bits(a, specials[i]);
    for (int i = 0; i < 20; i++)
        for (int d = -2; d <= 2; d++) {
            push_bits(a, fn->hard[i] + (uint32_t)d);
            push_bits(a, (fn->hard[i] + (uint32_t)d) ^ 0x80000000u);
        }
    /* powers of two (normal and subnormal) and neighbours */
    for (int e = -149; e <= 127; e++) {
        uint32_t p = f2u(ldexpf(1.0f, e));
        for (int d = -3; d <= 3; d++) {
            push_bits(a, p + (uint32_t)d);
            push_bits(a, (p + (uint32_t)d) ^ 0x80000000u);
        }
    }
    uint32_t radius = quick ? 1u << 10 : 1u << 14;
    for (int t = 0; t < 12 && fn->thresholds[t] != 0.0f; t++)
        push_window(a, fn->thresholds[t], radius);
    push_window(a, 0.0f, quick ? 1u << 12 : 1u << 17); /* tiny and subnormal */
    /* strided sweep of the whole bit space; a prime stride visits every
     * residue class, so each exponent and mantissa pattern is touched */
    uint32_t stride = quick ? 65537u : 1031u;
    for (uint64_t u = 7; u < (1ull << 32); u += stride) push_bits(a, (uint32_t)u);
    int nrand = quick ? 1 << 16 : 1 << 20;
    for (int i = 0; i < nrand; i++) push_bits(a, rnd());
}

/* Compares one batch result with the reference; returns mismatches and
 * prints the first (unless what is NULL). */
static int64_t compare(const char *what, const fn_info *fn, const float *x, const float *got,
                       const float *want, int64_t n) {
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++)
        if (f2u(got[i]) != f2u(want[i])) {
            if (bad == 0 && what)
                fprintf(stderr, "%s %s(%a = 0x%08x) = 0x%08x, scalar 0x%08x\n", what, fn->name,
                        (double)x[i], f2u(x[i]), f2u(got[i]), f2u(want[i]));
            bad++;
        }
    return bad;
}

static void check_bulk(const fn_info *fn, const vec *in, const float *want, float *out) {
    for (int isa = 0; isa < SB_ISA_COUNT; isa++) {
        if (!sb_isa_supported((sb_isa_level)isa)) continue;
        CHECK_OK(sb_set_isa((sb_isa_level)isa));
        const char *name = sb_isa_name((sb_isa_level)isa);
        fn->batch(in->v, out, in->n);
        int64_t bad = compare(name, fn, in->v, out, want, in->n);
        CHECK(bad == 0, "%s/%s: %" PRId64 " of %" PRId64 " results differ from the scalar function",
              fn->name, name, bad, in->n);
        /* in place */
        memcpy(out, in->v, (size_t)in->n * sizeof(float));
        fn->batch(out, out, in->n);
        bad = compare(name, fn, in->v, out, want, in->n);
        CHECK(bad == 0, "%s/%s in place: %" PRId64 " results differ", fn->name, name, bad);
    }
}

/* Short and odd lengths at every start offset, with guards around. */
static void check_lengths(const fn_info *fn, const vec *in) {
    enum { MAXN = 80, GUARD = 20 };
    static const int lens[] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15,
                               16, 17, 18, 19, 20, 23, 24, 25, 31, 32, 33, 40, 47, 63, 64, 65, 79};
    float src[MAXN + 2 * GUARD], dst[MAXN + 2 * GUARD], want[MAXN];
    const float guard = u2f(0x7fa5a5a5u);
    for (int isa = 0; isa < SB_ISA_COUNT; isa++) {
        if (!sb_isa_supported((sb_isa_level)isa)) continue;
        sb_set_isa((sb_isa_level)isa);
        int64_t bad = 0;
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            int n = lens[li];
            for (int off = 0; off < 4; off++) {
                for (int k = 0; k < MAXN + 2 * GUARD; k++) src[k] = dst[k] = guard;
                /* mix specials, hard cases and ordinary values */
                for (int i = 0; i < n; i++) {
                    uint32_t k = (rnd() % 2) ? (uint32_t)(i * 7 % 40) : rnd() % (uint32_t)in->n;
                    float v = in->v[k];
                    src[GUARD + off + i] = v;
                    want[i] = fn->scalar(v);
                }
                fn->batch(src + GUARD + off, dst + GUARD + off, n);
                for (int k = 0; k < MAXN + 2 * GUARD; k++) {
                    int i = k - GUARD - off;
                    uint32_t w = (i >= 0 && i < n) ? f2u(want[i]) : f2u(guard);
                    if (f2u(dst[k]) != w) bad++;
                }
                /* in place */
                fn->batch(src + GUARD + off, src + GUARD + off, n);
                for (int i = 0; i < n; i++)
                    if (f2u(src[GUARD + off + i]) != f2u(want[i])) bad++;
                if (f2u(src[GUARD + off - 1]) != f2u(guard) ||
                    f2u(src[GUARD + off + n]) != f2u(guard))
                    bad++;
            }
        }
        CHECK(bad == 0, "%s/%s: short/unaligned/in-place lengths: %" PRId64 " wrong words",
              fn->name, sb_isa_name((sb_isa_level)isa), bad);
        /* a negative length writes nothing */
        float one = 1.0f, o = guard;
        fn->batch(&one, &o, -5);
        CHECK(f2u(o) == f2u(guard), "%s/%s: n < 0 wrote output", fn->name,
              sb_isa_name((sb_isa_level)isa));
    }
}

/* The public unary op at every ISA level x thread count of
 * tests/support/fastpath.h, on the input set's head (specials, hard cases,
 * powers of two) and every 13th input after it (threshold windows, sweep,
 * random): each thread count splits the array at other points. */
static void check_unary_op(const fn_info *fn, const vec *in, const float *want) {
    if (fn->op < 0) return;
    enum { HEAD = 8192, STEP = 13 };
    int64_t m = 0, cap = HEAD + in->n / STEP + 1;
    float *x = malloc((size_t)cap * sizeof(float)), *w = malloc((size_t)cap * sizeof(float));
    float *out = malloc((size_t)cap * sizeof(float));
    if (!x || !w || !out) { fprintf(stderr, "out of memory\n"); exit(1); }
    for (int64_t i = 0; i < in->n; i += i < HEAD ? 1 : STEP, m++) {
        x[m] = in->v[i];
        w[m] = want[i];
    }
    sb_tensor tx, ty;
    memset(&tx, 0, sizeof tx);
    tx.dtype = SB_F32;
    tx.ndim = 1;
    tx.shape[0] = m;
    tx.strides[0] = 1;
    ty = tx;
    tx.data = x;
    ty.data = out;
    for (int c = 0; c < sb_test_config_count(); c++) {
        sb_test_config_apply(c);
        memset(out, 0, (size_t)m * sizeof(float));
        CHECK_OK(sb_unary((sb_unary_op)fn->op, &tx, &ty));
        int64_t bad = compare(sb_test_config_name(c), fn, x, out, w, m);
        CHECK(bad == 0, "%s op [%s]: %" PRId64 " of %" PRId64 " results differ from the scalar function",
              fn->name, sb_test_config_name(c), bad, m);
    }
    sb_test_config_reset();
    free(x);
    free(w);
    free(out);
}

/* The check above must be able to fail: a result with one flipped bit is
 * caught. */
static void check_detects(void) {
    /* the vector exp kernels' spelling of the scalar kernel's 1.0 / 720 */
    volatile double num = 1.0;
    CHECK(num / 720 == SB_VM_EXP_C6, "SB_VM_EXP_C6 is not RN(1/720)");
    float x[3] = {1.0f, 2.0f, 3.0f}, y[3], w[3];
    for (int i = 0; i < 3; i++) w[i] = sb_expf(x[i]);
    sb_cpu_expf_n(x, y, 3);
    y[1] = u2f(f2u(y[1]) ^ 1u);
    CHECK(compare(NULL, &fns[0], x, y, w, 3) == 1,
          "the comparison misses a one-ulp difference");
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    int quick = sb_test_quick();
    vec in = {0};
    check_detects();
    for (int f = 0; f < NFNS; f++) {
        const fn_info *fn = &fns[f];
        build_inputs(&in, fn, quick);
        float *want = malloc((size_t)in.n * sizeof(float));
        float *out = malloc((size_t)in.n * sizeof(float));
        if (!want || !out) { fprintf(stderr, "out of memory\n"); return 1; }
        for (int64_t i = 0; i < in.n; i++) want[i] = fn->scalar(in.v[i]);
        check_bulk(fn, &in, want, out);
        check_lengths(fn, &in);
        check_unary_op(fn, &in, want);
        free(want);
        free(out);
    }
    sb_set_isa(sb_isa_best());
    free(in.v);
    return sb_test_finish();
}
