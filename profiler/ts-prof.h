/* ts-prof.h — device ceilings: microbenchmarks that measure what the hardware really delivers,
 * the roofline's ceilings, and the roofline coordinates of a kernel against them.
 *
 * A ceiling set is a list of named roofs. Compute roofs are named by the math they measure
 * ("f32", "f64" FMA on CPU cores or CUDA cores; "bf16_tensor", "f16_tensor", "fp8_tensor",
 * "tf32_tensor" on tensor cores) in GFLOP/s; memory roofs by the level they stream from
 * ("dram", "l3", "l2", "l1") in GB/s; rates by the function they time ("exp") in G results
 * a second. Each has the whole-device figure and, on the CPU, the
 * figure of one core. The set remembers the toolchain it was measured with: ceilings are
 * re-measured when the device or the toolchain changes (the device row is per device; the
 * caller compares ts_prof_ceilings_toolchain with ts_prof_toolchain_of's). */
#pragma once

#include <glib.h>

#include "ts-backend.h"
#include "ts-db.h"

G_BEGIN_DECLS

typedef enum {
  TS_PROF_COMPUTE, /* GFLOP/s */
  TS_PROF_MEMORY,  /* GB/s */
  /* G results/s of one function the kernels call, lane by lane: the CPU's vector exp ("exp",
   * "exp_fast": softmax is bound by them). Not a roofline roof: its unit is not a FLOP. */
  TS_PROF_RATE,
} TsProfCeilingKind;

typedef struct {
  char *name;
  TsProfCeilingKind kind;
  double value;    /* whole device */
  double per_core; /* one core (CPU); 0 when not measured */
} TsProfCeiling;

/* "GFLOP/s", "GB/s" or "G/s": a kind's figures' unit, for people. */
const char *ts_prof_ceiling_unit(TsProfCeilingKind kind);

typedef struct _TsProfCeilings TsProfCeilings;

TsProfCeilings *ts_prof_ceilings_new(const char *backend, const char *toolchain);
void ts_prof_ceilings_free(TsProfCeilings *ceilings);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsProfCeilings, ts_prof_ceilings_free)
/* Adds or replaces the roof called name. */
void ts_prof_ceilings_set(TsProfCeilings *ceilings, const char *name, TsProfCeilingKind kind,
                          double value, double per_core);
/* NULL when the set has no roof of that name. */
const TsProfCeiling *ts_prof_ceilings_get(const TsProfCeilings *ceilings, const char *name);
guint ts_prof_ceilings_count(const TsProfCeilings *ceilings);
const TsProfCeiling *ts_prof_ceilings_nth(const TsProfCeilings *ceilings, guint i);
const char *ts_prof_ceilings_backend(const TsProfCeilings *ceilings);
const char *ts_prof_ceilings_toolchain(const TsProfCeilings *ceilings);
/* What a device's ceilings are measured with, and stale without: the backend's compiler and
 * the kernel generators' version ("gcc 12.2.0 tessera-kgen-6"), since the CPU's rates time the
 * generators' own primitives (a faster exp in ts_cpu_prims.h is a new version). */
char *ts_prof_toolchain_of(const TsDeviceInfo *device);
/* How they were measured, one line for people; "" when unknown. */
const char *ts_prof_ceilings_method(const TsProfCeilings *ceilings);
void ts_prof_ceilings_set_method(TsProfCeilings *ceilings, const char *method);

/* A note for people where the CPU's all-core FMA peaks scale with the cores much worse than
 * FMA units do (below 3/5 of `cores` times one core's): other work held cores while they were
 * timed, or the cores are SMT siblings sharing their units; roofs of multi-threaded kernels are
 * then too low. NULL where every compute roof scales, or one core or none was measured. */
char *ts_prof_ceilings_scaling_note(const TsProfCeilings *ceilings, guint cores);

/* {"version": 3, "backend": "cpu", "toolchain": "gcc 12.2.0 tessera-kgen-6", "method": "...",
 *  "compute": {"f32": {"gflops": 812.5, "per_core": 101.3}, ...},
 *  "memory": {"dram": {"gbps": 18.2, "per_core": 9.1}, "l1": {...}, ...},
 *  "rates": {"exp": {"gops": 1.1, "per_core": 0.56}, ...}} */
char *ts_prof_ceilings_to_json(const TsProfCeilings *ceilings);
/* NULL with a GError naming what is missing or malformed; a set needs at least one compute and
 * one memory roof. Version 2 (before the rates) is still read. */
TsProfCeilings *ts_prof_ceilings_from_json(const char *json, GError **error);
/* The JSON format a set was read from; TS_PROF_CEILINGS_FORMAT for one measured or built. A
 * device row in an older format is measured again: its benchmarks lack later roofs. */
#define TS_PROF_CEILINGS_FORMAT 3
int ts_prof_ceilings_format(const TsProfCeilings *ceilings);

/* Runs the microbenchmarks on backend's device: cpu (FMA per dtype on one and all cores, triad
 * bandwidth far beyond the last-level cache, read bandwidth at each cache level) or cuda
 * (tensor-core and FMA peaks per dtype, DRAM and L2 bandwidth). */
TsProfCeilings *ts_prof_measure_ceilings(TsBackend *backend, GError **error);

/* The ceilings stored in the device row when they are current for backend's device and
 * toolchain; NULL (error unset) when there are none or they are stale. */
TsProfCeilings *ts_prof_ceilings_load(TsDb *db, gint64 device_id, TsBackend *backend,
                                      GError **error);
/* The device's ceilings from the schedule cache's device row, measured (and stored) first when
 * the row has none, holds an older format, was measured with another toolchain, or remeasure
 * is set. *measured (may be NULL) tells whether the microbenchmarks ran. */
TsProfCeilings *ts_prof_ceilings_ensure(TsDb *db, gint64 device_id, TsBackend *backend,
                                        gboolean remeasure, gboolean *measured, GError **error);

/* The compute roof a kernel is held to: on the GPU, "<dtype>_tensor" for tensor-core ops (gemm,
 * attention) of 16- and 8-bit inputs, else "f32"; on the CPU the FMA of the math dtype ("f64"
 * for f64 storage, "f32" otherwise: 16-bit inputs are widened). */
const char *ts_prof_compute_roof(const char *backend, const char *storage_dtype,
                                 gboolean tensor_op);

typedef struct {
  double intensity;    /* FLOP per byte of compulsory DRAM traffic */
  double gflops;       /* achieved */
  const char *compute; /* the compute roof used (static or owned by the ceilings) */
  const char *bound;   /* the roof that bounds at this intensity: compute's name, or "dram" */
  double bound_gflops; /* min(compute roof, intensity x DRAM bandwidth) */
  double fraction;     /* gflops / bound_gflops */
} TsProfRoofline;

/* Coordinates of a kernel doing flops over bytes in seconds. FALSE when the ceilings lack the
 * compute roof (falling back to "f32" first) or "dram", or seconds <= 0. */
gboolean ts_prof_roofline(const TsProfCeilings *ceilings, const char *compute, double flops,
                          double bytes, double seconds, TsProfRoofline *out);
/* {"intensity": .., "gflops": .., "compute": "f32", "bound": "dram", "bound_gflops": ..,
 *  "fraction": ..} */
char *ts_prof_roofline_to_json(const TsProfRoofline *roofline);

G_END_DECLS
