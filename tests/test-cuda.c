/* test-cuda.c — unit tests of the CUDA layer: the ptxas report parser and the arch table (no CUDA
 * needed), the NVRTC + nvJitLink toolchain (needs libnvrtc and libnvJitLink; skipped without
 * them) and NVTX ranges.
 */
#include "config.h"

#include "ts-backend.h"
#include "ts-cuda.h"
#include "ts-nvtx.h"

#include <string.h>

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

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);

  g_test_add_func("/cuda/parse/sm90a", test_parse_sm90a);
  g_test_add_func("/cuda/parse/sm80", test_parse_sm80);
  g_test_add_func("/cuda/parse/missing", test_parse_missing);
  g_test_add_func("/cuda/parse/spills", test_parse_spills);
  g_test_add_func("/cuda/arch", test_arch);
  g_test_add_func("/cuda/toolchain", test_toolchain);
  g_test_add_data_func("/cuda/compile/sm_90a", "sm_90a", test_compile);
  g_test_add_data_func("/cuda/compile/sm_80", "sm_80", test_compile);
  g_test_add_func("/cuda/compile/no-entry", test_compile_no_entry);
  g_test_add_func("/cuda/compile/errors", test_compile_errors);
  g_test_add_func("/cuda/nvtx", test_nvtx);
  return g_test_run();
}
