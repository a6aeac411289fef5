/* The OpenCL backend's runtime: device selection with the numeric checks,
 * the context and its one in-order queue, the program cache, kernel
 * launches and cl error messages (docs/GPU.md). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "core/internal.h"
#include "opencl/opencl_internal.h"

/* ---- errors ---- */

static const char *cl_error_name(cl_int e) {
    switch (e) {
#define N(x) case x: return #x;
    N(CL_DEVICE_NOT_FOUND) N(CL_DEVICE_NOT_AVAILABLE) N(CL_COMPILER_NOT_AVAILABLE)
    N(CL_MEM_OBJECT_ALLOCATION_FAILURE) N(CL_OUT_OF_RESOURCES) N(CL_OUT_OF_HOST_MEMORY)
    N(CL_BUILD_PROGRAM_FAILURE) N(CL_INVALID_VALUE) N(CL_INVALID_DEVICE) N(CL_INVALID_CONTEXT)
    N(CL_INVALID_COMMAND_QUEUE) N(CL_INVALID_MEM_OBJECT) N(CL_INVALID_BUILD_OPTIONS)
    N(CL_INVALID_PROGRAM) N(CL_INVALID_PROGRAM_EXECUTABLE) N(CL_INVALID_KERNEL_NAME)
    N(CL_INVALID_KERNEL) N(CL_INVALID_ARG_INDEX) N(CL_INVALID_ARG_VALUE) N(CL_INVALID_ARG_SIZE)
    N(CL_INVALID_KERNEL_ARGS) N(CL_INVALID_WORK_DIMENSION) N(CL_INVALID_WORK_GROUP_SIZE)
    N(CL_INVALID_WORK_ITEM_SIZE) N(CL_INVALID_GLOBAL_OFFSET) N(CL_INVALID_BUFFER_SIZE)
    N(CL_INVALID_PLATFORM) N(CL_INVALID_OPERATION) N(CL_INVALID_GLOBAL_WORK_SIZE)
    N(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) N(CL_MISALIGNED_SUB_BUFFER_OFFSET)
#undef N
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR (no OpenCL platform is installed)";
    default: return "an OpenCL error";
    }
}

sb_status sb_ocl_error(const char *fn, const char *what, cl_int err) {
    if (err == CL_OUT_OF_HOST_MEMORY || err == CL_MEM_OBJECT_ALLOCATION_FAILURE)
        return sb_fail(SB_ERR_NOMEM, "%s: %s failed on the opencl device: %s (%d)", fn, what,
                       cl_error_name(err), (int)err);
    return sb_fail(SB_ERR_DEVICE, "%s: %s failed on the opencl device: %s (%d)", fn, what,
                   cl_error_name(err), (int)err);
}

/* ---- numerics ---- */

sb_status sb_ocl_check_numerics(const char *fn, const char *device_name,
                                cl_device_fp_config single, cl_device_fp_config dbl,
                                bool need_fp64) {
    static const struct { cl_device_fp_config bit; const char *what; } need[] = {
        {CL_FP_ROUND_TO_NEAREST, "round-to-nearest binary32 arithmetic (CL_FP_ROUND_TO_NEAREST)"},
        {CL_FP_DENORM, "binary32 subnormals (CL_FP_DENORM)"},
        {CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT,
         "correctly rounded binary32 divide and sqrt (CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT)"},
    };
    for (size_t i = 0; i < sizeof need / sizeof *need; i++)
        if (!(single & need[i].bit))
            return sb_fail(SB_ERR_DEVICE, "%s: the opencl device %s is refused: it lacks %s, "
                           "so it cannot give the CPU's bits", fn, device_name, need[i].what);
    if (need_fp64 && !(dbl & CL_FP_ROUND_TO_NEAREST && dbl & CL_FP_DENORM))
        return sb_fail(SB_ERR_DEVICE, "%s: the opencl device %s is refused: it lacks binary64 "
                       "arithmetic with round-to-nearest and subnormals (cl_khr_fp64), which "
                       "this build's kernels need", fn, device_name);
    return SB_OK;
}

static pthread_mutex_t override_lock = PTHREAD_MUTEX_INITIALIZER;
static bool override_on;
static sb_ocl_fp_override override_fp;

void sb_ocl_test_override_fp(const sb_ocl_fp_override *ov) {
    pthread_mutex_lock(&override_lock);
    override_on = ov != NULL;
    if (ov) override_fp = *ov;
    pthread_mutex_unlock(&override_lock);
}

/* ---- device selection ---- */

typedef struct found_device {
    cl_platform_id platform;
    cl_device_id device;
    char name[256];
} found_device;

/* Device `index` over all platforms in enumeration order. */
static sb_status find_device(const char *fn, int index, found_device *out) {
    cl_uint nplat = 0;
    cl_int e = clGetPlatformIDs(0, NULL, &nplat);
    if (e == -1001 || (e == CL_SUCCESS && nplat == 0))
        return sb_fail(SB_ERR_DEVICE, "%s: the opencl device is not available: no OpenCL "
                       "platform is installed (Debian: apt-get install pocl-opencl-icd, or a "
                       "GPU vendor's driver)", fn);
    if (e != CL_SUCCESS) return sb_ocl_error(fn, "clGetPlatformIDs", e);
    cl_platform_id plats[16];
    if (nplat > 16) nplat = 16;
    if ((e = clGetPlatformIDs(nplat, plats, NULL)) != CL_SUCCESS)
        return sb_ocl_error(fn, "clGetPlatformIDs", e);
    int seen = 0;
    for (cl_uint p = 0; p < nplat; p++) {
        cl_uint ndev = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &ndev) != CL_SUCCESS) continue;
        cl_device_id devs[32];
        if (ndev > 32) ndev = 32;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, ndev, devs, NULL) != CL_SUCCESS) continue;
        if (index >= seen + (int)ndev) { seen += (int)ndev; continue; }
        out->platform = plats[p];
        out->device = devs[index - seen];
        char pname[96] = "", dname[128] = "";
        clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof pname - 1, pname, NULL);
        clGetDeviceInfo(out->device, CL_DEVICE_NAME, sizeof dname - 1, dname, NULL);
        snprintf(out->name, sizeof out->name, "%d (%s / %s)", index, pname, dname);
        return SB_OK;
    }
    return sb_fail(SB_ERR_DEVICE, "%s: there is no opencl device %d: this machine has %d "
                   "(SB_DEVICE=opencl:N picks one)", fn, index, seen);
}

/* The device's fp configuration (or the test override) checked. */
static sb_status check_device(const char *fn, const found_device *d) {
    cl_device_fp_config single = 0, dbl = 0;
    cl_int e = clGetDeviceInfo(d->device, CL_DEVICE_SINGLE_FP_CONFIG, sizeof single, &single, NULL);
    if (e != CL_SUCCESS) return sb_ocl_error(fn, "clGetDeviceInfo(CL_DEVICE_SINGLE_FP_CONFIG)", e);
    if (clGetDeviceInfo(d->device, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof dbl, &dbl, NULL) != CL_SUCCESS)
        dbl = 0; /* no fp64 */
    pthread_mutex_lock(&override_lock);
    if (override_on) { single = override_fp.single; dbl = override_fp.dbl; }
    pthread_mutex_unlock(&override_lock);
    return sb_ocl_check_numerics(fn, d->name, single, dbl, SB_OCL_NEED_FP64);
}

/* SB_DEVICE=opencl:N, else device 0. */
static sb_status selected_index(const char *fn, int *index) {
    *index = 0;
    const char *env = getenv("SB_DEVICE");
    if (!env || strncmp(env, "opencl:", 7) != 0) return SB_OK;
    char *end = NULL;
    long v = strtol(env + 7, &end, 10);
    if (end == env + 7 || *end != '\0' || v < 0 || v > 1000)
        return sb_fail(SB_ERR_ARG, "%s: SB_DEVICE = \"%s\": the form is opencl:N with N a "
                       "device number >= 0", fn, env);
    *index = (int)v;
    return SB_OK;
}

sb_status sb_ocl_probe(int index) {
    const char *fn = "sb_ocl_probe";
    found_device d;
    SB_TRY(find_device(fn, index, &d));
    return check_device(fn, &d);
}

/* ---- the selected device ---- */

typedef struct program_entry {
    sb_gpu_program family;
    char *options;
    cl_program program;
    struct program_entry *next;
} program_entry;

typedef struct kernel_entry {
    cl_program program;
    char *name;
    cl_kernel kernel;
    struct kernel_entry *next;
} kernel_entry;

static struct {
    found_device dev;
    cl_context ctx;
    cl_command_queue queue;
    program_entry *programs;
    kernel_entry *kernels;
    sb_status init_status;
    char init_message[512];
} ocl;

/* Arguments and launches of shared cl_kernel objects are serialised. */
static pthread_mutex_t launch_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static sb_backend backend;

static sb_status ocl_synchronize(const sb_backend *be) {
    (void)be;
    cl_int e = clFinish(ocl.queue);
    return e == CL_SUCCESS ? SB_OK : sb_ocl_error("synchronize", "clFinish", e);
}

sb_status sb_ocl_upload(const sb_backend *be, void *dst, const void *src, size_t bytes);
sb_status sb_ocl_download(const sb_backend *be, void *dst, const void *src, size_t bytes);

static sb_status open_device(const char *fn) {
    int index = 0;
    SB_TRY(selected_index(fn, &index));
    SB_TRY(find_device(fn, index, &ocl.dev));
    SB_TRY(check_device(fn, &ocl.dev));
    cl_int e = CL_SUCCESS;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)ocl.dev.platform, 0};
    ocl.ctx = clCreateContext(props, 1, &ocl.dev.device, NULL, NULL, &e);
    if (e != CL_SUCCESS) return sb_ocl_error(fn, "clCreateContext", e);
    ocl.queue = clCreateCommandQueue(ocl.ctx, ocl.dev.device, 0, &e); /* in order */
    if (e != CL_SUCCESS) {
        clReleaseContext(ocl.ctx);
        ocl.ctx = NULL;
        return sb_ocl_error(fn, "clCreateCommandQueue", e);
    }
    backend = (sb_backend){
        .name = "opencl",
        .device = SB_DEVICE_OPENCL,
        .host_addressable = false,
        .alloc = sb_ocl_alloc,
        .release = sb_ocl_release,
        .upload = sb_ocl_upload,
        .download = sb_ocl_download,
        .copy = sb_gpu_copy,
        .fill = sb_gpu_fill,
        .synchronize = ocl_synchronize,
        .ops = &sb_gpu_ops,
        .launcher = &sb_ocl_launcher,
    };
    return SB_OK;
}

static void init_device(void) {
    ocl.init_status = open_device("sb_opencl");
    if (ocl.init_status != SB_OK)
        snprintf(ocl.init_message, sizeof ocl.init_message, "%s", sb_last_error());
}

const sb_backend *sb_opencl_backend_get(const char *fn) {
    pthread_once(&init_once, init_device);
    if (ocl.init_status == SB_OK) return &backend;
    /* the reason, restated for this caller */
    const char *why = strchr(ocl.init_message, ':');
    sb_fail(ocl.init_status, "%s%s", fn, why ? why : ": the opencl device is not available");
    return NULL;
}

bool sb_opencl_available(void) {
    pthread_once(&init_once, init_device);
    return ocl.init_status == SB_OK;
}

const char *sb_ocl_device_name(void) {
    return ocl.init_status == SB_OK && ocl.ctx ? ocl.dev.name : "";
}

cl_context sb_ocl_context(void) { return ocl.ctx; }
cl_command_queue sb_ocl_queue(void) { return ocl.queue; }

/* ---- programs and kernels ---- */

/* The most texts a program is built from: dialect.h and a family's files. */
enum { SB_OCL_MAX_TEXTS = 32 };

/* The files of a family after dialect.h (at most SB_OCL_MAX_TEXTS - 1),
 * and a name for messages. */
static int family_sources(sb_gpu_program f, const char **texts, const char **name) {
    switch (f) {
    case SB_GPU_PROGRAM_POINTWISE:
        *name = "pointwise.cl + src/ref/scatter_reduce_column.h + index.cl + "
                "src/ref/sort_rank.h + sort.cl + src/ref/cumulative_chain.h + cumulative.cl";
        texts[0] = sb_gpu_src_pointwise_cl;
        texts[1] = sb_gpu_src_scatter_reduce_column_h;
        texts[2] = sb_gpu_src_index_cl;
        texts[3] = sb_gpu_src_sort_rank_h;
        texts[4] = sb_gpu_src_sort_cl;
        texts[5] = sb_gpu_src_cumulative_chain_h;
        texts[6] = sb_gpu_src_cumulative_cl;
        return 7;
    case SB_GPU_PROGRAM_SUM:
        *name = "sum_acc.cl + sum.cl";
        texts[0] = sb_gpu_src_sum_acc_cl;
        texts[1] = sb_gpu_src_sum_cl;
        return 2;
    case SB_GPU_PROGRAM_GEMM:
        *name = "gemm.cl";
        texts[0] = sb_gpu_src_gemm_cl;
        return 1;
    case SB_GPU_PROGRAM_CONV:
        *name = "sum_acc.cl + src/ref/pool_geometry.h + conv.cl + src/ref/pad_geometry.h + pad.cl";
        texts[0] = sb_gpu_src_sum_acc_cl;
        texts[1] = sb_gpu_src_pool_geometry_h;
        texts[2] = sb_gpu_src_conv_cl;
        texts[3] = sb_gpu_src_pad_geometry_h;
        texts[4] = sb_gpu_src_pad_cl;
        return 5;
    case SB_GPU_PROGRAM_MATH: {
        *name = "math_prelude.cl + src/math + pointwise.cl + sum_acc.cl + math.cl + softmax.cl + "
                "class_loss.cl + src/ref/loss_terms.h + loss.cl + src/ref/attention_rules.h + "
                "attention.cl + src/ref/ctc_item.h + ctc.cl";
        const char *t[] = {sb_gpu_src_math_prelude_cl, sb_gpu_src_math_internal_h,
                           sb_gpu_src_expf_c,          sb_gpu_src_expm1f_c,
                           sb_gpu_src_logf_c,          sb_gpu_src_log1pf_c,
                           sb_gpu_src_tanhf_c,         sb_gpu_src_erff_c,
                           sb_gpu_src_exp2f_c,         sb_gpu_src_log2f_c,
                           sb_gpu_src_sinf_c,          sb_gpu_src_cosf_c,
                           sb_gpu_src_powf_c,          sb_gpu_src_pointwise_cl,
                           sb_gpu_src_sum_acc_cl,      sb_gpu_src_math_cl,
                           sb_gpu_src_softmax_cl,      sb_gpu_src_class_loss_cl,
                           sb_gpu_src_loss_terms_h,
                           sb_gpu_src_loss_cl,         sb_gpu_src_attention_rules_h,
                           sb_gpu_src_attention_cl,    sb_gpu_src_ctc_item_h,
                           sb_gpu_src_ctc_cl};
        int count = (int)(sizeof t / sizeof *t);
        for (int i = 0; i < count; i++) texts[i] = t[i];
        return count;
    }
    case SB_GPU_PROGRAM_RNG:
        *name = "math_prelude.cl + src/rng/philox.c + dropout.cl";
        texts[0] = sb_gpu_src_math_prelude_cl;
        texts[1] = sb_gpu_src_philox_c;
        texts[2] = sb_gpu_src_dropout_cl;
        return 3;
    case SB_GPU_PROGRAM_NORM:
        *name = "sum_acc.cl + norm.cl + src/ref/prelu_terms.h + prelu.cl";
        texts[0] = sb_gpu_src_sum_acc_cl;
        texts[1] = sb_gpu_src_norm_cl;
        texts[2] = sb_gpu_src_prelu_terms_h;
        texts[3] = sb_gpu_src_prelu_cl;
        return 4;
    case SB_GPU_PROGRAM_RESAMPLE:
        *name = "sum_acc.cl + src/ref/grid_geometry.h + resample.cl";
        texts[0] = sb_gpu_src_sum_acc_cl;
        texts[1] = sb_gpu_src_grid_geometry_h;
        texts[2] = sb_gpu_src_resample_cl;
        return 3;
    default:
        *name = "?";
        return 0;
    }
}

/* Never -cl-mad-enable, -cl-fast-relaxed-math or -cl-denorms-are-zero. */
#define SB_OCL_BUILD_OPTIONS "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt"

static sb_status build_program(const char *fn, sb_gpu_program family, const char *options,
                               cl_program *out) {
    const char *texts[SB_OCL_MAX_TEXTS] = {sb_gpu_src_dialect_h}, *files = NULL;
    cl_uint count = 1 + (cl_uint)family_sources(family, texts + 1, &files);
    cl_int e = CL_SUCCESS;
    cl_program prog = clCreateProgramWithSource(ocl.ctx, count, texts, NULL, &e);
    if (e != CL_SUCCESS) return sb_ocl_error(fn, "clCreateProgramWithSource", e);
    char opts[512];
    snprintf(opts, sizeof opts, "%s %s", SB_OCL_BUILD_OPTIONS, options ? options : "");
    e = clBuildProgram(prog, 1, &ocl.dev.device, opts, NULL, NULL);
    if (e != CL_SUCCESS) {
        char log[1024] = "";
        clGetProgramBuildInfo(prog, ocl.dev.device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        clReleaseProgram(prog);
        return sb_fail(SB_ERR_DEVICE, "%s: building src/gpu/kernels/%s (%s) failed on the opencl "
                       "device: %s (%d): %.600s", fn, files, opts,
                       cl_error_name(e), (int)e, log);
    }
    *out = prog;
    return SB_OK;
}

/* Caller holds launch_lock. */
static sb_status get_kernel(const char *fn, sb_gpu_program family, const char *options,
                            const char *name, cl_kernel *out) {
    const char *o = options ? options : "";
    program_entry *p = ocl.programs;
    while (p && !(p->family == family && strcmp(p->options, o) == 0)) p = p->next;
    if (!p) {
        cl_program prog = NULL;
        SB_TRY(build_program(fn, family, o, &prog));
        p = sb_malloc(fn, sizeof *p);
        char *copy = p ? sb_malloc(fn, strlen(o) + 1) : NULL;
        if (!copy) { free(p); clReleaseProgram(prog); return SB_ERR_NOMEM; }
        strcpy(copy, o);
        *p = (program_entry){family, copy, prog, ocl.programs};
        ocl.programs = p;
    }
    kernel_entry *k = ocl.kernels;
    while (k && !(k->program == p->program && strcmp(k->name, name) == 0)) k = k->next;
    if (!k) {
        cl_int e = CL_SUCCESS;
        cl_kernel kern = clCreateKernel(p->program, name, &e);
        if (e != CL_SUCCESS) return sb_ocl_error(fn, name, e);
        k = sb_malloc(fn, sizeof *k);
        char *copy = k ? sb_malloc(fn, strlen(name) + 1) : NULL;
        if (!copy) { free(k); clReleaseKernel(kern); return SB_ERR_NOMEM; }
        strcpy(copy, name);
        *k = (kernel_entry){p->program, copy, kern, ocl.kernels};
        ocl.kernels = k;
    }
    *out = k->kernel;
    return SB_OK;
}

sb_status sb_ocl_launch(const char *fn, sb_gpu_program family, const char *options,
                        const char *name, int nargs, const sb_gpu_arg *args, cl_uint dims,
                        const size_t *global, const size_t *local) {
    pthread_mutex_lock(&launch_lock);
    cl_kernel k = NULL;
    sb_status st = get_kernel(fn, family, options, name, &k);
    for (int i = 0; st == SB_OK && i < nargs; i++) {
        cl_int e = clSetKernelArg(k, (cl_uint)i, args[i].size, args[i].value);
        if (e != CL_SUCCESS) {
            char what[96];
            snprintf(what, sizeof what, "setting argument %d of %s", i, name);
            st = sb_ocl_error(fn, what, e);
        }
    }
    if (st == SB_OK) {
        cl_int e = clEnqueueNDRangeKernel(ocl.queue, k, dims, NULL, global, local, 0, NULL, NULL);
        if (e != CL_SUCCESS) st = sb_ocl_error(fn, name, e);
    }
    pthread_mutex_unlock(&launch_lock);
    return st;
}

sb_status sb_ocl_const_buffer(const char *fn, const void *host, size_t bytes, cl_mem *out) {
    cl_int e = CL_SUCCESS;
    *out = clCreateBuffer(ocl.ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, (void *)host, &e);
    return e == CL_SUCCESS ? SB_OK : sb_ocl_error(fn, "clCreateBuffer", e);
}
