/* ts-cost-rank.c — how good a ranking is: Kendall's tau-b against the measured order, the top-1
 * regret (what trusting the model's first pick costs), and the recall of the true top k among
 * the predicted top k.
 *
 * Conventions shared by all three: a NaN score ranks below every other score (a model that
 * cannot score a row should not pick it); a failed row (infinite or NaN time) is slower than
 * every working one, and failed rows tie with each other; ties in order are broken by index, so
 * the same inputs always give the same answer. */
#include "ts-cost-private.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Scores and times turned into two "larger = better" keys without NaN, so == and < mean what
 * they say. */
static double
score_key(double s)
{
  return isnan(s) ? -INFINITY : s;
}

static double
time_key(double t)
{
  return isnan(t) ? -INFINITY : -t;
}

typedef struct {
  double x, y;
} Pair;

static int
pair_cmp(const void *a, const void *b)
{
  const Pair *p = a, *q = b;
  if (p->x != q->x)
    return p->x < q->x ? -1 : 1;
  if (p->y != q->y)
    return p->y < q->y ? -1 : 1;
  return 0;
}

/* Sorts y[0 .. n) ascending (merge sort through tmp) and returns the number of inversions
 * (i < j with y[i] > y[j]): with the pairs sorted by x first, exactly the discordant pairs. */
static guint64
sort_count_inversions(double *y, double *tmp, gsize n)
{
  guint64 swaps = 0;
  for (gsize width = 1; width < n; width *= 2) {
    for (gsize lo = 0; lo < n; lo += 2 * width) {
      gsize mid = MIN(lo + width, n), hi = MIN(lo + 2 * width, n);
      gsize i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        if (y[j] < y[i]) {
          swaps += mid - i;
          tmp[k++] = y[j++];
        } else {
          tmp[k++] = y[i++];
        }
      }
      while (i < mid)
        tmp[k++] = y[i++];
      while (j < hi)
        tmp[k++] = y[j++];
    }
    memcpy(y, tmp, n * sizeof *y);
  }
  return swaps;
}

/* t(t-1)/2: the pairs among a run of t tied items. */
static guint64
run_pairs(guint64 t)
{
  return t * (t - 1) / 2;
}

/* Knight's O(n log n) algorithm: sort by (x, y), count the ties in x and in (x, y), then the
 * discordant pairs are the inversions of y, and the ties in y are counted once y is sorted. */
double
ts_cost_kendall_tau(const double *scores, const double *times, guint n)
{
  g_return_val_if_fail(n == 0 || (scores != NULL && times != NULL), NAN);
  if (n < 2)
    return NAN;
  g_autofree Pair *p = g_new(Pair, n);
  for (guint i = 0; i < n; i++)
    p[i] = (Pair){score_key(scores[i]), time_key(times[i])};
  qsort(p, n, sizeof *p, pair_cmp);

  /* n1: pairs tied on the score; n3: tied on both. */
  guint64 n0 = run_pairs(n), n1 = 0, n3 = 0, run_x = 1, run_xy = 1;
  for (guint i = 1; i <= n; i++) {
    gboolean same_x = i < n && p[i].x == p[i - 1].x;
    if (same_x && p[i].y == p[i - 1].y) {
      run_xy++;
    } else {
      n3 += run_pairs(run_xy);
      run_xy = 1;
    }
    if (same_x) {
      run_x++;
    } else {
      n1 += run_pairs(run_x);
      run_x = 1;
    }
  }
  g_autofree double *y = g_new(double, n);
  g_autofree double *tmp = g_new(double, n);
  for (guint i = 0; i < n; i++)
    y[i] = p[i].y;
  guint64 discordant = sort_count_inversions(y, tmp, n);
  /* n2: pairs tied on the time, counted once y is sorted. */
  guint64 n2 = 0, run_y = 1;
  for (guint i = 1; i <= n; i++) {
    if (i < n && y[i] == y[i - 1]) {
      run_y++;
      continue;
    }
    n2 += run_pairs(run_y);
    run_y = 1;
  }

  if (n1 == n0 || n2 == n0)
    return NAN;
  /* Concordant + discordant = n0 - n1 - n2 + n3 (inclusion-exclusion over the ties). */
  double c_minus_d = (double)(n0 - n1 - n2 + n3) - 2.0 * (double)discordant;
  return c_minus_d / sqrt((double)(n0 - n1) * (double)(n0 - n2));
}

/* The index of the highest score (NaN lowest), ties to the lowest index. */
static guint
argmax_score(const double *scores, guint n)
{
  guint best = 0;
  for (guint i = 1; i < n; i++)
    if (score_key(scores[i]) > score_key(scores[best]))
      best = i;
  return best;
}

double
ts_cost_top1_regret(const double *scores, const double *times, guint n)
{
  g_return_val_if_fail(n == 0 || (scores != NULL && times != NULL), NAN);
  double best = INFINITY;
  for (guint i = 0; i < n; i++)
    if (isfinite(times[i]) && times[i] < best)
      best = times[i];
  if (!isfinite(best))
    return NAN; /* nothing worked: no pick can be judged */
  double picked = times[argmax_score(scores, n)];
  if (!isfinite(picked))
    return INFINITY;
  return picked / best - 1.0;
}

typedef struct {
  double key; /* larger first */
  guint index;
} Ranked;

static int
ranked_cmp(const void *a, const void *b)
{
  const Ranked *p = a, *q = b;
  if (p->key != q->key)
    return p->key > q->key ? -1 : 1;
  return p->index < q->index ? -1 : p->index > q->index;
}

double
ts_cost_recall(const double *scores, const double *times, guint n, guint k_true, guint k_pred)
{
  g_return_val_if_fail(n == 0 || (scores != NULL && times != NULL), NAN);
  g_autofree Ranked *by_time = g_new(Ranked, MAX(n, 1));
  g_autofree Ranked *by_score = g_new(Ranked, MAX(n, 1));
  guint n_finite = 0;
  for (guint i = 0; i < n; i++) {
    if (isfinite(times[i]))
      by_time[n_finite++] = (Ranked){time_key(times[i]), i};
    by_score[i] = (Ranked){score_key(scores[i]), i};
  }
  /* The true top is taken among working rows only: a failed row is never worth finding. */
  k_true = MIN(k_true, n_finite);
  k_pred = MIN(k_pred, n);
  if (k_true == 0)
    return NAN;
  qsort(by_time, n_finite, sizeof *by_time, ranked_cmp);
  qsort(by_score, n, sizeof *by_score, ranked_cmp);
  g_autofree gboolean *picked = g_new0(gboolean, n);
  for (guint i = 0; i < k_pred; i++)
    picked[by_score[i].index] = TRUE;
  guint found = 0;
  for (guint i = 0; i < k_true; i++)
    found += picked[by_time[i].index];
  return (double)found / k_true;
}
