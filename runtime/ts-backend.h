/* ts-backend.h — the device abstraction every target implements (cpu now; cuda and replay
 * later): describe the device, compile generated source into a loadable module (with an
 * artifact cache keyed by the source hash), allocate and copy memory, launch, and time.
 *
 * Kernel ABI shared by all targets. A generated kernel's entry point receives its buffers, then
 * its integer parameters (shape dims in the op's declared order), then its floating-point
 * parameters (alpha, eps ...):
 *   C target:    void entry(void *const *bufs, const int64_t *ints, const double *floats);
 *   CUDA target: extern "C" __global__ void entry(const TsArgs args), one by-value struct
 *                { void *bufs[8]; long long ints[8]; double floats[4]; } (ts_cuda_prims.cuh),
 *                and beside it extern "C" __constant__ unsigned int <entry>_launch[7] =
 *                {grid x, y, z, block x, y, z, dynamic smem bytes}: a CUDA module carries its
 *                own launch shape, so a stored binary can be launched without its source.
 * Errors are TS_BACKEND_ERROR, messages name the call that failed and what to do.
 */
#pragma once

#include <glib.h>

#include "ts-trace.h"

G_BEGIN_DECLS

#define TS_BACKEND_ERROR (ts_backend_error_quark())
GQuark ts_backend_error_quark(void);

typedef enum {
  TS_BACKEND_ERROR_UNAVAILABLE, /* no such backend / no device ("no CUDA device") */
  TS_BACKEND_ERROR_COMPILE,     /* message carries the compiler's own diagnostics */
  TS_BACKEND_ERROR_LOAD,        /* dlopen / module load / missing entry symbol */
  TS_BACKEND_ERROR_MEMORY,      /* allocation or copy failed */
  TS_BACKEND_ERROR_LAUNCH,      /* launch or execution failed */
  TS_BACKEND_ERROR_IO,          /* cache directory, temp files */
  TS_BACKEND_ERROR_UNSUPPORTED, /* this backend, build or device cannot do what was asked
                                   (hardware metrics on the CPU; a metric the GPU lacks) */
  TS_BACKEND_ERROR_PERMISSION,  /* the driver refuses: GPU performance counters restricted to
                                   administrators; the message carries the fix */
} TsBackendError;

typedef enum { TS_LANG_C, TS_LANG_CUDA } TsSourceLang;

typedef struct {
  TsSourceLang lang;
  const char *text;  /* the whole translation unit */
  const char *entry; /* exported entry symbol */
} TsSource;

typedef struct {
  char *backend;        /* "cpu" */
  char *name;           /* "AMD EPYC 7B13" */
  char *arch;           /* "x86_64+avx2+fma+f16c", "sm_90a" */
  guint compute_units;  /* online cores, or SMs */
  guint64 memory_bytes; /* host RAM, or device memory */
  guint64 l1_bytes;     /* per core / per SM (data) */
  guint64 l2_bytes;     /* per core on CPUs, whole chip on GPUs */
  guint64 l3_bytes;     /* 0 when absent */
  guint64 smem_per_block; /* largest shared-memory block (GPU); 0 on the CPU */
  guint vector_bits;    /* widest float SIMD register: 128, 256, 512 */
  char *toolchain;      /* "gcc 12.2.0", "nvrtc 13.0" — part of every cache key */
  /* Which of the host's devices it is, for taking turns at it (ts-measure-lock.h): "host" for
   * the CPU, "cuda-pci-0000:19:00" for a GPU. Never part of a cache key. */
  char *unit;
} TsDeviceInfo;

/* What a compiled kernel uses per thread and per block, from the compiler's (ptxas via
 * nvJitLink) report or the driver; all -1 when unknown (the CPU backend). */
typedef struct {
  gint registers;     /* per thread */
  gint smem_static;   /* bytes per block, declared in the kernel */
  gint smem_dynamic;  /* bytes per block, requested at launch */
  gint local_bytes;   /* stack frame per thread (local memory) */
  gint spill_stores;  /* bytes of register spill stores per thread */
  gint spill_loads;
  gint threads;       /* threads per block of the launch */
} TsModuleResources;

typedef struct _TsBackend TsBackend;
typedef struct _TsModule TsModule;
typedef struct _TsBuffer TsBuffer;

/* The most ints a launch passes (its own and the module's bound ones together). */
#define TS_LAUNCH_MAX_INTS 32

typedef struct {
  TsBuffer *const *buffers;
  guint n_buffers;
  const gint64 *ints;
  guint n_ints;
  const double *floats;
  guint n_floats;
  guint grid[3], block[3]; /* CUDA launch shape: all zero means the module's own
                              (<entry>_launch); ignored by the CPU backend */
  guint smem_bytes;        /* dynamic shared memory, with grid; ignored by the CPU backend */
} TsLaunch;

/* "cpu", "cuda", or "auto" for the best available backend (cuda when a device is present,
 * else cpu). Unknown names list the known ones; "cuda" with no driver or device is
 * TS_BACKEND_ERROR_UNAVAILABLE beginning "no CUDA device: ". */
TsBackend *ts_backend_open(const char *name, GError **error);
void ts_backend_free(TsBackend *backend);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsBackend, ts_backend_free)
/* Names of the backends compiled in, NULL-terminated, static. */
const char *const *ts_backend_names(void);

const TsDeviceInfo *ts_backend_describe(TsBackend *backend);

/* NULL while the backend can work; else why the process must be replaced before it can again:
 * an illegal address, trap or illegal instruction has made the CUDA context unusable (every
 * later call fails), or a CPU kernel wrote past the end of a buffer. The tuner's worker exits
 * when this is set, so the next candidate gets a fresh process. */
const char *ts_backend_lost(TsBackend *backend);

/* Records what the backend does into trace (a reference is taken) until set to NULL: compiles,
 * allocations and frees, copies, and every launch ts_backend_time runs (warm-ups included,
 * their detail "warm-up"). */
void ts_backend_set_trace(TsBackend *backend, TsTrace *trace);
const char *ts_backend_name(TsBackend *backend);
/* The language of the sources the backend compiles (what ts_op_emit writes for it). */
TsSourceLang ts_backend_source_lang(TsBackend *backend);

/* Artifact cache root: $TESSERA_ARTIFACT_DIR or $XDG_CACHE_HOME/tessera/artifacts by default;
 * NULL restores it. Takes effect from the next compile. The directory is created on first use;
 * one that cannot be is TS_BACKEND_ERROR_IO from ts_backend_compile, naming the path. */
void ts_backend_set_cache_dir(TsBackend *backend, const char *dir);
const char *ts_backend_get_cache_dir(TsBackend *backend);

/* Compiles (or finds in the artifact cache) and loads a module. Compile failures are
 * TS_BACKEND_ERROR_COMPILE with the compiler's diagnostics in the message. */
TsModule *ts_backend_compile(TsBackend *backend, const TsSource *source, GError **error);
void ts_module_free(TsModule *module);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsModule, ts_module_free)
gboolean ts_module_from_cache(const TsModule *module); /* TRUE when no compile happened */
const char *ts_module_hash(const TsModule *module);    /* cache key, hex */
const char *ts_module_log(const TsModule *module);     /* compiler warnings / link log, or "" */
double ts_module_compile_ms(const TsModule *module);   /* 0 when from cache */
/* CPU time of the compile: the compiling thread's and its compiler processes' (0 when from
 * cache). Unlike compile_ms it does not grow when other work shares the cores. */
double ts_module_compile_cpu_ms(const TsModule *module);
const char *ts_module_entry(const TsModule *module);
/* Integers appended to the ints of every launch of the module: the values a schedule point
 * gives its kernel's launch constants (block sizes the kernel reads at run time, so that one
 * compiled kernel serves every point that differs only in them; ts_op_compile binds them).
 * Copied; n = 0 unbinds. More than TS_LAUNCH_MAX_INTS / 2 is TS_BACKEND_ERROR_LAUNCH. */
gboolean ts_module_bind_ints(TsModule *module, const gint64 *ints, guint n, GError **error);
const gint64 *ts_module_bound_ints(const TsModule *module, guint *n); /* NULL when none */   /* the entry symbol it was loaded with */
const TsModuleResources *ts_module_resources(const TsModule *module);

/* The module's artifact (the .so or .cubin it was loaded from), exactly as built: what the perf
 * gate stores so a later check can run the very same binary side by side with a new one.
 * TS_BACKEND_ERROR_IO when the file cannot be read. */
GBytes *ts_module_get_artifact(const TsModule *module, GError **error);
/* Loads an artifact from ts_module_get_artifact (of this backend kind and device arch) without
 * compiling anything: it is written into the artifact cache under the hash of its bytes, then
 * loaded. A foreign or truncated artifact is TS_BACKEND_ERROR_LOAD naming what was wrong; a
 * missing entry symbol too. ts_module_hash() is then the hex SHA-256 of the bytes. */
TsModule *ts_backend_load_artifact(TsBackend *backend, GBytes *artifact, const char *entry,
                                   GError **error);

TsBuffer *ts_backend_alloc(TsBackend *backend, gsize bytes, GError **error);
void ts_backend_buffer_free(TsBackend *backend, TsBuffer *buffer);
gsize ts_buffer_size(const TsBuffer *buffer);
gboolean ts_backend_upload(TsBackend *backend, TsBuffer *dst, const void *src, gsize bytes,
                           GError **error);
gboolean ts_backend_download(TsBackend *backend, void *dst, const TsBuffer *src, gsize bytes,
                             GError **error);

/* Runs the module's entry once and waits for it. */
gboolean ts_backend_launch(TsBackend *backend, TsModule *module, const TsLaunch *launch,
                           GError **error);
/* Runs n_warmup untimed launches, then n_samples timed ones; samples_ns[i] is the duration of
 * launch i in nanoseconds (CPU: monotonic clock around the call; GPU: kernel records). */
gboolean ts_backend_time(TsBackend *backend, TsModule *module, const TsLaunch *launch,
                         guint n_warmup, guint n_samples, double *samples_ns, GError **error);

/* CPU time of one timed launch whose kernel runs on the host: the calling thread's and the
 * whole process's (an OpenMP team's included). On a shared machine a preempted kernel's wall
 * time grows while its thread's CPU time does not; a team whose threads wait on a descheduled
 * peer shows process time below wall time x threads. */
typedef struct {
  double thread_ns, process_ns;
} TsCpuTime;

/* Whether the backend's kernels run on the host, so ts_backend_time_cpu can report CPU time. */
gboolean ts_backend_runs_on_host(TsBackend *backend);
/* ts_backend_time, and cpu[i] (ts_backend_runs_on_host backends only) launch i's CPU time;
 * cpu NULL: ts_backend_time itself. */
gboolean ts_backend_time_cpu(TsBackend *backend, TsModule *module, const TsLaunch *launch,
                             guint n_warmup, guint n_samples, double *samples_ns, TsCpuTime *cpu,
                             GError **error);

/* ---- hardware metrics (GPU performance counters) ----
 *
 * Counters of one stretch of GPU work, collected by CUPTI's range profiler: the work is run
 * inside one user range, once per replay pass the chosen metrics need (most need several), with
 * the L2 cache flushed before each pass outside the range, so every pass starts as a timed launch
 * does. The profiler serialises and replays the work, so what it measures is never a time the
 * tuner ranks by; gpu__time_duration is the profiled pass's own duration. */

/* Runs the work to be measured, exactly once per call, and returns when it has finished (a
 * ts_backend_launch; or ts_backend_time, which inside a metrics pass only launches: its
 * samples are NaN there). FALSE with error set stops the collection. */
typedef gboolean (*TsBackendLaunchFunc)(gpointer data, GError **error);

/* Collects `metrics` (NULL-terminated CUPTI metric names, "dram__bytes_read.sum") over what
 * launch runs and returns *values_out: name → double (g_new'd; the table frees both). Metrics
 * the device lacks: with unsupported_out, their names go there (NULL-terminated, maybe empty)
 * and the rest are collected; without it, TS_BACKEND_ERROR_UNSUPPORTED names them and the chip.
 * Errors: UNSUPPORTED on a backend without GPU counters (the CPU backend: it has perf counters
 * instead) or a build without CUPTI; PERMISSION when the driver restricts counters to
 * administrators (the message says how to lift it); UNAVAILABLE when libcupti is missing;
 * otherwise the failing CUPTI call, named. */
gboolean ts_backend_collect_metrics_with(TsBackend *backend, const char *const *metrics,
                                         TsBackendLaunchFunc launch, gpointer data,
                                         GHashTable **values_out, GStrv *unsupported_out,
                                         GError **error);
/* The same over one launch of module. */
gboolean ts_backend_collect_metrics(TsBackend *backend, TsModule *module, const TsLaunch *launch,
                                    const char *const *metrics, GHashTable **values_out,
                                    GStrv *unsupported_out, GError **error);
/* TRUE when the backend can collect hardware metrics at all (the cuda backend of a build with
 * CUPTI); the driver may still refuse them. */
gboolean ts_backend_has_metrics(TsBackend *backend);
/* What TS_BACKEND_ERROR_PERMISSION says: why the counters were refused and how to allow them. */
const char *ts_backend_counter_permission_help(void);

G_END_DECLS
