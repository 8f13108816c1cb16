/* tt-cache.c — the schedule-cache commands: lookup (what a program would get), show (a
 * workload's trials, best first), export and import (caches shipped as JSON artifacts). */
#include <math.h>
#include <stdio.h>

#include "ts-coll.h"
#include "ts-cost-model.h"
#include "ts-tune.h"
#include "tt-cli.h"

/* The verified trial with the lowest median of the best's key, when it is not the best: the
 * best changes only for a trial faster beyond the noise of both, so the two can differ. NULL
 * when they agree or nothing can be read. */
static TsDbTrial *
fastest_other(TsDb *db, const TsDbTrial *best)
{
  g_autoptr(GPtrArray) ranked = ts_db_list_trials(db, best->workload_id, best->device_id,
                                                  best->toolchain_id, TS_DB_ORDER_BEST_FIRST,
                                                  NULL);
  if (ranked == NULL || ranked->len == 0)
    return NULL;
  TsDbTrial *first = g_ptr_array_index(ranked, 0);
  if (first->status != TS_DB_TRIAL_OK || first->id == best->id ||
      !(first->median_ns < best->median_ns))
    return NULL;
  return g_ptr_array_steal_index(ranked, 0);
}

static void
print_fastest(const TsDbTrial *best, const TsDbTrial *fastest, const char *prefix)
{
  g_print("%sfastest by median: trial %" G_GINT64_FORMAT ", %.4f ms (%.1f%% below the best's "
          "%.4f ms, trial %" G_GINT64_FORMAT "), not faster beyond the noise of both (the best "
          "changes at p < 0.01); tune again to settle it\n",
          prefix, fastest->id, fastest->median_ns / 1e6,
          100 * (1 - fastest->median_ns / best->median_ns), best->median_ns / 1e6, best->id);
}

int
tt_cmd_lookup(int argc, char **argv)
{
  if (argc > 1 && ts_coll_lookup(argv[1], NULL))
    return tt_cmd_coll_show(argc, argv, TRUE);
  g_auto(TtArgs) a = {0};
  if (!tt_parse("lookup", "OP",
                "Print the cached best schedule of a workload on this machine's device and\n"
                "toolchain. With --nearest, a shape never tuned gets the best schedule of the\n"
                "nearest tuned shape of the same op and dtype, marked as such.",
                TT_OPT_WORKLOAD | TT_OPT_BACKEND | TT_OPT_DB | TT_OPT_NEAREST | TT_OPT_JSON | TT_OPT_KERNEL,
                &a,
                &argc, &argv))
    return TT_EXIT_USAGE;
  const char *op = NULL;
  int rc = tt_op_arg(&a, argc, argv, "lookup", &op);
  if (rc != TT_EXIT_OK)
    return rc;
  g_autoptr(GError) error = NULL;
  g_autoptr(TsOpInstance) inst = NULL;
  g_autoptr(TsBackend) backend = NULL;
  g_autoptr(TsDb) db = NULL;
  rc = tt_open(op, &a, TS_DB_OPEN_READ_ONLY, &inst, &backend, &db);
  if (rc != TT_EXIT_OK)
    return rc;
  TsDbKey key;
  g_autofree char *shape = NULL, *dtype = NULL;
  ts_tune_lookup_key(inst, backend, &key, &shape, &dtype);
  g_auto(TsDbLookupResult) r = {0};
  gboolean found = a.nearest ? ts_db_lookup_nearest(db, &key, &r, &error)
                             : ts_db_lookup(db, &key, &r, &error);
  if (!found) {
    if (g_error_matches(error, TS_DB_ERROR, TS_DB_ERROR_NOT_FOUND)) {
      g_printerr("tessera-tune: %s%s\n", error->message,
                 a.nearest ? "" : " (try --nearest, or tune it)");
      return TT_EXIT_CANDIDATE;
    }
    return tt_fail(tt_error_code(error), error);
  }
  g_autoptr(TsDbTrial) best = ts_db_get_trial(db, r.trial_id, NULL);
  g_autoptr(TsDbTrial) fastest = best ? fastest_other(db, best) : NULL;
  if (a.json) {
    g_autofree char *sc = g_strescape(r.schedule, NULL);
    g_autofree char *fast =
      fastest ? g_strdup_printf(", \"fastest_trial\": %" G_GINT64_FORMAT
                                ", \"fastest_median_ns\": %.1f",
                                fastest->id, fastest->median_ns)
              : g_strdup("");
    g_print("{\"schedule\": \"%s\", \"median_ns\": %.1f, \"trial\": %" G_GINT64_FORMAT
            ", \"exact\": %s, \"shape\": \"%s\", \"distance\": %.4g%s}\n",
            sc, r.median_ns, r.trial_id, r.exact ? "true" : "false", r.shape, r.distance, fast);
  } else {
    g_print("%s\n", r.schedule);
    g_autofree char *origin =
      r.exact ? g_strdup("tuned for this shape")
              : g_strdup_printf("borrowed from the nearest tuned shape %s (distance %.3g)",
                                r.shape, r.distance);
    g_print("# %.4f ms, trial %" G_GINT64_FORMAT ", %s\n", r.median_ns / 1e6, r.trial_id, origin);
    if (fastest)
      print_fastest(best, fastest, "# ");
  }
  return TT_EXIT_OK;
}

/* show --estimate: each trial's analytic estimate (time_s NaN where the model has none for
 * its schedule), with the device's stored ceilings: show only reads, so it measures none and
 * says so when the estimates fall back to nominal figures. */
static TsCostEstimate *
show_estimates(const TsOpInstance *inst, TsBackend *backend, TsDb *db, gint64 device_id,
               const GPtrArray *trials, gboolean json)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsProfCeilings) ceilings = ts_prof_ceilings_load(db, device_id, backend, &error);
  if (ceilings == NULL && !json)
    g_print("# no current ceilings stored for this device: estimates from nominal figures "
            "('tessera-tune devices --measure' measures them)%s%s\n",
            error ? ": " : "", error ? error->message : "");
  const TsDeviceInfo *dev = ts_backend_describe(backend);
  g_autoptr(TsCostTarget) target = ts_cost_target_new(inst, dev->backend, dev, ceilings);
  TsCostEstimate *est = g_new0(TsCostEstimate, MAX(trials->len, 1));
  for (guint i = 0; i < trials->len; i++) {
    const TsDbTrial *tr = g_ptr_array_index(trials, i);
    g_autoptr(TsSchedPoint) p = ts_sched_point_parse(tr->schedule, NULL);
    if (p == NULL || !ts_cost_analytic(target, p, NULL, &est[i], NULL)) {
      est[i].time_s = NAN;
      est[i].bound = "-";
    }
  }
  return est;
}

/* How well the estimates order the verified trials: Kendall's tau, and the measured time of
 * the trial the model would have run first against the fastest. */
static void
print_estimate_summary(const GPtrArray *trials, const TsCostEstimate *est)
{
  g_autoptr(GArray) scores = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) times = g_array_new(FALSE, FALSE, sizeof(double));
  const TsDbTrial *pick = NULL, *fastest = NULL;
  double pick_est = INFINITY;
  for (guint i = 0; i < trials->len; i++) {
    const TsDbTrial *tr = g_ptr_array_index(trials, i);
    if (tr->status != TS_DB_TRIAL_OK || !(est[i].time_s > 0) || !isfinite(est[i].time_s))
      continue;
    double score = -est[i].time_s, t = tr->median_ns;
    g_array_append_val(scores, score);
    g_array_append_val(times, t);
    if (est[i].time_s < pick_est)
      pick_est = est[i].time_s, pick = tr;
    if (fastest == NULL || tr->median_ns < fastest->median_ns)
      fastest = tr;
  }
  if (scores->len < 2) {
    g_print("# model: fewer than two verified trials with an estimate, nothing to compare\n");
    return;
  }
  double tau = ts_cost_kendall_tau((double *)(void *)scores->data, (double *)(void *)times->data,
                                   scores->len);
  g_print("# model: Kendall tau %.2f against the measured order over %u verified trials; its "
          "first pick, trial %" G_GINT64_FORMAT ", measured %.2fx the fastest (trial %"
          G_GINT64_FORMAT ")\n",
          tau, scores->len, pick->id, pick->median_ns / fastest->median_ns, fastest->id);
}

int
tt_cmd_show(int argc, char **argv)
{
  if (argc > 1 && ts_coll_lookup(argv[1], NULL))
    return tt_cmd_coll_show(argc, argv, FALSE);
  g_auto(TtArgs) a = {0};
  if (!tt_parse("show", "OP", "List the stored trials of a workload, best first.",
                TT_OPT_WORKLOAD | TT_OPT_BACKEND | TT_OPT_DB | TT_OPT_LIMIT | TT_OPT_JSON |
                  TT_OPT_KERNEL | TT_OPT_ESTIMATE,
                &a, &argc, &argv))
    return TT_EXIT_USAGE;
  const char *op = NULL;
  int rc = tt_op_arg(&a, argc, argv, "show", &op);
  if (rc != TT_EXIT_OK)
    return rc;
  g_autoptr(GError) error = NULL;
  g_autoptr(TsOpInstance) inst = NULL;
  g_autoptr(TsBackend) backend = NULL;
  g_autoptr(TsDb) db = NULL;
  rc = tt_open(op, &a, TT_DB_READ, &inst, &backend, &db);
  if (rc != TT_EXIT_OK)
    return rc;
  gint64 w, d, t;
  if (!ts_tune_key_ids(db, inst, backend, &w, &d, &t, &error))
    return tt_fail(tt_error_code(error), error);
  g_autoptr(GPtrArray) trials = ts_db_list_trials(db, w, d, t, TS_DB_ORDER_BEST_FIRST, &error);
  if (trials == NULL)
    return tt_fail(tt_error_code(error), error);
  guint n = a.limit > 0 ? MIN((guint)a.limit, trials->len) : trials->len;
  double flops = ts_op_instance_flops(inst);
  g_autoptr(TsDbTrial) best = ts_db_get_best(db, w, d, t, NULL);
  g_autoptr(TsDbTrial) fastest = best ? fastest_other(db, best) : NULL;
  g_autofree TsCostEstimate *est =
    a.estimate ? show_estimates(inst, backend, db, d, trials, a.json) : NULL;
  if (a.json)
    g_print("[");
  else
    g_print("%7s  %-13s %11s %10s %8s  %s%-12s %s\n", "trial", "status", "median ms", "GFLOP/s",
            "samples", est ? "  model ms  bound     " : "", "strategy", "schedule");
  for (guint i = 0; i < n; i++) {
    const TsDbTrial *tr = g_ptr_array_index(trials, i);
    gboolean ok = tr->status == TS_DB_TRIAL_OK;
    g_autofree char *model = NULL;
    if (est && a.json)
      model = isnan(est[i].time_s) ? g_strdup(", \"estimate_ns\": null, \"bound\": null")
                                   : g_strdup_printf(", \"estimate_ns\": %.1f, \"bound\": \"%s\"",
                                                     est[i].time_s * 1e9, est[i].bound);
    else if (est)
      model = isnan(est[i].time_s) ? g_strdup_printf("%10s  %-8s  ", "-", "-")
                                   : g_strdup_printf("%10.4f  %-8s  ", est[i].time_s * 1e3,
                                                     est[i].bound);
    if (a.json) {
      g_autofree char *sc = g_strescape(tr->schedule, NULL);
      g_autofree char *er = g_strescape(tr->error_text ? tr->error_text : "", NULL);
      g_print("%s{\"trial\": %" G_GINT64_FORMAT ", \"status\": \"%s\", \"median_ns\": %.1f, "
              "\"schedule\": \"%s\", \"error\": \"%s\", \"best\": %s%s}",
              i ? ", " : "", tr->id, ts_db_trial_status_name(tr->status),
              ok ? tr->median_ns : -1.0, sc, er, best && best->id == tr->id ? "true" : "false",
              model ? model : "");
    } else if (ok) {
      g_print("%s%6" G_GINT64_FORMAT "  %-13s %11.4f %10.2f %8u  %s%-12s %s\n",
              best && best->id == tr->id ? "*" : " ", tr->id, "ok",
              tr->median_ns / 1e6, flops / tr->median_ns,
              tr->samples_ns ? tr->samples_ns->len : 0, model ? model : "",
              tr->strategy ? tr->strategy : "-", tr->schedule);
    } else {
      g_print(" %6" G_GINT64_FORMAT "  %-13s %11s %10s %8s  %s%-12s %s\n", tr->id,
              ts_db_trial_status_name(tr->status), "-", "-", "-", model ? model : "",
              tr->strategy ? tr->strategy : "-", tr->schedule);
    }
  }
  if (a.json)
    g_print("]\n");
  else if (trials->len == 0)
    g_print("(no trials stored for this workload on this device and toolchain)\n");
  else if (best) {
    g_print("* best: trial %" G_GINT64_FORMAT ", %.4f ms, what lookup and programs get\n",
            best->id, best->median_ns / 1e6);
    if (fastest)
      print_fastest(best, fastest, "  ");
  }
  if (est && !a.json)
    print_estimate_summary(trials, est);
  return TT_EXIT_OK;
}

int
tt_cmd_export(int argc, char **argv)
{
  g_auto(TtArgs) a = {0};
  if (!tt_parse("export", "[OP]",
                "Write the trials and best schedules of one workload (OP with --shape and\n"
                "--dtype), or of every workload, as a JSON document that 'import' merges.",
                TT_OPT_WORKLOAD | TT_OPT_BACKEND | TT_OPT_DB | TT_OPT_OUTPUT, &a, &argc, &argv))
    return TT_EXIT_USAGE;
  if (argc > 2)
    return tt_usage("export takes at most one OP");
  g_autoptr(GError) error = NULL;
  g_autoptr(TsDb) db = tt_db(&a, TT_DB_READ, &error);
  if (db == NULL)
    return tt_fail(tt_error_code(error), error);
  gint64 workload = 0;
  if (argc == 2) {
    g_autoptr(TsOpInstance) inst = tt_workload(argv[1], &a, &error);
    if (inst == NULL)
      return tt_fail(TT_EXIT_USAGE, error);
    g_autofree char *shape = ts_shape_to_string(ts_op_instance_shape(inst));
    g_autofree char *dtype = ts_dtype_policy_to_string(ts_op_instance_dtype(inst));
    workload = ts_db_ensure_workload(db, argv[1], shape, dtype, &error);
    if (workload == 0)
      return tt_fail(tt_error_code(error), error);
  }
  if (a.output) {
    if (!ts_db_export_file(db, workload, a.output, &error))
      return tt_fail(tt_error_code(error), error);
    return TT_EXIT_OK;
  }
  g_autofree char *json = ts_db_export_json(db, workload, &error);
  if (json == NULL)
    return tt_fail(tt_error_code(error), error);
  g_print("%s\n", json);
  return TT_EXIT_OK;
}

int
tt_cmd_import(int argc, char **argv)
{
  g_auto(TtArgs) a = {0};
  if (!tt_parse("import", "FILE",
                "Merge an exported JSON document into the schedule cache. Importing the same\n"
                "file twice adds nothing; a malformed file changes nothing.",
                TT_OPT_DB, &a, &argc, &argv))
    return TT_EXIT_USAGE;
  if (argc != 2)
    return tt_usage("import takes one FILE");
  g_autoptr(GError) error = NULL;
  g_autoptr(TsDb) db = tt_db(&a, TS_DB_OPEN_DEFAULT, &error);
  if (db == NULL)
    return tt_fail(tt_error_code(error), error);
  TsDbImportStats st = {0};
  if (!ts_db_import_file(db, argv[1], &st, &error)) {
    g_prefix_error(&error, "%s: ", argv[1]);
    return tt_fail(tt_error_code(error), error);
  }
  g_print("imported %s: %u trials added, %u already present; %u workloads, %u devices, "
          "%u toolchains added; %u best schedules changed\n",
          argv[1], st.trials_added, st.trials_existing, st.workloads_added, st.devices_added,
          st.toolchains_added, st.best_changed);
  return TT_EXIT_OK;
}
