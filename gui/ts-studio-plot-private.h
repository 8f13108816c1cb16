/* ts-studio-plot-private.h — what the trial plots (roofline, history, predicted) share: axes
 * with nice ticks on linear and log10 scales, the mapping from data to pixels, the frame, grid,
 * titles, legend and messages drawn through TsCanvas, the nearest-mark hit test, and Kendall's
 * tau-b. Not API: the views are.
 *
 * A plot's layout is a pure function of its size and its data (margins are fixed, never measured
 * from text), so hit(), which gets no canvas, maps a pointer to the very pixels draw() used. */
#pragma once

#include "ts-studio-canvas.h"
#include "ts-studio-theme.h"
#include "ts-studio-view.h"

G_BEGIN_DECLS

typedef enum {
  TS_PLOT_LINEAR,
  TS_PLOT_LOG, /* log10: only positive values have a place */
} TsPlotScale;

typedef enum {
  TS_PLOT_FMT_PLAIN, /* 0.01, 2.5, 1000; SI prefixes only beyond 10^4 or below 10^-3 */
  TS_PLOT_FMT_SI,    /* 1 G, 100 µs, 2.5 k */
} TsPlotFormat;

typedef struct {
  TsPlotScale scale;
  double lo, hi; /* the data range shown */
  double p0, p1; /* the pixels lo and hi map to (y: p0 is the bottom) */
  TsPlotFormat format;
  double label_scale; /* tick values are multiplied by it before labelling (ns -> s: 1e-9) */
  const char *unit;   /* appended to tick labels ("s" gives "100 µs"); NULL: none */
} TsPlotAxis;

typedef struct {
  double width, height; /* the whole view */
  double x, y, w, h;    /* the plot area */
  TsPlotAxis ax, ay;
} TsPlot;

/* The plot area of a view of width x height: fixed margins for the title above, tick labels and
 * axis titles left and below. Resets both axes (linear, plain labels) to span the area. */
void ts__plot_layout(TsPlot *plot, double width, double height);

/* Sets the axis to cover [lo, hi] (data units, any order, NAN/infinite ignored) padded by pad
 * (a factor on a log axis, a fraction of the span on a linear one), rounded outwards to 1-2-5
 * values. Degenerate ranges widen around their value; no finite value gives [1, 10]. */
void ts__plot_axis_fit(TsPlotAxis *axis, TsPlotScale scale, double lo, double hi, double pad);
/* Narrows both axes to the part of them view's zoom shows: each plot's layout calls it after
 * fitting its axes. */
void ts__plot_apply_zoom(const TsStudioView *view, TsPlot *plot);
/* Pixel of a data value; log axes map values <= 0 far below the range (clipped away). */
double ts__plot_axis_map(const TsPlotAxis *axis, double v);
double ts__plot_x(const TsPlot *plot, double v);
double ts__plot_y(const TsPlot *plot, double v);
gboolean ts__plot_contains(const TsPlot *plot, double px, double py);

typedef struct {
  double value;
  gboolean major; /* labelled, a stronger grid line */
} TsPlotTick;

/* The ticks of axis over a length of length_px (fewer when crowded), at most max; count. */
guint ts__plot_ticks(const TsPlotAxis *axis, double length_px, TsPlotTick *out, guint max);

/* "1 G", "100 µs", "2.5 k", "0.01": three significant digits, C-locale decimals. */
char *ts__plot_format_si(double v, const char *unit);
char *ts__plot_format(double v, TsPlotFormat format, const char *unit);
/* A duration in ns for people: "812 ns", "1.23 ms", "4.5 s". */
char *ts__plot_format_ns(double ns);

/* Background, title (and a muted subtitle, may be NULL) above the plot area. */
void ts__plot_draw_title(TsCanvas *canvas, const TsStudioTheme *theme, const TsPlot *plot,
                         const char *title, const char *subtitle);
/* Grid, frame, ticks with labels and the axis titles (group class "axes"). */
void ts__plot_draw_axes(TsCanvas *canvas, const TsStudioTheme *theme, const TsPlot *plot,
                        const char *x_title, const char *y_title);
/* Lines of text (split at '\n' and wrapped at words to the plot's width) centred in the plot
 * area, in a group of class cls. */
void ts__plot_draw_message(TsCanvas *canvas, const TsStudioTheme *theme, const TsPlot *plot,
                           const char *cls, const char *text);

typedef enum {
  TS_PLOT_KEY_MARKER, /* a marker of the colour */
  TS_PLOT_KEY_RING,   /* a marker ringed (the best) */
  TS_PLOT_KEY_LINE,   /* a line (solid, or dashed when dash > 0) */
  TS_PLOT_KEY_NONE,   /* text only */
} TsPlotKeyKind;

typedef struct {
  TsPlotKeyKind kind;
  TsCanvasMarker marker;
  TsRgba color;
  double dash;
  char *text; /* owned */
} TsPlotLegendItem;

/* A GArray of TsPlotLegendItem that frees the items' texts. */
GArray *ts__plot_legend_new(void);
void ts__plot_legend_add(GArray *legend, TsPlotKeyKind kind, TsCanvasMarker marker, TsRgba color,
                         double dash, const char *format, ...) G_GNUC_PRINTF(6, 7);
/* When the fastest median (fastest_id, 0: it is the best) is not the stored best (best_id), a
 * legend line saying so and why: the tuner replaces its best only for a trial faster beyond the
 * noise of both. trials: TsStudioTrial*. */
void ts__plot_legend_add_fastest(GArray *legend, const TsStudioTheme *theme, GPtrArray *trials,
                                 gint64 best_id, gint64 fastest_id);
/* A boxed legend inside the plot area, in its top left (right FALSE) or top right corner. */
void ts__plot_draw_legend(TsCanvas *canvas, const TsStudioTheme *theme, const TsPlot *plot,
                          GArray *legend, gboolean right);

/* A filled marker of radius r ringed in ring's colour (the ring is two circles below it: ring,
 * then the background, so it reads on any backdrop and stays one <circle> each in SVG). */
void ts__plot_draw_ringed(TsCanvas *canvas, const TsStudioTheme *theme, TsCanvasMarker marker,
                          TsRgba fill, TsRgba ring, double x, double y, double r);

/* The index of the pixel position (xy[2i], xy[2i+1]) nearest to (x, y) within radius px, or -1. */
gint ts__plot_nearest(const double *xy, guint n, double x, double y, double radius);

/* Scatter plots of trials (roofline, predicted vs measured) share their hit test and hover
 * overlay; each says where a trial sits in data space (FALSE: not plotted) and how to draw it. */
typedef gboolean (*TsPlotTrialPlace)(const TsStudioTrial *trial, double *x, double *y);
typedef void (*TsPlotTrialDraw)(TsStudioView *view, TsCanvas *canvas, const TsPlot *plot,
                                const TsStudioTrial *trial);
/* The id of the plotted trial nearest (x, y) within radius px, or 0. */
gint64 ts__plot_hit_trials(const TsPlot *plot, GPtrArray *trials, TsPlotTrialPlace place,
                           double x, double y, double radius);
/* The ids of the plotted trials whose points lie in [x0, x1] x [y0, y1] (pixels) and inside
 * the plot area, in trials' order. */
GArray *ts__plot_brush_trials(const TsPlot *plot, GPtrArray *trials, TsPlotTrialPlace place,
                              double x0, double y0, double x1, double y1);
/* Draws view->hover again over a finished plot (clipped to the plot area), leaving n_drawn as
 * it was: the overlay is not another mark. */
void ts__plot_draw_hover_trial(TsStudioView *view, TsCanvas *canvas, const TsPlot *plot,
                               GPtrArray *trials, TsPlotTrialPlace place, TsPlotTrialDraw draw);

/* The predicted and learned plots' mark: a dot at (predicted_ns, median_ns) in its strategy's
 * colour, ringed when hovered or selected; counts in view->n_drawn. A TsPlotTrialDraw. */
void ts__plot_draw_dot(TsStudioView *view, TsCanvas *canvas, const TsPlot *plot,
                       const TsStudioTrial *trial);
/* Those dots for every trial place() plots, the hovered and selected last (on top). */
void ts__plot_draw_dots(TsStudioView *view, TsCanvas *canvas, const TsPlot *plot,
                        GPtrArray *trials, TsPlotTrialPlace place);

/* Kendall's tau-b of n pairs (Knight's O(n log n) algorithm, ties in either variable
 * accounted for); NAN when n < 2 or either variable is constant. */
double ts__plot_kendall_tau_b(const double *x, const double *y, guint n);

/* ---- the roofline's roofs (ts-studio-roofs.c) ---- */

typedef struct {
  char *name;
  TsProfCeilingKind kind;
  double value; /* GFLOP/s or GB/s, whole device */
} TsPlotRoof;

typedef struct {
  GArray *roofs;    /* TsPlotRoof: compute first, each kind highest first */
  const char *held; /* the compute roof the workload is held to (a name in roofs), or NULL */
  double dram;      /* GB/s the compute roofs meet: DRAM, else the slowest memory roof; 0: none */
  double peak;      /* the highest compute roof; 0: none */
} TsPlotRoofs;

/* A copy of the workload's device's ceilings (none when it has none), so a view keeps no
 * pointer into the TsStudioDb. */
void ts__plot_roofs_init(TsPlotRoofs *roofs, const TsStudioWorkload *workload);
void ts__plot_roofs_clear(TsPlotRoofs *roofs);
/* What cannot be right about the measured ceilings — a cache level slower than one further
 * out (L3 under DRAM), f64 faster than f32 — as one sentence with what to do, or NULL. Such
 * ceilings were measured on a loaded machine; the plot shows them, but says so. */
char *ts__plot_roofs_implausible(const TsPlotRoofs *roofs);
/* Widens the data ranges to show every ridge point and the roofs around them. */
void ts__plot_roofs_extend(const TsPlotRoofs *roofs, double *x_lo, double *x_hi, double *y_lo,
                           double *y_hi);
/* The roof of that name ("dram", "l2", "f32"), or NULL. */
const TsPlotRoof *ts__plot_roofs_find(const TsPlotRoofs *roofs, const char *name);
/* Groups of class "ceiling compute" / "ceiling memory", id "ceiling-NAME", each roof labelled
 * with its name and value; the caller clips to the plot area. */
void ts__plot_roofs_draw(const TsPlotRoofs *roofs, TsCanvas *canvas, const TsStudioTheme *theme,
                         const TsPlot *plot);

/* ---- the hierarchical roofline of one trial (ts-studio-roofline-levels.c) ---- */

/* The trial whose per-level points the roofline shows: the selected one when its bytes per
 * level were measured, else the best when its were; NULL when neither. */
const TsStudioTrial *ts__roofline_level_trial(GPtrArray *trials, gint64 selected,
                                              gint64 best_id);
/* Widens an intensity range to every measured level point of trials. */
void ts__roofline_levels_extend(GPtrArray *trials, double *x_lo, double *x_hi);
/* One point per measured level at (FLOP per byte of the level, the trial's FLOP/s), labelled
 * "DRAM", "L2", "L1": a group of class "levels" id "levels-ID" holding one of class
 * "level NAME" id "level-ID-NAME" per level, titled as ts__roofline_level_title says. */
void ts__roofline_levels_draw(TsCanvas *canvas, const TsStudioTheme *theme, const TsPlot *plot,
                              const TsPlotRoofs *roofs, const TsStudioTrial *trial);
/* "trial 7 at L2: 9 MB moved, 29.8 FLOP/B, 1.2 TFLOP/s, 45% of the l2 bound there (...)";
 * roofs may be NULL (no bound then). */
char *ts__roofline_level_title(const TsPlotRoofs *roofs, const TsStudioTrial *trial,
                               TsStudioLevel level);
gboolean ts__roofline_levels_hit(const TsPlot *plot, const TsStudioTrial *trial, double x,
                                 double y, double radius);

/* The hover highlight alone, to paint over a drawing of the same view at the same size made
 * with hover = 0. The plot widget keeps that drawing and repaints only this while the pointer
 * moves: a full redraw of thousands of marks costs tens of ms, this a fraction of one. FALSE
 * when view is not one of the trial plots (draw it whole instead). */
gboolean ts__plot_draw_hover(TsStudioView *view, TsCanvas *canvas, double width, double height);
gboolean ts__plot_has_hover_overlay(const TsStudioView *view);
gboolean ts__roofline_draw_hover(TsStudioView *view, TsCanvas *canvas, double width, double height);
gboolean ts__history_draw_hover(TsStudioView *view, TsCanvas *canvas, double width, double height);
gboolean ts__predicted_draw_hover(TsStudioView *view, TsCanvas *canvas, double width,
                                  double height);
gboolean ts__learned_draw_hover(TsStudioView *view, TsCanvas *canvas, double width,
                                double height);

/* The trial plots' common hover text: schedule, status, time, figures, strategy, id. */
char *ts__plot_describe_trial(const TsStudioTrial *trial);
/* Opens the group of a trial's mark: class "trial STATUS", id "trial-ID", the hover text as its
 * title. On a cairo canvas nothing is formatted: nobody reads titles there, and formatting one
 * per mark per frame would be a good part of a redraw. Close with ts_canvas_end. */
void ts__plot_begin_trial(TsCanvas *canvas, const TsStudioTrial *trial);

G_END_DECLS
