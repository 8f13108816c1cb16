/* ts-tune-model.c — model-guided search, after TVM's MetaSchedule / Ansor: keep a pool of
 * unmeasured candidates (a uniform sample of the space plus one-knob neighbours of the best
 * points measured), rank the pool with a cost model, measure the top of the ranking plus an
 * exploration fraction of random pool members, retrain on what was measured, repeat.
 *
 * The ranking, as data arrives: first the prior (a learned model trained on other workloads,
 * when the cache has one) or else the analytic estimate (no trials needed), or, for a space
 * with neither (a foreign recorded kernel), no ranking at all (pure exploration). Once
 * MIN_TRAIN points have been measured, an online model (XGBoost, pairwise ranking) is trained
 * on this workload's measurements every RETRAIN_EVERY observations, with the prior's score and
 * the analytic estimate among its features; its ranking is blended with the first one by rank,
 * its weight growing with the measurements behind it, so a dozen noisy points cannot overrule
 * a good prior at once. */
#include <math.h>
#include <string.h>

#include "ts-cost-model.h"
#include "ts-tune-strategy-private.h"

#define POOL 2048         /* candidates scored per round */
#define NEIGHBOURS_OF 4   /* best measured points whose one-knob neighbours join the pool */
#define EPSILON 0.1       /* fraction of proposals drawn at random from the pool */
#define MIN_TRAIN 8       /* verified measurements before the first online model */
#define RETRAIN_EVERY 8   /* observations between retrainings */

typedef struct {
  TsSchedPoint *point;
  char *key;
  float *row;   /* features (n_cols) */
  double base;  /* prior score, or minus the estimated log2 time, or 0 */
  double online;
  double score; /* blended; higher = try first */
} Cand;

typedef struct {
  TsSchedPoint *point;
  double cost;
} Measured;

typedef struct {
  const TsSchedSpace *space;
  const TsSchedEnv *env;
  GRand *rng;
  TsTuneSampler *sampler;
  const TsCostTarget *target;
  TsCostTarget *own_target;
  const TsCostModel *prior;
  TsCostModel *online;
  TsCostDataset *observed;
  GPtrArray *cols; /* feature names + "prior.score" when there is a prior (not owned) */
  int est_col;     /* "est.log2_time" in cols, or -1 */
  GPtrArray *pool; /* Cand* */
  GHashTable *in_pool; /* key -> Cand* (borrowed from pool) */
  GArray *best;        /* Measured, the NEIGHBOURS_OF cheapest verified, cheapest first */
  guint n_ok, since_train;
  gboolean rescore;
  /* during propose: the driver's seen() */
  TsTuneSeenFunc seen;
  gpointer seen_data;
} Model;

static void
cand_free(gpointer p)
{
  Cand *c = p;
  ts_sched_point_free(c->point);
  g_free(c->key);
  g_free(c->row);
  g_free(c);
}

static gpointer
model_create(const TsSchedSpace *space, const TsSchedEnv *env, GRand *rng, GError **error)
{
  Model *m = g_new0(Model, 1);
  m->space = space;
  m->env = env;
  m->rng = rng;
  m->sampler = ts__tune_sampler_new(space, env, rng);
  m->observed = ts_cost_dataset_new();
  m->pool = g_ptr_array_new_with_free_func(cand_free);
  m->in_pool = g_hash_table_new(g_str_hash, g_str_equal);
  m->best = g_array_new(FALSE, FALSE, sizeof(Measured));
  m->est_col = -1;
  return m;
}

static void
model_destroy(gpointer state)
{
  Model *m = state;
  ts__tune_sampler_free(m->sampler);
  ts_cost_target_free(m->own_target);
  ts_cost_model_free(m->online);
  ts_cost_dataset_free(m->observed);
  if (m->cols)
    g_ptr_array_unref(m->cols);
  g_hash_table_unref(m->in_pool);
  g_ptr_array_unref(m->pool);
  for (guint i = 0; i < m->best->len; i++)
    ts_sched_point_free(g_array_index(m->best, Measured, i).point);
  g_array_unref(m->best);
  g_free(m);
}

static void
model_set_cost(gpointer state, const TsCostTarget *target, const TsCostModel *prior)
{
  Model *m = state;
  m->target = target;
  m->prior = prior;
}

/* The feature columns, fixed at first use. */
static void
ensure_columns(Model *m)
{
  if (m->cols)
    return;
  if (m->target == NULL)
    m->target = m->own_target = ts_cost_target_new_generic(m->space, NULL);
  m->cols = g_ptr_array_new();
  const char *const *names = ts_cost_feature_names(m->target);
  for (guint i = 0; names[i]; i++) {
    if (strcmp(names[i], "est.log2_time") == 0)
      m->est_col = (int)i;
    g_ptr_array_add(m->cols, (gpointer)names[i]);
  }
  if (m->prior)
    g_ptr_array_add(m->cols, "prior.score");
}

/* Features of a point, the prior's score in the last column when there is a prior. */
static float *
features(Model *m, const TsSchedPoint *p)
{
  guint nf = ts_cost_n_features(m->target);
  float *row = g_new(float, m->cols->len);
  ts_cost_features(m->target, p, NULL, row);
  if (m->prior) {
    double s = 0;
    if (!ts_cost_model_predict_rows(m->prior, (const char *const *)m->cols->pdata, nf, row, 1,
                                    &s, NULL))
      s = NAN;
    row[nf] = (float)s;
  }
  return row;
}

static double
base_score(const Model *m, const float *row)
{
  if (m->prior && isfinite(row[m->cols->len - 1]))
    return row[m->cols->len - 1];
  if (m->est_col >= 0 && isfinite(row[m->est_col]))
    return -row[m->est_col];
  return 0;
}

/* ---- the pool ---- */

static gboolean
pool_seen(gpointer data, const TsSchedPoint *p)
{
  Model *m = data;
  return g_hash_table_contains(m->in_pool, ts_sched_point_hash(p)) || m->seen(m->seen_data, p);
}

static void
pool_add(Model *m, TsSchedPoint *p)
{
  Cand *c = g_new0(Cand, 1);
  c->point = p;
  c->key = g_strdup(ts_sched_point_hash(p));
  c->row = features(m, p);
  c->base = base_score(m, c->row);
  c->online = NAN;
  g_ptr_array_add(m->pool, c);
  g_hash_table_insert(m->in_pool, c->key, c);
  m->rescore = TRUE;
}

static void
pool_remove(Model *m, const char *key)
{
  Cand *c = g_hash_table_lookup(m->in_pool, key);
  if (c == NULL)
    return;
  g_hash_table_remove(m->in_pool, key);
  g_ptr_array_remove_fast(m->pool, c);
}

/* One-knob neighbours (the adjacent value of each knob) of the best points measured: where a
 * good point is, better ones usually are close. */
static gboolean
add_neighbours(Model *m, GError **error)
{
  guint nk = ts_sched_space_n_knobs(m->space);
  g_autofree guint *d = g_new0(guint, MAX(nk, 1));
  for (guint b = 0; b < m->best->len; b++) {
    const TsSchedPoint *p = g_array_index(m->best, Measured, b).point;
    for (guint k = 0; k < nk; k++) {
      for (int step = -1; step <= 1; step += 2) {
        if (!ts__tune_point_digits(m->space, p, d))
          break;
        int v = (int)d[k] + step;
        if (v < 0 || v >= (int)ts_sched_space_n_values(m->space, k))
          continue;
        d[k] = (guint)v;
        g_autoptr(TsSchedPoint) q = ts__tune_point_from_digits(m->space, d);
        if (pool_seen(m, q))
          continue;
        int valid = ts__tune_point_valid(m->space, m->env, q, error);
        if (valid < 0)
          return FALSE;
        if (valid)
          pool_add(m, g_steal_pointer(&q));
      }
    }
  }
  return TRUE;
}

static gboolean
fill_pool(Model *m, GError **error)
{
  if (!add_neighbours(m, error))
    return FALSE;
  while (m->pool->len < POOL) {
    GError *local = NULL;
    TsSchedPoint *p = ts__tune_sampler_next(m->sampler, pool_seen, m, &local);
    if (local) {
      g_propagate_error(error, local);
      return FALSE;
    }
    if (p == NULL)
      break; /* every valid point is in the pool or seen */
    pool_add(m, p);
  }
  return TRUE;
}

/* ---- ranking ---- */

static GArray *sort_keys; /* only during rank_of(); qsort has no user data */

static int
cmp_by_key(const void *a, const void *b)
{
  double x = g_array_index(sort_keys, double, *(const guint *)a);
  double y = g_array_index(sort_keys, double, *(const guint *)b);
  if (x != y)
    return x < y ? -1 : 1;
  return (*(const guint *)a > *(const guint *)b) - (*(const guint *)a < *(const guint *)b);
}

/* Ranks in [0, 1] (1 = highest value), NaN lowest. */
static void
ranks(const double *v, guint n, double *out)
{
  g_autoptr(GArray) keys = g_array_sized_new(FALSE, FALSE, sizeof(double), n);
  g_autofree guint *idx = g_new(guint, n);
  for (guint i = 0; i < n; i++) {
    double x = isnan(v[i]) ? -INFINITY : v[i];
    g_array_append_val(keys, x);
    idx[i] = i;
  }
  sort_keys = keys;
  qsort(idx, n, sizeof(guint), cmp_by_key);
  sort_keys = NULL;
  for (guint r = 0; r < n; r++)
    out[idx[r]] = n > 1 ? (double)r / (n - 1) : 1;
}

static void
score_pool(Model *m)
{
  guint n = m->pool->len, nc = m->cols->len;
  if (n == 0)
    return;
  g_autofree double *base = g_new(double, n);
  g_autofree double *rb = g_new(double, n);
  for (guint i = 0; i < n; i++)
    base[i] = ((Cand *)m->pool->pdata[i])->base;
  ranks(base, n, rb);
  double w = 0;
  g_autofree double *ro = NULL;
  if (m->online) {
    g_autofree float *mat = g_new(float, (gsize)n * nc);
    g_autofree double *on = g_new(double, n);
    for (guint i = 0; i < n; i++)
      memcpy(mat + (gsize)i * nc, ((Cand *)m->pool->pdata[i])->row, nc * sizeof(float));
    if (ts_cost_model_predict_rows(m->online, (const char *const *)m->cols->pdata, nc, mat, n,
                                   on, NULL)) {
      ro = g_new(double, n);
      ranks(on, n, ro);
      /* 8 measurements: weight 1/3; 32: 2/3; never all of it. */
      w = MIN(0.9, m->n_ok / (m->n_ok + 16.0));
    }
  }
  for (guint i = 0; i < n; i++) {
    Cand *c = m->pool->pdata[i];
    c->score = ro ? w * ro[i] + (1 - w) * rb[i] : rb[i];
  }
  m->rescore = FALSE;
}

static void
retrain(Model *m)
{
  TsCostTrainOptions o;
  ts_cost_train_options_init(&o);
  /* Tens of points: shallow trees, few rounds. */
  o.n_rounds = 30;
  o.max_depth = 3;
  o.eta = 0.3;
  o.seed = g_rand_int(m->rng);
  TsCostModel *fresh = ts_cost_model_train(m->observed, &o, NULL);
  if (fresh == NULL)
    return; /* no pair of different times yet: keep what we have */
  ts_cost_model_free(m->online);
  m->online = fresh;
  m->since_train = 0;
  m->rescore = TRUE;
}

/* ---- the class ---- */

static gboolean
model_propose(gpointer state, guint n, TsTuneSeenFunc seen, gpointer seen_data, GPtrArray *out,
              GError **error)
{
  Model *m = state;
  ensure_columns(m);
  m->seen = seen;
  m->seen_data = seen_data;
  gboolean ok = fill_pool(m, error);
  if (ok && m->rescore)
    score_pool(m);
  for (guint i = 0; ok && i < n && m->pool->len > 0; i++) {
    Cand *pick = NULL;
    if (g_rand_double(m->rng) < EPSILON) {
      pick = m->pool->pdata[ts__tune_rand_below(m->rng, m->pool->len)];
    } else {
      for (guint k = 0; k < m->pool->len; k++) {
        Cand *c = m->pool->pdata[k];
        if (pick == NULL || c->score > pick->score ||
            (c->score == pick->score && strcmp(c->key, pick->key) < 0))
          pick = c;
      }
    }
    g_ptr_array_add(out, ts_sched_point_copy(pick->point));
    pool_remove(m, pick->key);
  }
  m->seen = NULL;
  m->seen_data = NULL;
  return ok;
}

static void
keep_best(Model *m, const TsSchedPoint *p, double cost)
{
  guint at = 0;
  while (at < m->best->len && g_array_index(m->best, Measured, at).cost <= cost)
    at++;
  if (at >= NEIGHBOURS_OF)
    return;
  Measured e = {ts_sched_point_copy(p), cost};
  g_array_insert_val(m->best, at, e);
  if (m->best->len > NEIGHBOURS_OF) {
    ts_sched_point_free(g_array_index(m->best, Measured, NEIGHBOURS_OF).point);
    g_array_set_size(m->best, NEIGHBOURS_OF);
  }
}

static void
model_observe(gpointer state, const TsSchedPoint *p, gboolean ok, double cost)
{
  Model *m = state;
  ensure_columns(m);
  const char *key = ts_sched_point_hash(p);
  Cand *c = g_hash_table_lookup(m->in_pool, key);
  g_autofree float *row = c ? g_memdup2(c->row, m->cols->len * sizeof(float)) : features(m, p);
  pool_remove(m, key);
  ts_cost_dataset_add(m->observed, "online", (const char *const *)m->cols->pdata, row,
                      m->cols->len, ok ? cost : INFINITY);
  if (ok) {
    m->n_ok++;
    keep_best(m, p, cost);
  }
  if (++m->since_train >= RETRAIN_EVERY && m->n_ok >= MIN_TRAIN)
    retrain(m);
}

const TsTuneStrategyClass ts__tune_model_class = {
    .name = "model",
    .create = model_create,
    .destroy = model_destroy,
    .propose = model_propose,
    .observe = model_observe,
    .set_cost = model_set_cost,
};
