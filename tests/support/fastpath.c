/* Configurations of the fast-backend differential tests (fastpath.h). */
#include "fastpath.h"
#include <stdio.h>
#include <stdlib.h>
#include "../harness.h"
#include "samebits.h"

static const int full_threads[] = {1, 2, 3, 4, 7};
static const int quick_threads[] = {1, 3};

typedef struct {
    sb_isa_level isa;
    int threads;
    char name[32];
} config;

static config configs[SB_ISA_COUNT * 5];
static int nconfigs = -1;
static int initial_threads;

static void build(void) {
    if (nconfigs >= 0) return;
    initial_threads = sb_num_threads();
    const int *threads = sb_test_quick() ? quick_threads : full_threads;
    int nthreads = sb_test_quick() ? 2 : 5;
    nconfigs = 0;
    for (int isa = 0; isa < SB_ISA_COUNT; isa++) {
        if (!sb_isa_supported((sb_isa_level)isa)) continue;
        for (int t = 0; t < nthreads; t++) {
            config *c = &configs[nconfigs++];
            c->isa = (sb_isa_level)isa;
            c->threads = threads[t];
            snprintf(c->name, sizeof c->name, "%s/%dt", sb_isa_name(c->isa), c->threads);
        }
    }
}

int sb_test_config_count(void) {
    build();
    return nconfigs;
}

void sb_test_config_apply(int c) {
    build();
    if (sb_set_isa(configs[c].isa) != SB_OK || sb_set_num_threads(configs[c].threads) != SB_OK) {
        fprintf(stderr, "fastpath: cannot apply %s: %s\n", configs[c].name, sb_last_error());
        exit(1);
    }
}

const char *sb_test_config_name(int c) {
    build();
    return configs[c].name;
}

void sb_test_config_reset(void) {
    build();
    sb_set_isa(sb_isa_best());
    sb_set_num_threads(initial_threads);
}
