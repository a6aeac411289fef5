/* samebits/runtime.h - how samebits runs: which instruction set the fast CPU
 * kernels use and how many threads share the work.
 *
 * None of these settings changes a single result bit (docs/CONTRACT.md): the
 * kernels of every level and every thread count reproduce the reference
 * path exactly. They exist for speed, and so that tests can prove that.
 *
 * Environment variables read once, at first use:
 *   SB_ISA=scalar|sse2|avx2|avx512|neon   force a level (default: the best
 *                                         one this CPU supports)
 *   SB_NUM_THREADS=N                      threads (default: online CPUs)
 */
#ifndef SAMEBITS_RUNTIME_H
#define SAMEBITS_RUNTIME_H

#include <stdbool.h>
#include "samebits/export.h"
#include "samebits/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Instruction-set levels of the fast CPU kernels. SCALAR is portable C and
 * runs everywhere; the others exist only on their architecture. */
typedef enum sb_isa_level {
    SB_ISA_SCALAR = 0,
    SB_ISA_SSE2 = 1,   /* x86-64 baseline; FMA chains use a software fma */
    SB_ISA_AVX2 = 2,   /* x86-64 with AVX2 and FMA3 */
    SB_ISA_AVX512 = 3, /* x86-64 with AVX-512F/DQ */
    SB_ISA_NEON = 4,   /* aarch64 Advanced SIMD */
    SB_ISA_COUNT
} sb_isa_level;

/* The level in use now. */
SB_API sb_isa_level sb_isa(void);
/* "scalar", "sse2", "avx2", "avx512", "neon"; "?" for an invalid value. */
SB_API const char *sb_isa_name(sb_isa_level level);
/* Parses a name as above. SB_ERR_ARG for an unknown name. */
SB_API sb_status sb_isa_from_name(const char *name, sb_isa_level *level);
/* True when this build has kernels for `level` and this CPU can run them. */
SB_API bool sb_isa_supported(sb_isa_level level);
/* The best supported level (what is used unless SB_ISA or sb_set_isa says
 * otherwise). */
SB_API sb_isa_level sb_isa_best(void);
/* Selects a level for all threads. SB_ERR_ARG when unsupported here. */
SB_API sb_status sb_set_isa(sb_isa_level level);

/* Threads used by the fast kernels (1 = run on the caller's thread only).
 * SB_ERR_ARG unless 1 <= n <= SB_MAX_THREADS. */
#define SB_MAX_THREADS 256
SB_API sb_status sb_set_num_threads(int n);
SB_API int sb_num_threads(void);

#ifdef __cplusplus
}
#endif
#endif
