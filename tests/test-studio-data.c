/* test-studio-data.c — tessera-studio's data layer without GTK: a schedule cache built through
 * the db API and read back read-only (devices and their ceilings, workload keys and labels,
 * trials with roofline coordinates, runs, profiles, events), files that are not caches, Chrome
 * traces (the round trip through our own writer, foreign forms, malformed files), lowering a
 * stored schedule, and the line diff with its unified text. */
#include "ts-studio-data.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "ts-cost-model.h"
#include "ts-op.h"
#include "ts-studio-view.h"
#include "ts-prof-metrics.h"
#include "ts-prof-trace.h"
#include "ts-trace.h"
#include "test-util.h"

/* ---- a cache built through the db API ---- */

typedef struct {
  char *dir, *path;
  gint64 cpu, gpu, tc, tc2, gemm, mystery, gemm_bf16;
  gint64 t_plain, t_stored, t_failed, t_fast, t_late; /* gemm on cpu with tc, in order */
  gint64 run1, run2, prof_cpu, prof_gpu;
} Cache;

static const double DRAM_GBPS = 1.0, F32_GFLOPS = 100.0;
static const char *const GEMM_SHAPE = "M=256,N=256,K=256";

static gint64
add_trial(TsDb *db, gint64 w, gint64 d, gint64 t, gint64 run, const char *schedule,
          TsDbTrialStatus status, double median, const char *metrics)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsDbTrial) trial = ts_db_trial_new();
  trial->workload_id = w, trial->device_id = d, trial->toolchain_id = t, trial->run_id = run;
  trial->schedule = g_strdup(schedule);
  trial->status = status;
  trial->median_ns = median;
  trial->min_ns = median * 0.9;
  trial->max_ns = median * 1.1;
  trial->predicted_cost = median * 2;
  trial->metrics_json = g_strdup(metrics);
  trial->error_text = status == TS_DB_TRIAL_OK ? NULL : g_strdup("no such knob");
  trial->strategy = g_strdup("random");
  gint64 id = 0;
  g_assert_true(ts_db_add_trial(db, trial, &id, NULL, &error));
  g_assert_no_error(error);
  return id;
}

static void
cache_setup(Cache *c, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  c->dir = g_dir_make_tmp("test-studio-XXXXXX", &error);
  g_assert_no_error(error);
  c->path = g_build_filename(c->dir, "schedules.db", NULL);
  if (data == NULL)
    return; /* a test that only needs a directory */
  g_autoptr(TsDb) db = ts_db_open(c->path, TS_DB_OPEN_DEFAULT, &error);
  g_assert_no_error(error);

  /* Listed out of id order on purpose: the GPU row comes first. */
  TsDbDevice gpu = {.backend = "cuda", .name = "test gpu", .arch = "sm_90a", .compute_units = 132};
  TsDbDevice cpu = {.backend = "cpu", .name = "test cpu", .arch = "x86_64+avx2", .compute_units = 8};
  c->gpu = ts_db_ensure_device(db, &gpu, &error);
  c->cpu = ts_db_ensure_device(db, &cpu, &error);
  g_assert_no_error(error);
  g_autoptr(TsProfCeilings) ceil = ts_prof_ceilings_new("cpu", "gcc 12.2.0");
  ts_prof_ceilings_set(ceil, "f32", TS_PROF_COMPUTE, F32_GFLOPS, 12.5);
  ts_prof_ceilings_set(ceil, "dram", TS_PROF_MEMORY, DRAM_GBPS, 0.5);
  g_autofree char *ceil_json = ts_prof_ceilings_to_json(ceil);
  g_assert_true(ts_db_set_device_peaks(db, c->cpu, ceil_json, &error));
  /* An older tessera's peaks: the device is listed without ceilings. */
  g_assert_true(ts_db_set_device_peaks(db, c->gpu, "{\"f32\": 1000}", &error));
  g_assert_no_error(error);

  c->tc = ts_db_ensure_toolchain(db, "gcc 12.2.0", "tessera-kgen-1", &error);
  c->tc2 = ts_db_ensure_toolchain(db, "gcc 13.1.0", "tessera-kgen-1", &error);
  c->gemm = ts_db_ensure_workload(db, "gemm", GEMM_SHAPE, "f32", &error);
  c->mystery = ts_db_ensure_workload(db, "mystery", "M=8", "f32", &error);
  c->gemm_bf16 = ts_db_ensure_workload(db, "gemm", GEMM_SHAPE, "bf16 @accum(f32)", &error);
  g_assert_no_error(error);

  c->run1 = ts_db_begin_run(db, c->gemm, c->cpu, c->tc, "random", 42, "3 evals", &error);
  g_assert_no_error(error);
  c->t_plain = add_trial(db, c->gemm, c->cpu, c->tc, c->run1, "block(m=72)", TS_DB_TRIAL_OK, 1e6,
                         "{\"gflops\": 33.5}");
  c->t_stored = add_trial(db, c->gemm, c->cpu, c->tc, c->run1, "block(m=96)", TS_DB_TRIAL_OK, 2e6,
                          "{\"gflops\": 16.7, \"roofline\": {\"intensity\": 7.5, \"gflops\": "
                          "12.5, \"compute\": \"f32\", \"bound\": \"f32\", \"bound_gflops\": 50,"
                          " \"fraction\": 0.25}}");
  c->t_failed = add_trial(db, c->gemm, c->cpu, c->tc, c->run1, "bogus(1)",
                          TS_DB_TRIAL_COMPILE_ERROR, NAN, NULL);
  g_assert_true(ts_db_end_run(db, c->run1, "done", &error));
  c->run2 = ts_db_begin_run(db, c->gemm, c->cpu, c->tc, "annealing", 7, "", &error);
  c->t_fast = add_trial(db, c->gemm, c->cpu, c->tc, c->run2, "block(m=144)", TS_DB_TRIAL_OK, 5e5,
                        NULL);
  /* Far enough after the first trial for wall_s to tell (timestamps are in ms). */
  g_usleep(60 * 1000);
  c->t_late = add_trial(db, c->gemm, c->cpu, c->tc, c->run2, "block(m=144).unroll(4)",
                        TS_DB_TRIAL_OK, 8e5, NULL);
  gint64 best = 0;
  g_assert_true(ts_db_refresh_best(db, c->gemm, c->cpu, c->tc, &best, &error));
  g_assert_cmpint(best, ==, c->t_fast);

  /* The same gemm with another toolchain (one trial), on the GPU (two), and an op this build
   * does not know. */
  add_trial(db, c->gemm, c->cpu, c->tc2, 0, "block(m=72)", TS_DB_TRIAL_OK, 1e6, NULL);
  /* A profiled GPU trial: its metrics carry the counters' figures as `tessera-tune profile`
   * stores them (the figure JSON of the profiler itself), L1 bytes not counted. */
  g_autoptr(GHashTable) counted = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
  const struct {
    const char *name;
    double v;
  } counts[] = {{"dram__bytes_read.sum", 4e5}, {"dram__bytes_write.sum", 1e5},
                {"lts__t_bytes.sum", 2e6}};
  for (guint i = 0; i < G_N_ELEMENTS(counts); i++)
    g_hash_table_insert(counted, (gpointer)counts[i].name, g_memdup2(&counts[i].v, sizeof(double)));
  g_autoptr(TsProfKernelMetrics) km = ts_prof_kernel_metrics_from_values(counted, NAN, NULL);
  g_autofree char *km_json = ts_prof_kernel_metrics_to_json(km);
  g_autofree char *gpu_metrics = g_strdup_printf("{\"gflops\": 335, \"gpu_metrics\": %s}", km_json);
  add_trial(db, c->gemm, c->gpu, c->tc, 0, "warps(4)", TS_DB_TRIAL_OK, 1e5, gpu_metrics);
  add_trial(db, c->gemm, c->gpu, c->tc, 0, "warps(8)", TS_DB_TRIAL_OK, 2e5, NULL);
  add_trial(db, c->mystery, c->cpu, c->tc, 0, "x(1)", TS_DB_TRIAL_OK, 100, NULL);
  add_trial(db, c->gemm_bf16, c->gpu, c->tc, 0, "stages(3)", TS_DB_TRIAL_OK, 1e5, NULL);

  TsDbEvent ev[] = {
      {.kind = "range", .name = "tessera: measure", .dur_ns = 1000, .lane = 7},
      {.kind = "alloc",
       .name = "alloc",
       .start_ns = 10,
       .bytes = 4096,
       .address = 0xabc,
       .lane = 7},
      {.kind = "kernel",
       .name = "ts_gemm_1",
       .start_ns = 100,
       .dur_ns = 800,
       .lane = 7,
       .depth = 1,
       .detail = "timed"},
      {.kind = "free", .name = "free", .start_ns = 950, .bytes = 4096, .address = 0xabc, .lane = 7},
  };
  TsDbProfile p = {.workload_id = c->gemm, .device_id = c->cpu, .toolchain_id = c->tc,
                   .trial_id = c->t_fast, .kind = "run", .schedule = "block(m=144)",
                   .t0_ns = 5000};
  g_assert_true(ts_db_add_profile(db, &p, ev, G_N_ELEMENTS(ev), &c->prof_cpu, &error));
  p.device_id = c->gpu, p.trial_id = 0;
  g_assert_true(ts_db_add_profile(db, &p, ev, 1, &c->prof_gpu, &error));
  g_assert_no_error(error);
}

static void
cache_teardown(Cache *c, gconstpointer data)
{
  ts_test_remove_tree(c->dir);
  g_free(c->dir);
  g_free(c->path);
}

static TsStudioDb *
open_cache(const Cache *c)
{
  g_autoptr(GError) error = NULL;
  TsStudioDb *db = ts_studio_db_open(c->path, &error);
  g_assert_no_error(error);
  g_assert_nonnull(db);
  return db;
}

static void
test_devices(Cache *c, gconstpointer data)
{
  g_autoptr(TsStudioDb) db = open_cache(c);
  g_assert_cmpstr(ts_studio_db_path(db), ==, c->path);
  g_assert_true(ts_db_is_read_only(ts_studio_db_handle(db)));
  GPtrArray *devices = ts_studio_db_devices(db);
  g_assert_cmpuint(devices->len, ==, 2);
  const TsStudioDevice *d0 = devices->pdata[0], *d1 = devices->pdata[1];
  /* By id, whatever order the keys listed them in. */
  g_assert_cmpint(d0->id, ==, c->gpu);
  g_assert_cmpint(d1->id, ==, c->cpu);
  g_assert_cmpstr(d0->backend, ==, "cuda");
  g_assert_cmpstr(d0->arch, ==, "sm_90a");
  g_assert_cmpuint(d0->compute_units, ==, 132);
  g_assert_null(d0->ceilings);
  g_assert_cmpstr(d1->name, ==, "test cpu");
  g_assert_nonnull(d1->ceilings);
  const TsProfCeiling *dram = ts_prof_ceilings_get(d1->ceilings, "dram");
  g_assert_nonnull(dram);
  g_assert_cmpfloat(dram->value, ==, DRAM_GBPS);
  g_assert_cmpfloat(ts_prof_ceilings_get(d1->ceilings, "f32")->value, ==, F32_GFLOPS);
}

static void
test_workloads(Cache *c, gconstpointer data)
{
  g_autoptr(TsStudioDb) db = open_cache(c);
  GPtrArray *ws = ts_studio_db_workloads(db);
  g_assert_cmpuint(ws->len, ==, 5);
  /* By workload, device, toolchain id: gemm on the GPU (device 1) first. */
  const TsStudioWorkload *gpu = ws->pdata[0], *cpu = ws->pdata[1], *cpu2 = ws->pdata[2];
  const TsStudioWorkload *mystery = ws->pdata[3];
  g_assert_cmpint(gpu->device_id, ==, c->gpu);
  g_assert_cmpint(cpu->device_id, ==, c->cpu);
  g_assert_cmpint(cpu->toolchain_id, ==, c->tc);
  g_assert_cmpint(cpu2->toolchain_id, ==, c->tc2);
  g_autofree char *key = g_strdup_printf("%" G_GINT64_FORMAT "/%" G_GINT64_FORMAT
                                         "/%" G_GINT64_FORMAT, c->gemm, c->cpu, c->tc);
  g_assert_cmpstr(cpu->key, ==, key);
  g_assert_cmpstr(cpu->label, ==, "gemm M=256,N=256,K=256 f32");
  g_assert_cmpstr(cpu->op, ==, "gemm");
  g_assert_cmpstr(cpu->shape, ==, GEMM_SHAPE);
  g_assert_cmpstr(cpu->dtype, ==, "f32");
  g_assert_cmpstr(cpu->toolchain, ==, "gcc 12.2.0 tessera-kgen-1");
  g_assert_cmpstr(cpu2->toolchain, ==, "gcc 13.1.0 tessera-kgen-1");
  g_assert_true(cpu->device == ts_studio_db_devices(db)->pdata[1]);
  g_assert_true(gpu->device == ts_studio_db_devices(db)->pdata[0]);
  g_assert_cmpuint(cpu->n_trials, ==, 5);
  g_assert_cmpuint(cpu->n_ok, ==, 4);
  g_assert_cmpfloat(cpu->flops, ==, 2.0 * 256 * 256 * 256);
  g_assert_cmpfloat(cpu->bytes, ==, 4.0 * 3 * 256 * 256);
  g_assert_cmpstr(mystery->label, ==, "mystery M=8 f32");
  g_assert_cmpstr(((TsStudioWorkload *)ws->pdata[4])->label, ==,
                  "gemm M=256,N=256,K=256 bf16 @accum(f32)");
  g_assert_true(isnan(mystery->flops));
  g_assert_true(isnan(mystery->bytes));
}

static void
test_find_workload(Cache *c, gconstpointer data)
{
  g_autoptr(TsStudioDb) db = open_cache(c);
  g_autoptr(GError) error = NULL;
  GPtrArray *ws = ts_studio_db_workloads(db);
  const TsStudioWorkload *gpu = ws->pdata[0], *cpu = ws->pdata[1], *cpu2 = ws->pdata[2];
  g_autofree char *w = g_strdup_printf("%" G_GINT64_FORMAT, c->gemm);
  g_autofree char *wd = g_strdup_printf("%s/%" G_GINT64_FORMAT, w, c->gpu);
  g_autofree char *wdt = g_strdup_printf("%s/%" G_GINT64_FORMAT "/%" G_GINT64_FORMAT, w, c->cpu,
                                         c->tc2);
  /* A bare workload is its key with the most trials. */
  g_assert_true(ts_studio_db_find_workload(db, w, &error) == cpu);
  g_assert_true(ts_studio_db_find_workload(db, wd, &error) == gpu);
  g_assert_true(ts_studio_db_find_workload(db, wdt, &error) == cpu2);
  g_assert_true(ts_studio_db_find_workload(db, cpu->key, &error) == cpu);
  g_assert_no_error(error);

  const char *bad[] = {"999", "1/999", "", "x", "1/2/3/4", "1//2", "-1", "1/0"};
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_assert_null(ts_studio_db_find_workload(db, bad[i], &error));
    g_assert_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_NOT_FOUND);
    g_assert_nonnull(strstr(error->message, bad[i]));
    g_clear_error(&error);
  }
}

static const TsStudioTrial *
trial_by_id(GPtrArray *trials, gint64 id)
{
  for (guint i = 0; i < trials->len; i++) {
    const TsStudioTrial *t = trials->pdata[i];
    if (t->id == id)
      return t;
  }
  g_assert_not_reached();
}

static void
test_trials(Cache *c, gconstpointer data)
{
  g_autoptr(TsStudioDb) db = open_cache(c);
  g_autoptr(GError) error = NULL;
  const TsStudioWorkload *w = ts_studio_db_workloads(db)->pdata[1];
  g_autoptr(GPtrArray) trials = ts_studio_db_trials(db, w, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(trials->len, ==, 5);
  const gint64 order[] = {c->t_plain, c->t_stored, c->t_failed, c->t_fast, c->t_late};
  for (guint i = 0; i < trials->len; i++) {
    const TsStudioTrial *t = trials->pdata[i];
    g_assert_cmpint(t->id, ==, order[i]);
    g_assert_cmpuint(t->index, ==, i);
    g_assert_cmpint(t->best, ==, t->id == c->t_fast);
    g_assert_nonnull(t->created_at);
    g_assert_cmpstr(t->strategy, ==, "random");
  }

  /* No roofline stored: computed from the op's counts and the device's ceilings. 256^3 f32
   * gemm: 42.7 FLOP/byte, so 1 GB/s of DRAM bounds it at 42.7 GFLOP/s under the 100 of f32. */
  const TsStudioTrial *plain = trials->pdata[0];
  g_assert_cmpint(plain->run_id, ==, c->run1);
  g_assert_cmpint(plain->status, ==, TS_DB_TRIAL_OK);
  g_assert_cmpstr(plain->schedule, ==, "block(m=72)");
  g_assert_cmpfloat(plain->wall_s, ==, 0);
  g_assert_cmpfloat(plain->median_ns, ==, 1e6);
  g_assert_cmpfloat(plain->min_ns, ==, 0.9e6);
  g_assert_cmpfloat(plain->max_ns, ==, 1.1e6);
  g_assert_cmpfloat(plain->predicted_ns, ==, 2e6);
  double flops = 2.0 * 256 * 256 * 256, bytes = 4.0 * 3 * 256 * 256;
  g_assert_cmpfloat_with_epsilon(plain->gflops, flops / 1e6, 1e-9);
  g_assert_cmpfloat_with_epsilon(plain->intensity, flops / bytes, 1e-9);
  g_assert_cmpstr(plain->bound, ==, "dram");
  g_assert_cmpfloat_with_epsilon(plain->bound_gflops, flops / bytes * DRAM_GBPS, 1e-9);
  g_assert_cmpfloat_with_epsilon(plain->fraction, (flops / 1e6) / (flops / bytes * DRAM_GBPS),
                                 1e-9);

  /* Stored with the trial: taken as it was measured. */
  const TsStudioTrial *stored = trials->pdata[1];
  g_assert_cmpfloat(stored->intensity, ==, 7.5);
  g_assert_cmpfloat(stored->gflops, ==, 12.5);
  g_assert_cmpfloat(stored->bound_gflops, ==, 50);
  g_assert_cmpfloat(stored->fraction, ==, 0.25);
  g_assert_cmpstr(stored->bound, ==, "f32");

  const TsStudioTrial *failed = trials->pdata[2];
  g_assert_cmpint(failed->status, ==, TS_DB_TRIAL_COMPILE_ERROR);
  g_assert_cmpstr(failed->error_text, ==, "no such knob");
  g_assert_true(isnan(failed->median_ns));
  g_assert_true(isnan(failed->gflops));
  g_assert_true(isnan(failed->fraction));
  g_assert_null(failed->bound);

  const TsStudioTrial *late = trial_by_id(trials, c->t_late);
  g_assert_cmpint(late->run_id, ==, c->run2);
  g_assert_cmpfloat(late->wall_s, >=, 0.05);
  g_assert_cmpfloat(late->wall_s, <, 30);
  for (guint i = 1; i < trials->len; i++)
    g_assert_cmpfloat(((TsStudioTrial *)trials->pdata[i])->wall_s, >=,
                      ((TsStudioTrial *)trials->pdata[i - 1])->wall_s);

  /* A device without ceilings: achieved rate and intensity, no bound. */
  const TsStudioWorkload *gpu = ts_studio_db_workloads(db)->pdata[0];
  g_autoptr(GPtrArray) gt = ts_studio_db_trials(db, gpu, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(gt->len, ==, 2);
  const TsStudioTrial *g0 = gt->pdata[0];
  g_assert_cmpfloat_with_epsilon(g0->gflops, flops / 1e5, 1e-9);
  g_assert_cmpfloat_with_epsilon(g0->intensity, flops / bytes, 1e-9);
  g_assert_true(isnan(g0->bound_gflops));
  g_assert_true(isnan(g0->fraction));
  g_assert_null(g0->bound);
  /* Its counted traffic per level: DRAM read + written, L2; L1 was not counted. */
  g_assert_cmpfloat(g0->level_bytes[TS_STUDIO_LEVEL_DRAM], ==, 5e5);
  g_assert_cmpfloat(g0->level_bytes[TS_STUDIO_LEVEL_L2], ==, 2e6);
  g_assert_true(isnan(g0->level_bytes[TS_STUDIO_LEVEL_L1]));
  g_assert_cmpfloat_with_epsilon(g0->level_intensity[TS_STUDIO_LEVEL_DRAM], flops / 5e5, 1e-9);
  g_assert_cmpfloat_with_epsilon(g0->level_intensity[TS_STUDIO_LEVEL_L2], flops / 2e6, 1e-9);
  g_assert_true(isnan(g0->level_intensity[TS_STUDIO_LEVEL_L1]));
  const TsStudioTrial *g1 = gt->pdata[1];
  for (guint l = 0; l < TS_STUDIO_N_LEVELS; l++)
    g_assert_true(isnan(g1->level_bytes[l]) && isnan(g1->level_intensity[l]));
  g_assert_cmpstr(ts_studio_level_name(TS_STUDIO_LEVEL_L2), ==, "l2");
  /* No best stored for this key. */
  g_assert_false(g0->best);
  g_assert_false(((TsStudioTrial *)gt->pdata[1])->best);

  /* An unknown op: nothing to compute a rate from. */
  const TsStudioWorkload *mystery = ts_studio_db_workloads(db)->pdata[3];
  g_autoptr(GPtrArray) mt = ts_studio_db_trials(db, mystery, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(mt->len, ==, 1);
  g_assert_true(isnan(((TsStudioTrial *)mt->pdata[0])->gflops));
}

static void
test_runs(Cache *c, gconstpointer data)
{
  g_autoptr(TsStudioDb) db = open_cache(c);
  g_autoptr(GError) error = NULL;
  const TsStudioWorkload *w = ts_studio_db_workloads(db)->pdata[1];
  g_autoptr(GPtrArray) runs = ts_studio_db_runs(db, w, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(runs->len, ==, 2);
  const TsStudioRun *r1 = runs->pdata[0], *r2 = runs->pdata[1];
  g_assert_cmpint(r1->id, ==, c->run1);
  g_assert_cmpstr(r1->strategy, ==, "random");
  g_assert_cmpstr(r1->budget, ==, "3 evals");
  g_assert_cmpstr(r1->status, ==, "done");
  g_assert_cmpuint(r1->seed, ==, 42);
  g_assert_nonnull(r1->started_at);
  g_assert_nonnull(r1->finished_at);
  g_assert_cmpint(r2->id, ==, c->run2);
  g_assert_cmpstr(r2->strategy, ==, "annealing");
  g_assert_cmpstr(r2->status, ==, "running");
  g_assert_null(r2->finished_at);
  /* Another key's runs are its own. */
  g_autoptr(GPtrArray) none = ts_studio_db_runs(db, ts_studio_db_workloads(db)->pdata[0], &error);
  g_assert_no_error(error);
  g_assert_cmpuint(none->len, ==, 0);
}

static void
test_profiles_events(Cache *c, gconstpointer data)
{
  g_autoptr(TsStudioDb) db = open_cache(c);
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) all = ts_studio_db_profiles(db, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(all->len, ==, 2);
  g_assert_cmpint(((TsDbProfile *)all->pdata[0])->id, ==, c->prof_gpu); /* newest first */
  g_assert_cmpint(((TsDbProfile *)all->pdata[1])->id, ==, c->prof_cpu);
  /* A workload's profiles are those of its key: the same gemm profiled on the GPU is not. */
  const TsStudioWorkload *w = ts_studio_db_workloads(db)->pdata[1];
  g_autoptr(GPtrArray) mine = ts_studio_db_profiles(db, w, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(mine->len, ==, 1);
  const TsDbProfile *p = mine->pdata[0];
  g_assert_cmpint(p->id, ==, c->prof_cpu);
  g_assert_cmpint(p->trial_id, ==, c->t_fast);
  g_assert_cmpuint(p->n_events, ==, 4);
  g_autoptr(GPtrArray) of_mystery =
    ts_studio_db_profiles(db, ts_studio_db_workloads(db)->pdata[3], &error);
  g_assert_cmpuint(of_mystery->len, ==, 0);

  g_autoptr(GArray) ev = ts_studio_db_events(db, c->prof_cpu, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(ev->len, ==, 4);
  const TsDbEvent *k = &g_array_index(ev, TsDbEvent, 2);
  g_assert_cmpstr(k->kind, ==, "kernel");
  g_assert_cmpstr(k->name, ==, "ts_gemm_1");
  g_assert_cmpint(k->start_ns, ==, 100);
  g_assert_cmpint(k->dur_ns, ==, 800);
  g_assert_cmpuint(k->depth, ==, 1);
  g_assert_cmpstr(k->detail, ==, "timed");
  g_assert_cmpuint(g_array_index(ev, TsDbEvent, 1).bytes, ==, 4096);
  g_assert_null(ts_studio_db_events(db, 999, &error));
  g_assert_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_NOT_FOUND);
}

/* ---- files that are not (usable) caches ---- */

static void
expect_open_error(const char *path, const char *needle)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsStudioDb) db = ts_studio_db_open(path, &error);
  g_assert_null(db);
  g_assert_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_OPEN);
  g_test_message("%s", error->message);
  g_assert_nonnull(strstr(error->message, path));
  g_assert_nonnull(strstr(error->message, needle));
}

static void
test_bad_files(Cache *c, gconstpointer data)
{
  g_autofree char *missing = g_build_filename(c->dir, "missing.db", NULL);
  expect_open_error(missing, "no such file");

  g_autofree char *garbage = g_build_filename(c->dir, "garbage.db", NULL);
  char junk[8192];
  for (guint i = 0; i < sizeof junk; i++)
    junk[i] = (char)(i * 7 + 3);
  g_assert_true(g_file_set_contents(garbage, junk, sizeof junk, NULL));
  expect_open_error(garbage, "not a schedule cache");

  /* A newer tessera's file (schema version in the header, big-endian at offset 60). */
  g_autofree char *bytes = NULL;
  gsize len = 0;
  g_assert_true(g_file_get_contents(c->path, &bytes, &len, NULL));
  g_assert_cmpuint(len, >=, 8192);
  g_autofree char *newer = g_build_filename(c->dir, "newer.db", NULL);
  char *copy = g_memdup2(bytes, len);
  copy[60] = copy[61] = copy[62] = 0, copy[63] = 99;
  g_assert_true(g_file_set_contents(newer, copy, (gssize)len, NULL));
  g_free(copy);
  expect_open_error(newer, "newer tessera");

  /* Pages past the schema scribbled over: the file opens, the integrity check refuses it. */
  g_autofree char *corrupt = g_build_filename(c->dir, "corrupt.db", NULL);
  copy = g_memdup2(bytes, len);
  for (gsize i = 4096; i < len; i++)
    copy[i] = (char)(i * 13 + 5);
  g_assert_true(g_file_set_contents(corrupt, copy, (gssize)len, NULL));
  g_free(copy);
  expect_open_error(corrupt, "corrupt");
  /* Only the last page: SQLite opens the file and lists its schema; the integrity check finds
   * the damage before a view would. */
  copy = g_memdup2(bytes, len);
  for (gsize i = len - 4096; i < len; i++)
    copy[i] = (char)(i * 13 + 5);
  g_assert_true(g_file_set_contents(corrupt, copy, (gssize)len, NULL));
  g_free(copy);
  expect_open_error(corrupt, "integrity check");
  expect_open_error(c->dir, "cannot be opened");
}

/* ---- Chrome traces ---- */

static char *
write_temp(const Cache *c, const char *name, const char *text)
{
  char *path = g_build_filename(c->dir, name, NULL);
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
  return path;
}

static gint
by_time(gconstpointer a, gconstpointer b)
{
  const TsDbEvent *x = a, *y = b;
  if (x->start_ns != y->start_ns)
    return x->start_ns < y->start_ns ? -1 : 1;
  if (x->dur_ns != y->dur_ns)
    return x->dur_ns > y->dur_ns ? -1 : 1;
  return (x->lane > y->lane) - (x->lane < y->lane);
}

/* How many of a loaded trace's first events are lane names and notes (the reader puts them
 * first, at time 0). */
static guint
n_meta(const GArray *ev)
{
  guint m = 0;
  while (m < ev->len && (strcmp(g_array_index(ev, TsDbEvent, m).kind, "lane") == 0 ||
                         strcmp(g_array_index(ev, TsDbEvent, m).kind, "note") == 0))
    m++;
  return m;
}

/* The text of the meta event of that kind and lane (any lane for a note), or NULL. */
static const char *
meta_text(const GArray *ev, const char *kind, guint32 lane)
{
  for (guint i = 0; i < n_meta(ev); i++) {
    const TsDbEvent *e = &g_array_index(ev, TsDbEvent, i);
    if (strcmp(e->kind, kind) == 0 && (strcmp(kind, "note") == 0 || e->lane == lane))
      return e->name;
  }
  return NULL;
}

static void
test_trace_roundtrip(Cache *c, gconstpointer data)
{
  const guint32 host = 4321, dev = TS_TRACE_DEVICE_LANE + 1;
  /* Odd nanoseconds, so a µs float that loses them shows. */
  TsDbEvent ev[] = {
      {.kind = "range", .name = "tessera: tune", .dur_ns = 9000001, .lane = host},
      {.kind = "compile",
       .name = "ts_gemm_7",
       .start_ns = 1001,
       .dur_ns = 2500003,
       .lane = host,
       .detail = "from cache"},
      {.kind = "range",
       .name = "tessera: trial 0",
       .start_ns = 1002,
       .dur_ns = 8000007,
       .lane = host,
       .depth = 1,
       .detail = "block(m=72)"},
      {.kind = "alloc", .name = "cuMemAlloc", .start_ns = 2600011, .bytes = 1 << 20, .lane = host},
      {.kind = "memcpy",
       .name = "HtoD",
       .start_ns = 2700013,
       .dur_ns = 40017,
       .bytes = 1 << 20,
       .lane = dev},
      {.kind = "range",
       .name = "tessera: measure",
       .start_ns = 2800019,
       .dur_ns = 5000023,
       .lane = host,
       .depth = 2},
      {.kind = "memset",
       .name = "memset",
       .start_ns = 2900029,
       .dur_ns = 1031,
       .bytes = 4096,
       .lane = dev},
      {.kind = "kernel",
       .name = "ts_gemm_7",
       .start_ns = 3000037,
       .dur_ns = 1234567,
       .lane = dev,
       .detail = "timed"},
      {.kind = "free", .name = "cuMemFree", .start_ns = 8500041, .bytes = 1 << 20, .lane = host},
      {.kind = "kernel",
       .name = "ts_gemm_7",
       .start_ns = 123456789012,
       .dur_ns = 1234567,
       .lane = dev},
  };
  g_autofree char *path = g_build_filename(c->dir, "trace.json", NULL);
  g_autoptr(GError) error = NULL;
  g_assert_true(ts_prof_chrome_trace_write(ev, G_N_ELEMENTS(ev), "tessera-tune", path, &error));
  g_assert_no_error(error);
  g_autoptr(GArray) back = ts_studio_trace_load(path, &error);
  g_assert_no_error(error);
  /* The lanes' names come back as the recorder labels them. */
  guint m = n_meta(back);
  g_assert_cmpuint(m, ==, 2);
  g_assert_cmpstr(meta_text(back, "lane", host), ==, "host thread 4321");
  g_assert_cmpstr(meta_text(back, "lane", dev), ==, "device stream 1");
  g_assert_cmpuint(back->len - m, ==, G_N_ELEMENTS(ev));
  qsort(ev, G_N_ELEMENTS(ev), sizeof ev[0], by_time);
  for (guint i = m; i < back->len; i++) {
    const TsDbEvent *a = &ev[i - m], *b = &g_array_index(back, TsDbEvent, i);
    g_assert_cmpstr(b->kind, ==, a->kind);
    g_assert_cmpstr(b->name, ==, a->name);
    for (guint j = m; j < i; j++) /* each text once in the array */
      if (strcmp(g_array_index(back, TsDbEvent, j).name, b->name) == 0)
        g_assert_true(g_array_index(back, TsDbEvent, j).name == b->name);
    g_assert_cmpuint(b->lane, ==, a->lane);
    g_assert_cmpint(llabs(b->start_ns - a->start_ns), <=, 1);
    g_assert_cmpint(llabs(b->dur_ns - a->dur_ns), <=, 1);
    g_assert_cmpuint(b->bytes, ==, a->bytes);
    g_assert_cmpuint(b->depth, ==, a->depth);
    g_assert_cmpstr(b->detail, ==, a->detail);
  }
}

static void
test_trace_forms(Cache *c, gconstpointer data)
{
  /* The bare array form, string tids (lanes numbered in order of appearance), "B"/"E" pairs
   * nested per thread, a category list, an unknown category, an allocation with its address
   * as hex text, a plain instant, and what the timeline skips: metadata and a memory counter
   * (the trace's own allocations are drawn instead). */
  g_autofree char *path = write_temp(c, "array.json",
    "[{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 7, \"tid\": \"main\","
    "  \"args\": {\"name\": \"main\"}},"
    " {\"ph\": \"B\", \"name\": \"outer\", \"cat\": \"range\", \"ts\": 10, \"pid\": 7,"
    "  \"tid\": \"main\"},"
    " {\"ph\": \"i\", \"name\": \"cudaMalloc\", \"cat\": \"alloc\", \"ts\": 10.25, \"pid\": 7,"
    "  \"tid\": \"gpu\", \"s\": \"t\", \"args\": {\"bytes\": 4096, \"address\": \"0x7f00\"}},"
    " {\"ph\": \"X\", \"name\": \"k\", \"cat\": \"cuda,Kernel\", \"ts\": 11.5, \"dur\": 2,"
    "  \"pid\": 7, \"tid\": \"gpu\"},"
    " {\"ph\": \"B\", \"name\": \"inner\", \"ts\": 12, \"pid\": 7, \"tid\": \"main\"},"
    " {\"ph\": \"C\", \"name\": \"memory\", \"ts\": 12.5, \"pid\": 7, \"args\": {\"v\": 1}},"
    " {\"ph\": \"i\", \"name\": \"mark\", \"ts\": 13, \"pid\": 7, \"tid\": \"main\"},"
    " {\"ph\": \"E\", \"ts\": 15, \"pid\": 7, \"tid\": \"main\"},"
    " {\"ph\": \"X\", \"name\": \"op\", \"cat\": \"cpu_op\", \"ts\": 16, \"dur\": 1,"
    "  \"pid\": 7, \"tid\": \"main\"},"
    " {\"ph\": \"E\", \"ts\": 20, \"pid\": 7, \"tid\": \"main\"}]");
  g_autoptr(GError) error = NULL;
  g_autoptr(GArray) ev = ts_studio_trace_load(path, &error);
  g_assert_no_error(error);
  struct {
    const char *kind, *name;
    gint64 start, dur;
    guint32 lane, depth;
    guint64 bytes, address;
  } want[] = {
    {"range", "outer", 0, 10000, 0, 0, 0, 0},
    {"alloc", "cudaMalloc", 250, 0, 1, 0, 4096, 0x7f00},
    {"kernel", "k", 1500, 2000, 1, 0, 0, 0},
    {"range", "inner", 2000, 3000, 0, 1, 0, 0},
    {"instant", "mark", 3000, 0, 0, 0, 0, 0},
    {"range", "op", 6000, 1000, 0, 1, 0, 0},
  };
  guint m = n_meta(ev);
  g_assert_cmpuint(m, ==, 1);
  g_assert_cmpstr(meta_text(ev, "lane", 0), ==, "main");
  g_assert_cmpuint(ev->len - m, ==, G_N_ELEMENTS(want));
  for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
    const TsDbEvent *e = &g_array_index(ev, TsDbEvent, m + i);
    g_assert_cmpstr(e->kind, ==, want[i].kind);
    g_assert_cmpstr(e->name, ==, want[i].name);
    g_assert_cmpint(e->start_ns, ==, want[i].start);
    g_assert_cmpint(e->dur_ns, ==, want[i].dur);
    g_assert_cmpuint(e->lane, ==, want[i].lane);
    g_assert_cmpuint(e->depth, ==, want[i].depth);
    g_assert_cmpuint(e->bytes, ==, want[i].bytes);
    g_assert_cmpuint(e->address, ==, want[i].address);
  }

  /* A trace cut short: the open range ends where the trace does. Numeric tids that two
   * processes share are two threads: lanes by order of appearance. */
  g_autofree char *cut = write_temp(c, "cut.json",
    "{\"traceEvents\": [{\"ph\": \"B\", \"name\": \"run\", \"ts\": 0, \"pid\": 1, \"tid\": 5},"
    " {\"ph\": \"X\", \"name\": \"k\", \"cat\": \"kernel\", \"ts\": 3, \"dur\": 4, \"pid\": 2,"
    "  \"tid\": 5}]}");
  g_autoptr(GArray) cev = ts_studio_trace_load(cut, &error);
  g_assert_no_error(error);
  guint cm = n_meta(cev);
  g_assert_cmpstr(meta_text(cev, "note", 0), ==, "1 range never closed: drawn to the end of the trace");
  g_assert_cmpuint(cev->len - cm, ==, 2);
  g_assert_cmpint(g_array_index(cev, TsDbEvent, cm).dur_ns, ==, 7000);
  g_assert_cmpuint(g_array_index(cev, TsDbEvent, cm).lane, ==, 0);
  g_assert_cmpuint(g_array_index(cev, TsDbEvent, cm + 1).lane, ==, 1);

  /* Epoch timestamps, as some writers use: relative to the first event, to the ns. */
  g_autofree char *epoch = write_temp(c, "epoch.json",
    "[{\"ph\": \"X\", \"name\": \"a\", \"cat\": \"kernel\", \"ts\": 1700000000000000.5,"
    "  \"dur\": 1.25, \"tid\": 3},"
    " {\"ph\": \"X\", \"name\": \"b\", \"cat\": \"memcpy\", \"ts\": 1700000000000010,"
    "  \"dur\": 2, \"tid\": 3, \"args\": {\"bytes\": 64}}]");
  g_autoptr(GArray) eev = ts_studio_trace_load(epoch, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(eev->len, ==, 2);
  g_assert_cmpint(g_array_index(eev, TsDbEvent, 0).start_ns, ==, 0);
  g_assert_cmpint(g_array_index(eev, TsDbEvent, 0).dur_ns, ==, 1250);
  g_assert_cmpint(g_array_index(eev, TsDbEvent, 1).start_ns, ==, 9500);
  g_assert_cmpstr(g_array_index(eev, TsDbEvent, 1).kind, ==, "memcpy");
  g_assert_cmpuint(g_array_index(eev, TsDbEvent, 1).bytes, ==, 64);
  g_assert_cmpuint(g_array_index(eev, TsDbEvent, 1).lane, ==, 3);

  g_autofree char *empty = write_temp(c, "empty.json", "{\"traceEvents\": []}");
  g_autoptr(GArray) none = ts_studio_trace_load(empty, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(none->len, ==, 0);
}

/* A capture cut short (no closing bracket, or its last event cut in half) keeps every whole
 * event before the cut, as Perfetto does; strings and nesting hide brackets from the scan. */
static void
test_trace_truncated(Cache *c, gconstpointer data)
{
  const struct {
    const char *text;
    guint n;
  } cases[] = {
    {"[{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, \"dur\": 1},"
     " {\"ph\": \"X\", \"name\": \"b]}\\\"\", \"ts\": 2, \"dur\": 1}", 2},
    {"{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, \"dur\": 1,"
     " \"args\": {\"x\": [[1], {\"y\": \"}\"}]}}, {\"ph\": \"X\", \"na", 1},
    {"{\"otherData\": {\"a\": [1, \"]\"]}, \"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\","
     " \"ts\": 1, \"dur\": 1}], \"displayTimeUnit\": \"ns\"}", 1},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *path = write_temp(c, "cut.json", cases[i].text);
    g_autoptr(GError) error = NULL;
    g_autoptr(GArray) ev = ts_studio_trace_load(path, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(ev->len, ==, cases[i].n);
  }
}

static void
test_trace_malformed(Cache *c, gconstpointer data)
{
  struct {
    const char *text, *needle;
  } cases[] = {
    {"{\"traceEvents\": [", "cut short before its first event"},
    {"[{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, \"dur\": 1}, {\"ph\": \"X\", \"name\": \"b\" 7}]",
     "traceEvents[1]:"},
    {"42", "expected a JSON object with traceEvents"},
    {"{\"events\": []}", "no traceEvents array"},
    {"{\"traceEvents\": {}}", "traceEvents is not an array"},
    {"[{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, \"dur\": 1}, 7]", "traceEvents[1]: expected an object"},
    {"[{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, \"dur\": 1},"
     " {\"ph\": \"X\", \"name\": \"b\", \"dur\": 1}]", "traceEvents[1]: missing ts"},
    {"[{\"ph\": \"X\", \"name\": \"a\", \"ts\": \"1\", \"dur\": 1}]", "traceEvents[0]: \"ts\" is not a number of microseconds"},
    {"[{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1e300, \"dur\": 1}]",
     "traceEvents[0]: \"ts\" is not a number of microseconds"},
    {"[{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1}]", "traceEvents[0]: missing dur"},
    {"[{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, \"dur\": -2}]", "traceEvents[0]: negative dur"},
    {"[{\"ph\": \"X\", \"ts\": 1, \"dur\": 2}]", "traceEvents[0]: missing name"},
    {"[{\"name\": \"a\", \"ts\": 1}]", "traceEvents[0]: missing ph"},
    {"[{\"ph\": \"B\", \"name\": \"a\", \"ts\": 5}, {\"ph\": \"E\", \"ts\": 2}]",
     "traceEvents[1]: \"E\" event before its \"B\""},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *path = write_temp(c, "bad.json", cases[i].text);
    g_autoptr(GError) error = NULL;
    g_autoptr(GArray) ev = ts_studio_trace_load(path, &error);
    g_assert_null(ev);
    g_assert_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_TRACE);
    g_test_message("%s", error->message);
    g_assert_nonnull(strstr(error->message, path));
    g_assert_nonnull(strstr(error->message, cases[i].needle));
  }
  g_autofree char *missing = g_build_filename(c->dir, "none.json", NULL);
  g_autoptr(GError) error = NULL;
  g_assert_null(ts_studio_trace_load(missing, &error));
  g_assert_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_TRACE);
  g_assert_nonnull(strstr(error->message, missing));
}

/* ---- lowering ---- */

static void
test_lower(Cache *c, gconstpointer data)
{
  g_autoptr(TsStudioDb) db = open_cache(c);
  g_autoptr(GError) error = NULL;
  const TsStudioWorkload *w = ts_studio_db_workloads(db)->pdata[1];
  const char *schedule = "block(m=72,n=2016,k=128).micro(m=6,n=16)";
  g_autoptr(TsStudioLowering) l = ts_studio_lower(w, schedule, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(l->target_language, ==, "C");

  /* The same texts tessera-tune lower prints for this point. */
  g_autoptr(TsOpInstance) inst = ts_op_instance_new("gemm", GEMM_SHAPE, "f32", &error);
  g_autoptr(TsSchedPoint) user = ts_sched_point_parse(schedule, &error);
  g_autoptr(TsSchedPoint) point = ts_op_instance_complete_point(inst, "cpu", user, &error);
  g_assert_no_error(error);
  g_autofree char *graph = ts_graph_to_string(ts_op_instance_graph(inst), ts_op_instance_shape(inst));
  g_assert_cmpstr(l->graph, ==, graph);
  g_autofree char *pt = ts_sched_point_to_string(point);
  g_assert_true(g_str_has_prefix(l->schedule, "space: "));
  g_assert_nonnull(strstr(l->schedule, " valid at M=256,N=256,K=256\n"));
  g_autofree char *point_line = g_strdup_printf("\npoint: %s\nhash:  %s\n", pt,
                                                ts_sched_point_hash(point));
  g_assert_true(g_str_has_suffix(l->schedule, point_line));
  /* Completed with the default knobs the schedule left out. */
  g_assert_nonnull(strstr(pt, "unroll(8)"));
  g_autoptr(TsTileKernel) kernel = ts_op_lower(inst, "cpu", point, &error);
  g_assert_no_error(error);
  g_autofree char *tile = ts_tile_kernel_to_string(kernel);
  g_assert_cmpstr(l->tile, ==, tile);
  g_autofree char *entry = NULL;
  g_autofree char *src = ts_op_emit(inst, "cpu", point, &entry, NULL, &error);
  g_assert_no_error(error);
  /* ... and the block sizes that GEMM's C source reads at run time. */
  g_autofree char *consts = ts_tile_kernel_launch_text(kernel);
  g_assert_nonnull(consts);
  g_autofree char *want = g_strdup_printf("%s\n/* launched with %s (the ints after the dims) */\n",
                                          src, consts);
  g_assert_cmpstr(l->target, ==, want);
  g_assert_nonnull(strstr(l->target, entry));

  /* A GPU key lowers for CUDA, with no GPU needed. */
  const TsStudioWorkload *bf16 = ts_studio_db_workloads(db)->pdata[4];
  g_autoptr(TsStudioLowering) lg = ts_studio_lower(bf16, "stages(3)", &error);
  g_assert_no_error(error);
  g_assert_cmpstr(lg->target_language, ==, "CUDA C");
  g_assert_nonnull(strstr(lg->tile, "tile.grid"));
  g_assert_nonnull(strstr(lg->target, "__global__"));
  /* The stages that cannot be produced say why: f32 gemm has no CUDA lowering. */
  const TsStudioWorkload *f32_gpu = ts_studio_db_workloads(db)->pdata[0];
  g_autoptr(TsStudioLowering) lf = ts_studio_lower(f32_gpu, "stages(3)", &error);
  g_assert_no_error(error);
  g_assert_cmpstr(lf->graph, ==, graph);
  g_assert_true(g_str_has_prefix(lf->tile, "gemm: "));
  g_assert_nonnull(strstr(lf->tile, "f32 is not supported on the GPU"));
  g_assert_cmpstr(lf->target, ==, lf->tile);

  const char *bad[] = {"block(m=", "bogus(3)", "block(m=[72,96])"};
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_assert_null(ts_studio_lower(w, bad[i], &error));
    g_assert_nonnull(error);
    g_test_message("%s", error->message);
    g_clear_error(&error);
  }
  g_assert_null(ts_studio_lower(ts_studio_db_workloads(db)->pdata[3], "x(1)", &error));
  g_assert_error(error, TS_OP_ERROR, TS_OP_ERROR_UNKNOWN_OP);
}

/* ---- diffs ---- */

/* Reassembles a and b from the diff: SAME and DEL lines are a, SAME and ADD lines b, each in
 * order and with its line numbers. */
static void
check_script(const char *a, const char *b, const TsStudioDiff *d)
{
  const GArray *lines = ts_studio_diff_lines(d);
  g_autoptr(GString) ra = g_string_new(NULL), rb = g_string_new(NULL);
  guint na = 0, nb = 0, changed = 0;
  for (guint i = 0; i < lines->len; i++) {
    const TsStudioDiffLine *l = &g_array_index(lines, TsStudioDiffLine, i);
    if (l->op != TS_STUDIO_DIFF_ADD) {
      g_assert_cmpuint(l->a_line, ==, ++na);
      g_string_append_len(ra, l->text, l->len);
      g_string_append_c(ra, '\n');
    } else {
      g_assert_cmpuint(l->a_line, ==, 0);
    }
    if (l->op != TS_STUDIO_DIFF_DEL) {
      g_assert_cmpuint(l->b_line, ==, ++nb);
      g_string_append_len(rb, l->text, l->len);
      g_string_append_c(rb, '\n');
    } else {
      g_assert_cmpuint(l->b_line, ==, 0);
    }
    changed += l->op != TS_STUDIO_DIFF_SAME;
  }
  g_assert_cmpuint(changed, ==, ts_studio_diff_n_changed(d));
  g_assert_cmpstr(ra->str, ==, a);
  g_assert_cmpstr(rb->str, ==, b);
}

static guint
lcs_length(const char *a, const char *b)
{
  g_auto(GStrv) la = g_strsplit(a, "\n", -1), lb = g_strsplit(b, "\n", -1);
  /* Texts end in "\n", so the last piece is empty; "" splits into none. */
  guint n = MAX(g_strv_length(la), 1) - 1, m = MAX(g_strv_length(lb), 1) - 1;
  g_autofree guint *t = g_new0(guint, (n + 1) * (m + 1));
  for (guint i = n; i-- > 0;)
    for (guint j = m; j-- > 0;)
      t[i * (m + 1) + j] = strcmp(la[i], lb[j]) == 0
                             ? t[(i + 1) * (m + 1) + j + 1] + 1
                             : MAX(t[(i + 1) * (m + 1) + j], t[i * (m + 1) + j + 1]);
  return t[0];
}

static void
test_diff(Cache *c, gconstpointer data)
{
  const char *a = "a\nb\nc\nd\ne\nf\ng\n", *b = "a\nc\nd\nX\ne\nf\ng\nh\n";
  g_autoptr(TsStudioDiff) d = ts_studio_diff(a, b);
  static const TsStudioDiffOp ops[] = {
    TS_STUDIO_DIFF_SAME, TS_STUDIO_DIFF_DEL,  TS_STUDIO_DIFF_SAME, TS_STUDIO_DIFF_SAME,
    TS_STUDIO_DIFF_ADD,  TS_STUDIO_DIFF_SAME, TS_STUDIO_DIFF_SAME, TS_STUDIO_DIFF_SAME,
    TS_STUDIO_DIFF_ADD,
  };
  const GArray *lines = ts_studio_diff_lines(d);
  g_assert_cmpuint(lines->len, ==, G_N_ELEMENTS(ops));
  for (guint i = 0; i < lines->len; i++)
    g_assert_cmpint(g_array_index(lines, TsStudioDiffLine, i).op, ==, ops[i]);
  const TsStudioDiffLine *x = &g_array_index(lines, TsStudioDiffLine, 4);
  g_assert_cmpuint(x->a_line, ==, 0);
  g_assert_cmpuint(x->b_line, ==, 4);
  g_assert_cmpint(strncmp(x->text, "X", x->len), ==, 0);
  g_assert_cmpuint(x->len, ==, 1);
  g_assert_cmpuint(ts_studio_diff_n_changed(d), ==, 3);
  check_script(a, b, d);

  /* Myers' own example: ABCABBA to CBABAC takes 5 edits. */
  g_autoptr(TsStudioDiff) m = ts_studio_diff("A\nB\nC\nA\nB\nB\nA\n", "C\nB\nA\nB\nA\nC\n");
  g_assert_cmpuint(ts_studio_diff_n_changed(m), ==, 5);
  check_script("A\nB\nC\nA\nB\nB\nA\n", "C\nB\nA\nB\nA\nC\n", m);

  g_autoptr(TsStudioDiff) same = ts_studio_diff(a, a);
  g_assert_cmpuint(ts_studio_diff_n_changed(same), ==, 0);
  g_assert_cmpuint(ts_studio_diff_lines(same)->len, ==, 7);
  g_autofree char *none = ts_studio_diff_to_unified(same, "a", "b", 3);
  g_assert_cmpstr(none, ==, "");
  g_autoptr(TsStudioDiff) empty = ts_studio_diff("", "");
  g_assert_cmpuint(ts_studio_diff_lines(empty)->len, ==, 0);
  g_autoptr(TsStudioDiff) from_empty = ts_studio_diff("", "x\ny\n");
  g_assert_cmpuint(ts_studio_diff_n_changed(from_empty), ==, 2);
  check_script("", "x\ny\n", from_empty);

  /* Random texts over a small alphabet: every script rebuilds both texts and is minimal
   * (n + m - 2 LCS edits). */
  GRand *rng = g_rand_new_with_seed(7);
  for (guint round = 0; round < 300; round++) {
    g_autoptr(GString) ra = g_string_new(NULL), rb = g_string_new(NULL);
    guint n = (guint)g_rand_int_range(rng, 0, 40), mm = (guint)g_rand_int_range(rng, 0, 40);
    for (guint i = 0; i < n; i++)
      g_string_append_printf(ra, "%c\n", 'a' + g_rand_int_range(rng, 0, 4));
    for (guint i = 0; i < mm; i++)
      g_string_append_printf(rb, "%c\n", 'a' + g_rand_int_range(rng, 0, 4));
    g_autoptr(TsStudioDiff) r = ts_studio_diff(ra->str, rb->str);
    check_script(ra->str, rb->str, r);
    g_assert_cmpuint(ts_studio_diff_n_changed(r), ==, n + mm - 2 * lcs_length(ra->str, rb->str));
  }
  g_rand_free(rng);

  /* Sizes of real target sources: every 50th of 20000 lines changed, and two texts with no line
   * in common (which the search never sees: such lines cannot be common). */
  g_autoptr(GString) big_a = g_string_new(NULL), big_b = g_string_new(NULL);
  g_autoptr(GString) other = g_string_new(NULL);
  for (guint i = 0; i < 20000; i++) {
    g_string_append_printf(big_a, "line %u\n", i);
    g_string_append_printf(big_b, i % 50 == 7 ? "changed %u\n" : "line %u\n", i);
    g_string_append_printf(other, "other %u\n", i);
  }
  g_autoptr(TsStudioDiff) big = ts_studio_diff(big_a->str, big_b->str);
  g_assert_cmpuint(ts_studio_diff_n_changed(big), ==, 2 * 400);
  check_script(big_a->str, big_b->str, big);
  g_autoptr(TsStudioDiff) unrelated = ts_studio_diff(big_a->str, other->str);
  g_assert_cmpuint(ts_studio_diff_n_changed(unrelated), ==, 40000);
  check_script(big_a->str, other->str, unrelated);
}

static void
test_diff_unified(Cache *c, gconstpointer data)
{
  const char *a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";
  const char *b = "1\ntwo\n3\n4\n5\n6\n7\n8\nnine\n10\neleven\n";
  g_autoptr(TsStudioDiff) d = ts_studio_diff(a, b);
  g_autofree char *u1 = ts_studio_diff_to_unified(d, "a/tile", "b/tile", 1);
  g_assert_cmpstr(u1, ==,
                  "--- a/tile\n+++ b/tile\n"
                  "@@ -1,3 +1,3 @@\n 1\n-2\n+two\n 3\n"
                  "@@ -8,3 +8,4 @@\n 8\n-9\n+nine\n 10\n+eleven\n");
  /* Six unchanged lines between the changes: with 3 lines of context, one hunk. */
  g_autofree char *u3 = ts_studio_diff_to_unified(d, "a", "b", 3);
  g_assert_cmpstr(u3, ==,
                  "--- a\n+++ b\n"
                  "@@ -1,10 +1,11 @@\n 1\n-2\n+two\n 3\n 4\n 5\n 6\n 7\n 8\n-9\n+nine\n 10\n"
                  "+eleven\n");
  g_autofree char *u0 = ts_studio_diff_to_unified(d, "a", "b", 0);
  g_assert_cmpstr(u0, ==,
                  "--- a\n+++ b\n"
                  "@@ -2 +2 @@\n-2\n+two\n@@ -9 +9 @@\n-9\n+nine\n@@ -10,0 +11 @@\n+eleven\n");

  g_autoptr(TsStudioDiff) eol = ts_studio_diff("x\ny", "x\nz\n");
  g_autofree char *ue = ts_studio_diff_to_unified(eol, "a", "b", 3);
  g_assert_cmpstr(ue, ==,
                  "--- a\n+++ b\n@@ -1,2 +1,2 @@\n x\n-y\n\\ No newline at end of file\n+z\n");
  /* Only the missing newline differs: the last line changes. */
  g_autoptr(TsStudioDiff) nl = ts_studio_diff("x\ny", "x\ny\n");
  g_assert_cmpuint(ts_studio_diff_n_changed(nl), ==, 2);
  g_autoptr(TsStudioDiff) all_new = ts_studio_diff("", "p\nq\n");
  g_autofree char *un = ts_studio_diff_to_unified(all_new, "a", "b", 3);
  g_assert_cmpstr(un, ==, "--- a\n+++ b\n@@ -0,0 +1,2 @@\n+p\n+q\n");
}

static char *
svg_of_view(TsStudioView *view)
{
  g_autoptr(TsCanvas) c = ts_canvas_new_svg(900, 600);
  ts_studio_view_draw(view, c, 900, 600);
  return ts_canvas_svg_finish(c);
}

/* The learned model's view: none stored says how to train one; a model trained on the cache's
 * CPU trials scores each trial, in-sample, and the plot ranks them. */
static void
test_learned(Cache *c, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  {
    g_autoptr(TsStudioDb) db = open_cache(c);
    const TsStudioWorkload *cpu = ts_studio_db_workloads(db)->pdata[1];
    g_autoptr(GPtrArray) trials = ts_studio_db_trials(db, cpu, &error);
    g_assert_no_error(error);
    g_assert_null(ts_studio_db_learned(db, cpu, trials, &error));
    g_assert_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_NO_MODEL);
    g_assert_nonnull(strstr(error->message, "tessera-tune model train"));
    g_autoptr(TsStudioView) none = ts_studio_learned_new(cpu, trials, NULL, error->message);
    g_autofree char *svg = svg_of_view(none);
    g_assert_nonnull(strstr(svg, "No learned cost model of kind xgb-rank/cpu"));
    g_assert_cmpuint(none->n_marks, ==, 0);
    g_clear_error(&error);
  }
  {
    g_autoptr(TsDb) raw = ts_db_open(c->path, TS_DB_OPEN_DEFAULT, &error);
    g_assert_no_error(error);
    g_autoptr(TsCostDataset) ds = ts_cost_dataset_from_db(raw, "cpu", NULL, &error);
    g_assert_no_error(error);
    g_autoptr(TsCostModel) m = ts_cost_model_train(ds, NULL, &error);
    g_assert_no_error(error);
    g_assert_cmpint(ts_cost_model_store(raw, m, "xgb-rank/cpu", ds, NULL, &error), >, 0);
  }
  g_autoptr(TsStudioDb) db = open_cache(c);
  const TsStudioWorkload *cpu = ts_studio_db_workloads(db)->pdata[1];
  g_autoptr(GPtrArray) trials = ts_studio_db_trials(db, cpu, &error);
  g_autoptr(TsStudioLearned) learned = ts_studio_db_learned(db, cpu, trials, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(learned->kind, ==, "xgb-rank/cpu");
  g_assert_cmpint(learned->model_id, >, 0);
  g_assert_true(learned->in_sample);
  g_assert_cmpuint(learned->scores->len, ==, trials->len);
  guint ok = 0;
  for (guint i = 0; i < trials->len; i++) {
    const TsStudioTrial *t = trials->pdata[i];
    if (t->status == TS_DB_TRIAL_OK) {
      g_assert_true(isfinite(g_array_index(learned->scores, double, i)));
      ok++;
    }
  }
  g_autoptr(TsStudioView) view = ts_studio_learned_new(cpu, trials, learned, NULL);
  g_assert_cmpuint(view->n_marks, ==, ok);
  g_autofree char *svg = svg_of_view(view);
  g_assert_nonnull(strstr(svg, "Learned model vs measured time: Kendall τ-b "));
  g_assert_nonnull(strstr(svg, "in-sample, not a prediction"));
  g_assert_cmpuint(view->n_drawn, ==, ok);
  g_autofree char *text = ts_studio_view_describe(view, c->t_fast);
  g_assert_nonnull(strstr(text, "learned model: rank "));
}

/* A collective's sizes as lines per algorithm: each size's fastest trial of each algorithm,
 * failed trials and other rank counts, dtypes and devices left out. */
static void
test_bandwidth(Cache *c, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  {
    g_autoptr(TsDb) db = ts_db_open(c->path, TS_DB_OPEN_DEFAULT, &error);
    g_assert_no_error(error);
    TsDbDevice d = {.backend = "mpi", .name = "cpu x 2 ranks", .arch = "1 host x 2 ranks",
                    .compute_units = 2};
    TsDbDevice d4 = {.backend = "mpi", .name = "cpu x 4 ranks", .arch = "1 host x 4 ranks",
                     .compute_units = 4};
    gint64 dev = ts_db_ensure_device(db, &d, &error), dev4 = ts_db_ensure_device(db, &d4, &error);
    gint64 tc = ts_db_ensure_toolchain(db, "Open MPI v4.1.4", "tessera-coll-1", &error);
    gint64 small = ts_db_ensure_workload(db, "all_reduce", "BYTES=1024,RANKS=2", "f32", &error);
    gint64 big = ts_db_ensure_workload(db, "all_reduce", "BYTES=1048576,RANKS=2", "f32", &error);
    gint64 half = ts_db_ensure_workload(db, "all_reduce", "BYTES=1048576,RANKS=2", "bf16", &error);
    gint64 four = ts_db_ensure_workload(db, "all_reduce", "BYTES=1024,RANKS=4", "f32", &error);
    g_assert_no_error(error);
    /* 1 MiB first: the lines still run smallest size first. */
    add_trial(db, big, dev, tc, 0, "dict(algorithm=\"ring\", segment=0)", TS_DB_TRIAL_OK, 2e5,
              NULL);
    add_trial(db, big, dev, tc, 0, "dict(algorithm=\"segmented_ring\", segment=4096)",
              TS_DB_TRIAL_OK, 9e5, NULL);
    add_trial(db, big, dev, tc, 0, "dict(algorithm=\"segmented_ring\", segment=65536)",
              TS_DB_TRIAL_OK, 3e5, NULL);
    add_trial(db, small, dev, tc, 0, "dict(algorithm=\"ring\", segment=0)", TS_DB_TRIAL_OK, 2e3,
              NULL);
    add_trial(db, small, dev, tc, 0, "dict(algorithm=\"default\", segment=0)",
              TS_DB_TRIAL_RUNTIME_ERROR, NAN, NULL);
    add_trial(db, half, dev, tc, 0, "dict(algorithm=\"default\", segment=0)", TS_DB_TRIAL_OK,
              1e5, NULL);
    add_trial(db, four, dev4, tc, 0, "dict(algorithm=\"bruck\")", TS_DB_TRIAL_OK, 1e3, NULL);
    gint64 gemm = ts_db_ensure_workload(db, "gemm", "M=64,N=64,K=64", "f32", &error);
    add_trial(db, gemm, dev, tc, 0, "block(m=8)", TS_DB_TRIAL_OK, 1e3, NULL);
  }
  g_autoptr(TsStudioDb) sdb = open_cache(c);
  const TsStudioWorkload *w = ts_studio_db_find_workload(sdb, "1", &error);
  g_assert_no_error(error);
  g_autoptr(GPtrArray) series = ts_studio_db_bandwidth(sdb, w, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(series->len, ==, 2);
  const TsStudioBandwidthSeries *ring = series->pdata[0], *seg = series->pdata[1];
  g_assert_cmpstr(ring->algorithm, ==, "ring");
  g_assert_cmpstr(seg->algorithm, ==, "segmented_ring");
  g_assert_cmpuint(ring->points->len, ==, 2);
  const TsStudioBandwidthPoint *p0 = &g_array_index(ring->points, TsStudioBandwidthPoint, 0);
  const TsStudioBandwidthPoint *p1 = &g_array_index(ring->points, TsStudioBandwidthPoint, 1);
  g_assert_cmpfloat(p0->bytes, ==, 1024);
  g_assert_cmpfloat(p1->bytes, ==, 1048576);
  /* 2 ranks: bus bandwidth is BYTES / time */
  g_assert_cmpfloat_with_epsilon(p1->busbw, 1048576 / 2e-4, 1);
  g_assert_cmpuint(seg->points->len, ==, 1);
  g_assert_cmpfloat(g_array_index(seg->points, TsStudioBandwidthPoint, 0).median_ns, ==, 3e5);

  g_autoptr(TsStudioView) view = ts_studio_bandwidth_new(w, series, NULL);
  g_autoptr(TsCanvas) canvas = ts_canvas_new_svg(800, 600);
  ts_studio_view_draw(view, canvas, 800, 600);
  g_assert_cmpuint(view->n_marks, ==, 3);
  g_assert_cmpuint(view->n_drawn, ==, 3);

  /* Not a collective: NOT_FOUND, and the view says so with nothing drawn. */
  const TsStudioWorkload *gemm = ts_studio_db_find_workload(sdb, "5", &error);
  g_assert_no_error(error);
  g_assert_null(ts_studio_db_bandwidth(sdb, gemm, &error));
  g_assert_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_NOT_FOUND);
  g_assert_nonnull(strstr(error->message, "not a collective"));
  g_autoptr(TsStudioView) none = ts_studio_bandwidth_new(gemm, NULL, error->message);
  ts_studio_view_draw(none, canvas, 800, 600);
  g_assert_cmpuint(none->n_marks, ==, 0);
}

/* A kernel file's op tuned into a cache: the studio registers it from the source the cache
 * keeps, so its workload has FLOP counts and its lowering view shows every stage, with no
 * file at hand. Without a stored source it is listed by its text and cannot be lowered. */
static void
test_lower_kernel(Cache *c, gconstpointer data)
{
  static const char src[] =
    "@kernel.autotune(space=dict(BN=[256, 512], vector=[4]))\n"
    "def studio_scale(x: Tensor[\"N\", f32], y: mut Tensor[\"N\", f32], s: f32 = 3.0):\n"
    "    i = tile.linear_id()\n"
    "    y[i] = s * x[i] - 1.0\n";
  g_autofree char *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, src, -1);
  g_autofree char *op = g_strdup_printf("kernel:studio_scale@%.8s", sum);
  g_autofree char *orphan = g_strdup("kernel:gone@0123abcd");
  g_assert_null(ts_op_lookup(op)); /* not registered by this process */
  g_autoptr(GError) error = NULL;
  {
    g_autoptr(TsDb) db = ts_db_open(c->path, TS_DB_OPEN_DEFAULT, &error);
    g_assert_no_error(error);
    TsDbDevice cpu = {.backend = "cpu", .name = "test cpu", .arch = "x86_64+avx2"};
    gint64 d = ts_db_ensure_device(db, &cpu, &error);
    gint64 t = ts_db_ensure_toolchain(db, "gcc 12.2.0", "tessera-kgen-1", &error);
    gint64 w = ts_db_ensure_workload(db, op, "N=1000", "f32", &error);
    gint64 w2 = ts_db_ensure_workload(db, orphan, "N=1000", "f32", &error);
    g_assert_no_error(error);
    add_trial(db, w, d, t, 0, "block(n=256).vector(4)", TS_DB_TRIAL_OK, 1e4, NULL);
    add_trial(db, w2, d, t, 0, "block(n=256).vector(4)", TS_DB_TRIAL_OK, 1e4, NULL);
    g_assert_true(ts_db_put_kernel_source(db, op, "scale.tsk", src, &error));
    g_assert_no_error(error);
  }
  g_autoptr(TsStudioDb) db = open_cache(c);
  const TsStudioWorkload *kw = NULL, *gone = NULL;
  for (guint i = 0; i < ts_studio_db_workloads(db)->len; i++) {
    const TsStudioWorkload *w = ts_studio_db_workloads(db)->pdata[i];
    if (g_strcmp0(w->op, op) == 0)
      kw = w;
    if (g_strcmp0(w->op, orphan) == 0)
      gone = w;
  }
  g_assert_nonnull(kw);
  g_assert_nonnull(gone);
  g_assert_cmpfloat(kw->flops, ==, 2000.0); /* two operations an element */
  g_assert_true(isnan(gone->flops));
  g_autoptr(TsStudioLowering) l = ts_studio_lower(kw, "block(n=512)", &error);
  g_assert_no_error(error);
  g_assert_nonnull(strstr(l->graph, "%Y = kernel:studio_scale@"));
  g_assert_nonnull(strstr(l->schedule, "point: block(n=512).vector(4).threads("));
  g_assert_nonnull(strstr(l->tile, "y = tile.map(((s * x) - 1.0f), j < min(BN, N - i0))"));
  g_assert_nonnull(strstr(l->target, "const float ts_v_ = ((s * x) - 1.0f);"));
  g_assert_null(ts_studio_lower(gone, "block(n=256)", &error));
  g_assert_error(error, TS_OP_ERROR, TS_OP_ERROR_UNKNOWN_OP);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
#define ADD(name, fn, cache)                                                                  \
  g_test_add("/studio-data/" name, Cache, cache, cache_setup, fn, cache_teardown)
  static const char with_cache[] = "cache";
  ADD("db/devices", test_devices, with_cache);
  ADD("db/workloads", test_workloads, with_cache);
  ADD("db/find-workload", test_find_workload, with_cache);
  ADD("db/trials", test_trials, with_cache);
  ADD("db/runs", test_runs, with_cache);
  ADD("db/profiles-events", test_profiles_events, with_cache);
  ADD("db/bad-files", test_bad_files, with_cache);
  ADD("db/bandwidth", test_bandwidth, NULL);
  ADD("trace/roundtrip", test_trace_roundtrip, NULL);
  ADD("trace/forms", test_trace_forms, NULL);
  ADD("trace/malformed", test_trace_malformed, NULL);
  ADD("trace/truncated", test_trace_truncated, NULL);
  ADD("lower", test_lower, with_cache);
  ADD("lower/kernel-file", test_lower_kernel, NULL);
  ADD("learned", test_learned, with_cache);
  ADD("diff/ops", test_diff, NULL);
  ADD("diff/unified", test_diff_unified, NULL);
  return g_test_run();
}
