/* ts-studio-roofline.c — the roofline view: the measured roofs of the workload's device
 * (ts-studio-roofs.c) and one marker per trial at (FLOP per DRAM byte, achieved FLOP/s),
 * log-log, coloured by status or strategy, the best ringed; for one trial whose traffic per
 * memory level was measured, a point per level (ts-studio-roofline-levels.c). Trials without coordinates (failed,
 * or of an op whose FLOPs are unknown) are counted in the legend instead.
 *
 * The view copies the roofs and the names it shows, and takes a reference on the trials, so it
 * can outlive the TsStudioDb that produced the workload. */
#include "ts-studio-plot-private.h"

#include <math.h>

#define MARKER_R 3.5
#define HIT_RADIUS 6.0

typedef struct {
  TsStudioView view;
  GPtrArray *trials;
  char *title, *subtitle, *device;
  TsPlotRoofs roofs;
  double x_lo, x_hi, y_lo, y_hi; /* data and ridges to fit the axes to */
  TsStudioColorBy color_by;
  gint64 best_id;
  gint64 fastest_id; /* the fastest median, when it is not the best */
  guint n_failed;   /* not verified and without coordinates: nothing to place */
  guint n_unplaced; /* verified without coordinates (unknown FLOP count, no DRAM bytes) */
  guint n_plotted;
  const char *empty_message; /* when nothing is plotted */
} Roofline;

static gboolean
plotted(const TsStudioTrial *t)
{
  return isfinite(t->intensity) && t->intensity > 0 && isfinite(t->gflops) && t->gflops > 0;
}

static gboolean
place(const TsStudioTrial *t, double *x, double *y)
{
  *x = t->intensity;
  *y = t->gflops;
  return plotted(t);
}

/* The ranges the axes must show: every trial, every ridge point and the roofs around them. */
static void
fit_ranges(Roofline *r)
{
  double xl = INFINITY, xh = -INFINITY, yl = INFINITY, yh = -INFINITY;
  for (guint i = 0; i < r->trials->len; i++) {
    const TsStudioTrial *t = r->trials->pdata[i];
    if (!plotted(t))
      continue;
    xl = MIN(xl, t->intensity);
    xh = MAX(xh, t->intensity);
    yl = MIN(yl, t->gflops);
    yh = MAX(yh, t->gflops);
  }
  ts__roofline_levels_extend(r->trials, &xl, &xh);
  ts__plot_roofs_extend(&r->roofs, &xl, &xh, &yl, &yh);
  r->x_lo = xl;
  r->x_hi = xh;
  r->y_lo = yl;
  r->y_hi = yh;
}

static void
layout(const Roofline *r, double width, double height, TsPlot *p)
{
  ts__plot_layout(p, width, height);
  p->ax.format = TS_PLOT_FMT_PLAIN;
  p->ax.label_scale = 1;
  p->ay.format = TS_PLOT_FMT_SI;
  p->ay.label_scale = 1e9; /* GFLOP/s on the axis, FLOP/s with prefixes on the labels */
  ts__plot_axis_fit(&p->ax, TS_PLOT_LOG, r->x_lo, r->x_hi, 1.5);
  ts__plot_axis_fit(&p->ay, TS_PLOT_LOG, r->y_lo, r->y_hi, 1.5);
  ts__plot_apply_zoom(&r->view, p);
}

/* ---- trials ---- */

static TsCanvasMarker
status_marker(TsDbTrialStatus status)
{
  return status == TS_DB_TRIAL_OK             ? TS_CANVAS_MARKER_CIRCLE
         : status == TS_DB_TRIAL_WRONG_RESULT ? TS_CANVAS_MARKER_DIAMOND
                                              : TS_CANVAS_MARKER_SQUARE;
}

static TsRgba
trial_color(const Roofline *r, const TsStudioTrial *t)
{
  const TsStudioTheme *th = r->view.theme;
  return r->color_by == TS_STUDIO_COLOR_BY_STRATEGY ? ts_studio_theme_series(th, t->strategy)
                                                    : th->status[t->status];
}

/* Drawn later, on top: the best, then the selection, then what the pointer is on. */
static int
priority(const Roofline *r, const TsStudioTrial *t)
{
  return t->id == r->view.hover                            ? 3
         : ts_studio_view_is_selected(&r->view, t->id) ? 2
                                                         : t->id == r->best_id;
}

static void
draw_trial(Roofline *r, TsCanvas *c, const TsPlot *p, const TsStudioTrial *t)
{
  const TsStudioTheme *th = r->view.theme;
  double x = ts__plot_x(p, t->intensity), y = ts__plot_y(p, t->gflops);
  TsRgba fill = trial_color(r, t);
  TsCanvasMarker shape = status_marker(t->status);
  ts__plot_begin_trial(c, t);
  if (t->id == r->view.hover || ts_studio_view_is_selected(&r->view, t->id)) {
    TsRgba ring = t->id == r->view.hover ? th->highlight : th->foreground;
    ts__plot_draw_ringed(c, th, TS_CANVAS_MARKER_CIRCLE, ring, ring, x, y, MARKER_R + 3);
  }
  if (t->id == r->best_id) {
    ts_canvas_begin(c, "best", NULL, NULL);
    ts__plot_draw_ringed(c, th, shape, fill, th->accent, x, y, MARKER_R);
    ts_canvas_end(c);
  } else {
    ts_canvas_set_color(c, ts_studio_rgba_alpha(fill, 0.85));
    ts_canvas_marker(c, shape, x, y, MARKER_R);
  }
  ts_canvas_end(c);
  r->view.n_drawn++;
}

static void
draw_trials(Roofline *r, TsCanvas *c, const TsPlot *p)
{
  for (int pass = 0; pass <= 3; pass++)
    for (guint i = 0; i < r->trials->len; i++) {
      const TsStudioTrial *t = r->trials->pdata[i];
      if (plotted(t) && priority(r, t) == pass)
        draw_trial(r, c, p, t);
    }
}

static void
draw_legend(Roofline *r, TsCanvas *c, const TsPlot *p, const TsStudioTrial *lt)
{
  const TsStudioTheme *th = r->view.theme;
  g_autoptr(GArray) legend = ts__plot_legend_new();
  if (r->color_by == TS_STUDIO_COLOR_BY_STATUS) {
    guint counts[TS_DB_TRIAL_WRONG_RESULT + 1] = {0};
    for (guint i = 0; i < r->trials->len; i++) {
      const TsStudioTrial *t = r->trials->pdata[i];
      if (plotted(t))
        counts[t->status]++;
    }
    for (guint s = 0; s < G_N_ELEMENTS(counts); s++)
      if (counts[s])
        ts__plot_legend_add(legend, TS_PLOT_KEY_MARKER, status_marker(s), th->status[s], 0,
                            "%s (%u)", ts_db_trial_status_name(s), counts[s]);
  } else {
    /* Strategies in the order they first tuned this workload. */
    g_autoptr(GPtrArray) names = g_ptr_array_new();
    g_autoptr(GHashTable) counts = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; i < r->trials->len; i++) {
      const TsStudioTrial *t = r->trials->pdata[i];
      if (!plotted(t))
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
  }
  for (guint i = 0; i < r->trials->len; i++) {
    const TsStudioTrial *t = r->trials->pdata[i];
    if (t->id != r->best_id)
      continue;
    g_autofree char *med = ts__plot_format_ns(t->median_ns);
    if (isfinite(t->fraction) && t->bound)
      ts__plot_legend_add(legend, TS_PLOT_KEY_RING, status_marker(t->status), trial_color(r, t), 0,
                          "best: %s, %.0f%% of %s (trial %" G_GINT64_FORMAT ")", med,
                          t->fraction * 100, t->bound, t->id);
    else
      ts__plot_legend_add(legend, TS_PLOT_KEY_RING, status_marker(t->status), trial_color(r, t), 0,
                          "best: %s (trial %" G_GINT64_FORMAT ")", med, t->id);
  }
  ts__plot_legend_add_fastest(legend, th, r->trials, r->best_id, r->fastest_id);
  if (lt) { /* the trial drawn per level */
    g_autoptr(GString) which = g_string_new(NULL);
    for (guint l = 0; l < TS_STUDIO_N_LEVELS; l++)
      if (isfinite(lt->level_intensity[l]) && lt->level_intensity[l] > 0)
        g_string_append_printf(which, "%s%s", which->len ? ", " : "", ts_studio_level_label(l));
    ts__plot_legend_add(legend, TS_PLOT_KEY_MARKER, TS_CANVAS_MARKER_SQUARE, th->memory_roof, 0,
                        "trial %" G_GINT64_FORMAT " per level, measured bytes (%s)", lt->id,
                        which->str);
  }
  if (r->n_failed)
    ts__plot_legend_add(legend, TS_PLOT_KEY_MARKER, TS_CANVAS_MARKER_CROSS, th->muted, 0,
                        "%u failed, not plotted", r->n_failed);
  if (r->n_unplaced)
    ts__plot_legend_add(legend, TS_PLOT_KEY_NONE, TS_CANVAS_MARKER_CIRCLE, th->muted, 0,
                        "%u verified without coordinates", r->n_unplaced);
  /* Top left: above the memory roofs, where no kernel can be. */
  ts__plot_draw_legend(c, th, p, legend, FALSE);
}

/* Without ceilings the points still tell something; the note says how to get the roofs. */
static void
draw_note(Roofline *r, TsCanvas *c, const TsPlot *p)
{
  g_autofree char *note = NULL;
  gboolean warning = FALSE;
  if (r->roofs.roofs->len == 0)
    note = g_strdup_printf("no measured ceilings for %s: run `tessera-tune devices --measure`",
                           r->device);
  else
    warning = (note = ts__plot_roofs_implausible(&r->roofs)) != NULL;
  if (note == NULL)
    return;
  ts_canvas_begin(c, warning ? "note warning" : "note", NULL, NULL);
  ts_canvas_set_color(c, warning ? r->view.theme->status[TS_DB_TRIAL_RUNTIME_ERROR]
                                 : r->view.theme->muted);
  ts_canvas_set_font_size(c, 12);
  ts_canvas_text(c, p->x + p->w - 8, p->y + p->h - 8, note, TS_CANVAS_ALIGN_END,
                 TS_CANVAS_ALIGN_END, 0);
  ts_canvas_end(c);
}

static void
roofline_draw(TsStudioView *view, TsCanvas *c, double width, double height)
{
  Roofline *r = (Roofline *)view;
  const TsStudioTheme *th = view->theme;
  TsPlot p;
  layout(r, width, height, &p);
  ts__plot_draw_title(c, th, &p, r->title, r->subtitle);
  if (r->roofs.roofs->len == 0 && r->n_plotted == 0) { /* nothing to place: no empty scales */
    ts__plot_draw_message(c, th, &p, "message", r->empty_message);
    draw_note(r, c, &p);
    return;
  }
  const TsStudioTrial *lt = ts__roofline_level_trial(r->trials, view->selected, r->best_id);
  ts__plot_draw_axes(c, th, &p,
                     lt ? "arithmetic intensity (FLOP per byte: compulsory DRAM bytes; labelled "
                          "points: bytes counted per level)"
                        : "arithmetic intensity (FLOP per DRAM byte)",
                     "performance (FLOP/s)");
  ts_canvas_begin(c, "plot", NULL, NULL);
  ts_canvas_clip(c, p.x, p.y, p.w, p.h);
  ts__plot_roofs_draw(&r->roofs, c, th, &p);
  draw_trials(r, c, &p);
  if (lt)
    ts__roofline_levels_draw(c, th, &p, &r->roofs, lt);
  ts_canvas_end(c);
  draw_note(r, c, &p);
  if (r->n_plotted == 0)
    ts__plot_draw_message(c, th, &p, "message", r->empty_message);
  draw_legend(r, c, &p, lt);
}

static void
draw_hover(TsStudioView *view, TsCanvas *c, const TsPlot *p, const TsStudioTrial *t)
{
  draw_trial((Roofline *)view, c, p, t);
}

gboolean
ts__roofline_draw_hover(TsStudioView *view, TsCanvas *c, double width, double height)
{
  Roofline *r = (Roofline *)view;
  TsPlot p;
  layout(r, width, height, &p);
  ts__plot_draw_hover_trial(view, c, &p, r->trials, place, draw_hover);
  return TRUE;
}

static gint64
roofline_hit(TsStudioView *view, double x, double y, double width, double height)
{
  Roofline *r = (Roofline *)view;
  TsPlot p;
  layout(r, width, height, &p);
  gint64 id = ts__plot_hit_trials(&p, r->trials, place, x, y, HIT_RADIUS);
  const TsStudioTrial *lt = ts__roofline_level_trial(r->trials, view->selected, r->best_id);
  if (id == 0 && lt && ts__roofline_levels_hit(&p, lt, x, y, HIT_RADIUS))
    id = lt->id;
  return id;
}

static GArray *
roofline_brush(TsStudioView *view, double x0, double y0, double x1, double y1, double width,
               double height)
{
  Roofline *r = (Roofline *)view;
  TsPlot p;
  layout(r, width, height, &p);
  return ts__plot_brush_trials(&p, r->trials, place, x0, y0, x1, y1);
}

static char *
roofline_describe(TsStudioView *view, gint64 id)
{
  Roofline *r = (Roofline *)view;
  for (guint i = 0; i < r->trials->len; i++) {
    const TsStudioTrial *t = r->trials->pdata[i];
    if (t->id == id)
      return ts__plot_describe_trial(t);
  }
  return NULL;
}

static void
roofline_finalize(TsStudioView *view)
{
  Roofline *r = (Roofline *)view;
  g_ptr_array_unref(r->trials);
  ts__plot_roofs_clear(&r->roofs);
  g_free(r->title);
  g_free(r->subtitle);
  g_free(r->device);
  g_free(r);
}

static const TsStudioViewClass roofline_class = {
    .name = "roofline",
    .unit = "trials",
    .draw = roofline_draw,
    .hit = roofline_hit,
    .brush = roofline_brush,
    .describe = roofline_describe,
    .finalize = roofline_finalize,
};

TsStudioView *
ts_studio_roofline_new(const TsStudioWorkload *workload, GPtrArray *trials)
{
  g_return_val_if_fail(workload != NULL && trials != NULL, NULL);
  Roofline *r = g_new0(Roofline, 1);
  r->view.klass = &roofline_class;
  r->trials = g_ptr_array_ref(trials);
  const TsStudioDevice *dev = workload->device;
  r->device = g_strdup(dev && dev->name ? dev->name : "this device");
  r->title = g_strdup_printf("Roofline: %s", workload->label ? workload->label : "workload");
  r->subtitle = dev ? g_strdup_printf("%s (%s%s%s), %u trials", r->device, dev->backend,
                                      dev->arch ? " " : "", dev->arch ? dev->arch : "", trials->len)
                    : g_strdup_printf("%u trials", trials->len);
  ts__plot_roofs_init(&r->roofs, workload);
  fit_ranges(r);
  /* The key's stored best; when none is flagged (an older cache), the fastest verified. */
  double fastest = INFINITY;
  gint64 fastest_id = 0;
  for (guint i = 0; i < trials->len; i++) {
    const TsStudioTrial *t = trials->pdata[i];
    if (!plotted(t)) {
      if (t->status == TS_DB_TRIAL_OK)
        r->n_unplaced++;
      else
        r->n_failed++;
      continue;
    }
    r->n_plotted++;
    if (t->best)
      r->best_id = t->id;
    if (t->status == TS_DB_TRIAL_OK && t->median_ns < fastest) {
      fastest = t->median_ns;
      fastest_id = t->id;
    }
  }
  if (r->best_id == 0)
    r->best_id = fastest_id;
  r->fastest_id = fastest_id != r->best_id ? fastest_id : 0;
  r->empty_message = trials->len ? "No trial has roofline coordinates: none was verified with "
                                   "a known FLOP count."
                                 : "No trials stored for this workload.";
  r->view.n_marks = trials->len;
  return &r->view;
}

void
ts_studio_roofline_set_color_by(TsStudioView *view, TsStudioColorBy color_by)
{
  g_return_if_fail(view != NULL && g_strcmp0(ts_studio_view_name(view), "roofline") == 0);
  ((Roofline *)view)->color_by = color_by;
}
