/* bench/cuda/bench_cuda_sgemm.cu - samebits' contract SGEMM (sequential
 * fmaf chains, sb_cuda_sgemm) against cuBLAS SGEMM with TF32 off
 * (CUBLAS_PEDANTIC_MATH: plain FP32 FMA, no tensor-core TF32), square
 * row-major N x N at 1024, 2048, 4096, 8192 (or the sizes given).
 * Target (docs/GPU.md): >= 70% of cuBLAS at 4096 and above.
 * Prints SKIPPED and exits 0 without a GPU. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>
#include "samebits.h"
#include "samebits/cuda.h"

#define CK(call)                                                               \
    do {                                                                       \
        if ((call) != 0) {                                                     \
            fprintf(stderr, "%s failed: %s\n", #call, sb_last_error());        \
            return 1;                                                          \
        }                                                                      \
    } while (0)

int main(int argc, char **argv) {
    const char *why;
    if (!sb_cuda_available(&why)) {
        printf("SKIPPED: no CUDA device (%s)\n", why);
        return 0;
    }
    std::vector<int64_t> sizes = {1024, 2048, 4096, 8192};
    if (argc > 1) {
        sizes.clear();
        for (int i = 1; i < argc; i++) sizes.push_back(atoll(argv[i]));
    }
    sb_cuda_context *ctx;
    CK(sb_cuda_context_new(&ctx, 0));
    sb_cuda_device_info info;
    CK(sb_cuda_query(0, &info));
    printf("device: %s\n", info.name);
    cublasHandle_t h;
    CK(cublasCreate(&h));
    CK(cublasSetStream(h, (cudaStream_t)sb_cuda_stream(ctx)));
    CK(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH));
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    cudaStream_t st = (cudaStream_t)sb_cuda_stream(ctx);
    printf("%6s %12s %12s %8s\n", "N", "samebits TF/s", "cuBLAS TF/s", "ratio");
    for (int64_t n : sizes) {
        size_t bytes = (size_t)(n * n) * sizeof(float);
        std::vector<float> ha((size_t)(n * n));
        for (size_t i = 0; i < ha.size(); i++) ha[i] = (float)((i * 2654435761u) % 1000) / 1000.0f;
        float *a, *b, *c;
        CK(sb_cuda_malloc(ctx, bytes, (void **)&a));
        CK(sb_cuda_malloc(ctx, bytes, (void **)&b));
        CK(sb_cuda_malloc(ctx, bytes, (void **)&c));
        CK(sb_cuda_memcpy_h2d(ctx, a, ha.data(), bytes));
        CK(sb_cuda_memcpy_h2d(ctx, b, ha.data(), bytes));
        int reps = n >= 8192 ? 3 : 10;
        double flops = 2.0 * n * n * n;
        CK(sb_cuda_sgemm(ctx, 'N', 'N', n, n, n, a, n, b, n, c, n, false)); /* warm-up */
        cudaEventRecord(e0, st);
        for (int r = 0; r < reps; r++) CK(sb_cuda_sgemm(ctx, 'N', 'N', n, n, n, a, n, b, n, c, n, false));
        cudaEventRecord(e1, st);
        cudaEventSynchronize(e1);
        float ms_sb;
        cudaEventElapsedTime(&ms_sb, e0, e1);
        const float one = 1.0f, zero = 0.0f;
        int ni = (int)n;
        /* row-major C = A B is column-major C^T = B^T A^T */
        CK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, ni, ni, ni, &one, b, ni, a, ni, &zero, c, ni));
        cudaEventRecord(e0, st);
        for (int r = 0; r < reps; r++)
            CK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, ni, ni, ni, &one, b, ni, a, ni, &zero, c, ni));
        cudaEventRecord(e1, st);
        cudaEventSynchronize(e1);
        float ms_cb;
        cudaEventElapsedTime(&ms_cb, e0, e1);
        double tf_sb = flops * reps / (ms_sb * 1e-3) / 1e12, tf_cb = flops * reps / (ms_cb * 1e-3) / 1e12;
        printf("%6lld %12.2f %12.2f %7.1f%%\n", (long long)n, tf_sb, tf_cb, 100.0 * tf_sb / tf_cb);
        sb_cuda_free(ctx, a);
        sb_cuda_free(ctx, b);
        sb_cuda_free(ctx, c);
    }
    cublasDestroy(h);
    sb_cuda_context_free(ctx);
    return 0;
}
