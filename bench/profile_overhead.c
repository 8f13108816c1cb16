/* profile_overhead — benchmark (not a test): kernel durations with and without the profiler
 * recording (timeline on the backend and the NVTX ranges, perf counters on the CPU), measured
 * side by side on the same compiled kernel and buffers, rounds interleaved so drift hits both.
 * The profiler must not distort what it measures: target |ratio - 1| <= 2%.
 *
 *   build/bench/profile_overhead [--backend auto|cpu|cuda] [--rounds 10] [--samples 20]
 *
 * Workloads: the GPU ops' default benchmark shapes on cuda; smaller f32 ones on the CPU. */
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ts-nvtx.h"
#include "ts-op.h"
#include "ts-prof-perf.h"

typedef struct {
  const char *op, *shape, *dtype;
} Workload;

static const Workload CPU_WORK[] = {
  {"gemm", "M=512,N=512,K=512", "f32"},
  {"softmax_safe", "M=1024,N=4096", "f32"},
  {"layernorm_safe", "M=1024,N=4096", "f32"},
};
static const Workload GPU_WORK[] = {
  {"gemm", "M=4096,N=4096,K=4096", "bf16"},
  {"flash_attention", "B=4,H=16,S=4096,D=128", "bf16"},
  {"flash_attention_causal", "B=4,H=16,S=4096,D=128", "bf16"},
  {"layernorm_safe", "M=16384,N=8192", "bf16"},
  {"softmax_safe", "M=16384,N=8192", "bf16"},
};

static int
cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double
median(GArray *a)
{
  qsort(a->data, a->len, sizeof(double), cmp_double);
  return a->len ? g_array_index(a, double, a->len / 2) : 0;
}

static gboolean
run_one(TsBackend *be, const Workload *w, guint rounds, guint samples)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsOpInstance) inst = ts_op_instance_new(w->op, w->shape, w->dtype, &error);
  g_autoptr(TsSchedPoint) point =
    inst ? ts_op_instance_complete_point(inst, ts_backend_name(be), NULL, &error) : NULL;
  g_autoptr(TsModule) m = point ? ts_op_compile(inst, be, point, &error) : NULL;
  TsRunOptions opt;
  ts_run_options_init(&opt);
  g_autoptr(TsTrialResult) vr = NULL;
  g_autoptr(TsOpTimer) t = m ? ts_op_timer_new(inst, be, m, &opt, &vr, &error) : NULL;
  if (t == NULL) {
    g_printerr("%s %s: %s\n", w->op, w->shape,
               error ? error->message : vr ? vr->message : "failed");
    return FALSE;
  }
  g_autoptr(GArray) plain = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) profiled = g_array_new(FALSE, FALSE, sizeof(double));
  g_autofree double *buf = g_new(double, samples);
  gboolean cpu = strcmp(ts_backend_describe(be)->backend, "cpu") == 0;
  if (!ts_op_timer_sample(t, 3, 0, NULL, &error))
    goto fail;
  for (guint r = 0; r < rounds; r++) {
    for (int mode = 0; mode < 2; mode++) {
      /* Alternate which goes first, so neither always follows the other's cache state. */
      gboolean prof = (mode == 0) == (r % 2 == 1);
      g_autoptr(TsTrace) trace = prof ? ts_trace_new() : NULL;
      g_autoptr(TsProfCounters) counters = prof && cpu ? ts_prof_counters_new() : NULL;
      if (prof) {
        ts_backend_set_trace(be, trace);
        ts_nvtx_set_trace(trace);
        ts_nvtx_push("tessera: measure");
      }
      if (counters)
        ts_prof_counters_begin(counters);
      gboolean ok = ts_op_timer_sample(t, 0, samples, buf, &error);
      if (counters)
        ts_prof_counters_end(counters);
      if (prof) {
        ts_nvtx_pop();
        ts_nvtx_set_trace(NULL);
        ts_backend_set_trace(be, NULL);
      }
      if (!ok)
        goto fail;
      g_array_append_vals(prof ? profiled : plain, buf, samples);
    }
  }
  double a = median(plain), b = median(profiled);
  printf("%-24s %-24s %-5s %12.4f %12.4f %+8.2f%%  %s\n", w->op, w->shape, w->dtype, a / 1e6,
         b / 1e6, 100 * (b / a - 1), fabs(b / a - 1) <= 0.02 ? "ok" : "over 2%");
  return TRUE;
fail:
  g_printerr("%s %s: %s\n", w->op, w->shape, error->message);
  return FALSE;
}

int
main(int argc, char **argv)
{
  g_autofree char *backend = NULL;
  gint rounds = 10, samples = 20;
  GOptionEntry entries[] = {
    {"backend", 'b', 0, G_OPTION_ARG_STRING, &backend, "cpu, cuda or auto (default)", "NAME"},
    {"rounds", 'r', 0, G_OPTION_ARG_INT, &rounds, "interleaved rounds per mode (10)", "N"},
    {"samples", 's', 0, G_OPTION_ARG_INT, &samples, "launches per round (20)", "N"},
    G_OPTION_ENTRY_NULL,
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new("- profiler overhead on kernel times");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &error) || rounds < 1 || samples < 1) {
    g_printerr("profile_overhead: %s\n", error ? error->message : "--rounds/--samples >= 1");
    return 2;
  }
  g_autoptr(TsBackend) be = ts_backend_open(backend ? backend : "auto", &error);
  if (be == NULL) {
    g_printerr("profile_overhead: %s\n", error->message);
    return 3;
  }
  const TsDeviceInfo *d = ts_backend_describe(be);
  gboolean gpu = strcmp(d->backend, "cuda") == 0;
  printf("profiler overhead on %s (%s), %d rounds x %d launches per mode; median kernel ms\n",
         d->backend, d->name, rounds, samples);
  printf("%-24s %-24s %-5s %12s %12s %9s\n", "op", "shape", "dtype", "plain", "profiled",
         "change");
  const Workload *w = gpu ? GPU_WORK : CPU_WORK;
  guint n = gpu ? G_N_ELEMENTS(GPU_WORK) : G_N_ELEMENTS(CPU_WORK);
  int status = 0;
  for (guint i = 0; i < n; i++)
    if (!run_one(be, &w[i], (guint)rounds, (guint)samples))
      status = 1;
  return status;
}
