/* ts-coll-nccl.h — collectives on NCCL: the library loaded at run time (like the rest of CUDA,
 * so every binary starts without it), a communicator bootstrapped over the job's ranks (rank 0's
 * ncclUniqueId broadcast through MPI; a lone process needs no MPI), one GPU per rank (the
 * launcher's local rank picks it through CUDA_VISIBLE_DEVICES), buffers and the stream of the
 * workbench's CUDA backend, and the same exact data, checks and nccl-tests timing as MPI's. */
#pragma once

#include <glib.h>

#include "ts-coll-mpi.h"

G_BEGIN_DECLS

/* Loads libnccl.so.2 and checks it has every call the measurement makes; *version (optional)
 * gets "NCCL 2.28.3". FALSE with a TS_COLL_ERROR_LAUNCH naming where it was looked for, or the
 * missing call. Needs no GPU. */
gboolean ts_coll_nccl_load(char **version, GError **error);

/* The measurement on this rank (ts-coll-mpi.h's TsCollRunArgs and JSON); comm's finish is
 * called at the end. Returns the exit status: 0, 2 for a workload this job cannot run, 3 when
 * NCCL or the GPU cannot be used (the JSON's "error" says why: "no CUDA device: ..."). */
int ts_coll_nccl_run(const TsCollRunArgs *args, const TsCollComm *comm);

/* A job of one process: barrier, broadcast and reductions of one rank are nothing. */
const TsCollComm *ts_coll_comm_alone(void);

G_END_DECLS
