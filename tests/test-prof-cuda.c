/* test-prof-cuda.c — the GPU ceiling microbenchmarks without a GPU: every kernel compiles for
 * every arch the table knows (NVRTC + nvJitLink; skipped without them), with no spills, and
 * fits the occupancy its grid assumes; the roofs follow the arch's instructions. On a device the
 * ceilings are measured and checked for sanity; elsewhere the cuda backend cannot be opened and
 * there is nothing to measure. */
#include <glib.h>
#include <string.h>

#include "test-util.h"
#include "ts-cuda.h"
#include "ts-prof-private.h"

static const char *const arches[] = {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100a",
                                     "sm_120"};

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

static gboolean
has_roof(GPtrArray *sources, const char *roof)
{
  for (guint i = 0; i < sources->len; i++)
    if (strcmp(((TsProfCudaSource *)sources->pdata[i])->roof, roof) == 0)
      return TRUE;
  return FALSE;
}

/* Which roofs and instructions each arch gets; no toolchain needed. */
static void
test_roofs(void)
{
  for (gsize i = 0; i < G_N_ELEMENTS(arches); i++) {
    const TsCudaArch *a = ts_cuda_arch_lookup(arches[i]);
    g_autoptr(GPtrArray) s = ts_prof_cuda_ceiling_sources(arches[i]);
    g_assert_nonnull(s);
    const char *always[] = {"bf16_tensor", "f16_tensor", "tf32_tensor", "f32", "dram", "l2"};
    for (gsize r = 0; r < G_N_ELEMENTS(always); r++)
      g_assert_true(has_roof(s, always[r]));
    /* fp8 tensor cores arrived with Ada (sm_89). */
    g_assert_true(has_roof(s, "fp8_tensor") == (a->major * 10 + a->minor >= 89));
    for (guint k = 0; k < s->len; k++) {
      const TsProfCudaSource *src = s->pdata[k];
      g_assert_true(src->kind == (g_str_has_suffix(src->roof, "_tensor") || !strcmp(src->roof, "f32")
                                    ? TS_PROF_COMPUTE
                                    : TS_PROF_MEMORY));
      g_assert_true(src->kind == TS_PROF_COMPUTE ? src->flops > 0 : src->bytes_per_vector > 0);
      if (g_str_has_suffix(src->roof, "_tensor"))
        g_assert_nonnull(strstr(src->source, a->wgmma ? "wgmma.mma_async" : "mma.sync"));
      /* A sink no compiler can prove dead keeps the work. */
      g_assert_true(strstr(src->source, "args.bufs[0])[blockIdx.x]") != NULL ||
                    strcmp(src->roof, "dram") == 0);
    }
  }
  g_assert_null(ts_prof_cuda_ceiling_sources("sm_75"));
  g_assert_null(ts_prof_cuda_ceiling_sources("sm_banana"));
}

static void
test_compile(gconstpointer data)
{
  const char *arch = data;
  if (!have_toolchain())
    return;
  const TsCudaArch *a = ts_cuda_arch_lookup(arch);
  g_autoptr(GPtrArray) sources = ts_prof_cuda_ceiling_sources(arch);
  for (guint i = 0; i < sources->len; i++) {
    const TsProfCudaSource *s = sources->pdata[i];
    g_autoptr(GError) error = NULL;
    g_autofree char *log = NULL;
    TsModuleResources r;
    g_autoptr(GBytes) cubin = ts_cuda_compile(s->source, s->entry, arch, &r, &log, &error);
    if (error != NULL)
      g_printerr("%s for %s:\n%s\n", s->entry, arch, s->source);
    g_assert_no_error(error);
    g_assert_nonnull(cubin);
    g_test_message("%s %-12s %-20s %3d registers, %5d bytes smem, %d spilled", arch, s->roof,
                   s->what, r.registers, r.smem_static, r.spill_stores + r.spill_loads);
    g_assert_cmpint(r.registers, >, 0);
    g_assert_cmpint(r.spill_stores, ==, 0);
    g_assert_cmpint(r.spill_loads, ==, 0);
    g_assert_cmpint(r.local_bytes, ==, 0);
    /* The grid puts blocks_per_sm blocks on every SM at once: they must fit together
     * (registers are allocated per warp in units of 8 a thread). */
    guint regs = ((guint)r.registers + 7) / 8 * 8;
    g_assert_cmpuint(regs * s->threads * s->blocks_per_sm, <=, a->regs_per_sm);
    g_assert_cmpuint(s->threads * s->blocks_per_sm, <=, a->max_threads_per_sm);
    g_assert_cmpuint((guint)r.smem_static * s->blocks_per_sm, <=, a->smem_per_sm);
    /* ptxas serialises wgmma (waits after each) when it cannot prove the accumulators
     * untouched in between: the kernel would still run, far below the peak. */
    g_assert_null(strstr(log, "serialized"));
  }
}

/* On a GPU: every roof measured, in sane proportions (a tensor core outruns the CUDA cores, the
 * L2 outruns DRAM). Without one the cuda backend cannot be opened: that is the answer. */
static void
test_measure(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsBackend) be = ts_backend_open("cuda", &error);
  if (be == NULL) {
    g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNAVAILABLE);
    g_test_skip(error->message);
    return;
  }
  g_autofree char *dir = g_dir_make_tmp("ts-prof-cuda-XXXXXX", &error);
  ts_backend_set_cache_dir(be, dir);
  g_autoptr(TsProfCeilings) c = ts_prof_measure_ceilings(be, &error);
  g_assert_no_error(error);
  const TsDeviceInfo *d = ts_backend_describe(be);
  g_autoptr(GPtrArray) sources = ts_prof_cuda_ceiling_sources(d->arch);
  g_assert_cmpuint(ts_prof_ceilings_count(c), ==, sources->len);
  for (guint i = 0; i < ts_prof_ceilings_count(c); i++) {
    const TsProfCeiling *r = ts_prof_ceilings_nth(c, i);
    g_test_message("%-12s %10.1f %s", r->name, r->value, ts_prof_ceiling_unit(r->kind));
    g_assert_cmpfloat(r->value, >, 0);
  }
  g_test_message("%s", ts_prof_ceilings_method(c));
  g_assert_cmpfloat(ts_prof_ceilings_get(c, "bf16_tensor")->value, >,
                    2 * ts_prof_ceilings_get(c, "f32")->value);
  g_assert_cmpfloat(ts_prof_ceilings_get(c, "l2")->value, >,
                    ts_prof_ceilings_get(c, "dram")->value);
  ts_test_remove_tree(dir);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/prof-cuda/roofs", test_roofs);
  for (gsize i = 0; i < G_N_ELEMENTS(arches); i++) {
    g_autofree char *path = g_strdup_printf("/prof-cuda/compile/%s", arches[i]);
    g_test_add_data_func(path, arches[i], test_compile);
  }
  g_test_add_func("/prof-cuda/measure", test_measure);
  return g_test_run();
}
