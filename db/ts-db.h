/* ts-db.h — the schedule cache: one SQLite file (WAL mode) holding devices, toolchains,
 * workloads, tuning runs, every trial ever measured, the best schedule per key, and learned cost
 * models; lookups of the best schedule for a key through an in-process LRU; JSON export and a
 * merging, idempotent import.
 *
 * This header is the whole API of db/: what is absent from it is not API.
 *
 * Keys. A cached schedule is found by (op, shape, dtype) — the workload — plus the device
 * (arch and name) and the toolchain (compiler identity and kernel-generator version). Shapes are
 * canonical text "M=1024,N=1024,K=1024" (dims in the op's order; whitespace is dropped); dtypes
 * "bf16 @accum(f32)" as the Graph IR prints them.
 *
 * Writers. Every write is one short BEGIN IMMEDIATE transaction (one per trial), retried with
 * backoff while another process holds the write lock, so several tuners can share one file.
 * A TsDb is one connection: use it from one thread at a time.
 *
 * Errors are TS_DB_ERROR (codes below); messages are one line naming the file and the problem.
 * Failed writes roll back; no stored row is lost. Functions returning a row id return 0 on error
 * (row ids start at 1).
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define TS_DB_ERROR (ts_db_error_quark())
GQuark ts_db_error_quark(void);

typedef enum {
  TS_DB_ERROR_OPEN,          /* cannot open or create: a directory, a missing file, no permission */
  TS_DB_ERROR_NOT_A_DB,      /* the file is not an SQLite database */
  TS_DB_ERROR_CORRUPT,       /* truncated or malformed: restore a backup or re-import an export */
  TS_DB_ERROR_READ_ONLY,     /* a write through a read-only handle, file or directory */
  TS_DB_ERROR_TOO_NEW,       /* schema newer than this build: upgrade tessera; file untouched */
  TS_DB_ERROR_NEEDS_UPGRADE, /* schema older, opened read-only: open once for writing */
  TS_DB_ERROR_BUSY,          /* the write lock stayed taken past the timeout */
  TS_DB_ERROR_NOT_FOUND,     /* no such row, or no tuned schedule for a key */
  TS_DB_ERROR_INVALID,       /* a bad argument: unknown status, malformed shape or hash, bad JSON */
  TS_DB_ERROR_IMPORT,        /* malformed import file; the message names the JSON path */
  TS_DB_ERROR_FAILED,        /* any other SQLite error, with its message */
  TS_DB_ERROR_FOREIGN,       /* an SQLite file of another application, or with a schema version
                                no build writes: refused before anything touches it */
} TsDbError;

/* PRAGMA application_id of a schedule cache ("TSSC"): set when a cache is created (and on the
 * first read-write open of one made before it existed), checked on every open, so another
 * application's SQLite file is never taken for one. */
#define TS_DB_APPLICATION_ID 0x54535343

/* JSON nested deeper than this is refused before it is parsed: json-glib parses recursively,
 * so a hostile file nested 100,000 deep would overflow the stack; nothing this workbench or
 * the tools it reads (Kernel Tuner, Chrome traces) writes nests past a dozen. */
#define TS_DB_JSON_MAX_DEPTH 512
/* TRUE when the JSON text (length -1: NUL-terminated) nests at most TS_DB_JSON_MAX_DEPTH
 * arrays and objects deep; else FALSE with *depth_offset (optional) the byte where it goes
 * past. A scan of bytes, strings skipped: it does not check that the text is JSON. */
gboolean ts_db_json_depth_ok(const char *text, gssize length, gsize *depth_offset);

/* The schema version this build creates and understands (PRAGMA user_version). */
int ts_db_schema_version(void);

/* ---- the handle ---- */

typedef enum {
  TS_DB_OPEN_DEFAULT = 0,
  TS_DB_OPEN_READ_ONLY = 1 << 0, /* lookups and listings only; never creates or migrates */
} TsDbOpenFlags;

typedef struct _TsDb TsDb;

/* $XDG_CACHE_HOME/tessera/schedules.db (g_get_user_cache_dir()). */
char *ts_db_default_path(void);
/* Opens (creating it and its parent directories unless read-only) and migrates the schema.
 * path NULL is ts_db_default_path(). A file whose schema is newer than this build is refused
 * before anything is written to it (TS_DB_ERROR_TOO_NEW); another application's SQLite file
 * (its application_id, or tables of its own), or one with a schema version no build writes,
 * is refused untouched (TS_DB_ERROR_FOREIGN). A read-write open of a file the
 * process cannot write is TS_DB_ERROR_READ_ONLY; open it with TS_DB_OPEN_READ_ONLY instead. */
TsDb *ts_db_open(const char *path, TsDbOpenFlags flags, GError **error);
void ts_db_close(TsDb *db);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsDb, ts_db_close)
const char *ts_db_path(const TsDb *db);
gboolean ts_db_is_read_only(const TsDb *db);
/* PRAGMA integrity_check: TRUE when "ok". *message (optional) gets the check's report, or the
 * error that prevented it. */
gboolean ts_db_check_integrity(TsDb *db, char **message);

/* ---- natural keys: insert or get ---- */

typedef struct {
  const char *backend; /* "cpu", "cuda" */
  const char *name;    /* "AMD EPYC 7B13", "NVIDIA H100 80GB HBM3" */
  const char *arch;    /* "x86_64+avx2+fma+f16c", "sm_90a" */
  guint compute_units;
  guint64 memory_bytes, l1_bytes, l2_bytes, l3_bytes, smem_per_block;
  guint vector_bits;
} TsDbDevice;

/* Device rows are keyed by (backend, name, arch); the other fields are recorded on insert. */
gint64 ts_db_ensure_device(TsDb *db, const TsDbDevice *device, GError **error);
/* Measured ceilings as a JSON object (peak FLOP/s per dtype, bandwidths, ...), filled by the
 * profiler, which records in it the toolchain they were measured with. NULL clears. */
gboolean ts_db_set_device_peaks(TsDb *db, gint64 device_id, const char *peaks_json,
                                GError **error);
/* The peaks JSON, or NULL (error unset) when none recorded. */
char *ts_db_get_device_peaks(TsDb *db, gint64 device_id, GError **error);

/* compiler: "gcc 12.2.0", "nvrtc 13.0"; kgen_version: TS_OP_EMIT_VERSION. */
gint64 ts_db_ensure_toolchain(TsDb *db, const char *compiler, const char *kgen_version,
                              GError **error);
/* A malformed shape (not NAME=INT,...) is TS_DB_ERROR_INVALID. */
gint64 ts_db_ensure_workload(TsDb *db, const char *op, const char *shape, const char *dtype,
                             GError **error);

/* ---- tuning runs ---- */

gint64 ts_db_begin_run(TsDb *db, gint64 workload_id, gint64 device_id, gint64 toolchain_id,
                       const char *strategy, guint64 seed, const char *budget, GError **error);
/* status: "done", "interrupted" or "failed". The run's claims (below) are released. */
gboolean ts_db_end_run(TsDb *db, gint64 run_id, const char *status, GError **error);

/* Claims on points (ts-db-claim.c): tuners on one key at once measure different points. */
typedef enum {
  TS_DB_CLAIM_OURS,   /* the point is claimed for run_id now: measure it */
  TS_DB_CLAIM_STORED, /* a trial of the point is stored: *other_id is the trial */
  TS_DB_CLAIM_TAKEN,  /* another running run claimed it: *other_id is that run */
} TsDbClaim;
/* Claims a point (by its schedule hash) of a key for a running run, in one transaction. A
 * claim is released when the point's trial is stored or its run ends; one whose run is not
 * 'running' (ended, or found killed: its process on this host gone) is taken over. */
gboolean ts_db_claim_point(TsDb *db, gint64 run_id, gint64 workload_id, gint64 device_id,
                           gint64 toolchain_id, const char *schedule_hash, TsDbClaim *claim,
                           gint64 *other_id, GError **error);

/* One tune_run row. Strings owned. */
typedef struct {
  gint64 id;
  gint64 workload_id, device_id, toolchain_id;
  char *strategy;
  guint64 seed;
  char *budget;       /* as the tuner described it ("50 evals"); "" when none */
  char *status;       /* "running", "done", "interrupted" or "failed" */
  char *started_at;   /* ISO 8601 UTC */
  char *finished_at;  /* NULL while running; a run whose process was killed is closed as
                         "interrupted" when the next run on its host begins */
} TsDbRun;

void ts_db_run_free(TsDbRun *run);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsDbRun, ts_db_run_free)
/* The tuning runs of a key, oldest first (GPtrArray of TsDbRun*, owning them); empty when
 * none. */
GPtrArray *ts_db_list_runs(TsDb *db, gint64 workload_id, gint64 device_id, gint64 toolchain_id,
                           GError **error);

/* ---- trials ---- */

/* Same names and order as TsTrialStatus in kernels/ts-op.h, so a cast converts. */
typedef enum {
  TS_DB_TRIAL_OK,
  TS_DB_TRIAL_COMPILE_ERROR,
  TS_DB_TRIAL_RUNTIME_ERROR,
  TS_DB_TRIAL_TIMEOUT,
  TS_DB_TRIAL_WRONG_RESULT,
} TsDbTrialStatus;

const char *ts_db_trial_status_name(TsDbTrialStatus status); /* "ok", "compile_error", ... */
gboolean ts_db_trial_status_parse(const char *name, TsDbTrialStatus *status);

/* One measured point. Strings are owned (g_free'd by ts_db_trial_free); NAN marks an unknown
 * number (stored as NULL). */
typedef struct {
  gint64 id; /* set by ts_db_add_trial and by reads */
  gint64 workload_id, device_id, toolchain_id;
  gint64 run_id;  /* 0: not part of a recorded run */
  char *schedule; /* canonical point text */
  char *hash;     /* 16 hex digits; NULL: computed as ts_sched_point_hash does (SHA-256 prefix) */
  TsDbTrialStatus status;
  double rel_error;
  double median_ns, min_ns, max_ns;
  GArray *samples_ns;  /* double, or NULL */
  char *metrics_json;  /* a JSON object, or NULL */
  char *error_text;    /* NULL or a message */
  double predicted_cost; /* the analytic cost model's estimate in ns (as median_ns); NAN: none */
  char *strategy;
  double compile_ms;
  char *created_at; /* ISO 8601 UTC, set by the database; read-only */
  char *host;       /* the machine that measured it; NULL: unknown (stored before it was kept) */
  gint rank;        /* its MPI rank in a distributed tune; -1 outside MPI, or unknown */
} TsDbTrial;

/* A zeroed trial with every number NAN. */
TsDbTrial *ts_db_trial_new(void);
void ts_db_trial_free(TsDbTrial *trial);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsDbTrial, ts_db_trial_free)

/* Stores a trial in one BEGIN IMMEDIATE transaction. A point already stored for the same
 * (workload, device, toolchain, hash) is not stored again: *trial_id gets the existing trial's
 * id and *existed TRUE. Both outputs are optional. */
gboolean ts_db_add_trial(TsDb *db, const TsDbTrial *trial, gint64 *trial_id, gboolean *existed,
                         GError **error);
TsDbTrial *ts_db_get_trial(TsDb *db, gint64 trial_id, GError **error);
/* Replaces an ok trial's samples (and its median, min and max, computed from them) with a new
 * measurement of the same point: the tuner re-measures an incumbent whose samples are too
 * spread to judge challengers by. NOT_FOUND when no ok trial has that id. */
gboolean ts_db_update_trial_samples(TsDb *db, gint64 trial_id, const GArray *samples_ns,
                                    GError **error);

typedef enum {
  TS_DB_ORDER_BEST_FIRST, /* verified trials by median, then failures in insertion order */
  TS_DB_ORDER_INSERTION,
} TsDbTrialOrder;

/* The trials of a key (GPtrArray of TsDbTrial*, owning them); empty when none. */
GPtrArray *ts_db_list_trials(TsDb *db, gint64 workload_id, gint64 device_id,
                             gint64 toolchain_id, TsDbTrialOrder order, GError **error);

/* ---- what the cache holds: every key with trials ---- */

/* One (workload, device, toolchain) with stored trials, with what names it: the cost model's
 * training set is built key by key from these. Strings owned. */
typedef struct {
  gint64 workload_id, device_id, toolchain_id;
  char *op, *shape, *dtype;
  TsDbDevice device;              /* its strings owned too */
  char *compiler, *kgen_version;  /* the toolchain */
  guint n_trials, n_ok;
} TsDbTrialKey;

void ts_db_trial_key_free(TsDbTrialKey *key);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsDbTrialKey, ts_db_trial_key_free)
/* Every key with at least one trial (GPtrArray of TsDbTrialKey*, owning them), by workload,
 * device, toolchain id. */
GPtrArray *ts_db_list_trial_keys(TsDb *db, GError **error);

/* ---- profiles: a profiled run and its timeline ---- */

/* One timeline event. kind is "kernel", "compile", "memcpy", "memset", "alloc", "free" or
 * "range" (a trace reader adds "instant", "counter" and "flow"); start_ns is relative to the
 * profile's t0_ns. In an array from ts_db_events_new (what readers return) the strings belong
 * to the array: interned reference-counted strings (g_ref_string), so a timeline that repeats
 * a few names many times holds each once, and they are freed with the array. Elsewhere they
 * are borrowed. */
typedef struct {
  const char *kind;
  const char *name;
  gint64 start_ns, dur_ns;
  guint64 bytes, address;
  guint32 lane, depth;
  const char *detail; /* or NULL */
  /* Read from other tools' traces, never stored (ts_db_add_profile rejects these kinds):
   * a "counter" sample's value; a "flow" arrow from (start_ns, lane) to (to_ns, to_lane),
   * ending on the slice that encloses to_ns, or with to_next on the next one to begin. */
  double value;
  gint64 to_ns;
  guint32 to_lane;
  gboolean to_next;
} TsDbEvent;

typedef struct {
  gint64 id; /* set by ts_db_add_profile and by reads */
  gint64 workload_id;  /* 0: none (a whole tuning session) */
  gint64 device_id, toolchain_id;
  gint64 trial_id;     /* 0: none */
  char *kind;          /* "run" or "tune" */
  char *schedule;      /* or NULL */
  char *summary_json;  /* a JSON object (timing, roofline, counters), or NULL */
  gint64 t0_ns;        /* host clock at the first event */
  guint n_events;      /* set by reads */
  char *created_at;    /* read-only */
} TsDbProfile;

void ts_db_profile_free(TsDbProfile *profile);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsDbProfile, ts_db_profile_free)

/* Stores the profile and its events in one transaction; *profile_id (optional) gets its id.
 * An event of unknown kind is TS_DB_ERROR_INVALID and nothing is stored. */
gboolean ts_db_add_profile(TsDb *db, const TsDbProfile *profile, const TsDbEvent *events,
                           guint n_events, gint64 *profile_id, GError **error);
/* NULL with TS_DB_ERROR_NOT_FOUND when there is no such profile. */
TsDbProfile *ts_db_get_profile(TsDb *db, gint64 profile_id, GError **error);
/* Profiles, newest first (GPtrArray of TsDbProfile*); workload_id 0 lists all. */
GPtrArray *ts_db_list_profiles(TsDb *db, gint64 workload_id, GError **error);
/* An empty GArray of TsDbEvent that owns its events' strings (released when an element is
 * cleared or the array freed). */
GArray *ts_db_events_new(guint reserve);
/* Replaces e's (borrowed) strings by references of its own, for an array from
 * ts_db_events_new; NULL stays NULL. */
void ts_db_event_own_strings(TsDbEvent *e);
/* Releases what ts_db_event_own_strings took, and sets the strings to NULL. */
void ts_db_event_release_strings(TsDbEvent *e);

/* The profile's events in recorded order (from ts_db_events_new). */
GArray *ts_db_profile_events(TsDb *db, gint64 profile_id, GError **error);

/* ---- best schedules ---- */

/* The trial must belong to the key and be verified (status ok); else TS_DB_ERROR_INVALID. */
gboolean ts_db_set_best(TsDb *db, gint64 workload_id, gint64 device_id, gint64 toolchain_id,
                        gint64 trial_id, GError **error);
/* The best trial of a key, or NULL with TS_DB_ERROR_NOT_FOUND. */
TsDbTrial *ts_db_get_best(TsDb *db, gint64 workload_id, gint64 device_id, gint64 toolchain_id,
                          GError **error);
/* Sets best to the verified trial with the lowest median (ties: the earliest), or removes it
 * when the key has none. *best_id (optional) gets it, or 0. */
gboolean ts_db_refresh_best(TsDb *db, gint64 workload_id, gint64 device_id, gint64 toolchain_id,
                            gint64 *best_id, GError **error);

/* ---- what a stored schedule must mean ----
 *
 * The cache cannot judge a schedule itself (it knows no ops): the tools install this check,
 * and import and lookup both apply it, so an imported trial and a looked-up best are real
 * schedules of a real workload. It returns FALSE with *why (g_free'd by the caller) for a
 * workload or schedule that is not: an unknown op or dtype, a shape the op rejects, a schedule
 * that does not parse, a hash that is not its schedule's, a median time (NAN: none) faster than
 * any device could run the workload. */
typedef gboolean (*TsDbScheduleCheck)(const char *op, const char *shape, const char *dtype,
                                      const char *schedule, const char *hash, double median_ns,
                                      char **why, gpointer data);
void ts_db_set_schedule_check(TsDb *db, TsDbScheduleCheck check, gpointer data);

/* ---- lookups ---- */

typedef struct {
  const char *op, *shape, *dtype;
  const char *device_arch, *device_name;
  const char *toolchain;    /* compiler identity, "gcc 12.2.0" */
  const char *kgen_version; /* TS_OP_EMIT_VERSION */
} TsDbKey;

typedef struct {
  char *schedule;
  double median_ns;
  gint64 trial_id;
  gboolean exact;  /* FALSE: borrowed from the nearest tuned shape */
  char *shape;     /* the shape the schedule was tuned for */
  double distance; /* sum over dims of |log2(asked / tuned)|; 0 when exact */
} TsDbLookupResult;

void ts_db_lookup_result_clear(TsDbLookupResult *result);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(TsDbLookupResult, ts_db_lookup_result_clear)

/* The best schedule for exactly this key; TS_DB_ERROR_NOT_FOUND when it was never tuned.
 * Repeated keys are answered from an LRU in front of SQLite, emptied whenever this process
 * writes a best row (other processes' writes are seen once an entry is evicted or the handle
 * reopened). *result must be zero-initialised (g_auto(TsDbLookupResult) r = {0}) or hold an
 * earlier result, which is freed first; on failure it is left cleared. */
gboolean ts_db_lookup(TsDb *db, const TsDbKey *key, TsDbLookupResult *result, GError **error);
/* As ts_db_lookup, but when the exact shape was never tuned, the best schedule of the nearest
 * tuned shape of the same op, dtype, device and toolchain (dims matched by name; shapes with
 * other dims are not candidates; ties: the earliest workload), with exact FALSE. */
gboolean ts_db_lookup_nearest(TsDb *db, const TsDbKey *key, TsDbLookupResult *result,
                              GError **error);
/* LRU capacity in entries (default 4096); 0 disables the cache. */
void ts_db_set_lookup_cache_size(TsDb *db, guint entries);

/* ---- learned cost models ---- */

/* trained_on and quality are JSON (NULL allowed). Returns the model's id. */
gint64 ts_db_add_model(TsDb *db, const char *kind, GBytes *blob, const char *trained_on_json,
                       const char *quality_json, GError **error);
/* The newest model of a kind, or NULL with TS_DB_ERROR_NOT_FOUND. Outputs are optional. */
GBytes *ts_db_get_model(TsDb *db, const char *kind, gint64 *model_id, char **trained_on_json,
                        char **quality_json, GError **error);

/* ---- JSON export / import ---- */

/* All trials and best schedules of one workload (workload_id 0: of every workload), with the
 * devices, toolchains and workloads they refer to, as a "tessera-schedules" version 1
 * document. */
char *ts_db_export_json(TsDb *db, gint64 workload_id, GError **error);
gboolean ts_db_export_file(TsDb *db, gint64 workload_id, const char *path, GError **error);

typedef struct {
  guint devices_added, toolchains_added, workloads_added;
  guint trials_added, trials_existing;
  guint best_changed;
} TsDbImportStats;

/* Merges a document into the database in one transaction: devices, toolchains and workloads
 * matched by their natural keys, trials by (key, hash) — importing twice adds nothing — and
 * each touched key's best re-evaluated by median among its verified trials. The whole document
 * is validated first; a malformed one is TS_DB_ERROR_IMPORT naming the JSON path of the bad
 * field ("$.trials[3].median_ns: expected a number") and changes nothing. stats optional. */
gboolean ts_db_import_json(TsDb *db, const char *json, gssize length, TsDbImportStats *stats,
                           GError **error);
gboolean ts_db_import_file(TsDb *db, const char *path, TsDbImportStats *stats, GError **error);

/* ---- the perf gate: stored baseline and check runs ---- */

/* One run of tessera-perfgate over a suite on one device: a "baseline" records samples, a
 * "check" measures again and records its verdicts. */
typedef struct {
  gint64 id;
  char *kind;          /* "baseline" or "check" */
  char *suite;         /* the suite's name */
  gint64 device_id, toolchain_id;
  char *git_commit;    /* full hex commit, or NULL when not run in a git checkout */
  gboolean git_dirty;  /* the checkout had uncommitted changes */
  char *label;         /* free text (CI job, branch), or NULL */
  gint64 base_run_id;  /* check: the run it compared against; 0 otherwise */
  char *status;        /* "running", "done", "failed" or "interrupted" */
  char *verdict;       /* check: "pass", "regression" or "failed"; NULL until ended / baseline */
  char *created_at, *finished_at; /* ISO 8601 UTC; finished_at NULL while running */
  /* Filled by reads, for listings: */
  char *device_name, *device_arch, *toolchain; /* toolchain: "gcc 12.2.0 tessera-kgen-1" */
  guint n_results;
} TsDbGateRun;

void ts_db_gate_run_free(TsDbGateRun *run);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsDbGateRun, ts_db_gate_run_free)

/* One workload of a gate run. Strings owned; NAN marks an unknown number (stored as NULL). */
typedef struct {
  gint64 id, run_id; /* set by ts_db_gate_add_result and by reads */
  char *name;        /* the workload's name in the suite */
  gint64 workload_id;
  char *schedule;    /* canonical point measured (NULL when it could not be resolved) */
  TsDbTrialStatus status;
  char *error_text;  /* why it failed, or NULL */
  GArray *samples_ns;      /* double: this run's samples of its own kernel, or NULL */
  double median_ns;
  /* The kernel binary measured, so a later check can run it again side by side with its own
   * (stored once per hash, shared between results). NULL when not kept. */
  char *artifact_hash;     /* hex, names the artifact; NULL when none */
  GBytes *artifact;        /* written by add_result when non-NULL; filled by reads only when
                              asked (ts_db_gate_list_results with_artifacts) */
  char *entry;             /* the artifact's entry symbol */
  char *backend;           /* the backend that built it ("cpu") */
  char *launch_ints;       /* what its launches pass after the dims, comma-separated
                              (ts_module_bind_ints), or NULL: none */
  /* check only (NULL / NAN for baselines): */
  GArray *base_samples_ns; /* double: the baseline kernel measured in this run, or NULL */
  double base_median_ns;
  double change;           /* estimated current/baseline - 1 */
  double p_value;
  double threshold;
  char *verdict;           /* "pass", "improved", "regression", "failed", "new" */
  guint remeasured;
  char *note;
} TsDbGateResult;

/* A zeroed result with every number NAN. */
TsDbGateResult *ts_db_gate_result_new(void);
void ts_db_gate_result_free(TsDbGateResult *result);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsDbGateResult, ts_db_gate_result_free)

/* kind "baseline" or "check" (else TS_DB_ERROR_INVALID); base_run_id 0 for none. Returns the
 * run's id. */
gint64 ts_db_gate_begin(TsDb *db, const char *kind, const char *suite, gint64 device_id,
                        gint64 toolchain_id, const char *git_commit, gboolean git_dirty,
                        const char *label, gint64 base_run_id, GError **error);
/* status "done", "failed" or "interrupted"; verdict NULL for baselines. */
gboolean ts_db_gate_end(TsDb *db, gint64 run_id, const char *status, const char *verdict,
                        GError **error);
/* Adds a result to a running run (one transaction, the artifact included). */
gboolean ts_db_gate_add_result(TsDb *db, const TsDbGateResult *result, gint64 *result_id,
                               GError **error);

TsDbGateRun *ts_db_gate_get_run(TsDb *db, gint64 run_id, GError **error); /* NOT_FOUND */
/* Runs newest first, filtered by whatever is non-NULL / non-zero; limit 0: all.
 * GPtrArray of TsDbGateRun*, owning them. */
GPtrArray *ts_db_gate_list_runs(TsDb *db, const char *suite, gint64 device_id, const char *kind,
                                guint limit, GError **error);
/* The newest finished ("done") baseline of a suite on a device, or NULL with
 * TS_DB_ERROR_NOT_FOUND. */
TsDbGateRun *ts_db_gate_find_baseline(TsDb *db, const char *suite, gint64 device_id,
                                      GError **error);
/* Finished runs of a suite on a device whose git_commit starts with the hex prefix (at least
 * 4 digits, else TS_DB_ERROR_INVALID), newest first; empty when none. */
GPtrArray *ts_db_gate_find_by_commit(TsDb *db, const char *suite, gint64 device_id,
                                     const char *commit_prefix, GError **error);
/* The results of a run in insertion order (GPtrArray of TsDbGateResult*); artifacts are read
 * only when with_artifacts. */
GPtrArray *ts_db_gate_list_results(TsDb *db, gint64 run_id, gboolean with_artifacts,
                                   GError **error);
/* A stored artifact by hash, or NULL with TS_DB_ERROR_NOT_FOUND. entry/backend optional. */
GBytes *ts_db_gate_get_artifact(TsDb *db, const char *hash, char **entry, char **backend,
                                GError **error);

/* ---- kernel sources ---- */

/* Keeps the source (and the file it came from, or NULL) of a kernel-language op, so readers
 * of the cache can register the op again; storing it twice keeps the first. */
gboolean ts_db_put_kernel_source(TsDb *db, const char *op, const char *path, const char *source,
                                 GError **error);
/* The stored source of op: TRUE with *source (and *path, when asked; NULL if unknown) set, or
 * FALSE with TS_DB_ERROR_NOT_FOUND when the cache has none. */
gboolean ts_db_get_kernel_source(TsDb *db, const char *op, char **path, char **source,
                                 GError **error);

G_END_DECLS
