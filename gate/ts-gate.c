/* ts-gate.c — running the gate: measuring a suite for a baseline, checking it side by side with
 * the baseline's own kernel binaries, comparing stored runs, and naming runs by commit.
 */
#include <gio/gio.h>
#include <math.h>
#include <string.h>

#include "ts-gate.h"
#include "ts-op.h"
#include "ts-tune-stats.h"
#include "ts-tune.h"

/* Rounds are short enough that the machine's state (a busy neighbour, clock changes) is the
 * same for both kernels of a round, and numerous enough that a burst affects only a few. */
#define MIN_ROUNDS 8
#define TARGET_ROUNDS 24
#define MAX_ROUNDS 100
#define MAX_PER_ROUND 64

void
ts_gate_options_init(TsGateOptions *o)
{
  *o = (TsGateOptions){
      .time_scale = 1.0,
      .max_remeasure = 2,
      .store = TRUE,
      .seed = 1,
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

/* ---- measuring ---- */

static double
array_median(const GArray *a)
{
  return ts_stats_median((const double *)a->data, a->len);
}

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

static gboolean
measure_alone(TsOpTimer *t, double time_ms, GArray **samples, GError **error)
{
  Plan plan;
  if (!plan_rounds(t, time_ms, &plan, error))
    return FALSE;
  g_autoptr(GArray) s = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint i = 0; i < plan.rounds; i++)
    if (!sample_round(t, plan.per_round, s, error))
      return FALSE;
  *samples = g_steal_pointer(&s);
  return TRUE;
}

static void
append(GArray **into, GArray *more)
{
  if (*into == NULL)
    *into = g_array_new(FALSE, FALSE, sizeof(double));
  g_array_append_vals(*into, more->data, more->len);
}

/* Alternating rounds of the baseline and current kernels, appended to r's samples and ratios; the order flips every round so
 * neither always runs second (warmer caches, a clock that ramps). */
static gboolean
measure_ab(TsOpTimer *base, TsOpTimer *cur, double time_ms, TsGateResult *r, GError **error)
{
  Plan plan;
  if (!plan_rounds(cur, time_ms, &plan, error))
    return FALSE;
  g_autoptr(GArray) b = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) c = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) ratios = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) rb = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) rc = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint i = 0; i < plan.rounds; i++) {
    g_array_set_size(rb, 0);
    g_array_set_size(rc, 0);
    gboolean ok = (i % 2 == 0)
                      ? sample_round(base, plan.per_round, rb, error) &&
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
  append(&r->base_ns, b);
  append(&r->cur_ns, c);
  append(&r->round_ratios, ratios);
  return TRUE;
}

/* The current kernel of a workload compiled, loaded and verified. A candidate failure (does not
 * compile, crashes, wrong result) returns NULL with *failure set and error unset. */
static TsOpTimer *
current_timer(Ctx *c, Workload *w, TsModule **module, char **failure, GError **error)
{
  g_autofree char *entry = NULL;
  g_autofree char *src =
      ts_op_emit(w->inst, ts_backend_name(c->backend), w->point, &entry, error);
  if (src == NULL)
    return NULL;
  TsSource source = {.lang = TS_LANG_C, .text = src, .entry = entry};
  g_autoptr(GError) err = NULL;
  g_autoptr(TsModule) m = ts_backend_compile(c->backend, &source, &err);
  if (m == NULL) {
    if (!g_error_matches(err, TS_BACKEND_ERROR, TS_BACKEND_ERROR_COMPILE)) {
      g_propagate_error(error, g_steal_pointer(&err));
      return NULL;
    }
    *failure = g_strdup_printf("compile error: %s", err->message);
    return NULL;
  }
  TsRunOptions ro;
  ts_run_options_init(&ro);
  ro.seed = c->opt->seed;
  g_autoptr(TsTrialResult) verified = NULL;
  TsOpTimer *t = ts_op_timer_new(w->inst, c->backend, m, &ro, &verified, error);
  if (t == NULL) {
    if (verified && verified->status != TS_TRIAL_OK)
      *failure = g_strdup_printf("%s: %s", ts_trial_status_name(verified->status),
                                 verified->message);
    return NULL;
  }
  if (c->opt->inject_slowdown > 0 && c->opt->inject_only == NULL)
    ts_op_timer_set_slowdown(t, c->opt->inject_slowdown);
  *module = g_steal_pointer(&m);
  return t;
}

static double
time_ms(Ctx *c)
{
  return c->suite->time_ms * c->opt->time_scale;
}

/* ---- storing ---- */

static gboolean
store_result(Ctx *c, gint64 run_id, gboolean check, const TsGateResult *r, gint64 workload_id,
             TsModule *module, const char *failure, GError **error)
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
  d->error_text = g_strdup(failure);
  if (r->cur_ns) {
    d->samples_ns = g_array_ref(r->cur_ns);
    d->median_ns = array_median(r->cur_ns);
  }
  if (module) {
    g_autoptr(GError) err = NULL;
    d->artifact = ts_module_get_artifact(module, &err);
    if (d->artifact) {
      d->artifact_hash = g_compute_checksum_for_bytes(G_CHECKSUM_SHA256, d->artifact);
      d->entry = g_strdup(ts_module_entry(module));
      d->backend = g_strdup(ts_backend_name(c->backend));
    }
    /* else: stored without its binary; a later check falls back to the samples. */
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
  Ctx c = {.db = db, .backend = backend, .suite = suite, .opt = options};
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
    g_autoptr(TsModule) module = NULL;
    g_autofree char *failure = NULL;
    g_autoptr(TsOpTimer) t = current_timer(&c, w, &module, &failure, error);
    if (t == NULL && failure == NULL)
      goto fail;
    if (t && !measure_alone(t, time_ms(&c), &r->cur_ns, error))
      goto fail;
    if (failure) {
      r->verdict = TS_GATE_FAILED;
      ts_gate_result_add_note(r, "%s", failure);
    } else {
      r->cur_median_ns = array_median(r->cur_ns);
    }
    if (!store_result(&c, run_id, FALSE, r, w->workload_id, module, failure, error))
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

/* The baseline's own binary, ready to time side by side on the current kernel's buffers; NULL
 * (with a note on r) when it cannot be run here, and the stored samples are used instead. */
static TsOpTimer *
baseline_timer(Ctx *c, Workload *w, TsOpTimer *cur, const TsDbGateResult *base,
               TsModule **module, TsGateResult *r, GError **error)
{
  if (base->artifact_hash == NULL) {
    ts_gate_result_add_note(r, "baseline kernel binary not stored: compared with its samples");
    return NULL;
  }
  g_autoptr(GError) err = NULL;
  g_autofree char *entry = NULL, *backend = NULL;
  g_autoptr(GBytes) bytes = ts_db_gate_get_artifact(c->db, base->artifact_hash, &entry, &backend,
                                                    &err);
  if (bytes == NULL) {
    /* Altered bytes fail the check: a gate that quietly fell back to the stored samples would
     * hide that its cache was tampered with. */
    if (g_error_matches(err, TS_DB_ERROR, TS_DB_ERROR_CORRUPT)) {
      g_propagate_error(error, g_steal_pointer(&err));
      return NULL;
    }
    ts_gate_result_add_note(r, "baseline kernel binary unreadable (%s): compared with its samples",
                            err->message);
    return NULL;
  }
  if (g_strcmp0(backend, ts_backend_name(c->backend)) != 0) {
    ts_gate_result_add_note(r, "baseline kernel built for backend %s: compared with its samples",
                            backend);
    return NULL;
  }
  g_autoptr(TsModule) m = ts_backend_load_artifact(c->backend, bytes, entry, &err);
  if (m == NULL) {
    ts_gate_result_add_note(r, "baseline kernel binary cannot run here (%s): compared with its "
                            "samples", err->message);
    return NULL;
  }
  TsRunOptions ro;
  ts_run_options_init(&ro);
  ro.seed = c->opt->seed;
  g_autoptr(TsTrialResult) verified = NULL;
  TsOpTimer *t = ts_op_timer_new_sibling(cur, w->inst, m, &ro, &verified, error);
  if (t == NULL) {
    if (verified == NULL)
      return NULL; /* machinery error, set */
    ts_gate_result_add_note(r, "baseline kernel binary fails here (%s: %s): compared with its "
                            "samples", ts_trial_status_name(verified->status), verified->message);
    return NULL;
  }
  *module = g_steal_pointer(&m);
  return t;
}

/* One more measurement of the current kernel against the baseline, added to r's samples: A/B
 * rounds when the baseline binary runs, else fresh current samples against the stored ones. */
static gboolean
measure_check(Ctx *c, TsOpTimer *base, TsOpTimer *cur, const TsDbGateResult *stored,
              TsGateResult *r, GError **error)
{
  if (base)
    return measure_ab(base, cur, time_ms(c), r, error);
  g_autoptr(GArray) fresh = NULL;
  if (!measure_alone(cur, time_ms(c), &fresh, error))
    return FALSE;
  append(&r->cur_ns, fresh);
  if (r->base_ns == NULL)
    r->base_ns = g_array_ref(stored->samples_ns);
  return TRUE;
}

static TsGateResult *
check_one(Ctx *c, const TsGateWorkload *wl, Workload *w, GPtrArray *stored, gint64 run_id,
          GError **error)
{
  g_autoptr(TsGateResult) r = new_result(wl);
  r->schedule = g_strdup(w->schedule);
  double threshold = ts_gate_workload_threshold(c->suite, wl);
  r->threshold = threshold;

  g_autoptr(TsModule) cur_module = NULL;
  g_autofree char *failure = NULL;
  g_autoptr(TsOpTimer) cur = current_timer(c, w, &cur_module, &failure, error);
  if (cur == NULL && failure == NULL)
    return NULL;
  if (cur && c->opt->inject_slowdown > 0 && g_strcmp0(c->opt->inject_only, wl->name) == 0)
    ts_op_timer_set_slowdown(cur, c->opt->inject_slowdown);

  const TsDbGateResult *base = find_named(stored, wl->name);
  if (base)
    r->base_schedule = g_strdup(base->schedule);
  if (failure) {
    r->verdict = TS_GATE_FAILED;
    ts_gate_result_add_note(r, "%s", failure);
  } else if (base == NULL || base->status != TS_DB_TRIAL_OK || base->samples_ns == NULL ||
             base->samples_ns->len == 0) {
    r->verdict = TS_GATE_NEW;
    ts_gate_result_add_note(r, base ? "the baseline kernel had failed (%s): nothing to compare"
                                    : "not in the baseline: nothing to compare%s",
                            base ? base->error_text : "");
    if (!measure_alone(cur, time_ms(c), &r->cur_ns, error))
      return NULL;
    r->cur_median_ns = array_median(r->cur_ns);
  } else {
    if (g_strcmp0(base->schedule, w->schedule) != 0)
      ts_gate_result_add_note(r, "schedule changed from %s", base->schedule);
    g_autoptr(TsModule) base_module = NULL;
    g_autoptr(GError) berr = NULL;
    g_autoptr(TsOpTimer) bt = baseline_timer(c, w, cur, base, &base_module, r, &berr);
    if (bt == NULL && berr) {
      g_propagate_error(error, g_steal_pointer(&berr));
      return NULL;
    }
    r->ab = bt != NULL;
    if (!measure_check(c, bt, cur, base, r, error))
      return NULL;
    ts_gate_decide(r, threshold, c->suite->alpha);
    /* A borderline regression is measured again and judged on all its samples together: a
     * burst of machine noise is diluted by the fresh rounds, a real slowdown is only estimated
     * more precisely. */
    double first_change = r->change, first_p = r->p_value;
    while (ts_gate_borderline(r, c->suite->alpha) && r->remeasured < c->opt->max_remeasure) {
      progress(c->opt, "  %s: %+.1f%% (p=%.2g) is borderline, measuring again", wl->name,
               100 * r->change, r->p_value);
      r->remeasured++;
      if (!measure_check(c, bt, cur, base, r, error))
        return NULL;
      r->verdict = TS_GATE_PASS;
      ts_gate_decide(r, threshold, c->suite->alpha);
    }
    if (r->remeasured && r->verdict != TS_GATE_REGRESSION)
      ts_gate_result_add_note(r, "a %+.1f%% (p=%.2g) slowdown was not confirmed when measured "
                              "again", 100 * first_change, first_p);
  }
  if (run_id && !store_result(c, run_id, TRUE, r, w->workload_id, cur_module, failure, error))
    return NULL;
  return g_steal_pointer(&r);
}

GPtrArray *
ts_gate_check(TsDb *db, TsBackend *backend, const TsGateSuite *suite, gint64 base_run_id,
              const TsGateOptions *options, gint64 *run_id_out, GError **error)
{
  Ctx c = {.db = db, .backend = backend, .suite = suite, .opt = options};
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
