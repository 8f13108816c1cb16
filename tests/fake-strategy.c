/* fake-strategy.c — TEST ONLY. A minimal deterministic "exhaustive" and "random" behind
 * ts-tune-strategy.h, so test-replay builds and runs while the real strategies live on another
 * branch. Linked into test-replay alone; drop it when the real tuner/ts-tune-strategy.c is merged
 * (test-replay's assertions hold for the real strategies too). */
#include <string.h>

#include "ts-tune-strategy.h"

G_DEFINE_QUARK(ts - tune - error - quark, ts_tune_error)

struct _TsTuneStrategy {
  char *name;
  GPtrArray *order; /* every valid point, in the order this strategy proposes them */
  guint next;
  GHashTable *seen; /* point hash -> NULL: proposed or observed */
  guint n_observed;
};

static const char *const fake_names[] = {"exhaustive", "random", NULL};

const char *const *
ts_tune_strategy_names(void)
{
  return fake_names;
}

void
ts_tune_strategy_register(const TsTuneStrategyClass *klass)
{
  (void)klass; /* the fake knows only its two */
}

TsTuneStrategy *
ts_tune_strategy_new(const char *name, const TsSchedSpace *space, const TsSchedEnv *env,
                     guint64 seed, GError **error)
{
  g_return_val_if_fail(name != NULL && space != NULL, NULL);
  gboolean random = strcmp(name, "random") == 0;
  if (!random && strcmp(name, "exhaustive") != 0) {
    g_set_error(error, TS_TUNE_ERROR, TS_TUNE_ERROR_UNKNOWN_STRATEGY,
                "unknown strategy '%s' (known: exhaustive, random)", name);
    return NULL;
  }
  TsTuneStrategy *s = g_new0(TsTuneStrategy, 1);
  s->name = g_strdup(name);
  s->order = g_ptr_array_new_with_free_func((GDestroyNotify)ts_sched_point_free);
  s->seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr(TsSchedIter) it = ts_sched_iter_new(space, env);
  TsSchedPoint *p;
  while (ts_sched_iter_next(it, &p, NULL))
    g_ptr_array_add(s->order, p);
  if (random) {
    /* Fisher-Yates with a seeded GRand: deterministic for a seed */
    g_autoptr(GRand) rng = g_rand_new_with_seed((guint32)(seed ^ (seed >> 32)));
    for (guint i = s->order->len; i > 1; i--) {
      guint j = (guint)g_rand_int_range(rng, 0, (gint32)i);
      gpointer t = s->order->pdata[i - 1];
      s->order->pdata[i - 1] = s->order->pdata[j];
      s->order->pdata[j] = t;
    }
  }
  return s;
}

void
ts_tune_strategy_free(TsTuneStrategy *strategy)
{
  if (!strategy)
    return;
  g_free(strategy->name);
  g_ptr_array_unref(strategy->order);
  g_hash_table_unref(strategy->seen);
  g_free(strategy);
}

const char *
ts_tune_strategy_name(const TsTuneStrategy *strategy)
{
  g_return_val_if_fail(strategy != NULL, NULL);
  return strategy->name;
}

GPtrArray *
ts_tune_strategy_propose(TsTuneStrategy *strategy, guint n, GError **error)
{
  g_return_val_if_fail(strategy != NULL, NULL);
  GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)ts_sched_point_free);
  while (out->len < n && strategy->next < strategy->order->len) {
    const TsSchedPoint *p = strategy->order->pdata[strategy->next++];
    if (g_hash_table_add(strategy->seen, g_strdup(ts_sched_point_hash(p))))
      g_ptr_array_add(out, ts_sched_point_copy(p));
  }
  return out;
}

void
ts_tune_strategy_observe(TsTuneStrategy *strategy, const TsSchedPoint *point, gboolean ok,
                         double cost)
{
  g_return_if_fail(strategy != NULL && point != NULL);
  g_hash_table_add(strategy->seen, g_strdup(ts_sched_point_hash(point)));
  strategy->n_observed++;
}

guint
ts_tune_strategy_n_observed(const TsTuneStrategy *strategy)
{
  g_return_val_if_fail(strategy != NULL, 0);
  return strategy->n_observed;
}
