# Exhaustive check of the OpenCL device's correctly rounded functions: all
# 2^32 inputs of each, device against host (tools/verify_opencl_math.c;
# docs/GPU.md records the runs). `make test` checks 2^20 inputs per function
# (tests/test_opencl.c). Shard or pick functions with
# VERIFY_OPENCL_ARGS="--first-chunk 0 --chunks 64 sinf cosf".
.PHONY: verify-opencl-math
ifeq ($(SB_OPENCL),1)
verify-opencl-math: $(BUILD)/tools/verify_opencl_math
	$(BUILD)/tools/verify_opencl_math $(VERIFY_OPENCL_ARGS)
else
verify-opencl-math:
	@echo "verify-opencl-math: this build has no OpenCL backend (SB_OPENCL=0)" >&2
	@exit 1
endif
