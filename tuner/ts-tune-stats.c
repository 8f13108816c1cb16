/* ts-tune-stats.c — Mann–Whitney U on timing samples. Timings are skewed (a floor plus
 * occasional interference) and far from normal, so a rank test is the right tool: it compares
 * the two sets without assuming a distribution, and one descheduled sample cannot move it. */
#include "ts-tune-stats.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
  double v;
  int from_a;
} Tagged;

static int
cmp_tagged(const void *x, const void *y)
{
  double a = ((const Tagged *)x)->v, b = ((const Tagged *)y)->v;
  return (a > b) - (a < b);
}

static int
cmp_double(const void *x, const void *y)
{
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

double
ts_stats_median(const double *v, guint n)
{
  if (n == 0)
    return NAN;
  g_autofree double *s = g_memdup2(v, sizeof(double) * n);
  qsort(s, n, sizeof(double), cmp_double);
  return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

static double
quantile_sorted(const double *s, guint n, double q)
{
  double pos = q * (n - 1);
  guint lo = (guint)pos;
  guint hi = MIN(lo + 1, n - 1);
  return s[lo] + (pos - lo) * (s[hi] - s[lo]);
}

double
ts_stats_rel_iqr(const double *v, guint n)
{
  if (n < 2)
    return NAN;
  g_autofree double *s = g_memdup2(v, sizeof(double) * n);
  qsort(s, n, sizeof(double), cmp_double);
  double med = quantile_sorted(s, n, 0.5);
  return (quantile_sorted(s, n, 0.75) - quantile_sorted(s, n, 0.25)) / med;
}

double
ts_stats_mann_whitney_less(const double *a, guint na, const double *b, guint nb)
{
  if (na < 3 || nb < 3)
    return 1.0;
  guint n = na + nb;
  g_autofree Tagged *t = g_new(Tagged, n);
  for (guint i = 0; i < na; i++)
    t[i] = (Tagged){a[i], 1};
  for (guint i = 0; i < nb; i++)
    t[na + i] = (Tagged){b[i], 0};
  qsort(t, n, sizeof(Tagged), cmp_tagged);

  /* Mid-ranks for ties; the tie term corrects the variance. */
  double rank_sum_a = 0, tie_term = 0;
  for (guint i = 0; i < n;) {
    guint j = i;
    while (j + 1 < n && t[j + 1].v == t[i].v)
      j++;
    double mid = (i + j) / 2.0 + 1.0;
    double k = j - i + 1;
    tie_term += k * k * k - k;
    for (guint m = i; m <= j; m++)
      if (t[m].from_a)
        rank_sum_a += mid;
    i = j + 1;
  }
  double u_a = rank_sum_a - na * (na + 1) / 2.0; /* small when a's values are small */
  double mean = na * (double)nb / 2.0;
  double var = na * (double)nb / 12.0 * ((n + 1) - tie_term / (n * (n - 1.0)));
  if (var <= 0)
    return 1.0;
  double z = (u_a - mean + 0.5) / sqrt(var); /* +0.5: continuity correction towards the null */
  return 0.5 * erfc(-z / M_SQRT2);
}

gboolean
ts_stats_faster(const double *cand, guint n_cand, const double *best, guint n_best, double alpha)
{
  if (ts_stats_median(cand, n_cand) >= ts_stats_median(best, n_best))
    return FALSE;
  return ts_stats_mann_whitney_less(cand, n_cand, best, n_best) < alpha;
}
