/* ts-prof-metrics.h — a kernel's hardware metrics on the GPU, as figures a person reads: DRAM
 * bytes, FLOPs by precision on the FMA pipes and on tensor cores, achieved occupancy, L2 hit
 * rate, shared-memory bank conflicts and the profiled duration. The counters come from CUPTI's
 * range profiler through ts_backend_collect_metrics; this layer owns the catalog of which
 * counters make which figure, and turns a name → value table into the figures.
 *
 * Every figure says where it came from: a counter, derived from the op's exact FLOP count (the
 * tensor-core FLOPs of the op's dtype on a chip that has no counter for them), or unavailable.
 * Figures are never faked: a counter the chip lacks leaves its figure unavailable (NaN).
 *
 * Conventions (docs/profiler.md):
 * - FMA-pipe FLOPs = add + mul + 2 x fma thread instructions per precision, the roofline
 *   convention of Nsight Compute. The counters count thread instructions and cannot tell a
 *   packed HFMA2 (two FMAs) from a scalar HFMA, so the f16 figure is a lower bound for code
 *   that uses half2 math (by at most 2x).
 * - tensor FLOPs: the chip's sm__ops_path_tensor_src_<dtype>* "math ops" counters, which count
 *   2 per multiply-add (2·M·N·K for a GEMM), summed over destination precisions where the chip
 *   splits them (fp16 on Ampere/Ada, fp8 on Blackwell GB20x).
 * - the range profiler replays the work once per pass, with the L2 flushed before each; none of
 *   this is a time the tuner ranks by, and duration_ns is the profiled pass's own. */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

#include "ts-backend.h"
#include "ts-op.h"

G_BEGIN_DECLS

typedef enum {
  TS_PROF_SOURCE_UNAVAILABLE, /* the chip has no counter for it and nothing to derive it from */
  TS_PROF_SOURCE_COUNTER,     /* hardware counters */
  TS_PROF_SOURCE_DERIVED,     /* the op's exact FLOP count (tensor FLOPs of the op's dtype) */
} TsProfSource;

/* "counter", "derived from the op's FLOP count", "unavailable" */
const char *ts_prof_source_name(TsProfSource source);

typedef struct {
  double value; /* NaN when unavailable */
  TsProfSource source;
  char *detail; /* the counters used ("a + 2*b"), or why not ("no X on this GPU") */
} TsProfFigure;

typedef struct {
  TsProfFigure dram_read_bytes, dram_write_bytes;
  TsProfFigure l2_bytes, l1_bytes; /* all traffic through the level */
  TsProfFigure flops_f32, flops_f16, flops_f64; /* FMA pipes */
  TsProfFigure tensor_flops_bf16, tensor_flops_f16, tensor_flops_fp8, tensor_flops_tf32;
  TsProfFigure occupancy_pct; /* achieved: warps active / the SM's maximum, while it is active */
  TsProfFigure l2_hit_pct;    /* L2 sector lookups that hit */
  TsProfFigure smem_conflicts_ld, smem_conflicts_st; /* shared-memory bank conflicts */
  TsProfFigure duration_ns; /* of the profiled pass (replayed, serialised): not the timing */
} TsProfKernelMetrics;

void ts_prof_kernel_metrics_free(TsProfKernelMetrics *metrics);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsProfKernelMetrics, ts_prof_kernel_metrics_free)

/* Every counter the catalog may use (for any chip), NULL-terminated, static. */
const char *const *ts_prof_metric_names(void);

/* Figures, in the order reports print them: the JSON member name, a label for people, and
 * where it lives in the struct. */
typedef struct {
  const char *key;   /* "dram_read_bytes" */
  const char *label; /* "DRAM bytes read" */
  const char *unit;  /* "B", "FLOP", "%", "ns", "" */
} TsProfFigureInfo;
guint ts_prof_figure_count(void);
const TsProfFigureInfo *ts_prof_figure_info(guint i);
const TsProfFigure *ts_prof_kernel_metrics_figure(const TsProfKernelMetrics *metrics, guint i);

/* The tensor-core dtype of an op's FLOPs on the GPU ("bf16", "f16", "fp8", "tf32"), or NULL
 * for ops whose math is not on tensor cores. */
const char *ts_prof_op_tensor_dtype(const TsOpInstance *inst);

/* The figures from a name → value table (values: const char * → double *, as
 * ts_backend_collect_metrics returns; a name missing from it is a counter the chip lacks, and
 * a figure without its counters names the missing ones in its detail). op_flops and
 * tensor_dtype (may be NULL) decide the derived figure: when the chip has no tensor counter
 * for tensor_dtype, that figure is op_flops, marked derived. Pure: no device, no CUPTI. */
TsProfKernelMetrics *ts_prof_kernel_metrics_from_values(GHashTable *values, double op_flops,
                                                        const char *tensor_dtype);

/* {"dram_read_bytes": {"value": 1.2e7, "source": "counter", "detail": "dram__bytes_read.sum"},
 *  ...}: every figure; an unavailable value is null. */
char *ts_prof_kernel_metrics_to_json(const TsProfKernelMetrics *metrics);
JsonNode *ts_prof_kernel_metrics_to_json_node(const TsProfKernelMetrics *metrics);
/* The inverse (what a worker process sends back); NULL when node is not an object. Members
 * missing or malformed are unavailable figures. */
TsProfKernelMetrics *ts_prof_kernel_metrics_from_json_node(JsonNode *node);

/* The metrics pass of one schedule point, after it was timed: its kernel compiled (an
 * artifact-cache hit by then), loaded on buffers of its own, verified again and counted. NULL
 * with *why set when the figures cannot be had (no counters on this backend, the driver
 * refuses them, the kernel fails). */
TsProfKernelMetrics *ts_prof_point_metrics(TsOpInstance *inst, TsBackend *backend,
                                           const TsSchedPoint *point, const TsRunOptions *options,
                                           char **why);

/* Collects the catalog's counters over launch's work on backend (see
 * ts_backend_collect_metrics_with: one launch per replay pass) and returns the figures. Errors
 * are the backend's: UNSUPPORTED on the CPU backend, PERMISSION when the driver refuses
 * counters (its message carries the fix). */
TsProfKernelMetrics *ts_prof_collect_kernel_metrics(TsBackend *backend, TsBackendLaunchFunc launch,
                                                    gpointer data, double op_flops,
                                                    const char *tensor_dtype, GError **error);

G_END_DECLS
