/* src/gpu/kernels/math.cl - the correctly rounded functions on the device
 * (sb_expf ... sb_erff of src/math, compiled from the same source, see
 * math_prelude.cl) and the pointwise ops built on them: unary exp and log,
 * the activations tanh, sigmoid, silu, gelu (both forms), softplus, elu,
 * mish and logsigmoid forward and backward (contract section 9, src/ref/activation.c). The
 * program text includes pointwise.cl before this file (strided operands:
 * sb_pw_offset). */

/* The GELU constants (bits stated in the contract, src/ref/ref_pointwise.h). */
#define SB_MATH_GELU_SQRT1_2 0x1.6a09e6p-1f
#define SB_MATH_GELU_INV_SQRT_2PI 0x1.988454p-2f
#define SB_MATH_GELU_SQRT_2_PI 0x1.988454p-1f
#define SB_MATH_GELU_KAPPA 0x1.6e4e26p-5f
#define SB_MATH_GELU_KAPPA3 0x1.12ba9cp-3f

/* y[i] = f(x[i]) for f = 0 expf, 1 logf, 2 expm1f, 3 log1pf, 4 tanhf,
 * 5 erff, 6 exp2f, 7 log2f, 8 sinf, 9 cosf (SB_OCL_MATH_EVAL_FUNCTIONS of
 * src/opencl/opencl_internal.h): the device's functions compared with the
 * host's. */
SB_KERNEL sb_math_eval(int f, SB_LONG n, SB_GLOBAL const float *x, SB_LONG x0,
                       SB_GLOBAL float *y, SB_LONG y0) {
    SB_FOR_EACH(i, n) {
        float v = x[x0 + i], r;
        switch (f) {
        case 0: r = sb_expf(v); break;
        case 1: r = sb_logf(v); break;
        case 2: r = sb_expm1f(v); break;
        case 3: r = sb_log1pf(v); break;
        case 4: r = sb_tanhf(v); break;
        case 5: r = sb_erff(v); break;
        case 6: r = sb_exp2f(v); break;
        case 7: r = sb_log2f(v); break;
        case 8: r = sb_sinf(v); break;
        default: r = sb_cosf(v); break;
        }
        y[y0 + i] = r;
    }
}

// out = f(x) for the sb_unary_op codes exp 3, log 4, sin 7, cos 8, exp2 9,
// log2 10; operands out, x
SB_KERNEL sb_math_unary(int op, SB_LONG n, SB_GLOBAL const SB_LONG *geom, SB_GLOBAL float *out,
                        SB_LONG oo, SB_GLOBAL const float *x, SB_LONG xo) {
    SB_FOR_EACH(i, n) {
        float v = x[xo + sb_pw_offset(geom, 1, i)], r;
        switch (op) {
        case 3: r = sb_expf(v); break;
        case 7: r = sb_sinf(v); break;
        case 8: r = sb_cosf(v); break;
        case 9: r = sb_exp2f(v); break;
        case 10: r = sb_log2f(v); break;
        default: r = sb_logf(v); break;
        }
        out[oo + sb_pw_offset(geom, 0, i)] = r;
    }
}

// dx of sin (op 7: dy * cos x) and cos (op 8: dy * -sin x); operands dx, x,
// y, dy as sb_pw_unary_grad's
SB_KERNEL sb_math_unary_grad(int op, SB_LONG n, SB_GLOBAL const SB_LONG *geom,
                             SB_GLOBAL float *dx, SB_LONG dxo, SB_GLOBAL const float *x,
                             SB_LONG xo, SB_GLOBAL const float *y, SB_LONG yo,
                             SB_GLOBAL const float *dy, SB_LONG dyo) {
    SB_FOR_EACH(i, n) {
        float xv = x[xo + sb_pw_offset(geom, 1, i)], g = dy[dyo + sb_pw_offset(geom, 3, i)];
        (void)y;
        (void)yo;
        dx[dxo + sb_pw_offset(geom, 0, i)] = op == 7 ? g * sb_cosf(xv) : g * -sb_sinf(xv);
    }
}

#define SB_MATH_ACT_TANH 2
#define SB_MATH_ACT_SIGMOID 3
#define SB_MATH_ACT_SILU 4
#define SB_MATH_ACT_GELU 5
#define SB_MATH_ACT_SOFTPLUS 6
#define SB_MATH_ACT_ELU 10
#define SB_MATH_ACT_MISH 11
#define SB_MATH_ACT_LOGSIGMOID 12

/* p0, p1, p2: softplus's beta and threshold, or ELU's alpha, scale and
 * input_scale. */
SB_INLINE float sb_math_act_forward(int kind, int approximate, float p0, float p1, float p2,
                                    float v) {
    switch (kind) {
    case SB_MATH_ACT_ELU: return v > 0.0f ? v * p1 : sb_expm1f(v * p2) * (p0 * p1);
    case SB_MATH_ACT_MISH: return v * sb_tanhf(sb_log1pf(sb_expf(v)));
    case SB_MATH_ACT_LOGSIGMOID: {
        float m = 0.0f < v ? 0.0f : v;
        return m - sb_log1pf(sb_expf(-SB_AS_F32(SB_AS_U32(v) & 0x7fffffffu)));
    }
    case SB_MATH_ACT_TANH: return sb_tanhf(v);
    case SB_MATH_ACT_SIGMOID: return 1.0f / (1.0f + sb_expf(-v));
    case SB_MATH_ACT_SILU: return v / (1.0f + sb_expf(-v));
    case SB_MATH_ACT_GELU: {
        float t;
        if (approximate) {
            float cube = (v * v) * v;
            float inner = SB_MATH_GELU_SQRT_2_PI * (v + SB_MATH_GELU_KAPPA * cube);
            t = sb_tanhf(inner);
        } else {
            t = sb_erff(v * SB_MATH_GELU_SQRT1_2);
        }
        return (v * 0.5f) * (1.0f + t);
    }
    default: { /* softplus: p0 = beta, p1 = threshold */
        float z = v * p0;
        return z > p1 ? v : sb_log1pf(sb_expf(z)) / p0;
    }
    }
}

SB_INLINE float sb_math_act_backward(int kind, int approximate, float p0, float p1, float p2,
                                     float v, float g) {
    switch (kind) {
    case SB_MATH_ACT_ELU:
        return v > 0.0f ? g * p1 : ((g * p2) * (p0 * p1)) * sb_expf(v * p2);
    case SB_MATH_ACT_MISH: {
        float s = 1.0f / (1.0f + sb_expf(-v));
        float t = sb_tanhf(sb_log1pf(sb_expf(v)));
        return g * (t + (v * s) * (1.0f - t * t));
    }
    case SB_MATH_ACT_LOGSIGMOID: {
        float z = sb_expf(-SB_AS_F32(SB_AS_U32(v) & 0x7fffffffu));
        float q = z / (1.0f + z);
        return g * (v < 0.0f ? 1.0f - q : q);
    }
    case SB_MATH_ACT_SILU: {
        float s = 1.0f / (1.0f + sb_expf(-v));
        return (g * s) * (1.0f + v * (1.0f - s));
    }
    case SB_MATH_ACT_GELU: {
        float d;
        if (approximate) {
            float sq = v * v;
            float cube = sq * v;
            float inner = SB_MATH_GELU_SQRT_2_PI * (v + SB_MATH_GELU_KAPPA * cube);
            float th = sb_tanhf(inner);
            float left = 0.5f * v;
            float right = 1.0f + th;
            float left_d = 0.5f * right;
            float tanh_d = 1.0f - th * th;
            float inner_d = SB_MATH_GELU_SQRT_2_PI * (1.0f + SB_MATH_GELU_KAPPA3 * sq);
            float right_d = (left * tanh_d) * inner_d;
            d = left_d + right_d;
        } else {
            float cdf = 0.5f * (1.0f + sb_erff(v * SB_MATH_GELU_SQRT1_2));
            float pdf = SB_MATH_GELU_INV_SQRT_2PI * sb_expf((v * v) * -0.5f);
            d = cdf + v * pdf;
        }
        return g * d;
    }
    default: { /* softplus */
        float z = v * p0;
        if (z > p1) return g;
        float e = sb_expf(z);
        return (g * e) / (e + 1.0f);
    }
    }
}

// forward: operands out, x; backward (silu, gelu, softplus, elu, mish, logsigmoid): out, x, dy
SB_KERNEL sb_math_activation(int kind, int backward, int approximate, float p0, float p1,
                             float p2, SB_LONG n, SB_GLOBAL const SB_LONG *geom, SB_GLOBAL float *out,
                             SB_LONG oo, SB_GLOBAL const float *x, SB_LONG xo,
                             SB_GLOBAL const float *dy, SB_LONG dyo) {
    SB_FOR_EACH(i, n) {
        float v = x[xo + sb_pw_offset(geom, 1, i)];
        float r = backward ? sb_math_act_backward(kind, approximate, p0, p1, p2, v,
                                                  dy[dyo + sb_pw_offset(geom, 2, i)])
                           : sb_math_act_forward(kind, approximate, p0, p1, p2, v);
        out[oo + sb_pw_offset(geom, 0, i)] = r;
    }
}

/* ---- pow (sb_binary_op 6: sb_powf of src/math/powf.c) ----
 * The same parameters as pointwise.cl's sb_pw_binary, sb_pw_binary_scalar
 * and sb_pw_binary_grad (op is always pow here), so the host launches
 * either with one argument list. */

// out = pow(a, b); a, b broadcast to out's shape through geom (operands out, a, b)
SB_KERNEL sb_math_pow(int op, SB_LONG n, SB_GLOBAL const SB_LONG *geom, SB_GLOBAL float *out,
                      SB_LONG oo, SB_GLOBAL const float *a, SB_LONG ao, SB_GLOBAL const float *b,
                      SB_LONG bo) {
    (void)op;
    SB_FOR_EACH(i, n) {
        out[oo + sb_pw_offset(geom, 0, i)] =
            sb_powf(a[ao + sb_pw_offset(geom, 1, i)], b[bo + sb_pw_offset(geom, 2, i)]);
    }
}

// out = pow(x, s) (operands out, x)
SB_KERNEL sb_math_pow_scalar(int op, SB_LONG n, SB_GLOBAL const SB_LONG *geom,
                             SB_GLOBAL float *out, SB_LONG oo, SB_GLOBAL const float *x,
                             SB_LONG xo, float s) {
    (void)op;
    SB_FOR_EACH(i, n) {
        out[oo + sb_pw_offset(geom, 0, i)] = sb_powf(x[xo + sb_pw_offset(geom, 1, i)], s);
    }
}

// the gradient of the base (which 0) or the exponent (which 1) at the
// broadcast shape, PyTorch's pow_backward_self / pow_backward_exponent as
// src/ref/elementwise.c orders them; operands out, dy, a, b
SB_KERNEL sb_math_pow_grad(int op, int which, SB_LONG n, SB_GLOBAL const SB_LONG *geom,
                           SB_GLOBAL float *out, SB_LONG oo, SB_GLOBAL const float *dy,
                           SB_LONG dyo, SB_GLOBAL const float *a, SB_LONG ao,
                           SB_GLOBAL const float *b, SB_LONG bo) {
    (void)op;
    SB_FOR_EACH(i, n) {
        float g = dy[dyo + sb_pw_offset(geom, 1, i)];
        float x = a[ao + sb_pw_offset(geom, 2, i)], y = b[bo + sb_pw_offset(geom, 3, i)];
        float r;
        if (which == 0) r = y == 0.0f ? 0.0f : g * (y * sb_powf(x, y - 1.0f));
        else r = x == 0.0f && y >= 0.0f ? 0.0f : g * (sb_powf(x, y) * sb_logf(x));
        out[oo + sb_pw_offset(geom, 0, i)] = r;
    }
}
