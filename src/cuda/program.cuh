/* src/cuda/program.cuh - what each CUDA program file (src/cuda/program_*.cu)
 * shares: the kernel text of src/gpu/kernels compiled by nvcc, one
 * translation unit per program of src/gpu/kernel_list.h, each variant in a
 * namespace of its own named sb_cuda_<PROGRAM>_<VARIANT> (the macros of a
 * variant are defined before its inclusion, as the OpenCL build passes
 * them as -D options). A program file ends with SB_CUDA_PROGRAM_TABLE,
 * which records the address, parameter count and parameter sizes of each
 * of its kernels in the launcher's table (src/cuda/launcher.cu). A kernel
 * listed in kernel_list.h but missing from its program, or listed with a
 * parameter count its CUDA compilation does not have, fails the build. */
#ifndef SB_CUDA_PROGRAM_CUH
#define SB_CUDA_PROGRAM_CUH

#include <stddef.h>
#include <stdint.h>
#include "gpu/kernel_list.h" /* not gpu_host.h: its src/ref headers are host code */
#include "gpu/kernels/dialect.h"

enum { SB_CUDA_MAX_PARAMS = 32 };

/* A kernel as the launcher calls it: its __global__ function and the byte
 * size of each parameter (checked against the host's argument list at
 * every launch: a size mismatch would pass garbage silently). */
typedef struct sb_cuda_kernel_ref {
    const void *fn;
    int nparams;
    size_t sizes[SB_CUDA_MAX_PARAMS];
} sb_cuda_kernel_ref;

template <class... P> constexpr int sb_cuda_arity(void (*)(P...)) { return (int)sizeof...(P); }

template <class... P> void sb_cuda_describe(void (*f)(P...), sb_cuda_kernel_ref *out) {
    static_assert(sizeof...(P) <= SB_CUDA_MAX_PARAMS, "a kernel with too many parameters");
    const size_t sizes[] = {sizeof(P)...};
    out->fn = (const void *)f;
    out->nparams = (int)sizeof...(P);
    for (int i = 0; i < out->nparams; i++) out->sizes[i] = sizes[i];
}

/* Each program file's table function (called once by the launcher). */
extern "C" {
void sb_cuda_program_pointwise(sb_cuda_kernel_ref *table);
void sb_cuda_program_sum(sb_cuda_kernel_ref *table);
void sb_cuda_program_gemm(sb_cuda_kernel_ref *table);
void sb_cuda_program_conv(sb_cuda_kernel_ref *table);
void sb_cuda_program_math(sb_cuda_kernel_ref *table);
void sb_cuda_program_rng(sb_cuda_kernel_ref *table);
void sb_cuda_program_norm(sb_cuda_kernel_ref *table);
void sb_cuda_program_resample(sb_cuda_kernel_ref *table);
}

/* One row of kernel_list.h, kept by the program file that defines
 * SB_CUDA_IN_<its program> as the identity (the others expand to nothing). */
#define SB_CUDA_KERNEL_ROW(id, program, name, variant, nargs, geom_slot, grid)                     \
    SB_CUDA_IN_##program(                                                                          \
        static_assert(sb_cuda_arity(&sb_cuda_##program##_##variant::name) == (nargs),              \
                      "src/gpu/kernel_list.h: " #name " (" #variant ") has another parameter "     \
                      "count in its CUDA compilation");                                            \
        sb_cuda_describe(&sb_cuda_##program##_##variant::name, &table[SB_GPU_K_##id]);)

/* Ends a program file: `fn` fills the table rows of its program. Define
 * SB_CUDA_IN_<PROGRAM>(...) as __VA_ARGS__ first. */
#define SB_CUDA_PROGRAM_TABLE(fn)                                                                  \
    extern "C" void fn(sb_cuda_kernel_ref *table) { SB_GPU_KERNEL_LIST(SB_CUDA_KERNEL_ROW) }

#endif
