/* src/cuda/program_math.cu - the MATH program (src/gpu/kernel_list.h) for
 * CUDA: src/math's correctly rounded functions (compiled from the CPU
 * library's own files through src/cuda/device_math.cuh), pointwise.cl,
 * math.cl (exp, log, sin, cos, exp2, log2, pow and the activations over
 * them), softmax.cl with the class losses, loss.cl over
 * src/ref/loss_terms.h, attention.cl over src/ref/attention_rules.h and
 * ctc.cl over src/ref/ctc_item.h; class_loss.cl;
 * the very text the OpenCL backend builds (src/cuda/program.cuh). */
#include "cuda/program.cuh"
extern "C" {
#include "samebits/attention.h"
#include "samebits/loss.h"
#include "samebits/math.h"
#include "core/canonical_sum.h"
#include "ref/ref_ctc.h"
}
#include "cuda/device_math.cuh"

/* The kernel text calls src/math's functions by their C names; here they
 * are device_math.cuh's sb_dev_* copies of the same source. */
#define sb_expf sb_dev_expf
#define sb_expm1f sb_dev_expm1f
#define sb_logf sb_dev_logf
#define sb_log1pf sb_dev_log1pf
#define sb_tanhf sb_dev_tanhf
#define sb_erff sb_dev_erff
#define sb_exp2f sb_dev_exp2f
#define sb_log2f sb_dev_log2f
#define sb_sinf sb_dev_sinf
#define sb_cosf sb_dev_cosf
#define sb_powf sb_dev_powf

namespace sb_cuda_MATH_BASE {
#include "gpu/kernels/pointwise.cl"
#include "gpu/kernels/sum_acc.cl"
#include "gpu/kernels/math.cl"
#include "gpu/kernels/softmax.cl"
#include "gpu/kernels/class_loss.cl"
/* The loss terms and the attention rules are the reference's own text
 * (plain C static inline functions): here device functions. */
/* The loss parameters as loss_terms.h's OpenCL branch declares them: the
 * kind an int (the kernels receive it as one; C++ would not assign an int
 * to the C header's enum). It hides the C struct in this namespace only. */
struct sb_elementwise_loss {
    int kind;
    float beta;
    bool log_target;
};
#pragma push_macro("static")
#define static static __device__
#include "ref/loss_terms.h"
#pragma pop_macro("static")
#include "gpu/kernels/loss.cl"
#pragma push_macro("static")
#define static static __device__
#include "ref/attention_rules.h"
#pragma pop_macro("static")
#include "gpu/kernels/attention.cl"
/* The CTC item's recursions are the reference's own text: here device
 * functions over sum_acc.cl's accumulator (the levels of
 * src/core/canonical_sum.c, as on OpenCL), with the problem as the OpenCL
 * branch of ctc_item.h declares it (the reduction an int). */
struct sb_ctc_problem {
    int64_t T, N, C, R, W, blank;
    bool zero_infinity;
    int reduction;
    const int64_t *in_len, *tg_len, *offset, *targets;
};
#define sb_sum_acc sb_acc
#define sb_sum_init sb_acc_init
#define sb_sum_add sb_acc_add
#define sb_sum_result sb_acc_result
#pragma push_macro("static")
#define static static __device__
#include "ref/ctc_item.h"
#pragma pop_macro("static")
#include "gpu/kernels/ctc.cl"
#undef sb_sum_acc
#undef sb_sum_init
#undef sb_sum_add
#undef sb_sum_result
} // namespace sb_cuda_MATH_BASE

#define SB_CUDA_IN_MATH(...) __VA_ARGS__
#include "cuda/program_others.cuh"
SB_CUDA_PROGRAM_TABLE(sb_cuda_program_math)
