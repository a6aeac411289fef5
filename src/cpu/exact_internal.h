/* src/cpu/exact_internal.h - the order-free exact reduction (contract
 * section 17) with the ISA level's vector loops and the elements split over
 * threads. Internal.
 *
 * The reference loops (src/dist/exact_sum.c) are the contract. These give
 * their bits at every level and thread count: each element's code, term
 * and rounding depend on that element alone (core/exact_elem.h), so
 * neither the vector width nor which thread handles a range of elements
 * can change a bit. Only the K <= 128 case (32-bit words, every LeNet-size
 * micro-batch count) has vector loops; larger K runs the scalar steps,
 * threaded. */
#ifndef SAMEBITS_CPU_EXACT_INTERNAL_H
#define SAMEBITS_CPU_EXACT_INTERNAL_H

#include <stdint.h>
#include "cpu/cpu.h"

/* codes[r] = max over rows of code(x[row * ld + i]), rows of n elements:
 * the (rows, ld) matrix x holds one input per row. */
void sb_cpu_exact_codes_max(const float *x, int64_t rows, int64_t ld, int64_t n, uint8_t *codes);
/* acc[i] += the terms of the rows of x, given the agreed codes and the
 * number k of inputs of the whole reduction. */
void sb_cpu_exact_add(const float *x, int64_t rows, int64_t ld, int64_t n, const uint8_t *codes, int64_t k,
                      int64_t *acc);
/* out[i] = the rounded result of acc[i]. */
void sb_cpu_exact_finish(const int64_t *acc, const uint8_t *codes, int64_t n, int64_t k, float *out);

/* One level's element loops (a member of the kernel context). add32 and
 * finish32 hold for k <= 128 only; g is the guard bits of k. */
typedef struct sb_exact_kernels {
    void (*codes_max)(const float *x, int64_t n, uint8_t *codes);
    void (*add32)(const float *x, int64_t n, const uint8_t *codes, int g, int64_t k, int64_t *acc);
    void (*finish32)(const int64_t *acc, const uint8_t *codes, int64_t n, int g, int64_t k, float *out);
} sb_exact_kernels;

extern const sb_exact_kernels sb_exact_scalar;
#if SB_HAVE_X86_KERNELS
extern const sb_exact_kernels sb_exact_sse2, sb_exact_avx2, sb_exact_avx512;
#define SB_EXACT_DECLARE(sfx)                                                                                \
    void sb_exact_codes_max_##sfx(const float *x, int64_t n, uint8_t *codes);                               \
    void sb_exact_add32_##sfx(const float *x, int64_t n, const uint8_t *codes, int g, int64_t k, int64_t *acc); \
    void sb_exact_finish32_##sfx(const int64_t *acc, const uint8_t *codes, int64_t n, int g, int64_t k, float *out);
SB_EXACT_DECLARE(sse2)
SB_EXACT_DECLARE(avx2)
SB_EXACT_DECLARE(avx512)
#undef SB_EXACT_DECLARE
#endif

#endif
