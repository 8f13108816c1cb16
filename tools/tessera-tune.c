/* tessera-tune — the command-line front of the workbench: option parsing shared by every
 * subcommand, the dispatcher, and the commands that need no schedule cache (lower, run, ops,
 * devices). Tuning and the cache commands live in tt-tune.c and tt-cache.c. */
#include "config.h"

#include <gio/gio.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ts-backend.h"
#include "ts-coll-space.h"
#include "ts-cuda.h"
#include "ts-op.h"
#include "ts-tune-mpi.h"
#include "ts-tune-worker.h"
#include "ts-tune.h"
#include "tt-cli.h"

const char *const TT_EXIT_HELP =
  "Exit status: 0 success; 1 no candidate succeeded (compile error, crash, timeout, wrong "
  "result);\n2 bad usage or input (unknown op, malformed shape, dtype, schedule, space or "
  "file); 3 no usable\ndevice, or a schedule-cache or I/O failure.";

void
tt_args_clear(TtArgs *a)
{
  g_free(a->shape);
  g_free(a->dtype);
  g_free(a->schedule);
  g_free(a->space);
  g_free(a->backend);
  g_free(a->stage);
  g_free(a->db);
  g_free(a->strategy);
  g_free(a->output);
  g_free(a->replay);
  g_strfreev(a->prior);
  g_free(a->launcher);
  g_free(a->arch);
  g_free(a->trace_output);
  g_free(a->kernel);
  g_free(a->reuse);
  g_free(a->where);
}

int
tt_fail(int code, const GError *error)
{
  g_printerr("tessera-tune: %s\n", error->message);
  return code;
}

int
tt_usage(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_printerr("tessera-tune: %s\nRun with --help for usage.\n", msg);
  return TT_EXIT_USAGE;
}

int
tt_error_code(const GError *error)
{
  if (error->domain == TS_BACKEND_ERROR)
    return error->code == TS_BACKEND_ERROR_COMPILE ? TT_EXIT_CANDIDATE : TT_EXIT_MACHINE;
  if (error->domain == TS_DB_ERROR)
    return error->code == TS_DB_ERROR_IMPORT || error->code == TS_DB_ERROR_INVALID
             ? TT_EXIT_USAGE
             : TT_EXIT_MACHINE;
  if (error->domain == G_IO_ERROR || error->domain == G_FILE_ERROR)
    return TT_EXIT_MACHINE;
  return TT_EXIT_USAGE;
}

gboolean
tt_parse(const char *name, const char *params, const char *summary, guint opts, TtArgs *a,
         int *argc, char ***argv)
{
  GOptionEntry all[] = {
    {"shape", 0, 0, G_OPTION_ARG_STRING, &a->shape, "Dims, e.g. M=1024,N=1024,K=1024", "DIMS"},
    {"dtype", 0, 0, G_OPTION_ARG_STRING, &a->dtype,
     "Storage dtype with policies, e.g. 'bf16 @accum(f32)' (default f32)", "DTYPE"},
    {"schedule", 0, 0, G_OPTION_ARG_STRING, &a->schedule,
     "Schedule point; knobs left out take the op's defaults", "POINT"},
    {"space", 0, 0, G_OPTION_ARG_STRING, &a->space,
     "Schedule space (default: the op's); knobs left out keep their default value", "SPACE"},
    {"backend", 0, 0, G_OPTION_ARG_STRING, &a->backend, "cpu, cuda or auto (default auto: cuda when a device is present)", "NAME"},
    {"seed", 0, 0, G_OPTION_ARG_INT64, &a->seed, "Seed of the search and the inputs (default 1)",
     "N"},
    {"json", 0, 0, G_OPTION_ARG_NONE, &a->json, "Print the result as JSON", NULL},
    {"stage", 0, 0, G_OPTION_ARG_STRING, &a->stage,
     "graph, schedule, tile, target or all (default all)", "STAGE"},
    {"db", 0, 0, G_OPTION_ARG_FILENAME, &a->db,
     "Schedule cache (default $XDG_CACHE_HOME/tessera/schedules.db)", "PATH"},
    {"strategy", 0, 0, G_OPTION_ARG_STRING, &a->strategy,
     "exhaustive, random, annealing, evolutionary or model (default model)", "NAME"},
    {"budget", 0, 0, G_OPTION_ARG_INT, &a->budget,
     "Evaluations to spend (default 50; 0 with --budget-ms: time only)", "N"},
    {"budget-ms", 0, 0, G_OPTION_ARG_DOUBLE, &a->budget_ms, "Wall-clock budget in ms", "MS"},
    {"timeout", 0, 0, G_OPTION_ARG_DOUBLE, &a->timeout_s,
     "Seconds a candidate may run before it is killed (default 60)", "S"},
    {"top", 0, 0, G_OPTION_ARG_INT, &a->top, "Rows of the final table (default 5)", "N"},
    {"nearest", 0, 0, G_OPTION_ARG_NONE, &a->nearest,
     "When the shape was never tuned, answer with the nearest tuned shape's best", NULL},
    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &a->output, "Write to FILE instead of stdout",
     "FILE"},
    {"limit", 0, 0, G_OPTION_ARG_INT, &a->limit, "Show at most N trials (default all)", "N"},
    {"replay", 0, 0, G_OPTION_ARG_FILENAME, &a->replay,
     "Recorded tuning file (Kernel Tuner cache JSON or T4 results, plain or gzip)", "FILE"},
    {"repeats", 0, 0, G_OPTION_ARG_INT, &a->repeats, "Seeds per strategy (default 10)", "R"},
    {"prior", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &a->prior,
     "A recording of the same kernel on another device: its fastest configurations are measured "
     "first by the model and evolutionary strategies, and its ranking is the model strategy's "
     "prior (repeatable)", "FILE"},
    {"measure", 0, 0, G_OPTION_ARG_NONE, &a->measure,
     "Measure the device ceilings (FMA peak, memory bandwidth) and store them", NULL},
    {"arch", 0, 0, G_OPTION_ARG_STRING, &a->arch,
     "GPU architectures, comma-separated (default sm_90a,sm_80)", "ARCHS"},
    {"no-metrics", 0, 0, G_OPTION_ARG_NONE, &a->no_metrics,
     "Skip the GPU hardware-metrics pass (CUPTI range profiler)", NULL},
    {"profile", 0, 0, G_OPTION_ARG_NONE, &a->profile,
     "Record the session's timeline (compiles, each trial's phases and kernels, copies, "
     "allocations) and store it as a profile of kind 'tune'", NULL},
    {"trace-output", 0, 0, G_OPTION_ARG_FILENAME, &a->trace_output,
     "With --profile (implied), also write the timeline as a Chrome trace", "FILE.json"},
    {"samples", 0, 0, G_OPTION_ARG_INT, &a->samples,
     "Timed launches at most (default: until their spread is small, 5 to 50); 1 under a slow "
     "checker such as compute-sanitizer", "N"},
    {"ranks", 0, 0, G_OPTION_ARG_INT, &a->ranks,
     "Ranks of a collective (default: the online cores, at least 2)", "N"},
    {"launcher", 0, 0, G_OPTION_ARG_STRING, &a->launcher,
     "Command that starts the ranks, before its -n N (default mpirun), e.g. 'mpirun "
     "--hostfile hosts' or 'srun'", "CMD"},
    {"kernel", 0, 0, G_OPTION_ARG_FILENAME, &a->kernel,
     "A kernel written in the kernel language (.tsk) instead of a built-in OP; OP then names "
     "one of the file's kernels (default: the first)", "FILE"},
    {"reuse", 0, 0, G_OPTION_ARG_FILENAME, &a->reuse,
     "Keep each compiled kernel's resources in DIR and read them from there for a kernel "
     "compiled before (the same code for the same arch, toolchain and headers, whatever the "
     "kernel's name) instead of compiling it again", "DIR"},
    {"estimate", 0, 0, G_OPTION_ARG_NONE, &a->estimate,
     "Beside each trial, the cost model's analytic estimate (with the device's stored "
     "ceilings) and what bounds it; then how well its order agrees with the measured one",
     NULL},
    {"where", 0, 0, G_OPTION_ARG_STRING, &a->where,
     "Only the points of the space that also satisfy EXPR, a constraint in the space's "
     "syntax, e.g. 'schedule == \"pingpong\" && BM == 128'", "EXPR"},
  };
  static const guint masks[] = {
    TT_OPT_WORKLOAD, TT_OPT_WORKLOAD, TT_OPT_SCHEDULE, TT_OPT_SPACE, TT_OPT_BACKEND, TT_OPT_SEED,
    TT_OPT_JSON,     TT_OPT_STAGE,    TT_OPT_DB,       TT_OPT_TUNE,  TT_OPT_TUNE,    TT_OPT_TUNE,
    TT_OPT_TUNE | TT_OPT_TIMEOUT,     TT_OPT_TUNE,     TT_OPT_NEAREST,  TT_OPT_OUTPUT, TT_OPT_LIMIT,
    TT_OPT_REPLAY,   TT_OPT_REPLAY,   TT_OPT_REPLAY,   TT_OPT_MEASURE,  TT_OPT_ARCH,   TT_OPT_METRICS,
    TT_OPT_PROFILE,  TT_OPT_PROFILE,  TT_OPT_SAMPLES, TT_OPT_COLL,    TT_OPT_COLL,
    TT_OPT_KERNEL,   TT_OPT_REUSE,    TT_OPT_ESTIMATE, TT_OPT_WHERE,
  };
  G_STATIC_ASSERT(G_N_ELEMENTS(masks) == G_N_ELEMENTS(all));
  GOptionEntry chosen[G_N_ELEMENTS(all) + 1];
  guint n = 0;
  for (guint i = 0; i < G_N_ELEMENTS(all); i++)
    if (opts & masks[i])
      chosen[n++] = all[i];
  chosen[n] = (GOptionEntry)G_OPTION_ENTRY_NULL;

  g_autofree char *p = g_strdup_printf("%s %s", name, params);
  g_autoptr(GOptionContext) ctx = g_option_context_new(p);
  g_option_context_set_summary(ctx, summary);
  g_option_context_set_description(ctx, TT_EXIT_HELP);
  g_option_context_add_main_entries(ctx, chosen, NULL);
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(ctx, argc, argv, &error)) {
    tt_usage("%s", error->message);
    return FALSE;
  }
  return TRUE;
}

TsOpInstance *
tt_workload(const char *op, const TtArgs *a, GError **error)
{
  if (a->shape == NULL) {
    const TsOpDef *def = ts_op_lookup(op);
    g_autofree char *dims = def ? ts_op_dims(def) : NULL;
    if (dims) {
      g_auto(GStrv) names = g_strsplit(dims, ",", -1);
      g_autoptr(GString) eg = g_string_new(NULL);
      for (guint i = 0; names[i]; i++)
        g_string_append_printf(eg, "%s%s=256", i ? "," : "", names[i]);
      g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SHAPE,
                  "--shape is required (%s needs %s, e.g. --shape %s)", op, dims, eg->str);
    } else
      return ts_op_instance_new(op, "", "f32", error); /* reports the unknown op */
    return NULL;
  }
  /* A kernel file's tensors declare their dtype: it is the default. */
  const char *declared = ts_op_kernel_dtype(ts_op_lookup(op));
  return ts_op_instance_new(op, a->shape, a->dtype ? a->dtype : declared ? declared : "f32",
                            error);
}

int
tt_op_arg(const TtArgs *a, int argc, char **argv, const char *cmd, const char **op)
{
  if (a->kernel == NULL) {
    if (argc != 2)
      return tt_usage("%s takes one OP (see 'tessera-tune ops'), or --kernel FILE", cmd);
    *op = argv[1];
    return TT_EXIT_OK;
  }
  if (argc > 2)
    return tt_usage("%s --kernel FILE takes at most one name, the kernel's in FILE", cmd);
  g_autoptr(GError) error = NULL;
  const TsOpDef *def = ts_op_load_kernel(a->kernel, argc == 2 ? argv[1] : NULL, &error);
  if (def == NULL)
    return tt_fail(TT_EXIT_USAGE, error);
  *op = ts_op_name(def);
  return TT_EXIT_OK;
}

TsBackend *
tt_backend(const TtArgs *a, GError **error)
{
  return ts_backend_open(a->backend ? a->backend : "auto", error);
}

static TsDb *tt_db_open(const TtArgs *a, TsDbOpenFlags flags, GError **error);

TsDb *
tt_db(const TtArgs *a, TsDbOpenFlags flags, GError **error)
{
  TsDb *db = tt_db_open(a, flags, error);
  if (db != NULL)
    ts_db_set_schedule_check(db, ts_tune_schedule_check, NULL);
  return db;
}

static TsDb *
tt_db_open(const TtArgs *a, TsDbOpenFlags flags, GError **error)
{
  if (flags == TS_DB_OPEN_READ_ONLY) {
    /* A cache of an older schema is upgraded by a read-write open when the user may write it,
     * rather than sending them to do it by hand. */
    g_autoptr(GError) ro_error = NULL;
    TsDb *db = ts_db_open(a->db, flags, &ro_error);
    if (db == NULL && g_error_matches(ro_error, TS_DB_ERROR, TS_DB_ERROR_NEEDS_UPGRADE)) {
      g_autoptr(TsDb) rw = ts_db_open(a->db, TS_DB_OPEN_DEFAULT, NULL);
      if (rw != NULL) {
        g_clear_pointer(&rw, ts_db_close);
        g_clear_error(&ro_error);
        db = ts_db_open(a->db, flags, &ro_error);
      }
    }
    if (db == NULL)
      g_propagate_error(error, g_steal_pointer(&ro_error));
    return db;
  }
  if (flags != TT_DB_READ)
    return ts_db_open(a->db, flags, error);
  g_autoptr(GError) rw_error = NULL;
  TsDb *db = ts_db_open(a->db, TS_DB_OPEN_DEFAULT, &rw_error);
  if (db != NULL || !(g_error_matches(rw_error, TS_DB_ERROR, TS_DB_ERROR_READ_ONLY) ||
                      g_error_matches(rw_error, TS_DB_ERROR, TS_DB_ERROR_OPEN))) {
    if (db == NULL)
      g_propagate_error(error, g_steal_pointer(&rw_error));
    return db;
  }
  return ts_db_open(a->db, TS_DB_OPEN_READ_ONLY, error);
}

int
tt_open(const char *op, const TtArgs *a, TsDbOpenFlags flags, TsOpInstance **inst,
        TsBackend **backend, TsDb **db)
{
  g_autoptr(GError) error = NULL;
  /* A kernel file's op named without --kernel: the cache that tuned it keeps its source. */
  if (ts_op_lookup(op) == NULL && g_str_has_prefix(op, "kernel:")) {
    *db = tt_db(a, flags, &error);
    if (*db == NULL)
      return tt_fail(tt_error_code(error), error);
    g_autofree char *src = NULL, *path = NULL;
    if (!ts_db_get_kernel_source(*db, op, &path, &src, &error) ||
        ts_op_register_kernel_op(op, src, path, &error) == NULL)
      return tt_fail(TT_EXIT_USAGE, error);
  }
  *inst = tt_workload(op, a, &error);
  if (*inst == NULL)
    return tt_fail(TT_EXIT_USAGE, error);
  *backend = tt_backend(a, &error);
  if (*backend == NULL)
    return tt_fail(TT_EXIT_MACHINE, error);
  if (*db == NULL)
    *db = tt_db(a, flags, &error);
  if (*db == NULL)
    return tt_fail(tt_error_code(error), error);
  return TT_EXIT_OK;
}

char *
tt_self_exe(void)
{
  char *exe = g_file_read_link("/proc/self/exe", NULL);
  return exe ? exe : g_strdup("tessera-tune");
}

int
tt_check_timeout(TtArgs *a)
{
  if (a->timeout_s == 0)
    a->timeout_s = 60;
  if (!(a->timeout_s > 0) || !isfinite(a->timeout_s))
    return tt_usage("--timeout must be a positive number of seconds");
  return TT_EXIT_OK;
}

int
tt_check_runnable(TsOpInstance *inst, TsBackend *backend, const TsSchedPoint *point)
{
  g_autofree char *why = ts_op_instance_prune_reason(inst, point, ts_backend_describe(backend));
  if (why != NULL)
    return tt_usage("%s cannot run on this device: %s", ts_op_name(ts_op_instance_op(inst)), why);
  return TT_EXIT_OK;
}

TsTrialResult *
tt_run_point(TsOpInstance *inst, TsBackend *backend, const TsSchedPoint *point,
             const TsRunOptions *options, TsTrace *trace, gboolean metrics, double timeout_s,
             GError **error)
{
  g_autofree char *shape = ts_shape_to_string(ts_op_instance_shape(inst));
  g_autofree char *dtype = ts_dtype_policy_to_string(ts_op_instance_dtype(inst));
  g_autofree char *schedule = ts_sched_point_to_string(point);
  g_autofree char *exe = tt_self_exe();
  g_autoptr(TsTuneWorker) worker = ts_tune_worker_new(exe);
  TsTuneRequest q = {
    .op = ts_op_name(ts_op_instance_op(inst)),
    .shape = shape,
    .dtype = dtype,
    .schedule = schedule,
    .backend = ts_backend_name(backend),
    .cache_dir = ts_backend_get_cache_dir(backend),
    .options = *options,
    .trace = trace,
    .metrics = metrics,
  };
  TsTrialResult *r = ts_tune_worker_run(worker, &q, timeout_s, error);
  if (r != NULL && r->status == TS_TRIAL_OK && r->samples_ns->len > 0)
    ts_trial_result_summarise(r, inst);
  return r;
}

static TsSchedPoint *
chosen_point(TsOpInstance *inst, const char *backend, const TtArgs *a, GError **error)
{
  g_autoptr(TsSchedPoint) user = NULL;
  if (a->schedule) {
    user = ts_sched_point_parse(a->schedule, error);
    if (user == NULL)
      return NULL;
  }
  return ts_op_instance_complete_point(inst, backend, user, error);
}

static void
print_stage(const char *title, const char *text)
{
  g_print("== %s ==\n%s%s", title, text, g_str_has_suffix(text, "\n") ? "" : "\n");
}

static int
cmd_lower(int argc, char **argv)
{
  g_auto(TtArgs) a = {0};
  if (!tt_parse("lower", "OP",
                "Print the lowering of an op at a schedule point, stage by stage:\n"
                "Graph IR, Schedule IR (space and point), Tile IR, Target source.",
                TT_OPT_WORKLOAD | TT_OPT_SCHEDULE | TT_OPT_SPACE | TT_OPT_BACKEND | TT_OPT_STAGE |
                  TT_OPT_KERNEL,
                &a, &argc, &argv))
    return TT_EXIT_USAGE;
  g_autoptr(GError) error = NULL;
  const char *op = NULL;
  int rc = tt_op_arg(&a, argc, argv, "lower", &op);
  if (rc != TT_EXIT_OK)
    return rc;
  const char *stage = a.stage ? a.stage : "all";
  static const char *const stages[] = {"graph", "schedule", "tile", "target", "all", NULL};
  if (!g_strv_contains(stages, stage))
    return tt_usage("unknown --stage '%s' (graph, schedule, tile, target, all)", stage);
  gboolean all = strcmp(stage, "all") == 0;

  g_autoptr(TsOpInstance) inst = tt_workload(op, &a, &error);
  if (inst == NULL)
    return tt_fail(TT_EXIT_USAGE, error);
  /* Lowering needs no device: the CPU target is always there to lower for. */
  const char *backend_name = a.backend && strcmp(a.backend, "auto") != 0 ? a.backend : "cpu";
  g_autoptr(TsSchedPoint) point = chosen_point(inst, backend_name, &a, &error);
  if (point == NULL)
    return tt_fail(TT_EXIT_USAGE, error);

  if (all || strcmp(stage, "graph") == 0) {
    g_autofree char *g = ts_graph_to_string(ts_op_instance_graph(inst), ts_op_instance_shape(inst));
    print_stage("graph", g);
  }
  if (all || strcmp(stage, "schedule") == 0) {
    g_autoptr(TsSchedSpace) space = ts_op_instance_space(inst, backend_name, a.space, &error);
    if (space == NULL)
      return tt_fail(TT_EXIT_USAGE, error);
    g_autoptr(TsSchedEnv) env = ts_op_instance_env(inst, NULL);
    guint64 total = 0, valid = 0;
    gboolean fits = ts_sched_space_size(space, &total);
    if (!ts_sched_space_count_valid(space, env, &valid, &error))
      return tt_fail(TT_EXIT_USAGE, error);
    g_autofree char *sp = ts_sched_space_to_string(space);
    g_autofree char *pt = ts_sched_point_to_string(point);
    g_autofree char *text = g_strdup_printf(
      "space: %s\n       %s%" G_GUINT64_FORMAT " points, %" G_GUINT64_FORMAT " valid at %s\n"
      "point: %s\nhash:  %s\n",
      sp, fits ? "" : "more than ", total, valid, a.shape, pt, ts_sched_point_hash(point));
    print_stage("schedule", text);
  }
  if (all || strcmp(stage, "tile") == 0 || strcmp(stage, "target") == 0) {
    g_autoptr(TsTileKernel) kernel = ts_op_lower(inst, backend_name, point, &error);
    if (kernel == NULL)
      return tt_fail(TT_EXIT_USAGE, error);
    if (all || strcmp(stage, "tile") == 0) {
      g_autofree char *t = ts_tile_kernel_to_string(kernel);
      print_stage("tile", t);
    }
    if (all || strcmp(stage, "target") == 0) {
      /* Exactly the source the tuner compiles for this point, banner included. */
      g_autofree char *src = ts_op_emit(inst, backend_name, point, NULL, NULL, &error);
      if (src == NULL)
        return tt_fail(TT_EXIT_USAGE, error);
      print_stage(strcmp(backend_name, "cuda") == 0 ? "target (CUDA C)" : "target (C)", src);
      /* The values the C source reads at run time: what a launch of this point passes after
       * the dims (CUDA compiles them in). */
      g_autofree char *consts = ts_tile_kernel_launch_text(kernel);
      if (strcmp(backend_name, "cuda") != 0 && consts != NULL)
        g_print("launched with %s (the ints after the dims)\n", consts);
    }
  }
  return TT_EXIT_OK;
}

static void
print_result_json(const TsOpInstance *inst, const TsSchedPoint *point, const TsTrialResult *r)
{
  g_autofree char *what = ts_op_instance_describe(inst);
  g_autofree char *pt = ts_sched_point_to_string(point);
  g_autofree char *msg = g_strescape(r->message, NULL);
  g_autofree char *w = g_strescape(what, NULL);
  g_autofree char *p = g_strescape(pt, NULL);
  g_autofree char *v = g_strescape(r->verification ? r->verification : "", NULL);
  g_print("{\"workload\": \"%s\", \"schedule\": \"%s\", \"hash\": \"%s\", \"status\": \"%s\", "
          "\"rel_error\": %.6g, \"tolerance\": %.1g, \"verification\": \"%s\", "
          "\"median_ns\": %.1f, \"min_ns\": %.1f, "
          "\"max_ns\": %.1f, \"samples\": %u, \"gflops\": %.4f, \"gbps\": %.4f, "
          "\"thread_cpu_ns\": %.1f, \"process_cpu_ns\": %.1f, "
          "\"compile_ms\": %.1f, \"compile_cpu_ms\": %.1f, \"message\": \"%s\"}\n",
          w, p, ts_sched_point_hash(point), ts_trial_status_name(r->status),
          isfinite(r->rel_error) ? r->rel_error : -1.0, r->tolerance, v, r->median_ns, r->min_ns,
          r->max_ns, r->samples_ns->len, r->gflops, r->gbps, r->thread_cpu_ns, r->process_cpu_ns,
          r->compile_ms, r->compile_cpu_ms, msg);
}

static int
cmd_run(int argc, char **argv)
{
  g_auto(TtArgs) a = {.seed = 1};
  if (!tt_parse("run", "OP", "Compile, verify and time one schedule point of an op on a backend.",
                TT_OPT_WORKLOAD | TT_OPT_SCHEDULE | TT_OPT_BACKEND | TT_OPT_SEED | TT_OPT_JSON |
                  TT_OPT_SAMPLES | TT_OPT_TIMEOUT | TT_OPT_KERNEL,
                &a, &argc, &argv))
    return TT_EXIT_USAGE;
  int rc = tt_check_timeout(&a);
  if (rc != TT_EXIT_OK)
    return rc;
  g_autoptr(GError) error = NULL;
  const char *op = NULL;
  rc = tt_op_arg(&a, argc, argv, "run", &op);
  if (rc != TT_EXIT_OK)
    return rc;
  if (a.samples < 0)
    return tt_usage("--samples takes a positive count, not %d", a.samples);
  g_autoptr(TsOpInstance) inst = tt_workload(op, &a, &error);
  if (inst == NULL)
    return tt_fail(TT_EXIT_USAGE, error);
  g_autoptr(TsBackend) backend = tt_backend(&a, &error);
  if (backend == NULL)
    return tt_fail(TT_EXIT_MACHINE, error);
  g_autoptr(TsSchedPoint) point = chosen_point(inst, ts_backend_name(backend), &a, &error);
  if (point == NULL)
    return tt_fail(TT_EXIT_USAGE, error);
  TsRunOptions opt;
  ts_run_options_init(&opt);
  opt.seed = (guint64)a.seed;
  if (a.samples > 0) {
    opt.max_samples = (guint)a.samples;
    opt.min_samples = MIN(opt.min_samples, opt.max_samples);
    opt.n_warmup = MIN(opt.n_warmup, opt.max_samples);
  }
  rc = tt_check_runnable(inst, backend, point);
  if (rc != TT_EXIT_OK)
    return rc;
  g_autoptr(TsTrialResult) r =
    tt_run_point(inst, backend, point, &opt, NULL, FALSE, a.timeout_s, &error);
  if (r == NULL)
    return tt_fail(tt_error_code(error), error);
  if (a.json) {
    print_result_json(inst, point, r);
  } else {
    g_autofree char *what = ts_op_instance_describe(inst);
    g_autofree char *pt = ts_sched_point_to_string(point);
    g_print("workload  %s on %s (%s)\n", what, ts_backend_name(backend),
            ts_backend_describe(backend)->name);
    g_print("schedule  %s  [%s]\n", pt, ts_sched_point_hash(point));
    g_print("status    %s\n", ts_trial_status_name(r->status));
    if (r->verification)
      g_print("verified  %s\n", r->verification);
    g_autofree char *compiled =
      r->cache_hit ? g_strdup("artifact cache hit")
                   : g_strdup_printf("compiled in %.0f ms, %.0f ms of CPU", r->compile_ms,
                                     r->compile_cpu_ms);
    if (r->status == TS_TRIAL_OK)
      g_print("error     %.3g (bound %.0e)\n"
              "time      median %.3f ms  (min %.3f, max %.3f, %u samples)\n"
              "rate      %.2f GFLOP/s  %.2f GB/s\n"
              "compile   %s\n",
              r->rel_error, r->tolerance, r->median_ns / 1e6, r->min_ns / 1e6, r->max_ns / 1e6,
              r->samples_ns->len, r->gflops, r->gbps, compiled);
    if (r->status == TS_TRIAL_OK && r->cpu_samples && r->cpu_samples->len > 0)
      g_print("cpu       median %.3f ms on the calling thread, %.3f ms process (%.2fx the wall "
              "time)\n",
              r->thread_cpu_ns / 1e6, r->process_cpu_ns / 1e6, r->process_cpu_ns / r->median_ns);
    if (r->status != TS_TRIAL_OK)
      g_print("%s\n", r->message);
  }
  return r->status == TS_TRIAL_OK ? TT_EXIT_OK : TT_EXIT_CANDIDATE;
}

static int
cmd_ops(void)
{
  for (guint i = 0; i < ts_op_count(); i++) {
    const TsOpDef *op = ts_op_nth(i);
    g_autofree char *dims = ts_op_dims(op);
    g_print("%-15s dims %-6s %s\n", ts_op_name(op), dims, ts_op_summary(op));
    static const char *const backends[] = {"cpu", "cuda"};
    for (guint b = 0; b < G_N_ELEMENTS(backends); b++) {
      const char *space = ts_op_default_space(op, backends[b]);
      if (space)
        g_print("%-15s %-4s space: %s\n", "", backends[b], space);
      const char *point = ts_op_default_point(op, backends[b]);
      if (point)
        g_print("%-15s %-4s default: %s\n", "", backends[b], point);
      const char *fp8 = ts_op_fp8_default_point(op, backends[b]);
      if (fp8)
        g_print("%-15s %-4s fp8 default: %s\n", "", backends[b], fp8);
    }
  }
  for (guint i = 0; ts_coll_nth(i); i++) {
    TsCollKind kind;
    ts_coll_lookup(ts_coll_nth(i), &kind);
    g_print("%-15s dims %-6s %s\n", ts_coll_nth(i), "BYTES", ts_coll_summary(kind));
    for (const char *const *b = ts_coll_backends(); *b; b++)
      g_print("%-15s %-4s space: %s\n", "", *b, ts_coll_default_space(kind, *b));
  }
  return TT_EXIT_OK;
}

TsProfCeilings *
tt_ceilings(TsDb *db, TsBackend *backend, gint64 device_id, gboolean remeasure, gboolean quiet,
            GError **error)
{
  if (!remeasure) {
    g_autoptr(GError) local = NULL;
    TsProfCeilings *stored = ts_prof_ceilings_load(db, device_id, backend, &local);
    if (local) {
      g_propagate_error(error, g_steal_pointer(&local));
      return NULL;
    }
    if (stored)
      return stored;
  }
  /* Say so before the microbenchmarks run: they take seconds, on a machine better left quiet. */
  if (!quiet)
    g_print("measuring the device ceilings (FMA peaks, memory bandwidths, exp rates)...\n");
  TsProfCeilings *c = ts_prof_ceilings_ensure(db, device_id, backend, TRUE, NULL, error);
  g_autofree char *note =
    c && ts_backend_runs_on_host(backend)
      ? ts_prof_ceilings_scaling_note(c, ts_backend_describe(backend)->compute_units)
      : NULL;
  if (note)
    g_printerr("tessera-tune: note: %s\n", note);
  return c;
}

static void
print_ceilings(const TsProfCeilings *c, const TsDeviceInfo *d)
{
  for (guint i = 0; i < ts_prof_ceilings_count(c); i++) {
    const TsProfCeiling *r = ts_prof_ceilings_nth(c, i);
    const char *unit = ts_prof_ceiling_unit(r->kind);
    const int digits = r->kind == TS_PROF_RATE ? 2 : 1; /* rates are a few G/s */
    g_autofree char *one = r->per_core > 0 ? g_strdup_printf(", %.*f %s on one core", digits,
                                                             r->per_core, unit)
                                           : g_strdup("");
    g_print("       %-12s %10.*f %-7s on %u %s%s\n", r->name, digits, r->value, unit,
            d->compute_units,
            strcmp(d->backend, "cuda") == 0 ? "SMs" : "cores", one);
  }
  g_print("       method: %s\n", ts_prof_ceilings_method(c));
}

static int
cmd_devices(int argc, char **argv)
{
  g_auto(TtArgs) a = {0};
  if (!tt_parse("devices", "",
                "List the backends and their devices. With --measure, run the ceiling\n"
                "microbenchmarks (FMA peak per dtype on one and all cores, memory bandwidth\n"
                "of DRAM and each cache level, the vector exp's rate on a CPU; tensor-core\n"
                "peaks on a GPU)\n"
                "and store them in the schedule cache's device row; tune's table reports each\n"
                "candidate against them (fraction of the roofline bound).",
                TT_OPT_MEASURE | TT_OPT_DB, &a, &argc, &argv))
    return TT_EXIT_USAGE;
  int status = TT_EXIT_OK;
  for (const char *const *n = ts_backend_names(); *n; n++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(TsBackend) b = ts_backend_open(*n, &error);
    if (b == NULL) {
      g_print("%-6s unavailable: %s\n", *n, error->message);
      /* Without a GPU, NVRTC still checks generated CUDA and reports its resources. */
      g_autofree char *toolchain = strcmp(*n, "cuda") == 0 ? ts_cuda_toolchain(NULL) : NULL;
      if (toolchain != NULL)
        g_print("       compile-only: %s (generated kernels can be checked for sm_80 / "
                "sm_90a)\n",
                toolchain);
      continue;
    }
    const TsDeviceInfo *d = ts_backend_describe(b);
    if (strcmp(d->backend, "cuda") == 0)
      g_print("%-6s %s, %s, %u SMs, %.1f GiB, L2 %.1f MiB, smem/block %" G_GUINT64_FORMAT
              " KiB; toolchain %s\n",
              d->backend, d->name, d->arch, d->compute_units, d->memory_bytes / 1073741824.0,
              d->l2_bytes / 1048576.0, d->smem_per_block / 1024, d->toolchain);
    else
      g_print("%-6s %s, %s, %u cores, %.1f GiB, L1 %" G_GUINT64_FORMAT " KiB, L2 %" G_GUINT64_FORMAT
              " KiB, L3 %" G_GUINT64_FORMAT " KiB, %u-bit SIMD; toolchain %s\n",
              d->backend, d->name, d->arch, d->compute_units, d->memory_bytes / 1073741824.0,
              d->l1_bytes / 1024, d->l2_bytes / 1024, d->l3_bytes / 1024, d->vector_bits,
              d->toolchain);
    if (!a.measure)
      continue;
    g_autoptr(TsDb) db = tt_db(&a, TS_DB_OPEN_DEFAULT, &error);
    gint64 dev_id = 0;
    g_autoptr(TsProfCeilings) c = NULL;
    if (db) {
      TsDbDevice dev = {d->backend, d->name, d->arch, d->compute_units, d->memory_bytes,
                        d->l1_bytes, d->l2_bytes, d->l3_bytes, d->smem_per_block,
                        d->vector_bits};
      dev_id = ts_db_ensure_device(db, &dev, &error);
    }
    if (dev_id == 0 || (c = tt_ceilings(db, b, dev_id, TRUE, FALSE, &error)) == NULL) {
      g_printerr("tessera-tune: %s\n", error->message);
      status = tt_error_code(error);
      continue;
    }
    g_print("       ceilings (stored in %s):\n", ts_db_path(db));
    print_ceilings(c, d);
  }
  return status;
}

static void
print_usage(void)
{
  g_print("Usage: tessera-tune OP --shape DIMS [--dtype DTYPE] [OPTIONS]   (same as 'tune OP')\n"
          "       tessera-tune COMMAND [OPTIONS]\n\n"
          "Commands:\n"
          "  tune OP     explore OP's schedule space and store every trial and the best schedule\n"
          "              (--profile: the session's timeline too, as a profile)\n"
          "  batch FILE  tune every workload listed in FILE (one a line: OP --shape DIMS ...)\n"
          "  lookup OP   the cached best schedule of a workload (--nearest for untuned shapes)\n"
          "  show OP     the stored trials of a workload, best first\n"
          "  export      write trials and best schedules as JSON\n"
          "  import FILE merge an exported JSON file into the schedule cache\n"
          "  lower OP    print Graph, Schedule, Tile and Target IR of a schedule point\n"
          "  run OP      compile, verify and time one schedule point\n"
          "  check OP    compile every point of OP's CUDA space for sm_90a/sm_80 (no GPU needed)\n"
          "  profile OP  run one point under the profiler: timeline, counters, roofline; Chrome trace\n"
          "              and report registers, shared memory and spills\n"
          "  strategies  list the search strategies; 'strategies compare' ranks them on a\n"
          "              recorded tuning file or on a workload's trials in the cache\n"
          "  model       train, evaluate (held out by workload) and show the learned cost model\n"
          "  ops         list the ops, their dims and default spaces\n"
          "  all_reduce, all_gather, reduce_scatter --shape BYTES=N --ranks R\n"
          "              tune a collective over MPI: a launch of R ranks per candidate\n"
          "  coll-model  the α–β model of collectives fitted to the cache, with predictions for\n"
          "              8 and 72 ranks, and for NVLink machines from their published figures\n"
          "  devices     list the backends and their devices\n\n"
          "'tessera-tune COMMAND --help' documents each command.\n%s\n",
          TT_EXIT_HELP);
}

char *
tt_device_text(TsBackend *backend)
{
  const TsDeviceInfo *d = ts_backend_describe(backend);
  return g_strdup_printf("%s %s (%s, %u compute units)", ts_backend_name(backend), d->name,
                         d->arch ? d->arch : "?", d->compute_units);
}

/* The --backend a distributed command names, before its options are parsed. */
static char *
backend_arg(int argc, char **argv)
{
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc)
      return g_strdup(argv[i + 1]);
    if (g_str_has_prefix(argv[i], "--backend="))
      return g_strdup(argv[i] + strlen("--backend="));
  }
  return NULL;
}

/* A rank > 0 of a distributed tune: serves rank 0 on the device the command line names. */
static int
serve_rank(int argc, char **argv)
{
  g_auto(TtArgs) a = {0};
  a.backend = backend_arg(argc, argv);
  g_autoptr(GError) error = NULL;
  g_autoptr(TsBackend) backend = tt_backend(&a, &error);
  g_autofree char *device = backend ? tt_device_text(backend) : g_strdup(error->message);
  g_clear_pointer(&backend, ts_backend_free);
  g_autofree char *exe = tt_self_exe();
  return ts_tune_mpi_serve(exe, device);
}

/* Under mpirun: rank 0 runs the command, the other ranks serve it (ts-tune-mpi.h). */
static int
run_distributed(int (*fn)(int, char **), int argc, char **argv)
{
  g_autoptr(GError) error = NULL;
  /* A GPU per local rank: each rank (and the worker it starts) sees the GPU of its local rank
   * number, unless the user chose with CUDA_VISIBLE_DEVICES. A rank left without a GPU is named
   * by the device check. */
  g_autofree char *backend = backend_arg(argc, argv);
  const char *local = g_getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  if (local == NULL)
    local = g_getenv("MPI_LOCALRANKID");
  if (local && !g_getenv("CUDA_VISIBLE_DEVICES") && g_strcmp0(backend, "cpu") != 0)
    g_setenv("CUDA_VISIBLE_DEVICES", local, TRUE);
  if (!ts_tune_mpi_init(&error))
    return tt_fail(TT_EXIT_MACHINE, error);
  int rc = ts_tune_mpi_rank() > 0 ? serve_rank(argc, argv) : fn(argc, argv);
  ts_tune_mpi_finalize();
  return rc;
}

int
main(int argc, char **argv)
{
  setlocale(LC_ALL, "");
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    print_usage();
    return argc < 2 ? TT_EXIT_USAGE : TT_EXIT_OK;
  }
  static const struct {
    const char *name;
    int (*fn)(int, char **);
  } commands[] = {
    {"tune", tt_cmd_tune},     {"lookup", tt_cmd_lookup}, {"show", tt_cmd_show},
    {"export", tt_cmd_export}, {"import", tt_cmd_import}, {"lower", cmd_lower},
    {"run", cmd_run},          {"strategies", tt_cmd_strategies},
    {"check", tt_cmd_check},         {"profile", tt_cmd_profile},
    {"model", tt_cmd_model},         {"batch", tt_cmd_batch},
    {"coll-model", tt_cmd_coll_model},
  };
  const char *cmd = argv[1];
  if (strcmp(cmd, "coll-run") == 0)
    return tt_cmd_coll_run(argc - 1, argv + 1);
  gboolean tune_coll = strcmp(cmd, "tune") == 0 && argc > 2 && ts_coll_lookup(argv[2], NULL);
  if (ts_coll_lookup(cmd, NULL) || tune_coll) {
    if (ts_tune_mpi_launched()) {
      /* Each candidate needs a launch of its own (Open MPI reads its collective settings at
       * MPI_Init), which ranks of a running job cannot make. */
      const char *rank = g_getenv("OMPI_COMM_WORLD_RANK");
      if (rank == NULL || strcmp(rank, "0") == 0)
        g_printerr("tessera-tune: run %s outside mpirun: 'tessera-tune %s --ranks N ...' starts "
                   "N ranks for each candidate itself, since Open MPI reads the collective "
                   "settings a candidate changes only at MPI_Init\n", tune_coll ? argv[2] : cmd,
                   tune_coll ? argv[2] : cmd);
      return TT_EXIT_USAGE;
    }
    return tune_coll ? tt_cmd_coll(argc - 2, argv + 2) : tt_cmd_coll(argc - 1, argv + 1);
  }
  if (ts_tune_mpi_launched() && (strcmp(cmd, "tune") == 0 || strcmp(cmd, "batch") == 0))
    return run_distributed(strcmp(cmd, "tune") == 0 ? tt_cmd_tune : tt_cmd_batch, argc - 1,
                           argv + 1);
  if (ts_tune_mpi_launched() && ts_op_lookup(cmd) != NULL)
    return run_distributed(tt_cmd_tune, argc, argv);
  for (guint i = 0; i < G_N_ELEMENTS(commands); i++)
    if (strcmp(cmd, commands[i].name) == 0)
      return commands[i].fn(argc - 1, argv + 1);
  if (strcmp(cmd, "ops") == 0)
    return cmd_ops();
  if (strcmp(cmd, "devices") == 0)
    return cmd_devices(argc - 1, argv + 1);
  /* Internal: the isolated process that runs candidates for the tuner (ts-tune-worker.h). */
  if (strcmp(cmd, "worker") == 0)
    return ts_tune_worker_main(0, 1);
  /* `tessera-tune gemm --shape ...` is `tessera-tune tune gemm --shape ...`. */
  if (ts_op_lookup(cmd) != NULL)
    return tt_cmd_tune(argc, argv);
  g_printerr("tessera-tune: unknown command or op '%s' (see 'tessera-tune --help' and "
             "'tessera-tune ops')\n", cmd);
  return TT_EXIT_USAGE;
}
