/* The fast exact reduction (src/cpu/exact_internal.h): the kernel
 * context's element loops over chunks of elements, the chunks split over
 * the thread pool. Within a chunk the rows (inputs) are visited in turn, so
 * a chunk's codes and accumulators stay in the first-level cache while the
 * rows stream past. */
#include "core/exact_elem.h"
#include "cpu/exact_internal.h"
#include "cpu/kernels.h"

/* The scalar level: the reference's per-element steps. */
static void codes_max_scalar(const float *x, int64_t n, uint8_t *codes) {
    for (int64_t i = 0; i < n; i++) {
        uint8_t c = sb_exact_code_of(sb_exact_bits(x[i]));
        codes[i] = c > codes[i] ? c : codes[i];
    }
}

static void add_scalar(const float *x, int64_t n, const uint8_t *codes, int g, int64_t k, int64_t *acc) {
    for (int64_t i = 0; i < n; i++) acc[i] += sb_exact_term(sb_exact_bits(x[i]), codes[i], g, k);
}

static void finish_scalar(const int64_t *acc, const uint8_t *codes, int64_t n, int g, int64_t k, float *out) {
    for (int64_t i = 0; i < n; i++) out[i] = sb_exact_result(acc[i], codes[i], g, k);
}

const sb_exact_kernels sb_exact_scalar = {codes_max_scalar, add_scalar, finish_scalar};
#if SB_HAVE_X86_KERNELS
const sb_exact_kernels sb_exact_sse2 = {sb_exact_codes_max_sse2, sb_exact_add32_sse2, sb_exact_finish32_sse2};
const sb_exact_kernels sb_exact_avx2 = {sb_exact_codes_max_avx2, sb_exact_add32_avx2, sb_exact_finish32_avx2};
const sb_exact_kernels sb_exact_avx512 = {sb_exact_codes_max_avx512, sb_exact_add32_avx512,
                                          sb_exact_finish32_avx512};
#endif

/* Elements per chunk: 4096 codes and accumulators (36 KB) and the rows'
 * 16 KB slices. */
enum { CHUNK = 4096 };

typedef enum { PASS_CODES, PASS_ADD, PASS_FINISH } pass_kind;

typedef struct pass_ctx {
    pass_kind kind;
    const sb_exact_kernels *kern;
    const float *x;
    int64_t rows, ld, n, k;
    int g;
    uint8_t *codes;
    int64_t *acc;
    float *out;
} pass_ctx;

static void pass_range(void *vctx, int64_t c0, int64_t c1) {
    const pass_ctx *p = vctx;
    /* k > 128 (64-bit words) has no vector loops: the scalar steps */
    const sb_exact_kernels *wide = p->k <= 128 ? p->kern : &sb_exact_scalar;
    for (int64_t c = c0; c < c1; c++) {
        int64_t i = c * CHUNK, len = p->n - i < CHUNK ? p->n - i : CHUNK;
        switch (p->kind) {
        case PASS_CODES:
            for (int64_t r = 0; r < p->rows; r++) p->kern->codes_max(p->x + r * p->ld + i, len, p->codes + i);
            break;
        case PASS_ADD:
            for (int64_t r = 0; r < p->rows; r++)
                wide->add32(p->x + r * p->ld + i, len, p->codes + i, p->g, p->k, p->acc + i);
            break;
        case PASS_FINISH: wide->finish32(p->acc + i, p->codes + i, len, p->g, p->k, p->out + i); break;
        }
    }
}

static void run_pass(pass_ctx *p) {
    if (p->n <= 0) return;
    p->kern = sb_kernels()->exact;
    p->g = sb_exact_guard_bits_of(p->k);
    int64_t chunks = (p->n + CHUNK - 1) / CHUNK;
    /* at least 4 chunks (16K elements) per range: below that a thread
     * hand-off costs more than it saves */
    sb_parallel_for(chunks, sb_parallel_grain(chunks, 4), pass_range, p);
}

void sb_cpu_exact_codes_max(const float *x, int64_t rows, int64_t ld, int64_t n, uint8_t *codes) {
    pass_ctx p = {.kind = PASS_CODES, .x = x, .rows = rows, .ld = ld, .n = n, .k = 1, .codes = codes};
    run_pass(&p);
}

void sb_cpu_exact_add(const float *x, int64_t rows, int64_t ld, int64_t n, const uint8_t *codes, int64_t k,
                      int64_t *acc) {
    pass_ctx p = {.kind = PASS_ADD, .x = x, .rows = rows, .ld = ld, .n = n, .k = k, .codes = (uint8_t *)codes,
                  .acc = acc};
    run_pass(&p);
}

void sb_cpu_exact_finish(const int64_t *acc, const uint8_t *codes, int64_t n, int64_t k, float *out) {
    pass_ctx p = {.kind = PASS_FINISH, .n = n, .k = k, .codes = (uint8_t *)codes, .acc = (int64_t *)acc,
                  .out = out};
    run_pass(&p);
}
