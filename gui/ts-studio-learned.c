/* ts-studio-learned.c — the learned cost model against the measurements: each verified trial
 * at its rank in the model's order (1 = the point the model scores fastest, the one the model
 * strategy would measure first) against its measured median, log y. The model ranks, it does
 * not predict times, so the x axis is the rank and the title gives Kendall's tau-b between
 * its scores and the times; the subtitle says whether the model saw this workload's trials in
 * training (then the agreement is in-sample, not a prediction). */
#include "ts-studio-plot-private.h"

#include <math.h>

#define HIT_RADIUS 6.0

typedef struct {
  TsStudioView view;
  /* Copies of the scored verified trials (their strings borrowed from `trials`) with
   * predicted_ns set to the model's rank: the shared scatter helpers place a trial by its
   * fields alone. */
  GPtrArray *ranked;
  GPtrArray *trials; /* keeps the borrowed strings alive */
  GHashTable *score; /* trial id -> double* */
  char *title, *subtitle, *message;
  double lo, hi; /* measured times */
  guint n;
} Learned;

static gboolean
place(const TsStudioTrial *t, double *x, double *y)
{
  *x = t->predicted_ns;
  *y = t->median_ns;
  return TRUE;
}

static void
layout(const Learned *lv, double width, double height, TsPlot *p)
{
  ts__plot_layout(p, width, height);
  p->ax.format = TS_PLOT_FMT_PLAIN;
  ts__plot_axis_fit(&p->ax, TS_PLOT_LINEAR, 0, lv->n + 1, 0);
  p->ay.format = TS_PLOT_FMT_SI;
  p->ay.label_scale = 1e-9;
  p->ay.unit = "s";
  ts__plot_axis_fit(&p->ay, TS_PLOT_LOG, lv->lo, lv->hi, 1.3);
  ts__plot_apply_zoom(&lv->view, p);
}

static void
learned_draw(TsStudioView *view, TsCanvas *c, double width, double height)
{
  Learned *lv = (Learned *)view;
  const TsStudioTheme *th = view->theme;
  TsPlot p;
  layout(lv, width, height, &p);
  ts__plot_draw_title(c, th, &p, lv->title, lv->subtitle);
  if (lv->n == 0) {
    ts__plot_draw_message(c, th, &p, "message", lv->message);
    return;
  }
  ts__plot_draw_axes(c, th, &p, "rank by the learned model (1: predicted fastest)",
                     "measured median time");
  ts_canvas_begin(c, "plot", NULL, NULL);
  ts_canvas_clip(c, p.x, p.y, p.w, p.h);
  ts__plot_draw_dots(view, c, &p, lv->ranked, place);
  ts_canvas_end(c);
  g_autoptr(GArray) legend = ts__plot_legend_new();
  ts__plot_legend_add(legend, TS_PLOT_KEY_NONE, 0, th->muted, 0,
                      "a perfect ranking rises left to right");
  ts__plot_draw_legend(c, th, &p, legend, FALSE);
}

gboolean
ts__learned_draw_hover(TsStudioView *view, TsCanvas *c, double width, double height)
{
  Learned *lv = (Learned *)view;
  if (lv->n == 0)
    return TRUE;
  TsPlot p;
  layout(lv, width, height, &p);
  ts__plot_draw_hover_trial(view, c, &p, lv->ranked, place, ts__plot_draw_dot);
  return TRUE;
}

static gint64
learned_hit(TsStudioView *view, double x, double y, double width, double height)
{
  Learned *lv = (Learned *)view;
  if (lv->n == 0)
    return 0;
  TsPlot p;
  layout(lv, width, height, &p);
  return ts__plot_hit_trials(&p, lv->ranked, place, x, y, HIT_RADIUS);
}

static GArray *
learned_brush(TsStudioView *view, double x0, double y0, double x1, double y1, double width,
              double height)
{
  Learned *lv = (Learned *)view;
  if (lv->n == 0)
    return NULL;
  TsPlot p;
  layout(lv, width, height, &p);
  return ts__plot_brush_trials(&p, lv->ranked, place, x0, y0, x1, y1);
}

static char *
learned_describe(TsStudioView *view, gint64 id)
{
  Learned *lv = (Learned *)view;
  for (guint i = 0; i < lv->ranked->len; i++) {
    const TsStudioTrial *t = lv->ranked->pdata[i];
    if (t->id != id)
      continue;
    g_autofree char *text = ts__plot_describe_trial(t);
    const double *score = g_hash_table_lookup(lv->score, &t->id);
    return g_strdup_printf("%s\nlearned model: rank %.0f of %u (score %.4g)", text,
                           t->predicted_ns, lv->n, score ? *score : NAN);
  }
  return NULL;
}

static void
learned_finalize(TsStudioView *view)
{
  Learned *lv = (Learned *)view;
  g_ptr_array_unref(lv->ranked);
  g_ptr_array_unref(lv->trials);
  g_hash_table_unref(lv->score);
  g_free(lv->title);
  g_free(lv->subtitle);
  g_free(lv->message);
  g_free(lv);
}

static const TsStudioViewClass learned_class = {
    .name = "learned",
    .unit = "trials",
    .draw = learned_draw,
    .hit = learned_hit,
    .brush = learned_brush,
    .describe = learned_describe,
    .finalize = learned_finalize,
};

typedef struct {
  const TsStudioTrial *t;
  double score;
} Scored;

static int
by_score(const void *pa, const void *pb)
{
  const Scored *a = pa, *b = pb;
  if (a->score != b->score)
    return a->score > b->score ? -1 : 1; /* higher: predicted faster */
  return a->t->index < b->t->index ? -1 : a->t->index > b->t->index;
}

TsStudioView *
ts_studio_learned_new(const TsStudioWorkload *workload, GPtrArray *trials,
                      const TsStudioLearned *learned, const char *why)
{
  g_return_val_if_fail(workload != NULL && trials != NULL, NULL);
  g_return_val_if_fail(learned == NULL || learned->scores->len == trials->len, NULL);
  Learned *lv = g_new0(Learned, 1);
  lv->view.klass = &learned_class;
  lv->trials = g_ptr_array_ref(trials);
  lv->ranked = g_ptr_array_new_with_free_func(g_free);
  lv->score = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, g_free);
  g_autofree Scored *s = g_new(Scored, MAX(trials->len, 1));
  for (guint i = 0; learned && i < trials->len; i++) {
    const TsStudioTrial *t = trials->pdata[i];
    double score = g_array_index(learned->scores, double, i);
    if (t->status != TS_DB_TRIAL_OK || !(t->median_ns > 0) || !isfinite(score))
      continue;
    s[lv->n++] = (Scored){t, score};
  }
  qsort(s, lv->n, sizeof *s, by_score);
  g_autofree double *scores = g_new(double, MAX(lv->n, 1));
  g_autofree double *times = g_new(double, MAX(lv->n, 1));
  lv->lo = INFINITY;
  lv->hi = -INFINITY;
  for (guint i = 0; i < lv->n; i++) {
    TsStudioTrial *copy = g_memdup2(s[i].t, sizeof *copy);
    copy->predicted_ns = i + 1;
    g_ptr_array_add(lv->ranked, copy);
    g_hash_table_insert(lv->score, &copy->id, g_memdup2(&s[i].score, sizeof(double)));
    /* tau-b over (-score, time): both "lower is faster". */
    scores[i] = -s[i].score;
    times[i] = s[i].t->median_ns;
    lv->lo = MIN(lv->lo, times[i]);
    lv->hi = MAX(lv->hi, times[i]);
  }
  const char *label = workload->label ? workload->label : "workload";
  const TsStudioDevice *dev = workload->device;
  const char *on = dev && dev->name ? " on " : "", *name = dev && dev->name ? dev->name : "";
  if (learned == NULL) {
    lv->title = g_strdup("Learned model vs measured time");
    lv->subtitle = g_strdup_printf("%s%s%s", label, on, name);
    lv->message = g_strdup(why ? why : "No learned cost model.");
  } else {
    double tau = ts__plot_kendall_tau_b(scores, times, lv->n);
    char text[G_ASCII_DTOSTR_BUF_SIZE];
    if (isfinite(tau))
      g_ascii_formatd(text, sizeof text, "%.3f", tau);
    else
      g_strlcpy(text, "undefined", sizeof text);
    lv->title = g_strdup_printf("Learned model vs measured time: Kendall τ-b %s (N = %u)", text,
                                lv->n);
    lv->subtitle = g_strdup_printf(
        "%s%s%s; model %" G_GINT64_FORMAT " (%s), %s", label, on, name, learned->model_id,
        learned->kind,
        learned->in_sample ? "trained with these trials: in-sample, not a prediction"
                           : "never trained on this workload: a prediction");
    lv->message = g_strdup("No verified trial to rank.");
  }
  lv->view.n_marks = lv->n;
  return &lv->view;
}
