/* ts-cost-analytic.c — the analytic estimate: a roofline time corrected for what the point
 * does to it (docs/costmodel.md):
 *
 *   compute = work_flops / (roof x compute_eff x balance)      (CPU: one core's roof x cores)
 *   memory  = max(dram_bytes / (dram bandwidth x mem_eff), cache time)
 *   time    = max(compute, memory) + (1 - overlap) x min(compute, memory) + launch
 */
#include "ts-cost-private.h"

#include <math.h>

gboolean
ts_cost_analytic(const TsCostTarget *t, const TsSchedPoint *p, const TsModuleResources *res,
                 TsCostEstimate *est, GError **error)
{
  TsCostWork w;
  *est = (TsCostEstimate){.time_s = NAN, .bound = "compute"};
  if (!ts__cost_work(t, p, res, &w)) {
    g_set_error(error, TS_COST_ERROR, TS_COST_ERROR_NO_MODEL,
                "no analytic cost model for %s: %s", t->label,
                t->inst == NULL ? "the recorded kernel is not a Tessera op"
                                : "the point lacks the knobs its op's kernel is tiled by");
    return FALSE;
  }
  ts__cost_estimate(t, &w, est);
  return TRUE;
}

void
ts__cost_estimate(const TsCostTarget *t, const TsCostWork *wp, TsCostEstimate *est)
{
  const TsCostWork w = *wp;
  double roof = t->gpu ? ts__cost_roof(t, t->compute_roof, FALSE, NULL)
                       : ts__cost_roof(t, t->compute_roof, TRUE, NULL) * w.cores_used;
  double compute = w.work_flops / (roof * MAX(w.compute_eff, 1e-3) * MAX(w.balance, 1e-3));
  double dram = w.dram_bytes / (ts__cost_roof(t, "dram", FALSE, NULL) * MAX(w.mem_eff, 1e-3));
  double memory = MAX(dram, w.cache_s);
  double hi = MAX(compute, memory), lo = MIN(compute, memory);
  est->compute_s = compute;
  est->memory_s = memory;
  est->launch_s = w.launch_s;
  est->time_s = hi + (1 - w.overlap) * lo + w.launch_s;
  est->flops = w.flops;
  est->dram_bytes = w.dram_bytes;
  est->cache_bytes = w.cache_bytes;
  est->occupancy = t->gpu ? w.occupancy : w.cores_used / MAX(t->device.compute_units, 1);
  est->wave_efficiency = w.wave_eff;
  est->compute_efficiency = w.compute_eff;
  est->overlap = w.overlap;
  if (w.launch_s > hi)
    est->bound = "launch";
  else if (compute >= memory)
    est->bound = "compute";
  else
    est->bound = dram >= w.cache_s ? "dram" : "cache";
}
