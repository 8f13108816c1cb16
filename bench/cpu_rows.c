/* cpu_rows — benchmark (not a test): the row ops (softmax, layernorm, rmsnorm) at their best
 * point of a sweep over the op's CPU space, through the whole spine (lower → emit C → cc →
 * verify → time), against a copy of the same bytes (glibc's memcpy, the STREAM-copy class of
 * anchor: what any pass over X and Y must at least cost), measured side by side in one run.
 *
 *   build/bench/cpu_rows [--shape M=4096,N=4096] [--ops softmax_safe,..] [--dtypes f32,bf16,f16]
 *                        [--threads 1] [--rounds 9]
 *
 * The sweep picks our best point; then it and the copy alternate in rounds (a few calls of one,
 * then of the other), so both see the same machine from moment to moment. Prints one row per
 * (op, dtype): GB/s of the median round of each (the op's bytes: X read and Y written, as the
 * copy's), the median of the rounds' ratios with their range, and the winning point. */
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ts-numerics.h"
#include "ts-op.h"
#include "ts-tune-stats.h"

static double
now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* Median of n timed copies of `bytes` from src to dst. */
static double
copy_sample(const void *src, void *dst, gsize bytes, guint n)
{
  double s[64];
  n = MIN(n, G_N_ELEMENTS(s));
  for (guint i = 0; i < n; i++) {
    double t0 = now_ns();
    memcpy(dst, src, bytes);
    s[i] = now_ns() - t0;
  }
  return ts_stats_median(s, n);
}

/* Our best point over the op's space at `threads`, by the median of ts_op_run's samples. */
static char *
sweep(TsOpInstance *inst, TsBackend *backend, gint64 threads, guint *samples, GError **error)
{
  g_autoptr(TsSchedSpace) space = ts_op_instance_space(inst, "cpu", NULL, error);
  if (space == NULL)
    return NULL;
  g_autoptr(TsSchedEnv) env = ts_op_instance_env(inst, ts_backend_describe(backend));
  g_autoptr(TsSchedIter) it = ts_sched_iter_new(space, env);
  TsRunOptions opt;
  ts_run_options_init(&opt);
  opt.target_ms = 200;
  double best = INFINITY;
  char *best_pt = NULL;
  TsSchedPoint *p = NULL;
  while (ts_sched_iter_next(it, &p, error)) {
    g_autoptr(TsSchedPoint) point = p;
    if (ts_sched_point_get_int(point, "threads", 1) != threads)
      continue;
    g_autoptr(TsTrialResult) r = ts_op_run(inst, backend, point, &opt, error);
    if (r == NULL) {
      g_free(best_pt);
      return NULL;
    }
    if (r->status != TS_TRIAL_OK) {
      g_printerr("cpu_rows: skipping a candidate: %s\n", r->message);
      continue;
    }
    if (r->median_ns < best) {
      best = r->median_ns;
      *samples = r->samples_ns->len;
      g_free(best_pt);
      best_pt = ts_sched_point_to_string(point);
    }
  }
  if (error && *error) {
    g_free(best_pt);
    return NULL;
  }
  return best_pt;
}

/* Rounds of `calls` launches each, ours then the copy's, after one warm-up round of both. */
static gboolean
interleave(TsOpInstance *inst, TsBackend *backend, const TsSchedPoint *point, gsize bytes,
           guint rounds, guint calls, double *ours_ns, double *copy_ns, GError **error)
{
  g_autoptr(TsModule) module = ts_op_compile(inst, backend, point, error);
  if (module == NULL)
    return FALSE;
  g_autoptr(TsTrialResult) verified = NULL;
  g_autoptr(TsOpTimer) timer = ts_op_timer_new(inst, backend, module, NULL, &verified, error);
  if (timer == NULL) {
    if (error && *error == NULL)
      g_set_error(error, g_quark_from_static_string("cpu-rows"), 1, "the best point failed: %s",
                  verified ? verified->message : "?");
    return FALSE;
  }
  /* The copy's buffers: as large as X and Y, written first so no page is touched for the
   * first time while timed. */
  g_autofree char *x = g_malloc(bytes);
  g_autofree char *y = g_malloc(bytes);
  memset(x, 1, bytes);
  memset(y, 2, bytes);
  double s[64];
  calls = MIN(calls, G_N_ELEMENTS(s));
  gboolean ok = ts_op_timer_sample(timer, 1, calls, s, error);
  copy_sample(x, y, bytes, calls);
  for (guint r = 0; ok && r < rounds; r++) {
    ok = ts_op_timer_sample(timer, 0, calls, s, error);
    ours_ns[r] = ts_stats_median(s, calls);
    copy_ns[r] = copy_sample(x, y, bytes, calls);
  }
  return ok;
}

int
main(int argc, char **argv)
{
  g_autofree char *shape = g_strdup("M=4096,N=4096");
  g_autofree char *ops = g_strdup("softmax_safe,layernorm_safe,rmsnorm_safe");
  g_autofree char *dtypes = g_strdup("f32,bf16,f16");
  gint threads = 1, rounds = 9;
  GOptionEntry entries[] = {
    {"shape", 0, 0, G_OPTION_ARG_STRING, &shape, "Shape (default M=4096,N=4096)", "DIMS"},
    {"ops", 0, 0, G_OPTION_ARG_STRING, &ops, "Row ops (default softmax, layernorm, rmsnorm)",
     "OP,.."},
    {"dtypes", 0, 0, G_OPTION_ARG_STRING, &dtypes, "Storage dtypes (default f32,bf16,f16)",
     "D,.."},
    {"threads", 0, 0, G_OPTION_ARG_INT, &threads, "Threads of our kernel (default 1)", "T"},
    {"rounds", 0, 0, G_OPTION_ARG_INT, &rounds, "Interleaved rounds (default 9)", "R"},
    G_OPTION_ENTRY_NULL,
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new("- our row ops vs a copy of their bytes");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
    g_printerr("cpu_rows: %s\n", error->message);
    return 2;
  }
  g_autoptr(TsBackend) backend = ts_backend_open("cpu", &error);
  if (backend == NULL) {
    g_printerr("cpu_rows: %s\n", error->message);
    return 3;
  }
  const TsDeviceInfo *dev = ts_backend_describe(backend);
  rounds = CLAMP(rounds, 1, 64);
  g_print("# cpu_rows: Tessera row ops (best of a sweep of each op's CPU space, %d thread%s) vs "
          "memcpy of the same bytes (one thread)\n", threads, threads == 1 ? "" : "s");
  g_print("# device: %s (%s), %u cores; toolchain %s\n", dev->name, dev->arch, dev->compute_units,
          dev->toolchain);
  g_print("# shape %s; %d interleaved rounds per row; ratio = our GB/s / the copy's, median of "
          "the rounds [lowest, highest]\n", shape, rounds);
  g_print("%-15s %-5s %10s %10s %7s %15s  %s\n", "op", "dtype", "ours GB/s", "copy GB/s",
          "ratio", "range", "best schedule");
  g_auto(GStrv) ov = g_strsplit(ops, ",", -1);
  g_auto(GStrv) dv = g_strsplit(dtypes, ",", -1);
  for (guint oi = 0; ov[oi]; oi++)
    for (guint di = 0; dv[di]; di++) {
      g_autoptr(TsOpInstance) inst = ts_op_instance_new(ov[oi], shape, dv[di], &error);
      if (inst == NULL) {
        g_printerr("cpu_rows: %s\n", error->message);
        return 2;
      }
      guint samples = 5;
      g_autofree char *best_pt = sweep(inst, backend, threads, &samples, &error);
      if (best_pt == NULL) {
        if (error) {
          g_printerr("cpu_rows: %s\n", error->message);
          return 3;
        }
        g_print("%-15s %-5s  (no point verified)\n", ov[oi], dv[di]);
        continue;
      }
      g_autoptr(TsSchedPoint) winner = ts_sched_point_parse(best_pt, &error);
      /* X read and Y written, as the copy's (layernorm's gamma and beta, 2 N, left out). */
      const TsShape *sh = ts_op_instance_shape(inst);
      const double bytes = 2.0 * ts_shape_get(sh, "M") * ts_shape_get(sh, "N") *
                           (ts_dtype_bits(ts_op_instance_dtype(inst)->storage) / 8);
      double ours[64], copy[64], ratio[64];
      guint calls = MAX(3, MIN(samples, 15));
      if (winner == NULL || !interleave(inst, backend, winner, (gsize)(bytes / 2), (guint)rounds,
                                        calls, ours, copy, &error)) {
        g_printerr("cpu_rows: %s\n", error->message);
        return 3;
      }
      double lo = INFINITY, hi = 0;
      for (gint r = 0; r < rounds; r++) {
        ratio[r] = copy[r] / ours[r];
        lo = MIN(lo, ratio[r]);
        hi = MAX(hi, ratio[r]);
      }
      double mo = ts_stats_median(ours, rounds), mc = ts_stats_median(copy, rounds);
      g_autofree char *range = g_strdup_printf("[%.2f, %.2f]", lo, hi);
      g_print("%-15s %-5s %10.2f %10.2f %7.2f %15s  %s\n", ov[oi], dv[di], bytes / mo, bytes / mc,
              ts_stats_median(ratio, rounds), range, best_pt);
    }
  return 0;
}
