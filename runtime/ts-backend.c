/* ts-backend.c — the front of the backend layer: the registry of implementations, dispatch
 * through their vtables (ts-backend-private.h), and everything all targets share so each one
 * only talks to its device: argument and bounds checks, artifact keys, the artifact cache with
 * corrupt-entry recovery, compile timing, the error quark and a few helpers.
 */
#include "config.h"

#include "ts-backend-private.h"
#include "cuda/ts-cuda.h"

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <glib-unix.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

G_DEFINE_QUARK(ts-backend-error-quark, ts_backend_error)

/* ------------------------------------------------------------------------------------------ */
/* Registry */

/* The order is the preference of "auto". CUDA goes first (when the build found its headers):
 * its open() dlopens libcuda and fails with UNAVAILABLE on machines without a driver or device,
 * so "auto" falls through to the CPU, which is always there. */
static const TsBackendClass *const registry[] = {
#if TS_HAVE_CUDA
  &ts__backend_cuda_class,
#endif
  &ts__backend_cpu_class,
};

const char *const *
ts_backend_names(void)
{
  static const char *names[G_N_ELEMENTS(registry) + 1];
  static gsize init = 0;
  if (g_once_init_enter(&init)) {
    for (gsize i = 0; i < G_N_ELEMENTS(registry); i++)
      names[i] = registry[i]->name;
    names[G_N_ELEMENTS(registry)] = NULL;
    g_once_init_leave(&init, 1);
  }
  return names;
}

static TsBackend *
open_class(const TsBackendClass *klass, GError **error)
{
  TsBackend *backend = klass->open(error);
  if (backend == NULL)
    return NULL;
  g_assert(backend->klass == klass);
  g_autofree char *dir = ts__artifact_cache_default_dir();
  backend->cache = ts__artifact_cache_new(dir);
  return backend;
}

static void remove_orphaned_build_dirs(void);

TsBackend *
ts_backend_open(const char *name, GError **error)
{
  g_return_val_if_fail(name != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  remove_orphaned_build_dirs();

  if (strcmp(name, "auto") == 0) {
    g_autoptr(GString) reasons = g_string_new(NULL);
    for (gsize i = 0; i < G_N_ELEMENTS(registry); i++) {
      g_autoptr(GError) local = NULL;
      TsBackend *backend = open_class(registry[i], &local);
      if (backend != NULL)
        return backend;
      g_string_append_printf(reasons, "%s%s: %s", reasons->len ? "; " : "", registry[i]->name,
                             local->message);
    }
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNAVAILABLE,
                "no backend is available (%s)", reasons->str);
    return NULL;
  }

  for (gsize i = 0; i < G_N_ELEMENTS(registry); i++)
    if (strcmp(name, registry[i]->name) == 0)
      return open_class(registry[i], error);

  g_autofree char *known = g_strjoinv(", ", (char **)ts_backend_names());
  g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNAVAILABLE,
              "unknown backend '%s'; known backends: auto, %s", name, known);
  return NULL;
}

void
ts__device_info_clear(TsDeviceInfo *info)
{
  if (info == NULL)
    return;
  g_clear_pointer(&info->backend, g_free);
  g_clear_pointer(&info->name, g_free);
  g_clear_pointer(&info->arch, g_free);
  g_clear_pointer(&info->toolchain, g_free);
  g_clear_pointer(&info->unit, g_free);
}

void
ts_backend_free(TsBackend *backend)
{
  if (backend == NULL)
    return;
  ts__device_info_clear(&backend->info);
  g_clear_pointer(&backend->cache, ts__artifact_cache_free);
  g_clear_pointer(&backend->trace, ts_trace_unref);
  backend->klass->close(backend);
}

const TsDeviceInfo *
ts_backend_describe(TsBackend *backend)
{
  g_return_val_if_fail(backend != NULL, NULL);
  return &backend->info;
}

const char *
ts_backend_lost(TsBackend *backend)
{
  g_return_val_if_fail(backend != NULL, NULL);
  return backend->klass->lost ? backend->klass->lost(backend) : NULL;
}

const char *
ts_backend_name(TsBackend *backend)
{
  g_return_val_if_fail(backend != NULL, NULL);
  return backend->klass->name;
}

TsSourceLang
ts_backend_source_lang(TsBackend *backend)
{
  return g_strcmp0(ts_backend_name(backend), "cuda") == 0 ? TS_LANG_CUDA : TS_LANG_C;
}

void
ts_backend_set_cache_dir(TsBackend *backend, const char *dir)
{
  g_return_if_fail(backend != NULL);
  g_autofree char *owned = dir != NULL ? g_strdup(dir) : ts__artifact_cache_default_dir();
  ts__artifact_cache_free(backend->cache);
  backend->cache = ts__artifact_cache_new(owned);
}

const char *
ts_backend_get_cache_dir(TsBackend *backend)
{
  g_return_val_if_fail(backend != NULL, NULL);
  return ts__artifact_cache_dir(backend->cache);
}

/* ------------------------------------------------------------------------------------------ */
/* Compile: key, cache, recovery */

const char *
ts__source_code_start(const char *text, guint32 *banner_lines)
{
  *banner_lines = 0;
  const char *p = text;
  while (g_ascii_isspace(*p))
    p++;
  if (p[0] != '/' || p[1] != '*')
    return text;
  const char *end = strstr(p + 2, "*/");
  if (end == NULL)
    return text; /* not a comment: the compiler will say so */
  end += 2;
  for (const char *c = text; c < end; c++)
    *banner_lines += *c == '\n';
  return end;
}

/* Everything that decides the artifact's bytes. The version tag lets a change of this scheme
 * (or of the kernel ABI) retire old entries without anyone cleaning the cache. */
static char *
artifact_key(TsBackend *backend, const TsSource *source)
{
  g_autoptr(GChecksum) checksum = g_checksum_new(G_CHECKSUM_SHA256);
  ts__checksum_field(checksum, "tessera-artifact-v2", -1);
  ts__checksum_field(checksum, backend->klass->name, -1);
  ts__checksum_field(checksum, backend->info.toolchain, -1);
  guint32 lang = (guint32)source->lang;
  ts__checksum_field(checksum, &lang, sizeof lang);
  backend->klass->hash_inputs(backend, source, checksum);
  /* The code, not the banner: two sources that differ only there build the same bytes (the CPU
   * kernels take their shape at launch: a gemm point's code is the same at every M, N, K), so a
   * tuner going through many shapes of an op compiles each code once. The banner's line count
   * goes in all the same: it numbers the code's lines. */
  guint32 banner_lines = 0;
  const char *code = ts__source_code_start(source->text, &banner_lines);
  ts__checksum_field(checksum, &banner_lines, sizeof banner_lines);
  ts__checksum_field(checksum, code, -1);
  return g_strdup(g_checksum_get_string(checksum));
}

static TsModule *
finish_module(TsModule *module, TsBackend *backend, const char *key, const char *path,
              const char *entry, char *log, double compile_ms, gboolean from_cache)
{
  module->backend = backend;
  module->hash = g_strdup(key);
  module->path = g_strdup(path);
  module->entry = g_strdup(entry);
  module->log = log != NULL ? log : g_strdup("");
  module->compile_ms = compile_ms;
  module->from_cache = from_cache;
  return module;
}

/* Build directories carry their process's id, so one left by a process that was killed (kill
 * -9, the OOM killer) can be told from one in use and removed: once per process, when its
 * first backend opens. */
static void
remove_orphaned_build_dirs(void)
{
  static gsize done = 0;
  if (!g_once_init_enter(&done))
    return;
  static const char prefix[] = "tessera-build-";
  const char *tmp = g_get_tmp_dir();
  g_autoptr(GDir) dir = g_dir_open(tmp, 0, NULL);
  const char *name;
  while (dir && (name = g_dir_read_name(dir)) != NULL) {
    if (!g_str_has_prefix(name, prefix))
      continue;
    char *end = NULL;
    guint64 pid = g_ascii_strtoull(name + strlen(prefix), &end, 10);
    if (end == name + strlen(prefix) || *end != '-' || pid == 0 || pid > G_MAXINT)
      continue; /* not one of ours */
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
      continue; /* its process lives (or is not ours to ask about) */
    g_autofree char *path = g_build_filename(tmp, name, NULL);
    GStatBuf st;
    if (g_lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid())
      ts__remove_flat_dir(path);
  }
  g_once_init_leave(&done, 1);
}

/* CPU time (ms) of the processes ts__run_capture ran on this thread and waited for: a
 * compile's compiler processes, told apart from those of compiles on other threads. */
static _Thread_local double children_cpu_ms;

static double
thread_cpu_ms(void)
{
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
    return 0;
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Builds the artifact in a private directory, then moves it into the cache. */
static char *
build_artifact(TsBackend *backend, const TsSource *source, const char *key, char **log,
               double *compile_ms, double *compile_cpu_ms, GError **error)
{
  g_autoptr(GError) local = NULL;
  g_autofree char *template = g_strdup_printf("tessera-build-%d-XXXXXX", (int)getpid());
  g_autofree char *workdir = g_dir_make_tmp(template, &local);
  if (workdir == NULL) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_IO,
                "cannot create a build directory under '%s': %s", g_get_tmp_dir(),
                local->message);
    return NULL;
  }
  g_autofree char *out_name = g_strconcat("out", backend->klass->artifact_suffix, NULL);
  g_autofree char *out_path = g_build_filename(workdir, out_name, NULL);

  gint64 t0 = g_get_monotonic_time();
  double cpu0 = thread_cpu_ms() + children_cpu_ms;
  gboolean ok = backend->klass->compile(backend, source, workdir, out_path, log, error);
  *compile_ms = (double)(g_get_monotonic_time() - t0) / 1000.0;
  *compile_cpu_ms = thread_cpu_ms() + children_cpu_ms - cpu0;

  char *final_path = NULL;
  if (ok)
    final_path = ts__artifact_cache_commit(backend->cache, key,
                                           backend->klass->artifact_suffix, out_path, error);
  ts__remove_flat_dir(workdir);
  return final_path;
}

void
ts_backend_set_trace(TsBackend *backend, TsTrace *trace)
{
  g_return_if_fail(backend != NULL);
  TsTrace *old = backend->trace;
  backend->trace = trace ? ts_trace_ref(trace) : NULL;
  ts_trace_unref(old);
  if (backend->klass->trace_changed)
    backend->klass->trace_changed(backend, backend->trace);
}

static TsModule *compile_untraced(TsBackend *backend, const TsSource *source, GError **error);

TsModule *
ts_backend_compile(TsBackend *backend, const TsSource *source, GError **error)
{
  g_return_val_if_fail(backend != NULL, NULL);
  if (backend->trace == NULL)
    return compile_untraced(backend, source, error);
  gint64 t0 = ts_trace_now_ns();
  TsModule *m = compile_untraced(backend, source, error);
  const char *detail = m == NULL ? "failed" : m->from_cache ? "from the artifact cache" : "built";
  ts_trace_add_host(backend->trace, TS_TRACE_COMPILE, source && source->entry ? source->entry : "?",
                    t0, ts_trace_now_ns() - t0, 0, 0, detail);
  return m;
}

static TsModule *
compile_untraced(TsBackend *backend, const TsSource *source, GError **error)
{
  g_return_val_if_fail(backend != NULL, NULL);
  g_return_val_if_fail(source != NULL && source->text != NULL && source->entry != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);

  const TsBackendClass *klass = backend->klass;
  if (!ts__artifact_cache_ensure(backend->cache, error))
    return NULL;
  g_autofree char *key = artifact_key(backend, source);

  g_autofree char *cached = ts__artifact_cache_lookup(backend->cache, key, klass->artifact_suffix);
  if (cached != NULL) {
    gboolean bad = FALSE;
    g_autoptr(GError) local = NULL;
    TsModule *module = klass->load(backend, cached, source->entry, &bad, &local);
    if (module != NULL)
      return finish_module(module, backend, key, cached, source->entry, NULL, 0.0, TRUE);
    if (!bad) {
      g_propagate_error(error, g_steal_pointer(&local));
      return NULL;
    }
    /* Truncated by a crash, or foreign bytes: drop it and rebuild once. */
    g_debug("%s; rebuilding it", local->message);
    ts__artifact_cache_evict(backend->cache, key, klass->artifact_suffix);
  }

  char *log = NULL;
  double compile_ms = 0.0, compile_cpu_ms = 0.0;
  g_autofree char *path =
    build_artifact(backend, source, key, &log, &compile_ms, &compile_cpu_ms, error);
  if (path == NULL) {
    g_free(log);
    return NULL;
  }
  gboolean bad = FALSE;
  TsModule *module = klass->load(backend, path, source->entry, &bad, error);
  if (module == NULL) {
    /* A fresh artifact that does not load would fail the same way next time from the cache;
     * drop it so the next attempt reports the real problem from a fresh build. */
    if (bad)
      ts__artifact_cache_evict(backend->cache, key, klass->artifact_suffix);
    g_free(log);
    return NULL;
  }
  module->compile_cpu_ms = compile_cpu_ms;
  return finish_module(module, backend, key, path, source->entry, log, compile_ms, FALSE);
}

/* The key is the plain SHA-256 of the bytes, as ts-backend.h promises. It cannot meet a compile
 * key: those hash a length-prefixed record that starts with the "tessera-artifact-v2" tag, and
 * no loadable artifact has those bytes. */
TsModule *
ts_backend_load_artifact(TsBackend *backend, GBytes *artifact, const char *entry, GError **error)
{
  g_return_val_if_fail(backend != NULL && artifact != NULL && entry != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);

  const TsBackendClass *klass = backend->klass;
  gsize len = 0;
  const void *data = g_bytes_get_data(artifact, &len);
  if (len == 0) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LOAD,
                "the stored kernel artifact is empty; store the bytes ts_module_get_artifact "
                "returns");
    return NULL;
  }
  g_autofree char *key = g_compute_checksum_for_data(G_CHECKSUM_SHA256, data, len);

  /* An entry under this key that holds these very bytes saves the write; one that holds other
   * bytes (damaged, or planted) is replaced by ours before anything is loaded. */
  g_autofree char *path = ts__artifact_cache_lookup(backend->cache, key, klass->artifact_suffix);
  if (path != NULL) {
    g_autofree char *have = NULL;
    gsize have_len = 0;
    if (!g_file_get_contents(path, &have, &have_len, NULL) || have_len != len ||
        memcmp(have, data, len) != 0)
      g_clear_pointer(&path, g_free);
  }
  for (;;) {
    gboolean ours = path == NULL;
    if (ours) {
      path = ts__artifact_cache_store(backend->cache, key, klass->artifact_suffix, data, len,
                                      error);
      if (path == NULL)
        return NULL;
    }
    gboolean bad = FALSE;
    g_autoptr(GError) local = NULL;
    TsModule *module = klass->load(backend, path, entry, &bad, &local);
    if (module != NULL)
      return finish_module(module, backend, key, path, entry, NULL, 0.0, TRUE);
    if (!bad) {
      g_propagate_error(error, g_steal_pointer(&local));
      return NULL;
    }
    /* Leave no entry a later lookup would trip on. */
    ts__artifact_cache_evict(backend->cache, key, klass->artifact_suffix);
    g_clear_pointer(&path, g_free);
    if (ours) {
      /* Nothing will ever load these bytes here. */
      g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LOAD,
                  "stored kernel artifact %.12s cannot be loaded on this machine (%s); build the "
                  "kernel here instead",
                  key, local->message);
      return NULL;
    }
    g_debug("%s; storing it again", local->message);
  }
}

void
ts_module_free(TsModule *module)
{
  if (module == NULL)
    return;
  g_clear_pointer(&module->hash, g_free);
  g_clear_pointer(&module->path, g_free);
  g_clear_pointer(&module->entry, g_free);
  g_clear_pointer(&module->log, g_free);
  g_clear_pointer(&module->bound_ints, g_array_unref);
  module->backend->klass->module_free(module);
}

gboolean
ts_module_from_cache(const TsModule *module)
{
  g_return_val_if_fail(module != NULL, FALSE);
  return module->from_cache;
}

gboolean
ts_module_bind_ints(TsModule *module, const gint64 *ints, guint n, GError **error)
{
  g_return_val_if_fail(module != NULL && (ints != NULL || n == 0), FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  if (n > TS_LAUNCH_MAX_INTS / 2) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LAUNCH,
                "%u integers bound to module %s: at most %d", n, module->entry,
                TS_LAUNCH_MAX_INTS / 2);
    return FALSE;
  }
  g_clear_pointer(&module->bound_ints, g_array_unref);
  if (n > 0) {
    module->bound_ints = g_array_sized_new(FALSE, FALSE, sizeof(gint64), n);
    g_array_append_vals(module->bound_ints, ints, n);
  }
  return TRUE;
}

const gint64 *
ts_module_bound_ints(const TsModule *module, guint *n)
{
  g_return_val_if_fail(module != NULL && n != NULL, NULL);
  *n = module->bound_ints ? module->bound_ints->len : 0;
  return *n ? (const gint64 *)(gpointer)module->bound_ints->data : NULL;
}

const char *
ts_module_hash(const TsModule *module)
{
  g_return_val_if_fail(module != NULL, NULL);
  return module->hash;
}

const char *
ts_module_log(const TsModule *module)
{
  g_return_val_if_fail(module != NULL, NULL);
  return module->log;
}

double
ts_module_compile_ms(const TsModule *module)
{
  g_return_val_if_fail(module != NULL, 0.0);
  return module->compile_ms;
}

double
ts_module_compile_cpu_ms(const TsModule *module)
{
  g_return_val_if_fail(module != NULL, 0.0);
  return module->compile_cpu_ms;
}

void
ts__module_resources_init(TsModuleResources *r)
{
  *r = (TsModuleResources){-1, -1, -1, -1, -1, -1, -1};
}

const TsModuleResources *
ts_module_resources(const TsModule *module)
{
  g_return_val_if_fail(module != NULL, NULL);
  return &module->resources;
}

const char *
ts_module_entry(const TsModule *module)
{
  g_return_val_if_fail(module != NULL, NULL);
  return module->entry;
}

/* Read back from the cache entry rather than kept in memory: a tuner loads thousands of modules
 * and only the perf gate ever asks. */
GBytes *
ts_module_get_artifact(const TsModule *module, GError **error)
{
  g_return_val_if_fail(module != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  char *contents = NULL;
  gsize len = 0;
  g_autoptr(GError) local = NULL;
  if (!g_file_get_contents(module->path, &contents, &len, &local)) {
    /* GLib's message names the file. */
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_IO,
                "cannot read the artifact of module %.12s: %s; compile the kernel again to "
                "put it back in the artifact cache",
                module->hash, local->message);
    return NULL;
  }
  return g_bytes_new_take(contents, len);
}

/* ------------------------------------------------------------------------------------------ */
/* Memory */

TsBuffer *
ts_backend_alloc(TsBackend *backend, gsize bytes, GError **error)
{
  g_return_val_if_fail(backend != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  TsBuffer *buffer = backend->klass->alloc(backend, bytes, error);
  g_assert(buffer == NULL || (buffer->backend == backend && buffer->size == bytes));
  if (buffer && backend->trace)
    ts_trace_add_host(backend->trace, TS_TRACE_ALLOC, "alloc", ts_trace_now_ns(), 0, bytes,
                      GPOINTER_TO_SIZE(buffer), NULL);
  return buffer;
}

void
ts_backend_buffer_free(TsBackend *backend, TsBuffer *buffer)
{
  if (buffer == NULL)
    return;
  g_return_if_fail(backend == NULL || buffer->backend == backend);
  TsBackend *owner = buffer->backend;
  if (owner->trace)
    ts_trace_add_host(owner->trace, TS_TRACE_FREE, "free", ts_trace_now_ns(), 0, buffer->size,
                      GPOINTER_TO_SIZE(buffer), NULL);
  owner->klass->buffer_free(owner, buffer);
}

gsize
ts_buffer_size(const TsBuffer *buffer)
{
  g_return_val_if_fail(buffer != NULL, 0);
  return buffer->size;
}

static gboolean
check_copy(const char *what, const TsBuffer *buffer, gsize bytes, GError **error)
{
  if (bytes <= buffer->size)
    return TRUE;
  g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_MEMORY,
              "%s of %" G_GSIZE_FORMAT " bytes does not fit a buffer of %" G_GSIZE_FORMAT
              " bytes; allocate a larger buffer or copy fewer bytes",
              what, bytes, buffer->size);
  return FALSE;
}

gboolean
ts_backend_upload(TsBackend *backend, TsBuffer *dst, const void *src, gsize bytes,
                  GError **error)
{
  g_return_val_if_fail(backend != NULL && dst != NULL, FALSE);
  g_return_val_if_fail(dst->backend == backend, FALSE);
  g_return_val_if_fail(src != NULL || bytes == 0, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  if (!check_copy("upload", dst, bytes, error))
    return FALSE;
  gint64 t0 = ts_trace_now_ns();
  gboolean ok = bytes == 0 || backend->klass->upload(backend, dst, src, bytes, error);
  if (ok && bytes && backend->trace)
    ts_trace_add_host(backend->trace, TS_TRACE_MEMCPY, "HtoD", t0, ts_trace_now_ns() - t0, bytes,
                      GPOINTER_TO_SIZE(dst), NULL);
  return ok;
}

gboolean
ts_backend_download(TsBackend *backend, void *dst, const TsBuffer *src, gsize bytes,
                    GError **error)
{
  g_return_val_if_fail(backend != NULL && src != NULL, FALSE);
  g_return_val_if_fail(src->backend == backend, FALSE);
  g_return_val_if_fail(dst != NULL || bytes == 0, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  if (!check_copy("download", src, bytes, error))
    return FALSE;
  gint64 t0 = ts_trace_now_ns();
  gboolean ok = bytes == 0 || backend->klass->download(backend, dst, src, bytes, error);
  if (ok && bytes && backend->trace)
    ts_trace_add_host(backend->trace, TS_TRACE_MEMCPY, "DtoH", t0, ts_trace_now_ns() - t0, bytes,
                      GPOINTER_TO_SIZE(src), NULL);
  return ok;
}

/* ------------------------------------------------------------------------------------------ */
/* Launch and time */

/* A launch as the module's entry sees it: the caller's ints, then the module's bound ones. */
typedef struct {
  TsLaunch launch;
  gint64 ints[TS_LAUNCH_MAX_INTS];
} BoundLaunch;

static const TsLaunch *
bind_launch(const TsModule *module, const TsLaunch *launch, BoundLaunch *b, GError **error)
{
  guint n = module->bound_ints ? module->bound_ints->len : 0;
  if (n == 0)
    return launch;
  if (launch->n_ints + n > TS_LAUNCH_MAX_INTS) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LAUNCH,
                "launch: %u ints and the module's %u bound ones are more than %d",
                launch->n_ints, n, TS_LAUNCH_MAX_INTS);
    return NULL;
  }
  b->launch = *launch;
  if (launch->n_ints > 0)
    memcpy(b->ints, launch->ints, launch->n_ints * sizeof(gint64));
  memcpy(b->ints + launch->n_ints, module->bound_ints->data, n * sizeof(gint64));
  b->launch.ints = b->ints;
  b->launch.n_ints = launch->n_ints + n;
  return &b->launch;
}

/* Launch descriptions come from generated code and the tuner, so their mistakes are errors the
 * caller can report, not assertions. The launch to run, the module's bound ints appended. */
static const TsLaunch *
check_launch(TsBackend *backend, const TsModule *module, const TsLaunch *launch, BoundLaunch *b,
             GError **error)
{
  if ((launch->n_buffers > 0 && launch->buffers == NULL) ||
      (launch->n_ints > 0 && launch->ints == NULL) ||
      (launch->n_floats > 0 && launch->floats == NULL)) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LAUNCH,
                "launch: a count is non-zero but its array is NULL (buffers %u, ints %u, "
                "floats %u)",
                launch->n_buffers, launch->n_ints, launch->n_floats);
    return NULL;
  }
  for (guint i = 0; i < launch->n_buffers; i++) {
    if (launch->buffers[i] == NULL) {
      g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LAUNCH,
                  "launch: buffer %u is NULL", i);
      return NULL;
    }
    if (launch->buffers[i]->backend != backend) {
      g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LAUNCH,
                  "launch: buffer %u belongs to another backend", i);
      return NULL;
    }
  }
  return bind_launch(module, launch, b, error);
}

gboolean
ts_backend_launch(TsBackend *backend, TsModule *module, const TsLaunch *launch, GError **error)
{
  g_return_val_if_fail(backend != NULL && module != NULL && launch != NULL, FALSE);
  g_return_val_if_fail(module->backend == backend, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  BoundLaunch b;
  if ((launch = check_launch(backend, module, launch, &b, error)) == NULL)
    return FALSE;
  return backend->klass->launch(backend, module, launch, error);
}

gboolean
ts_backend_time(TsBackend *backend, TsModule *module, const TsLaunch *launch, guint n_warmup,
                guint n_samples, double *samples_ns, GError **error)
{
  g_return_val_if_fail(backend != NULL && module != NULL && launch != NULL, FALSE);
  g_return_val_if_fail(module->backend == backend, FALSE);
  g_return_val_if_fail(samples_ns != NULL || n_samples == 0, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  BoundLaunch b;
  if ((launch = check_launch(backend, module, launch, &b, error)) == NULL)
    return FALSE;
  return backend->klass->time(backend, module, launch, n_warmup, n_samples, samples_ns, error);
}

gboolean
ts_backend_runs_on_host(TsBackend *backend)
{
  g_return_val_if_fail(backend != NULL, FALSE);
  return backend->klass->time_cpu != NULL;
}

gboolean
ts_backend_time_cpu(TsBackend *backend, TsModule *module, const TsLaunch *launch, guint n_warmup,
                    guint n_samples, double *samples_ns, TsCpuTime *cpu, GError **error)
{
  if (cpu == NULL)
    return ts_backend_time(backend, module, launch, n_warmup, n_samples, samples_ns, error);
  g_return_val_if_fail(backend != NULL && module != NULL && launch != NULL, FALSE);
  g_return_val_if_fail(backend->klass->time_cpu != NULL, FALSE);
  g_return_val_if_fail(module->backend == backend, FALSE);
  g_return_val_if_fail(samples_ns != NULL || n_samples == 0, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  BoundLaunch b;
  if ((launch = check_launch(backend, module, launch, &b, error)) == NULL)
    return FALSE;
  return backend->klass->time_cpu(backend, module, launch, n_warmup, n_samples, samples_ns, cpu,
                                  error);
}

/* ------------------------------------------------------------------------------------------ */
/* Hardware metrics */

const char *
ts_backend_counter_permission_help(void)
{
  /* The driver's default on most installs; NVIDIA documents it under ERR_NVGPUCTRPERM. */
  return "the driver restricts GPU performance counters to administrators (NVIDIA: "
         "ERR_NVGPUCTRPERM); fix: run as root, or put 'options nvidia "
         "NVreg_RestrictProfilingToAdminUsers=0' in a file under /etc/modprobe.d and reload the "
         "nvidia kernel module (or reboot)";
}

gboolean
ts_backend_has_metrics(TsBackend *backend)
{
  g_return_val_if_fail(backend != NULL, FALSE);
  return backend->klass->collect_metrics != NULL;
}

gboolean
ts_backend_collect_metrics_with(TsBackend *backend, const char *const *metrics,
                                TsBackendLaunchFunc launch, gpointer data,
                                GHashTable **values_out, GStrv *unsupported_out, GError **error)
{
  g_return_val_if_fail(backend != NULL && metrics != NULL && launch != NULL, FALSE);
  g_return_val_if_fail(values_out != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  *values_out = NULL;
  if (unsupported_out)
    *unsupported_out = NULL;
  if (backend->klass->collect_metrics == NULL) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNSUPPORTED,
                "hardware metrics need a CUDA device; the %s backend has %s instead",
                backend->klass->name,
                strcmp(backend->klass->name, "cpu") == 0 ? "perf counters" : "none");
    return FALSE;
  }
  g_autoptr(GHashTable) values = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(GPtrArray) unsupported = g_ptr_array_new_with_free_func(g_free);
  if (metrics[0] != NULL &&
      !backend->klass->collect_metrics(backend, metrics, launch, data, values,
                                       unsupported_out ? unsupported : NULL, error))
    return FALSE;
  *values_out = g_steal_pointer(&values);
  if (unsupported_out) {
    g_ptr_array_add(unsupported, NULL);
    *unsupported_out = (GStrv)g_ptr_array_free(g_steal_pointer(&unsupported), FALSE);
  }
  return TRUE;
}

typedef struct {
  TsBackend *backend;
  TsModule *module;
  const TsLaunch *launch;
} OneLaunch;

static gboolean
launch_once(gpointer data, GError **error)
{
  const OneLaunch *one = data;
  return one->backend->klass->launch(one->backend, one->module, one->launch, error);
}

gboolean
ts_backend_collect_metrics(TsBackend *backend, TsModule *module, const TsLaunch *launch,
                           const char *const *metrics, GHashTable **values_out,
                           GStrv *unsupported_out, GError **error)
{
  g_return_val_if_fail(backend != NULL && module != NULL && launch != NULL, FALSE);
  g_return_val_if_fail(module->backend == backend, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  /* A backend without counters says so before anything about the launch. */
  BoundLaunch b;
  if (backend->klass->collect_metrics != NULL &&
      (launch = check_launch(backend, module, launch, &b, error)) == NULL)
    return FALSE;
  OneLaunch one = {backend, module, launch};
  return ts_backend_collect_metrics_with(backend, metrics, launch_once, &one, values_out,
                                         unsupported_out, error);
}

/* ------------------------------------------------------------------------------------------ */
/* Helpers for implementations */

gboolean
ts__run_capture(const char *const *argv, const char *cwd, const char *const *env_override,
                char **output, int *exit_status, GError **error)
{
  g_auto(GStrv) envp = g_get_environ();
  for (const char *const *e = env_override; e != NULL && *e != NULL; e++) {
    g_auto(GStrv) kv = g_strsplit(*e, "=", 2);
    if (kv[0] != NULL && kv[1] != NULL)
      envp = g_environ_setenv(envp, kv[0], kv[1], TRUE);
  }
  /* Spawned and reaped here rather than by GSubprocess, for wait4's resource usage: the
   * process's CPU time and its children's (the compiler driver's cc1, as and ld). */
  int fds[2];
  if (!g_unix_open_pipe(fds, FD_CLOEXEC, error))
    return FALSE;
  GPid pid = 0;
  gboolean spawned = g_spawn_async_with_pipes_and_fds(
    cwd, argv, (const char *const *)envp, G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD, NULL,
    NULL, -1, fds[1], fds[1], NULL, NULL, 0, &pid, NULL, NULL, NULL, error);
  close(fds[1]);
  if (!spawned) {
    close(fds[0]);
    return FALSE;
  }
  g_autoptr(GByteArray) out = g_byte_array_new();
  guint8 chunk[16384];
  for (;;) {
    ssize_t n = read(fds[0], chunk, sizeof chunk);
    if (n > 0)
      g_byte_array_append(out, chunk, (guint)n);
    else if (n == 0 || errno != EINTR)
      break;
  }
  close(fds[0]);
  int status = 0;
  struct rusage ru;
  memset(&ru, 0, sizeof ru);
  pid_t got;
  do
    got = wait4(pid, &status, 0, &ru);
  while (got < 0 && errno == EINTR);
  g_spawn_close_pid(pid);
  if (got != pid) {
    g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "cannot wait for '%s': %s",
                argv[0], g_strerror(errno));
    return FALSE;
  }
  children_cpu_ms += (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
                     (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
  /* Diagnostics quote source lines, which may hold any bytes; messages must be UTF-8. */
  *output = out->len > 0 ? g_utf8_make_valid((const char *)out->data, (gssize)out->len)
                         : g_strdup("");
  *exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return TRUE;
}

void
ts__remove_flat_dir(const char *dir)
{
  if (dir == NULL)
    return;
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  if (d != NULL) {
    const char *name;
    while ((name = g_dir_read_name(d)) != NULL) {
      g_autofree char *path = g_build_filename(dir, name, NULL);
      g_unlink(path);
    }
  }
  g_rmdir(dir);
}

#if !TS_HAVE_CUDA
/* Built without the CUDA headers: no buffer or backend is a CUDA one (ts-cuda.h). */
void *
ts_cuda_dlopen(const char *soname, char **why)
{
  *why = g_strdup_printf("%s: this build has no CUDA support (no CUDA headers when it was "
                         "configured)", soname);
  return NULL;
}

guint64
ts_cuda_buffer_address(const TsBuffer *buffer)
{
  (void)buffer;
  return 0;
}

void *
ts_cuda_stream(TsBackend *backend)
{
  (void)backend;
  return NULL;
}

gboolean
ts_cuda_synchronize(TsBackend *backend, GError **error)
{
  (void)backend;
  g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNAVAILABLE,
              "no CUDA device: this build has no CUDA backend");
  return FALSE;
}
#endif
