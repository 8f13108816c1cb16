/* ts-studio-data.h — what tessera-studio shows, read from a schedule cache (read-only: the
 * studio never writes to a cache) and from Chrome-trace files. No GTK here: the views, the
 * exporter and the tests share it.
 *
 * A "workload" in the studio is a key of the cache — (workload, device, toolchain) — with its
 * names resolved, since the same op and shape tuned on two devices are two different things to
 * look at. Devices carry their measured ceilings (the roofline's roofs) when the profiler
 * stored some. */
#pragma once

#include <gio/gio.h>

#include "ts-db.h"
#include "ts-prof.h"

G_BEGIN_DECLS

#define TS_STUDIO_ERROR (ts_studio_error_quark())
GQuark ts_studio_error_quark(void);

typedef enum {
  TS_STUDIO_ERROR_OPEN,      /* not a schedule cache, corrupt, newer schema: the message says */
  TS_STUDIO_ERROR_NOT_FOUND, /* no such workload, trial or profile in this cache */
  TS_STUDIO_ERROR_TRACE,     /* a trace file that is not Chrome Trace Event JSON */
  TS_STUDIO_ERROR_NO_MODEL,  /* no learned cost model stored for the backend */
  TS_STUDIO_ERROR_EXPORT,    /* unknown view or format, unwritable output */
} TsStudioError;

typedef struct {
  gint64 id;
  char *backend, *name, *arch;
  guint compute_units;
  TsProfCeilings *ceilings; /* measured roofs, or NULL when none are stored */
} TsStudioDevice;

typedef struct {
  gint64 workload_id, device_id, toolchain_id;
  char *op, *shape, *dtype;
  char *toolchain;            /* "gcc 12.2.0 tessera-kgen-1" */
  const TsStudioDevice *device; /* owned by the TsStudioDb */
  guint n_trials, n_ok;
  char *label;                /* "gemm M=1024,N=1024,K=1024 f32" */
  char *key;                  /* "W/D/T" ids: what --workload accepts, with "W" alone */
  double flops, bytes;        /* of one run of the workload, from the op library; NAN if unknown */
} TsStudioWorkload;

/* The memory levels a GPU metrics pass measures traffic at (outermost first), named as the
 * device's memory roofs are. */
typedef enum {
  TS_STUDIO_LEVEL_DRAM,
  TS_STUDIO_LEVEL_L2,
  TS_STUDIO_LEVEL_L1,
  TS_STUDIO_N_LEVELS
} TsStudioLevel;
const char *ts_studio_level_name(TsStudioLevel level);  /* "dram", "l2", "l1" */
const char *ts_studio_level_label(TsStudioLevel level); /* "DRAM", "L2", "L1" */

/* One stored trial with what the views plot already worked out. NAN: unknown. */
typedef struct {
  gint64 id, run_id;
  guint index;                /* 0-based position in insertion order within its workload */
  TsDbTrialStatus status;
  char *schedule, *strategy, *error_text, *created_at;
  double median_ns, min_ns, max_ns;
  double predicted_ns;        /* the analytic cost model's estimate, as stored */
  double wall_s;              /* seconds since the workload's first stored trial */
  double gflops;              /* achieved, from the median */
  double intensity;           /* FLOP per compulsory DRAM byte */
  double bound_gflops;        /* the roofline's bound at that intensity */
  double fraction;            /* gflops / bound_gflops */
  char *bound;                /* the roof that bounds it ("f32", "dram"), or NULL */
  gboolean best;              /* the key's stored best schedule */
  double compile_ms;          /* building its kernel; 0: from the artifact cache; NAN: unknown */
  /* From the compiler's report (GPU): per thread; -1 when unknown (the CPU backend). */
  gint registers, spill_stores, spill_loads;
  /* A host kernel's CPU time (its threads', median) over its wall time (median): about its
   * thread count on a quiet machine. NAN for device kernels and older trials. */
  double cpu_per_wall;
  /* Bytes that moved through each level in a profiled run (the hardware-metrics pass of
   * `tessera-tune profile` on a GPU), and the op's FLOPs per such byte: the hierarchical
   * roofline's points. NAN where not measured. */
  double level_bytes[TS_STUDIO_N_LEVELS], level_intensity[TS_STUDIO_N_LEVELS];
} TsStudioTrial;

typedef struct {
  gint64 id;
  char *strategy, *budget, *status, *started_at, *finished_at; /* finished_at may be NULL */
  guint64 seed;
} TsStudioRun;

typedef struct _TsStudioDb TsStudioDb;

/* Opens path read-only and reads its devices and workloads. A file that is not a schedule
 * cache, a corrupt one or one from a newer tessera is TS_STUDIO_ERROR_OPEN with a message
 * naming the file and what to do. */
TsStudioDb *ts_studio_db_open(const char *path, GError **error);
void ts_studio_db_free(TsStudioDb *db);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsStudioDb, ts_studio_db_free)
const char *ts_studio_db_path(const TsStudioDb *db);
TsDb *ts_studio_db_handle(TsStudioDb *db);

/* Devices and workloads (arrays owned by db, of TsStudioDevice* / TsStudioWorkload*), by id. */
GPtrArray *ts_studio_db_devices(TsStudioDb *db);
GPtrArray *ts_studio_db_workloads(TsStudioDb *db);
/* "W", "W/D" or "W/D/T" (ids as `tessera-tune show` prints them); a bare workload id that was
 * tuned on several devices or toolchains is the one with the most trials. NULL with
 * TS_STUDIO_ERROR_NOT_FOUND naming the key when there is none. */
const TsStudioWorkload *ts_studio_db_find_workload(TsStudioDb *db, const char *key,
                                                   GError **error);

/* The workload's trials in insertion order (GPtrArray of TsStudioTrial*, owning them). */
GPtrArray *ts_studio_db_trials(TsStudioDb *db, const TsStudioWorkload *workload, GError **error);
void ts_studio_trial_free(TsStudioTrial *trial);

/* ---- collectives: bus bandwidth against message size ---- */

typedef struct {
  double bytes;     /* BYTES a rank */
  double busbw;     /* bytes/s: nccl-tests' bus bandwidth of the trial */
  double median_ns;
  gint64 trial_id;
} TsStudioBandwidthPoint;

typedef struct {
  char *algorithm; /* "ring", ...; "default": the library's own choice */
  GArray *points;  /* TsStudioBandwidthPoint, smallest size first */
} TsStudioBandwidthSeries;

void ts_studio_bandwidth_series_free(TsStudioBandwidthSeries *series);

/* For a collective's workload (all_reduce, all_gather, reduce_scatter): the verified trials of
 * every size of the same op, dtype and rank count on its device and toolchain, as one series a
 * algorithm holding each size's fastest trial of it (whatever its other knobs), in the order
 * the algorithms first appear. Empty when none is verified; NULL with TS_STUDIO_ERROR_NOT_FOUND
 * for a workload that is not a collective. */
GPtrArray *ts_studio_db_bandwidth(TsStudioDb *db, const TsStudioWorkload *workload,
                                  GError **error);
/* The tuning runs that stored them, oldest first (GPtrArray of TsStudioRun*, owning them). */
GPtrArray *ts_studio_db_runs(TsStudioDb *db, const TsStudioWorkload *workload, GError **error);
void ts_studio_run_free(TsStudioRun *run);

/* Profiles, newest first (TsDbProfile*, owning them); workload NULL lists every profile. */
GPtrArray *ts_studio_db_profiles(TsStudioDb *db, const TsStudioWorkload *workload,
                                 GError **error);
/* What a profile is of, for a label: the workload's label ("gemm M=64,N=64,K=64 f32"), or "a
 * tuning session" for one stored without a workload. */
char *ts_studio_db_profile_subject(TsStudioDb *db, const TsDbProfile *profile);
/* The learned cost model's view of a workload's trials: the newest model stored for the
 * device's backend ("xgb-rank/cpu", what the model strategy ranks with) scoring each trial's
 * point, with the features training used. */
typedef struct {
  gint64 model_id;
  char *kind;
  gboolean in_sample; /* the model was trained with this workload's trials */
  GArray *scores;     /* double per trial, in the trials' order: higher = predicted faster;
                       * NAN where it cannot score (a schedule that does not parse) */
} TsStudioLearned;

/* NULL with TS_STUDIO_ERROR_NO_MODEL when the cache holds no model for the backend (the
 * message says how to train one). */
TsStudioLearned *ts_studio_db_learned(TsStudioDb *db, const TsStudioWorkload *workload,
                                      GPtrArray *trials, GError **error);
void ts_studio_learned_free(TsStudioLearned *learned);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsStudioLearned, ts_studio_learned_free)

/* A profile's events (GArray of TsDbEvent, times relative to its t0). */
GArray *ts_studio_db_events(TsStudioDb *db, gint64 profile_id, GError **error);

/* The events of a Chrome Trace Event file (the JSON object or array form, as tessera-tune
 * profile writes and Perfetto reads), read one event at a time (memory follows the events,
 * not the text): complete ("X") and begin/end ("B"/"E") events become kernels, copies,
 * compiles and ranges by their category, allocation instants allocs and frees, other instants
 * "instant" events (process and global ones on lanes of their own), async slices ("b"/"e")
 * ranges on a lane per process and name, counter samples "counter" events (one series per
 * numeric arg), flows (v1 "s"/"t"/"f", v2 bind_id) "flow" events; each event's args beyond its
 * own fields are its detail, as "key: value" lines. Times relative to the earliest event.
 * First, at time 0, come "lane" events naming a lane (from the process_name and thread_name
 * metadata) and "note" events saying what was read differently than written (an "E" with no
 * "B", left out; a "B" never closed, drawn to the end of the trace; flows never finished). A
 * memory counter ("C") becomes allocs and frees of its changes when the trace has no
 * allocation events of its own. A file cut short keeps the whole events before the cut. */
GArray *ts_studio_trace_load(const char *path, GError **error);
/* The same from text in memory; name stands for the file in messages. */
GArray *ts_studio_trace_load_data(const char *text, gsize length, const char *name,
                                  GError **error);
/* ts_studio_trace_load for a worker thread: *permille (optional; atomic) follows the share of
 * the file read, 0 to 1000; cancelling stops the read within a few thousand events
 * (G_IO_ERROR_CANCELLED). */
GArray *ts_studio_trace_load_full(const char *path, GCancellable *cancellable, gint *permille,
                                  GError **error);

/* Graph, Schedule, Tile and Target IR of a schedule point of a workload, as `tessera-tune
 * lower` prints them (the target for the workload's device's backend). The strings are
 * stage texts; a stage that could not be produced holds the error message. */
typedef struct {
  char *graph, *schedule, *tile, *target;
  char *target_language; /* "C" or "CUDA C" */
} TsStudioLowering;

TsStudioLowering *ts_studio_lower(const TsStudioWorkload *workload, const char *schedule,
                                  GError **error);
void ts_studio_lowering_free(TsStudioLowering *lowering);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsStudioLowering, ts_studio_lowering_free)

/* A line diff of two texts (Myers' O(ND) algorithm): GArray of TsStudioDiffLine in order. */
typedef enum { TS_STUDIO_DIFF_SAME, TS_STUDIO_DIFF_DEL, TS_STUDIO_DIFF_ADD } TsStudioDiffOp;
typedef struct {
  TsStudioDiffOp op;
  guint a_line, b_line; /* 1-based line numbers in a / b; 0 where the line is absent there */
  const char *text;     /* points into the TsStudioDiff's copy of the texts */
  guint len;
} TsStudioDiffLine;
typedef struct _TsStudioDiff TsStudioDiff;
TsStudioDiff *ts_studio_diff(const char *a, const char *b);
void ts_studio_diff_free(TsStudioDiff *diff);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsStudioDiff, ts_studio_diff_free)
const GArray *ts_studio_diff_lines(const TsStudioDiff *diff);
guint ts_studio_diff_n_changed(const TsStudioDiff *diff); /* DEL + ADD lines */
/* Unified-diff text ("--- a", "+++ b", hunks with context lines) for the file export. */
char *ts_studio_diff_to_unified(const TsStudioDiff *diff, const char *a_name, const char *b_name,
                                guint context);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsStudioTrial, ts_studio_trial_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsStudioRun, ts_studio_run_free)

G_END_DECLS
