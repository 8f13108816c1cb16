/* test-stats.c — the Mann–Whitney decision that guards the best schedule: clear differences
 * are called, equal distributions and tiny samples are not, ties are handled. */
#include <glib.h>
#include <math.h>

#include "ts-tune-stats.h"

static void
test_separated(void)
{
  double fast[] = {1.00, 1.01, 0.99, 1.02, 1.00, 1.01, 0.98};
  double slow[] = {1.10, 1.12, 1.09, 1.11, 1.10, 1.13, 1.08};
  g_assert_cmpfloat(ts_stats_mann_whitney_less(fast, 7, slow, 7), <, 0.01);
  g_assert_cmpfloat(ts_stats_mann_whitney_less(slow, 7, fast, 7), >, 0.99);
  g_assert_true(ts_stats_faster(fast, 7, slow, 7, 0.01));
  g_assert_false(ts_stats_faster(slow, 7, fast, 7, 0.01));
}

static void
test_noise_is_not_a_win(void)
{
  /* Interleaved samples of one distribution: the lower median alone must not win. */
  double a[] = {1.00, 1.03, 0.97, 1.05, 0.99, 1.02};
  double b[] = {1.01, 1.04, 0.98, 1.06, 1.00, 0.96};
  g_assert_cmpfloat(ts_stats_mann_whitney_less(a, 6, b, 6), >, 0.05);
  g_assert_false(ts_stats_faster(a, 6, b, 6, 0.01));
  double same[] = {2, 2, 2, 2, 2};
  g_assert_cmpfloat(ts_stats_mann_whitney_less(same, 5, same, 5), >=, 0.5);
}

static void
test_small_samples(void)
{
  double a[] = {1, 1}, b[] = {5, 5, 5};
  g_assert_cmpfloat(ts_stats_mann_whitney_less(a, 2, b, 3), ==, 1.0);
  double v[] = {3, 1, 2, 4};
  g_assert_cmpfloat(ts_stats_median(v, 4), ==, 2.5);
  g_assert_cmpfloat(ts_stats_median(v, 3), ==, 2);
}

/* The spread that sends an incumbent back to be measured again. */
static void
test_rel_iqr(void)
{
  const double tight[] = {100, 101, 99, 100, 102, 98, 100};
  g_assert_cmpfloat(ts_stats_rel_iqr(tight, G_N_ELEMENTS(tight)), <, 0.03);
  const double even[] = {1, 2, 3, 4};  /* q1 1.75, median 2.5, q3 3.25 */
  g_assert_cmpfloat_with_epsilon(ts_stats_rel_iqr(even, 4), 1.5 / 2.5, 1e-12);
  double bimodal[50];
  for (guint i = 0; i < 50; i++)
    bimodal[i] = i < 20 ? 4.6e3 : 1.1e8; /* 4.6 us and 110 ms, as a loaded machine gave */
  g_assert_cmpfloat(ts_stats_rel_iqr(bimodal, 50), >, 0.25);
  g_assert_true(isnan(ts_stats_rel_iqr(tight, 1)));
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/stats/separated", test_separated);
  g_test_add_func("/stats/noise", test_noise_is_not_a_win);
  g_test_add_func("/stats/small", test_small_samples);
  g_test_add_func("/stats/rel-iqr", test_rel_iqr);
  return g_test_run();
}
