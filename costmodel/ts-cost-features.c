/* ts-cost-features.c — the feature vector of a point: the workload and device, the tile, the
 * work decomposition, the resources, the analytic estimate, then the raw knobs. Sizes enter as
 * log2 and throughputs as ratios where a tree should compare them across workloads: a split on
 * "waves" means the same at 512^3 and 8192^3, one on a byte count does not. */
#include "ts-cost-private.h"

#include <math.h>
#include <string.h>

enum {
  F_OP_LOG2_FLOPS, F_OP_LOG2_BYTES, F_OP_INTENSITY, F_OP_TENSOR, F_OP_ELEM_BYTES,
  F_DEV_GPU, F_DEV_UNITS, F_DEV_VECTOR_BITS, F_DEV_LOG2_L1, F_DEV_LOG2_L2, F_DEV_LOG2_L3,
  F_DEV_SMEM_KIB, F_CEIL_COMPUTE, F_CEIL_DRAM, F_CEIL_MEASURED,
  F_TILE_M, F_TILE_N, F_TILE_K, F_TILE_MICRO_M, F_TILE_MICRO_N, F_TILE_VECTOR, F_TILE_UNROLL,
  F_TILE_THREADS, F_TILE_WARPS, F_TILE_STAGES, F_TILE_SWIZZLE, F_TILE_WGMMA, F_TILE_TMA, F_TILE_RASTER,
  F_WORK_LOG2_UNITS, F_WORK_WORKERS, F_WORK_WAVES, F_WORK_WAVE_EFF, F_WORK_BALANCE,
  F_WORK_PAD_WASTE, F_WORK_TILE_INTENSITY, F_WORK_LOG2_DRAM, F_WORK_LOG2_CACHE, F_WORK_DRAM_REUSE,
  F_WORK_CACHE_REUSE,
  F_RES_REGS, F_RES_SMEM_KIB, F_RES_BLOCKS_PER_SM, F_RES_OCCUPANCY, F_RES_SPILL, F_RES_ACC,
  F_EST_LOG2_TIME, F_EST_REL_TIME, F_EST_COMPUTE_FRAC, F_EST_MEMORY_FRAC, F_EST_COMPUTE_EFF,
  F_EST_MEM_EFF, F_EST_OVERLAP, F_EST_LAUNCH_FRAC, F_EST_BOUND,
  N_DERIVED
};

const char *const ts__cost_derived_names[] = {
  "op.log2_flops", "op.log2_bytes", "op.intensity", "op.tensor", "op.elem_bytes",
  "dev.gpu", "dev.units", "dev.vector_bits", "dev.log2_l1", "dev.log2_l2", "dev.log2_l3",
  "dev.smem_kib", "ceil.compute_gflops", "ceil.dram_gbps", "ceil.measured",
  "tile.m", "tile.n", "tile.k", "tile.micro_m", "tile.micro_n", "tile.vector", "tile.unroll",
  "tile.threads", "tile.warps", "tile.stages", "tile.swizzle", "tile.wgmma", "tile.tma", "tile.raster",
  "work.log2_units", "work.workers", "work.waves", "work.wave_eff", "work.balance",
  "work.pad_waste", "work.tile_intensity", "work.log2_dram_bytes", "work.log2_cache_bytes",
  "work.dram_reuse", "work.cache_reuse",
  "res.regs", "res.smem_kib", "res.blocks_per_sm", "res.occupancy", "res.spill_bytes",
  "res.accumulators",
  "est.log2_time", "est.rel_time", "est.compute_frac", "est.memory_frac", "est.compute_eff",
  "est.mem_eff", "est.overlap", "est.launch_frac", "est.bound",
};
G_STATIC_ASSERT(G_N_ELEMENTS(ts__cost_derived_names) == N_DERIVED);

guint
ts__cost_n_derived(void)
{
  return N_DERIVED;
}

static float
log2_or_nan(double x)
{
  return x > 0 ? (float)log2(x) : NAN;
}

static double
bound_code(const char *bound)
{
  static const char *const codes[] = {"compute", "dram", "cache", "launch"};
  for (guint i = 0; i < G_N_ELEMENTS(codes); i++)
    if (strcmp(bound, codes[i]) == 0)
      return i;
  return NAN;
}

/* A knob's number: the integer, or a string's index in the space's list of values for it. */
static float
knob_value(const TsCostTarget *t, const TsSchedPoint *p, const char *name)
{
  if (!ts_sched_point_has(p, name))
    return NAN;
  for (guint i = 0; i < ts_sched_point_n_knobs(p); i++) {
    if (strcmp(ts_sched_point_knob_name(p, i), name) != 0)
      continue;
    TsSchedValue v = ts_sched_point_knob_value(p, i);
    if (v.kind == TS_SCHED_INT)
      return (float)v.i;
    int k = t->space ? ts_sched_space_knob_index(t->space, name) : -1;
    for (guint j = 0; k >= 0 && j < ts_sched_space_n_values(t->space, (guint)k); j++) {
      TsSchedValue s = ts_sched_space_value(t->space, (guint)k, j);
      if (s.kind == TS_SCHED_STR && (s.s == v.s || strcmp(s.s, v.s) == 0))
        return (float)j;
    }
    return NAN;
  }
  return NAN;
}

static void
workload_features(const TsCostTarget *t, float *f)
{
  double flops = ts_op_instance_flops(t->inst), bytes = ts_op_instance_bytes(t->inst);
  gboolean measured = FALSE;
  double peak = ts__cost_roof(t, t->compute_roof, FALSE, &measured);
  double dram = ts__cost_roof(t, "dram", FALSE, NULL);
  f[F_OP_LOG2_FLOPS] = log2_or_nan(flops);
  f[F_OP_LOG2_BYTES] = log2_or_nan(bytes);
  f[F_OP_INTENSITY] = bytes > 0 ? (float)(flops / bytes) : NAN;
  f[F_OP_TENSOR] = ts_op_tensor_math(ts_op_instance_op(t->inst));
  f[F_OP_ELEM_BYTES] = t->elem_bytes;
  f[F_DEV_GPU] = t->gpu;
  f[F_DEV_UNITS] = t->device.compute_units;
  f[F_DEV_VECTOR_BITS] = t->gpu ? NAN : t->device.vector_bits;
  f[F_DEV_LOG2_L1] = log2_or_nan(t->device.l1_bytes);
  f[F_DEV_LOG2_L2] = log2_or_nan(t->device.l2_bytes);
  f[F_DEV_LOG2_L3] = log2_or_nan(t->device.l3_bytes);
  f[F_DEV_SMEM_KIB] = t->gpu ? t->device.smem_per_block / 1024.0f : NAN;
  f[F_CEIL_COMPUTE] = measured ? (float)(peak / 1e9) : NAN;
  f[F_CEIL_DRAM] = measured ? (float)(dram / 1e9) : NAN;
  f[F_CEIL_MEASURED] = measured;
}

static void
work_features(const TsCostTarget *t, const TsCostWork *w, float *f)
{
  double bytes = ts_op_instance_bytes(t->inst);
  f[F_TILE_M] = w->tile_m;
  f[F_TILE_N] = w->tile_n;
  f[F_TILE_K] = w->tile_k;
  f[F_TILE_MICRO_M] = w->micro_m;
  f[F_TILE_MICRO_N] = w->micro_n;
  f[F_TILE_VECTOR] = w->vector;
  f[F_TILE_UNROLL] = w->unroll;
  f[F_TILE_THREADS] = w->threads;
  f[F_TILE_WARPS] = w->warps;
  f[F_TILE_STAGES] = w->stages;
  f[F_TILE_SWIZZLE] = w->swizzle;
  f[F_TILE_WGMMA] = w->wgmma;
  f[F_TILE_TMA] = w->tma;
  f[F_TILE_RASTER] = w->raster;
  f[F_WORK_LOG2_UNITS] = log2_or_nan(w->units);
  f[F_WORK_WORKERS] = w->workers;
  f[F_WORK_WAVES] = w->waves;
  f[F_WORK_WAVE_EFF] = w->wave_eff;
  f[F_WORK_BALANCE] = w->balance;
  f[F_WORK_PAD_WASTE] = w->pad_waste;
  f[F_WORK_TILE_INTENSITY] = w->tile_intensity;
  f[F_WORK_LOG2_DRAM] = log2_or_nan(w->dram_bytes);
  f[F_WORK_LOG2_CACHE] = log2_or_nan(w->cache_bytes);
  f[F_WORK_DRAM_REUSE] = bytes > 0 ? (float)(w->dram_bytes / bytes) : NAN;
  f[F_WORK_CACHE_REUSE] = bytes > 0 ? (float)(w->cache_bytes / bytes) : NAN;
  f[F_RES_REGS] = w->regs;
  f[F_RES_SMEM_KIB] = w->smem / 1024;
  f[F_RES_BLOCKS_PER_SM] = w->blocks_per_sm;
  f[F_RES_OCCUPANCY] = w->occupancy;
  f[F_RES_SPILL] = w->spill_bytes;
  f[F_RES_ACC] = w->accumulators;
}

static void
estimate_features(const TsCostTarget *t, const TsCostEstimate *e, const TsCostWork *w, float *f)
{
  /* The ideal: the plain roofline of the op's own FLOPs and compulsory bytes. Its ratio to the
   * estimate is comparable across workloads where the estimate itself is not. */
  double roof = ts__cost_roof(t, t->compute_roof, FALSE, NULL);
  double ideal = MAX(e->flops / roof,
                     ts_op_instance_bytes(t->inst) / ts__cost_roof(t, "dram", FALSE, NULL));
  f[F_EST_LOG2_TIME] = log2_or_nan(e->time_s);
  f[F_EST_REL_TIME] = ideal > 0 ? (float)(e->time_s / ideal) : NAN;
  f[F_EST_COMPUTE_FRAC] = (float)(e->compute_s / e->time_s);
  f[F_EST_MEMORY_FRAC] = (float)(e->memory_s / e->time_s);
  f[F_EST_COMPUTE_EFF] = e->compute_efficiency;
  f[F_EST_MEM_EFF] = w->mem_eff;
  f[F_EST_OVERLAP] = e->overlap;
  f[F_EST_LAUNCH_FRAC] = (float)(e->launch_s / e->time_s);
  f[F_EST_BOUND] = bound_code(e->bound);
}

void
ts_cost_features(const TsCostTarget *t, const TsSchedPoint *p, const TsModuleResources *res,
                 float *out)
{
  guint n = ts_cost_n_features(t);
  for (guint i = 0; i < n; i++)
    out[i] = NAN;
  for (guint i = 0; i < t->knobs->len; i++)
    out[t->n_derived + i] = knob_value(t, p, t->knobs->pdata[i]);
  if (t->inst == NULL)
    return;
  workload_features(t, out);
  TsCostWork w;
  if (!ts__cost_work(t, p, res, &w))
    return;
  work_features(t, &w, out);
  TsCostEstimate e;
  ts__cost_estimate(t, &w, &e);
  estimate_features(t, &e, &w, out);
}
