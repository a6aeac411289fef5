# samebits build. `make` builds the library and CLI into $(BUILD)/;
# `make test` runs the whole suite (plain and sanitized builds).
#
# Floating-point flags are part of the numeric contract (docs/CONTRACT.md):
# -ffp-contract=off forbids the compiler from fusing a*b+c into an FMA, and
# nothing here may enable -ffast-math or any of its parts.

BUILD   ?= build
CC      ?= cc
PREFIX  ?= /usr/local
VERSION := 0.1.0

FPFLAGS  := -ffp-contract=off -fno-fast-math -frounding-math -fsignaling-nans
# -frounding-math/-fsignaling-nans stop constant folding and value-changing
# rewrites that assume the default environment; they cost nothing measurable.
ifeq ($(findstring clang,$(shell $(CC) --version 2>/dev/null)),clang)
  FPFLAGS := -ffp-contract=off -fno-fast-math
endif
WARN     := -Wall -Wextra -Werror -Wvla -Wstrict-prototypes -Wmissing-prototypes
OPT      ?= -O2
CFLAGS_ALL = -std=c11 $(OPT) -g $(FPFLAGS) $(WARN) -fPIC -pthread \
             -D_POSIX_C_SOURCE=200809L -Iinclude -Isrc $(OPENCL_CFLAGS) $(EXTRA_CFLAGS)
# NO_ZLIB=1: no zlib (targets without one); gzip IDX files are then refused
# with a message naming the option (src/io/idx.c, mk/portability.mk).
LDLIBS_ALL = -lm $(if $(NO_ZLIB),,-lz) -pthread $(OPENCL_LDLIBS) $(EXTRA_LDLIBS)

# The OpenCL backend (src/opencl, docs/GPU.md): SB_OPENCL=1 forces it on,
# SB_OPENCL=0 off; by default it is on when the compiler finds the OpenCL
# headers and can link the loader for its target (<CL/cl.h> and -lOpenCL,
# Debian ocl-icd-opencl-dev: a cross compiler sees the host's headers but
# not a loader for its own architecture). Without it the library builds and
# works as before and the opencl device reports how to get it.
ifeq ($(SB_OPENCL),)
  SB_OPENCL := $(shell printf '\043include <CL/cl.h>\nint main(void) { return (int)clGetPlatformIDs(0, 0, 0); }\n' | \
                 $(CC) -x c -o /dev/null - -lOpenCL >/dev/null 2>&1 && echo 1 || echo 0)
endif
ifeq ($(SB_OPENCL),1)
  OPENCL_CFLAGS := -DSB_HAVE_OPENCL
  OPENCL_LDLIBS := -lOpenCL
endif

# Per-ISA kernel files (src/cpu/*_avx2.c, ...) get their instruction set's
# flags; on other architectures they compile to nothing (src/cpu/cpu.h).
TARGET_ARCH_NAME := $(shell $(CC) -dumpmachine 2>/dev/null)
ifneq ($(filter x86_64-%,$(TARGET_ARCH_NAME)),)
  ISA_SSE2   := -msse2
  ISA_AVX2   := -mavx2 -mfma
  ISA_AVX512 := -mavx512f -mavx512dq -mavx2 -mfma
endif
# 32-bit x86: float arithmetic must be SSE2, never the x87 unit, whose excess
# precision would change results (src/core/fpenv.c refuses to build otherwise).
ifneq ($(filter i386-% i486-% i586-% i686-%,$(TARGET_ARCH_NAME)),)
  FPFLAGS += -msse2 -mfpmath=sse
endif
# GCC on s390x in ISO C mode evaluates float expressions in double
# (FLT_EVAL_METHOD 1) although the hardware has binary32 arithmetic; this
# makes every float operation round as written (src/core/fpenv.c checks).
ifneq ($(filter s390x-% s390-%,$(TARGET_ARCH_NAME)),)
  FPFLAGS += -fexcess-precision=fast
endif

LIB_SRC  := $(sort $(wildcard src/*/*.c))
CLI_SRC  := $(sort $(wildcard src/cli/*.c))
LIB_SRC  := $(filter-out $(CLI_SRC) src/mpi/%,$(LIB_SRC))
# GPU kernel text (src/gpu/kernels, and src/math's correctly rounded
# functions) is embedded as strings in a generated file; the CUDA sources
# include the same files.
GPU_KERNELS := src/gpu/kernels/dialect.h $(sort $(wildcard src/gpu/kernels/*.cl)) \
               src/math/math_internal.h $(sort $(wildcard src/math/*.c)) src/rng/philox.c \
               src/ref/pool_geometry.h src/ref/pad_geometry.h src/ref/loss_terms.h \
               src/ref/cumulative_chain.h src/ref/prelu_terms.h src/ref/attention_rules.h \
               src/ref/grid_geometry.h src/ref/scatter_reduce_column.h \
               src/ref/sort_rank.h src/ref/ctc_item.h
ifneq ($(SB_OPENCL),1)
  LIB_SRC := $(filter-out src/opencl/%,$(LIB_SRC))
endif
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
ifeq ($(SB_OPENCL),1)
  LIB_OBJ += $(BUILD)/obj/gen/gpu_kernels.o
endif
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
TEST_SRC := $(sort $(wildcard tests/test_*.c))
ifneq ($(SB_OPENCL),1)
  TEST_SRC := $(filter-out tests/test_opencl.c,$(TEST_SRC))
endif
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
TEST_SUPPORT := $(sort $(wildcard tests/support/*.c))
TEST_SUPPORT_OBJ := $(TEST_SUPPORT:%.c=$(BUILD)/obj/%.o)
.SECONDARY: $(TEST_SUPPORT_OBJ) # kept, not rebuilt for every test binary

.PHONY: all lib cli examples tests test test-plain test-asan test-zoo test-zoo-224 verify-math deps deps-debian install clean demo

all: lib cli

lib: $(BUILD)/libsamebits.a $(BUILD)/libsamebits.so
cli: $(BUILD)/samebits

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(CFLAGS_ALL) $(ISA_FLAGS) $(VISIBILITY) -MMD -MP -c $< -o $@

# Library objects export only what the public headers mark SB_API
# (include/samebits/export.h); tests/check_exports.sh holds the shared
# library to exactly the headers' functions.
$(LIB_OBJ): VISIBILITY = -fvisibility=hidden

$(BUILD)/gen/gpu_kernels.c: $(GPU_KERNELS) src/math/math_tables.h scripts/embed_text.sh
	@mkdir -p $(dir $@)
	@echo "  EMBED   $(GPU_KERNELS)"
	@scripts/embed_text.sh $@ $(GPU_KERNELS)

$(BUILD)/obj/gen/gpu_kernels.o: $(BUILD)/gen/gpu_kernels.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(CFLAGS_ALL) $(VISIBILITY) -c $< -o $@

$(BUILD)/obj/%_sse2.o: ISA_FLAGS = $(ISA_SSE2)
$(BUILD)/obj/%_avx2.o: ISA_FLAGS = $(ISA_AVX2)
$(BUILD)/obj/%_avx512.o: ISA_FLAGS = $(ISA_AVX512)

$(BUILD)/libsamebits.a: $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libsamebits.so: $(LIB_OBJ)
	$(CC) -shared -o $@ $^ $(LDLIBS_ALL)

$(BUILD)/samebits: $(CLI_OBJ) $(BUILD)/libsamebits.a
	$(CC) $(CFLAGS_ALL) -o $@ $(CLI_OBJ) $(BUILD)/libsamebits.a $(LDLIBS_ALL)

# Tests that compare against MPFR link it; the library itself never does.
$(BUILD)/tests/%: tests/%.c $(BUILD)/libsamebits.a $(TEST_SUPPORT_OBJ) tests/harness.h $(wildcard tests/support/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Itests -o $@ $< $(TEST_SUPPORT_OBJ) $(BUILD)/libsamebits.a -lmpfr -lgmp $(LDLIBS_ALL)

tests: $(TEST_BIN) $(BUILD)/libsamebits.so cli examples

EXAMPLE_BIN := $(patsubst examples/%.c,$(BUILD)/examples/%,$(wildcard examples/*.c))
examples: $(EXAMPLE_BIN)

$(BUILD)/examples/%: examples/%.c $(BUILD)/libsamebits.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ $< $(BUILD)/libsamebits.a $(LDLIBS_ALL)

# The suite: every tests/test_* binary, then the same under ASan+UBSan.
test: deps
	$(MAKE) test-plain
	$(MAKE) test-asan
	@echo "make test: all configurations passed"

test-plain: tests
	@tests/run.sh $(BUILD)

test-asan:
	$(MAKE) BUILD=build-asan OPT=-O1 \
	  EXTRA_CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
	  EXTRA_LDLIBS="-fsanitize=address,undefined" tests
	@SB_TEST_QUICK=1 ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 tests/run.sh build-asan

# The torchvision zoo (tests/python/test_zoo.py; python/README.md has the
# times). `make test` runs every model of the list on 2x3x32x32 images in the
# configurations that tell (scalar and the best ISA level at 1 thread, 1 and 3
# threads at the best level), and examples/resnet18_fashion.py at the best
# level with 1 and 3 threads (tests/check_python.sh). test-zoo: the same models
# on 2x3x64x64 (convnext_tiny 32x32) at every ISA level at 1 thread and 1/2/3
# threads at the best level, two SGD steps, swin_t's named gap, and the
# example against its golden lines at every ISA level. test-zoo-224: resnet18,
# mobilenet_v2 and efficientnet_b0 on 1x3x224x224 at 1 and 2 threads.
ZOO_PYTEST = SAMEBITS_LIB=$(abspath $(BUILD))/libsamebits.so PYTHONDONTWRITEBYTECODE=1 \
  $(or $(PYTHON),/usr/bin/python3) -m pytest -q -p no:cacheprovider
test-zoo: lib
	SB_TEST_ZOO=full $(ZOO_PYTEST) tests/python/test_zoo.py tests/python/test_resnet18_fashion.py

test-zoo-224: lib
	SB_TEST_ZOO=224 $(ZOO_PYTEST) tests/python/test_zoo.py

# Exhaustive proof that every correctly rounded function is correctly rounded
# on all 2^32 inputs (see docs/MATH-VERIFICATION.md). Shard with
# VERIFY_ARGS="--shard I/N"; pick functions with VERIFY_ARGS="expf logf".
verify-math: $(BUILD)/tools/verify_math
	$(BUILD)/tools/verify_math $(VERIFY_ARGS)

$(BUILD)/tools/%: tools/%.c $(BUILD)/libsamebits.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -O3 -o $@ $< $(BUILD)/libsamebits.a -lmpfr -lgmp $(LDLIBS_ALL)

# The main job: train LeNet-5 on Fashion-MNIST with the default settings and
# compare the four printed lines with the recorded golden run.
demo: deps-debian all
	@echo "training LeNet-5 (2 epochs of Fashion-MNIST; a few minutes)..."
	@$(BUILD)/samebits train | tee $(BUILD)/demo.out
	@if cmp -s $(BUILD)/demo.out tests/golden/lenet5-default.txt; then \
	  echo "MATCH: identical to the recorded golden run (tests/golden/lenet5-default.txt)"; \
	else \
	  echo "MISMATCH against tests/golden/lenet5-default.txt:"; \
	  diff tests/golden/lenet5-default.txt $(BUILD)/demo.out; exit 1; \
	fi

# Installs the Debian packages the build and tests need when they are
# missing (as root), or says exactly what to install; then the Python test
# environment of pinned PyPI packages (PyTorch 2.x: scripts/python-venv.sh,
# python/requirements-test.txt), which is kept while the pins do not change.
# `make demo` needs only the Debian part (deps-debian).
deps: deps-debian
	@scripts/python-venv.sh ensure

deps-debian:
	@scripts/install-deps.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/samebits \
	  $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 $(BUILD)/libsamebits.a $(BUILD)/libsamebits.so $(DESTDIR)$(PREFIX)/lib/
	install -m 644 include/samebits.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 include/samebits/*.h $(DESTDIR)$(PREFIX)/include/samebits/
	install -m 755 $(BUILD)/samebits $(DESTDIR)$(PREFIX)/bin/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' -e 's|@OPENCL_LIBS@|$(OPENCL_LDLIBS)|g' samebits.pc.in \
	  > $(DESTDIR)$(PREFIX)/lib/pkgconfig/samebits.pc

clean:
	rm -rf build build-asan build-*

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d)

# Optional parts keep their rules in their own fragments: benchmarks,
# the portability matrix, the CUDA backend.
include $(sort $(wildcard mk/*.mk))
