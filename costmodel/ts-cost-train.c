/* ts-cost-train.c — training sets from the schedule cache, and the held-out evaluation that
 * says whether a learned model ranks shapes it never saw. */
#include "ts-cost-model.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#define GROUP_SEP " | "

char *
ts_cost_model_kind(const char *backend)
{
  return g_strconcat("xgb-rank/", backend, NULL);
}

char *
ts_cost_group_workload(const char *group)
{
  const char *sep = strstr(group, GROUP_SEP);
  return sep ? g_strndup(group, (gsize)(sep - group)) : g_strdup(group);
}

void
ts_cost_key_device(const TsDbTrialKey *k, TsDeviceInfo *out)
{
  *out = (TsDeviceInfo){
    .backend = (char *)k->device.backend, .name = (char *)k->device.name,
    .arch = (char *)k->device.arch, .compute_units = k->device.compute_units,
    .memory_bytes = k->device.memory_bytes, .l1_bytes = k->device.l1_bytes,
    .l2_bytes = k->device.l2_bytes, .l3_bytes = k->device.l3_bytes,
    .smem_per_block = k->device.smem_per_block, .vector_bits = k->device.vector_bits,
    .toolchain = k->compiler};
}

/* The rows of one key; FALSE only on a database error. */
static gboolean
add_key(TsDb *db, TsCostDataset *ds, const TsDbTrialKey *k, guint *skipped, GError **error)
{
  /* A kernel file's trials count as any op's: its op is registered from the source the cache
   * keeps with them. */
  g_autofree char *src = NULL, *path = NULL;
  if (ts_op_lookup(k->op) == NULL && g_str_has_prefix(k->op, "kernel:") &&
      ts_db_get_kernel_source(db, k->op, &path, &src, NULL))
    ts_op_register_kernel_op(k->op, src, path, NULL);
  g_autoptr(TsOpInstance) inst = ts_op_instance_new(k->op, k->shape, k->dtype, NULL);
  if (inst == NULL) {
    *skipped += k->n_trials;
    return TRUE;
  }
  g_autofree char *peaks = ts_db_get_device_peaks(db, k->device_id, NULL);
  g_autoptr(TsProfCeilings) ceilings = peaks ? ts_prof_ceilings_from_json(peaks, NULL) : NULL;
  TsDeviceInfo dev;
  ts_cost_key_device(k, &dev);
  g_autoptr(TsCostTarget) t = ts_cost_target_new(inst, k->device.backend, &dev, ceilings);
  g_autoptr(GPtrArray) trials = ts_db_list_trials(db, k->workload_id, k->device_id,
                                                  k->toolchain_id, TS_DB_ORDER_INSERTION, error);
  if (trials == NULL)
    return FALSE;
  g_autofree char *what = ts_op_instance_describe(inst);
  g_autofree char *group = g_strdup_printf("%s" GROUP_SEP "%s:%s" GROUP_SEP "%s %s", what,
                                           k->device.backend, k->device.name, k->compiler,
                                           k->kgen_version);
  guint n = ts_cost_n_features(t);
  g_autofree float *f = g_new(float, n);
  for (guint i = 0; i < trials->len; i++) {
    const TsDbTrial *tr = trials->pdata[i];
    g_autoptr(TsSchedPoint) p = ts_sched_point_parse(tr->schedule, NULL);
    gboolean ok = tr->status == TS_DB_TRIAL_OK;
    if (p == NULL || (ok && !(tr->median_ns > 0))) {
      (*skipped)++;
      continue;
    }
    ts_cost_features(t, p, NULL, f);
    ts_cost_dataset_add(ds, group, ts_cost_feature_names(t), f, n,
                        ok ? tr->median_ns * 1e-9 : INFINITY);
  }
  return TRUE;
}

TsCostDataset *
ts_cost_dataset_from_db(TsDb *db, const char *backend, guint *skipped, GError **error)
{
  g_autoptr(GPtrArray) keys = ts_db_list_trial_keys(db, error);
  if (keys == NULL)
    return NULL;
  guint local = 0;
  g_autoptr(TsCostDataset) ds = ts_cost_dataset_new();
  for (guint i = 0; i < keys->len; i++) {
    const TsDbTrialKey *k = keys->pdata[i];
    if (backend && g_strcmp0(k->device.backend, backend) != 0)
      continue;
    if (!add_key(db, ds, k, &local, error))
      return NULL;
  }
  if (skipped)
    *skipped = local;
  return g_steal_pointer(&ds);
}

/* ---- held-out evaluation ---- */

static int
column_of(const TsCostDataset *ds, const char *name)
{
  for (guint c = 0; c < ts_cost_dataset_n_columns(ds); c++)
    if (strcmp(ts_cost_dataset_column_name(ds, c), name) == 0)
      return (int)c;
  return -1;
}

TsCostDataset *
ts_cost_dataset_select(const TsCostDataset *ds, const char *workload, gboolean keep)
{
  TsCostDataset *out = ts_cost_dataset_new();
  guint nc = ts_cost_dataset_n_columns(ds);
  g_autofree const char **names = g_new(const char *, MAX(nc, 1));
  g_autofree float *v = g_new(float, MAX(nc, 1));
  for (guint c = 0; c < nc; c++)
    names[c] = ts_cost_dataset_column_name(ds, c);
  for (guint r = 0; r < ts_cost_dataset_n_rows(ds); r++) {
    const char *group = ts_cost_dataset_group_name(ds, ts_cost_dataset_row_group(ds, r));
    g_autofree char *w = ts_cost_group_workload(group);
    if ((strcmp(w, workload) == 0) != keep)
      continue;
    for (guint c = 0; c < nc; c++)
      v[c] = ts_cost_dataset_value(ds, r, c);
    ts_cost_dataset_add(out, group, names, v, nc, ts_cost_dataset_row_time(ds, r));
  }
  return out;
}

static void
judge(const double *scores, const double *times, guint n, double *tau, double *regret,
      double *recall)
{
  *tau = ts_cost_kendall_tau(scores, times, n);
  *regret = ts_cost_top1_regret(scores, times, n);
  *recall = ts_cost_recall(scores, times, n, 5, 20);
}

/* One group of the held-out set, scored by the model and by the analytic estimate. */
static void
eval_group(const TsCostDataset *test, guint g, const double *scores, int est_col,
           TsCostEvalRow *row)
{
  g_autoptr(GArray) s = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) a = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) t = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint r = 0; r < ts_cost_dataset_n_rows(test); r++) {
    if (ts_cost_dataset_row_group(test, r) != g)
      continue;
    double time = ts_cost_dataset_row_time(test, r);
    double est = est_col >= 0 ? ts_cost_dataset_value(test, r, (guint)est_col) : NAN;
    double neg = isnan(est) ? 0 : -est;
    g_array_append_val(s, scores[r]);
    g_array_append_val(a, neg);
    g_array_append_val(t, time);
    row->n_ok += isfinite(time);
  }
  row->n_rows = t->len;
  const double *ts = (const double *)t->data;
  judge((const double *)s->data, ts, t->len, &row->tau, &row->regret, &row->recall);
  judge((const double *)a->data, ts, t->len, &row->analytic_tau, &row->analytic_regret,
        &row->analytic_recall);
}

/* The workloads with at least min_rows verified rows, in first-seen order. */
static GPtrArray *
qualifying_workloads(const TsCostDataset *ds, guint min_rows)
{
  g_autoptr(GHashTable) ok = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  GPtrArray *order = g_ptr_array_new_with_free_func(g_free);
  for (guint r = 0; r < ts_cost_dataset_n_rows(ds); r++) {
    const char *group = ts_cost_dataset_group_name(ds, ts_cost_dataset_row_group(ds, r));
    char *w = ts_cost_group_workload(group);
    guint n = GPOINTER_TO_UINT(g_hash_table_lookup(ok, w));
    if (!isfinite(ts_cost_dataset_row_time(ds, r))) {
      g_free(w);
      continue;
    }
    if (n + 1 == min_rows)
      g_ptr_array_add(order, g_strdup(w));
    g_hash_table_replace(ok, w, GUINT_TO_POINTER(n + 1));
  }
  return order;
}

static void
add_mean(double *sum, guint *n, double v)
{
  if (isfinite(v)) {
    *sum += v;
    (*n)++;
  }
}

static void
eval_means(TsCostEval *e)
{
  double s[6] = {0};
  guint n[6] = {0};
  for (guint i = 0; i < e->rows->len; i++) {
    const TsCostEvalRow *r = &g_array_index(e->rows, TsCostEvalRow, i);
    const double v[6] = {r->tau, r->regret, r->recall, r->analytic_tau, r->analytic_regret,
                         r->analytic_recall};
    for (guint k = 0; k < 6; k++)
      add_mean(&s[k], &n[k], v[k]);
  }
  double m[6];
  for (guint k = 0; k < 6; k++)
    m[k] = n[k] ? s[k] / n[k] : NAN;
  e->mean_tau = m[0];
  e->mean_regret = m[1];
  e->mean_recall = m[2];
  e->mean_analytic_tau = m[3];
  e->mean_analytic_regret = m[4];
  e->mean_analytic_recall = m[5];
}

static void
eval_row_clear(gpointer p)
{
  g_free(((TsCostEvalRow *)p)->group);
}

TsCostEval *
ts_cost_evaluate(const TsCostDataset *ds, const TsCostTrainOptions *options, guint min_rows,
                 GError **error)
{
  g_autoptr(GPtrArray) workloads = qualifying_workloads(ds, MAX(min_rows, 2));
  if (workloads->len < 2) {
    g_set_error(error, TS_COST_ERROR, TS_COST_ERROR_DATA,
                "held-out evaluation needs verified trials of at least two workloads with %u or "
                "more each; the cache has %u (tune more shapes first)",
                MAX(min_rows, 2), workloads->len);
    return NULL;
  }
  g_autoptr(TsCostEval) e = g_new0(TsCostEval, 1);
  e->rows = g_array_new(FALSE, TRUE, sizeof(TsCostEvalRow));
  g_array_set_clear_func(e->rows, eval_row_clear);
  for (guint w = 0; w < workloads->len; w++) {
    g_autoptr(TsCostDataset) train = ts_cost_dataset_select(ds, workloads->pdata[w], FALSE);
    g_autoptr(TsCostDataset) test = ts_cost_dataset_select(ds, workloads->pdata[w], TRUE);
    g_autoptr(TsCostModel) model = ts_cost_model_train(train, options, error);
    if (model == NULL)
      return NULL;
    g_autofree double *scores = g_new(double, ts_cost_dataset_n_rows(test));
    if (!ts_cost_model_predict(model, test, scores, error))
      return NULL;
    int est = column_of(test, "est.log2_time");
    for (guint g = 0; g < ts_cost_dataset_n_groups(test); g++) {
      TsCostEvalRow row = {.group = g_strdup(ts_cost_dataset_group_name(test, g))};
      eval_group(test, g, scores, est, &row);
      g_array_append_val(e->rows, row);
    }
  }
  eval_means(e);
  return g_steal_pointer(&e);
}

void
ts_cost_eval_free(TsCostEval *e)
{
  if (e == NULL)
    return;
  if (e->rows)
    g_array_unref(e->rows);
  g_free(e);
}

static void
add_num(JsonBuilder *b, const char *name, double v)
{
  json_builder_set_member_name(b, name);
  if (isfinite(v))
    json_builder_add_double_value(b, v);
  else
    json_builder_add_null_value(b);
}

char *
ts_cost_eval_to_json(const TsCostEval *e)
{
  g_autoptr(JsonBuilder) b = json_builder_new();
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "heldout");
  json_builder_add_string_value(b, "workload");
  add_num(b, "mean_tau", e->mean_tau);
  add_num(b, "mean_regret", e->mean_regret);
  add_num(b, "mean_recall_5_in_20", e->mean_recall);
  add_num(b, "mean_analytic_tau", e->mean_analytic_tau);
  add_num(b, "mean_analytic_regret", e->mean_analytic_regret);
  add_num(b, "mean_analytic_recall_5_in_20", e->mean_analytic_recall);
  json_builder_set_member_name(b, "workloads");
  json_builder_begin_array(b);
  for (guint i = 0; i < e->rows->len; i++) {
    const TsCostEvalRow *r = &g_array_index(e->rows, TsCostEvalRow, i);
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "group");
    json_builder_add_string_value(b, r->group);
    add_num(b, "rows", r->n_rows);
    add_num(b, "ok", r->n_ok);
    add_num(b, "tau", r->tau);
    add_num(b, "regret", r->regret);
    add_num(b, "recall_5_in_20", r->recall);
    add_num(b, "analytic_tau", r->analytic_tau);
    add_num(b, "analytic_regret", r->analytic_regret);
    add_num(b, "analytic_recall_5_in_20", r->analytic_recall);
    json_builder_end_object(b);
  }
  json_builder_end_array(b);
  json_builder_end_object(b);
  g_autoptr(JsonGenerator) gen = json_generator_new();
  g_autoptr(JsonNode) root = json_builder_get_root(b);
  json_generator_set_root(gen, root);
  return json_generator_to_data(gen, NULL);
}

/* The op of a group name: its workload's first word ("gemm M=512,N=512,K=512 f32 | ..."). */
static gboolean
group_is_op(const char *group, const char *op)
{
  gsize n = strlen(op);
  return strncmp(group, op, n) == 0 && group[n] == ' ';
}

static double
member_num(JsonObject *o, const char *name)
{
  JsonNode *n = json_object_get_member(o, name);
  return n && JSON_NODE_HOLDS_VALUE(n) ? json_node_get_double(n) : NAN;
}

gboolean
ts_cost_eval_json_taus(const char *quality_json, const char *op, double *tau,
                       double *analytic_tau, guint *n)
{
  *tau = *analytic_tau = NAN;
  *n = 0;
  g_autoptr(JsonParser) parser = json_parser_new();
  if (quality_json == NULL || !json_parser_load_from_data(parser, quality_json, -1, NULL))
    return FALSE;
  JsonNode *root = json_parser_get_root(parser);
  JsonObject *o = root && JSON_NODE_HOLDS_OBJECT(root) ? json_node_get_object(root) : NULL;
  JsonNode *wn = o ? json_object_get_member(o, "workloads") : NULL;
  JsonArray *ws = wn && JSON_NODE_HOLDS_ARRAY(wn) ? json_node_get_array(wn) : NULL;
  if (ws == NULL)
    return FALSE;
  double sum = 0, asum = 0;
  for (guint i = 0; i < json_array_get_length(ws); i++) {
    JsonNode *en = json_array_get_element(ws, i);
    JsonObject *w = JSON_NODE_HOLDS_OBJECT(en) ? json_node_get_object(en) : NULL;
    const char *group = w ? json_object_get_string_member_with_default(w, "group", "") : "";
    double t = w ? member_num(w, "tau") : NAN, a = w ? member_num(w, "analytic_tau") : NAN;
    if (!isfinite(t) || !isfinite(a) || (op && !group_is_op(group, op)))
      continue;
    sum += t, asum += a, (*n)++;
  }
  if (*n > 0)
    *tau = sum / *n, *analytic_tau = asum / *n;
  return *n > 0;
}
