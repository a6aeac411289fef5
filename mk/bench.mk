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
