/* src/cpu/vmath_internal.h - the loop shared by every ISA's batch math
 * kernels (src/cpu/vmath_simd.h, instantiated by vmath_<isa>.c). Not
 * installed.
 *
 * The template provides, per function, a block kernel for exactly W
 * consecutive inputs:
 *
 *     uint32_t block(const float *x, float *y, float *xsave, sb_vm_arg arg);
 *
 * It loads x[0..W), forms the function's arguments a[0..W) from them as arg
 * says (a = x, or one binary32 operation with a scalar), computes every
 * lane it can settle and stores all W results to y (which may be x), and
 * returns a bit mask of the lanes it could not settle (special arguments it
 * leaves to the scalar function, and lanes whose rounding test failed).
 * When that mask is not 0 it first copies the W arguments a to xsave, so
 * the scalar function still sees them after an in-place store.
 * sb_vm_drive() then replaces those lanes with the scalar function of a,
 * which is the reference by definition.
 *
 * The ragged end (n mod W inputs) goes through a zero-padded copy, so block
 * kernels never read or write past the caller's arrays.
 */
#ifndef SAMEBITS_CPU_VMATH_INTERNAL_H
#define SAMEBITS_CPU_VMATH_INTERNAL_H

#include <stdint.h>
#include <string.h>
#include "cpu/vmath.h"
#include "math/math_internal.h"

#define SB_VM_MAXW 16

/* Block kernels are inlined into the loop of sb_vm_drive, so that their
 * constants stay in registers across blocks. */
#define SB_VM_BLOCK static inline __attribute__((always_inline)) uint32_t

/* The exp polynomial's leading coefficient (math_internal.h), under the
 * name tests/test_fast_vmath.c checks. */
#define SB_VM_EXP_C6 SB_EXP_C6

/* How a block forms its function's arguments from the inputs: a = x, or
 * a = x - c or a = x * c, the one IEEE binary32 operation a caller's scalar
 * code does before the function (softmax's exp(x - m), GELU's
 * erf(x * sqrt(1/2))), here in the vector registers: a lane's a is the
 * caller's a bit for bit (same operation, same operands, same order, round
 * to nearest), so f(a) is too, and the pass that would store a between the
 * two is saved. The drive's callers pass a constant op, which the inlining
 * folds away. */
typedef enum { SB_VM_ARG_X, SB_VM_ARG_SUB, SB_VM_ARG_MUL } sb_vm_argop;
typedef struct {
    sb_vm_argop op;
    float c; /* the scalar operand of SUB and MUL */
} sb_vm_arg;

typedef uint32_t (*sb_vm_block)(const float *x, float *y, float *xsave, sb_vm_arg arg);
typedef float (*sb_vm_scalar)(float);

/* always_inline: with blk a constant the block kernel inlines into the
 * loop instead of being called through a pointer. */
static inline __attribute__((always_inline)) void sb_vm_drive(const float *x, float *y,
                                                              int64_t n, int w,
                                                              sb_vm_block blk,
                                                              sb_vm_scalar scalar,
                                                              sb_vm_arg arg) {
    float xsave[SB_VM_MAXW];
    int64_t i = 0;
    for (; i + w <= n; i += w) {
        uint32_t m = blk(x + i, y + i, xsave, arg);
        while (m) {
            int l = __builtin_ctz(m);
            y[i + l] = scalar(xsave[l]);
            m &= m - 1;
        }
    }
    if (i < n) {
        float buf[SB_VM_MAXW] = {0};
        int rest = (int)(n - i);
        memcpy(buf, x + i, (size_t)rest * sizeof(float));
        uint32_t m = blk(buf, buf, xsave, arg) & ((1u << rest) - 1u);
        while (m) {
            int l = __builtin_ctz(m);
            buf[l] = scalar(xsave[l]);
            m &= m - 1;
        }
        memcpy(y + i, buf, (size_t)rest * sizeof(float));
    }
}

#endif
