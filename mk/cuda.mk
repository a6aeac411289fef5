# mk/cuda.mk - the optional CUDA backend (docs/GPU.md).
#
# Detection: SB_CUDA=0 forces it off, SB_CUDA=1 forces it on, otherwise it is
# on when `nvcc` is on the PATH. When it is off nothing here adds a rule to
# the CPU build; when it is on, `make all` also builds `cuda`.
#
# Everything CUDA goes to $(BUILD)/libsamebits_cuda.a, a separate archive:
# the CPU library, its tests and the CLI never need nvcc or libcudart.
#
# The numeric flags are part of the contract: --fmad=false (no contraction
# of a*b+c; fused steps are written as __fmaf_rn), IEEE division and square
# root, subnormals kept (-ftz=false), no fast math. Target: Hopper sm_90
# SASS plus compute_90 PTX so newer GPUs can JIT it.

SB_CUDA ?=
NVCC ?= nvcc
ifeq ($(SB_CUDA),0)
  SB_CUDA_ON :=
else ifeq ($(SB_CUDA),1)
  SB_CUDA_ON := 1
else
  SB_CUDA_ON := $(if $(shell command -v $(NVCC) 2>/dev/null),1,)
endif

CUDA_ARCH_FLAGS ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
CUDA_FPFLAGS := --fmad=false -prec-div=true -prec-sqrt=true -ftz=false
CUDA_HOSTFLAGS := -fPIC,-pthread,-Wall,-Wextra,-ffp-contract=off,-fno-fast-math
NVCCFLAGS_ALL = -std=c++17 -O3 -g -lineinfo $(CUDA_ARCH_FLAGS) $(CUDA_FPFLAGS) \
                -Xcompiler $(CUDA_HOSTFLAGS) \
                -Werror all-warnings -D_POSIX_C_SOURCE=200809L -Iinclude -Isrc \
                $(EXTRA_NVCCFLAGS)
CUDA_LIBDIR ?= $(abspath $(dir $(shell command -v $(NVCC) 2>/dev/null))../lib64)
CUDA_LDLIBS = -L$(CUDA_LIBDIR) -lcudart $(OPENCL_LDLIBS) -lz -lm -lpthread

CUDA_SRC := $(sort $(wildcard src/cuda/*.cu))
CUDA_OBJ := $(CUDA_SRC:%.cu=$(BUILD)/obj/%.o)
CUDA_TEST_BIN := $(patsubst tests/cuda/%.cu,$(BUILD)/tests/cuda/%,$(wildcard tests/cuda/test_*.cu))
CUDA_TOOL_BIN := $(patsubst tools/%.cu,$(BUILD)/tools/%,$(wildcard tools/cuda_*.cu))
CUDA_BENCH_BIN := $(patsubst bench/cuda/%.cu,$(BUILD)/bench/cuda/%,$(wildcard bench/cuda/*.cu))

.PHONY: cuda cuda-lib cuda-test cuda-verify-math cuda-bench

ifeq ($(SB_CUDA_ON),1)
all: cuda

cuda: $(BUILD)/libsamebits_cuda.a $(BUILD)/libsamebits_cuda.so $(CUDA_TEST_BIN) $(CUDA_TOOL_BIN) $(CUDA_BENCH_BIN)

# Like the CPU library's objects, only SB_API functions are visible, should
# the archive ever be linked into a shared object.
$(BUILD)/obj/src/cuda/%.o: src/cuda/%.cu
	@mkdir -p $(dir $@)
	@echo "  NVCC    $<"
	@$(NVCC) $(NVCCFLAGS_ALL) -Xcompiler -fvisibility=hidden -MMD -MP -c $< -o $@

$(BUILD)/libsamebits_cuda.a: $(CUDA_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

CUDA_LINK_DEPS = $(BUILD)/libsamebits_cuda.a $(BUILD)/libsamebits.a

$(BUILD)/tests/cuda/%: tests/cuda/%.cu $(CUDA_LINK_DEPS) tests/harness.h tests/support/lenet_compare.h
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS_ALL) -Itests -o $@ $< $(CUDA_LINK_DEPS) $(CUDA_LDLIBS)

$(BUILD)/tools/cuda_%: tools/cuda_%.cu $(CUDA_LINK_DEPS)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS_ALL) -o $@ $< $(CUDA_LINK_DEPS) $(CUDA_LDLIBS)

$(BUILD)/bench/cuda/%: bench/cuda/%.cu $(CUDA_LINK_DEPS)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS_ALL) -o $@ $< $(CUDA_LINK_DEPS) -L$(CUDA_LIBDIR) -lcublas $(CUDA_LDLIBS)

# `make cuda-lib`: libsamebits_cuda.so, the library with the CPU and CUDA
# backends that Python loads (SAMEBITS_LIB=$(BUILD)/libsamebits_cuda.so) to
# take PyTorch CUDA tensors zero-copy (python/samebits/_device_array.py).
# The CUDA runtime is linked statically, so the library does not depend on
# which libcudart PyTorch brings; both drive the same device through the
# driver's primary context.
$(BUILD)/libsamebits_cuda.so: $(CUDA_OBJ) $(LIB_OBJ)
	$(NVCC) -shared -o $@ $^ -L$(CUDA_LIBDIR) -lcudart_static -ldl -lrt $(OPENCL_LDLIBS) -lz -lm \
	    -lpthread

cuda-lib: $(BUILD)/libsamebits_cuda.so

# Run targets (need a GPU; each prints SKIPPED and exits 0 without one).
cuda-test: cuda
	$(BUILD)/tests/cuda/test_cuda_ops
	$(BUILD)/tests/cuda/test_cuda_backend
cuda-verify-math: cuda
	$(BUILD)/tools/cuda_verify_math $(VERIFY_ARGS)
cuda-bench: cuda
	$(BUILD)/bench/cuda/bench_cuda_sgemm

-include $(CUDA_OBJ:.o=.d)
else
cuda cuda-lib cuda-test cuda-verify-math cuda-bench:
	@echo "CUDA backend not built: nvcc is not on the PATH (or SB_CUDA=0). Set SB_CUDA=1 and NVCC=... to force it."
endif
