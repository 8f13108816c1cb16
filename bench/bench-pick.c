/* bench-pick.c — the sweep and the finals that pick a benchmark's best point (bench-pick.h).
 * One short run of each point is a sample of a busy machine at one moment: its fastest point
 * is partly luck (on the Zen 4 VM a 1-row layernorm tile won a sweep, then ran 0.5x the rows it
 * beat when the two were timed side by side), so the fastest few are run again together. */
#include "bench-pick.h"

#include <math.h>

#include "ts-tune-stats.h"

static void
candidate_clear(gpointer p)
{
  g_free(((BenchCandidate *)p)->point);
}

static gint
candidate_cmp(gconstpointer a, gconstpointer b)
{
  const double x = ((const BenchCandidate *)a)->median_ns;
  const double y = ((const BenchCandidate *)b)->median_ns;
  return (x > y) - (x < y);
}

GArray *
bench_sweep(TsOpInstance *inst, TsBackend *backend, TsSchedSpace *space, gint64 threads,
            const TsRunOptions *options, const char *who, GError **error)
{
  g_autoptr(TsSchedEnv) env = ts_op_instance_env(inst, ts_backend_describe(backend));
  g_autoptr(TsSchedIter) it = ts_sched_iter_new(space, env);
  g_autoptr(GArray) all = g_array_new(FALSE, FALSE, sizeof(BenchCandidate));
  g_array_set_clear_func(all, candidate_clear);
  TsSchedPoint *p = NULL;
  guint points = 0;
  while (ts_sched_iter_next(it, &p, error)) {
    g_autoptr(TsSchedPoint) point = p;
    if (threads >= 0 && ts_sched_point_get_int(point, "threads", 1) != threads)
      continue;
    points++;
    g_autoptr(TsTrialResult) r = ts_op_run(inst, backend, point, options, error);
    if (r == NULL)
      return NULL;
    if (r->status != TS_TRIAL_OK) {
      g_printerr("%s: skipping a candidate: %s\n", who, r->message);
      continue;
    }
    BenchCandidate c = {ts_sched_point_to_string(point), r->median_ns, r->samples_ns->len};
    g_array_append_val(all, c);
  }
  if (error && *error)
    return NULL;
  /* Said in the results, not only on stderr: a row of "no point verified" would otherwise read
   * as candidates that all failed. */
  if (points == 0)
    g_print("# %s: no point of the sweep space runs on this device (%s): its constraints, such "
            "as vector <= simd_floats, leave none\n",
            who, ts_backend_describe(backend)->name);
  g_array_sort(all, candidate_cmp);
  return g_steal_pointer(&all);
}

gboolean
bench_point_matches(const TsSchedPoint *point, const TsSchedPoint *only)
{
  for (guint i = 0; only && i < ts_sched_point_n_knobs(only); i++) {
    const char *name = ts_sched_point_knob_name(only, i);
    TsSchedValue v = ts_sched_point_knob_value(only, i);
    if (v.kind == TS_SCHED_STR ? g_strcmp0(ts_sched_point_get_str(point, name, NULL), v.s) != 0
                               : ts_sched_point_get_int(point, name, G_MININT64) != v.i)
      return FALSE;
  }
  return TRUE;
}

TsOpTimer *
bench_point_timer(TsOpInstance *inst, TsBackend *backend, const TsSchedPoint *point,
                  TsOpTimer *peer, TsModule **module, GError **error)
{
  *module = ts_op_compile(inst, backend, point, error);
  if (*module == NULL)
    return NULL;
  g_autoptr(TsTrialResult) verified = NULL;
  TsOpTimer *timer = peer ? ts_op_timer_new_sibling(peer, inst, *module, NULL, &verified, error)
                          : ts_op_timer_new(inst, backend, *module, NULL, &verified, error);
  if (timer == NULL && error && *error == NULL) {
    g_autofree char *pt = ts_sched_point_to_string(point);
    g_set_error(error, g_quark_from_static_string("bench"), 1, "%s failed: %s", pt,
                verified ? verified->message : "?");
  }
  return timer;
}

char *
bench_final_pick(TsOpInstance *inst, TsBackend *backend, GArray *candidates,
                 const TsSchedPoint *only, guint calls, GError **error)
{
  TsModule *modules[BENCH_FINALISTS] = {NULL};
  TsOpTimer *timers[BENCH_FINALISTS] = {NULL};
  const char *names[BENCH_FINALISTS];
  double med[BENCH_FINALISTS][BENCH_FINAL_ROUNDS], s[64];
  guint n = 0;
  const char *won = NULL;
  gboolean ok = TRUE;
  for (guint i = 0; ok && i < candidates->len && n < BENCH_FINALISTS; i++) {
    const BenchCandidate *c = &g_array_index(candidates, BenchCandidate, i);
    g_autoptr(TsSchedPoint) point = ts_sched_point_parse(c->point, error);
    if (point == NULL) {
      ok = FALSE;
      break;
    }
    if (!bench_point_matches(point, only))
      continue;
    g_autoptr(GError) local = NULL;
    timers[n] = bench_point_timer(inst, backend, point, n ? timers[0] : NULL, &modules[n],
                                  &local);
    if (timers[n] == NULL) {
      g_printerr("bench: finalist left out: %s\n", local ? local->message : "?");
      g_clear_pointer(&modules[n], ts_module_free);
      continue;
    }
    names[n++] = c->point;
  }
  calls = MIN(calls, G_N_ELEMENTS(s));
  for (guint r = 0; ok && r < BENCH_FINAL_ROUNDS; r++)
    for (guint i = 0; ok && i < n; i++) {
      ok = ts_op_timer_sample(timers[i], r == 0, calls, s, error);
      med[i][r] = ok ? ts_stats_median(s, calls) : NAN;
    }
  double best = INFINITY;
  for (guint i = 0; ok && i < n; i++) {
    const double m = ts_stats_median(med[i], BENCH_FINAL_ROUNDS);
    if (m < best) {
      best = m;
      won = names[i];
    }
  }
  char *result = ok ? g_strdup(won) : NULL;
  /* siblings before the timer whose buffers they borrow, each module after its timer */
  for (guint i = BENCH_FINALISTS; i > 0; i--) {
    g_clear_pointer(&timers[i - 1], ts_op_timer_free);
    g_clear_pointer(&modules[i - 1], ts_module_free);
  }
  return result;
}

char *
bench_best_point(TsOpInstance *inst, TsBackend *backend, TsSchedSpace *space, gint64 threads,
                 double target_ms, const char *who, guint *calls, GArray **candidates,
                 GError **error)
{
  TsRunOptions opt;
  ts_run_options_init(&opt);
  opt.target_ms = target_ms;
  g_autoptr(GArray) cands = bench_sweep(inst, backend, space, threads, &opt, who, error);
  *calls = cands && cands->len ? CLAMP(g_array_index(cands, BenchCandidate, 0).samples, 3, 15)
                               : 3;
  char *best = cands ? bench_final_pick(inst, backend, cands, NULL, *calls, error) : NULL;
  if (candidates)
    *candidates = g_steal_pointer(&cands);
  return best;
}

guint
bench_ratio(const double *num, const double *den, guint n, double *median, double *lo,
            double *hi)
{
  g_autofree double *ratio = g_new(double, MAX(n, 1));
  guint k = 0;
  for (guint r = 0; r < n; r++)
    if (!isnan(num[r]) && !isnan(den[r]))
      ratio[k++] = num[r] / den[r];
  if (k == 0)
    return 0;
  *lo = *hi = ratio[0];
  for (guint i = 1; i < k; i++) {
    *lo = MIN(*lo, ratio[i]);
    *hi = MAX(*hi, ratio[i]);
  }
  *median = ts_stats_median(ratio, k);
  return k;
}

double
bench_median_finite(const double *v, guint n)
{
  g_autofree double *kept = g_new(double, MAX(n, 1));
  guint k = 0;
  for (guint i = 0; i < n; i++)
    if (!isnan(v[i]))
      kept[k++] = v[i];
  return k > 0 ? ts_stats_median(kept, k) : NAN;
}

char *
bench_ratio_text(const double *num, const double *den, guint n)
{
  double median, lo, hi;
  if (bench_ratio(num, den, n, &median, &lo, &hi) == 0)
    return NULL;
  return g_strdup_printf("%.2f [%.2f, %.2f]", median, lo, hi);
}
