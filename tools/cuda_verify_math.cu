/* tools/cuda_verify_math.cu - every binary32 input of each correctly rounded
 * function, evaluated on the device (src/cuda/math.cu, compiled from
 * src/math/) and on the host (libsamebits), compared bit for bit, NaN
 * payloads included. The host functions are themselves proven against MPFR
 * (tools/verify_math.c), so zero differences here proves the device ones.
 *   cuda_verify_math [expf expm1f logf log1pf tanhf erff]   (default: all)
 * Prints SKIPPED and exits 0 without a GPU; exits 1 on any difference. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <thread>
#include <vector>
#include "samebits.h"
#include "samebits/cuda.h"

static const char *names[] = {"expf", "expm1f", "logf", "log1pf", "tanhf", "erff"};
static float (*host[])(float) = {sb_expf, sb_expm1f, sb_logf, sb_log1pf, sb_tanhf, sb_erff};

int main(int argc, char **argv) {
    const char *why;
    if (!sb_cuda_available(&why)) {
        printf("SKIPPED: no CUDA device (%s)\n", why);
        return 0;
    }
    bool want[SB_CUDA_MATH_COUNT] = {false};
    for (int i = 1; i < argc; i++) {
        int f = 0;
        while (f < SB_CUDA_MATH_COUNT && strcmp(argv[i], names[f])) f++;
        if (f == SB_CUDA_MATH_COUNT) {
            fprintf(stderr, "unknown function %s\n", argv[i]);
            return 2;
        }
        want[f] = true;
    }
    if (argc == 1)
        for (int f = 0; f < SB_CUDA_MATH_COUNT; f++) want[f] = true;
    sb_cuda_context *ctx;
    if (sb_cuda_context_new(&ctx, 0) != SB_OK) {
        fprintf(stderr, "%s\n", sb_last_error());
        return 1;
    }
    const int64_t chunk = (int64_t)1 << 26;
    float *d = NULL;
    if (sb_cuda_malloc(ctx, chunk * sizeof(float), (void **)&d) != SB_OK) {
        fprintf(stderr, "%s\n", sb_last_error());
        return 1;
    }
    std::vector<float> got(chunk);
    unsigned nt = std::thread::hardware_concurrency();
    if (nt == 0) nt = 1;
    int failed = 0;
    for (int f = 0; f < SB_CUDA_MATH_COUNT; f++) {
        if (!want[f]) continue;
        uint64_t diffs = 0;
        for (int64_t first = 0; first < ((int64_t)1 << 32); first += chunk) {
            if (sb_cuda_math_range(ctx, (sb_cuda_math_fn)f, (uint32_t)first, d, chunk) != SB_OK ||
                sb_cuda_memcpy_d2h(ctx, got.data(), d, chunk * sizeof(float)) != SB_OK) {
                fprintf(stderr, "%s\n", sb_last_error());
                return 1;
            }
            std::vector<uint64_t> bad(nt, 0);
            std::vector<std::thread> th;
            for (unsigned t = 0; t < nt; t++)
                th.emplace_back([&, t] {
                    for (int64_t i = t; i < chunk; i += nt) {
                        uint32_t u = (uint32_t)(first + i), gb, hb;
                        float x, h;
                        memcpy(&x, &u, 4);
                        h = host[f](x);
                        memcpy(&gb, &got[i], 4);
                        memcpy(&hb, &h, 4);
                        if (gb != hb) {
                            if (bad[t]++ < 2)
                                fprintf(stderr, "%s(0x%08x): device 0x%08x host 0x%08x\n",
                                        names[f], u, gb, hb);
                        }
                    }
                });
            for (auto &t : th) t.join();
            for (uint64_t b : bad) diffs += b;
        }
        printf("%s: %llu of 4294967296 inputs differ between device and host\n", names[f],
               (unsigned long long)diffs);
        failed |= diffs != 0;
    }
    sb_cuda_free(ctx, d);
    sb_cuda_context_free(ctx);
    return failed;
}
