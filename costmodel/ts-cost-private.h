/* ts-cost-private.h — what the files of costmodel/ share and nothing outside it may use: the
 * target's insides and the work decomposition of a point (how an op's work splits into
 * parallel units, what each unit moves through which memory level, what it needs of the
 * machine), shared by the features and the analytic estimate; the dataset's matrix writer,
 * shared by the dataset and the XGBoost glue. */
#pragma once

#include "ts-cost-model.h"

G_BEGIN_DECLS

struct _TsCostTarget {
  const TsOpInstance *inst; /* NULL: generic target */
  char *op;                 /* op name, or NULL */
  gboolean gpu;
  TsDeviceInfo device;      /* strings owned */
  TsProfCeilings *ceilings; /* a copy, or NULL */
  char *label;
  guint elem_bytes;          /* storage bytes of one element of the op's tensors */
  const char *compute_roof; /* "f32", "bf16_tensor", ... */
  GPtrArray *knobs;         /* knob names (char *), in space order */
  TsSchedSpace *space;      /* the knobs' value lists (a string knob's feature is its index) */
  GPtrArray *names;         /* feature names, NULL-terminated */
  guint n_derived;          /* names[0 .. n_derived) are derived, then "knob.*" */
};

/* A roof's throughput in FLOP/s or bytes/s: measured when the ceilings have it, else the
 * nominal figure for the device (docs/costmodel.md). per_core: one core's (CPU), else the
 * whole device. *measured tells which (may be NULL). */
double ts__cost_roof(const TsCostTarget *t, const char *name, gboolean per_core,
                     gboolean *measured);

/* The work decomposition of one point. Times in seconds, traffic in bytes, rates per second. */
typedef struct {
  /* the tile as the schedule sets it (NaN where the op's kernel has no such knob) */
  double tile_m, tile_n, tile_k, micro_m, micro_n, vector, unroll, threads, warps, stages;
  double swizzle, wgmma, tma, raster;

  double flops;         /* the op's exact FLOP count */
  double work_flops;    /* FLOPs the kernel executes: edge tiles padded, a CPU's exps at cost */
  double units;         /* independent work units (CTAs, or the tasks a CPU team splits) */
  double workers;       /* units that run at once: SMs x resident blocks, or threads */
  double waves;         /* ceil(units / workers) */
  double wave_eff;      /* units / (waves x workers) */
  double cores_used;    /* CPU cores or SMs that get work: min(units, the device's) */
  double dram_bytes;    /* modelled DRAM traffic, re-reads of the tiling included */
  double cache_bytes;   /* traffic from the last cache level that holds the tiles */
  double tile_intensity;/* FLOPs per byte one unit loads */
  double pad_waste;     /* work_flops / flops - 1: the work beyond the op's FLOPs */

  /* what a unit needs of the machine; GPU only (NaN on the CPU) */
  double regs;          /* per thread: from the link log, else estimated */
  double smem;          /* bytes per block */
  double blocks_per_sm; /* resident blocks an SM holds */
  double occupancy;     /* resident warps / the SM's maximum */
  double spill_bytes;   /* per thread, link log only (0 when estimated) */
  double accumulators;  /* f32 accumulator registers per thread (GPU) or vector registers (CPU) */

  double compute_eff;   /* fraction of the compute roof the inner loop can reach */
  double balance;       /* units / (rounds x executors): the last round's idle cores or SMs */
  double mem_eff;       /* fraction of DRAM bandwidth the access pattern can draw (GPU: bytes
                         * in flight per SM against what the latency needs) */
  double cache_s;       /* time to stream cache_bytes from the level they come from */
  double overlap;       /* fraction of the shorter phase hidden under the longer */
  double launch_s;      /* fixed cost of one launch */
  gboolean tensor;      /* on tensor cores */
} TsCostWork;

/* FALSE for a generic target or an op the model does not know. */
gboolean ts__cost_work(const TsCostTarget *t, const TsSchedPoint *p,
                       const TsModuleResources *res, TsCostWork *w);
/* The analytic estimate of a work decomposition (ts_cost_analytic without recomputing it). */
void ts__cost_estimate(const TsCostTarget *t, const TsCostWork *w, TsCostEstimate *est);

G_END_DECLS

G_BEGIN_DECLS
/* The derived features' names, in the order ts_cost_features() writes them (features.c). */
extern const char *const ts__cost_derived_names[];
guint ts__cost_n_derived(void);
G_END_DECLS

G_BEGIN_DECLS
/* Writes rows[0 .. n_rows) of dataset as an n_rows x n_out row-major matrix: the cell of
 * dataset column c goes to output column map[c], or nowhere when map[c] < 0 (map has one entry
 * per dataset column); cells a row lacks are NaN. */
void ts__cost_dataset_fill(const TsCostDataset *dataset, const guint *rows, guint n_rows,
                           const int *map, guint n_out, float *out);
G_END_DECLS
