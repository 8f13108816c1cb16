/* tessera-tune — the command-line front of the workbench.
 *
 *   tessera-tune lower OP --shape ... --dtype ... [--schedule P] [--stage S]   lowering inspector
 *   tessera-tune run OP --shape ... --dtype ... [--schedule P]                 one verified trial
 *   tessera-tune ops                                                           the op catalog
 *   tessera-tune devices                                                       backends and devices
 *
 * Exit codes: 0 success; 1 the candidate failed (compile error, wrong result); 2 bad usage or
 * input (unknown op, malformed shape/dtype/schedule); 3 machinery failure (no device, I/O). */
#include "config.h"

#include <glib.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ts-backend.h"
#include "ts-emit.h"
#include "ts-op.h"

enum { EXIT_OK = 0, EXIT_CANDIDATE = 1, EXIT_USAGE = 2, EXIT_MACHINE = 3 };

static const char *EXIT_HELP =
  "Exit status: 0 success; 1 the candidate failed (compile error, runtime error, wrong "
  "result);\n2 bad usage or input (unknown op, malformed shape, dtype or schedule); 3 no "
  "usable device or an I/O failure.";

typedef struct {
  char *shape;
  char *dtype;
  char *schedule;
  char *space;
  char *backend;
  char *stage;
  gint64 seed;
  gboolean json;
} Args;

static void
args_clear(Args *a)
{
  g_free(a->shape);
  g_free(a->dtype);
  g_free(a->schedule);
  g_free(a->space);
  g_free(a->backend);
  g_free(a->stage);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Args, args_clear)

static int
fail(const char *prog, int code, GError *error)
{
  g_printerr("%s: %s\n", prog, error->message);
  return code;
}

static int
usage_error(GOptionContext *ctx, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static int
usage_error(GOptionContext *ctx, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_printerr("tessera-tune: %s\nRun with --help for usage.\n", msg);
  return EXIT_USAGE;
}

static int
error_code(const GError *error)
{
  if (error->domain == TS_BACKEND_ERROR)
    return error->code == TS_BACKEND_ERROR_COMPILE ? EXIT_CANDIDATE : EXIT_MACHINE;
  return EXIT_USAGE;
}

/* Parses the workload options shared by lower and run. */
static TsOpInstance *
workload(const char *op, const Args *a, GError **error)
{
  if (a->shape == NULL) {
    const TsOpDef *def = ts_op_lookup(op);
    g_autofree char *dims = def ? ts_op_dims(def) : NULL;
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SHAPE, "--shape is required%s%s%s",
                dims ? " (" : "", dims ? dims : "", dims ? ", e.g. --shape M=1024,...)" : "");
    return NULL;
  }
  return ts_op_instance_new(op, a->shape, a->dtype ? a->dtype : "f32", error);
}

static TsSchedPoint *
chosen_point(TsOpInstance *inst, const char *backend, const Args *a, GError **error)
{
  g_autoptr(TsSchedPoint) user = NULL;
  if (a->schedule) {
    user = ts_sched_point_parse(a->schedule, error);
    if (user == NULL)
      return NULL;
  }
  return ts_op_instance_complete_point(inst, backend, user, error);
}

static GOptionContext *
subcommand_context(const char *name, const char *summary, Args *a, gboolean with_stage)
{
  GOptionEntry common[] = {
    {"shape", 0, 0, G_OPTION_ARG_STRING, &a->shape, "Dims, e.g. M=1024,N=1024,K=1024", "DIMS"},
    {"dtype", 0, 0, G_OPTION_ARG_STRING, &a->dtype,
     "Storage dtype with policies, e.g. 'bf16 @accum(f32)' (default f32)", "DTYPE"},
    {"schedule", 0, 0, G_OPTION_ARG_STRING, &a->schedule,
     "Schedule point; knobs left out take the op's defaults", "POINT"},
    {"space", 0, 0, G_OPTION_ARG_STRING, &a->space,
     "Schedule space shown by --stage schedule (default: the op's)", "SPACE"},
    {"backend", 0, 0, G_OPTION_ARG_STRING, &a->backend, "cpu or auto (default auto)", "NAME"},
    {"seed", 0, 0, G_OPTION_ARG_INT64, &a->seed, "Seed of the random inputs (default 1)", "N"},
    {"json", 0, 0, G_OPTION_ARG_NONE, &a->json, "Print the result as JSON", NULL},
    {NULL},
  };
  GOptionEntry stage[] = {
    {"stage", 0, 0, G_OPTION_ARG_STRING, &a->stage,
     "graph, schedule, tile, target or all (default all)", "STAGE"},
    {NULL},
  };
  g_autofree char *param = g_strdup_printf("%s OP", name);
  GOptionContext *ctx = g_option_context_new(param);
  g_option_context_set_summary(ctx, summary);
  g_option_context_set_description(ctx, EXIT_HELP);
  g_option_context_add_main_entries(ctx, common, NULL);
  if (with_stage)
    g_option_context_add_main_entries(ctx, stage, NULL);
  return ctx;
}

static void
print_stage(const char *title, const char *text)
{
  g_print("== %s ==\n%s%s", title, text, g_str_has_suffix(text, "\n") ? "" : "\n");
}

static int
cmd_lower(int argc, char **argv)
{
  g_auto(Args) a = {0};
  g_autoptr(GOptionContext) ctx =
    subcommand_context("lower", "Print the lowering of an op at a schedule point, stage by stage:\n"
                                "Graph IR, Schedule IR (space and point), Tile IR, Target source.",
                       &a, TRUE);
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &error))
    return usage_error(ctx, "%s", error->message);
  if (argc != 2)
    return usage_error(ctx, "lower takes one OP (see 'tessera-tune ops')");
  const char *stage = a.stage ? a.stage : "all";
  static const char *const stages[] = {"graph", "schedule", "tile", "target", "all", NULL};
  if (!g_strv_contains(stages, stage))
    return usage_error(ctx, "unknown --stage '%s' (graph, schedule, tile, target, all)", stage);
  gboolean all = strcmp(stage, "all") == 0;

  g_autoptr(TsOpInstance) inst = workload(argv[1], &a, &error);
  if (inst == NULL)
    return fail("tessera-tune", EXIT_USAGE, error);
  /* Lowering needs no device: the CPU target is always there to lower for. */
  const char *backend_name = a.backend && strcmp(a.backend, "auto") != 0 ? a.backend : "cpu";
  g_autoptr(TsSchedPoint) point = chosen_point(inst, backend_name, &a, &error);
  if (point == NULL)
    return fail("tessera-tune", EXIT_USAGE, error);

  if (all || strcmp(stage, "graph") == 0) {
    g_autofree char *g = ts_graph_to_string(ts_op_instance_graph(inst), ts_op_instance_shape(inst));
    print_stage("graph", g);
  }
  if (all || strcmp(stage, "schedule") == 0) {
    g_autoptr(TsSchedSpace) space = ts_op_instance_space(inst, backend_name, a.space, &error);
    if (space == NULL)
      return fail("tessera-tune", EXIT_USAGE, error);
    g_autoptr(TsSchedEnv) env = ts_op_instance_env(inst, NULL);
    guint64 total = 0, valid = 0;
    gboolean fits = ts_sched_space_size(space, &total);
    if (!ts_sched_space_count_valid(space, env, &valid, &error))
      return fail("tessera-tune", EXIT_USAGE, error);
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
      return fail("tessera-tune", EXIT_USAGE, error);
    if (all || strcmp(stage, "tile") == 0) {
      g_autofree char *t = ts_tile_kernel_to_string(kernel);
      print_stage("tile", t);
    }
    if (all || strcmp(stage, "target") == 0) {
      g_autofree char *entry = g_strdup_printf("ts_%s", kernel->name);
      g_autofree char *src = ts_emit_c(kernel, entry, kernel->name, &error);
      if (src == NULL)
        return fail("tessera-tune", EXIT_USAGE, error);
      print_stage("target (C)", src);
    }
  }
  return EXIT_OK;
}

static void
print_result_json(const TsOpInstance *inst, const TsSchedPoint *point, const TsTrialResult *r)
{
  g_autofree char *what = ts_op_instance_describe(inst);
  g_autofree char *pt = ts_sched_point_to_string(point);
  g_autofree char *msg = g_strescape(r->message, NULL);
  g_autofree char *w = g_strescape(what, NULL);
  g_autofree char *p = g_strescape(pt, NULL);
  g_print("{\"workload\": \"%s\", \"schedule\": \"%s\", \"hash\": \"%s\", \"status\": \"%s\", "
          "\"rel_error\": %.6g, \"tolerance\": %.1g, \"median_ns\": %.1f, \"min_ns\": %.1f, "
          "\"max_ns\": %.1f, \"samples\": %u, \"gflops\": %.4f, \"gbps\": %.4f, "
          "\"compile_ms\": %.1f, \"message\": \"%s\"}\n",
          w, p, ts_sched_point_hash(point), ts_trial_status_name(r->status),
          isfinite(r->rel_error) ? r->rel_error : -1.0, r->tolerance, r->median_ns, r->min_ns,
          r->max_ns, r->samples_ns->len, r->gflops, r->gbps, r->compile_ms, msg);
}

static int
cmd_run(int argc, char **argv)
{
  g_auto(Args) a = {.seed = 1};
  g_autoptr(GOptionContext) ctx = subcommand_context(
    "run", "Compile, verify and time one schedule point of an op on a backend.", &a, FALSE);
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &error))
    return usage_error(ctx, "%s", error->message);
  if (argc != 2)
    return usage_error(ctx, "run takes one OP (see 'tessera-tune ops')");
  g_autoptr(TsOpInstance) inst = workload(argv[1], &a, &error);
  if (inst == NULL)
    return fail("tessera-tune", EXIT_USAGE, error);
  g_autoptr(TsBackend) backend = ts_backend_open(a.backend ? a.backend : "auto", &error);
  if (backend == NULL)
    return fail("tessera-tune", EXIT_MACHINE, error);
  g_autoptr(TsSchedPoint) point = chosen_point(inst, ts_backend_name(backend), &a, &error);
  if (point == NULL)
    return fail("tessera-tune", EXIT_USAGE, error);
  TsRunOptions opt;
  ts_run_options_init(&opt);
  opt.seed = (guint64)a.seed;
  g_autoptr(TsTrialResult) r = ts_op_run(inst, backend, point, &opt, &error);
  if (r == NULL)
    return fail("tessera-tune", error_code(error), error);
  if (a.json) {
    print_result_json(inst, point, r);
  } else {
    g_autofree char *what = ts_op_instance_describe(inst);
    g_autofree char *pt = ts_sched_point_to_string(point);
    g_print("workload  %s on %s (%s)\n", what, ts_backend_name(backend),
            ts_backend_describe(backend)->name);
    g_print("schedule  %s  [%s]\n", pt, ts_sched_point_hash(point));
    g_print("status    %s\n", ts_trial_status_name(r->status));
    if (r->status == TS_TRIAL_OK)
      g_print("error     %.3g (bound %.0e)\n"
              "time      median %.3f ms  (min %.3f, max %.3f, %u samples)\n"
              "rate      %.2f GFLOP/s  %.2f GB/s\n"
              "compile   %s\n",
              r->rel_error, r->tolerance, r->median_ns / 1e6, r->min_ns / 1e6, r->max_ns / 1e6,
              r->samples_ns->len, r->gflops, r->gbps,
              r->cache_hit ? "artifact cache hit" : "compiled");
    else
      g_print("%s\n", r->message);
  }
  return r->status == TS_TRIAL_OK ? EXIT_OK : EXIT_CANDIDATE;
}

static int
cmd_ops(void)
{
  for (guint i = 0; i < ts_op_count(); i++) {
    const TsOpDef *op = ts_op_nth(i);
    g_autofree char *dims = ts_op_dims(op);
    g_print("%-15s dims %-6s %s\n", ts_op_name(op), dims, ts_op_summary(op));
    g_print("%-15s cpu space: %s\n", "", ts_op_default_space(op, "cpu"));
  }
  return EXIT_OK;
}

static int
cmd_devices(void)
{
  int status = EXIT_OK;
  for (const char *const *n = ts_backend_names(); *n; n++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(TsBackend) b = ts_backend_open(*n, &error);
    if (b == NULL) {
      g_print("%-6s unavailable: %s\n", *n, error->message);
      continue;
    }
    const TsDeviceInfo *d = ts_backend_describe(b);
    g_print("%-6s %s, %s, %u cores, %.1f GiB, L1 %" G_GUINT64_FORMAT " KiB, L2 %" G_GUINT64_FORMAT
            " KiB, L3 %" G_GUINT64_FORMAT " KiB, %u-bit SIMD; toolchain %s\n",
            d->backend, d->name, d->arch, d->compute_units, d->memory_bytes / 1073741824.0,
            d->l1_bytes / 1024, d->l2_bytes / 1024, d->l3_bytes / 1024, d->vector_bits,
            d->toolchain);
  }
  return status;
}

static void
print_usage(void)
{
  g_print("Usage: tessera-tune COMMAND [OPTIONS]\n\n"
          "Commands:\n"
          "  lower OP    print Graph, Schedule, Tile and Target IR of a schedule point\n"
          "  run OP      compile, verify and time one schedule point\n"
          "  ops         list the ops, their dims and default spaces\n"
          "  devices     list the backends and their devices\n\n"
          "'tessera-tune COMMAND --help' documents each command.\n%s\n",
          EXIT_HELP);
}

int
main(int argc, char **argv)
{
  setlocale(LC_ALL, "");
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    print_usage();
    return argc < 2 ? EXIT_USAGE : EXIT_OK;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "lower") == 0)
    return cmd_lower(argc - 1, argv + 1);
  if (strcmp(cmd, "run") == 0)
    return cmd_run(argc - 1, argv + 1);
  if (strcmp(cmd, "ops") == 0)
    return cmd_ops();
  if (strcmp(cmd, "devices") == 0)
    return cmd_devices();
  g_printerr("tessera-tune: unknown command '%s'\n", cmd);
  print_usage();
  return EXIT_USAGE;
}
