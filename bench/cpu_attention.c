/* cpu_attention — benchmark (not a test): flash_attention and flash_attention_causal at their
 * best point of a sweep over the op's CPU space (or --space), through the whole spine (lower →
 * emit C → cc → verify → time), against PyTorch CPU's F.scaled_dot_product_attention (its fused
 * flash-attention kernel; bench/torch_ops.py, run by --python, default $TS_BENCH_PYTHON or
 * python3), measured side by side in one run; the PyTorch anchor is skipped with the reason
 * where PyTorch cannot be imported.
 *
 *   build/bench/cpu_attention [--shape B=1,H=8,S=1024,D=64] [--ops flash_attention,..]
 *                             [--dtypes bf16,f32] [--threads 1] [--rounds 9] [--space SPACE]
 *                             [--python PATH] [--no-torch]
 *
 * The sweep times every point once; its fastest few are timed again in interleaved rounds on
 * shared buffers and the best of those is ours (bench-pick.h). Then ours and PyTorch alternate
 * in rounds of a few calls each. Prints one row per (op, dtype): GFLOP/s of the median round of
 * each (the op's FLOPs: 4 B H S^2 D, half of it causal), the median of the rounds' ratios with
 * their range, and the winning point. */
#include <glib.h>
#include <math.h>
#include <stdio.h>

#include "bench-pick.h"
#include "bench-torch.h"
#include "ts-op.h"
#include "ts-sched.h"
#include "ts-tune-stats.h"

/* Rounds of `calls` launches of ours, then of PyTorch's, after one warm-up round. */
static gboolean
interleave(TsOpInstance *inst, TsBackend *backend, const TsSchedPoint *point, guint rounds,
           guint calls, double *ours_ns, BenchTorch *torch, double *torch_ns, GError **error)
{
  g_autoptr(TsModule) module = NULL;
  g_autoptr(TsOpTimer) timer = bench_point_timer(inst, backend, point, NULL, &module, error);
  if (timer == NULL)
    return FALSE;
  double s[64];
  calls = MIN(calls, G_N_ELEMENTS(s));
  gboolean ok = ts_op_timer_sample(timer, 1, calls, s, error);
  if (torch->proc)
    bench_torch_sample(torch, calls);
  for (guint r = 0; ok && r < rounds; r++) {
    ok = ts_op_timer_sample(timer, 0, calls, s, error);
    ours_ns[r] = ts_stats_median(s, calls);
    torch_ns[r] = torch->proc ? bench_torch_sample(torch, calls) : NAN;
  }
  return ok;
}

/* One line: ours and PyTorch's GFLOP/s, their ratio over the rounds, our point. */
static void
report(const char *op, const char *dtype, double flops, const double *ours, const double *tor,
       guint rounds, const char *point)
{
  double tv[64];
  guint nt = 0;
  for (guint r = 0; r < rounds; r++)
    if (!isnan(tor[r]))
      tv[nt++] = tor[r];
  g_autofree char *torch_rate = nt > 0 ? g_strdup_printf("%.1f", flops / ts_stats_median(tv, nt))
                                       : NULL;
  g_autofree char *vs = bench_ratio_text(tor, ours, rounds);
  g_print("%-22s %-5s %12.1f %12s %18s  %s\n", op, dtype, flops / ts_stats_median(ours, rounds),
          torch_rate ? torch_rate : "-", vs ? vs : "-", point);
}

int
main(int argc, char **argv)
{
  g_autofree char *shape = g_strdup("B=1,H=8,S=1024,D=64");
  g_autofree char *ops = g_strdup("flash_attention,flash_attention_causal");
  g_autofree char *dtypes = g_strdup("bf16,f32");
  g_autofree char *space_text = NULL, *python = NULL;
  gint threads = 1, rounds = 9;
  gboolean no_torch = FALSE;
  GOptionEntry entries[] = {
    {"shape", 0, 0, G_OPTION_ARG_STRING, &shape, "Shape (default B=1,H=8,S=1024,D=64)", "DIMS"},
    {"ops", 0, 0, G_OPTION_ARG_STRING, &ops,
     "Ops (default flash_attention,flash_attention_causal)", "OP,.."},
    {"dtypes", 0, 0, G_OPTION_ARG_STRING, &dtypes, "Storage dtypes (default bf16,f32)", "D,.."},
    {"threads", 0, 0, G_OPTION_ARG_INT, &threads, "Threads of ours and PyTorch's (default 1)",
     "T"},
    {"rounds", 0, 0, G_OPTION_ARG_INT, &rounds, "Interleaved rounds (default 9)", "R"},
    {"space", 0, 0, G_OPTION_ARG_STRING, &space_text,
     "Sweep this space instead of the op's CPU space", "SPACE"},
    {"python", 0, 0, G_OPTION_ARG_FILENAME, &python,
     "Python with PyTorch for the PyTorch anchor (default $TS_BENCH_PYTHON, else python3)", "PATH"},
    {"no-torch", 0, 0, G_OPTION_ARG_NONE, &no_torch, "Leave out the PyTorch anchor", NULL},
    G_OPTION_ENTRY_NULL,
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new("- our CPU flash attention vs PyTorch's");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
    g_printerr("cpu_attention: %s\n", error->message);
    return 2;
  }
  if (python == NULL)
    python = g_strdup(bench_torch_default_python());
  g_autoptr(TsBackend) backend = ts_backend_open("cpu", &error);
  if (backend == NULL) {
    g_printerr("cpu_attention: %s\n", error->message);
    return 3;
  }
  /* A space that leaves threads out would have the op's default thread count filled in. */
  if (space_text) {
    g_autoptr(TsSchedSpace) mine = ts_sched_space_parse(space_text, &error);
    if (mine == NULL) {
      g_printerr("cpu_attention: --space: %s\n", error->message);
      return 2;
    }
    if (ts_sched_space_knob_index(mine, "threads") < 0) {
      char *with = g_strdup_printf("%s.threads([%d])", space_text, threads);
      g_free(space_text);
      space_text = with;
    }
  }
  const TsDeviceInfo *dev = ts_backend_describe(backend);
  rounds = CLAMP(rounds, 1, 64);
  g_print("# cpu_attention: Tessera flash attention (best of a sweep of %s, %d thread%s) vs "
          "PyTorch CPU's scaled_dot_product_attention (%d thread%s)\n",
          space_text ? space_text : "each op's CPU space", threads, threads == 1 ? "" : "s",
          threads, threads == 1 ? "" : "s");
  g_print("# device: %s (%s), %u cores; toolchain %s\n", dev->name, dev->arch, dev->compute_units,
          dev->toolchain);
  g_print("# shape %s; %d interleaved rounds per row; vs torch = our GFLOP/s / PyTorch's, median "
          "of the rounds [lowest, highest]\n", shape, rounds);
  g_print("%-22s %-5s %12s %12s %18s  %s\n", "op", "dtype", "ours GFLOP/s", "torch GFLOP/s",
          "vs torch", "best schedule");
  g_auto(GStrv) ov = g_strsplit(ops, ",", -1);
  g_auto(GStrv) dv = g_strsplit(dtypes, ",", -1);
  for (guint oi = 0; ov[oi]; oi++)
    for (guint di = 0; dv[di]; di++) {
      g_autoptr(TsOpInstance) inst = ts_op_instance_new(ov[oi], shape, dv[di], &error);
      if (inst == NULL) {
        g_printerr("cpu_attention: %s\n", error->message);
        return 2;
      }
      g_autoptr(TsSchedSpace) space = ts_op_instance_space(inst, "cpu", space_text, &error);
      if (space == NULL) {
        g_printerr("cpu_attention: %s\n", error->message);
        return 2;
      }
      guint calls;
      g_autofree char *best_pt = bench_best_point(inst, backend, space, threads, 200,
                                                  "cpu_attention", &calls, NULL, &error);
      if (error) {
        g_printerr("cpu_attention: %s\n", error->message);
        return 3;
      }
      if (best_pt == NULL) {
        g_print("%-22s %-5s  (no point verified)\n", ov[oi], dv[di]);
        continue;
      }
      g_autoptr(TsSchedPoint) winner = ts_sched_point_parse(best_pt, &error);
      BenchTorch torch = {0};
      bench_torch_start(&torch, no_torch ? NULL : python, ov[oi], dv[di], shape, threads);
      double ours[64], tor[64];
      gboolean ok = winner != NULL && interleave(inst, backend, winner, (guint)rounds, calls,
                                                 ours, &torch, tor, &error);
      bench_torch_clear(&torch);
      if (!ok) {
        g_printerr("cpu_attention: %s\n", error->message);
        return 3;
      }
      report(ov[oi], dv[di], ts_op_instance_flops(inst), ours, tor, (guint)rounds, best_pt);
    }
  return 0;
}
