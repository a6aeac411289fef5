/* The contract's floating-point environment at the API boundary; see
 * src/core/fpenv.h for why. One implementation per way of reaching the
 * control register: MXCSR on x86 (SSE arithmetic is the only arithmetic
 * samebits uses there; the build refuses x87 float math), FPCR on aarch64,
 * and the portable rounding-mode calls of <fenv.h> elsewhere (riscv64 and
 * s390x have no flush-to-zero mode to undo). */
#include <float.h>
#include "core/fpenv.h"

/* Every float operation must round to binary32 as it is written. Two
 * compilers evaluate float expressions in a wider format instead, which
 * would silently change results, so the build refuses them: 32-bit x86
 * with the x87 unit, and GCC on s390x in ISO C mode (-std=c11 implies
 * -fexcess-precision=standard, which evaluates float in double there
 * although the hardware has binary32 arithmetic). */
#if defined(__i386__) && !defined(__SSE2_MATH__)
#error "samebits needs SSE2 float arithmetic on 32-bit x86: build with -msse2 -mfpmath=sse"
#elif defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0
#if defined(__s390x__) || defined(__s390__)
#error "samebits needs FLT_EVAL_METHOD == 0 (float evaluated as float): on s390x build with -fexcess-precision=fast"
#else
#error "samebits needs FLT_EVAL_METHOD == 0 (float evaluated as float, no excess precision)"
#endif
#endif

#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE2_MATH__))
#include <xmmintrin.h>

/* Round to nearest, all exceptions masked, FTZ and DAZ off. The low six
 * bits are sticky exception flags: they are state, not settings, and are
 * left as they are. */
#define MXCSR_DEFAULT 0x1f80u
#define MXCSR_FLAGS 0x3fu

sb_fpenv sb_fpenv_enter(void) {
    unsigned csr = _mm_getcsr();
    sb_fpenv env = {csr, 0};
    if ((csr & ~MXCSR_FLAGS) != MXCSR_DEFAULT) {
        _mm_setcsr(MXCSR_DEFAULT | (csr & MXCSR_FLAGS));
        env.changed = 1;
    }
    return env;
}

void sb_fpenv_leave(sb_fpenv *env) {
    if (!env->changed) return;
    /* Keep the flags raised meanwhile, as the caller's own code would. */
    _mm_setcsr(((unsigned)env->saved & ~MXCSR_FLAGS) | (_mm_getcsr() & MXCSR_FLAGS));
    env->changed = 0;
}

int sb_fpenv_is_default(void) { return (_mm_getcsr() & ~MXCSR_FLAGS) == MXCSR_DEFAULT; }

#elif defined(__aarch64__)

/* FPCR all zero: round to nearest, no flush to zero (FZ, bit 24), no
 * default-NaN mode (DN, bit 25), no traps. */
static uint64_t fpcr_read(void) {
    uint64_t v;
    __asm__ volatile("mrs %0, fpcr" : "=r"(v) : : "memory");
    return v;
}

static void fpcr_write(uint64_t v) { __asm__ volatile("msr fpcr, %0" : : "r"(v) : "memory"); }

sb_fpenv sb_fpenv_enter(void) {
    uint64_t fpcr = fpcr_read();
    sb_fpenv env = {fpcr, 0};
    if (fpcr != 0) {
        fpcr_write(0);
        env.changed = 1;
    }
    return env;
}

void sb_fpenv_leave(sb_fpenv *env) {
    if (!env->changed) return;
    fpcr_write(env->saved);
    env->changed = 0;
}

int sb_fpenv_is_default(void) { return fpcr_read() == 0; }

#else
#include <fenv.h>

sb_fpenv sb_fpenv_enter(void) {
    int mode = fegetround();
    sb_fpenv env = {(uint64_t)(unsigned)mode, 0};
    if (mode != FE_TONEAREST) {
        fesetround(FE_TONEAREST);
        env.changed = 1;
    }
    return env;
}

void sb_fpenv_leave(sb_fpenv *env) {
    if (!env->changed) return;
    fesetround((int)(unsigned)env->saved);
    env->changed = 0;
}

int sb_fpenv_is_default(void) { return fegetround() == FE_TONEAREST; }
#endif
