/* tools/verify_opencl_math.c - exhaustive check that the OpenCL device's
 * correctly rounded functions (src/math's own source compiled as OpenCL C,
 * the math program of src/opencl) return the host functions' bits on all
 * 2^32 inputs.
 *
 *   verify_opencl_math [--chunk-bits B] [--first-chunk C --chunks N] [names...]
 *
 * No names means every function of SB_GPU_MATH_EVAL_FUNCTIONS (expf, logf,
 * expm1f, log1pf, tanhf, erff, exp2f, log2f, sinf, cosf). The host functions
 * are proven correctly rounded on all 2^32 inputs by `make verify-math`, so
 * equality here proves the device's too. The inputs go to the device in
 * chunks of 2^B consecutive bit patterns (default 2^24); --first-chunk and
 * --chunks check a slice (a shard of a long run). Every NaN counts as one
 * value (contract section 1). Prints per function the inputs checked, the
 * differences (the first few listed) and seconds; exit status 1 on any
 * difference, 2 on bad arguments or no OpenCL device. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_common.h"
#include "opencl/opencl_internal.h"
#include "samebits.h"

typedef struct {
    const char *name;
    float (*host)(float);
} fn_info;

#define SB_FN(i, name) {#name, sb_##name},
static const fn_info fns[] = {SB_GPU_MATH_EVAL_FUNCTIONS(SB_FN)};
#undef SB_FN
#define NFNS (int)(sizeof fns / sizeof fns[0])

static int same(float a, float b) {
    return (a != a && b != b) || f2u(a) == f2u(b);
}

static int fail(const char *what) {
    fprintf(stderr, "verify_opencl_math: %s: %s\n", what, sb_last_error());
    return 2;
}

int main(int argc, char **argv) {
    int chunk_bits = 24;
    int64_t first = 0, count = -1;
    int want[NFNS] = {0}, any = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--chunk-bits") && i + 1 < argc) chunk_bits = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--first-chunk") && i + 1 < argc) first = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--chunks") && i + 1 < argc) count = atoll(argv[++i]);
        else {
            int k = 0;
            while (k < NFNS && strcmp(argv[i], fns[k].name)) k++;
            if (k == NFNS) {
                fprintf(stderr, "verify_opencl_math: unknown argument %s\n", argv[i]);
                return 2;
            }
            want[k] = any = 1;
        }
    }
    if (chunk_bits < 10 || chunk_bits > 28) {
        fprintf(stderr, "verify_opencl_math: --chunk-bits %d (expected 10..28)\n", chunk_bits);
        return 2;
    }
    int64_t chunk = (int64_t)1 << chunk_bits, nchunks = (int64_t)1 << (32 - chunk_bits);
    if (first < 0 || first >= nchunks) return fprintf(stderr, "verify_opencl_math: --first-chunk\n"), 2;
    if (count < 0 || first + count > nchunks) count = nchunks - first;
    int64_t shape[1] = {chunk};
    sb_tensor *x = NULL, *y = NULL, *dx = NULL, *dy = NULL;
    if (sb_tensor_new(&x, SB_F32, 1, shape) != SB_OK || sb_tensor_new(&y, SB_F32, 1, shape) != SB_OK)
        return fail("host buffers");
    if (sb_tensor_new_on(&dx, SB_DEVICE_OPENCL, SB_F32, 1, shape) != SB_OK ||
        sb_tensor_new_on(&dy, SB_DEVICE_OPENCL, SB_F32, 1, shape) != SB_OK)
        return fail("opencl device");
    printf("device %s; chunks %" PRId64 "..%" PRId64 " of 2^%d inputs\n", sb_ocl_device_name(), first,
           first + count - 1, chunk_bits);
    int status = 0;
    float *xv = x->data, *yv = y->data;
    for (int f = 0; f < NFNS; f++) {
        if (any && !want[f]) continue;
        double t0 = now();
        uint64_t checked = 0, bad = 0;
        for (int64_t c = first; c < first + count; c++) {
            uint32_t base = (uint32_t)(c << chunk_bits);
            for (int64_t i = 0; i < chunk; i++) xv[i] = u2f(base + (uint32_t)i);
            if (sb_tensor_copy(dx, x) != SB_OK || sb_ocl_math_eval(f, dx->data, dy->data, chunk) != SB_OK ||
                sb_tensor_copy(y, dy) != SB_OK)
                return fail(fns[f].name);
            for (int64_t i = 0; i < chunk; i++) {
                float want_v = fns[f].host(xv[i]);
                if (same(yv[i], want_v)) continue;
                if (bad++ < 8)
                    printf("  %s(0x%08x): device 0x%08x, host 0x%08x\n", fns[f].name, f2u(xv[i]),
                           f2u(yv[i]), f2u(want_v));
            }
            checked += (uint64_t)chunk;
        }
        printf("%-7s %" PRIu64 " inputs, %" PRIu64 " differ, %.1f s\n", fns[f].name, checked, bad,
               now() - t0);
        fflush(stdout);
        if (bad) status = 1;
    }
    sb_tensor *all[] = {x, y, dx, dy};
    for (int i = 0; i < 4; i++) sb_tensor_free(all[i]);
    return status;
}
