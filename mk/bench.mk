# `make bench`: performance benchmarks next to OpenBLAS and PyTorch.
# Every bench/*.c becomes $(BUILD)/bench/<name>, linked with the library and
# OpenBLAS; scripts/bench.sh then runs $(BUILD)/bench/bench_* in name order
# and every bench/*.py with the system python3 (SB_BUILD = the build dir).
# Benchmarks measure; they never fail on a slow number.

BENCH_SRC := $(sort $(wildcard bench/*.c))
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

.PHONY: bench bench-deps bench-build

bench-deps:
	@scripts/install-bench-deps.sh

bench-build: $(BENCH_BIN)

$(BUILD)/bench/%: bench/%.c $(BUILD)/libsamebits.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -O2 -o $@ $< $(BUILD)/libsamebits.a -lopenblas $(LDLIBS_ALL)

bench: bench-deps
	$(MAKE) bench-build
	@scripts/bench.sh $(BUILD)

# `make bench-gpu`: SGEMM and the LeNet-5 step on the OpenCL device next to
# PyTorch on the same device (bench/gpu/bench_gpu.py; on PoCL the device is
# this CPU, and the script says so). The CUDA backend's SGEMM against cuBLAS
# is `make cuda-bench` (mk/cuda.mk).
.PHONY: bench-gpu bench-gpu-ops
ifeq ($(SB_OPENCL),1)
$(BUILD)/bench/gpu/%: bench/gpu/%.c $(BUILD)/libsamebits.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -O2 -o $@ $< $(BUILD)/libsamebits.a $(LDLIBS_ALL)

bench-gpu: $(BUILD)/bench/gpu/bench_gpu
	@SB_BUILD=$(BUILD) "$$(scripts/python-venv.sh python 2>/dev/null || echo /usr/bin/python3)" \
	    bench/gpu/bench_gpu.py

# `make bench-gpu-ops`: sort/topk/median, the CTC loss and the weighted
# class loss on the OpenCL device, bits checked against the CPU
# (bench/gpu/bench_gpu_ops.c; docs/GPU.md records the figures).
bench-gpu-ops: $(BUILD)/bench/gpu/bench_gpu_ops
	$(BUILD)/bench/gpu/bench_gpu_ops
else
bench-gpu bench-gpu-ops:
	@echo "bench-gpu: this build has no OpenCL backend (SB_OPENCL=0); install ocl-icd-opencl-dev" >&2
	@exit 1
endif
