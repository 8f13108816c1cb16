/* ts-tune-mpi.h — distributed tuning on MPI: `mpirun -np N tessera-tune tune|batch ...`.
 *
 * Rank 0 runs the search and alone writes the schedule cache (SQLite on a network filesystem is
 * not safe with several writers). Every other rank serves it: it runs the candidates it is sent
 * in its own isolated worker, on its own device, and sends the results back; rank 0 measures
 * its share meanwhile (TsTuneFarm). Ranks whose device differs from rank 0's are refused before
 * anything is measured, naming them: their timings must not be ranked together. A rank that
 * dies takes the job down (MPI's default error handler); a re-run resumes from the cache.
 */
#pragma once

#include <glib.h>

#include "ts-coll-mpi.h"
#include "ts-tune.h"

G_BEGIN_DECLS

/* Whether a launcher (mpirun) started this process as one of several ranks. */
gboolean ts_tune_mpi_launched(void);
/* MPI_Init. FALSE with an error when built without MPI. */
gboolean ts_tune_mpi_init(GError **error);
int ts_tune_mpi_rank(void);
int ts_tune_mpi_size(void);

/* Ranks > 0: says who it is (host and device, a line of text) to rank 0, then answers its
 * requests through worker_exe's worker until rank 0 stops it. Returns the exit status. */
int ts_tune_mpi_serve(const char *worker_exe, const char *device);
/* Rank 0: the other ranks as a farm, once they all have said who they are and run the device
 * this one does (device: as they describe theirs); NULL with an error naming each rank that
 * differs. Later calls return the same farm. */
const TsTuneFarm *ts_tune_mpi_farm(const char *device, GError **error);
/* Every rank of a collective's launch (`tessera-tune coll-run`, started by ts-coll-tune.h):
 * one measurement, then MPI_Finalize. Returns the exit status. */
int ts_tune_mpi_coll_run(const TsCollRunArgs *args);
/* The job's ranks (MPI) for a collective another library runs (NCCL). */
const TsCollComm *ts_tune_mpi_coll_comm(void);
/* Every rank, at the end: rank 0 first stops the servers. MPI_Finalize. */
void ts_tune_mpi_finalize(void);

G_END_DECLS
