/* ts-studio-roofline-levels.c — the hierarchical roofline of one trial: where the hardware
 * counters of a profiled run measured the bytes each memory level moved (DRAM, L2, L1 on a
 * GPU), the trial's achieved FLOP/s is placed once per level, at the op's FLOPs per byte of
 * that level, and judged against that level's roof. A kernel far right of its compulsory
 * intensity at DRAM reuses well; one whose L1 point sits on the L1 roof is bound there however
 * little DRAM traffic it makes. Nsight Compute draws the same chart for one kernel; here it is
 * drawn for the selected trial, or the best when the selection has no counters. */
#include "ts-studio-plot-private.h"

#include <math.h>

#define LEVEL_R 4.0

/* NAN (and 0, in a trial built without the data layer) is not measured. */
static gboolean
measured(const TsStudioTrial *t, guint l)
{
  return isfinite(t->level_intensity[l]) && t->level_intensity[l] > 0;
}

static gboolean
has_levels(const TsStudioTrial *t)
{
  if (!(isfinite(t->gflops) && t->gflops > 0))
    return FALSE;
  for (guint l = 0; l < TS_STUDIO_N_LEVELS; l++)
    if (measured(t, l))
      return TRUE;
  return FALSE;
}

const TsStudioTrial *
ts__roofline_level_trial(GPtrArray *trials, gint64 selected, gint64 best_id)
{
  const TsStudioTrial *best = NULL;
  for (guint i = 0; i < trials->len; i++) {
    const TsStudioTrial *t = trials->pdata[i];
    if (t->id == selected && has_levels(t))
      return t;
    if (t->id == best_id)
      best = t;
  }
  return best && has_levels(best) ? best : NULL;
}

void
ts__roofline_levels_extend(GPtrArray *trials, double *xl, double *xh)
{
  for (guint i = 0; i < trials->len; i++) {
    const TsStudioTrial *t = trials->pdata[i];
    if (!has_levels(t))
      continue;
    for (guint l = 0; l < TS_STUDIO_N_LEVELS; l++)
      if (measured(t, l)) {
        *xl = MIN(*xl, t->level_intensity[l]);
        *xh = MAX(*xh, t->level_intensity[l]);
      }
  }
}

/* The bound at the level's intensity: its own roof, under the compute roof the op is held to
 * (or the highest); NAN when the device has no measured roof for the level. */
static double
level_bound(const TsPlotRoofs *roofs, TsStudioLevel l, double intensity)
{
  const TsPlotRoof *mem = ts__plot_roofs_find(roofs, ts_studio_level_name(l));
  if (mem == NULL || mem->kind != TS_PROF_MEMORY)
    return NAN;
  const TsPlotRoof *held = roofs->held ? ts__plot_roofs_find(roofs, roofs->held) : NULL;
  double peak = held ? held->value : roofs->peak;
  double bw = mem->value * intensity;
  return peak > 0 ? MIN(bw, peak) : bw;
}

char *
ts__roofline_level_title(const TsPlotRoofs *roofs, const TsStudioTrial *t, TsStudioLevel l)
{
  g_autofree char *bytes = ts__plot_format_si(t->level_bytes[l], "B");
  g_autofree char *ai = ts__plot_format(t->level_intensity[l], TS_PLOT_FMT_PLAIN, "FLOP/B");
  g_autofree char *perf = ts__plot_format_si(t->gflops * 1e9, "FLOP/s");
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "trial %" G_GINT64_FORMAT " at %s: %s moved, %s, %s",
                         t->id, ts_studio_level_label(l), bytes, ai, perf);
  double bound = roofs ? level_bound(roofs, l, t->level_intensity[l]) : NAN;
  if (isfinite(bound) && bound > 0) {
    g_autofree char *b = ts__plot_format_si(bound * 1e9, "FLOP/s");
    g_string_append_printf(s, ", %.0f%% of the %s bound there (%s)", 100 * t->gflops / bound,
                           ts_studio_level_name(l), b);
  }
  return g_string_free(s, FALSE);
}

static gboolean
level_xy(const TsPlot *p, const TsStudioTrial *t, TsStudioLevel l, double *x, double *y)
{
  if (!measured(t, l))
    return FALSE;
  *x = ts__plot_x(p, t->level_intensity[l]);
  *y = ts__plot_y(p, t->gflops);
  return TRUE;
}

void
ts__roofline_levels_draw(TsCanvas *c, const TsStudioTheme *th, const TsPlot *p,
                         const TsPlotRoofs *roofs, const TsStudioTrial *t)
{
  double lo = INFINITY, hi = -INFINITY, y = 0;
  for (guint l = 0; l < TS_STUDIO_N_LEVELS; l++) {
    double x;
    if (level_xy(p, t, l, &x, &y)) {
      lo = MIN(lo, x);
      hi = MAX(hi, x);
    }
  }
  g_autofree char *id = g_strdup_printf("levels-%" G_GINT64_FORMAT, t->id);
  ts_canvas_begin(c, "levels", id, NULL);
  TsRgba color = th->memory_roof;
  /* The points share the trial's FLOP/s: one faint line joins them, so the eye reads them as
   * one kernel seen from three levels. */
  ts_canvas_set_color(c, ts_studio_rgba_alpha(color, 0.5));
  ts_canvas_set_line_width(c, 1);
  ts_canvas_set_dash(c, 3, 3);
  if (hi > lo)
    ts_canvas_line(c, lo, y, hi, y);
  ts_canvas_set_dash(c, 0, 0);
  ts_canvas_set_font_size(c, 11);
  for (guint l = 0; l < TS_STUDIO_N_LEVELS; l++) {
    double x;
    if (!level_xy(p, t, l, &x, &y))
      continue;
    g_autofree char *cls = g_strdup_printf("level %s", ts_studio_level_name(l));
    g_autofree char *lid =
        g_strdup_printf("level-%" G_GINT64_FORMAT "-%s", t->id, ts_studio_level_name(l));
    g_autofree char *title = ts__roofline_level_title(roofs, t, l);
    ts_canvas_begin(c, cls, lid, title);
    ts__plot_draw_ringed(c, th, TS_CANVAS_MARKER_SQUARE, color, th->background, x, y, LEVEL_R);
    ts_canvas_set_color(c, color);
    ts_canvas_text(c, x, y - LEVEL_R - 3, ts_studio_level_label(l), TS_CANVAS_ALIGN_CENTER,
                   TS_CANVAS_ALIGN_END, 0);
    ts_canvas_end(c);
  }
  ts_canvas_end(c);
}

gboolean
ts__roofline_levels_hit(const TsPlot *p, const TsStudioTrial *t, double x, double y,
                        double radius)
{
  for (guint l = 0; l < TS_STUDIO_N_LEVELS; l++) {
    double lx, ly;
    if (level_xy(p, t, l, &lx, &ly) && hypot(lx - x, ly - y) <= radius)
      return TRUE;
  }
  return FALSE;
}
