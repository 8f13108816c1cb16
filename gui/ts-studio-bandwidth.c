/* ts-studio-bandwidth.c — a collective's bus bandwidth against message size, a line per
 * algorithm: what nccl-tests prints as a table, drawn so the crossovers show (where recursive
 * doubling stops winning and the ring starts). x is BYTES a rank on a log axis; y is nccl-tests'
 * bus bandwidth, which reads against the link speed at any rank count. The library's own
 * choice ("default") is drawn dashed: the baseline the others are tuned against. */
#include "ts-studio-plot-private.h"

#include <math.h>

#define HIT_RADIUS 7.0

typedef struct {
  TsStudioView view;
  GPtrArray *series; /* TsStudioBandwidthSeries*, or NULL: not a collective */
  char *title, *subtitle, *why;
  double x_lo, x_hi, y_hi;
  guint n;
} Bandwidth;

static void
layout(const Bandwidth *b, double width, double height, TsPlot *p)
{
  ts__plot_layout(p, width, height);
  p->ax.format = TS_PLOT_FMT_SI;
  p->ax.label_scale = 1;
  p->ax.unit = "B";
  ts__plot_axis_fit(&p->ax, TS_PLOT_LOG, b->x_lo, b->x_hi, 1.4);
  p->ay.format = TS_PLOT_FMT_SI;
  p->ay.label_scale = 1;
  p->ay.unit = "B/s";
  ts__plot_axis_fit(&p->ay, TS_PLOT_LINEAR, 0, b->y_hi, 1.1);
  p->ay.lo = 0; /* bandwidth starts at nothing; the fit's padding would show negative rates */
  ts__plot_apply_zoom(&b->view, p);
}

static const TsStudioBandwidthPoint *
point_of(const Bandwidth *b, gint64 id, const TsStudioBandwidthSeries **series)
{
  for (guint i = 0; b->series && i < b->series->len; i++) {
    const TsStudioBandwidthSeries *s = b->series->pdata[i];
    for (guint k = 0; k < s->points->len; k++)
      if (g_array_index(s->points, TsStudioBandwidthPoint, k).trial_id == id) {
        *series = s;
        return &g_array_index(s->points, TsStudioBandwidthPoint, k);
      }
  }
  return NULL;
}

/* Colours by position (a name's hashed colour can repeat among seven algorithms), markers
 * cycling too, so lines stay apart in print; the library's choice in the muted colour. */
static TsRgba
series_color(const TsStudioTheme *th, const TsStudioBandwidthSeries *s, guint i)
{
  return g_strcmp0(s->algorithm, "default") == 0 ? th->foreground
                                                  : th->series[i % TS_STUDIO_N_SERIES];
}

static TsCanvasMarker
series_marker(guint i)
{
  static const TsCanvasMarker m[] = {TS_CANVAS_MARKER_CIRCLE, TS_CANVAS_MARKER_SQUARE,
                                     TS_CANVAS_MARKER_DIAMOND};
  return m[i % G_N_ELEMENTS(m)];
}

static void
draw_series(Bandwidth *b, TsCanvas *c, const TsPlot *p, const TsStudioBandwidthSeries *s,
            guint index)
{
  const TsStudioTheme *th = b->view.theme;
  TsRgba color = series_color(th, s, index);
  ts_canvas_begin(c, "series", s->algorithm, s->algorithm);
  ts_canvas_set_color(c, color);
  ts_canvas_set_line_width(c, 2);
  if (g_strcmp0(s->algorithm, "default") == 0)
    ts_canvas_set_dash(c, 6, 4);
  g_autofree double *xy = g_new(double, 2 * (gsize)s->points->len);
  for (guint k = 0; k < s->points->len; k++) {
    const TsStudioBandwidthPoint *pt = &g_array_index(s->points, TsStudioBandwidthPoint, k);
    xy[2 * k] = ts__plot_x(p, pt->bytes);
    xy[2 * k + 1] = ts__plot_y(p, pt->busbw);
  }
  if (s->points->len > 1)
    ts_canvas_polyline(c, xy, s->points->len);
  ts_canvas_set_dash(c, 0, 0);
  for (guint k = 0; k < s->points->len; k++) {
    const TsStudioBandwidthPoint *pt = &g_array_index(s->points, TsStudioBandwidthPoint, k);
    gboolean sel = ts_studio_view_is_selected(&b->view, pt->trial_id) ||
                   b->view.hover == pt->trial_id;
    ts_canvas_marker(c, series_marker(index), xy[2 * k], xy[2 * k + 1], sel ? 6 : 3.5);
    b->view.n_drawn++;
  }
  ts_canvas_end(c);
}

static void
bandwidth_draw(TsStudioView *view, TsCanvas *c, double width, double height)
{
  Bandwidth *b = (Bandwidth *)view;
  const TsStudioTheme *th = view->theme;
  TsPlot p;
  layout(b, width, height, &p);
  view->n_drawn = 0;
  ts__plot_draw_title(c, th, &p, b->title, b->subtitle);
  if (b->n == 0) {
    ts__plot_draw_message(c, th, &p, "message", b->why);
    return;
  }
  ts__plot_draw_axes(c, th, &p, "message size (BYTES a rank)", "bus bandwidth");
  ts_canvas_begin(c, "plot", NULL, NULL);
  ts_canvas_clip(c, p.x, p.y, p.w, p.h);
  for (guint i = 0; i < b->series->len; i++)
    draw_series(b, c, &p, b->series->pdata[i], i);
  ts_canvas_end(c);
  g_autoptr(GArray) legend = ts__plot_legend_new();
  for (guint i = 0; i < b->series->len; i++) {
    const TsStudioBandwidthSeries *s = b->series->pdata[i];
    gboolean dflt = g_strcmp0(s->algorithm, "default") == 0;
    ts__plot_legend_add(legend, TS_PLOT_KEY_LINE, series_marker(i), series_color(th, s, i),
                        dflt ? 6 : 0, "%s%s", s->algorithm,
                        dflt ? " (the library's own choice)" : "");
  }
  ts__plot_draw_legend(c, th, &p, legend, TRUE);
}

static gint64
bandwidth_hit(TsStudioView *view, double x, double y, double width, double height)
{
  Bandwidth *b = (Bandwidth *)view;
  if (b->n == 0)
    return 0;
  TsPlot p;
  layout(b, width, height, &p);
  gint64 best = 0;
  double best_d = HIT_RADIUS;
  for (guint i = 0; i < b->series->len; i++) {
    const TsStudioBandwidthSeries *s = b->series->pdata[i];
    for (guint k = 0; k < s->points->len; k++) {
      const TsStudioBandwidthPoint *pt = &g_array_index(s->points, TsStudioBandwidthPoint, k);
      double d = hypot(ts__plot_x(&p, pt->bytes) - x, ts__plot_y(&p, pt->busbw) - y);
      if (d <= best_d) {
        best_d = d;
        best = pt->trial_id;
      }
    }
  }
  return best;
}

static char *
bandwidth_describe(TsStudioView *view, gint64 id)
{
  Bandwidth *b = (Bandwidth *)view;
  const TsStudioBandwidthSeries *s = NULL;
  const TsStudioBandwidthPoint *pt = point_of(b, id, &s);
  if (pt == NULL)
    return NULL;
  g_autofree char *size = ts__plot_format_si(pt->bytes, "B");
  g_autofree char *bw = ts__plot_format_si(pt->busbw, "B/s");
  g_autofree char *t = ts__plot_format_ns(pt->median_ns);
  return g_strdup_printf("%s at %s a rank\nbus bandwidth %s\n%s a call (trial %" G_GINT64_FORMAT
                         ")", s->algorithm, size, bw, t, pt->trial_id);
}

static void
bandwidth_finalize(TsStudioView *view)
{
  Bandwidth *b = (Bandwidth *)view;
  if (b->series)
    g_ptr_array_unref(b->series);
  g_free(b->title);
  g_free(b->subtitle);
  g_free(b->why);
  g_free(b);
}

static const TsStudioViewClass bandwidth_class = {
  .name = "bandwidth",
  .unit = "points",
  .draw = bandwidth_draw,
  .hit = bandwidth_hit,
  .describe = bandwidth_describe,
  .finalize = bandwidth_finalize,
};

TsStudioView *
ts_studio_bandwidth_new(const TsStudioWorkload *workload, GPtrArray *series, const char *why)
{
  g_return_val_if_fail(workload != NULL, NULL);
  Bandwidth *b = g_new0(Bandwidth, 1);
  b->view.klass = &bandwidth_class;
  b->series = series ? g_ptr_array_ref(series) : NULL;
  b->x_lo = INFINITY;
  b->x_hi = -INFINITY;
  for (guint i = 0; series && i < series->len; i++) {
    const TsStudioBandwidthSeries *s = series->pdata[i];
    for (guint k = 0; k < s->points->len; k++) {
      const TsStudioBandwidthPoint *pt = &g_array_index(s->points, TsStudioBandwidthPoint, k);
      b->x_lo = MIN(b->x_lo, pt->bytes);
      b->x_hi = MAX(b->x_hi, pt->bytes);
      b->y_hi = MAX(b->y_hi, pt->busbw);
      b->n++;
    }
  }
  if (b->n > 0 && b->x_lo == b->x_hi) { /* one size: a decade around it */
    b->x_lo /= 3;
    b->x_hi *= 3;
  }
  if (!(b->y_hi > 0))
    b->y_hi = 1;
  const TsStudioDevice *dev = workload->device;
  b->title = g_strdup("Bus bandwidth against message size");
  b->subtitle = g_strdup_printf("%s %s on %s (%s): each size's fastest trial of each algorithm",
                                workload->op, workload->dtype,
                                dev && dev->name ? dev->name : "?",
                                dev && dev->arch ? dev->arch : "?");
  b->why = g_strdup(why ? why
                        : b->n == 0 ? "No verified trial of this collective yet."
                                    : "");
  b->view.n_marks = b->n;
  return &b->view;
}
