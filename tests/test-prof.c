/* test-prof.c — device ceilings: measured on the CPU backend, sane against each other, stored
 * as JSON and read back; the roofline bound picks the lower roof. */
#include <glib.h>
#include <math.h>

#include "ts-prof.h"

static void
test_measure(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsBackend) be = ts_backend_open("cpu", &error);
  g_assert_no_error(error);
  g_autofree char *dir = g_dir_make_tmp("ts-prof-XXXXXX", &error);
  ts_backend_set_cache_dir(be, dir);
  TsProfCeilings c;
  g_assert_true(ts_prof_measure_ceilings(be, &c, &error));
  g_assert_no_error(error);
  const TsDeviceInfo *d = ts_backend_describe(be);
  g_test_message("one core %.1f GFLOP/s, all %.1f, memory %.1f GB/s", c.f32_gflops_core,
                 c.f32_gflops_all, c.dram_gbps);
  /* Any machine this runs on does more than 1 GFLOP/s and 0.5 GB/s, and all cores together
   * do at least 80% of one (noisy neighbours can steal the second core). */
  g_assert_cmpfloat(c.f32_gflops_core, >, 1.0);
  g_assert_cmpfloat(c.f32_gflops_all, >, 0.8 * c.f32_gflops_core);
  g_assert_cmpfloat(c.f32_gflops_all, <, 1.5 * c.f32_gflops_core * d->compute_units);
  g_assert_cmpfloat(c.dram_gbps, >, 0.5);
  g_autofree char *json = ts_prof_ceilings_to_json(&c);
  TsProfCeilings back;
  g_assert_true(ts_prof_ceilings_from_json(json, &back));
  g_assert_cmpfloat_with_epsilon(back.f32_gflops_all, c.f32_gflops_all, 1e-2);
  g_assert_cmpfloat_with_epsilon(back.dram_gbps, c.dram_gbps, 1e-2);
  g_assert_false(ts_prof_ceilings_from_json("{}", &back));
  g_assert_false(ts_prof_ceilings_from_json("not json", &back));
  g_autofree char *rm = g_strdup_printf("rm -rf '%s'", dir);
  g_assert_cmpint(system(rm), ==, 0);
}

static void
test_roofline(void)
{
  TsProfCeilings c = {.f32_gflops_all = 200, .dram_gbps = 40};
  /* 1 FLOP per byte: memory bound at 40 GFLOP/s; 100 FLOP per byte: compute bound. */
  g_assert_cmpfloat(ts_prof_roofline_gflops(&c, 1e9, 1e9), ==, 40);
  g_assert_cmpfloat(ts_prof_roofline_gflops(&c, 1e11, 1e9), ==, 200);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/prof/ceilings", test_measure);
  g_test_add_func("/prof/roofline", test_roofline);
  return g_test_run();
}
