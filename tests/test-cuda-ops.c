/* test-cuda-ops.c — the spine on the GPU: every GPU op × every point of its default CUDA space
 * × each 16-bit dtype, at odd shapes (edge tiles, tails, partial rows), lowered, compiled with
 * NVRTC for the device, run on fresh random inputs with poisoned outputs and verified against
 * the f64 reference.
 *
 * Built for the one hour a GPU is lent: every point is compiled first, on all cores; then each
 * runs in the tuner's candidate worker (`tessera-tune worker`) with a timeout, so a kernel that
 * hangs (an mbarrier that never completes: a datacenter GPU has no watchdog), crashes or loses
 * the context fails alone and the next point gets a fresh process. Every point is one TAP line,
 * every failure is listed, and a deadline stops the run in time to report (the points it left
 * are listed as not run). Needs an NVIDIA GPU: "1..0 # SKIP" with the reason elsewhere.
 *
 *   test-cuda-ops TESSERA_TUNE [--timeout S] [--deadline S] [--only TEXT] [--backend cpu]
 *
 * --backend cpu runs the same harness over the CPU spaces of the same workloads, so its
 * machinery (compile-first, the worker, the TAP lines, the deadline) is tested where CI runs.
 */
#include <glib.h>
#include <stdio.h>
#include <string.h>

#include "test-util.h"
#include "ts-op.h"
#include "ts-tune-worker.h"

typedef struct {
  const char *op;
  const char *shape;
  const char *dtype;
} GpuCase;

/* Odd sizes: partial CTA tiles in M and N, K and row lengths not multiples of the tile. gemm
 * needs K and N to be multiples of the 16-byte vector (8 elements). */
static const GpuCase cases[] = {
  {"gemm", "M=200,N=136,K=88", "bf16"},
  {"gemm", "M=257,N=320,K=520", "f16"},
  {"flash_attention", "B=1,H=3,S=77,D=64", "bf16"},
  {"flash_attention_causal", "B=1,H=3,S=77,D=64", "bf16"},
  {"flash_attention", "B=2,H=1,S=200,D=128", "f16"},
  {"flash_attention_causal", "B=2,H=1,S=200,D=128", "bf16"},
  {"saxpy", "N=100003", "bf16"},
  {"reduce_sum", "M=37,N=1000", "bf16"},
  {"softmax_safe", "M=37,N=1000", "bf16"},
  {"softmax_safe", "M=5,N=8200", "f16"},
  {"layernorm_safe", "M=37,N=1000", "bf16"},
  {"layernorm_safe", "M=5,N=8200", "f32"},
  {"rmsnorm_safe", "M=37,N=1000", "bf16"},
};

typedef struct {
  const GpuCase *c;
  TsOpInstance *inst; /* borrowed from the case's instance array */
  TsSchedPoint *point;
  char *text;
  char *compile_error; /* set when emitting or compiling failed */
} Point;

static void
point_free(Point *p)
{
  ts_sched_point_free(p->point);
  g_free(p->text);
  g_free(p->compile_error);
  g_free(p);
}

static TsBackend *backend;

static void
compile_point(gpointer data, gpointer user_data)
{
  Point *p = data;
  g_autoptr(GError) error = NULL;
  g_autofree char *entry = NULL;
  g_autofree char *source = ts_op_emit(p->inst, ts_backend_name(backend), p->point, &entry,
                                       NULL, &error);
  if (source != NULL) {
    TsSource src = {.lang = g_str_equal(ts_backend_name(backend), "cuda") ? TS_LANG_CUDA
                                                                           : TS_LANG_C,
                    .text = source,
                    .entry = entry};
    /* Filling the artifact cache is the point: the worker loads the module itself. */
    g_autoptr(TsModule) m = ts_backend_compile(backend, &src, &error);
    if (m != NULL)
      return;
  }
  p->compile_error = g_strdup(error->message);
}

/* One line: TAP descriptions end at a newline and '#' starts a directive. */
static char *
one_line(const char *text)
{
  char *s = g_strdup(text ? text : "");
  for (char *c = s; *c; c++)
    if (*c == '\n' || *c == '\r' || *c == '#')
      *c = *c == '#' ? '%' : ' ';
  if (strlen(s) > 400)
    strcpy(s + 397, "...");
  return s;
}

int
main(int argc, char **argv)
{
  double timeout_s = 15, deadline_s = 0;
  g_autofree char *only = NULL;
  g_autofree char *backend_name = NULL; /* GOption replaces a string without freeing it */
  GOptionEntry entries[] = {
    {"backend", 0, 0, G_OPTION_ARG_STRING, &backend_name, "cuda (default), or cpu to test the "
     "harness itself", "NAME"},
    {"timeout", 0, 0, G_OPTION_ARG_DOUBLE, &timeout_s, "Seconds a point may take (default 15)",
     "S"},
    {"deadline", 0, 0, G_OPTION_ARG_DOUBLE, &deadline_s,
     "Stop starting points after S seconds (default: none)", "S"},
    {"only", 0, 0, G_OPTION_ARG_STRING, &only, "Only the points whose description has TEXT",
     "TEXT"},
    G_OPTION_ENTRY_NULL,
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new("TESSERA_TUNE");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &error) || argc != 2 || !(timeout_s > 0) ||
      !(deadline_s >= 0)) {
    fprintf(stderr, "usage: test-cuda-ops TESSERA_TUNE [--timeout S] [--deadline S] "
            "[--only TEXT]%s%s\n", error ? ": " : "", error ? error->message : "");
    return 2;
  }
  if (backend_name == NULL)
    backend_name = g_strdup("cuda");
  const gint64 t0 = g_get_monotonic_time();
  backend = ts_backend_open(backend_name, &error);
  if (backend == NULL) {
    printf("1..0 # SKIP %s\n", error->message);
    return 0;
  }
  g_autofree char *dir = g_dir_make_tmp("ts-cuda-ops-XXXXXX", NULL);
  ts_backend_set_cache_dir(backend, dir);
  const TsDeviceInfo *dev = ts_backend_describe(backend);
  printf("# %s (%s), %u SMs\n", dev->name, dev->arch, dev->compute_units);

  /* Every point of every case. */
  g_autoptr(GPtrArray) instances = g_ptr_array_new_with_free_func((GDestroyNotify)ts_op_instance_free);
  g_autoptr(GPtrArray) points = g_ptr_array_new_with_free_func((GDestroyNotify)point_free);
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    const GpuCase *c = &cases[i];
    TsOpInstance *inst = ts_op_instance_new(c->op, c->shape, c->dtype, &error);
    TsSchedSpace *space =
      inst ? ts_op_instance_space(inst, backend_name, NULL, &error) : NULL;
    if (space == NULL) {
      printf("Bail out! %s %s %s: %s\n", c->op, c->shape, c->dtype, error->message);
      return 1;
    }
    g_ptr_array_add(instances, inst);
    g_autoptr(TsSchedSpace) owned = space;
    g_autoptr(TsSchedEnv) env = ts_op_instance_env(inst, dev);
    g_autoptr(TsSchedIter) it = ts_sched_iter_new(owned, env);
    TsSchedPoint *sp = NULL;
    while (ts_sched_iter_next(it, &sp, &error)) {
      Point *p = g_new0(Point, 1);
      p->c = c;
      p->inst = inst;
      p->point = sp;
      g_autofree char *pt = ts_sched_point_to_string(sp);
      p->text = g_strdup_printf("%s %s %s %s", c->op, c->dtype, c->shape, pt);
      if (only == NULL || strstr(p->text, only) != NULL)
        g_ptr_array_add(points, p);
      else
        point_free(p);
    }
    if (error != NULL) {
      printf("Bail out! %s %s %s: %s\n", c->op, c->shape, c->dtype, error->message);
      return 1;
    }
  }

  /* Compile everything first, on every core; the worker then finds each in the cache. */
  const gint64 tc = g_get_monotonic_time();
  GThreadPool *pool =
    g_thread_pool_new(compile_point, NULL, (int)MAX(g_get_num_processors(), 1), TRUE, NULL);
  for (guint i = 0; i < points->len; i++)
    g_thread_pool_push(pool, g_ptr_array_index(points, i), NULL);
  g_thread_pool_free(pool, FALSE, TRUE);
  printf("# %u points compiled in %.1f s on %u threads\n", points->len,
         (double)(g_get_monotonic_time() - tc) / 1e6, g_get_num_processors());

  printf("1..%u\n", points->len);
  fflush(stdout);
  g_autoptr(TsTuneWorker) worker = ts_tune_worker_new(argv[1]);
  guint passed = 0, failed = 0, not_run = 0;
  g_autoptr(GString) failures = g_string_new(NULL);
  for (guint i = 0; i < points->len; i++) {
    Point *p = g_ptr_array_index(points, i);
    const double elapsed = (double)(g_get_monotonic_time() - t0) / 1e6;
    g_autofree char *why = NULL;
    gboolean ok = FALSE;
    const gint64 tp = g_get_monotonic_time();
    if (deadline_s > 0 && elapsed + timeout_s > deadline_s) {
      why = g_strdup_printf("not run: the %.0f s deadline", deadline_s);
      not_run++;
    } else if (p->compile_error != NULL) {
      why = g_strdup_printf("compile_error: %s", p->compile_error);
    } else {
      g_autofree char *schedule = ts_sched_point_to_string(p->point);
      TsTuneRequest q = {
        .op = p->c->op,
        .shape = p->c->shape,
        .dtype = p->c->dtype,
        .schedule = schedule,
        .backend = backend_name,
        .cache_dir = dir,
      };
      ts_run_options_init(&q.options);
      q.options.seed = 7 + i;
      q.options.n_warmup = 0;
      q.options.min_samples = 1;
      q.options.max_samples = 2;
      q.options.target_ms = 1;
      g_autoptr(GError) werr = NULL;
      g_autoptr(TsTrialResult) r = ts_tune_worker_run(worker, &q, timeout_s, &werr);
      if (r == NULL)
        why = g_strdup_printf("refused: %s", werr->message);
      else if (r->status != TS_TRIAL_OK)
        why = g_strdup_printf("%s: %s", ts_trial_status_name(r->status), r->message);
      else if (r->resources.registers <= 0 && g_str_equal(backend_name, "cuda"))
        why = g_strdup_printf("ran, but no register count was reported (%d)",
                              r->resources.registers);
      else
        ok = TRUE;
    }
    g_autofree char *desc = one_line(p->text);
    if (ok) {
      passed++;
      printf("ok %u - %s (%.2f s)\n", i + 1, desc, (double)(g_get_monotonic_time() - tp) / 1e6);
    } else {
      failed += why && !g_str_has_prefix(why, "not run");
      g_autofree char *w = one_line(why);
      printf("not ok %u - %s: %s\n", i + 1, desc, w);
      g_string_append_printf(failures, "#   %s: %s\n", desc, w);
    }
    fflush(stdout);
  }
  printf("# %u passed, %u failed, %u not run, of %u points, in %.1f s\n", passed, failed,
         not_run, points->len, (double)(g_get_monotonic_time() - t0) / 1e6);
  if (failures->len)
    printf("# every point that did not pass:\n%s", failures->str);
  const gboolean all_passed = passed == points->len;
  ts_tune_worker_free(g_steal_pointer(&worker));
  g_ptr_array_set_size(points, 0);
  ts_backend_free(backend);
  ts_test_remove_tree(dir);
  return all_passed ? 0 : 1;
}
