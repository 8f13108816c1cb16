/* test-cost-model.c — the learned cost model: datasets with columns grown by name, the ranking
 * measures against hand-computed values and a brute-force reference, XGBoost rank:pairwise
 * learning a known order on held-out groups, column alignment by name, the serialized blob and
 * its errors, and the round trip through the schedule cache. */
#include <glib.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "test-util.h"
#include "ts-cost-model.h"

/* ---- synthetic workloads ---- */

#define N_SYN_FEATURES 8

static const char *const syn_names[N_SYN_FEATURES] = {"x0", "x1", "x2", "x3",
                                                      "x4", "x5", "x6", "x7"};

/* A known nonlinear cost: x0 dominates, x1 and x2 interact, x3 has a V-shaped optimum, x4..x7
 * are noise the model must learn to ignore. */
static double
syn_shape(const float *x)
{
  return exp(0.8 * x[0] - 0.5 * x[1] * x[2] + 0.3 * fabs(x[3] - 0.5));
}

/* Group g's scale: 1 us .. 100 us over 20 groups, so times differ by 100x between groups and
 * only a within-group ranking can be learned. */
static double
syn_scale(guint g)
{
  return 1e-6 * pow(100.0, g / 19.0);
}

static void
syn_row(GRand *rng, float *x)
{
  for (guint f = 0; f < N_SYN_FEATURES; f++)
    x[f] = (float)g_rand_double(rng);
}

/* rows_per_group rows in each of the groups first .. first + n_groups, added interleaved (one
 * row of each group in turn), so training must regroup them. */
static TsCostDataset *
syn_dataset(GRand *rng, guint first, guint n_groups, guint rows_per_group)
{
  TsCostDataset *d = ts_cost_dataset_new();
  for (guint r = 0; r < rows_per_group; r++)
    for (guint g = first; g < first + n_groups; g++) {
      float x[N_SYN_FEATURES];
      syn_row(rng, x);
      g_autofree char *group = g_strdup_printf("workload %u", g);
      ts_cost_dataset_add(d, group, syn_names, x, N_SYN_FEATURES, syn_scale(g) * syn_shape(x));
    }
  return d;
}

/* The rows of group g, with their scores and times. */
static guint
group_slice(const TsCostDataset *d, const double *scores, guint g, double *s_out, double *t_out)
{
  guint n = 0;
  for (guint r = 0; r < ts_cost_dataset_n_rows(d); r++)
    if (ts_cost_dataset_row_group(d, r) == g) {
      s_out[n] = scores[r];
      t_out[n++] = ts_cost_dataset_row_time(d, r);
    }
  return n;
}

static TsCostModel *
train_or_die(const TsCostDataset *d, const TsCostTrainOptions *o)
{
  g_autoptr(GError) error = NULL;
  TsCostModel *m = ts_cost_model_train(d, o, &error);
  g_assert_no_error(error);
  g_assert_nonnull(m);
  return m;
}

static double *
predict_or_die(const TsCostModel *m, const TsCostDataset *d)
{
  g_autoptr(GError) error = NULL;
  double *scores = g_new(double, MAX(ts_cost_dataset_n_rows(d), 1));
  g_assert_true(ts_cost_model_predict(m, d, scores, &error));
  g_assert_no_error(error);
  return scores;
}

/* The dataset's rows as a row-major matrix over its own columns (NaN where a row lacks one). */
static float *
dataset_matrix(const TsCostDataset *d)
{
  guint n = ts_cost_dataset_n_rows(d), c = ts_cost_dataset_n_columns(d);
  float *x = g_new(float, MAX(n * c, 1));
  for (guint r = 0; r < n; r++)
    for (guint k = 0; k < c; k++)
      x[r * c + k] = ts_cost_dataset_value(d, r, k);
  return x;
}

/* ---- (1) datasets ---- */

static void
test_dataset(void)
{
  g_autoptr(TsCostDataset) d = ts_cost_dataset_new();
  g_assert_cmpuint(ts_cost_dataset_n_rows(d), ==, 0);
  g_assert_cmpuint(ts_cost_dataset_n_columns(d), ==, 0);

  const char *n0[] = {"a", "b"};
  const float v0[] = {1, 2};
  const char *n1[] = {"c", "a"};
  const float v1[] = {3, 4};
  /* A name given twice in one row: the later value wins, and no second column appears. */
  const char *n2[] = {"b", "d", "b"};
  const float v2[] = {5, NAN, 6};
  g_assert_cmpuint(ts_cost_dataset_add(d, "g1", n0, v0, 2, 1e-3), ==, 0);
  g_assert_cmpuint(ts_cost_dataset_add(d, "g2", n1, v1, 2, 2e-3), ==, 1);
  g_assert_cmpuint(ts_cost_dataset_add(d, "g1", n2, v2, 3, INFINITY), ==, 2);
  g_assert_cmpuint(ts_cost_dataset_add(d, "g3", NULL, NULL, 0, 5.0), ==, 3);

  g_assert_cmpuint(ts_cost_dataset_n_rows(d), ==, 4);
  g_assert_cmpuint(ts_cost_dataset_n_columns(d), ==, 4);
  const char *cols[] = {"a", "b", "c", "d"};
  for (guint c = 0; c < 4; c++)
    g_assert_cmpstr(ts_cost_dataset_column_name(d, c), ==, cols[c]);
  g_assert_cmpuint(ts_cost_dataset_n_groups(d), ==, 3);
  g_assert_cmpstr(ts_cost_dataset_group_name(d, 0), ==, "g1");
  g_assert_cmpstr(ts_cost_dataset_group_name(d, 1), ==, "g2");
  g_assert_cmpstr(ts_cost_dataset_group_name(d, 2), ==, "g3");
  const guint groups[] = {0, 1, 0, 2};
  const double times[] = {1e-3, 2e-3, INFINITY, 5.0};
  for (guint r = 0; r < 4; r++) {
    g_assert_cmpuint(ts_cost_dataset_row_group(d, r), ==, groups[r]);
    g_assert_cmpfloat(ts_cost_dataset_row_time(d, r), ==, times[r]);
  }

  /* Cells by row and column: NaN (missing) where a row never named the column. */
  const float want[4][4] = {
      {1, 2, NAN, NAN}, {4, NAN, 3, NAN}, {NAN, 6, NAN, NAN}, {NAN, NAN, NAN, NAN}};
  for (guint r = 0; r < 4; r++)
    for (guint c = 0; c < 4; c++) {
      float v = ts_cost_dataset_value(d, r, c);
      if (isnan(want[r][c]))
        g_assert_true(isnan(v));
      else
        g_assert_cmpfloat(v, ==, want[r][c]);
    }
}

/* ---- (2) ranking measures ---- */

static void
assert_tau(const double *s, const double *t, guint n, double want)
{
  double tau = ts_cost_kendall_tau(s, t, n);
  if (isnan(want))
    g_assert_true(isnan(tau));
  else
    g_assert_cmpfloat_with_epsilon(tau, want, 1e-12);
}

/* tau-b straight from its definition, over all pairs. */
static double
tau_reference(const double *s, const double *t, guint n)
{
  double c = 0, d = 0, tx = 0, ty = 0, all = 0;
  for (guint i = 0; i < n; i++)
    for (guint j = i + 1; j < n; j++) {
      double x0 = isnan(s[i]) ? -INFINITY : s[i], x1 = isnan(s[j]) ? -INFINITY : s[j];
      /* Faster = better: the lower time wins; infinite times tie with each other. */
      int dx = (x0 > x1) - (x0 < x1);
      int dy = (t[i] < t[j]) - (t[i] > t[j]);
      all++;
      if (dx == 0)
        tx++;
      if (dy == 0)
        ty++;
      if (dx * dy > 0)
        c++;
      else if (dx * dy < 0)
        d++;
    }
  if (tx == all || ty == all)
    return NAN;
  return (c - d) / sqrt((all - tx) * (all - ty));
}

static void
test_rank_measures(void)
{
  const double t4[] = {1, 2, 3, 4};
  const double agree[] = {4, 3, 2, 1}, reverse[] = {1, 2, 3, 4};
  assert_tau(agree, t4, 4, 1.0);
  assert_tau(reverse, t4, 4, -1.0);
  /* One tie in the scores: 5 concordant pairs out of 6, tau-b = 5 / sqrt(5 * 6). */
  const double tied[] = {3, 2, 2, 1};
  assert_tau(tied, t4, 4, 5 / sqrt(30));
  /* Failed rows are the slowest and tie with each other: pairs (0,1) (0,2) (0,3) (2,3)
   * concordant, (1,2) discordant, (1,3) tied in time: 3 / sqrt(6 * 5). */
  const double s_inf[] = {3, 2, 1, 0}, t_inf[] = {1, INFINITY, 2, INFINITY};
  assert_tau(s_inf, t_inf, 4, 3 / sqrt(30));
  /* Undefined: fewer than two items, or one side all ties. */
  assert_tau(agree, t4, 1, NAN);
  const double flat[] = {7, 7, 7, 7};
  assert_tau(flat, t4, 4, NAN);
  assert_tau(agree, flat, 4, NAN);

  /* The O(n log n) algorithm against the definition, with many ties, failures and NaN scores. */
  g_autoptr(GRand) rng = g_rand_new_with_seed(7);
  for (guint trial = 0; trial < 200; trial++) {
    guint n = (guint)g_rand_int_range(rng, 2, 120);
    gint levels = g_rand_int_range(rng, 1, 12);
    g_autofree double *s = g_new(double, n);
    g_autofree double *t = g_new(double, n);
    for (guint i = 0; i < n; i++) {
      s[i] = g_rand_int_range(rng, 0, levels);
      t[i] = g_rand_int_range(rng, 1, levels + 1);
      if (g_rand_int_range(rng, 0, 10) == 0)
        t[i] = INFINITY;
      if (g_rand_int_range(rng, 0, 20) == 0)
        s[i] = NAN;
    }
    assert_tau(s, t, n, tau_reference(s, t, n));
  }

  /* Regret: the pick is the highest score; t_pick / t_best - 1 over working rows. */
  const double r_t[] = {1.0, 1.5, 2.0};
  const double r_s[] = {0.1, 0.9, 0.5};
  g_assert_cmpfloat_with_epsilon(ts_cost_top1_regret(r_s, r_t, 3), 0.5, 1e-12);
  const double r_best[] = {0.9, 0.1, 0.5};
  g_assert_cmpfloat(ts_cost_top1_regret(r_best, r_t, 3), ==, 0.0);
  /* Tied top scores: the lower index is the pick. */
  const double r_tie_s[] = {1, 1, 0}, r_tie_t[] = {2, 1, 3};
  g_assert_cmpfloat_with_epsilon(ts_cost_top1_regret(r_tie_s, r_tie_t, 3), 1.0, 1e-12);
  /* A failed pick is infinitely bad; a failed row is never the best. */
  const double r_fail_t[] = {1, INFINITY, 2};
  g_assert_cmpfloat(ts_cost_top1_regret(r_s, r_fail_t, 3), ==, INFINITY);
  const double r_inf_t[] = {INFINITY, 2, 4}, r_inf_s[] = {0, 0, 1};
  g_assert_cmpfloat_with_epsilon(ts_cost_top1_regret(r_inf_s, r_inf_t, 3), 1.0, 1e-12);
  const double all_failed[] = {INFINITY, INFINITY};
  g_assert_true(isnan(ts_cost_top1_regret(r_s, all_failed, 2)));

  /* Recall: true top 2 = {0, 1}; score order 0, 2, 4, 3, 1. */
  const double c_t[] = {1, 2, 3, 4, 5}, c_s[] = {5, 1, 4, 2, 3};
  g_assert_cmpfloat(ts_cost_recall(c_s, c_t, 5, 2, 2), ==, 0.5);
  g_assert_cmpfloat(ts_cost_recall(c_s, c_t, 5, 2, 4), ==, 0.5);
  g_assert_cmpfloat(ts_cost_recall(c_s, c_t, 5, 2, 5), ==, 1.0);
  g_assert_cmpfloat(ts_cost_recall(c_s, c_t, 5, 1, 1), ==, 1.0);
  g_assert_cmpfloat(ts_cost_recall(c_s, c_t, 5, 2, 0), ==, 0.0);
  /* k larger than n is clamped. */
  g_assert_cmpfloat(ts_cost_recall(c_s, c_t, 5, 9, 9), ==, 1.0);
  /* Failed rows are not in the true top: asked for 3, only 2 work. */
  const double f_t[] = {INFINITY, 1, 2}, f_s[] = {3, 2, 1};
  g_assert_cmpfloat(ts_cost_recall(f_s, f_t, 3, 3, 2), ==, 0.5);
  /* All scores tied: the predicted top 1 is index 0, the true top 1 is index 4. */
  const double e_s[] = {1, 1, 1, 1, 1}, e_t[] = {5, 4, 3, 2, 1};
  g_assert_cmpfloat(ts_cost_recall(e_s, e_t, 5, 1, 1), ==, 0.0);
  g_assert_cmpfloat(ts_cost_recall(e_s, e_t, 5, 1, 5), ==, 1.0);
  g_assert_true(isnan(ts_cost_recall(r_s, all_failed, 2, 1, 1)));
}

/* ---- (3) learning a known ranking ---- */

static void
test_learn_synthetic(void)
{
  g_autoptr(GRand) rng = g_rand_new_with_seed(42);
  /* 15 groups to train on, 5 other workloads held out (other scales, unseen rows). */
  g_autoptr(TsCostDataset) train = syn_dataset(rng, 0, 15, 60);
  g_autoptr(TsCostDataset) test = ts_cost_dataset_new();
  for (guint r = 0; r < 60; r++)
    for (guint g = 15; g < 20; g++) {
      float x[N_SYN_FEATURES];
      syn_row(rng, x);
      g_autofree char *group = g_strdup_printf("held-out %u", g);
      ts_cost_dataset_add(test, group, syn_names, x, N_SYN_FEATURES, syn_scale(g) * syn_shape(x));
    }

  /* One thread: XGBoost samples pairs per thread, so the model (not its quality: 0.91 to 0.93
   * over seeds and thread counts) depends on the thread count, and this test should see the
   * same model on every machine. */
  TsCostTrainOptions o;
  ts_cost_train_options_init(&o);
  o.n_threads = 1;
  gint64 t0 = g_get_monotonic_time();
  g_autoptr(TsCostModel) m = train_or_die(train, &o);
  g_test_message("trained on %u rows in %.0f ms", ts_cost_dataset_n_rows(train),
                 (g_get_monotonic_time() - t0) / 1e3);
  g_assert_cmpuint(ts_cost_model_n_features(m), ==, N_SYN_FEATURES);
  for (guint f = 0; f < N_SYN_FEATURES; f++)
    g_assert_cmpstr(ts_cost_model_feature_name(m, f), ==, syn_names[f]);

  g_autofree double *scores = predict_or_die(m, test);
  double s[60], t[60], tau_sum = 0, regret_sum = 0, regret_max = 0, recall_sum = 0;
  for (guint g = 0; g < 5; g++) {
    guint n = group_slice(test, scores, g, s, t);
    g_assert_cmpuint(n, ==, 60);
    double tau = ts_cost_kendall_tau(s, t, n);
    double regret = ts_cost_top1_regret(s, t, n);
    double recall = ts_cost_recall(s, t, n, 5, 10);
    g_test_message("%s: tau %.3f, top-1 regret %.3f, recall of top 5 in top 10 %.2f",
                   ts_cost_dataset_group_name(test, g), tau, regret, recall);
    tau_sum += tau;
    regret_sum += regret;
    regret_max = MAX(regret_max, regret);
    recall_sum += recall;
  }
  g_test_message("held out: mean tau %.3f, mean regret %.3f (worst %.3f), mean recall %.2f",
                 tau_sum / 5, regret_sum / 5, regret_max, recall_sum / 5);
  g_assert_cmpfloat(tau_sum / 5, >=, 0.9);
  /* The model's pick against the fastest of 60 random points: within a few percent on average
   * and 20% at worst (a random pick averages about 50% here). */
  g_assert_cmpfloat(regret_sum / 5, <, 0.05);
  g_assert_cmpfloat(regret_max, <, 0.2);
  g_assert_cmpfloat(recall_sum / 5, >=, 0.6);

  /* Training regrouped the interleaved rows; predictions must still be per input row: the
   * dataset's scores equal the scores of the same rows given as a matrix, row by row. */
  g_autofree float *x = dataset_matrix(test);
  guint n_test = ts_cost_dataset_n_rows(test);
  g_autofree double *again = g_new(double, n_test);
  g_autoptr(GError) error = NULL;
  g_assert_true(ts_cost_model_predict_rows(m, syn_names, N_SYN_FEATURES, x, n_test, again, &error));
  g_assert_no_error(error);
  g_assert_cmpmem(scores, n_test * sizeof(double), again, n_test * sizeof(double));
  /* And one row alone scores as it does among others. */
  double one;
  g_assert_true(ts_cost_model_predict_rows(m, syn_names, N_SYN_FEATURES, x + 7 * N_SYN_FEATURES, 1,
                                           &one, &error));
  g_assert_cmpfloat(one, ==, scores[7]);

  /* Deterministic: the same data and options give the same model. */
  g_autoptr(TsCostModel) m2 = train_or_die(train, &o);
  g_autofree double *scores2 = predict_or_die(m2, test);
  g_assert_cmpmem(scores, n_test * sizeof(double), scores2, n_test * sizeof(double));
}

/* Small groups of four, one feature: the order must still be learnt (it is not with XGBoost's
 * default min_child_weight of 1), in the right direction (faster = higher score), with failed
 * rows below every working one. */
static void
test_learn_small_groups(void)
{
  g_autoptr(TsCostDataset) d = ts_cost_dataset_new();
  g_autoptr(GRand) rng = g_rand_new_with_seed(3);
  const char *names[] = {"x"};
  for (guint g = 0; g < 8; g++) {
    g_autofree char *group = g_strdup_printf("g%u", g);
    for (guint r = 0; r < 4; r++) {
      float x = (float)g_rand_double(rng);
      /* Above 0.8 the point fails (too many registers, say). */
      double time = x > 0.8f ? INFINITY : (g + 1) * (1.0 + x);
      ts_cost_dataset_add(d, group, names, &x, 1, time);
    }
  }
  g_autoptr(TsCostModel) m = train_or_die(d, NULL);

  float grid[21];
  double times[21], scores[21];
  for (guint i = 0; i < 21; i++) {
    grid[i] = i / 20.0f;
    times[i] = grid[i] > 0.8f ? INFINITY : 1.0 + grid[i];
  }
  g_autoptr(GError) error = NULL;
  g_assert_true(ts_cost_model_predict_rows(m, names, 1, grid, 21, scores, &error));
  g_assert_no_error(error);
  double tau = ts_cost_kendall_tau(scores, times, 21);
  g_test_message("32 rows in groups of 4: tau %.3f over a grid of x", tau);
  g_assert_cmpfloat(tau, >=, 0.7);
  /* The best point (x = 0) scores above the worst working one and every failed one. */
  g_assert_cmpfloat(scores[0], >, scores[16]);
  g_assert_cmpfloat(scores[16], >, scores[20]);

  /* A lone pair keeps being learnt over all 60 rounds: its rows end well apart (5.7 with
   * min_child_weight 0.01; 0.36 with XGBoost's default 1, where splitting stops after the first
   * rounds). */
  g_autoptr(TsCostDataset) pair = ts_cost_dataset_new();
  const float xs[] = {0.25f, 0.75f};
  ts_cost_dataset_add(pair, "pair", names, &xs[0], 1, 1.0);
  ts_cost_dataset_add(pair, "pair", names, &xs[1], 1, 2.0);
  g_autoptr(TsCostModel) pm = train_or_die(pair, NULL);
  double ps[2];
  g_assert_true(ts_cost_model_predict_rows(pm, names, 1, xs, 2, ps, &error));
  g_test_message("a lone pair: scores %.3f and %.3f", ps[0], ps[1]);
  g_assert_cmpfloat(ps[0] - ps[1], >, 2.0);
}

/* ---- (4) groups that carry no pair ---- */

static void
test_skipped_groups(void)
{
  g_autoptr(TsCostDataset) d = ts_cost_dataset_new();
  const char *names[] = {"x"};
  float x[] = {0, 1, 2, 3};
  /* All equal, a single row, all failed: nothing to learn from. */
  for (guint i = 0; i < 3; i++)
    ts_cost_dataset_add(d, "flat", names, &x[i], 1, 1e-3);
  ts_cost_dataset_add(d, "single", names, &x[0], 1, 1e-3);
  ts_cost_dataset_add(d, "failed", names, &x[0], 1, INFINITY);
  ts_cost_dataset_add(d, "failed", names, &x[1], 1, INFINITY);
  g_autoptr(GError) error = NULL;
  g_autoptr(TsCostModel) none = ts_cost_model_train(d, NULL, &error);
  g_assert_null(none);
  g_assert_error(error, TS_COST_ERROR, TS_COST_ERROR_DATA);
  g_assert_cmpstr(error->message, ==,
                  "no group has two rows with different times (6 rows in 3 groups)");
  g_clear_error(&error);
  g_autoptr(TsCostDataset) empty = ts_cost_dataset_new();
  g_assert_null(ts_cost_model_train(empty, NULL, &error));
  g_assert_error(error, TS_COST_ERROR, TS_COST_ERROR_DATA);
  g_clear_error(&error);

  /* One group with an order is enough; the flat group, whose rows all sit at x = 0..2 with one
   * time, must not pull the ranking anywhere. */
  for (guint i = 0; i < 4; i++)
    ts_cost_dataset_add(d, "ordered", names, &x[i], 1, 1e-3 * (1 + x[i]));
  g_autoptr(TsCostModel) m = train_or_die(d, NULL);
  double s[4];
  g_assert_true(ts_cost_model_predict_rows(m, names, 1, x, 4, s, &error));
  g_assert_no_error(error);
  g_assert_cmpfloat(s[0], >, s[1]);
  g_assert_cmpfloat(s[1], >, s[2]);
  g_assert_cmpfloat(s[2], >, s[3]);

  /* Bad options are refused before any work. */
  TsCostTrainOptions o;
  ts_cost_train_options_init(&o);
  g_assert_cmpuint(o.n_rounds, ==, 60);
  g_assert_cmpuint(o.max_depth, ==, 6);
  g_assert_cmpfloat(o.eta, ==, 0.2);
  g_assert_cmpfloat(o.subsample, ==, 1.0);
  o.eta = 0;
  g_assert_null(ts_cost_model_train(d, &o, &error));
  g_assert_error(error, TS_COST_ERROR, TS_COST_ERROR_DATA);
}

/* ---- (5) columns matched by name ---- */

static void
test_column_alignment(void)
{
  g_autoptr(GRand) rng = g_rand_new_with_seed(5);
  g_autoptr(TsCostDataset) train = syn_dataset(rng, 0, 6, 40);
  g_autoptr(TsCostModel) m = train_or_die(train, NULL);

  enum { N = 50 };
  float canon[N][N_SYN_FEATURES];
  for (guint r = 0; r < N; r++)
    syn_row(rng, canon[r]);
  double want[N], got[N];
  g_autoptr(GError) error = NULL;
  g_assert_true(
      ts_cost_model_predict_rows(m, syn_names, N_SYN_FEATURES, &canon[0][0], N, want, &error));
  g_assert_no_error(error);
  /* The scores must depend on the rows, or the comparisons below prove nothing. */
  guint distinct = 0;
  for (guint r = 1; r < N; r++)
    distinct += want[r] != want[0];
  g_assert_cmpuint(distinct, >, N / 2);

  /* Only permuted: as many columns as the model has, in another order. */
  const char *perm_names[N_SYN_FEATURES] = {"x3", "x0", "x1", "x2", "x7", "x6", "x5", "x4"};
  float perm[N][N_SYN_FEATURES];
  for (guint r = 0; r < N; r++)
    for (guint k = 0; k < N_SYN_FEATURES; k++)
      perm[r][k] = canon[r][perm_names[k][1] - '0'];
  g_assert_true(
      ts_cost_model_predict_rows(m, perm_names, N_SYN_FEATURES, &perm[0][0], N, got, &error));
  g_assert_no_error(error);
  g_assert_cmpmem(want, sizeof want, got, sizeof got);

  /* Permuted, with two columns the model never saw (a newer extractor, another space's knob). */
  const char *names[] = {"x7", "new.feature", "x3", "x0", "x5",
                         "x1", "knob.WARPS",  "x6", "x2", "x4"};
  enum { W = G_N_ELEMENTS(names) };
  float wide[N][W];
  for (guint r = 0; r < N; r++)
    for (guint k = 0; k < W; k++)
      wide[r][k] = names[k][0] == 'x' ? canon[r][names[k][1] - '0'] : 1e6f;
  g_assert_true(ts_cost_model_predict_rows(m, names, W, &wide[0][0], N, got, &error));
  g_assert_no_error(error);
  g_assert_cmpmem(want, sizeof want, got, sizeof got);

  /* The same through a dataset whose columns came in another order. */
  g_autoptr(TsCostDataset) d = ts_cost_dataset_new();
  for (guint r = 0; r < N; r++)
    ts_cost_dataset_add(d, "w", names, wide[r], W, 1.0);
  g_autofree double *via_dataset = predict_or_die(m, d);
  g_assert_cmpmem(want, sizeof want, via_dataset, sizeof want);

  /* x0 missing: the model reads it as NaN, exactly as if the canonical rows held NaN there,
   * and the scores change (x0 is the strongest feature). */
  const char *partial[] = {"x1", "x2", "x3", "x4", "x5", "x6", "x7"};
  float narrow[N][N_SYN_FEATURES - 1];
  for (guint r = 0; r < N; r++) {
    memcpy(narrow[r], &canon[r][1], sizeof narrow[r]);
    canon[r][0] = NAN;
  }
  double want_nan[N];
  g_assert_true(
      ts_cost_model_predict_rows(m, syn_names, N_SYN_FEATURES, &canon[0][0], N, want_nan, &error));
  g_assert_true(
      ts_cost_model_predict_rows(m, partial, G_N_ELEMENTS(partial), &narrow[0][0], N, got, &error));
  g_assert_no_error(error);
  g_assert_cmpmem(want_nan, sizeof want_nan, got, sizeof got);
  guint changed = 0;
  for (guint r = 0; r < N; r++) {
    g_assert_true(isfinite(got[r]));
    changed += got[r] != want[r];
  }
  g_assert_cmpuint(changed, >, N / 2);
  /* No names at all: every row is all-missing, so every row scores the same. */
  g_assert_true(ts_cost_model_predict_rows(m, NULL, 0, NULL, N, got, &error));
  g_assert_no_error(error);
  for (guint r = 1; r < N; r++)
    g_assert_cmpfloat(got[r], ==, got[0]);
  /* No rows: nothing to do. */
  g_assert_true(ts_cost_model_predict_rows(m, syn_names, N_SYN_FEATURES, NULL, 0, NULL, &error));
  g_assert_no_error(error);
}

static double
cpu_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The best wall and CPU time of 10 calls, in ms. */
static void
time_predict(const TsCostModel *m, const char *const *names, guint n_names, const float *rows,
             guint n_rows, double *wall, double *cpu)
{
  g_autofree double *scores = g_new(double, n_rows);
  g_autoptr(GError) error = NULL;
  *wall = *cpu = INFINITY;
  for (guint rep = 0; rep < 10; rep++) {
    gint64 t0 = g_get_monotonic_time();
    double c0 = cpu_ms();
    g_assert_true(ts_cost_model_predict_rows(m, names, n_names, rows, n_rows, scores, &error));
    *cpu = MIN(*cpu, cpu_ms() - c0);
    *wall = MIN(*wall, (g_get_monotonic_time() - t0) / 1e3);
  }
  g_assert_no_error(error);
}

/* The hot path: thousands of rows of 60 features. Timed, not asserted: on a shared machine the
 * wall time says more about the neighbours than about the code (the CPU time is printed too). */
static void
test_predict_timing(void)
{
  enum { F = 60, N = 4000, TRAIN_GROUPS = 10, TRAIN_ROWS = 100 };
  g_autoptr(GRand) rng = g_rand_new_with_seed(11);
  g_auto(GStrv) names = g_new0(char *, F + 1);
  for (guint f = 0; f < F; f++)
    names[f] = g_strdup_printf("f%02u", f);
  g_autoptr(TsCostDataset) d = ts_cost_dataset_new();
  float x[F];
  for (guint g = 0; g < TRAIN_GROUPS; g++) {
    g_autofree char *group = g_strdup_printf("g%u", g);
    for (guint r = 0; r < TRAIN_ROWS; r++) {
      for (guint f = 0; f < F; f++)
        x[f] = (float)g_rand_double(rng);
      ts_cost_dataset_add(d, group, (const char *const *)names, x, F, (g + 1) * syn_shape(x));
    }
  }
  /* One thread, training and scoring: the time printed is then the cost on one core. */
  TsCostTrainOptions o;
  ts_cost_train_options_init(&o);
  o.n_threads = 1;
  g_autoptr(TsCostModel) m = train_or_die(d, &o);
  g_autofree float *rows = g_new(float, (gsize)N *F);
  for (guint i = 0; i < N * F; i++)
    rows[i] = (float)g_rand_double(rng);
  g_autofree double *scores = g_new(double, N);
  g_autoptr(GError) error = NULL;
  /* The first call configures the booster: not part of the steady state. */
  g_assert_true(
      ts_cost_model_predict_rows(m, (const char *const *)names, F, rows, N, scores, &error));
  double wall, cpu, wall_mapped, cpu_mapped;
  time_predict(m, (const char *const *)names, F, rows, N, &wall, &cpu);
  /* Reversed names: the remapping path, one copy of the rows more. */
  g_autofree const char **reversed = g_new(const char *, F);
  for (guint f = 0; f < F; f++)
    reversed[f] = names[F - 1 - f];
  time_predict(m, reversed, F, rows, N, &wall_mapped, &cpu_mapped);
  g_test_message("predict_rows, %u rows x %u features, one thread, best of 10: %.2f ms (%.2f ms "
                 "CPU) in model order, %.2f ms (%.2f ms CPU) remapped",
                 N, F, wall, cpu, wall_mapped, cpu_mapped);
}

/* ---- (6) the blob ---- */

static GBytes *
bytes_from_string(const char *s)
{
  return g_bytes_new(s, strlen(s));
}

static void
assert_format_error(GBytes *bytes, const char *fragment)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsCostModel) m = ts_cost_model_deserialize(bytes, &error);
  g_assert_null(m);
  g_assert_error(error, TS_COST_ERROR, TS_COST_ERROR_FORMAT);
  g_test_message("%s", error->message);
  g_assert_true(g_str_has_prefix(error->message, "stored cost model: "));
  if (fragment)
    g_assert_nonnull(strstr(error->message, fragment));
}

static void
test_serialize(void)
{
  g_autoptr(GRand) rng = g_rand_new_with_seed(9);
  g_autoptr(TsCostDataset) train = syn_dataset(rng, 0, 5, 40);
  g_autoptr(TsCostDataset) test = syn_dataset(rng, 10, 2, 100);
  TsCostTrainOptions o;
  ts_cost_train_options_init(&o);
  o.n_rounds = 25;
  o.subsample = 0.8;
  o.seed = 1234;
  o.n_threads = 1;
  g_autoptr(TsCostModel) m = train_or_die(train, &o);
  g_autofree double *before = predict_or_die(m, test);

  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) blob = ts_cost_model_serialize(m, &error);
  g_assert_no_error(error);
  g_test_message("serialized: %zu bytes", g_bytes_get_size(blob));
  g_autoptr(TsCostModel) back = ts_cost_model_deserialize(blob, &error);
  g_assert_no_error(error);
  g_assert_nonnull(back);
  g_assert_cmpuint(ts_cost_model_n_features(back), ==, N_SYN_FEATURES);
  for (guint f = 0; f < N_SYN_FEATURES; f++)
    g_assert_cmpstr(ts_cost_model_feature_name(back, f), ==, syn_names[f]);
  g_autofree double *after = predict_or_die(back, test);
  guint n = ts_cost_dataset_n_rows(test);
  g_assert_cmpmem(before, n * sizeof(double), after, n * sizeof(double));
  /* And serializing the loaded model gives the same bytes: options and names survived. */
  g_autoptr(GBytes) blob2 = ts_cost_model_serialize(back, &error);
  g_assert_no_error(error);
  g_assert_true(g_bytes_equal(blob, blob2));

  /* Bytes that are not a model: errors, never a crash. */
  guchar garbage[4096];
  for (guint i = 0; i < sizeof garbage; i++)
    garbage[i] = (guchar)g_rand_int(rng);
  g_autoptr(GBytes) g1 = g_bytes_new(garbage, sizeof garbage);
  assert_format_error(g1, "not a tessera cost model");
  g_autoptr(GBytes) g2 = g_bytes_new("", 0);
  assert_format_error(g2, "not a tessera cost model");
  g_autoptr(GBytes) g3 = bytes_from_string("{\"features\": []}");
  assert_format_error(g3, "not a tessera cost model (missing 'format')");
  g_autoptr(GBytes) g4 = bytes_from_string("[1, 2, 3]");
  assert_format_error(g4, "not a tessera cost model");
  g_autoptr(GBytes) g5 = bytes_from_string("{\"format\": \"tessera-cost-model-99\"}");
  assert_format_error(g5, "tessera-cost-model-99");
  g_autoptr(GBytes) g6 = bytes_from_string("{\"format\": \"tessera-cost-model-1\"}");
  assert_format_error(g6, "missing 'features'");
  g_autoptr(GBytes) g7 = bytes_from_string(
      "{\"format\": \"tessera-cost-model-1\", \"features\": [\"a\", 3], \"booster\": \"\"}");
  assert_format_error(g7, "features[1]");
  g_autoptr(GBytes) g8 = bytes_from_string(
      "{\"format\": \"tessera-cost-model-1\", \"features\": [\"a\"], \"booster\": \"e30=\"}");
  assert_format_error(g8, "'booster'"); /* "{}": JSON, but no model in it */
  g_autoptr(GBytes) g9 = bytes_from_string(
      "{\"format\": \"tessera-cost-model-1\", \"features\": [\"a\"], \"booster\": \"AAAA\"}");
  assert_format_error(g9, "'booster'");

  /* The real blob, truncated; and with its booster's base64 cut short. */
  gsize len = 0;
  const char *text = g_bytes_get_data(blob, &len);
  g_autoptr(GBytes) cut = g_bytes_new(text, len / 2);
  assert_format_error(cut, "not a tessera cost model");
  g_autoptr(GString) edited = g_string_new_len(text, (gssize)len);
  char *b64 = strstr(edited->str, "\"booster\":\"");
  g_assert_nonnull(b64);
  gsize at = (gsize)(b64 - edited->str) + strlen("\"booster\":\"");
  g_string_erase(edited, (gssize)at + 1000, (gssize)(edited->len - at - 1000 - 2));
  g_autoptr(GBytes) short_booster = g_bytes_new(edited->str, edited->len);
  assert_format_error(short_booster, "'booster'");
  /* The same blob naming one feature fewer than the booster reads. */
  g_autoptr(GString) fewer = g_string_new_len(text, (gssize)len);
  g_assert_cmpuint(g_string_replace(fewer, "\"x7\",", "", 1), ==, 0);
  g_assert_cmpuint(g_string_replace(fewer, ",\"x7\"", "", 1), ==, 1);
  g_autoptr(GBytes) fewer_bytes = g_bytes_new(fewer->str, fewer->len);
  assert_format_error(fewer_bytes, "8 features but 7 are named");
}

/* ---- (7) the schedule cache ---- */

static void
test_db_round_trip(void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp("test-cost-model-XXXXXX", &error);
  g_assert_no_error(error);
  g_autofree char *path = g_build_filename(dir, "schedules.db", NULL);
  TsDb *db = ts_db_open(path, TS_DB_OPEN_DEFAULT, &error);
  g_assert_no_error(error);

  /* Nothing stored yet: an error a user can act on. */
  g_autoptr(TsCostModel) absent = ts_cost_model_load(db, "xgb-rank/cpu", NULL, NULL, &error);
  g_assert_null(absent);
  g_assert_error(error, TS_COST_ERROR, TS_COST_ERROR_NO_MODEL);
  g_autofree char *want_msg = g_strdup_printf(
      "no learned cost model of kind 'xgb-rank/cpu' in %s (train one with 'tessera-tune model "
      "train')",
      path);
  g_assert_cmpstr(error->message, ==, want_msg);
  g_clear_error(&error);

  g_autoptr(GRand) rng = g_rand_new_with_seed(13);
  g_autoptr(TsCostDataset) train = syn_dataset(rng, 0, 4, 30);
  g_autoptr(TsCostDataset) test = syn_dataset(rng, 8, 2, 50);
  TsCostTrainOptions o;
  ts_cost_train_options_init(&o);
  o.n_threads = 1;
  o.n_rounds = 10;
  g_autoptr(TsCostModel) older = train_or_die(train, &o);
  o.n_rounds = 30;
  g_autoptr(TsCostModel) newer = train_or_die(train, &o);
  gint64 id1 = ts_cost_model_store(db, older, "xgb-rank/cpu", train, NULL, &error);
  g_assert_no_error(error);
  gint64 id2 = ts_cost_model_store(db, newer, "xgb-rank/cpu", train,
                                   "{\"tau\": 0.93, \"regret\": 0.02}", &error);
  g_assert_no_error(error);
  g_assert_cmpint(id1, >, 0);
  g_assert_cmpint(id2, >, id1);
  /* Another kind in the same table is not confused with it. */
  gint64 id3 = ts_cost_model_store(db, older, "xgb-rank/cuda", NULL, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpint(id3, >, id2);

  /* Reopened, as another process would. */
  ts_db_close(db);
  db = ts_db_open(path, TS_DB_OPEN_READ_ONLY, &error);
  g_assert_no_error(error);
  gint64 id = 0;
  g_autofree char *quality = NULL;
  g_autoptr(TsCostModel) loaded = ts_cost_model_load(db, "xgb-rank/cpu", &id, &quality, &error);
  g_assert_no_error(error);
  g_assert_nonnull(loaded);
  g_assert_cmpint(id, ==, id2);
  g_assert_cmpstr(quality, ==, "{\"tau\": 0.93, \"regret\": 0.02}");
  g_autofree double *want = predict_or_die(newer, test);
  g_autofree double *got = predict_or_die(loaded, test);
  g_autofree double *old_scores = predict_or_die(older, test);
  guint n = ts_cost_dataset_n_rows(test);
  g_assert_cmpmem(want, n * sizeof(double), got, n * sizeof(double));
  g_assert_true(memcmp(old_scores, got, n * sizeof(double)) != 0);

  /* What it was trained on. */
  g_autofree char *trained_on = NULL;
  g_autoptr(GBytes) blob = ts_db_get_model(db, "xgb-rank/cpu", NULL, &trained_on, NULL, &error);
  g_assert_no_error(error);
  g_assert_nonnull(blob);
  g_autoptr(JsonParser) parser = json_parser_new();
  g_assert_true(json_parser_load_from_data(parser, trained_on, -1, &error));
  JsonObject *t = json_node_get_object(json_parser_get_root(parser));
  g_assert_cmpint(json_object_get_int_member(t, "rows"), ==, 120);
  JsonArray *groups = json_object_get_array_member(t, "groups");
  g_assert_cmpuint(json_array_get_length(groups), ==, 4);
  g_assert_cmpstr(json_array_get_string_element(groups, 3), ==, "workload 3");
  JsonArray *features = json_object_get_array_member(t, "features");
  g_assert_cmpuint(json_array_get_length(features), ==, N_SYN_FEATURES);
  g_assert_cmpstr(json_array_get_string_element(features, 2), ==, "x2");
  JsonObject *opts = json_object_get_object_member(t, "options");
  g_assert_cmpint(json_object_get_int_member(opts, "n_rounds"), ==, 30);
  g_assert_cmpfloat(json_object_get_double_member(opts, "eta"), ==, 0.2);

  /* The other kind, with neither quality nor training rows recorded. */
  g_autofree char *no_quality = NULL;
  g_autoptr(TsCostModel) cuda = ts_cost_model_load(db, "xgb-rank/cuda", &id, &no_quality, &error);
  g_assert_no_error(error);
  g_assert_nonnull(cuda);
  g_assert_cmpint(id, ==, id3);
  g_assert_null(no_quality);

  ts_db_close(db);
  ts_test_remove_tree(dir);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/cost-model/dataset", test_dataset);
  g_test_add_func("/cost-model/rank-measures", test_rank_measures);
  g_test_add_func("/cost-model/learn-synthetic", test_learn_synthetic);
  g_test_add_func("/cost-model/learn-small-groups", test_learn_small_groups);
  g_test_add_func("/cost-model/skipped-groups", test_skipped_groups);
  g_test_add_func("/cost-model/column-alignment", test_column_alignment);
  g_test_add_func("/cost-model/predict-timing", test_predict_timing);
  g_test_add_func("/cost-model/serialize", test_serialize);
  g_test_add_func("/cost-model/db-round-trip", test_db_round_trip);
  return g_test_run();
}
