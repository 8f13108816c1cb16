/* ts-prof-ceiling.c — the ceiling microbenchmarks' common ground: which device gets which
 * (ts-prof-ceiling-cpu.c, ts-prof-ceiling-cuda.c), stretching a kernel to a measurable time,
 * and taking the fastest of interleaved runs. */
#include "ts-prof-private.h"

TsProfCeilings *
ts_prof_measure_ceilings(TsBackend *be, GError **error)
{
  const TsDeviceInfo *d = ts_backend_describe(be);
  if (g_strcmp0(d->backend, "cpu") == 0)
    return ts__prof_measure_cpu(be, error);
  if (g_strcmp0(d->backend, "cuda") == 0)
    return ts__prof_measure_cuda(be, error);
  g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNAVAILABLE,
              "no ceiling microbenchmarks for the %s backend (there are for cpu and cuda)",
              d->backend);
  return NULL;
}

/* The fastest of n launches (n <= 3). A one-core bench on the host is timed on its thread's
 * CPU clock: on a shared machine the scheduler takes the core away now and then, and wall time
 * would count that as the bench's own (a team's span has no such clock: its threads wait on
 * each other, so all-core benches keep wall time). */
static gboolean
time_min(TsBackend *be, TsProfBench *b, guint warmup, guint n, double *ns, GError **error)
{
  double s[3];
  TsCpuTime cpu[3];
  gboolean on_cpu_clock = b->one_core && ts_backend_runs_on_host(be);
  b->launch.buffers = b->bufs;
  b->launch.ints = b->ints;
  b->launch.n_ints = MAX(b->launch.n_ints, 1);
  if (!ts_backend_time_cpu(be, b->module, &b->launch, warmup, n, s, on_cpu_clock ? cpu : NULL,
                           error))
    return FALSE;
  for (guint i = 0; on_cpu_clock && i < n; i++)
    if (cpu[i].thread_ns > 0 && cpu[i].thread_ns < s[i])
      s[i] = cpu[i].thread_ns;
  *ns = s[0];
  for (guint i = 1; i < n; i++)
    *ns = MIN(*ns, s[i]);
  return TRUE;
}

gboolean
ts__prof_calibrate(TsBackend *be, TsProfBench *b, double target_ns, GError **error)
{
  b->ints[0] = MAX(b->ints[0], 1);
  double ns = 0, prev_ns = 0;
  gint64 growth = 0;
  /* Grow geometrically, then scale to the target in one step, once a launch is long and its
   * time grew with the work: a launch can be long for nothing but the start-up of its threads
   * (a worker waiting for a core a neighbour holds), and scaling by that would leave runs where
   * the start-up, not the work, is what gets timed. The fastest of three at each size, so one
   * stall does not decide it either. */
  for (int tries = 0;; tries++) {
    if (!time_min(be, b, tries == 0 ? 1 : 0, 3, &ns, error))
      return FALSE;
    gboolean grew = growth > 0 && ns >= prev_ns * (double)growth / 2;
    if ((ns >= target_ns / 8 && grew) || ns >= target_ns || tries == 12)
      break;
    growth = ns < target_ns / 256 ? 32 : 4;
    b->ints[0] *= growth;
    prev_ns = ns;
  }
  double scale = target_ns / MAX(ns, 1.0);
  b->ints[0] = MAX((gint64)((double)b->ints[0] * scale), 1);
  return TRUE;
}

gboolean
ts__prof_run_benches(TsBackend *be, TsProfBench *benches, guint n, guint rounds, GError **error)
{
  for (guint r = 0; r < rounds; r++)
    for (guint i = 0; i < n; i++) {
      double ns = 0;
      if (!time_min(be, &benches[i], r == 0 ? 1 : 0, 1, &ns, error))
        return FALSE;
      if (ns > 0 && (benches[i].best_ns == 0 || ns < benches[i].best_ns))
        benches[i].best_ns = ns;
    }
  return TRUE;
}

double
ts__prof_bench_rate(const TsProfBench *b)
{
  return b->best_ns > 0 ? b->work * (double)b->ints[0] / b->best_ns : 0;
}
