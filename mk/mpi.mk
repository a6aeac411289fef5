# mk/mpi.mk - the optional MPI command, build/samebits-mpi (docs/DISTRIBUTED.md).
#
# Detection, as for CUDA: SB_MPI=0 forces it off, SB_MPI=1 on, otherwise it
# is on when `mpicc` (Debian: libopenmpi-dev) is on the PATH. Only the
# files under src/mpi/ see <mpi.h>; the library, `samebits` and the tests
# never link MPI. When on, `make all` and `make tests` build samebits-mpi
# and tests/check_mpi.sh runs it under mpirun.

SB_MPI ?=
MPICC ?= mpicc
ifeq ($(SB_MPI),0)
  SB_MPI_ON :=
else ifeq ($(SB_MPI),1)
  SB_MPI_ON := 1
else
  SB_MPI_ON := $(if $(shell command -v $(MPICC) 2>/dev/null),1,)
endif

.PHONY: mpi

ifeq ($(SB_MPI_ON),1)
MPI_CFLAGS := $(shell $(MPICC) --showme:compile 2>/dev/null)
MPI_LDFLAGS := $(shell $(MPICC) --showme:link 2>/dev/null)
MPI_SRC := $(sort $(wildcard src/mpi/*.c))
MPI_OBJ := $(MPI_SRC:%.c=$(BUILD)/obj/%.o)
# the CLI's objects without its main()
MPI_CLI_OBJ := $(filter-out $(BUILD)/obj/src/cli/main.o,$(CLI_OBJ))

all: mpi
tests: mpi
mpi: $(BUILD)/samebits-mpi

# <mpi.h> and its flags, for these objects only (ISA_FLAGS is the per-object
# slot of the compile rule; EXTRA_CFLAGS may be set on the command line).
$(MPI_OBJ): ISA_FLAGS = $(MPI_CFLAGS)

$(BUILD)/samebits-mpi: $(MPI_OBJ) $(MPI_CLI_OBJ) $(BUILD)/libsamebits.a
	$(CC) $(CFLAGS_ALL) -o $@ $(MPI_OBJ) $(MPI_CLI_OBJ) $(BUILD)/libsamebits.a $(MPI_LDFLAGS) $(LDLIBS_ALL)

-include $(MPI_OBJ:.o=.d)
else
mpi:
	@echo "samebits-mpi not built: mpicc is not on the PATH (or SB_MPI=0). Install libopenmpi-dev, or set SB_MPI=1 and MPICC=..."
endif
