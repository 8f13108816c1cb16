/* tt-profile.c — `tessera-tune profile`: one schedule point run under the profiler (timeline,
 * counters, roofline; on a GPU also a separate pass of hardware metrics), stored in the schedule
 * cache with its trial, and written as a Chrome trace; `profile list` and `profile export ID`
 * read stored ones back. */
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#include "ts-nvtx.h"
#include "ts-prof-metrics.h"
#include "ts-prof-perf.h"
#include "ts-prof-trace.h"
#include "ts-tune.h"
#include "tt-cli.h"

static const char PROFILE_HELP[] =
  "Run one schedule point of OP under the profiler: the point given with --schedule, else\n"
  "the cached best, else the op's default. The run is compiled, verified and timed as the\n"
  "tuner does, while a timeline of everything the backend does is recorded. The trial and\n"
  "the profile go to the schedule cache; --output writes the timeline as a Chrome trace.\n"
  "\n"
  "  tessera-tune profile OP --shape DIMS [--dtype D] [--schedule P] [--output TRACE.json]\n"
  "                          [--no-metrics]     (no GPU hardware-metrics pass)\n"
  "                          [--timeout S]      (a run longer than S seconds, default 60, is\n"
  "                                             killed and reported as a timeout)\n"
  "  tessera-tune profile list [--db PATH]           stored profiles, newest first: kind\n"
  "                                                  'run' (this command) or 'tune' (a whole\n"
  "                                                  tuning session, 'tune OP --profile')\n"
  "  tessera-tune profile export ID --output FILE    a stored profile as a Chrome trace\n"
  "\n"
  "Output, line by line:\n"
  "  workload   op, shape, dtypes; backend and device\n"
  "  schedule   the point run, and where it came from (--schedule, cached best, default)\n"
  "  status     ok, compile_error, runtime_error, wrong_result; the error when not ok\n"
  "  time       median kernel time of the timed launches, min and max, number of samples\n"
  "  roofline   arithmetic intensity (FLOP per byte of compulsory memory traffic), achieved\n"
  "             GFLOP/s, the roofline bound at that intensity from the device's measured\n"
  "             ceilings (compute or memory bound, which roof) and the fraction of it reached\n"
  "  counters   per timed launch, from perf_event (CPU): cycles, instructions, IPC, cache\n"
  "             references and misses; task clock, page faults, context switches. Where the\n"
  "             kernel or VM refuses hardware counters: 'counters unavailable: WHY (FIX)'\n"
  "             and the software ones still shown\n"
  "  metrics    GPU only (cuda backend), unless --no-metrics: hardware counters from a\n"
  "             separate pass after the timed run (CUPTI's range profiler replays the kernel,\n"
  "             so none of it is the time above): DRAM bytes read and written; FP32, FP16,\n"
  "             FP64 FLOPs on the FMA pipes (add + mul + 2 fma instructions); tensor-core\n"
  "             FLOPs per dtype; achieved occupancy; L2 hit rate; shared-memory bank\n"
  "             conflicts of loads and stores; the profiled pass's duration. Each figure says\n"
  "             its source: 'counter', 'derived from the op's FLOP count' (tensor FLOPs on a\n"
  "             chip without that counter) or 'unavailable' (no counter on this GPU). When the\n"
  "             driver refuses counters: 'metrics    unavailable: WHY (FIX)', the time kept\n"
  "  timeline   events recorded by kind (kernel, compile, memcpy, memset, alloc, free,\n"
  "             range), peak memory allocated at once, the span from first to last event,\n"
  "             and the time inside kernels; on a GPU the device's own copies, sets,\n"
  "             allocations and frees (CUPTI records) are counted beside the host's calls\n"
  "  trace      the Chrome trace written (open it in https://ui.perfetto.dev)\n"
  "  stored     the profile id and trial id in the schedule cache\n"
  "With --json, one object with the same figures.";

static TsSchedPoint *
profile_point(TsOpInstance *inst, TsBackend *backend, TsDb *db, const TtArgs *a, gint64 w,
              gint64 d, gint64 t, const char **origin, GError **error)
{
  g_autoptr(TsSchedPoint) user = NULL;
  *origin = "default";
  if (a->schedule) {
    user = ts_sched_point_parse(a->schedule, error);
    if (user == NULL)
      return NULL;
    *origin = "--schedule";
  } else {
    g_autoptr(TsDbTrial) best = ts_db_get_best(db, w, d, t, NULL);
    if (best) {
      user = ts_sched_point_parse(best->schedule, error);
      if (user == NULL)
        return NULL;
      *origin = "cached best";
    }
  }
  return ts_op_instance_complete_point(inst, ts_backend_name(backend), user, error);
}

static void
print_counters(const char *json)
{
  g_autoptr(JsonParser) p = json_parser_new();
  if (json == NULL || !json_parser_load_from_data(p, json, -1, NULL))
    return;
  JsonObject *o = json_node_get_object(json_parser_get_root(p));
#define GET(name) json_object_get_double_member_with_default(o, name, NAN)
  double cycles = GET("cycles"), instr = GET("instructions"), ipc = GET("ipc");
  double refs = GET("cache_references"), misses = GET("cache_misses"), rate = GET("cache_miss_rate");
  double clock = GET("task_clock_ns"), faults = GET("page_faults"), cs = GET("context_switches");
#undef GET
  if (isfinite(cycles))
    g_print("counters   %.4g cycles, %.4g instructions (IPC %.2f), %.4g cache references, "
            "%.4g misses (%.1f%%) per launch\n",
            cycles, instr, ipc, refs, misses, 100 * rate);
  const char *why = json_object_get_string_member_with_default(o, "unavailable", NULL);
  if (why)
    g_print("counters   %s\n", why);
  if (isfinite(clock))
    g_print("           task clock %.4f ms (all threads), %.3g page faults, %.3g context "
            "switches per launch\n",
            clock / 1e6, faults, cs);
}

/* ---- timelines: what `profile` and `tune --profile` share ---- */

void
tt_timeline_start(TtTimeline *tl, TsBackend *backend, const char *range)
{
  g_return_if_fail(tl->trace == NULL);
  tl->trace = ts_trace_new();
  tl->backend = backend;
  if (backend)
    ts_backend_set_trace(backend, tl->trace);
  ts_nvtx_set_trace(tl->trace);
  ts_nvtx_push(range);
  tl->recording = TRUE;
}

void
tt_timeline_stop(TtTimeline *tl)
{
  g_return_if_fail(tl->recording);
  /* The outer range is recorded when it closes, so it closes before the trace is let go. */
  ts_nvtx_pop();
  ts_nvtx_set_trace(NULL);
  if (tl->backend)
    ts_backend_set_trace(tl->backend, NULL);
  tl->recording = FALSE;
  tl->events = ts_prof_trace_events(tl->trace, &tl->t0_ns);
  ts_prof_trace_summarise((const TsDbEvent *)(void *)tl->events->data, tl->events->len,
                          &tl->summary);
}

void
tt_timeline_clear(TtTimeline *tl)
{
  if (tl->recording)
    tt_timeline_stop(tl);
  g_clear_pointer(&tl->events, g_array_unref);
  g_clear_pointer(&tl->trace, ts_trace_unref);
  tl->backend = NULL;
}

void
tt_timeline_summary_json(const TtTimeline *tl, JsonBuilder *b)
{
  const TsProfTraceSummary *s = &tl->summary;
  json_builder_set_member_name(b, "events");
  json_builder_begin_object(b);
  for (guint k = 0; k < TS_TRACE_N_KINDS; k++) {
    json_builder_set_member_name(b, ts_trace_kind_name((TsTraceKind)k));
    json_builder_add_int_value(b, s->n_by_kind[k]);
  }
  json_builder_end_object(b);
  json_builder_set_member_name(b, "peak_bytes");
  json_builder_add_int_value(b, (gint64)s->peak_bytes);
  json_builder_set_member_name(b, "span_ns");
  json_builder_add_int_value(b, s->span_ns);
  json_builder_set_member_name(b, "kernel_ns");
  json_builder_add_int_value(b, s->kernel_ns);
}

void
tt_timeline_print(const TtTimeline *tl)
{
  const TsProfTraceSummary *s = &tl->summary;
  g_autoptr(GString) kinds = g_string_new(NULL);
  guint total = 0;
  for (guint k = 0; k < TS_TRACE_N_KINDS; k++) {
    total += s->n_by_kind[k];
    if (s->n_by_kind[k])
      g_string_append_printf(kinds, "%s%u %s", kinds->len ? ", " : "", s->n_by_kind[k],
                             ts_trace_kind_name((TsTraceKind)k));
  }
  g_print("timeline   %u events: %s; peak memory %.2f MiB; span %.3f s, %.3f s in kernels\n",
          total, kinds->str, s->peak_bytes / 1048576.0, s->span_ns / 1e9, s->kernel_ns / 1e9);
}

gboolean
tt_timeline_store(TtTimeline *tl, TsDb *db, TsDbProfile *profile, const char *process,
                  const char *output, gint64 *profile_id, GError **error)
{
  g_return_val_if_fail(tl->events != NULL, FALSE);
  const TsDbEvent *events = (const TsDbEvent *)(void *)tl->events->data;
  profile->t0_ns = tl->t0_ns;
  if (!ts_db_add_profile(db, profile, events, tl->events->len, profile_id, error))
    return FALSE;
  return output == NULL ||
         ts_prof_chrome_trace_write(events, tl->events->len, process, output, error);
}

/* ---- profile OP ---- */

static char *
summary_json(const TsTrialResult *r, const char *metrics, const TtTimeline *tl)
{
  g_autoptr(JsonBuilder) b = json_builder_new();
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "status");
  json_builder_add_string_value(b, ts_trial_status_name(r->status));
  if (r->status == TS_TRIAL_OK) {
    json_builder_set_member_name(b, "median_ns");
    json_builder_add_double_value(b, r->median_ns);
    json_builder_set_member_name(b, "samples");
    json_builder_add_int_value(b, r->samples_ns->len);
  }
  if (metrics) {
    g_autoptr(JsonNode) m = json_from_string(metrics, NULL);
    if (m) {
      json_builder_set_member_name(b, "metrics");
      json_builder_add_value(b, g_steal_pointer(&m));
    }
  }
  tt_timeline_summary_json(tl, b);
  json_builder_end_object(b);
  g_autoptr(JsonNode) root = json_builder_get_root(b);
  return json_to_string(root, FALSE);
}

static void
print_roofline(const char *metrics)
{
  g_autoptr(JsonParser) p = json_parser_new();
  if (metrics == NULL || !json_parser_load_from_data(p, metrics, -1, NULL))
    return;
  JsonObject *o = json_node_get_object(json_parser_get_root(p));
  JsonNode *rn = json_object_get_member(o, "roofline");
  if (rn == NULL || !JSON_NODE_HOLDS_OBJECT(rn))
    return;
  JsonObject *r = json_node_get_object(rn);
  const char *bound = json_object_get_string_member_with_default(r, "bound", "?");
  g_print("roofline   %.3g FLOP/byte, %.2f GFLOP/s of a %.2f GFLOP/s bound (%s bound: %s): "
          "%.1f%%\n",
          json_object_get_double_member_with_default(r, "intensity", NAN),
          json_object_get_double_member_with_default(r, "gflops", NAN),
          json_object_get_double_member_with_default(r, "bound_gflops", NAN),
          strcmp(bound, "dram") == 0 ? "memory" : "compute", bound,
          100 * json_object_get_double_member_with_default(r, "fraction", NAN));
}

/* The trial's metrics JSON with the worker's "gpu_metrics" added: the figures, or
 * {"unavailable": why}. */
static char *
with_gpu_metrics(const char *metrics_json, const char *gpu_metrics_json)
{
  g_autoptr(JsonNode) root = metrics_json ? json_from_string(metrics_json, NULL) : NULL;
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root))
    root = json_node_init_object(json_node_alloc(), json_object_new());
  JsonNode *gm = json_from_string(gpu_metrics_json, NULL);
  if (gm != NULL)
    json_object_set_member(json_node_get_object(root), "gpu_metrics", gm);
  return json_to_string(root, FALSE);
}

static void
print_gpu_metrics(const char *gpu_metrics_json)
{
  g_autoptr(JsonNode) node = json_from_string(gpu_metrics_json, NULL);
  g_autoptr(TsProfKernelMetrics) m = NULL;
  const char *why = "the worker sent no figures";
  if (node && JSON_NODE_HOLDS_OBJECT(node) &&
      json_object_has_member(json_node_get_object(node), "unavailable"))
    why = json_object_get_string_member_with_default(json_node_get_object(node), "unavailable",
                                                     why);
  else
    m = ts_prof_kernel_metrics_from_json_node(node);
  if (m == NULL) {
    g_print("metrics    unavailable: %s\n", why);
    return;
  }
  g_print("metrics    hardware counters of a separate, replayed run (CUPTI range profiler; not "
          "the time above)\n");
  for (guint i = 0; i < ts_prof_figure_count(); i++) {
    const TsProfFigureInfo *info = ts_prof_figure_info(i);
    const TsProfFigure *f = ts_prof_kernel_metrics_figure(m, i);
    g_autofree char *value =
      isfinite(f->value) ? g_strdup_printf("%.4g %s", f->value, info->unit) : g_strdup("-");
    g_print("           %-31s %-16s %s", info->label, value, ts_prof_source_name(f->source));
    if (f->source != TS_PROF_SOURCE_COUNTER && f->detail)
      g_print(" (%s)", f->detail);
    g_print("\n");
  }
}

static int
profile_run(const char *op, TtArgs *a, gboolean no_metrics)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsOpInstance) inst = NULL;
  g_autoptr(TsBackend) backend = NULL;
  g_autoptr(TsDb) db = NULL;
  int rc = tt_check_timeout(a);
  if (rc != TT_EXIT_OK)
    return rc;
  rc = tt_open(op, a, TS_DB_OPEN_DEFAULT, &inst, &backend, &db);
  if (rc != TT_EXIT_OK)
    return rc;
  gint64 w, d, t;
  g_autoptr(TsProfCeilings) ceil = NULL;
  if (!ts_tune_key_ids(db, inst, backend, &w, &d, &t, &error) ||
      (ceil = tt_ceilings(db, backend, d, FALSE, a->json, &error)) == NULL)
    return tt_fail(tt_error_code(error), error);
  const char *origin = NULL;
  g_autoptr(TsSchedPoint) point = profile_point(inst, backend, db, a, w, d, t, &origin, &error);
  if (point == NULL)
    return tt_fail(TT_EXIT_USAGE, error);
  rc = tt_check_runnable(inst, backend, point);
  if (rc != TT_EXIT_OK)
    return rc;

  /* In the tuner's candidate worker (tt_run_point), which records the trial's timeline (its
   * events join this process's range) and counters, and on a GPU runs the hardware-metrics
   * pass after the timed run. */
  TsRunOptions opt;
  ts_run_options_init(&opt);
  opt.seed = (guint64)a->seed;
  gboolean metrics = !no_metrics && ts_backend_has_metrics(backend);
  g_auto(TtTimeline) tl = {0};
  g_autofree char *range = g_strdup_printf("tessera: profile %s", op);
  tt_timeline_start(&tl, NULL, range);
  g_autoptr(TsTrialResult) r =
    tt_run_point(inst, backend, point, &opt, tl.trace, metrics, a->timeout_s, &error);
  tt_timeline_stop(&tl);
  if (r == NULL)
    return tt_fail(tt_error_code(error), error);
  metrics = metrics && r->gpu_metrics_json != NULL;

  /* The trial, as the tuner would have stored it (a point already stored keeps its row). */
  g_autoptr(TsDbTrial) trial =
    ts_tune_trial_from_result(inst, backend, ceil, point, r, "profile");
  if (metrics) {
    char *merged = with_gpu_metrics(trial->metrics_json, r->gpu_metrics_json);
    g_free(trial->metrics_json);
    trial->metrics_json = merged;
  }
  trial->workload_id = w;
  trial->device_id = d;
  trial->toolchain_id = t;
  gint64 trial_id = 0;
  if (!ts_db_add_trial(db, trial, &trial_id, NULL, &error))
    return tt_fail(TT_EXIT_MACHINE, error);

  g_autofree char *summary = summary_json(r, trial->metrics_json, &tl);
  TsDbProfile prof = {.workload_id = w, .device_id = d, .toolchain_id = t,
                      .trial_id = trial_id, .kind = "run", .schedule = trial->schedule,
                      .summary_json = summary};
  gint64 profile_id = 0;
  g_autofree char *what = ts_op_instance_describe(inst);
  g_autofree char *process = g_strdup_printf("tessera %s on %s (%s)", what,
                                             ts_backend_name(backend),
                                             ts_backend_describe(backend)->name);
  if (!tt_timeline_store(&tl, db, &prof, process, a->output, &profile_id, &error))
    return tt_fail(TT_EXIT_MACHINE, error);

  if (a->json) {
    g_print("{\"profile\": %" G_GINT64_FORMAT ", \"trial\": %" G_GINT64_FORMAT
            ", \"schedule\": \"%s\", \"summary\": %s}\n",
            profile_id, trial_id, trial->schedule, summary);
  } else {
    g_print("workload   %s on %s (%s)\n", what, ts_backend_name(backend),
            ts_backend_describe(backend)->name);
    g_print("schedule   %s  (%s)\n", trial->schedule, origin);
    g_print("status     %s\n", ts_trial_status_name(r->status));
    if (r->status == TS_TRIAL_OK) {
      g_print("time       median %.4f ms (min %.4f, max %.4f, %u samples)\n", r->median_ns / 1e6,
              r->min_ns / 1e6, r->max_ns / 1e6, r->samples_ns->len);
      print_roofline(trial->metrics_json);
      print_counters(r->counters_json);
      if (metrics)
        print_gpu_metrics(r->gpu_metrics_json);
    } else {
      g_print("           %s\n", r->message);
    }
    tt_timeline_print(&tl);
    if (a->output)
      g_print("trace      %s (open in https://ui.perfetto.dev)\n", a->output);
    g_print("stored     profile %" G_GINT64_FORMAT ", trial %" G_GINT64_FORMAT " in %s\n",
            profile_id, trial_id, ts_db_path(db));
  }
  return r->status == TS_TRIAL_OK ? TT_EXIT_OK : TT_EXIT_CANDIDATE;
}

static int
profile_list(TtArgs *a)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsDb) db = tt_db(a, TS_DB_OPEN_READ_ONLY, &error);
  if (db == NULL)
    return tt_fail(tt_error_code(error), error);
  g_autoptr(GPtrArray) list = ts_db_list_profiles(db, 0, &error);
  if (list == NULL)
    return tt_fail(TT_EXIT_MACHINE, error);
  if (list->len == 0)
    g_print("no profiles in %s (make one with 'tessera-tune profile OP --shape ...' or "
            "'tessera-tune tune OP --shape ... --profile')\n",
            ts_db_path(db));
  for (guint i = 0; i < list->len; i++) {
    const TsDbProfile *p = list->pdata[i];
    /* A tuning session's profile has no trial of its own; its schedule is the session's best. */
    g_autofree char *trial =
      p->trial_id ? g_strdup_printf("%" G_GINT64_FORMAT, p->trial_id) : g_strdup("-");
    g_print("%5" G_GINT64_FORMAT "  %s  %-4s  %6u events  trial %-6s %s\n", p->id,
            p->created_at, p->kind, p->n_events, trial, p->schedule ? p->schedule : "");
  }
  return TT_EXIT_OK;
}

static int
profile_export(const char *id_text, TtArgs *a)
{
  g_autoptr(GError) error = NULL;
  gint64 id = 0;
  if (!g_ascii_string_to_signed(id_text, 10, 1, G_MAXINT64, &id, NULL))
    return tt_usage("profile export takes a profile id (see 'tessera-tune profile list'), not "
                    "'%s'", id_text);
  if (a->output == NULL)
    return tt_usage("profile export needs --output FILE");
  g_autoptr(TsDb) db = tt_db(a, TS_DB_OPEN_READ_ONLY, &error);
  if (db == NULL)
    return tt_fail(tt_error_code(error), error);
  g_autoptr(TsDbProfile) p = ts_db_get_profile(db, id, &error);
  g_autoptr(GArray) events = p ? ts_db_profile_events(db, id, &error) : NULL;
  if (events == NULL)
    return tt_fail(tt_error_code(error), error);
  g_autofree char *process = g_strdup_printf("tessera profile %" G_GINT64_FORMAT, id);
  if (!ts_prof_chrome_trace_write((const TsDbEvent *)(void *)events->data, events->len, process,
                                  a->output, &error))
    return tt_fail(TT_EXIT_MACHINE, error);
  g_print("wrote %u events of profile %" G_GINT64_FORMAT " to %s\n", events->len, id, a->output);
  return TT_EXIT_OK;
}

int
tt_cmd_profile(int argc, char **argv)
{
  g_auto(TtArgs) a = {.seed = 1};
  if (!tt_parse("profile", "OP | list | export ID", PROFILE_HELP,
                TT_OPT_WORKLOAD | TT_OPT_SCHEDULE | TT_OPT_BACKEND | TT_OPT_SEED | TT_OPT_JSON |
                  TT_OPT_DB | TT_OPT_OUTPUT | TT_OPT_METRICS | TT_OPT_TIMEOUT,
                &a, &argc, &argv))
    return TT_EXIT_USAGE;
  if (argc == 2 && strcmp(argv[1], "list") == 0)
    return profile_list(&a);
  if (argc == 3 && strcmp(argv[1], "export") == 0)
    return profile_export(argv[2], &a);
  if (argc != 2)
    return tt_usage("profile takes one OP (see 'tessera-tune ops'), 'list' or 'export ID'");
  return profile_run(argv[1], &a, a.no_metrics);
}
