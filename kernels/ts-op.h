/* ts-op.h — the op library and the trial spine.
 *
 * An op declares its signature (tensor templates with symbolic dims), the dims and float
 * parameters its kernels take, the dtypes it accepts, its default schedule space per target,
 * FLOP and byte counts, a reference with f64 accumulation, and a lowering from a schedule point
 * to Tile IR. A workload (TsOpInstance) is an op at one shape and dtype policy.
 *
 * ts_op_run() is one trial: lower → emit → compile → fresh random inputs, poisoned outputs →
 * run → verify against the reference → time. Failures of the candidate itself (compile error,
 * wrong result) are statuses in the result, not GErrors: the tuner records and goes on.
 */
#pragma once

#include <glib.h>

#include "ts-backend.h"
#include "ts-ir.h"
#include "ts-sched.h"
#include "ts-tile.h"

G_BEGIN_DECLS

/* Version of the kernel generators (lowerings + emitters + primitive libraries): part of every
 * schedule-cache key, bumped whenever generated code for the same point can change speed. */
#define TS_OP_EMIT_VERSION "tessera-kgen-7"

#define TS_OP_ERROR (ts_op_error_quark())
GQuark ts_op_error_quark(void);

typedef enum {
  TS_OP_ERROR_UNKNOWN_OP,
  TS_OP_ERROR_DTYPE,    /* dtype or policy the op does not support */
  TS_OP_ERROR_SHAPE,    /* missing, extra or invalid dims */
  TS_OP_ERROR_SCHEDULE, /* a point that violates the op's constraints, or an unknown knob */
  TS_OP_ERROR_TARGET,   /* no lowering for this backend */
} TsOpError;

typedef struct _TsOpDef TsOpDef;
typedef struct _TsOpInstance TsOpInstance;

/* The catalog, in declaration order. */
guint ts_op_count(void);
const TsOpDef *ts_op_nth(guint i);
const TsOpDef *ts_op_lookup(const char *name); /* NULL if unknown */
const char *ts_op_name(const TsOpDef *op);
const char *ts_op_summary(const TsOpDef *op);
/* TRUE for ops whose FLOPs are matrix products (tensor cores on a GPU): gemm, attention. */
gboolean ts_op_tensor_math(const TsOpDef *op);
/* Default space for a backend ("cpu"), including the op's constraints. NULL if none. */
const char *ts_op_default_space(const TsOpDef *op, const char *backend);
/* Its default point there (fills the knobs a user's point leaves out). NULL if none. */
const char *ts_op_default_point(const TsOpDef *op, const char *backend);
/* The default point for fp8 inputs where it differs from ts_op_default_point, else NULL. */
const char *ts_op_fp8_default_point(const TsOpDef *op, const char *backend);
/* Comma-separated dims the op needs ("M,N,K"); a kernel file's as its signature spells them. */
char *ts_op_dims(const TsOpDef *op);

/* A kernel of the kernel language (compiler/ts-lang.h) as an op: parsed, checked, lowered and
 * registered under "kernel:NAME@HASH" (HASH: the source's, so an edited kernel is another
 * workload), after which ts_op_lookup and ts_op_instance_new find it like a built-in op. `name`
 * picks a kernel of the file (NULL: the first), and may set its flags (bool parameters):
 * "flash_attention+causal" or "+causal=false"; a flag set otherwise than its default makes
 * another op, "kernel:NAME+causal@HASH". Registering the same source again returns the op
 * registered before. Errors: the language's (with the file, line and caret), an unknown flag,
 * and a body the lowering does not take yet. */
const TsOpDef *ts_op_register_kernel(const char *src, const char *path, const char *name,
                                     GError **error);
const TsOpDef *ts_op_load_kernel(const char *path, const char *name, GError **error);
/* The op `op` ("kernel:NAME@HASH") registered from src (a worker's request, a cache's stored
 * source): its kernel NAME, and an error unless src is the text that hashes to HASH. */
const TsOpDef *ts_op_register_kernel_op(const char *op, const char *src, const char *path,
                                        GError **error);
/* A kernel op's source and file (NULL for a built-in op), and the dtype its tensors declare. */
const char *ts_op_kernel_source(const TsOpDef *op);
const char *ts_op_kernel_path(const TsOpDef *op);
const char *ts_op_kernel_dtype(const TsOpDef *op);
/* The built-in op whose kernels a kernel op runs ("gemm" for a GEMM kernel file, whose body
 * lowers through gemm's templates), or NULL: what models of the built-in's work apply to. */
const char *ts_op_kernel_template(const TsOpDef *op);
/* Its @kernel.autotune budget_ms (0: none) and cache file (NULL: none, else as written). */
double ts_op_kernel_budget_ms(const TsOpDef *op);
const char *ts_op_kernel_cache(const TsOpDef *op);

/* A workload: op + shape + dtype policy. Validates everything a user can get wrong, with
 * messages naming the op, the dim or the dtype. */
TsOpInstance *ts_op_instance_new(const char *op, const char *shape, const char *dtype,
                                 GError **error);
void ts_op_instance_free(TsOpInstance *inst);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsOpInstance, ts_op_instance_free)
const TsOpDef *ts_op_instance_op(const TsOpInstance *inst);
const TsShape *ts_op_instance_shape(const TsOpInstance *inst);
const TsDtypePolicy *ts_op_instance_dtype(const TsOpInstance *inst);
/* The output's storage dtype: the inputs' (the policy's storage), or bf16 for fp8 inputs. */
TsDtype ts_op_instance_out_dtype(const TsOpInstance *inst);
/* References that cost more multiply-adds than this (about a second of f64 on one core) are
 * computed on a sample of the output, with every element still scanned for NaN/Inf; each
 * trial says which check ran (TsTrialResult.verification). */
#define TS_OP_FULL_REFERENCE_WORK 2147483648.0 /* 2^31 */
/* The instance's limit (tests lower it to sample small problems). */
void ts_op_instance_set_reference_limit(TsOpInstance *inst, double work);
/* The f64 reference output for the inputs that `seed` draws (computed on first use and kept),
 * NaN where a sampled reference does not check; *n (optional) gets its length and *how
 * (optional) the verification text trials of this data carry. Owned by the instance. */
const double *ts_op_instance_reference(TsOpInstance *inst, guint64 seed, gsize *n,
                                       const char **how);
/* Canonical key text "gemm M=1024,N=1024,K=1024 f32". */
char *ts_op_instance_describe(const TsOpInstance *inst);
double ts_op_instance_flops(const TsOpInstance *inst);
double ts_op_instance_bytes(const TsOpInstance *inst);
/* How a row-wise op's kernel (the row ops, elementwise maps, a kernel file's of either form)
 * reads its data at a point: rows of cols elements (a map: one row of all of them), each row
 * read `passes` times, the first from memory and the others from wherever its rows then live
 * (a CPU's caches; on a GPU its registers, or L2 when it is streamed through them in tiles). */
typedef struct {
  double rows, cols, passes;
  /* exps evaluated an element (a CPU's vector exp costs dozens of FMA slots: softmax is bound
   * by them); fast_exp: by math("fast")'s short polynomial (ts_vf_exp_fast), whose time the
   * device's measured rate says (6.1 against exp's 9.5 cycles a vector on Zen 4, slower than
   * exp on Zen 1) */
  double exps;
  gboolean fast_exp;
  /* the passes that only move data run in the loop of the one bound by its exps, on other
   * rows (the CPU softmax's pipeline("skew")): hidden under it, not beside it */
  gboolean skewed;
} TsOpRowWork;
/* FALSE for ops of other forms (gemm, attention) and for knobs the op's lowering refuses. */
gboolean ts_op_instance_row_work(const TsOpInstance *inst, const TsSchedPoint *point,
                                 gboolean cuda, TsOpRowWork *work);
/* The environment a space's constraints see: shape dims plus device limits. */
TsSchedEnv *ts_op_instance_env(const TsOpInstance *inst, const TsDeviceInfo *device);

/* The op's default space for the backend, parsed; or `space_text` when non-NULL (the op's
 * constraints are added to it either way). */
TsSchedSpace *ts_op_instance_space(const TsOpInstance *inst, const char *backend,
                                   const char *space_text, GError **error);
/* A user's point completed with the default point's knobs it lacks, checked against the op's
 * constraints (unknown knobs and violations are TS_OP_ERROR_SCHEDULE naming them). */
TsSchedPoint *ts_op_instance_complete_point(const TsOpInstance *inst, const char *backend,
                                            const TsSchedPoint *point, GError **error);

/* Why a complete point cannot run well on the device, judged from static resources before
 * anything is compiled (a vector wider than the SIMD registers, more threads than cores), or
 * NULL when it fits. */
char *ts_op_instance_prune_reason(const TsOpInstance *inst, const TsSchedPoint *point,
                                  const TsDeviceInfo *device);

/* Lowering inspector stages. */
TsGraph *ts_op_instance_graph(const TsOpInstance *inst);
TsTileKernel *ts_op_lower(const TsOpInstance *inst, const char *backend,
                          const TsSchedPoint *point, GError **error);
/* Target source for a complete point; the entry symbol is written to *entry (optional), and
 * to *launch_ints (optional; gint64, maybe empty) the values of the kernel's launch constants,
 * which a launch passes after the op's dims (ts_module_bind_ints): the C target's GEMM reads
 * its block sizes so, and every point that differs only in them has the same source, one
 * compile. */
char *ts_op_emit(const TsOpInstance *inst, const char *backend, const TsSchedPoint *point,
                 char **entry, GArray **launch_ints, GError **error);
/* The point's kernel for `backend`: emitted in its language and compiled (through the artifact
 * cache). A compile error is a TS_BACKEND_ERROR_COMPILE. */
TsModule *ts_op_compile(const TsOpInstance *inst, TsBackend *backend, const TsSchedPoint *point,
                        GError **error);

typedef enum {
  TS_TRIAL_OK,
  TS_TRIAL_COMPILE_ERROR,
  TS_TRIAL_RUNTIME_ERROR,
  TS_TRIAL_TIMEOUT,
  TS_TRIAL_WRONG_RESULT,
} TsTrialStatus;

const char *ts_trial_status_name(TsTrialStatus status); /* "ok", "compile_error", ... */

/* Called around the timed launches of a trial (after warm-up and verification): what a
 * profiler counts there (CPU perf counters) belongs to exactly those launches. */
typedef struct {
  void (*begin)(gpointer data);
  void (*end)(gpointer data, guint n_launches);
  gpointer data;
} TsMeasureHooks;

typedef struct {
  guint64 seed;       /* input data; the same seed gives the same inputs */
  gboolean verify;    /* default TRUE */
  guint n_warmup;     /* default 2 */
  guint min_samples;  /* default 5 */
  guint max_samples;  /* default 50 */
  double target_ms;   /* sample at least this much kernel time; default 300 */
  double rel_spread;  /* ... and until (q3 - q1) / median <= this (default 0.02), or 10x
                         target_ms, or max_samples */
  const TsMeasureHooks *hooks; /* default NULL */
  /* Take turns with the host's other processes (ts-measure-lock.h): compile and verify under
   * the host's shared lock, sample under the device's exclusive one. Default TRUE. */
  gboolean exclusive;
  /* Told who holds a lock this run waits for, then NULL when the wait is over (a worker tells
   * its parent, whose timeout stops while the lock is not its to take). Default NULL. */
  void (*lock_wait)(gpointer data, const char *holder);
  gpointer lock_wait_data;
} TsRunOptions;

void ts_run_options_init(TsRunOptions *options);

typedef struct {
  TsTrialStatus status;
  char *message;     /* compiler diagnostics, error text, or "" */
  double rel_error;  /* ||out - ref|| / ||ref||, when verified */
  double tolerance;
  /* Which check ran: "full f64 reference (N elements)", "sampled f64 reference: ... (n of N
   * elements); every element scanned for NaN/Inf", "none" (verify off), or NULL when the
   * candidate never ran. */
  char *verification;
  GArray *samples_ns; /* double */
  /* Where kernels run on the host (ts_backend_runs_on_host): each sample's CPU time
   * (TsCpuTime), beside samples_ns; else NULL. */
  GArray *cpu_samples;
  double median_ns, min_ns, max_ns;
  double thread_cpu_ns, process_cpu_ns; /* medians of cpu_samples; 0 without them */
  double gflops, gbps; /* from the median */
  double compile_ms;
  double compile_cpu_ms; /* ts_module_compile_cpu_ms; 0 when from cache */
  gboolean cache_hit;
  char *artifact;    /* module hash */
  TsModuleResources resources; /* registers, shared memory, spills (GPU); -1 when unknown */
  char *counters_json; /* per-launch hardware counters (a JSON object) when collected, or NULL */
  /* GPU hardware metrics of a separate pass (ts_prof_kernel_metrics_to_json), or
   * {"unavailable": why}, when a worker was asked for them (tessera-tune profile); else NULL */
  char *gpu_metrics_json;
  /* Where it was measured: the worker's host (NULL: this process's), and in a distributed tune
   * the MPI rank whose worker ran it (-1 outside MPI). */
  char *host;
  gint rank;
} TsTrialResult;

void ts_trial_result_free(TsTrialResult *result);
/* A result with no samples yet (status ok, empty message). */
TsTrialResult *ts_trial_result_new(void);
/* Fills median/min/max and the rates from samples_ns (non-empty), and the CPU-time medians
 * from cpu_samples where present. */
void ts_trial_result_summarise(TsTrialResult *result, const TsOpInstance *inst);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsTrialResult, ts_trial_result_free)

/* One trial of a complete point (see ts_op_instance_complete_point). GError only for failures
 * of the machinery (allocation, unsupported target), never of the candidate. */
TsTrialResult *ts_op_run(TsOpInstance *inst, TsBackend *backend, const TsSchedPoint *point,
                         const TsRunOptions *options, GError **error);
/* The same with source the caller supplies (test hooks: a deliberately wrong kernel, or code
 * that does not compile). */
TsTrialResult *ts_op_run_source(TsOpInstance *inst, TsBackend *backend, const char *source,
                                const char *entry, const GArray *launch_ints,
                                const TsRunOptions *options, GError **error);

/* ---- repeated timing of one compiled kernel (the perf gate's A/B rounds) ----
 *
 * A timer owns one module's buffers with fresh inputs, launched and verified once, and then
 * samples it as often as asked: two timers of one instance (a baseline binary and the current
 * one) can alternate in short rounds, so both see the same machine state. */
typedef struct _TsOpTimer TsOpTimer;

/* Prepares `module` (compiled from this instance's kernel, or loaded from a stored artifact;
 * borrowed: it must outlive the timer) exactly as ts_op_run does: inputs from options->seed, a
 * poisoned output, one launch, and verification unless options->verify is FALSE. *result
 * (required) always receives the verification result (no samples). Returns NULL when the
 * candidate failed (the status and message are in *result, error unset) or with a GError when
 * the machinery did. */
TsOpTimer *ts_op_timer_new(TsOpInstance *inst, TsBackend *backend, TsModule *module,
                           const TsRunOptions *options, TsTrialResult **result, GError **error);
/* A timer of another module of the same instance that times on `peer`'s buffers (borrowed:
 * the peer must outlive it), after verifying the module on them. Two kernels compared side by
 * side must also share their data's addresses: in separate allocations, cache-set and page
 * placement alone can make identical code differ by several percent for a whole process. */
TsOpTimer *ts_op_timer_new_sibling(TsOpTimer *peer, TsOpInstance *inst, TsModule *module,
                                   const TsRunOptions *options, TsTrialResult **result,
                                   GError **error);
void ts_op_timer_free(TsOpTimer *timer);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsOpTimer, ts_op_timer_free)
/* n_warmup untimed launches, then n timed ones into samples_ns. */
gboolean ts_op_timer_sample(TsOpTimer *timer, guint n_warmup, guint n, double *samples_ns,
                            GError **error);
/* Test hook, never for real measurements: after every timed launch, spins for `fraction` of
 * that launch's duration and adds the spin to the sample — a real, noisy slowdown of the given
 * size, so tests and benchmarks can fake a regression of a known size. 0 turns it off. */
void ts_op_timer_set_slowdown(TsOpTimer *timer, double fraction);

G_END_DECLS
