/* ts-cost.h — what a schedule point is expected to cost, before it is measured.
 *
 * A target is one workload on one device: the op at its shape and dtype (or, for a recorded
 * space of an unknown kernel, just the space), the device's description and its measured
 * ceilings. From a target and a point come
 *   - features: named numbers, deterministic, the same names for every op and backend where
 *     they mean the same thing (tile sizes, tiles per wave, occupancy, bytes per memory level,
 *     arithmetic intensity per tile, the device's ceilings ...), plus the point's raw knob
 *     values ("knob.BM"), so a learned model can be trained across workloads and devices and
 *     still read spaces it knows nothing about;
 *   - the analytic estimate: a roofline time corrected for occupancy, wave quantization,
 *     pipeline depth and launch overhead (docs/costmodel.md gives the formula).
 * Neither compiles or runs anything: thousands of points are scored in milliseconds.
 */
#pragma once

#include <glib.h>

#include "ts-backend.h"
#include "ts-op.h"
#include "ts-prof.h"
#include "ts-sched.h"

G_BEGIN_DECLS

#define TS_COST_ERROR (ts_cost_error_quark())
GQuark ts_cost_error_quark(void);

typedef enum {
  TS_COST_ERROR_NO_MODEL, /* no analytic model for the target (unknown kernel), or no stored
                           * learned model */
  TS_COST_ERROR_DATA,     /* too few or inconsistent training data */
  TS_COST_ERROR_FORMAT,   /* a stored model that cannot be read */
  TS_COST_ERROR_XGBOOST,  /* XGBoost refused; its message is included */
} TsCostError;

typedef struct _TsCostTarget TsCostTarget;

/* An op workload on a device. inst is borrowed and must outlive the target; device and
 * ceilings are copied. ceilings may be NULL: the estimate then uses nominal figures derived
 * from the device description (docs/costmodel.md lists them), and the ceiling features are
 * NaN. backend is "cpu" or "cuda". */
TsCostTarget *ts_cost_target_new(const TsOpInstance *inst, const char *backend,
                                 const TsDeviceInfo *device, const TsProfCeilings *ceilings);
/* A recorded space with no op behind it (a Kernel Tuner file of a foreign kernel): features are
 * the raw knob values only and there is no analytic estimate. device_name may be NULL. */
TsCostTarget *ts_cost_target_new_generic(const TsSchedSpace *space, const char *device_name);
void ts_cost_target_free(TsCostTarget *target);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsCostTarget, ts_cost_target_free)
/* The op instance, or NULL for a generic target. */
const TsOpInstance *ts_cost_target_op(const TsCostTarget *target);
/* "gemm M=512,N=512,K=512 f32 @ cpu:AMD EPYC" or "recorded space @ device": a label for groups. */
const char *ts_cost_target_label(const TsCostTarget *target);

/* The target's feature names, in the order ts_cost_features() writes them, NULL-terminated and
 * owned by the target: derived features first (their names do not depend on the space), then
 * "knob.<name>" for each knob of the op's space on the backend (or of the generic target's
 * space). */
guint ts_cost_n_features(const TsCostTarget *target);
const char *const *ts_cost_feature_names(const TsCostTarget *target);
/* Fills out[0 .. n) (n from ts_cost_n_features). Values a target cannot know, and knobs the
 * point lacks, are NaN (a missing value to the learned model). resources (may be NULL) are a compiled kernel's
 * registers and shared memory from the link log; without them they are estimated from the
 * point. Deterministic: the same target, point and resources give the same bits. */
void ts_cost_features(const TsCostTarget *target, const TsSchedPoint *point,
                      const TsModuleResources *resources, float *out);

typedef struct {
  double time_s;          /* the estimate */
  double compute_s;       /* FLOPs over the compute roof, after the corrections below */
  double memory_s;        /* the slowest memory level's bytes over its bandwidth */
  double launch_s;        /* fixed cost per launch (kernel launch, or thread-team fork) */
  double flops;           /* the op's FLOPs */
  double dram_bytes;      /* modelled traffic per level, with the tiling's re-reads */
  double cache_bytes;     /* L2 on the GPU, L2/L3 on the CPU */
  double occupancy;       /* fraction of the device's thread slots a wave fills, 0..1 */
  double wave_efficiency; /* work units / (waves x units per wave), 0..1 */
  double compute_efficiency; /* fraction of the compute roof the inner loop can reach */
  double overlap;         /* fraction of the shorter of compute and memory hidden under the
                           * longer (pipeline stages, prefetch) */
  const char *bound;      /* "compute", "dram", "cache" or "launch" (static strings) */
} TsCostEstimate;

/* FALSE with TS_COST_ERROR_NO_MODEL for a generic target. */
gboolean ts_cost_analytic(const TsCostTarget *target, const TsSchedPoint *point,
                          const TsModuleResources *resources, TsCostEstimate *estimate,
                          GError **error);

G_END_DECLS
