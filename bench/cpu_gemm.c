/* cpu_gemm — benchmark (not a test): our best f32 GEMM, found by a small sweep over its
 * schedule space through the whole spine (lower → emit C → cc → verify → time), against
 * OpenBLAS sgemm on the same inputs, measured side by side in one run.
 *
 *   build/bench/cpu_gemm [--sizes 512,1024,2048] [--threads 1,2] [--space '...'] [--rounds 9]
 *
 * The sweep picks our best point; then it and OpenBLAS alternate in rounds (a few calls of one,
 * then of the other), so both see the same machine from moment to moment — a shared VM's
 * neighbours come and go. Prints one row per (size, threads): the GFLOP/s of the median round
 * of each, the median of the rounds' ratios with their range, and the winning schedule. */
#include <cblas.h>
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <time.h>

#include "ts-numerics.h"
#include "ts-op.h"
#include "ts-tune-stats.h"


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

typedef struct {
  gint64 n;
  float *a, *b, *c;
} Blas;

static void
blas_init(Blas *bl, gint64 n, int threads)
{
  gsize sz = (gsize)n * n;
  bl->n = n;
  bl->a = g_malloc(sz * 4);
  bl->b = g_malloc(sz * 4);
  bl->c = g_malloc(sz * 4);
  g_autoptr(GRand) rng = g_rand_new_with_seed(7);
  ts_numerics_fill_random(TS_DTYPE_F32, bl->a, sz, rng, -1, 1);
  ts_numerics_fill_random(TS_DTYPE_F32, bl->b, sz, rng, -1, 1);
  openblas_set_num_threads(threads);
}

static void
blas_clear(Blas *bl)
{
  g_free(bl->a);
  g_free(bl->b);
  g_free(bl->c);
}

/* Median of n timed OpenBLAS calls. */
static double
blas_sample(Blas *bl, guint n)
{
  double s[64];
  n = MIN(n, G_N_ELEMENTS(s));
  for (guint i = 0; i < n; i++) {
    double t0 = now_ns();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bl->n, bl->n, bl->n, 1.0f, bl->a,
                bl->n, bl->b, bl->n, 0.0f, bl->c, bl->n);
    s[i] = now_ns() - t0;
  }
  return ts_stats_median(s, n);
}

/* Rounds of `calls` launches each, ours then OpenBLAS's, after one warm-up round of both:
 * each side's median time per round in ours_ns / blas_ns. */
static gboolean
interleave(TsOpInstance *inst, TsBackend *backend, const TsSchedPoint *point, gint64 n,
           int threads, guint rounds, guint calls, double *ours_ns, double *blas_ns, GError **error)
{
  g_autoptr(TsModule) module = ts_op_compile(inst, backend, point, error);
  if (module == NULL)
    return FALSE;
  g_autoptr(TsTrialResult) verified = NULL;
  g_autoptr(TsOpTimer) timer = ts_op_timer_new(inst, backend, module, NULL, &verified, error);
  if (timer == NULL) {
    if (error && *error == NULL)
      g_set_error(error, g_quark_from_static_string("cpu-gemm"), 1, "the best point failed: %s",
                  verified ? verified->message : "?");
    return FALSE;
  }
  Blas bl;
  blas_init(&bl, n, threads);
  double s[64];
  calls = MIN(calls, G_N_ELEMENTS(s));
  gboolean ok = ts_op_timer_sample(timer, 1, calls, s, error);
  blas_sample(&bl, calls);
  for (guint r = 0; ok && r < rounds; r++) {
    ok = ts_op_timer_sample(timer, 0, calls, s, error);
    ours_ns[r] = ts_stats_median(s, calls);
    blas_ns[r] = blas_sample(&bl, calls);
  }
  blas_clear(&bl);
  return ok;
}

int
main(int argc, char **argv)
{
  g_autofree char *sizes = g_strdup("512,1024,2048");
  g_autofree char *threads = g_strdup("1,2");
  g_autofree char *space_text = g_strdup(DEFAULT_SPACE);
  gint rounds = 9;
  GOptionEntry entries[] = {
    {"rounds", 0, 0, G_OPTION_ARG_INT, &rounds, "Interleaved rounds (default 9)", "R"},
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
  rounds = CLAMP(rounds, 1, 64);
  g_print("# %d interleaved rounds per row; ratio = our speed / OpenBLAS's, median of the rounds "
          "[lowest, highest]\n", rounds);
  g_print("%6s %3s %12s %12s %7s %15s  %s\n", "size", "thr", "ours GF/s", "oblas GF/s", "ratio",
          "range", "best schedule");

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
      if (best_pt == NULL) {
        g_print("%6" G_GINT64_FORMAT " %3d  (no point verified)\n", n, t);
        continue;
      }
      g_autoptr(TsSchedPoint) winner = ts_sched_point_parse(best_pt, &error);
      double ours[64], blas[64], ratio[64];
      /* About as many calls a round as the sweep's samples took, at least 3. */
      guint calls = MAX(3, MIN(best_samples, 15));
      if (winner == NULL ||
          !interleave(inst, backend, winner, n, t, (guint)rounds, calls, ours, blas, &error)) {
        g_printerr("cpu_gemm: %s\n", error->message);
        return 3;
      }
      for (gint r = 0; r < rounds; r++)
        ratio[r] = blas[r] / ours[r];
      double flops = 2.0 * n * n * n;
      double lo = ratio[0], hi = ratio[0];
      for (gint r = 1; r < rounds; r++) {
        lo = MIN(lo, ratio[r]);
        hi = MAX(hi, ratio[r]);
      }
      double mo = ts_stats_median(ours, rounds), mb = ts_stats_median(blas, rounds),
             mr = ts_stats_median(ratio, rounds);
      g_autofree char *range = g_strdup_printf("[%.2f, %.2f]", lo, hi);
      g_print("%6" G_GINT64_FORMAT " %3d %12.1f %12.1f %7.2f %15s  %s\n", n, t, flops / mo,
              flops / mb, mr, range, best_pt);
    }
  }
  return 0;
}
