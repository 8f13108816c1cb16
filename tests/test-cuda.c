/* test-cuda.c — unit tests of the CUDA layer: the ptxas report parser and the arch table (no CUDA
 * needed), the NVRTC + nvJitLink toolchain (needs libnvrtc and libnvJitLink; skipped without
 * them), the "cuda" backend's behaviour on a machine without a driver, and — only where a GPU is
 * present, skipped with the reason elsewhere — memory, launches, faults, timing and launch
 * records on the device. Every backend test compiles into its own temporary cache directory.
 */
#include "config.h"

#include "test-util.h"
#include "ts-backend.h"
#include "ts-cuda.h"
#include "ts-nvtx.h"

#include <glib/gstdio.h>
#include <string.h>

#if TS_HAVE_CUDA
#include "ts-cuda-private.h"
#endif

/* ------------------------------------------------------------------------------------------ */
/* ptxas reports */

static const char log_sm90a[] =
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'kk' for 'sm_90a'\n"
    "ptxas info    : Function properties for kk\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 20 registers, used 1 barriers, 8192 bytes smem\n"
    "ptxas info    : Compile time = 6.753 ms\n";

static const char log_sm80[] =
    "ptxas info    : 0 bytes gmem, 28 bytes cmem[3]\n"
    "ptxas info    : Compiling entry function 'kk' for 'sm_80'\n"
    "ptxas info    : Function properties for kk\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 14 registers, used 1 barriers, 8192 bytes smem, 512 bytes cmem[0]\n";

/* Two kernels, one a prefix of the other's name, a non-inlined device function with its own
 * properties block after them, and spills; CRLF line ends as a Windows toolkit writes them. */
static const char log_spills[] =
    "ptxas info    : Compiling entry function 'gemm2' for 'sm_90a'\r\n"
    "ptxas info    : Function properties for gemm2\r\n"
    "ptxas         .     8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\r\n"
    "ptxas info    : Used 64 registers, used 1 barriers, 1024 bytes smem\r\n"
    "ptxas info    : Compiling entry function 'gemm' for 'sm_90a'\r\n"
    "ptxas info    : Function properties for gemm\r\n"
    "ptxas         .     264 bytes stack frame, 200 bytes spill stores, 196 bytes spill loads\r\n"
    "ptxas info    : Used 255 registers, used 1 barriers, 256 bytes cumulative stack size\r\n"
    "ptxas info    : Function properties for _Z6helperPfi\r\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\r\n";

static void
assert_unknown(const TsModuleResources *r)
{
  g_assert_cmpint(r->registers, ==, -1);
  g_assert_cmpint(r->smem_static, ==, -1);
  g_assert_cmpint(r->smem_dynamic, ==, -1);
  g_assert_cmpint(r->local_bytes, ==, -1);
  g_assert_cmpint(r->spill_stores, ==, -1);
  g_assert_cmpint(r->spill_loads, ==, -1);
  g_assert_cmpint(r->threads, ==, -1);
}

static void
test_parse_sm90a(void)
{
  TsModuleResources r;
  g_assert_true(ts_cuda_parse_resources(log_sm90a, "kk", &r));
  g_assert_cmpint(r.registers, ==, 20);
  g_assert_cmpint(r.smem_static, ==, 8192);
  g_assert_cmpint(r.local_bytes, ==, 0);
  g_assert_cmpint(r.spill_stores, ==, 0);
  g_assert_cmpint(r.spill_loads, ==, 0);
  /* They come from the launch, not the compiler. */
  g_assert_cmpint(r.smem_dynamic, ==, -1);
  g_assert_cmpint(r.threads, ==, -1);
}

static void
test_parse_sm80(void)
{
  TsModuleResources r;
  g_assert_true(ts_cuda_parse_resources(log_sm80, "kk", &r));
  g_assert_cmpint(r.registers, ==, 14);
  g_assert_cmpint(r.smem_static, ==, 8192); /* not the 512 bytes of cmem[0] after it */
  g_assert_cmpint(r.local_bytes, ==, 0);
}

static void
test_parse_missing(void)
{
  TsModuleResources r;
  g_assert_false(ts_cuda_parse_resources(log_sm90a, "other", &r));
  assert_unknown(&r);
  g_assert_false(ts_cuda_parse_resources(log_sm90a, "k", &r)); /* a prefix is not the name */
  assert_unknown(&r);
  g_assert_false(ts_cuda_parse_resources("", "kk", &r));
  assert_unknown(&r);
  g_assert_false(ts_cuda_parse_resources("error : nothing was compiled\n", "kk", &r));
}

static void
test_parse_spills(void)
{
  TsModuleResources r;
  g_assert_true(ts_cuda_parse_resources(log_spills, "gemm", &r));
  g_assert_cmpint(r.registers, ==, 255);
  g_assert_cmpint(r.smem_static, ==, 0); /* no "bytes smem": none declared */
  g_assert_cmpint(r.local_bytes, ==, 264);
  g_assert_cmpint(r.spill_stores, ==, 200);
  g_assert_cmpint(r.spill_loads, ==, 196);

  g_assert_true(ts_cuda_parse_resources(log_spills, "gemm2", &r));
  g_assert_cmpint(r.registers, ==, 64);
  g_assert_cmpint(r.smem_static, ==, 1024);
  g_assert_cmpint(r.local_bytes, ==, 8);
  g_assert_cmpint(r.spill_stores, ==, 4);
  g_assert_cmpint(r.spill_loads, ==, 4);
}

/* ------------------------------------------------------------------------------------------ */
/* architectures */

static void
test_arch(void)
{
  const TsCudaArch *a = ts_cuda_arch_lookup("sm_80");
  g_assert_nonnull(a);
  g_assert_cmpint(a->major, ==, 8);
  g_assert_cmpint(a->minor, ==, 0);
  g_assert_cmpuint(a->smem_per_block, ==, 163 * 1024);
  g_assert_cmpuint(a->smem_per_sm, ==, 164 * 1024);
  g_assert_cmpuint(a->regs_per_sm, ==, 65536);
  g_assert_cmpuint(a->max_threads_per_sm, ==, 2048);
  g_assert_cmpuint(a->max_regs_per_thread, ==, 255);
  g_assert_false(a->wgmma);

  a = ts_cuda_arch_lookup("sm_90a");
  g_assert_nonnull(a);
  g_assert_cmpuint(a->smem_per_block, ==, 227 * 1024);
  g_assert_cmpuint(a->smem_per_sm, ==, 228 * 1024);
  g_assert_true(a->wgmma);
  g_assert_false(ts_cuda_arch_lookup("sm_90")->wgmma);

  for (const char *const *n = (const char *const[]){"sm_86", "sm_89", "sm_120", NULL}; *n; n++) {
    a = ts_cuda_arch_lookup(*n);
    g_assert_nonnull(a);
    g_assert_cmpuint(a->smem_per_block, ==, 99 * 1024);
    g_assert_cmpuint(a->max_threads_per_sm, ==, 1536);
  }
  g_assert_cmpuint(ts_cuda_arch_lookup("sm_100a")->smem_per_block, ==, 227 * 1024);
  g_assert_null(ts_cuda_arch_lookup("sm_75"));
  g_assert_null(ts_cuda_arch_lookup("compute_90a"));
  g_assert_null(ts_cuda_arch_lookup(""));

  static const struct {
    int major, minor;
    const char *arch;
  } cc[] = {{8, 0, "sm_80"},  {8, 6, "sm_86"},    {8, 9, "sm_89"},
            {9, 0, "sm_90a"}, {10, 0, "sm_100a"}, {12, 0, "sm_120"}};
  for (gsize i = 0; i < G_N_ELEMENTS(cc); i++) {
    g_autofree char *arch = ts_cuda_arch_for_cc(cc[i].major, cc[i].minor);
    g_assert_cmpstr(arch, ==, cc[i].arch);
    /* Every device we name is one the table knows. */
    g_assert_nonnull(ts_cuda_arch_lookup(arch));
  }
}

/* ------------------------------------------------------------------------------------------ */
/* the toolchain */

/* Skips the test (and says why) when NVRTC or nvJitLink cannot be loaded. */
static gboolean
have_toolchain(void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *toolchain = ts_cuda_toolchain(&error);
  if (toolchain != NULL)
    return TRUE;
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNAVAILABLE);
  g_test_skip(error->message);
  return FALSE;
}

static void
test_toolchain(void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *toolchain = ts_cuda_toolchain(&error);
  if (toolchain == NULL) {
    g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNAVAILABLE);
    g_test_skip(error->message);
    return;
  }
  g_assert_no_error(error);
  g_assert_true(
      g_regex_match_simple("^nvrtc [0-9]+\\.[0-9]+, nvjitlink [0-9]+\\.[0-9]+$", toolchain, 0, 0));
}

/* The tile primitives a GEMM is made of: cp.async into a bf16 tile in shared memory, ldmatrix,
 * mma.sync. 8 KiB of static shared memory. */
static const char prims_src[] =
    "#include \"ts_cuda_prims.cuh\"\n"
    "extern \"C\" __constant__ unsigned int kk_launch[7] = {1, 1, 1, 128, 1, 1, 0};\n"
    "extern \"C\" __global__ void kk(const TsArgs args) {\n"
    "  __shared__ __align__(128) ts_bf16 sa[64 * 64];\n"
    "  const ts_bf16 *a = (const ts_bf16 *)args.bufs[0];\n"
    "  float *out = (float *)args.bufs[1];\n"
    "  ts_cp_async<16>(&sa[threadIdx.x * 8], a + threadIdx.x * 8, threadIdx.x < args.ints[0]);\n"
    "  ts_async_commit();\n"
    "  ts_async_wait<0>();\n"
    "  __syncthreads();\n"
    "  unsigned r[4];\n"
    "  ts_ldmatrix_x4(r, &sa[ts_swz<64, 1>(threadIdx.x % 32, 0)]);\n"
    "  unsigned b[2] = {r[0], r[1]};\n"
    "  float d[4] = {0, 0, 0, 0};\n"
    "  ts_mma_16816<ts_bf16>(d, r, b);\n"
    "  out[threadIdx.x] = d[0] + d[1] + d[2] + d[3];\n"
    "}\n";

/* Where a driver is installed, nvJitLink caches finished links; a cached link must still come
 * with its ptxas report, or the tuner stores unknown registers and spills for every kernel it
 * has compiled before. Compiling the same source twice is what exposes it. */
static void
test_compile_twice(void)
{
  if (!have_toolchain())
    return;
  for (int i = 0; i < 2; i++) {
    g_autoptr(GError) error = NULL;
    TsModuleResources r;
    g_autofree char *log = NULL;
    g_autoptr(GBytes) cubin = ts_cuda_compile(prims_src, "kk", "sm_90a", &r, &log, &error);
    g_assert_no_error(error);
    g_assert_nonnull(cubin);
    if (r.registers <= 0)
      g_printerr("compile %d of the same kernel gave no resources; its log:\n%s\n", i + 1, log);
    g_assert_cmpint(r.registers, >, 0);
    g_assert_cmpint(r.smem_static, ==, 64 * 64 * 2);
  }
}

static void
test_compile(gconstpointer data)
{
  const char *arch = data;
  if (!have_toolchain())
    return;
  g_autoptr(GError) error = NULL;
  TsModuleResources r;
  g_autofree char *log = NULL;
  g_autoptr(GBytes) cubin = ts_cuda_compile(prims_src, "kk", arch, &r, &log, &error);
  g_assert_no_error(error);
  g_assert_nonnull(cubin);
  gsize len = 0;
  const char *bytes = g_bytes_get_data(cubin, &len);
  g_assert_cmpuint(len, >, 64);
  g_assert_cmpmem(bytes, 4, "\177ELF", 4);

  g_assert_cmpint(r.registers, >, 0);
  g_assert_cmpint(r.registers, <=, 255);
  g_assert_cmpint(r.smem_static, ==, 64 * 64 * 2);
  g_assert_cmpint(r.local_bytes, ==, 0);
  g_assert_cmpint(r.spill_stores, ==, 0);
  g_assert_cmpint(r.spill_loads, ==, 0);
  g_assert_cmpint(r.smem_dynamic, ==, -1);
  g_assert_cmpint(r.threads, ==, -1);

  /* The log is the linker's report, so the parser agrees with what it was fed. */
  g_assert_nonnull(log);
  g_autofree char *expect = g_strdup_printf("Compiling entry function 'kk' for '%s'", arch);
  g_assert_nonnull(strstr(log, expect));
  TsModuleResources again;
  g_assert_true(ts_cuda_parse_resources(log, "kk", &again));
  g_assert_cmpmem(&again, sizeof again, &r, sizeof r);

  /* NULL out-arguments are fine. */
  g_autoptr(GBytes) cubin2 = ts_cuda_compile(prims_src, "kk", arch, NULL, NULL, &error);
  g_assert_no_error(error);
  g_assert_true(g_bytes_equal(cubin, cubin2));
}

/* The key of a compile (check --reuse) ignores the kernel's name and a leading comment, and
 * nothing else: a kernel file lowered through a built-in op's templates shares the built-in's
 * compiled resources, and any change to the code or the target is compiled anew. */
static char *
key_of(const char *src, const char *entry, const char *arch)
{
  g_autoptr(GError) error = NULL;
  char *key = ts_cuda_compile_key(src, entry, arch, &error);
  g_assert_no_error(error);
  g_assert_nonnull(key);
  g_assert_cmpuint(strlen(key), ==, 64);
  return key;
}

static char *
replace_all(const char *s, const char *from, const char *to)
{
  g_auto(GStrv) parts = g_strsplit(s, from, -1);
  return g_strjoinv(to, parts);
}

static void
test_compile_key(void)
{
  if (!have_toolchain())
    return;
  g_autofree char *base = key_of(prims_src, "kk", "sm_90a");
  /* Renamed (the entry and its launch record), and under another comment: the same key. */
  g_autofree char *renamed_src = replace_all(prims_src, "kk", "ts_kernel_gemm_0d82_bf16");
  g_autofree char *renamed = key_of(renamed_src, "ts_kernel_gemm_0d82_bf16", "sm_90a");
  g_assert_cmpstr(renamed, ==, base);
  g_autofree char *commented_src =
    g_strconcat("/* Tessera: kernel:gemm@0d82 M=64\n * schedule block(m=64) */\n", prims_src, NULL);
  g_autofree char *commented = key_of(commented_src, "kk", "sm_90a");
  g_assert_cmpstr(commented, ==, base);
  /* The same name in another place of the code, another target, one character of code, the
   * entry named otherwise than the code names it: other keys. */
  g_autofree char *arch = key_of(prims_src, "kk", "sm_80");
  g_assert_cmpstr(arch, !=, base);
  g_autofree char *edited_src = replace_all(prims_src, "threadIdx.x * 8]", "threadIdx.x * 4]");
  g_assert_cmpstr(edited_src, !=, prims_src);
  g_autofree char *edited = key_of(edited_src, "kk", "sm_90a");
  g_assert_cmpstr(edited, !=, base);
  g_autofree char *other_entry = key_of(prims_src, "not_there", "sm_90a");
  g_assert_cmpstr(other_entry, !=, base);
  /* A comment that is not at the start is code as far as the key goes. */
  g_autofree char *inner_src = replace_all(prims_src, "\"\n", "\" /* x */\n");
  g_autofree char *inner = key_of(inner_src, "kk", "sm_90a");
  g_assert_cmpstr(inner, !=, base);
}

static void
test_compile_no_entry(void)
{
  if (!have_toolchain())
    return;
  g_autoptr(GError) error = NULL;
  TsModuleResources r;
  g_autoptr(GBytes) cubin = ts_cuda_compile(prims_src, "not_there", "sm_90a", &r, NULL, &error);
  g_assert_no_error(error);
  g_assert_nonnull(cubin);
  assert_unknown(&r); /* loading it will name the missing kernel */
}

static void
test_compile_errors(void)
{
  if (!have_toolchain())
    return;
  g_autoptr(GError) error = NULL;
  static const char broken[] = "#include \"ts_cuda_prims.cuh\"\n"
                               "extern \"C\" __global__ void kk(const TsArgs args) {\n"
                               "  float *y = (float *)args.bufs[0];\n"
                               "  y[threadIdx.x] = undefined_thing;\n"
                               "}\n";
  static char stale[] = "stale"; /* not owned: the call overwrites it */
  char *log = stale;
  GBytes *cubin = ts_cuda_compile(broken, "kk", "sm_90a", NULL, &log, &error);
  g_assert_null(cubin);
  g_assert_null(log);
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_COMPILE);
  /* Which step failed, then NVRTC's diagnostic verbatim with its line number. */
  g_assert_true(g_str_has_prefix(error->message, "NVRTC"));
  g_assert_nonnull(strstr(error->message, "kernel.cu(4)"));
  g_assert_nonnull(strstr(error->message, "identifier \"undefined_thing\" is undefined"));
  g_clear_error(&error);

  /* Too much static shared memory for the arch is ptxas's (nvJitLink's) complaint. */
  static const char too_big[] = "#include \"ts_cuda_prims.cuh\"\n"
                                "extern \"C\" __global__ void kk(const TsArgs args) {\n"
                                "  __shared__ float big[64 * 1024];\n"
                                "  big[threadIdx.x] = 1.0f;\n"
                                "  __syncthreads();\n"
                                "  ((float *)args.bufs[0])[threadIdx.x] = big[threadIdx.x ^ 1];\n"
                                "}\n";
  cubin = ts_cuda_compile(too_big, "kk", "sm_80", NULL, NULL, &error);
  g_assert_null(cubin);
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_COMPILE);
  g_assert_true(g_str_has_prefix(error->message, "nvJitLink"));
  g_assert_nonnull(strstr(error->message, "shared"));
  g_clear_error(&error);

  cubin = ts_cuda_compile(prims_src, "kk", "sm_banana", NULL, NULL, &error);
  g_assert_null(cubin);
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_COMPILE);
  g_assert_nonnull(strstr(error->message, "sm_banana"));
}

/* Ranges with no profiler attached: nothing to see, but they must not fail or leak. */
static void
test_nvtx(void)
{
  for (int i = 0; i < 3; i++) {
    ts_nvtx_push("trial");
    ts_nvtx_push("compile");
    ts_nvtx_pop();
    ts_nvtx_pop();
  }
}

/* ------------------------------------------------------------------------------------------ */
/* the backend without a device */

static void
test_open_unavailable(void)
{
#if !TS_HAVE_CUDA
  g_test_skip("built without the CUDA headers: no cuda backend");
  return;
#endif
  g_autoptr(GError) error = NULL;
  g_autoptr(TsBackend) backend = ts_backend_open("cuda", &error);
  if (backend != NULL) {
    g_test_skip("a CUDA device is present");
    return;
  }
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNAVAILABLE);
  g_assert_true(g_str_has_prefix(error->message, "no CUDA device: "));
  /* The answer is the same every time (the library search happens once). */
  g_autoptr(GError) again = NULL;
  g_assert_null(ts_backend_open("cuda", &again));
  g_assert_cmpstr(again->message, ==, error->message);
}

static void
test_open_auto(void)
{
#if TS_HAVE_CUDA
  g_assert_cmpstr(ts_backend_names()[0], ==, "cuda"); /* "auto" tries it first */
#endif
  g_autoptr(GError) error = NULL;
  g_autoptr(TsBackend) cuda = ts_backend_open("cuda", NULL);
  g_autoptr(TsBackend) backend = ts_backend_open("auto", &error);
  g_assert_no_error(error);
  g_assert_nonnull(backend);
  g_assert_cmpstr(ts_backend_name(backend), ==, cuda != NULL ? "cuda" : "cpu");
}

/* ------------------------------------------------------------------------------------------ */
/* the backend on a device (skipped without one) */

typedef struct {
  TsBackend *backend;
  char *cache_dir;
} Fixture;

static void
fixture_set_up(Fixture *f, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  f->cache_dir = g_dir_make_tmp("ts-test-cuda-XXXXXX", &error);
  g_assert_no_error(error);
  f->backend = ts_backend_open("cuda", &error);
  if (f->backend == NULL) {
    g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNAVAILABLE);
    return;
  }
  ts_backend_set_cache_dir(f->backend, f->cache_dir);
}

static void
fixture_tear_down(Fixture *f, gconstpointer data)
{
  g_clear_pointer(&f->backend, ts_backend_free);
  ts_test_remove_tree(f->cache_dir);
  g_free(f->cache_dir);
}

/* Skips the test, with the reason, on a machine without a device. */
static gboolean
have_device(Fixture *f)
{
  if (f->backend != NULL)
    return TRUE;
#if !TS_HAVE_CUDA
  g_test_skip("no CUDA device: built without the CUDA headers");
  return FALSE;
#endif
  g_autoptr(GError) error = NULL;
  g_autoptr(TsBackend) b = ts_backend_open("cuda", &error);
  g_assert_null(b);
  g_test_skip(error != NULL ? error->message : "no CUDA device");
  return FALSE;
}

/* y[i] = a * x[i] + y[i] + ints[1] for i < ints[0]; 4 blocks of 256 by its own record. */
static const char saxpy_src[] =
    "#include \"ts_cuda_prims.cuh\"\n"
    "extern \"C\" __constant__ unsigned int saxpy_launch[7] = {4, 1, 1, 256, 1, 1, 0};\n"
    "extern \"C\" __global__ void saxpy(const TsArgs args) {\n"
    "  const float *x = (const float *)args.bufs[0];\n"
    "  float *y = (float *)args.bufs[1];\n"
    "  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < args.ints[0])\n"
    "    y[i] = (float)args.floats[0] * x[i] + y[i] + (float)args.ints[1];\n"
    "}\n";

#define SAXPY_N 1000

static TsModule *
compile_ok(Fixture *f, const char *text, const char *entry)
{
  g_autoptr(GError) error = NULL;
  TsSource src = {TS_LANG_CUDA, text, entry};
  TsModule *module = ts_backend_compile(f->backend, &src, &error);
  g_assert_no_error(error);
  g_assert_nonnull(module);
  return module;
}

static void
test_device_describe(Fixture *f, gconstpointer data)
{
  if (!have_device(f))
    return;
  const TsDeviceInfo *d = ts_backend_describe(f->backend);
  g_assert_cmpstr(d->backend, ==, "cuda");
  g_assert_true(g_str_has_prefix(d->arch, "sm_"));
  g_assert_cmpuint(d->compute_units, >, 0);
  g_assert_cmpuint(d->memory_bytes, >, 0);
  g_assert_cmpuint(d->l2_bytes, >, 0);
  g_assert_cmpuint(d->smem_per_block, >=, 48 * 1024);
  g_assert_nonnull(strstr(d->toolchain, "nvrtc "));
  g_assert_nonnull(strstr(d->toolchain, ", driver "));
}

static void
test_device_memory(Fixture *f, gconstpointer data)
{
  if (!have_device(f))
    return;
  g_autoptr(GError) error = NULL;
  enum { N = 1 << 20 };
  g_autofree guint32 *in = g_new(guint32, N);
  g_autofree guint32 *out = g_new0(guint32, N);
  for (guint i = 0; i < N; i++)
    in[i] = i * 2654435761u;
  TsBuffer *buf = ts_backend_alloc(f->backend, N * sizeof(guint32), &error);
  g_assert_no_error(error);
  g_assert_true(ts_backend_upload(f->backend, buf, in, N * sizeof(guint32), &error));
  g_assert_true(ts_backend_download(f->backend, out, buf, N * sizeof(guint32), &error));
  g_assert_no_error(error);
  g_assert_cmpmem(in, N * sizeof(guint32), out, N * sizeof(guint32));
  ts_backend_buffer_free(f->backend, buf);

  TsBuffer *empty = ts_backend_alloc(f->backend, 0, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(ts_buffer_size(empty), ==, 0);
  ts_backend_buffer_free(f->backend, empty);

  /* Far more than any GPU has. */
  g_assert_null(ts_backend_alloc(f->backend, (gsize)1 << 50, &error));
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_MEMORY);
  g_assert_nonnull(strstr(error->message, "cuMemAlloc"));
}

static void
run_saxpy(Fixture *f, TsModule *module, const TsLaunch *shape)
{
  g_autoptr(GError) error = NULL;
  float x[SAXPY_N], y[SAXPY_N];
  for (int i = 0; i < SAXPY_N; i++) {
    x[i] = (float)i;
    y[i] = 1.0f;
  }
  TsBuffer *bx = ts_backend_alloc(f->backend, sizeof x, &error);
  TsBuffer *by = ts_backend_alloc(f->backend, sizeof y, &error);
  g_assert_no_error(error);
  g_assert_true(ts_backend_upload(f->backend, bx, x, sizeof x, &error));
  g_assert_true(ts_backend_upload(f->backend, by, y, sizeof y, &error));
  TsBuffer *bufs[] = {bx, by};
  gint64 ints[] = {SAXPY_N, 3};
  double floats[] = {2.0};
  TsLaunch launch = {bufs, 2, ints, 2, floats, 1, {0}, {0}, 0};
  if (shape != NULL) {
    memcpy(launch.grid, shape->grid, sizeof launch.grid);
    memcpy(launch.block, shape->block, sizeof launch.block);
    launch.smem_bytes = shape->smem_bytes;
  }
  g_assert_true(ts_backend_launch(f->backend, module, &launch, &error));
  g_assert_no_error(error);
  g_assert_true(ts_backend_download(f->backend, y, by, sizeof y, &error));
  for (int i = 0; i < SAXPY_N; i++)
    g_assert_cmpfloat(y[i], ==, 2.0f * (float)i + 1.0f + 3.0f);
  ts_backend_buffer_free(f->backend, bx);
  ts_backend_buffer_free(f->backend, by);
}

static void
test_device_launch(Fixture *f, gconstpointer data)
{
  if (!have_device(f))
    return;
  g_autoptr(TsModule) module = compile_ok(f, saxpy_src, "saxpy");
  g_assert_false(ts_module_from_cache(module));
  const TsModuleResources *r = ts_module_resources(module);
  g_assert_cmpint(r->registers, >, 0);
  g_assert_cmpint(r->threads, ==, 256);
  g_assert_cmpint(r->smem_dynamic, ==, 0);
  g_assert_cmpint(r->smem_static, ==, 0);
  g_assert_cmpint(r->spill_stores, ==, 0); /* from this process's compile */
  g_assert_nonnull(strstr(ts_module_log(module), "saxpy: "));
  run_saxpy(f, module, NULL);

  /* The caller's shape instead of the record: 8 blocks of 128. */
  TsLaunch shape = {.grid = {8}, .block = {128}};
  run_saxpy(f, module, &shape);

  /* From the cache: the same kernel, loaded without compiling. */
  g_autoptr(TsModule) cached = compile_ok(f, saxpy_src, "saxpy");
  g_assert_true(ts_module_from_cache(cached));
  run_saxpy(f, cached, NULL);

  /* And from its stored bytes, as the perf gate does. */
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) artifact = ts_module_get_artifact(module, &error);
  g_assert_no_error(error);
  g_autoptr(TsModule) stored = ts_backend_load_artifact(f->backend, artifact, "saxpy", &error);
  g_assert_no_error(error);
  run_saxpy(f, stored, NULL);
}

static void
test_device_big_smem(Fixture *f, gconstpointer data)
{
  if (!have_device(f))
    return;
  /* 64 KiB of dynamic shared memory: past the 48 KiB default, so load() must opt in. */
  static const char src[] =
      "#include \"ts_cuda_prims.cuh\"\n"
      "extern \"C\" __constant__ unsigned int big_launch[7] = {1, 1, 1, 256, 1, 1, 65536};\n"
      "extern \"C\" __global__ void big(const TsArgs args) {\n"
      "  extern __shared__ float s[];\n"
      "  for (int i = threadIdx.x; i < 16384; i += blockDim.x) s[i] = (float)i;\n"
      "  __syncthreads();\n"
      "  ((float *)args.bufs[0])[threadIdx.x] = s[16383 - threadIdx.x];\n"
      "}\n";
  g_autoptr(TsModule) module = compile_ok(f, src, "big");
  g_assert_cmpint(ts_module_resources(module)->smem_dynamic, ==, 65536);
  g_autoptr(GError) error = NULL;
  TsBuffer *out = ts_backend_alloc(f->backend, 256 * sizeof(float), &error);
  g_assert_no_error(error);
  TsBuffer *bufs[] = {out};
  TsLaunch launch = {.buffers = bufs, .n_buffers = 1};
  g_assert_true(ts_backend_launch(f->backend, module, &launch, &error));
  g_assert_no_error(error);
  float y[256];
  g_assert_true(ts_backend_download(f->backend, y, out, sizeof y, &error));
  for (int i = 0; i < 256; i++)
    g_assert_cmpfloat(y[i], ==, (float)(16383 - i));
  ts_backend_buffer_free(f->backend, out);
}

/* Stored bytes that are not a whole cubin are refused before the driver parses them. */
static void
test_device_bad_artifact(Fixture *f, gconstpointer data)
{
  if (!have_device(f))
    return;
  g_autoptr(TsModule) module = compile_ok(f, saxpy_src, "saxpy");
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) artifact = ts_module_get_artifact(module, &error);
  g_assert_no_error(error);
  g_autoptr(GBytes) cut = g_bytes_new_from_bytes(artifact, 0, g_bytes_get_size(artifact) / 2);
  g_assert_null(ts_backend_load_artifact(f->backend, cut, "saxpy", &error));
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LOAD);
  g_assert_nonnull(strstr(error->message, "truncated"));
  g_clear_error(&error);

  static const char text[] = "#!/bin/sh\necho not a cubin\n";
  g_autoptr(GBytes) foreign = g_bytes_new_static(text, sizeof text - 1);
  g_assert_null(ts_backend_load_artifact(f->backend, foreign, "saxpy", &error));
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LOAD);
  g_assert_nonnull(strstr(error->message, "not a cubin"));
}

static void
test_device_abi_limits(Fixture *f, gconstpointer data)
{
  if (!have_device(f))
    return;
  g_autoptr(TsModule) module = compile_ok(f, saxpy_src, "saxpy");
  g_autoptr(GError) error = NULL;
  gint64 ints[9] = {0};
  TsLaunch launch = {.ints = ints, .n_ints = 9};
  g_assert_false(ts_backend_launch(f->backend, module, &launch, &error));
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LAUNCH);
  g_assert_nonnull(strstr(error->message, "at most"));
}

static void
test_device_no_record(Fixture *f, gconstpointer data)
{
  if (!have_device(f))
    return;
  static const char src[] = "#include \"ts_cuda_prims.cuh\"\n"
                            "extern \"C\" __global__ void norec(const TsArgs args) {}\n";
  g_autoptr(GError) error = NULL;
  TsSource source = {TS_LANG_CUDA, src, "norec"};
  g_assert_null(ts_backend_compile(f->backend, &source, &error));
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LOAD);
  g_assert_nonnull(strstr(error->message, "not a Tessera kernel: no norec_launch record"));
  g_clear_error(&error);

  /* A wrong entry name is a load error too, naming the symbol. */
  TsSource wrong = {TS_LANG_CUDA, saxpy_src, "saxpy_typo"};
  g_assert_null(ts_backend_compile(f->backend, &wrong, &error));
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LOAD);
  g_assert_nonnull(strstr(error->message, "saxpy_typo"));
  g_clear_error(&error);

  /* So is a C source. */
  TsSource c = {TS_LANG_C, "void f(void) {}", "f"};
  g_assert_null(ts_backend_compile(f->backend, &c, &error));
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_COMPILE);
}

static void
test_device_fault(Fixture *f, gconstpointer data)
{
  if (!have_device(f))
    return;
  /* A fault loses the context for the rest of the process: run it in a child. */
  if (!g_test_subprocess()) {
    g_test_trap_subprocess(NULL, 120 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
    return;
  }
  static const char src[] =
      "#include \"ts_cuda_prims.cuh\"\n"
      "extern \"C\" __constant__ unsigned int oob_launch[7] = {1, 1, 1, 32, 1, 1, 0};\n"
      "extern \"C\" __global__ void oob(const TsArgs args) {\n"
      "  float *y = (float *)args.bufs[0];\n"
      "  y[threadIdx.x + (1ll << 40)] = 1.0f; /* 4 TiB past the buffer */\n"
      "}\n";
  g_autoptr(TsModule) module = compile_ok(f, src, "oob");
  g_autoptr(GError) error = NULL;
  TsBuffer *buf = ts_backend_alloc(f->backend, 128, &error);
  g_assert_no_error(error);
  TsBuffer *bufs[] = {buf};
  TsLaunch launch = {.buffers = bufs, .n_buffers = 1};
  g_assert_false(ts_backend_launch(f->backend, module, &launch, &error));
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LAUNCH);
  g_test_message("fault: %s", error->message);
  g_assert_nonnull(strstr(error->message, "oob"));
  g_assert_nonnull(strstr(error->message, "CUDA_ERROR_"));
  g_assert_nonnull(strstr(error->message, "restart the process"));
  g_clear_error(&error);
  /* Later calls say at once that the context is gone. */
  g_assert_false(ts_backend_launch(f->backend, module, &launch, &error));
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LAUNCH);
  g_assert_nonnull(strstr(error->message, "lost"));
  ts_backend_buffer_free(f->backend, buf);
}

static void
time_saxpy(Fixture *f)
{
  g_autoptr(TsModule) module = compile_ok(f, saxpy_src, "saxpy");
  g_autoptr(GError) error = NULL;
  TsBuffer *bx = ts_backend_alloc(f->backend, SAXPY_N * sizeof(float), &error);
  TsBuffer *by = ts_backend_alloc(f->backend, SAXPY_N * sizeof(float), &error);
  g_assert_no_error(error);
  TsBuffer *bufs[] = {bx, by};
  gint64 ints[] = {SAXPY_N, 0};
  double floats[] = {1.0};
  TsLaunch launch = {bufs, 2, ints, 2, floats, 1, {0}, {0}, 0};
  double samples[5] = {0};
  g_assert_true(
      ts_backend_time(f->backend, module, &launch, 2, G_N_ELEMENTS(samples), samples, &error));
  g_assert_no_error(error);
  for (gsize i = 0; i < G_N_ELEMENTS(samples); i++) {
    g_assert_cmpfloat(samples[i], >, 0.0);
    g_assert_cmpfloat(samples[i], <, 1e9); /* a 1000-element saxpy takes microseconds */
  }
  ts_backend_buffer_free(f->backend, bx);
  ts_backend_buffer_free(f->backend, by);
}

static void
test_device_time(Fixture *f, gconstpointer data)
{
  if (!have_device(f))
    return;
  time_saxpy(f);
  /* Both timers, both with and without the L2 flush. */
  g_setenv("TESSERA_L2_FLUSH", "0", TRUE);
  time_saxpy(f);
  g_setenv("TESSERA_TIMER", "events", TRUE);
  time_saxpy(f);
  g_unsetenv("TESSERA_L2_FLUSH");
  time_saxpy(f);
  g_unsetenv("TESSERA_TIMER");
}

#if TS_HAVE_CUDA
/* The decision behind ts_backend_lost on a GPU: after an illegal address, a trap (reported as a
 * launch failure), an illegal instruction and the like, the context is gone and the backend
 * says so with the first cause; errors a process survives (out of memory, a bad argument, too
 * many resources for a launch) leave it usable. The tuner's worker exits on the former. */
static void
test_lost_decision(void)
{
  static const CUresult sticky[] = {
    CUDA_ERROR_ILLEGAL_ADDRESS,   CUDA_ERROR_LAUNCH_FAILED,      CUDA_ERROR_ILLEGAL_INSTRUCTION,
    CUDA_ERROR_MISALIGNED_ADDRESS, CUDA_ERROR_INVALID_PC,        CUDA_ERROR_ASSERT,
    CUDA_ERROR_HARDWARE_STACK_ERROR, CUDA_ERROR_LAUNCH_TIMEOUT,  CUDA_ERROR_ECC_UNCORRECTABLE,
    CUDA_ERROR_CONTAINED,          CUDA_ERROR_CONTEXT_IS_DESTROYED,
  };
  static const CUresult survivable[] = {
    CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
    CUDA_ERROR_NOT_FOUND,     CUDA_ERROR_INVALID_IMAGE, CUDA_ERROR_NO_BINARY_FOR_GPU,
  };
  for (guint i = 0; i < G_N_ELEMENTS(survivable); i++) {
    g_autofree char *lost = NULL;
    g_assert_false(ts__cuda_note_failure(&lost, survivable[i], "survivable"));
    g_assert_null(lost);
  }
  for (guint i = 0; i < G_N_ELEMENTS(sticky); i++) {
    g_autofree char *lost = NULL;
    g_assert_true(ts__cuda_note_failure(&lost, sticky[i], "first"));
    g_assert_cmpstr(lost, ==, "first");
    g_assert_true(ts__cuda_note_failure(&lost, CUDA_ERROR_ILLEGAL_ADDRESS, "second"));
    g_assert_cmpstr(lost, ==, "first"); /* the first cause is the one reported */
    g_assert_false(ts__cuda_note_failure(&lost, CUDA_ERROR_OUT_OF_MEMORY, "third"));
    g_assert_cmpstr(lost, ==, "first");
  }
}
#endif

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
#define DEVICE_TEST(path, fn) g_test_add(path, Fixture, NULL, fixture_set_up, fn, fixture_tear_down)

  g_test_add_func("/cuda/parse/sm90a", test_parse_sm90a);
  g_test_add_func("/cuda/parse/sm80", test_parse_sm80);
  g_test_add_func("/cuda/parse/missing", test_parse_missing);
  g_test_add_func("/cuda/parse/spills", test_parse_spills);
  g_test_add_func("/cuda/arch", test_arch);
#if TS_HAVE_CUDA
  g_test_add_func("/cuda/lost-decision", test_lost_decision);
#endif
  g_test_add_func("/cuda/toolchain", test_toolchain);
  g_test_add_data_func("/cuda/compile/sm_90a", "sm_90a", test_compile);
  g_test_add_data_func("/cuda/compile/sm_80", "sm_80", test_compile);
  g_test_add_func("/cuda/compile/twice", test_compile_twice);
  g_test_add_func("/cuda/compile/no-entry", test_compile_no_entry);
  g_test_add_func("/cuda/compile/key", test_compile_key);
  g_test_add_func("/cuda/compile/errors", test_compile_errors);
  g_test_add_func("/cuda/nvtx", test_nvtx);
  g_test_add_func("/cuda/open/unavailable", test_open_unavailable);
  g_test_add_func("/cuda/open/auto", test_open_auto);
  DEVICE_TEST("/cuda/device/describe", test_device_describe);
  DEVICE_TEST("/cuda/device/memory", test_device_memory);
  DEVICE_TEST("/cuda/device/launch", test_device_launch);
  DEVICE_TEST("/cuda/device/big-smem", test_device_big_smem);
  DEVICE_TEST("/cuda/device/bad-artifact", test_device_bad_artifact);
  DEVICE_TEST("/cuda/device/abi-limits", test_device_abi_limits);
  DEVICE_TEST("/cuda/device/no-record", test_device_no_record);
  DEVICE_TEST("/cuda/device/fault", test_device_fault);
  DEVICE_TEST("/cuda/device/time", test_device_time);
  return g_test_run();
}
