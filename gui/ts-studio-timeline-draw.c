/* ts-studio-timeline-draw.c — the parts of a timeline frame around its rows: the time axis with
 * round tick steps in ns, µs, ms or s, the lane names ("host thread N", "device stream N", as
 * the profiler's Chrome traces name them), and memory in use drawn as a filled area with its
 * peak labelled. Memory costs O(width x log n) a frame: per pixel column, the maximum over the
 * changes under it from the pre-aggregated block maxima. */
#include "ts-studio-timeline-private.h"

#include <math.h>
#include <string.h>

/* ---- text ---- */

static const struct {
  double scale;
  const char *unit;
} units[] = {{1e9, "s"}, {1e6, "ms"}, {1e3, "µs"}, {1, "ns"}};

char *
ts__tl_format_ns(double ns, double step_ns)
{
  /* Ticks: the largest unit in which the step needs at most one decimal ("0.5 ms", not
   * "500 µs"), the same for every tick. Otherwise the value's own unit. */
  guint u = 0;
  if (step_ns > 0)
    while (u + 1 < G_N_ELEMENTS(units) && step_ns < units[u].scale / 10)
      u++;
  else
    while (u + 1 < G_N_ELEMENTS(units) && fabs(ns) < units[u].scale)
      u++;
  double v = ns / units[u].scale;
  int decimals;
  if (units[u].scale == 1)
    decimals = 0; /* the clock's resolution */
  else if (step_ns > 0)
    decimals = step_ns >= units[u].scale ? 0 : 1;
  else if (step_ns < 0)
    decimals = 3;
  else /* three significant digits */
    decimals = fabs(v) >= 100 ? 0 : fabs(v) >= 10 ? 1 : 2;
  return g_strdup_printf("%.*f %s", decimals, v, units[u].unit);
}

char *
ts__tl_format_ns_exact(double ns, double step_ns)
{
  guint u = 0;
  while (u + 1 < G_N_ELEMENTS(units) && fabs(ns) < units[u].scale)
    u++;
  /* As many decimals as the step needs to be seen: 10 ns steps of seconds, 8 decimals. */
  int decimals = (int)CLAMP(ceil(log10(units[u].scale / MAX(step_ns, 1)) - 1e-9), 0, 9);
  return g_strdup_printf("%.*f %s", decimals, ns / units[u].scale, units[u].unit);
}

char *
ts__tl_lane_label(const TsTlView *tl, guint32 lane)
{
  const char *named = tl->lane_names ? g_hash_table_lookup(tl->lane_names,
                                                           GUINT_TO_POINTER(lane + 1u))
                                     : NULL;
  if (named)
    return g_strdup(named);
  if (lane >= TS_TRACE_DEVICE_LANE)
    return g_strdup_printf("device stream %u", lane - TS_TRACE_DEVICE_LANE);
  return g_strdup_printf("host thread %u", lane);
}

/* ---- axis ---- */

/* 1, 2 or 5 times a power of ten, at least raw. */
static double
nice_step(double raw)
{
  double p = pow(10, floor(log10(MAX(raw, 1))));
  double m = raw / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

void
ts__tl_draw_axis(TsTlView *tl, TsCanvas *c, const TsTlLayout *lay)
{
  const TsStudioTheme *theme = tl->parent.theme;
  ts_canvas_begin(c, "axis", NULL, NULL);
  ts_canvas_set_font_size(c, 11);
  /* About 110 px between ticks: room for "1234.56 ms". */
  double step = nice_step(110 * lay->ns_per_px);
  double bottom = lay->mem_h > 0 ? lay->mem_y + lay->mem_h : lay->height;
  double first = ceil((double)lay->t0 / step) * step;
  /* Deep in a long trace absolute ticks need a dozen digits ("25123456780 ns"): they count
   * from the first tick instead, whose time the window label gives in full. */
  gboolean relative = first / step > 1e4;
  for (double t = first; t <= (double)lay->t1; t += step) {
    double x = lay->x0 + (t - (double)lay->t0) / lay->ns_per_px;
    ts_canvas_set_color(c, theme->grid);
    ts_canvas_line(c, round(x) + 0.5, lay->rows_y - 6, round(x) + 0.5, bottom);
    g_autofree char *offset = relative ? ts__tl_format_ns(t - first, step) : NULL;
    g_autofree char *label =
      relative ? (t == first ? g_strdup("+0") : g_strdup_printf("+%s", offset))
               : ts__tl_format_ns(t, step);
    /* Labels are centred on their tick: one that would run off the right edge is left out
     * (about 6.5 px a character at 11 px). */
    if (x + 3.25 * strlen(label) > lay->width)
      continue;
    ts_canvas_set_color(c, theme->muted);
    ts_canvas_text(c, x, lay->rows_y - 8, label, TS_CANVAS_ALIGN_CENTER, TS_CANVAS_ALIGN_END, 0);
  }
  /* What the whole window spans, above the lane names. */
  g_autofree char *w = ts__tl_format_ns((double)(lay->t1 - lay->t0), 0);
  g_autofree char *base = relative ? ts__tl_format_ns_exact(first, step) : NULL;
  g_autofree char *window = relative ? g_strdup_printf("window %s · +0 = %s", w, base)
                                     : g_strdup_printf("window %s", w);
  ts_canvas_set_color(c, theme->foreground);
  ts_canvas_text(c, 6, lay->rows_y - 8, window, TS_CANVAS_ALIGN_START, TS_CANVAS_ALIGN_END, 0);
  ts_canvas_set_color(c, theme->frame);
  ts_canvas_line(c, lay->x0, lay->rows_y - 0.5, lay->x1, lay->rows_y - 0.5);
  ts_canvas_end(c);
}

/* ---- memory ---- */

/* 2 px columns: cairo's cost to fill the outline grows with its corners (1 ms for 3000), and
 * 800 steps across a plot still show every allocation. */
#define COL_PX 2

void
ts__tl_draw_memory(TsTlView *tl, TsCanvas *c, const TsTlLayout *lay)
{
  const TsTlMemory *mem = &tl->mem;
  if (lay->mem_h <= 0)
    return;
  const TsStudioTheme *theme = tl->parent.theme;
  g_autofree char *peak = g_format_size_full(mem->peak, G_FORMAT_SIZE_IEC_UNITS);
  g_autofree char *title = g_strdup_printf("memory in use, peak %s", peak);
  ts_canvas_begin(c, "memory", "memory", title);
  double top = lay->mem_y, h = lay->mem_h, bottom = top + h;
  ts_canvas_set_font_size(c, 11);
  ts_canvas_set_color(c, theme->muted);
  ts_canvas_text(c, 6, top, "memory in use", TS_CANVAS_ALIGN_START, TS_CANVAS_ALIGN_START, 0);
  ts_canvas_text(c, lay->x0 - 6, top + 15, peak, TS_CANVAS_ALIGN_END, TS_CANVAS_ALIGN_START, 0);
  ts_canvas_text(c, lay->x0 - 6, bottom, "0", TS_CANVAS_ALIGN_END, TS_CANVAS_ALIGN_END, 0);
  ts_canvas_set_color(c, theme->frame);
  ts_canvas_line(c, lay->x0, bottom + 0.5, lay->x1, bottom + 0.5);
  ts_canvas_clip(c, lay->x0, top - 1, lay->x1 - lay->x0, h + 2);

  /* Per column of COL_PX pixels, the most in use at any moment under it. */
  guint cols = (guint)ceil((lay->x1 - lay->x0) / COL_PX);
  double *xy = g_new(double, 4 * cols + 8);
  g_autofree gint64 *level = g_new(gint64, MAX(cols, 1));
  ts__tl_memory_columns(mem, lay->t0, COL_PX * lay->ns_per_px, cols, level);
  guint n = 0;
  xy[n++] = lay->x0;
  xy[n++] = bottom;
  double scale = mem->peak > 0 ? h / (double)mem->peak : 0, last_y = -1;
  for (guint col = 0; col < cols; col++) {
    gint64 v = level[col];
    /* Whole pixels: no anti-aliased edges for cairo to work out. */
    double y = round(bottom - (double)v * scale), x = lay->x0 + col * COL_PX;
    if (y != last_y) {
      xy[n++] = x;
      xy[n++] = y;
      last_y = y;
    }
    xy[n++] = MIN(x + COL_PX, lay->x1);
    xy[n++] = y;
  }
  xy[n++] = lay->x1;
  xy[n++] = bottom;
  /* Filled, not stroked: stroking a 3000-point outline costs cairo more than a frame's
   * worth of rows. */
  ts_canvas_set_color(c, ts_studio_rgba_alpha(theme->series[0], 0.6));
  ts_canvas_polygon(c, xy, n / 2);
  g_free(xy);

  /* The peak, where it is when it is in view. */
  if (mem->peak > 0 && mem->peak_t >= lay->t0 && mem->peak_t <= lay->t1) {
    double x = ts__tl_x(lay, mem->peak_t);
    g_autofree char *label = g_strdup_printf("peak %s", peak);
    ts_canvas_set_color(c, theme->foreground);
    ts_canvas_marker(c, TS_CANVAS_MARKER_CIRCLE, x, top + 1, 2.5);
    gboolean right = x > (lay->x0 + lay->x1) / 2;
    ts_canvas_text(c, right ? x - 5 : x + 5, top + 1, label,
                   right ? TS_CANVAS_ALIGN_END : TS_CANVAS_ALIGN_START, TS_CANVAS_ALIGN_START, 0);
  }
  ts_canvas_end(c);
}

gint64
ts__tl_hit_memory(TsTlView *tl, const TsTlLayout *lay, double x)
{
  const TsTlMemory *mem = &tl->mem;
  gint64 t = lay->t0 + (gint64)((x - lay->x0) * lay->ns_per_px);
  /* The change just before the pointer or the one after it, whichever is nearer. */
  guint at = ts__tl_memory_at(mem, 0, t), k0 = at == G_MAXUINT ? 0 : at;
  gint64 best = 0;
  double best_d = 4; /* px */
  for (guint k = k0; k < mem->n && k <= k0 + 1; k++) {
    double d = fabs(ts__tl_x(lay, mem->t[k]) - x);
    if (d <= best_d) {
      best_d = d;
      best = (gint64)mem->index[k] + 1;
    }
  }
  return best;
}
