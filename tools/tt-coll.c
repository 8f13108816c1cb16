/* tt-coll.c — `tessera-tune all_reduce|all_gather|reduce_scatter ...` (a collective's tune, a
 * launch of its ranks per candidate) and `tessera-tune coll-run` (what each rank of such a
 * launch runs). */
#include "config.h"

#include <math.h>
#include <string.h>

#include "tt-cli.h"
#include "ts-coll-space.h"
#include "ts-coll-tune.h"
#include "ts-tune-mpi.h"

static void
print_progress(const TsCollProgress *p, gpointer data)
{
  (void)data;
  if (isnan(p->median_ns))
    g_print("%4u  %-48s %-13s %s\n", p->index, p->schedule, p->status, p->message);
  else
    g_print("%4u  %-48s ok %12.1f us  algbw %8.3f GB/s  busbw %8.3f GB/s%s\n", p->index,
            p->schedule, p->median_ns * 1e-3, p->algbw * 1e-9, p->busbw * 1e-9,
            p->median_ns == p->best_ns ? "  *" : "");
}

static void
json_trials(JsonBuilder *b, TsDb *db, const TsCollWorkload *w, const TsCollTuneSummary *s,
            GError **error)
{
  g_autoptr(GPtrArray) trials = ts_db_list_trials(db, s->workload_id, s->device_id,
                                                  s->toolchain_id, TS_DB_ORDER_BEST_FIRST, error);
  json_builder_set_member_name(b, "trials");
  json_builder_begin_array(b);
  for (guint i = 0; trials && i < trials->len; i++) {
    const TsDbTrial *t = g_ptr_array_index(trials, i);
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "schedule");
    json_builder_add_string_value(b, t->schedule);
    json_builder_set_member_name(b, "status");
    json_builder_add_string_value(b, ts_db_trial_status_name(t->status));
    if (t->status == TS_DB_TRIAL_OK) {
      json_builder_set_member_name(b, "median_ns");
      json_builder_add_double_value(b, t->median_ns);
      json_builder_set_member_name(b, "busbw_GBps");
      json_builder_add_double_value(b, ts_coll_busbw(w, t->median_ns) * 1e-9);
    }
    json_builder_set_member_name(b, "message");
    json_builder_add_string_value(b, t->error_text ? t->error_text : "");
    json_builder_set_member_name(b, "metrics");
    g_autoptr(JsonNode) m = t->metrics_json ? json_from_string(t->metrics_json, NULL) : NULL;
    json_builder_add_value(b, m ? g_steal_pointer(&m) : json_node_new(JSON_NODE_NULL));
    json_builder_end_object(b);
  }
  json_builder_end_array(b);
}

static void
print_json(TsDb *db, const TsCollWorkload *w, const TsCollTuneSummary *s)
{
  g_autoptr(JsonBuilder) b = json_builder_new();
  g_autofree char *shape = ts_coll_workload_shape(w);
  json_builder_begin_object(b);
#define STR(k, v)                                                                              \
  do {                                                                                         \
    json_builder_set_member_name(b, k);                                                        \
    json_builder_add_string_value(b, v);                                                       \
  } while (0)
#define INT(k, v)                                                                              \
  do {                                                                                         \
    json_builder_set_member_name(b, k);                                                        \
    json_builder_add_int_value(b, v);                                                          \
  } while (0)
  STR("op", ts_coll_kind_name(w->kind));
  STR("shape", shape);
  STR("dtype", ts_coll_dtype_name(w->dtype));
  INT("ranks", w->ranks);
  STR("backend", "mpi");
  STR("device", s->device_name);
  STR("topology", s->topology);
  STR("library", s->library);
  json_builder_set_member_name(b, "oversubscribed");
  json_builder_add_boolean_value(b, s->oversubscribed);
  INT("n_resumed", s->n_resumed);
  INT("n_measured", s->n_measured);
  INT("n_ok", s->n_ok);
  INT("n_failed", s->n_failed);
  INT("n_valid", (gint64)s->n_valid);
  json_builder_set_member_name(b, "exhausted");
  json_builder_add_boolean_value(b, s->exhausted);
  json_builder_set_member_name(b, "best");
  if (s->best_trial_id) {
    json_builder_begin_object(b);
    STR("schedule", s->best_schedule);
    json_builder_set_member_name(b, "median_ns");
    json_builder_add_double_value(b, s->best_median_ns);
    json_builder_set_member_name(b, "algbw_GBps");
    json_builder_add_double_value(b, ts_coll_algbw(w, s->best_median_ns) * 1e-9);
    json_builder_set_member_name(b, "busbw_GBps");
    json_builder_add_double_value(b, ts_coll_busbw(w, s->best_median_ns) * 1e-9);
    if (!isnan(s->default_median_ns)) {
      json_builder_set_member_name(b, "speedup_vs_default");
      json_builder_add_double_value(b, s->default_median_ns / s->best_median_ns);
    }
    json_builder_end_object(b);
  } else {
    json_builder_add_null_value(b);
  }
#undef STR
#undef INT
  json_trials(b, db, w, s, NULL);
  json_builder_end_object(b);
  g_autoptr(JsonNode) root = json_builder_get_root(b);
  g_autofree char *text = json_to_string(root, TRUE);
  g_print("%s\n", text);
}

int
tt_cmd_coll(int argc, char **argv)
{
  g_auto(TtArgs) a = {.seed = 1, .timeout_s = 60};
  const char *op = argv[0];
  g_autofree char *name = g_strdup(op);
  if (!tt_parse(name, "--shape BYTES=N [--ranks R] [--dtype f32|bf16|f16]",
                "Tune a collective: every point of its space is run by a launch of its own "
                "(mpirun -n R tessera-tune coll-run ...: Open MPI reads its collective settings "
                "at MPI_Init), verified against the exact sums and timed as nccl-tests does; "
                "every trial is stored in the schedule cache, keyed by op, size, dtype, ranks "
                "and topology. --backend mpi (the default; nccl on GPUs is to come).",
                TT_OPT_WORKLOAD | TT_OPT_SPACE | TT_OPT_BACKEND | TT_OPT_SEED | TT_OPT_JSON |
                  TT_OPT_DB | TT_OPT_TUNE | TT_OPT_SAMPLES | TT_OPT_COLL,
                &a, &argc, &argv))
    return TT_EXIT_USAGE;
  if (argc > 1)
    return tt_usage("unexpected argument '%s'", argv[1]);
  const char *backend = a.backend ? a.backend : "mpi";
  if (strcmp(backend, "mpi") != 0)
    return tt_usage("%s: no collective backend '%s' (mpi; nccl is not built yet)", op, backend);
  g_autoptr(GError) error = NULL;
  if (a.shape == NULL)
    return tt_usage("--shape is required (%s needs BYTES, each rank's input: e.g. --shape "
                    "BYTES=1048576)", op);
  guint ranks = a.ranks > 0 ? (guint)a.ranks : MAX(g_get_num_processors(), 2u);
  if (a.ranks < 0)
    return tt_usage("--ranks must be positive");
  TsCollWorkload w;
  if (!ts_coll_workload_parse(&w, op, a.shape, a.dtype ? a.dtype : "f32",
                              strstr(a.shape, "RANKS") ? (guint)MAX(a.ranks, 0) : ranks, &error))
    return tt_fail(TT_EXIT_USAGE, error);
  g_auto(GStrv) launcher = NULL;
  if (a.launcher && !g_shell_parse_argv(a.launcher, NULL, &launcher, &error))
    return tt_usage("--launcher: %s", error->message);
  g_autoptr(TsDb) db = tt_db(&a, TS_DB_OPEN_DEFAULT, &error);
  if (db == NULL)
    return tt_fail(tt_error_code(error), error);
  g_autofree char *exe = tt_self_exe();
  TsCollTuneConfig cfg;
  ts_coll_tune_config_init(&cfg);
  cfg.w = &w;
  cfg.db = db;
  cfg.backend = backend;
  cfg.space = a.space;
  if (a.strategy)
    cfg.strategy = a.strategy;
  cfg.seed = (guint64)a.seed;
  cfg.budget_evals = a.budget > 0 ? (guint)a.budget : 0;
  cfg.budget_ms = a.budget_ms;
  cfg.timeout_s = a.timeout_s > 0 ? a.timeout_s : 60;
  cfg.exe = exe;
  cfg.launcher = (const char *const *)launcher;
  if (a.samples > 0)
    cfg.samples = (guint)a.samples;
  if (!a.json) {
    cfg.progress = print_progress;
    g_autofree char *what = ts_coll_workload_describe(&w);
    g_print("%s on mpi: launching %u ranks per candidate\n", what, w.ranks);
  }
  g_auto(TsCollTuneSummary) sum = {0};
  if (!ts_coll_tune_run(&cfg, &sum, &error)) {
    int code = error->domain == TS_COLL_ERROR && error->code == TS_COLL_ERROR_LAUNCH
                 ? TT_EXIT_MACHINE
                 : tt_error_code(error);
    return tt_fail(code, error);
  }
  if (a.json) {
    print_json(db, &w, &sum);
  } else {
    g_print("%s, %s, %s: %u measured (%u ok, %u failed), %u stored before; %" G_GUINT64_FORMAT
            " valid points%s, %.1f s\n",
            sum.device_name, sum.topology, sum.library, sum.n_measured, sum.n_ok, sum.n_failed,
            sum.n_resumed, sum.n_valid, sum.exhausted ? ", all measured" : "",
            sum.elapsed_ms / 1000);
    if (sum.oversubscribed)
      g_print("note: %u ranks on %u cores: the ranks share cores, so these timings measure "
              "contention more than the links\n", w.ranks, g_get_num_processors());
    if (sum.best_trial_id) {
      g_print("best: %s  %.1f us  algbw %.3f GB/s  busbw %.3f GB/s", sum.best_schedule,
              sum.best_median_ns * 1e-3, ts_coll_algbw(&w, sum.best_median_ns) * 1e-9,
              ts_coll_busbw(&w, sum.best_median_ns) * 1e-9);
      if (!isnan(sum.default_median_ns))
        g_print("  (%.2fx Open MPI's default choice)", sum.default_median_ns / sum.best_median_ns);
      g_print("\n");
    } else {
      g_print("no verified trial\n");
    }
  }
  return sum.best_trial_id ? TT_EXIT_OK : TT_EXIT_CANDIDATE;
}

int
tt_cmd_coll_run(int argc, char **argv)
{
  g_autofree char *shape = NULL, *dtype = NULL;
  gint64 seed = 1;
  gint warmup = 5, samples = 10;
  double round_ms = 20;
  gboolean probe = FALSE;
  GOptionEntry entries[] = {
    {"shape", 0, 0, G_OPTION_ARG_STRING, &shape, "BYTES=N[,RANKS=R]", "DIMS"},
    {"dtype", 0, 0, G_OPTION_ARG_STRING, &dtype, "f32, bf16 or f16", "DTYPE"},
    {"seed", 0, 0, G_OPTION_ARG_INT64, &seed, "Input data seed", "N"},
    {"warmup", 0, 0, G_OPTION_ARG_INT, &warmup, "Untimed calls", "N"},
    {"samples", 0, 0, G_OPTION_ARG_INT, &samples, "Timed rounds", "N"},
    {"round-ms", 0, 0, G_OPTION_ARG_DOUBLE, &round_ms, "Length of a timed round", "MS"},
    {"probe", 0, 0, G_OPTION_ARG_NONE, &probe, "Only say who the ranks are", NULL},
    G_OPTION_ENTRY_NULL,
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new("OP --shape DIMS --dtype DTYPE");
  g_option_context_set_summary(ctx, "Internal: what each rank of a collective's launch runs "
                                    "(started by 'tessera-tune all_reduce ...' under mpirun).");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &error))
    return tt_usage("%s", error->message);
  if (!probe && argc != 2)
    return tt_usage("coll-run needs one op (all_reduce, all_gather, reduce_scatter)");
  if (warmup < 0 || samples < 1 || !(round_ms > 0))
    return tt_usage("coll-run: --warmup >= 0, --samples >= 1 and --round-ms > 0");
  if (!ts_tune_mpi_init(&error))
    return tt_fail(TT_EXIT_MACHINE, error);
  TsCollRunArgs args = {
    .op = probe ? NULL : argv[1],
    .shape = shape,
    .dtype = dtype ? dtype : "f32",
    .seed = (guint64)seed,
    .warmup = (guint)warmup,
    .samples = (guint)samples,
    .round_ms = round_ms,
    .probe = probe,
  };
  return ts_tune_mpi_coll_run(&args);
}
