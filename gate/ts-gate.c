/* ts-gate.c — running the gate: measuring a suite for a baseline, checking it side by side with
 * the baseline's own kernel binaries, comparing stored runs, and naming runs by commit.
 */
#include <gio/gio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#include "ts-gate.h"
#include "ts-op.h"
#include "ts-tune-stats.h"
#include "ts-tune-worker.h"
#include "ts-tune.h"

void
ts_gate_options_init(TsGateOptions *o)
{
  *o = (TsGateOptions){
      .time_scale = 1.0,
      .max_remeasure = 2,
      .store = TRUE,
      .seed = 1,
      .timeout_s = 60,
  };
}

G_GNUC_PRINTF(2, 3)
static void
progress(const TsGateOptions *o, const char *fmt, ...)
{
  if (o->progress == NULL)
    return;
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *line = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  o->progress(line, o->user_data);
}

/* ---- git ---- */

/* Output of `git ARGS` in the working directory, stripped; NULL when git is missing, this is not
 * a checkout, or the command fails. */
static char *
git_output(const char *const *argv)
{
  g_autoptr(GSubprocess) p = g_subprocess_newv(
      argv, G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_SILENCE, NULL);
  g_autofree char *out = NULL;
  if (p == NULL || !g_subprocess_communicate_utf8(p, NULL, NULL, &out, NULL, NULL) ||
      !g_subprocess_get_successful(p))
    return NULL;
  return g_strdup(g_strstrip(out));
}

static void
git_state(char **commit, gboolean *dirty)
{
  const char *head[] = {"git", "rev-parse", "--verify", "-q", "HEAD", NULL};
  const char *status[] = {"git", "status", "--porcelain", "--untracked-files=no", NULL};
  *commit = git_output(head);
  g_autofree char *changes = *commit ? git_output(status) : NULL;
  *dirty = changes && *changes;
}

/* ---- resolving a workload ---- */

typedef struct {
  TsOpInstance *inst;
  TsSchedPoint *point; /* complete */
  char *schedule;
  gint64 workload_id;
} Workload;

static void
workload_clear(Workload *w)
{
  g_clear_pointer(&w->inst, ts_op_instance_free);
  g_clear_pointer(&w->point, ts_sched_point_free);
  g_clear_pointer(&w->schedule, g_free);
}

typedef struct {
  TsDb *db;
  TsBackend *backend;
  const TsGateSuite *suite;
  const TsGateOptions *opt;
  gint64 device_id, toolchain_id;
  TsTuneWorker *worker; /* the measuring child (ts-gate-worker.c) */
} Ctx;

static TsSchedPoint *
best_point(Ctx *c, const TsGateWorkload *wl, TsOpInstance *inst, GError **error)
{
  TsDbKey key;
  g_autofree char *shape = NULL, *dtype = NULL;
  ts_tune_lookup_key(inst, c->backend, &key, &shape, &dtype);
  g_auto(TsDbLookupResult) found = {0};
  g_autoptr(GError) err = NULL;
  if (!ts_db_lookup(c->db, &key, &found, &err)) {
    if (g_error_matches(err, TS_DB_ERROR, TS_DB_ERROR_NOT_FOUND))
      g_set_error(error, TS_GATE_ERROR, TS_GATE_ERROR_FAILED,
                  "workload [%s] asks for the cached best schedule, but %s has none for %s %s "
                  "%s on %s: tune it first (tessera-tune tune %s --shape %s --dtype '%s' --db "
                  "%s) or give schedule=default or a point in the suite",
                  wl->name, ts_db_path(c->db), key.op, shape, dtype, key.device_name, key.op,
                  shape, dtype, ts_db_path(c->db));
    else
      g_propagate_error(error, g_steal_pointer(&err));
    return NULL;
  }
  return ts_sched_point_parse(found.schedule, error);
}

static gboolean
resolve(Ctx *c, const TsGateWorkload *wl, Workload *w, GError **error)
{
  w->inst = ts_op_instance_new(wl->op, wl->shape, wl->dtype, error);
  if (w->inst == NULL)
    return FALSE;
  if (!ts_tune_key_ids(c->db, w->inst, c->backend, &w->workload_id, &c->device_id,
                       &c->toolchain_id, error))
    return FALSE;
  g_autoptr(TsSchedPoint) given = NULL;
  switch (wl->schedule_kind) {
  case TS_GATE_SCHEDULE_POINT:
    given = ts_sched_point_parse(wl->schedule, error);
    break;
  case TS_GATE_SCHEDULE_DEFAULT:
    given = ts_sched_point_new();
    break;
  case TS_GATE_SCHEDULE_BEST:
    given = best_point(c, wl, w->inst, error);
    break;
  }
  if (given == NULL)
    return FALSE;
  g_autoptr(GError) err = NULL;
  w->point = ts_op_instance_complete_point(w->inst, ts_backend_name(c->backend), given, &err);
  if (w->point == NULL) {
    g_set_error(error, TS_GATE_ERROR, TS_GATE_ERROR_SUITE, "workload [%s]: %s", wl->name,
                err->message);
    return FALSE;
  }
  /* What the tuner prunes cannot run well here either (threads(100000) overflows the OpenMP
   * runtime's stack): the suite is wrong for this device, not the kernel slow. */
  g_autofree char *why =
    ts_op_instance_prune_reason(w->inst, w->point, ts_backend_describe(c->backend));
  if (why != NULL) {
    g_set_error(error, TS_GATE_ERROR, TS_GATE_ERROR_SUITE,
                "workload [%s]: its schedule cannot run on this device: %s", wl->name, why);
    return FALSE;
  }
  w->schedule = ts_sched_point_to_string(w->point);
  return TRUE;
}

static void
workload_free(Workload *w)
{
  workload_clear(w);
  g_free(w);
}

/* Every workload resolved before a run is begun: a schedule=best never tuned, or a point the op
 * rejects, leaves no half-measured run behind. Also finds the device and toolchain rows. */
static GPtrArray *
resolve_all(Ctx *c, GError **error)
{
  g_autoptr(GPtrArray) all = g_ptr_array_new_with_free_func((GDestroyNotify)workload_free);
  for (guint i = 0; i < c->suite->workloads->len; i++) {
    Workload *w = g_new0(Workload, 1);
    g_ptr_array_add(all, w);
    if (!resolve(c, g_ptr_array_index(c->suite->workloads, i), w, error))
      return NULL;
  }
  return g_steal_pointer(&all);
}

/* ---- measuring, in the child ---- */

static double
array_median(const GArray *a)
{
  return ts_stats_median((const double *)a->data, a->len);
}

static double
time_ms(Ctx *c)
{
  return c->suite->time_ms * c->opt->time_scale;
}

/* One request to the measuring child. NULL with *died set when the child crashed or hung on
 * it (its state is gone; the next request starts a fresh one), or with error set when it
 * could not be started or answered {"error"}. */
static JsonNode *
ask(Ctx *c, JsonBuilder *b, double timeout_s, char **died, GError **error)
{
  json_builder_end_object(b);
  g_autoptr(JsonNode) req = json_builder_get_root(b);
  g_autofree char *line = json_to_string(req, FALSE);
  TsTuneWorkerFate fate;
  g_autofree char *reply = ts_tune_worker_call(c->worker, line, timeout_s, &fate, died, error);
  if (reply == NULL)
    return NULL;
  g_autoptr(JsonNode) root = json_from_string(reply, error);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
    if (root != NULL)
      g_set_error(error, TS_GATE_ERROR, TS_GATE_ERROR_FAILED,
                  "the measuring process answered something that is not a JSON object");
    return NULL;
  }
  JsonObject *o = json_node_get_object(root);
  if (json_object_get_boolean_member_with_default(o, "exit", FALSE))
    ts_tune_worker_stop(c->worker); /* its device is unusable: the next request gets a fresh one */
  const char *err = json_object_get_string_member_with_default(o, "error", NULL);
  if (err != NULL) {
    g_set_error(error, TS_GATE_ERROR, TS_GATE_ERROR_FAILED, "%s", err);
    return NULL;
  }
  return g_steal_pointer(&root);
}

static JsonBuilder *
request(const char *cmd)
{
  JsonBuilder *b = json_builder_new();
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "cmd");
  json_builder_add_string_value(b, cmd);
  return b;
}

static void
set_str(JsonBuilder *b, const char *key, const char *value)
{
  json_builder_set_member_name(b, key);
  if (value)
    json_builder_add_string_value(b, value);
  else
    json_builder_add_null_value(b);
}

static void
set_num(JsonBuilder *b, const char *key, double value)
{
  json_builder_set_member_name(b, key);
  json_builder_add_double_value(b, value);
}

/* The current kernel of a workload compiled, loaded and verified in the child, ready to be
 * timed. FALSE with error set when the machinery failed; otherwise *failure is set when the
 * kernel did (does not compile, is wrong, crashes or hangs). *artifact gets its binary. */
static gboolean
prepare_current(Ctx *c, const TsGateWorkload *wl, Workload *w, double slowdown,
                GBytes **artifact, char **entry, char **launch_ints, char **failure,
                GError **error)
{
  g_autoptr(JsonBuilder) b = request("current");
  set_str(b, "op", wl->op);
  if (wl->kernel_src != NULL) {
    set_str(b, "kernel", wl->kernel_src);
    set_str(b, "kernel_path", wl->kernel_path);
  }
  g_autofree char *shape = ts_shape_to_string(ts_op_instance_shape(w->inst));
  g_autofree char *dtype = ts_dtype_policy_to_string(ts_op_instance_dtype(w->inst));
  set_str(b, "shape", shape);
  set_str(b, "dtype", dtype);
  set_str(b, "schedule", w->schedule);
  set_str(b, "backend", ts_backend_name(c->backend));
  set_str(b, "cache_dir", ts_backend_get_cache_dir(c->backend));
  set_num(b, "seed", (double)c->opt->seed);
  set_num(b, "slowdown", slowdown);
  g_autofree char *died = NULL;
  g_autoptr(JsonNode) root = ask(c, b, c->opt->timeout_s, &died, error);
  if (root == NULL && died == NULL)
    return FALSE;
  if (root == NULL) {
    *failure = g_str_has_prefix(died, "no result")
                   ? g_strdup_printf("timeout: loading and verifying the kernel hung (%s)", died)
                   : g_strdup_printf("runtime_error: the kernel crashed the measuring process "
                                     "(%s)", died);
    return TRUE;
  }
  JsonObject *o = json_node_get_object(root);
  const char *f = json_object_get_string_member_with_default(o, "failure", NULL);
  if (f != NULL) {
    *failure = g_strdup(f);
    return TRUE;
  }
  const char *b64 = json_object_get_string_member_with_default(o, "artifact", NULL);
  if (artifact && b64) {
    gsize len = 0;
    guchar *data = g_base64_decode(b64, &len);
    *artifact = g_bytes_new_take(data, len);
    *entry = g_strdup(json_object_get_string_member_with_default(o, "entry", ""));
    *launch_ints = g_strdup(json_object_get_string_member_with_default(o, "launch_ints", NULL));
  }
  return TRUE;
}

static void
append(GArray **into, JsonObject *o, const char *key)
{
  JsonArray *a = json_object_has_member(o, key) ? json_object_get_array_member(o, key) : NULL;
  if (*into == NULL)
    *into = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint i = 0; a && i < json_array_get_length(a); i++) {
    double v = json_array_get_double_element(a, i);
    g_array_append_val(*into, v);
  }
}

/* One more measurement in the child, added to r's samples: A/B rounds of the baseline and
 * current kernels (ab), else the current kernel alone. FALSE with error set when the machinery
 * failed, or with *failure set when the kernels crashed or hung the child or could not be
 * timed. */
static gboolean
measure(Ctx *c, gboolean ab, TsGateResult *r, char **failure, GError **error)
{
  g_autoptr(JsonBuilder) b = request("measure");
  json_builder_set_member_name(b, "ab");
  json_builder_add_boolean_value(b, ab);
  set_num(b, "time_ms", time_ms(c));
  /* Timing takes about time_ms per kernel; a slower baseline, the probes and the untimed
   * launches take more. Far past that, the kernels hang. */
  double timeout = c->opt->timeout_s + 20 * time_ms(c) / 1000;
  g_autofree char *died = NULL;
  g_autoptr(GError) err = NULL;
  g_autoptr(JsonNode) root = ask(c, b, timeout, &died, &err);
  if (root == NULL && died == NULL && !g_error_matches(err, TS_GATE_ERROR, TS_GATE_ERROR_FAILED)) {
    g_propagate_error(error, g_steal_pointer(&err));
    return FALSE;
  }
  if (root == NULL) {
    const char *what = ab ? "timing the baseline and current kernels" : "timing the kernel";
    *failure = err ? g_strdup_printf("runtime_error: %s failed: %s", what, err->message)
               : g_str_has_prefix(died, "no result")
                 ? g_strdup_printf("timeout: %s hung (%s)", what, died)
                 : g_strdup_printf("runtime_error: %s crashed the measuring process (%s)", what,
                                   died);
    return FALSE;
  }
  JsonObject *o = json_node_get_object(root);
  append(&r->cur_ns, o, "cur");
  /* Another process held the device past the wait's bound: the report says so. */
  const char *note = json_object_get_string_member_with_default(o, "note", NULL);
  if (note != NULL)
    ts_gate_result_add_note(r, "%s", note);
  if (ab) {
    append(&r->base_ns, o, "base");
    append(&r->round_ratios, o, "ratios");
  }
  return TRUE;
}

/* ---- storing ---- */

static gboolean
store_result(Ctx *c, gint64 run_id, gboolean check, const TsGateResult *r, gint64 workload_id,
             GBytes *artifact, const char *entry, const char *launch_ints, const char *failure,
             GError **error)
{
  g_autoptr(TsDbGateResult) d = ts_db_gate_result_new();
  d->run_id = run_id;
  d->name = g_strdup(r->name);
  d->workload_id = workload_id;
  d->schedule = g_strdup(r->schedule);
  d->status = failure ? TS_DB_TRIAL_RUNTIME_ERROR : TS_DB_TRIAL_OK;
  if (failure && g_str_has_prefix(failure, "compile error"))
    d->status = TS_DB_TRIAL_COMPILE_ERROR;
  if (failure && g_str_has_prefix(failure, "wrong_result"))
    d->status = TS_DB_TRIAL_WRONG_RESULT;
  if (failure && g_str_has_prefix(failure, "timeout"))
    d->status = TS_DB_TRIAL_TIMEOUT;
  d->error_text = g_strdup(failure);
  if (r->cur_ns) {
    d->samples_ns = g_array_ref(r->cur_ns);
    d->median_ns = array_median(r->cur_ns);
  }
  if (artifact) {
    /* Without its binary a later check falls back to the samples. */
    d->artifact = g_bytes_ref(artifact);
    d->artifact_hash = g_compute_checksum_for_bytes(G_CHECKSUM_SHA256, artifact);
    d->entry = g_strdup(entry);
    d->launch_ints = g_strdup(launch_ints);
    d->backend = g_strdup(ts_backend_name(c->backend));
  }
  if (r->base_ns) {
    d->base_samples_ns = g_array_ref(r->base_ns);
    d->base_median_ns = r->base_median_ns;
  }
  d->change = r->change;
  d->p_value = r->p_value;
  d->threshold = r->threshold;
  d->remeasured = r->remeasured;
  d->note = g_strdup(r->note);
  if (check)
    d->verdict = g_strdup(ts_gate_verdict_name(r->verdict));
  return ts_db_gate_add_result(c->db, d, NULL, error);
}

/* ---- baseline ---- */

/* A stored run, with the commit given or the one checked out here. */
static gint64
begin_run(Ctx *c, const char *kind, gint64 base_run_id, GError **error)
{
  g_autofree char *commit = NULL;
  gboolean dirty = FALSE;
  if (c->opt->git_commit)
    commit = g_strdup(c->opt->git_commit);
  else
    git_state(&commit, &dirty);
  return ts_db_gate_begin(c->db, kind, c->suite->name, c->device_id, c->toolchain_id, commit,
                          dirty, c->opt->label, base_run_id, error);
}

static TsGateResult *
new_result(const TsGateWorkload *wl)
{
  TsGateResult *r = ts_gate_result_new();
  r->name = g_strdup(wl->name);
  r->workload = ts_gate_workload_describe(wl);
  return r;
}

GPtrArray *
ts_gate_baseline(TsDb *db, TsBackend *backend, const TsGateSuite *suite,
                 const TsGateOptions *options, gint64 *run_id_out, GError **error)
{
  g_return_val_if_fail(options->worker_exe != NULL, NULL);
  g_autoptr(TsTuneWorker) worker = ts_tune_worker_new_command(options->worker_exe,
                                                              "measure-worker");
  Ctx c = {.db = db, .backend = backend, .suite = suite, .opt = options, .worker = worker};
  g_autoptr(GPtrArray) workloads = resolve_all(&c, error);
  if (workloads == NULL)
    return NULL;
  gint64 run_id = begin_run(&c, "baseline", 0, error);
  if (run_id == 0)
    return NULL;

  g_autoptr(GPtrArray) results = g_ptr_array_new_with_free_func((GDestroyNotify)ts_gate_result_free);
  for (guint i = 0; i < suite->workloads->len; i++) {
    const TsGateWorkload *wl = g_ptr_array_index(suite->workloads, i);
    g_autofree char *what = ts_gate_workload_describe(wl);
    progress(options, "baseline %s (%u/%u): %s", wl->name, i + 1, suite->workloads->len, what);
    Workload *w = g_ptr_array_index(workloads, i);
    TsGateResult *r = new_result(wl);
    g_ptr_array_add(results, r);
    r->schedule = g_strdup(w->schedule);
    r->threshold = ts_gate_workload_threshold(suite, wl);
    g_autoptr(GBytes) artifact = NULL;
    g_autofree char *entry = NULL, *launch_ints = NULL, *failure = NULL;
    double slowdown = options->inject_only == NULL ? options->inject_slowdown : 0;
    if (!prepare_current(&c, wl, w, slowdown, &artifact, &entry, &launch_ints, &failure,
                         error))
      goto fail;
    if (failure == NULL && !measure(&c, FALSE, r, &failure, error) && failure == NULL)
      goto fail;
    if (failure) {
      r->verdict = TS_GATE_FAILED;
      ts_gate_result_add_note(r, "%s", failure);
      g_clear_pointer(&r->cur_ns, g_array_unref);
      g_clear_pointer(&artifact, g_bytes_unref);
    } else {
      r->cur_median_ns = array_median(r->cur_ns);
    }
    if (!store_result(&c, run_id, FALSE, r, w->workload_id, artifact, entry, launch_ints,
                      failure, error))
      goto fail;
  }
  if (!ts_db_gate_end(db, run_id, "done", NULL, error))
    return NULL;
  if (run_id_out)
    *run_id_out = run_id;
  return g_steal_pointer(&results);

fail:
  ts_db_gate_end(db, run_id, "failed", NULL, NULL);
  return NULL;
}

/* ---- check ---- */

static const TsDbGateResult *
find_named(GPtrArray *stored, const char *name)
{
  for (guint i = 0; i < stored->len; i++) {
    const TsDbGateResult *s = g_ptr_array_index(stored, i);
    if (g_str_equal(s->name, name))
      return s;
  }
  return NULL;
}

/* The baseline's own binary loaded beside the current kernel in the child, to time side by
 * side on the same buffers. FALSE (with a note on r) when it cannot be run here, and the stored
 * samples are used instead; with error set when the stored binary was altered or the machinery
 * failed. A baseline that crashes or hangs the child leaves the current kernel to be prepared
 * again: *current_lost. */
static gboolean
load_baseline(Ctx *c, const TsDbGateResult *base, TsGateResult *r, gboolean *current_lost,
              GError **error)
{
  *current_lost = FALSE;
  if (base->artifact_hash == NULL) {
    ts_gate_result_add_note(r, "baseline kernel binary not stored: compared with its samples");
    return FALSE;
  }
  g_autoptr(GError) err = NULL;
  g_autofree char *entry = NULL, *backend = NULL;
  g_autoptr(GBytes) bytes = ts_db_gate_get_artifact(c->db, base->artifact_hash, &entry, &backend,
                                                    &err);
  if (bytes == NULL) {
    /* Altered bytes fail the check: a gate that quietly fell back to the stored samples would
     * hide that its cache was tampered with. */
    if (g_error_matches(err, TS_DB_ERROR, TS_DB_ERROR_CORRUPT))
      g_propagate_error(error, g_steal_pointer(&err));
    else
      ts_gate_result_add_note(r, "baseline kernel binary unreadable (%s): compared with its "
                              "samples", err->message);
    return FALSE;
  }
  if (g_strcmp0(backend, ts_backend_name(c->backend)) != 0) {
    ts_gate_result_add_note(r, "baseline kernel built for backend %s: compared with its samples",
                            backend);
    return FALSE;
  }
  g_autoptr(JsonBuilder) b = request("baseline");
  gsize len = 0;
  const guchar *data = g_bytes_get_data(bytes, &len);
  g_autofree char *b64 = g_base64_encode(data, len);
  set_str(b, "artifact", b64);
  set_str(b, "entry", entry);
  if (base->launch_ints != NULL)
    set_str(b, "launch_ints", base->launch_ints);
  g_autofree char *died = NULL;
  g_autoptr(JsonNode) root = ask(c, b, c->opt->timeout_s, &died, error);
  if (root == NULL && died == NULL)
    return FALSE;
  if (root == NULL) {
    *current_lost = TRUE;
    ts_gate_result_add_note(r, "baseline kernel binary %s here (%s): compared with its samples",
                            g_str_has_prefix(died, "no result") ? "hangs" : "crashes", died);
    return FALSE;
  }
  const char *note =
    json_object_get_string_member_with_default(json_node_get_object(root), "note", NULL);
  if (note != NULL) {
    ts_gate_result_add_note(r, "%s: compared with its samples", note);
    return FALSE;
  }
  return TRUE;
}

/* One more measurement of the current kernel against the baseline, added to r's samples: A/B
 * rounds when the baseline binary runs, else fresh current samples against the stored ones. */
static gboolean
measure_check(Ctx *c, gboolean ab, const TsDbGateResult *stored, TsGateResult *r,
              char **failure, GError **error)
{
  if (!measure(c, ab, r, failure, error))
    return FALSE;
  if (!ab && r->base_ns == NULL)
    r->base_ns = g_array_ref(stored->samples_ns);
  return TRUE;
}

/* Compares one workload with its baseline; NULL only when the machinery failed. */
static TsGateResult *
check_one(Ctx *c, const TsGateWorkload *wl, Workload *w, GPtrArray *stored, gint64 run_id,
          GError **error)
{
  g_autoptr(TsGateResult) r = new_result(wl);
  r->schedule = g_strdup(w->schedule);
  double threshold = ts_gate_workload_threshold(c->suite, wl);
  r->threshold = threshold;

  double slowdown = c->opt->inject_only == NULL || g_strcmp0(c->opt->inject_only, wl->name) == 0
                      ? c->opt->inject_slowdown
                      : 0;
  g_autoptr(GBytes) artifact = NULL;
  g_autofree char *entry = NULL, *launch_ints = NULL, *failure = NULL;
  if (!prepare_current(c, wl, w, slowdown, &artifact, &entry, &launch_ints, &failure, error))
    return NULL;

  const TsDbGateResult *base = find_named(stored, wl->name);
  if (base)
    r->base_schedule = g_strdup(base->schedule);
  if (failure) {
    /* reported below */
  } else if (base == NULL || base->status != TS_DB_TRIAL_OK || base->samples_ns == NULL ||
             base->samples_ns->len == 0) {
    r->verdict = TS_GATE_NEW;
    ts_gate_result_add_note(r, base ? "the baseline kernel had failed (%s): nothing to compare"
                                    : "not in the baseline: nothing to compare%s",
                            base ? base->error_text : "");
    if (measure(c, FALSE, r, &failure, error))
      r->cur_median_ns = array_median(r->cur_ns);
    else if (failure == NULL)
      return NULL;
  } else {
    if (g_strcmp0(base->schedule, w->schedule) != 0)
      ts_gate_result_add_note(r, "schedule changed from %s", base->schedule);
    gboolean current_lost = FALSE;
    g_autoptr(GError) berr = NULL;
    r->ab = load_baseline(c, base, r, &current_lost, &berr);
    if (berr) {
      g_propagate_error(error, g_steal_pointer(&berr));
      return NULL;
    }
    /* The baseline took the child down with the current kernel in it: load that again. */
    if (current_lost && !prepare_current(c, wl, w, slowdown, NULL, NULL, NULL, &failure, error))
      return NULL;
    if (failure == NULL && !measure_check(c, r->ab, base, r, &failure, error) && failure == NULL)
      return NULL;
    if (failure == NULL)
      ts_gate_decide(r, threshold, c->suite->alpha);
    /* A borderline regression is measured again and judged on all its samples together: a
     * burst of machine noise is diluted by the fresh rounds, a real slowdown is only estimated
     * more precisely. */
    double first_change = r->change, first_p = r->p_value;
    while (failure == NULL && ts_gate_borderline(r, c->suite->alpha) &&
           r->remeasured < c->opt->max_remeasure) {
      progress(c->opt, "  %s: %+.1f%% (p=%.2g) is borderline, measuring again", wl->name,
               100 * r->change, r->p_value);
      r->remeasured++;
      if (!measure_check(c, r->ab, base, r, &failure, error)) {
        if (failure == NULL)
          return NULL;
        break;
      }
      r->verdict = TS_GATE_PASS;
      ts_gate_decide(r, threshold, c->suite->alpha);
    }
    if (failure == NULL && r->remeasured && r->verdict != TS_GATE_REGRESSION)
      ts_gate_result_add_note(r, "a %+.1f%% (p=%.2g) slowdown was not confirmed when measured "
                              "again", 100 * first_change, first_p);
  }
  if (failure) {
    /* Whatever was measured before the kernel failed is not compared. */
    r->verdict = TS_GATE_FAILED;
    ts_gate_result_add_note(r, "%s", failure);
    g_clear_pointer(&r->cur_ns, g_array_unref);
    g_clear_pointer(&r->base_ns, g_array_unref);
    g_clear_pointer(&r->round_ratios, g_array_unref);
    r->change = r->p_value = r->cur_median_ns = r->base_median_ns = NAN;
    g_clear_pointer(&artifact, g_bytes_unref);
  }
  if (run_id &&
      !store_result(c, run_id, TRUE, r, w->workload_id, artifact, entry, launch_ints, failure,
                    error))
    return NULL;
  return g_steal_pointer(&r);
}

GPtrArray *
ts_gate_check(TsDb *db, TsBackend *backend, const TsGateSuite *suite, gint64 base_run_id,
              const TsGateOptions *options, gint64 *run_id_out, GError **error)
{
  g_return_val_if_fail(options->worker_exe != NULL, NULL);
  g_autoptr(TsTuneWorker) worker = ts_tune_worker_new_command(options->worker_exe,
                                                              "measure-worker");
  Ctx c = {.db = db, .backend = backend, .suite = suite, .opt = options, .worker = worker};
  g_autoptr(GPtrArray) workloads = resolve_all(&c, error);
  if (workloads == NULL)
    return NULL;
  g_autoptr(TsDbGateRun) base_run = NULL;
  if (base_run_id) {
    base_run = ts_db_gate_get_run(db, base_run_id, error);
  } else {
    g_autoptr(GError) err = NULL;
    base_run = ts_db_gate_find_baseline(db, suite->name, c.device_id, &err);
    if (base_run == NULL && g_error_matches(err, TS_DB_ERROR, TS_DB_ERROR_NOT_FOUND)) {
      const TsDeviceInfo *d = ts_backend_describe(backend);
      g_set_error(error, TS_GATE_ERROR, TS_GATE_ERROR_NO_BASELINE,
                  "no baseline of suite '%s' for this device (%s, %s) in %s: record one with "
                  "`tessera-perfgate baseline --suite %s%s%s` on the commit to compare against",
                  suite->name, d->name, d->arch, ts_db_path(db), suite->path,
                  " --db ", ts_db_path(db));
      return NULL;
    }
    if (base_run == NULL)
      g_propagate_error(error, g_steal_pointer(&err));
  }
  if (base_run == NULL)
    return NULL;
  g_autoptr(GPtrArray) stored = ts_db_gate_list_results(db, base_run->id, FALSE, error);
  if (stored == NULL)
    return NULL;

  gint64 run_id = 0;
  if (options->store) {
    run_id = begin_run(&c, "check", base_run->id, error);
    if (run_id == 0)
      return NULL;
  }

  g_autoptr(GPtrArray) results = g_ptr_array_new_with_free_func((GDestroyNotify)ts_gate_result_free);
  for (guint i = 0; i < suite->workloads->len; i++) {
    const TsGateWorkload *wl = g_ptr_array_index(suite->workloads, i);
    g_autofree char *what = ts_gate_workload_describe(wl);
    progress(options, "check %s (%u/%u): %s", wl->name, i + 1, suite->workloads->len, what);
    TsGateResult *r = check_one(&c, wl, g_ptr_array_index(workloads, i), stored, run_id, error);
    if (r == NULL) {
      if (run_id)
        ts_db_gate_end(db, run_id, "failed", NULL, NULL);
      return NULL;
    }
    g_ptr_array_add(results, r);
  }
  if (run_id) {
    TsGateReport report = {.results = results};
    const char *verdict = ts_gate_verdict_name(ts_gate_report_verdict(&report));
    if (!ts_db_gate_end(db, run_id, "done", verdict, error))
      return NULL;
  }
  if (run_id_out)
    *run_id_out = run_id;
  return g_steal_pointer(&results);
}

/* ---- comparing stored runs ---- */

static double
stored_threshold(const TsGateSuite *suite, const char *name, const TsDbGateResult *head)
{
  if (suite)
    for (guint i = 0; i < suite->workloads->len; i++) {
      const TsGateWorkload *wl = g_ptr_array_index(suite->workloads, i);
      if (g_str_equal(wl->name, name))
        return ts_gate_workload_threshold(suite, wl);
    }
  if (!isnan(head->threshold))
    return head->threshold;
  return suite ? suite->threshold : 0.05;
}

GPtrArray *
ts_gate_compare(TsDb *db, gint64 base_run_id, gint64 head_run_id, const TsGateSuite *suite,
                double alpha, GError **error)
{
  g_autoptr(GPtrArray) base = ts_db_gate_list_results(db, base_run_id, FALSE, error);
  if (base == NULL)
    return NULL;
  g_autoptr(GPtrArray) head = ts_db_gate_list_results(db, head_run_id, FALSE, error);
  if (head == NULL)
    return NULL;
  g_autoptr(GPtrArray) results = g_ptr_array_new_with_free_func((GDestroyNotify)ts_gate_result_free);
  for (guint i = 0; i < head->len; i++) {
    const TsDbGateResult *h = g_ptr_array_index(head, i);
    TsGateResult *r = ts_gate_result_new();
    g_ptr_array_add(results, r);
    r->name = g_strdup(h->name);
    r->schedule = g_strdup(h->schedule);
    r->threshold = stored_threshold(suite, h->name, h);
    const TsDbGateResult *b = find_named(base, h->name);
    if (h->status != TS_DB_TRIAL_OK || h->samples_ns == NULL || h->samples_ns->len == 0) {
      r->verdict = TS_GATE_FAILED;
      ts_gate_result_add_note(r, "%s", h->error_text ? h->error_text : "no samples");
      continue;
    }
    r->cur_ns = g_array_ref(h->samples_ns);
    r->cur_median_ns = array_median(r->cur_ns);
    if (b == NULL || b->status != TS_DB_TRIAL_OK || b->samples_ns == NULL ||
        b->samples_ns->len == 0) {
      r->verdict = TS_GATE_NEW;
      ts_gate_result_add_note(r, "no samples in the base run");
      continue;
    }
    r->base_schedule = g_strdup(b->schedule);
    r->base_ns = g_array_ref(b->samples_ns);
    if (g_strcmp0(b->schedule, h->schedule) != 0)
      ts_gate_result_add_note(r, "schedule changed from %s", b->schedule);
    ts_gate_decide(r, r->threshold, alpha);
  }
  return g_steal_pointer(&results);
}

/* ---- naming runs ---- */

static gboolean
all_digits(const char *s)
{
  if (*s == '\0')
    return FALSE;
  for (; *s; s++)
    if (!g_ascii_isdigit(*s))
      return FALSE;
  return TRUE;
}

static gboolean
all_hex(const char *s)
{
  for (; *s; s++)
    if (!g_ascii_isxdigit(*s))
      return FALSE;
  return TRUE;
}

static gint64
newest_of(GPtrArray *runs)
{
  return runs && runs->len ? ((TsDbGateRun *)g_ptr_array_index(runs, 0))->id : 0;
}

/* The newest finished run of the suite on the device matching a full or partial commit. */
static gint64
by_commit(TsDb *db, const char *suite, gint64 device_id, const char *commit, GError **error)
{
  g_autoptr(GPtrArray) runs = ts_db_gate_find_by_commit(db, suite, device_id, commit, error);
  return runs ? newest_of(runs) : -1;
}

gint64
ts_gate_resolve_rev(TsDb *db, const char *suite, gint64 device_id, const char *rev,
                    GError **error)
{
  const char *id_text = rev[0] == '#' ? rev + 1 : rev;
  if (all_digits(id_text)) {
    gint64 id = g_ascii_strtoll(id_text, NULL, 10);
    g_autoptr(TsDbGateRun) run = ts_db_gate_get_run(db, id, NULL);
    if (run && g_str_equal(run->suite, suite) && run->device_id == device_id)
      return id;
    if (rev[0] == '#') {
      g_set_error(error, TS_GATE_ERROR, TS_GATE_ERROR_REV,
                  "no gate run %s of suite '%s' on this device in %s: `tessera-perfgate list` "
                  "shows the stored runs",
                  rev, suite, ts_db_path(db));
      return 0;
    }
  }
  if (g_str_equal(rev, "baseline") || g_str_equal(rev, "latest")) {
    g_autoptr(GPtrArray) runs =
        ts_db_gate_list_runs(db, suite, device_id, g_str_equal(rev, "baseline") ? "baseline" : NULL,
                             0, error);
    if (runs == NULL)
      return 0;
    for (guint i = 0; i < runs->len; i++) {
      TsDbGateRun *run = g_ptr_array_index(runs, i);
      if (g_str_equal(run->status, "done"))
        return run->id;
    }
  } else {
    gint64 id = 0;
    if (strlen(rev) >= 4 && all_hex(rev)) {
      id = by_commit(db, suite, device_id, rev, error);
      if (id < 0)
        return 0;
    }
    if (id == 0) {
      g_autofree char *spec = g_strdup_printf("%s^{commit}", rev);
      const char *argv[] = {"git", "rev-parse", "--verify", "-q", spec, NULL};
      g_autofree char *full = git_output(argv);
      if (full) {
        id = by_commit(db, suite, device_id, full, error);
        if (id < 0)
          return 0;
      }
    }
    if (id > 0)
      return id;
  }
  g_set_error(error, TS_GATE_ERROR, TS_GATE_ERROR_REV,
              "no finished gate run of suite '%s' on this device matches '%s' in %s: give a run "
              "id (#N), a commit, a git ref, 'baseline' or 'latest'; `tessera-perfgate list` "
              "shows the stored runs",
              suite, rev, ts_db_path(db));
  return 0;
}

char *
ts_gate_describe_run(const TsDbGateRun *run)
{
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "%s #%" G_GINT64_FORMAT, run->kind, run->id);
  if (run->git_commit)
    g_string_append_printf(s, " %.10s%s", run->git_commit, run->git_dirty ? "+dirty" : "");
  if (run->created_at)
    g_string_append_printf(s, " (%.16s)", run->created_at);
  if (run->label)
    g_string_append_printf(s, " [%s]", run->label);
  return g_string_free(s, FALSE);
}
