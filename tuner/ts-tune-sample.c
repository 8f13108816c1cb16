/* ts-tune-sample.c — helpers every strategy needs: points as value indices per knob, validity,
 * and a uniform sampler of the valid points not yet seen that never materialises a large space.
 *
 * Why not ts_sched_space_sample(): it draws distinct points within one call but knows nothing of
 * the points proposed or observed before, and a strategy must never repeat one. The sampler below
 * uses the same two regimes — rejection on the digits while acceptance is reasonable, one
 * enumeration of the valid set when it is not — but rejects seen points too. */
#include <string.h>

#include "ts-tune-strategy-private.h"

static gboolean
value_equal(TsSchedValue a, TsSchedValue b)
{
  if (a.kind != b.kind)
    return FALSE;
  return a.kind == TS_SCHED_INT ? a.i == b.i : g_strcmp0(a.s, b.s) == 0;
}

gboolean
ts__tune_point_digits(const TsSchedSpace *space, const TsSchedPoint *point, guint *digits)
{
  g_assert(space != NULL && point != NULL);
  guint n = ts_sched_space_n_knobs(space), np = ts_sched_point_n_knobs(point);
  for (guint k = 0; k < n; k++) {
    const char *name = ts_sched_space_knob_name(space, k);
    guint i;
    for (i = 0; i < np; i++)
      if (strcmp(ts_sched_point_knob_name(point, i), name) == 0)
        break;
    guint nv = ts_sched_space_n_values(space, k), j;
    if (i == np) {
      /* a point stored before the knob existed: at its one value (ts_sched_space_complete) */
      if (nv != 1)
        return FALSE;
      digits[k] = 0;
      continue;
    }
    TsSchedValue v = ts_sched_point_knob_value(point, i);
    for (j = 0; j < nv; j++)
      if (value_equal(v, ts_sched_space_value(space, k, j)))
        break;
    if (j == nv)
      return FALSE;
    digits[k] = j;
  }
  return TRUE;
}

TsSchedPoint *
ts__tune_point_from_digits(const TsSchedSpace *space, const guint *digits)
{
  g_assert(space != NULL);
  TsSchedPoint *p = ts_sched_point_new();
  for (guint k = 0; k < ts_sched_space_n_knobs(space); k++) {
    TsSchedValue v = ts_sched_space_value(space, k, digits[k]);
    const char *name = ts_sched_space_knob_name(space, k);
    if (v.kind == TS_SCHED_INT)
      ts_sched_point_set_int(p, name, v.i);
    else
      ts_sched_point_set_str(p, name, v.s);
  }
  return p;
}

int
ts__tune_point_valid(TsSchedChecker **checker, const TsSchedSpace *space, const TsSchedEnv *env,
                     const TsSchedPoint *point, GError **error)
{
  gboolean valid = FALSE;
  if (!*checker && !(*checker = ts_sched_checker_new(space, env, error)))
    return -1;
  if (!ts_sched_checker_check(*checker, point, &valid, error))
    return -1;
  return valid ? 1 : 0;
}

guint
ts__tune_rand_below(GRand *rng, guint n)
{
  g_assert(n >= 1 && n <= G_MAXINT32);
  return (guint)g_rand_int_range(rng, 0, (gint32)n);
}

struct _TsTuneSampler {
  const TsSchedSpace *space;
  const TsSchedEnv *env;
  TsSchedChecker *checker; /* made at the first check */
  GRand *rng;
  guint n;
  guint *digits;
  /* Acceptance over a window that halves every 1024 draws, so that a space filling up with
   * seen points is noticed and not averaged away by the easy early draws. */
  guint attempts, accepted;
  /* Enumeration mode: indices of the valid points unseen when it started, consumed by an
   * incremental Fisher-Yates shuffle (pool[0..taken) drawn). 8 bytes per point, built only when
   * fewer than 1 draw in 20 is accepted, i.e. when the unseen valid set is a small part of the
   * space. */
  gboolean enumerated;
  gboolean too_many; /* acceptance is low but the valid points are too many to enumerate */
  GArray *pool;
  guint64 taken;
};

TsTuneSampler *
ts__tune_sampler_new(const TsSchedSpace *space, const TsSchedEnv *env, GRand *rng)
{
  g_assert(space != NULL && rng != NULL);
  TsTuneSampler *s = g_new0(TsTuneSampler, 1);
  s->space = space;
  s->env = env;
  s->rng = rng;
  s->n = ts_sched_space_n_knobs(space);
  s->digits = g_new0(guint, MAX(s->n, 1));
  return s;
}

void
ts__tune_sampler_free(TsTuneSampler *sampler)
{
  if (!sampler)
    return;
  if (sampler->pool)
    g_array_unref(sampler->pool);
  ts_sched_checker_free(sampler->checker);
  g_free(sampler->digits);
  g_free(sampler);
}

/* Builds the pool; FALSE on error. Spaces whose size overflows 64 bits have no index: their
 * pool stays NULL and next() falls back to the first unseen point in index order. */
static gboolean
enumerate(TsTuneSampler *s, TsTuneSeenFunc seen, gpointer seen_data, GError **error)
{
  s->enumerated = TRUE;
  if (!ts_sched_space_size(s->space, NULL))
    return TRUE;
  s->pool = g_array_new(FALSE, FALSE, sizeof(guint64));
  g_autoptr(TsSchedIter) it = ts_sched_iter_new(s->space, s->env);
  TsSchedPoint *p;
  GError *local = NULL;
  while (ts_sched_iter_next(it, &p, &local)) {
    guint64 idx;
    if (!seen(seen_data, p) && ts_sched_space_index_of(s->space, p, &idx))
      g_array_append_val(s->pool, idx);
    ts_sched_point_free(p);
  }
  if (local) {
    g_propagate_error(error, local);
    return FALSE;
  }
  return TRUE;
}

static TsSchedPoint *
next_in_order(TsTuneSampler *s, TsTuneSeenFunc seen, gpointer seen_data, GError **error)
{
  g_autoptr(TsSchedIter) it = ts_sched_iter_new(s->space, s->env);
  TsSchedPoint *p;
  while (ts_sched_iter_next(it, &p, error)) {
    if (!seen(seen_data, p))
      return p;
    ts_sched_point_free(p);
  }
  return NULL;
}

/* Enumeration keeps 8 bytes per unseen valid point and walks them all: fine for a few million
 * (the constraint plans prune the invalid ones as they go), not for 10^8 (seconds to minutes
 * and a pool of a gigabyte). A space with more valid points keeps drawing. */
#define MAX_POOL (G_GUINT64_CONSTANT(1) << 22)
/* Draws one proposal may take before it gives up: when a space has over MAX_POOL valid points
 * but they are rarer than 1 in 10^6 draws, sampling cannot find them in useful time. */
#define MAX_DRAWS (1u << 20)

static gboolean
enumerable(TsTuneSampler *s)
{
  guint64 n_valid = 0;
  return ts_sched_space_count_valid(s->space, s->env, &n_valid, NULL) && n_valid <= MAX_POOL;
}

TsSchedPoint *
ts__tune_sampler_next(TsTuneSampler *s, TsTuneSeenFunc seen, gpointer seen_data, GError **error)
{
  g_assert(s != NULL && seen != NULL);
  guint draws = 0;
  while (!s->enumerated) {
    if (s->attempts >= 64 && (guint64)s->accepted * 20 < s->attempts && !s->too_many &&
        enumerable(s)) {
      if (!enumerate(s, seen, seen_data, error))
        return NULL;
      break;
    }
    if (s->attempts >= 64 && (guint64)s->accepted * 20 < s->attempts)
      s->too_many = TRUE; /* counted once: enumerable() said no */
    if (++draws > MAX_DRAWS) {
      g_autofree char *text = ts_sched_space_to_string(s->space);
      g_set_error(error, TS_TUNE_ERROR, TS_TUNE_ERROR_FAILED,
                  "no unseen valid point in %u random draws from %s: its valid points are too "
                  "sparse to sample and too many (over %" G_GUINT64_FORMAT ") to enumerate; "
                  "narrow its knobs' values", MAX_DRAWS, text, MAX_POOL);
      return NULL;
    }
    if (s->attempts >= 1024) {
      s->attempts /= 2;
      s->accepted /= 2;
    }
    s->attempts++;
    for (guint k = 0; k < s->n; k++)
      s->digits[k] = ts__tune_rand_below(s->rng, ts_sched_space_n_values(s->space, k));
    g_autoptr(TsSchedPoint) p = ts__tune_point_from_digits(s->space, s->digits);
    /* Seen first: it is a hash lookup, the constraint check runs the constraints. */
    if (seen(seen_data, p))
      continue;
    int v = ts__tune_point_valid(&s->checker, s->space, s->env, p, error);
    if (v < 0)
      return NULL;
    if (v == 0)
      continue;
    s->accepted++;
    return g_steal_pointer(&p);
  }
  if (!s->pool)
    return next_in_order(s, seen, seen_data, error);
  guint64 *pool = (guint64 *)(void *)s->pool->data;
  while (s->taken < s->pool->len) {
    guint64 left = s->pool->len - s->taken;
    guint64 j = s->taken + (left <= G_MAXINT32
                                ? ts__tune_rand_below(s->rng, (guint)left)
                                : ((guint64)g_rand_int(s->rng) << 32 | g_rand_int(s->rng)) % left);
    guint64 tmp = pool[j];
    pool[j] = pool[s->taken];
    pool[s->taken++] = tmp;
    TsSchedPoint *p = ts_sched_space_point_at(s->space, tmp);
    if (!seen(seen_data, p))
      return p;
    ts_sched_point_free(p);
  }
  return NULL;
}
