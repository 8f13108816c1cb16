/* ts-cost-model.h — the learned cost model: gradient-boosted trees (XGBoost's C API) with a
 * pairwise ranking objective, trained on stored trials, and the measures that judge a ranking.
 *
 * Ranking, not regression: the tuner only needs to know which of two points is faster on the
 * same workload, and times of different workloads differ by orders of magnitude. Rows are
 * therefore grouped (one group = one workload on one device) and only pairs within a group are
 * compared. A model's score is "higher = predicted faster" and means nothing across groups.
 *
 * Columns are named: a dataset grows a column for each new feature name it is given, and a
 * model keeps the names it was trained on, so rows built by a newer feature extractor (more
 * features, or knobs of other spaces) are aligned by name and what the model does not know is
 * dropped; what it knows but a row lacks is a missing value (NaN).
 */
#pragma once

#include <glib.h>

#include "ts-cost.h"
#include "ts-db.h"

G_BEGIN_DECLS

/* ---- training data ---- */

typedef struct _TsCostDataset TsCostDataset;

TsCostDataset *ts_cost_dataset_new(void);
void ts_cost_dataset_free(TsCostDataset *dataset);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsCostDataset, ts_cost_dataset_free)
/* Adds a row: n features named names[i] with values values[i] (NaN = missing), in the group
 * called `group` (created on first use; rows of one group need not be added together). time_s
 * is the measured time (> 0), or INFINITY for a candidate that failed (compile error, crash,
 * wrong result): it ranks below every working one of its group. Returns the row's index. */
guint ts_cost_dataset_add(TsCostDataset *dataset, const char *group, const char *const *names,
                          const float *values, guint n, double time_s);
guint ts_cost_dataset_n_rows(const TsCostDataset *dataset);
guint ts_cost_dataset_n_columns(const TsCostDataset *dataset);
const char *ts_cost_dataset_column_name(const TsCostDataset *dataset, guint column);
guint ts_cost_dataset_n_groups(const TsCostDataset *dataset);
const char *ts_cost_dataset_group_name(const TsCostDataset *dataset, guint group);
/* The group index of a row, its time, and one cell (NaN when the row lacks the column). */
guint ts_cost_dataset_row_group(const TsCostDataset *dataset, guint row);
double ts_cost_dataset_row_time(const TsCostDataset *dataset, guint row);
float ts_cost_dataset_value(const TsCostDataset *dataset, guint row, guint column);

/* ---- the model ---- */

typedef struct {
  guint n_rounds;        /* boosting rounds; default 60 */
  guint max_depth;       /* default 6 */
  double eta;            /* learning rate; default 0.2 */
  double subsample;      /* default 1.0 (deterministic) */
  guint64 seed;          /* default 0 */
  guint n_threads;       /* default 1: an OpenMP team spins between rounds, and on a busy
                          * machine (a tune measuring beside it) that costs more than it saves;
                          * 0: XGBoost's choice */
} TsCostTrainOptions;

void ts_cost_train_options_init(TsCostTrainOptions *options);

typedef struct _TsCostModel TsCostModel;

/* Trains on every group with at least two rows of different times; groups with fewer carry no
 * pair and are skipped. TS_COST_ERROR_DATA when no group is left. options may be NULL. */
TsCostModel *ts_cost_model_train(const TsCostDataset *dataset, const TsCostTrainOptions *options,
                                 GError **error);
void ts_cost_model_free(TsCostModel *model);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsCostModel, ts_cost_model_free)
/* The feature names the model was trained on (owned by the model). */
guint ts_cost_model_n_features(const TsCostModel *model);
const char *ts_cost_model_feature_name(const TsCostModel *model, guint i);

/* Scores every row of dataset (columns matched by name): scores[row], higher = predicted
 * faster. */
gboolean ts_cost_model_predict(const TsCostModel *model, const TsCostDataset *dataset,
                               double *scores, GError **error);
/* The same for rows given as an n_rows x n_names row-major matrix with the names of its
 * columns (the features of one target): the model strategy's hot path, thousands of rows. */
gboolean ts_cost_model_predict_rows(const TsCostModel *model, const char *const *names,
                                    guint n_names, const float *rows, guint n_rows,
                                    double *scores, GError **error);

/* Self-contained bytes (XGBoost's JSON model plus the feature names and options), and back.
 * Loading bytes that are not such a model is TS_COST_ERROR_FORMAT. */
GBytes *ts_cost_model_serialize(const TsCostModel *model, GError **error);
TsCostModel *ts_cost_model_deserialize(GBytes *bytes, GError **error);

/* Stores the model in the schedule cache's model table under kind ("xgb-rank/cpu"), with what
 * it was trained on ({"rows", "groups": [names], "features": [names], "options": {...}}) and
 * quality_json (NULL or a JSON object: the evaluation that judged it). Returns the row id,
 * 0 on error. */
gint64 ts_cost_model_store(TsDb *db, const TsCostModel *model, const char *kind,
                           const TsCostDataset *trained_on, const char *quality_json,
                           GError **error);
/* The newest model of kind; TS_COST_ERROR_NO_MODEL when there is none. quality_json and
 * model_id are optional outputs. */
TsCostModel *ts_cost_model_load(TsDb *db, const char *kind, gint64 *model_id,
                                char **quality_json, GError **error);

/* The model table's kind for a backend's learned model: "xgb-rank/cpu", "xgb-rank/cuda". */
char *ts_cost_model_kind(const char *backend);

/* ---- training data from the schedule cache ---- */

/* Every stored trial of the selected keys as a row: the features of its point on its
 * workload and device (resources estimated, as for points not yet compiled, so training and
 * scoring see the same features), its median time, or INFINITY for a failed candidate. One
 * group per (workload, device, toolchain), named "<workload> | <backend>:<device> | <toolchain>";
 * the part before the first " | " is the workload (ts_cost_group_workload). Keys of unknown ops
 * and unparsable schedules are skipped and counted in *skipped (optional). backend: "cpu",
 * "cuda", or NULL for both. */
TsCostDataset *ts_cost_dataset_from_db(TsDb *db, const char *backend, guint *skipped,
                                       GError **error);
/* The device description of a stored key, as the backend reported it (strings borrowed from
 * key; the toolchain is the key's compiler). */
void ts_cost_key_device(const TsDbTrialKey *key, TsDeviceInfo *out);
/* The workload part of a group name (a new string). */
char *ts_cost_group_workload(const char *group);

/* The rows of dataset whose group's workload is (keep TRUE) or is not (keep FALSE) `workload`:
 * the training set that holds a workload out, or the held-out rows. */
TsCostDataset *ts_cost_dataset_select(const TsCostDataset *dataset, const char *workload,
                                      gboolean keep);

/* Held-out evaluation: for each workload with at least min_rows verified trials, a model is
 * trained on the rows of every other workload and ranks this one's (shapes it never saw). */
typedef struct {
  char *group;
  guint n_rows, n_ok;
  double tau, regret, recall;                            /* the learned model */
  double analytic_tau, analytic_regret, analytic_recall; /* the analytic estimate alone */
} TsCostEvalRow;

typedef struct {
  GArray *rows; /* TsCostEvalRow */
  double mean_tau, mean_regret, mean_recall;
  double mean_analytic_tau, mean_analytic_regret, mean_analytic_recall;
} TsCostEval;

/* TS_COST_ERROR_DATA when fewer than two workloads qualify (nothing to hold out against). */
TsCostEval *ts_cost_evaluate(const TsCostDataset *dataset, const TsCostTrainOptions *options,
                             guint min_rows, GError **error);
void ts_cost_eval_free(TsCostEval *eval);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsCostEval, ts_cost_eval_free)
/* {"heldout": "workload", "mean_tau": .., ..., "workloads": [{"group", "rows", "tau", ...}]} */
char *ts_cost_eval_to_json(const TsCostEval *eval);
/* Which ranks better in a held-out evaluation's JSON (a stored model's quality): the mean
 * Kendall tau of the learned model (*tau) and of the analytic estimate (*analytic_tau) over
 * the held-out workloads of op (NULL: of every op); *n how many. FALSE when the JSON holds no
 * such workload with both figures. */
gboolean ts_cost_eval_json_taus(const char *quality_json, const char *op, double *tau,
                                double *analytic_tau, guint *n);

/* ---- judging a ranking ---- */

/* Kendall's tau-b between predicted scores (higher = faster) and measured times (lower =
 * faster) over n items: 1 when the order agrees everywhere, -1 when reversed; ties in either
 * count as neither (tau-b's correction). NaN when n < 2 or either side is all ties. Items with
 * an infinite time (failed) take part as the slowest. */
double ts_cost_kendall_tau(const double *scores, const double *times, guint n);
/* How much slower the model's pick (highest score) is than the fastest: t_pick / t_best - 1. */
double ts_cost_top1_regret(const double *scores, const double *times, guint n);
/* Fraction of the true top k_true (fastest times) found among the k_pred highest scores. */
double ts_cost_recall(const double *scores, const double *times, guint n, guint k_true,
                      guint k_pred);

G_END_DECLS
