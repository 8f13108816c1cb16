/* ts-studio-screenshots.c — the --screenshots sequence. Each page is shown, then the window's
 * frame clock is watched until the page's widget is mapped with a size (and the timeline's
 * view prepared by its worker thread) and a few more frames have been painted; the render
 * node the window painted is taken right after a paint (a redraw queued later, by a cursor
 * or an async update, drops it) and rendered to a texture with the window's own renderer. What every view reported of that frame (marks held and drawn) goes to the manifest,
 * so a test can compare the pictures' content with the cache without comparing pixels. */
#include "ts-studio-screenshots.h"

#include <errno.h>
#include <string.h>

#include <json-glib/json-glib.h>

#include "ts-studio-trial-item.h"

/* Frames painted after the page is ready: the first may still carry the previous page. */
#define FRAMES_AFTER_READY 3
/* A page not ready by then is a failure: 10^6 events prepare in about a second; under a
 * sanitizer on a loaded machine, a lot more. */
#define PAGE_TIMEOUT_S 60

typedef struct {
  TsStudioWindow *win;
  char *dir;
  GPtrArray *pages; /* char*: the steps */
  guint step, frames, tick_id;
  gulong paint_id; /* on the frame clock's after-paint, while a capture is armed */
  GdkFrameClock *clock;
  GskRenderNode *node; /* what the window painted, taken after a paint, and its size */
  int width, height;
  gint64 deadline;
  gint64 first_id; /* the trial selected when the workload opened */
  JsonArray *manifest;
  TsStudioScreenshotsDone done;
  gpointer data;
  GError *error;
} Shots;

static void
shots_free(Shots *s)
{
  if (s->tick_id != 0)
    gtk_widget_remove_tick_callback(GTK_WIDGET(s->win), s->tick_id);
  if (s->paint_id != 0)
    g_signal_handler_disconnect(s->clock, s->paint_id);
  g_clear_object(&s->clock);
  g_clear_pointer(&s->node, gsk_render_node_unref);
  g_object_unref(s->win);
  g_free(s->dir);
  g_ptr_array_unref(s->pages);
  json_array_unref(s->manifest);
  g_clear_error(&s->error);
  g_free(s);
}

static const char *
current_page(Shots *s)
{
  return g_ptr_array_index(s->pages, s->step);
}

/* The window page behind a step ("lowering-diff" is the lowering page in diff mode). */
static const char *
window_page(const char *step)
{
  return g_str_equal(step, "lowering-diff") ? "lowering" : step;
}

static gint64
other_trial(TsStudioTrialList *list, gint64 first_id)
{
  GListModel *rows = ts_studio_trial_list_get_rows(list);
  gint64 any = 0;

  /* Rows are best first: the runner-up makes a diff worth looking at. */
  for (guint i = 0; i < g_list_model_get_n_items(rows); i++) {
    g_autoptr(TsStudioTrialItem) item = g_list_model_get_item(rows, i);
    const TsStudioTrial *t = ts_studio_trial_item_get_trial(item);
    if (t->id == first_id)
      continue;
    if (t->status == TS_DB_TRIAL_OK)
      return t->id;
    if (any == 0)
      any = t->id;
  }
  return any;
}

static void
prepare_page(Shots *s)
{
  const char *page = current_page(s);
  TsStudioTrialList *list = ts_studio_window_get_trial_list(s->win);
  TsStudioLoweringPane *pane = ts_studio_window_get_lowering_pane(s->win);

  if (g_str_equal(page, "empty") || g_str_equal(page, "trace"))
    return;
  if (g_str_equal(page, "lowering")) {
    ts_studio_trial_list_select(list, s->first_id, FALSE);
    ts_studio_lowering_pane_set_diff(pane, FALSE);
  } else if (g_str_equal(page, "lowering-diff")) {
    ts_studio_trial_list_select(list, s->first_id, FALSE);
    ts_studio_trial_list_select(list, other_trial(list, s->first_id), TRUE);
    ts_studio_lowering_pane_set_diff(pane, TRUE);
  }
  ts_studio_window_set_page(s->win, window_page(page));
}

/* The widget that shows the step: the page's own, or the window when an empty state
 * stands in for it. */
static GtkWidget *
shown_widget(Shots *s)
{
  const char *page = window_page(current_page(s));

  if (g_str_equal(page, "empty") || ts_studio_window_get_placeholder(s->win, page) != NULL)
    return GTK_WIDGET(s->win);
  return ts_studio_window_get_page_widget(s->win, page);
}

static gboolean
page_ready(Shots *s)
{
  GtkWidget *widget = shown_widget(s);

  if (!gtk_widget_get_mapped(widget) || gtk_widget_get_width(widget) <= 0)
    return FALSE;
  if (TS_STUDIO_IS_TIMELINE_AREA(widget) &&
      ts_studio_timeline_area_get_view(TS_STUDIO_TIMELINE_AREA(widget)) == NULL)
    return FALSE;
  return TRUE;
}

static gboolean capture_step(gpointer data);
static gboolean on_tick(GtkWidget *widget, GdkFrameClock *clock, gpointer data);

static void
wait_frames(Shots *s)
{
  s->frames = 0;
  s->tick_id = gtk_widget_add_tick_callback(GTK_WIDGET(s->win), on_tick, s, NULL);
}

/* Right after a paint the window still holds the node it painted; by an idle later a queued
 * redraw may have dropped it, and the paintable would then be empty. */
static void
on_after_paint(GdkFrameClock *clock, gpointer data)
{
  Shots *s = data;
  GtkWidget *widget = GTK_WIDGET(s->win);
  g_autoptr(GdkPaintable) paintable = gtk_widget_paintable_new(widget);
  GtkSnapshot *snapshot = gtk_snapshot_new();

  g_signal_handler_disconnect(clock, s->paint_id);
  s->paint_id = 0;
  g_clear_object(&s->clock);
  s->width = gtk_widget_get_width(widget);
  s->height = gtk_widget_get_height(widget);
  gdk_paintable_snapshot(paintable, snapshot, s->width, s->height);
  g_clear_pointer(&s->node, gsk_render_node_unref);
  s->node = gtk_snapshot_free_to_node(snapshot);
  if (s->node == NULL && g_get_monotonic_time() < s->deadline) {
    wait_frames(s);
    return;
  }
  if (s->node == NULL)
    g_set_error(&s->error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_EXPORT,
                "the %s page drew nothing within %d s", current_page(s), PAGE_TIMEOUT_S);
  /* Not from inside the frame clock's paint cycle: the next step changes the widgets. */
  g_idle_add(capture_step, s);
}

static gboolean
on_tick(GtkWidget *widget, GdkFrameClock *clock, gpointer data)
{
  Shots *s = data;

  if (!page_ready(s)) {
    s->frames = 0;
    if (g_get_monotonic_time() < s->deadline)
      return G_SOURCE_CONTINUE;
    g_set_error(&s->error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_EXPORT,
                "the %s page was not drawn within %d s", current_page(s), PAGE_TIMEOUT_S);
    s->tick_id = 0;
    g_idle_add(capture_step, s);
    return G_SOURCE_REMOVE;
  }
  if (++s->frames < FRAMES_AFTER_READY)
    return G_SOURCE_CONTINUE;
  /* The tick runs in the update phase; the frame it belongs to paints after it. */
  s->tick_id = 0;
  s->clock = g_object_ref(clock);
  s->paint_id = g_signal_connect(clock, "after-paint", G_CALLBACK(on_after_paint), s);
  return G_SOURCE_REMOVE;
}

static void
start_step(Shots *s)
{
  prepare_page(s);
  s->deadline = g_get_monotonic_time() + PAGE_TIMEOUT_S * G_USEC_PER_SEC;
  wait_frames(s);
}

static gboolean
save_png(Shots *s, int *width, int *height, GError **error)
{
  GtkWidget *widget = GTK_WIDGET(s->win);
  g_autofree char *name = g_strdup_printf("%s.png", current_page(s));
  g_autofree char *path = g_build_filename(s->dir, name, NULL);

  *width = s->width;
  *height = s->height;
  GskRenderer *renderer = gtk_native_get_renderer(GTK_NATIVE(widget));
  g_autoptr(GdkTexture) texture =
      gsk_renderer_render_texture(renderer, s->node, &GRAPHENE_RECT_INIT(0, 0, *width, *height));
  if (!gdk_texture_save_to_png(texture, path)) {
    g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_EXPORT,
                "could not write %s; is the directory writable?", path);
    return FALSE;
  }
  return TRUE;
}

static char *
first_line(const char *text)
{
  const char *end = text ? strchr(text, '\n') : NULL;
  return text == NULL ? NULL : end ? g_strndup(text, end - text) : g_strdup(text);
}

static void
describe_lowering(JsonObject *o, TsStudioLoweringPane *pane)
{
  JsonArray *stages = json_array_new();

  for (TsStudioStage st = 0; st < TS_STUDIO_N_STAGES; st++) {
    JsonObject *stage = json_object_new();
    g_autofree char *line = first_line(ts_studio_lowering_pane_get_stage(pane, st));
    json_object_set_string_member(stage, "name", ts_studio_stage_name(st));
    json_object_set_string_member(stage, "first_line", line);
    json_array_add_object_element(stages, stage);
  }
  json_object_set_array_member(o, "stages", stages);
  json_object_set_boolean_member(o, "diff", ts_studio_lowering_pane_get_diff(pane));
  json_object_set_int_member(o, "n_changed", ts_studio_lowering_pane_get_n_changed(pane));
}

static JsonObject *
describe_page(Shots *s, int width, int height)
{
  JsonObject *o = json_object_new();
  const char *step = current_page(s), *page = window_page(step);
  GtkWidget *widget = shown_widget(s);
  g_autofree char *file = g_strdup_printf("%s.png", step);
  TsStudioView *view = NULL;

  json_object_set_string_member(o, "page", step);
  json_object_set_string_member(o, "file", file);
  json_object_set_int_member(o, "width", width);
  json_object_set_int_member(o, "height", height);
  json_object_set_string_member(o, "placeholder", ts_studio_window_get_placeholder(s->win, page));
  if (TS_STUDIO_IS_PLOT_AREA(widget))
    view = ts_studio_plot_area_get_view(TS_STUDIO_PLOT_AREA(widget));
  else if (TS_STUDIO_IS_TIMELINE_AREA(widget))
    view = ts_studio_timeline_area_get_view(TS_STUDIO_TIMELINE_AREA(widget));
  if (view != NULL) {
    json_object_set_string_member(o, "view", ts_studio_view_name(view));
    json_object_set_int_member(o, "n_marks", view->n_marks);
    json_object_set_int_member(o, "n_drawn", view->n_drawn);
  }
  if (g_str_equal(page, "timeline"))
    json_object_set_int_member(o, "profile_id", ts_studio_window_get_profile_id(s->win));
  if (g_str_equal(ts_studio_window_get_state(s->win), "workbench")) {
    TsStudioTrialList *list = ts_studio_window_get_trial_list(s->win);
    g_autoptr(GPtrArray) selected = ts_studio_trial_list_get_selected(list);
    JsonArray *ids = json_array_new();
    for (guint i = 0; i < selected->len; i++)
      json_array_add_int_element(ids, ((const TsStudioTrial *)g_ptr_array_index(selected, i))->id);
    json_object_set_int_member(o, "rows", ts_studio_trial_list_get_n_rows(list));
    json_object_set_array_member(o, "selected", ids);
  }
  if (g_str_equal(page, "lowering"))
    describe_lowering(o, ts_studio_window_get_lowering_pane(s->win));
  return o;
}

static gboolean
write_manifest(Shots *s, GError **error)
{
  g_autoptr(JsonObject) root = json_object_new();
  const TsStudioWorkload *workload = ts_studio_window_get_workload(s->win);

  json_object_set_string_member(root, "file", ts_studio_window_get_path(s->win));
  json_object_set_string_member(root, "state", ts_studio_window_get_state(s->win));
  if (workload != NULL) {
    JsonObject *w = json_object_new();
    json_object_set_string_member(w, "key", workload->key);
    json_object_set_string_member(w, "label", workload->label);
    json_object_set_int_member(w, "n_trials", workload->n_trials);
    json_object_set_int_member(w, "n_ok", workload->n_ok);
    json_object_set_object_member(root, "workload", w);
  } else {
    json_object_set_null_member(root, "workload");
  }
  json_object_set_int_member(
      root, "sidebar_rows",
      g_list_model_get_n_items(ts_studio_sidebar_get_rows(ts_studio_window_get_sidebar(s->win))));
  json_object_set_array_member(root, "pages", json_array_ref(s->manifest));

  g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(), root);
  g_autoptr(JsonGenerator) generator = json_generator_new();
  g_autofree char *path = g_build_filename(s->dir, "manifest.json", NULL);
  json_generator_set_pretty(generator, TRUE);
  json_generator_set_root(generator, node);
  if (!json_generator_to_file(generator, path, error)) {
    g_prefix_error(error, "%s: ", path);
    return FALSE;
  }
  return TRUE;
}

static void
finish(Shots *s)
{
  TsStudioScreenshotsDone done = s->done;
  gpointer data = s->data;
  g_autoptr(GError) error = g_steal_pointer(&s->error);

  shots_free(s);
  done(error == NULL, error, data);
}

static gboolean
capture_step(gpointer data)
{
  Shots *s = data;
  int width = 0, height = 0;

  if (s->error == NULL && save_png(s, &width, &height, &s->error))
    json_array_add_object_element(s->manifest, describe_page(s, width, height));
  if (s->error == NULL && ++s->step < s->pages->len) {
    start_step(s);
    return G_SOURCE_REMOVE;
  }
  if (s->error == NULL)
    write_manifest(s, &s->error);
  finish(s);
  return G_SOURCE_REMOVE;
}

void
ts_studio_screenshots_run(TsStudioWindow *win, const char *dir, TsStudioScreenshotsDone done,
                          gpointer data)
{
  g_return_if_fail(TS_STUDIO_IS_WINDOW(win) && dir != NULL && done != NULL);

  Shots *s = g_new0(Shots, 1);
  s->win = g_object_ref(win);
  s->dir = g_strdup(dir);
  s->pages = g_ptr_array_new();
  s->manifest = json_array_new();
  s->done = done;
  s->data = data;

  const char *state = ts_studio_window_get_state(win);
  if (g_str_equal(state, "workbench")) {
    TsStudioDb *db = ts_studio_window_get_db(win);
    GPtrArray *workloads = ts_studio_db_workloads(db);
    const TsStudioWorkload *most = NULL;
    for (guint i = 0; i < workloads->len; i++) {
      const TsStudioWorkload *w = g_ptr_array_index(workloads, i);
      if (most == NULL || w->n_trials > most->n_trials)
        most = w;
    }
    ts_studio_window_select_workload(win, most);
    g_autoptr(GPtrArray) selected =
        ts_studio_trial_list_get_selected(ts_studio_window_get_trial_list(win));
    s->first_id = selected->len ? ((const TsStudioTrial *)g_ptr_array_index(selected, 0))->id : 0;
    for (guint i = 0; ts_studio_window_pages[i] != NULL; i++)
      g_ptr_array_add(s->pages, (gpointer)ts_studio_window_pages[i]);
    if (most->n_trials >= 2)
      g_ptr_array_add(s->pages, "lowering-diff");
  } else if (g_str_equal(state, "empty") || g_str_equal(state, "trace")) {
    g_ptr_array_add(s->pages, (gpointer)state);
  } else {
    g_set_error(&s->error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_OPEN, "no file is open");
    g_idle_add(capture_step, s);
    return;
  }
  if (g_mkdir_with_parents(dir, 0755) != 0) {
    int saved = errno;
    g_set_error(&s->error, G_FILE_ERROR, g_file_error_from_errno(saved), "cannot create %s: %s",
                dir, g_strerror(saved));
    g_idle_add(capture_step, s);
    return;
  }
  start_step(s);
}
