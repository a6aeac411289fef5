/* Reference kernels for elementwise binary and unary ops, forward and
 * backward (contract "Elementwise"). Each output element is a fixed short
 * sequence of binary32 operations on the same-index input elements; the
 * build forbids contraction into FMA (-ffp-contract=off). */
#include <math.h>
#include "samebits/elementwise.h"
#include "samebits/math.h"
#include "core/internal.h"
#include "ref/ref_pointwise.h"

/* maximum/minimum use the total order -inf < ... < -0 < +0 < ... < +inf with
 * NaN above everything (and a's NaN before b's). A total order makes the op
 * commutative and associative on values, so a max-reduction gives the same
 * value whatever tree a GPU uses; -0 < +0 is IEEE 754-2019 maximum/minimum.
 * The NaN is returned as its input bits (no arithmetic touches it). */
static float maximum1(float a, float b) {
    if (sb_isnanf(a)) return a;
    if (sb_isnanf(b)) return b;
    if (a > b) return a;
    if (b > a) return b;
    return signbit(a) ? b : a; /* equal: only +-0 vs -+0 or identical bits */
}

static float minimum1(float a, float b) {
    if (sb_isnanf(a)) return a;
    if (sb_isnanf(b)) return b;
    if (a < b) return a;
    if (b < a) return b;
    return signbit(a) ? a : b;
}

float sb_ref_binary1(sb_binary_op op, float a, float b) {
    switch (op) {
    case SB_BINARY_ADD: return a + b;
    case SB_BINARY_SUB: return a - b;
    case SB_BINARY_MUL: return a * b;
    case SB_BINARY_DIV: return a / b;
    case SB_BINARY_MAXIMUM: return maximum1(a, b);
    case SB_BINARY_MINIMUM: return minimum1(a, b);
    case SB_BINARY_POW: return sb_powf(a, b);
    }
    return a; /* unreachable: the wrappers validate op */
}

float sb_ref_unary1(sb_unary_op op, float x) {
    switch (op) {
    case SB_UNARY_NEG: return -x;
    case SB_UNARY_ABS: return fabsf(x);
    case SB_UNARY_SQRT: return sqrtf(x);
    case SB_UNARY_EXP: return sb_expf(x);
    case SB_UNARY_LOG: return sb_logf(x);
    case SB_UNARY_SQUARE: return x * x;
    case SB_UNARY_RECIPROCAL: return 1.0f / x;
    case SB_UNARY_SIN: return sb_sinf(x);
    case SB_UNARY_COS: return sb_cosf(x);
    case SB_UNARY_EXP2: return sb_exp2f(x);
    case SB_UNARY_LOG2: return sb_log2f(x);
    case SB_UNARY_RSQRT: return 1.0f / sqrtf(x);
    }
    return x;
}

// a, b, out are (n,)
void sb_ref_binary(sb_binary_op op, int64_t n, const float *a, const float *b, float *out) {
    for (int64_t i = 0; i < n; i++) out[i] = sb_ref_binary1(op, a[i], b[i]);
}

// x, out are (n,)
void sb_ref_unary(sb_unary_op op, int64_t n, const float *x, float *out) {
    for (int64_t i = 0; i < n; i++) out[i] = sb_ref_unary1(op, x[i]);
}

/* Which operand of maximum/minimum gets the gradient: 1 = a, 2 = b, 3 = both
 * halves (a tie, including +0 vs -0 which compare equal: like PyTorch, the
 * gradient of a tie is split rather than given to an arbitrary side). */
static int extreme_winner(bool is_max, float a, float b) {
    if (sb_isnanf(a)) return 1;
    if (sb_isnanf(b)) return 2;
    if (a == b) return 3;
    return (is_max ? a > b : a < b) ? 1 : 2;
}

// dy, a, b, ga, gb are (n,) in the broadcast shape
void sb_ref_binary_backward(sb_binary_op op, int64_t n, const float *dy, const float *a,
                            const float *b, float *ga, float *gb) {
    for (int64_t i = 0; i < n; i++) {
        float g = dy[i], x = a[i], y = b[i], da = 0.0f, db = 0.0f;
        switch (op) {
        case SB_BINARY_ADD: da = g; db = g; break;
        case SB_BINARY_SUB: da = g; db = -g; break;
        case SB_BINARY_MUL: da = g * y; db = g * x; break;
        case SB_BINARY_DIV:
            /* d(a/b)/db = -a/b^2 evaluated as ((a/b)/b): a/b is the forward
             * value recomputed bit-exactly, and dividing twice never forms
             * b*b, which overflows for |b| > 2^64 and underflows for tiny b
             * where the true gradient is representable. PyTorch's order. */
            da = g / y;
            db = -g * ((x / y) / y);
            break;
        case SB_BINARY_POW:
            /* PyTorch's pow_backward_self and pow_backward_exponent, in
             * their order: a zero exponent and a zero base with a
             * non-negative exponent give +0 (not 0 * inf or 0 * NaN). */
            da = y == 0.0f ? 0.0f : g * (y * sb_powf(x, y - 1.0f));
            db = x == 0.0f && y >= 0.0f ? 0.0f : g * (sb_powf(x, y) * sb_logf(x));
            break;
        case SB_BINARY_MAXIMUM:
        case SB_BINARY_MINIMUM: {
            int w = extreme_winner(op == SB_BINARY_MAXIMUM, x, y);
            float half = g * 0.5f;
            da = w == 1 ? g : (w == 3 ? half : 0.0f);
            db = w == 2 ? g : (w == 3 ? half : 0.0f);
            break;
        }
        }
        if (ga) ga[i] = da;
        if (gb) gb[i] = db;
    }
}

/* sgn for the abs gradient: NaN stays NaN so a NaN input poisons its
 * gradient instead of silently producing dy * 0. */
static float sgn1(float x) {
    if (x > 0.0f) return 1.0f;
    if (x < 0.0f) return -1.0f;
    if (x == 0.0f) return 0.0f;
    return x;
}

// x, y (= op(x)), dy, dx are (n,)
void sb_ref_unary_backward(sb_unary_op op, int64_t n, const float *x, const float *y,
                           const float *dy, float *dx) {
    for (int64_t i = 0; i < n; i++) {
        float g = dy[i], r;
        switch (op) {
        case SB_UNARY_NEG: r = -g; break;
        case SB_UNARY_ABS: r = g * sgn1(x[i]); break;
        case SB_UNARY_SQRT: r = g / (2.0f * y[i]); break;
        case SB_UNARY_EXP: r = g * y[i]; break;
        case SB_UNARY_LOG: r = g / x[i]; break;
        case SB_UNARY_SQUARE: r = g * (2.0f * x[i]); break;
        case SB_UNARY_RECIPROCAL: r = -g * (y[i] * y[i]); break;
        /* PyTorch's derivative formulas in their order: grad * cos(x),
         * grad * -sin(x), grad * result * M_LN2, grad / (x * M_LN2) (M_LN2
         * becomes a float scalar), -0.5 * grad * result.pow(3) (pow 3 is
         * x * x * x). */
        case SB_UNARY_SIN: r = g * sb_cosf(x[i]); break;
        case SB_UNARY_COS: r = g * -sb_sinf(x[i]); break;
        case SB_UNARY_EXP2: r = (g * y[i]) * SB_LN2F; break;
        case SB_UNARY_LOG2: r = g / (x[i] * SB_LN2F); break;
        case SB_UNARY_RSQRT: r = (-0.5f * g) * ((y[i] * y[i]) * y[i]); break;
        default: r = g; break;
        }
        dx[i] = r;
    }
}
