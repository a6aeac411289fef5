/* src/gpu/kernel_list.h - every kernel of src/gpu/kernels that the GPU host
 * layer (src/gpu/ops.c) launches, once: the list both backends are built
 * from. Plain macros, read as C by the host layer and the OpenCL launcher
 * and as C++ by the CUDA launcher (src/cuda/kernels.cu), which takes the
 * address of each kernel's __global__ function by its name here, so a
 * kernel listed but not compiled for CUDA fails the CUDA build.
 *
 * X(id, program, name, variant, nargs, geom_slot, grid):
 *   id        the kernel's index (SB_GPU_K_<id>, below)
 *   program   the program it lives in (SB_GPU_PROGRAM_<program>): the set
 *             of kernel files compiled together (src/opencl/runtime.c
 *             lists their files for OpenCL; src/cuda/program_*.cu
 *             includes the same files for CUDA)
 *   name      the kernel function in the .cl text
 *   variant   the macros its program is built with: OpenCL build options
 *             (-D...), and for CUDA the namespace of the inclusion made
 *             with the same macros defined ("" / base: none)
 *   nargs     its parameter count, checked at every launch
 *   geom_slot the parameter that receives the geometry buffer, or -1
 *   grid      how its work-items cover the work (sb_gpu_grid)
 * A device operand is two parameters: the buffer and the element offset. */
#ifndef SB_GPU_KERNEL_LIST_H
#define SB_GPU_KERNEL_LIST_H

#define SB_GPU_KERNEL_LIST(X)                                                                 \
    /* pointwise.cl: operands through a strided geometry */                                    \
    X(COPY32, POINTWISE, sb_pw_copy32, BASE, 6, 1, STRIDE)                                      \
    X(COPY64, POINTWISE, sb_pw_copy64, BASE, 6, 1, STRIDE)                                      \
    X(FILL, POINTWISE, sb_pw_fill, BASE, 5, 1, STRIDE)                                          \
    X(BINARY, POINTWISE, sb_pw_binary, BASE, 9, 2, STRIDE)                                      \
    X(BINARY_SCALAR, POINTWISE, sb_pw_binary_scalar, BASE, 8, 2, STRIDE)                        \
    X(BINARY_GRAD, POINTWISE, sb_pw_binary_grad, BASE, 12, 3, STRIDE)                           \
    X(UNARY, POINTWISE, sb_pw_unary, BASE, 7, 2, STRIDE)                                        \
    X(UNARY_GRAD, POINTWISE, sb_pw_unary_grad, BASE, 11, 2, STRIDE)                             \
    X(ACTIVATION, POINTWISE, sb_pw_activation, BASE, 12, 5, STRIDE)                             \
    X(SPREAD, POINTWISE, sb_pw_spread, BASE, 8, 3, STRIDE)                                      \
    /* index.cl: strided through the index geometry */                                         \
    X(INDEX_GATHER, POINTWISE, sb_index_gather, BASE, 8, 0, STRIDE)                             \
    X(INDEX_SCATTER_ADD, POINTWISE, sb_index_scatter_add, BASE, 10, 0, STRIDE)                  \
    X(INDEX_SCATTER_REDUCE, POINTWISE, sb_index_scatter_reduce, BASE, 11, 0, STRIDE)            \
    /* sort.cl over src/ref/sort_rank.h: a merge sort of (key, position) pairs; the backward */ \
    /* a work-item per column */                                                                \
    X(SORT_KEYS, POINTWISE, sb_sort_keys, BASE, 8, 0, STRIDE)                                   \
    X(SORT_MERGE, POINTWISE, sb_sort_merge, BASE, 11, -1, STRIDE)                               \
    X(SORT_WRITE, POINTWISE, sb_sort_write, BASE, 10, 0, STRIDE)                                \
    X(SORT_SCATTER, POINTWISE, sb_sort_scatter, BASE, 8, 0, STRIDE)                             \
    /* cumulative.cl: one work-item per column, strided through its geometry */                \
    X(CUMULATIVE, POINTWISE, sb_cumulative, BASE, 11, 0, STRIDE)                                \
    /* pointwise.cl: dense operands */                                                          \
    X(MSE_TERMS, POINTWISE, sb_loss_mse_terms, BASE, 7, -1, STRIDE)                             \
    X(MSE_GRAD, POINTWISE, sb_loss_mse_grad, BASE, 14, -1, STRIDE)                              \
    X(SGD, POINTWISE, sb_opt_sgd, BASE, 16, -1, STRIDE)                                         \
    X(ADAM, POINTWISE, sb_opt_adam, BASE, 24, -1, STRIDE)                                       \
    /* the math program: math.cl, softmax.cl and class_loss.cl */                              \
    X(MATH_EVAL, MATH, sb_math_eval, BASE, 6, -1, STRIDE)                                       \
    X(MATH_UNARY, MATH, sb_math_unary, BASE, 7, 2, STRIDE)                                      \
    X(MATH_UNARY_GRAD, MATH, sb_math_unary_grad, BASE, 11, 2, STRIDE)                           \
    X(MATH_ACTIVATION, MATH, sb_math_activation, BASE, 14, 7, STRIDE)                           \
    X(SOFTMAX_FORWARD, MATH, sb_softmax_forward, BASE, 8, -1, STRIDE)                           \
    X(SOFTMAX_BACKWARD, MATH, sb_softmax_backward, BASE, 10, -1, STRIDE)                        \
    X(CLASS_LOSS_ROWS, MATH, sb_class_loss_rows, BASE, 15, -1, STRIDE)                          \
    X(CLASS_LOSS_GRAD, MATH, sb_class_loss_grad, BASE, 20, -1, STRIDE)                          \
    X(CLASS_MEAN_TERMS, MATH, sb_class_mean_terms, BASE, 8, -1, STRIDE)                         \
    X(CLASS_MEAN_COUNT, MATH, sb_class_mean_count, BASE, 6, -1, LANES32)                        \
    X(MATH_POW, MATH, sb_math_pow, BASE, 9, 2, STRIDE)                                          \
    X(MATH_POW_SCALAR, MATH, sb_math_pow_scalar, BASE, 8, 2, STRIDE)                            \
    X(MATH_POW_GRAD, MATH, sb_math_pow_grad, BASE, 12, 3, STRIDE)                               \
    /* the math program: loss.cl over src/ref/loss_terms.h */                                  \
    X(LOSS_TERMS, MATH, sb_loss_terms, BASE, 16, -1, STRIDE)                                    \
    X(LOSS_GRAD, MATH, sb_loss_grad_all, BASE, 24, -1, STRIDE)                                  \
    /* the math program: attention.cl over src/ref/attention_rules.h */                        \
    X(SDPA_FORWARD, MATH, sb_sdpa_forward, BASE, 19, 0, STRIDE)                                 \
    X(SDPA_BACKWARD_ROWS, MATH, sb_sdpa_backward_rows, BASE, 22, 0, STRIDE)                     \
    X(SDPA_BACKWARD_KEYS, MATH, sb_sdpa_backward_keys, BASE, 14, 0, STRIDE)                     \
    /* the math program: ctc.cl over src/ref/ctc_item.h */                                      \
    X(CTC_ITEMS, MATH, sb_ctc_loss_items, BASE, 15, 0, STRIDE)                                  \
    X(CTC_GRAD, MATH, sb_ctc_loss_grad, BASE, 17, 0, STRIDE)                                    \
    /* the generator's program: src/rng/philox.c and dropout.cl */                             \
    X(DROPOUT_FORWARD, RNG, sb_dropout_forward, BASE, 14, -1, STRIDE)                           \
    X(DROPOUT_BACKWARD, RNG, sb_dropout_backward, BASE, 9, -1, STRIDE)                          \
    X(DROPOUT_KEEP, RNG, sb_dropout_keep, BASE, 7, -1, STRIDE)                                  \
    /* norm.cl: one work-item per channel, row or column */                                    \
    X(BN_FORWARD, NORM, sb_bn_forward, BASE, 25, -1, STRIDE)                                    \
    X(BN_BACKWARD, NORM, sb_bn_backward, BASE, 22, -1, STRIDE)                                  \
    X(ROWS_FORWARD, NORM, sb_rows_forward, BASE, 19, -1, STRIDE)                                \
    X(ROWS_BACKWARD_DX, NORM, sb_rows_backward_dx, BASE, 18, -1, STRIDE)                        \
    X(ROWS_BACKWARD_PARAMS, NORM, sb_rows_backward_params, BASE, 17, -1, STRIDE)                \
    /* prelu.cl (in the norm program): per element, and per channel for dweight */             \
    X(PRELU_FORWARD, NORM, sb_prelu_forward, BASE, 9, -1, STRIDE)                               \
    X(PRELU_BACKWARD_DX, NORM, sb_prelu_backward_dx, BASE, 11, -1, STRIDE)                      \
    X(PRELU_BACKWARD_DW, NORM, sb_prelu_backward_dw, BASE, 9, -1, STRIDE)                       \
    /* sum.cl */                                                                                \
    X(SUM, SUM, sb_sum_reduce, BASE, 10, 5, LANES32)                                            \
    X(SUM_BLOCKS, SUM, sb_sum_blocks, BASE, 7, 2, LANES32)                                      \
    X(SUM_FINISH, SUM, sb_sum_finish, BASE, 9, 4, STRIDE)                                       \
    X(REDUCE_EXTREME, SUM, sb_reduce_extreme, BASE, 12, 3, STRIDE)                              \
    X(REDUCE_SCATTER, SUM, sb_reduce_scatter, BASE, 9, 2, STRIDE)                               \
    /* gemm.cl: the four transposes, conv2d forward (mode 1) and weight gradient (mode 2) */   \
    X(GEMM_NN, GEMM, sb_gemm, GEMM_NN, 17, 16, TILES64)                                         \
    X(GEMM_NT, GEMM, sb_gemm, GEMM_NT, 17, 16, TILES64)                                         \
    X(GEMM_TN, GEMM, sb_gemm, GEMM_TN, 17, 16, TILES64)                                         \
    X(GEMM_TT, GEMM, sb_gemm, GEMM_TT, 17, 16, TILES64)                                         \
    X(GEMM_CONV_FORWARD, GEMM, sb_gemm, GEMM_CONV_FORWARD, 17, 16, TILES64)                     \
    X(GEMM_CONV_WEIGHT, GEMM, sb_gemm, GEMM_CONV_WEIGHT, 17, 16, TILES64)                       \
    /* conv.cl and pad.cl */                                                                    \
    X(CONV_BACKWARD_INPUT, CONV, sb_conv_backward_input, BASE, 7, 0, STRIDE)                    \
    X(MAX_POOL_FORWARD, CONV, sb_max_pool_forward, BASE, 8, 0, STRIDE)                          \
    X(MAX_POOL_BACKWARD, CONV, sb_max_pool_backward, BASE, 7, 0, STRIDE)                        \
    X(AVG_POOL_FORWARD, CONV, sb_avg_pool_forward, BASE, 5, 0, STRIDE)                          \
    X(AVG_POOL_BACKWARD, CONV, sb_avg_pool_backward, BASE, 5, 0, STRIDE)                        \
    X(PAD2D_FORWARD, CONV, sb_pad2d_forward, BASE, 6, 0, STRIDE)                                \
    X(PAD2D_BACKWARD, CONV, sb_pad2d_backward, BASE, 5, 0, STRIDE)                              \
    /* resample.cl: the geometry (interpolation: its tap tables) in slot 0 */ \
    X(INTERP_FORWARD, RESAMPLE, sb_interp_forward, BASE, 6, 0, STRIDE)                         \
    X(INTERP_BACKWARD, RESAMPLE, sb_interp_backward, BASE, 6, 0, STRIDE)                       \
    X(GRID_FORWARD, RESAMPLE, sb_grid_forward, BASE, 7, 0, STRIDE)                             \
    X(GRID_DX, RESAMPLE, sb_grid_dx, BASE, 8, 0, STRIDE)                                       \
    X(GRID_DGRID, RESAMPLE, sb_grid_dgrid, BASE, 9, 0, STRIDE)                                 \
    X(GRID_READER_TERMS, RESAMPLE, sb_grid_reader_terms, BASE, 10, 0, STRIDE)                  \
    X(GRID_READER_TABLES, RESAMPLE, sb_grid_reader_tables, BASE, 10, 0, STRIDE)

/* SB_GPU_K_<id>: a kernel's index in both backends' tables. */
typedef enum sb_gpu_kernel_id {
#define SB_GPU_KERNEL_ID(id, program, name, variant, nargs, geom_slot, grid) SB_GPU_K_##id,
    SB_GPU_KERNEL_LIST(SB_GPU_KERNEL_ID)
#undef SB_GPU_KERNEL_ID
    SB_GPU_KERNELS
} sb_gpu_kernel_id;

/* The variants' macros, as OpenCL build options (CUDA defines the same
 * macros before including gemm.cl again: src/cuda/program_gemm.cu). The
 * option strings are the program cache's keys. */
#define SB_GPU_VARIANT_BASE ""
#define SB_GPU_VARIANT_GEMM_NN "-DSB_GEMM_TA=0 -DSB_GEMM_TB=0"
#define SB_GPU_VARIANT_GEMM_NT "-DSB_GEMM_TA=0 -DSB_GEMM_TB=1"
#define SB_GPU_VARIANT_GEMM_TN "-DSB_GEMM_TA=1 -DSB_GEMM_TB=0"
#define SB_GPU_VARIANT_GEMM_TT "-DSB_GEMM_TA=1 -DSB_GEMM_TB=1"
#define SB_GPU_VARIANT_GEMM_CONV_FORWARD "-DSB_GEMM_MODE=1"
#define SB_GPU_VARIANT_GEMM_CONV_WEIGHT "-DSB_GEMM_MODE=2"

#endif
