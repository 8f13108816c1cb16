/* ts-tune-mpi-module.h — the MPI module's interface (private to tuner/). MPI lives in a module
 * loaded at run time (libtessera-mpi.so, ts-tune-mpi-module.c) only when mpirun started the
 * process, so tessera-tune itself does not link libmpi: it starts, and its GPU bundle travels,
 * without Open MPI. The module links MPI and GLib only; what it needs of the tuner comes in
 * TsTuneMpiHost. */
#pragma once

#include <glib.h>

#include "ts-coll-mpi.h"
#include "ts-tune-farm.h"

typedef struct _TsTuneWorker TsTuneWorker;

G_BEGIN_DECLS

#define TS_TUNE_MPI_ABI 2

typedef struct {
  TsTuneWorker *(*worker_new)(const char *exe);
  char *(*worker_answer)(TsTuneWorker *worker, const char *request, double timeout_s,
                         GError **error);
  void (*worker_free)(TsTuneWorker *worker);
} TsTuneMpiHost;

typedef struct {
  guint abi; /* TS_TUNE_MPI_ABI */
  gboolean (*init)(const TsTuneMpiHost *host, GError **error);
  int (*rank)(void);
  int (*size)(void);
  int (*serve)(const char *worker_exe, const char *device);
  const TsTuneFarm *(*farm)(const char *device, GError **error);
  void (*finalize)(void);
  /* One collective measurement on every rank (ts-coll-mpi.h); finalises MPI. */
  int (*coll_run)(const TsCollRunArgs *args);
  /* The job's ranks for a measurement by another library (NCCL); its finish finalises MPI. */
  const TsCollComm *(*coll_comm)(void);
} TsTuneMpiModule;

/* The one symbol the module exports. */
#define TS_TUNE_MPI_MODULE_SYMBOL "ts_tune_mpi_module"

G_END_DECLS
