/* ts-tune-replay-prior.c — what other GPUs taught: recordings of the same kernel on other
 * devices, turned into a learned ranking prior for replaying (or tuning) it on this one.
 *
 * The ranking model sees each configuration as the raw values of the space's knobs (a generic
 * cost target: a recorded kernel has no op behind it) and learns, per file, which
 * configurations are faster than which (pairwise ranking, so a GPU twice as fast teaches the
 * same order). Failed configurations rank below every working one of their file: a block
 * size that does not launch on one GPU rarely launches on its sibling. */
#include "ts-tune-replay-private.h"

#include <math.h>

#include "ts-cost-model.h"
#include "ts-cost.h"
#include "ts-tune-strategy.h"

TsCostModel *
ts_tune_replay_train_prior(const TsTuneReplay *replay, GPtrArray *priors, TsCostTarget **target,
                           GError **error)
{
  g_return_val_if_fail(replay != NULL && priors != NULL && target != NULL, NULL);
  const TsSchedSpace *space = ts_tune_replay_space(replay);
  g_autoptr(TsCostTarget) t = ts_cost_target_new_generic(space, ts_tune_replay_device(replay));
  g_autoptr(TsCostDataset) data = ts_cost_dataset_new();
  guint nf = ts_cost_n_features(t);
  const char *const *names = ts_cost_feature_names(t);
  g_autofree float *row = g_new(float, MAX(nf, 1));
  for (guint f = 0; f < priors->len; f++) {
    const TsTuneReplay *p = g_ptr_array_index(priors, f);
    const TsSchedSpace *ps = ts_tune_replay_space(p);
    for (guint k = 0; k < ts_sched_space_n_knobs(space); k++) {
      const char *knob = ts_sched_space_knob_name(space, k);
      if (ts_sched_space_knob_index(ps, knob) < 0) {
        g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_FORMAT,
                    "%s cannot teach %s: it has no knob '%s' (a recording of another kernel?)",
                    p->name, replay->name, knob);
        return NULL;
      }
    }
    g_autofree char *group = g_strdup_printf("%s @ %s", p->name,
                                             p->device ? p->device : "(unnamed device)");
    for (guint i = 0; i < ts_tune_replay_n_recorded(p); i++) {
      const TsSchedPoint *pt = ts_tune_replay_recorded_point(p, i);
      TsTuneReplayResult r;
      gboolean ok = ts_tune_replay_lookup(p, pt, &r);
      if (r.status == TS_TUNE_REPLAY_NOT_RECORDED)
        continue;
      ts_cost_features(t, pt, NULL, row);
      ts_cost_dataset_add(data, group, names, row, nf, ok ? r.time_s : INFINITY);
    }
  }
  TsCostModel *model = ts_cost_model_train(data, NULL, error);
  if (model == NULL) {
    g_prefix_error(error, "training a prior for %s: ", replay->name);
    return NULL;
  }
  *target = g_steal_pointer(&t);
  return model;
}

static int
by_time(gconstpointer a, gconstpointer b)
{
  const TsReplayEntry *x = *(TsReplayEntry *const *)a, *y = *(TsReplayEntry *const *)b;
  return (x->time_s > y->time_s) - (x->time_s < y->time_s);
}

GPtrArray *
ts_tune_replay_prior_seeds(GPtrArray *priors, guint n)
{
  g_return_val_if_fail(priors != NULL, NULL);
  g_autoptr(GPtrArray) rankings = g_ptr_array_new_with_free_func((GDestroyNotify)g_ptr_array_unref);
  for (guint f = 0; f < priors->len; f++) {
    const TsTuneReplay *p = g_ptr_array_index(priors, f);
    g_autoptr(GPtrArray) ok = g_ptr_array_new();
    for (guint i = 0; i < p->entries->len; i++) {
      TsReplayEntry *e = p->entries->pdata[i];
      if (e->status == TS_TUNE_REPLAY_OK && isfinite(e->time_s))
        g_ptr_array_add(ok, e);
    }
    g_ptr_array_sort(ok, by_time);
    GPtrArray *points = g_ptr_array_sized_new(ok->len); /* borrowed from the recording */
    for (guint i = 0; i < ok->len; i++)
      g_ptr_array_add(points, ((TsReplayEntry *)ok->pdata[i])->point);
    g_ptr_array_add(rankings, points);
  }
  return ts_tune_seeds_interleave(rankings, n);
}
