/* ts-studio-plot-axes.c — the numbers behind the trial plots: fitting an axis to data, mapping
 * data to pixels, choosing ticks (decades on log axes, 1-2-5 steps otherwise), writing tick
 * labels with SI prefixes, the nearest-mark hit test and Kendall's tau-b. No drawing here:
 * ts-studio-plot-frame.c draws with what this computes. */
#include "ts-studio-plot-private.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Fixed margins (px): a two-line title above, tick labels and an axis title left and below.
 * 66 px left holds "100 µs" at 11 px plus the rotated axis title. */
#define MARGIN_LEFT 66.0
#define MARGIN_RIGHT 18.0
#define MARGIN_TOP 46.0
#define MARGIN_BOTTOM 44.0

void
ts__plot_layout(TsPlot *p, double width, double height)
{
  *p = (TsPlot){0};
  p->ax.label_scale = p->ay.label_scale = 1;
  p->width = width;
  p->height = height;
  p->x = MARGIN_LEFT;
  p->y = MARGIN_TOP;
  p->w = MAX(width - MARGIN_LEFT - MARGIN_RIGHT, 10);
  p->h = MAX(height - MARGIN_TOP - MARGIN_BOTTOM, 10);
  p->ax.p0 = p->x;
  p->ax.p1 = p->x + p->w;
  p->ay.p0 = p->y + p->h; /* y grows downwards in pixels, upwards in data */
  p->ay.p1 = p->y;
}

/* ---- 1-2-5 rounding ---- */

/* The largest 1, 2 or 5 x 10^k not above v (v > 0). The 1e-9 forgives representation error:
 * 0.3 / 0.1 must give 3, not 2.9999. */
static double
floor125(double v)
{
  double d = pow(10, floor(log10(v)));
  double m = v / d * (1 + 1e-9);
  return (m >= 5 ? 5 : m >= 2 ? 2 : 1) * d;
}

static double
ceil125(double v)
{
  double d = pow(10, floor(log10(v)));
  double m = v / d * (1 - 1e-9);
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * d;
}

void
ts__plot_axis_fit(TsPlotAxis *a, TsPlotScale scale, double lo, double hi, double pad)
{
  a->scale = scale;
  if (a->label_scale == 0)
    a->label_scale = 1;
  gboolean log_axis = scale == TS_PLOT_LOG;
  double l = INFINITY, h = -INFINITY;
  double v[2] = {lo, hi};
  for (guint i = 0; i < 2; i++)
    if (isfinite(v[i]) && (!log_axis || v[i] > 0)) {
      l = MIN(l, v[i]);
      h = MAX(h, v[i]);
    }
  if (!isfinite(l)) {
    l = 1;
    h = 10;
  }
  if (log_axis) {
    pad = MAX(pad, 1);
    l /= pad;
    h *= pad;
    if (h / l < 2) { /* one value: a factor of two around it at least */
      l /= 1.5;
      h *= 1.5;
    }
    a->lo = floor125(l);
    a->hi = ceil125(h);
    return;
  }
  double span = h - l;
  if (span <= 0) {
    span = fabs(l) > 0 ? fabs(l) * 0.2 : 1;
    l -= span / 2;
    h += span / 2;
  }
  a->lo = l - pad * span;
  a->hi = h + pad * span;
}

double
ts__plot_axis_map(const TsPlotAxis *a, double v)
{
  double t;
  if (a->scale == TS_PLOT_LOG) {
    double l0 = log10(a->lo), l1 = log10(a->hi);
    /* Non-positive values have no place on a log axis: far below it, where the clip hides them. */
    t = v > 0 ? (log10(v) - l0) / (l1 - l0) : -100;
  } else {
    t = (v - a->lo) / (a->hi - a->lo);
  }
  return a->p0 + t * (a->p1 - a->p0);
}

double
ts__plot_x(const TsPlot *p, double v)
{
  return ts__plot_axis_map(&p->ax, v);
}

double
ts__plot_y(const TsPlot *p, double v)
{
  return ts__plot_axis_map(&p->ay, v);
}

gboolean
ts__plot_contains(const TsPlot *p, double px, double py)
{
  return px >= p->x - 0.5 && px <= p->x + p->w + 0.5 && py >= p->y - 0.5 && py <= p->y + p->h + 0.5;
}

/* ---- ticks ---- */

static guint
push_tick(TsPlotTick *out, guint n, guint max, double value, gboolean major)
{
  if (n < max)
    out[n++] = (TsPlotTick){value, major};
  return n;
}

static guint
log_ticks(const TsPlotAxis *a, double length, TsPlotTick *out, guint max)
{
  double l0 = log10(a->lo), l1 = log10(a->hi);
  int e0 = (int)ceil(l0 - 1e-9), e1 = (int)floor(l1 + 1e-9);
  double per_decade = length / MAX(l1 - l0, 1e-9);
  guint n = 0;
  if (e1 - e0 >= 1) {
    /* Labels about 40 px apart at least: every k-th decade when they crowd. */
    static const int steps[] = {1, 2, 3, 5, 10, 20};
    int k = steps[G_N_ELEMENTS(steps) - 1];
    for (guint i = 0; i < G_N_ELEMENTS(steps); i++)
      if (per_decade * steps[i] >= 40) {
        k = steps[i];
        break;
      }
    gboolean minors = k == 1 && per_decade >= 60;
    gboolean label_25 = k == 1 && per_decade >= 160;
    for (int e = e0 - 1; e <= e1; e++) {
      double d = pow(10, e);
      if (e >= e0 && ((e % k) + k) % k == 0)
        n = push_tick(out, n, max, d, TRUE);
      if (!minors)
        continue;
      for (int m = 2; m <= 9; m++) {
        double v = m * d;
        if (v >= a->lo * (1 - 1e-9) && v <= a->hi * (1 + 1e-9))
          n = push_tick(out, n, max, v, label_25 && (m == 2 || m == 5));
      }
    }
    return n;
  }
  /* Less than two decades in view: 1-2-5 values, or every digit when that is still too few. */
  static const int m125[] = {1, 2, 5};
  for (int pass = 0; pass < 2 && n < 3; pass++) {
    n = 0;
    for (int e = e0 - 1; e <= e1; e++)
      for (int m = 1; m <= 9; m++) {
        if (pass == 0 && m != m125[0] && m != m125[1] && m != m125[2])
          continue;
        double v = m * pow(10, e);
        if (v >= a->lo * (1 - 1e-9) && v <= a->hi * (1 + 1e-9))
          n = push_tick(out, n, max, v, TRUE);
      }
  }
  return n;
}

guint
ts__plot_ticks(const TsPlotAxis *a, double length, TsPlotTick *out, guint max)
{
  if (!(a->hi > a->lo) || length <= 0)
    return 0;
  if (a->scale == TS_PLOT_LOG)
    return log_ticks(a, length, out, max);
  /* About one labelled tick per 80 px. */
  double target = MAX(2, length / 80);
  double step = ceil125((a->hi - a->lo) / target);
  guint n = 0;
  for (double k = ceil(a->lo / step - 1e-9); k * step <= a->hi + step * 1e-9; k++) {
    double v = k * step;
    if (fabs(v) < step * 1e-9)
      v = 0; /* no "-0" */
    n = push_tick(out, n, max, v, TRUE);
  }
  return n;
}

/* ---- labels ---- */

static const struct {
  int exp;
  const char *prefix;
} si[] = {{-12, "p"}, {-9, "n"}, {-6, "µ"}, {-3, "m"}, {0, ""},
          {3, "k"},   {6, "M"},  {9, "G"},  {12, "T"}, {15, "P"}};

char *
ts__plot_format_si(double v, const char *unit)
{
  const char *u = unit ? unit : "";
  if (!isfinite(v))
    return g_strdup("n/a");
  if (v == 0)
    return *u ? g_strdup_printf("0 %s", u) : g_strdup("0");
  int e = (int)floor(log10(fabs(v)) / 3) * 3;
  e = CLAMP(e, -12, 15);
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd(buf, sizeof buf, "%.3g", v / pow(10, e));
  if (fabs(g_ascii_strtod(buf, NULL)) >= 1000 && e < 15) { /* 999.96 rounds up to 1e+03 */
    e += 3;
    g_ascii_formatd(buf, sizeof buf, "%.3g", v / pow(10, e));
  }
  const char *prefix = "";
  for (guint i = 0; i < G_N_ELEMENTS(si); i++)
    if (si[i].exp == e)
      prefix = si[i].prefix;
  if (*prefix == '\0' && *u == '\0')
    return g_strdup(buf);
  return g_strdup_printf("%s %s%s", buf, prefix, u);
}

char *
ts__plot_format(double v, TsPlotFormat format, const char *unit)
{
  double a = fabs(v);
  if (format == TS_PLOT_FMT_SI || !isfinite(v) || (v != 0 && (a < 1e-3 || a >= 1e4)))
    return ts__plot_format_si(v, unit);
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd(buf, sizeof buf, "%.4g", v);
  return unit && *unit ? g_strdup_printf("%s %s", buf, unit) : g_strdup(buf);
}

char *
ts__plot_format_ns(double ns)
{
  return ts__plot_format_si(ns * 1e-9, "s");
}

/* ---- hit test ---- */

gint
ts__plot_nearest(const double *xy, guint n, double x, double y, double radius)
{
  gint best = -1;
  double best_d2 = radius * radius;
  for (guint i = 0; i < n; i++) {
    double dx = xy[2 * i] - x, dy = xy[2 * i + 1] - y;
    double d2 = dx * dx + dy * dy;
    if (d2 <= best_d2) {
      best_d2 = d2;
      best = (gint)i;
    }
  }
  return best;
}

gint64
ts__plot_hit_trials(const TsPlot *p, GPtrArray *trials, TsPlotTrialPlace place, double x,
                    double y, double radius)
{
  if (!ts__plot_contains(p, x, y))
    return 0;
  g_autoptr(GArray) xy = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(gint64));
  for (guint i = 0; i < trials->len; i++) {
    const TsStudioTrial *t = trials->pdata[i];
    double dx, dy;
    if (!place(t, &dx, &dy))
      continue;
    double pt[2] = {ts__plot_x(p, dx), ts__plot_y(p, dy)};
    g_array_append_vals(xy, pt, 2);
    g_array_append_val(ids, t->id);
  }
  gint k = ts__plot_nearest((double *)xy->data, ids->len, x, y, radius);
  return k < 0 ? 0 : g_array_index(ids, gint64, k);
}

GArray *
ts__plot_brush_trials(const TsPlot *p, GPtrArray *trials, TsPlotTrialPlace place, double x0,
                      double y0, double x1, double y1)
{
  GArray *ids = g_array_new(FALSE, FALSE, sizeof(gint64));
  for (guint i = 0; i < trials->len; i++) {
    const TsStudioTrial *t = trials->pdata[i];
    double dx, dy;
    if (!place(t, &dx, &dy))
      continue;
    double px = ts__plot_x(p, dx), py = ts__plot_y(p, dy);
    /* Points zoomed out of the plot area are not where the user drew. */
    if (px >= x0 && px <= x1 && py >= y0 && py <= y1 && ts__plot_contains(p, px, py))
      g_array_append_val(ids, t->id);
  }
  return ids;
}

void
ts__plot_draw_hover_trial(TsStudioView *view, TsCanvas *c, const TsPlot *p, GPtrArray *trials,
                          TsPlotTrialPlace place, TsPlotTrialDraw draw)
{
  guint n_drawn = view->n_drawn;
  for (guint i = 0; i < trials->len; i++) {
    const TsStudioTrial *t = trials->pdata[i];
    double dx, dy;
    if (t->id != view->hover || !place(t, &dx, &dy))
      continue;
    ts_canvas_begin(c, "hover", NULL, NULL);
    ts_canvas_clip(c, p->x, p->y, p->w, p->h);
    draw(view, c, p, t);
    ts_canvas_end(c);
  }
  view->n_drawn = n_drawn;
}

/* ---- Kendall's tau-b ---- */

typedef struct {
  double x, y;
} Pair;

static int
cmp_xy(const void *pa, const void *pb)
{
  const Pair *a = pa, *b = pb;
  if (a->x != b->x)
    return a->x < b->x ? -1 : 1;
  return a->y < b->y ? -1 : a->y > b->y;
}

/* Sorts v[0..n) by value with tmp as scratch and returns the number of swaps a bubble sort
 * would make: the pairs out of order (ties are not swaps). */
static guint64
merge_count(double *v, double *tmp, guint n)
{
  if (n < 2)
    return 0;
  guint h = n / 2;
  guint64 swaps = merge_count(v, tmp, h) + merge_count(v + h, tmp, n - h);
  guint i = 0, j = h, k = 0;
  while (i < h && j < n) {
    if (v[j] < v[i]) {
      swaps += h - i;
      tmp[k++] = v[j++];
    } else {
      tmp[k++] = v[i++];
    }
  }
  while (i < h)
    tmp[k++] = v[i++];
  while (j < n)
    tmp[k++] = v[j++];
  memcpy(v, tmp, n * sizeof *v);
  return swaps;
}

/* Pairs tied within runs of equal values of a sorted sequence. */
static double
tied_pairs(const double *v, guint n)
{
  double pairs = 0;
  for (guint i = 0; i < n;) {
    guint j = i + 1;
    while (j < n && v[j] == v[i])
      j++;
    double t = j - i;
    pairs += t * (t - 1) / 2;
    i = j;
  }
  return pairs;
}

double
ts__plot_kendall_tau_b(const double *x, const double *y, guint n)
{
  if (n < 2)
    return NAN;
  g_autofree Pair *p = g_new(Pair, n);
  for (guint i = 0; i < n; i++)
    p[i] = (Pair){x[i], y[i]};
  qsort(p, n, sizeof *p, cmp_xy);
  g_autofree double *ys = g_new(double, n);
  g_autofree double *tmp = g_new(double, n);
  for (guint i = 0; i < n; i++)
    ys[i] = p[i].x;
  double n0 = (double)n * (n - 1) / 2;
  double n1 = tied_pairs(ys, n);
  double n3 = 0; /* pairs tied in both */
  for (guint i = 0; i < n;) {
    guint j = i + 1;
    while (j < n && p[j].x == p[i].x && p[j].y == p[i].y)
      j++;
    double t = j - i;
    n3 += t * (t - 1) / 2;
    i = j;
  }
  for (guint i = 0; i < n; i++)
    ys[i] = p[i].y;
  /* In x order (ties in x ordered by y) every inversion of y is a discordant pair. */
  double swaps = (double)merge_count(ys, tmp, n);
  double n2 = tied_pairs(ys, n);
  double denom = sqrt((n0 - n1) * (n0 - n2));
  if (!(denom > 0))
    return NAN;
  return (n0 - n1 - n2 + n3 - 2 * swaps) / denom;
}
