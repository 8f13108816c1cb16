/* ts-cost-xgb.c — the learned cost model: XGBoost gradient-boosted trees with the rank:pairwise
 * objective, trained on groups of measured points, scoring rows matched to its features by
 * name; serialized as one self-contained blob and kept in the schedule cache's model table. */
#include "ts-cost-private.h"

#include "ts-db.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>
#include <xgboost/c_api.h>

/* The envelope's format tag: bump it when the envelope changes incompatibly. */
#define FORMAT_TAG "tessera-cost-model-1"

struct _TsCostModel {
  BoosterHandle booster;
  GPtrArray *features; /* char *: the columns, in the order the booster reads them */
  GHashTable *index;   /* name -> column + 1, keys owned by features */
  TsCostTrainOptions options;
};

/* XGBoost's last error, first line only: its messages end in a multi-line C++ stack trace that
 * helps nobody reading a tessera error. */
static char *
xgb_last_error(void)
{
  const char *msg = XGBGetLastError();
  if (msg == NULL || *msg == '\0')
    return g_strdup("(no message)");
  /* "[15:40:10] ./src/learner.cc:1008: Invalid model format": the time and source line too. */
  if (msg[0] == '[' && strstr(msg, "] ")) {
    const char *rest = strstr(msg, "] ") + 2;
    const char *colon = strstr(rest, ": "), *space = strchr(rest, ' ');
    if (colon && (!space || colon < space))
      msg = colon + 2;
  }
  const char *nl = strchr(msg, '\n');
  return g_strstrip(nl ? g_strndup(msg, (gsize)(nl - msg)) : g_strdup(msg));
}

static gboolean
xgb_ok(int rc, const char *call, GError **error)
{
  if (rc == 0)
    return TRUE;
  g_autofree char *msg = xgb_last_error();
  g_set_error(error, TS_COST_ERROR, TS_COST_ERROR_XGBOOST, "XGBoost %s failed: %s", call, msg);
  return FALSE;
}

/* Calls an XGBoost function and turns a failure into TS_COST_ERROR_XGBOOST naming it. */
#define XGB(fn, args, error) xgb_ok(fn args, #fn, error)

static void
dmatrix_free(DMatrixHandle m)
{
  if (m)
    XGDMatrixFree(m);
}
G_DEFINE_AUTO_CLEANUP_FREE_FUNC(DMatrixHandle, dmatrix_free, NULL)

static void
booster_free(BoosterHandle b)
{
  if (b)
    XGBoosterFree(b);
}
G_DEFINE_AUTO_CLEANUP_FREE_FUNC(BoosterHandle, booster_free, NULL)

void
ts_cost_train_options_init(TsCostTrainOptions *o)
{
  g_return_if_fail(o != NULL);
  *o = (TsCostTrainOptions){
      .n_rounds = 60, .max_depth = 6, .eta = 0.2, .subsample = 1.0, .seed = 0, .n_threads = 1};
}

/* Takes features (char *, owning). */
static TsCostModel *
model_new(GPtrArray *features, const TsCostTrainOptions *options)
{
  TsCostModel *m = g_new0(TsCostModel, 1);
  m->features = features;
  m->index = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < features->len; i++)
    g_hash_table_insert(m->index, g_ptr_array_index(features, i), GUINT_TO_POINTER(i + 1));
  m->options = *options;
  return m;
}

void
ts_cost_model_free(TsCostModel *m)
{
  if (m == NULL)
    return;
  booster_free(m->booster);
  g_hash_table_unref(m->index);
  g_ptr_array_unref(m->features);
  g_free(m);
}

guint
ts_cost_model_n_features(const TsCostModel *m)
{
  return m->features->len;
}

const char *
ts_cost_model_feature_name(const TsCostModel *m, guint i)
{
  g_return_val_if_fail(i < m->features->len, NULL);
  return g_ptr_array_index(m->features, i);
}

/* The model's column for a feature name, or -1. */
static int
model_column(const TsCostModel *m, const char *name)
{
  return (int)GPOINTER_TO_UINT(g_hash_table_lookup(m->index, name)) - 1;
}

/* ---- training ---- */

/* The rows XGBoost trains on: the groups that carry a pair (two rows or more, not all of the
 * same time), each group's rows contiguous and in insertion order, because XGBoost's "group"
 * info is the sizes of consecutive runs of rows. */
static void
select_groups(const TsCostDataset *d, GArray *order, GArray *sizes)
{
  guint n_rows = ts_cost_dataset_n_rows(d), n_groups = ts_cost_dataset_n_groups(d);
  /* A counting sort by group: start[g] .. start[g + 1] are group g's rows in sorted. */
  g_autofree guint *start = g_new0(guint, n_groups + 1);
  for (guint r = 0; r < n_rows; r++)
    start[ts_cost_dataset_row_group(d, r) + 1]++;
  for (guint g = 0; g < n_groups; g++)
    start[g + 1] += start[g];
  g_autofree guint *next = g_memdup2(start, (n_groups + 1) * sizeof(guint));
  g_autofree guint *sorted = g_new(guint, MAX(n_rows, 1));
  for (guint r = 0; r < n_rows; r++)
    sorted[next[ts_cost_dataset_row_group(d, r)]++] = r;

  for (guint g = 0; g < n_groups; g++) {
    const guint *rows = sorted + start[g];
    guint n = start[g + 1] - start[g];
    gboolean differ = FALSE;
    for (guint i = 1; i < n && !differ; i++)
      differ = ts_cost_dataset_row_time(d, rows[i]) != ts_cost_dataset_row_time(d, rows[0]);
    if (!differ)
      continue;
    g_array_append_vals(order, rows, n);
    g_array_append_val(sizes, n);
  }
}

/* Relevance labels of one group, faster = larger: log(t_best / t), so 0 for the fastest and a
 * 2x slower point at -0.69 whatever the group's scale. rank:pairwise (XGBoost 1.7) uses labels
 * only to decide which item of a pair is better, every pair weighing the same, so real-valued
 * labels are fine and no information is lost to grading. A failed row takes one below the
 * group's lowest working label: slower than all, tied with the other failures. */
static void
group_labels(const TsCostDataset *d, const guint *rows, guint n, float *labels)
{
  double best = INFINITY;
  for (guint i = 0; i < n; i++)
    best = MIN(best, ts_cost_dataset_row_time(d, rows[i]));
  float lowest = 0;
  for (guint i = 0; i < n; i++) {
    double t = ts_cost_dataset_row_time(d, rows[i]);
    labels[i] = isfinite(t) ? (float)log(best / t) : NAN;
    if (isfinite(t))
      lowest = MIN(lowest, labels[i]);
  }
  for (guint i = 0; i < n; i++)
    if (isnan(labels[i]))
      labels[i] = lowest - 1.0f;
}

static gboolean
set_params(BoosterHandle b, const TsCostTrainOptions *o, GError **error)
{
  char eta[G_ASCII_DTOSTR_BUF_SIZE], subsample[G_ASCII_DTOSTR_BUF_SIZE];
  g_autofree char *depth = g_strdup_printf("%u", o->max_depth);
  g_autofree char *seed = g_strdup_printf("%" G_GUINT64_FORMAT, o->seed);
  g_autofree char *threads = g_strdup_printf("%u", o->n_threads);
  const char *params[][2] = {
      {"objective", "rank:pairwise"},
      /* hist: deterministic for a given input, and at 50k rows x 100 columns several times
       * faster than exact, which re-sorts every column at every node. */
      {"tree_method", "hist"},
      /* Pairs per row and round. XGBoost samples each row's partners from its group, and one
       * (the default) leaves most of a 60-row group's 1770 pairs unseen: on the synthetic test
       * held-out tau rose from 0.88 to 0.92 with 8, beyond which it stayed flat. Gradients are
       * divided by the count, so this changes no step size. */
      {"num_pairsample", "8"},
      /* A row's hessian is a sum of 2 p(1-p) / num_pairsample over its pairs: about 1 at the
       * start and falling towards 0 as pairs are learnt, where regression rows keep 1 each.
       * With the default min_child_weight of 1 a small group stops growing splits after the
       * first rounds (a lone pair's two rows end 0.36 apart after 60 rounds, against 5.7 with
       * 0.01), and the default lambda of 1 outweighs the hessian of a leaf of a few rows and
       * shrinks it several-fold (lambda 0.1 raised held-out tau by 0.01). Neither is set to 0:
       * a leaf whose pairs are all learnt would then divide by a hessian near zero. */
      {"min_child_weight", "0.01"},
      {"lambda", "0.1"},
      {"max_depth", depth},
      {"eta", g_ascii_dtostr(eta, sizeof eta, o->eta)},
      {"subsample", g_ascii_dtostr(subsample, sizeof subsample, o->subsample)},
      {"seed", seed},
      {"nthread", threads},
      {"verbosity", "0"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(params); i++)
    if (!XGB(XGBoosterSetParam, (b, params[i][0], params[i][1]), error)) {
      g_prefix_error(error, "setting %s=%s: ", params[i][0], params[i][1]);
      return FALSE;
    }
  return TRUE;
}

TsCostModel *
ts_cost_model_train(const TsCostDataset *d, const TsCostTrainOptions *options, GError **error)
{
  g_return_val_if_fail(d != NULL, NULL);
  TsCostTrainOptions o;
  if (options)
    o = *options;
  else
    ts_cost_train_options_init(&o);
  if (o.n_rounds == 0 || o.max_depth == 0 || !(o.eta > 0) ||
      !(o.subsample > 0 && o.subsample <= 1)) {
    g_set_error(error, TS_COST_ERROR, TS_COST_ERROR_DATA,
                "training options: rounds and depth must be positive, eta > 0 and subsample in "
                "(0, 1] (got %u rounds, depth %u, eta %g, subsample %g)",
                o.n_rounds, o.max_depth, o.eta, o.subsample);
    return NULL;
  }

  g_autoptr(GArray) order = g_array_new(FALSE, FALSE, sizeof(guint));
  g_autoptr(GArray) sizes = g_array_new(FALSE, FALSE, sizeof(guint));
  select_groups(d, order, sizes);
  if (order->len == 0) {
    g_set_error(error, TS_COST_ERROR, TS_COST_ERROR_DATA,
                "no group has two rows with different times (%u rows in %u groups)",
                ts_cost_dataset_n_rows(d), ts_cost_dataset_n_groups(d));
    return NULL;
  }
  guint n_cols = ts_cost_dataset_n_columns(d), n = order->len;
  if (n_cols == 0) {
    g_set_error(error, TS_COST_ERROR, TS_COST_ERROR_DATA,
                "the training rows have no features (%u rows)", ts_cost_dataset_n_rows(d));
    return NULL;
  }

  g_autofree int *map = g_new(int, n_cols);
  for (guint c = 0; c < n_cols; c++)
    map[c] = (int)c;
  gsize n_cells = (gsize)n * n_cols;
  g_autofree float *matrix = g_new(float, n_cells);
  ts__cost_dataset_fill(d, (const guint *)order->data, n, map, n_cols, matrix);
  g_autofree float *labels = g_new(float, n);
  for (guint g = 0, first = 0; g < sizes->len; first += g_array_index(sizes, guint, g), g++)
    group_labels(d, &g_array_index(order, guint, first), g_array_index(sizes, guint, g),
                 labels + first);

  g_auto(DMatrixHandle) dtrain = NULL;
  g_auto(BoosterHandle) booster = NULL;
  if (!XGB(XGDMatrixCreateFromMat, (matrix, n, n_cols, NAN, &dtrain), error) ||
      !XGB(XGDMatrixSetFloatInfo, (dtrain, "label", labels, n), error) ||
      !XGB(XGDMatrixSetUIntInfo, (dtrain, "group", (const unsigned *)sizes->data, sizes->len),
           error) ||
      !XGB(XGBoosterCreate, (&dtrain, 1, &booster), error) || !set_params(booster, &o, error))
    return NULL;
  for (guint round = 0; round < o.n_rounds; round++)
    if (!XGB(XGBoosterUpdateOneIter, (booster, (int)round, dtrain), error))
      return NULL;

  GPtrArray *features = g_ptr_array_new_with_free_func(g_free);
  for (guint c = 0; c < n_cols; c++)
    g_ptr_array_add(features, g_strdup(ts_cost_dataset_column_name(d, c)));
  TsCostModel *m = model_new(features, &o);
  m->booster = g_steal_pointer(&booster);
  return m;
}

/* ---- prediction ---- */

/* Scores an n_rows x n_features matrix in the model's column order, in place (no DMatrix: no
 * copy of the rows into XGBoost's sparse pages). */
static gboolean
predict_matrix(const TsCostModel *m, const float *matrix, guint n_rows, double *scores,
               GError **error)
{
  if (n_rows == 0)
    return TRUE;
  /* numpy's __array_interface__, which is what XGBoost reads dense input as. */
  char array[192];
  g_snprintf(array, sizeof array,
             "{\"data\":[%" G_GUINTPTR_FORMAT ",true],\"shape\":[%u,%u],\"typestr\":\"%cf4\","
             "\"version\":3}",
             (guintptr)matrix, n_rows, m->features->len,
             G_BYTE_ORDER == G_LITTLE_ENDIAN ? '<' : '>');
  /* XGBoost's JSON reader takes NaN; cache_id 0 is required by 1.7 (and means none). */
  static const char config[] = "{\"type\":0,\"training\":false,\"iteration_begin\":0,"
                               "\"iteration_end\":0,\"strict_shape\":false,\"missing\":NaN,"
                               "\"cache_id\":0}";
  const bst_ulong *shape = NULL;
  bst_ulong dim = 0;
  const float *out = NULL;
  if (!XGB(XGBoosterPredictFromDense, (m->booster, array, config, NULL, &shape, &dim, &out), error))
    return FALSE;
  if (dim != 1 || shape[0] != n_rows) {
    g_set_error(error, TS_COST_ERROR, TS_COST_ERROR_XGBOOST,
                "XGBoost XGBoosterPredictFromDense: %u rows gave a %u-dimensional result of "
                "%" G_GUINT64_FORMAT " rows (not a ranking model?)",
                n_rows, (guint)dim, dim > 0 ? (guint64)shape[0] : 0);
    return FALSE;
  }
  for (guint i = 0; i < n_rows; i++)
    scores[i] = out[i];
  return TRUE;
}

gboolean
ts_cost_model_predict(const TsCostModel *m, const TsCostDataset *d, double *scores, GError **error)
{
  g_return_val_if_fail(m != NULL && d != NULL, FALSE);
  guint n_rows = ts_cost_dataset_n_rows(d), n_cols = ts_cost_dataset_n_columns(d);
  g_return_val_if_fail(n_rows == 0 || scores != NULL, FALSE);
  g_autofree int *map = g_new(int, MAX(n_cols, 1));
  for (guint c = 0; c < n_cols; c++)
    map[c] = model_column(m, ts_cost_dataset_column_name(d, c));
  g_autofree guint *rows = g_new(guint, MAX(n_rows, 1));
  for (guint r = 0; r < n_rows; r++)
    rows[r] = r;
  g_autofree float *matrix = g_new(float, MAX((gsize)n_rows * m->features->len, 1));
  ts__cost_dataset_fill(d, rows, n_rows, map, m->features->len, matrix);
  return predict_matrix(m, matrix, n_rows, scores, error);
}

gboolean
ts_cost_model_predict_rows(const TsCostModel *m, const char *const *names, guint n_names,
                           const float *rows, guint n_rows, double *scores, GError **error)
{
  g_return_val_if_fail(m != NULL, FALSE);
  g_return_val_if_fail(n_names == 0 || names != NULL, FALSE);
  g_return_val_if_fail(n_rows == 0 || (scores != NULL && (rows != NULL || n_names == 0)), FALSE);
  guint nf = m->features->len;
  /* (source column, model column) of every input column the model knows. */
  g_autofree int *from = g_new(int, MAX(n_names, 1));
  g_autofree int *to = g_new(int, MAX(n_names, 1));
  guint n_map = 0;
  gboolean identity = n_names == nf;
  for (guint i = 0; i < n_names; i++) {
    int c = model_column(m, names[i]);
    identity = identity && c == (int)i;
    if (c >= 0) {
      from[n_map] = (int)i;
      to[n_map++] = c;
    }
  }
  /* The usual case: rows from the extractor the model was trained with, already in its order. */
  if (identity)
    return predict_matrix(m, rows, n_rows, scores, error);

  g_autofree float *matrix = g_new(float, MAX((gsize)n_rows * nf, 1));
  for (gsize i = 0; i < (gsize)n_rows * nf; i++)
    matrix[i] = NAN;
  for (guint r = 0; r < n_rows && n_map > 0; r++) {
    const float *src = rows + (gsize)r * n_names;
    float *dst = matrix + (gsize)r * nf;
    for (guint k = 0; k < n_map; k++)
      dst[to[k]] = src[from[k]];
  }
  return predict_matrix(m, matrix, n_rows, scores, error);
}

/* ---- the blob ---- */

static void
add_options(JsonBuilder *b, const TsCostTrainOptions *o)
{
  json_builder_set_member_name(b, "options");
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "n_rounds");
  json_builder_add_int_value(b, o->n_rounds);
  json_builder_set_member_name(b, "max_depth");
  json_builder_add_int_value(b, o->max_depth);
  json_builder_set_member_name(b, "eta");
  json_builder_add_double_value(b, o->eta);
  json_builder_set_member_name(b, "subsample");
  json_builder_add_double_value(b, o->subsample);
  json_builder_set_member_name(b, "seed");
  json_builder_add_int_value(b, (gint64)o->seed); /* JSON integers are signed: read back as cast */
  json_builder_set_member_name(b, "n_threads");
  json_builder_add_int_value(b, o->n_threads);
  json_builder_end_object(b);
}

static void
add_features(JsonBuilder *b, const TsCostModel *m)
{
  json_builder_set_member_name(b, "features");
  json_builder_begin_array(b);
  for (guint i = 0; i < m->features->len; i++)
    json_builder_add_string_value(b, g_ptr_array_index(m->features, i));
  json_builder_end_array(b);
}

static char *
builder_to_string(JsonBuilder *b, gsize *length)
{
  g_autoptr(JsonNode) root = json_builder_get_root(b);
  g_autoptr(JsonGenerator) gen = json_generator_new();
  json_generator_set_root(gen, root);
  return json_generator_to_data(gen, length);
}

GBytes *
ts_cost_model_serialize(const TsCostModel *m, GError **error)
{
  g_return_val_if_fail(m != NULL, NULL);
  bst_ulong len = 0;
  const char *raw = NULL;
  /* XGBoost's JSON model, base64'd rather than nested: re-printing its numbers through
   * json-glib could change their last bits, and predictions after a round trip must be the
   * same bits. */
  if (!XGB(XGBoosterSaveModelToBuffer, (m->booster, "{\"format\":\"json\"}", &len, &raw), error))
    return NULL;
  g_autofree char *booster = g_base64_encode((const guchar *)raw, len);

  g_autoptr(JsonBuilder) b = json_builder_new();
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "format");
  json_builder_add_string_value(b, FORMAT_TAG);
  add_features(b, m);
  add_options(b, &m->options);
  json_builder_set_member_name(b, "booster");
  json_builder_add_string_value(b, booster);
  json_builder_end_object(b);
  gsize length = 0;
  char *text = builder_to_string(b, &length);
  return g_bytes_new_take(text, length);
}

static gboolean format_error(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static gboolean
format_error(GError **error, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, TS_COST_ERROR, TS_COST_ERROR_FORMAT, "stored cost model: %s", msg);
  return FALSE;
}

/* Reads options; members absent keep their defaults, wrong types are an error. */
static gboolean
read_options(JsonObject *obj, TsCostTrainOptions *o, GError **error)
{
  ts_cost_train_options_init(o);
  static const char *const ints[] = {"n_rounds", "max_depth", "seed", "n_threads"};
  static const char *const reals[] = {"eta", "subsample"};
  for (gsize i = 0; i < G_N_ELEMENTS(ints); i++) {
    JsonNode *n = json_object_get_member(obj, ints[i]);
    if (n && json_node_get_value_type(n) != G_TYPE_INT64)
      return format_error(error, "options.%s is not an integer", ints[i]);
  }
  for (gsize i = 0; i < G_N_ELEMENTS(reals); i++) {
    JsonNode *n = json_object_get_member(obj, reals[i]);
    if (n && json_node_get_value_type(n) != G_TYPE_DOUBLE &&
        json_node_get_value_type(n) != G_TYPE_INT64)
      return format_error(error, "options.%s is not a number", reals[i]);
  }
  o->n_rounds = (guint)json_object_get_int_member_with_default(obj, "n_rounds", o->n_rounds);
  o->max_depth = (guint)json_object_get_int_member_with_default(obj, "max_depth", o->max_depth);
  o->seed = (guint64)json_object_get_int_member_with_default(obj, "seed", (gint64)o->seed);
  o->n_threads = (guint)json_object_get_int_member_with_default(obj, "n_threads", o->n_threads);
  o->eta = json_object_get_double_member_with_default(obj, "eta", o->eta);
  o->subsample = json_object_get_double_member_with_default(obj, "subsample", o->subsample);
  return TRUE;
}

/* The feature names: a non-empty array of distinct strings. */
static GPtrArray *
read_features(JsonNode *node, GError **error)
{
  if (node == NULL)
    return format_error(error, "missing 'features'"), NULL;
  if (!JSON_NODE_HOLDS_ARRAY(node))
    return format_error(error, "'features' is not an array"), NULL;
  JsonArray *arr = json_node_get_array(node);
  guint n = json_array_get_length(arr);
  if (n == 0)
    return format_error(error, "'features' is empty"), NULL;
  g_autoptr(GPtrArray) features = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < n; i++) {
    JsonNode *e = json_array_get_element(arr, i);
    if (json_node_get_value_type(e) != G_TYPE_STRING)
      return format_error(error, "features[%u] is not a string", i), NULL;
    const char *name = json_node_get_string(e);
    if (!g_hash_table_add(seen, (gpointer)name))
      return format_error(error, "feature '%s' is named twice", name), NULL;
    g_ptr_array_add(features, g_strdup(name));
  }
  return g_steal_pointer(&features);
}

static BoosterHandle
read_booster(JsonNode *node, guint n_features, GError **error)
{
  if (node == NULL)
    return format_error(error, "missing 'booster'"), NULL;
  if (json_node_get_value_type(node) != G_TYPE_STRING)
    return format_error(error, "'booster' is not a string"), NULL;
  gsize len = 0;
  g_autofree guchar *raw = g_base64_decode(json_node_get_string(node), &len);
  /* Only XGBoost's JSON is accepted: its older binary format has no marker, so garbage would
   * be parsed as such. */
  if (len == 0 || raw[0] != '{')
    return format_error(error, "'booster' is not an XGBoost JSON model"), NULL;
  g_auto(BoosterHandle) b = NULL;
  if (!XGB(XGBoosterCreate, (NULL, 0, &b), error))
    return NULL;
  if (XGBoosterLoadModelFromBuffer(b, raw, len) != 0) {
    g_autofree char *msg = xgb_last_error();
    return format_error(error, "'booster' is not an XGBoost model XGBoost can read (%s)", msg),
           NULL;
  }
  bst_ulong nf = 0;
  if (!XGB(XGBoosterGetNumFeature, (b, &nf), error))
    return NULL;
  if (nf != n_features)
    return format_error(error, "the booster reads %" G_GUINT64_FORMAT " features but %u are named",
                        (guint64)nf, n_features),
           NULL;
  return g_steal_pointer(&b);
}

TsCostModel *
ts_cost_model_deserialize(GBytes *bytes, GError **error)
{
  g_return_val_if_fail(bytes != NULL, NULL);
  gsize len = 0;
  const char *data = g_bytes_get_data(bytes, &len);
  if (len == 0 || !g_utf8_validate(data, (gssize)len, NULL))
    return format_error(error, "not a tessera cost model (not JSON text)"), NULL;
  if (!ts_db_json_depth_ok(data, (gssize)len, NULL))
    return format_error(error, "not a tessera cost model (JSON nested more than %d deep)",
                        TS_DB_JSON_MAX_DEPTH), NULL;
  g_autoptr(JsonParser) parser = json_parser_new();
  g_autoptr(GError) parse_error = NULL;
  if (!json_parser_load_from_data(parser, data, (gssize)len, &parse_error))
    return format_error(error, "not a tessera cost model (%s)", parse_error->message), NULL;
  JsonNode *root = json_parser_get_root(parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root))
    return format_error(error, "not a tessera cost model (not a JSON object)"), NULL;
  JsonObject *obj = json_node_get_object(root);
  JsonNode *format = json_object_get_member(obj, "format");
  if (format == NULL)
    return format_error(error, "not a tessera cost model (missing 'format')"), NULL;
  if (json_node_get_value_type(format) != G_TYPE_STRING)
    return format_error(error, "not a tessera cost model ('format' is not a string)"), NULL;
  if (strcmp(json_node_get_string(format), FORMAT_TAG) != 0)
    return format_error(error, "format '%s' is not '%s' (written by another version of tessera?)",
                        json_node_get_string(format), FORMAT_TAG),
           NULL;

  g_autoptr(GPtrArray) features = read_features(json_object_get_member(obj, "features"), error);
  if (!features)
    return NULL;
  TsCostTrainOptions o;
  JsonNode *options = json_object_get_member(obj, "options");
  if (options && !JSON_NODE_HOLDS_OBJECT(options))
    return format_error(error, "'options' is not an object"), NULL;
  if (options && !read_options(json_node_get_object(options), &o, error))
    return NULL;
  if (!options)
    ts_cost_train_options_init(&o);
  g_auto(BoosterHandle) b =
      read_booster(json_object_get_member(obj, "booster"), features->len, error);
  if (!b)
    return NULL;
  g_autofree char *threads = g_strdup_printf("%u", o.n_threads);
  if (!XGB(XGBoosterSetParam, (b, "nthread", threads), error))
    return NULL;

  TsCostModel *m = model_new(g_steal_pointer(&features), &o);
  m->booster = g_steal_pointer(&b);
  return m;
}

/* ---- the schedule cache ---- */

static char *
trained_on_json(const TsCostModel *m, const TsCostDataset *d)
{
  g_autoptr(JsonBuilder) b = json_builder_new();
  json_builder_begin_object(b);
  if (d) {
    json_builder_set_member_name(b, "rows");
    json_builder_add_int_value(b, ts_cost_dataset_n_rows(d));
    json_builder_set_member_name(b, "groups");
    json_builder_begin_array(b);
    for (guint g = 0; g < ts_cost_dataset_n_groups(d); g++)
      json_builder_add_string_value(b, ts_cost_dataset_group_name(d, g));
    json_builder_end_array(b);
  }
  add_features(b, m);
  add_options(b, &m->options);
  json_builder_end_object(b);
  return builder_to_string(b, NULL);
}

gint64
ts_cost_model_store(TsDb *db, const TsCostModel *m, const char *kind,
                    const TsCostDataset *trained_on, const char *quality_json, GError **error)
{
  g_return_val_if_fail(db != NULL && m != NULL && kind != NULL, 0);
  g_autoptr(GBytes) blob = ts_cost_model_serialize(m, error);
  if (!blob)
    return 0;
  g_autofree char *trained = trained_on_json(m, trained_on);
  return ts_db_add_model(db, kind, blob, trained, quality_json, error);
}

TsCostModel *
ts_cost_model_load(TsDb *db, const char *kind, gint64 *model_id, char **quality_json,
                   GError **error)
{
  g_return_val_if_fail(db != NULL && kind != NULL, NULL);
  g_autoptr(GError) db_error = NULL;
  gint64 id = 0;
  g_autofree char *quality = NULL;
  g_autoptr(GBytes) blob = ts_db_get_model(db, kind, &id, NULL, &quality, &db_error);
  if (!blob) {
    if (g_error_matches(db_error, TS_DB_ERROR, TS_DB_ERROR_NOT_FOUND))
      g_set_error(error, TS_COST_ERROR, TS_COST_ERROR_NO_MODEL,
                  "no learned cost model of kind '%s' in %s (train one with 'tessera-tune model "
                  "train')",
                  kind, ts_db_path(db));
    else
      g_propagate_error(error, g_steal_pointer(&db_error));
    return NULL;
  }
  TsCostModel *m = ts_cost_model_deserialize(blob, error);
  if (!m) {
    g_prefix_error(error, "%s, model %" G_GINT64_FORMAT " of kind '%s': ", ts_db_path(db), id,
                   kind);
    return NULL;
  }
  if (model_id)
    *model_id = id;
  if (quality_json)
    *quality_json = g_steal_pointer(&quality);
  return m;
}
