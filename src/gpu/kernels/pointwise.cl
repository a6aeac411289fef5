/* src/gpu/kernels/pointwise.cl - elementwise ops, activations without
 * elementary functions, strided copy/fill and the optimizer updates, in the
 * portable dialect (src/gpu/kernels/dialect.h). Each element is the fixed
 * sequence of binary32 operations the contract (sections 9 and 14) and the
 * reference kernels (src/ref/elementwise.c, activation.c, src/optim) state,
 * so the result does not depend on which work-item computes it.
 *
 * Strided operands: `geom` is a device array of SB_PW_GEOM longs:
 *   geom[0]            ndim (0..8) of the iteration shape (out's shape)
 *   geom[1 + d]        shape[d]
 *   geom[9 + 8*k + d]  operand k's stride of dim d (k = 0 is out, then the
 *                      inputs in argument order; 0 on broadcast dims)
 * and every operand is a base pointer plus an element offset. */

#define SB_PW_GEOM 41

/* The element offset of operand k for the row-major position i. */
SB_INLINE SB_LONG sb_pw_offset(SB_GLOBAL const SB_LONG *geom, int k, SB_LONG i) {
    SB_LONG off = 0;
    for (int d = (int)geom[0] - 1; d >= 0; d--) {
        SB_LONG s = geom[1 + d];
        off += (i % s) * geom[9 + 8 * k + d];
        i /= s;
    }
    return off;
}

/* ---- binary ops (sb_binary_op order) ---- */
#define SB_PW_OP_ADD 0
#define SB_PW_OP_SUB 1
#define SB_PW_OP_MUL 2
#define SB_PW_OP_DIV 3
#define SB_PW_OP_MAXIMUM 4
#define SB_PW_OP_MINIMUM 5

/* The total order -0 < +0 with NaN on top, a's NaN first (contract 9). */
SB_INLINE float sb_pw_maximum(float a, float b) {
    if (SB_ISNAN(a)) return a;
    if (SB_ISNAN(b)) return b;
    if (a > b) return a;
    if (b > a) return b;
    return SB_SIGNBIT(a) ? b : a;
}

SB_INLINE float sb_pw_minimum(float a, float b) {
    if (SB_ISNAN(a)) return a;
    if (SB_ISNAN(b)) return b;
    if (a < b) return a;
    if (b < a) return b;
    return SB_SIGNBIT(a) ? a : b;
}

SB_INLINE float sb_pw_binary1(int op, float a, float b) {
    switch (op) {
    case SB_PW_OP_ADD: return a + b;
    case SB_PW_OP_SUB: return a - b;
    case SB_PW_OP_MUL: return a * b;
    case SB_PW_OP_DIV: return a / b;
    case SB_PW_OP_MAXIMUM: return sb_pw_maximum(a, b);
    default: return sb_pw_minimum(a, b);
    }
}

// out = a op b; a, b broadcast to out's shape through geom (operands out, a, b)
SB_KERNEL sb_pw_binary(int op, SB_LONG n, SB_GLOBAL const SB_LONG *geom, SB_GLOBAL float *out,
                       SB_LONG oo, SB_GLOBAL const float *a, SB_LONG ao, SB_GLOBAL const float *b,
                       SB_LONG bo) {
    SB_FOR_EACH(i, n) {
        out[oo + sb_pw_offset(geom, 0, i)] =
            sb_pw_binary1(op, a[ao + sb_pw_offset(geom, 1, i)], b[bo + sb_pw_offset(geom, 2, i)]);
    }
}

// out = x op s (operands out, x)
SB_KERNEL sb_pw_binary_scalar(int op, SB_LONG n, SB_GLOBAL const SB_LONG *geom,
                              SB_GLOBAL float *out, SB_LONG oo, SB_GLOBAL const float *x,
                              SB_LONG xo, float s) {
    SB_FOR_EACH(i, n) {
        out[oo + sb_pw_offset(geom, 0, i)] = sb_pw_binary1(op, x[xo + sb_pw_offset(geom, 1, i)], s);
    }
}

/* Which operand of maximum/minimum takes the gradient: 1 a, 2 b, 3 a tie. */
SB_INLINE int sb_pw_winner(int is_max, float a, float b) {
    if (SB_ISNAN(a)) return 1;
    if (SB_ISNAN(b)) return 2;
    if (a == b) return 3;
    return (is_max ? a > b : a < b) ? 1 : 2;
}

// out = the gradient of a (which 0) or b (which 1) at the broadcast shape;
// operands out, dy, a, b
SB_KERNEL sb_pw_binary_grad(int op, int which, SB_LONG n, SB_GLOBAL const SB_LONG *geom,
                            SB_GLOBAL float *out, SB_LONG oo, SB_GLOBAL const float *dy,
                            SB_LONG dyo, SB_GLOBAL const float *a, SB_LONG ao,
                            SB_GLOBAL const float *b, SB_LONG bo) {
    SB_FOR_EACH(i, n) {
        float g = dy[dyo + sb_pw_offset(geom, 1, i)];
        float x = a[ao + sb_pw_offset(geom, 2, i)], y = b[bo + sb_pw_offset(geom, 3, i)];
        float da = 0.0f, db = 0.0f;
        if (op == SB_PW_OP_ADD) { da = g; db = g; }
        else if (op == SB_PW_OP_SUB) { da = g; db = -g; }
        else if (op == SB_PW_OP_MUL) { da = g * y; db = g * x; }
        else if (op == SB_PW_OP_DIV) { da = g / y; db = -g * ((x / y) / y); }
        else {
            int w = sb_pw_winner(op == SB_PW_OP_MAXIMUM, x, y);
            float halfg = g * 0.5f;
            da = w == 1 ? g : (w == 3 ? halfg : 0.0f);
            db = w == 2 ? g : (w == 3 ? halfg : 0.0f);
        }
        out[oo + sb_pw_offset(geom, 0, i)] = which == 0 ? da : db;
    }
}

/* ---- unary ops (sb_unary_op order; exp, log, sin, cos, exp2 and log2
 * need the correctly rounded functions and are in math.cl; the gradients
 * of sin and cos too) ---- */
#define SB_PW_UN_NEG 0
#define SB_PW_UN_ABS 1
#define SB_PW_UN_SQRT 2
#define SB_PW_UN_SQUARE 5
#define SB_PW_UN_RECIPROCAL 6
#define SB_PW_UN_EXP2 9
#define SB_PW_UN_LOG2 10
#define SB_PW_UN_RSQRT 11
#define SB_PW_LN2F 0x1.62e43p-1f /* ln 2 rounded, src/ref/ref_pointwise.h */

// operands out, x
SB_KERNEL sb_pw_unary(int op, SB_LONG n, SB_GLOBAL const SB_LONG *geom, SB_GLOBAL float *out,
                      SB_LONG oo, SB_GLOBAL const float *x, SB_LONG xo) {
    SB_FOR_EACH(i, n) {
        float v = x[xo + sb_pw_offset(geom, 1, i)], r;
        if (op == SB_PW_UN_NEG) r = SB_AS_F32(SB_AS_U32(v) ^ 0x80000000u);
        else if (op == SB_PW_UN_ABS) r = SB_AS_F32(SB_AS_U32(v) & 0x7fffffffu);
        else if (op == SB_PW_UN_SQRT) r = SB_SQRT(v);
        else if (op == SB_PW_UN_SQUARE) r = v * v;
        else if (op == SB_PW_UN_RSQRT) r = 1.0f / SB_SQRT(v);
        else r = 1.0f / v;
        out[oo + sb_pw_offset(geom, 0, i)] = r;
    }
}

SB_INLINE float sb_pw_sgn(float x) {
    if (x > 0.0f) return 1.0f;
    if (x < 0.0f) return -1.0f;
    if (x == 0.0f) return 0.0f;
    return x;
}

// dx from x, y = op(x), dy; operands dx, x, y, dy
SB_KERNEL sb_pw_unary_grad(int op, SB_LONG n, SB_GLOBAL const SB_LONG *geom, SB_GLOBAL float *dx,
                           SB_LONG dxo, SB_GLOBAL const float *x, SB_LONG xo,
                           SB_GLOBAL const float *y, SB_LONG yo, SB_GLOBAL const float *dy,
                           SB_LONG dyo) {
    SB_FOR_EACH(i, n) {
        float xv = x[xo + sb_pw_offset(geom, 1, i)], yv = y[yo + sb_pw_offset(geom, 2, i)];
        float g = dy[dyo + sb_pw_offset(geom, 3, i)], r;
        switch (op) {
        case SB_PW_UN_NEG: r = -g; break;
        case SB_PW_UN_ABS: r = g * sb_pw_sgn(xv); break;
        case SB_PW_UN_SQRT: r = g / (2.0f * yv); break;
        case 3: r = g * yv; break;  /* exp */
        case 4: r = g / xv; break;  /* log */
        case SB_PW_UN_SQUARE: r = g * (2.0f * xv); break;
        case SB_PW_UN_EXP2: r = (g * yv) * SB_PW_LN2F; break;
        case SB_PW_UN_LOG2: r = g / (xv * SB_PW_LN2F); break;
        case SB_PW_UN_RSQRT: r = (-0.5f * g) * ((yv * yv) * yv); break;
        default: r = -g * (yv * yv); break;
        }
        dx[dxo + sb_pw_offset(geom, 0, i)] = r;
    }
}

/* ---- activations without elementary functions (sb_act_kind order) ---- */
#define SB_PW_ACT_RELU 0
#define SB_PW_ACT_LEAKY 1
#define SB_PW_ACT_TANH 2
#define SB_PW_ACT_SIGMOID 3
#define SB_PW_ACT_HARDTANH 7
#define SB_PW_ACT_HARDSIGMOID 8
#define SB_PW_ACT_HARDSWISH 9
#define SB_PW_ACT_HARDSHRINK 13
#define SB_PW_ACT_SOFTSHRINK 14
#define SB_PW_ACT_THRESHOLD 15
#define SB_PW_ONE_SIXTH 0x1.555556p-3f /* 1/6 rounded, src/ref/ref_pointwise.h */

/* min(max(v, 0), 6): v = x + 3 is never -0, and a NaN v stays NaN
 * (src/ref/activation.c). */
SB_INLINE float sb_pw_clamp_0_6(float v) { return v < 0.0f ? 0.0f : (v > 6.0f ? 6.0f : v); }

/* src/ref/activation.c's element formulas: p0 is leaky relu's slope,
 * hardtanh's min_val, the shrinks' lambd or threshold's threshold, p1
 * hardtanh's max_val or threshold's value. */
SB_INLINE float sb_pw_act_forward(int kind, float v, float p0, float p1) {
    switch (kind) {
    case SB_PW_ACT_HARDTANH: return v < p0 ? p0 : (v > p1 ? p1 : v);
    case SB_PW_ACT_HARDSIGMOID: return sb_pw_clamp_0_6(v + 3.0f) / 6.0f;
    case SB_PW_ACT_HARDSWISH: return (v * sb_pw_clamp_0_6(v + 3.0f)) / 6.0f;
    case SB_PW_ACT_HARDSHRINK: return (v >= -p0 && v <= p0) ? 0.0f : v;
    case SB_PW_ACT_SOFTSHRINK: return v > p0 ? v - p0 : (v < -p0 ? v + p0 : (SB_ISNAN(v) ? v : 0.0f));
    case SB_PW_ACT_THRESHOLD: return v <= p0 ? p1 : v;
    default: return SB_ISNAN(v) ? v : (v > 0.0f ? v : (kind == SB_PW_ACT_RELU ? 0.0f : v * p0));
    }
}

// v is x (y for tanh and sigmoid), g the incoming gradient
SB_INLINE float sb_pw_act_backward(int kind, float v, float g, float p0, float p1) {
    switch (kind) {
    case SB_PW_ACT_RELU: return v <= 0.0f ? 0.0f : g;
    case SB_PW_ACT_LEAKY: return v > 0.0f ? g : g * p0;
    case SB_PW_ACT_TANH: return g * (1.0f - v * v);
    case SB_PW_ACT_HARDTANH: return (v > p0 && v < p1) ? g : 0.0f;
    case SB_PW_ACT_HARDSIGMOID: return (v > -3.0f && v < 3.0f) ? g * SB_PW_ONE_SIXTH : 0.0f;
    case SB_PW_ACT_HARDSWISH: return v < -3.0f ? 0.0f : (v >= 3.0f ? g : g * (v / 3.0f + 0.5f));
    case SB_PW_ACT_HARDSHRINK:
    case SB_PW_ACT_SOFTSHRINK: return (v < -p0 || v > p0) ? g : 0.0f;
    case SB_PW_ACT_THRESHOLD: return v <= p0 ? 0.0f : g;
    default: return (g * (1.0f - v)) * v; /* sigmoid */
    }
}

// forward: operands out, x; backward: out, x (y for tanh/sigmoid), dy
SB_KERNEL sb_pw_activation(int kind, int backward, float p0, float p1, SB_LONG n,
                           SB_GLOBAL const SB_LONG *geom, SB_GLOBAL float *out, SB_LONG oo,
                           SB_GLOBAL const float *x, SB_LONG xo, SB_GLOBAL const float *dy,
                           SB_LONG dyo) {
    SB_FOR_EACH(i, n) {
        float v = x[xo + sb_pw_offset(geom, 1, i)];
        out[oo + sb_pw_offset(geom, 0, i)] =
            backward ? sb_pw_act_backward(kind, v, dy[dyo + sb_pw_offset(geom, 2, i)], p0, p1)
                     : sb_pw_act_forward(kind, v, p0, p1);
    }
}

/* ---- copies, fills, scaling ---- */

// dst = src for 4-byte elements of any dtype (bits moved, never rounded)
SB_KERNEL sb_pw_copy32(SB_LONG n, SB_GLOBAL const SB_LONG *geom, SB_GLOBAL SB_U32 *dst, SB_LONG d0,
                       SB_GLOBAL const SB_U32 *src, SB_LONG s0) {
    SB_FOR_EACH(i, n) { dst[d0 + sb_pw_offset(geom, 0, i)] = src[s0 + sb_pw_offset(geom, 1, i)]; }
}

SB_KERNEL sb_pw_copy64(SB_LONG n, SB_GLOBAL const SB_LONG *geom, SB_GLOBAL SB_U64 *dst, SB_LONG d0,
                       SB_GLOBAL const SB_U64 *src, SB_LONG s0) {
    SB_FOR_EACH(i, n) { dst[d0 + sb_pw_offset(geom, 0, i)] = src[s0 + sb_pw_offset(geom, 1, i)]; }
}

SB_KERNEL sb_pw_fill(SB_LONG n, SB_GLOBAL const SB_LONG *geom, SB_GLOBAL float *out, SB_LONG oo,
                     float value) {
    SB_FOR_EACH(i, n) { out[oo + sb_pw_offset(geom, 0, i)] = value; }
}

// out = x, or x / divisor when divide (sum and mean backward); operands out, x
SB_KERNEL sb_pw_spread(int divide, float divisor, SB_LONG n, SB_GLOBAL const SB_LONG *geom,
                       SB_GLOBAL float *out, SB_LONG oo, SB_GLOBAL const float *x, SB_LONG xo) {
    SB_FOR_EACH(i, n) {
        float v = x[xo + sb_pw_offset(geom, 1, i)];
        out[oo + sb_pw_offset(geom, 0, i)] = divide ? v / divisor : v;
    }
}

/* ---- optimizer updates (contract section 14), dense ---- */

// the factors of sb_sgd_factors (computed on the host, contract 14)
SB_KERNEL sb_opt_sgd(float weight_decay, float momentum, float one_minus_dampening, float neg_lr,
                     int use_weight_decay, int use_momentum, int nesterov, int maximize,
                     int first, SB_LONG n, SB_GLOBAL float *param, SB_LONG po,
                     SB_GLOBAL const float *grad, SB_LONG go, SB_GLOBAL float *buf, SB_LONG bo) {
    SB_FOR_EACH(i, n) {
        float p = param[po + i];
        float g = maximize ? -grad[go + i] : grad[go + i];
        if (use_weight_decay) g = SB_FMA(p, weight_decay, g);
        if (use_momentum) {
            float b = first ? g : SB_FMA(g, one_minus_dampening, buf[bo + i] * momentum);
            buf[bo + i] = b;
            g = nesterov ? SB_FMA(b, momentum, g) : b;
        }
        param[po + i] = SB_FMA(g, neg_lr, p);
    }
}

// the factors of sb_adam_factors (computed on the host, contract 14)
SB_KERNEL sb_opt_adam(float weight_decay, float decay, float one_minus_beta1, float beta2,
                      float one_minus_beta2, float bias_correction2_sqrt, float eps,
                      float neg_step_size, int use_weight_decay, int decoupled, int amsgrad,
                      int maximize, int first, SB_LONG n, SB_GLOBAL float *param, SB_LONG po,
                      SB_GLOBAL const float *grad, SB_LONG go, SB_GLOBAL float *m_buf, SB_LONG mo,
                      SB_GLOBAL float *v_buf, SB_LONG vo, SB_GLOBAL float *vmax_buf, SB_LONG xo) {
    SB_FOR_EACH(i, n) {
        const float w1 = one_minus_beta1;
        float p = param[po + i];
        float g = maximize ? -grad[go + i] : grad[go + i];
        float m = first ? 0.0f : m_buf[mo + i];
        float v = first ? 0.0f : v_buf[vo + i];
        if (use_weight_decay) {
            if (decoupled) p = p * decay;
            else g = SB_FMA(p, weight_decay, g);
        }
        float d = g - m;
        m = w1 < 0.5f ? SB_FMA(w1, d, m) : SB_FMA(w1 - 1.0f, d, g);
        v = v * beta2;
        v = v + (one_minus_beta2 * g) * g;
        float s = v;
        if (amsgrad) {
            float vmax = first ? 0.0f : vmax_buf[xo + i];
            s = sb_pw_maximum(vmax, v);
            vmax_buf[xo + i] = s;
        }
        float denom = SB_SQRT(s) / bias_correction2_sqrt + eps;
        m_buf[mo + i] = m;
        v_buf[vo + i] = v;
        param[po + i] = p + (neg_step_size * m) / denom;
    }
}

/* ---- mean squared error (contract section 11), dense ---- */

// q[i] = (x[i] - y[i])^2, one product of the rounded difference
SB_KERNEL sb_loss_mse_terms(SB_LONG n, SB_GLOBAL const float *x, SB_LONG x0,
                            SB_GLOBAL const float *y, SB_LONG y0, SB_GLOBAL float *q,
                            SB_LONG q0) {
    SB_FOR_EACH(i, n) {
        float d = x[x0 + i] - y[y0 + i];
        q[q0 + i] = d * d;
    }
}

// dx[i] = ((x[i] - y[i]) * norm) * g, g = dloss[i] (none) or dloss[0];
// dy[i] = -dx[i] when wanted (PyTorch's order)
SB_KERNEL sb_loss_mse_grad(float norm, int per_element, int want_dy, SB_LONG n,
                           SB_GLOBAL const float *x, SB_LONG x0, SB_GLOBAL const float *y,
                           SB_LONG y0, SB_GLOBAL const float *dloss, SB_LONG l0,
                           SB_GLOBAL float *dx, SB_LONG dx0, SB_GLOBAL float *dy, SB_LONG dy0) {
    SB_FOR_EACH(i, n) {
        float g = per_element ? dloss[l0 + i] : dloss[l0];
        float v = ((x[x0 + i] - y[y0 + i]) * norm) * g;
        dx[dx0 + i] = v;
        if (want_dy) dy[dy0 + i] = -v;
    }
}
