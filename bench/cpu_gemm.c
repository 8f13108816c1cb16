/* cpu_gemm — benchmark (not a test): our best f32 GEMM, found by a small sweep over its
 * schedule space through the whole spine (lower → emit C → cc → verify → time), against
 * OpenBLAS sgemm on the same inputs, measured side by side in one run.
 *
 *   build/bench/cpu_gemm [--sizes 512,1024,2048] [--threads 1,2] [--space '...']
 *
 * Prints one row per (size, threads): GFLOP/s of both, the ratio, and the winning schedule. */
#include <cblas.h>
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <time.h>

#include "ts-numerics.h"
#include "ts-op.h"


/* The sweep: the register tiles that fit AVX2's 16 registers, cache blocks around the L2
 * (512 KiB: KC*MC*4 bytes of packed A) and the L3; with AVX-512, 14x32 on 16-float vectors
 * (28 of the 32 zmm registers). Points the machine cannot run are left out by the op's space. */
static const char *DEFAULT_SPACE =
  "block(m=[72,144,168], n=[2016,4080], k=[256,384]).micro(m=[6,14], n=[16,32]).vector([8,16])"
  ".unroll([4,8]).where(vector == 8 && MR == 6 && NR == 16 && BM != 168"
  " || vector == 16 && MR == 14 && NR == 32 && BM == 168 && BN == 2016)";

static double
now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int
cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median time of OpenBLAS sgemm on the same shape, same sample count policy as ours. */
static double
openblas_median_ns(gint64 n, int threads, guint n_samples)
{
  gsize sz = (gsize)n * n;
  float *a = g_malloc(sz * 4), *b = g_malloc(sz * 4), *c = g_malloc(sz * 4);
  g_autoptr(GRand) rng = g_rand_new_with_seed(7);
  ts_numerics_fill_random(TS_DTYPE_F32, a, sz, rng, -1, 1);
  ts_numerics_fill_random(TS_DTYPE_F32, b, sz, rng, -1, 1);
  openblas_set_num_threads(threads);
  double *s = g_new(double, n_samples);
  for (guint i = 0; i < 2 + n_samples; i++) {
    double t0 = now_ns();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    if (i >= 2)
      s[i - 2] = now_ns() - t0;
  }
  qsort(s, n_samples, sizeof(double), cmp_double);
  double med = s[n_samples / 2];
  g_free(s);
  g_free(a);
  g_free(b);
  g_free(c);
  return med;
}

int
main(int argc, char **argv)
{
  g_autofree char *sizes = g_strdup("512,1024,2048");
  g_autofree char *threads = g_strdup("1,2");
  g_autofree char *space_text = g_strdup(DEFAULT_SPACE);
  GOptionEntry entries[] = {
    {"sizes", 0, 0, G_OPTION_ARG_STRING, &sizes, "Square sizes (default 512,1024,2048)", "N,.."},
    {"threads", 0, 0, G_OPTION_ARG_STRING, &threads, "Thread counts (default 1,2)", "T,.."},
    {"space", 0, 0, G_OPTION_ARG_STRING, &space_text, "Sweep space (threads added)", "SPACE"},
    G_OPTION_ENTRY_NULL,
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new("- our f32 GEMM vs OpenBLAS sgemm");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
    g_printerr("cpu_gemm: %s\n", error->message);
    return 2;
  }
  g_autoptr(TsBackend) backend = ts_backend_open("cpu", &error);
  if (backend == NULL) {
    g_printerr("cpu_gemm: %s\n", error->message);
    return 3;
  }
  const TsDeviceInfo *dev = ts_backend_describe(backend);
  /* Which kernel OpenBLAS runs matters as much as its version: OPENBLAS_CORETYPE in the
   * environment can force an older one than the machine's (say Haswell on AVX-512). */
  const char *forced = g_getenv("OPENBLAS_CORETYPE");
  g_print("# cpu_gemm: Tessera f32 GEMM (best of a sweep) vs%s cblas_sgemm on its %s kernel%s%s\n",
          OPENBLAS_VERSION, openblas_get_corename(), forced ? ", forced by OPENBLAS_CORETYPE=" : "",
          forced ? forced : " (detected)");
  g_print("# device: %s (%s), %u cores; toolchain %s\n", dev->name, dev->arch, dev->compute_units,
          dev->toolchain);
  g_print("# sweep space: %s\n", space_text);
  g_print("%6s %3s %12s %12s %7s  %s\n", "size", "thr", "ours GF/s", "oblas GF/s", "ratio",
          "best schedule");

  g_auto(GStrv) sv = g_strsplit(sizes, ",", -1);
  g_auto(GStrv) tv = g_strsplit(threads, ",", -1);
  for (guint si = 0; sv[si]; si++) {
    gint64 n = g_ascii_strtoll(sv[si], NULL, 10);
    g_autofree char *shape = g_strdup_printf("M=%" G_GINT64_FORMAT ",N=%" G_GINT64_FORMAT
                                             ",K=%" G_GINT64_FORMAT, n, n, n);
    g_autoptr(TsOpInstance) inst = ts_op_instance_new("gemm", shape, "f32", &error);
    if (inst == NULL) {
      g_printerr("cpu_gemm: %s\n", error->message);
      return 2;
    }
    for (guint ti = 0; tv[ti]; ti++) {
      int t = (int)g_ascii_strtoll(tv[ti], NULL, 10);
      g_autofree char *st = g_strdup_printf("%s.threads([%d])", space_text, t);
      g_autoptr(TsSchedSpace) space = ts_op_instance_space(inst, "cpu", st, &error);
      if (space == NULL) {
        g_printerr("cpu_gemm: %s\n", error->message);
        return 2;
      }
      g_autoptr(TsSchedEnv) env = ts_op_instance_env(inst, dev);
      g_autoptr(TsSchedIter) it = ts_sched_iter_new(space, env);
      TsSchedPoint *p = NULL;
      double best = INFINITY;
      guint best_samples = 5;
      g_autofree char *best_pt = NULL;
      TsRunOptions opt;
      ts_run_options_init(&opt);
      opt.target_ms = 400;
      while (ts_sched_iter_next(it, &p, &error)) {
        g_autoptr(TsSchedPoint) point = p;
        g_autoptr(TsTrialResult) r = ts_op_run(inst, backend, point, &opt, &error);
        if (r == NULL) {
          g_printerr("cpu_gemm: %s\n", error->message);
          return 3;
        }
        if (r->status != TS_TRIAL_OK) {
          g_printerr("cpu_gemm: skipping a candidate: %s\n", r->message);
          continue;
        }
        if (r->median_ns < best) {
          best = r->median_ns;
          best_samples = r->samples_ns->len;
          g_free(best_pt);
          best_pt = ts_sched_point_to_string(point);
        }
      }
      double ob = openblas_median_ns(n, t, best_samples);
      double flops = 2.0 * n * n * n;
      g_print("%6" G_GINT64_FORMAT " %3d %12.1f %12.1f %7.2f  %s\n", n, t, flops / best,
              flops / ob, ob / best, best_pt ? best_pt : "(none verified)");
    }
  }
  return 0;
}
