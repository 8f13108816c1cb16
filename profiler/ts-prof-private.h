/* ts-prof-private.h — what the ceiling files share, and what the tests reach past the public
 * API: the GPU microbenchmark sources, so CI can compile them for every arch without a device. */
#pragma once

#include "ts-prof.h"

G_BEGIN_DECLS

/* One microbenchmark, run again and again. Every microbenchmark kernel takes its repeat count
 * as ints[0], so it can be stretched to a measurable time. The launch's buffers and ints are
 * .bufs and .ints (pointed at when it runs, so benches can live in a growing array). */
typedef struct {
  const char *roof;  /* the roof it measures, "f32", "l2" ... */
  gboolean one_core; /* the per-core figure (CPU) */
  TsModule *module;  /* borrowed */
  TsLaunch launch;   /* counts, floats and shape; buffers and ints come from below */
  TsBuffer *bufs[4]; /* borrowed */
  gint64 ints[4];
  double work;    /* FLOPs or bytes per repeat */
  double best_ns; /* fastest launch so far; 0 before the first */
} TsProfBench;

/* Raises the bench's repeat count (ints[0]) until one launch takes about target_ns. */
gboolean ts__prof_calibrate(TsBackend *backend, TsProfBench *bench, double target_ns,
                            GError **error);
/* Times every bench once per round, rounds times, interleaved so that a slow spell of a shared
 * machine hits them all alike, and keeps each one's fastest launch: a ceiling is the best the
 * machine does. */
gboolean ts__prof_run_benches(TsBackend *backend, TsProfBench *benches, guint n, guint rounds,
                              GError **error);
/* The bench's figure: work per repeat x repeats / fastest time, in GFLOP/s or GB/s. */
double ts__prof_bench_rate(const TsProfBench *bench);

TsProfCeilings *ts__prof_measure_cpu(TsBackend *backend, GError **error);

/* One measured CPU roof before it is stored. */
typedef struct {
  const char *roof; /* "f32", "f64", "l1", "l2", "l3", "dram" */
  double value;     /* all cores */
  double per_core;  /* one core */
  gboolean keep;    /* cleared by the screen */
} TsProfCpuFigure;

/* Clears keep on figures no machine can produce, and says why in notes: a non-finite or
 * non-positive rate; f64 above 3/4 of f32; a cache level slower than a level beyond it (by more
 * than 10%: l3 below dram, say, which a busy machine or a mis-sized level gives). Such a figure
 * would put a roof under the kernels that beat it; it is left out rather than stored. */
void ts__prof_cpu_screen(TsProfCpuFigure *figures, guint n, GString *notes);
TsProfCeilings *ts__prof_measure_cuda(TsBackend *backend, GError **error);

/* A GPU ceiling microbenchmark for one arch: the roof it measures, its entry symbol and CUDA C
 * source. Every kernel takes its sink buffer as bufs[0] and its repeat count as ints[0]; the
 * memory ones read bufs[1] (and the DRAM copy writes bufs[2]), ints[1] 16-byte vectors long. */
typedef struct {
  char *roof;
  char *entry;
  char *source;
  TsProfCeilingKind kind;
  guint threads;       /* per block */
  guint blocks_per_sm; /* the grid is this many blocks per SM */
  double flops;        /* per repeat per block (compute roofs) */
  double bytes_per_vector; /* per repeat per 16-byte vector of ints[1] (memory roofs) */
  char *what;          /* how it measures, for the method line: "wgmma m64n256k16" */
} TsProfCudaSource;

/* The microbenchmarks measure_cuda runs on arch ("sm_90a": wgmma tensor-core kernels; "sm_89":
 * mma.sync with fp8; "sm_80", "sm_86": mma.sync), in the order run. NULL for an arch the
 * table (ts_cuda_arch_lookup) does not know or that predates sm_80. Elements are freed with
 * the array. */
GPtrArray *ts_prof_cuda_ceiling_sources(const char *arch);

G_END_DECLS
