/* src/cpu/pointwise_simd.h - the vector element loops of the pointwise
 * family, written once over a small set of vector macros and included by
 * each pointwise_<isa>.c, which defines the macros with its intrinsics:
 *
 *   V, M           vector of VN floats; comparison mask
 *   SFX(name)      name with the ISA suffix
 *   VLOAD/VSTORE   unaligned load/store     VSET1(x), VZERO()
 *   VADD VSUB VMUL VDIV VSQRT               one IEEE operation per lane
 *   VFMA(a, b, c)  fused a*b + c per lane (only if VHAVE_FMA)
 *   VNEG(v)        sign bit flipped (NaN included)
 *   VGT VLE VEQ(a, b), VUNORD(a), VSIGN(a)  (sign bit set) -> M
 *   VMOR VMAND(m, m) -> M;  VSEL(m, a, b): a where m, else b
 *
 * Every lane performs exactly the reference's per-element sequence
 * (ops_internal.h); the tails call the scalar steps. Comparisons are the
 * quiet/ordered forms matching C's `>`, `<=`, `==`. Included only when the
 * unit's ISA is compiled in. */

/* v < 0 ? 0 : (v > 6 ? 6 : v), the reference's clamp_0_6 (v = x + 3 is
 * never -0; NaN stays). */
static inline V SFX(clamp_0_6)(V v, V zero, V six) {
    return VSEL(VGT(zero, v), zero, VSEL(VGT(v, six), six, v));
}

static void SFX(relu_fwd)(int64_t n, const float *x, float *y) {
    const V zero = VZERO();
    int64_t i = 0;
    for (; i + VN <= n; i += VN) {
        V v = VLOAD(x + i);
        /* NaN keeps its bits, x > 0 keeps x, everything else is +0 */
        VSTORE(y + i, VSEL(VMOR(VGT(v, zero), VUNORD(v)), v, zero));
    }
    for (; i < n; i++) y[i] = sb_pw_relu1(x[i]);
}

static void SFX(relu_bwd)(int64_t n, const float *x, const float *dy, float *dx) {
    const V zero = VZERO();
    int64_t i = 0;
    for (; i + VN <= n; i += VN)
        VSTORE(dx + i, VSEL(VLE(VLOAD(x + i), zero), zero, VLOAD(dy + i)));
    for (; i < n; i++) dx[i] = x[i] <= 0.0f ? 0.0f : dy[i];
}

/* The piecewise-linear activations: each lane takes the reference's branch
 * by selects on the same ordered comparisons (NaN fails every one of them,
 * as in the scalar code), then the same arithmetic. One loop per kind. */
#define PW_PIECEWISE_LOOP(EXPR_V, SCALAR_TAIL)                                     \
    do {                                                                           \
        int64_t i = 0;                                                             \
        for (; i + VN <= n; i += VN) {                                             \
            V v = VLOAD(x + i);                                                    \
            VSTORE(out + i, EXPR_V);                                               \
        }                                                                          \
        SCALAR_TAIL;                                                               \
    } while (0)

static void SFX(piecewise_fwd)(sb_pwl_kind kind, int64_t n, const float *x, float p0, float p1,
                               float *out) {
    const V zero = VZERO(), lo = VSET1(p0), hi = VSET1(p1), three = VSET1(3.0f),
            six = VSET1(6.0f);
    switch (kind) {
    case SB_PWL_HARDTANH: /* v < lo ? lo : (v > hi ? hi : v) */
        PW_PIECEWISE_LOOP(VSEL(VGT(lo, v), lo, VSEL(VGT(v, hi), hi, v)),
                          sb_ref_hardtanh_forward(n - i, x + i, p0, p1, out + i));
        break;
    case SB_PWL_HARDSIGMOID: /* clamp(v + 3, 0, 6) / 6 */
        PW_PIECEWISE_LOOP(VDIV(SFX(clamp_0_6)(VADD(v, three), zero, six), six),
                          sb_ref_hardsigmoid_forward(n - i, x + i, out + i));
        break;
    case SB_PWL_HARDSWISH: /* (v * clamp(v + 3, 0, 6)) / 6 */
        PW_PIECEWISE_LOOP(VDIV(VMUL(v, SFX(clamp_0_6)(VADD(v, three), zero, six)), six),
                          sb_ref_hardswish_forward(n - i, x + i, out + i));
        break;
    case SB_PWL_LEAKY_RELU: /* NaN and v > 0 keep v; else v * slope */
        PW_PIECEWISE_LOOP(VSEL(VMOR(VGT(v, zero), VUNORD(v)), v, VMUL(v, lo)),
                          sb_ref_leaky_relu_forward(n - i, x + i, p0, out + i));
        break;
    }
}

static void SFX(piecewise_bwd)(sb_pwl_kind kind, int64_t n, const float *x, const float *dy,
                               float p0, float p1, float *out) {
    const V zero = VZERO(), lo = VSET1(p0), hi = VSET1(p1), three = VSET1(3.0f),
            mthree = VSET1(-3.0f), half = VSET1(0.5f),
            sixth = VSET1(SB_ONE_SIXTH);
    switch (kind) {
    case SB_PWL_HARDTANH: /* dy strictly inside (lo, hi), else +0 */
        PW_PIECEWISE_LOOP(VSEL(VMAND(VGT(v, lo), VGT(hi, v)), VLOAD(dy + i), zero),
                          sb_ref_hardtanh_backward(n - i, x + i, dy + i, p0, p1, out + i));
        break;
    case SB_PWL_HARDSIGMOID: /* dy * (1/6) strictly inside (-3, 3), else +0 */
        PW_PIECEWISE_LOOP(VSEL(VMAND(VGT(v, mthree), VGT(three, v)),
                               VMUL(VLOAD(dy + i), sixth), zero),
                          sb_ref_hardsigmoid_backward(n - i, x + i, dy + i, out + i));
        break;
    case SB_PWL_HARDSWISH: /* v < -3: +0; v >= 3: dy; else dy * (v / 3 + 0.5) */
        PW_PIECEWISE_LOOP(VSEL(VGT(mthree, v), zero,
                               VSEL(VLE(three, v), VLOAD(dy + i),
                                    VMUL(VLOAD(dy + i), VADD(VDIV(v, three), half)))),
                          sb_ref_hardswish_backward(n - i, x + i, dy + i, out + i));
        break;
    case SB_PWL_LEAKY_RELU: /* v > 0 ? dy : dy * slope */
        PW_PIECEWISE_LOOP(VSEL(VGT(v, zero), VLOAD(dy + i), VMUL(VLOAD(dy + i), lo)),
                          sb_ref_leaky_relu_backward(n - i, x + i, dy + i, p0, out + i));
        break;
    }
}
#undef PW_PIECEWISE_LOOP

static void SFX(sqdev)(int64_t n, const float *x, float m, float *out) {
    const V vm = VSET1(m);
    int64_t q = 0;
    for (; q + VN <= n; q += VN) {
        V d = VSUB(VLOAD(x + q), vm);
        VSTORE(out + q, VMUL(d, d));
    }
    sb_pwv_sqdev_scalar(n - q, x + q, m, out + q);
}

/* Two loops: w and b each absent or one value for the run (stride 0), or
 * each absent or per element (stride 1); other mixes take the plain loop. */
static void SFX(norm_map)(int64_t n, const float *x, float m, float r, const float *w,
                          int64_t ws, const float *b, int64_t bs, float *y) {
    const V vm = VSET1(m), vr = VSET1(r);
    const V w1 = VSET1(w ? w[0] : 0.0f), b1 = VSET1(b ? b[0] : 0.0f);
    int64_t q = 0;
#define NORM_MAP_LOOP(WV, BV)                                                                  \
    for (; q + VN <= n; q += VN) {                                                             \
        V v = VMUL(VSUB(VLOAD(x + q), vm), vr);                                                \
        if (w) v = VMUL(v, WV);                                                                \
        if (b) v = VADD(v, BV);                                                                \
        VSTORE(y + q, v);                                                                      \
    }
    if ((!w || ws == 0) && (!b || bs == 0)) {
        NORM_MAP_LOOP(w1, b1)
    } else if ((!w || ws == 1) && (!b || bs == 1)) {
        NORM_MAP_LOOP(VLOAD(w + q), VLOAD(b + q))
    }
#undef NORM_MAP_LOOP
    sb_pwv_norm_map_scalar(n - q, x + q, m, r, w ? w + q * ws : NULL, ws, b ? b + q * bs : NULL,
                           bs, y + q);
}

/* The backward's steps (ops_internal.h): one loop for w absent or one
 * value for the run, one for w per element. */
#define NORM_GRAD_LOOP_G(G, BODY)                                                              \
    for (; q + VN <= n; q += VN) {                                                             \
        V xhat = VMUL(VSUB(VLOAD(x + q), vm), vr);                                             \
        V g = G;                                                                               \
        BODY;                                                                                  \
    }
#define NORM_GRAD_LOOP(BODY)                                                                   \
    do {                                                                                       \
        const V vm = VSET1(m), vr = VSET1(r);                                                  \
        if (!w) {                                                                              \
            NORM_GRAD_LOOP_G(VLOAD(dy + q), BODY)                                              \
        } else if (ws == 0) {                                                                  \
            const V w1 = VSET1(w[0]);                                                          \
            NORM_GRAD_LOOP_G(VMUL(VLOAD(dy + q), w1), BODY)                                    \
        } else if (ws == 1) {                                                                  \
            NORM_GRAD_LOOP_G(VMUL(VLOAD(dy + q), VLOAD(w + q)), BODY)                          \
        }                                                                                      \
    } while (0)

static void SFX(norm_grad_terms)(int64_t n, const float *x, const float *dy, const float *w,
                                 int64_t ws, float m, float r, float *ga, float *gx) {
    int64_t q = 0;
    if (ga)
        NORM_GRAD_LOOP(VSTORE(ga + q, g); VSTORE(gx + q, VMUL(g, xhat)));
    else
        NORM_GRAD_LOOP(VSTORE(gx + q, VMUL(g, xhat)));
    sb_pwv_norm_grad_terms_scalar(n - q, x + q, dy + q, w ? w + q * ws : NULL, ws, m, r,
                                  ga ? ga + q : NULL, gx + q);
}

static void SFX(norm_dx)(int64_t n, const float *x, const float *dy, const float *w, int64_t ws,
                         float m, float r, float k, float a, float c, float *dx) {
    const V vk = VSET1(k), va = VSET1(a), vc = VSET1(c);
    int64_t q = 0;
    NORM_GRAD_LOOP(VSTORE(dx + q, VMUL(vk, VSUB(VSUB(g, va), VMUL(xhat, vc)))));
    sb_pwv_norm_dx_scalar(n - q, x + q, dy + q, w ? w + q * ws : NULL, ws, m, r, k, a, c, dx + q);
}
#undef NORM_GRAD_LOOP
#undef NORM_GRAD_LOOP_G

/* One loop per (op, broadcast pattern): the op switch stays out of the
 * element loop. */
#define PW_BINARY_LOOP(EXPR_V, EXPR_S)                                             \
    do {                                                                           \
        if (sa && sb) {                                                            \
            for (; i + VN <= n; i += VN) {                                         \
                V va = VLOAD(a + i), vb = VLOAD(b + i);                            \
                VSTORE(out + i, EXPR_V);                                           \
            }                                                                      \
        } else if (sa) {                                                           \
            const V vb = VSET1(b[0]);                                              \
            for (; i + VN <= n; i += VN) {                                         \
                V va = VLOAD(a + i);                                               \
                VSTORE(out + i, EXPR_V);                                           \
            }                                                                      \
        } else {                                                                   \
            const V va = VSET1(a[0]);                                              \
            for (; i + VN <= n; i += VN) {                                         \
                V vb = VLOAD(b + i);                                               \
                VSTORE(out + i, EXPR_V);                                           \
            }                                                                      \
        }                                                                          \
        for (; i < n; i++) {                                                       \
            float xa = a[i * sa], xb = b[i * sb];                                  \
            out[i] = EXPR_S;                                                       \
        }                                                                          \
    } while (0)

static void SFX(binary)(sb_binary_op op, int64_t n, const float *a, int64_t sa, const float *b,
                        int64_t sb, float *out) {
    int64_t i = 0;
    switch (op) {
    case SB_BINARY_ADD: PW_BINARY_LOOP(VADD(va, vb), xa + xb); break;
    case SB_BINARY_SUB: PW_BINARY_LOOP(VSUB(va, vb), xa - xb); break;
    case SB_BINARY_MUL: PW_BINARY_LOOP(VMUL(va, vb), xa * xb); break;
    case SB_BINARY_DIV: PW_BINARY_LOOP(VDIV(va, vb), xa / xb); break;
    default:
        for (; i < n; i++) out[i] = sb_ref_binary1(op, a[i * sa], b[i * sb]);
        break;
    }
}
#undef PW_BINARY_LOOP

#if VHAVE_FMA
/* samebits' maximum (NaN first, a's NaN before b's, -0 < +0) per lane. */
static inline V SFX(vmaximum)(V a, V b) {
    V r = VSEL(VGT(b, a), b, a);
    r = VSEL(VMAND(VEQ(a, b), VSIGN(a)), b, r); /* a = -0, b = +0 */
    r = VSEL(VUNORD(b), b, r);
    return VSEL(VUNORD(a), a, r);
}

static void SFX(adam)(const sb_adam_factors *f, bool first, int64_t n, float *param,
                      const float *grad, float *mb, float *vb, float *vmaxb) {
    const float w1 = f->one_minus_beta1;
    const bool lerp_small = w1 < 0.5f;
    const V vw1 = VSET1(lerp_small ? w1 : w1 - 1.0f);
    const V vdec = VSET1(f->decay), vwd = VSET1(f->weight_decay), vb2 = VSET1(f->beta2);
    const V vw2 = VSET1(f->one_minus_beta2), vr2 = VSET1(f->bias_correction2_sqrt);
    const V veps = VSET1(f->eps), vns = VSET1(f->neg_step_size), zero = VZERO();
    int64_t i = 0;
    for (; i + VN <= n; i += VN) {
        V p = VLOAD(param + i);
        V g = VLOAD(grad + i);
        if (f->maximize) g = VNEG(g);
        V m = first ? zero : VLOAD(mb + i);
        V v = first ? zero : VLOAD(vb + i);
        if (f->use_weight_decay) {
            if (f->decoupled) p = VMUL(p, vdec);
            else g = VFMA(p, vwd, g);
        }
        V d = VSUB(g, m);
        m = lerp_small ? VFMA(vw1, d, m) : VFMA(vw1, d, g);
        v = VMUL(v, vb2);
        v = VADD(v, VMUL(VMUL(vw2, g), g));
        V s = v;
        if (f->amsgrad) {
            s = SFX(vmaximum)(first ? zero : VLOAD(vmaxb + i), v);
            VSTORE(vmaxb + i, s);
        }
        V denom = VADD(VDIV(VSQRT(s), vr2), veps);
        VSTORE(mb + i, m);
        VSTORE(vb + i, v);
        VSTORE(param + i, VADD(p, VDIV(VMUL(vns, m), denom)));
    }
    for (; i < n; i++)
        sb_adam_elem(f, first, param + i, grad + i, mb + i, vb + i, f->amsgrad ? vmaxb + i : NULL);
}

static void SFX(sgd)(const sb_sgd_factors *f, bool nesterov, bool maximize, bool first,
                     int64_t n, float *param, const float *grad, float *buf) {
    const V vwd = VSET1(f->weight_decay), vfm = VSET1(f->momentum);
    const V vfd = VSET1(f->one_minus_dampening), vfl = VSET1(f->neg_lr);
    int64_t i = 0;
    for (; i + VN <= n; i += VN) {
        V p = VLOAD(param + i);
        V g = VLOAD(grad + i);
        if (maximize) g = VNEG(g);
        if (f->use_weight_decay) g = VFMA(p, vwd, g);
        if (f->use_momentum) {
            V b = first ? g : VFMA(g, vfd, VMUL(VLOAD(buf + i), vfm));
            VSTORE(buf + i, b);
            g = nesterov ? VFMA(b, vfm, g) : b;
        }
        VSTORE(param + i, VFMA(g, vfl, p));
    }
    for (; i < n; i++) sb_sgd_elem(f, nesterov, maximize, first, param + i, grad + i, buf ? buf + i : NULL);
}

static void SFX(fma_acc)(int64_t n, float a, const float *x, float *y) {
    const V va = VSET1(a);
    int64_t i = 0;
    for (; i + VN <= n; i += VN) VSTORE(y + i, VFMA(va, VLOAD(x + i), VLOAD(y + i)));
    for (; i < n; i++) y[i] = fmaf(a, x[i], y[i]);
}
#endif

/* The scan's result without its order: lanes keep the numeric maximum of
 * their elements and whether they met a NaN. A NaN anywhere, or a largest
 * value of zero (whose first occurrence's sign the scan keeps), sends the
 * row to the scalar scan; otherwise every element equal to the largest
 * value has its bits, so the largest value is the scan's result. */
static float SFX(row_max)(int64_t n, const float *x) {
    if (n < 2 * VN) return sb_pwv_row_max_scalar(n, x, 1);
    V m = VLOAD(x), nan = VSEL(VUNORD(m), m, VZERO());
    int64_t j = VN;
    for (; j + VN <= n; j += VN) {
        V v = VLOAD(x + j);
        m = VSEL(VGT(v, m), v, m);
        nan = VSEL(VUNORD(v), v, nan);
    }
    float lanes[VN], flags[VN];
    VSTORE(lanes, m);
    VSTORE(flags, nan);
    float best = lanes[0];
    bool any_nan = false;
    for (int l = 0; l < VN; l++) {
        any_nan |= sb_isnanf(flags[l]);
        if (lanes[l] > best) best = lanes[l];
    }
    for (; j < n; j++) {
        any_nan |= sb_isnanf(x[j]);
        if (x[j] > best) best = x[j];
    }
    return any_nan || best == 0.0f ? sb_pwv_row_max_scalar(n, x, 1) : best;
}

const sb_pwv_table SFX(sb_pwv) = {
    SFX(relu_fwd),
    SFX(relu_bwd),
    SFX(binary),
#if VHAVE_FMA
    SFX(adam),
    SFX(sgd),
    SFX(fma_acc),
#else
    sb_pwv_adam_scalar, /* no fused multiply-add in this ISA: the scalar loops (libm fmaf) */
    sb_pwv_sgd_scalar,
    sb_pwv_fma_acc_scalar,
#endif
    SFX(piecewise_fwd),
    SFX(piecewise_bwd),
    SFX(sqdev),
    SFX(norm_map),
    SFX(norm_grad_terms),
    SFX(norm_dx),
    SFX(row_max),
};
