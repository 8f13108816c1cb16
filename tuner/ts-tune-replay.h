/* ts-tune-replay.h — replay of recorded tuning files, and strategy comparison on them.
 *
 * A replay serves measurements from a file recorded by an earlier tuning run instead of running
 * code, so search strategies can be compared on real recorded GPU spaces on a machine without a
 * GPU. Two formats are read, detected from their content (either may be gzip-compressed; that is
 * detected from the magic bytes 1f 8b, not the file name):
 *
 *   Kernel Tuner cache file  { "device_name", "kernel_name", "problem_size", "tune_params_keys",
 *                              "tune_params": { param: [values...] }, "objective",
 *                              "cache": { "v1,v2,...": { param: value..., "time": ms | marker,
 *                                         "times": [ms...], "compile_time", "verification_time",
 *                                         "benchmark_time", ... } } }
 *                            "time" may be one of the markers "InvalidConfig",
 *                            "CompilationFailedConfig", "RuntimeFailedConfig"; a number of 1e20 or
 *                            more is the marker older Kernel Tuner versions wrote for an invalid
 *                            configuration. A file whose run was interrupted (Kernel Tuner appends
 *                            entries and closes the braces at the end) is read as far as it goes.
 *   T4 results file          { "schema_version", "results": [ { "configuration": {...},
 *                              "invalidity": "correct|compile|runtime|correctness|constraints|
 *                              timeout", "objectives": ["time"], "times": { "compilation",
 *                              "benchmark", "validation", "runtimes": [ms...], ... },
 *                              "measurements": [ { "name", "value", "unit" } ] } ] }
 *                            (the open auto-tuning schema Kernel Tuner writes with
 *                            store_output_file). It carries no tune_params, so the space is built
 *                            from the configurations seen: knobs in first-seen order, integer
 *                            values ascending, other values in first-seen order. Device and kernel
 *                            live in T4's separate metadata file and are NULL here.
 *
 * The space. A dict-form TsSchedSpace, knobs = the tuned parameters in file order (tune_params_keys
 * when present), values as listed in tune_params. A parameter whose values are all JSON integers
 * is an integer knob; any other parameter (booleans, floats, strings, mixed lists) is a string
 * knob whose values are Python's str() of the JSON value ("True", "2.45", "alg_1") — the text
 * Kernel Tuner itself puts in cache keys — since a knob cannot mix integers and strings.
 *
 * Validity. Which configurations were recorded is an arbitrary set that no constraint expression
 * encodes, so the space has no constraints: strategies get the full product space, and the
 * replay answers "not recorded" for the points it lacks. A comparison (below) observes such a
 * point as failed (ok = FALSE) at zero cost and does not count it as an evaluation: a
 * configuration Kernel Tuner never recorded is one its restrictions excluded before running, so
 * trying it costs nothing on the real machine either. A recorded failure (invalid, compile or
 * runtime error) does count, and is charged its recorded cost.
 *
 * Times. The replayed time of a configuration is the median of its "times" samples when present
 * (the samples include the warm-up run, which the mean in "time" does not drop), else "time";
 * in seconds, like the strategies' costs. The optimum is the configuration of least replayed time.
 * The recorded cost of an evaluation is compile + verification + benchmark time, in ms, so a
 * budget in milliseconds can charge each replayed evaluation what it cost on the GPU.
 *
 * Errors (TS_TUNE_REPLAY_ERROR) name the file and the problem: "FILE: cache entry '128,7':
 * block_size_x = 7 is not in tune_params (128, 256)".
 */
#pragma once

#include <stdio.h>

#include <glib.h>

#include "ts-sched.h"

G_BEGIN_DECLS

#define TS_TUNE_REPLAY_ERROR (ts_tune_replay_error_quark())
GQuark ts_tune_replay_error_quark(void);

typedef enum {
  TS_TUNE_REPLAY_ERROR_IO,     /* cannot read the file, or corrupt / truncated gzip */
  TS_TUNE_REPLAY_ERROR_PARSE,  /* not JSON */
  TS_TUNE_REPLAY_ERROR_FORMAT, /* JSON, but not a recorded file we understand, or inconsistent */
  TS_TUNE_REPLAY_ERROR_EMPTY,  /* compare: no valid recorded configuration */
} TsTuneReplayError;

typedef enum {
  TS_TUNE_REPLAY_FORMAT_KERNEL_TUNER, /* Kernel Tuner cache file */
  TS_TUNE_REPLAY_FORMAT_T4,           /* T4 results file */
  TS_TUNE_REPLAY_FORMAT_RECORDS,      /* built by ts_tune_replay_new (a schedule cache's trials) */
} TsTuneReplayFormat;

typedef enum {
  TS_TUNE_REPLAY_OK,
  TS_TUNE_REPLAY_INVALID,       /* InvalidConfig / "constraints": rejected at launch */
  TS_TUNE_REPLAY_COMPILE_ERROR, /* CompilationFailedConfig / "compile" */
  TS_TUNE_REPLAY_RUNTIME_ERROR, /* RuntimeFailedConfig / "runtime" */
  TS_TUNE_REPLAY_WRONG_RESULT,  /* T4 "correctness" */
  TS_TUNE_REPLAY_TIMEOUT,       /* T4 "timeout" */
  TS_TUNE_REPLAY_NOT_RECORDED,  /* the file has no entry for the point */
} TsTuneReplayStatus;

/* "ok", "invalid", "compile_error", "runtime_error", "wrong_result", "timeout", "not_recorded". */
const char *ts_tune_replay_status_name(TsTuneReplayStatus status);

typedef struct {
  TsTuneReplayStatus status;
  double time_s;           /* replayed time in seconds when status is OK, else NAN */
  const double *samples_s; /* the recorded samples in seconds (owned by the replay), or NULL */
  guint n_samples;
  double cost_ms; /* compile + verification + benchmark time recorded, ms; 0 when not
                   * recorded or when the file has no timings */
} TsTuneReplayResult;

typedef struct _TsTuneReplay TsTuneReplay;

/* Loads a recorded file (see the top of this file for the formats). */
/* A gzip'ed file may unpack to at most this many bytes (recorded spaces are a few MiB). */
#define TS_TUNE_REPLAY_MAX_INFLATED (256u << 20)
TsTuneReplay *ts_tune_replay_load(const char *path, GError **error);
/* Same from memory; name is used in error messages. */
TsTuneReplay *ts_tune_replay_load_data(const void *data, gsize len, const char *name,
                                       GError **error);
void ts_tune_replay_free(TsTuneReplay *replay);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsTuneReplay, ts_tune_replay_free)

/* An empty replay of `space` (copied; its constraints stay: strategies then propose only valid
 * points) to fill with ts_tune_replay_add: a schedule cache's trials of one workload, replayed
 * the same way as a recorded file. name prefixes errors; device and kernel may be NULL. */
TsTuneReplay *ts_tune_replay_new(const TsSchedSpace *space, const char *name, const char *device,
                                 const char *kernel);
/* Records a point's outcome: time_s (seconds) for TS_TUNE_REPLAY_OK, cost_ms what measuring it
 * cost. A point outside the space or recorded twice is TS_TUNE_REPLAY_ERROR_FORMAT. */
gboolean ts_tune_replay_add(TsTuneReplay *replay, const TsSchedPoint *point,
                            TsTuneReplayStatus status, double time_s, double cost_ms,
                            GError **error);
/* What the strategies of a comparison get besides the space: the environment its constraints
 * see (NULL: an empty one), and the cost context of ts_tune_strategy_set_cost (target and
 * prior may be NULL). All borrowed: they must outlive the replay's comparisons. */
typedef struct _TsCostTarget TsCostTarget;
typedef struct _TsCostModel TsCostModel;
void ts_tune_replay_set_context(TsTuneReplay *replay, const TsSchedEnv *env,
                                const TsCostTarget *target, const TsCostModel *prior);

TsTuneReplayFormat ts_tune_replay_format(const TsTuneReplay *replay);
/* The recorded space (no constraints; see "Validity" above). Owned by the replay. */
const TsSchedSpace *ts_tune_replay_space(const TsTuneReplay *replay);
const char *ts_tune_replay_device(const TsTuneReplay *replay);    /* NULL when not recorded */
const char *ts_tune_replay_kernel(const TsTuneReplay *replay);    /* NULL when not recorded */
const char *ts_tune_replay_objective(const TsTuneReplay *replay); /* "time" by default */
/* Configurations in the file, those with a time, and those recorded as failures. */
guint ts_tune_replay_n_recorded(const TsTuneReplay *replay);
guint ts_tune_replay_n_valid(const TsTuneReplay *replay);
guint ts_tune_replay_n_failed(const TsTuneReplay *replay);
/* Least replayed time in seconds and its point (owned by the replay); NAN and NULL when no
 * configuration is valid. */
double ts_tune_replay_optimum(const TsTuneReplay *replay, const TsSchedPoint **point);

/* What the file recorded for point (knobs matched by name; extra knobs are ignored). Returns
 * TRUE when the status is OK. */
gboolean ts_tune_replay_lookup(const TsTuneReplay *replay, const TsSchedPoint *point,
                               TsTuneReplayResult *result);
/* The recorded configurations in file order (owned by the replay; i < n_recorded). */
const TsSchedPoint *ts_tune_replay_recorded_point(const TsTuneReplay *replay, guint i);

/* ---- transfer from other devices ---- */

/* A learned ranking prior from recordings of the same kernel on other devices (TsTuneReplay*
 * in priors): every configuration they recorded, failures ranked last, one ranking group per
 * file, as features of replay's space. *target gets the cost target those features belong to;
 * pass both to ts_tune_replay_set_context (the "model" strategy then ranks its first
 * proposals by what the other devices found fast). Errors: a file without one of replay's
 * knobs (another kernel), or nothing to learn from. */
TsCostModel *ts_tune_replay_train_prior(const TsTuneReplay *replay, GPtrArray *priors,
                                        TsCostTarget **target, GError **error);
/* Up to n configurations the recordings in priors (TsTuneReplay*) measured fastest, taken in
 * turn from each file (its best, then its second, ...), each once: the seeds of
 * ts_tune_strategy_set_seeds(). Returns an array owning its points. */
GPtrArray *ts_tune_replay_prior_seeds(GPtrArray *priors, guint n);
/* Seeds given to every strategy of the replay's comparisons (borrowed; NULL: none). */
void ts_tune_replay_set_seeds(TsTuneReplay *replay, GPtrArray *seeds);

/* ---- strategy comparison ---- */

/* Each strategy run `repeats` times (seeds seed, seed+1, ...) for `budget` counted evaluations
 * (recorded configurations, valid or failed; see "Validity"), one proposal at a time so that
 * every strategy sees every outcome before its next proposal. */
typedef struct {
  const char *strategy; /* owned by the comparison */
  guint repeats;
  double mean_fraction;    /* mean over repeats of optimum / best found (1.0 = optimum; 0 when a
                            * run found no valid configuration) */
  double min_fraction;     /* the worst repeat */
  guint n_reached;         /* repeats that reached 95% of the optimum (optimum / best >= 0.95) */
  double mean_evals_to_95; /* mean counted evaluations to get there, over the repeats that did;
                            * NAN when none did */
  double capped_evals_to_95; /* mean over all repeats, a miss counted as the whole budget (NAN
                              * without a count budget) */
  double mean_evals;       /* counted evaluations made (below budget when a strategy ran out) */
  double mean_cost_ms;     /* recorded cost of those evaluations */
} TsTuneReplayScore;

typedef struct _TsTuneReplayComparison TsTuneReplayComparison;

/* strategies: NULL-terminated names, or NULL for every registered strategy
 * (ts_tune_strategy_names()). Errors: TS_TUNE_REPLAY_ERROR_EMPTY when nothing valid is recorded;
 * a strategy's own errors (unknown name ...) are passed on. */
TsTuneReplayComparison *ts_tune_replay_compare(const TsTuneReplay *replay,
                                               const char *const *strategies, guint budget,
                                               guint repeats, guint64 seed, GError **error);
/* The same with a time budget as well: each evaluation is charged its recorded compile and
 * benchmark time (cost_ms), and a run stops once budget_ms is spent (0: no time limit; budget 0:
 * no count limit — one of the two must be set). */
TsTuneReplayComparison *ts_tune_replay_compare_timed(const TsTuneReplay *replay,
                                                     const char *const *strategies, guint budget,
                                                     double budget_ms, guint repeats,
                                                     guint64 seed, GError **error);
void ts_tune_replay_comparison_free(TsTuneReplayComparison *comparison);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsTuneReplayComparison, ts_tune_replay_comparison_free)
guint ts_tune_replay_comparison_n_scores(const TsTuneReplayComparison *comparison);
const TsTuneReplayScore *ts_tune_replay_comparison_score(const TsTuneReplayComparison *comparison,
                                                         guint i);
/* A table: a header naming the recorded file's kernel, device, optimum, budget and repeats, then
 * one row per strategy. */
char *ts_tune_replay_comparison_to_string(const TsTuneReplayComparison *comparison);
void ts_tune_replay_comparison_print(const TsTuneReplayComparison *comparison, FILE *out);
/* The same as a JSON object: the file, kernel, device, optimum, budget, repeats and seed, and
 * per strategy its figures and each repeat's evaluations to 95% (null: never reached), for
 * benchmarks that pair seeds or compare with another tool. */
char *ts_tune_replay_comparison_to_json(const TsTuneReplayComparison *comparison);

G_END_DECLS
