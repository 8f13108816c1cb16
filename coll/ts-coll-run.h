/* ts-coll-run.h — one measurement of a collective on every rank, whatever library runs it: the
 * exact inputs, the checks before and after timing, nccl-tests' timing, and rank 0's JSON line
 * (ts-coll-mpi.h describes it). A library plugs in as an engine. */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

#include "ts-coll-mpi.h"
#include "ts-coll.h"

G_BEGIN_DECLS

typedef struct {
  /* After ready: "Open MPI v4.1.4, ...", "NCCL 2.28.3" */
  const char *(*library)(gpointer self);
  /* Whether the library and the device can be used on this rank (NULL: always); FALSE with an
   * error ("no CUDA device: ...") ends the job with status 3, even a probe. */
  gboolean (*ready)(gpointer self, GError **error);
  char *(*device)(gpointer self); /* what this rank runs on: "AMD EPYC", "NVIDIA H100 ..." */
  /* Takes this rank's input (host memory, BYTES) and makes room for the output; FALSE with an
   * error names what failed (exit status 3: the machine, not the candidate). */
  gboolean (*setup)(gpointer self, const TsCollWorkload *w, const void *input, GError **error);
  gboolean (*call)(gpointer self, GError **error); /* one collective, maybe only enqueued */
  gboolean (*wait)(gpointer self, GError **error); /* every enqueued call done; NULL: none */
  gboolean (*fill_output)(gpointer self, guint8 byte, GError **error);
  gboolean (*read_output)(gpointer self, void *dst, GError **error); /* to host memory */
  void (*describe)(gpointer self, JsonBuilder *b); /* more members of rank 0's line; or NULL */
  void (*teardown)(gpointer self);
  gpointer self;
} TsCollEngine;

/* Runs args on every rank of comm with the engine, prints rank 0's line, and calls comm's
 * finish. Returns the exit status (0; 2: the workload does not fit this job; 3: the engine
 * could not be set up on some rank). */
int ts_coll_measure(const TsCollRunArgs *args, const TsCollComm *comm, const TsCollEngine *e);

G_END_DECLS
