/* ts-tune-replay-compare.c — strategy comparison on a recorded space: drives each strategy
 * through ts_tune_strategy_new/propose/observe against the replay for a fixed number of counted
 * evaluations and several seeds, and prints the table. How unrecorded points are counted is
 * explained under "Validity" in ts-tune-replay.h. */
#include "ts-tune-replay-private.h"

#include <json-glib/json-glib.h>
#include <math.h>

#include "ts-tune-strategy.h"

/* "Reached" means within 5% of the optimum: optimum / best >= 0.95. */
#define REACH_FRACTION 0.95

struct _TsTuneReplayComparison {
  GArray *scores; /* TsTuneReplayScore; .strategy points into names */
  GPtrArray *names;
  char *header; /* what was replayed: kernel, device, counts, optimum */
  char *file, *kernel, *device;
  double optimum_s;
  guint budget, repeats;
  guint64 seed;
  GPtrArray *reach; /* per score: GArray of guint, per repeat the evaluations to 95% (0: never) */
};

void
ts_tune_replay_comparison_free(TsTuneReplayComparison *comparison)
{
  if (!comparison)
    return;
  g_array_unref(comparison->scores);
  g_ptr_array_unref(comparison->names);
  g_ptr_array_unref(comparison->reach);
  g_free(comparison->header);
  g_free(comparison->file);
  g_free(comparison->kernel);
  g_free(comparison->device);
  g_free(comparison);
}

typedef struct {
  double best_s;        /* INFINITY until a valid configuration is seen */
  guint evals;          /* counted evaluations */
  guint evals_to_reach; /* 0 when not reached */
  double cost_ms;
} RunResult;

/* One strategy, one seed. */
static gboolean
run_once(const TsTuneReplay *replay, const char *name, const TsSchedEnv *env, guint budget,
         double budget_ms, guint64 seed, RunResult *out, GError **error)
{
  *out = (RunResult){INFINITY, 0, 0, 0.0};
  g_autoptr(TsTuneStrategy) strategy =
    ts_tune_strategy_new(name, replay->space, replay->env ? replay->env : env, seed, error);
  if (!strategy)
    return FALSE;
  ts_tune_strategy_set_cost(strategy, replay->target, replay->prior);
  ts_tune_strategy_set_seeds(strategy, replay->seeds);
  if (budget)
    ts_tune_strategy_set_budget(strategy, budget);
  double optimum = replay->best->time_s;
  guint64 size = G_MAXUINT64, proposed = 0;
  ts_sched_space_size(replay->space, &size);
  /* A strategy never proposes a point twice, so at most `size` proposals. A recording that
   * covers a sliver of a huge space (3 configurations of 10^9) would still let exhaustive
   * search walk it all, counting nothing: unrecorded proposals are capped at 4096 per recorded
   * configuration plus 10^4, far past what a real recording needs (Kernel Tuner's caches record
   * every valid configuration; the recorded spaces checked here are at most 8.3 times larger than
   * what they record). */
  size = MIN(size, (guint64)replay->entries->len * 4096 + 10000);
  /* budget 0: only the recorded time limits the run; budget_ms 0: only the count does. Each
   * evaluation is charged its recorded compile + benchmark time, as a real tune would pay. */
  while ((budget == 0 || out->evals < budget) && (budget_ms <= 0 || out->cost_ms < budget_ms) &&
         proposed < size) {
    /* One at a time: every strategy sees each outcome before it proposes again, so "evaluations
     * to reach 95%" measures search efficiency, not batch size. */
    g_autoptr(GPtrArray) batch = ts_tune_strategy_propose(strategy, 1, error);
    if (!batch)
      return FALSE;
    if (batch->len == 0)
      break; /* the strategy has nothing left to try */
    for (guint i = 0; i < batch->len; i++) {
      const TsSchedPoint *p = g_ptr_array_index(batch, i);
      TsTuneReplayResult r;
      gboolean ok = ts_tune_replay_lookup(replay, p, &r);
      proposed++;
      if (r.status == TS_TUNE_REPLAY_NOT_RECORDED) {
        ts_tune_strategy_observe(strategy, p, FALSE, 0.0);
        continue;
      }
      out->evals++;
      out->cost_ms += r.cost_ms;
      ts_tune_strategy_observe(strategy, p, ok, ok ? r.time_s : 0.0);
      if (ok && r.time_s < out->best_s) {
        out->best_s = r.time_s;
        if (!out->evals_to_reach && optimum / out->best_s >= REACH_FRACTION)
          out->evals_to_reach = out->evals;
      }
    }
  }
  return TRUE;
}

static char *
describe(const TsTuneReplay *replay)
{
  const TsSchedPoint *best = NULL;
  double opt = ts_tune_replay_optimum(replay, &best);
  g_autofree char *pt = ts_sched_point_to_string(best);
  guint64 size = 0;
  gboolean fits = ts_sched_space_size(replay->space, &size);
  g_autofree char *size_text =
      fits ? g_strdup_printf("%" G_GUINT64_FORMAT, size) : g_strdup("more than 2^64");
  return g_strdup_printf("replay of %s on %s (%s): %u recorded of %s configurations, %u valid, "
                         "%u failed\noptimum %.6g ms at %s",
                         replay->kernel ? replay->kernel : "(unnamed kernel)",
                         replay->device ? replay->device : "(unnamed device)", replay->name,
                         replay->entries->len, size_text, replay->n_valid, replay->n_failed,
                         opt * 1e3, pt);
}

TsTuneReplayComparison *
ts_tune_replay_compare(const TsTuneReplay *replay, const char *const *strategies, guint budget,
                       guint repeats, guint64 seed, GError **error)
{
  return ts_tune_replay_compare_timed(replay, strategies, budget, 0.0, repeats, seed, error);
}

TsTuneReplayComparison *
ts_tune_replay_compare_timed(const TsTuneReplay *replay, const char *const *strategies,
                             guint budget, double budget_ms, guint repeats, guint64 seed,
                             GError **error)
{
  g_return_val_if_fail(replay != NULL, NULL);
  if (!replay->best) {
    g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_EMPTY,
                "%s: no valid configuration is recorded, so there is no optimum to compare with",
                replay->name);
    return NULL;
  }
  if (!strategies)
    strategies = ts_tune_strategy_names();
  g_autoptr(TsSchedEnv) env = ts_sched_env_new();
  g_autoptr(TsTuneReplayComparison) cmp = g_new0(TsTuneReplayComparison, 1);
  cmp->scores = g_array_new(FALSE, TRUE, sizeof(TsTuneReplayScore));
  cmp->names = g_ptr_array_new_with_free_func(g_free);
  cmp->header = describe(replay);
  cmp->reach = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
  cmp->file = g_strdup(replay->name);
  cmp->kernel = g_strdup(replay->kernel);
  cmp->device = g_strdup(replay->device);
  cmp->optimum_s = replay->best->time_s;
  cmp->budget = budget;
  cmp->repeats = repeats;
  cmp->seed = seed;
  double optimum = replay->best->time_s;

  for (guint s = 0; strategies[s]; s++) {
    char *name = g_strdup(strategies[s]);
    g_ptr_array_add(cmp->names, name);
    TsTuneReplayScore score = {
        .strategy = name, .repeats = repeats, .min_fraction = repeats ? 1.0 : 0.0};
    double sum_reach = 0;
    GArray *reach = g_array_sized_new(FALSE, TRUE, sizeof(guint), repeats);
    g_ptr_array_add(cmp->reach, reach);
    for (guint r = 0; r < repeats; r++) {
      RunResult rr;
      if (!run_once(replay, name, env, budget, budget_ms, seed + r, &rr, error))
        return NULL;
      double fraction = isfinite(rr.best_s) ? optimum / rr.best_s : 0.0;
      score.mean_fraction += fraction / repeats;
      score.min_fraction = MIN(score.min_fraction, fraction);
      score.mean_evals += (double)rr.evals / repeats;
      score.mean_cost_ms += rr.cost_ms / repeats;
      g_array_append_val(reach, rr.evals_to_reach);
      if (rr.evals_to_reach) {
        score.n_reached++;
        sum_reach += rr.evals_to_reach;
      }
    }
    score.mean_evals_to_95 = score.n_reached ? sum_reach / score.n_reached : NAN;
    /* Misses counted as the whole budget: one figure that ranks speed and reliability. */
    score.capped_evals_to_95 =
      budget ? (sum_reach + (double)(repeats - score.n_reached) * budget) / repeats : NAN;
    g_array_append_val(cmp->scores, score);
  }
  return g_steal_pointer(&cmp);
}

guint
ts_tune_replay_comparison_n_scores(const TsTuneReplayComparison *comparison)
{
  g_return_val_if_fail(comparison != NULL, 0);
  return comparison->scores->len;
}

const TsTuneReplayScore *
ts_tune_replay_comparison_score(const TsTuneReplayComparison *comparison, guint i)
{
  g_return_val_if_fail(comparison != NULL && i < comparison->scores->len, NULL);
  return &g_array_index(comparison->scores, TsTuneReplayScore, i);
}

char *
ts_tune_replay_comparison_to_string(const TsTuneReplayComparison *comparison)
{
  g_return_val_if_fail(comparison != NULL, NULL);
  GString *s = g_string_new(comparison->header);
  g_string_append_printf(s,
                         "\nbudget %u evaluations, %u repeats (seeds %" G_GUINT64_FORMAT
                         "..%" G_GUINT64_FORMAT ")\n",
                         comparison->budget, comparison->repeats, comparison->seed,
                         comparison->seed + (comparison->repeats ? comparison->repeats - 1 : 0));
  g_string_append_printf(s, "%-14s %10s %9s %11s %12s %13s %8s %12s\n", "strategy", "of-optimum",
                         "worst", "reached-95%", "not-reached", "evals-to-95%", "evals", "cost-s");
  for (guint i = 0; i < comparison->scores->len; i++) {
    const TsTuneReplayScore *r = &g_array_index(comparison->scores, TsTuneReplayScore, i);
    g_autofree char *reach =
        isnan(r->mean_evals_to_95) ? g_strdup("-") : g_strdup_printf("%.1f", r->mean_evals_to_95);
    g_autofree char *frac = g_strdup_printf("%u/%u", r->n_reached, r->repeats);
    g_string_append_printf(s, "%-14s %10.3f %9.3f %11s %12u %13s %8.1f %12.2f\n", r->strategy,
                           r->mean_fraction, r->min_fraction, frac, r->repeats - r->n_reached,
                           reach, r->mean_evals, r->mean_cost_ms * 1e-3);
  }
  return g_string_free(s, FALSE);
}

char *
ts_tune_replay_comparison_to_json(const TsTuneReplayComparison *c)
{
  g_return_val_if_fail(c != NULL, NULL);
  g_autoptr(JsonBuilder) b = json_builder_new();
  json_builder_begin_object(b);
#define STR(k, v)                                                                                 \
  do {                                                                                            \
    json_builder_set_member_name(b, k);                                                           \
    if (v)                                                                                        \
      json_builder_add_string_value(b, v);                                                        \
    else                                                                                          \
      json_builder_add_null_value(b);                                                             \
  } while (0)
#define NUM(k, v)                                                                                 \
  do {                                                                                            \
    json_builder_set_member_name(b, k);                                                           \
    if (isfinite((double)(v)))                                                                    \
      json_builder_add_double_value(b, (double)(v));                                              \
    else                                                                                          \
      json_builder_add_null_value(b);                                                             \
  } while (0)
#define INT(k, v)                                                                                 \
  do {                                                                                            \
    json_builder_set_member_name(b, k);                                                           \
    json_builder_add_int_value(b, (gint64)(v));                                                   \
  } while (0)
  STR("file", c->file);
  STR("kernel", c->kernel);
  STR("device", c->device);
  NUM("optimum_ms", c->optimum_s * 1e3);
  INT("budget", c->budget);
  INT("repeats", c->repeats);
  INT("seed", (gint64)c->seed);
  NUM("reach_fraction", REACH_FRACTION);
  json_builder_set_member_name(b, "strategies");
  json_builder_begin_array(b);
  for (guint i = 0; i < c->scores->len; i++) {
    const TsTuneReplayScore *r = &g_array_index(c->scores, TsTuneReplayScore, i);
    json_builder_begin_object(b);
    STR("strategy", r->strategy);
    NUM("mean_fraction", r->mean_fraction);
    NUM("min_fraction", r->min_fraction);
    INT("n_reached", r->n_reached);
    NUM("mean_evals_to_95", r->mean_evals_to_95);
    NUM("capped_evals_to_95", r->capped_evals_to_95);
    NUM("mean_evals", r->mean_evals);
    NUM("mean_cost_ms", r->mean_cost_ms);
    /* Per repeat (seed, seed + 1, ...): evaluations to 95%, null when never reached. */
    json_builder_set_member_name(b, "evals_to_95");
    json_builder_begin_array(b);
    GArray *reach = g_ptr_array_index(c->reach, i);
    for (guint k = 0; k < reach->len; k++) {
      guint e = g_array_index(reach, guint, k);
      if (e)
        json_builder_add_int_value(b, e);
      else
        json_builder_add_null_value(b);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
  }
  json_builder_end_array(b);
  json_builder_end_object(b);
#undef STR
#undef NUM
#undef INT
  g_autoptr(JsonNode) root = json_builder_get_root(b);
  return json_to_string(root, TRUE);
}

void
ts_tune_replay_comparison_print(const TsTuneReplayComparison *comparison, FILE *out)
{
  g_return_if_fail(comparison != NULL);
  g_autofree char *text = ts_tune_replay_comparison_to_string(comparison);
  fputs(text, out ? out : stdout);
}
