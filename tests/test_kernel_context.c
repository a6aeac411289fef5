/* The kernel context (src/cpu/kernels.h): one per ISA level, complete, and
 * the one a job runs under.
 *
 *  - every level this build compiles has a context naming its own level,
 *    with every kernel a family calls set (a NULL would crash the family or
 *    silently drop a level's fast path); the documented optional members
 *    (flexible GEMM kernels, copy_rows, max_pool2x2) are consistent;
 *  - sb_set_isa() switches sb_kernels() to that level's context;
 *  - a thread-pool job sees the submitter's context in every range, on
 *    every thread, nested jobs included, even when the level is switched
 *    while it runs; afterwards the new level is in use.
 * (The bits of every family at every level are tests/test_fast_*.c's.) */
#include <stdatomic.h>
#include "harness.h"
#include "cpu/cpu.h"
#include "cpu/fused_internal.h"
#include "cpu/kernels.h"
#include "cpu/ops_internal.h"
#include "cpu/vmath.h"

static void test_contexts_complete(void) {
    int compiled = 0;
    for (int l = 0; l < SB_ISA_COUNT; l++) {
        sb_isa_level level = (sb_isa_level)l;
        const sb_cpu_kernels *k = sb_cpu_kernels_for(level);
        if (sb_isa_supported(level))
            CHECK(k != NULL, "%s: supported but no context", sb_isa_name(level));
        if (!k) continue;
        compiled++;
        const char *name = sb_isa_name(level);
        CHECK(k->isa == level, "%s: context names level %d", name, (int)k->isa);
        CHECK(k->gemm.ukernel && k->gemm.mr >= 1 && k->gemm.nr >= 1, "%s: GEMM micro-kernel", name);
        CHECK(k->gemm.mr <= SB_GEMM_MR_MAX && k->gemm.nr <= SB_GEMM_NR_MAX, "%s: tile too big", name);
        CHECK(k->gemm.nflex >= 0 && (k->gemm.nflex == 0) == (k->gemm.flex == NULL),
              "%s: flexible kernel list", name);
        for (int i = 0; i < k->gemm.nflex; i++) {
            const sb_gemm_flex_kernel *f = &k->gemm.flex[i];
            CHECK(f->flex && f->offset && f->mr >= 1 && f->mr <= SB_GEMM_MR_MAX,
                  "%s: flexible kernel %d", name, i);
            if (i > 0) CHECK(f->mr < k->gemm.flex[i - 1].mr, "%s: flexible kernels not tallest first", name);
        }
        CHECK(k->sum_rows != NULL, "%s: canonical-sum row adder", name);
        const sb_pwv_table *pw = k->pointwise;
        CHECK(pw && pw->relu_fwd && pw->relu_bwd && pw->binary && pw->adam && pw->sgd,
              "%s: pointwise table incomplete", name);
        const sb_vmath_table *vm = k->vmath;
        CHECK(vm && vm->expf_n && vm->logf_n && vm->tanhf_n && vm->expm1f_n && vm->log1pf_n &&
                  vm->erff_n && vm->exp2f_n && vm->log2f_n && vm->sinf_n && vm->cosf_n &&
                  vm->expf_sub_n && vm->erff_mul_n,
              "%s: batch math table incomplete", name);
        const sb_fused_kernels *fu = k->fused;
        CHECK(fu && fu->gelu_tanh_arg && fu->gelu_fwd && fu->gelu_tanh_bwd && fu->gelu_exp_arg &&
                  fu->gelu_exact_bwd && fu->sub_sub && fu->sub_mul && fu->mul_sub,
              "%s: fused element loops incomplete", name);
        CHECK((k->copy_rows == NULL) == (k->copy_rows_max == 0), "%s: copy_rows and its width", name);
        CHECK(k->dw_taps && k->dw_wgrad && k->dw_interleave && k->dw_deinterleave &&
                  k->dw_lanes_fwd && k->dw_lanes_dx && k->dw_lanes >= 1 && k->dw_lanes <= 16,
              "%s: depthwise conv2d loops incomplete", name);
        if (level == SB_ISA_SCALAR)
            CHECK(k->vmath == &sb_vmath_scalar && k->pointwise == &sb_pwv_scalar &&
                      k->fused == &sb_fused_scalar && k->sum_rows == sb_sum_rows_scalar,
                  "scalar: not the scalar loops");
    }
    CHECK(compiled >= 1, "no context at all");
    CHECK(sb_cpu_kernels_for(SB_ISA_COUNT) == NULL && sb_cpu_kernels_for((sb_isa_level)-1) == NULL,
          "a context for a level that does not exist");
}

static void test_set_isa_switches(void) {
    for (int l = 0; l < SB_ISA_COUNT; l++) {
        if (!sb_isa_supported((sb_isa_level)l)) continue;
        CHECK_OK(sb_set_isa((sb_isa_level)l));
        CHECK(sb_kernels() == sb_cpu_kernels_for((sb_isa_level)l), "%s: sb_kernels() not switched",
              sb_isa_name((sb_isa_level)l));
        CHECK(sb_kernels()->isa == sb_isa(), "sb_kernels()->isa != sb_isa()");
    }
}

/* ---- one context per job ------------------------------------------------- */

enum { RANGES = 64 };

typedef struct {
    const sb_cpu_kernels *seen[RANGES];        /* sb_kernels() in each range */
    const sb_cpu_kernels *seen_nested[RANGES]; /* and in a job started from it */
    sb_isa_level switch_to;
    atomic_int switched;
} pin_job;

static void nested_range(void *vctx, int64_t b, int64_t e) {
    const sb_cpu_kernels **out = vctx;
    for (int64_t i = b; i < e; i++) out[i] = sb_kernels();
}

static void pin_range(void *vctx, int64_t b, int64_t e) {
    pin_job *j = vctx;
    /* the first range to run switches the level for everyone */
    int expected = 0;
    if (atomic_compare_exchange_strong(&j->switched, &expected, 1)) sb_set_isa(j->switch_to);
    for (int64_t i = b; i < e; i++) {
        /* some work, so that the ranges spread over the workers */
        volatile float acc = 0.0f;
        for (int r = 0; r < 20000; r++) acc = acc + 1.0f;
        j->seen[i] = sb_kernels();
        const sb_cpu_kernels *nested[1] = {NULL};
        sb_parallel_for(1, 1, nested_range, nested);
        j->seen_nested[i] = nested[0];
    }
}

static void test_job_sees_one_context(void) {
    sb_isa_level from = SB_ISA_SCALAR, to = sb_isa_best();
    if (to == from) {
        printf("%s: one ISA level on this machine; pinning not exercised\n", sb_test_name);
        return;
    }
    static const int threads[] = {1, 2, 4, 7};
    for (int round = 0; round < 2; round++) {
        for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
            CHECK_OK(sb_set_num_threads(threads[t]));
            CHECK_OK(sb_set_isa(from));
            pin_job j = {.switch_to = to};
            atomic_init(&j.switched, 0);
            sb_parallel_for(RANGES, 1, pin_range, &j);
            const sb_cpu_kernels *want = sb_cpu_kernels_for(from);
            int bad = 0;
            for (int i = 0; i < RANGES; i++)
                if (j.seen[i] != want || j.seen_nested[i] != want) bad++;
            CHECK(bad == 0, "%d threads, %s -> %s mid-job: %d of %d ranges saw another context",
                  threads[t], sb_isa_name(from), sb_isa_name(to), bad, RANGES);
            CHECK(sb_isa() == to && sb_kernels() == sb_cpu_kernels_for(to),
                  "%d threads: the switch made during the job is not in use after it", threads[t]);
        }
        sb_isa_level swap = from;
        from = to;
        to = swap;
    }
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    int threads = sb_num_threads();
    test_contexts_complete();
    test_set_isa_switches();
    test_job_sees_one_context();
    sb_set_isa(sb_isa_best());
    sb_set_num_threads(threads);
    return sb_test_finish();
}
