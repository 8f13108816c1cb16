/* tt-strategies.c — `tessera-tune strategies [compare]`: the search strategies, and their
 * comparison on a recorded tuning file (Kernel Tuner cache or T4 results) served by the replay
 * evaluator, so strategies are judged on real GPU spaces without a GPU. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ts-tune-replay.h"
#include "ts-tune-strategy.h"
#include "tt-cli.h"

int
tt_cmd_strategies(int argc, char **argv)
{
  g_auto(TtArgs) a = {.seed = 1, .budget = -1, .repeats = 10};
  if (!tt_parse("strategies", "[compare]",
                "Without arguments, list the search strategies. 'compare' replays a recorded\n"
                "tuning file (--replay) and prints, per strategy over --repeats seeds, the mean\n"
                "fraction of the optimum reached after --budget evaluations (optimum time / best\n"
                "time found, 1 = optimum), the worst repeat, how many repeats reached 95% of the\n"
                "optimum, the mean evaluations needed to get there, and the recorded compile and\n"
                "benchmark time those evaluations cost. With --budget-ms each evaluation is\n"
                "charged its recorded compile and benchmark time and a run stops when the\n"
                "budget is spent, as a real tune would. Unrecorded configurations count as\n"
                "failed and cost nothing.",
                TT_OPT_REPLAY | TT_OPT_TUNE | TT_OPT_SEED, &a, &argc, &argv))
    return TT_EXIT_USAGE;
  if (argc == 1) {
    for (const char *const *n = ts_tune_strategy_names(); *n; n++)
      g_print("%s\n", *n);
    return TT_EXIT_OK;
  }
  if (argc != 2 || strcmp(argv[1], "compare") != 0)
    return tt_usage("strategies takes no argument or 'compare'");
  if (a.replay == NULL)
    return tt_usage("strategies compare needs --replay FILE");
  /* --budget-ms alone: time is the only limit; neither: 20 evaluations. */
  if (a.budget < 0)
    a.budget = a.budget_ms > 0 ? 0 : 20;
  if (a.budget < 0 || a.budget_ms < 0 || a.repeats <= 0 || (a.budget == 0 && a.budget_ms == 0))
    return tt_usage("--budget or --budget-ms, and --repeats, must be positive");
  g_autoptr(GError) error = NULL;
  g_autoptr(TsTuneReplay) replay = ts_tune_replay_load(a.replay, &error);
  if (replay == NULL)
    return tt_fail(TT_EXIT_USAGE, error);
  g_auto(GStrv) names = a.strategy ? g_strsplit(a.strategy, ",", -1) : NULL;
  g_autoptr(TsTuneReplayComparison) cmp =
    ts_tune_replay_compare_timed(replay, (const char *const *)names, (guint)a.budget,
                                 a.budget_ms, (guint)a.repeats, (guint64)a.seed, &error);
  if (cmp == NULL)
    return tt_fail(TT_EXIT_USAGE, error);
  g_print("# tessera-tune strategies compare --replay %s --budget %d --budget-ms %.0f --repeats "
          "%d --seed %" G_GINT64_FORMAT "\n",
          a.replay, a.budget, a.budget_ms, a.repeats, a.seed);
  ts_tune_replay_comparison_print(cmp, stdout);
  return TT_EXIT_OK;
}
