# Exhaustive check of the batch math kernels (src/cpu/vmath*.c): every
# vector ISA level this machine supports against the scalar functions on all
# 2^32 inputs of each function (docs/perf/vmath.md). The scalar functions
# are themselves proven correctly rounded by `make verify-math`.
# Pick functions / threads with VERIFY_VMATH_ARGS="--threads 4 expf logf".
.PHONY: verify-vmath
verify-vmath: $(BUILD)/tools/verify_vmath
	$(BUILD)/tools/verify_vmath $(VERIFY_VMATH_ARGS)
