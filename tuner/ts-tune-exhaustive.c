/* ts-tune-exhaustive.c — every valid point once, in index order (the first knob most
 * significant), skipping those already observed. The baseline, and the right choice when the
 * valid set is small enough to measure in full. */
#include "ts-tune-strategy-private.h"

static gpointer
exhaustive_create(const TsSchedSpace *space, const TsSchedEnv *env, GRand *rng, GError **error)
{
  /* The iterator walks the space lazily, so a 10^7-point space costs nothing up front. */
  return ts_sched_iter_new(space, env);
}

static void
exhaustive_destroy(gpointer state)
{
  ts_sched_iter_free(state);
}

static gboolean
exhaustive_propose(gpointer state, guint n, TsTuneSeenFunc seen, gpointer seen_data, GPtrArray *out,
                   GError **error)
{
  TsSchedIter *it = state;
  guint added = 0;
  TsSchedPoint *p;
  GError *local = NULL;
  while (added < n && ts_sched_iter_next(it, &p, &local)) {
    if (seen(seen_data, p)) {
      ts_sched_point_free(p);
      continue;
    }
    g_ptr_array_add(out, p);
    added++;
  }
  if (local) {
    g_propagate_error(error, local);
    return FALSE;
  }
  return TRUE;
}

const TsTuneStrategyClass ts__tune_exhaustive_class = {
    .name = "exhaustive",
    .create = exhaustive_create,
    .destroy = exhaustive_destroy,
    .propose = exhaustive_propose,
};
