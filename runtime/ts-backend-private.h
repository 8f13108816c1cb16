/* ts-backend-private.h — what a backend implementation sees: the vtable (TsBackendClass) and
 * the base structs it embeds as first members. ts-backend.c owns everything all targets share
 * (argument checks, bounds checks, the artifact cache and its keys, corrupt-artifact recovery,
 * compile timing), so an implementation only talks to its device. Never installed.
 *
 * Adding a backend (nvtop's shape): define one `const TsBackendClass ts__backend_<name>_class`
 * and list it in the registry table in ts-backend.c, in the order "auto" should try it. A
 * backend whose vendor library is dlopen'ed (CUDA: libcuda, libnvrtc, libcupti) reports a
 * missing library or device from open() as TS_BACKEND_ERROR_UNAVAILABLE; "auto" then moves on.
 */
#pragma once

#include "ts-artifact-cache.h"
#include "ts-backend.h"
#include "ts-trace.h"

G_BEGIN_DECLS

typedef struct _TsBackendClass TsBackendClass;

/* Base of every backend object. open() allocates the implementation's struct (TsBackend first),
 * fills klass and info; ts-backend.c sets cache. */
struct _TsBackend {
  const TsBackendClass *klass;
  TsDeviceInfo info;      /* strings owned; freed by ts-backend.c */
  TsArtifactCache *cache; /* owned by ts-backend.c */
  TsTrace *trace;         /* ts_backend_set_trace; NULL when not recording. ts-backend.c records
                             compiles, allocations and copies; time() records each launch it
                             times (host clock, or device records mapped onto it) */
};

/* Base of every module. load() allocates the implementation's struct (TsModule first);
 * ts-backend.c fills and frees the base fields. A module must not outlive its backend. */
struct _TsModule {
  TsBackend *backend;
  char *hash;        /* cache key, hex SHA-256 */
  char *path;        /* the artifact it was loaded from: what ts_module_get_artifact reads */
  char *entry;
  char *log;         /* compiler warnings, never NULL once returned */
  double compile_ms; /* 0 on a cache hit */
  double compile_cpu_ms; /* the compiling thread's CPU and its compiler processes'; 0 likewise */
  gboolean from_cache;
  GArray *bound_ints; /* gint64: appended to every launch's ints (ts_module_bind_ints), or NULL */
  TsModuleResources resources; /* load() fills it: ts__module_resources_init(), then what
                                  the target knows */
};

/* Base of every buffer. alloc() allocates the implementation's struct (TsBuffer first) and sets
 * both fields; ts-backend.c has already checked every copy against size. */
struct _TsBuffer {
  TsBackend *backend;
  gsize size;
};

struct _TsBackendClass {
  const char *name;            /* "cpu", "cuda": what ts_backend_open() takes */
  const char *artifact_suffix; /* ".so", ".cubin": cache entries are <key><suffix> */

  /* Opens the device and describes it. TS_BACKEND_ERROR_UNAVAILABLE when there is none. */
  TsBackend *(*open)(GError **error);
  /* Releases what open() acquired and frees the struct (base fields are already freed). */
  void (*close)(TsBackend *backend);

  /* Feeds the checksum everything besides the source text and info.toolchain that changes the
   * artifact: compiler path and version line, flags, target arch, prelude headers. */
  void (*hash_inputs)(TsBackend *backend, const TsSource *source, GChecksum *checksum);
  /* Builds source into the artifact at out_path, working inside workdir (a fresh private
   * directory, removed afterwards). *log receives warnings on success (may stay NULL). Failure:
   * TS_BACKEND_ERROR_COMPILE carrying the compiler's diagnostics verbatim. */
  gboolean (*compile)(TsBackend *backend, const TsSource *source, const char *workdir,
                      const char *out_path, char **log, GError **error);
  /* Loads the artifact at path and resolves entry. On failure sets *bad_artifact when the file
   * itself is unusable (truncated, foreign), so the cache drops it and rebuilds once; a missing
   * entry symbol is not a bad artifact. */
  TsModule *(*load)(TsBackend *backend, const char *path, const char *entry,
                    gboolean *bad_artifact, GError **error);
  /* Unloads and frees the struct (base fields are already freed). */
  void (*module_free)(TsModule *module);

  TsBuffer *(*alloc)(TsBackend *backend, gsize bytes, GError **error);
  void (*buffer_free)(TsBackend *backend, TsBuffer *buffer);
  /* bytes <= buffer size is already checked. */
  gboolean (*upload)(TsBackend *backend, TsBuffer *dst, const void *src, gsize bytes,
                     GError **error);
  gboolean (*download)(TsBackend *backend, void *dst, const TsBuffer *src, gsize bytes,
                       GError **error);

  /* The launch is already checked: every buffer non-NULL and of this backend, arrays present. */
  gboolean (*launch)(TsBackend *backend, TsModule *module, const TsLaunch *launch,
                     GError **error);
  /* Each backend times the way its device allows (host clock around a synchronous call on the
   * CPU; kernel records or events on a GPU, never a host clock around an async launch). */
  gboolean (*time)(TsBackend *backend, TsModule *module, const TsLaunch *launch,
                   guint n_warmup, guint n_samples, double *samples_ns, GError **error);
  /* Optional (NULL: kernels do not run on the host): time, with each sample's CPU time too. */
  gboolean (*time_cpu)(TsBackend *backend, TsModule *module, const TsLaunch *launch,
                       guint n_warmup, guint n_samples, double *samples_ns, TsCpuTime *cpu,
                       GError **error);

  /* Optional (NULL: the backend has no hardware counters). Collects metrics over launch's work
   * into values (name → g_new'd double); names the device lacks go to unsupported when it is
   * non-NULL, else they are an UNSUPPORTED error. metrics is non-empty. */
  gboolean (*collect_metrics)(TsBackend *backend, const char *const *metrics,
                              TsBackendLaunchFunc launch, gpointer data, GHashTable *values,
                              GPtrArray *unsupported, GError **error);
  /* Optional: told after backend->trace changed (trace may be NULL), so a backend that records
   * device activity of its own (CUPTI records) starts or stops it. */
  void (*trace_changed)(TsBackend *backend, TsTrace *trace);
  /* Optional (NULL: never). Why the device state of this process can no longer be trusted (a
   * lost CUDA context, a kernel that wrote outside its buffers), or NULL while it can. */
  const char *(*lost)(TsBackend *backend);
};

/* Registered implementations. */
extern const TsBackendClass ts__backend_cpu_class;
extern const TsBackendClass ts__backend_cuda_class;

/* Shared helpers for implementations. */

/* Runs argv (in cwd when non-NULL) with stdout and stderr merged into *output (valid UTF-8,
 * never NULL on success). Returns FALSE only when it could not be started; *exit_status is the
 * exit code, or -1 when killed by a signal. env_override: NULL-terminated "NAME=value" pairs. */
gboolean ts__run_capture(const char *const *argv, const char *cwd,
                         const char *const *env_override, char **output, int *exit_status,
                         GError **error);
/* Where a source's code starts: past a leading block comment (the emitter's banner naming the
 * op, shape and point), which compilers drop; text itself when there is none. *banner_lines:
 * the newlines up to there, which number the code's lines. */
const char *ts__source_code_start(const char *text, guint32 *banner_lines);
/* Removes a directory and the plain files in it (build dirs are flat). NULL is fine. */
void ts__remove_flat_dir(const char *dir);
/* All fields unknown (-1). */
void ts__module_resources_init(TsModuleResources *resources);
/* Frees the strings inside info (not info itself). */
void ts__device_info_clear(TsDeviceInfo *info);
/* An x86 core's family and model from CPUID leaf 1's EAX (the signature), extended fields
 * included: 0x00a00f11 is family 25, model 1 (a Zen 3 EPYC). */
void ts__x86_family_model(guint32 signature, guint *family, guint *model);

G_END_DECLS
