/* test-backend.c — unit tests of the backend layer through its public API, on the cpu backend:
 * compile/launch, compiler diagnostics, the artifact cache (hits, keys, corrupt entries, bad
 * directories), load errors, memory bounds, timing, describe, and the registry.
 * Every test compiles into its own temporary cache directory, removed afterwards.
 */
#include "config.h"

#include "test-util.h"
#include "ts-backend.h"
#include "ts-backend-private.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  TsBackend *backend;
  char *cache_dir;
} Fixture;

static void
fixture_set_up(Fixture *f, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  f->cache_dir = g_dir_make_tmp("ts-test-backend-XXXXXX", &error);
  g_assert_no_error(error);
  f->backend = ts_backend_open("cpu", &error);
  g_assert_no_error(error);
  g_assert_nonnull(f->backend);
  ts_backend_set_cache_dir(f->backend, f->cache_dir);
  g_assert_cmpstr(ts_backend_get_cache_dir(f->backend), ==, f->cache_dir);
}

static void
fixture_tear_down(Fixture *f, gconstpointer data)
{
  g_clear_pointer(&f->backend, ts_backend_free);
  ts_test_remove_tree(f->cache_dir);
  g_free(f->cache_dir);
}

/* out[i] = alpha * in[i] + ints[1], for i < ints[0]; parallel, so -fopenmp is exercised. */
static const char saxpy_src[] =
  "#include <stdint.h>\n"
  "#include \"ts_cpu_prims.h\"\n"
  "void ts_kernel(void *const *bufs, const int64_t *ints, const double *floats) {\n"
  "  const float *in = bufs[0];\n"
  "  float *out = bufs[1];\n"
  "  #pragma omp parallel for\n"
  "  for (int64_t i = 0; i < ints[0]; i++)\n"
  "    out[i] = (float)floats[0] * in[i] + (float)ints[1];\n"
  "}\n";

static TsModule *
compile_ok(Fixture *f, const char *text, const char *entry)
{
  g_autoptr(GError) error = NULL;
  TsSource src = { TS_LANG_C, text, entry };
  TsModule *module = ts_backend_compile(f->backend, &src, &error);
  g_assert_no_error(error);
  g_assert_nonnull(module);
  return module;
}

static void
run_saxpy(Fixture *f, TsModule *module)
{
  enum { N = 1000 };
  g_autoptr(GError) error = NULL;
  float in[N], out[N];
  for (int i = 0; i < N; i++) {
    in[i] = (float)i;
    out[i] = -1.0f;
  }
  TsBuffer *bufs[2] = {
    ts_backend_alloc(f->backend, sizeof in, &error),
    ts_backend_alloc(f->backend, sizeof out, &error),
  };
  g_assert_no_error(error);
  g_assert_cmpuint(ts_buffer_size(bufs[0]), ==, sizeof in);
  g_assert_true(ts_backend_upload(f->backend, bufs[0], in, sizeof in, &error));
  g_assert_true(ts_backend_upload(f->backend, bufs[1], out, sizeof out, &error));
  gint64 ints[2] = { N, 3 };
  double floats[1] = { 2.0 };
  TsLaunch launch = { .buffers = bufs, .n_buffers = 2, .ints = ints, .n_ints = 2,
                      .floats = floats, .n_floats = 1 };
  g_assert_true(ts_backend_launch(f->backend, module, &launch, &error));
  g_assert_no_error(error);
  g_assert_true(ts_backend_download(f->backend, out, bufs[1], sizeof out, &error));
  g_assert_no_error(error);
  for (int i = 0; i < N; i++)
    g_assert_cmpfloat(out[i], ==, 2.0f * (float)i + 3.0f);
  ts_backend_buffer_free(f->backend, bufs[0]);
  ts_backend_buffer_free(f->backend, bufs[1]);
}

static double
children_cpu_ms(void)
{
  struct rusage ru;
  g_assert_cmpint(getrusage(RUSAGE_CHILDREN, &ru), ==, 0);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static void
test_compile_launch(Fixture *f, gconstpointer data)
{
  /* The compile's CPU time is its compiler processes' (the process's children meanwhile: this
   * thread compiles alone) and at most the thread's own besides. */
  double children0 = children_cpu_ms(), self0 = g_get_monotonic_time() / 1e3;
  struct timespec t0;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  g_autoptr(TsModule) module = compile_ok(f, saxpy_src, "ts_kernel");
  struct timespec t1;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
  double children = children_cpu_ms() - children0, wall = g_get_monotonic_time() / 1e3 - self0;
  double thread = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  double cpu = ts_module_compile_cpu_ms(module);
  g_test_message("compile: %.1f ms wall, %.1f ms CPU (children %.1f, thread %.1f)", wall, cpu,
                 children, thread);
  g_assert_false(ts_module_from_cache(module));
  g_assert_cmpfloat(ts_module_compile_ms(module), >, 0.0);
  g_assert_cmpfloat(children, >, 0.0);
  g_assert_cmpfloat(cpu, >=, children - 1.0);
  g_assert_cmpfloat(cpu, <=, children + thread + 1.0);
  g_assert_cmpuint(strlen(ts_module_hash(module)), ==, 64);
  g_assert_nonnull(ts_module_log(module));
  run_saxpy(f, module);

  /* The artifact sits in the cache under its key. */
  g_autofree char *name = g_strconcat(ts_module_hash(module), ".so", NULL);
  g_autofree char *path = g_build_filename(f->cache_dir, name, NULL);
  g_assert_true(g_file_test(path, G_FILE_TEST_IS_REGULAR));
}

static void
test_compile_error(Fixture *f, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  TsSource src = { TS_LANG_C,
                   "void ts_kernel(void *const *b, const long *i, const double *f) {\n"
                   "  undeclared_thing_42 = 1;\n"
                   "}\n",
                   "ts_kernel" };
  TsModule *module = ts_backend_compile(f->backend, &src, &error);
  g_assert_null(module);
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_COMPILE);
  g_assert_true(g_str_has_prefix(error->message, "cc failed (exit ") ||
                g_getenv("TS_CC") != NULL);
  g_assert_nonnull(strstr(error->message, "error:"));
  g_assert_nonnull(strstr(error->message, "undeclared_thing_42"));
  g_assert_nonnull(strstr(error->message, "src.c:2"));
}

/* Ints bound to a module follow the launch's own in every launch, timed ones too: two modules
 * of one artifact, bound to different values, each run with their own. */
static void
test_bound_ints(Fixture *f, gconstpointer data)
{
  enum { N = 64 };
  g_autoptr(GError) error = NULL;
  g_autoptr(TsModule) three = compile_ok(f, saxpy_src, "ts_kernel");
  g_autoptr(TsModule) five = compile_ok(f, saxpy_src, "ts_kernel");
  g_assert_cmpstr(ts_module_hash(three), ==, ts_module_hash(five));
  const gint64 b3 = 3, b5 = 5;
  g_assert_true(ts_module_bind_ints(three, &b3, 1, &error));
  g_assert_true(ts_module_bind_ints(five, &b5, 1, &error));
  guint n = 0;
  g_assert_cmpint(ts_module_bound_ints(three, &n)[0], ==, 3);
  g_assert_cmpuint(n, ==, 1);
  float in[N], out[N];
  for (int i = 0; i < N; i++)
    in[i] = (float)i;
  TsBuffer *bufs[2] = {ts_backend_alloc(f->backend, sizeof in, &error),
                       ts_backend_alloc(f->backend, sizeof out, &error)};
  g_assert_no_error(error);
  g_assert_true(ts_backend_upload(f->backend, bufs[0], in, sizeof in, &error));
  const gint64 ints[1] = {N};
  const double floats[1] = {2.0};
  TsLaunch launch = {.buffers = bufs, .n_buffers = 2, .ints = ints, .n_ints = 1,
                     .floats = floats, .n_floats = 1};
  TsModule *mods[] = {three, five, three};
  for (guint m = 0; m < G_N_ELEMENTS(mods); m++) {
    double ns = 0;
    g_assert_true(m == 1 ? ts_backend_time(f->backend, mods[m], &launch, 0, 1, &ns, &error)
                         : ts_backend_launch(f->backend, mods[m], &launch, &error));
    g_assert_no_error(error);
    g_assert_true(ts_backend_download(f->backend, out, bufs[1], sizeof out, &error));
    for (int i = 0; i < N; i++)
      g_assert_cmpfloat(out[i], ==, 2.0f * (float)i + (m == 1 ? 5.0f : 3.0f));
  }
  /* Unbound, the kernel would read past the launch's ints: a caller's limit says so first. */
  gint64 many[TS_LAUNCH_MAX_INTS] = {0};
  g_assert_false(ts_module_bind_ints(three, many, TS_LAUNCH_MAX_INTS, &error));
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LAUNCH);
  g_clear_error(&error);
  launch.ints = many;
  launch.n_ints = TS_LAUNCH_MAX_INTS;
  g_assert_false(ts_backend_launch(f->backend, five, &launch, &error));
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LAUNCH);
  g_assert_nonnull(strstr(error->message, "bound"));
  ts_backend_buffer_free(f->backend, bufs[0]);
  ts_backend_buffer_free(f->backend, bufs[1]);
}

static void
test_warnings_logged(Fixture *f, gconstpointer data)
{
  g_autoptr(TsModule) module =
    compile_ok(f, "#warning \"look at me\"\nvoid ts_kernel(void) {}\n", "ts_kernel");
  g_assert_nonnull(strstr(ts_module_log(module), "look at me"));
}

static void
test_cache_hit(Fixture *f, gconstpointer data)
{
  g_autoptr(TsModule) first = compile_ok(f, saxpy_src, "ts_kernel");
  g_autoptr(TsModule) second = compile_ok(f, saxpy_src, "ts_kernel");
  g_assert_false(ts_module_from_cache(first));
  g_assert_true(ts_module_from_cache(second));
  g_assert_cmpfloat(ts_module_compile_ms(second), ==, 0.0);
  g_assert_cmpfloat(ts_module_compile_cpu_ms(second), ==, 0.0);
  g_assert_cmpstr(ts_module_log(second), ==, "");
  g_assert_cmpstr(ts_module_hash(first), ==, ts_module_hash(second));
  run_saxpy(f, second);

  /* A fresh backend on the same directory (another process, in effect) hits too. */
  g_autoptr(GError) error = NULL;
  g_autoptr(TsBackend) other = ts_backend_open("cpu", &error);
  g_assert_no_error(error);
  ts_backend_set_cache_dir(other, f->cache_dir);
  TsSource src = { TS_LANG_C, saxpy_src, "ts_kernel" };
  g_autoptr(TsModule) third = ts_backend_compile(other, &src, &error);
  g_assert_no_error(error);
  g_assert_true(ts_module_from_cache(third));
  g_assert_cmpstr(ts_module_hash(third), ==, ts_module_hash(first));
}

static void
test_changed_source(Fixture *f, gconstpointer data)
{
  g_autoptr(TsModule) a = compile_ok(f, "void ts_kernel(void) {}\n", "ts_kernel");
  g_autoptr(TsModule) b = compile_ok(f, "void ts_kernel(void) { }\n", "ts_kernel");
  g_assert_false(ts_module_from_cache(b));
  g_assert_cmpstr(ts_module_hash(a), !=, ts_module_hash(b));
}

/* The banner the emitter writes first (op, shape, point) is not code: sources that differ only
 * there share one artifact, as a row op's kernels at two shapes do. A banner of another number
 * of lines numbers the code differently, and code after it is code, so either compiles anew;
 * so does a source whose comment is not at its start. */
static void
test_banner_shared(Fixture *f, gconstpointer data)
{
  static const char *const heads[] = {
      "/* Tessera: saxpy N=1000\n * schedule block(n=64) */\n",
      "  /* Tessera: saxpy N=5000\n * schedule block(n=64) */\n",
      "/* Tessera: saxpy N=1000 */\n",
      "/* Tessera: saxpy N=1000\n * schedule block(n=64) */\n#define UNUSED 1\n",
      "#define UNUSED 1\n/* Tessera: saxpy N=1000\n * schedule */\n",
      "#define UNUSED 1\n/* Tessera: saxpy N=5000\n * schedule */\n",
  };
  static const gboolean shares_first[] = {TRUE, TRUE, FALSE, FALSE, FALSE, FALSE};
  g_autoptr(GPtrArray) modules = g_ptr_array_new_with_free_func((GDestroyNotify)ts_module_free);
  for (guint i = 0; i < G_N_ELEMENTS(heads); i++) {
    g_autofree char *text = g_strconcat(heads[i], saxpy_src, NULL);
    TsModule *m = compile_ok(f, text, "ts_kernel");
    g_ptr_array_add(modules, m);
    const char *first = ts_module_hash(g_ptr_array_index(modules, 0));
    if (i == 0)
      continue;
    g_assert_cmpint(ts_module_from_cache(m), ==, shares_first[i]);
    g_assert_cmpint(g_strcmp0(ts_module_hash(m), first) == 0, ==, shares_first[i]);
    run_saxpy(f, m);
  }
}

static void
test_missing_entry(Fixture *f, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  TsSource src = { TS_LANG_C, "void present(void) {}\n", "absent_entry_7" };
  TsModule *module = ts_backend_compile(f->backend, &src, &error);
  g_assert_null(module);
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LOAD);
  g_assert_nonnull(strstr(error->message, "absent_entry_7"));

  /* The artifact is fine, so the second attempt fails the same way from the cache. */
  g_clear_error(&error);
  module = ts_backend_compile(f->backend, &src, &error);
  g_assert_null(module);
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LOAD);
  g_assert_nonnull(strstr(error->message, "absent_entry_7"));
}

static void
test_corrupt_artifact(Fixture *f, gconstpointer data)
{
  g_autofree char *hash = NULL;
  {
    g_autoptr(TsModule) module = compile_ok(f, saxpy_src, "ts_kernel");
    hash = g_strdup(ts_module_hash(module));
  }
  /* A crash mid-write elsewhere, or a disk error: garbage where the .so was. */
  g_autofree char *name = g_strconcat(hash, ".so", NULL);
  g_autofree char *path = g_build_filename(f->cache_dir, name, NULL);
  g_autoptr(GError) error = NULL;
  g_assert_true(g_file_set_contents(path, "not an ELF file", -1, &error));

  g_autoptr(TsModule) module = compile_ok(f, saxpy_src, "ts_kernel");
  g_assert_false(ts_module_from_cache(module));
  g_assert_cmpstr(ts_module_hash(module), ==, hash);
  run_saxpy(f, module);
}

static void
test_bad_cache_dir(Fixture *f, gconstpointer data)
{
  /* A path below a regular file cannot be created, even by root. */
  g_autofree char *file = g_build_filename(f->cache_dir, "plain-file", NULL);
  g_autoptr(GError) error = NULL;
  g_assert_true(g_file_set_contents(file, "x", -1, &error));
  g_autofree char *dir = g_build_filename(file, "artifacts", NULL);
  ts_backend_set_cache_dir(f->backend, dir);
  TsSource src = { TS_LANG_C, "void ts_kernel(void) {}\n", "ts_kernel" };
  TsModule *module = ts_backend_compile(f->backend, &src, &error);
  g_assert_null(module);
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_IO);
  g_assert_nonnull(strstr(error->message, dir));
}

static void
test_memory_bounds(Fixture *f, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  TsBuffer *buf = ts_backend_alloc(f->backend, 100, &error);
  g_assert_no_error(error);
  char bytes[200] = { 0 };
  g_assert_false(ts_backend_upload(f->backend, buf, bytes, 101, &error));
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_MEMORY);
  g_clear_error(&error);
  g_assert_false(ts_backend_download(f->backend, bytes, buf, 200, &error));
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_MEMORY);
  g_clear_error(&error);
  g_assert_true(ts_backend_upload(f->backend, buf, bytes, 100, &error));
  g_assert_no_error(error);
  ts_backend_buffer_free(f->backend, buf);

  /* More than the host has is refused up front. */
  const TsDeviceInfo *info = ts_backend_describe(f->backend);
  if (info->memory_bytes > 0 && info->memory_bytes < G_MAXSIZE) {
    buf = ts_backend_alloc(f->backend, (gsize)info->memory_bytes + 1, &error);
    g_assert_null(buf);
    g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_MEMORY);
    g_clear_error(&error);
  }

  /* Destructors accept NULL. */
  ts_backend_buffer_free(f->backend, NULL);
  ts_backend_buffer_free(NULL, NULL);
  ts_module_free(NULL);
  ts_backend_free(NULL);
}

static void
test_alignment(Fixture *f, gconstpointer data)
{
  g_autoptr(TsModule) module = compile_ok(
    f,
    "#include <stdint.h>\n"
    "void ts_kernel(void *const *bufs, const int64_t *ints, const double *floats) {\n"
    "  int64_t *out = bufs[1];\n"
    "  out[0] = (int64_t)((uintptr_t)bufs[0] % 64);\n"
    "}\n",
    "ts_kernel");
  g_autoptr(GError) error = NULL;
  TsBuffer *bufs[2] = { ts_backend_alloc(f->backend, 3, &error),
                        ts_backend_alloc(f->backend, 8, &error) };
  g_assert_no_error(error);
  TsLaunch launch = { .buffers = bufs, .n_buffers = 2 };
  g_assert_true(ts_backend_launch(f->backend, module, &launch, &error));
  gint64 rem = -1;
  g_assert_true(ts_backend_download(f->backend, &rem, bufs[1], sizeof rem, &error));
  g_assert_cmpint(rem, ==, 0);
  ts_backend_buffer_free(f->backend, bufs[0]);
  ts_backend_buffer_free(f->backend, bufs[1]);
}

static void
test_time(Fixture *f, gconstpointer data)
{
  g_autoptr(TsModule) module = compile_ok(f, saxpy_src, "ts_kernel");
  g_autoptr(GError) error = NULL;
  TsBuffer *bufs[2] = { ts_backend_alloc(f->backend, 4096 * 4, &error),
                        ts_backend_alloc(f->backend, 4096 * 4, &error) };
  g_assert_no_error(error);
  gint64 ints[2] = { 4096, 0 };
  double floats[1] = { 1.0 };
  TsLaunch launch = { .buffers = bufs, .n_buffers = 2, .ints = ints, .n_ints = 2,
                      .floats = floats, .n_floats = 1 };
  double samples[7];
  for (guint i = 0; i < G_N_ELEMENTS(samples); i++)
    samples[i] = -1.0;
  g_assert_true(ts_backend_time(f->backend, module, &launch, 2, G_N_ELEMENTS(samples), samples,
                                &error));
  g_assert_no_error(error);
  for (guint i = 0; i < G_N_ELEMENTS(samples); i++)
    g_assert_cmpfloat(samples[i], >, 0.0);

  /* A NULL buffer is reported, not dereferenced. */
  TsBuffer *holes[2] = { bufs[0], NULL };
  launch.buffers = holes;
  g_assert_false(ts_backend_launch(f->backend, module, &launch, &error));
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LAUNCH);
  ts_backend_buffer_free(f->backend, bufs[0]);
  ts_backend_buffer_free(f->backend, bufs[1]);
}

/* CPU time beside wall time: a kernel that sleeps takes wall time and almost no CPU time, one
 * that spins takes both, which no wall-clock reading alone could tell apart. */
static const char sleep_spin_src[] =
  "#include <stdint.h>\n"
  "#include <time.h>\n"
  "static int64_t mono(void) {\n"
  "  struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);\n"
  "  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;\n"
  "}\n"
  "void ts_kernel(void *const *bufs, const int64_t *ints, const double *floats) {\n"
  "  (void)bufs; (void)floats;\n"
  "  if (ints[0]) {\n"
  "    struct timespec t = {0, 3000000}; nanosleep(&t, 0);\n"
  "  } else {\n"
  "    int64_t t0 = mono(); while (mono() - t0 < 3000000) {}\n"
  "  }\n"
  "}\n";

static void
test_time_cpu(Fixture *f, gconstpointer data)
{
  g_assert_true(ts_backend_runs_on_host(f->backend));
  g_autoptr(TsModule) module = compile_ok(f, sleep_spin_src, "ts_kernel");
  g_autoptr(GError) error = NULL;
  TsBuffer *buf = ts_backend_alloc(f->backend, 64, &error);
  g_assert_no_error(error);
  for (gint64 sleeping = 0; sleeping <= 1; sleeping++) {
    gint64 ints[1] = {sleeping};
    TsLaunch launch = {.buffers = &buf, .n_buffers = 1, .ints = ints, .n_ints = 1};
    double wall[5];
    TsCpuTime cpu[5];
    g_assert_true(ts_backend_time_cpu(f->backend, module, &launch, 1, 5, wall, cpu, &error));
    g_assert_no_error(error);
    for (guint i = 0; i < 5; i++) {
      g_test_message("%s: wall %.0f ns, thread %.0f ns, process %.0f ns",
                     sleeping ? "sleep" : "spin", wall[i], cpu[i].thread_ns, cpu[i].process_ns);
      g_assert_cmpfloat(wall[i], >=, 3e6);
      g_assert_cmpfloat(cpu[i].process_ns, >=, cpu[i].thread_ns);
      if (sleeping)
        g_assert_cmpfloat(cpu[i].thread_ns, <, 0.5 * wall[i]);
      else /* CPU clocks are read outside the wall clock's pair: allow their cost */
        g_assert_cmpfloat(cpu[i].thread_ns, <=, wall[i] + 1e5);
    }
    if (!sleeping) { /* spinning, it ran most of the time unless the machine is very busy */
      double most = 0;
      for (guint i = 0; i < 5; i++)
        most = MAX(most, cpu[i].thread_ns / wall[i]);
      g_assert_cmpfloat(most, >, 0.5);
    }
  }
  ts_backend_buffer_free(f->backend, buf);
}

/* Several compilers racing on one key (a parallel tuner, or two tuners sharing a cache): each
 * builds privately and renames, so every one succeeds and all agree on the artifact. */
typedef struct {
  const char *cache_dir;
  char *hash;
  GError *error;
} RaceArgs;

static gpointer
race_thread(gpointer data)
{
  RaceArgs *args = data;
  g_autoptr(TsBackend) backend = ts_backend_open("cpu", &args->error);
  if (backend == NULL)
    return NULL;
  ts_backend_set_cache_dir(backend, args->cache_dir);
  TsSource src = { TS_LANG_C, saxpy_src, "ts_kernel" };
  g_autoptr(TsModule) module = ts_backend_compile(backend, &src, &args->error);
  if (module != NULL)
    args->hash = g_strdup(ts_module_hash(module));
  return NULL;
}

static void
test_concurrent_compile(Fixture *f, gconstpointer data)
{
  RaceArgs args[4] = { 0 };
  GThread *threads[G_N_ELEMENTS(args)];
  for (guint i = 0; i < G_N_ELEMENTS(args); i++) {
    args[i].cache_dir = f->cache_dir;
    threads[i] = g_thread_new("race", race_thread, &args[i]);
  }
  for (guint i = 0; i < G_N_ELEMENTS(args); i++) {
    g_thread_join(threads[i]);
    g_assert_no_error(args[i].error);
    g_assert_cmpstr(args[i].hash, ==, args[0].hash);
  }
  g_autoptr(TsModule) module = compile_ok(f, saxpy_src, "ts_kernel");
  g_assert_true(ts_module_from_cache(module));
  g_assert_cmpstr(ts_module_hash(module), ==, args[0].hash);
  run_saxpy(f, module);
  for (guint i = 0; i < G_N_ELEMENTS(args); i++)
    g_free(args[i].hash);

  /* Nothing but the artifact is left behind: no temp files in the cache. */
  g_autoptr(GDir) dir = g_dir_open(f->cache_dir, 0, NULL);
  guint n = 0;
  while (g_dir_read_name(dir) != NULL)
    n++;
  g_assert_cmpuint(n, ==, 1);
}

/* The build directory is under $TMPDIR; a cache on another file system (tmpfs here) cannot be
 * reached by rename alone. */
static void
test_cache_other_fs(Fixture *f, gconstpointer data)
{
  if (!g_file_test("/dev/shm", G_FILE_TEST_IS_DIR)) {
    g_test_skip("no /dev/shm");
    return;
  }
  g_autofree char *dir = g_build_filename("/dev/shm", "ts-test-backend-XXXXXX", NULL);
  if (g_mkdtemp(dir) == NULL) {
    g_test_skip("/dev/shm is not writable");
    return;
  }
  ts_backend_set_cache_dir(f->backend, dir);
  {
    g_autoptr(TsModule) module = compile_ok(f, saxpy_src, "ts_kernel");
    run_saxpy(f, module);
    g_autoptr(TsModule) again = compile_ok(f, saxpy_src, "ts_kernel");
    g_assert_true(ts_module_from_cache(again));
  }
  ts_test_remove_tree(dir);
}

/* A missing compiler is not a failure to open (the backend still allocates and runs loaded
 * modules), but every compile says which compiler it could not run and how to choose one. */
static void
test_missing_compiler(void)
{
  /* TS_CC is read at open. The child runs only this test, so its setenv() happens before any
   * thread exists (earlier tests here have started GLib's worker thread). */
  if (!g_test_subprocess()) {
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_INHERIT_STDERR);
    g_test_trap_assert_passed();
    return;
  }
  g_setenv("TS_CC", "/nonexistent/ts-no-such-cc", TRUE);
  g_autoptr(GError) error = NULL;
  g_autoptr(TsBackend) backend = ts_backend_open("cpu", &error);
  g_assert_no_error(error);
  g_assert_cmpstr(ts_backend_describe(backend)->toolchain, ==, "unknown");

  g_autofree char *cache = g_dir_make_tmp("ts-test-backend-XXXXXX", &error);
  g_assert_no_error(error);
  ts_backend_set_cache_dir(backend, cache);
  TsSource src = { TS_LANG_C, "void ts_kernel(void) {}\n", "ts_kernel" };
  TsModule *module = ts_backend_compile(backend, &src, &error);
  g_assert_null(module);
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_COMPILE);
  g_assert_nonnull(strstr(error->message, "ts-no-such-cc"));
  g_assert_nonnull(strstr(error->message, "TS_CC"));
  ts_test_remove_tree(cache);
}

static void
test_describe(Fixture *f, gconstpointer data)
{
  const TsDeviceInfo *info = ts_backend_describe(f->backend);
  g_assert_cmpstr(info->backend, ==, "cpu");
  g_assert_cmpstr(ts_backend_name(f->backend), ==, "cpu");
  g_assert_cmpuint(info->compute_units, >=, 1);
  g_assert_cmpuint(info->memory_bytes, >, 0);
  g_assert_nonnull(info->name);
  g_assert_cmpstr(info->name, !=, "");
  g_assert_nonnull(info->toolchain);
  g_assert_cmpstr(info->toolchain, !=, "");
  struct utsname u;
  g_assert_cmpint(uname(&u), ==, 0);
  g_assert_true(g_str_has_prefix(info->arch, u.machine));
  g_assert_cmpuint(info->smem_per_block, ==, 0);
#if defined(__x86_64__) || defined(__aarch64__)
  g_assert_cmpuint(info->vector_bits, >=, 128);
#endif
#if defined(__x86_64__)
  /* The name ends with the core's family and model, as the kernel reads them from CPUID. */
  g_autofree char *cpuinfo = NULL;
  if (g_file_get_contents("/proc/cpuinfo", &cpuinfo, NULL, NULL)) {
    const char *fam = strstr(cpuinfo, "\ncpu family");
    const char *mod = strstr(cpuinfo, "\nmodel\t");
    g_assert_nonnull(fam);
    g_assert_nonnull(mod);
    g_autofree char *want = g_strdup_printf(" (family %d, model %d)", atoi(strchr(fam, ':') + 1),
                                            atoi(strchr(mod, ':') + 1));
    g_assert_true(g_str_has_suffix(info->name, want));
    g_assert_cmpuint(strlen(info->name), >, strlen(want)); /* the model name before it */
  }
#endif
  /* The L3 a core shares, as sysfs describes it, where it does (not glibc's whole-package
   * figure). */
  for (int i = 0; i < 8; i++) {
    g_autofree char *dir = g_strdup_printf("/sys/devices/system/cpu/cpu0/cache/index%d", i);
    g_autofree char *lpath = g_build_filename(dir, "level", NULL);
    g_autofree char *spath = g_build_filename(dir, "size", NULL);
    g_autofree char *level = NULL, *size = NULL;
    if (!g_file_get_contents(lpath, &level, NULL, NULL) ||
        !g_file_get_contents(spath, &size, NULL, NULL) || atoi(level) != 3)
      continue;
    char *end = NULL;
    guint64 kib = g_ascii_strtoull(size, &end, 10);
    if (end && *end == 'K')
      g_assert_cmpuint(info->l3_bytes, ==, kib * 1024);
  }
  g_test_message("%s | %s | %s | %u cores | L1 %" G_GUINT64_FORMAT " L2 %" G_GUINT64_FORMAT
                 " L3 %" G_GUINT64_FORMAT " | %u-bit vectors",
                 info->name, info->arch, info->toolchain, info->compute_units, info->l1_bytes,
                 info->l2_bytes, info->l3_bytes, info->vector_bits);
}

/* CPUID signatures of real cores: the extended family adds to 15 only, the extended model
 * counts for families 6 and 15 and up only. */
static void
test_x86_family_model(void)
{
  static const struct {
    guint32 signature;
    guint family, model;
  } cores[] = {
    {0x00800f12, 23, 1},   /* Zen 1 EPYC 7601 */
    {0x00a00f11, 25, 1},   /* Zen 3 EPYC 7763 */
    {0x00a10f11, 25, 17},  /* Zen 4 EPYC 9654 */
    {0x00b00f21, 26, 2},   /* Zen 5 EPYC 9005 */
    {0x00050654, 6, 85},   /* Skylake-SP Xeon */
    {0x000806f8, 6, 143},  /* Sapphire Rapids Xeon */
    {0x00000f29, 15, 2},   /* Pentium 4: family 15, no extended family */
    {0x00010f29, 15, 18},  /* ... an extended model on family 15 counts */
    {0x00010529, 5, 2},    /* family 5: the extended model does not count */
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cores); i++) {
    guint family = 0, model = 0;
    ts__x86_family_model(cores[i].signature, &family, &model);
    g_assert_cmpuint(family, ==, cores[i].family);
    g_assert_cmpuint(model, ==, cores[i].model);
  }
}

static void
test_registry(void)
{
  const char *const *names = ts_backend_names();
  g_assert_true(g_strv_contains(names, "cpu"));

  g_autoptr(GError) error = NULL;
  TsBackend *backend = ts_backend_open("no-such-device", &error);
  g_assert_null(backend);
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNAVAILABLE);
  g_assert_nonnull(strstr(error->message, "no-such-device"));
  g_assert_nonnull(strstr(error->message, "cpu"));
  g_clear_error(&error);

  g_autoptr(TsBackend) best = ts_backend_open("auto", &error);
  g_assert_no_error(error);
  g_assert_true(g_strv_contains(names, ts_backend_name(best)));
  g_autofree char *want = g_build_filename(g_get_user_cache_dir(), "tessera", "artifacts", NULL);
  g_assert_cmpstr(ts_backend_get_cache_dir(best), ==, want);
}

/* TESSERA_ARTIFACT_DIR places the artifacts alone (a schedule cache under XDG_CACHE_HOME stays
 * where it was); set empty, it is as if unset. */
static void
test_artifact_dir_env(void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp("ts-test-artifact-env-XXXXXX", &error);
  g_assert_no_error(error);
  g_autofree char *root = g_build_filename(dir, "kernels", NULL);
  g_setenv("TESSERA_ARTIFACT_DIR", root, TRUE);
  g_autoptr(TsBackend) backend = ts_backend_open("cpu", &error);
  g_assert_no_error(error);
  g_assert_cmpstr(ts_backend_get_cache_dir(backend), ==, root);
  TsSource src = {TS_LANG_C, saxpy_src, "ts_kernel"};
  g_autoptr(TsModule) module = ts_backend_compile(backend, &src, &error);
  g_assert_no_error(error);
  g_autofree char *name = g_strconcat(ts_module_hash(module), ".so", NULL);
  g_autofree char *path = g_build_filename(root, name, NULL);
  g_assert_true(g_file_test(path, G_FILE_TEST_IS_REGULAR));
  ts_backend_set_cache_dir(backend, "/nonexistent-elsewhere");
  ts_backend_set_cache_dir(backend, NULL); /* back to the default: the variable's */
  g_assert_cmpstr(ts_backend_get_cache_dir(backend), ==, root);

  g_setenv("TESSERA_ARTIFACT_DIR", "", TRUE);
  g_autoptr(TsBackend) plain = ts_backend_open("cpu", &error);
  g_assert_no_error(error);
  g_autofree char *want = g_build_filename(g_get_user_cache_dir(), "tessera", "artifacts", NULL);
  g_assert_cmpstr(ts_backend_get_cache_dir(plain), ==, want);
  g_unsetenv("TESSERA_ARTIFACT_DIR");
  ts_test_remove_tree(dir);
}

/* A second backend on its own cache: another machine, in effect, that has never compiled the
 * kernel and only gets its stored artifact. */
static void
other_backend(Fixture *other)
{
  g_autoptr(GError) error = NULL;
  other->cache_dir = g_dir_make_tmp("ts-test-backend-XXXXXX", &error);
  g_assert_no_error(error);
  other->backend = ts_backend_open("cpu", &error);
  g_assert_no_error(error);
  ts_backend_set_cache_dir(other->backend, other->cache_dir);
}

static guint
count_entries(const char *dir)
{
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  guint n = 0;
  while (d != NULL && g_dir_read_name(d) != NULL)
    n++;
  return n;
}

static GBytes *
saxpy_artifact(Fixture *f)
{
  g_autoptr(TsModule) module = compile_ok(f, saxpy_src, "ts_kernel");
  g_assert_cmpstr(ts_module_entry(module), ==, "ts_kernel");
  g_autoptr(GError) error = NULL;
  GBytes *bytes = ts_module_get_artifact(module, &error);
  g_assert_no_error(error);
  g_assert_nonnull(bytes);
  return bytes;
}

static void
test_artifact_round_trip(Fixture *f, gconstpointer data)
{
  g_autoptr(GBytes) bytes = saxpy_artifact(f);
  gsize len = 0;
  const char *raw = g_bytes_get_data(bytes, &len);
  g_assert_cmpuint(len, >, 4);
  g_assert_cmpmem(raw, 4, "\177ELF", 4);

  Fixture other;
  other_backend(&other);
  g_autoptr(GError) error = NULL;
  {
    g_autoptr(TsModule) module =
      ts_backend_load_artifact(other.backend, bytes, "ts_kernel", &error);
    g_assert_no_error(error);
    g_assert_nonnull(module);
    g_autofree char *sha = g_compute_checksum_for_bytes(G_CHECKSUM_SHA256, bytes);
    g_assert_cmpstr(ts_module_hash(module), ==, sha);
    g_assert_true(ts_module_from_cache(module));
    g_assert_cmpfloat(ts_module_compile_ms(module), ==, 0.0);
    g_assert_cmpstr(ts_module_log(module), ==, "");
    g_assert_cmpstr(ts_module_entry(module), ==, "ts_kernel");
    run_saxpy(&other, module);

    /* The very same bytes come back out, so a reloaded baseline can be stored again. */
    g_autoptr(GBytes) again = ts_module_get_artifact(module, &error);
    g_assert_no_error(error);
    g_assert_true(g_bytes_equal(again, bytes));
    g_assert_cmpuint(count_entries(other.cache_dir), ==, 1);

    /* A second load finds the entry and writes nothing. */
    g_autoptr(TsModule) second =
      ts_backend_load_artifact(other.backend, bytes, "ts_kernel", &error);
    g_assert_no_error(error);
    g_assert_cmpstr(ts_module_hash(second), ==, sha);
    run_saxpy(&other, second);
    g_assert_cmpuint(count_entries(other.cache_dir), ==, 1);
  }
  fixture_tear_down(&other, NULL);
}

/* An entry damaged on disk under the artifact's key is replaced by the good bytes. */
static void
test_artifact_damaged_entry(Fixture *f, gconstpointer data)
{
  g_autoptr(GBytes) bytes = saxpy_artifact(f);
  Fixture other;
  other_backend(&other);
  g_autofree char *sha = g_compute_checksum_for_bytes(G_CHECKSUM_SHA256, bytes);
  g_autofree char *name = g_strconcat(sha, ".so", NULL);
  g_autofree char *path = g_build_filename(other.cache_dir, name, NULL);
  g_autoptr(GError) error = NULL;
  g_assert_true(g_file_set_contents(path, "not an ELF file", -1, &error));
  {
    g_autoptr(TsModule) module =
      ts_backend_load_artifact(other.backend, bytes, "ts_kernel", &error);
    g_assert_no_error(error);
    run_saxpy(&other, module);
  }
  fixture_tear_down(&other, NULL);
}

static void
assert_load_fails(Fixture *f, GBytes *bytes, const char *entry, const char *needle)
{
  g_autoptr(GError) error = NULL;
  TsModule *module = ts_backend_load_artifact(f->backend, bytes, entry, &error);
  g_assert_null(module);
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LOAD);
  g_test_message("%s", error->message);
  if (strstr(error->message, needle) == NULL)
    g_error("'%s' lacks '%s'", error->message, needle);
}

static void
test_artifact_bad_bytes(Fixture *f, gconstpointer data)
{
  g_autoptr(GBytes) garbage = g_bytes_new_static("not an ELF file", 15);
  g_autofree char *sha = g_compute_checksum_for_bytes(G_CHECKSUM_SHA256, garbage);
  g_autofree char *prefix = g_strndup(sha, 12);
  assert_load_fails(f, garbage, "ts_kernel", "cannot be loaded on this machine");
  assert_load_fails(f, garbage, "ts_kernel", prefix);
  /* Nothing was left behind for a later load to trip on. */
  g_assert_cmpuint(count_entries(f->cache_dir), ==, 0);

  g_autoptr(GBytes) whole = saxpy_artifact(f);
  g_autoptr(GBytes) truncated = g_bytes_new_from_bytes(whole, 0, g_bytes_get_size(whole) / 2);
  /* dlopen itself would crash on this one (SIGBUS mapping past the end of the file). */
  assert_load_fails(f, truncated, "ts_kernel", "truncated");
  assert_load_fails(f, truncated, "ts_kernel", "truncated");

  /* Another architecture's shared object (e_machine, bytes 18-19 of the ELF header). */
  gsize len = 0;
  g_autofree guint8 *raw = g_memdup2(g_bytes_get_data(whole, &len), g_bytes_get_size(whole));
  raw[18] ^= 0x5a;
  g_autoptr(GBytes) foreign = g_bytes_new(raw, len);
  assert_load_fails(f, foreign, "ts_kernel", "ELF machine");
  g_assert_cmpuint(count_entries(f->cache_dir), ==, 1); /* the compiled one */

  g_autoptr(GBytes) empty = g_bytes_new_static("", 0);
  assert_load_fails(f, empty, "ts_kernel", "empty");
}

static void
test_artifact_missing_entry(Fixture *f, gconstpointer data)
{
  g_autoptr(GBytes) bytes = saxpy_artifact(f);
  Fixture other;
  other_backend(&other);
  assert_load_fails(&other, bytes, "absent_entry_9", "absent_entry_9");
  /* The artifact itself is fine: it stays and loads with the right symbol. */
  assert_load_fails(&other, bytes, "absent_entry_9", "absent_entry_9");
  g_autoptr(GError) error = NULL;
  {
    g_autoptr(TsModule) module =
      ts_backend_load_artifact(other.backend, bytes, "ts_kernel", &error);
    g_assert_no_error(error);
    run_saxpy(&other, module);
  }
  fixture_tear_down(&other, NULL);
}

static void
test_artifact_unreadable(Fixture *f, gconstpointer data)
{
  g_autoptr(TsModule) module = compile_ok(f, saxpy_src, "ts_kernel");
  g_autofree char *name = g_strconcat(ts_module_hash(module), ".so", NULL);
  g_autofree char *path = g_build_filename(f->cache_dir, name, NULL);
  g_assert_cmpint(g_unlink(path), ==, 0);
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) bytes = ts_module_get_artifact(module, &error);
  g_assert_null(bytes);
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_IO);
  g_assert_nonnull(strstr(error->message, path));
  /* The loaded module does not need its file. */
  run_saxpy(f, module);
}

/* A kernel that writes past the end of its output (by `ints[1]` floats) is caught after the
 * launch, names the buffer and the bytes it reached, and leaves the backend lost: every later
 * launch or timing is refused, since the process's own memory may have been hit. Writes that
 * stay inside their buffers leave the backend usable. */
static const char overrun_src[] =
  "#include <stdint.h>\n"
  "void ts_kernel(void *const *bufs, const int64_t *ints, const double *floats) {\n"
  "  float *out = bufs[1];\n"
  "  for (int64_t i = 0; i < ints[0] + ints[1]; i++)\n"
  "    out[i] = 1.0f;\n"
  "}\n";

static void
test_overrun_lost(Fixture *f, gconstpointer data)
{
  enum { N = 100 };
  g_autoptr(TsModule) module = compile_ok(f, overrun_src, "ts_kernel");
  g_autoptr(GError) error = NULL;
  TsBuffer *bufs[2] = {
    ts_backend_alloc(f->backend, 4 * N, &error),
    ts_backend_alloc(f->backend, 4 * N, &error),
  };
  g_assert_no_error(error);
  gint64 ints[2] = {N, 0};
  TsLaunch launch = {.buffers = bufs, .n_buffers = 2, .ints = ints, .n_ints = 2};
  double sample = 0;
  g_assert_true(ts_backend_launch(f->backend, module, &launch, &error));
  g_assert_true(ts_backend_time(f->backend, module, &launch, 1, 1, &sample, &error));
  g_assert_no_error(error);
  g_assert_null(ts_backend_lost(f->backend));

  ints[1] = 3; /* 12 bytes past the end */
  g_assert_false(ts_backend_launch(f->backend, module, &launch, &error));
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LAUNCH);
  g_assert_nonnull(strstr(error->message, "wrote past the end of buffer 1 (400 bytes), 1 to 12 "
                                          "bytes beyond it"));
  const char *lost = ts_backend_lost(f->backend);
  g_assert_nonnull(lost);
  g_assert_nonnull(strstr(lost, "ts_kernel wrote past the end"));
  g_clear_error(&error);
  ints[1] = 0;
  g_assert_false(ts_backend_launch(f->backend, module, &launch, &error));
  g_assert_nonnull(strstr(error->message, "an earlier kernel ts_kernel wrote past"));
  g_clear_error(&error);
  g_assert_false(ts_backend_time(f->backend, module, &launch, 0, 1, &sample, &error));
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LAUNCH);
  ts_backend_buffer_free(f->backend, bufs[0]);
  ts_backend_buffer_free(f->backend, bufs[1]);
}

/* The same caught in a timing batch (checked once after it, outside the timed calls). */
static void
test_overrun_timed(Fixture *f, gconstpointer data)
{
  g_autoptr(TsModule) module = compile_ok(f, overrun_src, "ts_kernel");
  g_autoptr(GError) error = NULL;
  TsBuffer *bufs[2] = {
    ts_backend_alloc(f->backend, 64, &error),
    ts_backend_alloc(f->backend, 64, &error),
  };
  gint64 ints[2] = {16, 64}; /* the whole guard and beyond it: still named, up to its end */
  TsLaunch launch = {.buffers = bufs, .n_buffers = 2, .ints = ints, .n_ints = 2};
  double samples[3];
  g_assert_false(ts_backend_time(f->backend, module, &launch, 0, 3, samples, &error));
  g_assert_nonnull(strstr(error->message, "1 to 256 bytes beyond it"));
  g_assert_nonnull(ts_backend_lost(f->backend));
  ts_backend_buffer_free(f->backend, bufs[0]);
  ts_backend_buffer_free(f->backend, bufs[1]);
}

/* Entries are loaded as code, so only ours are: a cache directory others may write into is
 * refused, naming the fix; an entry that is writable by others, a link, or (as root, where the
 * test can make one) owned by someone else is ignored and rebuilt over. */
static void
test_cache_trust(Fixture *f, gconstpointer data)
{
  g_autoptr(TsModule) first = compile_ok(f, saxpy_src, "ts_kernel");
  g_autofree char *name = g_strconcat(ts_module_hash(first), ".so", NULL);
  g_autofree char *path = g_build_filename(f->cache_dir, name, NULL);
  g_clear_pointer(&first, ts_module_free);

  g_assert_cmpint(g_chmod(path, 0666), ==, 0);
  g_autoptr(TsModule) rebuilt = compile_ok(f, saxpy_src, "ts_kernel");
  g_assert_false(ts_module_from_cache(rebuilt));
  GStatBuf st;
  g_assert_cmpint(g_stat(path, &st), ==, 0);
  g_assert_cmpint(st.st_mode & 022, ==, 0);
  g_clear_pointer(&rebuilt, ts_module_free);

  if (geteuid() == 0) {
    g_assert_cmpint(chown(path, 4242, (gid_t)-1), ==, 0);
    g_autoptr(TsModule) again = compile_ok(f, saxpy_src, "ts_kernel");
    g_assert_false(ts_module_from_cache(again));
    g_assert_cmpint(g_stat(path, &st), ==, 0);
    g_assert_cmpint(st.st_uid, ==, 0);
  }

  g_assert_cmpint(g_chmod(f->cache_dir, 0777), ==, 0);
  g_autoptr(GError) error = NULL;
  TsSource src = {TS_LANG_C, saxpy_src, "ts_kernel"};
  g_autoptr(TsBackend) fresh = ts_backend_open("cpu", &error);
  g_assert_no_error(error);
  ts_backend_set_cache_dir(fresh, f->cache_dir);
  g_assert_null(ts_backend_compile(fresh, &src, &error));
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_IO);
  g_assert_nonnull(strstr(error->message, "writable by others"));
  g_assert_cmpint(g_chmod(f->cache_dir, 0700), ==, 0);
}

/* What a generated source starts with: comments, system includes, TS_VEC, the primitives. */
#define KERNEL_PRELUDE                                                                         \
  "/* Tessera-like kernel %d */\n"                                                             \
  "#include <stdint.h>\n"                                                                      \
  "#include <string.h>\n"                                                                      \
  "#define TS_VEC 8\n"                                                                         \
  "#include \"ts_cpu_prims.h\"\n"

/* A kernel in the shape the emitter writes (comments, system includes, TS_VEC, then the
 * primitives): out[i] = exp(in[i]) through the vector and scalar primitives. */
static const char exp_src_fmt[] =
  KERNEL_PRELUDE
  "void ts_kernel(void *const *bufs, const int64_t *ints, const double *floats) {\n"
  "  const float *in = bufs[0];\n"
  "  float *out = bufs[1];\n"
  "  int64_t i = 0;\n"
  "  for (; i + TS_VEC <= ints[0]; i += TS_VEC)\n"
  "    ts_vf_store_f32(out + i, ts_vf_exp(ts_vf_load_f32(in + i)));\n"
  "  for (; i < ints[0]; i++)\n"
  "    out[i] = ts_exp_f32(in[i]) + (float)%d;\n"
  "}\n";

static void
run_exp(Fixture *f, TsModule *module, float *out, int n)
{
  g_autoptr(GError) error = NULL;
  g_autofree float *in = g_new(float, n);
  for (int i = 0; i < n; i++)
    in[i] = -20.0f + 0.37f * (float)i;
  TsBuffer *bufs[2] = {
    ts_backend_alloc(f->backend, sizeof(float) * n, &error),
    ts_backend_alloc(f->backend, sizeof(float) * n, &error),
  };
  g_assert_no_error(error);
  g_assert_true(ts_backend_upload(f->backend, bufs[0], in, sizeof(float) * n, &error));
  gint64 ints[1] = {n};
  TsLaunch launch = {.buffers = bufs, .n_buffers = 2, .ints = ints, .n_ints = 1};
  g_assert_true(ts_backend_launch(f->backend, module, &launch, &error));
  g_assert_true(ts_backend_download(f->backend, out, bufs[1], sizeof(float) * n, &error));
  g_assert_no_error(error);
  ts_backend_buffer_free(f->backend, bufs[0]);
  ts_backend_buffer_free(f->backend, bufs[1]);
}

static char *
find_gch(const char *cache_dir)
{
  g_autoptr(GDir) d = g_dir_open(cache_dir, 0, NULL);
  const char *name;
  while (d != NULL && (name = g_dir_read_name(d)) != NULL) {
    g_autofree char *gch = g_build_filename(cache_dir, name, "ts_cpu_prims_v8.h.gch", NULL);
    if (g_str_has_prefix(name, "pch-") && g_file_test(gch, G_FILE_TEST_EXISTS))
      return g_steal_pointer(&gch);
  }
  return NULL;
}

/* With GCC the primitives are precompiled once into the artifact cache and used by every
 * compile after: the same results as without (TS_CPU_PCH=0), and a damaged .gch costs only its
 * speed (GCC falls back to the header). */
static void
test_pch(Fixture *f, gconstpointer data)
{
  const TsDeviceInfo *dev = ts_backend_describe(f->backend);
  enum { N = 203 };
  float with[N], without[N];
  g_autofree char *src0 = g_strdup_printf(exp_src_fmt, 0, 0);
  {
    g_autoptr(TsModule) m = compile_ok(f, src0, "ts_kernel");
    run_exp(f, m, with, N);
  }
  g_autofree char *gch = find_gch(f->cache_dir);
  if (!g_str_has_prefix(dev->toolchain, "gcc ")) {
    g_assert_null(gch);
    g_test_skip("the compiler is not GCC: no precompiled header");
    return;
  }
  g_assert_nonnull(gch);
  g_assert_true(g_file_test(gch, G_FILE_TEST_IS_REGULAR));

  /* The same source, compiled without the precompiled header into another cache. */
  g_autoptr(GError) error = NULL;
  g_autofree char *other = g_dir_make_tmp("ts-test-backend-XXXXXX", &error);
  g_assert_no_error(error);
  g_setenv("TS_CPU_PCH", "0", TRUE);
  ts_backend_set_cache_dir(f->backend, other);
  {
    g_autoptr(TsModule) m = compile_ok(f, src0, "ts_kernel");
    run_exp(f, m, without, N);
  }
  g_unsetenv("TS_CPU_PCH");
  g_autofree char *none = find_gch(other);
  g_assert_null(none);
  ts_test_remove_tree(other);
  ts_backend_set_cache_dir(f->backend, f->cache_dir);
  g_assert_cmpmem(with, sizeof with, without, sizeof without);

  /* A damaged precompiled header: a new kernel still compiles and runs right. */
  g_assert_true(g_file_set_contents(gch, "not a precompiled header", -1, NULL));
  g_assert_cmpint(g_chmod(gch, 0644), ==, 0);
  g_autofree char *src1 = g_strdup_printf(exp_src_fmt, 1, 0);
  g_autoptr(TsModule) m = compile_ok(f, src1, "ts_kernel");
  float again[N];
  run_exp(f, m, again, N);
  g_assert_cmpmem(with, sizeof with, again, sizeof again);
}

static const char ukr_src_fmt[] =
  KERNEL_PRELUDE
  "TS_DEFINE_UKR_F32(ts_ukr_6x16_v8_u4, 6, 16, 8, 4);\n"
  "void ts_kernel(void *const *bufs, const int64_t *ints, const double *floats) {\n"
  "  ts_ukr_6x16_v8_u4(ints[0], bufs[0], bufs[1], bufs[2], 16, 0, 6, 16);\n"
  "  ((float *)bufs[2])[0] += (float)%d;\n"
  "}\n";

/* C (6 x 16) = A B through the kernel, A packed (a[k * 6 + i]) and B (K x 16) of small
 * integers, so that every sum is exact. */
static void
run_ukr(Fixture *f, TsModule *module, int extra)
{
  enum { K = 37 };
  g_autoptr(GError) error = NULL;
  float a[K * 6], b[K * 16], c[6 * 16];
  for (int k = 0; k < K; k++) {
    for (int i = 0; i < 6; i++)
      a[k * 6 + i] = (float)((k + 2 * i) % 7 - 3);
    for (int j = 0; j < 16; j++)
      b[k * 16 + j] = (float)((3 * k + j) % 5 - 2);
  }
  gsize sizes[3] = {sizeof a, sizeof b, sizeof c};
  const float *host[2] = {a, b};
  TsBuffer *bufs[3];
  for (int i = 0; i < 3; i++) {
    bufs[i] = ts_backend_alloc(f->backend, sizes[i], &error);
    g_assert_no_error(error);
    if (i < 2)
      g_assert_true(ts_backend_upload(f->backend, bufs[i], host[i], sizes[i], &error));
  }
  gint64 ints[1] = {K};
  TsLaunch launch = {.buffers = bufs, .n_buffers = 3, .ints = ints, .n_ints = 1};
  g_assert_true(ts_backend_launch(f->backend, module, &launch, &error));
  g_assert_true(ts_backend_download(f->backend, c, bufs[2], sizeof c, &error));
  g_assert_no_error(error);
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 16; j++) {
      float want = i == 0 && j == 0 ? (float)extra : 0.0f;
      for (int k = 0; k < K; k++)
        want += a[k * 6 + i] * b[k * 16 + j];
      g_assert_cmpfloat(c[i * 16 + j], ==, want);
    }
  for (int i = 0; i < 3; i++)
    ts_backend_buffer_free(f->backend, bufs[i]);
}

/* How many objects named prefix* a cache holds; *one (may be NULL): the last one found. */
static guint
find_objects(const char *cache_dir, const char *prefix, char **one)
{
  guint n = 0;
  g_autoptr(GDir) d = g_dir_open(cache_dir, 0, NULL);
  const char *name;
  while (d != NULL && (name = g_dir_read_name(d)) != NULL) {
    if (!g_str_has_prefix(name, "pch-"))
      continue;
    g_autofree char *sub = g_build_filename(cache_dir, name, NULL);
    g_autoptr(GDir) e = g_dir_open(sub, 0, NULL);
    const char *obj;
    while (e != NULL && (obj = g_dir_read_name(e)) != NULL)
      if (g_str_has_prefix(obj, prefix) && g_str_has_suffix(obj, ".o")) {
        n++;
        if (one != NULL) {
          g_free(*one);
          *one = g_build_filename(sub, obj, NULL);
        }
      }
  }
  return n;
}

/* Micro-kernel objects, compiled from C or assembled (where the host runs ts-cpu-asm.c's). */
static guint
find_ukrs(const char *cache_dir, char **one)
{
  return find_objects(cache_dir, "ukr-", one) + find_objects(cache_dir, "asm-", one);
}

/* With GCC a kernel's micro-kernel is compiled once into the cache and linked into every
 * kernel that instantiates it after: the same results as compiled whole (TS_CPU_UKR_CACHE=0),
 * and a damaged object costs a compile of the whole source, then is built again. */
static void
test_ukr_cache(Fixture *f, gconstpointer data)
{
  const TsDeviceInfo *dev = ts_backend_describe(f->backend);
  g_autofree char *src0 = g_strdup_printf(ukr_src_fmt, 0, 0);
  {
    g_autoptr(TsModule) m = compile_ok(f, src0, "ts_kernel");
    run_ukr(f, m, 0);
  }
  g_autofree char *obj = NULL;
  if (!g_str_has_prefix(dev->toolchain, "gcc ")) {
    g_assert_cmpuint(find_ukrs(f->cache_dir, NULL), ==, 0);
    g_test_skip("the compiler is not GCC: no precompiled primitives");
    return;
  }
  g_assert_cmpuint(find_ukrs(f->cache_dir, &obj), ==, 1);
  GStatBuf st0, st1;
  g_assert_cmpint(g_stat(obj, &st0), ==, 0);
  /* Another kernel with the same micro-kernel links the same object. */
  g_autofree char *src1 = g_strdup_printf(ukr_src_fmt, 1, 1);
  {
    g_autoptr(TsModule) m = compile_ok(f, src1, "ts_kernel");
    run_ukr(f, m, 1);
  }
  g_assert_cmpuint(find_ukrs(f->cache_dir, NULL), ==, 1);
  g_assert_cmpint(g_stat(obj, &st1), ==, 0);
  g_assert_cmpint(st1.st_ino, ==, st0.st_ino);
  g_assert_cmpint(st1.st_mtime, ==, st0.st_mtime);

  /* Compiled whole into another cache: no objects, the same results. */
  g_autoptr(GError) error = NULL;
  g_autofree char *other = g_dir_make_tmp("ts-test-backend-XXXXXX", &error);
  g_assert_no_error(error);
  g_setenv("TS_CPU_UKR_CACHE", "0", TRUE);
  ts_backend_set_cache_dir(f->backend, other);
  {
    g_autofree char *src2 = g_strdup_printf(ukr_src_fmt, 2, 2);
    g_autoptr(TsModule) m = compile_ok(f, src2, "ts_kernel");
    run_ukr(f, m, 2);
  }
  g_unsetenv("TS_CPU_UKR_CACHE");
  g_assert_cmpuint(find_ukrs(other, NULL), ==, 0);
  ts_test_remove_tree(other);
  ts_backend_set_cache_dir(f->backend, f->cache_dir);

  /* A damaged object: the kernel is compiled whole, and the object goes. */
  g_assert_true(g_file_set_contents(obj, "not an object", -1, NULL));
  g_assert_cmpint(g_chmod(obj, 0644), ==, 0);
  g_autofree char *src3 = g_strdup_printf(ukr_src_fmt, 3, 3);
  {
    g_autoptr(TsModule) m = compile_ok(f, src3, "ts_kernel");
    run_ukr(f, m, 3);
  }
  g_assert_false(g_file_test(obj, G_FILE_TEST_EXISTS));
  g_autofree char *src4 = g_strdup_printf(ukr_src_fmt, 4, 4);
  {
    g_autoptr(TsModule) m = compile_ok(f, src4, "ts_kernel");
    run_ukr(f, m, 4);
  }
  g_assert_true(g_file_test(obj, G_FILE_TEST_IS_REGULAR));
}

/* A kernel of the 6x16 micro-kernel at unroll %d, under the entry %s: the loops around the
 * micro-kernel (here a call) do not depend on either. */
static const char driver_src_fmt[] =
  KERNEL_PRELUDE
  "TS_DEFINE_UKR_F32(ts_ukr_6x16_v8_u%d, 6, 16, 8, %d);\n"
  "void %s(void *const *bufs, const int64_t *ints, const double *floats) {\n"
  "  ts_ukr_6x16_v8_u%d(ints[0], bufs[0], bufs[1], bufs[2], 16, 0, 6, 16);\n"
  "}\n";

static TsModule *
compile_driver(Fixture *f, int banner, int unroll, const char *entry)
{
  g_autofree char *src =
    g_strdup_printf(driver_src_fmt, banner, unroll, unroll, entry, unroll);
  TsModule *m = compile_ok(f, src, entry);
  run_ukr(f, m, 0);
  return m;
}

/* With GCC the code around a kernel's micro-kernels (its driver) is compiled once for every
 * kernel that differs from it only in those, in its entry's name and its leading comment, and
 * each such kernel is its micro-kernel's and the driver's objects linked: the right results
 * from each, one driver object. A damaged driver object costs a compile of the whole source,
 * then is built again. */
static void
test_driver_share(Fixture *f, gconstpointer data)
{
  const TsDeviceInfo *dev = ts_backend_describe(f->backend);
  g_autoptr(TsModule) m0 = compile_driver(f, 0, 4, "ts_kernel_a");
  if (!g_str_has_prefix(dev->toolchain, "gcc ")) {
    g_assert_cmpuint(find_objects(f->cache_dir, "drv-", NULL), ==, 0);
    g_test_skip("the compiler is not GCC: no precompiled primitives");
    return;
  }
  g_autofree char *drv = NULL;
  g_assert_cmpuint(find_objects(f->cache_dir, "drv-", &drv), ==, 1);
  /* The driver and its f32 micro-kernel need none of the intrinsics: nothing precompiled. */
  g_autofree char *gch = find_gch(f->cache_dir);
  g_assert_null(gch);
  GStatBuf st0, st1;
  g_assert_cmpint(g_stat(drv, &st0), ==, 0);
  /* Another micro-kernel, entry and comment: the same driver, both kernels loaded at once. */
  g_autoptr(TsModule) m1 = compile_driver(f, 1, 8, "ts_kernel_b");
  g_assert_cmpuint(find_ukrs(f->cache_dir, NULL), ==, 2);
  g_assert_cmpuint(find_objects(f->cache_dir, "drv-", NULL), ==, 1);
  g_assert_cmpint(g_stat(drv, &st1), ==, 0);
  g_assert_cmpint(st1.st_ino, ==, st0.st_ino);
  run_ukr(f, m0, 0);
  run_ukr(f, m1, 0);
  /* Other code around the micro-kernel: a driver of its own. */
  g_autofree char *other = g_strdup_printf(ukr_src_fmt, 2, 2);
  {
    g_autoptr(TsModule) m = compile_ok(f, other, "ts_kernel");
    run_ukr(f, m, 2);
  }
  g_assert_cmpuint(find_objects(f->cache_dir, "drv-", NULL), ==, 2);

  /* A damaged driver object: the kernel is compiled whole, and the object goes. */
  g_assert_true(g_file_set_contents(drv, "not an object", -1, NULL));
  g_assert_cmpint(g_chmod(drv, 0644), ==, 0);
  ts_module_free(compile_driver(f, 3, 4, "ts_kernel_c"));
  g_assert_false(g_file_test(drv, G_FILE_TEST_EXISTS));
  ts_module_free(compile_driver(f, 4, 4, "ts_kernel_d"));
  g_assert_true(g_file_test(drv, G_FILE_TEST_IS_REGULAR));
}

/* A kernel of one micro-kernel at TS_VEC 16 called with what the launch says: kc, ldc,
 * accumulate, mr, nr. The macro's line is the first %s, the entry the second. */
static const char asm_src_fmt[] =
  "/* Tessera-like kernel %d */\n"
  "#include <stdint.h>\n"
  "#include <string.h>\n"
  "#define TS_VEC 16\n"
  "#include \"ts_cpu_prims.h\"\n"
  "%s\n"
  "void %s(void *const *bufs, const int64_t *ints, const double *floats) {\n"
  "  ts_ukr_t(ints[0], bufs[0], bufs[1], bufs[2], ints[1], (int)ints[2], ints[3], ints[4]);\n"
  "}\n";

/* C (rows x ldc floats, in and out) after one call of the micro-kernel in m. */
static void
launch_ukr(Fixture *f, TsModule *m, const void *a, gsize a_size, const void *b, gsize b_size,
           float *c, gsize c_size, const gint64 ints[5])
{
  g_autoptr(GError) error = NULL;
  const gsize sizes[3] = {a_size, b_size, c_size};
  const void *host[3] = {a, b, c};
  TsBuffer *bufs[3];
  for (int i = 0; i < 3; i++) {
    bufs[i] = ts_backend_alloc(f->backend, sizes[i], &error);
    g_assert_no_error(error);
    g_assert_true(ts_backend_upload(f->backend, bufs[i], host[i], sizes[i], &error));
  }
  TsLaunch launch = {.buffers = bufs, .n_buffers = 3, .ints = (gint64 *)ints, .n_ints = 5};
  g_assert_true(ts_backend_launch(f->backend, m, &launch, &error));
  g_assert_true(ts_backend_download(f->backend, c, bufs[2], c_size, &error));
  g_assert_no_error(error);
  for (int i = 0; i < 3; i++)
    ts_backend_buffer_free(f->backend, bufs[i]);
}

/* n 4-byte elements in [-1, 1]: f32, or (bf16) pairs of bf16, the top halves of two. */
static void
random_panel(GRand *r, float *dst, int n, gboolean bf16)
{
  for (int i = 0; i < n; i++) {
    dst[i] = (float)g_rand_double_range(r, -1, 1);
    if (bf16) {
      const float hi = (float)g_rand_double_range(r, -1, 1);
      guint32 lo_bits, hi_bits;
      memcpy(&lo_bits, &dst[i], 4);
      memcpy(&hi_bits, &hi, 4);
      lo_bits = (lo_bits >> 16) | (hi_bits & 0xffff0000u);
      memcpy(&dst[i], &lo_bits, 4);
    }
  }
}

/* One call of an MR x NR micro-kernel on random panels: f32 (ref NULL) against the same sums
 * in C, one fmaf per k in k's order; bf16 dot product against the module ref (the C macro)
 * on the same input. The same bits, and C untouched outside the mr x nr corner. */
static void
run_asm_case(Fixture *f, TsModule *m, TsModule *ref, int MR, int NR, int kc, int mr, int nr,
             int accumulate)
{
  const int ldc = NR + 3, rows = MR + 1;
  const int steps = MAX(ref ? (kc + 1) / 2 : kc, 1); /* 4-byte elements a row or column */
  g_autofree float *a = g_new(float, (gsize)steps * MR);
  g_autofree float *b = g_new(float, (gsize)steps * NR);
  g_autofree float *c = g_new(float, (gsize)rows * ldc);
  g_autofree float *want = g_new(float, (gsize)rows * ldc);
  GRand *r = g_rand_new_with_seed((guint32)(kc * 131 + mr * 17 + nr + accumulate));
  random_panel(r, a, steps * MR, ref != NULL);
  random_panel(r, b, steps * NR, ref != NULL);
  for (int i = 0; i < rows * ldc; i++)
    want[i] = c[i] = (float)g_rand_double_range(r, -4, 4);
  g_rand_free(r);
  const gsize a_size = (gsize)steps * MR * 4, b_size = (gsize)steps * NR * 4,
              c_size = (gsize)rows * ldc * 4;
  const gint64 ints[5] = {kc, ldc, accumulate, mr, nr};
  if (ref != NULL) { /* any bits are two bf16 */
    launch_ukr(f, ref, a, a_size, b, b_size, want, c_size, ints);
  } else {
    for (int i = 0; i < mr; i++)
      for (int j = 0; j < nr; j++) {
        float acc = 0.0f;
        for (int k = 0; k < kc; k++)
          acc = fmaf(a[k * MR + i], b[k * NR + j], acc);
        want[i * ldc + j] = accumulate ? want[i * ldc + j] + acc : acc;
      }
  }
  launch_ukr(f, m, a, a_size, b, b_size, c, c_size, ints);
  for (int i = 0; i < rows * ldc; i++)
    if (memcmp(&c[i], &want[i], 4) != 0)
      g_error("%s %dx%d kc %d mr %d nr %d accumulate %d: C[%d][%d] = %a, want %a",
              ref ? "bf16dot" : "f32", MR, NR, kc, mr, nr, accumulate, i / ldc, i % ldc, c[i],
              want[i]);
}

/* Every edge, depth and accumulation of an MR x NR micro-kernel of V lanes at `unroll`, called
 * from `entry`: f32, or with bf16dot (V 16) the bf16 dot product's against the same compiled
 * from C (TS_CPU_ASM=0). */
static void
check_asm_tile(Fixture *f, const char *entry, gboolean bf16dot, int MR, int NR, int V,
               int unroll)
{
  g_autofree char *line =
    bf16dot ? g_strdup_printf("TS_DEFINE_UKR_BF16DOT(ts_ukr_t, %d, %d, %d);", MR, NR, unroll)
            : g_strdup_printf("TS_DEFINE_UKR_F32(ts_ukr_t, %d, %d, %d, %d);", MR, NR, V, unroll);
  const int id = (MR * 1000 + NR) * 100 + V;
  g_autofree char *src = g_strdup_printf(asm_src_fmt, id, line, entry);
  g_autoptr(TsModule) m = compile_ok(f, src, entry);
  TsModule *ref = NULL;
  if (bf16dot) { /* another entry: another source to the artifact cache */
    g_autofree char *ref_src = g_strdup_printf(asm_src_fmt, id, line, "ts_ref");
    g_setenv("TS_CPU_ASM", "0", TRUE);
    ref = compile_ok(f, ref_src, "ts_ref");
    g_unsetenv("TS_CPU_ASM");
  }
  /* Depths (in elements) that leave every remainder of the unroll, pairs odd and even. */
  const int kcs[] = {0, 1, 2 * unroll - 1, unroll, 2 * unroll, 6 * unroll + 3, 37};
  const int edges[][2] = {{MR, NR}, {MR - 1, NR}, {MR, NR / 2 + 1}, {1, 1}, {MR - 1, 3}};
  for (gsize k = 0; k < G_N_ELEMENTS(kcs); k++)
    for (gsize e = 0; e < G_N_ELEMENTS(edges); e++)
      for (int accumulate = 0; accumulate < 2; accumulate++)
        if (edges[e][0] > 0)
          run_asm_case(f, m, ref, MR, NR, kcs[k], edges[e][0], edges[e][1], accumulate);
  if (ref != NULL)
    ts_module_free(ref);
}

/* With GCC the f32 micro-kernels (16 lanes on AVX-512F, 8 and 4 on AVX with FMA) and the bf16
 * dot-product ones (AVX512_BF16) are assembled from the text ts-cpu-asm.c writes where the
 * host runs it: f32 gives the same bits as C's fmaf in k's order, bf16 the same as the C
 * macro's vdpbf16ps, on full and partial tiles, with and without accumulation, for one and
 * several vectors a row, the largest tiles that fit and unrolls that leave a remainder. A tile
 * that would spill, and TS_CPU_ASM=0, take the C macro: the same results, no assembled
 * object. */
static void
test_asm_ukr(Fixture *f, gconstpointer data)
{
  const TsDeviceInfo *dev = ts_backend_describe(f->backend);
  const gboolean gcc = g_str_has_prefix(dev->toolchain, "gcc ");
  __builtin_cpu_init();
  const gboolean avx512 = __builtin_cpu_supports("avx512f"),
                 bf16 = avx512 && __builtin_cpu_supports("avx512bf16"),
                 vl = avx512 && __builtin_cpu_supports("avx512vl"),
                 fma = __builtin_cpu_supports("avx") && __builtin_cpu_supports("fma");
  /* bf16dot, MR, NR, V, unroll, and whether it needs 32 vector registers */
  const int tiles[][6] = {{0, 14, 32, 16, 8, 1}, {0, 6, 16, 16, 1, 1}, {0, 8, 48, 16, 3, 1},
                          {0, 31, 16, 16, 2, 1}, {0, 6, 16, 8, 4, 0},  {0, 14, 16, 8, 3, 1},
                          {0, 12, 8, 8, 1, 0},   {0, 4, 8, 4, 2, 0},   {0, 14, 4, 4, 1, 0},
                          {1, 14, 32, 16, 4, 1}, {1, 6, 16, 16, 1, 1}, {1, 8, 48, 16, 3, 1}};
  guint n_asm = 0, n_c = 0; /* micro-kernel objects: assembled, compiled (references too) */
  for (gsize t = 0; t < G_N_ELEMENTS(tiles); t++) {
    const int *x = tiles[t];
    const gboolean runs = x[3] == 16 ? avx512 && (!x[0] || bf16) : fma && (!x[5] || vl);
    if (x[0] && !bf16)
      continue; /* no C macro to compare with either */
    check_asm_tile(f, "ts_kernel", x[0], x[1], x[2], x[3], x[4]);
    n_asm += gcc && runs;
    n_c += gcc && (!runs || x[0]);
    g_assert_cmpuint(find_objects(f->cache_dir, "asm-", NULL), ==, n_asm);
  }
  /* What an AVX2 machine gets, here too (TS_CPU_ASM=avx2): 16 registers, so a one-vector row
   * broadcasts into one instead of from memory (new text, where AVX512VL did that). */
  g_setenv("TS_CPU_ASM", "avx2", TRUE);
  for (gsize t = 0; t < G_N_ELEMENTS(tiles); t++)
    if (tiles[t][3] != 16 && !tiles[t][5])
      check_asm_tile(f, "ts_avx2", FALSE, tiles[t][1], tiles[t][2], tiles[t][3], tiles[t][4]);
  g_unsetenv("TS_CPU_ASM");
  n_asm += gcc && fma && vl ? 2 : 0;
  g_assert_cmpuint(find_objects(f->cache_dir, "asm-", NULL), ==, n_asm);
  const guint n_ukr = find_objects(f->cache_dir, "ukr-", NULL);
  check_asm_tile(f, "ts_kernel", FALSE, 16, 32, 16, 4); /* 32 accumulators + 2 B vectors: C */
  check_asm_tile(f, "ts_kernel", FALSE, 8, 32, 8, 4);   /* 32 + 4 ymm */
  g_setenv("TS_CPU_ASM", "0", TRUE);
  check_asm_tile(f, "ts_kernel", FALSE, 14, 32, 16, 4);
  g_unsetenv("TS_CPU_ASM");
  g_assert_cmpuint(find_objects(f->cache_dir, "asm-", NULL), ==, n_asm);
  g_assert_cmpuint(n_ukr, ==, n_c);
  g_assert_cmpuint(find_objects(f->cache_dir, "ukr-", NULL), ==, gcc ? n_ukr + 3 : 0);
  if (!gcc)
    g_test_skip("the compiler is not GCC: every micro-kernel compiled from C");
  else if (!fma || !bf16)
    g_test_skip("no AVX with FMA, AVX-512F or AVX512_BF16 here: those micro-kernels were "
                "compiled from C");
}

/* How many directories of shared objects (pch-*) a cache holds. */
static guint
count_object_dirs(const char *cache_dir)
{
  guint n = 0;
  g_autoptr(GDir) d = g_dir_open(cache_dir, 0, NULL);
  const char *name;
  while (d != NULL && (name = g_dir_read_name(d)) != NULL)
    n += g_str_has_prefix(name, "pch-");
  return n;
}

/* Objects compiled with -march=native are their host's: a host with another CPU model or
 * arch string sharing the cache (a home directory on NFS) builds and links its own, in a
 * directory of its own, and gets the right results. */
static void
test_objects_per_host(Fixture *f, gconstpointer data)
{
  const TsDeviceInfo *dev = ts_backend_describe(f->backend);
  ts_module_free(compile_driver(f, 0, 4, "ts_kernel_a"));
  if (!g_str_has_prefix(dev->toolchain, "gcc ")) {
    g_assert_cmpuint(count_object_dirs(f->cache_dir), ==, 0);
    g_test_skip("the compiler is not GCC: no shared objects");
    return;
  }
  g_assert_cmpuint(count_object_dirs(f->cache_dir), ==, 1);
  char *arch = f->backend->info.arch;
  f->backend->info.arch = g_strconcat(arch, "+another", NULL);
  ts_module_free(compile_driver(f, 0, 4, "ts_kernel_a"));
  g_assert_cmpuint(count_object_dirs(f->cache_dir), ==, 2);
  g_free(f->backend->info.arch);
  f->backend->info.arch = arch;
  ts_module_free(compile_driver(f, 0, 4, "ts_kernel_a"));
  g_assert_cmpuint(count_object_dirs(f->cache_dir), ==, 2);
}

/* A kernel that packs an A block of bf16 into f32 panels of 6 rows and writes the panels back
 * as bf16: what a GEMM calls besides its micro-kernel. */
static const char outline_src_fmt[] =
  KERNEL_PRELUDE
  "void ts_kernel(void *const *bufs, const int64_t *ints, const double *floats) {\n"
  "  ts_pack_a_block_bf16(bufs[0], ints[1], ints[0], ints[1], 6, bufs[1]);\n"
  "  ts_store_f32_as_bf16(bufs[1], bufs[2], ints[2]);\n"
  "}\n";

static void
run_outline(Fixture *f, TsModule *module)
{
  enum { MC = 13, KC = 5, PANELS = 3, N = PANELS * 6 * KC };
  g_autoptr(GError) error = NULL;
  guint16 a[MC * KC], c[N];
  float ap[N];
  for (int i = 0; i < MC * KC; i++) {
    const float v = (float)(i % 11 - 5);
    guint32 bits;
    memcpy(&bits, &v, 4);
    a[i] = (guint16)(bits >> 16); /* small integers: exact in bf16 */
  }
  TsBuffer *bufs[3];
  gsize sizes[3] = {sizeof a, sizeof ap, sizeof c};
  for (int i = 0; i < 3; i++) {
    bufs[i] = ts_backend_alloc(f->backend, sizes[i], &error);
    g_assert_no_error(error);
  }
  g_assert_true(ts_backend_upload(f->backend, bufs[0], a, sizeof a, &error));
  gint64 ints[3] = {MC, KC, N};
  TsLaunch launch = {.buffers = bufs, .n_buffers = 3, .ints = ints, .n_ints = 3};
  g_assert_true(ts_backend_launch(f->backend, module, &launch, &error));
  g_assert_true(ts_backend_download(f->backend, c, bufs[2], sizeof c, &error));
  g_assert_no_error(error);
  for (int p = 0; p < PANELS; p++)
    for (int k = 0; k < KC; k++)
      for (int i = 0; i < 6; i++) {
        const int row = p * 6 + i;
        g_assert_cmpuint(c[p * 6 * KC + k * 6 + i], ==, row < MC ? a[row * KC + k] : 0);
      }
  for (int i = 0; i < 3; i++)
    ts_backend_buffer_free(f->backend, bufs[i]);
}

static gboolean
has_outline(const char *cache_dir)
{
  return find_objects(cache_dir, "outline-", NULL) > 0;
}

/* With GCC the packing and conversions a kernel calls come from one object built once
 * (outline-*.o), with the same results as inline (TS_CPU_OUTLINE=0). */
static void
test_outline(Fixture *f, gconstpointer data)
{
  const TsDeviceInfo *dev = ts_backend_describe(f->backend);
  g_autofree char *src0 = g_strdup_printf(outline_src_fmt, 0);
  {
    g_autoptr(TsModule) m = compile_ok(f, src0, "ts_kernel");
    run_outline(f, m);
  }
  if (!g_str_has_prefix(dev->toolchain, "gcc ")) {
    g_assert_false(has_outline(f->cache_dir));
    g_test_skip("the compiler is not GCC: no precompiled primitives");
    return;
  }
  g_assert_true(has_outline(f->cache_dir));
  g_autoptr(GError) error = NULL;
  g_autofree char *other = g_dir_make_tmp("ts-test-backend-XXXXXX", &error);
  g_assert_no_error(error);
  g_setenv("TS_CPU_OUTLINE", "0", TRUE);
  ts_backend_set_cache_dir(f->backend, other);
  {
    g_autofree char *src1 = g_strdup_printf(outline_src_fmt, 1);
    g_autoptr(TsModule) m = compile_ok(f, src1, "ts_kernel");
    run_outline(f, m);
  }
  g_unsetenv("TS_CPU_OUTLINE");
  g_assert_false(has_outline(other));
  ts_test_remove_tree(other);
  ts_backend_set_cache_dir(f->backend, f->cache_dir);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  /* The defaults under test are XDG_CACHE_HOME's, whatever the caller's shell exports. */
  g_unsetenv("TESSERA_ARTIFACT_DIR");
#define ADD(path, fn) \
  g_test_add(path, Fixture, NULL, fixture_set_up, fn, fixture_tear_down)
  ADD("/backend/cpu/compile-launch", test_compile_launch);
  ADD("/backend/cpu/compile-error", test_compile_error);
  ADD("/backend/cpu/bound-ints", test_bound_ints);
  ADD("/backend/cpu/warnings-logged", test_warnings_logged);
  ADD("/backend/cpu/cache-hit", test_cache_hit);
  ADD("/backend/cpu/changed-source", test_changed_source);
  ADD("/backend/cpu/banner-shared", test_banner_shared);
  ADD("/backend/cpu/missing-entry", test_missing_entry);
  ADD("/backend/cpu/corrupt-artifact", test_corrupt_artifact);
  ADD("/backend/cpu/bad-cache-dir", test_bad_cache_dir);
  ADD("/backend/cpu/memory-bounds", test_memory_bounds);
  ADD("/backend/cpu/alignment", test_alignment);
  ADD("/backend/cpu/overrun-lost", test_overrun_lost);
  ADD("/backend/cpu/cache-trust", test_cache_trust);
  ADD("/backend/cpu/overrun-timed", test_overrun_timed);
  ADD("/backend/cpu/time", test_time);
  ADD("/backend/cpu/time-cpu", test_time_cpu);
  ADD("/backend/cpu/describe", test_describe);
  ADD("/backend/cpu/concurrent-compile", test_concurrent_compile);
  ADD("/backend/cpu/cache-other-fs", test_cache_other_fs);
  ADD("/backend/cpu/artifact/round-trip", test_artifact_round_trip);
  ADD("/backend/cpu/artifact/damaged-entry", test_artifact_damaged_entry);
  ADD("/backend/cpu/artifact/bad-bytes", test_artifact_bad_bytes);
  ADD("/backend/cpu/artifact/missing-entry", test_artifact_missing_entry);
  ADD("/backend/cpu/artifact/unreadable", test_artifact_unreadable);
  ADD("/backend/cpu/pch", test_pch);
  ADD("/backend/cpu/ukr-cache", test_ukr_cache);
  ADD("/backend/cpu/outline", test_outline);
  ADD("/backend/cpu/driver-share", test_driver_share);
  ADD("/backend/cpu/asm-ukr", test_asm_ukr);
  ADD("/backend/cpu/objects-per-host", test_objects_per_host);
#undef ADD
  g_test_add_func("/backend/registry", test_registry);
  g_test_add_func("/backend/x86-family-model", test_x86_family_model);
  g_test_add_func("/backend/cpu/artifact-dir-env", test_artifact_dir_env);
  g_test_add_func("/backend/cpu/missing-compiler", test_missing_compiler);
  return g_test_run();
}
