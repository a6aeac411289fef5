# The portability matrix (docs/PORTABILITY.md): samebits built by several
# compilers, optimisation levels, instruction sets, thread counts and
# architectures (foreign ones under qemu-user), each run must print exactly
# the golden lines of the native reference build.
#   make portability      the full matrix (one row per configuration)
#   make portability-ci   the representative subset .ci/run runs
# PORT_ARGS passes options to scripts/portability.sh (e.g. PORT_ARGS="--only gcc-O3").

.PHONY: portability portability-ci portability-deps

# NO_ZLIB=1 (used by the cross configurations, which have no target zlib):
# src/io/idx.c reads plain IDX files with stdio and refuses gzip ones.
ifneq ($(NO_ZLIB),)
  CFLAGS_ALL += -DSB_NO_ZLIB
endif

portability-deps:
	@scripts/install-portability-deps.sh

portability: deps portability-deps
	@scripts/portability.sh $(PORT_ARGS)

portability-ci: deps portability-deps
	@scripts/portability.sh --subset ci $(PORT_ARGS)

# A test that needs only libc and samebits builds for any target as
# $(BUILD)/port/<name>, linked with the test support minus its MPFR part
# (tests/support/*_mpfr.c; cross sysroots have no MPFR). The matrix builds
# and runs test_fpenv (the floating-point environment guard) everywhere, and
# test_kernel_context, test_fast_gemm and test_fast_conv (the differential
# tests of the fast GEMM and conv2d paths, NEON's on aarch64) where its
# configuration asks for them (scripts/portability.sh).
PORT_SUPPORT_OBJ := $(filter-out %_mpfr.o,$(TEST_SUPPORT_OBJ))

$(BUILD)/port/%: tests/%.c $(BUILD)/libsamebits.a $(PORT_SUPPORT_OBJ) tests/harness.h $(wildcard tests/support/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Itests -o $@ $< $(PORT_SUPPORT_OBJ) $(BUILD)/libsamebits.a $(LDLIBS_ALL)
