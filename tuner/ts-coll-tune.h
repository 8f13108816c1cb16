/* ts-coll-tune.h — tuning a collective: explore its space with a strategy, run each candidate
 * as one launch of its own (`mpirun -n RANKS tessera-tune coll-run ...` with the candidate's
 * settings in the ranks' environment: Open MPI reads them at MPI_Init), and store every trial in
 * the schedule cache.
 *
 * Each launch is isolated as a kernel candidate's worker is: a candidate whose ranks crash is a
 * runtime_error trial, one that outlives the timeout is killed (the launcher first, which takes
 * its ranks down) and is a timeout trial, and the tune goes on. The cache key is the workload
 * (op, "BYTES=..,RANKS=..", dtype), the device row of the job's topology (backend "mpi", the
 * CPU, hosts and ranks per host) and the MPI library as the toolchain; a re-run resumes
 * without measuring a stored point again. The best changes only for a candidate faster beyond
 * the noise of both (as ts-tune.h's).
 */
#pragma once

#include <glib.h>

#include "ts-coll.h"
#include "ts-cost-coll.h"
#include "ts-db.h"

G_BEGIN_DECLS

/* Part of the toolchain key of every collective trial, bumped when the measurement changes. */
#define TS_COLL_BENCH_VERSION "tessera-coll-1"

typedef struct {
  guint index;          /* 1-based, this run */
  const char *schedule;
  const char *status;   /* "ok", "wrong_result", "runtime_error", "timeout" */
  const char *message;
  double median_ns;     /* per call; NAN unless ok */
  double algbw, busbw;  /* bytes/s */
  double best_ns;       /* the key's best so far; NAN: none */
  double launch_ms;     /* the launch's whole wall time */
} TsCollProgress;

typedef struct {
  const TsCollWorkload *w;
  TsDb *db;
  const char *backend;          /* "mpi" */
  const char *space;            /* NULL: the op's default */
  const char *strategy;         /* default "exhaustive"; "model": in the order the α–β model
                                   fitted to the cache's trials of the machine predicts fastest
                                   (Open MPI's default first, as the baseline), or the space's
                                   order while fewer than 3 trials calibrate it */
  guint64 seed;
  guint budget_evals;           /* 0: no limit */
  double budget_ms;             /* 0: no limit */
  double timeout_s;             /* per launch (default 60) */
  const char *exe;              /* binary with the coll-run command (tessera-tune) */
  const char *const *launcher;  /* argv before "-n RANKS"; NULL: {"mpirun"}, which also gets
                                   --oversubscribe when RANKS exceeds the online cores */
  guint warmup, samples;        /* per launch (defaults 5 and 10) */
  double round_ms;              /* per timed round (default 20) */
  void (*progress)(const TsCollProgress *progress, gpointer data);
  gpointer progress_data;
} TsCollTuneConfig;

void ts_coll_tune_config_init(TsCollTuneConfig *config);

typedef struct {
  gint64 workload_id, device_id, toolchain_id, run_id;
  char *device_name, *topology, *library; /* the key's device name, arch and toolchain */
  gboolean oversubscribed;  /* more ranks than cores: timings show contention, not links */
  guint n_resumed, n_measured, n_ok, n_failed;
  guint64 n_valid;
  gboolean exhausted;
  gint64 best_trial_id;     /* 0: no verified trial */
  char *best_schedule;
  double best_median_ns;
  double default_median_ns; /* Open MPI's own choice (algorithm "default"); NAN: not measured */
  /* The α–β model the cache calibrated before this run (n_model_points trials; 0: none), whose
   * prediction each new trial stores as its predicted_cost. */
  guint n_model_points;
  double model_rel_err;     /* its median relative error on those trials */
  double elapsed_ms;
} TsCollTuneSummary;

void ts_coll_tune_summary_clear(TsCollTuneSummary *summary);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(TsCollTuneSummary, ts_coll_tune_summary_clear)

/* FALSE with an error when nothing could be tuned: the launcher cannot start the ranks (the
 * message carries its output), the space is invalid or empty, the cache fails. */
gboolean ts_coll_tune_run(const TsCollTuneConfig *config, TsCollTuneSummary *summary,
                          GError **error);

/* The machine of a collective key's device (name "AMD EPYC x 4 ranks", topology "1 host x 4
 * ranks"), without the rank count: "AMD EPYC, 1 host" (", oversubscribed" kept). Trials at
 * every rank count of a machine calibrate one α–β model. */
char *ts_coll_machine(const char *device_name, const char *topology);
/* Every verified collective trial of `dtype` on `machine` (ts_coll_machine), as observations
 * for ts_cost_coll_fit (GArray of TsCollObservation; algorithm names interned). */
GArray *ts_coll_tune_observations(TsDb *db, const char *machine, TsCollDtype dtype,
                                  GError **error);

G_END_DECLS
