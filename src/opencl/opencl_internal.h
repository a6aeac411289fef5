/* src/opencl/opencl_internal.h - the OpenCL backend: device selection,
 * memory and the launcher the GPU host layer (src/gpu/gpu_host.h) runs
 * its op table through (docs/GPU.md). Not installed; compiled only when the build has the
 * OpenCL headers (SB_OPENCL, Makefile).
 *
 * Device memory: an OpenCL buffer has no host address, but the backend
 * table and the tensors speak of `void *` device pointers (views offset
 * them). Each allocation therefore gets a range of made-up addresses that
 * no host memory ever occupies (src/opencl/memory.c); a pointer anywhere in
 * a live range resolves to (buffer, byte offset), and kernels take every
 * operand as a buffer plus an element offset. The library never
 * dereferences device pointers (the backend says host_addressable =
 * false), and a host pointer passed where device memory belongs is
 * refused by the resolver with a message, never read. */
#ifndef SB_OPENCL_INTERNAL_H
#define SB_OPENCL_INTERNAL_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "backend/backend.h"
#include "gpu/gpu_host.h"

/* The numeric capabilities a device must report (contract: the same bits
 * as the CPU), as CL_DEVICE_{SINGLE,DOUBLE}_FP_CONFIG bit sets. */
#define SB_OCL_NEED_SINGLE (CL_FP_ROUND_TO_NEAREST | CL_FP_DENORM | \
                            CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT)
/* The correctly rounded functions (src/math, math.cl) compute in binary64:
 * devices without it are refused. */
#define SB_OCL_NEED_FP64 true

/* Refuses (SB_ERR_DEVICE, naming the device and the missing capability) a
 * device whose reported fp configuration lacks what SB_OCL_NEED_* says. */
sb_status sb_ocl_check_numerics(const char *fn, const char *device_name,
                                cl_device_fp_config single, cl_device_fp_config dbl,
                                bool need_fp64);

/* Test hook: when set, device selection uses these fp configurations
 * instead of what the device reports (simulating a device that lacks a
 * capability). Pass NULL to go back to the device's own answer. */
typedef struct sb_ocl_fp_override {
    cl_device_fp_config single, dbl;
} sb_ocl_fp_override;
void sb_ocl_test_override_fp(const sb_ocl_fp_override *ov);
/* Runs device selection for OpenCL device `index` (all platforms' devices
 * in enumeration order) without keeping anything: SB_OK when the device
 * would be accepted. */
sb_status sb_ocl_probe(int index);

/* The backend of the device selected by SB_DEVICE=opencl:N (default 0),
 * created on first use; NULL with the error set (naming fn) when there is
 * no OpenCL platform, no such device, or the device is refused. */
const sb_backend *sb_opencl_backend_get(const char *fn);
/* Like sb_opencl_backend_get without touching sb_last_error. */
bool sb_opencl_available(void);
/* "<platform> / <device>" of the selected device, or "" before selection. */
const char *sb_ocl_device_name(void);

/* ---- the runtime (src/opencl/runtime.c) ---- */

/* Turns a cl error into an sb_status: "fn: what failed: CL_NAME (code)". */
sb_status sb_ocl_error(const char *fn, const char *what, cl_int err);

/* A device operand: buffer plus offset in elements of the kernel's type. */
typedef struct sb_ocl_ptr {
    cl_mem mem;
    cl_long off;
} sb_ocl_ptr;

/* ---- memory (src/opencl/memory.c) ---- */
sb_status sb_ocl_alloc(const sb_backend *be, size_t bytes, void **out);
void sb_ocl_release(const sb_backend *be, void *p);
/* p must lie in live device memory with `bytes` from it in the same
 * allocation; elem is the element size that the offset is counted in (p
 * must be aligned to it). NULL with bytes == 0 gives a null operand. */
sb_status sb_ocl_resolve(const char *fn, const char *what, const void *p, size_t bytes,
                         size_t elem, sb_ocl_ptr *out);
size_t sb_ocl_live_blocks(void);

/* ---- kernels (src/opencl/runtime.c) ---- */

/* Enqueues kernel `name` of `program` built with `options` (program cache:
 * one build per (source, options)), over `dims` dimensions of `global`
 * work-items in groups of `local` (NULL: the driver's choice). */
sb_status sb_ocl_launch(const char *fn, sb_gpu_program program, const char *options,
                        const char *name, int nargs, const sb_gpu_arg *args, cl_uint dims,
                        const size_t *global, const size_t *local);
/* A read-only device copy of a small host array (kernel geometry), released
 * by the caller with clReleaseMemObject after the launch (the queue keeps
 * it alive until the kernel ran). */
sb_status sb_ocl_const_buffer(const char *fn, const void *host, size_t bytes, cl_mem *out);

/* The selected device's context and queue (valid after selection). */
cl_context sb_ocl_context(void);
cl_command_queue sb_ocl_queue(void);

/* The embedded kernel text (generated at build time from src/gpu/kernels). */
extern const char sb_gpu_src_dialect_h[];
extern const char sb_gpu_src_pointwise_cl[];
extern const char sb_gpu_src_sum_acc_cl[];
extern const char sb_gpu_src_sum_cl[];
extern const char sb_gpu_src_gemm_cl[];
extern const char sb_gpu_src_conv_cl[];
extern const char sb_gpu_src_math_prelude_cl[];
extern const char sb_gpu_src_math_internal_h[];
extern const char sb_gpu_src_expf_c[];
extern const char sb_gpu_src_expm1f_c[];
extern const char sb_gpu_src_logf_c[];
extern const char sb_gpu_src_log1pf_c[];
extern const char sb_gpu_src_tanhf_c[];
extern const char sb_gpu_src_erff_c[];
extern const char sb_gpu_src_exp2f_c[];
extern const char sb_gpu_src_log2f_c[];
extern const char sb_gpu_src_sinf_c[];
extern const char sb_gpu_src_cosf_c[];
extern const char sb_gpu_src_powf_c[];
extern const char sb_gpu_src_math_cl[];
extern const char sb_gpu_src_softmax_cl[];
extern const char sb_gpu_src_class_loss_cl[];
extern const char sb_gpu_src_ctc_item_h[];
extern const char sb_gpu_src_ctc_cl[];
extern const char sb_gpu_src_loss_terms_h[];
extern const char sb_gpu_src_loss_cl[];
extern const char sb_gpu_src_philox_c[];
extern const char sb_gpu_src_dropout_cl[];
extern const char sb_gpu_src_norm_cl[];
extern const char sb_gpu_src_pool_geometry_h[];
extern const char sb_gpu_src_pad_geometry_h[];
extern const char sb_gpu_src_pad_cl[];
extern const char sb_gpu_src_index_cl[];
extern const char sb_gpu_src_scatter_reduce_column_h[];
extern const char sb_gpu_src_sort_rank_h[];
extern const char sb_gpu_src_sort_cl[];
extern const char sb_gpu_src_cumulative_chain_h[];
extern const char sb_gpu_src_cumulative_cl[];
extern const char sb_gpu_src_prelu_terms_h[];
extern const char sb_gpu_src_prelu_cl[];
extern const char sb_gpu_src_attention_rules_h[];
extern const char sb_gpu_src_attention_cl[];
extern const char sb_gpu_src_grid_geometry_h[];
extern const char sb_gpu_src_resample_cl[];

/* Test hook: sb_gpu_math_eval on the selected opencl device (f an index of
 * SB_GPU_MATH_EVAL_FUNCTIONS; x, y: n floats of opencl device memory). */
sb_status sb_ocl_math_eval(int f, const float *x, float *y, int64_t n);

/* ---- the launcher of the GPU host layer (src/opencl/launcher.c) ---- */
extern const struct sb_gpu_launcher sb_ocl_launcher;

#endif
