/* ts-studio-plot-frame.c — what the trial plots draw around their marks: title, grid, frame,
 * ticks and axis titles, a boxed legend, centred messages, ringed markers, and the hover text
 * of a trial. Everything through TsCanvas, so the window and the SVG export agree and the
 * export keeps its groups ("axes", "legend", the message's class). */
#include "ts-studio-plot-private.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

#define TICK_FONT 11.0
#define MAX_TICKS 64

void
ts__plot_draw_title(TsCanvas *c, const TsStudioTheme *theme, const TsPlot *p, const char *title,
                    const char *subtitle)
{
  ts_canvas_fill_background(c, theme->background);
  ts_canvas_begin(c, "title", NULL, NULL);
  ts_canvas_set_color(c, theme->foreground);
  ts_canvas_set_font_size(c, 14);
  ts_canvas_text(c, p->x, 7, title, TS_CANVAS_ALIGN_START, TS_CANVAS_ALIGN_START, 0);
  if (subtitle) {
    ts_canvas_set_color(c, theme->muted);
    ts_canvas_set_font_size(c, 11);
    ts_canvas_text(c, p->x, 26, subtitle, TS_CANVAS_ALIGN_START, TS_CANVAS_ALIGN_START, 0);
  }
  ts_canvas_end(c);
}

static void
draw_grid(TsCanvas *c, const TsStudioTheme *theme, const TsPlot *p, gboolean vertical,
          const TsPlotTick *ticks, guint n)
{
  for (guint i = 0; i < n; i++) {
    ts_canvas_set_color(c, ticks[i].major ? theme->grid : ts_studio_rgba_alpha(theme->grid, 0.5));
    if (vertical) {
      double x = ts__plot_x(p, ticks[i].value);
      ts_canvas_line(c, x, p->y, x, p->y + p->h);
    } else {
      double y = ts__plot_y(p, ticks[i].value);
      ts_canvas_line(c, p->x, y, p->x + p->w, y);
    }
  }
}

static void
draw_labels(TsCanvas *c, const TsStudioTheme *theme, const TsPlot *p, gboolean x_axis,
            const TsPlotTick *ticks, guint n)
{
  const TsPlotAxis *a = x_axis ? &p->ax : &p->ay;
  for (guint i = 0; i < n; i++) {
    double v = ticks[i].value, px = ts__plot_axis_map(a, v);
    ts_canvas_set_color(c, theme->frame);
    if (x_axis)
      ts_canvas_line(c, px, p->y + p->h, px, p->y + p->h + (ticks[i].major ? 4 : 2));
    else
      ts_canvas_line(c, p->x - (ticks[i].major ? 4 : 2), px, p->x, px);
    if (!ticks[i].major)
      continue;
    g_autofree char *label = ts__plot_format(v * a->label_scale, a->format, a->unit);
    ts_canvas_set_color(c, theme->muted);
    if (x_axis)
      ts_canvas_text(c, px, p->y + p->h + 6, label, TS_CANVAS_ALIGN_CENTER, TS_CANVAS_ALIGN_START,
                     0);
    else
      ts_canvas_text(c, p->x - 7, px, label, TS_CANVAS_ALIGN_END, TS_CANVAS_ALIGN_CENTER, 0);
  }
}

void
ts__plot_draw_axes(TsCanvas *c, const TsStudioTheme *theme, const TsPlot *p, const char *x_title,
                   const char *y_title)
{
  TsPlotTick xt[MAX_TICKS], yt[MAX_TICKS];
  guint nx = ts__plot_ticks(&p->ax, p->w, xt, MAX_TICKS);
  guint ny = ts__plot_ticks(&p->ay, p->h, yt, MAX_TICKS);
  ts_canvas_begin(c, "axes", NULL, NULL);
  ts_canvas_set_line_width(c, 1);
  draw_grid(c, theme, p, TRUE, xt, nx);
  draw_grid(c, theme, p, FALSE, yt, ny);
  ts_canvas_set_color(c, theme->frame);
  ts_canvas_rect(c, p->x, p->y, p->w, p->h, FALSE);
  ts_canvas_set_font_size(c, TICK_FONT);
  draw_labels(c, theme, p, TRUE, xt, nx);
  draw_labels(c, theme, p, FALSE, yt, ny);
  ts_canvas_set_color(c, theme->foreground);
  ts_canvas_set_font_size(c, 12);
  ts_canvas_text(c, p->x + p->w / 2, p->height - 5, x_title, TS_CANVAS_ALIGN_CENTER,
                 TS_CANVAS_ALIGN_END, 0);
  ts_canvas_text(c, 12, p->y + p->h / 2, y_title, TS_CANVAS_ALIGN_CENTER, TS_CANVAS_ALIGN_CENTER,
                 -G_PI / 2);
  ts_canvas_end(c);
}

/* Greedy word wrap of one paragraph to max_w px at the canvas's current font. */
static void
wrap_paragraph(TsCanvas *c, const char *para, double max_w, GPtrArray *lines)
{
  g_auto(GStrv) words = g_strsplit(para, " ", -1);
  GString *line = g_string_new(NULL);
  for (guint i = 0; words[i]; i++) {
    gsize before = line->len;
    if (line->len)
      g_string_append_c(line, ' ');
    g_string_append(line, words[i]);
    double w;
    ts_canvas_text_size(c, line->str, &w, NULL);
    if (w > max_w && before > 0) {
      g_string_truncate(line, before);
      g_ptr_array_add(lines, g_strdup(line->str));
      g_string_assign(line, words[i]);
    }
  }
  g_ptr_array_add(lines, g_string_free(line, FALSE));
}

void
ts__plot_draw_message(TsCanvas *c, const TsStudioTheme *theme, const TsPlot *p, const char *cls,
                      const char *text)
{
  ts_canvas_begin(c, cls, NULL, NULL);
  ts_canvas_set_font_size(c, 13);
  ts_canvas_set_color(c, theme->muted);
  g_autoptr(GPtrArray) lines = g_ptr_array_new_with_free_func(g_free);
  g_auto(GStrv) paras = g_strsplit(text, "\n", -1);
  for (guint i = 0; paras[i]; i++)
    wrap_paragraph(c, paras[i], MAX(p->w - 24, 40), lines);
  double lh = 19, y = p->y + p->h / 2 - lh * lines->len / 2;
  for (guint i = 0; i < lines->len; i++, y += lh)
    ts_canvas_text(c, p->x + p->w / 2, y, lines->pdata[i], TS_CANVAS_ALIGN_CENTER,
                   TS_CANVAS_ALIGN_START, 0);
  ts_canvas_end(c);
}

/* ---- legend ---- */

static void
legend_item_clear(gpointer data)
{
  g_free(((TsPlotLegendItem *)data)->text);
}

GArray *
ts__plot_legend_new(void)
{
  GArray *legend = g_array_new(FALSE, TRUE, sizeof(TsPlotLegendItem));
  g_array_set_clear_func(legend, legend_item_clear);
  return legend;
}

void
ts__plot_legend_add(GArray *legend, TsPlotKeyKind kind, TsCanvasMarker marker, TsRgba color,
                    double dash, const char *format, ...)
{
  va_list ap;
  va_start(ap, format);
  TsPlotLegendItem item = {kind, marker, color, dash, g_strdup_vprintf(format, ap)};
  va_end(ap);
  g_array_append_val(legend, item);
}

void
ts__plot_legend_add_fastest(GArray *legend, const TsStudioTheme *theme, GPtrArray *trials,
                            gint64 best_id, gint64 fastest_id)
{
  const TsStudioTrial *best = NULL, *fastest = NULL;
  for (guint i = 0; i < trials->len; i++) {
    const TsStudioTrial *t = trials->pdata[i];
    best = t->id == best_id ? t : best;
    fastest = t->id == fastest_id ? t : fastest;
  }
  if (best == NULL || fastest == NULL || fastest == best)
    return;
  g_autofree char *med = ts__plot_format_ns(fastest->median_ns);
  ts__plot_legend_add(legend, TS_PLOT_KEY_NONE, 0, theme->muted, 0,
                      "fastest median: %s (trial %" G_GINT64_FORMAT "), %.1f%% below the best's",
                      med, fastest->id, 100 * (1 - fastest->median_ns / best->median_ns));
  ts__plot_legend_add(legend, TS_PLOT_KEY_NONE, 0, theme->muted, 0,
                      "but not faster beyond the noise of both: the best changes at p < 0.01");
}

void
ts__plot_draw_legend(TsCanvas *c, const TsStudioTheme *theme, const TsPlot *p, GArray *legend,
                     gboolean right)
{
  if (legend->len == 0)
    return;
  const double row = 16, key = 22, padding = 6;
  ts_canvas_begin(c, "legend", NULL, NULL);
  ts_canvas_set_font_size(c, 11);
  double text_w = 0;
  for (guint i = 0; i < legend->len; i++) {
    double w;
    ts_canvas_text_size(c, g_array_index(legend, TsPlotLegendItem, i).text, &w, NULL);
    text_w = MAX(text_w, w);
  }
  double bw = padding * 2 + key + text_w, bh = padding * 2 + row * legend->len;
  double bx = right ? p->x + p->w - 8 - bw : p->x + 8, by = p->y + 8;
  ts_canvas_set_color(c, ts_studio_rgba_alpha(theme->background, 0.88));
  ts_canvas_rect(c, bx, by, bw, bh, TRUE);
  ts_canvas_set_color(c, theme->grid);
  ts_canvas_set_line_width(c, 1);
  ts_canvas_rect(c, bx, by, bw, bh, FALSE);
  for (guint i = 0; i < legend->len; i++) {
    const TsPlotLegendItem *it = &g_array_index(legend, TsPlotLegendItem, i);
    double cy = by + padding + row * (i + 0.5), kx = bx + padding + key / 2 - 2;
    ts_canvas_set_color(c, it->color);
    switch (it->kind) {
    case TS_PLOT_KEY_MARKER:
      ts_canvas_set_line_width(c, 1.5);
      ts_canvas_marker(c, it->marker, kx, cy, 3.5);
      break;
    case TS_PLOT_KEY_RING:
      ts__plot_draw_ringed(c, theme, it->marker, it->color, theme->accent, kx, cy, 3);
      break;
    case TS_PLOT_KEY_LINE:
      ts_canvas_set_line_width(c, 2);
      ts_canvas_set_dash(c, it->dash, it->dash > 0 ? it->dash * 0.6 : 0);
      ts_canvas_line(c, kx - 8, cy, kx + 8, cy);
      ts_canvas_set_dash(c, 0, 0);
      break;
    case TS_PLOT_KEY_NONE:
      break;
    }
    ts_canvas_set_color(c, theme->foreground);
    ts_canvas_text(c, bx + padding + key, cy, it->text, TS_CANVAS_ALIGN_START,
                   TS_CANVAS_ALIGN_CENTER, 0);
  }
  ts_canvas_end(c);
}

void
ts__plot_draw_ringed(TsCanvas *c, const TsStudioTheme *theme, TsCanvasMarker marker, TsRgba fill,
                     TsRgba ring, double x, double y, double r)
{
  ts_canvas_set_color(c, ring);
  ts_canvas_marker(c, TS_CANVAS_MARKER_CIRCLE, x, y, r + 4);
  ts_canvas_set_color(c, theme->background);
  ts_canvas_marker(c, TS_CANVAS_MARKER_CIRCLE, x, y, r + 2);
  ts_canvas_set_color(c, fill);
  ts_canvas_set_line_width(c, 1.5);
  ts_canvas_marker(c, marker, x, y, r);
}

/* ---- hover text ---- */

char *
ts__plot_describe_trial(const TsStudioTrial *t)
{
  GString *s = g_string_new(t->schedule ? t->schedule : "(no schedule)");
  g_string_append_printf(s, "\nstatus: %s", ts_db_trial_status_name(t->status));
  if (t->error_text && *t->error_text) {
    /* The first line: compiler logs run long, the list and the lowering view show all of it. */
    const char *nl = strchr(t->error_text, '\n');
    g_string_append_printf(s, " (%.*s%s)",
                           nl ? (int)(nl - t->error_text) : (int)strlen(t->error_text),
                           t->error_text, nl ? " ..." : "");
  }
  if (isfinite(t->median_ns)) {
    g_autofree char *med = ts__plot_format_ns(t->median_ns);
    g_string_append_printf(s, "\nmedian %s", med);
    if (isfinite(t->min_ns) && isfinite(t->max_ns)) {
      g_autofree char *lo = ts__plot_format_ns(t->min_ns), *hi = ts__plot_format_ns(t->max_ns);
      g_string_append_printf(s, " (min %s, max %s)", lo, hi);
    }
  }
  if (isfinite(t->predicted_ns)) {
    g_autofree char *pred = ts__plot_format_ns(t->predicted_ns);
    g_string_append_printf(s, "\npredicted %s", pred);
  }
  if (isfinite(t->gflops)) {
    g_autofree char *perf = ts__plot_format_si(t->gflops * 1e9, "FLOP/s");
    g_string_append_printf(s, "\n%s", perf);
    if (isfinite(t->fraction) && t->bound) {
      g_autofree char *bound = ts__plot_format_si(t->bound_gflops * 1e9, "FLOP/s");
      g_string_append_printf(s, ", %.0f%% of the %s bound (%s)", t->fraction * 100, t->bound,
                             bound);
    }
    if (isfinite(t->intensity)) {
      g_autofree char *ai = ts__plot_format(t->intensity, TS_PLOT_FMT_PLAIN, "FLOP/B");
      g_string_append_printf(s, " at %s", ai);
    }
  }
  const char *sep = "\nmeasured traffic: ";
  for (guint l = 0; l < TS_STUDIO_N_LEVELS; l++)
    if (isfinite(t->level_intensity[l]) && t->level_intensity[l] > 0) {
      g_autofree char *bytes = ts__plot_format_si(t->level_bytes[l], "B");
      g_autofree char *ai = ts__plot_format(t->level_intensity[l], TS_PLOT_FMT_PLAIN, "FLOP/B");
      g_string_append_printf(s, "%s%s %s (%s)", sep, ts_studio_level_label(l), bytes, ai);
      sep = ", ";
    }
  g_string_append_printf(s, "\nstrategy: %s", t->strategy ? t->strategy : "unknown");
  g_string_append_printf(s, "\ntrial %" G_GINT64_FORMAT, t->id);
  if (t->run_id)
    g_string_append_printf(s, ", run %" G_GINT64_FORMAT, t->run_id);
  if (t->best)
    g_string_append(s, " (the stored best)");
  return g_string_free(s, FALSE);
}

void
ts__plot_begin_trial(TsCanvas *c, const TsStudioTrial *t)
{
  if (!ts_canvas_is_svg(c)) {
    ts_canvas_begin(c, NULL, NULL, NULL);
    return;
  }
  g_autofree char *cls = g_strdup_printf("trial %s", ts_db_trial_status_name(t->status));
  g_autofree char *id = g_strdup_printf("trial-%" G_GINT64_FORMAT, t->id);
  g_autofree char *title = ts__plot_describe_trial(t);
  ts_canvas_begin(c, cls, id, title);
}

typedef gboolean (*DrawHover)(TsStudioView *, TsCanvas *, double, double);

static DrawHover
hover_painter(const TsStudioView *view)
{
  static const struct {
    const char *name;
    DrawHover draw_hover;
  } plots[] = {
      {"roofline", ts__roofline_draw_hover},
      {"history", ts__history_draw_hover},
      {"predicted", ts__predicted_draw_hover},
      {"learned", ts__learned_draw_hover},
  };
  for (guint i = 0; i < G_N_ELEMENTS(plots); i++)
    if (g_strcmp0(ts_studio_view_name(view), plots[i].name) == 0)
      return plots[i].draw_hover;
  return NULL;
}

gboolean
ts__plot_has_hover_overlay(const TsStudioView *view)
{
  return hover_painter(view) != NULL;
}

gboolean
ts__plot_draw_hover(TsStudioView *view, TsCanvas *c, double width, double height)
{
  DrawHover draw_hover = hover_painter(view);
  if (draw_hover == NULL)
    return FALSE;
  if (view->theme == NULL)
    view->theme = ts_studio_theme(FALSE);
  return draw_hover(view, c, width, height);
}

/* ---- zoom ---- */

static void
zoom_axis(TsPlotAxis *a, double f0, double f1)
{
  if (a->scale == TS_PLOT_LOG) {
    double l = log10(a->lo), h = log10(a->hi);
    a->lo = pow(10, l + f0 * (h - l));
    a->hi = pow(10, l + f1 * (h - l));
  } else {
    double l = a->lo, h = a->hi;
    a->lo = l + f0 * (h - l);
    a->hi = l + f1 * (h - l);
  }
}

void
ts__plot_apply_zoom(const TsStudioView *view, TsPlot *p)
{
  if (!view->zoomed)
    return;
  zoom_axis(&p->ax, view->zx0, view->zx1);
  zoom_axis(&p->ay, view->zy0, view->zy1);
}

/* A window [*a, *b] of [0, 1] zoomed by factor about the fraction f of it, kept inside. */
static void
zoom_range(double *a, double *b, double factor, double f)
{
  double w = *b - *a, at = *a + CLAMP(f, 0, 1) * w;
  /* Not past a millionth of the axis: below that, doubles stop telling ticks apart. */
  double nw = CLAMP(w / factor, 1e-6, 1);
  double na = CLAMP(at - CLAMP(f, 0, 1) * nw, 0, 1 - nw);
  *a = na;
  *b = na + nw;
}

static gboolean
zoomable(const TsStudioView *view)
{
  return hover_painter(view) != NULL; /* the trial plots */
}

static void
settle(TsStudioView *view)
{
  /* Back to the whole plot: not zoomed, so the axes keep their rounded 1-2-5 ends. */
  if (view->zx1 - view->zx0 >= 1 - 1e-9 && view->zy1 - view->zy0 >= 1 - 1e-9)
    ts_studio_view_zoom_reset(view);
}

void
ts_studio_view_zoom(TsStudioView *view, double factor, double fx, double fy)
{
  g_return_if_fail(view != NULL && factor > 0);
  if (!zoomable(view))
    return;
  if (!view->zoomed) {
    view->zoomed = TRUE;
    view->zx0 = view->zy0 = 0;
    view->zx1 = view->zy1 = 1;
  }
  zoom_range(&view->zx0, &view->zx1, factor, fx);
  zoom_range(&view->zy0, &view->zy1, factor, fy);
  settle(view);
}

void
ts_studio_view_pan(TsStudioView *view, double dx, double dy)
{
  g_return_if_fail(view != NULL);
  if (!view->zoomed)
    return; /* the whole plot has nowhere to go */
  double w = view->zx1 - view->zx0, h = view->zy1 - view->zy0;
  view->zx0 = CLAMP(view->zx0 + dx * w, 0, 1 - w);
  view->zx1 = view->zx0 + w;
  view->zy0 = CLAMP(view->zy0 + dy * h, 0, 1 - h);
  view->zy1 = view->zy0 + h;
}

void
ts_studio_view_zoom_reset(TsStudioView *view)
{
  g_return_if_fail(view != NULL);
  view->zoomed = FALSE;
  view->zx0 = view->zy0 = 0;
  view->zx1 = view->zy1 = 1;
}

void
ts_studio_view_plot_fraction(const TsStudioView *view, double x, double y, double width,
                             double height, double *fx, double *fy)
{
  TsPlot p;
  ts__plot_layout(&p, width, height);
  *fx = p.w > 0 ? (x - p.x) / p.w : 0.5;
  *fy = p.h > 0 ? (p.y + p.h - y) / p.h : 0.5;
}

/* ---- the predicted and learned plots' dots ---- */

void
ts__plot_draw_dot(TsStudioView *view, TsCanvas *c, const TsPlot *p, const TsStudioTrial *t)
{
  const TsStudioTheme *th = view->theme;
  double x = ts__plot_x(p, t->predicted_ns), y = ts__plot_y(p, t->median_ns);
  ts__plot_begin_trial(c, t);
  if (t->id == view->hover || ts_studio_view_is_selected(view, t->id)) {
    TsRgba ring = t->id == view->hover ? th->highlight : th->foreground;
    ts__plot_draw_ringed(c, th, TS_CANVAS_MARKER_CIRCLE, ring, ring, x, y, 5);
  }
  ts_canvas_set_color(c, ts_studio_rgba_alpha(ts_studio_theme_series(th, t->strategy), 0.8));
  ts_canvas_marker(c, TS_CANVAS_MARKER_CIRCLE, x, y, 3);
  ts_canvas_end(c);
  view->n_drawn++;
}

void
ts__plot_draw_dots(TsStudioView *view, TsCanvas *c, const TsPlot *p, GPtrArray *trials,
                   TsPlotTrialPlace place)
{
  for (int pass = 0; pass < 2; pass++)
    for (guint i = 0; i < trials->len; i++) {
      const TsStudioTrial *t = trials->pdata[i];
      gboolean lit = t->id == view->hover || ts_studio_view_is_selected(view, t->id);
      double x, y;
      if (lit == (pass == 1) && place(t, &x, &y))
        ts__plot_draw_dot(view, c, p, t);
    }
}
