/* ts-cost-coll.c — α–β–γ terms of collective algorithms, their fit and the datasheet presets
 * (ts-cost-coll.h). */
#include "ts-cost-coll.h"

#include <math.h>
#include <string.h>

#include "ts-cost.h"

static double
lg(guint n)
{
  return n > 1 ? ceil(log2((double)n)) : 0.0;
}

/* Recursive doubling and halving on a count that is not a power of two: the ranks past the
 * largest power fold their data into a partner first and get the result back last, two more
 * steps of the whole vector. */
static double
extra(guint n)
{
  return (n & (n - 1)) != 0 ? 2.0 : 0.0;
}

gboolean
ts_cost_coll_terms(TsCollKind kind, const char *a, guint n, double S, double segment,
                   double *steps, double *link, double *reduced)
{
  double N = n, L = lg(n), frac = n ? (N - 1) / N : 0;
  double st = NAN, li = NAN, re = 0;
  switch (kind) {
  case TS_COLL_ALL_REDUCE:
    if (strcmp(a, "basic_linear") == 0) {
      /* reduce to the root then broadcast from it, one peer at a time: the root's link
       * carries everything. */
      st = 2 * (N - 1), li = 2 * (N - 1) * S, re = (N - 1) * S;
    } else if (strcmp(a, "nonoverlapping") == 0) {
      /* a binomial-tree reduce, then a binomial-tree broadcast */
      st = 2 * L, li = 2 * L * S, re = L * S;
    } else if (strcmp(a, "recursive_doubling") == 0) {
      st = L + extra(n), li = (L + extra(n)) * S, re = (L + extra(n) / 2) * S;
    } else if (strcmp(a, "ring") == 0 || strcmp(a, "segmented_ring") == 0) {
      /* reduce-scatter then all-gather around the ring: 2(n-1) steps of S/n; the segmented
       * ring sends each block in segments, one message each. */
      double k = segment > 0 && n ? MAX(1.0, ceil(S / N / segment)) : 1.0;
      st = 2 * (N - 1) * k, li = 2 * frac * S, re = frac * S;
    } else if (strcmp(a, "rabenseifner") == 0) {
      /* reduce-scatter by recursive halving, all-gather by recursive doubling */
      st = 2 * L + extra(n), li = 2 * frac * S + extra(n) * S, re = frac * S + extra(n) / 2 * S;
    } else if (strcmp(a, "tree") == 0) {
      /* NCCL's double binary tree, pipelined: up and down the depth, bandwidth-optimal in the
       * limit */
      st = 2 * L, li = 2 * frac * S, re = frac * S;
    }
    break;
  case TS_COLL_ALL_GATHER:
    /* every rank must receive the n-1 other blocks of S whatever the algorithm; they differ
     * in how many steps it takes */
    li = (N - 1) * S;
    if (strcmp(a, "linear") == 0 || strcmp(a, "ring") == 0)
      st = N - 1;
    else if (strcmp(a, "bruck") == 0 || strcmp(a, "recursive_doubling") == 0)
      st = L;
    else if (strcmp(a, "neighbor") == 0)
      st = N / 2;
    else if (strcmp(a, "two_proc") == 0)
      st = 1;
    break;
  case TS_COLL_REDUCE_SCATTER:
    if (strcmp(a, "non-overlapping") == 0) {
      /* a binomial-tree reduce of the whole vector, then a linear scatter of its blocks */
      st = L + N - 1, li = L * S + frac * S, re = L * S;
    } else if (strcmp(a, "recursive_halving") == 0 || strcmp(a, "butterfly") == 0) {
      st = L + extra(n), li = frac * S + extra(n) / 2 * S, re = frac * S + extra(n) / 2 * S;
    } else if (strcmp(a, "ring") == 0) {
      st = N - 1, li = frac * S, re = frac * S;
    }
    break;
  }
  if (isnan(st) || isnan(li))
    return FALSE;
  *steps = st;
  *link = li;
  *reduced = re;
  return TRUE;
}

double
ts_cost_coll_predict(const TsCollLinks *m, TsCollKind kind, const char *algorithm, guint n,
                     double bytes, double segment)
{
  double st, li, re;
  if (!ts_cost_coll_terms(kind, algorithm, n, bytes, segment, &st, &li, &re))
    return NAN;
  return m->base_s + st * m->alpha_s + li * m->beta_s_per_b + re * m->gamma_s_per_b;
}

/* Solves the k x k system a x = b (Gaussian elimination with partial pivoting); FALSE when it
 * is singular. */
static gboolean
solve(double a[4][4], double b[4], guint k, double x[4])
{
  for (guint c = 0; c < k; c++) {
    guint p = c;
    for (guint r = c + 1; r < k; r++)
      if (fabs(a[r][c]) > fabs(a[p][c]))
        p = r;
    if (fabs(a[p][c]) < 1e-300)
      return FALSE;
    for (guint j = 0; j < k; j++) {
      double t = a[c][j];
      a[c][j] = a[p][j];
      a[p][j] = t;
    }
    double t = b[c];
    b[c] = b[p];
    b[p] = t;
    for (guint r = c + 1; r < k; r++) {
      double f = a[r][c] / a[c][c];
      for (guint j = c; j < k; j++)
        a[r][j] -= f * a[c][j];
      b[r] -= f * b[c];
    }
  }
  for (gint c = (gint)k - 1; c >= 0; c--) {
    double s = b[c];
    for (guint j = (guint)c + 1; j < k; j++)
      s -= a[c][j] * x[j];
    x[c] = s / a[c][c];
  }
  return TRUE;
}

typedef struct {
  double v[4];
} Row;

static gint
compare_doubles(gconstpointer a, gconstpointer b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

gboolean
ts_cost_coll_fit(const TsCollObservation *obs, guint n_obs, TsCollLinks *links, guint *n_used,
                 double *median_rel_err, GError **error)
{
  /* Rows of (1, steps, link bytes, reduced bytes) / measured: a least-squares fit of them to 1
   * minimises the relative errors, so microsecond and second timings weigh alike. */
  g_autoptr(GArray) rows = g_array_new(FALSE, FALSE, sizeof(Row));
  for (guint i = 0; i < n_obs; i++) {
    Row r = {{1}};
    if (!(obs[i].seconds > 0) ||
        !ts_cost_coll_terms(obs[i].kind, obs[i].algorithm, obs[i].ranks, obs[i].bytes,
                            obs[i].segment, &r.v[1], &r.v[2], &r.v[3]))
      continue;
    for (guint j = 0; j < 4; j++)
      r.v[j] /= obs[i].seconds;
    g_array_append_val(rows, r);
  }
  if (n_used)
    *n_used = rows->len;
  if (rows->len < 3) {
    g_set_error(error, TS_COST_ERROR, TS_COST_ERROR_DATA,
                "%u measured trials of modelled algorithms; the α–β fit needs at least 3 "
                "(tune a collective at a few sizes first)", rows->len);
    return FALSE;
  }
  /* None of the four may be negative: the best fit over every subset of them that comes out
   * non-negative (16 small solves). */
  double best_res = INFINITY, best[4] = {0};
  for (guint mask = 1; mask < 16; mask++) {
    guint idx[4], k = 0;
    for (guint j = 0; j < 4; j++)
      if (mask & (1u << j))
        idx[k++] = j;
    double a[4][4] = {{0}}, b[4] = {0}, x[4] = {0};
    for (guint r = 0; r < rows->len; r++) {
      const double *row = g_array_index(rows, Row, r).v;
      for (guint p = 0; p < k; p++) {
        b[p] += row[idx[p]];
        for (guint q = 0; q < k; q++)
          a[p][q] += row[idx[p]] * row[idx[q]];
      }
    }
    if (!solve(a, b, k, x))
      continue;
    gboolean feasible = TRUE;
    double full[4] = {0};
    for (guint p = 0; p < k; p++) {
      feasible = feasible && x[p] >= 0;
      full[idx[p]] = x[p];
    }
    if (!feasible)
      continue;
    double res = 0;
    for (guint r = 0; r < rows->len; r++) {
      const double *row = g_array_index(rows, Row, r).v;
      double e = row[0] * full[0] + row[1] * full[1] + row[2] * full[2] + row[3] * full[3] - 1;
      res += e * e;
    }
    if (res < best_res) {
      best_res = res;
      memcpy(best, full, sizeof best);
    }
  }
  if (!isfinite(best_res)) {
    g_set_error(error, TS_COST_ERROR, TS_COST_ERROR_DATA,
                "the α–β fit found no non-negative solution for %u trials", rows->len);
    return FALSE;
  }
  *links = (TsCollLinks){
    .base_s = best[0], .alpha_s = best[1], .beta_s_per_b = best[2], .gamma_s_per_b = best[3]};
  if (median_rel_err) {
    g_autoptr(GArray) errs = g_array_new(FALSE, FALSE, sizeof(double));
    for (guint r = 0; r < rows->len; r++) {
      const double *row = g_array_index(rows, Row, r).v;
      double e = fabs(row[0] * best[0] + row[1] * best[1] + row[2] * best[2] + row[3] * best[3]
                      - 1);
      g_array_append_val(errs, e);
    }
    g_array_sort(errs, compare_doubles);
    *median_rel_err = errs->len % 2 ? g_array_index(errs, double, errs->len / 2)
                                    : (g_array_index(errs, double, errs->len / 2 - 1) +
                                       g_array_index(errs, double, errs->len / 2)) / 2;
  }
  return TRUE;
}

static const struct {
  const char *name;
  TsCollLinks links;
  const char *about;
} presets[] = {
  {"h100-nvlink",
   {.alpha_s = 3.4e-6, .beta_s_per_b = 1 / 450e9, .gamma_s_per_b = 0, .base_s = 8.4e-6},
   "H100 SXM through NVSwitch: NVLink 4 at 900 GB/s a GPU both ways (450 GB/s each way); "
   "NCCL's ring latencies over NVLink, Simple protocol: 8.4 us a call, 3.4 us a step"},
  {"gb200-nvl72",
   {.alpha_s = 3.4e-6, .beta_s_per_b = 1 / 900e9, .gamma_s_per_b = 0, .base_s = 8.4e-6},
   "GB200 NVL72: NVLink 5 at 1.8 TB/s a GPU both ways (900 GB/s each way), 72 GPUs in one "
   "NVLink domain; NCCL's ring latencies over NVLink as for H100"},
};

gboolean
ts_cost_coll_link_preset(const char *name, TsCollLinks *links, const char **about)
{
  for (guint i = 0; i < G_N_ELEMENTS(presets); i++)
    if (g_strcmp0(name, presets[i].name) == 0) {
      *links = presets[i].links;
      if (about)
        *about = presets[i].about;
      return TRUE;
    }
  return FALSE;
}

const char *const *
ts_cost_coll_link_presets(void)
{
  static const char *const names[] = {"h100-nvlink", "gb200-nvl72", NULL};
  return names;
}
