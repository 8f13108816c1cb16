/* ts-tune-farm.h — the tuner's view of measurers in other processes (GLib only, so the MPI
 * module, which links nothing of the tuner, shares it). */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Measurers in other processes (MPI ranks: ts-tune-mpi.h), each running candidates in the
 * isolated worker beside it, while the tuner measures its own share in its worker. Requests and
 * answers are the worker's JSON lines (ts_tune_request_to_json, ts_tune_result_from_json). */
typedef struct {
  guint n_remote;
  gint local_rank; /* what this process's trials record as their rank */
  gboolean (*send)(gpointer data, guint remote, const char *request, double timeout_s,
                   GError **error);
  gboolean (*ready)(gpointer data); /* an answer is waiting */
  /* Waits for the next answer; *remote says whose. */
  char *(*receive)(gpointer data, guint *remote, GError **error);
  gint (*rank_of)(gpointer data, guint remote);
  gpointer data;
} TsTuneFarm;

G_END_DECLS
