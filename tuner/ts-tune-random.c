/* ts-tune-random.c — uniform random search without replacement over the valid points: the
 * baseline every other strategy has to beat (Bergstra & Bengio 2012 show it is a hard one in
 * spaces where few knobs matter). Scales to 10^7-point spaces: points are drawn per knob and
 * rejected when invalid or seen; the valid set is enumerated only once acceptance drops below
 * 1 in 20 (see ts-tune-sample.c). */
#include "ts-tune-strategy-private.h"

static gpointer
random_create(const TsSchedSpace *space, const TsSchedEnv *env, GRand *rng, GError **error)
{
  return ts__tune_sampler_new(space, env, rng);
}

static void
random_destroy(gpointer state)
{
  ts__tune_sampler_free(state);
}

static gboolean
random_propose(gpointer state, guint n, TsTuneSeenFunc seen, gpointer seen_data, GPtrArray *out,
               GError **error)
{
  for (guint i = 0; i < n; i++) {
    GError *local = NULL;
    TsSchedPoint *p = ts__tune_sampler_next(state, seen, seen_data, &local);
    if (local) {
      g_propagate_error(error, local);
      return FALSE;
    }
    if (!p)
      break;
    g_ptr_array_add(out, p);
  }
  return TRUE;
}

const TsTuneStrategyClass ts__tune_random_class = {
    .name = "random",
    .create = random_create,
    .destroy = random_destroy,
    .propose = random_propose,
};
