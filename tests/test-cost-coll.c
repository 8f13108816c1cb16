/* test-cost-coll.c — the α–β–γ model of collectives: each algorithm's terms, the fit recovering
 * known links from their own timings (and never going negative), and the datasheet presets. */
#include <math.h>
#include <string.h>

#include "ts-cost-coll.h"
#include "ts-cost.h"

static void
terms(TsCollKind kind, const char *a, guint n, double S, double seg, double st, double li,
      double re)
{
  double s, l, r;
  g_assert_true(ts_cost_coll_terms(kind, a, n, S, seg, &s, &l, &r));
  g_assert_cmpfloat_with_epsilon(s, st, 1e-9);
  g_assert_cmpfloat_with_epsilon(l, li, 1e-9);
  g_assert_cmpfloat_with_epsilon(r, re, 1e-9);
}

static void
test_terms(void)
{
  const double S = 1 << 20;
  /* ring: 2(n-1) steps of S/n each way; half of them reduce */
  terms(TS_COLL_ALL_REDUCE, "ring", 4, S, 0, 6, 1.5 * S, 0.75 * S);
  /* the segmented ring sends each S/n block in S/n/segment messages */
  terms(TS_COLL_ALL_REDUCE, "segmented_ring", 4, S, 65536, 6 * 4, 1.5 * S, 0.75 * S);
  terms(TS_COLL_ALL_REDUCE, "recursive_doubling", 8, S, 0, 3, 3 * S, 3 * S);
  /* 6 ranks: two more whole-vector steps to fold in the two past 4 */
  terms(TS_COLL_ALL_REDUCE, "recursive_doubling", 6, S, 0, 3 + 2, 5 * S, 4 * S);
  terms(TS_COLL_ALL_REDUCE, "rabenseifner", 8, S, 0, 6, 1.75 * S, 0.875 * S);
  terms(TS_COLL_ALL_REDUCE, "basic_linear", 4, S, 0, 6, 6 * S, 3 * S);
  terms(TS_COLL_ALL_GATHER, "ring", 4, S, 0, 3, 3 * S, 0);
  terms(TS_COLL_ALL_GATHER, "bruck", 5, S, 0, 3, 4 * S, 0);
  terms(TS_COLL_REDUCE_SCATTER, "ring", 4, S, 0, 3, 0.75 * S, 0.75 * S);
  double s, l, r;
  g_assert_false(ts_cost_coll_terms(TS_COLL_ALL_REDUCE, "default", 4, S, 0, &s, &l, &r));
  g_assert_false(ts_cost_coll_terms(TS_COLL_ALL_GATHER, "tree", 4, S, 0, &s, &l, &r));
  g_assert_true(isnan(ts_cost_coll_predict(&(TsCollLinks){0}, TS_COLL_ALL_REDUCE, "default",
                                           4, S, 0)));
}

static GArray *
synthetic(const TsCollLinks *truth, double noise, GRand *rng)
{
  static const char *const algs[] = {"ring", "recursive_doubling", "rabenseifner",
                                     "basic_linear", "default"};
  GArray *obs = g_array_new(FALSE, FALSE, sizeof(TsCollObservation));
  for (guint a = 0; a < G_N_ELEMENTS(algs); a++)
    for (guint n = 2; n <= 4; n++)
      for (double S = 1024; S <= 16 << 20; S *= 8) {
        double t = ts_cost_coll_predict(truth, TS_COLL_ALL_REDUCE, algs[a], n, S, 0);
        if (isnan(t))
          t = 1e-3; /* "default" has no model: ignored by the fit whatever it says */
        t *= 1 + noise * g_rand_double_range(rng, -1, 1);
        TsCollObservation o = {TS_COLL_ALL_REDUCE, algs[a], n, S, 0, t};
        g_array_append_val(obs, o);
      }
  return obs;
}

static void
test_fit(void)
{
  g_autoptr(GRand) rng = g_rand_new_with_seed(3);
  TsCollLinks truth = {.alpha_s = 2e-6, .beta_s_per_b = 1 / 5e9, .gamma_s_per_b = 1 / 12e9,
                       .base_s = 1e-6};
  g_autoptr(GArray) exact = synthetic(&truth, 0, rng);
  TsCollLinks fit;
  guint used = 0;
  double err = 1;
  g_autoptr(GError) error = NULL;
  g_assert_true(ts_cost_coll_fit((TsCollObservation *)exact->data, exact->len, &fit, &used, &err,
                                 &error));
  g_assert_no_error(error);
  g_assert_cmpuint(used, ==, exact->len - 3 * 5); /* "default" skipped */
  g_assert_cmpfloat(err, <, 1e-9);
  g_assert_cmpfloat_with_epsilon(fit.alpha_s / truth.alpha_s, 1, 1e-6);
  g_assert_cmpfloat_with_epsilon(fit.beta_s_per_b / truth.beta_s_per_b, 1, 1e-6);
  g_assert_cmpfloat_with_epsilon(fit.gamma_s_per_b / truth.gamma_s_per_b, 1, 1e-6);
  g_assert_cmpfloat_with_epsilon(fit.base_s / truth.base_s, 1, 1e-6);

  /* 10% noise: within a few per cent on the bandwidth terms, the error about the noise. */
  g_autoptr(GArray) noisy = synthetic(&truth, 0.1, rng);
  g_assert_true(ts_cost_coll_fit((TsCollObservation *)noisy->data, noisy->len, &fit, NULL, &err,
                                 NULL));
  g_assert_cmpfloat(fabs(fit.beta_s_per_b / truth.beta_s_per_b - 1), <, 0.1);
  g_assert_cmpfloat(err, <, 0.1);

  /* A machine whose reductions cost nothing: γ comes out 0, never negative. */
  TsCollLinks free_sum = {.alpha_s = 5e-6, .beta_s_per_b = 1 / 2e9};
  g_autoptr(GArray) fs = synthetic(&free_sum, 0.02, rng);
  g_assert_true(ts_cost_coll_fit((TsCollObservation *)fs->data, fs->len, &fit, NULL, NULL, NULL));
  g_assert_cmpfloat(fit.gamma_s_per_b, >=, 0);
  g_assert_cmpfloat(fit.alpha_s, >=, 0);
  g_assert_cmpfloat(fit.base_s, >=, 0);
  g_assert_cmpfloat(fabs(fit.beta_s_per_b * 2e9 - 1), <, 0.05);

  /* Too few modelled points. */
  g_assert_false(ts_cost_coll_fit((TsCollObservation *)exact->data, 2, &fit, &used, NULL, &error));
  g_assert_error(error, TS_COST_ERROR, TS_COST_ERROR_DATA);
  g_assert_nonnull(strstr(error->message, "at least 3"));
}

static void
test_presets(void)
{
  TsCollLinks h100;
  const char *about = NULL;
  g_assert_true(ts_cost_coll_link_preset("h100-nvlink", &h100, &about));
  g_assert_nonnull(strstr(about, "900 GB/s"));
  /* A GiB all-reduce on 8 GPUs is bound by 450 GB/s links: bus bandwidth just under it. */
  TsCollWorkload w = {TS_COLL_ALL_REDUCE, TS_COLL_BF16, 1u << 30, 8};
  double s = ts_cost_coll_predict(&h100, TS_COLL_ALL_REDUCE, "ring", 8, 1u << 30, 0);
  double busbw = ts_coll_busbw(&w, s * 1e9);
  g_assert_cmpfloat(busbw, <, 450e9);
  g_assert_cmpfloat(busbw, >, 430e9);
  TsCollLinks nvl72;
  g_assert_true(ts_cost_coll_link_preset("gb200-nvl72", &nvl72, NULL));
  g_assert_cmpfloat(nvl72.beta_s_per_b, <, h100.beta_s_per_b);
  g_assert_false(ts_cost_coll_link_preset("h200-nvlink", &nvl72, NULL));
  guint n = 0;
  for (const char *const *p = ts_cost_coll_link_presets(); *p; p++, n++)
    g_assert_true(ts_cost_coll_link_preset(*p, &nvl72, NULL));
  g_assert_cmpuint(n, ==, 2);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/cost-coll/terms", test_terms);
  g_test_add_func("/cost-coll/fit", test_fit);
  g_test_add_func("/cost-coll/presets", test_presets);
  return g_test_run();
}
