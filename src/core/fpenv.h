/* src/core/fpenv.h - the floating-point environment at samebits' API
 * boundary (contract section "The values and basic operations").
 *
 * The contract assumes IEEE round-to-nearest-even with subnormals kept and
 * no traps. A caller (or a library it loaded) may have changed that: a
 * rounding mode set with fesetround(), flush-to-zero / denormals-are-zero
 * in MXCSR (x86) or FPCR (aarch64). Every public entry point that computes
 * with floats therefore starts with
 *
 *     SB_FPENV_GUARD();
 *
 * which installs the contract's environment when the caller's differs and
 * puts the caller's back when the function returns, whatever path it
 * returns by. When the caller's environment is already the default the
 * guard costs one control-register read. Pool workers install it before
 * every range (src/cpu/threadpool.c). */
#ifndef SAMEBITS_FPENV_H
#define SAMEBITS_FPENV_H

#include <stdint.h>

typedef struct sb_fpenv {
    uint64_t saved; /* the caller's control register (or rounding mode) */
    int changed;    /* whether enter replaced it */
} sb_fpenv;

/* Installs the contract's environment; returns what to restore. */
sb_fpenv sb_fpenv_enter(void);
/* Restores what enter replaced (nothing when it replaced nothing). */
void sb_fpenv_leave(sb_fpenv *env);
/* True when the current environment is the contract's. */
int sb_fpenv_is_default(void);

#define SB_FPENV_GUARD()                                                      \
    sb_fpenv sb_fpenv_guard_ __attribute__((cleanup(sb_fpenv_leave), unused)) = \
        sb_fpenv_enter()

#endif
