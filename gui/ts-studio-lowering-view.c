/* ts-studio-lowering-view.c — the lowering stages and the Target IR diff as drawn text, for
 * exports (the window shows the same texts in text views, which scroll and select). Columns
 * and lines that do not fit are cut with a count of what was left out, so a report never shows
 * a stage silently truncated. */
#include <string.h>

#include "ts-studio-view.h"

#define MARGIN 12.0
#define TITLE_PX 15.0
#define HEAD_PX 13.0
#define CODE_PX 11.0

typedef struct {
  TsStudioView parent;
  TsStudioLowering *lowering;
  char *title;
} LoweringView;

typedef struct {
  TsStudioView parent;
  TsStudioDiff *diff;
  char *a_name, *b_name;
} DiffView;

static double
line_height(TsCanvas *c)
{
  double h;
  ts_canvas_text_size(c, "Mg", NULL, &h);
  return h;
}

/* Draws text's lines from y down to bottom, clipped to the column; returns lines drawn. */
/* Lines as draw_lines shows them: a final newline ends the last line, it starts no other. */
static guint
count_lines(const char *text)
{
  guint n = 0;
  for (const char *p = text; *p; p++)
    n += *p == '\n';
  return n + (text[0] && text[strlen(text) - 1] != '\n');
}

static guint
draw_lines(TsCanvas *c, const char *text, double x, double y, double w, double bottom,
           const TsStudioTheme *theme)
{
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  guint n = g_strv_length(lines);
  if (n > 0 && lines[n - 1][0] == '\0')
    n--; /* the final newline ends the last line; it does not start another */
  ts_canvas_set_monospace(c, TRUE);
  ts_canvas_set_font_size(c, CODE_PX);
  double lh = line_height(c);
  guint fit = bottom > y ? (guint)((bottom - y) / lh) : 0;
  guint shown = n <= fit ? n : (fit > 0 ? fit - 1 : 0);
  ts_canvas_begin(c, NULL, NULL, NULL);
  ts_canvas_clip(c, x, y, w, bottom - y);
  ts_canvas_set_color(c, theme->foreground);
  for (guint i = 0; i < shown; i++) {
    /* Tabs would be laid out differently by Pango and an SVG viewer. */
    g_autofree char *line = g_strdelimit(g_strdup(lines[i]), "\t", ' ');
    ts_canvas_text(c, x, y + i * lh, line, TS_CANVAS_ALIGN_START, TS_CANVAS_ALIGN_START, 0);
  }
  if (shown < n) {
    g_autofree char *more = g_strdup_printf("… %u more lines", n - shown);
    ts_canvas_set_color(c, theme->muted);
    ts_canvas_set_monospace(c, FALSE);
    ts_canvas_text(c, x, y + shown * lh, more, TS_CANVAS_ALIGN_START, TS_CANVAS_ALIGN_START, 0);
  }
  ts_canvas_end(c);
  return shown;
}

static void
draw_title(TsCanvas *c, const TsStudioTheme *theme, const char *title, double width)
{
  ts_canvas_set_monospace(c, FALSE);
  ts_canvas_set_font_size(c, TITLE_PX);
  ts_canvas_set_color(c, theme->foreground);
  ts_canvas_text(c, MARGIN, MARGIN, title, TS_CANVAS_ALIGN_START, TS_CANVAS_ALIGN_START, 0);
}

static void
lowering_draw(TsStudioView *view, TsCanvas *c, double width, double height)
{
  LoweringView *self = (LoweringView *)view;
  const TsStudioTheme *theme = view->theme;
  ts_canvas_fill_background(c, theme->background);
  draw_title(c, theme, self->title, width);
  const struct {
    const char *id, *head, *text;
  } stages[] = {
    {"graph", "Graph IR", self->lowering->graph},
    {"schedule", "Schedule IR", self->lowering->schedule},
    {"tile", "Tile IR", self->lowering->tile},
    {"target", "Target IR", self->lowering->target},
  };
  double top = MARGIN + TITLE_PX * 2, colw = (width - MARGIN * 5) / 4;
  for (guint i = 0; i < G_N_ELEMENTS(stages); i++) {
    double x = MARGIN + i * (colw + MARGIN);
    g_autofree char *id = g_strdup_printf("stage-%s", stages[i].id);
    g_autofree char *head = i == 3 ? g_strdup_printf("Target IR (%s)",
                                                     self->lowering->target_language)
                                   : g_strdup(stages[i].head);
    ts_canvas_begin(c, "stage", id, head);
    ts_canvas_set_monospace(c, FALSE);
    ts_canvas_set_font_size(c, HEAD_PX);
    ts_canvas_set_color(c, theme->accent);
    ts_canvas_text(c, x, top, head, TS_CANVAS_ALIGN_START, TS_CANVAS_ALIGN_START, 0);
    ts_canvas_set_color(c, theme->grid);
    ts_canvas_line(c, x, top + HEAD_PX * 1.6, x + colw, top + HEAD_PX * 1.6);
    view->n_drawn += draw_lines(c, stages[i].text ? stages[i].text : "", x,
                                top + HEAD_PX * 2, colw, height - MARGIN, theme);
    ts_canvas_end(c);
  }
}

static void
lowering_finalize(TsStudioView *view)
{
  LoweringView *self = (LoweringView *)view;
  ts_studio_lowering_free(self->lowering);
  g_free(self->title);
  g_free(self);
}

static const TsStudioViewClass lowering_class = {
  .name = "lowering",
  .unit = "lines",
  .draw = lowering_draw,
  .finalize = lowering_finalize,
};

TsStudioView *
ts_studio_lowering_view_new(TsStudioLowering *lowering, const char *title)
{
  g_return_val_if_fail(lowering != NULL, NULL);
  LoweringView *self = g_new0(LoweringView, 1);
  self->parent.klass = &lowering_class;
  self->lowering = lowering;
  self->title = g_strdup(title ? title : "Lowering");
  const char *texts[] = {lowering->graph, lowering->schedule, lowering->tile, lowering->target};
  for (guint i = 0; i < G_N_ELEMENTS(texts); i++)
    self->parent.n_marks += texts[i] ? count_lines(texts[i]) : 0;
  return &self->parent;
}

/* ---- the diff ---- */

#define CONTEXT 3

static void
diff_draw(TsStudioView *view, TsCanvas *c, double width, double height)
{
  DiffView *self = (DiffView *)view;
  const TsStudioTheme *theme = view->theme;
  ts_canvas_fill_background(c, theme->background);
  guint changed = ts_studio_diff_n_changed(self->diff);
  g_autofree char *title = g_strdup_printf("Target IR: %s → %s (%u line%s changed)",
                                           self->a_name, self->b_name, changed,
                                           changed == 1 ? "" : "s");
  draw_title(c, theme, title, width);
  const GArray *lines = ts_studio_diff_lines(self->diff);
  ts_canvas_set_monospace(c, TRUE);
  ts_canvas_set_font_size(c, CODE_PX);
  double lh = line_height(c), y = MARGIN + TITLE_PX * 2, bottom = height - MARGIN;
  if (changed == 0) {
    ts_canvas_set_monospace(c, FALSE);
    ts_canvas_set_color(c, theme->muted);
    ts_canvas_text(c, MARGIN, y, "The two trials generate the same target source.",
                   TS_CANVAS_ALIGN_START, TS_CANVAS_ALIGN_START, 0);
    return;
  }
  /* Show a line when a change is within CONTEXT lines of it: mark those first. */
  g_autofree gboolean *show = g_new0(gboolean, lines->len + 1);
  for (guint i = 0; i < lines->len; i++) {
    if (g_array_index(lines, TsStudioDiffLine, i).op == TS_STUDIO_DIFF_SAME)
      continue;
    for (guint j = i >= CONTEXT ? i - CONTEXT : 0; j <= i + CONTEXT && j < lines->len; j++)
      show[j] = TRUE;
  }
  TsRgba del = theme->status[TS_DB_TRIAL_WRONG_RESULT], add = theme->status[TS_DB_TRIAL_OK];
  guint left_out = 0;
  gboolean gap = FALSE;
  ts_canvas_begin(c, NULL, NULL, NULL);
  ts_canvas_clip(c, MARGIN, y, width - 2 * MARGIN, bottom - y);
  for (guint i = 0; i < lines->len; i++) {
    const TsStudioDiffLine *l = &g_array_index(lines, TsStudioDiffLine, i);
    if (!show[i]) {
      gap = TRUE;
      continue;
    }
    if (y + 2 * lh > bottom) {
      left_out += l->op != TS_STUDIO_DIFF_SAME;
      continue;
    }
    if (gap) {
      ts_canvas_set_color(c, theme->muted);
      ts_canvas_text(c, MARGIN, y, "⋯", TS_CANVAS_ALIGN_START, TS_CANVAS_ALIGN_START, 0);
      y += lh;
      gap = FALSE;
    }
    const char *cls = l->op == TS_STUDIO_DIFF_DEL   ? "diff del"
                      : l->op == TS_STUDIO_DIFF_ADD ? "diff add"
                                                    : "diff same";
    ts_canvas_begin(c, cls, NULL, NULL);
    if (l->op != TS_STUDIO_DIFF_SAME) {
      ts_canvas_set_color(c, ts_studio_rgba_alpha(l->op == TS_STUDIO_DIFF_DEL ? del : add, 0.18));
      ts_canvas_rect(c, MARGIN, y, width - 2 * MARGIN, lh, TRUE);
    }
    g_autofree char *a = l->a_line ? g_strdup_printf("%5u", l->a_line) : g_strdup("     ");
    g_autofree char *b = l->b_line ? g_strdup_printf("%5u", l->b_line) : g_strdup("     ");
    g_autofree char *body = g_strndup(l->text, l->len);
    g_strdelimit(body, "\t", ' ');
    g_autofree char *text = g_strdup_printf("%s %s %c %s", a, b,
                                            l->op == TS_STUDIO_DIFF_DEL   ? '-'
                                            : l->op == TS_STUDIO_DIFF_ADD ? '+'
                                                                          : ' ',
                                            body);
    ts_canvas_set_color(c, theme->foreground);
    ts_canvas_text(c, MARGIN, y, text, TS_CANVAS_ALIGN_START, TS_CANVAS_ALIGN_START, 0);
    ts_canvas_end(c);
    view->n_drawn += l->op != TS_STUDIO_DIFF_SAME;
    y += lh;
  }
  if (left_out > 0) {
    g_autofree char *more = g_strdup_printf("… %u more changed lines", left_out);
    ts_canvas_set_monospace(c, FALSE);
    ts_canvas_set_color(c, theme->muted);
    ts_canvas_text(c, MARGIN, y, more, TS_CANVAS_ALIGN_START, TS_CANVAS_ALIGN_START, 0);
  }
  ts_canvas_end(c);
}

static void
diff_finalize(TsStudioView *view)
{
  DiffView *self = (DiffView *)view;
  ts_studio_diff_free(self->diff);
  g_free(self->a_name);
  g_free(self->b_name);
  g_free(self);
}

static const TsStudioViewClass diff_class = {
  .name = "diff",
  .unit = "changed lines",
  .draw = diff_draw,
  .finalize = diff_finalize,
};

TsStudioView *
ts_studio_diff_view_new(TsStudioDiff *diff, const char *a_name, const char *b_name)
{
  g_return_val_if_fail(diff != NULL, NULL);
  DiffView *self = g_new0(DiffView, 1);
  self->parent.klass = &diff_class;
  self->diff = diff;
  self->a_name = g_strdup(a_name ? a_name : "a");
  self->b_name = g_strdup(b_name ? b_name : "b");
  self->parent.n_marks = ts_studio_diff_n_changed(diff);
  return &self->parent;
}
