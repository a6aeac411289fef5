/* Instruction-set dispatch: which level of the fast kernels runs
 * (include/samebits/runtime.h). The level never changes results, only
 * speed, so a level this CPU cannot run is refused rather than emulated. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/internal.h"
#include "cpu/cpu.h"
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

static const char *const isa_names[SB_ISA_COUNT] = {"scalar", "sse2", "avx2", "avx512", "neon"};

const char *sb_isa_name(sb_isa_level level) {
    return (unsigned)level < SB_ISA_COUNT ? isa_names[level] : "?";
}

sb_status sb_isa_from_name(const char *name, sb_isa_level *level) {
    if (!name) return sb_fail(SB_ERR_NULL, "sb_isa_from_name: name is NULL");
    if (!level) return sb_fail(SB_ERR_NULL, "sb_isa_from_name: level is NULL");
    for (int i = 0; i < SB_ISA_COUNT; i++)
        if (strcmp(name, isa_names[i]) == 0) {
            *level = (sb_isa_level)i;
            return SB_OK;
        }
    return sb_fail(SB_ERR_ARG,
                   "sb_isa_from_name: unknown level \"%s\" (expected scalar, sse2, avx2, avx512 or neon)",
                   name);
}

bool sb_isa_supported(sb_isa_level level) {
    switch (level) {
    case SB_ISA_SCALAR: return true;
#if SB_HAVE_X86_KERNELS
    case SB_ISA_SSE2: return true; /* part of x86-64 */
    case SB_ISA_AVX2:
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case SB_ISA_AVX512:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
#if SB_HAVE_NEON_KERNELS
    case SB_ISA_NEON:
#if defined(__linux__) && defined(HWCAP_ASIMD)
        return (getauxval(AT_HWCAP) & HWCAP_ASIMD) != 0;
#else
        return true;
#endif
#endif
    default: return false;
    }
}

sb_isa_level sb_isa_best(void) {
    static const sb_isa_level order[] = {SB_ISA_AVX512, SB_ISA_AVX2, SB_ISA_NEON, SB_ISA_SSE2};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (sb_isa_supported(order[i])) return order[i];
    return SB_ISA_SCALAR;
}

static atomic_int current_isa = -1;
static pthread_once_t isa_once = PTHREAD_ONCE_INIT;

/* SB_ISA is read once. A bad value cannot be returned as an error from
 * here, and ignoring it silently would make a test believe it exercised a
 * level it did not: say so on stderr and use the portable level, whose
 * bits are the same anyway. */
static void isa_init(void) {
    sb_isa_level level = sb_isa_best();
    const char *env = getenv("SB_ISA");
    if (env && *env) {
        sb_isa_level forced = SB_ISA_SCALAR;
        if (sb_isa_from_name(env, &forced) != SB_OK) {
            fprintf(stderr, "samebits: SB_ISA=%s is not a level (scalar, sse2, avx2, avx512, neon); using scalar\n", env);
            level = SB_ISA_SCALAR;
        } else if (!sb_isa_supported(forced)) {
            fprintf(stderr, "samebits: SB_ISA=%s is not supported on this CPU or build; using scalar\n", env);
            level = SB_ISA_SCALAR;
        } else {
            level = forced;
        }
    }
    int expected = -1;
    atomic_compare_exchange_strong(&current_isa, &expected, (int)level);
}

sb_isa_level sb_isa(void) {
    int level = atomic_load_explicit(&current_isa, memory_order_relaxed);
    if (level < 0) {
        pthread_once(&isa_once, isa_init);
        level = atomic_load(&current_isa);
    }
    return (sb_isa_level)level;
}

sb_status sb_set_isa(sb_isa_level level) {
    if ((unsigned)level >= SB_ISA_COUNT)
        return sb_fail(SB_ERR_ARG, "sb_set_isa: level %d is not an sb_isa_level", (int)level);
    if (!sb_isa_supported(level))
        return sb_fail(SB_ERR_ARG, "sb_set_isa: level %s is not supported on this CPU or build",
                       sb_isa_name(level));
    pthread_once(&isa_once, isa_init);
    atomic_store(&current_isa, (int)level);
    return SB_OK;
}
