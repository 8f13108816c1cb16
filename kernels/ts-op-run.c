/* ts-op-run.c — one trial of the spine: emit → compile → fresh random inputs and a poisoned
 * output → run → verify against the f64 reference → time. Failures of the candidate become
 * statuses with the text a user needs (compiler diagnostics, the measured error). A trial is a
 * timer (the prepared, verified kernel) sampled adaptively; the perf gate keeps timers of two
 * binaries and samples them in alternating rounds instead. */
#include "ts-op-private.h"

#include "ts-numerics.h"
#include "ts-measure-lock.h"
#include "ts-nvtx.h"

#include <math.h>
#include <time.h>

void
ts_run_options_init(TsRunOptions *o)
{
  *o = (TsRunOptions){
    .seed = 1,
    .verify = TRUE,
    .n_warmup = 2,
    .min_samples = 5,
    .max_samples = 50,
    .target_ms = 300.0,
    .rel_spread = 0.02,
    .exclusive = TRUE,
  };
}

static const TsRunOptions *
options_or_defaults(const TsRunOptions *options, TsRunOptions *defaults)
{
  if (options)
    return options;
  ts_run_options_init(defaults);
  return defaults;
}

/* The bound of the op's dtype, or of the op a kernel file implements. */
static double
tolerance_of(const TsOpInstance *inst)
{
  const TsOpDef *op = inst->op;
  return ts_numerics_tolerance(inst->dtype.storage, op->tolerance_as ? op->tolerance_as : op->name);
}

const char *
ts_trial_status_name(TsTrialStatus status)
{
  static const char *const names[] = {"ok", "compile_error", "runtime_error", "timeout",
                                      "wrong_result"};
  return (guint)status < G_N_ELEMENTS(names) ? names[status] : "unknown";
}

void
ts_trial_result_free(TsTrialResult *r)
{
  if (r == NULL)
    return;
  g_free(r->message);
  g_free(r->artifact);
  g_free(r->counters_json);
  g_free(r->gpu_metrics_json);
  g_free(r->host);
  g_free(r->verification);
  if (r->samples_ns)
    g_array_unref(r->samples_ns);
  if (r->cpu_samples)
    g_array_unref(r->cpu_samples);
  g_free(r);
}

static void
prepare_data(TsOpInstance *inst, guint64 seed)
{
  if (inst->have_data && inst->data_seed == seed)
    return;
  const TsOpDef *op = inst->op;
  TsDtype dt = inst->dtype.storage;
  gsize elem = ts_numerics_elem_size(dt);
  g_autoptr(GRand) rng = g_rand_new_with_seed((guint32)(seed ^ (seed >> 32)));
  for (guint i = 0; i < op->n_inputs; i++) {
    g_free(inst->inputs[i]);
    inst->inputs[i] = g_malloc(elem * (gsize)inst->numel[i]);
    /* Quantized with the input's scale (1 but for fp8): stored = value / scale. */
    const double scale = ts__op_instance_input_scale(inst, i);
    ts_numerics_fill_random(dt, inst->inputs[i], (gsize)inst->numel[i], rng,
                            op->inputs[i].lo / scale, op->inputs[i].hi / scale);
  }
  g_free(inst->ref);
  const gsize n_out = (gsize)inst->numel[op->n_inputs];
  inst->ref = g_new(double, n_out);
  g_autofree char *sample = op->reference(inst, inst->inputs, inst->ref);
  g_free(inst->verification);
  if (sample == NULL) {
    inst->verification = g_strdup_printf("full f64 reference (%" G_GSIZE_FORMAT " elements)",
                                         n_out);
  } else {
    gsize checked = 0;
    for (gsize i = 0; i < n_out; i++)
      checked += !isnan(inst->ref[i]);
    inst->verification = g_strdup_printf("sampled f64 reference: %s (%" G_GSIZE_FORMAT " of %"
                                         G_GSIZE_FORMAT " elements); every element scanned for "
                                         "NaN/Inf", sample, checked, n_out);
  }
  inst->have_data = TRUE;
  inst->data_seed = seed;
}

const double *
ts_op_instance_reference(TsOpInstance *inst, guint64 seed, gsize *n, const char **how)
{
  g_return_val_if_fail(inst != NULL, NULL);
  prepare_data(inst, seed);
  if (n)
    *n = (gsize)inst->numel[inst->op->n_inputs];
  if (how)
    *how = inst->verification;
  return inst->ref;
}

static int
cmp_double(gconstpointer a, gconstpointer b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* (q3 - q1) / median of the samples. */
static double
spread_of(GArray *samples)
{
  g_autofree double *v = g_memdup2(samples->data, sizeof(double) * samples->len);
  qsort(v, samples->len, sizeof(double), cmp_double);
  guint n = samples->len;
  double med = v[n / 2];
  return med > 0 ? (v[(3 * n) / 4] - v[n / 4]) / med : 0.0;
}

TsTrialResult *
ts_trial_result_new(void)
{
  TsTrialResult *r = g_new0(TsTrialResult, 1);
  r->samples_ns = g_array_new(FALSE, FALSE, sizeof(double));
  r->message = g_strdup("");
  r->resources = (TsModuleResources){-1, -1, -1, -1, -1, -1, -1};
  r->rank = -1;
  return r;
}

/* Sorts v in place. */
static double
median_of(double *v, guint n)
{
  qsort(v, n, sizeof(double), cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void
ts_trial_result_summarise(TsTrialResult *r, const TsOpInstance *inst)
{
  GArray *s = r->samples_ns;
  g_autofree double *sorted = g_memdup2(s->data, sizeof(double) * s->len);
  r->median_ns = median_of(sorted, s->len);
  r->min_ns = sorted[0];
  r->max_ns = sorted[s->len - 1];
  r->gflops = ts_op_instance_flops(inst) / r->median_ns;
  r->gbps = ts_op_instance_bytes(inst) / r->median_ns;
  r->thread_cpu_ns = r->process_cpu_ns = 0;
  if (r->cpu_samples && r->cpu_samples->len > 0) {
    guint n = r->cpu_samples->len;
    g_autofree double *th = g_new(double, n), *pr = g_new(double, n);
    for (guint i = 0; i < n; i++) {
      th[i] = g_array_index(r->cpu_samples, TsCpuTime, i).thread_ns;
      pr[i] = g_array_index(r->cpu_samples, TsCpuTime, i).process_ns;
    }
    r->thread_cpu_ns = median_of(th, n);
    r->process_cpu_ns = median_of(pr, n);
  }
}

typedef struct {
  TsBackend *backend;
  TsBuffer *bufs[TS_OP_MAX_ARGS + 1];
  guint n;
} Buffers;

static void
buffers_clear(Buffers *b)
{
  for (guint i = 0; i < b->n; i++)
    ts_backend_buffer_free(b->backend, b->bufs[i]);
  b->n = 0;
}

/* Everything a launch needs lives here (the dims copied out of the instance, the floats in the
 * op's static definition), so a timer does not depend on the instance once it is made. */
struct _TsOpTimer {
  TsBackend *backend;
  TsModule *module; /* borrowed */
  Buffers bufs;
  gint64 ints[4];
  TsLaunch launch;
  double slowdown;
};

void
ts_op_timer_free(TsOpTimer *t)
{
  if (t == NULL)
    return;
  buffers_clear(&t->bufs);
  g_free(t);
}

/* A kernel file's @verify.numerics(bounded=[lo, hi]): every output element within the bounds,
 * else a wrong result naming the first one outside and how many are. */
static gboolean
within_bounds(const TsOpDef *op, TsDtype dt, const void *out, gsize n, TsTrialResult *r)
{
  gsize outside = 0, first = 0;
  for (gsize i = 0; i < n; i++) {
    double v = ts_numerics_get(dt, out, i);
    if (!(v >= op->verify_lo && v <= op->verify_hi) && outside++ == 0)
      first = i;
  }
  if (outside == 0)
    return TRUE;
  r->status = TS_TRIAL_WRONG_RESULT;
  g_free(r->message);
  r->message = g_strdup_printf("output element %" G_GSIZE_FORMAT " is %.6g, outside "
                               "@verify.numerics(bounded=[%g, %g]) (%" G_GSIZE_FORMAT " of %"
                               G_GSIZE_FORMAT " elements are)",
                               first, ts_numerics_get(dt, out, first), op->verify_lo,
                               op->verify_hi, outside, n);
  return FALSE;
}

/* Poisons the output, launches once and checks the output against the reference. Takes t and
 * r; returns t, or NULL with *result set (candidate failure) or error set (machinery). */
static TsOpTimer *
launch_and_verify(TsOpTimer *t_in, TsOpInstance *inst, const TsRunOptions *options,
                  TsTrialResult *r_in, TsTrialResult **result, GError **error)
{
  g_autoptr(TsOpTimer) t = t_in;
  g_autoptr(TsTrialResult) r = r_in;
  const TsOpDef *op = inst->op;
  TsDtype dt = inst->out_dtype;
  gsize elem = ts_numerics_elem_size(dt);
  TsBuffer *out_buf = (TsBuffer *)t->launch.buffers[op->n_inputs];
  gsize n_out = (gsize)inst->numel[op->n_inputs];
  g_autofree void *out = g_malloc(elem * n_out);
  /* Poison: an element the kernel never writes stays NaN and fails the check. */
  ts_numerics_poison(dt, out, n_out);
  if (!ts_backend_upload(t->backend, out_buf, out, elem * n_out, error))
    return NULL;
  g_autoptr(GError) lerr = NULL;
  if (!ts_backend_launch(t->backend, t->module, &t->launch, &lerr)) {
    r->status = TS_TRIAL_RUNTIME_ERROR;
    g_free(r->message);
    r->message = g_strdup(lerr->message);
    *result = g_steal_pointer(&r);
    return NULL;
  }
  g_free(r->verification);
  r->verification = g_strdup(options->verify ? inst->verification : "none");
  if (options->verify) {
    if (!ts_backend_download(t->backend, out, out_buf, elem * n_out, error))
      return NULL;
    gsize nonfinite = 0;
    r->rel_error = ts_numerics_rel_error(dt, out, inst->ref, n_out, &nonfinite);
    if (!(r->rel_error <= r->tolerance)) {
      r->status = TS_TRIAL_WRONG_RESULT;
      g_free(r->message);
      if (nonfinite)
        r->message = g_strdup_printf("%" G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT
                                     " output elements are NaN/Inf (unwritten or overflowed)",
                                     nonfinite, n_out);
      else
        r->message = g_strdup_printf("relative error %.3g exceeds the %s bound %.0e", r->rel_error,
                                     ts_dtype_name(inst->dtype.storage), r->tolerance);
      *result = g_steal_pointer(&r);
      return NULL;
    }
    if (op->verify_bounded && !within_bounds(op, dt, out, n_out, r)) {
      *result = g_steal_pointer(&r);
      return NULL;
    }
  }
  *result = g_steal_pointer(&r);
  return g_steal_pointer(&t);
}

static TsTrialResult *
new_result(TsOpInstance *inst, TsModule *module)
{
  TsTrialResult *r = ts_trial_result_new();
  r->tolerance = tolerance_of(inst);
  r->cache_hit = ts_module_from_cache(module);
  r->compile_ms = ts_module_compile_ms(module);
  r->compile_cpu_ms = ts_module_compile_cpu_ms(module);
  r->artifact = g_strdup(ts_module_hash(module));
  r->resources = *ts_module_resources(module);
  return r;
}

/* *result is NULL exactly when a GError is set: a machinery failure has no verification result
 * to report. */
TsOpTimer *
ts_op_timer_new(TsOpInstance *inst, TsBackend *backend, TsModule *module,
                const TsRunOptions *options, TsTrialResult **result, GError **error)
{
  g_return_val_if_fail(inst != NULL && backend != NULL && module != NULL, NULL);
  g_return_val_if_fail(result != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  *result = NULL;
  TsRunOptions defaults;
  options = options_or_defaults(options, &defaults);
  const TsOpDef *op = inst->op;
  const gsize elem = ts_numerics_elem_size(inst->dtype.storage);
  const gsize out_elem = ts_numerics_elem_size(inst->out_dtype);
  g_autoptr(TsTrialResult) r = new_result(inst, module);

  g_autoptr(TsOpTimer) t = g_new0(TsOpTimer, 1);
  t->backend = backend;
  t->module = module;
  t->bufs.backend = backend;
  prepare_data(inst, options->seed);
  for (guint i = 0; i <= op->n_inputs; i++) {
    TsBuffer *b =
      ts_backend_alloc(backend, (i < op->n_inputs ? elem : out_elem) * (gsize)inst->numel[i],
                       error);
    if (b == NULL)
      return NULL;
    t->bufs.bufs[t->bufs.n++] = b;
    if (i < op->n_inputs &&
        !ts_backend_upload(backend, b, inst->inputs[i], elem * (gsize)inst->numel[i], error))
      return NULL;
  }
  g_auto(GStrv) dims = g_strsplit(op->dims, ",", -1);
  guint n_ints = 0;
  for (; dims[n_ints]; n_ints++) {
    g_assert(n_ints < G_N_ELEMENTS(t->ints));
    t->ints[n_ints] = ts_shape_get(inst->shape, dims[n_ints]);
  }
  t->launch = (TsLaunch){
      .buffers = t->bufs.bufs,
      .n_buffers = op->n_inputs + 1,
      .ints = t->ints,
      .n_ints = n_ints,
      .floats = inst->float_values,
      .n_floats = inst->n_floats,
  };
  return launch_and_verify(g_steal_pointer(&t), inst, options, g_steal_pointer(&r), result,
                           error);
}

TsOpTimer *
ts_op_timer_new_sibling(TsOpTimer *peer, TsOpInstance *inst, TsModule *module,
                        const TsRunOptions *options, TsTrialResult **result, GError **error)
{
  g_return_val_if_fail(peer != NULL && inst != NULL && module != NULL, NULL);
  g_return_val_if_fail(result != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  *result = NULL;
  TsRunOptions defaults;
  options = options_or_defaults(options, &defaults);
  g_autoptr(TsOpTimer) t = g_new0(TsOpTimer, 1);
  t->backend = peer->backend;
  t->module = module;
  t->bufs.backend = peer->backend; /* owns none: the peer's buffers are borrowed */
  prepare_data(inst, options->seed);
  memcpy(t->ints, peer->ints, sizeof t->ints);
  t->launch = peer->launch;
  t->launch.ints = t->ints;
  return launch_and_verify(g_steal_pointer(&t), inst, options, new_result(inst, module), result,
                           error);
}

static gint64
now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (gint64)ts.tv_sec * G_GINT64_CONSTANT(1000000000) + ts.tv_nsec;
}

/* Busy, not sleeping: a sleep would give the core away and add scheduler latency instead of the
 * requested time. Returns the time really spent, which is what a slower kernel would cost. */
static double
spin_ns(double ns)
{
  gint64 t0 = now_ns(), t;
  do
    t = now_ns();
  while ((double)(t - t0) < ns);
  return (double)(t - t0);
}

/* cpu: NULL, or (host backends) each sample's CPU time. */
static gboolean
timer_sample(TsOpTimer *t, guint n_warmup, guint n, double *samples_ns, TsCpuTime *cpu,
             GError **error)
{
  if (t->slowdown <= 0)
    return ts_backend_time_cpu(t->backend, t->module, &t->launch, n_warmup, n, samples_ns, cpu,
                               error);

  /* One launch per call, each followed by its spin: the slowdown then lands in the same machine
   * state as the launch it stretches, as a slower kernel's would. */
  if (n_warmup > 0 &&
      !ts_backend_time(t->backend, t->module, &t->launch, n_warmup, 0, NULL, error))
    return FALSE;
  for (guint i = 0; i < n; i++) {
    if (!ts_backend_time_cpu(t->backend, t->module, &t->launch, 0, 1, &samples_ns[i],
                             cpu ? &cpu[i] : NULL, error))
      return FALSE;
    double spun = spin_ns(t->slowdown * samples_ns[i]);
    samples_ns[i] += spun;
    if (cpu) { /* a spinning thread is busy all along */
      cpu[i].thread_ns += spun;
      cpu[i].process_ns += spun;
    }
  }
  return TRUE;
}

gboolean
ts_op_timer_sample(TsOpTimer *t, guint n_warmup, guint n, double *samples_ns, GError **error)
{
  g_return_val_if_fail(t != NULL, FALSE);
  g_return_val_if_fail(samples_ns != NULL || n == 0, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  return timer_sample(t, n_warmup, n, samples_ns, NULL, error);
}

void
ts_op_timer_set_slowdown(TsOpTimer *t, double fraction)
{
  g_return_if_fail(t != NULL);
  g_return_if_fail(fraction >= 0);
  t->slowdown = fraction;
}

static gboolean sample_until_stable(TsOpTimer *t, TsTrialResult *r, const TsRunOptions *options,
                                    GError **error);

static TsMeasureLock *
take_turn(const TsRunOptions *options, const char *unit, TsMeasureLockMode mode,
          TsOpInstance *inst, const char *entry)
{
  if (!options->exclusive)
    return NULL;
  g_autofree char *key = ts_op_instance_describe(inst);
  g_autofree char *what = g_strdup_printf("%s, %s", key, entry);
  return ts_measure_lock_acquire(unit ? unit : TS_MEASURE_LOCK_HOST, mode, what, options->lock_wait, options->lock_wait_data);
}

/* A turn not taken (ts_measure_lock_note) is told in the trial's message, which is empty
 * otherwise for a trial that ran. */
static void
note_turn(TsTrialResult *r, const TsMeasureLock *turn)
{
  const char *note = turn ? ts_measure_lock_note(turn) : NULL;
  if (r == NULL || note == NULL)
    return;
  g_autofree char *old = r->message;
  r->message = old && *old ? g_strdup_printf("%s; not measured alone: %s", old, note)
                           : g_strdup_printf("not measured alone: %s", note);
}

/* The point's launch constants (ts_op_emit; NULL: none) bound to its module. */
static gboolean
bind_launch_ints(TsModule *module, const GArray *ints, GError **error)
{
  return ints == NULL ||
         ts_module_bind_ints(module, (const gint64 *)(gconstpointer)ints->data, ints->len, error);
}

TsTrialResult *
ts_op_run_source(TsOpInstance *inst, TsBackend *backend, const char *source, const char *entry,
                 const GArray *launch_ints, const TsRunOptions *options, GError **error)
{
  TsRunOptions defaults;
  options = options_or_defaults(options, &defaults);
  TsSource src = {
    .lang = ts_backend_source_lang(backend),
    .text = source,
    .entry = entry,
  };
  g_autoptr(GError) cerr = NULL;
  /* Compiling and verifying use the host's cores: not while a measurement runs on them. */
  g_autoptr(TsMeasureLock) shared =
    take_turn(options, TS_MEASURE_LOCK_HOST, TS_MEASURE_LOCK_SHARED, inst, entry);
  /* NVTX ranges name the tuner's phases on Nsight's timeline (no-ops without a profiler). */
  ts_nvtx_push("tessera: compile");
  g_autoptr(TsModule) module = ts_backend_compile(backend, &src, &cerr);
  ts_nvtx_pop();
  if (module == NULL) {
    if (!g_error_matches(cerr, TS_BACKEND_ERROR, TS_BACKEND_ERROR_COMPILE) &&
        !g_error_matches(cerr, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LOAD)) {
      g_propagate_error(error, g_steal_pointer(&cerr));
      return NULL;
    }
    g_autoptr(TsTrialResult) r = ts_trial_result_new();
    r->tolerance = tolerance_of(inst);
    r->status = TS_TRIAL_COMPILE_ERROR;
    g_free(r->message);
    r->message = g_strdup(cerr->message);
    return g_steal_pointer(&r);
  }
  if (!bind_launch_ints(module, launch_ints, error))
    return NULL;

  g_autoptr(TsTrialResult) r = NULL;
  ts_nvtx_push("tessera: verify");
  g_autoptr(TsOpTimer) t = ts_op_timer_new(inst, backend, module, options, &r, error);
  ts_nvtx_pop();
  if (t == NULL)
    return g_steal_pointer(&r); /* the candidate's failure, or NULL with the error */
  g_clear_pointer(&shared, ts_measure_lock_release);
  g_autoptr(TsMeasureLock) turn = take_turn(options, ts_backend_describe(backend)->unit,
                                            TS_MEASURE_LOCK_EXCLUSIVE, inst, entry);
  ts_nvtx_push("tessera: measure");
  gboolean measured = sample_until_stable(t, r, options, error);
  ts_nvtx_pop();
  if (!measured)
    return NULL;
  note_turn(r, turn);
  ts_trial_result_summarise(r, inst);
  r->status = TS_TRIAL_OK;
  return g_steal_pointer(&r);
}

static gboolean
sample_until_stable(TsOpTimer *t, TsTrialResult *r, const TsRunOptions *options, GError **error)
{
  /* Warm up, estimate one run, then sample in rounds until the spread is small (interquartile
   * range within rel_spread of the median) or a cap is hit: a fixed count either wastes time
   * on quiet kernels or under-samples noisy ones. */
  double first = 0;
  if (!ts_op_timer_sample(t, options->n_warmup, 1, &first, error))
    return FALSE;
  guint round = options->min_samples;
  double budget_ns = options->target_ms * 1e6;
  const TsMeasureHooks *hooks = options->hooks;
  if (hooks && hooks->begin)
    hooks->begin(hooks->data);
  double spent = 0;
  if (ts_backend_runs_on_host(t->backend) && r->cpu_samples == NULL)
    r->cpu_samples = g_array_new(FALSE, FALSE, sizeof(TsCpuTime));
  while (r->samples_ns->len < options->max_samples) {
    guint n = MIN(round, options->max_samples - r->samples_ns->len);
    guint at = r->samples_ns->len;
    g_array_set_size(r->samples_ns, at + n);
    double *dst = &g_array_index(r->samples_ns, double, at);
    TsCpuTime *cpu = NULL;
    if (r->cpu_samples) {
      g_array_set_size(r->cpu_samples, at + n);
      cpu = &g_array_index(r->cpu_samples, TsCpuTime, at);
    }
    if (!timer_sample(t, 0, n, dst, cpu, error)) {
      if (hooks && hooks->end)
        hooks->end(hooks->data, r->samples_ns->len - n);
      return FALSE;
    }
    for (guint i = 0; i < n; i++)
      spent += dst[i];
    if (r->samples_ns->len < options->min_samples)
      continue;
    if (spent >= budget_ns && spread_of(r->samples_ns) <= options->rel_spread)
      break;
    if (spent >= 10 * budget_ns)
      break; /* noisy machine: stop anyway and let the stored spread say so */
  }
  if (hooks && hooks->end)
    hooks->end(hooks->data, r->samples_ns->len);
  return TRUE;
}

TsModule *
ts_op_compile(const TsOpInstance *inst, TsBackend *backend, const TsSchedPoint *point,
              GError **error)
{
  g_autofree char *entry = NULL;
  g_autoptr(GArray) ints = NULL;
  g_autofree char *src = ts_op_emit(inst, ts_backend_name(backend), point, &entry, &ints, error);
  if (src == NULL)
    return NULL;
  TsSource source = {.lang = ts_backend_source_lang(backend), .text = src, .entry = entry};
  g_autoptr(TsModule) module = ts_backend_compile(backend, &source, error);
  if (module == NULL || !bind_launch_ints(module, ints, error))
    return NULL;
  return g_steal_pointer(&module);
}

TsTrialResult *
ts_op_run(TsOpInstance *inst, TsBackend *backend, const TsSchedPoint *point,
          const TsRunOptions *options, GError **error)
{
  g_autofree char *entry = NULL;
  g_autoptr(GArray) ints = NULL;
  g_autofree char *src = ts_op_emit(inst, ts_backend_name(backend), point, &entry, &ints, error);
  if (src == NULL)
    return NULL;
  return ts_op_run_source(inst, backend, src, entry, ints, options, error);
}
