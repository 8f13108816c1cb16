/* tt-strategies.c — `tessera-tune strategies [compare]`: the search strategies, and their
 * comparison on a recorded tuning file (Kernel Tuner cache or T4 results) served by the replay
 * evaluator, so strategies are judged on real GPU spaces without a GPU. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ts-cost-model.h"
#include "ts-tune-replay.h"
#include "ts-tune.h"
#include "ts-tune-strategy.h"
#include "tt-cli.h"

/* The cache key of the workload with the most trials on the backend (any, when NULL or auto). */
static const TsDbTrialKey *
find_key(GPtrArray *keys, const TsOpInstance *inst, const char *backend)
{
  g_autofree char *shape = ts_shape_to_string(ts_op_instance_shape(inst));
  g_autofree char *dtype = ts_dtype_policy_to_string(ts_op_instance_dtype(inst));
  const TsDbTrialKey *best = NULL;
  for (guint i = 0; i < keys->len; i++) {
    const TsDbTrialKey *k = keys->pdata[i];
    if (strcmp(k->op, ts_op_name(ts_op_instance_op(inst))) != 0 || strcmp(k->shape, shape) != 0 ||
        strcmp(k->dtype, dtype) != 0)
      continue;
    if (backend && strcmp(backend, "auto") != 0 && strcmp(k->device.backend, backend) != 0)
      continue;
    if (best == NULL || k->n_trials > best->n_trials)
      best = k;
  }
  return best;
}

static TsTuneReplayStatus
replay_status(TsDbTrialStatus s)
{
  switch (s) {
  case TS_DB_TRIAL_OK:
    return TS_TUNE_REPLAY_OK;
  case TS_DB_TRIAL_COMPILE_ERROR:
    return TS_TUNE_REPLAY_COMPILE_ERROR;
  case TS_DB_TRIAL_TIMEOUT:
    return TS_TUNE_REPLAY_TIMEOUT;
  case TS_DB_TRIAL_WRONG_RESULT:
    return TS_TUNE_REPLAY_WRONG_RESULT;
  default:
    return TS_TUNE_REPLAY_RUNTIME_ERROR;
  }
}

/* What measuring a trial cost: its compile and the samples' kernel time. */
static double
trial_cost_ms(const TsDbTrial *t)
{
  double ms = isfinite(t->compile_ms) ? t->compile_ms : 0;
  for (guint i = 0; t->samples_ns && i < t->samples_ns->len; i++)
    ms += g_array_index(t->samples_ns, double, i) * 1e-6;
  return ms;
}

/* `strategies compare OP --shape ...`: the workload's trials in the cache, replayed. The model
 * strategy gets the workload's cost target and a prior trained on the cache's other workloads
 * only, so its head start is what a real tune of a new shape would have. */
static int
compare_cached(const char *op, TtArgs *a)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsOpInstance) inst = tt_workload(op, a, &error);
  if (inst == NULL)
    return tt_fail(TT_EXIT_USAGE, error);
  g_autoptr(TsDb) db = tt_db(a, TS_DB_OPEN_READ_ONLY, &error);
  if (db == NULL)
    return tt_fail(tt_error_code(error), error);
  g_autoptr(GPtrArray) keys = ts_db_list_trial_keys(db, &error);
  if (keys == NULL)
    return tt_fail(tt_error_code(error), error);
  g_autofree char *what = ts_op_instance_describe(inst);
  const TsDbTrialKey *k = find_key(keys, inst, a->backend);
  if (k == NULL) {
    g_printerr("tessera-tune: %s has no trials of %s%s%s (tune it first, e.g. with --strategy "
               "exhaustive)\n",
               ts_db_path(db), what, a->backend ? " on " : "", a->backend ? a->backend : "");
    return TT_EXIT_USAGE;
  }
  TsDeviceInfo dev;
  ts_cost_key_device(k, &dev);
  g_autoptr(TsSchedSpace) space = ts_op_instance_space(inst, k->device.backend, a->space, &error);
  if (space == NULL)
    return tt_fail(TT_EXIT_USAGE, error);
  g_autoptr(TsSchedEnv) env = ts_op_instance_env(inst, &dev);
  g_autofree char *name = g_strdup_printf("%s (cache)", ts_db_path(db));
  g_autoptr(TsTuneReplay) replay = ts_tune_replay_new(space, name, k->device.name, what);
  g_autoptr(GPtrArray) trials = ts_db_list_trials(db, k->workload_id, k->device_id,
                                                  k->toolchain_id, TS_DB_ORDER_INSERTION, &error);
  if (trials == NULL)
    return tt_fail(tt_error_code(error), error);
  /* A trial stored before a knob existed is read at the knob's one value in the space */
  guint outside = 0;
  g_autoptr(GError) first_outside = NULL;
  for (guint i = 0; i < trials->len; i++) {
    const TsDbTrial *t = trials->pdata[i];
    g_autoptr(GError) why = NULL;
    g_autoptr(TsSchedPoint) parsed = ts_sched_point_parse(t->schedule, &why);
    g_autoptr(TsSchedPoint) p = parsed ? ts_sched_space_complete(space, parsed, &why) : NULL;
    if (p == NULL || !ts_tune_replay_add(replay, p, replay_status(t->status),
                                         t->median_ns * 1e-9, trial_cost_ms(t), &why)) {
      outside++;
      if (first_outside == NULL)
        first_outside = g_steal_pointer(&why);
    }
  }
  if (outside == trials->len && first_outside) {
    g_printerr("tessera-tune: none of the %u stored trials of %s is a point of the space %s; "
               "the first: %s\n",
               trials->len, what, a->space ? "given by --space" : "of the op",
               first_outside->message);
    return TT_EXIT_USAGE;
  }

  g_autofree char *peaks = ts_db_get_device_peaks(db, k->device_id, NULL);
  g_autoptr(TsProfCeilings) ceilings = peaks ? ts_prof_ceilings_from_json(peaks, NULL) : NULL;
  g_autoptr(TsCostTarget) target = ts_cost_target_new(inst, k->device.backend, &dev, ceilings);
  g_autoptr(TsCostDataset) all = ts_cost_dataset_from_db(db, k->device.backend, NULL, &error);
  if (all == NULL)
    return tt_fail(tt_error_code(error), error);
  g_autoptr(TsCostDataset) others = ts_cost_dataset_select(all, what, FALSE);
  g_autoptr(TsCostModel) prior = ts_cost_model_train(others, NULL, NULL);
  ts_tune_replay_set_context(replay, env, target, prior);
  guint n_seed_keys = 0;
  g_autoptr(GPtrArray) seeds = ts_tune_cache_seeds(db, k->workload_id, k->device_id,
                                                   k->toolchain_id, &n_seed_keys, &error);
  if (seeds == NULL)
    return tt_fail(tt_error_code(error), error);
  ts_tune_replay_set_seeds(replay, seeds);

  g_auto(GStrv) names = a->strategy ? g_strsplit(a->strategy, ",", -1) : NULL;
  g_autoptr(TsTuneReplayComparison) cmp =
    ts_tune_replay_compare_timed(replay, (const char *const *)names, (guint)a->budget,
                                 a->budget_ms, (guint)a->repeats, (guint64)a->seed, &error);
  if (cmp == NULL)
    return tt_fail(TT_EXIT_USAGE, error);
  if (a->json) {
    g_autofree char *json = ts_tune_replay_comparison_to_json(cmp);
    g_print("%s\n", json);
    return TT_EXIT_OK;
  }
  g_print("# tessera-tune strategies compare %s --shape %s --dtype '%s' --db %s --budget %d "
          "--repeats %d --seed %" G_GINT64_FORMAT "\n",
          op, k->shape, k->dtype, ts_db_path(db), a->budget, a->repeats, a->seed);
  if (prior)
    g_print("# model prior: trained on %u trials of %u other workloads (this one held out)\n",
            ts_cost_dataset_n_rows(others), ts_cost_dataset_n_groups(others));
  else
    g_print("# model prior: none (no other workload's trials); the analytic estimate ranks "
            "first\n");
  if (seeds->len)
    g_print("# seeds: %u configurations fastest for this workload on %u other device(s) or "
            "toolchain(s)\n",
            seeds->len, n_seed_keys);
  if (outside)
    g_print("# %u stored trials are not points of the space and were left out\n", outside);
  ts_tune_replay_comparison_print(cmp, stdout);
  return TT_EXIT_OK;
}

int
tt_cmd_strategies(int argc, char **argv)
{
  g_auto(TtArgs) a = {.seed = 1, .budget = -1, .repeats = 10};
  if (!tt_parse("strategies", "[compare [OP]]",
                "Without arguments, list the search strategies. 'compare' replays a recorded\n"
                "tuning file (--replay), or with OP --shape [--dtype] the workload's trials in\n"
                "the schedule cache (--db; best after an exhaustive tune), and prints, per\n"
                "strategy over --repeats seeds, the mean\n"
                "fraction of the optimum reached after --budget evaluations (optimum time / best\n"
                "time found, 1 = optimum), the worst repeat, how many repeats reached 95% of the\n"
                "optimum, the mean evaluations needed to get there, and the recorded compile and\n"
                "benchmark time those evaluations cost. With --budget-ms each evaluation is\n"
                "charged its recorded compile and benchmark time and a run stops when the\n"
                "budget is spent, as a real tune would. Unrecorded configurations count as\n"
                "failed and cost nothing. --json: the same figures as one object, with each\n"
                "repeat's evaluations to 95% (null when never reached).",
                TT_OPT_REPLAY | TT_OPT_TUNE | TT_OPT_SEED | TT_OPT_WORKLOAD | TT_OPT_DB |
                  TT_OPT_BACKEND | TT_OPT_SPACE | TT_OPT_JSON,
                &a, &argc, &argv))
    return TT_EXIT_USAGE;
  if (argc == 1) {
    for (const char *const *n = ts_tune_strategy_names(); *n; n++)
      g_print("%s\n", *n);
    return TT_EXIT_OK;
  }
  if (argc < 2 || argc > 3 || strcmp(argv[1], "compare") != 0)
    return tt_usage("strategies takes no argument, 'compare --replay FILE' or 'compare OP'");
  if ((a.replay == NULL) == (argc == 2))
    return tt_usage("strategies compare needs --replay FILE, or an OP with --shape");
  /* --budget-ms alone: time is the only limit; neither: 20 evaluations. */
  if (a.budget < 0)
    a.budget = a.budget_ms > 0 ? 0 : 20;
  if (a.budget < 0 || a.budget_ms < 0 || a.repeats <= 0 || (a.budget == 0 && a.budget_ms == 0))
    return tt_usage("--budget or --budget-ms, and --repeats, must be positive");
  if (argc == 3)
    return compare_cached(argv[2], &a);
  g_autoptr(GError) error = NULL;
  g_autoptr(TsTuneReplay) replay = ts_tune_replay_load(a.replay, &error);
  if (replay == NULL)
    return tt_fail(TT_EXIT_USAGE, error);
  /* Other devices' recordings of the kernel, learned as the model strategy's prior. */
  g_autoptr(GPtrArray) priors = g_ptr_array_new_with_free_func((GDestroyNotify)ts_tune_replay_free);
  for (char **f = a.prior; f && *f; f++) {
    TsTuneReplay *p = ts_tune_replay_load(*f, &error);
    if (p == NULL)
      return tt_fail(TT_EXIT_USAGE, error);
    g_ptr_array_add(priors, p);
  }
  g_autoptr(TsCostTarget) prior_target = NULL;
  g_autoptr(TsCostModel) prior = NULL;
  g_autoptr(GPtrArray) seeds = NULL;
  if (priors->len) {
    prior = ts_tune_replay_train_prior(replay, priors, &prior_target, &error);
    if (prior == NULL)
      return tt_fail(TT_EXIT_USAGE, error);
    ts_tune_replay_set_context(replay, NULL, prior_target, prior);
    seeds = ts_tune_replay_prior_seeds(priors, 64);
    ts_tune_replay_set_seeds(replay, seeds);
  }
  g_auto(GStrv) names = a.strategy ? g_strsplit(a.strategy, ",", -1) : NULL;
  g_autoptr(TsTuneReplayComparison) cmp =
    ts_tune_replay_compare_timed(replay, (const char *const *)names, (guint)a.budget,
                                 a.budget_ms, (guint)a.repeats, (guint64)a.seed, &error);
  if (cmp == NULL)
    return tt_fail(TT_EXIT_USAGE, error);
  if (a.json) {
    g_autofree char *json = ts_tune_replay_comparison_to_json(cmp);
    g_print("%s\n", json);
    return TT_EXIT_OK;
  }
  g_print("# tessera-tune strategies compare --replay %s --budget %d --budget-ms %.0f --repeats "
          "%d --seed %" G_GINT64_FORMAT "\n",
          a.replay, a.budget, a.budget_ms, a.repeats, a.seed);
  for (char **f = a.prior; f && *f; f++)
    g_print("# model prior: %s\n", *f);
  ts_tune_replay_comparison_print(cmp, stdout);
  return TT_EXIT_OK;
}
