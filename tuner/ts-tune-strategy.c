/* ts-tune-strategy.c — the propose/observe front of every search strategy: the class registry,
 * the record of points proposed and observed, and the checks that keep any class (built-in or
 * registered later) from repeating a point, proposing an invalid one, or stalling the search.
 *
 * Points are keyed by their digits (value index per knob of the space), so a point loaded from
 * storage matches a proposed one however its knobs were written. */
#include <math.h>
#include <string.h>

#include "ts-tune-strategy-private.h"

/* Written out rather than G_DEFINE_QUARK(ts-tune-error-quark, ...): clang-format would put
 * spaces into the stringified name. */
GQuark
ts_tune_error_quark(void)
{
  return g_quark_from_static_string("ts-tune-error-quark");
}

/* Default budget cap: annealing cools over min(valid points, 1000) evaluations, about what a
 * GPU tuning session affords at a few seconds per compiled and timed candidate. */
#define DEFAULT_BUDGET 1000
#define MAX_CLASSES 32

/* ---- registry ---- */

static GMutex registry_lock;
static TsTuneStrategyClass registry[MAX_CLASSES];
static const char *registry_names[MAX_CLASSES + 1];
static guint registry_len;

static void
register_locked(const TsTuneStrategyClass *klass)
{
  const char *name = g_intern_string(klass->name);
  guint i;
  for (i = 0; i < registry_len; i++)
    if (registry_names[i] == name)
      break;
  if (i == registry_len) {
    if (registry_len == MAX_CLASSES) {
      g_critical("tune: more than %d strategy classes; '%s' not registered", MAX_CLASSES, name);
      return;
    }
    registry_len++;
  }
  registry[i] = *klass;
  registry[i].name = name;
  registry_names[i] = name;
}

/* Built-ins first, registered the same way as any other class. */
static void
ensure_builtins_locked(void)
{
  static gboolean done;
  if (done)
    return;
  done = TRUE;
  register_locked(&ts__tune_exhaustive_class);
  register_locked(&ts__tune_random_class);
  register_locked(&ts__tune_annealing_class);
  register_locked(&ts__tune_evolutionary_class);
  register_locked(&ts__tune_model_class);
}

void
ts_tune_strategy_register(const TsTuneStrategyClass *klass)
{
  g_return_if_fail(klass != NULL && klass->name != NULL && klass->create != NULL &&
                   klass->propose != NULL);
  g_mutex_lock(&registry_lock);
  ensure_builtins_locked();
  register_locked(klass);
  g_mutex_unlock(&registry_lock);
}

const char *const *
ts_tune_strategy_names(void)
{
  g_mutex_lock(&registry_lock);
  ensure_builtins_locked();
  g_mutex_unlock(&registry_lock);
  return registry_names;
}

/* ---- the strategy ---- */

typedef struct {
  gboolean valid;
  gboolean observed;
} Entry;

struct _TsTuneStrategy {
  TsTuneStrategyClass klass; /* a copy: re-registering a name does not change live strategies */
  gpointer state;
  TsSchedSpace *space;
  const TsSchedEnv *env;
  TsSchedChecker *checker; /* made at the first check */
  GRand *rng;      /* the class's */
  GRand *safe_rng; /* the safety net's, so that it never perturbs the class's sequence */
  TsTuneSampler *safety;
  GHashTable *seen; /* digits key -> Entry */
  guint64 n_valid;  /* G_MAXUINT64 when the count overflows */
  guint64 n_seen_valid;
  guint n_observed;
  guint *digits;
};

/* Digits as a string: cheap, unique within the space. NULL for a point outside the space. */
static char *
key_of(TsTuneStrategy *s, const TsSchedPoint *point)
{
  guint n = ts_sched_space_n_knobs(s->space);
  if (!ts__tune_point_digits(s->space, point, s->digits))
    return NULL;
  GString *k = g_string_sized_new(n * 3 + 1);
  for (guint i = 0; i < n; i++)
    g_string_append_printf(k, "%u,", s->digits[i]);
  return g_string_free(k, FALSE);
}

TsTuneStrategy *
ts_tune_strategy_new(const char *name, const TsSchedSpace *space, const TsSchedEnv *env,
                     guint64 seed, GError **error)
{
  g_return_val_if_fail(name != NULL && space != NULL, NULL);
  g_mutex_lock(&registry_lock);
  ensure_builtins_locked();
  const TsTuneStrategyClass *klass = NULL;
  for (guint i = 0; i < registry_len; i++)
    if (strcmp(registry_names[i], name) == 0)
      klass = &registry[i];
  TsTuneStrategyClass copy = klass ? *klass : (TsTuneStrategyClass){0};
  if (!klass) {
    g_autofree char *known = g_strjoinv(", ", (char **)registry_names);
    g_mutex_unlock(&registry_lock);
    g_set_error(error, TS_TUNE_ERROR, TS_TUNE_ERROR_UNKNOWN_STRATEGY,
                "tune: unknown strategy '%s'; known strategies: %s", name, known);
    return NULL;
  }
  g_mutex_unlock(&registry_lock);

  guint64 n_valid = 0;
  GError *local = NULL;
  if (!ts_sched_space_count_valid(space, env, &n_valid, &local)) {
    /* Overflow is no obstacle (there are plenty of points); anything else is. */
    if (g_str_has_suffix(local->message, "overflows 64 bits")) {
      n_valid = G_MAXUINT64;
      g_clear_error(&local);
    } else {
      g_propagate_error(error, local);
      return NULL;
    }
  }
  if (n_valid == 0) {
    g_autofree char *text = ts_sched_space_to_string(space);
    g_set_error(error, TS_TUNE_ERROR, TS_TUNE_ERROR_EMPTY_SPACE,
                "tune: no point of %s satisfies its constraints", text);
    return NULL;
  }

  g_autoptr(TsTuneStrategy) s = g_new0(TsTuneStrategy, 1);
  s->klass = copy;
  s->space = ts_sched_space_copy(space);
  s->env = env;
  guint32 words[2] = {(guint32)seed, (guint32)(seed >> 32)};
  s->rng = g_rand_new_with_seed_array(words, 2);
  words[0] ^= 0x9e3779b9u; /* any fixed change gives an independent stream */
  s->safe_rng = g_rand_new_with_seed_array(words, 2);
  s->seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  s->n_valid = n_valid;
  s->digits = g_new0(guint, MAX(ts_sched_space_n_knobs(space), 1));
  s->state = s->klass.create(s->space, env, s->rng, error);
  if (!s->state)
    return NULL;
  if (s->klass.set_budget)
    s->klass.set_budget(s->state, MIN(n_valid, DEFAULT_BUDGET));
  return g_steal_pointer(&s);
}

void
ts_tune_strategy_free(TsTuneStrategy *strategy)
{
  if (!strategy)
    return;
  if (strategy->state && strategy->klass.destroy)
    strategy->klass.destroy(strategy->state);
  ts__tune_sampler_free(strategy->safety);
  g_clear_pointer(&strategy->seen, g_hash_table_unref);
  g_clear_pointer(&strategy->rng, g_rand_free);
  g_clear_pointer(&strategy->safe_rng, g_rand_free);
  ts_sched_checker_free(strategy->checker); /* before the space it reads */
  ts_sched_space_free(strategy->space);
  g_free(strategy->digits);
  g_free(strategy);
}

const char *
ts_tune_strategy_name(const TsTuneStrategy *strategy)
{
  g_return_val_if_fail(strategy != NULL, NULL);
  return strategy->klass.name;
}

guint
ts_tune_strategy_n_observed(const TsTuneStrategy *strategy)
{
  g_return_val_if_fail(strategy != NULL, 0);
  return strategy->n_observed;
}

void
ts_tune_strategy_set_budget(TsTuneStrategy *strategy, guint64 budget)
{
  g_return_if_fail(strategy != NULL);
  if (strategy->klass.set_budget)
    strategy->klass.set_budget(strategy->state, MAX(budget, 1));
}

void
ts_tune_strategy_set_cost(TsTuneStrategy *strategy, const TsCostTarget *target,
                          const TsCostModel *prior)
{
  g_return_if_fail(strategy != NULL);
  if (strategy->klass.set_cost)
    strategy->klass.set_cost(strategy->state, target, prior);
}

guint
ts_tune_strategy_set_seeds(TsTuneStrategy *strategy, GPtrArray *points)
{
  g_return_val_if_fail(strategy != NULL, 0);
  if (points == NULL || points->len == 0 || strategy->klass.set_seeds == NULL)
    return 0;
  /* Rebuilt from digits: the same canonical points (and hashes) as the class's own; points
   * outside the space go here. */
  g_autoptr(GPtrArray) own = g_ptr_array_new_with_free_func((GDestroyNotify)ts_sched_point_free);
  for (guint i = 0; i < points->len; i++)
    if (ts__tune_point_digits(strategy->space, points->pdata[i], strategy->digits))
      g_ptr_array_add(own, ts__tune_point_from_digits(strategy->space, strategy->digits));
  return own->len ? strategy->klass.set_seeds(strategy->state, own) : 0;
}

GPtrArray *
ts_tune_seeds_interleave(GPtrArray *rankings, guint n)
{
  g_return_val_if_fail(rankings != NULL, NULL);
  GPtrArray *seeds = g_ptr_array_new_with_free_func((GDestroyNotify)ts_sched_point_free);
  g_autoptr(GHashTable) taken = g_hash_table_new(g_str_hash, g_str_equal);
  gboolean any = TRUE;
  for (guint k = 0; any && seeds->len < n; k++) {
    any = FALSE;
    for (guint r = 0; r < rankings->len && seeds->len < n; r++) {
      GPtrArray *ranking = rankings->pdata[r];
      if (k >= ranking->len)
        continue;
      any = TRUE;
      const TsSchedPoint *p = ranking->pdata[k];
      /* The hash belongs to the point, which outlives the table. */
      if (g_hash_table_add(taken, (gpointer)ts_sched_point_hash(p)))
        g_ptr_array_add(seeds, ts_sched_point_copy(p));
    }
  }
  return seeds;
}

/* What the class's seen() sees: the record, plus the points it has appended to out in this call
 * (taken in lazily, so a class need not track its own batch). */
typedef struct {
  TsTuneStrategy *s;
  GPtrArray *out;
  guint absorbed;
  GHashTable *batch;
} SeenCtx;

static gboolean
ctx_seen(gpointer data, const TsSchedPoint *point)
{
  SeenCtx *c = data;
  for (; c->out && c->absorbed < c->out->len; c->absorbed++) {
    char *k = key_of(c->s, c->out->pdata[c->absorbed]);
    if (k)
      g_hash_table_add(c->batch, k);
  }
  g_autofree char *key = key_of(c->s, point);
  if (!key)
    return TRUE; /* outside the space: never to be proposed */
  return g_hash_table_contains(c->s->seen, key) || g_hash_table_contains(c->batch, key);
}

/* Accepts p into out if it is a new valid point of the space; takes p. -1 on error. */
static int
accept(TsTuneStrategy *s, TsSchedPoint *p, GPtrArray *out, GError **error)
{
  g_autoptr(TsSchedPoint) owned = p;
  char *key = key_of(s, p);
  if (!key || g_hash_table_contains(s->seen, key)) {
    g_free(key);
    return 0;
  }
  int v = ts__tune_point_valid(&s->checker, s->space, s->env, p, error);
  if (v <= 0) {
    g_free(key);
    return v;
  }
  Entry *e = g_new0(Entry, 1);
  e->valid = TRUE;
  g_hash_table_insert(s->seen, key, e);
  s->n_seen_valid++;
  g_ptr_array_add(out, g_steal_pointer(&owned));
  return 1;
}

GPtrArray *
ts_tune_strategy_propose(TsTuneStrategy *strategy, guint n, GError **error)
{
  g_return_val_if_fail(strategy != NULL, NULL);
  TsTuneStrategy *s = strategy;
  g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)ts_sched_point_free);
  if (n == 0 || s->n_seen_valid >= s->n_valid)
    return g_steal_pointer(&out);

  g_autoptr(GPtrArray) raw = g_ptr_array_new_with_free_func((GDestroyNotify)ts_sched_point_free);
  g_autoptr(GHashTable) batch = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  SeenCtx ctx = {s, raw, 0, batch};
  if (!s->klass.propose(s->state, n, ctx_seen, &ctx, raw, error))
    return NULL;
  for (guint i = 0; i < raw->len && out->len < n; i++)
    if (accept(s, g_steal_pointer(&raw->pdata[i]), out, error) < 0)
      return NULL;

  /* The safety net: a class that found nothing while unseen valid points remain would stall
   * the driver, so draw uniformly random ones instead. */
  if (out->len == 0) {
    if (!s->safety)
      s->safety = ts__tune_sampler_new(s->space, s->env, s->safe_rng);
    SeenCtx none = {s, NULL, 0, batch};
    while (out->len < n && s->n_seen_valid < s->n_valid) {
      GError *local = NULL;
      TsSchedPoint *p = ts__tune_sampler_next(s->safety, ctx_seen, &none, &local);
      if (!p) {
        if (local) {
          g_propagate_error(error, local);
          return NULL;
        }
        break;
      }
      if (accept(s, p, out, error) < 0)
        return NULL;
    }
  }
  return g_steal_pointer(&out);
}

void
ts_tune_strategy_observe(TsTuneStrategy *strategy, const TsSchedPoint *point, gboolean ok,
                         double cost)
{
  g_return_if_fail(strategy != NULL && point != NULL);
  TsTuneStrategy *s = strategy;
  char *key = key_of(s, point);
  if (!key)
    return;
  Entry *e = g_hash_table_lookup(s->seen, key);
  if (e && e->observed) {
    g_free(key);
    return;
  }
  if (!e) {
    /* Loaded from storage (or measured outside the strategy): its validity under this env is
     * not known yet. A point that fails the check is recorded, so never proposed, but not
     * shown to the class, which only reasons about valid points. */
    e = g_new0(Entry, 1);
    g_autoptr(TsSchedPoint) canon = ts__tune_point_from_digits(s->space, s->digits);
    e->valid = ts__tune_point_valid(&s->checker, s->space, s->env, canon, NULL) > 0;
    g_hash_table_insert(s->seen, key, e);
    if (e->valid)
      s->n_seen_valid++;
  } else {
    g_free(key);
  }
  e->observed = TRUE;
  s->n_observed++;
  if (isnan(cost))
    ok = FALSE;
  if (e->valid && s->klass.observe)
    s->klass.observe(s->state, point, ok, cost);
}
