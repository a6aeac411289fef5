/* src/cpu/vmath_simd.h - the batch correctly rounded math kernels
 * (src/cpu/vmath.h), written once over a small vector vocabulary and
 * included by each vmath_<isa>.c, which defines the vocabulary with its
 * intrinsics. Not installed.
 *
 * Why the result is the scalar function's, bit for bit. Each sb_<f>f in
 * src/math/ computes a binary64 value y of f(x) with relative error below
 * about 2^-50 (the bound in math_internal.h, sb_exp_fast, sb_log_fast and
 * the function's file), returns (float)(y - y*eps) when it equals
 * (float)(y + y*eps), eps = SB_FAST_EPS = 2^-44 (sb_round_check), and
 * otherwise goes to its double-double slow path; it is correctly rounded on
 * all 2^32 inputs (make verify-math). Every lane below computes its own y'
 * of f(x) and applies the same test with the same IEEE double-to-float
 * conversion (cvtpd2ps / FCVTN under the contract's environment: nearest
 * even, subnormals kept). When the test passes, f(x) lies in the enclosure
 * and the float it returns is RN(f(x)), which is exactly the scalar
 * function's result; when it fails, or the input is NaN or another special
 * case, the lane gets the scalar code's constant (at the thresholds named
 * in math_internal.h: exp overflow/underflow, expm1 saturation, tanh/erf
 * saturation, signed zeros) or the scalar function itself
 * (src/cpu/vmath_internal.h). So all that matters is that y' obeys the
 * scalar bound (expf and erff meet it by algorithms of their own, each
 * with its bound in its section below; the rest as follows):
 *  - most steps are the scalar code's IEEE operations on the same operands
 *    in the same order, with the same constants and table entries (read at
 *    the same index), hence bitwise the same values. The integer steps are
 *    re-expressed exactly: k = RN(a*64/ln2) is read from the bits of
 *    z = a*64/ln2 + 1.5*2^52 (low bits = k in two's complement), j = k & 63,
 *    and 2^e = 2^((k-j)/64) is the bits ((z & ~63) << 46) + (1023 << 52),
 *    which is (e + 1023) << 52 modulo 2^64 since 1.5*2^52 << 46 vanishes;
 *    log's exponent e goes to double exactly as bits(2^52 + E) - (2^52+1023);
 *    erf's piece (int)(4a) by truncation, clamped so that special
 *    lanes index inside the table.
 *  - VM_FMA(a, b, c) = a*b + c, VM_ADDMUL(c, a, b) = c + a*b and
 *    VM_FNMA(a, b, c) = c - a*b are one fused operation where the ISA has
 *    one (VM_FUSED: AVX2, AVX-512) and the scalar code's two operations, in
 *    its order, where it has not (SSE2, NEON: there y' is bitwise the scalar
 *    y). Fused, the exp reduction r = (a - kd*L1) - kd*L2 is still bitwise
 *    the scalar r: kd*L1 and kd*L2 are exact in the scalar code (a has 24
 *    significant bits, |k| < 2^14), so fused and unfused round the same
 *    exact value once. The polynomial steps (Horner p*r + c of exp, log1p
 *    and erf, t*p + tlo, e*ln2 + L) get one rounding where the scalar code
 *    has two. The scalar bound is derived in the standard model
 *    fl(a op b) = (a op b)(1 + d), |d| <= 2^-53, for every operation; a
 *    fused step is the instance of that model with the product's d = 0, so
 *    the same bound holds for y'. (The values may then differ from the
 *    scalar y in the last bits; the returned floats cannot.)
 * `make verify-vmath` confirms equality with the scalar functions on all
 * 2^32 inputs of every function at every level (docs/perf/vmath.md).
 *
 * The vocabulary. A block is VM_W floats (one vm_f), evaluated as two
 * halves of VM_W/2 binary64 lanes (vm_d):
 *
 *   vm_d, vm_dm, vm_i   binary64 vector, its comparison mask, 64-bit ints
 *   vm_f, vm_fm         binary32 vector of VM_W lanes, its comparison mask
 *   VM_SFX(name)        name with the ISA suffix
 *   VM_D(x), VM_I(x), VM_F(x)                 broadcast constants
 *   VM_ADD VM_SUB VM_MUL VM_DIV(a, b)         one IEEE binary64 operation
 *   VM_FMA VM_ADDMUL VM_FNMA                  as above (fused iff VM_FUSED)
 *   VM_ASI(d), VM_ASD(i)                      bit casts
 *   VM_IAND VM_IOR VM_IADD VM_ISUB(a, b), VM_ICLR(a, b) = a & ~b,
 *   VM_ISHL VM_ISHR(a, n)                     64-bit lane integer steps
 *   VM_DGE VM_DLT(a, b) -> vm_dm, VM_DMAND, VM_DSEL(m, a, b) = m ? a : b
 *   VM_EXP_TAB(j, &t, &tlo)     sb_exp_tab[j][0], [1] for j in 0..63
 *   VM_EXP16_TAB(j) -> vm_d     sb_exp_tab[4j][0] = RN(2^(j/16)), j in 0..15
 *   VM_LOG_TAB(bin, &c, &l1, &l2)  sb_log_tab[bin][0..2] for bin in 0..127
 *   VM_ERF_PIECE(v)             (double)(int)v clamped to [0, SB_ERF_PIECES-1]
 *                               (NaN, inf and huge lanes land inside)
 *   vm_erf_rows, VM_ERF_ROWS(fi, &rows)  the lanes' erf pieces fi,
 *                               prepared for
 *   VM_ERF_COEF(rows, k)        sb_erf_p[fi][k] in each lane, k < 12 (a
 *                               constant after unrolling)
 *   VM_FLOAD VM_FSTORE, VM_LO VM_HI(f) -> vm_d (the halves, exactly)
 *   VM_FSUB VM_FMUL(a, b)       one IEEE binary32 operation per lane (the
 *                               argument's operation, load_arg)
 *   VM_ROUND(y0, y1, &ok) -> vm_f   sb_round_check on both halves: the
 *                               floats, and the mask of settled lanes
 *   VM_FGT VM_FLT VM_FGE VM_FEQ(a, b), VM_FORD(a) -> vm_fm (quiet, ordered)
 *   VM_FMOR VM_FMAND(m, m), VM_FSEL(m, a, b) = m ? a : b, VM_FBITS(m)
 *   VM_FABS(x), VM_FSIGNED(r, x) = r with x's sign bit or-ed in,
 *   VM_FXORSIGN(r, x) = r with x's sign bit xor-ed in
 *   VM_IXOR(a, b), VM_IODD(i) -> vm_dm (lanes with bit 0 set),
 *   VM_DMOR(m, m)                             (sin/cos)
 *
 * Included only where the unit's ISA is compiled in. */

#include <stdint.h>
#include "cpu/vmath_internal.h"
#include "math/math_internal.h"

/* ---- the exp kernel: sb_exp_fast, lane by lane ------------------------------ */

typedef struct {
    vm_d s, t, tail;
} VM_SFX(vexp_parts);

/* sb_exp_fast_kr in two steps, so that expf keeps the statement order (and
 * so the instructions) it was proven with: the table index j and the bits
 * of 2^e from the shifter sum z = k + 1.5*2^52 (whose low bits hold the
 * integer k), then the parts of 2^(k/64) * e^r. */
typedef struct {
    vm_i j, sbits;
} VM_SFX(vexp_scale);

static inline VM_SFX(vexp_scale) VM_SFX(vexp_scale_of)(vm_d z) {
    VM_SFX(vexp_scale) sc;
    vm_i zi = VM_ASI(z);
    sc.j = VM_IAND(zi, VM_I(63));
    sc.sbits = VM_IADD(VM_ISHL(VM_ICLR(zi, VM_I(63)), 46), VM_I(0x3ff0000000000000));
    return sc;
}

/* e^r - 1 by its degree-6 Taylor polynomial, sb_exp_fast_kr's steps. */
static inline vm_d VM_SFX(exp_poly)(vm_d r) {
    vm_d p = VM_D(SB_EXP_C6);
    p = VM_FMA(p, r, VM_D(sb_exp_coef[5][0]));
    p = VM_FMA(p, r, VM_D(sb_exp_coef[4][0]));
    p = VM_FMA(p, r, VM_D(sb_exp_coef[3][0]));
    p = VM_FMA(p, r, VM_D(0.5));
    return VM_ADDMUL(r, VM_MUL(r, r), p);
}

static inline VM_SFX(vexp_parts) VM_SFX(vexp_kr)(VM_SFX(vexp_scale) sc, vm_d r) {
    vm_d p = VM_SFX(exp_poly)(r);
    VM_SFX(vexp_parts) f;
    vm_d tlo;
    f.s = VM_ASD(sc.sbits);
    VM_EXP_TAB(sc.j, &f.t, &tlo);
    f.tail = VM_FMA(f.t, p, tlo);
    return f;
}

/* sb_exp_fast: k = RN(a*64/ln2), r = (a - k*L1) - k*L2. */
static inline VM_SFX(vexp_parts) VM_SFX(vexp_fast)(vm_d a) {
    const vm_d shifter = VM_D(SB_EXP_SHIFTER);
    vm_d z = VM_ADD(VM_MUL(a, VM_D(SB_EXP_INVL)), shifter);
    vm_d kd = VM_SUB(z, shifter);
    VM_SFX(vexp_scale) sc = VM_SFX(vexp_scale_of)(z);
    vm_d r = VM_FNMA(kd, VM_D(SB_EXP_L2), VM_FNMA(kd, VM_D(SB_EXP_L1), a));
    return VM_SFX(vexp_kr)(sc, r);
}

/* ---- the log kernel: sb_log_fast(a, a_lo), lane by lane ---------------------- */

static inline vm_d VM_SFX(log1p_poly)(vm_d r) {
    vm_d p = VM_D(sb_log1p_coef[8][0]);
    for (int n = 7; n >= 2; n--) p = VM_FMA(p, r, VM_D(sb_log1p_coef[n][0]));
    return VM_ADDMUL(r, VM_MUL(r, r), p);
}

/* sb_log_reduce and the table row: a = 2^e m, r = m c - 1 (exact), and
 * -log c = l1 + l2. */
typedef struct {
    vm_d e, r, l1, l2;
} VM_SFX(vlog_parts);

static inline VM_SFX(vlog_parts) VM_SFX(vlog_reduce)(vm_d a) {
    vm_i u = VM_ASI(a);
    vm_i bin = VM_IAND(VM_ISHR(u, 45), VM_I(127));
    vm_i up = VM_ISHR(bin, 6); /* bins >= 64 use m/2 */
    vm_i mbits = VM_IOR(VM_IAND(u, VM_I(0x000fffffffffffff)),
                        VM_ISUB(VM_I(0x3ff0000000000000), VM_ISHL(up, 52)));
    vm_i ebits = VM_IADD(VM_ISHR(u, 52), up);
    VM_SFX(vlog_parts) p;
    p.e = VM_SUB(VM_ASD(VM_IOR(ebits, VM_I(0x4330000000000000))), VM_D(0x1p52 + 1023));
    vm_d c;
    VM_LOG_TAB(bin, &c, &p.l1, &p.l2);
    p.r = VM_SUB(VM_MUL(VM_ASD(mbits), c), VM_D(1.0));
    return p;
}

static inline vm_d VM_SFX(vlog_fast)(vm_d a, vm_d a_lo) {
    VM_SFX(vlog_parts) p = VM_SFX(vlog_reduce)(a);
    vm_d small = VM_ADD(VM_FMA(p.e, VM_D(SB_LN2_LO), p.l2), VM_DIV(a_lo, a));
    return VM_ADD(VM_FMA(p.e, VM_D(SB_LN2_HI), p.l1), VM_ADD(small, VM_SFX(log1p_poly)(p.r)));
}

/* ---- block plumbing ---------------------------------------------------------- */

/* The block's function arguments: x[0..W) with arg's operation
 * (vmath_internal.h), one binary32 operation per lane. */
static inline __attribute__((always_inline)) vm_f VM_SFX(load_arg)(const float *x, sb_vm_arg arg) {
    vm_f xv = VM_FLOAD(x);
    switch (arg.op) {
    case SB_VM_ARG_SUB: return VM_FSUB(xv, VM_F(arg.c));
    case SB_VM_ARG_MUL: return VM_FMUL(xv, VM_F(arg.c));
    case SB_VM_ARG_X: break;
    }
    return xv;
}

/* Stores the block; returns the lanes left to the scalar function (xv: the
 * arguments, saved for it). NaN arguments always are (the scalar code
 * quiets them). */
static inline uint32_t VM_SFX(finish)(vm_f xv, vm_f res, vm_fm ok, float *y, float *xsave) {
    ok = VM_FMAND(ok, VM_FORD(xv));
    uint32_t bad = ~VM_FBITS(ok) & (uint32_t)((1ull << VM_W) - 1);
    if (bad) VM_FSTORE(xsave, xv);
    VM_FSTORE(y, res);
    return bad;
}

/* ---- expf: sb_expf ------------------------------------------------------------
 * Not the scalar code's steps: a coarser reduction with no table tail,
 * cheaper by a table lookup per half (one vpermt2pd at AVX-512 against
 * eight permutes and six blends for the 64 x 2 table), with its own proven
 * bound. The argument for the bits (this file's header) needs only that
 * bound below 2^-44 - 2^-53.
 *
 * Algorithm, a = (double)x, |a| <= 104 (other lanes are replaced below):
 *   k  = RN(a * 16/ln2) as z - 1.5*2^52, z = a*RN(16/ln2) + 1.5*2^52 (fused
 *        or not: either way an integer with |a*16/ln2 - k| <= 1/2 + 2^-40);
 *        j = k & 15 and 2^e = 2^((k-j)/16) from z's low bits as for the
 *        64-entry kernel above ((z & ~15) << 48: |k| < 2^12 fits the 16 bits
 *        kept), e in [-151, 129], so 2^e and s * v below are exact normal
 *        doubles;
 *   r  = (a - k*L1') - k*L2', L1' = 4 SB_EXP_L1, L2' = 4 SB_EXP_L2 (36-bit
 *        constants, |k| < 2^12: both products exact; a - k L1' is a
 *        multiple of 2^-40 below 2^-5 in magnitude, exact; the second step
 *        rounds once): |r| <= ln2/32 (1 + 2^-40) = 0.02166, and
 *        |r - (a - k ln2/16)| <= 2^-53 |r| + 2^12 * 4 * 2^-84 < 2^-58.4;
 *   p  = the degree-6 Taylor polynomial of e^r - 1 (the 64-entry kernel's
 *        coefficients and Horner steps, fused or not);
 *   T  = sb_exp_tab[4j][0] = RN(2^(j/16)), relative error <= 2^-53;
 *   y  = 2^e * (T*p + T) (one fused step, or a product and a sum).
 * Relative error of y against e^a, each term bounded for |r| <= 0.02166
 * and unfused steps (the fused ones round less):
 *   truncation |r|^7/7! e^|r| / e^r           <= 4.62e-16 = 2^-50.94
 *   T                                          <= 2^-53
 *   r's error (e^dr - 1)                      <= 2^-58.4
 *   Horner (steps' roundings, coefficients RN(1/n!)), relative to 1 + p
 *                                              <= 2^-58.3
 *   T*p rounded (|T p| <= 0.0443, 1 + p >= 0.978) <= 2^-58.4
 *   T + T*p rounded                            <= 2^-53
 * in all below 6.93e-16 < 2^-50.35, far inside 2^-44 - 2^-53; make
 * verify-vmath compares every level with sb_expf on all 2^32 inputs. */

static inline vm_d VM_SFX(exp_y)(vm_d a) {
    const vm_d shifter = VM_D(SB_EXP_SHIFTER);
    vm_d z = VM_FMA(a, VM_D(SB_EXP_INVL / 4), shifter);
    vm_d kd = VM_SUB(z, shifter);
    vm_i zi = VM_ASI(z);
    vm_d s = VM_ASD(VM_IADD(VM_ISHL(VM_ICLR(zi, VM_I(15)), 48), VM_I(0x3ff0000000000000)));
    vm_d t = VM_EXP16_TAB(VM_IAND(zi, VM_I(15)));
    vm_d r = VM_FNMA(kd, VM_D(4 * SB_EXP_L2), VM_FNMA(kd, VM_D(4 * SB_EXP_L1), a));
    return VM_MUL(s, VM_FMA(t, VM_SFX(exp_poly)(r), t));
}

SB_VM_BLOCK VM_SFX(expf_block)(const float *x, float *y, float *xsave, sb_vm_arg arg) {
    vm_f xv = VM_SFX(load_arg)(x, arg);
    vm_fm ok;
    vm_f res = VM_ROUND(VM_SFX(exp_y)(VM_LO(xv)), VM_SFX(exp_y)(VM_HI(xv)), &ok);
    vm_fm over = VM_FGT(xv, VM_F(SB_EXPF_OVERFLOW));
    vm_fm under = VM_FLT(xv, VM_F(SB_EXPF_UNDERFLOW));
    res = VM_FSEL(over, VM_F(__builtin_inff()), res);
    res = VM_FSEL(under, VM_F(0.0f), res);
    return VM_SFX(finish)(xv, res, VM_FMOR(ok, VM_FMOR(over, under)), y, xsave);
}

/* ---- expm1f: sb_expm1f --------------------------------------------------------- */

static inline vm_d VM_SFX(expm1_y)(vm_d a) {
    VM_SFX(vexp_parts) f = VM_SFX(vexp_fast)(a);
    return VM_ADD(VM_SUB(VM_MUL(f.s, f.t), VM_D(1.0)), VM_MUL(f.s, f.tail));
}

SB_VM_BLOCK VM_SFX(expm1f_block)(const float *x, float *y, float *xsave, sb_vm_arg arg) {
    vm_f xv = VM_SFX(load_arg)(x, arg);
    vm_fm ok;
    vm_f res = VM_ROUND(VM_SFX(expm1_y)(VM_LO(xv)), VM_SFX(expm1_y)(VM_HI(xv)), &ok);
    vm_fm zero = VM_FEQ(xv, VM_F(0.0f));
    vm_fm over = VM_FGT(xv, VM_F(SB_EXPF_OVERFLOW));
    vm_fm under = VM_FLT(xv, VM_F(SB_EXPM1F_SATURATE));
    res = VM_FSEL(zero, xv, res); /* expm1(-0) = -0 */
    res = VM_FSEL(over, VM_F(__builtin_inff()), res);
    res = VM_FSEL(under, VM_F(-1.0f), res);
    ok = VM_FMOR(ok, VM_FMOR(zero, VM_FMOR(over, under)));
    return VM_SFX(finish)(xv, res, ok, y, xsave);
}

/* ---- logf: sb_logf --------------------------------------------------------------
 * Only 0 < x < inf is computed here; 0, negatives, inf and NaN go to the
 * scalar function. */

SB_VM_BLOCK VM_SFX(logf_block)(const float *x, float *y, float *xsave, sb_vm_arg arg) {
    vm_f xv = VM_SFX(load_arg)(x, arg);
    vm_fm ok;
    vm_d zero = VM_D(0.0);
    vm_f res = VM_ROUND(VM_SFX(vlog_fast)(VM_LO(xv), zero), VM_SFX(vlog_fast)(VM_HI(xv), zero), &ok);
    vm_fm normal = VM_FMAND(VM_FGT(xv, VM_F(0.0f)), VM_FLT(xv, VM_F(__builtin_inff())));
    return VM_SFX(finish)(xv, res, VM_FMAND(ok, normal), y, xsave);
}

/* ---- log1pf: sb_log1pf -----------------------------------------------------------
 * Both of the scalar code's branches are computed and the lane's own one
 * kept: for SB_LOG1P_NEAR_LO <= a < SB_LOG1P_NEAR_HI the log1p polynomial of
 * a, otherwise the log kernel of the exact sum 1 + a = s_hi + s_lo
 * (two_sum). Only -1 < x < inf, x != 0 is computed here. */

static inline vm_d VM_SFX(log1p_y)(vm_d a) {
    vm_d direct = VM_SFX(log1p_poly)(a);
    vm_d one = VM_D(1.0);
    vm_d s = VM_ADD(one, a), bb = VM_SUB(s, one);
    vm_d s_lo = VM_ADD(VM_SUB(one, VM_SUB(s, bb)), VM_SUB(a, bb));
    vm_d via_log = VM_SFX(vlog_fast)(s, s_lo);
    vm_dm near = VM_DMAND(VM_DGE(a, VM_D(SB_LOG1P_NEAR_LO)), VM_DLT(a, VM_D(SB_LOG1P_NEAR_HI)));
    return VM_DSEL(near, direct, via_log);
}

SB_VM_BLOCK VM_SFX(log1pf_block)(const float *x, float *y, float *xsave, sb_vm_arg arg) {
    vm_f xv = VM_SFX(load_arg)(x, arg);
    vm_fm ok;
    vm_f res = VM_ROUND(VM_SFX(log1p_y)(VM_LO(xv)), VM_SFX(log1p_y)(VM_HI(xv)), &ok);
    vm_fm inside = VM_FMAND(VM_FGT(xv, VM_F(-1.0f)), VM_FLT(xv, VM_F(__builtin_inff())));
    vm_fm zero = VM_FEQ(xv, VM_F(0.0f));
    res = VM_FSEL(zero, xv, res); /* log1p(-0) = -0 */
    return VM_SFX(finish)(xv, res, VM_FMOR(VM_FMAND(ok, inside), zero), y, xsave);
}

/* ---- tanhf: sb_tanhf ------------------------------------------------------------
 * On |x|, sign copied last. x = +-0 needs no special lane: a = 0 gives
 * e = 0, y = 0/2 = +0, which passes the test and takes x's sign. */

static inline vm_d VM_SFX(tanh_y)(vm_d ax) {
    VM_SFX(vexp_parts) f = VM_SFX(vexp_fast)(VM_MUL(VM_D(2.0), ax));
    vm_d e = VM_ADD(VM_SUB(VM_MUL(f.s, f.t), VM_D(1.0)), VM_MUL(f.s, f.tail));
    return VM_DIV(e, VM_ADD(e, VM_D(2.0)));
}

SB_VM_BLOCK VM_SFX(tanhf_block)(const float *x, float *y, float *xsave, sb_vm_arg arg) {
    vm_f xv = VM_SFX(load_arg)(x, arg), ax = VM_FABS(xv);
    vm_fm ok;
    vm_f res = VM_ROUND(VM_SFX(tanh_y)(VM_LO(ax)), VM_SFX(tanh_y)(VM_HI(ax)), &ok);
    vm_fm sat = VM_FGE(ax, VM_F(SB_TANHF_SATURATE));
    res = VM_FSEL(sat, VM_F(1.0f), res);
    return VM_SFX(finish)(xv, VM_FSIGNED(res, xv), VM_FMOR(ok, sat), y, xsave);
}

/* ---- erff: sb_erff ----------------------------------------------------------------
 * Not the scalar code's two branches: one polynomial per lane, piece
 * i = (int)(4a) of the sixteen rows of sb_erf_p (clamped so that other
 * lanes read inside the table). Rows 2..15 are the scalar code's pieces
 * for a >= 1/2, with its t = a - (i/4 + 1/8) (exact); rows 0 and 1 serve
 * only the batch kernels: row 1 the piece [1/4, 1/2) around 3/8, row 0
 * [0, 1/4) as a polynomial in t = a with a zero constant term (a times a
 * fit of erf(a)/a), so its relative accuracy holds down to a -> 0, where
 * the scalar code's a*P0(a^2) branch would otherwise have to be computed
 * beside the pieces in every block. Bound, relative to erf(a): the fits
 * (math_tables.h; row 0 measured with its rounded coefficients 2^-54.1)
 * below 2^-54; degree-11 Horner, fused or not, below 2^-51 (rows >= 1 are
 * dominated by their constant term, |t| <= 1/8; row 0 by c1 t, |t| < 1/4,
 * and ends in the product with t); in all below 2^-50.8, inside the
 * 2^-44 - 2^-53 the argument needs; make verify-vmath compares every level
 * with sb_erff on all 2^32 inputs. On |x|, sign copied last; +-0 gives
 * p(0) = +0, which passes the test and takes x's sign. */

/* always_inline: with AVX2's 12 coefficient registers (vm_erf_rows) the
 * compiler's size heuristics would otherwise call it out of line, twice per
 * block. */
static inline __attribute__((always_inline)) vm_d VM_SFX(erf_y)(vm_d a) {
    vm_d fi = VM_ERF_PIECE(VM_MUL(a, VM_D(SB_ERF_PIECE_SCALE)));
    vm_d mid = VM_ADD(VM_MUL(VM_D(SB_ERF_PIECE_WIDTH), fi), VM_D(SB_ERF_PIECE_MID_OFFSET));
    vm_d t = VM_SUB(a, VM_DSEL(VM_DLT(a, VM_D(SB_ERF_PIECE_WIDTH)), VM_D(0.0), mid));
    vm_erf_rows rows;
    VM_ERF_ROWS(fi, &rows);
    vm_d p = VM_ERF_COEF(rows, 11);
    for (int k = 10; k >= 0; k--) p = VM_FMA(p, t, VM_ERF_COEF(rows, k));
    return p;
}

SB_VM_BLOCK VM_SFX(erff_block)(const float *x, float *y, float *xsave, sb_vm_arg arg) {
    vm_f xv = VM_SFX(load_arg)(x, arg), ax = VM_FABS(xv);
    vm_fm ok;
    vm_f res = VM_ROUND(VM_SFX(erf_y)(VM_LO(ax)), VM_SFX(erf_y)(VM_HI(ax)), &ok);
    vm_fm sat = VM_FGE(ax, VM_F(SB_ERFF_SATURATE));
    res = VM_FSEL(sat, VM_F(1.0f), res);
    return VM_SFX(finish)(xv, VM_FSIGNED(res, xv), VM_FMOR(ok, sat), y, xsave);
}

/* ---- exp2f: sb_exp2f ------------------------------------------------------------
 * k = RN(64x) from the shifter sum z = 64a + 1.5*2^52 (64a is exact, so z
 * and k are the scalar code's), r = a - k/64 (exact, as in the scalar
 * code, fused or not), u = RN(r ln2_hi), then the exp kernel's second half.
 * x >= 128 gives +inf and x < -150 gives +0, the scalar constants; the
 * garbage those lanes compute is discarded. */

static inline vm_d VM_SFX(exp2_y)(vm_d a) {
    const vm_d shifter = VM_D(SB_EXP_SHIFTER);
    vm_d z = VM_ADD(VM_MUL(a, VM_D(64.0)), shifter);
    vm_d kd = VM_SUB(z, shifter);
    vm_d r = VM_FNMA(kd, VM_D(0x1p-6), a);
    vm_d u = VM_MUL(r, VM_D(SB_LN2_HI));
    VM_SFX(vexp_parts) f = VM_SFX(vexp_kr)(VM_SFX(vexp_scale_of)(z), u);
    return VM_MUL(f.s, VM_ADD(f.t, f.tail));
}

SB_VM_BLOCK VM_SFX(exp2f_block)(const float *x, float *y, float *xsave, sb_vm_arg arg) {
    vm_f xv = VM_SFX(load_arg)(x, arg);
    vm_fm ok;
    vm_f res = VM_ROUND(VM_SFX(exp2_y)(VM_LO(xv)), VM_SFX(exp2_y)(VM_HI(xv)), &ok);
    vm_fm over = VM_FGE(xv, VM_F(SB_EXP2F_OVERFLOW));
    vm_fm under = VM_FLT(xv, VM_F(SB_EXP2F_UNDERFLOW));
    res = VM_FSEL(over, VM_F(__builtin_inff()), res);
    res = VM_FSEL(under, VM_F(0.0f), res);
    return VM_SFX(finish)(xv, res, VM_FMOR(ok, VM_FMOR(over, under)), y, xsave);
}

/* ---- log2f: sb_log2f ------------------------------------------------------------
 * y = e + (L_hi + (L_lo + log1p(r))) * (1/ln2)_hi on the log kernel's
 * reduction; the last product-and-sum is one fused step where the ISA has
 * FMA (a power of two still gives y = e exactly: r = 0, L = 0). Only
 * 0 < x < inf is computed here; 0, negatives, inf and NaN go to the scalar
 * function. */

static inline vm_d VM_SFX(log2_y)(vm_d a) {
    VM_SFX(vlog_parts) p = VM_SFX(vlog_reduce)(a);
    vm_d l = VM_ADD(p.l1, VM_ADD(p.l2, VM_SFX(log1p_poly)(p.r)));
    return VM_ADDMUL(p.e, l, VM_D(SB_INVLN2_HI));
}

SB_VM_BLOCK VM_SFX(log2f_block)(const float *x, float *y, float *xsave, sb_vm_arg arg) {
    vm_f xv = VM_SFX(load_arg)(x, arg);
    vm_fm ok;
    vm_f res = VM_ROUND(VM_SFX(log2_y)(VM_LO(xv)), VM_SFX(log2_y)(VM_HI(xv)), &ok);
    vm_fm normal = VM_FMAND(VM_FGT(xv, VM_F(0.0f)), VM_FLT(xv, VM_F(__builtin_inff())));
    return VM_SFX(finish)(xv, res, VM_FMAND(ok, normal), y, xsave);
}

/* ---- sinf, cosf: sb_sinf, sb_cosf -----------------------------------------------
 * On a = |x|, every lane through one branch-free path:
 *  - pi/4 < a < 2^28: the Cody-Waite reduction of sb_trig_reduce_cw, the
 *    quadrant k mod 4 read from the low bits of the shifter sum (as exp's
 *    k), kept only when |r| > 2^-22, as in the scalar code;
 *  - a < pi/4: r = a exactly, quadrant 0;
 *  - then q = (k + want_cos) mod 4 picks sin r or cos r (q odd) and the
 *    sign (q >= 2), and sb_sincos_poly evaluates it: its bound (sin 2^-51,
 *    cos 2^-49.4 relative, for any |r| <= pi/4 + 2^-23) holds for the exact
 *    r = a of the small range too, so the enclosure test yields RN(f(x)),
 *    which is the scalar result (the scalar code evaluates that range by
 *    Horner; both are correctly rounded). The sign is applied to y before
 *    the test (the test is symmetric; y is never 0 there: sin r with
 *    |r| > 2^-22 or cos r).
 * Fused steps: k's shifter sum is unfused (the scalar k), a - k P1 is exact
 * either way, the two_sum is additions only, e - k P3 and the polynomial
 * steps may be fused (one rounding fewer than the standard-model bound
 * counts). sin's sign of x is applied to the float last (sin(-0) = -0).
 * Left to the scalar function: a >= 2^28 (Payne-Hanek), inf, NaN, Cody-Waite
 * lanes with |r| <= 2^-22, and lanes whose test fails. */

static inline vm_d VM_SFX(sincos_y)(vm_d a, int want_cos, vm_dm *keep) {
    const vm_d shifter = VM_D(SB_EXP_SHIFTER);
    vm_d z = VM_ADD(VM_MUL(a, VM_D(SB_TRIG_INVPIO2)), shifter);
    vm_d kd = VM_SUB(z, shifter);
    vm_d t1 = VM_FNMA(kd, VM_D(SB_TRIG_CW_P1), a);
    vm_d b = VM_MUL(kd, VM_D(-SB_TRIG_CW_P2)); /* exact */
    vm_d s = VM_ADD(t1, b), bb = VM_SUB(s, t1);
    vm_d e = VM_ADD(VM_SUB(t1, VM_SUB(s, bb)), VM_SUB(b, bb)); /* two_sum(t1, b) */
    vm_d r = VM_ADD(s, VM_FNMA(kd, VM_D(SB_TRIG_CW_P3), e));
    /* Below pi/4, a * RN(2/pi) < 0.49999998, so k = 0, and every step
     * above is then exact: r = a. The select only makes that explicit. */
    vm_dm small = VM_DLT(a, VM_D((double)sb_m_u2f(SB_TRIG_PIO4_BITS)));
    r = VM_DSEL(small, a, r);
    vm_i q = VM_IAND(VM_IADD(VM_ASI(z), VM_I(want_cos)), VM_I(3)); /* k's low bits */
    vm_d ar = VM_ASD(VM_ICLR(VM_ASI(r), VM_I(0x8000000000000000)));
    *keep = VM_DMOR(small, VM_DLT(VM_D(0x1p-22), ar));
    /* sb_sincos_poly with the lane's row: A = r (sin) or 1 (cos) */
    vm_dm use_cos = VM_IODD(q);
    const double *cs = sb_sincos_fast_coef[0], *cc = sb_sincos_fast_coef[1];
#define VM_SC(i) VM_DSEL(use_cos, VM_D(cc[i]), VM_D(cs[i]))
    vm_d A = VM_DSEL(use_cos, VM_D(1.0), r);
    vm_d zz = VM_MUL(r, r), z2 = VM_MUL(zz, zz), z4 = VM_MUL(z2, z2), z8 = VM_MUL(z4, z4);
    vm_d p01 = VM_FMA(VM_SC(1), zz, VM_SC(0)), p23 = VM_FMA(VM_SC(3), zz, VM_SC(2));
    vm_d p45 = VM_FMA(VM_SC(5), zz, VM_SC(4)), p67 = VM_FMA(VM_SC(7), zz, VM_SC(6));
    vm_d p = VM_FMA(VM_SC(8), z8, VM_ADDMUL(VM_FMA(p23, z2, p01), VM_FMA(p67, z2, p45), z4));
#undef VM_SC
    vm_d y = VM_ADDMUL(A, VM_MUL(A, zz), p);
    /* -y for q >= 2 */
    return VM_ASD(VM_IXOR(VM_ASI(y), VM_ISHL(VM_IAND(q, VM_I(2)), 62)));
}

static inline __attribute__((always_inline)) uint32_t VM_SFX(sincosf_block)(const float *x, float *y,
                                                                             float *xsave, sb_vm_arg arg,
                                                                             int want_cos) {
    vm_f xv = VM_SFX(load_arg)(x, arg), ax = VM_FABS(xv);
    vm_fm ok;
    vm_dm keep0, keep1;
    vm_d y0 = VM_SFX(sincos_y)(VM_LO(ax), want_cos, &keep0);
    vm_d y1 = VM_SFX(sincos_y)(VM_HI(ax), want_cos, &keep1);
    /* a lane the reduction cannot serve must fail the test: y becomes the
     * midpoint 1 + 2^-24 of two floats, whose enclosure rounds to both (a
     * NaN would not do: its two ends are the same NaN bits) */
    const vm_d reject = VM_D(1.0 + 0x1p-24);
    vm_f res = VM_ROUND(VM_DSEL(keep0, y0, reject), VM_DSEL(keep1, y1, reject), &ok);
    ok = VM_FMAND(ok, VM_FLT(ax, VM_F(sb_m_u2f(SB_TRIG_CW_BITS))));
    if (!want_cos) res = VM_FXORSIGN(res, xv); /* sin(-a) = -sin(a) */
    return VM_SFX(finish)(xv, res, ok, y, xsave);
}

SB_VM_BLOCK VM_SFX(sinf_block)(const float *x, float *y, float *xsave, sb_vm_arg arg) {
    return VM_SFX(sincosf_block)(x, y, xsave, arg, 0);
}

SB_VM_BLOCK VM_SFX(cosf_block)(const float *x, float *y, float *xsave, sb_vm_arg arg) {
    return VM_SFX(sincosf_block)(x, y, xsave, arg, 1);
}

/* ---- entry points and the level's table ---------------------------------------- */

#define VM_DEFINE(name)                                                        \
    static void VM_SFX(name##_n)(const float *x, float *y, int64_t n) {       \
        sb_vm_drive(x, y, n, VM_W, VM_SFX(name##_block), sb_##name,            \
                    (sb_vm_arg){SB_VM_ARG_X, 0.0f});                           \
    }
VM_DEFINE(expf)
VM_DEFINE(logf)
VM_DEFINE(tanhf)
VM_DEFINE(expm1f)
VM_DEFINE(log1pf)
VM_DEFINE(erff)
VM_DEFINE(exp2f)
VM_DEFINE(log2f)
VM_DEFINE(sinf)
VM_DEFINE(cosf)
#undef VM_DEFINE

/* The same block kernels with the argument's operation in front. */
#define VM_DEFINE_ARG(name, opname, op)                                                 \
    static void VM_SFX(name##_##opname##_n)(const float *x, float c, float *y, int64_t n) { \
        sb_vm_drive(x, y, n, VM_W, VM_SFX(name##_block), sb_##name, (sb_vm_arg){op, c});  \
    }
VM_DEFINE_ARG(expf, sub, SB_VM_ARG_SUB)
VM_DEFINE_ARG(erff, mul, SB_VM_ARG_MUL)
#undef VM_DEFINE_ARG

const sb_vmath_table VM_SFX(sb_vmath) = {
    .expf_n = VM_SFX(expf_n),     .logf_n = VM_SFX(logf_n),         .tanhf_n = VM_SFX(tanhf_n),
    .expm1f_n = VM_SFX(expm1f_n), .log1pf_n = VM_SFX(log1pf_n),     .erff_n = VM_SFX(erff_n),
    .exp2f_n = VM_SFX(exp2f_n),   .log2f_n = VM_SFX(log2f_n),       .sinf_n = VM_SFX(sinf_n),
    .cosf_n = VM_SFX(cosf_n),     .expf_sub_n = VM_SFX(expf_sub_n), .erff_mul_n = VM_SFX(erff_mul_n)};
