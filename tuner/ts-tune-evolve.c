/* ts-tune-evolve.c — a genetic algorithm over the knobs, after Kernel Tuner's
 * genetic_algorithm (population 20, uniform crossover, per-knob mutation) and the evolutionary
 * search of Ansor (Zheng et al., OSDI 2020: mutate the best programs, never re-measure one).
 *
 * Steady state rather than generational: the population is always the 20 best points observed
 * so far (failed ones with the worst fitness, so they only fill a population that has nothing
 * better), which works for any batch size and for points loaded from storage, and keeps the
 * elitism Kernel Tuner gets by carrying the best over. Until 20 points are observed or in
 * flight, proposals are uniformly random (the initial population).
 *
 * A child: two parents by tournament of 3 (selection pressure without depending on the scale of
 * the costs), uniform crossover (each knob from either parent), then each knob mutates with
 * probability max(1/knobs, 0.1) — at least one mutation per child on average, Kernel Tuner's
 * 1 in 10 for many knobs — to an adjacent value or, half the time, any value. A child that is
 * invalid or seen is re-drawn, at most 32 times, then a random unseen valid point is taken
 * instead, which also keeps a converged population from stalling.
 *
 * With a prior (a ranking learnt on other devices' recordings of the kernel, or on other
 * workloads), the initial population is the prior's best of PRIOR_DRAWS random valid points
 * rather than the first 20 drawn: the search starts where the other GPUs were fast. Seeds (the
 * configurations other devices measured fastest) come before either. */
#include <math.h>
#include <string.h>

#include "ts-cost-model.h"
#include "ts-tune-strategy-private.h"

#define POP 20
#define TOURNAMENT 3
#define CHILD_TRIES 32
#define PRIOR_DRAWS 512

typedef struct {
  guint *digits;
  double fit; /* cost; INFINITY for a failed point */
} Member;

typedef struct {
  const TsSchedSpace *space;
  const TsSchedEnv *env;
  TsSchedChecker *checker; /* made at the first check */
  GRand *rng;
  TsTuneSampler *sampler;
  guint n;
  Member pop[POP]; /* sorted by fit, best first; ties keep the earlier */
  guint pop_len;
  guint64 n_observed;
  GHashTable *pending; /* digits keys of proposals awaiting their cost */
  guint *tmp;
  const TsCostTarget *target;
  const TsCostModel *prior;
  GPtrArray *ranked; /* TsSchedPoint*, the prior's ranking of drawn points, best last; NULL
                      * until drawn. Points drawn are gone from the sampler's enumeration, so
                      * the ones left serve as random picks later. */
  GPtrArray *seeds;  /* TsSchedPoint*, at most POP, best first; NULL: none */
  guint seed_at;
} Evolve;

static char *
digits_key(const Evolve *e, const guint *digits)
{
  GString *k = g_string_sized_new(e->n * 3 + 1);
  for (guint i = 0; i < e->n; i++)
    g_string_append_printf(k, "%u,", digits[i]);
  return g_string_free(k, FALSE);
}

static gpointer
evolve_create(const TsSchedSpace *space, const TsSchedEnv *env, GRand *rng, GError **error)
{
  Evolve *e = g_new0(Evolve, 1);
  e->space = space;
  e->env = env;
  e->rng = rng;
  e->sampler = ts__tune_sampler_new(space, env, rng);
  e->n = ts_sched_space_n_knobs(space);
  for (guint i = 0; i < POP; i++)
    e->pop[i].digits = g_new0(guint, MAX(e->n, 1));
  e->pending = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  e->tmp = g_new0(guint, MAX(e->n, 1));
  return e;
}

static void
evolve_destroy(gpointer state)
{
  Evolve *e = state;
  if (!e)
    return;
  ts__tune_sampler_free(e->sampler);
  for (guint i = 0; i < POP; i++)
    g_free(e->pop[i].digits);
  g_hash_table_unref(e->pending);
  g_free(e->tmp);
  if (e->ranked)
    g_ptr_array_unref(e->ranked);
  if (e->seeds)
    g_ptr_array_unref(e->seeds);
  ts_sched_checker_free(e->checker);
  g_free(e);
}

static guint
tournament(Evolve *e)
{
  guint best = ts__tune_rand_below(e->rng, e->pop_len);
  for (guint t = 1; t < TOURNAMENT; t++)
    best = MIN(best, ts__tune_rand_below(e->rng, e->pop_len)); /* sorted: lower is fitter */
  return best;
}

static void
make_child(Evolve *e)
{
  const guint *a = e->pop[tournament(e)].digits, *b = e->pop[tournament(e)].digits;
  double pm = MAX(1.0 / MAX(e->n, 1), 0.1);
  for (guint k = 0; k < e->n; k++) {
    e->tmp[k] = g_rand_boolean(e->rng) ? a[k] : b[k];
    guint nv = ts_sched_space_n_values(e->space, k);
    if (nv < 2 || g_rand_double(e->rng) >= pm)
      continue;
    if (g_rand_boolean(e->rng)) {
      guint v = e->tmp[k];
      gboolean up = v == 0 ? TRUE : v == nv - 1 ? FALSE : g_rand_boolean(e->rng);
      e->tmp[k] = up ? v + 1 : v - 1;
    } else {
      guint v = ts__tune_rand_below(e->rng, nv - 1);
      e->tmp[k] = v + (v >= e->tmp[k]);
    }
  }
}

static void
evolve_set_cost(gpointer state, const TsCostTarget *target, const TsCostModel *prior)
{
  Evolve *e = state;
  e->target = target;
  e->prior = prior;
}

typedef struct {
  TsTuneSeenFunc seen;
  gpointer seen_data;
  GHashTable *drawn;
} DrawSeen;

static gboolean
draw_seen(gpointer data, const TsSchedPoint *p)
{
  DrawSeen *d = data;
  return g_hash_table_contains(d->drawn, ts_sched_point_hash(p)) || d->seen(d->seen_data, p);
}

typedef struct {
  TsSchedPoint *point;
  double score;
} Scored;

static int
scored_cmp(gconstpointer a, gconstpointer b)
{
  double x = ((const Scored *)a)->score, y = ((const Scored *)b)->score;
  return x < y ? -1 : x > y; /* ascending: the best ends last */
}

/* Draws PRIOR_DRAWS unseen valid points and orders them by the prior's score. */
static gboolean
rank_by_prior(Evolve *e, TsTuneSeenFunc seen, gpointer seen_data, GError **error)
{
  g_autoptr(GHashTable) drawn = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  DrawSeen ds = {seen, seen_data, drawn};
  g_autoptr(GArray) pts = g_array_new(FALSE, FALSE, sizeof(Scored));
  while (pts->len < PRIOR_DRAWS) {
    GError *local = NULL;
    TsSchedPoint *p = ts__tune_sampler_next(e->sampler, draw_seen, &ds, &local);
    if (local) {
      for (guint i = 0; i < pts->len; i++)
        ts_sched_point_free(g_array_index(pts, Scored, i).point);
      g_propagate_error(error, local);
      return FALSE;
    }
    if (!p)
      break;
    g_hash_table_add(drawn, g_strdup(ts_sched_point_hash(p)));
    Scored sc = {p, -INFINITY};
    g_array_append_val(pts, sc);
  }
  guint nf = ts_cost_n_features(e->target);
  const char *const *names = ts_cost_feature_names(e->target);
  g_autofree float *rows = g_new(float, (gsize)MAX(pts->len, 1) * nf);
  g_autofree double *scores = g_new0(double, MAX(pts->len, 1));
  for (guint i = 0; i < pts->len; i++)
    ts_cost_features(e->target, g_array_index(pts, Scored, i).point, NULL, rows + (gsize)i * nf);
  if (ts_cost_model_predict_rows(e->prior, names, nf, rows, pts->len, scores, NULL))
    for (guint i = 0; i < pts->len; i++)
      g_array_index(pts, Scored, i).score = isfinite(scores[i]) ? scores[i] : -INFINITY;
  /* Equal scores keep the draw's (random) order: a stable sort of an array already random. */
  g_array_sort(pts, scored_cmp);
  e->ranked = g_ptr_array_new_with_free_func((GDestroyNotify)ts_sched_point_free);
  for (guint i = 0; i < pts->len; i++)
    g_ptr_array_add(e->ranked, g_array_index(pts, Scored, i).point);
  return TRUE;
}

/* The next seed still unseen and valid, or NULL (error set on an evaluation error). */
static TsSchedPoint *
take_seed(Evolve *e, TsTuneSeenFunc seen, gpointer seen_data, GError **error)
{
  while (e->seeds && e->seed_at < e->seeds->len) {
    const TsSchedPoint *p = e->seeds->pdata[e->seed_at++];
    if (seen(seen_data, p))
      continue;
    int v = ts__tune_point_valid(&e->checker, e->space, e->env, p, error);
    if (v < 0)
      return NULL;
    if (v > 0)
      return ts_sched_point_copy(p);
  }
  return NULL;
}

/* The best remaining point of the prior's ranking that is still unseen, or NULL. */
static TsSchedPoint *
take_ranked(Evolve *e, TsTuneSeenFunc seen, gpointer seen_data)
{
  while (e->ranked && e->ranked->len > 0) {
    TsSchedPoint *p = g_ptr_array_steal_index(e->ranked, e->ranked->len - 1);
    if (!seen(seen_data, p))
      return p;
    ts_sched_point_free(p);
  }
  return NULL;
}

static gboolean
evolve_propose(gpointer state, guint n, TsTuneSeenFunc seen, gpointer seen_data, GPtrArray *out,
               GError **error)
{
  Evolve *e = state;
  for (guint i = 0; i < n; i++) {
    TsSchedPoint *p = NULL;
    gboolean initial = e->n_observed + g_hash_table_size(e->pending) < POP || e->pop_len < 2;
    for (guint t = 0; !initial && !p && t < CHILD_TRIES; t++) {
      make_child(e);
      g_autoptr(TsSchedPoint) c = ts__tune_point_from_digits(e->space, e->tmp);
      if (seen(seen_data, c))
        continue;
      int v = ts__tune_point_valid(&e->checker, e->space, e->env, c, error);
      if (v < 0)
        return FALSE;
      if (v > 0)
        p = g_steal_pointer(&c);
    }
    if (!p && initial) {
      GError *local = NULL;
      p = take_seed(e, seen, seen_data, &local);
      if (local) {
        g_propagate_error(error, local);
        return FALSE;
      }
    }
    if (!p && initial && e->prior && e->target && !e->ranked &&
        !rank_by_prior(e, seen, seen_data, error))
      return FALSE;
    if (!p)
      p = take_ranked(e, seen, seen_data);
    if (!p) {
      GError *local = NULL;
      p = ts__tune_sampler_next(e->sampler, seen, seen_data, &local);
      if (local) {
        g_propagate_error(error, local);
        return FALSE;
      }
      if (!p)
        break;
    }
    gboolean in_space = ts__tune_point_digits(e->space, p, e->tmp);
    g_assert(in_space);
    g_hash_table_add(e->pending, digits_key(e, e->tmp));
    g_ptr_array_add(out, p);
  }
  return TRUE;
}

static void
evolve_observe(gpointer state, const TsSchedPoint *point, gboolean ok, double cost)
{
  Evolve *e = state;
  if (!ts__tune_point_digits(e->space, point, e->tmp))
    return;
  g_autofree char *key = digits_key(e, e->tmp);
  g_hash_table_remove(e->pending, key);
  e->n_observed++;
  double fit = ok ? cost : INFINITY;
  if (e->pop_len == POP && !(fit < e->pop[POP - 1].fit))
    return;
  /* Insertion into the sorted array; the worst member's buffer is reused. */
  guint i = e->pop_len < POP ? e->pop_len++ : POP - 1;
  guint *buf = e->pop[i].digits;
  for (; i > 0 && fit < e->pop[i - 1].fit; i--)
    e->pop[i] = e->pop[i - 1];
  e->pop[i].digits = buf;
  e->pop[i].fit = fit;
  memcpy(buf, e->tmp, e->n * sizeof(guint));
}

static guint
evolve_set_seeds(gpointer state, GPtrArray *points)
{
  Evolve *e = state;
  if (e->seeds == NULL)
    e->seeds = g_ptr_array_new_with_free_func((GDestroyNotify)ts_sched_point_free);
  for (guint i = 0; i < points->len && e->seeds->len < POP; i++)
    g_ptr_array_add(e->seeds, ts_sched_point_copy(points->pdata[i]));
  return e->seeds->len;
}

const TsTuneStrategyClass ts__tune_evolutionary_class = {
    .name = "evolutionary",
    .create = evolve_create,
    .destroy = evolve_destroy,
    .propose = evolve_propose,
    .observe = evolve_observe,
    .set_cost = evolve_set_cost,
    .set_seeds = evolve_set_seeds,
};
