/* src/cuda/gemm_variant_reset.cuh - included between two inclusions of
 * src/gpu/kernels/gemm.cl (src/cuda/program_gemm.cu): the variant's options
 * and the operand macros it defined go, so the next inclusion defines its
 * own. No
 * include guard: it is meant to be included repeatedly. */
#undef SB_GEMM_MODE
#undef SB_GEMM_TA
#undef SB_GEMM_TB
#undef SB_GEMM_NAME
#undef SB_GEMM_A_KCONTIG
#undef SB_GEMM_B_JCONTIG
#undef SB_GEMM_LOAD_A
#undef SB_GEMM_LOAD_B
#undef SB_GEMM_START
#undef SB_GEMM_STORE
