/* test-gate.c — the perf gate's decision on synthetic sample sets: effect size and rank test
 * must agree, paired round ratios take precedence over pooled medians, and only a regression
 * that noise could explain is re-measured. */
#include <math.h>

#include "ts-gate.h"

/* n samples around `center` with multiplicative noise of +-spread (uniform), seeded. */
static GArray *
noisy(GRand *rng, guint n, double center, double spread)
{
  GArray *a = g_array_sized_new(FALSE, FALSE, sizeof(double), n);
  for (guint i = 0; i < n; i++) {
    double v = center * (1.0 + g_rand_double_range(rng, -spread, spread));
    g_array_append_val(a, v);
  }
  return a;
}

static TsGateResult *
pair(guint seed, guint n, double base, double cur, double spread)
{
  g_autoptr(GRand) rng = g_rand_new_with_seed(seed);
  TsGateResult *r = ts_gate_result_new();
  r->name = g_strdup("w");
  r->base_ns = noisy(rng, n, base, spread);
  r->cur_ns = noisy(rng, n, cur, spread);
  return r;
}

static void
test_unchanged_passes(void)
{
  for (guint seed = 1; seed <= 50; seed++) {
    g_autoptr(TsGateResult) r = pair(seed, 200, 1e6, 1e6, 0.03);
    ts_gate_decide(r, 0.05, 0.01);
    g_assert_cmpint(r->verdict, ==, TS_GATE_PASS);
    g_assert_cmpfloat(fabs(r->change), <, 0.01);
    g_assert_cmpfloat(r->p_value, >=, 0.0);
    g_assert_cmpfloat(r->p_value, <=, 1.0);
  }
}

static void
test_slowdown_fails(void)
{
  g_autoptr(TsGateResult) r = pair(7, 100, 1e6, 1.15e6, 0.03);
  ts_gate_decide(r, 0.05, 0.01);
  g_assert_cmpint(r->verdict, ==, TS_GATE_REGRESSION);
  g_assert_cmpfloat_with_epsilon(r->change, 0.15, 0.01);
  g_assert_cmpfloat(r->p_value, <, 1e-6);
  g_assert_cmpfloat(r->base_median_ns, <, r->cur_median_ns);
  g_assert_true(ts_gate_verdict_fails(r->verdict));
  /* 15% is three times the threshold with an overwhelming p: no second look needed. */
  g_assert_false(ts_gate_borderline(r, 0.01));
}

static void
test_speedup_improves(void)
{
  g_autoptr(TsGateResult) r = pair(8, 100, 1e6, 0.85e6, 0.03);
  ts_gate_decide(r, 0.05, 0.01);
  g_assert_cmpint(r->verdict, ==, TS_GATE_IMPROVED);
  g_assert_cmpfloat(r->change, <, -0.1);
  g_assert_false(ts_gate_verdict_fails(r->verdict));
}

static void
test_small_real_change_passes(void)
{
  /* 2% slower, and with this many quiet samples certainly so: below the effect threshold the
   * rank test alone must not fail the gate. */
  g_autoptr(TsGateResult) r = pair(9, 500, 1e6, 1.02e6, 0.005);
  ts_gate_decide(r, 0.05, 0.01);
  g_assert_cmpfloat(r->p_value, <, 1e-6);
  g_assert_cmpint(r->verdict, ==, TS_GATE_PASS);
}

static void
test_large_change_without_evidence_passes(void)
{
  /* Two samples a side: a 20% gap in the medians proves nothing. */
  g_autoptr(TsGateResult) r = pair(10, 2, 1e6, 1.2e6, 0.01);
  ts_gate_decide(r, 0.05, 0.01);
  g_assert_cmpfloat(r->change, >, 0.1);
  g_assert_cmpint(r->verdict, ==, TS_GATE_PASS);
}

static void
test_round_ratios_give_the_change(void)
{
  /* Pooled medians say +30% (the machine slowed down during the current rounds), but every
   * paired round says the kernels are equal. */
  g_autoptr(TsGateResult) r = pair(11, 60, 1e6, 1.3e6, 0.02);
  r->round_ratios = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint i = 0; i < 12; i++) {
    double v = 1.0 + (i % 3 - 1) * 0.004;
    g_array_append_val(r->round_ratios, v);
  }
  ts_gate_decide(r, 0.05, 0.01);
  g_assert_cmpfloat(fabs(r->change), <, 0.005);
  g_assert_cmpint(r->verdict, ==, TS_GATE_PASS);
}

static void
test_borderline(void)
{
  g_autoptr(TsGateResult) r = pair(12, 200, 1e6, 1.07e6, 0.03);
  ts_gate_decide(r, 0.05, 0.01);
  g_assert_cmpint(r->verdict, ==, TS_GATE_REGRESSION);
  g_assert_true(ts_gate_borderline(r, 0.01)); /* 7% < 2 x 5% */

  g_autoptr(TsGateResult) pass = pair(13, 200, 1e6, 1e6, 0.03);
  ts_gate_decide(pass, 0.05, 0.01);
  g_assert_false(ts_gate_borderline(pass, 0.01)); /* only regressions are re-measured */
}

static void
test_failed_and_new_untouched(void)
{
  g_autoptr(TsGateResult) f = ts_gate_result_new();
  f->verdict = TS_GATE_FAILED;
  ts_gate_decide(f, 0.05, 0.01);
  g_assert_cmpint(f->verdict, ==, TS_GATE_FAILED);
  g_assert_true(isnan(f->change));

  g_autoptr(TsGateResult) n = ts_gate_result_new();
  n->verdict = TS_GATE_NEW;
  n->cur_ns = g_array_new(FALSE, FALSE, sizeof(double));
  ts_gate_decide(n, 0.05, 0.01);
  g_assert_cmpint(n->verdict, ==, TS_GATE_NEW);
  g_assert_false(ts_gate_verdict_fails(n->verdict));
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/gate/decide/unchanged-passes", test_unchanged_passes);
  g_test_add_func("/gate/decide/slowdown-fails", test_slowdown_fails);
  g_test_add_func("/gate/decide/speedup-improves", test_speedup_improves);
  g_test_add_func("/gate/decide/small-real-change-passes", test_small_real_change_passes);
  g_test_add_func("/gate/decide/no-evidence-passes", test_large_change_without_evidence_passes);
  g_test_add_func("/gate/decide/round-ratios", test_round_ratios_give_the_change);
  g_test_add_func("/gate/decide/borderline", test_borderline);
  g_test_add_func("/gate/decide/failed-and-new", test_failed_and_new_untouched);
  return g_test_run();
}
