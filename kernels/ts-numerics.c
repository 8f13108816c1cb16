/* ts-numerics.c — host-side numerics: random inputs, NaN poisoning, f64-accumulating
 * references and the relative-error check (the bf16/f16 conversions are in ts-half.c).
 */
#include "ts-numerics.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>


gsize
ts_numerics_elem_size(TsDtype dtype)
{
  switch (dtype) {
  case TS_DTYPE_F64:
    return 8;
  case TS_DTYPE_F32:
    return 4;
  case TS_DTYPE_BF16:
  case TS_DTYPE_F16:
    return 2;
  case TS_DTYPE_FP8_E4M3:
  case TS_DTYPE_FP8_E5M2:
    return 1;
  default:
    return 0;
  }
}

double
ts_numerics_get(TsDtype dtype, const void *buf, gsize i)
{
  g_return_val_if_fail(buf != NULL, NAN);
  switch (dtype) {
  case TS_DTYPE_F64:
    return ((const double *)buf)[i];
  case TS_DTYPE_F32:
    return ((const float *)buf)[i];
  case TS_DTYPE_BF16:
    return ts_bf16_to_f32(((const uint16_t *)buf)[i]);
  case TS_DTYPE_F16:
    return ts_f16_to_f32(((const uint16_t *)buf)[i]);
  case TS_DTYPE_FP8_E4M3:
    return ts_fp8_e4m3_to_f32(((const uint8_t *)buf)[i]);
  case TS_DTYPE_FP8_E5M2:
    return ts_fp8_e5m2_to_f32(((const uint8_t *)buf)[i]);
  default:
    g_return_val_if_reached(NAN);
  }
}

void
ts_numerics_set(TsDtype dtype, void *buf, gsize i, double value)
{
  g_return_if_fail(buf != NULL);
  /* 16-bit types round from f32: double -> f32 -> f16 can double-round, but only on values
   * within 2^-29 relative of a tie, far below every tolerance used here. */
  switch (dtype) {
  case TS_DTYPE_F64:
    ((double *)buf)[i] = value;
    break;
  case TS_DTYPE_F32:
    ((float *)buf)[i] = (float)value;
    break;
  case TS_DTYPE_BF16:
    ((uint16_t *)buf)[i] = ts_f32_to_bf16((float)value);
    break;
  case TS_DTYPE_F16:
    ((uint16_t *)buf)[i] = ts_f32_to_f16((float)value);
    break;
  /* fp8 saturates, as a quantizing cast does (cvt.rn.satfinite): a value past the format's
   * range is its largest finite value, never an Inf or NaN the data did not have. */
  case TS_DTYPE_FP8_E4M3:
    ((uint8_t *)buf)[i] = ts_f32_to_fp8_e4m3((float)value, 1);
    break;
  case TS_DTYPE_FP8_E5M2:
    ((uint8_t *)buf)[i] = ts_f32_to_fp8_e5m2((float)value, 1);
    break;
  default:
    g_return_if_reached();
  }
}

void
ts_numerics_fill_random(TsDtype dtype, void *buf, gsize n, GRand *rng, double lo, double hi)
{
  g_return_if_fail(buf != NULL || n == 0);
  g_return_if_fail(rng != NULL);
  g_return_if_fail(ts_numerics_elem_size(dtype) != 0);
  gboolean any_nonzero = FALSE;
  for (gsize i = 0; i < n; i++) {
    ts_numerics_set(dtype, buf, i, lo + (hi - lo) * g_rand_double(rng));
    any_nonzero = any_nonzero || ts_numerics_get(dtype, buf, i) != 0.0;
  }
  /* An all-zero input makes every kernel look right (0 * anything = 0), so never hand one out. */
  if (n > 0 && !any_nonzero) {
    double v = lo + 0.75 * (hi - lo);
    ts_numerics_set(dtype, buf, 0, v);
    if (ts_numerics_get(dtype, buf, 0) == 0.0)
      ts_numerics_set(dtype, buf, 0, 1.0);
  }
}

void
ts_numerics_poison(TsDtype dtype, void *buf, gsize n)
{
  g_return_if_fail(buf != NULL || n == 0);
  g_return_if_fail(ts_numerics_elem_size(dtype) != 0);
  for (gsize i = 0; i < n; i++)
    ts_numerics_set(dtype, buf, i, NAN);
}

#define AT(buf, i) ts_numerics_get(dtype, (buf), (gsize)(i))

/* Row `row` of a [rows][cols] matrix widened to doubles. */
static void
widen_row(TsDtype dtype, const void *x, gint64 row, gint64 cols, double *restrict out)
{
  for (gint64 j = 0; j < cols; j++)
    out[j] = AT(x, row * cols + j);
}

void
ts_ref_gemm(TsDtype dtype, const void *a, const void *b, double *c, gint64 m, gint64 n, gint64 k)
{
  g_return_if_fail(a != NULL && b != NULL && c != NULL);
  g_return_if_fail(m >= 0 && n >= 0 && k >= 0);
  /* Widen B once and walk it row by row (i-p-j order): the naive i-j-p order strides down
   * B's columns and takes minutes at 2048^3, which the tuner would pay per workload. Rows of C
   * are independent, so the cores share them. */
  double *bd = g_new(double, (gsize)k * (gsize)n);
#pragma omp parallel for schedule(static)
  for (gint64 p = 0; p < k; p++)
    widen_row(dtype, b, p, n, bd + p * n);
#pragma omp parallel for schedule(dynamic, 4)
  for (gint64 i = 0; i < m; i++) {
    double *restrict crow = c + i * n;
    for (gint64 j = 0; j < n; j++)
      crow[j] = 0.0;
    for (gint64 p = 0; p < k; p++) {
      const double aip = AT(a, i * k + p);
      const double *restrict brow = bd + p * n;
      for (gint64 j = 0; j < n; j++)
        crow[j] += aip * brow[j];
    }
  }
  g_free(bd);
}

static int
cmp_gint64(gconstpointer a, gconstpointer b)
{
  gint64 x = *(const gint64 *)a, y = *(const gint64 *)b;
  return (x > y) - (x < y);
}

/* Sorts idx[0..n) and drops repeats; returns the new count. */
static gsize
sort_unique(gint64 *idx, gsize n)
{
  qsort(idx, n, sizeof *idx, cmp_gint64);
  gsize u = 0;
  for (gsize i = 0; i < n; i++)
    if (u == 0 || idx[i] != idx[u - 1])
      idx[u++] = idx[i];
  return u;
}

/* `want` distinct indices of [0, total), ascending: `fixed` first (those in range), the rest
 * drawn from rng; all of them when total <= want. */
static gint64 *
draw_indices(GRand *rng, gint64 total, gsize want, const gint64 *fixed, gsize n_fixed, gsize *n)
{
  if ((gint64)want >= total) {
    gint64 *all = g_new(gint64, MAX(total, 1));
    for (gint64 i = 0; i < total; i++)
      all[i] = i;
    *n = (gsize)total;
    return all;
  }
  gint64 *idx = g_new(gint64, want);
  gsize u = 0;
  for (gsize i = 0; i < n_fixed; i++)
    if (fixed[i] >= 0 && fixed[i] < total)
      idx[u++] = fixed[i];
  u = sort_unique(idx, u);
  /* Redraw until distinct: want is far below total here, so few draws repeat. */
  while (u < want) {
    gsize before = u;
    for (; u < want; u++)
      idx[u] = (gint64)(g_rand_double(rng) * (double)total) % total;
    u = sort_unique(idx, u);
    if (u == before)
      break;
  }
  *n = u;
  return idx;
}

/* Whole rows of C, one pass over B: the cores split the columns, and each widens its stretch of
 * B's row p once for all the sampled rows. */
#define GEMM_COL_CHUNK 512

static void
gemm_rows(TsDtype dtype, const void *a, const void *b, double *c, gint64 n, gint64 k,
          const gint64 *rows, gsize n_rows)
{
  const gint64 n_chunks = (n + GEMM_COL_CHUNK - 1) / GEMM_COL_CHUNK;
#pragma omp parallel for schedule(dynamic, 1)
  for (gint64 chunk = 0; chunk < n_chunks; chunk++) {
    const gint64 j0 = chunk * GEMM_COL_CHUNK, w = MIN(GEMM_COL_CHUNK, n - j0);
    double *acc = g_new0(double, n_rows * (gsize)w);
    double *brow = g_new(double, w);
    for (gint64 p = 0; p < k; p++) {
      for (gint64 j = 0; j < w; j++)
        brow[j] = AT(b, p * n + j0 + j);
      for (gsize r = 0; r < n_rows; r++) {
        const double arp = AT(a, rows[r] * k + p);
        double *restrict dst = acc + r * (gsize)w;
        const double *restrict src = brow;
        for (gint64 j = 0; j < w; j++)
          dst[j] += arp * src[j];
      }
    }
    for (gsize r = 0; r < n_rows; r++)
      memcpy(c + rows[r] * n + j0, acc + r * (gsize)w, sizeof(double) * (gsize)w);
    g_free(acc);
    g_free(brow);
  }
}

/* Whole columns of C: the sampled columns of B gathered once ([k][n_cols]), then one pass over
 * A, the cores splitting its rows. */
static void
gemm_cols(TsDtype dtype, const void *a, const void *b, double *c, gint64 m, gint64 n, gint64 k,
          const gint64 *cols, gsize n_cols)
{
  double *bc = g_new(double, (gsize)k * n_cols);
  for (gint64 p = 0; p < k; p++)
    for (gsize q = 0; q < n_cols; q++)
      bc[p * (gint64)n_cols + (gint64)q] = AT(b, p * n + cols[q]);
#pragma omp parallel
  {
    double *arow = g_new(double, MAX(k, 1));
    double *acc = g_new(double, n_cols);
#pragma omp for schedule(static)
    for (gint64 i = 0; i < m; i++) {
      widen_row(dtype, a, i, k, arow);
      for (gsize q = 0; q < n_cols; q++)
        acc[q] = 0.0;
      for (gint64 p = 0; p < k; p++) {
        const double aip = arow[p];
        const double *restrict src = bc + p * (gint64)n_cols;
        double *restrict dst = acc;
        for (gsize q = 0; q < n_cols; q++)
          dst[q] += aip * src[q];
      }
      for (gsize q = 0; q < n_cols; q++)
        c[i * n + cols[q]] = acc[q];
    }
    g_free(arow);
    g_free(acc);
  }
  g_free(bc);
}

/* Single elements (flat indices into C): p outermost, so B's row p stays in cache while every
 * element takes its term, and each element's cache line of A serves the next p too. */
static void
gemm_elems(TsDtype dtype, const void *a, const void *b, double *c, gint64 n, gint64 k,
           const gint64 *elems, gsize n_elems)
{
#pragma omp parallel
  {
    double *acc = g_new0(double, MAX(n_elems, 1));
    const int nt = omp_get_num_threads(), t = omp_get_thread_num();
    const gsize e0 = n_elems * (gsize)t / (gsize)nt, e1 = n_elems * (gsize)(t + 1) / (gsize)nt;
    for (gint64 p = 0; p < k; p++)
      for (gsize e = e0; e < e1; e++) {
        const gint64 i = elems[e] / n, j = elems[e] % n;
        acc[e] += AT(a, i * k + p) * AT(b, p * n + j);
      }
    for (gsize e = e0; e < e1; e++)
      c[elems[e]] = acc[e];
    g_free(acc);
  }
}

void
ts_ref_gemm_sampled(TsDtype dtype, const void *a, const void *b, double *c, gint64 m, gint64 n,
                    gint64 k, guint32 seed)
{
  g_return_if_fail(a != NULL && b != NULL && c != NULL);
  g_return_if_fail(m >= 0 && n >= 0 && k >= 0);
  const gsize mn = (gsize)m * (gsize)n;
#pragma omp parallel for schedule(static)
  for (gsize i = 0; i < mn; i++)
    c[i] = NAN;
  if (mn == 0)
    return;
  g_autoptr(GRand) rng = g_rand_new_with_seed(seed);
  /* The first and the last row and column: the last ones sit in the partial tiles when a dim
   * is not a multiple of the kernel's tile, where tail bugs live. */
  const gint64 fixed_rows[] = {0, m - 1}, fixed_cols[] = {0, n - 1};
  gsize n_rows = 0, n_cols = 0, n_elems = 0;
  g_autofree gint64 *rows = draw_indices(rng, m, TS_REF_GEMM_SAMPLE_ROWS, fixed_rows,
                                         G_N_ELEMENTS(fixed_rows), &n_rows);
  g_autofree gint64 *cols = draw_indices(rng, n, TS_REF_GEMM_SAMPLE_COLS, fixed_cols,
                                         G_N_ELEMENTS(fixed_cols), &n_cols);
  g_autofree gint64 *elems = draw_indices(rng, (gint64)mn, TS_REF_GEMM_SAMPLE_ELEMS, NULL, 0,
                                          &n_elems);
  gemm_rows(dtype, a, b, c, n, k, rows, n_rows);
  gemm_cols(dtype, a, b, c, m, n, k, cols, n_cols);
  gemm_elems(dtype, a, b, c, n, k, elems, n_elems);
}

void
ts_ref_saxpy(TsDtype dtype, double alpha, const void *x, const void *y, double *z, gint64 n)
{
  g_return_if_fail(x != NULL && y != NULL && z != NULL && n >= 0);
  for (gint64 i = 0; i < n; i++)
    z[i] = alpha * AT(x, i) + AT(y, i);
}

void
ts_ref_reduce_sum(TsDtype dtype, const void *x, double *y, gint64 rows, gint64 cols)
{
  g_return_if_fail(x != NULL && y != NULL && rows >= 0 && cols >= 0);
#pragma omp parallel for schedule(static)
  for (gint64 r = 0; r < rows; r++) {
    double acc = 0.0;
    for (gint64 c = 0; c < cols; c++)
      acc += AT(x, r * cols + c);
    y[r] = acc;
  }
}

void
ts_ref_softmax(TsDtype dtype, const void *x, double *y, gint64 rows, gint64 cols)
{
  g_return_if_fail(x != NULL && y != NULL && rows >= 0 && cols >= 0);
#pragma omp parallel for schedule(static)
  for (gint64 r = 0; r < rows; r++) {
    const gint64 base = r * cols;
    double max = -INFINITY;
    for (gint64 c = 0; c < cols; c++)
      max = fmax(max, AT(x, base + c));
    /* Subtracting the row max keeps every exp() in (0, 1], so rows of large logits (1000, 1001)
     * do not overflow to Inf/Inf = NaN. */
    double sum = 0.0;
    for (gint64 c = 0; c < cols; c++) {
      y[base + c] = exp(AT(x, base + c) - max);
      sum += y[base + c];
    }
    for (gint64 c = 0; c < cols; c++)
      y[base + c] /= sum;
  }
}

/* gamma/beta may be NULL, meaning 1 and 0. */
void
ts_ref_layernorm(TsDtype dtype, const void *x, const void *gamma, const void *beta, double eps,
                 double *y, gint64 rows, gint64 cols)
{
  g_return_if_fail(x != NULL && y != NULL && rows >= 0 && cols > 0);
#pragma omp parallel for schedule(static)
  for (gint64 r = 0; r < rows; r++) {
    const gint64 base = r * cols;
    double mean = 0.0;
    for (gint64 c = 0; c < cols; c++)
      mean += AT(x, base + c);
    mean /= (double)cols;
    /* Two passes: E[(x-mean)^2] rather than E[x^2]-mean^2, which cancels catastrophically when
     * |mean| >> stddev (a row of 1e4 +- 1 loses every digit of its variance in f32). */
    double var = 0.0;
    for (gint64 c = 0; c < cols; c++) {
      double d = AT(x, base + c) - mean;
      var += d * d;
    }
    var /= (double)cols;
    double inv = 1.0 / sqrt(var + eps);
    for (gint64 c = 0; c < cols; c++) {
      double g = gamma != NULL ? AT(gamma, c) : 1.0;
      double b = beta != NULL ? AT(beta, c) : 0.0;
      y[base + c] = (AT(x, base + c) - mean) * inv * g + b;
    }
  }
}

/* gamma may be NULL, meaning 1. */
void
ts_ref_rmsnorm(TsDtype dtype, const void *x, const void *gamma, double eps, double *y, gint64 rows,
               gint64 cols)
{
  g_return_if_fail(x != NULL && y != NULL && rows >= 0 && cols > 0);
#pragma omp parallel for schedule(static)
  for (gint64 r = 0; r < rows; r++) {
    const gint64 base = r * cols;
    double ss = 0.0;
    for (gint64 c = 0; c < cols; c++) {
      double v = AT(x, base + c);
      ss += v * v;
    }
    double inv = 1.0 / sqrt(ss / (double)cols + eps);
    for (gint64 c = 0; c < cols; c++)
      y[base + c] = AT(x, base + c) * inv * (gamma != NULL ? AT(gamma, c) : 1.0);
  }
}

void
ts_ref_attention(TsDtype dtype, const void *q, const void *k, const void *v, double *o,
                 gint64 heads, gint64 seq, gint64 dim, gboolean causal, const gint64 *rows,
                 gsize n_rows)
{
  g_return_if_fail(q != NULL && k != NULL && v != NULL && o != NULL);
  g_return_if_fail(heads >= 0 && seq > 0 && dim > 0);
  /* Rows ascending, so the last bounds them all. */
  g_return_if_fail(rows == NULL || n_rows == 0 || (rows[0] >= 0 && rows[n_rows - 1] < heads * seq));
  const gsize n = rows != NULL ? n_rows : (gsize)(heads * seq);
  const double scale = 1.0 / sqrt((double)dim);
  /* One head's K and V widened once (rows come sorted by head), then each row is a dot
   * product per key, a max-subtracted softmax and a weighted sum of value rows. */
  double *kd = g_new(double, (gsize)(seq * dim));
  double *vd = g_new(double, (gsize)(seq * dim));
  double *qd = g_new(double, (gsize)dim);
  double *p = g_new(double, (gsize)seq);
  gint64 loaded = -1;
  for (gsize idx = 0; idx < n; idx++) {
    const gint64 row = rows != NULL ? rows[idx] : (gint64)idx;
    const gint64 h = row / seq, i = row % seq;
    if (h != loaded) {
      for (gint64 x = 0; x < seq * dim; x++) {
        kd[x] = AT(k, h * seq * dim + x);
        vd[x] = AT(v, h * seq * dim + x);
      }
      loaded = h;
    }
    for (gint64 d = 0; d < dim; d++)
      qd[d] = AT(q, row * dim + d);
    const gint64 nk = causal ? i + 1 : seq;
    double max = -INFINITY;
    for (gint64 j = 0; j < nk; j++) {
      double s = 0.0;
      for (gint64 d = 0; d < dim; d++)
        s += qd[d] * kd[j * dim + d];
      p[j] = s * scale;
      max = fmax(max, p[j]);
    }
    double sum = 0.0;
    double *orow = o + row * dim;
    for (gint64 d = 0; d < dim; d++)
      orow[d] = 0.0;
    for (gint64 j = 0; j < nk; j++) {
      const double w = exp(p[j] - max);
      sum += w;
      for (gint64 d = 0; d < dim; d++)
        orow[d] += w * vd[j * dim + d];
    }
    for (gint64 d = 0; d < dim; d++)
      orow[d] /= sum;
  }
  g_free(kd);
  g_free(vd);
  g_free(qd);
  g_free(p);
}

#define SAMPLED_ROWS 512

gint64 *
ts_ref_attention_rows(gint64 heads, gint64 seq, gint64 dim, double limit, guint32 seed,
                      gsize *n_rows)
{
  g_return_val_if_fail(n_rows != NULL, NULL);
  g_return_val_if_fail(heads > 0 && seq > 0 && dim > 0, NULL);
  const gint64 total = heads * seq;
  double work = (double)heads * (double)seq * (double)seq * (double)dim;
  if (work <= limit || total <= SAMPLED_ROWS) {
    *n_rows = (gsize)total;
    return NULL;
  }
  g_autoptr(GRand) rng = g_rand_new_with_seed(seed);
  /* The first and last row of the first and the last head: the shortest and the longest causal
   * rows, and the last row of a sequence, which sits in the partial tile when seq is not a
   * multiple of the kernel's tile. */
  const gint64 fixed[] = {0, seq - 1, total - seq, total - 1};
  return draw_indices(rng, total, SAMPLED_ROWS, fixed, G_N_ELEMENTS(fixed), n_rows);
}

double
ts_numerics_rel_error(TsDtype dtype, const void *out, const double *ref, gsize n,
                      gsize *n_nonfinite)
{
  if (n_nonfinite != NULL)
    *n_nonfinite = 0;
  g_return_val_if_fail(out != NULL || n == 0, INFINITY);
  g_return_val_if_fail(ref != NULL || n == 0, INFINITY);
  g_return_val_if_fail(ts_numerics_elem_size(dtype) != 0, INFINITY);
  gsize bad = 0, checked = 0;
  double diff2 = 0.0, ref2 = 0.0, out2 = 0.0;
  for (gsize i = 0; i < n; i++) {
    double o = ts_numerics_get(dtype, out, i);
    /* Non-finite outputs count everywhere, checked or not: a poisoned element the kernel never
     * wrote is caught even where the reference was not computed. */
    if (!isfinite(o)) {
      bad++;
      continue;
    }
    if (isnan(ref[i]))
      continue; /* not checked: a sampled reference */
    checked++;
    double d = o - ref[i];
    diff2 += d * d;
    ref2 += ref[i] * ref[i];
    out2 += o * o;
  }
  if (n_nonfinite != NULL)
    *n_nonfinite = bad;
  if (bad > 0)
    return INFINITY;
  /* A reference that checks nothing vouches for nothing. */
  if (n > 0 && checked == 0)
    return INFINITY;
  /* A non-finite reference cannot vouch for anything: fail rather than return NaN, which
   * compares false against every tolerance and could read as a pass to a careless caller. */
  if (!isfinite(diff2) || !isfinite(ref2))
    return INFINITY;
  if (ref2 == 0.0)
    return sqrt(out2);
  return sqrt(diff2) / sqrt(ref2);
}

double
ts_numerics_tolerance(TsDtype dtype, const char *op)
{
  switch (dtype) {
  case TS_DTYPE_F32:
    return g_strcmp0(op, "gemm") == 0 ? 1e-4 : 1e-5;
  case TS_DTYPE_BF16:
    return 1e-2;
  case TS_DTYPE_F16:
    return 1e-3;
  case TS_DTYPE_FP8_E4M3:
  case TS_DTYPE_FP8_E5M2:
    /* fp8 gemm: the reference takes the same dequantized inputs, so fp8's own rounding is not
     * error here; what is left is the bf16 output (2^-9 relative per element) and the sums:
     * f32 accumulation, or Hopper's fp8 tensor cores, which keep about 14 significant bits
     * of the running sum between instructions (2^-14 per k32 step, ~sqrt(K/32) 2^-14 over
     * K: 1.2e-3 at K = 8192). 1e-2 covers both with room, while a lost or doubled k-slice of
     * 32 (sqrt(32 / K) ~ 0.06 at K = 8192) and a wrong scale (a factor 2 at least) fail. */
    return 1e-2;
  default:
    return 1e-2;
  }
}
