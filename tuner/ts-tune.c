/* ts-tune.c — the tuning loop: propose a batch, prune what cannot fit the device, compile the
 * batch in parallel, then measure its candidates one at a time in the worker, storing each
 * trial in its own transaction the moment it is known.
 *
 * Compiles and measurements do not overlap: on a 2-core machine measured with threads(2) there
 * is no free core, and a compile beside a measurement would skew exactly the numbers the tuner
 * ranks by. The batch's compiles use every core instead, then the cores are quiet for timing. */
#include "ts-tune.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#include "ts-coll-space.h"
#include "ts-cost.h"
#include "ts-measure-lock.h"
#include "ts-nvtx.h"
#include "ts-tune-stats.h"
#include "ts-tune-worker.h"


/* Replace the best only when faster with p below this (one-sided Mann–Whitney). */
#define BEST_ALPHA 0.01
/* An incumbent whose samples spread wider than this ((q3 - q1) / median) was measured while the
 * machine was busy: a faster challenger cannot beat its noise, so it is measured again. */
#define NOISY_SPREAD 0.25

void
ts_tune_config_init(TsTuneConfig *c)
{
  *c = (TsTuneConfig){
    /* The best single strategy on recorded GPU spaces (bench/results/search-vs-kt-*.txt:
     * half random search's evaluations to 95% of the optimum). */
    .strategy = "model",
    .seed = 1,
    .budget_evals = 50,
    .timeout_s = 60.0,
  };
  ts_run_options_init(&c->run);
}

void
ts_tune_summary_clear(TsTuneSummary *s)
{
  g_clear_pointer(&s->best_schedule, g_free);
  memset(s, 0, sizeof *s);
}

void
ts_tune_lookup_key(TsOpInstance *inst, TsBackend *backend, TsDbKey *key, char **shape,
                   char **dtype)
{
  const TsDeviceInfo *d = ts_backend_describe(backend);
  *shape = ts_shape_to_string(ts_op_instance_shape(inst));
  *dtype = ts_dtype_policy_to_string(ts_op_instance_dtype(inst));
  *key = (TsDbKey){
    .op = ts_op_name(ts_op_instance_op(inst)),
    .shape = *shape,
    .dtype = *dtype,
    .device_arch = d->arch,
    .device_name = d->name,
    .toolchain = d->toolchain,
    .kgen_version = TS_OP_EMIT_VERSION,
  };
}

gint64
ts_tune_device_id(TsDb *db, TsBackend *backend, GError **error)
{
  const TsDeviceInfo *d = ts_backend_describe(backend);
  TsDbDevice dev = {
    .backend = d->backend,
    .name = d->name,
    .arch = d->arch,
    .compute_units = d->compute_units,
    .memory_bytes = d->memory_bytes,
    .l1_bytes = d->l1_bytes,
    .l2_bytes = d->l2_bytes,
    .l3_bytes = d->l3_bytes,
    .smem_per_block = d->smem_per_block,
    .vector_bits = d->vector_bits,
  };
  return ts_db_ensure_device(db, &dev, error);
}

/* A collective's key: the workload parses (BYTES and RANKS in the shape), a median leaves
 * its bus bandwidth below 10^14 B/s, and the schedule is a point of the op's mpi space. */
static gboolean
coll_schedule_check(const char *op, const char *shape, const char *dtype, const char *schedule,
                    const char *hash, double median_ns, char **why)
{
  g_autoptr(GError) error = NULL;
  TsCollWorkload w;
  if (!ts_coll_workload_parse(&w, op, shape, dtype, 0, &error)) {
    *why = g_strdup(error->message);
    return FALSE;
  }
  if (median_ns > 0 && ts_coll_busbw(&w, median_ns) > 1e14) {
    *why = g_strdup_printf("a median of %g ns is faster than any link could run %s %s %s",
                           median_ns, op, shape, dtype);
    return FALSE;
  }
  if (schedule == NULL)
    return TRUE;
  g_autoptr(TsSchedPoint) point = ts_sched_point_parse(schedule, &error);
  /* A point of either backend's space (the key's device says which; any will do here). */
  g_auto(GStrv) env = point ? ts_coll_mpi_env(w.kind, point, NULL) : NULL;
  if (env == NULL && point)
    env = ts_coll_nccl_env(w.kind, point, &error);
  if (env == NULL) {
    *why = g_strdup_printf("the schedule is not a point of %s: %s", op, error->message);
    return FALSE;
  }
  if (hash != NULL && g_strcmp0(hash, ts_sched_point_hash(point)) != 0) {
    *why = g_strdup_printf("hash %s is not its schedule's (%s)", hash, ts_sched_point_hash(point));
    return FALSE;
  }
  return TRUE;
}

gboolean
ts_tune_schedule_check(const char *op, const char *shape, const char *dtype,
                       const char *schedule, const char *hash, double median_ns, char **why,
                       gpointer data)
{
  g_autoptr(GError) error = NULL;
  if (ts_coll_lookup(op, NULL))
    return coll_schedule_check(op, shape, dtype, schedule, hash, median_ns, why);
  g_autoptr(TsOpInstance) inst = ts_op_instance_new(op ? op : "", shape ? shape : "",
                                                    dtype ? dtype : "", &error);
  if (inst == NULL) {
    *why = g_strdup(error->message);
    return FALSE;
  }
  if (median_ns > 0 && (ts_op_instance_flops(inst) / (median_ns * 1e-9) > 1e17 ||
                        ts_op_instance_bytes(inst) / (median_ns * 1e-9) > 1e14)) {
    *why = g_strdup_printf("a median of %g ns is faster than any device could run %s %s %s",
                           median_ns, op, shape, dtype);
    return FALSE;
  }
  if (schedule == NULL)
    return TRUE;
  g_autoptr(TsSchedPoint) point = ts_sched_point_parse(schedule, &error);
  if (point == NULL) {
    *why = g_strdup_printf("the schedule does not parse: %s", error->message);
    return FALSE;
  }
  if (hash != NULL && g_strcmp0(hash, ts_sched_point_hash(point)) != 0) {
    *why = g_strdup_printf("hash %s is not its schedule's (%s)", hash, ts_sched_point_hash(point));
    return FALSE;
  }
  return TRUE;
}

gboolean
ts_tune_key_ids(TsDb *db, TsOpInstance *inst, TsBackend *backend, gint64 *workload_id,
                gint64 *device_id, gint64 *toolchain_id, GError **error)
{
  const TsDeviceInfo *d = ts_backend_describe(backend);
  g_autofree char *shape = ts_shape_to_string(ts_op_instance_shape(inst));
  g_autofree char *dtype = ts_dtype_policy_to_string(ts_op_instance_dtype(inst));
  *device_id = ts_tune_device_id(db, backend, error);
  if (*device_id == 0)
    return FALSE;
  *toolchain_id = ts_db_ensure_toolchain(db, d->toolchain, TS_OP_EMIT_VERSION, error);
  if (*toolchain_id == 0)
    return FALSE;
  const TsOpDef *op = ts_op_instance_op(inst);
  *workload_id = ts_db_ensure_workload(db, ts_op_name(op), shape, dtype, error);
  if (*workload_id == 0)
    return FALSE;
  /* A kernel file's op is kept with its source: the cache's readers can lower it again. */
  return ts_op_kernel_source(op) == NULL ||
         ts_db_put_kernel_source(db, ts_op_name(op), ts_op_kernel_path(op),
                                 ts_op_kernel_source(op), error);
}

/* ---- parallel compilation of a batch ---- */

typedef struct {
  const TsTuneConfig *cfg;
  TsSchedPoint *point;
  char *source;
  char *entry;
  char *compile_error; /* compiler diagnostics, or the emit error */
  double compile_ms, compile_cpu_ms;
  gboolean infra_failed; /* the machinery failed (I/O), not the candidate */
  TsTrialResult *result; /* measured ahead by farm_measure, or NULL */
} Candidate;

static void
candidate_free(Candidate *c)
{
  ts_sched_point_free(c->point);
  g_free(c->source);
  g_free(c->entry);
  g_free(c->compile_error);
  ts_trial_result_free(c->result);
  g_free(c);
}

/* The candidate's source; FALSE (the reason in compile_error) when the point cannot be
 * lowered, which is the candidate's failure, stored as its compile error. */
static gboolean
emit_one(Candidate *c)
{
  g_autoptr(GError) error = NULL;
  c->source = ts_op_emit(c->cfg->inst, ts_backend_name(c->cfg->backend), c->point, &c->entry, NULL,
                         &error);
  if (c->source == NULL)
    c->compile_error = g_strdup(error->message);
  return c->source != NULL;
}

static void
compile_one(gpointer data, gpointer user_data)
{
  Candidate *c = data;
  g_autoptr(GError) error = NULL;
  TsSource src = {.lang = ts_backend_source_lang(c->cfg->backend), .text = c->source, .entry = c->entry};
  /* Filling the artifact cache is the point; the worker loads the module itself. */
  g_autoptr(TsModule) m = ts_backend_compile(c->cfg->backend, &src, &error);
  if (m == NULL) {
    c->compile_error = g_strdup(error->message);
    c->infra_failed = !g_error_matches(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_COMPILE) &&
                      !g_error_matches(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LOAD);
    return;
  }
  c->compile_ms = ts_module_compile_ms(m);
  c->compile_cpu_ms = ts_module_compile_cpu_ms(m);
}

static void
compile_batch(const TsTuneConfig *cfg, GPtrArray *cands, guint threads)
{
  if (cands->len == 0)
    return;
  g_autofree char *range = g_strdup_printf("tessera: compile %u candidates", cands->len);
  ts_nvtx_push(range);
  if (cfg->trace)
    ts_backend_set_trace(cfg->backend, cfg->trace);
  /* The host's cores are busy compiling: no other process's CPU measurement meanwhile. */
  g_autofree char *what = g_strdup_printf("compiling %u candidates", cands->len);
  g_autoptr(TsMeasureLock) turn =
    ts_measure_lock_acquire(TS_MEASURE_LOCK_HOST, TS_MEASURE_LOCK_SHARED, what, NULL, NULL);
  GThreadPool *pool = g_thread_pool_new(compile_one, NULL, (int)MAX(threads, 1), TRUE, NULL);
  /* Points that differ only in what their kernel reads at run time (a CPU GEMM's blocks) have
   * one source: compiled once, the others then find it in the artifact cache. */
  g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < cands->len; i++) {
    Candidate *c = g_ptr_array_index(cands, i);
    if (emit_one(c) && g_hash_table_add(seen, c->source))
      g_thread_pool_push(pool, c, NULL);
  }
  g_thread_pool_free(pool, FALSE, TRUE);
  g_clear_pointer(&turn, ts_measure_lock_release);
  if (cfg->trace)
    ts_backend_set_trace(cfg->backend, NULL);
  ts_nvtx_pop();
}

const char *
ts_tune_compute_roof(TsOpInstance *inst, TsBackend *backend)
{
  return ts_prof_compute_roof(ts_backend_describe(backend)->backend,
                              ts_dtype_name(ts_op_instance_dtype(inst)->storage),
                              ts_op_tensor_math(ts_op_instance_op(inst)));
}

/* ---- the loop ---- */

typedef struct {
  const TsTuneConfig *cfg;
  TsTuneSummary *sum;
  TsTuneStrategy *strategy;
  TsTuneWorker *worker;
  gint64 t0;
  guint index;
  gint64 stored_id; /* the trial the last store() wrote (0: none) */
  char *shape, *dtype;
  const char *backend_name;
  const char *cache_dir;
  TsCostTarget *target; /* the analytic estimate of every trial, and the model strategy's */
  GPtrArray *pending;   /* TsSchedPoint*: proposed, claimed by another running tuner */
  GHashTable *remeasured; /* trial ids of incumbents measured again by this run */
} Loop;

static double
elapsed_ms(const Loop *l)
{
  return (g_get_monotonic_time() - l->t0) / 1000.0;
}

static gboolean
out_of_budget(const Loop *l)
{
  const TsTuneConfig *c = l->cfg;
  if (c->budget_evals && l->sum->n_measured + l->sum->n_pruned >= c->budget_evals)
    return TRUE;
  return c->budget_ms > 0 && elapsed_ms(l) >= c->budget_ms;
}

static void
report(Loop *l, const TsSchedPoint *point, TsTrialStatus status, gboolean pruned,
       const char *message, double median_ns)
{
  if (l->cfg->progress == NULL)
    return;
  g_autofree char *text = ts_sched_point_to_string(point);
  TsTuneProgress p = {
    .index = l->index,
    .schedule = text,
    .hash = ts_sched_point_hash(point),
    .status = status,
    .pruned = pruned,
    .message = message,
    .median_ns = median_ns,
    .gflops = median_ns > 0 ? ts_op_instance_flops(l->cfg->inst) / median_ns : NAN,
    .best_ns = l->sum->best_trial_id ? l->sum->best_median_ns : NAN,
    .n_failed = l->sum->n_failed,
    .elapsed_ms = elapsed_ms(l),
  };
  l->cfg->progress(&p, l->cfg->progress_data);
}

static gboolean measure_point(Loop *l, const TsSchedPoint *point, TsTrialResult **result,
                              GError **error);

/* The incumbent measured again, once per run, when a challenger's median is below its own but
 * its samples are too spread to tell (a bimodal set from a loaded machine kept a 10 ms best
 * against much faster candidates). A machine busy enough to spoil the stored samples can spoil
 * the next set too, so up to REMEASURE_TRIES sets are taken, stopping at the first that is not
 * noisy; the least spread of all of them is kept. TRUE with *best replaced when the stored
 * samples changed. */
#define REMEASURE_TRIES 3
static gboolean
remeasure_incumbent(Loop *l, TsDbTrial **best, const TsDbTrial *challenger, GError **error)
{
  const TsDbTrial *b = *best;
  if (b->samples_ns == NULL || challenger->median_ns >= b->median_ns ||
      g_hash_table_contains(l->remeasured, &b->id))
    return TRUE;
  double spread = ts_stats_rel_iqr((double *)b->samples_ns->data, b->samples_ns->len);
  if (!(spread > NOISY_SPREAD))
    return TRUE;
  g_hash_table_add(l->remeasured, g_memdup2(&b->id, sizeof b->id));
  g_autoptr(TsSchedPoint) point = ts_sched_point_parse(b->schedule, NULL);
  if (point == NULL)
    return TRUE; /* not a point of this generator: nothing to re-measure */
  l->sum->n_remeasured++;
  g_autoptr(GArray) kept = NULL;
  /* Each set in a range of its own inside the challenger's: a profiled tune's timeline then
   * shows where the incumbent's new samples came from, and its trial ranges hold only their
   * own launches. */
  g_autofree char *range =
    g_strdup_printf("re-measure trial %" G_GINT64_FORMAT ": %s", b->id, b->schedule);
  for (int i = 0; i < REMEASURE_TRIES && spread > NOISY_SPREAD; i++) {
    g_autoptr(TsTrialResult) r = NULL;
    ts_nvtx_push(range);
    gboolean measured = measure_point(l, point, &r, error);
    ts_nvtx_pop();
    if (!measured)
      return FALSE;
    if (r->status != TS_TRIAL_OK || r->samples_ns->len == 0)
      break; /* it failed now: the stored trial keeps what it had */
    double s = ts_stats_rel_iqr((double *)r->samples_ns->data, r->samples_ns->len);
    if (s < spread) {
      spread = s;
      g_clear_pointer(&kept, g_array_unref);
      kept = g_array_ref(r->samples_ns);
    }
  }
  if (kept == NULL)
    return TRUE;
  if (!ts_db_update_trial_samples(l->cfg->db, b->id, kept, error))
    return FALSE;
  TsDbTrial *fresh = ts_db_get_trial(l->cfg->db, b->id, error);
  if (fresh == NULL)
    return FALSE;
  ts_db_trial_free(*best);
  *best = fresh;
  return TRUE;
}

/* Makes trial the key's best if it beats the stored best beyond noise (the stored best is read
 * again: another process may have improved it meanwhile). */
static gboolean
maybe_promote(Loop *l, const TsDbTrial *trial, GError **error)
{
  TsTuneSummary *s = l->sum;
  g_autoptr(GError) nf = NULL;
  g_autoptr(TsDbTrial) best = ts_db_get_best(l->cfg->db, s->workload_id, s->device_id,
                                             s->toolchain_id, &nf);
  gboolean promote = best == NULL;
  if (best && best->id != trial->id && best->samples_ns && trial->samples_ns) {
    promote = ts_stats_faster((double *)trial->samples_ns->data, trial->samples_ns->len,
                              (double *)best->samples_ns->data, best->samples_ns->len, BEST_ALPHA);
    if (!promote) {
      if (!remeasure_incumbent(l, &best, trial, error))
        return FALSE;
      promote = ts_stats_faster((double *)trial->samples_ns->data, trial->samples_ns->len,
                                (double *)best->samples_ns->data, best->samples_ns->len,
                                BEST_ALPHA);
    }
  }
  if (promote) {
    if (!ts_db_set_best(l->cfg->db, s->workload_id, s->device_id, s->toolchain_id, trial->id,
                        error))
      return FALSE;
    s->best_trial_id = trial->id;
    s->best_median_ns = trial->median_ns;
    g_free(s->best_schedule);
    s->best_schedule = g_strdup(trial->schedule);
  } else if (best) {
    s->best_trial_id = best->id;
    s->best_median_ns = best->median_ns;
    g_free(s->best_schedule);
    s->best_schedule = g_strdup(best->schedule);
  }
  return TRUE;
}

/* The trial's rates, and what the kernel uses when the backend knows it (GPU: registers,
 * shared memory, spills — features of the cost model). */
/* , "verification": "..." — which check the trial's rel_error comes from (full or sampled). */
static void
append_verification(GString *j, const TsTrialResult *r)
{
  if (r->verification == NULL)
    return;
  g_autoptr(JsonNode) node = json_node_init_string(json_node_alloc(), r->verification);
  g_autofree char *text = json_to_string(node, FALSE);
  g_string_append_printf(j, "%s\"verification\": %s", j->len > 1 ? ", " : "", text);
}

static char *
trial_metrics_json(TsOpInstance *inst, TsBackend *backend, const TsProfCeilings *ceilings,
                   const TsTrialResult *r)
{
  GString *j = g_string_new(NULL);
  g_string_append_printf(j, "{\"gflops\": %.6g, \"gbps\": %.6g", r->gflops, r->gbps);
  TsProfRoofline roof;
  if (ceilings &&
      ts_prof_roofline(ceilings, ts_tune_compute_roof(inst, backend),
                       ts_op_instance_flops(inst), ts_op_instance_bytes(inst), r->median_ns * 1e-9,
                       &roof)) {
    g_autofree char *rj = ts_prof_roofline_to_json(&roof);
    g_string_append_printf(j, ", \"roofline\": %s", rj);
  }
  if (r->counters_json)
    g_string_append_printf(j, ", \"counters\": %s", r->counters_json);
  if (r->cpu_samples && r->cpu_samples->len > 0)
    g_string_append_printf(j, ", \"thread_cpu_ns\": %.6g, \"process_cpu_ns\": %.6g",
                           r->thread_cpu_ns, r->process_cpu_ns);
  if (r->compile_cpu_ms > 0)
    g_string_append_printf(j, ", \"compile_cpu_ms\": %.6g", r->compile_cpu_ms);
  append_verification(j, r);
  const TsModuleResources *res = &r->resources;
  const struct { const char *name; gint v; } f[] = {
    {"registers", res->registers},       {"smem_static", res->smem_static},
    {"smem_dynamic", res->smem_dynamic}, {"local_bytes", res->local_bytes},
    {"spill_stores", res->spill_stores}, {"spill_loads", res->spill_loads},
    {"threads", res->threads},
  };
  for (guint i = 0; i < G_N_ELEMENTS(f); i++)
    if (f[i].v >= 0)
      g_string_append_printf(j, ", \"%s\": %d", f[i].name, f[i].v);
  g_string_append_c(j, '}');
  return g_string_free(j, FALSE);
}

TsDbTrial *
ts_tune_trial_from_result(TsOpInstance *inst, TsBackend *backend, const TsProfCeilings *ceilings,
                          const TsSchedPoint *point, const TsTrialResult *r, const char *strategy)
{
  TsDbTrial *t = ts_db_trial_new();
  t->schedule = ts_sched_point_to_string(point);
  t->hash = g_strdup(ts_sched_point_hash(point));
  t->status = (TsDbTrialStatus)(r ? r->status : TS_TRIAL_COMPILE_ERROR);
  t->strategy = g_strdup(strategy);
  t->host = g_strdup(r && r->host ? r->host : g_get_host_name());
  if (r == NULL)
    return t;
  t->rank = r->rank;
  t->compile_ms = r->compile_ms;
  if (isfinite(r->rel_error))
    t->rel_error = r->rel_error;
  if (r->status == TS_TRIAL_OK) {
    t->median_ns = r->median_ns;
    t->min_ns = r->min_ns;
    t->max_ns = r->max_ns;
    t->samples_ns = g_array_ref(r->samples_ns);
    t->metrics_json = trial_metrics_json(inst, backend, ceilings, r);
  }
  if (r->status == TS_TRIAL_WRONG_RESULT && r->verification) {
    GString *j = g_string_new("{");
    append_verification(j, r);
    g_string_append_c(j, '}');
    t->metrics_json = g_string_free(j, FALSE);
  }
  if (r->message && *r->message)
    t->error_text = g_strdup(r->message);
  return t;
}

static gboolean
store(Loop *l, const TsSchedPoint *point, const TsTrialResult *r, const char *error_text,
      double compile_ms, GError **error)
{
  TsTuneSummary *s = l->sum;
  g_autoptr(TsDbTrial) t =
    ts_tune_trial_from_result(l->cfg->inst, l->cfg->backend, l->cfg->ceilings, point, r,
                              ts_tune_strategy_name(l->strategy));
  t->workload_id = s->workload_id;
  t->device_id = s->device_id;
  t->toolchain_id = s->toolchain_id;
  t->run_id = s->run_id;
  t->compile_ms = compile_ms;
  /* What the analytic model expected, next to what was measured (the GUI's predicted vs.
   * measured plot, and a check on the model). */
  TsCostEstimate est;
  if (ts_cost_analytic(l->target, point, NULL, &est, NULL))
    t->predicted_cost = est.time_s * 1e9;
  if (r == NULL)
    t->error_text = g_strdup(error_text);
  gboolean existed = FALSE;
  if (!ts_db_add_trial(l->cfg->db, t, &t->id, &existed, error))
    return FALSE;
  l->stored_id = t->id;
  s->n_measured++;
  gboolean ok = r && r->status == TS_TRIAL_OK;
  if (ok)
    s->n_ok++;
  else
    s->n_failed++;
  ts_tune_strategy_observe(l->strategy, point, ok, ok ? r->median_ns * 1e-9 : 0.0);
  if (ok && !existed && !maybe_promote(l, t, error))
    return FALSE;
  report(l, point, t->status == TS_DB_TRIAL_OK ? TS_TRIAL_OK : (TsTrialStatus)t->status, FALSE,
         t->error_text, ok ? r->median_ns : NAN);
  return TRUE;
}

static gboolean
measure_trial(Loop *l, Candidate *c, GError **error)
{
  if (c->compile_error) {
    if (c->infra_failed) {
      g_set_error(error, TS_TUNE_ERROR, TS_TUNE_ERROR_FAILED, "%s", c->compile_error);
      return FALSE;
    }
    return store(l, c->point, NULL, c->compile_error, 0, error);
  }
  g_autoptr(TsTrialResult) r = g_steal_pointer(&c->result);
  if (r == NULL && !measure_point(l, c->point, &r, error))
    return FALSE;
  /* Compiled by the tuner, or (a farm's candidate) by the worker that measured it. */
  if (c->compile_ms > 0)
    r->compile_cpu_ms = c->compile_cpu_ms;
  return store(l, c->point, r, NULL, c->compile_ms > 0 ? c->compile_ms : r->compile_ms, error);
}

static TsTuneRequest
request_for(Loop *l, const char *schedule)
{
  return (TsTuneRequest){
    .op = ts_op_name(ts_op_instance_op(l->cfg->inst)),
    .shape = l->shape,
    .dtype = l->dtype,
    .schedule = schedule,
    .backend = l->backend_name,
    .cache_dir = l->cache_dir,
    .options = l->cfg->run,
    .trace = l->cfg->trace,
  };
}

static void
summarise(Loop *l, TsTrialResult *r)
{
  if (r->status == TS_TRIAL_OK && r->samples_ns->len > 0)
    ts_trial_result_summarise(r, l->cfg->inst);
}

/* One point run in the worker (compiled already: an artifact-cache hit there). */
static gboolean
measure_point(Loop *l, const TsSchedPoint *point, TsTrialResult **result, GError **error)
{
  g_autofree char *schedule = ts_sched_point_to_string(point);
  TsTuneRequest q = request_for(l, schedule);
  TsTrialResult *r = ts_tune_worker_run(l->worker, &q, l->cfg->timeout_s, error);
  if (r == NULL)
    return FALSE;
  summarise(l, r);
  if (l->cfg->farm)
    r->rank = l->cfg->farm->local_rank;
  *result = r;
  return TRUE;
}

static gboolean
farm_receive(Loop *l, GPtrArray *cands, gint *busy, guint *inflight, GError **error)
{
  const TsTuneFarm *f = l->cfg->farm;
  guint remote = 0;
  g_autofree char *line = f->receive(f->data, &remote, error);
  if (line == NULL)
    return FALSE;
  g_return_val_if_fail(remote < f->n_remote && busy[remote] >= 0, FALSE);
  Candidate *c = g_ptr_array_index(cands, (guint)busy[remote]);
  busy[remote] = -1;
  (*inflight)--;
  c->result = ts_tune_result_from_json(line, NULL, error);
  if (c->result == NULL) {
    g_prefix_error(error, "MPI rank %d: ", f->rank_of(f->data, remote));
    return FALSE;
  }
  summarise(l, c->result);
  c->result->rank = f->rank_of(f->data, remote);
  return TRUE;
}

/* The first candidate from i on that lowered (the others are stored as compile errors). */
static guint
skip_unlowered(GPtrArray *cands, guint i)
{
  while (i < cands->len && ((Candidate *)g_ptr_array_index(cands, i))->compile_error)
    i++;
  return i;
}

/* The batch's lowered candidates measured at once (each worker compiles its own): one on every free remote measurer, one
 * here, answers collected as they come; measure() then stores them in proposal order. */
static gboolean
farm_measure(Loop *l, GPtrArray *cands, GError **error)
{
  const TsTuneFarm *f = l->cfg->farm;
  g_autofree gint *busy = g_new(gint, MAX(f->n_remote, 1)); /* candidate index, or -1 */
  for (guint r = 0; r < f->n_remote; r++)
    busy[r] = -1;
  guint next = skip_unlowered(cands, 0), inflight = 0;
  for (;;) {
    for (guint r = 0; r < f->n_remote; r++) {
      if (busy[r] >= 0 || next >= cands->len)
        continue;
      Candidate *c = g_ptr_array_index(cands, next);
      g_autofree char *schedule = ts_sched_point_to_string(c->point);
      TsTuneRequest q = request_for(l, schedule);
      q.trace = NULL;
      g_autofree char *req = ts_tune_request_to_json(&q);
      if (!f->send(f->data, r, req, l->cfg->timeout_s, error))
        return FALSE;
      busy[r] = (gint)next;
      next = skip_unlowered(cands, next + 1);
      inflight++;
    }
    if (next < cands->len) {
      Candidate *c = g_ptr_array_index(cands, next);
      next = skip_unlowered(cands, next + 1);
      if (!measure_point(l, c->point, &c->result, error))
        return FALSE;
      while (inflight > 0 && f->ready(f->data))
        if (!farm_receive(l, cands, busy, &inflight, error))
          return FALSE;
      continue;
    }
    if (inflight == 0)
      return TRUE;
    if (!farm_receive(l, cands, busy, &inflight, error))
      return FALSE;
  }
}

/* One range per trial, so a profiled tune's timeline (and Nsight's) says which trial each
 * stretch of work belongs to; the worker's phases and kernels land inside it. */
static gboolean
measure(Loop *l, Candidate *c, GError **error)
{
  l->index++;
  g_autofree char *schedule = ts_sched_point_to_string(c->point);
  /* Nsight names the range by the run's count; the trace, once the trial is stored, by its
   * database id, as the studio's list, tooltips and the CLI do. */
  g_autofree char *range = g_strdup_printf("candidate %u: %s", l->index, schedule);
  ts_nvtx_push(range);
  l->stored_id = 0;
  gboolean ok = measure_trial(l, c, error);
  g_autofree char *stored =
    l->stored_id ? g_strdup_printf("trial %" G_GINT64_FORMAT ": %s", l->stored_id, schedule)
                 : NULL;
  ts_nvtx_pop_as(stored);
  return ok;
}

/* Per key at most SEEDS_PER_KEY, in all at most SEEDS_MAX (the model strategy keeps 64). */
#define SEEDS_PER_KEY 32
#define SEEDS_MAX 64
GPtrArray *
ts_tune_cache_seeds(TsDb *db, gint64 workload_id, gint64 device_id, gint64 toolchain_id,
                    guint *n_keys, GError **error)
{
  g_return_val_if_fail(db != NULL, NULL);
  g_autoptr(GPtrArray) keys = ts_db_list_trial_keys(db, error);
  if (keys == NULL)
    return NULL;
  g_autoptr(GPtrArray) rankings = g_ptr_array_new_with_free_func((GDestroyNotify)g_ptr_array_unref);
  for (guint i = 0; i < keys->len; i++) {
    const TsDbTrialKey *k = keys->pdata[i];
    if (k->workload_id != workload_id || k->n_ok == 0 ||
        (k->device_id == device_id && k->toolchain_id == toolchain_id))
      continue;
    g_autoptr(GPtrArray) t = ts_db_list_trials(db, k->workload_id, k->device_id, k->toolchain_id,
                                               TS_DB_ORDER_BEST_FIRST, error);
    if (t == NULL)
      return NULL;
    GPtrArray *ranking = g_ptr_array_new_with_free_func((GDestroyNotify)ts_sched_point_free);
    /* Verified trials come first, fastest first. */
    for (guint r = 0; r < t->len && ranking->len < SEEDS_PER_KEY; r++) {
      const TsDbTrial *trial = t->pdata[r];
      TsSchedPoint *p = trial->status == TS_DB_TRIAL_OK
                          ? ts_sched_point_parse(trial->schedule, NULL)
                          : NULL;
      if (p)
        g_ptr_array_add(ranking, p);
    }
    g_ptr_array_add(rankings, ranking);
  }
  if (n_keys)
    *n_keys = rankings->len;
  return ts_tune_seeds_interleave(rankings, SEEDS_MAX);
}

static gboolean
resume(Loop *l, GError **error)
{
  TsTuneSummary *s = l->sum;
  g_autoptr(GPtrArray) stored = ts_db_list_trials(l->cfg->db, s->workload_id, s->device_id,
                                                  s->toolchain_id, TS_DB_ORDER_INSERTION, error);
  if (stored == NULL)
    return FALSE;
  for (guint i = 0; i < stored->len; i++) {
    const TsDbTrial *t = g_ptr_array_index(stored, i);
    g_autoptr(TsSchedPoint) p = ts_sched_point_parse(t->schedule, NULL);
    if (p == NULL)
      continue; /* written by another kernel generator's syntax: not a point of this space */
    gboolean ok = t->status == TS_DB_TRIAL_OK;
    ts_tune_strategy_observe(l->strategy, p, ok, ok ? t->median_ns * 1e-9 : 0.0);
  }
  s->n_resumed = stored->len;
  g_autoptr(GError) nf = NULL;
  g_autoptr(TsDbTrial) best = ts_db_get_best(l->cfg->db, s->workload_id, s->device_id,
                                             s->toolchain_id, &nf);
  if (best) {
    s->best_trial_id = best->id;
    s->best_median_ns = best->median_ns;
    s->best_schedule = g_strdup(best->schedule);
  }
  return TRUE;
}

/* ---- points shared with other tuners of the key ---- */

/* Claims a proposed point for this run (ts_db_claim_point). A point another tuner has stored
 * since this run resumed is observed from its trial, not measured again; one another running
 * tuner holds goes to l->pending and is observed when its trial appears (or measured here if
 * that tuner dies first). *measure: the point is this run's to measure. */
static gboolean
claim(Loop *l, const TsSchedPoint *p, gboolean *measure_it, gboolean *taken, GError **error)
{
  TsTuneSummary *s = l->sum;
  TsDbClaim c;
  gint64 other = 0;
  *measure_it = *taken = FALSE;
  if (!ts_db_claim_point(l->cfg->db, s->run_id, s->workload_id, s->device_id, s->toolchain_id,
                         ts_sched_point_hash(p), &c, &other, error))
    return FALSE;
  if (c == TS_DB_CLAIM_OURS) {
    *measure_it = TRUE;
  } else if (c == TS_DB_CLAIM_TAKEN) {
    *taken = TRUE;
  } else {
    g_autoptr(TsDbTrial) t = ts_db_get_trial(l->cfg->db, other, error);
    if (t == NULL)
      return FALSE;
    gboolean ok = t->status == TS_DB_TRIAL_OK;
    ts_tune_strategy_observe(l->strategy, p, ok, ok ? t->median_ns * 1e-9 : 0.0);
    s->n_shared++;
  }
  return TRUE;
}

static Candidate *
candidate_new(const TsTuneConfig *cfg, const TsSchedPoint *p)
{
  Candidate *c = g_new0(Candidate, 1);
  c->cfg = cfg;
  c->point = ts_sched_point_copy(p);
  return c;
}

/* The points other tuners held: observed once stored, measured here once their holder is gone,
 * kept while it still runs. */
static gboolean
poll_pending(Loop *l, GPtrArray *cands, GError **error)
{
  for (guint i = 0; i < l->pending->len;) {
    TsSchedPoint *p = g_ptr_array_index(l->pending, i);
    gboolean mine, taken;
    if (!claim(l, p, &mine, &taken, error))
      return FALSE;
    if (taken) {
      i++;
      continue;
    }
    if (mine)
      g_ptr_array_add(cands, candidate_new(l->cfg, p));
    g_ptr_array_remove_index(l->pending, i);
  }
  return TRUE;
}

/* Candidates are compared with the best of their moment, so a trial measured early can end up
 * faster beyond noise than a best promoted later. One last comparison, of the fastest stored
 * trial against the best, makes the stored best the minimum up to noise. */
static gboolean
reconcile_best(Loop *l, GError **error)
{
  TsTuneSummary *s = l->sum;
  g_autoptr(GPtrArray) ranked = ts_db_list_trials(l->cfg->db, s->workload_id, s->device_id,
                                                  s->toolchain_id, TS_DB_ORDER_BEST_FIRST, error);
  if (ranked == NULL)
    return FALSE;
  if (ranked->len == 0)
    return TRUE;
  const TsDbTrial *fastest = g_ptr_array_index(ranked, 0);
  if (fastest->status != TS_DB_TRIAL_OK)
    return TRUE;
  return maybe_promote(l, fastest, error);
}

gboolean
ts_tune_run(const TsTuneConfig *cfg, TsTuneSummary *sum, GError **error)
{
  g_return_val_if_fail(cfg && cfg->inst && cfg->backend && cfg->db && cfg->worker_exe, FALSE);
  memset(sum, 0, sizeof *sum);
  const TsDeviceInfo *dev = ts_backend_describe(cfg->backend);
  const char *be = ts_backend_name(cfg->backend);

  g_autoptr(TsSchedSpace) space = ts_op_instance_space(cfg->inst, be, cfg->space, error);
  if (space == NULL)
    return FALSE;
  g_autoptr(TsSchedEnv) env = ts_op_instance_env(cfg->inst, dev);
  if (!ts_sched_space_count_valid(space, env, &sum->n_valid, error))
    return FALSE;
  if (sum->n_valid == 0) {
    g_autofree char *what = ts_op_instance_describe(cfg->inst);
    g_autofree char *sp = ts_sched_space_to_string(space);
    g_set_error(error, TS_TUNE_ERROR, TS_TUNE_ERROR_EMPTY_SPACE,
                "no point of the space satisfies its constraints for %s: %s", what, sp);
    return FALSE;
  }
  g_autoptr(TsTuneStrategy) strategy = ts_tune_strategy_new(cfg->strategy, space, env, cfg->seed,
                                                            error);
  if (strategy == NULL)
    return FALSE;
  /* Annealing cools over the evaluations it will get. */
  if (cfg->budget_evals)
    ts_tune_strategy_set_budget(strategy, cfg->budget_evals);
  if (!ts_tune_key_ids(cfg->db, cfg->inst, cfg->backend, &sum->workload_id, &sum->device_id,
                       &sum->toolchain_id, error))
    return FALSE;

  Loop l = {
    .target = ts_cost_target_new(cfg->inst, be, dev, cfg->ceilings),
    .cfg = cfg,
    .sum = sum,
    .strategy = strategy,
    .worker = ts_tune_worker_new(cfg->worker_exe),
    .t0 = g_get_monotonic_time(),
    .shape = ts_shape_to_string(ts_op_instance_shape(cfg->inst)),
    .dtype = ts_dtype_policy_to_string(ts_op_instance_dtype(cfg->inst)),
    .backend_name = be,
    .cache_dir = ts_backend_get_cache_dir(cfg->backend),
    .pending = g_ptr_array_new_with_free_func((GDestroyNotify)ts_sched_point_free),
    .remeasured = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL),
  };
  ts_tune_strategy_set_cost(strategy, l.target, cfg->prior);
  g_autoptr(GPtrArray) seeds = ts_tune_cache_seeds(cfg->db, sum->workload_id, sum->device_id,
                                                   sum->toolchain_id, &sum->n_seed_keys, error);
  if (seeds)
    sum->n_seeds = ts_tune_strategy_set_seeds(strategy, seeds);
  gboolean ok = seeds != NULL && resume(&l, error);
  g_autofree char *budget = g_strdup_printf("evals=%u ms=%.0f", cfg->budget_evals, cfg->budget_ms);
  if (ok) {
    sum->run_id = ts_db_begin_run(cfg->db, sum->workload_id, sum->device_id, sum->toolchain_id,
                                  ts_tune_strategy_name(strategy), cfg->seed, budget, error);
    ok = sum->run_id != 0;
  }
  guint batch = cfg->batch ? cfg->batch : MAX(dev->compute_units, 1);
  if (cfg->farm)
    batch = MAX(batch, cfg->farm->n_remote + 1);
  while (ok && !out_of_budget(&l)) {
    g_autoptr(GPtrArray) cands = g_ptr_array_new_with_free_func((GDestroyNotify)candidate_free);
    if (!poll_pending(&l, cands, error)) {
      ok = FALSE;
      break;
    }
    guint want = batch > cands->len ? batch - cands->len : 0;
    if (cfg->budget_evals) {
      guint spent = sum->n_measured + sum->n_pruned + cands->len;
      want = MIN(want, spent < cfg->budget_evals ? cfg->budget_evals - spent : 0);
    }
    g_autoptr(GPtrArray) points =
      want ? ts_tune_strategy_propose(strategy, want, error) : g_ptr_array_new();
    if (points == NULL) {
      ok = FALSE;
      break;
    }
    if (points->len == 0 && cands->len == 0) {
      /* What the strategy has not tried, another tuner of the key is measuring now: its
       * trials land in the cache without this run waiting for them. */
      sum->exhausted = TRUE;
      break;
    }
    for (guint i = 0; ok && i < points->len; i++) {
      TsSchedPoint *p = g_ptr_array_index(points, i);
      g_autofree char *why = ts_op_instance_prune_reason(cfg->inst, p, dev);
      if (why) {
        sum->n_pruned++;
        l.index++;
        ts_tune_strategy_observe(strategy, p, FALSE, 0.0);
        report(&l, p, TS_TRIAL_COMPILE_ERROR, TRUE, why, NAN);
        continue;
      }
      gboolean mine, taken;
      ok = claim(&l, p, &mine, &taken, error);
      if (mine)
        g_ptr_array_add(cands, candidate_new(cfg, p));
      else if (taken)
        g_ptr_array_add(l.pending, ts_sched_point_copy(p));
    }
    /* With a farm each rank's worker compiles what it measures: on other machines it must (the
     * artifact cache is per host), and on one machine the ranks then compile side by side. */
    if (cfg->farm) {
      for (guint i = 0; i < cands->len; i++)
        emit_one(g_ptr_array_index(cands, i));
      ok = farm_measure(&l, cands, error);
    } else
      compile_batch(cfg, cands, dev->compute_units);
    for (guint i = 0; ok && i < cands->len; i++) {
      ok = measure(&l, g_ptr_array_index(cands, i), error);
      /* (A farm's batch is measured already: all of it is stored.) */
      if (ok && !cfg->farm && cfg->budget_ms > 0 && elapsed_ms(&l) >= cfg->budget_ms)
        break;
    }
  }
  sum->n_pending = l.pending->len;
  if (ok)
    ok = reconcile_best(&l, error);
  sum->elapsed_ms = elapsed_ms(&l);
  if (sum->run_id)
    ts_db_end_run(cfg->db, sum->run_id, ok ? "done" : "failed", NULL);
  ts_tune_worker_free(l.worker);
  ts_cost_target_free(l.target);
  g_ptr_array_unref(l.pending);
  g_hash_table_unref(l.remeasured);
  g_free(l.shape);
  g_free(l.dtype);
  return ok;
}
