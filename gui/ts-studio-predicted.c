/* ts-studio-predicted.c — predicted vs measured: the cost model's stored estimate (x) against
 * the measured median (y) of every verified trial that has one, log-log on one shared range so
 * the y = x diagonal is the line of perfect prediction. What matters for search is the order,
 * not the scale (the tuner ranks candidates by the estimate), so the title gives the rank
 * correlation, Kendall's tau-b, with the number of trials it is over. */
#include "ts-studio-plot-private.h"

#include <math.h>

#define HIT_RADIUS 6.0

typedef struct {
  TsStudioView view;
  GPtrArray *trials;
  char *title, *subtitle;
  double lo, hi; /* over both variables */
  double tau;
  guint n;
} Predicted;

static gboolean
usable(const TsStudioTrial *t)
{
  return t->status == TS_DB_TRIAL_OK && isfinite(t->median_ns) && t->median_ns > 0 &&
         isfinite(t->predicted_ns) && t->predicted_ns > 0;
}

static void
layout(const Predicted *pr, double width, double height, TsPlot *p)
{
  ts__plot_layout(p, width, height);
  TsPlotAxis *axes[2] = {&p->ax, &p->ay};
  for (guint i = 0; i < 2; i++) {
    axes[i]->format = TS_PLOT_FMT_SI;
    axes[i]->label_scale = 1e-9;
    axes[i]->unit = "s";
    ts__plot_axis_fit(axes[i], TS_PLOT_LOG, pr->lo, pr->hi, 1.3);
  }
  ts__plot_apply_zoom(&pr->view, p);
}

static gboolean
place(const TsStudioTrial *t, double *x, double *y)
{
  *x = t->predicted_ns;
  *y = t->median_ns;
  return usable(t);
}

/* Strategies in the order they first appear, with their counts; how to read the diagonal. */
static void
draw_legend(Predicted *pr, TsCanvas *c, const TsPlot *p)
{
  const TsStudioTheme *th = pr->view.theme;
  g_autoptr(GArray) legend = ts__plot_legend_new();
  g_autoptr(GPtrArray) names = g_ptr_array_new();
  g_autoptr(GHashTable) counts = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < pr->trials->len; i++) {
    const TsStudioTrial *t = pr->trials->pdata[i];
    if (!usable(t))
      continue;
    const char *s = t->strategy ? t->strategy : "unknown";
    guint n = GPOINTER_TO_UINT(g_hash_table_lookup(counts, s));
    if (n == 0)
      g_ptr_array_add(names, (gpointer)s);
    g_hash_table_insert(counts, (gpointer)s, GUINT_TO_POINTER(n + 1));
  }
  for (guint i = 0; i < names->len; i++) {
    const char *s = names->pdata[i];
    ts__plot_legend_add(legend, TS_PLOT_KEY_MARKER, TS_CANVAS_MARKER_CIRCLE,
                        ts_studio_theme_series(th, g_strcmp0(s, "unknown") ? s : NULL), 0,
                        "%s (%u)", s, GPOINTER_TO_UINT(g_hash_table_lookup(counts, s)));
  }
  ts__plot_legend_add(legend, TS_PLOT_KEY_NONE, 0, th->muted, 0,
                      "above the line: slower than predicted");
  ts__plot_draw_legend(c, th, p, legend, FALSE);
}

static void
predicted_draw(TsStudioView *view, TsCanvas *c, double width, double height)
{
  Predicted *pr = (Predicted *)view;
  const TsStudioTheme *th = view->theme;
  TsPlot p;
  layout(pr, width, height, &p);
  ts__plot_draw_title(c, th, &p, pr->title, pr->subtitle);
  if (pr->n == 0) { /* no axes: a scale with nothing on it would only suggest data */
    ts__plot_draw_message(c, th, &p, "message",
                          "No verified trial has a predicted time.\n"
                          "Predictions come from the cost model: tessera-tune stores one with "
                          "every trial since the cost model landed; trials tuned before have "
                          "none.");
    return;
  }
  ts__plot_draw_axes(c, th, &p, "predicted time (cost model)", "measured median time");
  ts_canvas_begin(c, "plot", NULL, NULL);
  ts_canvas_clip(c, p.x, p.y, p.w, p.h);
  ts_canvas_begin(c, "diagonal", NULL, "y = x: measured as predicted");
  ts_canvas_set_color(c, th->muted);
  ts_canvas_set_dash(c, 5, 4);
  double x0 = ts__plot_x(&p, p.ax.lo), y0 = ts__plot_y(&p, p.ax.lo);
  double x1 = ts__plot_x(&p, p.ax.hi), y1 = ts__plot_y(&p, p.ax.hi);
  ts_canvas_line(c, x0, y0, x1, y1);
  ts_canvas_set_font_size(c, 11);
  double lx = x0 + 0.85 * (x1 - x0), ly = y0 + 0.85 * (y1 - y0);
  ts_canvas_text(c, lx + 6, ly + 2, "y = x", TS_CANVAS_ALIGN_START, TS_CANVAS_ALIGN_START, 0);
  ts_canvas_end(c);
  ts__plot_draw_dots(view, c, &p, pr->trials, place);
  ts_canvas_end(c);
  draw_legend(pr, c, &p);
}

gboolean
ts__predicted_draw_hover(TsStudioView *view, TsCanvas *c, double width, double height)
{
  Predicted *pr = (Predicted *)view;
  if (pr->n == 0)
    return TRUE;
  TsPlot p;
  layout(pr, width, height, &p);
  ts__plot_draw_hover_trial(view, c, &p, pr->trials, place, ts__plot_draw_dot);
  return TRUE;
}

static gint64
predicted_hit(TsStudioView *view, double x, double y, double width, double height)
{
  Predicted *pr = (Predicted *)view;
  TsPlot p;
  layout(pr, width, height, &p);
  return ts__plot_hit_trials(&p, pr->trials, place, x, y, HIT_RADIUS);
}

static GArray *
predicted_brush(TsStudioView *view, double x0, double y0, double x1, double y1, double width,
                double height)
{
  Predicted *pr = (Predicted *)view;
  TsPlot p;
  layout(pr, width, height, &p);
  return ts__plot_brush_trials(&p, pr->trials, place, x0, y0, x1, y1);
}

static char *
predicted_describe(TsStudioView *view, gint64 id)
{
  Predicted *pr = (Predicted *)view;
  for (guint i = 0; i < pr->trials->len; i++) {
    const TsStudioTrial *t = pr->trials->pdata[i];
    if (t->id == id) {
      g_autofree char *text = ts__plot_describe_trial(t);
      if (!usable(t))
        return g_steal_pointer(&text);
      /* How far off the model was, as a factor: 2.0x slower than predicted. */
      double ratio = t->median_ns / t->predicted_ns;
      return g_strdup_printf("%s\nmeasured %.2fx %s than predicted", text,
                             ratio >= 1 ? ratio : 1 / ratio, ratio >= 1 ? "slower" : "faster");
    }
  }
  return NULL;
}

static void
predicted_finalize(TsStudioView *view)
{
  Predicted *pr = (Predicted *)view;
  g_ptr_array_unref(pr->trials);
  g_free(pr->title);
  g_free(pr->subtitle);
  g_free(pr);
}

static const TsStudioViewClass predicted_class = {
    .name = "predicted",
    .unit = "trials",
    .draw = predicted_draw,
    .hit = predicted_hit,
    .brush = predicted_brush,
    .describe = predicted_describe,
    .finalize = predicted_finalize,
};

TsStudioView *
ts_studio_predicted_new(const TsStudioWorkload *workload, GPtrArray *trials)
{
  g_return_val_if_fail(workload != NULL && trials != NULL, NULL);
  Predicted *pr = g_new0(Predicted, 1);
  pr->view.klass = &predicted_class;
  pr->trials = g_ptr_array_ref(trials);
  g_autofree double *x = g_new(double, trials->len + 1);
  g_autofree double *y = g_new(double, trials->len + 1);
  double lo = INFINITY, hi = -INFINITY;
  for (guint i = 0; i < trials->len; i++) {
    const TsStudioTrial *t = trials->pdata[i];
    if (!usable(t))
      continue;
    x[pr->n] = t->predicted_ns;
    y[pr->n] = t->median_ns;
    lo = MIN(lo, MIN(t->predicted_ns, t->median_ns));
    hi = MAX(hi, MAX(t->predicted_ns, t->median_ns));
    pr->n++;
  }
  pr->lo = lo;
  pr->hi = hi;
  pr->tau = ts__plot_kendall_tau_b(x, y, pr->n);
  const char *label = workload->label ? workload->label : "workload";
  if (pr->n == 0) {
    pr->title = g_strdup("Predicted vs measured time");
  } else {
    char tau[G_ASCII_DTOSTR_BUF_SIZE];
    if (isfinite(pr->tau))
      g_ascii_formatd(tau, sizeof tau, "%.3f", pr->tau);
    else
      g_strlcpy(tau, "undefined", sizeof tau);
    pr->title = g_strdup_printf("Predicted vs measured time: Kendall τ-b %s (N = %u)", tau, pr->n);
  }
  const TsStudioDevice *dev = workload->device;
  pr->subtitle = g_strdup_printf("%s%s%s, verified trials with a stored prediction", label,
                                 dev && dev->name ? " on " : "", dev && dev->name ? dev->name : "");
  pr->view.n_marks = pr->n;
  return &pr->view;
}
