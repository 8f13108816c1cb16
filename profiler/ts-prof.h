/* ts-prof.h — device ceilings: microbenchmarks that measure what the hardware really delivers,
 * the roofline's ceilings. CPU today: f32 FMA throughput on one core and on all cores, and
 * memory bandwidth with a STREAM-like triad on arrays far beyond the last-level cache. */
#pragma once

#include <glib.h>

#include "ts-backend.h"

G_BEGIN_DECLS

typedef struct {
  double f32_gflops_core; /* one core */
  double f32_gflops_all;  /* every core */
  double dram_gbps;       /* triad over arrays of 3 x 64 MiB, every core */
  guint vector;           /* floats per vector used */
} TsProfCeilings;

/* Compiles and runs the microbenchmarks on backend (CPU only for now). */
gboolean ts_prof_measure_ceilings(TsBackend *backend, TsProfCeilings *out, GError **error);
/* {"f32_gflops_core": ..., "f32_gflops_all": ..., "dram_gbps": ..., "vector": 8,
 *  "method": "..."} */
char *ts_prof_ceilings_to_json(const TsProfCeilings *c);
gboolean ts_prof_ceilings_from_json(const char *json, TsProfCeilings *out);

/* Roofline bound for a kernel of the given FLOPs and bytes: min(peak, intensity x bandwidth),
 * in GFLOP/s. */
double ts_prof_roofline_gflops(const TsProfCeilings *c, double flops, double bytes);

G_END_DECLS
