/* test-strategy.c — the search strategies behind ts-tune-strategy.h: determinism, no repeats,
 * only valid points, termination, resume from stored trials, failures, scale to 10^7-point
 * spaces, the registration hook, and how fast each finds the optimum of synthetic landscapes. */
#include <math.h>
#include <string.h>

#include "ts-cost.h"
#include "ts-op.h"
#include "ts-tune-strategy.h"

static const char *const all[] = {"exhaustive", "random", "annealing", "evolutionary", "model"};

/* ---- synthetic landscapes ---- */

/* 12 x 12 x 6 x 6 = 5184 points; the constraints cut off the bowl's own minimum (7.5, 9), so the
 * optimum lies on the boundary a + b <= 16, as tile optima often sit on a resource limit. */
#define LANDSCAPE                                                                                  \
  "dict(a=[0,1,2,3,4,5,6,7,8,9,10,11], b=[0,1,2,3,4,5,6,7,8,9,10,11], c=[0,1,2,3,4,5],"            \
  " d=[0,1,2,3,4,5]).where(a + b <= 16, (a + c) % 7 != 3, c + d <= 8)"

typedef enum { SMOOTH, RUGGED } Shape;

typedef struct {
  Shape shape;
  guint fail_per_10; /* points failing, out of 10 (pseudo-random, never the optimum) */
  gboolean all_fail;
  TsSchedPoint *opt; /* the best point that does not fail */
  guint64 n_valid;
} Landscape;

static gboolean
fails(const Landscape *ls, gint64 a, gint64 b, gint64 c, gint64 d)
{
  return ls->all_fail || (guint64)(a * 31 + b * 17 + c * 7 + d * 3 + 5) % 10 < ls->fail_per_10;
}

static double
landscape_cost(const Landscape *ls, const TsSchedPoint *p, gboolean *ok)
{
  gint64 a = ts_sched_point_get_int(p, "a", -1), b = ts_sched_point_get_int(p, "b", -1);
  gint64 c = ts_sched_point_get_int(p, "c", -1), d = ts_sched_point_get_int(p, "d", -1);
  /* A bowl, anisotropic so that the knobs differ in importance, plus 1e-9 times the index so
   * that the optimum is unique. */
  double cost = 1.0 + 0.5 * (a - 7.5) * (a - 7.5) + 0.7 * (b - 9) * (b - 9) + (c - 4) * (c - 4) +
                0.8 * (d - 2) * (d - 2) + 1e-9 * (double)(((a * 12 + b) * 6 + c) * 6 + d);
  /* Ruggedness: a deterministic ripple of up to 3 with many local minima. */
  if (ls->shape == RUGGED)
    cost += 0.75 * (double)((a * 7 + b * 13 + c * 5 + d * 3) % 5);
  *ok = !fails(ls, a, b, c, d);
  return cost;
}

static TsSchedSpace *
parse_space(const char *text)
{
  GError *error = NULL;
  TsSchedSpace *s = ts_sched_space_parse(text, &error);
  g_assert_no_error(error);
  return s;
}

static void
landscape_init(Landscape *ls, const TsSchedSpace *space, Shape shape, guint fail_per_10)
{
  memset(ls, 0, sizeof *ls);
  ls->shape = shape;
  ls->fail_per_10 = fail_per_10;
  g_autoptr(TsSchedIter) it = ts_sched_iter_new(space, NULL);
  TsSchedPoint *p;
  GError *error = NULL;
  double best = INFINITY;
  while (ts_sched_iter_next(it, &p, &error)) {
    ls->n_valid++;
    gboolean ok;
    double c = landscape_cost(ls, p, &ok);
    if (ok && c < best) {
      best = c;
      ts_sched_point_free(ls->opt);
      ls->opt = p;
    } else {
      ts_sched_point_free(p);
    }
  }
  g_assert_no_error(error);
  g_assert_nonnull(ls->opt);
}

/* ---- running a strategy ---- */

typedef struct {
  guint64 proposed;
  guint64 evals_to_opt; /* 0: not reached */
  GPtrArray *sequence;  /* point texts in proposal order */
} Run;

static void
run_clear(Run *r)
{
  g_clear_pointer(&r->sequence, g_ptr_array_unref);
}

/* Proposes batches of `batch` and observes their costs until the strategy has nothing left,
 * max_evals have been spent, or (stop_at_opt) the optimum was measured. Checks every proposal
 * is valid and new (nothing in `prior` either). */
static void
run_strategy(TsTuneStrategy *s, const TsSchedSpace *space, const TsSchedEnv *env, Landscape *ls,
             guint batch, guint64 max_evals, gboolean stop_at_opt, GHashTable *prior, Run *r)
{
  GError *error = NULL;
  memset(r, 0, sizeof *r);
  r->sequence = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  while (r->proposed < max_evals) {
    g_autoptr(GPtrArray) pts = ts_tune_strategy_propose(s, batch, &error);
    g_assert_no_error(error);
    g_assert_nonnull(pts);
    g_assert_cmpuint(pts->len, <=, batch);
    if (pts->len == 0)
      break;
    for (guint i = 0; i < pts->len; i++) {
      const TsSchedPoint *p = pts->pdata[i];
      gboolean valid = FALSE;
      g_assert_true(ts_sched_space_check(space, env, p, &valid, &error));
      g_assert_no_error(error);
      g_assert_true(valid);
      g_assert_true(g_hash_table_add(seen, g_strdup(ts_sched_point_hash(p))));
      if (prior)
        g_assert_false(g_hash_table_contains(prior, ts_sched_point_hash(p)));
      g_ptr_array_add(r->sequence, ts_sched_point_to_string(p));
      gboolean ok = TRUE;
      double cost = ls ? landscape_cost(ls, p, &ok) : 1.0;
      r->proposed++;
      if (ls && !r->evals_to_opt && ts_sched_point_equal(p, ls->opt))
        r->evals_to_opt = r->proposed;
      ts_tune_strategy_observe(s, p, ok, cost);
    }
    if (stop_at_opt && r->evals_to_opt)
      break;
  }
}

static TsTuneStrategy *
new_strategy(const char *name, const TsSchedSpace *space, const TsSchedEnv *env, guint64 seed)
{
  GError *error = NULL;
  TsTuneStrategy *s = ts_tune_strategy_new(name, space, env, seed, &error);
  g_assert_no_error(error);
  g_assert_nonnull(s);
  g_assert_cmpstr(ts_tune_strategy_name(s), ==, name);
  return s;
}

/* ---- tests ---- */

static void
test_names(void)
{
  const char *const *names = ts_tune_strategy_names();
  for (guint i = 0; i < G_N_ELEMENTS(all); i++)
    g_assert_true(g_strv_contains(names, all[i]));

  g_autoptr(TsSchedSpace) space = parse_space(LANDSCAPE);
  GError *error = NULL;
  g_assert_null(ts_tune_strategy_new("anealing", space, NULL, 1, &error));
  g_assert_error(error, TS_TUNE_ERROR, TS_TUNE_ERROR_UNKNOWN_STRATEGY);
  g_assert_nonnull(strstr(error->message, "annealing"));
  g_assert_nonnull(strstr(error->message, "evolutionary"));
  g_clear_error(&error);

  g_autoptr(TsSchedSpace) empty = parse_space("dict(a=[1,2], b=[3]).where(a > b)");
  for (guint i = 0; i < G_N_ELEMENTS(all); i++) {
    g_assert_null(ts_tune_strategy_new(all[i], empty, NULL, 1, &error));
    g_assert_error(error, TS_TUNE_ERROR, TS_TUNE_ERROR_EMPTY_SPACE);
    g_clear_error(&error);
  }
  /* An unknown name in a constraint is a schedule error, reported at creation. */
  g_autoptr(TsSchedSpace) unbound = parse_space("dict(a=[1,2]).where(a <= M)");
  g_assert_null(ts_tune_strategy_new("random", unbound, NULL, 1, &error));
  g_assert_error(error, TS_SCHED_ERROR, TS_SCHED_ERROR_EVAL);
  g_clear_error(&error);

  ts_tune_strategy_free(NULL);
  g_autoptr(TsTuneStrategy) s = new_strategy("random", space, NULL, 1);
  g_autoptr(GPtrArray) none = ts_tune_strategy_propose(s, 0, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(none->len, ==, 0);
}

static void
test_exhaustive_order(void)
{
  g_autoptr(TsSchedSpace) space = parse_space(LANDSCAPE);
  g_autoptr(TsTuneStrategy) s = new_strategy("exhaustive", space, NULL, 1);
  Run r;
  run_strategy(s, space, NULL, NULL, 5, G_MAXUINT64, FALSE, NULL, &r);
  guint64 count;
  g_assert_true(ts_sched_space_count_valid(space, NULL, &count, NULL));
  g_assert_cmpuint(r.proposed, ==, count);
  g_autoptr(TsSchedIter) it = ts_sched_iter_new(space, NULL);
  TsSchedPoint *p;
  guint i = 0;
  while (ts_sched_iter_next(it, &p, NULL)) {
    g_autofree char *text = ts_sched_point_to_string(p);
    g_assert_cmpstr(text, ==, r.sequence->pdata[i++]);
    ts_sched_point_free(p);
  }
  GError *error = NULL;
  g_autoptr(GPtrArray) more = ts_tune_strategy_propose(s, 5, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(more->len, ==, 0);
  run_clear(&r);
}

/* Every strategy, batches of 1 and 7: runs to the end, covering exactly the valid points with
 * no repeat, finds the optimum of the rugged landscape, then stays empty. */
static void
test_full_coverage(void)
{
  g_autoptr(TsSchedSpace) space = parse_space(LANDSCAPE);
  Landscape ls;
  landscape_init(&ls, space, RUGGED, 0);
  static const guint batches[] = {1, 7};
  for (guint i = 0; i < G_N_ELEMENTS(all); i++)
    for (guint b = 0; b < G_N_ELEMENTS(batches); b++) {
      g_autoptr(TsTuneStrategy) s = new_strategy(all[i], space, NULL, 3);
      Run r;
      run_strategy(s, space, NULL, &ls, batches[b], G_MAXUINT64, FALSE, NULL, &r);
      g_assert_cmpuint(r.proposed, ==, ls.n_valid);
      g_assert_cmpuint(r.evals_to_opt, >, 0);
      g_assert_cmpuint(ts_tune_strategy_n_observed(s), ==, ls.n_valid);
      GError *error = NULL;
      g_autoptr(GPtrArray) more = ts_tune_strategy_propose(s, 3, &error);
      g_assert_no_error(error);
      g_assert_cmpuint(more->len, ==, 0);
      run_clear(&r);
    }
  ts_sched_point_free(ls.opt);
}

static gboolean
same_sequence(GPtrArray *a, GPtrArray *b)
{
  if (a->len != b->len)
    return FALSE;
  for (guint i = 0; i < a->len; i++)
    if (strcmp(a->pdata[i], b->pdata[i]) != 0)
      return FALSE;
  return TRUE;
}

static void
test_determinism(void)
{
  g_autoptr(TsSchedSpace) space = parse_space(LANDSCAPE);
  Landscape ls;
  landscape_init(&ls, space, RUGGED, 2);
  for (guint i = 0; i < G_N_ELEMENTS(all); i++) {
    Run r1, r2, r3;
    g_autoptr(TsTuneStrategy) s1 = new_strategy(all[i], space, NULL, 11);
    g_autoptr(TsTuneStrategy) s2 = new_strategy(all[i], space, NULL, 11);
    g_autoptr(TsTuneStrategy) s3 = new_strategy(all[i], space, NULL, 12);
    run_strategy(s1, space, NULL, &ls, 4, 400, FALSE, NULL, &r1);
    run_strategy(s2, space, NULL, &ls, 4, 400, FALSE, NULL, &r2);
    run_strategy(s3, space, NULL, &ls, 4, 400, FALSE, NULL, &r3);
    g_assert_cmpuint(r1.proposed, ==, 400);
    g_assert_true(same_sequence(r1.sequence, r2.sequence));
    if (strcmp(all[i], "exhaustive") == 0)
      g_assert_true(same_sequence(r1.sequence, r3.sequence));
    else
      g_assert_false(same_sequence(r1.sequence, r3.sequence));
    run_clear(&r1);
    run_clear(&r2);
    run_clear(&r3);
  }
  ts_sched_point_free(ls.opt);
}

/* With nothing to rank by (no prior, no analytic estimate: a foreign kernel's recorded space),
 * the model strategy explores in the seed's order: its first picks differ from seed to seed
 * instead of always starting from the same point. */
static void
test_model_unranked(void)
{
  g_autoptr(TsSchedSpace) space = parse_space(LANDSCAPE);
  g_autoptr(GHashTable) firsts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint64 seed = 1; seed <= 8; seed++) {
    g_autoptr(TsTuneStrategy) s = new_strategy("model", space, NULL, seed);
    GError *error = NULL;
    g_autoptr(GPtrArray) pts = ts_tune_strategy_propose(s, 1, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(pts->len, ==, 1);
    g_hash_table_add(firsts, g_strdup(ts_sched_point_hash(g_ptr_array_index(pts, 0))));
  }
  g_assert_cmpuint(g_hash_table_size(firsts), >=, 5);
}

/* With a ranking (here the analytic estimate) and no online model yet, the model strategy
 * measures the ranking's best in order: its random exploration picks would teach no model yet
 * (they cost 0.8 evaluations to 95% on the recorded CPU GEMM spaces). The space (648 points) is
 * smaller than the pool, so the pool holds every valid point from the start. */
static void
test_model_follows_ranking_until_trained(void)
{
  static const TsDeviceInfo dev = {
    .backend = "cpu", .name = "test x86", .arch = "x86_64+avx2+fma", .compute_units = 2,
    .memory_bytes = 24ull << 30, .l1_bytes = 32 << 10, .l2_bytes = 512 << 10,
    .l3_bytes = 32 << 20, .vector_bits = 256, .toolchain = "gcc 12.2.0"};
  g_autoptr(TsProfCeilings) c = ts_prof_ceilings_new("cpu", "gcc 12.2.0");
  ts_prof_ceilings_set(c, "f32", TS_PROF_COMPUTE, 181.0, 93.9);
  ts_prof_ceilings_set(c, "l1", TS_PROF_MEMORY, 263.1, 137.2);
  ts_prof_ceilings_set(c, "l2", TS_PROF_MEMORY, 175.5, 78.7);
  ts_prof_ceilings_set(c, "l3", TS_PROF_MEMORY, 60.0, 40.0);
  ts_prof_ceilings_set(c, "dram", TS_PROF_MEMORY, 19.2, 14.0);
  GError *error = NULL;
  g_autoptr(TsOpInstance) inst = ts_op_instance_new("gemm", "M=512,N=512,K=512", "f32", &error);
  g_assert_no_error(error);
  g_autoptr(TsSchedSpace) space = ts_op_instance_space(
    inst, "cpu",
    "block(m=[72,96,144], n=[2016,4080], k=[128,256,384]).micro(m=[4,6,8], n=[8,16,24])"
    ".vector([4,8]).unroll([4,8]).threads([1])",
    &error);
  g_assert_no_error(error);
  g_autoptr(TsSchedEnv) env = ts_op_instance_env(inst, &dev);
  g_autoptr(TsCostTarget) target = ts_cost_target_new(inst, "cpu", &dev, c);
  /* every valid point's estimate */
  g_autoptr(GHashTable) est = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(TsSchedIter) it = ts_sched_iter_new(space, env);
  TsSchedPoint *p = NULL;
  while (ts_sched_iter_next(it, &p, &error) && p) {
    TsCostEstimate e;
    g_assert_true(ts_cost_analytic(target, p, NULL, &e, &error));
    g_hash_table_insert(est, g_strdup(ts_sched_point_hash(p)),
                        g_memdup2(&e.time_s, sizeof(double)));
    ts_sched_point_free(p);
  }
  g_assert_no_error(error);
  g_assert_cmpuint(g_hash_table_size(est), >, 16);
  for (guint64 seed = 1; seed <= 6; seed++) {
    g_autoptr(TsTuneStrategy) s = new_strategy("model", space, env, seed);
    ts_tune_strategy_set_cost(s, target, NULL);
    g_autoptr(GHashTable) left = g_hash_table_new(g_str_hash, g_str_equal);
    GHashTableIter hi;
    gpointer k, v;
    g_hash_table_iter_init(&hi, est);
    while (g_hash_table_iter_next(&hi, &k, &v))
      g_hash_table_insert(left, k, v);
    for (guint i = 0; i < 7; i++) { /* fewer than the 8 measurements the online model needs */
      g_autoptr(GPtrArray) pts = ts_tune_strategy_propose(s, 1, &error);
      g_assert_no_error(error);
      g_assert_cmpuint(pts->len, ==, 1);
      const char *h = ts_sched_point_hash(pts->pdata[0]);
      const double *mine = g_hash_table_lookup(left, h);
      g_assert_nonnull(mine);
      double best = INFINITY;
      g_hash_table_iter_init(&hi, left);
      while (g_hash_table_iter_next(&hi, &k, &v))
        best = MIN(best, *(const double *)v);
      /* the ranking keeps log2 times as floats */
      if (*mine > best * (1 + 1e-5)) {
        g_autofree char *text = ts_sched_point_to_string(pts->pdata[0]);
        g_error("seed %" G_GUINT64_FORMAT ", proposal %u: %s, estimated %.6g s, while %.6g s "
                "was left", seed, i, text, *mine, best);
      }
      g_hash_table_remove(left, h);
      ts_tune_strategy_observe(s, pts->pdata[0], TRUE, *mine * (1.0 + 0.1 * (i % 3)));
    }
  }
}

/* A seed stored before a knob existed (another toolchain's best, say) is read at the knob's one
 * value in the space; one lacking a knob of several values is dropped. */
static void
test_seeds_older_knobs(void)
{
  g_autoptr(TsSchedSpace) space = parse_space("dict(a=[0,1,2,3], b=[0,1]).walk(\"panels\")");
  static const char *const text[] = {"dict(a=2, b=1)", "dict(a=3)", "dict(a=1, b=0)"};
  g_autoptr(GPtrArray) seeds = g_ptr_array_new_with_free_func((GDestroyNotify)ts_sched_point_free);
  for (guint i = 0; i < G_N_ELEMENTS(text); i++) {
    GError *error = NULL;
    g_ptr_array_add(seeds, ts_sched_point_parse(text[i], &error));
    g_assert_no_error(error);
  }
  g_autoptr(TsTuneStrategy) s = new_strategy("model", space, NULL, 1);
  g_assert_cmpuint(ts_tune_strategy_set_seeds(s, seeds), ==, 2);
  static const guint first[] = {0, 2};
  for (guint i = 0; i < G_N_ELEMENTS(first); i++) {
    GError *error = NULL;
    g_autoptr(GPtrArray) pts = ts_tune_strategy_propose(s, 1, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(pts->len, ==, 1);
    g_autoptr(TsSchedPoint) want = ts_sched_point_copy(seeds->pdata[first[i]]);
    ts_sched_point_set_str(want, "walk", "panels");
    g_assert_true(ts_sched_point_equal(pts->pdata[0], want));
    ts_tune_strategy_observe(s, pts->pdata[0], TRUE, 1.0 + i);
  }
}

/* Seeds (what other devices measured fastest): the model strategy measures the first 8 that are
 * valid, in their order, before anything else; the evolutionary one starts its population with
 * them; a point outside the space is dropped, an invalid or repeated one skipped; a strategy
 * that does not warm-start keeps none. */
static void
test_seeds(void)
{
  g_autoptr(TsSchedSpace) space = parse_space(LANDSCAPE);
  static const char *const text[] = {
    "dict(a=1, b=1, c=0, d=0)",  "dict(a=12, b=1, c=0, d=0)" /* outside */,
    "dict(a=3, b=1, c=0, d=0)" /* (a + c) % 7 == 3 */, "dict(a=1, b=1, c=0, d=0)" /* again */,
    "dict(a=2, b=2, c=0, d=0)",  "dict(a=4, b=4, c=0, d=0)", "dict(a=5, b=5, c=0, d=0)",
    "dict(a=6, b=6, c=0, d=0)",  "dict(a=7, b=7, c=0, d=0)", "dict(a=8, b=8, c=0, d=0)",
    "dict(a=9, b=6, c=0, d=0)",  "dict(a=10, b=5, c=1, d=0)", "dict(a=11, b=4, c=0, d=0)"};
  static const guint valid[] = {0, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  g_autoptr(GPtrArray) seeds = g_ptr_array_new_with_free_func((GDestroyNotify)ts_sched_point_free);
  for (guint i = 0; i < G_N_ELEMENTS(text); i++) {
    GError *error = NULL;
    g_ptr_array_add(seeds, ts_sched_point_parse(text[i], &error));
    g_assert_no_error(error);
  }
  Landscape ls;
  landscape_init(&ls, space, SMOOTH, 0);
  const struct {
    const char *name;
    guint kept, first; /* seeds kept; how many valid ones come first, in order */
  } cases[] = {{"model", 12, 8}, {"evolutionary", 12, G_N_ELEMENTS(valid)}, {"random", 0, 0},
               {"annealing", 0, 0}};
  for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
    g_autoptr(TsTuneStrategy) s = new_strategy(cases[c].name, space, NULL, 3);
    g_assert_cmpuint(ts_tune_strategy_set_seeds(s, seeds), ==, cases[c].kept);
    guint from_seeds = 0;
    for (guint i = 0; i < 12; i++) {
      GError *error = NULL;
      g_autoptr(GPtrArray) pts = ts_tune_strategy_propose(s, 1, &error);
      g_assert_no_error(error);
      g_assert_cmpuint(pts->len, ==, 1);
      const TsSchedPoint *p = pts->pdata[0];
      if (i < cases[c].first)
        g_assert_true(ts_sched_point_equal(p, seeds->pdata[valid[i]]));
      for (guint k = 0; k < G_N_ELEMENTS(valid); k++)
        from_seeds += ts_sched_point_equal(p, seeds->pdata[valid[k]]);
      gboolean ok;
      double cost = landscape_cost(&ls, p, &ok);
      ts_tune_strategy_observe(s, p, ok, cost);
    }
    g_test_message("%s: %u of its first 12 proposals were seeds", cases[c].name, from_seeds);
    if (cases[c].kept == 0)
      g_assert_cmpuint(from_seeds, <=, 2); /* by chance only: 10 of 2.6k valid points */
  }
  ts_sched_point_free(ls.opt);
}

/* Failures: with 7 in 10 points failing the optimum is still found; with every point failing
 * each strategy still proposes every valid point once and then stops, never stalls. */
static void
test_failures(void)
{
  g_autoptr(TsSchedSpace) space = parse_space(LANDSCAPE);
  Landscape ls, dead;
  landscape_init(&ls, space, SMOOTH, 7);
  landscape_init(&dead, space, SMOOTH, 0);
  dead.all_fail = TRUE;
  for (guint i = 0; i < G_N_ELEMENTS(all); i++) {
    Run r;
    g_autoptr(TsTuneStrategy) s = new_strategy(all[i], space, NULL, 5);
    run_strategy(s, space, NULL, &ls, 3, G_MAXUINT64, TRUE, NULL, &r);
    g_assert_cmpuint(r.evals_to_opt, >, 0);
    g_test_message("%s, 70%% failing: optimum after %" G_GUINT64_FORMAT " evaluations", all[i],
                   r.evals_to_opt);
    run_clear(&r);

    g_autoptr(TsTuneStrategy) d = new_strategy(all[i], space, NULL, 5);
    run_strategy(d, space, NULL, &dead, 2, G_MAXUINT64, FALSE, NULL, &r);
    g_assert_cmpuint(r.proposed, ==, ls.n_valid);
    run_clear(&r);

    /* NaN costs count as failures, not as a best. */
    g_autoptr(TsTuneStrategy) nan_s = new_strategy(all[i], space, NULL, 6);
    for (guint k = 0; k < 50; k++) {
      g_autoptr(GPtrArray) pts = ts_tune_strategy_propose(nan_s, 1, NULL);
      g_assert_cmpuint(pts->len, ==, 1);
      ts_tune_strategy_observe(nan_s, pts->pdata[0], TRUE, NAN);
    }
  }
  ts_sched_point_free(ls.opt);
  ts_sched_point_free(dead.opt);
}

/* Resume: a third of the valid points is observed first, as the driver does with stored trials
 * (with knobs written in another order, an invalid point and a point from another space among
 * them). The strategy never proposes those, and covers exactly the rest. */
static void
test_resume(void)
{
  g_autoptr(TsSchedSpace) space = parse_space(LANDSCAPE);
  Landscape ls;
  landscape_init(&ls, space, RUGGED, 1);
  GError *error = NULL;
  for (guint i = 0; i < G_N_ELEMENTS(all); i++) {
    g_autoptr(GRand) rng = g_rand_new_with_seed(99 + i);
    g_autoptr(GPtrArray) prefix =
        ts_sched_space_sample(space, NULL, (guint)(ls.n_valid / 3), rng, &error);
    g_assert_no_error(error);
    g_autoptr(GHashTable) prior = g_hash_table_new(g_str_hash, g_str_equal);
    g_autoptr(TsTuneStrategy) s = new_strategy(all[i], space, NULL, 21);
    for (guint k = 0; k < prefix->len; k++) {
      const TsSchedPoint *p = prefix->pdata[k];
      /* Rebuilt with the knobs in reverse order: stored points match by value. */
      g_autoptr(TsSchedPoint) q = ts_sched_point_new();
      const char *knobs[] = {"d", "c", "b", "a"};
      for (guint j = 0; j < 4; j++)
        ts_sched_point_set_int(q, knobs[j], ts_sched_point_get_int(p, knobs[j], -1));
      g_hash_table_add(prior, (gpointer)ts_sched_point_hash(p));
      gboolean ok;
      double cost = landscape_cost(&ls, q, &ok);
      ts_tune_strategy_observe(s, q, ok, cost);
      ts_tune_strategy_observe(s, q, ok, cost); /* a second observation is ignored */
    }
    g_autoptr(TsSchedPoint) invalid = ts_sched_point_parse("dict(a=11, b=11, c=0, d=0)", &error);
    g_assert_no_error(error);
    g_autoptr(TsSchedPoint) outside = ts_sched_point_parse("dict(a=99, b=1, c=0, d=0)", &error);
    g_assert_no_error(error);
    ts_tune_strategy_observe(s, invalid, FALSE, 0);
    ts_tune_strategy_observe(s, outside, TRUE, 1.0);
    g_assert_cmpuint(ts_tune_strategy_n_observed(s), ==, prefix->len + 1);

    Run r;
    run_strategy(s, space, NULL, &ls, 5, G_MAXUINT64, FALSE, prior, &r);
    g_assert_cmpuint(r.proposed + prefix->len, ==, ls.n_valid);
    run_clear(&r);
  }
  ts_sched_point_free(ls.opt);
}

/* Everything observed from storage first: every strategy has nothing left to propose. */
static void
test_all_observed(void)
{
  /* A small constrained space: observing all of LANDSCAPE's points took minutes under clang's
   * sanitizers on a slow 2-core VM, and the property is the same at any size. */
  g_autoptr(TsSchedSpace) space = parse_space(
    "dict(a=[0,1,2,3,4,5,6,7], b=[0,1,2,3,4,5,6,7], c=[0,1,2,3]).where(a + b <= 10, "
    "(a + c) % 5 != 3)");
  GError *error = NULL;
  for (guint i = 0; i < G_N_ELEMENTS(all); i++) {
    g_autoptr(TsTuneStrategy) s = new_strategy(all[i], space, NULL, 13);
    g_autoptr(TsSchedIter) it = ts_sched_iter_new(space, NULL);
    TsSchedPoint *p;
    while (ts_sched_iter_next(it, &p, &error)) {
      ts_tune_strategy_observe(s, p, i % 2 == 0, 1.0);
      ts_sched_point_free(p);
    }
    g_assert_no_error(error);
    g_autoptr(GPtrArray) pts = ts_tune_strategy_propose(s, 4, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(pts->len, ==, 0);
  }
}

typedef struct {
  double mean[G_N_ELEMENTS(all)];
  guint64 worst[G_N_ELEMENTS(all)];
} Speed;

static void
measure_speed(Shape shape, guint batch, Speed *out)
{
  g_autoptr(TsSchedSpace) space = parse_space(LANDSCAPE);
  Landscape ls;
  landscape_init(&ls, space, shape, 0);
  for (guint i = 0; i < G_N_ELEMENTS(all); i++) {
    guint64 sum = 0, worst = 0;
    for (guint64 seed = 1; seed <= 20; seed++) {
      g_autoptr(TsTuneStrategy) s = new_strategy(all[i], space, NULL, seed);
      Run r;
      run_strategy(s, space, NULL, &ls, batch, G_MAXUINT64, TRUE, NULL, &r);
      g_assert_cmpuint(r.evals_to_opt, >, 0);
      sum += r.evals_to_opt;
      worst = MAX(worst, r.evals_to_opt);
      run_clear(&r);
    }
    out->mean[i] = sum / 20.0;
    out->worst[i] = worst;
    g_test_message(
        "%s landscape (%" G_GUINT64_FORMAT " valid points), batch %u: %s reaches the "
        "optimum after %.1f evaluations on average over 20 seeds (worst %" G_GUINT64_FORMAT ")",
        shape == SMOOTH ? "smooth" : "rugged", ls.n_valid, batch, all[i], out->mean[i], worst);
  }
  ts_sched_point_free(ls.opt);
}

/* The speed comparisons run 20 seeds of every strategy to the optimum: about 40% of this
 * program's time, and under the sanitizers (whose builds run it without -m slow) minutes that
 * check no code the other tests do not run. */
static gboolean
slow_test(void)
{
  if (g_test_slow())
    return TRUE;
  g_test_skip("a statistical comparison of the strategies over 20 seeds each: run with -m slow "
              "(meson does, in builds without sanitizers)");
  return FALSE;
}

/* The guided strategies beat random search on a smooth bowl. Random needs about half the valid
 * points on average; the inequality tested is a loose one (half of random's mean) so that it
 * holds for any reasonable tuning of the strategies. */
static void
test_speed_smooth(void)
{
  if (!slow_test())
    return;
  Speed sp;
  measure_speed(SMOOTH, 1, &sp);
  g_assert_cmpfloat(sp.mean[2], <, 0.5 * sp.mean[1]);
  g_assert_cmpfloat(sp.mean[3], <, 0.5 * sp.mean[1]);
  measure_speed(SMOOTH, 8, &sp);
  g_assert_cmpfloat(sp.mean[2], <, sp.mean[1]);
  g_assert_cmpfloat(sp.mean[3], <, sp.mean[1]);
}

/* Reported, not asserted: ruggedness is where the strategies differ most with their tuning. */
static void
test_speed_rugged(void)
{
  if (!slow_test())
    return;
  Speed sp;
  measure_speed(RUGGED, 1, &sp);
}

/* 10^7 points, partly constrained: the stochastic strategies propose (and observe) 100 points
 * without enumerating the space. */
static void
test_ten_million(void)
{
  g_autoptr(TsSchedSpace) space = parse_space(
      "dict(a=[1,2,3,4,5,6,7,8,9,10], b=[1,2,3,4,5,6,7,8,9,10], c=[1,2,3,4,5,6,7,8,9,10],"
      " d=[1,2,3,4,5,6,7,8,9,10], e=[1,2,3,4,5,6,7,8,9,10], f=[1,2,3,4,5,6,7,8,9,10],"
      " g=[1,2,3,4,5,6,7,8,9,10]).where(a * b <= 60, c + d + e >= 8, (f * g) % 3 != 1)");
  guint64 size;
  g_assert_true(ts_sched_space_size(space, &size));
  g_assert_cmpuint(size, ==, 10000000);
  /* The yardstick, measured in the same run: enumerating 10^5 of the space's valid points. A
   * strategy that walked the whole space would take about a hundred of these (10^7 points
   * to walk); the bound is ten, so a slow or sanitized build is judged against its own speed.
   * Counting the valid points group by group, as the strategies' creation does, walks 1,200
   * points here (with gcc -O2 on a 2-core Zen 1 VM: 3-4 ms a strategy, the model's 160 ms with
   * its training set-up, against a 50 ms yardstick; walking all 10^7 it was 300 ms, 6x). */
  gint64 e0 = g_get_monotonic_time();
  g_autoptr(TsSchedIter) it = ts_sched_iter_new(space, NULL);
  TsSchedPoint *p;
  GError *error = NULL;
  guint enumerated = 0;
  while (enumerated < 100000 && ts_sched_iter_next(it, &p, &error)) {
    ts_sched_point_free(p);
    enumerated++;
  }
  g_assert_no_error(error);
  g_assert_cmpuint(enumerated, ==, 100000);
  const double yardstick_ms = (g_get_monotonic_time() - e0) / 1000.0;
  g_test_message("10^7 points: enumerating 10^5 valid points took %.1f ms", yardstick_ms);
  for (guint i = 0; i < G_N_ELEMENTS(all); i++) {
    gint64 t0 = g_get_monotonic_time();
    g_autoptr(TsTuneStrategy) s = new_strategy(all[i], space, NULL, 8);
    Run r;
    run_strategy(s, space, NULL, NULL, 10, 100, FALSE, NULL, &r);
    double ms = (g_get_monotonic_time() - t0) / 1000.0;
    g_assert_cmpuint(r.proposed, ==, 100);
    g_test_message("10^7 points: %s proposed 100 in %.1f ms (creation included)", all[i], ms);
    g_assert_cmpfloat(ms, <, MAX(10 * yardstick_ms, 50.0));
    run_clear(&r);
  }
}

/* ---- a landscape shaped like the recorded GPU spaces ---- */

/* Modelled on the point-in-polygon kernel's recordings: a method knob whose order means
 * nothing, an ordered block size, an ordered tile size, and a variant that is best only with
 * the largest tiles (slower than another variant below them, so one knob at a time leads
 * away from it); the largest tile with the largest blocks does not run (a register limit),
 * next to the optimum; a few percent of deterministic ripple. */
#define RECORDED_LIKE                                                                              \
  "dict(method=[0,1,2,3], block=[32,64,96,128,160,192,224,256,288,320,352,384,416,448,480,512,"   \
  "544,576,608,640,672,704,736,768,800,832,864,896,928,960,992],"                                  \
  " tile=[1,2,4,6,8,10,12,14,16,18,20], variant=[0,1,2])"

static double
recorded_like_cost(const TsSchedPoint *p, gboolean *ok)
{
  gint64 m = ts_sched_point_get_int(p, "method", -1), b = ts_sched_point_get_int(p, "block", -1);
  gint64 t = ts_sched_point_get_int(p, "tile", -1), v = ts_sched_point_get_int(p, "variant", -1);
  static const double method[] = {1.0, 1.6, 1.08, 1.08};
  double variant = v == 0 ? (t >= 16 ? 1.0 : 1.25) : v == 1 ? 1.3 : 1.12;
  double ripple = (double)((guint64)(m * 131 + b * 7 + t * 17 + v * 29) * 2654435761u % 1000);
  *ok = t * b <= 14000;
  return (1.0 + 3.0 / (double)t) * method[m] * variant *
         (1.0 + 0.05 * fabs(log2((double)b / 256.0))) * (1.0 + 0.03 * ripple / 1000.0);
}

/* Capped mean evaluations to 95% of the optimum, over seeds 1..20, budget 200 (a miss counts
 * 200): the benchmark's figure, on the synthetic landscape. */
static double
recorded_like_evals(const char *strategy)
{
  g_autoptr(TsSchedSpace) space = parse_space(RECORDED_LIKE);
  GError *error = NULL;
  double opt = INFINITY;
  g_autoptr(TsSchedIter) it = ts_sched_iter_new(space, NULL);
  TsSchedPoint *p;
  while (ts_sched_iter_next(it, &p, &error)) {
    gboolean ok;
    double c = recorded_like_cost(p, &ok);
    if (ok)
      opt = MIN(opt, c);
    ts_sched_point_free(p);
  }
  g_assert_no_error(error);
  double sum = 0;
  for (guint64 seed = 1; seed <= 20; seed++) {
    g_autoptr(TsTuneStrategy) s = new_strategy(strategy, space, NULL, seed);
    guint evals = 0, reached = 200;
    while (evals < 200 && reached == 200) {
      g_autoptr(GPtrArray) pts = ts_tune_strategy_propose(s, 1, &error);
      g_assert_no_error(error);
      if (pts->len == 0)
        break;
      gboolean ok;
      double c = recorded_like_cost(pts->pdata[0], &ok);
      evals++;
      if (ok && opt / c >= 0.95)
        reached = evals;
      ts_tune_strategy_observe(s, pts->pdata[0], ok, c);
    }
    sum += reached;
  }
  return sum / 20;
}

/* The default strategy's regression test: on this landscape (24 of its 4092 points within 95%
 * of the optimum, 252 failing) random search needs 147 evaluations, capped, and the model
 * strategy 33; the model strategy of before its bootstrap ensemble, failure handling and
 * farthest-point exploration needed 57, which the bound of 50 rejects. */
static void
test_recorded_like(void)
{
  double model = recorded_like_evals("model"), random = recorded_like_evals("random");
  g_test_message("recorded-like landscape, capped mean evaluations to 95%%, 20 seeds: "
                 "model %.1f, random %.1f", model, random);
  g_assert_cmpfloat(model, <, 0.5 * random);
  g_assert_cmpfloat(model, <, 50);
}

/* ---- the registration hook ---- */

/* A class that proposes nothing new: the strategy's safety net must keep the search going. */
typedef struct {
  const TsSchedSpace *space;
  guint observed;
} Lazy;

static gpointer
lazy_create(const TsSchedSpace *space, const TsSchedEnv *env, GRand *rng, GError **error)
{
  Lazy *l = g_new0(Lazy, 1);
  l->space = space;
  return l;
}

static gboolean
lazy_propose(gpointer state, guint n, gboolean (*seen)(gpointer, const TsSchedPoint *),
             gpointer seen_data, GPtrArray *out, GError **error)
{
  Lazy *l = state;
  /* Repeats the first point (seen after the first call, repeated within a batch) and a point
   * outside the space; all must be dropped. */
  for (guint i = 0; i < n; i++)
    g_ptr_array_add(out, ts_sched_space_point_at(l->space, 0));
  g_ptr_array_add(out, ts_sched_point_parse("dict(a=77)", NULL));
  return TRUE;
}

static void
lazy_observe(gpointer state, const TsSchedPoint *point, gboolean ok, double cost)
{
  ((Lazy *)state)->observed++;
}

static void
test_register(void)
{
  TsTuneStrategyClass klass = {
      .name = "lazy",
      .create = lazy_create,
      .destroy = g_free,
      .propose = lazy_propose,
      .observe = lazy_observe,
  };
  ts_tune_strategy_register(&klass);
  g_assert_true(g_strv_contains(ts_tune_strategy_names(), "lazy"));
  g_assert_true(g_strv_contains(ts_tune_strategy_names(), "exhaustive"));

  /* point_at(0) = (0,0,0,0) is valid in the landscape. */
  g_autoptr(TsSchedSpace) space = parse_space(LANDSCAPE);
  Landscape ls;
  landscape_init(&ls, space, SMOOTH, 0);
  g_autoptr(TsTuneStrategy) s = new_strategy("lazy", space, NULL, 4);
  Run r;
  run_strategy(s, space, NULL, &ls, 6, G_MAXUINT64, FALSE, NULL, &r);
  g_assert_cmpuint(r.proposed, ==, ls.n_valid);
  run_clear(&r);
  ts_sched_point_free(ls.opt);
}

/* Environment names in constraints: the strategy checks validity under the env it was given. */
static void
test_env(void)
{
  g_autoptr(TsSchedSpace) space =
      parse_space("dict(BM=[16,32,64,128], BN=[16,32,64,128], stages=[1,2,3,4])"
                  ".where(M % BM == 0, (BM + BN) * 32 * stages * 2 <= smem_bytes)");
  g_autoptr(TsSchedEnv) env = ts_sched_env_new();
  ts_sched_env_set(env, "M", 96);
  ts_sched_env_set(env, "smem_bytes", 24576);
  guint64 count;
  g_assert_true(ts_sched_space_count_valid(space, env, &count, NULL));
  for (guint i = 0; i < G_N_ELEMENTS(all); i++) {
    g_autoptr(TsTuneStrategy) s = new_strategy(all[i], space, env, 2);
    Run r;
    run_strategy(s, space, env, NULL, 3, G_MAXUINT64, FALSE, NULL, &r);
    g_assert_cmpuint(r.proposed, ==, count);
    run_clear(&r);
  }
}

/* A 10^9-point space whose valid points are 1 in 100 (10^7 of them) is sampled, not enumerated
 * (enumeration walked every valid point into a pool of 8 bytes each, a gigabyte at 10^8). */
static void
test_huge_sparse_space(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsSchedSpace) space = ts_sched_space_parse(
    "dict(a=[0,1,2,3,4,5,6,7,8,9], b=[0,1,2,3,4,5,6,7,8,9], c=[0,1,2,3,4,5,6,7,8,9],"
    " d=[0,1,2,3,4,5,6,7,8,9], e=[0,1,2,3,4,5,6,7,8,9], f=[0,1,2,3,4,5,6,7,8,9],"
    " g=[0,1,2,3,4,5,6,7,8,9], h=[0,1,2,3,4,5,6,7,8,9], i=[0,1,2,3,4,5,6,7,8,9])"
    ".where(a + b < 1)",
    &error);
  g_assert_no_error(error);
  static const char *const names[] = {"random", "evolutionary"};
  for (guint k = 0; k < G_N_ELEMENTS(names); k++) {
    g_autoptr(TsTuneStrategy) st = ts_tune_strategy_new(names[k], space, NULL, 3, &error);
    g_assert_no_error(error);
    for (int round = 0; round < 3; round++) {
      g_autoptr(GPtrArray) batch = ts_tune_strategy_propose(st, 8, &error);
      g_assert_no_error(error);
      g_assert_cmpuint(batch->len, >, 0);
      for (guint i = 0; i < batch->len; i++) {
        TsSchedPoint *p = g_ptr_array_index(batch, i);
        g_assert_cmpint(ts_sched_point_get_int(p, "a", -1) + ts_sched_point_get_int(p, "b", -1),
                        ==, 0);
        ts_tune_strategy_observe(st, p, TRUE, 1.0 + i);
      }
    }
  }
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/strategy/names", test_names);
  g_test_add_func("/strategy/huge-sparse-space", test_huge_sparse_space);
  g_test_add_func("/strategy/exhaustive-order", test_exhaustive_order);
  g_test_add_func("/strategy/full-coverage", test_full_coverage);
  g_test_add_func("/strategy/determinism", test_determinism);
  g_test_add_func("/strategy/model-unranked", test_model_unranked);
  g_test_add_func("/strategy/seeds", test_seeds);
  g_test_add_func("/strategy/model-follows-ranking",
                  test_model_follows_ranking_until_trained);
  g_test_add_func("/strategy/seeds-older-knobs", test_seeds_older_knobs);
  g_test_add_func("/strategy/failures", test_failures);
  g_test_add_func("/strategy/resume", test_resume);
  g_test_add_func("/strategy/all-observed", test_all_observed);
  g_test_add_func("/strategy/env", test_env);
  g_test_add_func("/strategy/ten-million", test_ten_million);
  g_test_add_func("/strategy/register", test_register);
  g_test_add_func("/strategy/speed-smooth", test_speed_smooth);
  g_test_add_func("/strategy/speed-rugged", test_speed_rugged);
  g_test_add_func("/strategy/recorded-like", test_recorded_like);
  return g_test_run();
}
