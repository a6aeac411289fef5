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

# tests/test_fpenv.c needs only libc and samebits, so the matrix builds it
# for every target (the other tests link MPFR, which cross sysroots lack).
$(BUILD)/port/test_fpenv: tests/test_fpenv.c $(BUILD)/libsamebits.a tests/harness.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Itests -o $@ $< $(BUILD)/libsamebits.a $(LDLIBS_ALL)
