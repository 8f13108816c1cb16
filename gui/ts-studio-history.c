/* ts-studio-history.c — the tuning history: per tuning run, the best median time found so far
 * against the trial's position in the workload (or the wall time since the first trial), a step
 * line on a log time axis, coloured by the run's strategy, so runs of different strategies race
 * each other on one plot. Every verified trial is a faint point under its run's line, failed
 * trials are crosses along the bottom edge (they cost time too), the overall best is ringed.
 *
 * Trials join runs by run_id; trials stored outside a run (run_id 0, or a run this cache no
 * longer lists) form one group, "no run". A second run of a strategy already shown is dashed so
 * the two stay apart. */
#include "ts-studio-plot-private.h"

#include <math.h>

#define HIT_RADIUS 6.0

typedef struct {
  gint64 id; /* 0: the trials of no run */
  char *strategy;
  double dash;       /* 0: solid */
  GPtrArray *trials; /* borrowed TsStudioTrial*, in x order */
} Run;

typedef struct {
  TsStudioView view;
  GPtrArray *trials;
  GArray *runs; /* Run: the runs given, in their order, then "no run" */
  TsStudioHistoryAxis axis;
  char *title, *subtitle;
  double x_lo, x_hi, y_lo, y_hi;
  gint64 best_id;
  gint64 fastest_id; /* the fastest median, when it is not the best */
  guint n_failed;  /* failed trials with a place on the x axis */
  guint n_untimed; /* wall axis: trials without a time stamp */
} History;

static gboolean
verified(const TsStudioTrial *t)
{
  return t->status == TS_DB_TRIAL_OK && isfinite(t->median_ns) && t->median_ns > 0;
}

static double
trial_x(const History *h, const TsStudioTrial *t)
{
  return h->axis == TS_STUDIO_HISTORY_BY_WALL ? t->wall_s : (double)t->index;
}

static void
run_clear(gpointer data)
{
  Run *run = data;
  g_free(run->strategy);
  g_ptr_array_unref(run->trials);
}

static int
by_x(gconstpointer pa, gconstpointer pb, gpointer history)
{
  const TsStudioTrial *a = *(TsStudioTrial *const *)pa, *b = *(TsStudioTrial *const *)pb;
  double xa = trial_x(history, a), xb = trial_x(history, b);
  if (xa != xb)
    return xa < xb ? -1 : 1;
  return a->index < b->index ? -1 : a->index > b->index;
}

static void
group_by_run(History *h, GPtrArray *runs)
{
  g_autoptr(GHashTable) by_id = g_hash_table_new(g_int64_hash, g_int64_equal);
  for (guint i = 0; runs && i < runs->len; i++) {
    const TsStudioRun *src = runs->pdata[i];
    Run run = {src->id, g_strdup(src->strategy), 0, g_ptr_array_new()};
    g_array_append_val(h->runs, run);
  }
  Run none = {0, NULL, 0, g_ptr_array_new()};
  g_array_append_val(h->runs, none);
  for (guint i = 0; i < h->runs->len; i++) {
    Run *run = &g_array_index(h->runs, Run, i);
    if (run->id != 0)
      g_hash_table_insert(by_id, &run->id, run);
  }
  for (guint i = 0; i < h->trials->len; i++) {
    TsStudioTrial *t = h->trials->pdata[i];
    if (!isfinite(trial_x(h, t))) {
      h->n_untimed++;
      continue;
    }
    Run *run = t->run_id ? g_hash_table_lookup(by_id, &t->run_id) : NULL;
    if (run == NULL)
      run = &g_array_index(h->runs, Run, h->runs->len - 1);
    g_ptr_array_add(run->trials, t);
  }
  for (guint i = 0; i < h->runs->len; i++)
    g_ptr_array_sort_with_data(g_array_index(h->runs, Run, i).trials, by_x, h);
  /* A strategy's second run is dashed, its third more sparsely, ... */
  for (guint i = 0; i < h->runs->len; i++) {
    Run *run = &g_array_index(h->runs, Run, i);
    guint same = 0;
    for (guint j = 0; j < i; j++) {
      const Run *prev = &g_array_index(h->runs, Run, j);
      same += prev->trials->len > 0 && g_strcmp0(prev->strategy, run->strategy) == 0;
    }
    run->dash = same ? 2 + 3 * same : 0;
  }
}

static void
fit_ranges(History *h)
{
  double xl = INFINITY, xh = -INFINITY, yl = INFINITY, yh = -INFINITY, fastest = INFINITY;
  for (guint i = 0; i < h->runs->len; i++) {
    const Run *run = &g_array_index(h->runs, Run, i);
    for (guint j = 0; j < run->trials->len; j++) {
      const TsStudioTrial *t = run->trials->pdata[j];
      double x = trial_x(h, t);
      xl = MIN(xl, x);
      xh = MAX(xh, x);
      if (!verified(t)) {
        h->n_failed++;
        continue;
      }
      yl = MIN(yl, t->median_ns);
      yh = MAX(yh, t->median_ns);
      if (t->median_ns < fastest) {
        fastest = t->median_ns;
        h->fastest_id = t->id;
      }
      if (t->best)
        h->best_id = t->id;
    }
  }
  /* The key's stored best, as the list and the roofline ring it; the fastest median only when
   * none is stored (an older cache). */
  if (h->best_id == 0)
    h->best_id = h->fastest_id;
  if (h->fastest_id == h->best_id)
    h->fastest_id = 0;
  h->x_lo = xl;
  h->x_hi = xh;
  h->y_lo = yl;
  h->y_hi = yh;
}

static void
layout(const History *h, double width, double height, TsPlot *p)
{
  ts__plot_layout(p, width, height);
  p->ax.format = TS_PLOT_FMT_PLAIN;
  p->ax.label_scale = 1;
  p->ay.format = TS_PLOT_FMT_SI;
  p->ay.label_scale = 1e-9; /* ns stored, seconds with prefixes shown */
  p->ay.unit = "s";
  ts__plot_axis_fit(&p->ax, TS_PLOT_LINEAR, h->x_lo, h->x_hi, 0.03);
  ts__plot_axis_fit(&p->ay, TS_PLOT_LOG, h->y_lo, h->y_hi, 1.3);
  ts__plot_apply_zoom(&h->view, p);
}

/* Failures have no time: they sit on the bottom edge. */
static void
mark_position(const History *h, const TsPlot *p, const TsStudioTrial *t, double *x, double *y)
{
  *x = ts__plot_x(p, trial_x(h, t));
  *y = verified(t) ? ts__plot_y(p, t->median_ns) : p->y + p->h - 5;
}

/* The best-so-far step line in data coordinates: flat until a trial beats it, then down; it
 * runs on to the run's last trial. Empty when the run verified nothing. */
static GArray *
best_so_far(const History *h, const Run *run)
{
  GArray *xy = g_array_new(FALSE, FALSE, sizeof(double));
  double best = INFINITY;
  for (guint j = 0; j < run->trials->len; j++) {
    const TsStudioTrial *t = run->trials->pdata[j];
    if (!verified(t) || t->median_ns >= best)
      continue;
    double x = trial_x(h, t);
    if (isfinite(best)) {
      double step[2] = {x, best};
      g_array_append_vals(xy, step, 2);
    }
    best = t->median_ns;
    double pt[2] = {x, best};
    g_array_append_vals(xy, pt, 2);
  }
  if (xy->len) {
    double end[2] = {trial_x(h, run->trials->pdata[run->trials->len - 1]), best};
    g_array_append_vals(xy, end, 2);
  }
  return xy;
}

static TsRgba
run_color(const History *h, const Run *run)
{
  return run->id ? ts_studio_theme_series(h->view.theme, run->strategy) : h->view.theme->muted;
}

static void
draw_mark(History *h, TsCanvas *c, const TsPlot *p, const TsStudioTrial *t, TsRgba color)
{
  const TsStudioTheme *th = h->view.theme;
  double x, y;
  mark_position(h, p, t, &x, &y);
  ts__plot_begin_trial(c, t);
  gboolean lit = t->id == h->view.hover || ts_studio_view_is_selected(&h->view, t->id);
  if (lit) {
    TsRgba ring = t->id == h->view.hover ? th->highlight : th->foreground;
    ts__plot_draw_ringed(c, th, TS_CANVAS_MARKER_CIRCLE, ring, ring, x, y, 4);
  }
  if (verified(t)) {
    ts_canvas_set_color(c, ts_studio_rgba_alpha(color, lit ? 1 : 0.35));
    ts_canvas_marker(c, TS_CANVAS_MARKER_CIRCLE, x, y, 2.5);
  } else {
    ts_canvas_set_color(c, ts_studio_rgba_alpha(th->status[t->status], 0.8));
    ts_canvas_set_line_width(c, 1.25);
    ts_canvas_marker(c, TS_CANVAS_MARKER_CROSS, x, y, 3);
  }
  ts_canvas_end(c);
  h->view.n_drawn++;
}

static void
draw_run(History *h, TsCanvas *c, const TsPlot *p, const Run *run)
{
  TsRgba color = run_color(h, run);
  g_autofree char *id =
      run->id ? g_strdup_printf("run-%" G_GINT64_FORMAT, run->id) : g_strdup("run-none");
  g_autofree char *title =
      run->id ? g_strdup_printf("run %" G_GINT64_FORMAT ": %s (%u trials)", run->id,
                                run->strategy ? run->strategy : "unknown", run->trials->len)
              : g_strdup_printf("no run (%u trials stored outside a tuning run)", run->trials->len);
  ts_canvas_begin(c, "run", id, title);
  for (guint j = 0; j < run->trials->len; j++)
    draw_mark(h, c, p, run->trials->pdata[j], color);
  g_autoptr(GArray) xy = best_so_far(h, run);
  for (guint k = 0; k < xy->len; k += 2) {
    double *pt = &g_array_index(xy, double, k);
    pt[0] = ts__plot_x(p, pt[0]);
    pt[1] = ts__plot_y(p, pt[1]);
  }
  ts_canvas_begin(c, "best-so-far", NULL, NULL);
  ts_canvas_set_color(c, color);
  ts_canvas_set_line_width(c, 2);
  ts_canvas_set_dash(c, run->dash, run->dash * 0.6);
  ts_canvas_polyline(c, (double *)xy->data, xy->len / 2);
  ts_canvas_end(c);
  ts_canvas_end(c);
}

static const TsStudioTrial *
find_trial(const History *h, gint64 id)
{
  for (guint i = 0; i < h->trials->len; i++) {
    const TsStudioTrial *t = h->trials->pdata[i];
    if (t->id == id)
      return t;
  }
  return NULL;
}

static void
draw_best(History *h, TsCanvas *c, const TsPlot *p)
{
  const TsStudioTrial *t = find_trial(h, h->best_id);
  if (t == NULL || !isfinite(trial_x(h, t)))
    return;
  double x, y;
  mark_position(h, p, t, &x, &y);
  g_autofree char *title = ts_canvas_is_svg(c) ? ts__plot_describe_trial(t) : NULL;
  g_autofree char *id = g_strdup_printf("best-%" G_GINT64_FORMAT, t->id);
  g_autofree char *label = ts__plot_format_ns(t->median_ns);
  ts_canvas_begin(c, "best", id, title);
  ts__plot_draw_ringed(c, h->view.theme, TS_CANVAS_MARKER_CIRCLE, h->view.theme->accent,
                       h->view.theme->accent, x, y, 3);
  ts_canvas_set_color(c, h->view.theme->accent);
  ts_canvas_set_font_size(c, 11);
  /* Below and right of the ring: the lines come in from above and the left. */
  ts_canvas_text(c, x + 8, y + 6, label, TS_CANVAS_ALIGN_START, TS_CANVAS_ALIGN_START, 0);
  ts_canvas_end(c);
}

static void
draw_legend(History *h, TsCanvas *c, const TsPlot *p)
{
  const TsStudioTheme *th = h->view.theme;
  g_autoptr(GArray) legend = ts__plot_legend_new();
  for (guint i = 0; i < h->runs->len; i++) {
    const Run *run = &g_array_index(h->runs, Run, i);
    if (run->trials->len == 0)
      continue;
    if (run->id)
      ts__plot_legend_add(legend, TS_PLOT_KEY_LINE, 0, run_color(h, run), run->dash,
                          "run %" G_GINT64_FORMAT ": %s (%u trials)", run->id,
                          run->strategy ? run->strategy : "unknown", run->trials->len);
    else
      ts__plot_legend_add(legend, TS_PLOT_KEY_LINE, 0, run_color(h, run), 0, "no run (%u trials)",
                          run->trials->len);
  }
  const TsStudioTrial *best = find_trial(h, h->best_id);
  if (best) {
    g_autofree char *med = ts__plot_format_ns(best->median_ns);
    ts__plot_legend_add(legend, TS_PLOT_KEY_RING, TS_CANVAS_MARKER_CIRCLE, th->accent, 0,
                        "best: %s (trial %" G_GINT64_FORMAT ")", med, best->id);
  }
  ts__plot_legend_add_fastest(legend, th, h->trials, h->best_id, h->fastest_id);
  if (h->n_failed)
    ts__plot_legend_add(legend, TS_PLOT_KEY_MARKER, TS_CANVAS_MARKER_CROSS, th->muted, 0,
                        "%u failed", h->n_failed);
  if (h->n_untimed)
    ts__plot_legend_add(legend, TS_PLOT_KEY_NONE, 0, th->muted, 0, "%u without a time stamp",
                        h->n_untimed);
  /* Top right: the lines start high on the left and fall to the right. */
  ts__plot_draw_legend(c, th, p, legend, TRUE);
}

static void
history_draw(TsStudioView *view, TsCanvas *c, double width, double height)
{
  History *h = (History *)view;
  TsPlot p;
  layout(h, width, height, &p);
  ts__plot_draw_title(c, view->theme, &p, h->title, h->subtitle);
  if (h->best_id == 0 && h->n_failed == 0) { /* nothing to place: no empty scales */
    ts__plot_draw_message(c, view->theme, &p, "message",
                          h->trials->len ? "No trial has a time stamp to place it by."
                                         : "No trials stored for this workload.");
    return;
  }
  ts__plot_draw_axes(c, view->theme, &p,
                     h->axis == TS_STUDIO_HISTORY_BY_WALL ? "wall time since the first trial (s)"
                                                          : "trial (position in the workload)",
                     "median time, best so far");
  ts_canvas_begin(c, "plot", NULL, NULL);
  ts_canvas_clip(c, p.x, p.y, p.w, p.h);
  for (guint i = 0; i < h->runs->len; i++) {
    const Run *run = &g_array_index(h->runs, Run, i);
    if (run->trials->len)
      draw_run(h, c, &p, run);
  }
  draw_best(h, c, &p);
  ts_canvas_end(c);
  if (h->best_id == 0)
    ts__plot_draw_message(c, view->theme, &p, "message",
                          "No verified trial yet: no best time to follow.");
  draw_legend(h, c, &p);
}

gboolean
ts__history_draw_hover(TsStudioView *view, TsCanvas *c, double width, double height)
{
  History *h = (History *)view;
  TsPlot p;
  layout(h, width, height, &p);
  guint n_drawn = view->n_drawn; /* the overlay is not another mark */
  for (guint i = 0; i < h->runs->len; i++) {
    const Run *run = &g_array_index(h->runs, Run, i);
    for (guint j = 0; j < run->trials->len; j++) {
      const TsStudioTrial *t = run->trials->pdata[j];
      if (t->id != view->hover)
        continue;
      ts_canvas_begin(c, "hover", NULL, NULL);
      ts_canvas_clip(c, p.x, p.y, p.w, p.h);
      draw_mark(h, c, &p, t, run_color(h, run));
      ts_canvas_end(c);
    }
  }
  view->n_drawn = n_drawn;
  return TRUE;
}

static gint64
history_hit(TsStudioView *view, double x, double y, double width, double height)
{
  History *h = (History *)view;
  TsPlot p;
  layout(h, width, height, &p);
  if (!ts__plot_contains(&p, x, y))
    return 0;
  g_autoptr(GArray) xy = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GPtrArray) marks = g_ptr_array_new();
  for (guint i = 0; i < h->runs->len; i++) {
    const Run *run = &g_array_index(h->runs, Run, i);
    for (guint j = 0; j < run->trials->len; j++) {
      const TsStudioTrial *t = run->trials->pdata[j];
      double pt[2];
      mark_position(h, &p, t, &pt[0], &pt[1]);
      g_array_append_vals(xy, pt, 2);
      g_ptr_array_add(marks, (gpointer)t);
    }
  }
  gint k = ts__plot_nearest((double *)xy->data, marks->len, x, y, HIT_RADIUS);
  return k < 0 ? 0 : ((const TsStudioTrial *)marks->pdata[k])->id;
}

static GArray *
history_brush(TsStudioView *view, double x0, double y0, double x1, double y1, double width,
              double height)
{
  History *h = (History *)view;
  TsPlot p;
  layout(h, width, height, &p);
  GArray *ids = g_array_new(FALSE, FALSE, sizeof(gint64));
  for (guint i = 0; i < h->runs->len; i++) {
    const Run *run = &g_array_index(h->runs, Run, i);
    for (guint j = 0; j < run->trials->len; j++) {
      const TsStudioTrial *t = run->trials->pdata[j];
      double px, py;
      mark_position(h, &p, t, &px, &py);
      if (px >= x0 && px <= x1 && py >= y0 && py <= y1 && ts__plot_contains(&p, px, py))
        g_array_append_val(ids, t->id);
    }
  }
  return ids;
}

static char *
history_describe(TsStudioView *view, gint64 id)
{
  const TsStudioTrial *t = find_trial((History *)view, id);
  return t ? ts__plot_describe_trial(t) : NULL;
}

static void
history_finalize(TsStudioView *view)
{
  History *h = (History *)view;
  g_array_unref(h->runs);
  g_ptr_array_unref(h->trials);
  g_free(h->title);
  g_free(h->subtitle);
  g_free(h);
}

static const TsStudioViewClass history_class = {
    .name = "history",
    .unit = "trials",
    .draw = history_draw,
    .hit = history_hit,
    .brush = history_brush,
    .describe = history_describe,
    .finalize = history_finalize,
};

TsStudioView *
ts_studio_history_new(const TsStudioWorkload *workload, GPtrArray *trials, GPtrArray *runs,
                      TsStudioHistoryAxis axis)
{
  g_return_val_if_fail(workload != NULL && trials != NULL, NULL);
  History *h = g_new0(History, 1);
  h->view.klass = &history_class;
  h->trials = g_ptr_array_ref(trials);
  h->axis = axis;
  h->runs = g_array_new(FALSE, TRUE, sizeof(Run));
  g_array_set_clear_func(h->runs, run_clear);
  group_by_run(h, runs);
  fit_ranges(h);
  h->title = g_strdup_printf("Tuning history: %s", workload->label ? workload->label : "workload");
  guint n_runs = 0;
  for (guint i = 0; i < h->runs->len; i++)
    n_runs += g_array_index(h->runs, Run, i).id && g_array_index(h->runs, Run, i).trials->len;
  const TsStudioDevice *dev = workload->device;
  h->subtitle = g_strdup_printf("%s%s%u trials in %u runs, best so far per run",
                                dev && dev->name ? dev->name : "", dev && dev->name ? ", " : "",
                                trials->len, n_runs);
  h->view.n_marks = trials->len - h->n_untimed;
  return &h->view;
}
