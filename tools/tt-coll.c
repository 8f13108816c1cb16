/* tt-coll.c — `tessera-tune all_reduce|all_gather|reduce_scatter ...` (a collective's tune, a
 * launch of its ranks per candidate) and `tessera-tune coll-run` (what each rank of such a
 * launch runs). */
#include "config.h"

#include <math.h>
#include <string.h>

#include "tt-cli.h"
#include "ts-coll-nccl.h"
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
json_trials(JsonBuilder *b, TsDb *db, const TsCollWorkload *w, gint64 workload_id,
            gint64 device_id, gint64 toolchain_id)
{
  g_autoptr(GPtrArray) trials = ts_db_list_trials(db, workload_id, device_id, toolchain_id,
                                                  TS_DB_ORDER_BEST_FIRST, NULL);
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
json_object(JsonBuilder *b, TsDb *db, const char *backend, const TsCollWorkload *w,
            const TsCollTuneSummary *s)
{
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
  STR("backend", backend);
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
  json_trials(b, db, w, s->workload_id, s->device_id, s->toolchain_id);
  json_builder_end_object(b);
}

/* The shapes a --shape names: BYTES=N as it is, or a sweep BYTES=A..B (doubling, as
 * nccl-tests -f 2) or BYTES=A..B:xF, each size with the shape's other dims. */
static GPtrArray *
expand_shape(const char *shape, GError **error)
{
  GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
  g_auto(GStrv) items = g_strsplit(shape, ",", -1);
  int sweep = -1;
  for (int i = 0; items[i]; i++)
    if (strstr(items[i], ".."))
      sweep = i;
  if (sweep < 0) {
    g_ptr_array_add(out, g_strdup(shape));
    return out;
  }
  g_autofree char *item = g_strdup(items[sweep]);
  char *eq = strchr(item, '=');
  char *dots = strstr(item, "..");
  char *colon = strchr(item, ':');
  guint64 lo = 0, hi = 0, factor = 2;
  if (eq)
    *eq = '\0';
  if (dots)
    *dots = '\0';
  if (colon)
    *colon = '\0';
  if (eq == NULL || strcmp(g_strstrip(item), "BYTES") != 0 || !ts_coll_parse_bytes(eq + 1, &lo) ||
      !ts_coll_parse_bytes(dots + 2, &hi) || hi < lo ||
      (colon && (colon[1] != 'x' || !g_ascii_string_to_unsigned(colon + 2, 10, 2, 1024, &factor,
                                                                  NULL)))) {
    g_set_error(error, TS_COLL_ERROR, TS_COLL_ERROR_SHAPE,
                "'%s' is not a size sweep: BYTES=MIN..MAX (doubling) or BYTES=MIN..MAX:xF, "
                "sizes in bytes or with K, M, G (e.g. BYTES=4K..64M:x4)", items[sweep]);
    g_ptr_array_unref(out);
    return NULL;
  }
  for (guint64 b = lo; b <= hi && out->len < 64; b *= factor) {
    g_autoptr(GString) s = g_string_new(NULL);
    for (int i = 0; items[i]; i++) {
      if (s->len)
        g_string_append_c(s, ',');
      if (i == sweep)
        g_string_append_printf(s, "BYTES=%" G_GUINT64_FORMAT, b);
      else
        g_string_append(s, items[i]);
    }
    g_ptr_array_add(out, g_string_free(g_steal_pointer(&s), FALSE));
    if (b > G_MAXUINT64 / factor)
      break;
  }
  return out;
}

static void
print_sweep(const TsCollWorkload *ws, const TsCollTuneSummary *sums, guint n)
{
  g_print("\n%12s  %-48s %12s %12s %12s %12s %8s\n", "BYTES", "best", "time us", "algbw GB/s",
          "busbw GB/s", "default", "speedup");
  for (guint i = 0; i < n; i++) {
    const TsCollWorkload *w = &ws[i];
    const TsCollTuneSummary *s = &sums[i];
    if (!s->best_trial_id) {
      g_print("%12" G_GUINT64_FORMAT "  %-48s\n", w->bytes, "(no verified trial)");
      continue;
    }
    g_print("%12" G_GUINT64_FORMAT "  %-48s %12.1f %12.3f %12.3f ", w->bytes, s->best_schedule,
            s->best_median_ns * 1e-3, ts_coll_algbw(w, s->best_median_ns) * 1e-9,
            ts_coll_busbw(w, s->best_median_ns) * 1e-9);
    if (isnan(s->default_median_ns))
      g_print("%12s %8s\n", "-", "-");
    else
      g_print("%12.3f %7.2fx\n", ts_coll_busbw(w, s->default_median_ns) * 1e-9,
              s->default_median_ns / s->best_median_ns);
  }
  g_print("(busbw: nccl-tests' bus bandwidth; default: the library's own choice, measured in the "
          "same run)\n");
}

/* The workload of OP --shape [--ranks] [--dtype]: RANKS from the shape, else --ranks, else one a
 * core (at least 2); a sweep's shape is one of its sizes. */
static gboolean
coll_workload(const char *op, const TtArgs *a, const char *shape, TsCollWorkload *w,
              GError **error)
{
  guint ranks = a->ranks > 0 ? (guint)a->ranks : MAX(g_get_num_processors(), 2u);
  return ts_coll_workload_parse(w, op, shape, a->dtype ? a->dtype : "f32",
                                strstr(shape, "RANKS") ? (guint)MAX(a->ranks, 0) : ranks, error);
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
                "and topology. BYTES=MIN..MAX[:xF] tunes a sweep of sizes (doubling, or by F). "
                "--backend mpi (the default: Open MPI's algorithms) or nccl (NCCL_ALGO, "
                "NCCL_PROTO, channels, buffer size; a GPU per rank).",
                TT_OPT_WORKLOAD | TT_OPT_SPACE | TT_OPT_BACKEND | TT_OPT_SEED | TT_OPT_JSON |
                  TT_OPT_DB | TT_OPT_TUNE | TT_OPT_SAMPLES | TT_OPT_COLL,
                &a, &argc, &argv))
    return TT_EXIT_USAGE;
  if (argc > 1)
    return tt_usage("unexpected argument '%s'", argv[1]);
  const char *backend = a.backend ? a.backend : "mpi";
  if (!ts_coll_backend_known(backend))
    return tt_usage("%s: no collective backend '%s' (mpi, nccl)", op, backend);
  g_autoptr(GError) error = NULL;
  if (a.shape == NULL)
    return tt_usage("--shape is required (%s needs BYTES, each rank's input: e.g. --shape "
                    "BYTES=1048576)", op);
  if (a.ranks < 0)
    return tt_usage("--ranks must be positive");
  g_autoptr(GPtrArray) shapes = expand_shape(a.shape, &error);
  if (shapes == NULL)
    return tt_fail(TT_EXIT_USAGE, error);
  /* Every size is checked before anything is launched. */
  g_autofree TsCollWorkload *ws = g_new0(TsCollWorkload, shapes->len);
  for (guint i = 0; i < shapes->len; i++) {
    if (!coll_workload(op, &a, g_ptr_array_index(shapes, i), &ws[i], &error))
      return tt_fail(TT_EXIT_USAGE, error);
  }
  g_auto(GStrv) launcher = NULL;
  if (a.launcher && !g_shell_parse_argv(a.launcher, NULL, &launcher, &error))
    return tt_usage("--launcher: %s", error->message);
  g_autoptr(TsDb) db = tt_db(&a, TS_DB_OPEN_DEFAULT, &error);
  if (db == NULL)
    return tt_fail(tt_error_code(error), error);
  g_autofree char *exe = tt_self_exe();
  g_autofree TsCollTuneSummary *sums = g_new0(TsCollTuneSummary, shapes->len);
  gboolean all_verified = TRUE;
  g_autoptr(JsonBuilder) jb = json_builder_new();
  if (shapes->len > 1) {
    json_builder_begin_object(jb);
    json_builder_set_member_name(jb, "sizes");
    json_builder_begin_array(jb);
  }
  int rc = TT_EXIT_OK;
  for (guint i = 0; i < shapes->len && rc == TT_EXIT_OK; i++) {
    TsCollWorkload *w = &ws[i];
    TsCollTuneSummary *sum = &sums[i];
    TsCollTuneConfig cfg;
    ts_coll_tune_config_init(&cfg);
    cfg.w = w;
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
      g_autofree char *what = ts_coll_workload_describe(w);
      g_print("%s%s on %s: launching %u rank%s per candidate\n", i ? "\n" : "", what, backend,
              w->ranks, w->ranks == 1 ? "" : "s");
    }
    if (!ts_coll_tune_run(&cfg, sum, &error)) {
      rc = error->domain == TS_COLL_ERROR && error->code == TS_COLL_ERROR_LAUNCH
             ? TT_EXIT_MACHINE
             : tt_error_code(error);
      break;
    }
    all_verified = all_verified && sum->best_trial_id != 0;
    if (a.json) {
      json_object(jb, db, backend, w, sum);
      continue;
    }
    g_print("%s, %s, %s: %u measured (%u ok, %u failed), %u stored before; %" G_GUINT64_FORMAT
            " valid points%s, %.1f s\n",
            sum->device_name, sum->topology, sum->library, sum->n_measured, sum->n_ok,
            sum->n_failed, sum->n_resumed, sum->n_valid, sum->exhausted ? ", all measured" : "",
            sum->elapsed_ms / 1000);
    if (sum->oversubscribed && i == 0)
      g_print("note: %u ranks on %u cores: the ranks share cores, so these timings measure "
              "contention more than the links\n", w->ranks, g_get_num_processors());
    if (sum->best_trial_id) {
      g_print("best: %s  %.1f us  algbw %.3f GB/s  busbw %.3f GB/s", sum->best_schedule,
              sum->best_median_ns * 1e-3, ts_coll_algbw(w, sum->best_median_ns) * 1e-9,
              ts_coll_busbw(w, sum->best_median_ns) * 1e-9);
      if (!isnan(sum->default_median_ns))
        g_print("  (%.2fx the library's own choice)",
                sum->default_median_ns / sum->best_median_ns);
      g_print("\n");
    } else {
      g_print("no verified trial\n");
    }
  }
  if (rc != TT_EXIT_OK) {
    for (guint i = 0; i < shapes->len; i++)
      ts_coll_tune_summary_clear(&sums[i]);
    return tt_fail(rc, error);
  }
  if (a.json) {
    if (shapes->len > 1) {
      json_builder_end_array(jb);
      json_builder_end_object(jb);
    }
    g_autoptr(JsonNode) root = json_builder_get_root(jb);
    g_autofree char *text = json_to_string(root, TRUE);
    g_print("%s\n", text);
  } else if (shapes->len > 1) {
    print_sweep(ws, sums, shapes->len);
  }
  for (guint i = 0; i < shapes->len; i++)
    ts_coll_tune_summary_clear(&sums[i]);
  return all_verified ? TT_EXIT_OK : TT_EXIT_CANDIDATE;
}

int
tt_cmd_coll_run(int argc, char **argv)
{
  g_autofree char *shape = NULL, *dtype = NULL;
  gint64 seed = 1;
  gint warmup = 5, samples = 10;
  double round_ms = 20;
  gboolean probe = FALSE;
  g_autofree char *backend = NULL;
  GOptionEntry entries[] = {
    {"backend", 0, 0, G_OPTION_ARG_STRING, &backend, "mpi (default) or nccl", "NAME"},
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
  gboolean nccl = g_strcmp0(backend, "nccl") == 0;
  if (backend && !nccl && strcmp(backend, "mpi") != 0)
    return tt_usage("coll-run: no collective backend '%s' (mpi, nccl)", backend);
  TsCollRunArgs args = {
    .op = probe ? NULL : argv[1],
    .backend = nccl ? "nccl" : "mpi",
    .shape = shape,
    .dtype = dtype ? dtype : "f32",
    .seed = (guint64)seed,
    .warmup = (guint)warmup,
    .samples = (guint)samples,
    .round_ms = round_ms,
    .probe = probe,
  };
  if (nccl && !ts_tune_mpi_launched()) /* one rank needs no MPI */
    return ts_coll_nccl_run(&args, ts_coll_comm_alone());
  /* A GPU per local rank, as for a distributed tune (unless the user chose). */
  const char *local = g_getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  if (nccl && local && !g_getenv("CUDA_VISIBLE_DEVICES"))
    g_setenv("CUDA_VISIBLE_DEVICES", local, TRUE);
  if (!ts_tune_mpi_init(&error))
    return tt_fail(TT_EXIT_MACHINE, error);
  return nccl ? ts_coll_nccl_run(&args, ts_tune_mpi_coll_comm()) : ts_tune_mpi_coll_run(&args);
}

/* ---- coll-model: the α–β model of each machine in the cache, and of NVLink machines ---- */

static const double predict_sizes[] = {1 << 20, 64 << 20, 1 << 30};
static const guint predict_ranks[] = {8, 72};

static void
add_prediction(JsonBuilder *b, const TsCollLinks *links, TsCollKind kind, const char *algorithm,
               guint ranks, double bytes)
{
  TsCollWorkload w = {.kind = kind, .dtype = TS_COLL_F32, .bytes = (guint64)bytes, .ranks = ranks};
  double s = ts_cost_coll_predict(links, kind, algorithm, ranks, bytes, 0);
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "op");
  json_builder_add_string_value(b, ts_coll_kind_name(kind));
  json_builder_set_member_name(b, "algorithm");
  json_builder_add_string_value(b, algorithm);
  json_builder_set_member_name(b, "ranks");
  json_builder_add_int_value(b, ranks);
  json_builder_set_member_name(b, "bytes");
  json_builder_add_double_value(b, bytes);
  json_builder_set_member_name(b, "seconds");
  json_builder_add_double_value(b, s);
  json_builder_set_member_name(b, "busbw_GBps");
  json_builder_add_double_value(b, ts_coll_busbw(&w, s * 1e9) * 1e-9);
  json_builder_end_object(b);
}

static void
print_predictions(const TsCollLinks *links, const char *const *algorithms, const char *unit)
{
  g_print("  %-20s %6s %12s %14s %12s\n", "all_reduce", "ranks", "BYTES", "time us",
          "busbw GB/s");
  for (guint a = 0; algorithms[a]; a++)
    for (guint r = 0; r < G_N_ELEMENTS(predict_ranks); r++)
      for (guint i = 0; i < G_N_ELEMENTS(predict_sizes); i++) {
        TsCollWorkload w = {.kind = TS_COLL_ALL_REDUCE, .dtype = TS_COLL_F32,
                            .bytes = (guint64)predict_sizes[i], .ranks = predict_ranks[r]};
        double s = ts_cost_coll_predict(links, TS_COLL_ALL_REDUCE, algorithms[a],
                                        predict_ranks[r], predict_sizes[i], 0);
        g_print("  %-20s %6u %12.0f %14.1f %12.1f\n", algorithms[a], predict_ranks[r],
                predict_sizes[i], s * 1e6, ts_coll_busbw(&w, s * 1e9) * 1e-9);
      }
  g_print("  (%s)\n", unit);
}

int
tt_cmd_coll_model(int argc, char **argv)
{
  g_auto(TtArgs) a = {0};
  if (!tt_parse("coll-model", "",
                "Fit the α–β–γ model of collectives (latency a message step, time a byte over "
                "the busiest link, time a byte reduced) to the verified collective trials of "
                "each machine and dtype in the schedule cache, and predict all_reduce at 8 and "
                "72 ranks; and the same predictions for NVLink machines from their published "
                "figures (not measured here).",
                TT_OPT_DB | TT_OPT_JSON, &a, &argc, &argv))
    return TT_EXIT_USAGE;
  if (argc > 1)
    return tt_usage("unexpected argument '%s'", argv[1]);
  g_autoptr(GError) error = NULL;
  g_autoptr(TsDb) db = tt_db(&a, TT_DB_READ, &error);
  if (db == NULL)
    return tt_fail(tt_error_code(error), error);
  g_autoptr(GPtrArray) keys = ts_db_list_trial_keys(db, &error);
  if (keys == NULL)
    return tt_fail(tt_error_code(error), error);
  /* machine + "\t" + dtype, in the order first seen */
  g_autoptr(GPtrArray) groups = g_ptr_array_new_with_free_func(g_free);
  for (guint k = 0; k < keys->len; k++) {
    const TsDbTrialKey *key = g_ptr_array_index(keys, k);
    TsCollWorkload w;
    if (!ts_coll_backend_known(key->device.backend) ||
        !ts_coll_workload_parse(&w, key->op, key->shape, key->dtype, 0, NULL))
      continue;
    g_autofree char *m = ts_coll_machine(key->device.name, key->device.arch);
    g_autofree char *g = g_strdup_printf("%s\t%s", m, key->dtype);
    if (!g_ptr_array_find_with_equal_func(groups, g, g_str_equal, NULL))
      g_ptr_array_add(groups, g_steal_pointer(&g));
  }
  static const char *const cpu_algorithms[] = {"ring", "rabenseifner", "recursive_doubling",
                                               NULL};
  static const char *const gpu_algorithms[] = {"ring", "tree", NULL};
  g_autoptr(JsonBuilder) b = json_builder_new();
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "machines");
  json_builder_begin_array(b);
  if (!a.json)
    g_print("α–β model of the collectives in %s\n", ts_db_path(db));
  if (!a.json && groups->len == 0)
    g_print("(no collective trials: tune some, e.g. tessera-tune all_reduce --shape "
            "BYTES=4K..16M:x4 --ranks 2)\n");
  for (guint gi = 0; gi < groups->len; gi++) {
    g_auto(GStrv) parts = g_strsplit(g_ptr_array_index(groups, gi), "\t", 2);
    TsCollWorkload probe;
    ts_coll_workload_parse(&probe, "all_reduce", "BYTES=4,RANKS=1", parts[1], 0, NULL);
    g_autoptr(GArray) obs = ts_coll_tune_observations(db, parts[0], probe.dtype, &error);
    if (obs == NULL)
      return tt_fail(tt_error_code(error), error);
    TsCollLinks links;
    guint used = 0;
    double err = NAN;
    g_autoptr(GError) fit_error = NULL;
    gboolean fitted = ts_cost_coll_fit((TsCollObservation *)obs->data, obs->len, &links, &used,
                                       &err, &fit_error);
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "machine");
    json_builder_add_string_value(b, parts[0]);
    json_builder_set_member_name(b, "dtype");
    json_builder_add_string_value(b, parts[1]);
    json_builder_set_member_name(b, "points");
    json_builder_add_int_value(b, used);
    if (!a.json)
      g_print("\n%s, %s: ", parts[0], parts[1]);
    if (!fitted) {
      json_builder_set_member_name(b, "error");
      json_builder_add_string_value(b, fit_error->message);
      json_builder_end_object(b);
      if (!a.json)
        g_print("%s\n", fit_error->message);
      continue;
    }
    json_builder_set_member_name(b, "base_us");
    json_builder_add_double_value(b, links.base_s * 1e6);
    json_builder_set_member_name(b, "alpha_us");
    json_builder_add_double_value(b, links.alpha_s * 1e6);
    json_builder_set_member_name(b, "beta_GBps");
    json_builder_add_double_value(b, links.beta_s_per_b > 0 ? 1e-9 / links.beta_s_per_b : 0);
    json_builder_set_member_name(b, "gamma_GBps");
    json_builder_add_double_value(b, links.gamma_s_per_b > 0 ? 1e-9 / links.gamma_s_per_b : 0);
    json_builder_set_member_name(b, "median_rel_err");
    json_builder_add_double_value(b, err);
    json_builder_set_member_name(b, "predictions");
    json_builder_begin_array(b);
    for (guint al = 0; cpu_algorithms[al]; al++)
      for (guint r = 0; r < G_N_ELEMENTS(predict_ranks); r++)
        for (guint i = 0; i < G_N_ELEMENTS(predict_sizes); i++)
          add_prediction(b, &links, TS_COLL_ALL_REDUCE, cpu_algorithms[al], predict_ranks[r],
                         predict_sizes[i]);
    json_builder_end_array(b);
    json_builder_end_object(b);
    if (a.json)
      continue;
    g_print("%u trials, median error %.0f%%\n  per call %.2f us, a step %.2f us, links %.2f "
            "GB/s, reduction %.2f GB/s\n",
            used, err * 100, links.base_s * 1e6, links.alpha_s * 1e6,
            links.beta_s_per_b > 0 ? 1e-9 / links.beta_s_per_b : INFINITY,
            links.gamma_s_per_b > 0 ? 1e-9 / links.gamma_s_per_b : INFINITY);
    print_predictions(&links, cpu_algorithms, "predicted, not measured: more ranks than ran "
                                              "here, on the same kind of links");
  }
  json_builder_end_array(b);
  json_builder_set_member_name(b, "links");
  json_builder_begin_array(b);
  for (const char *const *n = ts_cost_coll_link_presets(); *n; n++) {
    TsCollLinks links;
    const char *about = NULL;
    ts_cost_coll_link_preset(*n, &links, &about);
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "name");
    json_builder_add_string_value(b, *n);
    json_builder_set_member_name(b, "about");
    json_builder_add_string_value(b, about);
    json_builder_set_member_name(b, "predictions");
    json_builder_begin_array(b);
    for (guint al = 0; gpu_algorithms[al]; al++)
      for (guint r = 0; r < G_N_ELEMENTS(predict_ranks); r++)
        for (guint i = 0; i < G_N_ELEMENTS(predict_sizes); i++)
          add_prediction(b, &links, TS_COLL_ALL_REDUCE, gpu_algorithms[al], predict_ranks[r],
                         predict_sizes[i]);
    json_builder_end_array(b);
    json_builder_end_object(b);
    if (!a.json) {
      g_print("\n%s: %s\n", *n, about);
      print_predictions(&links, gpu_algorithms, "from published figures; no GPU ran this");
    }
  }
  json_builder_end_array(b);
  json_builder_end_object(b);
  if (a.json) {
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    g_autofree char *text = json_to_string(root, TRUE);
    g_print("%s\n", text);
  }
  return TT_EXIT_OK;
}

/* ---- show and lookup of a collective ---- */

/* The keys (device, toolchain) holding trials of the workload, on `backend` (NULL: any). */
static GPtrArray *
coll_keys(TsDb *db, const TsCollWorkload *w, const char *backend, GError **error)
{
  g_autoptr(GPtrArray) keys = ts_db_list_trial_keys(db, error);
  if (keys == NULL)
    return NULL;
  g_autofree char *shape = ts_coll_workload_shape(w);
  GPtrArray *mine = g_ptr_array_new_with_free_func((GDestroyNotify)ts_db_trial_key_free);
  for (guint i = 0; i < keys->len; i++) {
    TsDbTrialKey *k = g_ptr_array_index(keys, i);
    if (g_strcmp0(k->op, ts_coll_kind_name(w->kind)) == 0 && g_strcmp0(k->shape, shape) == 0 &&
        g_strcmp0(k->dtype, ts_coll_dtype_name(w->dtype)) == 0 &&
        (backend == NULL || g_strcmp0(k->device.backend, backend) == 0))
      g_ptr_array_add(mine, g_ptr_array_steal_index(keys, i--));
  }
  return mine;
}

/* Returns whether the key has a best. */
static gboolean
show_key(TsDb *db, const TsCollWorkload *w, const TsDbTrialKey *k, guint limit, gboolean lookup,
         gboolean json, JsonBuilder *b)
{
  g_autoptr(GPtrArray) trials = ts_db_list_trials(db, k->workload_id, k->device_id,
                                                  k->toolchain_id, TS_DB_ORDER_BEST_FIRST, NULL);
  g_autoptr(TsDbTrial) best = ts_db_get_best(db, k->workload_id, k->device_id, k->toolchain_id,
                                             NULL);
  g_autoptr(TsSchedPoint) point = best ? ts_sched_point_parse(best->schedule, NULL) : NULL;
  g_auto(GStrv) env = point ? ts_coll_env_for(k->device.backend, w->kind, point, NULL) : NULL;
  g_autofree char *env_text = env ? g_strjoinv(" ", env) : g_strdup("");
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "backend");
  json_builder_add_string_value(b, k->device.backend);
  json_builder_set_member_name(b, "device");
  json_builder_add_string_value(b, k->device.name);
  json_builder_set_member_name(b, "topology");
  json_builder_add_string_value(b, k->device.arch);
  json_builder_set_member_name(b, "library");
  json_builder_add_string_value(b, k->compiler);
  json_builder_set_member_name(b, "best");
  if (best) {
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "trial");
    json_builder_add_int_value(b, best->id);
    json_builder_set_member_name(b, "schedule");
    json_builder_add_string_value(b, best->schedule);
    json_builder_set_member_name(b, "median_ns");
    json_builder_add_double_value(b, best->median_ns);
    json_builder_set_member_name(b, "busbw_GBps");
    json_builder_add_double_value(b, ts_coll_busbw(w, best->median_ns) * 1e-9);
    json_builder_set_member_name(b, "env");
    json_builder_add_string_value(b, env_text);
    json_builder_end_object(b);
  } else {
    json_builder_add_null_value(b);
  }
  if (!lookup)
    json_trials(b, db, w, k->workload_id, k->device_id, k->toolchain_id);
  json_builder_end_object(b);
  if (json)
    return best != NULL;
  g_print("%s on %s (%s), %s:\n", k->device.backend, k->device.name, k->device.arch, k->compiler);
  if (lookup) {
    if (best)
      g_print("  %s  %.1f us  busbw %.3f GB/s\n  run it with: %s\n", best->schedule,
              best->median_ns * 1e-3, ts_coll_busbw(w, best->median_ns) * 1e-9, env_text);
    else
      g_print("  no verified trial\n");
    return best != NULL;
  }
  g_print("%7s  %-13s %11s %11s  %-12s %s\n", "trial", "status", "median us", "busbw GB/s",
          "strategy", "schedule");
  for (guint i = 0; trials && i < MIN(limit, trials->len); i++) {
    const TsDbTrial *t = g_ptr_array_index(trials, i);
    gboolean ok = t->status == TS_DB_TRIAL_OK;
    g_autofree char *median = ok ? g_strdup_printf("%.1f", t->median_ns * 1e-3) : g_strdup("-");
    g_autofree char *bw = ok ? g_strdup_printf("%.3f", ts_coll_busbw(w, t->median_ns) * 1e-9)
                             : g_strdup("-");
    g_print("%s%6" G_GINT64_FORMAT "  %-13s %11s %11s  %-12s %s\n",
            best && best->id == t->id ? "*" : " ", t->id, ts_db_trial_status_name(t->status),
            median, bw, t->strategy ? t->strategy : "-", t->schedule);
  }
  return best != NULL;
}

int
tt_cmd_coll_show(int argc, char **argv, gboolean lookup)
{
  g_auto(TtArgs) a = {0};
  if (!tt_parse(lookup ? "lookup" : "show", "OP --shape BYTES=N [--ranks R]",
                lookup ? "The cached best of a collective on each machine that tuned it, with "
                         "the environment that runs it."
                       : "The stored trials of a collective, best first, on each machine that "
                         "tuned it.",
                TT_OPT_WORKLOAD | TT_OPT_BACKEND | TT_OPT_DB | TT_OPT_LIMIT | TT_OPT_JSON |
                  TT_OPT_COLL,
                &a, &argc, &argv))
    return TT_EXIT_USAGE;
  if (argc != 2)
    return tt_usage("%s takes one OP", lookup ? "lookup" : "show");
  if (a.shape == NULL)
    return tt_usage("--shape is required (BYTES, each rank's input: e.g. --shape BYTES=1M)");
  g_autoptr(GError) error = NULL;
  TsCollWorkload w;
  if (!coll_workload(argv[1], &a, a.shape, &w, &error))
    return tt_fail(TT_EXIT_USAGE, error);
  g_autoptr(TsDb) db = tt_db(&a, TT_DB_READ, &error);
  if (db == NULL)
    return tt_fail(tt_error_code(error), error);
  g_autoptr(GPtrArray) keys = coll_keys(db, &w, a.backend, &error);
  if (keys == NULL)
    return tt_fail(tt_error_code(error), error);
  g_autoptr(JsonBuilder) b = json_builder_new();
  json_builder_begin_array(b);
  gboolean any = FALSE; /* lookup's promise is an answer: none is a missing key, as a kernel's */
  for (guint i = 0; i < keys->len; i++)
    any |= show_key(db, &w, g_ptr_array_index(keys, i),
                    a.limit > 0 ? (guint)a.limit : G_MAXUINT, lookup, a.json, b);
  json_builder_end_array(b);
  if (a.json) {
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    g_autofree char *text = json_to_string(root, TRUE);
    g_print("%s\n", text);
  } else if (keys->len == 0) {
    g_autofree char *what = ts_coll_workload_describe(&w);
    g_print("(no trials stored for %s%s%s)\n", what, a.backend ? " on " : "",
            a.backend ? a.backend : "");
  }
  return !lookup || any ? TT_EXIT_OK : TT_EXIT_CANDIDATE;
}
