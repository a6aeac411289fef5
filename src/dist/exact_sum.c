/* The order-free exact reduction: codes, fixed-point terms, one rounding.
 * The definition, the proof that no partial sum overflows and the error
 * bound are in exact_sum.h; the per-element steps, integer arithmetic on
 * the float's bits (so no floating-point environment can change them), are
 * in core/exact_elem.h. These plain loops are the contract; the CPU
 * backend's vector and threaded loops (src/cpu/exact.c) reproduce them. */
#include <stdlib.h>
#include "core/exact_elem.h"
#include "core/internal.h"
#include "dist/exact_sum.h"

sb_status sb_exact_check_terms(const char *fn, int64_t k) {
    if (k < 1 || k > SB_EXACT_MAX_TERMS)
        return sb_fail(SB_ERR_ARG, "%s: %lld inputs to the exact reduction: must be 1..%lld", fn, (long long)k,
                       (long long)SB_EXACT_MAX_TERMS);
    return SB_OK;
}

int sb_exact_word_bits(int64_t k) { return sb_exact_word_bits_of(k); }

int sb_exact_guard_bits(int64_t k) { return sb_exact_guard_bits_of(k); }

uint8_t sb_exact_code(float x) { return sb_exact_code_of(sb_exact_bits(x)); }

void sb_exact_codes_max(const float *x, size_t n, uint8_t *codes) {
    for (size_t i = 0; i < n; i++) {
        uint8_t c = sb_exact_code(x[i]);
        codes[i] = c > codes[i] ? c : codes[i];
    }
}

void sb_exact_add(const float *x, size_t n, const uint8_t *codes, int64_t k, int64_t *acc) {
    int g = sb_exact_guard_bits(k);
    for (size_t i = 0; i < n; i++) {
        acc[i] += sb_exact_term(sb_exact_bits(x[i]), codes[i], g, k);
    }
}

void sb_exact_finish(const int64_t *acc, const uint8_t *codes, size_t n, int64_t k, float *out) {
    int g = sb_exact_guard_bits(k);
    for (size_t i = 0; i < n; i++) out[i] = sb_exact_result(acc[i], codes[i], g, k);
}

sb_status sb_exact_sum(const float *const *xs, int64_t k, size_t n, float *out) {
    const char *fn = "sb_exact_sum";
    SB_TRY(sb_exact_check_terms(fn, k));
    if (!xs || !out) return sb_fail(SB_ERR_NULL, "%s: NULL argument", fn);
    for (int64_t j = 0; j < k; j++)
        if (!xs[j] && n) return sb_fail(SB_ERR_NULL, "%s: input %lld is NULL", fn, (long long)j);
    if (n == 0) return SB_OK;
    uint8_t *codes = sb_calloc(fn, n, sizeof *codes);
    int64_t *acc = sb_calloc(fn, n, sizeof *acc);
    if (!codes || !acc) { free(codes); free(acc); return SB_ERR_NOMEM; }
    for (int64_t j = 0; j < k; j++) sb_exact_codes_max(xs[j], n, codes);
    for (int64_t j = 0; j < k; j++) sb_exact_add(xs[j], n, codes, k, acc);
    sb_exact_finish(acc, codes, n, k, out);
    free(codes);
    free(acc);
    return SB_OK;
}
