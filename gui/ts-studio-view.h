/* ts-studio-view.h — a view: something that draws itself on a canvas at any size, knows which
 * mark is under a point, and describes a mark for a tooltip. The window hosts views in widgets
 * (TsStudioPlotArea, TsStudioTimelineArea); the exporter draws the very same views into files.
 *
 * Marks are identified by a gint64: a trial id in the trial plots, an event index in the
 * timeline; 0 means none. */
#pragma once

#include <glib.h>

#include "ts-studio-canvas.h"
#include "ts-studio-data.h"
#include "ts-studio-theme.h"

G_BEGIN_DECLS

typedef struct _TsStudioView TsStudioView;

typedef struct {
  const char *name; /* "roofline", "history", "predicted", "timeline" */
  /* What a mark is, plural, for "N of M points drawn" (NULL: "marks"). */
  const char *unit;
  void (*draw)(TsStudioView *view, TsCanvas *canvas, double width, double height);
  /* The mark within a few px of (x, y) in a view drawn at width x height, or 0. */
  gint64 (*hit)(TsStudioView *view, double x, double y, double width, double height);
  /* The marks whose points lie in the pixel rectangle [x0, x1] x [y0, y1] of a view drawn at
   * width x height, in the view's order (GArray of gint64); NULL: the view has no brush. */
  GArray *(*brush)(TsStudioView *view, double x0, double y0, double x1, double y1,
                   double width, double height);
  /* One or more lines for a tooltip; NULL when the id is unknown. */
  char *(*describe)(TsStudioView *view, gint64 id);
  void (*finalize)(TsStudioView *view);
} TsStudioViewClass;

struct _TsStudioView {
  const TsStudioViewClass *klass;
  const TsStudioTheme *theme; /* default: light */
  gint64 selected, hover;     /* drawn highlighted; 0: none */
  GHashTable *selection;      /* more marks drawn as selected (gint64 keys); NULL: only selected */
  /* What the last draw showed, for tests and the benchmark: marks drawn (after folding) and
   * marks the view holds. */
  guint n_drawn, n_marks;
  /* The trial plots' zoom: the part of the fitted axes shown, as fractions of each (in axis
   * space: decades on a log axis); zoomed FALSE shows them whole. */
  gboolean zoomed;
  double zx0, zx1, zy0, zy1;
};

void ts_studio_view_free(TsStudioView *view);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsStudioView, ts_studio_view_free)
const char *ts_studio_view_name(const TsStudioView *view);
/* Zooming a trial plot (roofline, history, predicted, learned; other views ignore it): by
 * factor (> 1: in) about the point at fractions (fx, fy) of the plot area from its left and
 * bottom edges; panning by fractions of the part shown (positive: later, higher); resetting
 * to the whole plot. The part shown stays within the fitted axes. */
void ts_studio_view_zoom(TsStudioView *view, double factor, double fx, double fy);
void ts_studio_view_pan(TsStudioView *view, double dx, double dy);
void ts_studio_view_zoom_reset(TsStudioView *view);
/* (fx, fy) of the pixel (x, y) of a plot drawn width x height (may be outside 0..1). */
void ts_studio_view_plot_fraction(const TsStudioView *view, double x, double y, double width,
                                  double height, double *fx, double *fy);
const char *ts_studio_view_unit(const TsStudioView *view);
void ts_studio_view_set_theme(TsStudioView *view, const TsStudioTheme *theme);
void ts_studio_view_draw(TsStudioView *view, TsCanvas *canvas, double width, double height);
gint64 ts_studio_view_hit(TsStudioView *view, double x, double y, double width, double height);
/* The marks inside a rectangle given by two corners in pixels, as klass->brush says (an empty
 * array for a view without a brush). */
GArray *ts_studio_view_brush(TsStudioView *view, double x0, double y0, double x1, double y1,
                             double width, double height);
/* Selects n marks: ids[0] becomes view->selected, all are drawn selected (n 0: none). */
void ts_studio_view_set_selection(TsStudioView *view, const gint64 *ids, guint n);
/* Whether id is drawn as selected. */
gboolean ts_studio_view_is_selected(const TsStudioView *view, gint64 id);
char *ts_studio_view_describe(TsStudioView *view, gint64 id);

/* ---- the trial plots (ts-studio-roofline.c, ts-studio-history.c) ----
 * trials: GPtrArray of TsStudioTrial* as ts_studio_db_trials returns (a reference is taken). */

typedef enum {
  TS_STUDIO_COLOR_BY_STATUS,
  TS_STUDIO_COLOR_BY_STRATEGY,
} TsStudioColorBy;

/* Log-log roofline: the device's compute roofs (one per dtype measured) and memory roofs (DRAM,
 * and the caches as dashed lines), one marker per trial with roofline coordinates, coloured by
 * status or strategy, the best ringed. Exported SVG: each trial is a group of class "trial
 * STATUS" with id "trial-ID"; each roof a group of class "ceiling compute|memory" with id
 * "ceiling-NAME". Without ceilings it says so and still plots the points. */
TsStudioView *ts_studio_roofline_new(const TsStudioWorkload *workload, GPtrArray *trials);
void ts_studio_roofline_set_color_by(TsStudioView *view, TsStudioColorBy color_by);

typedef enum {
  TS_STUDIO_HISTORY_BY_INDEX, /* x: trial number */
  TS_STUDIO_HISTORY_BY_WALL,  /* x: seconds since the first trial */
} TsStudioHistoryAxis;

/* Best-so-far time per tuning run (a step line per run, coloured by its strategy, legend
 * "run N: strategy"), plus every verified trial as a faint point. SVG: a group of class
 * "run" per run, id "run-ID". */
TsStudioView *ts_studio_history_new(const TsStudioWorkload *workload, GPtrArray *trials,
                                    GPtrArray *runs, TsStudioHistoryAxis axis);
/* Predicted (the cost model's stored estimate) vs measured time, log-log, with the y = x line
 * and the rank correlation (Kendall tau) in the title; says so when no trial has a prediction. */
TsStudioView *ts_studio_predicted_new(const TsStudioWorkload *workload, GPtrArray *trials);
/* A collective's bus bandwidth against message size, a line per algorithm (series from
 * ts_studio_db_bandwidth); series NULL draws `why` (the workload is not a collective). */
TsStudioView *ts_studio_bandwidth_new(const TsStudioWorkload *workload, GPtrArray *series,
                                      const char *why);
/* The learned cost model's ranking of the verified trials (x: rank, 1 = scored fastest)
 * against their measured medians, Kendall tau-b of scores and times in the title, whether the
 * model was trained with these trials in the subtitle. learned NULL: the plot says why (why). */
TsStudioView *ts_studio_learned_new(const TsStudioWorkload *workload, GPtrArray *trials,
                                    const TsStudioLearned *learned, const char *why);

/* ---- text views (ts-studio-lowering-view.c) ---- */

/* The four lowering stages side by side in monospace columns, each clipped to its column
 * (SVG: a group of class "stage" id "stage-graph|schedule|tile|target" per column, holding
 * every line of the stage as text). Takes ownership of lowering. */
TsStudioView *ts_studio_lowering_view_new(TsStudioLowering *lowering, const char *title);
/* A diff of two Target IRs: changed lines with a few lines of context, deletions red and
 * additions green (SVG: groups of class "diff del" / "diff add" / "diff same"). Takes
 * ownership of diff. */
TsStudioView *ts_studio_diff_view_new(TsStudioDiff *diff, const char *a_name, const char *b_name);

G_END_DECLS
