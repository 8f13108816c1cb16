/* tt-tune.c — `tessera-tune tune OP`: runs the tuning driver with a progress display (a bar on
 * a terminal, one line per trial otherwise) and ends with the table of the best candidates;
 * with --profile, the session's timeline stored as a profile. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <json-glib/json-glib.h>

#include "ts-tune.h"
#include "ts-tune-mpi.h"
#include "ts-tune-stats.h"
#include "ts-cost-model.h"
#include "tt-cli.h"

typedef struct {
  gboolean tty;
  gboolean quiet; /* --json: keep stdout for the document */
  guint budget;
} Display;

static void
on_progress(const TsTuneProgress *p, gpointer data)
{
  Display *d = data;
  if (d->quiet)
    return;
  g_autofree char *best = isfinite(p->best_ns) ? g_strdup_printf("%.4f ms", p->best_ns / 1e6)
                                               : g_strdup("-");
  if (d->tty) {
    int width = 24;
    int filled = d->budget ? (int)MIN(width, (double)p->index / d->budget * width) : 0;
    g_autofree char *bar = g_strnfill(filled, '#');
    g_autofree char *rest = g_strnfill(width - filled, '.');
    g_autofree char *of = d->budget ? g_strdup_printf("/%u", d->budget) : g_strdup("");
    g_print("\r\033[K[%s%s] %u%s  best %s  failed %u  %.1f s", bar, rest, p->index, of, best,
            p->n_failed, p->elapsed_ms / 1e3);
    fflush(stdout);
    return;
  }
  const char *status = p->pruned ? "pruned" : ts_trial_status_name(p->status);
  if (p->status == TS_TRIAL_OK && !p->pruned)
    g_print("trial %u  %-13s %10.4f ms %9.2f GFLOP/s  %s\n", p->index, status, p->median_ns / 1e6,
            p->gflops, p->schedule);
  else {
    g_autofree char *first = g_strdup(p->message ? p->message : "");
    char *nl = strchr(first, '\n');
    if (nl)
      *nl = '\0';
    g_print("trial %u  %-13s %s  (%s)\n", p->index, status, p->schedule, first);
  }
}

/* A number from the trial's metrics, NaN where it has none. */
static double
metric(const TsDbTrial *t, const char *name)
{
  if (t->metrics_json == NULL)
    return NAN;
  g_autoptr(JsonNode) m = json_from_string(t->metrics_json, NULL);
  if (m == NULL || !JSON_NODE_HOLDS_OBJECT(m))
    return NAN;
  JsonObject *o = json_node_get_object(m);
  if (!json_object_has_member(o, name))
    return NAN;
  return json_object_get_double_member(o, name);
}

/* A host kernel's CPU time over its wall time (median process CPU clock over the median
 * sample): about its thread count on a quiet machine; NaN for device kernels and trials stored
 * before CPU time was measured. */
static double
cpu_per_wall(const TsDbTrial *t)
{
  return t->median_ns > 0 ? metric(t, "process_cpu_ns") / t->median_ns : NAN;
}

/* A candidate's fraction of its roof past which the roof, not the candidate, is wrong: the
 * peaks are the best of a few ~20 ms runs, so a kernel may beat them by a little. */
#define ROOF_SLACK 1.05

static void
print_table(GPtrArray *trials, TsOpInstance *inst, TsBackend *backend, guint top,
            const TsProfCeilings *c, gint64 best_id)
{
  double flops = ts_op_instance_flops(inst), bytes = ts_op_instance_bytes(inst);
  const char *roof_name = ts_tune_compute_roof(inst, backend);
  gboolean host = ts_backend_runs_on_host(backend);
  g_print("\n %4s  %-13s %11s %11s %10s %7s %10s%s  %s\n", "rank", "status", "median ms",
          "GFLOP/s", "GB/s", "% roof", "compile ms", host ? "  cpu/wall" : "", "schedule");
  TsProfRoofline roof = {0};
  double top_compute = 0, top_dram = 0;
  guint above_compute = 0, above_dram = 0;
  for (guint i = 0; i < MIN(top, trials->len); i++) {
    const TsDbTrial *t = g_ptr_array_index(trials, i);
    const char mark = t->id == best_id ? '*' : ' '; /* the cache's best, as `show` marks it */
    /* 0: the artifact came from the cache (or the trial predates the column). */
    g_autofree char *cms = t->compile_ms > 0 ? g_strdup_printf("%.0f", t->compile_ms)
                                             : g_strdup("-");
    double cw = cpu_per_wall(t);
    g_autofree char *cpu = !host          ? g_strdup("")
                           : isfinite(cw) ? g_strdup_printf("  %8.2f", cw)
                                          : g_strdup_printf("  %8s", "-");
    if (t->status == TS_DB_TRIAL_OK &&
        ts_prof_roofline(c, roof_name, flops, bytes, t->median_ns * 1e-9, &roof)) {
      const gboolean dram_bound = strcmp(roof.bound, "dram") == 0;
      if (roof.fraction > ROOF_SLACK && dram_bound) {
        above_dram++;
        top_dram = MAX(top_dram, roof.fraction);
      } else if (roof.fraction > ROOF_SLACK) {
        above_compute++;
        top_compute = MAX(top_compute, roof.fraction);
      }
      g_print("%c%4u  %-13s %11.4f %11.2f %10.2f %6.1f%% %10s%s  %s\n", mark, i + 1,
              ts_db_trial_status_name(t->status), t->median_ns / 1e6, flops / t->median_ns,
              bytes / t->median_ns, 100.0 * roof.fraction, cms, cpu, t->schedule);
    } else {
      g_print("%c%4u  %-13s %11s %11s %10s %7s %10s%s  %s\n", mark, i + 1,
              ts_db_trial_status_name(t->status), "-", "-", "-", "-", cms, cpu, t->schedule);
    }
  }
  if (host)
    g_print("cpu/wall: the process's CPU time over the kernel's wall time, medians: about its "
            "thread count on a quiet machine, less where the machine took cores away (OpenMP "
            "threads still spinning after an earlier parallel kernel add to it)\n");
  /* What a candidate's compile costs, over every trial that compiled (not served from the
   * artifact cache): what bounds a tune's rate when kernels run in microseconds. */
  g_autoptr(GArray) cms = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) cpu_ms = g_array_new(FALSE, FALSE, sizeof(double));
  double cpu_sum = 0;
  for (guint i = 0; i < trials->len; i++) {
    const TsDbTrial *t = g_ptr_array_index(trials, i);
    if (t->compile_ms > 0)
      g_array_append_val(cms, t->compile_ms);
    double cpu = metric(t, "compile_cpu_ms");
    if (t->compile_ms > 0 && cpu > 0) {
      g_array_append_val(cpu_ms, cpu);
      cpu_sum += cpu;
    }
  }
  /* Wall time is what bounds the tune; CPU time is the compile's own cost, which the wall
   * time overstates where compiles share the cores with each other. */
  g_autofree char *cpu_text =
    cpu_ms->len > 0 ? g_strdup_printf(", %.0f ms of CPU (median of %u)",
                                      ts_stats_median((double *)cpu_ms->data, cpu_ms->len),
                                      cpu_ms->len)
                    : g_strdup("");
  /* ... and spread over every trial: what compiling cost the tune, candidates that shared a
   * source (or found it cached) included. */
  g_autofree char *spread =
    cpu_ms->len > 0 && trials->len > cpu_ms->len
      ? g_strdup_printf("; %.0f ms of compile CPU a trial over all %u", cpu_sum / trials->len,
                        trials->len)
      : g_strdup("");
  if (cms->len > 0)
    g_print("compile: median %.0f ms a candidate%s, over the %u compiled (others came from the "
            "artifact cache)%s\n",
            ts_stats_median((double *)cms->data, cms->len), cpu_text, cms->len, spread);
  /* The roofline bound: min(compute roof, intensity x DRAM bandwidth), from measured ceilings. */
  const TsProfCeiling *peak = ts_prof_ceilings_get(c, roof.compute ? roof.compute : "f32");
  const TsProfCeiling *dram = ts_prof_ceilings_get(c, "dram");
  if (roof.bound && peak && dram)
    g_print("%% roof: of the roofline bound %.1f GFLOP/s at %.2f FLOP/byte (%s bound; measured "
            "%s peak %.1f GFLOP/s, DRAM %.1f GB/s)\n",
            roof.bound_gflops, roof.intensity, strcmp(roof.bound, "dram") ? "compute" : "memory",
            peak->name, peak->value, dram->value);
  /* A kernel cannot beat a compute roof: one that did proves the stored ceiling low (all-core
   * peaks timed while other work held a core read as little more than one core's: on a 2-core
   * Zen 3, 111.6 GFLOP/s where the GEMM then ran 131). The DRAM roof it may beat honestly, its
   * data in a cache. */
  if (above_compute > 0)
    g_print("%% roof above 100: %u of these candidates ran faster than the stored compute peak "
            "allows (up to %.0f%%), so the ceilings are too low: measured while other work held "
            "cores, or on other hardware; `tessera-tune devices --measure` on a quiet machine "
            "measures them again\n",
            above_compute, 100.0 * top_compute);
  if (above_dram > 0)
    g_print("%% roof above 100: %u of these candidates, held to DRAM's bandwidth, ran past it (up "
            "to %.0f%%): their data came from a cache, or the stored DRAM figure is too low "
            "(measured while other work ran); `tessera-tune devices --measure` on a quiet "
            "machine measures it again\n",
            above_dram, 100.0 * top_dram);
}

static void
print_json(const TsTuneSummary *s, GPtrArray *trials, TsOpInstance *inst, guint top,
           gint64 profile_id)
{
  g_autofree char *what = ts_op_instance_describe(inst);
  g_autofree char *w = g_strescape(what, NULL);
  g_autofree char *b = g_strescape(s->best_schedule ? s->best_schedule : "", NULL);
  g_print("{\"workload\": \"%s\", \"best\": {\"trial\": %" G_GINT64_FORMAT
          ", \"schedule\": \"%s\", \"median_ns\": %.1f}, \"valid_points\": %" G_GUINT64_FORMAT
          ", \"resumed\": %u, \"measured\": %u, \"ok\": %u, \"failed\": %u, \"pruned\": %u, "
          "\"shared\": %u, \"pending\": %u, \"remeasured\": %u, \"seeds\": %u, "
          "\"exhausted\": %s, "
          "\"elapsed_ms\": %.1f, \"top\": [",
          w, s->best_trial_id, b, s->best_trial_id ? s->best_median_ns : 0.0, s->n_valid,
          s->n_resumed, s->n_measured, s->n_ok, s->n_failed, s->n_pruned, s->n_shared,
          s->n_pending, s->n_remeasured, s->n_seeds, s->exhausted ? "true" : "false", s->elapsed_ms);
  for (guint i = 0; i < MIN(top, trials->len); i++) {
    const TsDbTrial *t = g_ptr_array_index(trials, i);
    g_autofree char *sc = g_strescape(t->schedule, NULL);
    g_print("%s{\"trial\": %" G_GINT64_FORMAT ", \"status\": \"%s\", \"median_ns\": %.1f, "
            "\"schedule\": \"%s\"}",
            i ? ", " : "", t->id, ts_db_trial_status_name(t->status),
            isfinite(t->median_ns) ? t->median_ns : -1.0, sc);
  }
  g_print("]");
  if (profile_id)
    g_print(", \"profile\": %" G_GINT64_FORMAT, profile_id);
  g_print("}\n");
}

/* The session profile's summary: what was tuned and how, then the timeline's figures. */
static char *
session_summary_json(const TsTuneSummary *s, const TsTuneConfig *cfg, const TtTimeline *tl)
{
  g_autoptr(JsonBuilder) b = json_builder_new();
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "run_id");
  json_builder_add_int_value(b, s->run_id);
  json_builder_set_member_name(b, "strategy");
  json_builder_add_string_value(b, cfg->strategy);
  json_builder_set_member_name(b, "seed");
  json_builder_add_int_value(b, (gint64)cfg->seed);
  json_builder_set_member_name(b, "trials");
  json_builder_add_int_value(b, s->n_measured);
  json_builder_set_member_name(b, "ok");
  json_builder_add_int_value(b, s->n_ok);
  json_builder_set_member_name(b, "failed");
  json_builder_add_int_value(b, s->n_failed);
  json_builder_set_member_name(b, "pruned");
  json_builder_add_int_value(b, s->n_pruned);
  json_builder_set_member_name(b, "resumed");
  json_builder_add_int_value(b, s->n_resumed);
  json_builder_set_member_name(b, "best");
  if (s->best_trial_id) {
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "trial");
    json_builder_add_int_value(b, s->best_trial_id);
    json_builder_set_member_name(b, "schedule");
    json_builder_add_string_value(b, s->best_schedule);
    json_builder_set_member_name(b, "median_ns");
    json_builder_add_double_value(b, s->best_median_ns);
    json_builder_end_object(b);
  } else {
    json_builder_add_null_value(b);
  }
  json_builder_set_member_name(b, "elapsed_ms");
  json_builder_add_double_value(b, s->elapsed_ms);
  tt_timeline_summary_json(tl, b);
  json_builder_end_object(b);
  g_autoptr(JsonNode) root = json_builder_get_root(b);
  return json_to_string(root, FALSE);
}

/* Stores the session's timeline as a profile of kind "tune": keyed like its trials, with no
 * trial of its own, and the best schedule when there is one. */
static gint64
store_session(TtTimeline *tl, TsDb *db, const TsTuneSummary *s, const TsTuneConfig *cfg,
              TsBackend *backend, const char *output, GError **error)
{
  g_autofree char *summary = session_summary_json(s, cfg, tl);
  TsDbProfile prof = {.workload_id = s->workload_id, .device_id = s->device_id,
                      .toolchain_id = s->toolchain_id, .kind = "tune",
                      .schedule = s->best_schedule, .summary_json = summary};
  g_autofree char *what = ts_op_instance_describe(cfg->inst);
  g_autofree char *process = g_strdup_printf("tessera tune %s on %s (%s)", what,
                                             ts_backend_name(backend),
                                             ts_backend_describe(backend)->name);
  gint64 id = 0;
  return tt_timeline_store(tl, db, &prof, process, output, &id, error) ? id : 0;
}

/* A learned prior that ranked the held-out workloads of this op worse than the analytic
 * estimate does (mean Kendall tau of the evaluation stored with it, or run here) would put the
 * search's first candidates behind what the estimate alone picks: a model trained on a few
 * workloads of another kind learns their knobs' effects, not this op's. Says which it takes. */
static gboolean
prior_ranks_worse(const char *quality, const char *op, const char *what, gboolean quiet)
{
  double tau, analytic;
  guint n;
  /* This op's held-out workloads where the evaluation has any, else all of them. */
  gboolean of_op = ts_cost_eval_json_taus(quality, op, &tau, &analytic, &n);
  if ((!of_op && !ts_cost_eval_json_taus(quality, NULL, &tau, &analytic, &n)) || tau >= analytic)
    return FALSE;
  if (!quiet)
    g_print("model: %s ranks held-out %s%s workloads below the analytic estimate (mean Kendall "
            "tau %.2f against %.2f over %u): the analytic estimate ranks the first candidates\n",
            what, of_op ? op : "", of_op ? "" : "other ops'", tau, analytic, n);
  return TRUE;
}

/* The model strategy's prior: the cache's stored model of this backend, else one trained now on
 * the cache's other workloads, else none (the analytic estimate ranks the first candidates);
 * none either where its held-out evaluation says the analytic estimate ranks better. */
static TsCostModel *
load_prior(TsDb *db, TsOpInstance *inst, TsBackend *backend, gboolean quiet)
{
  const char *be = ts_backend_name(backend);
  const char *op = ts_op_name(ts_op_instance_op(inst));
  g_autofree char *kind = ts_cost_model_kind(be);
  g_autoptr(GError) error = NULL;
  gint64 id = 0;
  g_autofree char *quality = NULL;
  g_autoptr(TsCostModel) m = ts_cost_model_load(db, kind, &id, &quality, &error);
  if (m) {
    g_autofree char *what = g_strdup_printf("learned prior %" G_GINT64_FORMAT " (%s)", id, kind);
    if (prior_ranks_worse(quality, op, what, quiet))
      return NULL;
    if (!quiet)
      g_print("model: %s from the cache\n", what);
    return g_steal_pointer(&m);
  }
  g_autoptr(TsCostDataset) all = ts_cost_dataset_from_db(db, be, NULL, NULL);
  g_autofree char *workload = ts_op_instance_describe(inst);
  g_autoptr(TsCostDataset) others = all ? ts_cost_dataset_select(all, workload, FALSE) : NULL;
  m = others ? ts_cost_model_train(others, NULL, NULL) : NULL;
  if (m) {
    /* Two workloads or more: one held out at a time says how well it ranks shapes it never saw. */
    g_autoptr(TsCostEval) e = ts_cost_evaluate(others, NULL, TT_EVAL_MIN_ROWS, NULL);
    g_autofree char *q = e ? ts_cost_eval_to_json(e) : NULL;
    g_autofree char *what = g_strdup_printf("prior trained on %u stored trials of %u other "
                                            "workloads", ts_cost_dataset_n_rows(others),
                                            ts_cost_dataset_n_groups(others));
    if (prior_ranks_worse(q, op, what, quiet))
      return NULL;
    if (!quiet)
      g_print("model: %s\n", what);
  } else if (!quiet) {
    g_print("model: no stored trials of other workloads yet; the analytic estimate ranks the "
            "first candidates\n");
  }
  return g_steal_pointer(&m);
}

/* After a model-guided tune the cache's model learns from the new trials too, stored with its
 * held-out evaluation (what the next tune's choice of prior reads). */
static void
retrain_stored(TsDb *db, TsBackend *backend, gboolean quiet)
{
  const char *be = ts_backend_name(backend);
  g_autoptr(GError) error = NULL;
  g_autoptr(TsCostDataset) ds = ts_cost_dataset_from_db(db, be, NULL, &error);
  g_autoptr(TsCostModel) m = ds ? ts_cost_model_train(ds, NULL, &error) : NULL;
  g_autoptr(TsCostEval) e = m ? ts_cost_evaluate(ds, NULL, TT_EVAL_MIN_ROWS, NULL) : NULL;
  g_autofree char *quality = e ? ts_cost_eval_to_json(e) : NULL;
  g_autofree char *kind = ts_cost_model_kind(be);
  gint64 id = m ? ts_cost_model_store(db, m, kind, ds, quality, &error) : 0;
  if (quiet)
    return;
  if (id)
    g_print("model: retrained on %u trials of %u workloads, stored as model %" G_GINT64_FORMAT
            " (%s)\n",
            ts_cost_dataset_n_rows(ds), ts_cost_dataset_n_groups(ds), id, kind);
  else
    g_print("model: not retrained: %s\n", error ? error->message : "no data");
}

int
tt_cmd_tune(int argc, char **argv)
{
  g_auto(TtArgs) a = {.seed = 1, .budget = -1, .timeout_s = 60, .top = 5};
  if (!tt_parse("tune", "OP",
                "Explore OP's schedule space under a budget: every candidate is compiled, run in\n"
                "an isolated worker, verified against the reference and timed; every trial and\n"
                "the best schedule go to the schedule cache. A re-run resumes: stored points are\n"
                "never measured again.\n"
                "\n"
                "--profile records the whole session on one timeline: each batch's compiles, and\n"
                "for every trial measured a 'trial N: POINT' range holding its compile (fetched\n"
                "from the artifact cache), verify and measure phases with their kernel launches,\n"
                "copies and allocations, as the worker recorded them (on a GPU also the device's\n"
                "own records). It is stored in the schedule cache as a profile of kind 'tune'\n"
                "with the run, strategy, trial counts, best, span, time in kernels and peak\n"
                "memory; the last line (with --json, \"profile\") gives its id ('tessera-tune\n"
                "profile list', 'tessera-tune profile export ID --output FILE.json').\n"
                "--trace-output FILE.json (implies --profile) also writes it as a Chrome trace\n"
                "for https://ui.perfetto.dev. The timed samples are taken exactly as without it:\n"
                "events are recorded outside the timed launches.",
                TT_OPT_WORKLOAD | TT_OPT_SPACE | TT_OPT_BACKEND | TT_OPT_SEED | TT_OPT_JSON |
                  TT_OPT_DB | TT_OPT_TUNE | TT_OPT_PROFILE | TT_OPT_KERNEL,
                &a, &argc, &argv))
    return TT_EXIT_USAGE;
  const char *op = NULL;
  int rc = tt_op_arg(&a, argc, argv, "tune", &op);
  if (rc != TT_EXIT_OK)
    return rc;
  /* A kernel file's @kernel.autotune budget and cache, unless the command line gives them. */
  const TsOpDef *def = ts_op_lookup(op);
  if (a.budget == -1 && a.budget_ms == 0 && ts_op_kernel_budget_ms(def) > 0)
    a.budget_ms = ts_op_kernel_budget_ms(def);
  if (a.db == NULL && ts_op_kernel_cache(def) != NULL) {
    const char *cache = ts_op_kernel_cache(def);
    a.db = g_str_has_prefix(cache, "~/") ? g_build_filename(g_get_home_dir(), cache + 2, NULL)
                                         : g_strdup(cache);
  }
  if (a.budget < -1 || !(a.budget_ms >= 0) || !isfinite(a.budget_ms) || !(a.timeout_s > 0) ||
      !isfinite(a.timeout_s))
    return tt_usage("--budget, --budget-ms and --timeout must be positive numbers");
  /* Without either limit a tune never ends. */
  if (a.budget == 0 && a.budget_ms == 0)
    return tt_usage("--budget 0 lifts the evaluation limit and needs --budget-ms, a wall-clock "
                    "limit; give a count of evaluations, or both");
  g_autoptr(GError) error = NULL;
  g_autoptr(TsOpInstance) inst = NULL;
  g_autoptr(TsBackend) backend = NULL;
  g_autoptr(TsDb) db = NULL;
  rc = tt_open(op, &a, TS_DB_OPEN_DEFAULT, &inst, &backend, &db);
  if (rc != TT_EXIT_OK)
    return rc;

  TsTuneConfig cfg;
  ts_tune_config_init(&cfg);
  g_autofree char *exe = tt_self_exe();
  cfg.inst = inst;
  cfg.backend = backend;
  cfg.db = db;
  cfg.space = a.space;
  if (a.strategy)
    cfg.strategy = a.strategy;
  cfg.seed = (guint64)a.seed;
  cfg.run.seed = (guint64)a.seed;
  /* --budget-ms alone means time is the only limit. */
  cfg.budget_evals = a.budget >= 0 ? (guint)a.budget : a.budget_ms > 0 ? 0 : cfg.budget_evals;
  cfg.budget_ms = a.budget_ms;
  cfg.worker_exe = exe;
  cfg.timeout_s = a.timeout_s;
  if (ts_tune_mpi_size() > 1) {
    g_autofree char *device = tt_device_text(backend);
    cfg.farm = ts_tune_mpi_farm(device, &error);
    if (cfg.farm == NULL)
      return tt_fail(TT_EXIT_MACHINE, error);
  }
  Display d = {.tty = isatty(STDOUT_FILENO), .quiet = a.json, .budget = cfg.budget_evals};
  cfg.progress = on_progress;
  cfg.progress_data = &d;

  if (!a.json) {
    g_autofree char *what = ts_op_instance_describe(inst);
    g_autofree char *budget = cfg.budget_evals ? g_strdup_printf("%u evaluations", cfg.budget_evals)
                                               : g_strdup_printf("%.0f ms", cfg.budget_ms);
    g_print("tuning %s on %s (%s), strategy %s, budget %s\n", what, ts_backend_name(backend),
            ts_backend_describe(backend)->name, cfg.strategy, budget);
    g_print("cache %s\n", ts_db_path(db));
    if (cfg.farm)
      g_print("distributed over %d MPI ranks: rank 0 searches and stores, every rank measures "
              "in its own worker\n", ts_tune_mpi_size());
  }
  /* Ceilings first, on a quiet machine, and once per device: the table reports against them. */
  gint64 w_id, d_id, t_id;
  g_autoptr(TsProfCeilings) ceil = NULL;
  if (!ts_tune_key_ids(db, inst, backend, &w_id, &d_id, &t_id, &error) ||
      (ceil = tt_ceilings(db, backend, d_id, FALSE, a.json, &error)) == NULL)
    return tt_fail(tt_error_code(error), error);
  cfg.ceilings = ceil;
  gboolean model = g_strcmp0(cfg.strategy, "model") == 0;
  g_autoptr(TsCostModel) prior = model ? load_prior(db, inst, backend, a.json) : NULL;
  cfg.prior = prior;
  /* Started after the ceilings and the prior, so the timeline is the search alone. No backend:
   * the tuner attaches the trace to it only while it compiles (ts-tune.h says why). */
  gboolean profile = a.profile || a.trace_output != NULL;
  g_auto(TtTimeline) tl = {0};
  if (profile) {
    g_autofree char *range = g_strdup_printf("tessera: tune %s", argv[1]);
    tt_timeline_start(&tl, NULL, range);
    cfg.trace = tl.trace;
  }
  g_auto(TsTuneSummary) sum = {0};
  gboolean tuned = ts_tune_run(&cfg, &sum, &error);
  if (profile)
    tt_timeline_stop(&tl);
  if (!tuned) {
    if (d.tty && !a.json)
      g_print("\n");
    return tt_fail(tt_error_code(error), error);
  }
  if (d.tty && !a.json)
    g_print("\n");
  if (model)
    retrain_stored(db, backend, a.json);
  g_autoptr(GPtrArray) trials = ts_db_list_trials(db, sum.workload_id, sum.device_id,
                                                  sum.toolchain_id, TS_DB_ORDER_BEST_FIRST, &error);
  if (trials == NULL)
    return tt_fail(TT_EXIT_MACHINE, error);
  gint64 profile_id =
    profile ? store_session(&tl, db, &sum, &cfg, backend, a.trace_output, &error) : 0;
  if (profile && profile_id == 0)
    return tt_fail(TT_EXIT_MACHINE, error);
  if (a.json) {
    print_json(&sum, trials, inst, (guint)MAX(a.top, 0), profile_id);
  } else {
    g_print("%u measured (%u ok, %u failed), %u pruned, %u resumed from the cache; %" G_GUINT64_FORMAT
            " valid points%s; %.1f s\n",
            sum.n_measured, sum.n_ok, sum.n_failed, sum.n_pruned, sum.n_resumed, sum.n_valid,
            sum.exhausted ? ", all explored" : "", sum.elapsed_ms / 1e3);
    if (sum.n_remeasured)
      g_print("%u incumbent best(s) measured again: their samples were too spread (a busy "
              "machine) to judge faster-looking candidates against\n",
              sum.n_remeasured);
    if (sum.n_seeds)
      g_print("warm start: %u configurations that were fastest for this workload on %u other "
              "device(s) or toolchain(s) in the cache, the best of them measured first\n",
              sum.n_seeds, sum.n_seed_keys);
    if (sum.n_shared || sum.n_pending)
      g_print("%u proposed points were left to other tuners of this workload running at the "
              "same time: %u measured by them, %u still being measured when this run ended\n",
              sum.n_shared + sum.n_pending, sum.n_shared, sum.n_pending);
    print_table(trials, inst, backend, (guint)MAX(a.top, 0), ceil, sum.best_trial_id);
    if (sum.best_trial_id) {
      g_print("\nbest: %s  (%.4f ms)\n", sum.best_schedule, sum.best_median_ns / 1e6);
      /* Trials come fastest median first: a faster-looking one that is not the best lost the
       * significance test (ts_stats_faster), which users would otherwise take for a bug. */
      const TsDbTrial *first = trials->len ? g_ptr_array_index(trials, 0) : NULL;
      if (first && first->id != sum.best_trial_id && first->status == TS_DB_TRIAL_OK &&
          first->median_ns < sum.best_median_ns)
        g_print("(rank 1's median is %.1f%% lower, within the noise of the two trials' samples: "
                "the cache replaces its best only for a trial faster at p < 0.01, one-sided "
                "Mann-Whitney U; * marks the best)\n",
                100.0 * (1.0 - first->median_ns / sum.best_median_ns));
    } else
      g_print("\nno candidate verified: nothing cached as best\n");
    if (profile) {
      tt_timeline_print(&tl);
      if (a.trace_output)
        g_print("trace      %s (open in https://ui.perfetto.dev)\n", a.trace_output);
      g_print("profile    %" G_GINT64_FORMAT " (kind tune) in %s; 'tessera-tune profile export %"
              G_GINT64_FORMAT " --output FILE.json' writes its Chrome trace\n",
              profile_id, ts_db_path(db), profile_id);
    }
  }
  return sum.best_trial_id ? TT_EXIT_OK : TT_EXIT_CANDIDATE;
}
