/* ts-tune.h — the tuning driver: explore a workload's schedule space with a strategy under a
 * budget, compile candidates in parallel, run each in an isolated worker, verify, time, store
 * every trial in the schedule cache, and keep the best.
 *
 * Resume: every trial already stored for the key (workload, device, toolchain) is observed
 * first and never measured again, so a re-run continues the search where the last one stopped.
 * The best schedule changes only for a candidate that is faster beyond the noise of both
 * (Mann–Whitney U on their samples), so two runs of the same tune agree on the winner.
 */
#pragma once

#include <glib.h>

#include "ts-db.h"
#include "ts-op.h"
#include "ts-prof.h"
#include "ts-tune-farm.h"
#include "ts-tune-strategy.h"

G_BEGIN_DECLS

typedef struct {
  guint index;        /* 1-based, this run */
  const char *schedule;
  const char *hash;
  TsTrialStatus status;
  gboolean pruned;    /* rejected before compiling (static resources); not stored */
  const char *message;
  double median_ns;
  double gflops;
  double best_ns;     /* best verified median of the key so far (NAN: none) */
  guint n_failed;     /* failures in this run */
  double elapsed_ms;
} TsTuneProgress;

typedef void (*TsTuneProgressFunc)(const TsTuneProgress *progress, gpointer user_data);


typedef struct {
  TsOpInstance *inst;     /* the workload */
  TsBackend *backend;     /* compiles in this process; the worker opens the same backend */
  TsDb *db;
  const char *space;      /* NULL: the op's default space for the backend */
  const char *strategy;   /* "exhaustive", "random", "annealing", "evolutionary", "model"
                             (default) */
  guint64 seed;
  guint budget_evals;     /* 0: no limit */
  double budget_ms;       /* 0: no limit (wall clock of the whole tune) */
  const char *worker_exe; /* binary with a `worker` command (tessera-tune) */
  double timeout_s;       /* per candidate run in the worker */
  guint batch;            /* proposals compiled together; 0: the device's compute units */
  TsRunOptions run;       /* sampling and verification */
  const TsProfCeilings *ceilings; /* NULL: trials get no roofline coordinates */
  const TsCostModel *prior;       /* the model strategy's learned prior (NULL: none) */
  TsTuneProgressFunc progress;
  gpointer progress_data;
  /* Non-NULL: the session's timeline is recorded here — the compiles (the tuner attaches it to
   * the backend only while a batch compiles: on a GPU an attached trace sets a CUDA profiler
   * variable that workers started meanwhile would inherit), and each trial's compile, verify
   * and measure phases with their kernels, recorded by the worker, inside a "trial N: POINT"
   * range. The caller sets it on the NVTX ranges (ts_nvtx_set_trace) for the ranges to be
   * recorded. Timed samples are the same with or without it. */
  TsTrace *trace;
  /* Non-NULL: each batch's candidates are measured at once, one on every remote measurer and
   * one here at a time (a batch is then at least one candidate a measurer); results are stored
   * in proposal order, as a serial run stores them. Remote trials carry no timeline. */
  const TsTuneFarm *farm;
} TsTuneConfig;

void ts_tune_config_init(TsTuneConfig *config);

typedef struct {
  gint64 workload_id, device_id, toolchain_id, run_id;
  guint n_resumed;  /* trials already stored for the key when the run started */
  guint n_measured; /* trials stored by this run */
  guint n_ok, n_failed, n_pruned;
  /* Points this run proposed that other tuners of the key measured at the same time (the run
   * claims each point before measuring it): observed from their trials (n_shared), or still
   * being measured by them when the run ended (n_pending). */
  guint n_shared, n_pending;
  /* Incumbents measured again because a faster-looking challenger could not beat the noise of
   * their samples (spread (q3 - q1) / median above 0.25). */
  guint n_remeasured;
  /* The best configurations stored for the same workload on other devices or toolchains that
   * the strategy took as seeds (ts_tune_strategy_set_seeds; 0 for one that takes none), and how
   * many such keys the cache holds. */
  guint n_seeds, n_seed_keys;
  gint64 best_trial_id; /* 0: no verified trial for the key */
  double best_median_ns;
  char *best_schedule;
  double elapsed_ms;
  gboolean exhausted; /* the strategy has nothing left to propose */
  guint64 n_valid;    /* valid points of the space */
} TsTuneSummary;

void ts_tune_summary_clear(TsTuneSummary *summary);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(TsTuneSummary, ts_tune_summary_clear)

gboolean ts_tune_run(const TsTuneConfig *config, TsTuneSummary *summary, GError **error);

/* What the same workload was fastest with on other devices and toolchains in the cache (an
 * imported recording, a colleague's GPU, the trials from before a kernel-generator upgrade):
 * the best configurations of each such key, taken in turn (each key's best, then each one's
 * second, ...), best first, each once: the seeds ts_tune_run gives its strategy. *n_keys
 * (optional) gets how many keys there were. Returns an array owning its points (empty when
 * there is no other key), NULL on a database error. */
GPtrArray *ts_tune_cache_seeds(TsDb *db, gint64 workload_id, gint64 device_id,
                               gint64 toolchain_id, guint *n_keys, GError **error);

/* The trial row of a result as the tuner stores it (keys left 0 for the caller): schedule,
 * status, timings and, for a verified one, the metrics JSON — rates, roofline coordinates
 * against ceilings (when given), kernel resources (GPU), per-launch counters (CPU). A NULL
 * result is a compile error whose text the caller sets. */
TsDbTrial *ts_tune_trial_from_result(TsOpInstance *inst, TsBackend *backend,
                                     const TsProfCeilings *ceilings, const TsSchedPoint *point,
                                     const TsTrialResult *result, const char *strategy);

/* The compute roof the workload is held to on this backend (ts_prof_compute_roof). */
const char *ts_tune_compute_roof(TsOpInstance *inst, TsBackend *backend);

/* The device row of a backend (inserted when missing). */
gint64 ts_tune_device_id(TsDb *db, TsBackend *backend, GError **error);
/* Ids of the cache key of a workload on a backend (inserting the rows when missing). */
/* The schedule cache's meaning check (TsDbScheduleCheck, ts_db_set_schedule_check): the
 * workload is one this build knows (op, shape, dtype), the schedule parses, a hash given is the
 * schedule's, and a median leaves the workload below 10^17 FLOP/s and 10^14 B/s (a hundred times
 * any device's peak: a time past that is made up, and a made-up best would never be beaten).
 * A collective's workload (ts-coll.h) is checked as one, its schedule as a point of its space.
 * The tools install it on every cache they open. */
gboolean ts_tune_schedule_check(const char *op, const char *shape, const char *dtype,
                                const char *schedule, const char *hash, double median_ns,
                                char **why, gpointer data);
gboolean ts_tune_key_ids(TsDb *db, TsOpInstance *inst, TsBackend *backend, gint64 *workload_id,
                         gint64 *device_id, gint64 *toolchain_id, GError **error);
/* The lookup key of a workload on a backend; strings owned by the caller's storage
 * (*shape and *dtype to be g_free'd). */
void ts_tune_lookup_key(TsOpInstance *inst, TsBackend *backend, TsDbKey *key, char **shape,
                        char **dtype);

G_END_DECLS
