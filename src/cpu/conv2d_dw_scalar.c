/* The depthwise convolution's inner loops for the levels without a vector
 * fused multiply-add (scalar, SSE2, and any architecture): one lane, the C
 * library's correctly rounded fmaf (conv2d_dw_simd.h). */
#include <math.h>
#include "cpu/conv_internal.h"

typedef float V;
#define VN 1
#define SFX(name) name##_scalar
#define VLOAD(p) (*(p))
#define VSTORE(p, v) (*(p) = (v))
#define VSET1(x) (x)
#define VZERO() 0.0f
#define VFMA(a, b, c) fmaf(a, b, c)
#define VADD(a, b) ((a) + (b))
#define DW_U 4
#define DW_G 8

#include "cpu/conv2d_dw_simd.h"
