/* ts-tune-model.c — model-guided search, after TVM's MetaSchedule / Ansor: keep a pool of
 * unmeasured candidates (a uniform sample of the space plus the neighbours of the best point
 * measured), rank the pool with a cost model, measure the top of the ranking plus (once an
 * online model learns from them) an exploration fraction of random pool members, retrain on
 * what was measured, repeat.
 *
 * The ranking, as data arrives: first the prior (a learned model trained on other workloads or
 * other devices, when there is one) or else the analytic estimate (no trials needed), or, for a
 * space with neither (a foreign recorded kernel), no ranking at all (pure exploration). Once
 * MIN_TRAIN points have run, an ensemble of online models (XGBoost, pairwise ranking, each on a
 * bootstrap resample of this workload's measurements, the prior's score and the analytic
 * estimate among their features) is retrained every RETRAIN_EVERY observations; a candidate's
 * online score is the members' mean plus KAPPA times their disagreement, so the search explores
 * where the model is unsure. It is blended with the first ranking's (each as z-scores over the
 * pool), its weight growing with the measurements behind it, so a dozen noisy points cannot
 * overrule a good prior at once. */
#include <math.h>
#include <string.h>

#include "ts-cost-model.h"
#include "ts-tune-strategy-private.h"

#define POOL 2048         /* candidates scored per round */
/* Best measured points whose neighbours join the pool. With the 4 best, the neighbourhoods of
 * near-equal points on one plateau crowded the pool: 1 needed 10% fewer evaluations to 95% on
 * the recorded spaces. */
#define NEIGHBOURS_OF 1
/* Fraction of proposals drawn at random from the pool once the online model is trained.
 * Before, a ranking (prior or estimate) is followed alone: random picks then taught no model
 * and cost 0.8 evaluations to 95% on the recorded CPU GEMM spaces (bench/cost_model.sh). */
#define EPSILON 0.1
#define MIN_TRAIN 8       /* verified measurements before the first online model */
#define RETRAIN_EVERY 8   /* observations between retrainings */
#define ENSEMBLE 5        /* online models, each on a bootstrap resample of the measurements */
#define KAPPA 1.0         /* weight of the ensemble's disagreement in the score */
#define SPREAD_TRY 64     /* pool members an exploration pick chooses among */
/* Observed points an exploration pick keeps away from, the most recent of each kind. A search
 * of hundreds of evaluations keeps every point that ran; failures can pile up at no cost (a
 * replayed recording of 3 of 10^9 configurations proposes 10^4 of them), and a pick compares
 * with each point kept. */
#define SPREAD_RAN 512
#define SPREAD_FAILED 64
#define FEW_VALUES 4      /* a knob with at most this many values may be unordered */
/* Seeds (what other devices measured fastest): kept in the pool, and the first SEED_FIRST of them
 * measured before anything else. Measuring them in their order found 95% of the optimum within
 * 5 evaluations on every pairing of the recorded convolution and pnpoly spaces; with only 4
 * first, the pairings whose 95% seed is the fifth needed 23 (the learned prior alone ranks
 * the other devices' best configurations well below what they measured). */
#define SEEDS_MAX 64
#define SEED_FIRST 8

typedef struct {
  TsSchedPoint *point;
  char *key;
  guint *digits; /* value index per knob; NULL for a point outside the space's lists */
  float *row;   /* features (n_cols) */
  double base;   /* prior score, or minus the estimated log2 time, or 0 */
  double raw[ENSEMBLE]; /* each online model's score */
  double online; /* the ensemble's optimistic score; NaN until scored */
  double score;  /* blended; higher = try first */
  guint32 tie;   /* drawn from the seed: breaks ties in score (all of them without a model) */
} Cand;

typedef struct {
  TsSchedPoint *point;
  guint *digits;
  double cost;
} Measured;

typedef struct {
  double mean, sd;
} Scale;

typedef struct {
  GPtrArray *digits; /* guint*, at most the ring's capacity */
  guint next;        /* the oldest, replaced next once full */
} Ring;

typedef struct {
  const TsSchedSpace *space;
  const TsSchedEnv *env;
  TsSchedChecker *checker; /* made at the first check */
  GRand *rng;
  TsTuneSampler *sampler;
  const TsCostTarget *target;
  TsCostTarget *own_target;
  const TsCostModel *prior;
  TsCostModel *online[ENSEMBLE]; /* NULL until trained */
  Scale member_scale[ENSEMBLE];
  gboolean trained;
  GPtrArray *obs_rows; /* float* (n_cols), one per verified measurement */
  GArray *obs_cost;    /* double, its time */
  GPtrArray *cols; /* feature names + "prior.score" when there is a prior (not owned) */
  int est_col;     /* "est.log2_time" in cols, or -1 */
  GPtrArray *pool; /* Cand* */
  GHashTable *in_pool; /* key -> Cand* (borrowed from pool) */
  Ring ran, failed;    /* digits of the points observed, that ran and that failed */
  double *scale;       /* knob_scale(), made at first use */
  gboolean flat;        /* the first ranking ranks nothing (all candidates tie) */
  GArray *best;        /* Measured, the NEIGHBOURS_OF cheapest verified, cheapest first */
  guint n_ok, n_observed, since_train;
  gboolean rescore; /* the model changed: score the whole pool again */
  GPtrArray *seeds; /* TsSchedPoint*, fast elsewhere, best first; NULL: none */
  guint seed_at, n_seeded;
  gboolean seeds_pooled;
  Scale base_scale, online_scale;
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
  g_free(c->digits);
  g_free(c->row);
  g_free(c);
}

static void
measured_clear(Measured *e)
{
  ts_sched_point_free(e->point);
  g_free(e->digits);
}

static gpointer
model_create(const TsSchedSpace *space, const TsSchedEnv *env, GRand *rng, GError **error)
{
  Model *m = g_new0(Model, 1);
  m->space = space;
  m->env = env;
  m->rng = rng;
  m->sampler = ts__tune_sampler_new(space, env, rng);
  m->obs_rows = g_ptr_array_new_with_free_func(g_free);
  m->obs_cost = g_array_new(FALSE, FALSE, sizeof(double));
  m->pool = g_ptr_array_new_with_free_func(cand_free);
  m->in_pool = g_hash_table_new(g_str_hash, g_str_equal);
  m->best = g_array_new(FALSE, FALSE, sizeof(Measured));
  m->ran.digits = g_ptr_array_new_with_free_func(g_free);
  m->failed.digits = g_ptr_array_new_with_free_func(g_free);
  m->est_col = -1;
  m->base_scale = m->online_scale = (Scale){0, 1};
  return m;
}

static void
model_destroy(gpointer state)
{
  Model *m = state;
  ts__tune_sampler_free(m->sampler);
  ts_cost_target_free(m->own_target);
  for (guint e = 0; e < ENSEMBLE; e++)
    ts_cost_model_free(m->online[e]);
  g_ptr_array_unref(m->obs_rows);
  g_array_unref(m->obs_cost);
  if (m->cols)
    g_ptr_array_unref(m->cols);
  g_hash_table_unref(m->in_pool);
  g_ptr_array_unref(m->pool);
  for (guint i = 0; i < m->best->len; i++)
    measured_clear(&g_array_index(m->best, Measured, i));
  g_array_unref(m->best);
  if (m->seeds)
    g_ptr_array_unref(m->seeds);
  g_free(m->scale);
  g_ptr_array_unref(m->ran.digits);
  g_ptr_array_unref(m->failed.digits);
  ts_sched_checker_free(m->checker);
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
  c->digits = g_new0(guint, MAX(ts_sched_space_n_knobs(m->space), 1));
  if (!ts__tune_point_digits(m->space, p, c->digits))
    g_clear_pointer(&c->digits, g_free);
  c->row = features(m, p);
  c->base = base_score(m, c->row);
  c->online = NAN;
  for (guint e = 0; e < ENSEMBLE; e++)
    c->raw[e] = NAN;
  c->tie = g_rand_int(m->rng);
  g_ptr_array_add(m->pool, c);
  g_hash_table_insert(m->in_pool, c->key, c);
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

/* The value indices one knob of a point may move to. A knob with few values may be a choice
 * between methods whose order means nothing (Kernel Tuner files code those as integers), so
 * every other value is a neighbour; a longer list is an ordered range (tile sizes, block
 * sizes), where one and two steps either way are. */
static guint
knob_moves(const TsSchedSpace *space, guint k, guint at, guint *to)
{
  guint nv = ts_sched_space_n_values(space, k), n = 0;
  if (nv <= FEW_VALUES) {
    for (guint v = 0; v < nv; v++)
      if (v != at)
        to[n++] = v;
    return n;
  }
  static const int steps[] = {-1, 1, -2, 2};
  for (guint s = 0; s < G_N_ELEMENTS(steps); s++) {
    int v = (int)at + steps[s];
    if (v >= 0 && v < (int)nv)
      to[n++] = (guint)v;
  }
  return n;
}

/* One-knob neighbours of the best points measured: where a good point is, better ones usually
 * are close. */
static gboolean
add_neighbours(Model *m, GError **error)
{
  guint nk = ts_sched_space_n_knobs(m->space);
  g_autofree guint *d = g_new0(guint, MAX(nk, 1));
  guint to[MAX(FEW_VALUES, 4)];
  for (guint b = 0; b < m->best->len; b++) {
    const Measured *e = &g_array_index(m->best, Measured, b);
    memcpy(d, e->digits, nk * sizeof(guint));
    for (guint k = 0; k < nk; k++) {
      guint at = d[k], n = knob_moves(m->space, k, at, to);
      for (guint i = 0; i < n; i++) {
        d[k] = to[i];
        g_autoptr(TsSchedPoint) q = ts__tune_point_from_digits(m->space, d);
        if (pool_seen(m, q))
          continue;
        int valid = ts__tune_point_valid(&m->checker, m->space, m->env, q, error);
        if (valid < 0)
          return FALSE;
        if (valid)
          pool_add(m, g_steal_pointer(&q));
      }
      d[k] = at;
    }
  }
  return TRUE;
}

/* The seeds join the pool before any random draw, so a pool full of draws cannot crowd them
 * out; the ranking may still pick them after the first SEED_FIRST. */
static gboolean
pool_seeds(Model *m, GError **error)
{
  m->seeds_pooled = TRUE;
  for (guint i = 0; m->seeds && i < m->seeds->len; i++) {
    const TsSchedPoint *p = m->seeds->pdata[i];
    if (pool_seen(m, p))
      continue;
    int valid = ts__tune_point_valid(&m->checker, m->space, m->env, p, error);
    if (valid < 0)
      return FALSE;
    if (valid)
      pool_add(m, ts_sched_point_copy(p));
  }
  return TRUE;
}

/* The next seed still in the pool (not measured, valid), or NULL. */
static Cand *
next_seed(Model *m)
{
  while (m->seeds && m->seed_at < m->seeds->len) {
    Cand *c = g_hash_table_lookup(m->in_pool, ts_sched_point_hash(m->seeds->pdata[m->seed_at++]));
    if (c)
      return c;
  }
  return NULL;
}

static gboolean
fill_pool(Model *m, GError **error)
{
  if (!m->seeds_pooled && !pool_seeds(m, error))
    return FALSE;
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

enum { SCALE_BASE = -2, SCALE_ONLINE = -1 }; /* or an ensemble member's index */

/* Mean and standard deviation of the pool's scores of one kind, from the last full rescoring:
 * candidates added later are placed on the same scale without rescoring the whole pool. */
static Scale
scale_of(const Model *m, int which)
{
  double s = 0, s2 = 0;
  guint n = 0;
  for (guint i = 0; i < m->pool->len; i++) {
    const Cand *c = m->pool->pdata[i];
    double v = which == SCALE_BASE ? c->base : which == SCALE_ONLINE ? c->online : c->raw[which];
    if (!isfinite(v))
      continue;
    s += v;
    s2 += v * v;
    n++;
  }
  double mean = n ? s / n : 0, var = n ? s2 / n - mean * mean : 0;
  return (Scale){mean, var > 1e-24 ? sqrt(var) : 1};
}

/* The online model's weight: 8 measurements 1/3, 32 measurements 2/3, never all of it. */
static double
online_weight(const Model *m)
{
  return m->trained ? MIN(0.9, m->n_ok / (m->n_ok + 16.0)) : 0;
}

static void
blend(const Model *m, Cand *c)
{
  double w = online_weight(m);
  double b = (c->base - m->base_scale.mean) / m->base_scale.sd;
  if (w == 0 || !isfinite(c->online)) {
    c->score = b;
    return;
  }
  double o = (c->online - m->online_scale.mean) / m->online_scale.sd;
  c->score = w * o + (1 - w) * b;
}

/* The ensemble's members rank on scales of their own: each is made a z-score over the pool,
 * and a candidate's online score is their mean plus KAPPA standard deviations, so where the
 * members disagree (few measurements near the candidate) it is tried sooner. */
static void
combine(const Model *m, Cand *c)
{
  double s = 0, s2 = 0;
  guint n = 0;
  for (guint e = 0; e < ENSEMBLE; e++) {
    if (m->online[e] == NULL || !isfinite(c->raw[e]))
      continue;
    double z = (c->raw[e] - m->member_scale[e].mean) / m->member_scale[e].sd;
    s += z;
    s2 += z * z;
    n++;
  }
  if (n == 0) {
    c->online = -INFINITY;
    return;
  }
  double mean = s / n, var = n > 1 ? MAX(0, (s2 - n * mean * mean) / (n - 1)) : 0;
  c->online = mean + KAPPA * sqrt(var);
}

/* Scores the candidates that have no online score yet (all of them after a retraining), one
 * call per ensemble member. */
static void
score_new(Model *m, gboolean all)
{
  guint nc = m->cols->len;
  g_autoptr(GPtrArray) todo = g_ptr_array_new();
  for (guint i = 0; i < m->pool->len; i++) {
    Cand *c = m->pool->pdata[i];
    if (all || isnan(c->online))
      g_ptr_array_add(todo, c);
  }
  if (m->trained && todo->len > 0) {
    g_autofree float *mat = g_new(float, (gsize)todo->len * nc);
    g_autofree double *on = g_new(double, todo->len);
    for (guint i = 0; i < todo->len; i++)
      memcpy(mat + (gsize)i * nc, ((Cand *)todo->pdata[i])->row, nc * sizeof(float));
    for (guint e = 0; e < ENSEMBLE; e++) {
      gboolean ok = m->online[e] &&
                    ts_cost_model_predict_rows(m->online[e], (const char *const *)m->cols->pdata,
                                               nc, mat, todo->len, on, NULL);
      for (guint i = 0; i < todo->len; i++)
        ((Cand *)todo->pdata[i])->raw[e] = ok ? on[i] : NAN;
      if (all)
        m->member_scale[e] = scale_of(m, (int)e);
    }
    for (guint i = 0; i < todo->len; i++)
      combine(m, todo->pdata[i]);
  }
  if (all) {
    m->base_scale = scale_of(m, SCALE_BASE);
    m->flat = TRUE;
    for (guint i = 1; i < m->pool->len && m->flat; i++)
      m->flat = ((Cand *)m->pool->pdata[i])->base == ((Cand *)m->pool->pdata[0])->base;
    m->online_scale = scale_of(m, SCALE_ONLINE);
    for (guint i = 0; i < m->pool->len; i++)
      blend(m, m->pool->pdata[i]);
  } else {
    for (guint i = 0; i < todo->len; i++)
      blend(m, todo->pdata[i]);
  }
}

/* Each member is trained on a bootstrap resample of the measurements: where the data are thin
 * the resamples differ most, and so do the members. */
static void
retrain(Model *m)
{
  TsCostTrainOptions o;
  ts_cost_train_options_init(&o);
  /* Tens of points: shallow trees, few rounds. */
  o.n_rounds = 30;
  o.max_depth = 3;
  o.eta = 0.3;
  guint n = m->obs_rows->len;
  gboolean any = FALSE;
  for (guint e = 0; e < ENSEMBLE; e++) {
    g_autoptr(TsCostDataset) ds = ts_cost_dataset_new();
    for (guint i = 0; i < n; i++) {
      guint r = ts__tune_rand_below(m->rng, n);
      ts_cost_dataset_add(ds, "online", (const char *const *)m->cols->pdata,
                          m->obs_rows->pdata[r], m->cols->len,
                          g_array_index(m->obs_cost, double, r));
    }
    o.seed = g_rand_int(m->rng);
    TsCostModel *fresh = ts_cost_model_train(ds, &o, NULL);
    if (fresh == NULL)
      continue; /* this resample has no pair of different times: keep the old member */
    ts_cost_model_free(m->online[e]);
    m->online[e] = fresh;
    any = TRUE;
  }
  if (!any)
    return;
  m->trained = TRUE;
  m->since_train = 0;
  m->rescore = TRUE;
}

/* ---- the class ---- */

/* Per knob, what a difference of one value index is worth in distance(): 0 for a knob of one
 * value, a negative mark for one of few values (possibly unordered: 1 whenever it differs), and
 * 1 / (steps in the range) for an ordered one. */
static double *
knob_scale(const TsSchedSpace *space)
{
  guint nk = ts_sched_space_n_knobs(space);
  double *w = g_new0(double, MAX(nk, 1));
  for (guint k = 0; k < nk; k++) {
    guint nv = ts_sched_space_n_values(space, k);
    w[k] = nv < 2 ? 0 : nv <= FEW_VALUES ? -1 : 1.0 / (nv - 1);
  }
  return w;
}

/* Distance between two points, or any value >= stop once it is clear that it is. */
static double
distance(const double *scale, guint nk, const guint *a, const guint *b, double stop)
{
  double d = 0;
  for (guint k = 0; k < nk && d < stop; k++) {
    if (a[k] == b[k])
      continue;
    d += scale[k] < 0 ? 1 : scale[k] * fabs((double)a[k] - (double)b[k]);
  }
  return d;
}

/* Exploration, when nothing ranks the pool yet and for the EPSILON fraction after: of SPREAD_TRY
 * random pool members, the one farthest from every point observed (maximin). Uniform draws
 * leave whole branches of a method knob unvisited and cluster by chance; the farthest-point
 * draw covers them and reaches the ends of ordered ranges, where the fastest tile often sits
 * (the largest that fits). On the recorded spaces it cut the evaluations to 95% by a fifth
 * (geometric mean), pnpoly/RTX 3060 from 79 to 48. */
static Cand *
spread_pick(Model *m)
{
  Cand *pick = NULL;
  double best = -1;
  guint nk = ts_sched_space_n_knobs(m->space);
  if (m->scale == NULL)
    m->scale = knob_scale(m->space);
  for (guint t = 0; t < SPREAD_TRY; t++) {
    Cand *c = m->pool->pdata[ts__tune_rand_below(m->rng, m->pool->len)];
    const guint *d = c->digits;
    if (d == NULL)
      return c;
    /* Its distance to the nearest kept point, given up once it cannot beat the best so far. */
    double near = INFINITY;
    const Ring *rings[] = {&m->ran, &m->failed};
    for (guint r = 0; r < G_N_ELEMENTS(rings) && near > best; r++)
      for (guint i = 0; i < rings[r]->digits->len && near > best; i++)
        near = MIN(near, distance(m->scale, nk, d, rings[r]->digits->pdata[i], near));
    if (near > best) {
      best = near;
      pick = c;
    }
  }
  return pick ? pick : m->pool->pdata[0];
}

static gboolean
model_propose(gpointer state, guint n, TsTuneSeenFunc seen, gpointer seen_data, GPtrArray *out,
              GError **error)
{
  Model *m = state;
  ensure_columns(m);
  m->seen = seen;
  m->seen_data = seen_data;
  gboolean first = m->pool->len == 0 && m->n_observed == 0;
  gboolean ok = fill_pool(m, error);
  if (ok) {
    /* While nothing ranks the pool every pick spreads out, and new candidates need no score
     * until the online model arrives (which rescores them all). */
    gboolean all = m->rescore || first;
    if (all || m->trained || !m->flat)
      score_new(m, all);
    m->rescore = FALSE;
  }
  for (guint i = 0; ok && i < n && m->pool->len > 0; i++) {
    Cand *pick = NULL;
    /* What other devices found fastest comes first; then, while nothing ranks the pool, or for
     * an exploration pick, spread out. */
    if (m->n_seeded < SEED_FIRST && (pick = next_seed(m)) != NULL) {
      m->n_seeded++;
    } else if (m->trained ? g_rand_double(m->rng) < EPSILON : m->flat) {
      pick = spread_pick(m);
    } else {
      for (guint k = 0; k < m->pool->len; k++) {
        Cand *c = m->pool->pdata[k];
        /* Ties go to a draw, not to the smaller hash: equal scores are taken in the seed's
         * order, not always from the same point. */
        if (pick == NULL || c->score > pick->score ||
            (c->score == pick->score &&
             (c->tie < pick->tie || (c->tie == pick->tie && strcmp(c->key, pick->key) < 0))))
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
remember(Ring *r, const TsSchedSpace *space, const TsSchedPoint *p, guint capacity)
{
  guint *d = g_new0(guint, MAX(ts_sched_space_n_knobs(space), 1));
  if (!ts__tune_point_digits(space, p, d)) {
    g_free(d);
    return;
  }
  if (r->digits->len < capacity) {
    g_ptr_array_add(r->digits, d);
    return;
  }
  g_free(r->digits->pdata[r->next]);
  r->digits->pdata[r->next] = d;
  r->next = (r->next + 1) % capacity;
}

static void
keep_best(Model *m, const TsSchedPoint *p, double cost)
{
  guint at = 0;
  while (at < m->best->len && g_array_index(m->best, Measured, at).cost <= cost)
    at++;
  if (at >= NEIGHBOURS_OF)
    return;
  guint nk = ts_sched_space_n_knobs(m->space);
  Measured e = {ts_sched_point_copy(p), g_new0(guint, MAX(nk, 1)), cost};
  if (!ts__tune_point_digits(m->space, p, e.digits)) {
    measured_clear(&e);
    return;
  }
  g_array_insert_val(m->best, at, e);
  if (m->best->len > NEIGHBOURS_OF) {
    measured_clear(&g_array_index(m->best, Measured, NEIGHBOURS_OF));
    g_array_set_size(m->best, NEIGHBOURS_OF);
  }
}

/* A failure (a kernel over a register budget, or a configuration a recording lacks) teaches the
 * speed ranking nothing: as "slower than everything" it would mark its whole neighbourhood
 * slow, and the best configurations often sit next to ones that do not run (the largest tile
 * that fits). On the recorded spaces, ranking only what ran cut the evaluations to 95% by a
 * quarter (gemm by a third). */
static void
model_observe(gpointer state, const TsSchedPoint *p, gboolean ok, double cost)
{
  Model *m = state;
  ensure_columns(m);
  const char *key = ts_sched_point_hash(p);
  Cand *c = g_hash_table_lookup(m->in_pool, key);
  float *row = NULL;
  if (ok)
    row = c ? g_memdup2(c->row, m->cols->len * sizeof(float)) : features(m, p);
  pool_remove(m, key);
  remember(ok ? &m->ran : &m->failed, m->space, p, ok ? SPREAD_RAN : SPREAD_FAILED);
  if (ok) {
    g_ptr_array_add(m->obs_rows, row);
    g_array_append_val(m->obs_cost, cost);
    m->n_ok++;
    keep_best(m, p, cost);
  }
  m->n_observed++;
  /* Every RETRAIN_EVERY observations, and no more often than every eighth of what the model is
   * trained on, so a long search does not spend its time retraining. */
  if (++m->since_train >= MAX(RETRAIN_EVERY, m->n_observed / 8) && m->n_ok >= MIN_TRAIN)
    retrain(m);
}

static guint
model_set_seeds(gpointer state, GPtrArray *points)
{
  Model *m = state;
  if (m->seeds == NULL)
    m->seeds = g_ptr_array_new_with_free_func((GDestroyNotify)ts_sched_point_free);
  for (guint i = 0; i < points->len && m->seeds->len < SEEDS_MAX; i++)
    g_ptr_array_add(m->seeds, ts_sched_point_copy(points->pdata[i]));
  return m->seeds->len;
}

const TsTuneStrategyClass ts__tune_model_class = {
    .name = "model",
    .create = model_create,
    .destroy = model_destroy,
    .propose = model_propose,
    .observe = model_observe,
    .set_cost = model_set_cost,
    .set_seeds = model_set_seeds,
};
