/* tt-model.c — `tessera-tune model train|eval|show`: the learned cost model of each backend,
 * trained on every trial in the schedule cache, judged on workloads it never saw, stored in
 * the cache's model table where the model-guided strategy finds it. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ts-cost-model.h"
#include "tt-cli.h"

static const char *const backends[] = {"cpu", "cuda"};

static gboolean
wanted(const TtArgs *a, const char *backend)
{
  return a->backend == NULL || strcmp(a->backend, "auto") == 0 || strcmp(a->backend, backend) == 0;
}

static void
print_eval(const TsCostEval *e, const char *backend)
{
  g_print("held-out evaluation on %s: each workload ranked by a model trained on the others\n",
          backend);
  g_print("%-44s %5s %5s %7s %8s %9s | %7s %8s %9s\n", "workload (device, toolchain)", "rows",
          "ok", "tau", "regret", "top5@20", "a-tau", "a-regret", "a-top5@20");
  for (guint i = 0; i < e->rows->len; i++) {
    const TsCostEvalRow *r = &g_array_index(e->rows, TsCostEvalRow, i);
    g_autofree char *w = ts_cost_group_workload(r->group);
    g_print("%-44.44s %5u %5u %7.3f %7.1f%% %9.2f | %7.3f %7.1f%% %9.2f\n", w, r->n_rows, r->n_ok,
            r->tau, r->regret * 100, r->recall, r->analytic_tau, r->analytic_regret * 100,
            r->analytic_recall);
  }
  g_print("%-44s %5s %5s %7.3f %7.1f%% %9.2f | %7.3f %7.1f%% %9.2f\n", "mean", "", "",
          e->mean_tau, e->mean_regret * 100, e->mean_recall, e->mean_analytic_tau,
          e->mean_analytic_regret * 100, e->mean_analytic_recall);
}

static int
cmd_eval(TsDb *db, const TtArgs *a)
{
  g_autoptr(GError) error = NULL;
  guint done = 0;
  GString *json = g_string_new("{");
  for (guint b = 0; b < G_N_ELEMENTS(backends); b++) {
    if (!wanted(a, backends[b]))
      continue;
    g_autoptr(TsCostDataset) ds = ts_cost_dataset_from_db(db, backends[b], NULL, &error);
    if (ds == NULL)
      return tt_fail(tt_error_code(error), error);
    if (ts_cost_dataset_n_rows(ds) == 0)
      continue;
    g_autoptr(TsCostEval) e = ts_cost_evaluate(ds, NULL, TT_EVAL_MIN_ROWS, &error);
    if (e == NULL)
      return tt_fail(tt_error_code(error), error);
    if (a->json) {
      g_autofree char *j = ts_cost_eval_to_json(e);
      g_string_append_printf(json, "%s\"%s\": %s", done ? ", " : "", backends[b], j);
    } else {
      print_eval(e, backends[b]);
    }
    done++;
  }
  g_string_append(json, "}\n");
  if (a->json)
    g_print("%s", json->str);
  g_string_free(json, TRUE);
  if (done == 0) {
    g_printerr("tessera-tune: %s holds no trials%s to evaluate a model on (tune some "
               "workloads first)\n",
               ts_db_path(db), a->backend ? " of that backend" : "");
    return TT_EXIT_USAGE;
  }
  return TT_EXIT_OK;
}

static int
cmd_train(TsDb *db, const TtArgs *a)
{
  g_autoptr(GError) error = NULL;
  guint done = 0;
  for (guint b = 0; b < G_N_ELEMENTS(backends); b++) {
    if (!wanted(a, backends[b]))
      continue;
    guint skipped = 0;
    g_autoptr(TsCostDataset) ds = ts_cost_dataset_from_db(db, backends[b], &skipped, &error);
    if (ds == NULL)
      return tt_fail(tt_error_code(error), error);
    if (ts_cost_dataset_n_rows(ds) == 0)
      continue;
    /* The quality stored with the model is the held-out one, when the cache has enough
     * workloads to hold one out; the model itself learns from all of them. */
    g_autofree char *quality = NULL;
    g_autoptr(TsCostEval) e = ts_cost_evaluate(ds, NULL, TT_EVAL_MIN_ROWS, &error);
    if (e) {
      quality = ts_cost_eval_to_json(e);
      print_eval(e, backends[b]);
    } else {
      g_print("%s: no held-out evaluation (%s)\n", backends[b], error->message);
      g_clear_error(&error);
    }
    g_autoptr(TsCostModel) m = ts_cost_model_train(ds, NULL, &error);
    if (m == NULL)
      return tt_fail(tt_error_code(error), error);
    g_autofree char *kind = ts_cost_model_kind(backends[b]);
    gint64 id = ts_cost_model_store(db, m, kind, ds, quality, &error);
    if (id == 0)
      return tt_fail(tt_error_code(error), error);
    g_autofree char *note =
      skipped ? g_strdup_printf(", %u trials skipped (unknown op or schedule)", skipped)
              : g_strdup("");
    g_print("model %" G_GINT64_FORMAT " (%s): %u trials of %u workloads, %u features%s\n", id,
            kind, ts_cost_dataset_n_rows(ds), ts_cost_dataset_n_groups(ds),
            ts_cost_model_n_features(m), note);
    done++;
  }
  if (done == 0) {
    g_printerr("tessera-tune: %s holds no trials to train on (tune some workloads first)\n",
               ts_db_path(db));
    return TT_EXIT_USAGE;
  }
  return TT_EXIT_OK;
}

static int
cmd_show(TsDb *db, const TtArgs *a)
{
  guint found = 0;
  for (guint b = 0; b < G_N_ELEMENTS(backends); b++) {
    if (!wanted(a, backends[b]))
      continue;
    g_autofree char *kind = ts_cost_model_kind(backends[b]);
    g_autoptr(GError) error = NULL;
    gint64 id = 0;
    g_autofree char *quality = NULL;
    g_autoptr(TsCostModel) m = ts_cost_model_load(db, kind, &id, &quality, &error);
    if (m == NULL) {
      if (!g_error_matches(error, TS_COST_ERROR, TS_COST_ERROR_NO_MODEL))
        return tt_fail(tt_error_code(error), error);
      continue;
    }
    found++;
    g_print("model %" G_GINT64_FORMAT "  %s  %u features\n", id, kind,
            ts_cost_model_n_features(m));
    g_print("  quality %s\n", quality ? quality : "(not evaluated)");
  }
  if (found == 0) {
    g_printerr("tessera-tune: no learned cost model in %s (train one with 'tessera-tune model "
               "train')\n",
               ts_db_path(db));
    return TT_EXIT_CANDIDATE;
  }
  return TT_EXIT_OK;
}

int
tt_cmd_model(int argc, char **argv)
{
  g_auto(TtArgs) a = {0};
  if (!tt_parse("model", "train|eval|show",
                "The learned cost model (XGBoost, pairwise ranking) of each backend.\n"
                "  train  train on every trial in the cache and store the model (kind\n"
                "         xgb-rank/BACKEND) with its held-out quality\n"
                "  eval   hold out each workload with at least 10 verified trials in turn,\n"
                "         train on the others, and print how well the model ranks it:\n"
                "           tau       Kendall's tau-b between predicted and measured order\n"
                "           regret    how much slower the model's first pick is than the best\n"
                "           top5@20   fraction of the 5 fastest among the model's top 20\n"
                "         and the same for the analytic estimate alone (a-tau ...)\n"
                "  show   the stored models and their quality\n"
                "--backend picks one backend (default: each with trials).",
                TT_OPT_DB | TT_OPT_BACKEND | TT_OPT_JSON, &a, &argc, &argv))
    return TT_EXIT_USAGE;
  if (argc != 2)
    return tt_usage("model takes one of train, eval, show");
  const char *what = argv[1];
  if (strcmp(what, "train") != 0 && strcmp(what, "eval") != 0 && strcmp(what, "show") != 0)
    return tt_usage("model: unknown action '%s' (train, eval or show)", what);
  if (a.backend && strcmp(a.backend, "auto") != 0 && strcmp(a.backend, "cpu") != 0 &&
      strcmp(a.backend, "cuda") != 0)
    return tt_usage("--backend must be cpu, cuda or auto");
  g_autoptr(GError) error = NULL;
  gboolean writes = strcmp(what, "train") == 0;
  g_autoptr(TsDb) db = tt_db(&a, writes ? TS_DB_OPEN_DEFAULT : TS_DB_OPEN_READ_ONLY, &error);
  if (db == NULL)
    return tt_fail(tt_error_code(error), error);
  if (strcmp(what, "train") == 0)
    return cmd_train(db, &a);
  if (strcmp(what, "eval") == 0)
    return cmd_eval(db, &a);
  return cmd_show(db, &a);
}
