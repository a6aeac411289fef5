/* build/samebits-mpi - `samebits train` over MPI ranks:
 *     mpirun -n R samebits-mpi train --micro-batch m [train options]
 * A separate command so that `samebits` itself never loads an MPI library
 * (it runs where Open MPI is not installed, and starts without MPI's
 * runtime). Rank 0 prints the results and writes checkpoints. A rank that
 * fails ends the whole job (MPI_Abort), so no rank waits forever on one that
 * has stopped; mpirun ends the job too when a rank dies. */
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "mpi/comm_mpi.h"
#include "samebits/status.h"

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "train")) {
        fprintf(stderr, "usage: mpirun -n R samebits-mpi train [options of samebits train]\n");
        return 2;
    }
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, "samebits-mpi: MPI_Init failed\n");
        return 1;
    }
    sb_comm *comm = NULL;
    bool together = false;
    int rc;
    if (sb_comm_mpi_new(&comm) != SB_OK) {
        fprintf(stderr, "samebits-mpi: %s\n", sb_last_error());
        rc = 1;
    } else {
        rc = sb_cli_train_on(argc - 2, argv + 2, comm, &together);
    }
    fflush(stdout);
    fflush(stderr);
    /* A failure on some ranks only: the others may be waiting in a
     * collective that will never complete, so end the job. When every rank
     * stopped at the same check, each has printed why: end normally. */
    if (rc && !together) MPI_Abort(MPI_COMM_WORLD, rc);
    /* (every rank is here: none exits before all have printed their message) */
    if (together) MPI_Barrier(MPI_COMM_WORLD);
    sb_comm_mpi_free(comm);
    MPI_Finalize();
    return rc;
}
