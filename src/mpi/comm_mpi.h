/* src/mpi/comm_mpi.h - the communicator over MPI_COMM_WORLD (samebits-mpi
 * only; needs MPI_Init first). */
#ifndef SAMEBITS_MPI_COMM_MPI_H
#define SAMEBITS_MPI_COMM_MPI_H
#include "dist/comm.h"
sb_status sb_comm_mpi_new(sb_comm **out);
void sb_comm_mpi_free(sb_comm *c);
#endif
