/* ts-coll-mpi.h — one measurement of a collective, run by every rank of an MPI job
 * (`mpirun -np R tessera-tune coll-run ...`, started by the collective tuner, ts-coll-tune.h).
 * Lives in the MPI module (libtessera-mpi.so), the one piece of the workbench that links MPI. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
  const char *op, *shape, *dtype; /* the workload; RANKS must be the job's size */
  const char *backend;            /* "mpi" (MPI's collectives) or "nccl" */
  guint64 seed;                   /* input data */
  guint warmup, samples;          /* untimed calls; timed rounds */
  double round_ms;                /* each round is back-to-back calls lasting about this long */
  gboolean probe;                 /* only say who the ranks are (no workload needed) */
} TsCollRunArgs;

/* What a measurement needs of the job's ranks: MPI's (the module's ts_coll_mpi_comm), or a lone
 * process's (ts_coll_comm_alone). */
typedef struct {
  int rank, size;
  void (*barrier)(void);
  void (*bcast)(void *buf, gsize bytes);               /* rank 0's bytes to every rank */
  void (*allreduce)(double *v, guint n, gboolean max); /* in place: the sum, or the max */
  char *(*hosts)(void); /* on rank 0, JSON [["host", ranks], ...] in order of first rank */
  void (*finish)(void); /* the end of the job's communication (MPI_Finalize) */
} TsCollComm;

const TsCollComm *ts_coll_mpi_comm(void);

/* Rank 0 prints one JSON object on stdout:
 *   {"ranks": R, "hosts": [["host", ranks], ...], "library": "Open MPI v4.1.4, ...",
 *    "device": "AMD EPYC 7B13", "forced": {"coll_tuned_allreduce_algorithm": "ring", ...}}
 * and, unless probing, "status" ("ok" or "wrong_result"), "message", "iters" (calls a round),
 * "samples_ns" (per call, averaged over the ranks as nccl-tests does), "max_rank_ns" (the
 * slowest rank's) and "mismatches" (elements wrong on any rank, checked against the exact sums
 * before and after the timed rounds). A workload this job cannot run is {"error": "..."}, exit
 * status 2. MPI is initialised by the caller and finalised here. */
int ts_coll_mpi_run(const TsCollRunArgs *args);

G_END_DECLS
