/* ts-tune-anneal.c — simulated annealing over the knob neighbourhood, after Kernel Tuner's
 * simulated_annealing strategy (van Werkhoven et al., "Kernel Tuner", FGCS 2019; Schoonhoven et
 * al., "Benchmarking optimization algorithms for auto-tuning GPU kernels", 2022).
 *
 * A move changes one knob: to an adjacent value in its list (70%: tuning landscapes are locally
 * smooth in tile sizes and stage counts) or to any other value (30%: string and unordered knobs).
 * A move onto an invalid or seen point is re-drawn; after 4 x knobs + 8 draws the whole
 * one-knob neighbourhood is scanned in random order, and if every neighbour is seen or invalid
 * the chain is stuck and restarts from a uniformly random unseen valid point.
 *
 * Acceptance is Metropolis on log(cost): a worse point is taken with probability
 * exp(-(log new - log old) / T), so the rule does not depend on the unit of the cost and a 10%
 * slowdown weighs the same on a 10 us and a 10 ms kernel (Kernel Tuner uses the relative
 * difference, the same to first order). A failed point is never moved to, except from a start
 * that failed itself (Kernel Tuner's rule). T cools geometrically from 1 to 0.01 over the
 * budget, counted in evaluations, and stays at 0.01 after it: at T = 1 a 2x slower point is
 * accepted half the time, at 0.01 a 1% slower one a third of the time.
 *
 * Batches: a batch of n advances n independent chains by one step each (chains are created as
 * batches need them, at most 64; a larger batch is topped up with random points). Walking n
 * steps of one chain would need the costs of the first n - 1, which a batch does not have.
 * Costs are times, so positive; a cost <= 0 counts as the smallest positive double. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "ts-tune-strategy-private.h"

#define MAX_CHAINS 64
#define ADJACENT_P 0.7
#define T_START 1.0
#define T_END 0.01

typedef struct {
  gboolean has_pos;
  guint *pos;
  double cost; /* log cost of pos; INFINITY when it failed */
  gboolean pending;
  guint *cand; /* the point proposed from pos, awaiting its cost */
} Chain;

typedef struct {
  const TsSchedSpace *space;
  const TsSchedEnv *env;
  TsSchedChecker *checker; /* made at the first check */
  GRand *rng;
  TsTuneSampler *sampler;
  guint n;
  GPtrArray *chains;
  guint64 budget, evals;
  gboolean has_best;
  guint *best;
  double best_cost;
  guint *tmp;
  GArray *moves; /* scratch for the neighbourhood scan: (knob, value) pairs */
} Anneal;

static void
chain_free(gpointer data)
{
  Chain *c = data;
  g_free(c->pos);
  g_free(c->cand);
  g_free(c);
}

static gpointer
anneal_create(const TsSchedSpace *space, const TsSchedEnv *env, GRand *rng, GError **error)
{
  Anneal *a = g_new0(Anneal, 1);
  a->space = space;
  a->env = env;
  a->rng = rng;
  a->sampler = ts__tune_sampler_new(space, env, rng);
  a->n = ts_sched_space_n_knobs(space);
  a->chains = g_ptr_array_new_with_free_func(chain_free);
  a->budget = 1;
  a->best = g_new0(guint, MAX(a->n, 1));
  a->best_cost = INFINITY;
  a->tmp = g_new0(guint, MAX(a->n, 1));
  a->moves = g_array_new(FALSE, FALSE, sizeof(guint) * 2);
  return a;
}

static void
anneal_destroy(gpointer state)
{
  Anneal *a = state;
  if (!a)
    return;
  ts__tune_sampler_free(a->sampler);
  ts_sched_checker_free(a->checker);
  g_ptr_array_unref(a->chains);
  g_free(a->best);
  g_free(a->tmp);
  g_array_unref(a->moves);
  g_free(a);
}

static void
anneal_set_budget(gpointer state, guint64 budget)
{
  Anneal *a = state;
  a->budget = MAX(budget, 1);
}

static double
temperature(const Anneal *a)
{
  double f = MIN(1.0, (double)a->evals / (double)a->budget);
  return T_START * pow(T_END / T_START, f);
}

/* a->tmp is a candidate: returns it as a point if unseen and valid. *err on an eval error. */
static TsSchedPoint *
try_candidate(Anneal *a, TsTuneSeenFunc seen, gpointer seen_data, int *err, GError **error)
{
  g_autoptr(TsSchedPoint) p = ts__tune_point_from_digits(a->space, a->tmp);
  if (seen(seen_data, p))
    return NULL;
  int v = ts__tune_point_valid(&a->checker, a->space, a->env, p, error);
  if (v < 0)
    *err = 1;
  return v > 0 ? g_steal_pointer(&p) : NULL;
}

/* An unseen valid neighbour of pos, or NULL when stuck (or *err set). */
static TsSchedPoint *
neighbour(Anneal *a, const guint *pos, TsTuneSeenFunc seen, gpointer seen_data, int *err,
          GError **error)
{
  guint movable = 0;
  for (guint k = 0; k < a->n; k++)
    movable += ts_sched_space_n_values(a->space, k) > 1;
  if (movable == 0)
    return NULL;
  for (guint t = 0; t < 4 * a->n + 8; t++) {
    guint pick = ts__tune_rand_below(a->rng, movable), k = 0;
    for (;; k++)
      if (ts_sched_space_n_values(a->space, k) > 1 && pick-- == 0)
        break;
    guint nv = ts_sched_space_n_values(a->space, k), v;
    if (g_rand_double(a->rng) < ADJACENT_P) {
      gboolean up = g_rand_boolean(a->rng);
      if (pos[k] == 0)
        up = TRUE;
      else if (pos[k] == nv - 1)
        up = FALSE;
      v = up ? pos[k] + 1 : pos[k] - 1;
    } else {
      v = ts__tune_rand_below(a->rng, nv - 1);
      v += v >= pos[k]; /* any value but the current one */
    }
    memcpy(a->tmp, pos, a->n * sizeof(guint));
    a->tmp[k] = v;
    TsSchedPoint *p = try_candidate(a, seen, seen_data, err, error);
    if (p || *err)
      return p;
  }
  /* Random draws keep hitting seen or invalid points: scan the neighbourhood, in random order
   * so that the scan does not bias the walk towards low knobs. */
  g_array_set_size(a->moves, 0);
  for (guint k = 0; k < a->n; k++)
    for (guint v = 0; v < ts_sched_space_n_values(a->space, k); v++)
      if (v != pos[k]) {
        guint kv[2] = {k, v};
        g_array_append_val(a->moves, kv);
      }
  guint *mv = (guint *)(void *)a->moves->data;
  for (guint i = 0; i < a->moves->len; i++) {
    guint j = i + ts__tune_rand_below(a->rng, a->moves->len - i);
    guint k = mv[2 * j], v = mv[2 * j + 1];
    mv[2 * j] = mv[2 * i];
    mv[2 * j + 1] = mv[2 * i + 1];
    mv[2 * i] = k;
    mv[2 * i + 1] = v;
    memcpy(a->tmp, pos, a->n * sizeof(guint));
    a->tmp[k] = v;
    TsSchedPoint *p = try_candidate(a, seen, seen_data, err, error);
    if (p || *err)
      return p;
  }
  return NULL;
}

static Chain *
chain_new(Anneal *a)
{
  Chain *c = g_new0(Chain, 1);
  c->pos = g_new0(guint, MAX(a->n, 1));
  c->cand = g_new0(guint, MAX(a->n, 1));
  c->cost = INFINITY;
  /* On resume the first chain continues from the best point stored rather than a random one. */
  if (a->chains->len == 0 && a->has_best) {
    memcpy(c->pos, a->best, a->n * sizeof(guint));
    c->cost = a->best_cost;
    c->has_pos = TRUE;
  }
  return c;
}

static gboolean
anneal_propose(gpointer state, guint n, TsTuneSeenFunc seen, gpointer seen_data, GPtrArray *out,
               GError **error)
{
  Anneal *a = state;
  while (a->chains->len < MIN(n, MAX_CHAINS))
    g_ptr_array_add(a->chains, chain_new(a));
  for (guint i = 0; i < n; i++) {
    Chain *c = i < a->chains->len ? a->chains->pdata[i] : NULL;
    TsSchedPoint *p = NULL;
    int err = 0;
    if (c && c->has_pos) {
      p = neighbour(a, c->pos, seen, seen_data, &err, error);
      if (err)
        return FALSE;
      if (!p)
        c->has_pos = FALSE; /* stuck: every neighbour seen or invalid; restart */
    }
    if (!p) {
      GError *local = NULL;
      p = ts__tune_sampler_next(a->sampler, seen, seen_data, &local);
      if (local) {
        g_propagate_error(error, local);
        return FALSE;
      }
      if (!p)
        break; /* nothing left anywhere */
    }
    if (c) {
      gboolean in_space = ts__tune_point_digits(a->space, p, c->cand);
      g_assert(in_space);
      c->pending = TRUE;
    }
    g_ptr_array_add(out, p);
  }
  return TRUE;
}

static void
anneal_observe(gpointer state, const TsSchedPoint *point, gboolean ok, double cost)
{
  Anneal *a = state;
  if (!ts__tune_point_digits(a->space, point, a->tmp))
    return;
  a->evals++;
  double lc = ok ? log(MAX(cost, DBL_MIN)) : INFINITY;
  if (ok && lc < a->best_cost) {
    a->has_best = TRUE;
    a->best_cost = lc;
    memcpy(a->best, a->tmp, a->n * sizeof(guint));
  }
  for (guint i = 0; i < a->chains->len; i++) {
    Chain *c = a->chains->pdata[i];
    if (!c->pending || memcmp(c->cand, a->tmp, a->n * sizeof(guint)) != 0)
      continue;
    c->pending = FALSE;
    gboolean move;
    if (!c->has_pos || isinf(c->cost))
      move = TRUE; /* a (re)start, or moving off a failed start */
    else if (isinf(lc))
      move = FALSE;
    else if (lc <= c->cost)
      move = TRUE;
    else
      move = g_rand_double(a->rng) < exp(-(lc - c->cost) / temperature(a));
    if (move) {
      memcpy(c->pos, c->cand, a->n * sizeof(guint));
      c->cost = lc;
      c->has_pos = TRUE;
    }
    break;
  }
}

const TsTuneStrategyClass ts__tune_annealing_class = {
    .name = "annealing",
    .create = anneal_create,
    .destroy = anneal_destroy,
    .propose = anneal_propose,
    .observe = anneal_observe,
    .set_budget = anneal_set_budget,
};
