/* ts-studio-lowering-pane.c — four text views side by side, or one diff view. Lowering a point
 * compiles its IR (milliseconds, but not free), so selecting trials only records them; the
 * work happens when the pane is mapped or asked for its texts. */
#include "ts-studio-lowering-pane.h"
#include "ts-output.h"

static const char *const stage_names[TS_STUDIO_N_STAGES] = {"Graph", "Schedule", "Tile",
                                                            "Target IR"};

struct _TsStudioLoweringPane {
  GtkWidget parent_instance;
  GtkWidget *box, *title, *stages_button, *diff_button, *stack;
  GtkWidget *headings[TS_STUDIO_N_STAGES], *views[TS_STUDIO_N_STAGES];
  GtkWidget *diff_summary, *diff_view;

  const TsStudioWorkload *workload;
  guint n_trials; /* 0, 1 or 2 */
  guint n_selected; /* in the list, of which these are the oldest */
  gint64 ids[2];
  char *schedules[2];
  gboolean pending; /* trials set, not lowered yet */
  TsStudioLowering *lowered[2];
  TsStudioDiff *diff;
};

G_DEFINE_FINAL_TYPE(TsStudioLoweringPane, ts_studio_lowering_pane, GTK_TYPE_WIDGET)

const char *
ts_studio_stage_name(TsStudioStage stage)
{
  g_return_val_if_fail(stage < TS_STUDIO_N_STAGES, NULL);
  return stage_names[stage];
}

static const char *
stage_text(const TsStudioLowering *lowering, TsStudioStage stage)
{
  switch (stage) {
  case TS_STUDIO_STAGE_GRAPH:
    return lowering->graph;
  case TS_STUDIO_STAGE_SCHEDULE:
    return lowering->schedule;
  case TS_STUDIO_STAGE_TILE:
    return lowering->tile;
  case TS_STUDIO_STAGE_TARGET:
    return lowering->target;
  default:
    g_assert_not_reached();
  }
}

static void
set_text(GtkWidget *view, const char *text)
{
  gtk_text_buffer_set_text(gtk_text_view_get_buffer(GTK_TEXT_VIEW(view)), text ? text : "", -1);
}

static void
clear_lowering(TsStudioLoweringPane *self)
{
  for (guint i = 0; i < 2; i++)
    g_clear_pointer(&self->lowered[i], ts_studio_lowering_free);
  g_clear_pointer(&self->diff, ts_studio_diff_free);
}

static void
fill_diff(TsStudioLoweringPane *self)
{
  GtkTextBuffer *buffer = gtk_text_view_get_buffer(GTK_TEXT_VIEW(self->diff_view));
  GtkTextIter end;

  gtk_text_buffer_set_text(buffer, "", -1);
  if (self->diff == NULL) {
    gtk_label_set_text(GTK_LABEL(self->diff_summary),
                       "Select two trials to compare their Target IR.");
    return;
  }
  const GArray *lines = ts_studio_diff_lines(self->diff);
  for (guint i = 0; i < lines->len; i++) {
    const TsStudioDiffLine *line = &g_array_index(lines, TsStudioDiffLine, i);
    const char *tag = line->op == TS_STUDIO_DIFF_ADD   ? "add"
                      : line->op == TS_STUDIO_DIFF_DEL ? "del"
                                                       : NULL;
    const char *prefix = line->op == TS_STUDIO_DIFF_ADD   ? "+ "
                         : line->op == TS_STUDIO_DIFF_DEL ? "- "
                                                          : "  ";
    /* Each side's line number, as the exported diff has them: "line 212 of trial 7". */
    char a[16] = "     ", b[16] = "     ";
    if (line->a_line)
      g_snprintf(a, sizeof a, "%5u", line->a_line);
    if (line->b_line)
      g_snprintf(b, sizeof b, "%5u", line->b_line);
    g_autofree char *text =
      g_strdup_printf("%s %s %s%.*s\n", a, b, prefix, (int)line->len, line->text);
    gtk_text_buffer_get_end_iter(buffer, &end);
    gtk_text_buffer_insert_with_tags_by_name(buffer, &end, text, -1, tag, NULL);
  }
  g_autofree char *summary = g_strdup_printf(
      "Target IR of trial %" G_GINT64_FORMAT " → trial %" G_GINT64_FORMAT ": %u line%s changed",
      self->ids[0], self->ids[1], ts_studio_diff_n_changed(self->diff), ts_studio_diff_n_changed(self->diff) == 1 ? "" : "s");
  gtk_label_set_text(GTK_LABEL(self->diff_summary), summary);
}

/* Lowers the recorded trials and fills the views. */
static void
ensure_lowered(TsStudioLoweringPane *self)
{
  if (!self->pending)
    return;
  self->pending = FALSE;
  clear_lowering(self);
  for (guint i = 0; i < self->n_trials; i++) {
    g_autoptr(GError) error = NULL;
    self->lowered[i] = ts_studio_lower(self->workload, self->schedules[i], &error);
    if (self->lowered[i] == NULL) {
      /* Shown where the stages would be: a point the current op library no longer accepts
       * is worth seeing as such. */
      self->lowered[i] = g_new0(TsStudioLowering, 1);
      self->lowered[i]->graph = g_strdup(error->message);
      self->lowered[i]->schedule = g_strdup("");
      self->lowered[i]->tile = g_strdup("");
      self->lowered[i]->target = g_strdup("");
    }
  }
  for (TsStudioStage s = 0; s < TS_STUDIO_N_STAGES; s++)
    set_text(self->views[s], self->lowered[0] ? stage_text(self->lowered[0], s) : NULL);
  const char *language = self->lowered[0] ? self->lowered[0]->target_language : NULL;
  g_autofree char *target_heading = g_strdup_printf("Target IR%s%s%s", language ? " (" : "",
                                                    language ? language : "", language ? ")" : "");
  gtk_label_set_text(GTK_LABEL(self->headings[TS_STUDIO_STAGE_TARGET]), target_heading);
  if (self->n_trials == 2)
    self->diff = ts_studio_diff(self->lowered[0]->target, self->lowered[1]->target);
  fill_diff(self);
}

static void
update_page(TsStudioLoweringPane *self)
{
  gboolean diff = gtk_toggle_button_get_active(GTK_TOGGLE_BUTTON(self->diff_button));
  g_autofree char *title = NULL;

  gtk_widget_set_sensitive(self->diff_button, self->n_trials == 2);
  if (self->n_trials == 0) {
    gtk_stack_set_visible_child_name(GTK_STACK(self->stack), "hint");
    title = g_strdup("No trial selected");
  } else if (diff && self->n_trials == 2) {
    gtk_stack_set_visible_child_name(GTK_STACK(self->stack), "diff");
    title = g_strdup_printf("Trial %" G_GINT64_FORMAT " → trial %" G_GINT64_FORMAT, self->ids[0],
                            self->ids[1]);
    if (self->n_selected > 2) {
      /* Never a silent pick among more. */
      char *more = g_strdup_printf("%s (the two oldest of %u selected)", title, self->n_selected);
      g_free(title);
      title = more;
    }
  } else {
    gtk_stack_set_visible_child_name(GTK_STACK(self->stack), "stages");
    title = g_strdup_printf("Trial %" G_GINT64_FORMAT " · %s", self->ids[0], self->schedules[0]);
  }
  gtk_label_set_text(GTK_LABEL(self->title), title);
}

static void
on_mode_toggled(GtkToggleButton *button, TsStudioLoweringPane *self)
{
  update_page(self);
}

static GtkWidget *
make_text_view(void)
{
  GtkWidget *view = gtk_text_view_new();

  gtk_text_view_set_editable(GTK_TEXT_VIEW(view), FALSE);
  gtk_text_view_set_monospace(GTK_TEXT_VIEW(view), TRUE);
  gtk_text_view_set_wrap_mode(GTK_TEXT_VIEW(view), GTK_WRAP_NONE);
  gtk_text_view_set_left_margin(GTK_TEXT_VIEW(view), 6);
  gtk_text_view_set_top_margin(GTK_TEXT_VIEW(view), 6);
  return view;
}

static GtkWidget *
make_column(GtkWidget **heading, GtkWidget *view, const char *title)
{
  GtkWidget *column = gtk_box_new(GTK_ORIENTATION_VERTICAL, 4);
  GtkWidget *scroller = gtk_scrolled_window_new();

  *heading = gtk_label_new(title);
  gtk_label_set_xalign(GTK_LABEL(*heading), 0);
  gtk_widget_add_css_class(*heading, "heading");
  gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(scroller), view);
  gtk_widget_set_vexpand(scroller, TRUE);
  gtk_widget_set_hexpand(scroller, TRUE);
  gtk_box_append(GTK_BOX(column), *heading);
  gtk_box_append(GTK_BOX(column), scroller);
  return column;
}

static GtkWidget *
make_header(TsStudioLoweringPane *self)
{
  GtkWidget *bar = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6);
  GtkWidget *modes = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 0);

  self->title = gtk_label_new(NULL);
  gtk_label_set_xalign(GTK_LABEL(self->title), 0);
  gtk_label_set_ellipsize(GTK_LABEL(self->title), PANGO_ELLIPSIZE_END);
  gtk_widget_set_hexpand(self->title, TRUE);
  gtk_widget_add_css_class(self->title, "monospace");
  self->stages_button = gtk_toggle_button_new_with_label("Stages");
  self->diff_button = gtk_toggle_button_new_with_label("Target IR diff");
  gtk_widget_set_tooltip_text(self->diff_button, "Select two trials in the list (Ctrl+click)");
  gtk_toggle_button_set_group(GTK_TOGGLE_BUTTON(self->diff_button),
                              GTK_TOGGLE_BUTTON(self->stages_button));
  gtk_toggle_button_set_active(GTK_TOGGLE_BUTTON(self->stages_button), TRUE);
  g_signal_connect(self->diff_button, "toggled", G_CALLBACK(on_mode_toggled), self);
  gtk_widget_add_css_class(modes, "linked");
  gtk_box_append(GTK_BOX(modes), self->stages_button);
  gtk_box_append(GTK_BOX(modes), self->diff_button);
  gtk_box_append(GTK_BOX(bar), self->title);
  gtk_box_append(GTK_BOX(bar), modes);
  return bar;
}

static void
ts_studio_lowering_pane_map(GtkWidget *widget)
{
  GTK_WIDGET_CLASS(ts_studio_lowering_pane_parent_class)->map(widget);
  ensure_lowered(TS_STUDIO_LOWERING_PANE(widget));
}

static void
ts_studio_lowering_pane_dispose(GObject *object)
{
  TsStudioLoweringPane *self = TS_STUDIO_LOWERING_PANE(object);

  g_clear_pointer(&self->box, gtk_widget_unparent);
  clear_lowering(self);
  for (guint i = 0; i < 2; i++)
    g_clear_pointer(&self->schedules[i], g_free);
  G_OBJECT_CLASS(ts_studio_lowering_pane_parent_class)->dispose(object);
}

static void
ts_studio_lowering_pane_class_init(TsStudioLoweringPaneClass *klass)
{
  G_OBJECT_CLASS(klass)->dispose = ts_studio_lowering_pane_dispose;
  GTK_WIDGET_CLASS(klass)->map = ts_studio_lowering_pane_map;
  gtk_widget_class_set_layout_manager_type(GTK_WIDGET_CLASS(klass), GTK_TYPE_BIN_LAYOUT);
  gtk_widget_class_set_css_name(GTK_WIDGET_CLASS(klass), "lowering-pane");
}

static void
ts_studio_lowering_pane_init(TsStudioLoweringPane *self)
{
  GtkWidget *stages = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6);
  GtkWidget *diff = gtk_box_new(GTK_ORIENTATION_VERTICAL, 4);
  GtkWidget *hint = gtk_label_new("Select a trial in the list to see its lowering, or two "
                                  "(Ctrl+click) to compare their Target IR.");
  GtkWidget *scroller = gtk_scrolled_window_new();

  self->box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 6);
  g_object_set(self->box, "margin-start", 6, "margin-end", 6, "margin-top", 6, "margin-bottom", 6,
               NULL);
  gtk_widget_set_parent(self->box, GTK_WIDGET(self));
  gtk_box_append(GTK_BOX(self->box), make_header(self));

  gtk_box_set_homogeneous(GTK_BOX(stages), TRUE);
  for (TsStudioStage s = 0; s < TS_STUDIO_N_STAGES; s++) {
    self->views[s] = make_text_view();
    gtk_box_append(GTK_BOX(stages),
                   make_column(&self->headings[s], self->views[s], stage_names[s]));
  }

  self->diff_view = make_text_view();
  GtkTextBuffer *buffer = gtk_text_view_get_buffer(GTK_TEXT_VIEW(self->diff_view));
  /* Translucent backgrounds read on both the light and the dark theme. */
  gtk_text_buffer_create_tag(buffer, "add", "paragraph-background", "rgba(46,194,126,0.25)", NULL);
  gtk_text_buffer_create_tag(buffer, "del", "paragraph-background", "rgba(224,27,36,0.25)", NULL);
  self->diff_summary = gtk_label_new(NULL);
  gtk_label_set_xalign(GTK_LABEL(self->diff_summary), 0);
  gtk_widget_add_css_class(self->diff_summary, "heading");
  gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(scroller), self->diff_view);
  gtk_widget_set_vexpand(scroller, TRUE);
  gtk_box_append(GTK_BOX(diff), self->diff_summary);
  gtk_box_append(GTK_BOX(diff), scroller);

  gtk_widget_add_css_class(hint, "dim-label");
  self->stack = gtk_stack_new();
  gtk_widget_set_vexpand(self->stack, TRUE);
  gtk_stack_add_named(GTK_STACK(self->stack), hint, "hint");
  gtk_stack_add_named(GTK_STACK(self->stack), stages, "stages");
  gtk_stack_add_named(GTK_STACK(self->stack), diff, "diff");
  gtk_box_append(GTK_BOX(self->box), self->stack);
  update_page(self);
}

GtkWidget *
ts_studio_lowering_pane_new(void)
{
  return g_object_new(TS_STUDIO_TYPE_LOWERING_PANE, NULL);
}

void
ts_studio_lowering_pane_set_trials(TsStudioLoweringPane *pane, const TsStudioWorkload *workload,
                                   const TsStudioTrial *a, const TsStudioTrial *b)
{
  g_return_if_fail(TS_STUDIO_IS_LOWERING_PANE(pane));
  g_return_if_fail(a == NULL || workload != NULL);

  const TsStudioTrial *trials[2] = {a, a ? b : NULL};
  guint n = a == NULL ? 0 : b == NULL ? 1 : 2;
  gboolean same = n == pane->n_trials && pane->workload == workload;
  for (guint i = 0; same && i < n; i++)
    same = pane->ids[i] == trials[i]->id;
  if (same)
    return;

  clear_lowering(pane);
  pane->workload = workload;
  pane->n_trials = n;
  for (guint i = 0; i < 2; i++) {
    g_clear_pointer(&pane->schedules[i], g_free);
    pane->ids[i] = i < n ? trials[i]->id : 0;
    pane->schedules[i] = i < n ? g_strdup(trials[i]->schedule) : NULL;
  }
  pane->pending = TRUE;
  if (n == 0) {
    /* Nothing to lower: empty the views now so stale text never shows. */
    ensure_lowered(pane);
  } else if (gtk_widget_get_mapped(GTK_WIDGET(pane))) {
    ensure_lowered(pane);
  }
  update_page(pane);
}

void
ts_studio_lowering_pane_set_diff(TsStudioLoweringPane *pane, gboolean diff)
{
  g_return_if_fail(TS_STUDIO_IS_LOWERING_PANE(pane));
  gtk_toggle_button_set_active(GTK_TOGGLE_BUTTON(diff ? pane->diff_button : pane->stages_button),
                               TRUE);
  update_page(pane);
}

gboolean
ts_studio_lowering_pane_get_diff(TsStudioLoweringPane *pane)
{
  g_return_val_if_fail(TS_STUDIO_IS_LOWERING_PANE(pane), FALSE);
  return pane->n_trials == 2 && gtk_toggle_button_get_active(GTK_TOGGLE_BUTTON(pane->diff_button));
}

const char *
ts_studio_lowering_pane_get_stage(TsStudioLoweringPane *pane, TsStudioStage stage)
{
  g_return_val_if_fail(TS_STUDIO_IS_LOWERING_PANE(pane) && stage < TS_STUDIO_N_STAGES, NULL);
  ensure_lowered(pane);
  return pane->lowered[0] ? stage_text(pane->lowered[0], stage) : NULL;
}

guint
ts_studio_lowering_pane_get_n_changed(TsStudioLoweringPane *pane)
{
  g_return_val_if_fail(TS_STUDIO_IS_LOWERING_PANE(pane), 0);
  ensure_lowered(pane);
  return pane->diff ? ts_studio_diff_n_changed(pane->diff) : 0;
}

static TsStudioLowering *
copy_lowering(const TsStudioLowering *l)
{
  TsStudioLowering *copy = g_new0(TsStudioLowering, 1);

  copy->graph = g_strdup(l->graph);
  copy->schedule = g_strdup(l->schedule);
  copy->tile = g_strdup(l->tile);
  copy->target = g_strdup(l->target);
  copy->target_language = g_strdup(l->target_language);
  return copy;
}

TsStudioView *
ts_studio_lowering_pane_make_view(TsStudioLoweringPane *pane)
{
  g_return_val_if_fail(TS_STUDIO_IS_LOWERING_PANE(pane), NULL);

  ensure_lowered(pane);
  if (pane->n_trials == 0)
    return NULL;
  if (ts_studio_lowering_pane_get_diff(pane)) {
    g_autofree char *a = g_strdup_printf("trial %" G_GINT64_FORMAT, pane->ids[0]);
    g_autofree char *b = g_strdup_printf("trial %" G_GINT64_FORMAT, pane->ids[1]);
    return ts_studio_diff_view_new(
        ts_studio_diff(pane->lowered[0]->target, pane->lowered[1]->target), a, b);
  }
  g_autofree char *title =
    g_strdup_printf("Trial %" G_GINT64_FORMAT " · %s", pane->ids[0], pane->schedules[0]);
  return ts_studio_lowering_view_new(copy_lowering(pane->lowered[0]), title);
}

gboolean
ts_studio_lowering_pane_write(TsStudioLoweringPane *pane, const char *path, GError **error)
{
  g_return_val_if_fail(TS_STUDIO_IS_LOWERING_PANE(pane) && path != NULL, FALSE);

  ensure_lowered(pane);
  g_autofree char *text = NULL;
  if (pane->n_trials == 0) {
    g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_EXPORT,
                "export of the lowering: no trial selected; select one in the trials list");
    return FALSE;
  }
  if (ts_studio_lowering_pane_get_diff(pane)) {
    g_autofree char *a = g_strdup_printf("trial-%" G_GINT64_FORMAT, pane->ids[0]);
    g_autofree char *b = g_strdup_printf("trial-%" G_GINT64_FORMAT, pane->ids[1]);
    text = ts_studio_diff_to_unified(pane->diff, a, b, 3);
  } else {
    GString *out = g_string_new(NULL);
    for (TsStudioStage s = 0; s < TS_STUDIO_N_STAGES; s++) {
      const char *stage = stage_text(pane->lowered[0], s);
      g_string_append_printf(out, "== %s ==\n%s%s", stage_names[s], stage,
                             g_str_has_suffix(stage, "\n") ? "" : "\n");
    }
    text = g_string_free(out, FALSE);
  }
  if (!ts_output_write(path, text, -1, error)) {
    g_prefix_error(error, "export of the lowering: ");
    return FALSE;
  }
  return TRUE;
}

const char *
ts_studio_lowering_pane_get_title(TsStudioLoweringPane *pane)
{
  g_return_val_if_fail(TS_STUDIO_IS_LOWERING_PANE(pane), NULL);
  return gtk_label_get_text(GTK_LABEL(pane->title));
}

void
ts_studio_lowering_pane_set_n_selected(TsStudioLoweringPane *pane, guint n)
{
  g_return_if_fail(TS_STUDIO_IS_LOWERING_PANE(pane));
  pane->n_selected = n;
  update_page(pane);
}

char *
ts_studio_lowering_pane_get_diff_text(TsStudioLoweringPane *pane)
{
  g_return_val_if_fail(TS_STUDIO_IS_LOWERING_PANE(pane), NULL);
  ensure_lowered(pane);
  GtkTextBuffer *buffer = gtk_text_view_get_buffer(GTK_TEXT_VIEW(pane->diff_view));
  GtkTextIter a, b;
  gtk_text_buffer_get_bounds(buffer, &a, &b);
  return gtk_text_buffer_get_text(buffer, &a, &b, FALSE);
}
