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

static gboolean
time_once(TsBackend *be, TsProfBench *b, guint warmup, double *ns, GError **error)
{
  b->launch.buffers = b->bufs;
  b->launch.ints = b->ints;
  b->launch.n_ints = MAX(b->launch.n_ints, 1);
  return ts_backend_time(be, b->module, &b->launch, warmup, 1, ns, error);
}

gboolean
ts__prof_calibrate(TsBackend *be, TsProfBench *b, double target_ns, GError **error)
{
  b->ints[0] = MAX(b->ints[0], 1);
  double ns = 0;
  /* Grow geometrically until a launch is long enough that the clock's resolution and the launch
   * overhead are small against it, then scale to the target in one step. */
  for (int tries = 0;; tries++) {
    if (!time_once(be, b, tries == 0 ? 1 : 0, &ns, error))
      return FALSE;
    if (ns >= target_ns / 8 || tries == 8)
      break;
    b->ints[0] *= ns < target_ns / 256 ? 32 : 4;
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
      if (!time_once(be, &benches[i], r == 0 ? 1 : 0, &ns, error))
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
