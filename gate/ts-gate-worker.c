/* ts-gate-worker.c — the perf gate's measuring process (`tessera-perfgate measure-worker`).
 *
 * Every kernel the gate runs — the current build's and the baseline's stored binary — is
 * loaded, verified and timed here, in a child the gate talks to through the tuner's worker
 * protocol (ts-tune-worker.h: one JSON line each way). A kernel that crashes or hangs kills
 * this process, and the gate turns that into a failed workload in its reports instead of
 * dying with it. The A/B rounds need both kernels in one process (they share buffers, see
 * ts_op_timer_new_sibling), so the whole measurement lives here, not just the launches.
 *
 * Requests, answered in order; one workload at a time:
 *   {"cmd": "current", op, [kernel, kernel_path,] shape, dtype, schedule, backend, cache_dir,
 *    seed, slowdown}
 *       compiles, loads and verifies the current kernel (a kernel file's op is registered from
 *       kernel, its source, first). {"ok", "artifact" (base64), "entry"}
 *       or {"failure": "compile error: ..." | "wrong_result: ..." | "runtime_error: ..."}.
 *   {"cmd": "baseline", artifact (base64), entry, seed}
 *       loads a stored binary (its hash was checked by the gate) beside the current one and
 *       verifies it on the same buffers. {"ok"} or {"note": why it cannot run here}.
 *   {"cmd": "measure", "ab": bool, time_ms}
 *       rounds of samples: {"cur": [...], "base": [...], "ratios": [...]}.
 * Any of them may answer {"error": ...}: the machinery failed. "exit": true means the backend
 * was left unusable and the process ends after answering. */
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#include "ts-gate.h"
#include "ts-op.h"
#include "ts-tune-stats.h"
#include "ts-tune-worker.h"

/* Rounds are short enough that the machine's state (a busy neighbour, clock changes) is the
 * same for both kernels of a round, and numerous enough that a burst affects only a few. */
#define MIN_ROUNDS 8
#define TARGET_ROUNDS 24
#define MAX_ROUNDS 100
#define MAX_PER_ROUND 64

typedef struct {
  GHashTable *backends; /* name -> TsBackend */
  TsBackend *backend;   /* of the current workload, borrowed from backends */
  TsOpInstance *inst;
  guint64 seed;
  TsModule *cur_module, *base_module;
  TsOpTimer *cur, *base;
} State;

static void
state_reset(State *st)
{
  /* Timers before their modules, the baseline before the current timer it borrows buffers of. */
  g_clear_pointer(&st->base, ts_op_timer_free);
  g_clear_pointer(&st->base_module, ts_module_free);
  g_clear_pointer(&st->cur, ts_op_timer_free);
  g_clear_pointer(&st->cur_module, ts_module_free);
  g_clear_pointer(&st->inst, ts_op_instance_free);
  st->backend = NULL;
}

/* ---- measuring ---- */

typedef struct {
  guint rounds, per_round;
} Plan;

/* Rounds of samples filling about time_ms per kernel: a few quick samples estimate one run. */
static gboolean
plan_rounds(TsOpTimer *t, double time_ms, Plan *plan, GError **error)
{
  double probe[3];
  if (!ts_op_timer_sample(t, 1, G_N_ELEMENTS(probe), probe, error))
    return FALSE;
  double one_ms = MAX(ts_stats_median(probe, G_N_ELEMENTS(probe)) / 1e6, 1e-6);
  double per = round(time_ms / TARGET_ROUNDS / one_ms);
  plan->per_round = (guint)CLAMP(per, 2, MAX_PER_ROUND);
  double rounds = round(time_ms / (plan->per_round * one_ms));
  plan->rounds = (guint)CLAMP(rounds, MIN_ROUNDS, MAX_ROUNDS);
  return TRUE;
}

static gboolean
sample_round(TsOpTimer *t, guint n, GArray *into, GError **error)
{
  guint at = into->len;
  g_array_set_size(into, at + n);
  /* One untimed launch first: the other kernel of the round just ran and left its data in the
   * caches. */
  return ts_op_timer_sample(t, 1, n, &g_array_index(into, double, at), error);
}

static double
array_median(const GArray *a)
{
  return ts_stats_median((const double *)a->data, a->len);
}

/* The current kernel alone (base NULL), or alternating rounds of the baseline and current
 * kernels; the order flips every round so neither always runs second (warmer caches, a clock
 * that ramps). */
static gboolean
measure(TsOpTimer *base, TsOpTimer *cur, double time_ms, GArray *b, GArray *c, GArray *ratios,
        GError **error)
{
  Plan plan;
  if (!plan_rounds(cur, time_ms, &plan, error))
    return FALSE;
  g_autoptr(GArray) rb = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) rc = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint i = 0; i < plan.rounds; i++) {
    if (base == NULL) {
      if (!sample_round(cur, plan.per_round, c, error))
        return FALSE;
      continue;
    }
    g_array_set_size(rb, 0);
    g_array_set_size(rc, 0);
    gboolean ok = (i % 2 == 0) ? sample_round(base, plan.per_round, rb, error) &&
                                     sample_round(cur, plan.per_round, rc, error)
                               : sample_round(cur, plan.per_round, rc, error) &&
                                     sample_round(base, plan.per_round, rb, error);
    if (!ok)
      return FALSE;
    double ratio = array_median(rc) / array_median(rb);
    g_array_append_val(ratios, ratio);
    g_array_append_vals(b, rb->data, rb->len);
    g_array_append_vals(c, rc->data, rc->len);
  }
  return TRUE;
}

/* ---- requests ---- */

static void
add_string(JsonBuilder *b, const char *key, const char *value)
{
  json_builder_set_member_name(b, key);
  json_builder_add_string_value(b, value);
}

static void
add_array(JsonBuilder *b, const char *key, const GArray *a)
{
  json_builder_set_member_name(b, key);
  json_builder_begin_array(b);
  for (guint i = 0; i < a->len; i++)
    json_builder_add_double_value(b, g_array_index(a, double, i));
  json_builder_end_array(b);
}

static const char *
get_str(JsonObject *o, const char *key)
{
  JsonNode *n = json_object_get_member(o, key);
  return n && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING
             ? json_node_get_string(n)
             : NULL;
}

/* A turn at the host (ts-measure-lock.h) while compiling or verifying, or at the workload's
 * device while timing: no other process's measurement on this machine overlaps the gate's. */
static TsMeasureLock *
take_turn(State *st, TsMeasureLockMode mode)
{
  const char *unit = st->backend ? ts_backend_describe(st->backend)->unit : NULL;
  g_autofree char *key = st->inst ? ts_op_instance_describe(st->inst) : NULL;
  g_autofree char *what = g_strdup_printf("perf gate, %s", key ? key : "loading a kernel");
  return ts_tune_worker_take_turn(mode == TS_MEASURE_LOCK_EXCLUSIVE && unit ? unit
                                                                          : TS_MEASURE_LOCK_HOST,
                                  mode, what);
}

static gboolean
serve_current(State *st, JsonObject *o, JsonBuilder *b, GError **error)
{
  state_reset(st);
  const char *backend_name = get_str(o, "backend");
  if (backend_name == NULL)
    backend_name = "cpu";
  TsBackend *backend = g_hash_table_lookup(st->backends, backend_name);
  if (backend == NULL) {
    backend = ts_backend_open(backend_name, error);
    if (backend == NULL)
      return FALSE;
    g_hash_table_insert(st->backends, g_strdup(backend_name), backend);
  }
  ts_backend_set_cache_dir(backend, get_str(o, "cache_dir"));
  st->backend = backend;
  st->seed = (guint64)json_object_get_double_member_with_default(o, "seed", 1);
  /* A kernel file's op exists only where it was registered: this process registers it too. */
  const char *op = get_str(o, "op");
  if (op != NULL && json_object_has_member(o, "kernel") && ts_op_lookup(op) == NULL &&
      ts_op_register_kernel_op(op, get_str(o, "kernel"), get_str(o, "kernel_path"), error) ==
        NULL)
    return FALSE;
  st->inst = ts_op_instance_new(op, get_str(o, "shape"), get_str(o, "dtype"), error);
  if (st->inst == NULL)
    return FALSE;
  g_autoptr(TsSchedPoint) point = ts_sched_point_parse(get_str(o, "schedule"), error);
  if (point == NULL)
    return FALSE;
  g_autoptr(GError) err = NULL;
  g_autoptr(TsMeasureLock) turn = take_turn(st, TS_MEASURE_LOCK_SHARED);
  st->cur_module = ts_op_compile(st->inst, backend, point, &err);
  if (st->cur_module == NULL) {
    if (!g_error_matches(err, TS_BACKEND_ERROR, TS_BACKEND_ERROR_COMPILE)) {
      g_propagate_error(error, g_steal_pointer(&err));
      return FALSE;
    }
    g_autofree char *failure = g_strdup_printf("compile error: %s", err->message);
    add_string(b, "failure", failure);
    return TRUE;
  }
  TsRunOptions ro;
  ts_run_options_init(&ro);
  ro.seed = st->seed;
  g_autoptr(TsTrialResult) verified = NULL;
  st->cur = ts_op_timer_new(st->inst, backend, st->cur_module, &ro, &verified, error);
  g_clear_pointer(&turn, ts_measure_lock_release); /* compiled and verified */
  if (st->cur == NULL) {
    if (verified == NULL || verified->status == TS_TRIAL_OK)
      return FALSE;
    g_autofree char *failure =
      g_strdup_printf("%s: %s", ts_trial_status_name(verified->status), verified->message);
    add_string(b, "failure", failure);
    return TRUE;
  }
  double slowdown = json_object_get_double_member_with_default(o, "slowdown", 0);
  if (slowdown > 0)
    ts_op_timer_set_slowdown(st->cur, slowdown);
  json_builder_set_member_name(b, "ok");
  json_builder_add_boolean_value(b, TRUE);
  /* The binary, for the gate to store with a baseline; without it a later check compares
   * with the samples alone. */
  g_autoptr(GBytes) artifact = ts_module_get_artifact(st->cur_module, NULL);
  if (artifact) {
    gsize len = 0;
    const guchar *data = g_bytes_get_data(artifact, &len);
    g_autofree char *b64 = g_base64_encode(data, len);
    add_string(b, "artifact", b64);
    add_string(b, "entry", ts_module_entry(st->cur_module));
    guint n = 0;
    const gint64 *ints = ts_module_bound_ints(st->cur_module, &n);
    if (n > 0) {
      g_autoptr(GString) text = g_string_new(NULL);
      for (guint i = 0; i < n; i++)
        g_string_append_printf(text, "%s%" G_GINT64_FORMAT, i ? "," : "", ints[i]);
      add_string(b, "launch_ints", text->str);
    }
  }
  return TRUE;
}

/* The integers a stored binary's launches pass after the dims ("144,4080,256"; NULL: none). */
static gboolean
bind_ints(TsModule *module, const char *text, GError **error)
{
  if (text == NULL)
    return TRUE;
  g_auto(GStrv) parts = g_strsplit(text, ",", -1);
  g_autoptr(GArray) ints = g_array_new(FALSE, FALSE, sizeof(gint64));
  for (guint i = 0; parts[i] != NULL; i++) {
    gint64 v = 0;
    if (!g_ascii_string_to_signed(parts[i], 10, G_MININT64, G_MAXINT64, &v, error)) {
      g_prefix_error(error, "the baseline's launch ints '%s': ", text);
      return FALSE;
    }
    g_array_append_val(ints, v);
  }
  return ts_module_bind_ints(module, (const gint64 *)(gpointer)ints->data, ints->len, error);
}

static gboolean
serve_baseline(State *st, JsonObject *o, JsonBuilder *b, GError **error)
{
  if (st->cur == NULL) {
    g_set_error(error, TS_GATE_ERROR, TS_GATE_ERROR_FAILED,
                "the measuring process was asked for a baseline before a current kernel");
    return FALSE;
  }
  g_clear_pointer(&st->base, ts_op_timer_free);
  g_clear_pointer(&st->base_module, ts_module_free);
  const char *b64 = get_str(o, "artifact"), *entry = get_str(o, "entry");
  if (b64 == NULL || entry == NULL) {
    g_set_error(error, TS_GATE_ERROR, TS_GATE_ERROR_FAILED,
                "the measuring process was sent a baseline without its binary");
    return FALSE;
  }
  gsize len = 0;
  guchar *data = g_base64_decode(b64, &len);
  g_autoptr(GBytes) bytes = g_bytes_new_take(data, len);
  g_autoptr(GError) err = NULL;
  g_autoptr(TsMeasureLock) turn = take_turn(st, TS_MEASURE_LOCK_SHARED);
  st->base_module = ts_backend_load_artifact(st->backend, bytes, entry, &err);
  if (st->base_module != NULL && !bind_ints(st->base_module, get_str(o, "launch_ints"), &err))
    g_clear_pointer(&st->base_module, ts_module_free);
  if (st->base_module == NULL) {
    g_autofree char *note =
      g_strdup_printf("baseline kernel binary cannot run here (%s)", err->message);
    add_string(b, "note", note);
    return TRUE;
  }
  TsRunOptions ro;
  ts_run_options_init(&ro);
  ro.seed = st->seed;
  g_autoptr(TsTrialResult) verified = NULL;
  st->base = ts_op_timer_new_sibling(st->cur, st->inst, st->base_module, &ro, &verified, error);
  g_clear_pointer(&turn, ts_measure_lock_release); /* loaded and verified */
  if (st->base == NULL) {
    g_clear_pointer(&st->base_module, ts_module_free);
    if (verified == NULL || verified->status == TS_TRIAL_OK)
      return FALSE;
    g_autofree char *note = g_strdup_printf("baseline kernel binary fails here (%s: %s)",
                                            ts_trial_status_name(verified->status),
                                            verified->message);
    add_string(b, "note", note);
    return TRUE;
  }
  json_builder_set_member_name(b, "ok");
  json_builder_add_boolean_value(b, TRUE);
  return TRUE;
}

static gboolean
serve_measure(State *st, JsonObject *o, JsonBuilder *b, GError **error)
{
  gboolean ab = json_object_get_boolean_member_with_default(o, "ab", FALSE);
  if (st->cur == NULL || (ab && st->base == NULL)) {
    g_set_error(error, TS_GATE_ERROR, TS_GATE_ERROR_FAILED,
                "the measuring process was asked to time a kernel it has not loaded");
    return FALSE;
  }
  double time_ms = json_object_get_double_member_with_default(o, "time_ms", 1000);
  g_autoptr(GArray) base = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) cur = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) ratios = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(TsMeasureLock) turn = take_turn(st, TS_MEASURE_LOCK_EXCLUSIVE);
  if (!measure(ab ? st->base : NULL, st->cur, time_ms, base, cur, ratios, error))
    return FALSE;
  const char *note = ts_measure_lock_note(turn);
  if (note != NULL) {
    g_autofree char *told = g_strdup_printf("not measured alone: %s", note);
    add_string(b, "note", told);
  }
  add_array(b, "cur", cur);
  if (ab) {
    add_array(b, "base", base);
    add_array(b, "ratios", ratios);
  }
  return TRUE;
}

static char *
serve(gpointer data, const char *line, gboolean *exiting)
{
  State *st = data;
  g_autoptr(JsonBuilder) b = json_builder_new();
  json_builder_begin_object(b);
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonParser) parser = json_parser_new();
  gboolean ok = json_parser_load_from_data(parser, line, -1, &error);
  JsonNode *root = ok ? json_parser_get_root(parser) : NULL;
  if (ok && (root == NULL || !JSON_NODE_HOLDS_OBJECT(root))) {
    g_set_error(&error, TS_GATE_ERROR, TS_GATE_ERROR_FAILED, "a request is not a JSON object");
    ok = FALSE;
  }
  if (ok) {
    JsonObject *o = json_node_get_object(root);
    const char *cmd = get_str(o, "cmd");
    if (g_strcmp0(cmd, "current") == 0)
      ok = serve_current(st, o, b, &error);
    else if (g_strcmp0(cmd, "baseline") == 0)
      ok = serve_baseline(st, o, b, &error);
    else if (g_strcmp0(cmd, "measure") == 0)
      ok = serve_measure(st, o, b, &error);
    else
      ok = (g_set_error(&error, TS_GATE_ERROR, TS_GATE_ERROR_FAILED,
                        "unknown request '%s' to the measuring process", cmd ? cmd : ""),
            FALSE);
  }
  if (!ok)
    add_string(b, "error", error->message);
  /* A kernel that left the device unusable (a lost CUDA context, a CPU kernel that wrote past
   * its buffer) must not be followed by another in this process. */
  const char *lost = st->backend ? ts_backend_lost(st->backend) : NULL;
  if (lost != NULL) {
    *exiting = TRUE;
    add_string(b, "lost", lost);
    json_builder_set_member_name(b, "exit");
    json_builder_add_boolean_value(b, TRUE);
  }
  json_builder_end_object(b);
  g_autoptr(JsonNode) reply = json_builder_get_root(b);
  return json_to_string(reply, FALSE);
}

int
ts_gate_worker_main(int in_fd, int out_fd)
{
  State st = {.backends = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                                (GDestroyNotify)ts_backend_free)};
  int status = ts_tune_worker_loop(in_fd, out_fd, serve, &st);
  state_reset(&st);
  g_hash_table_unref(st.backends);
  return status;
}
