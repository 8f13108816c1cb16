/* ts-studio-window-export.c — Ctrl+E: the visible page to a file, as it is on screen (its
 * size, the timeline's zoom, the selection). A plot goes through the same canvas as the window
 * (SVG or PNG by extension); tables go out as CSV, the lowering as text (or, named .svg or
 * .png, drawn as the exporter draws it). The headless exporter
 * (`tessera-studio --export`) is separate: it needs no window. */
#include "ts-studio-window.h"

/* Used when the page has not been laid out yet (never shown): the default window's plot. */
#define FALLBACK_WIDTH 1000
#define FALLBACK_HEIGHT 700

static void
draw_view(TsCanvas *canvas, double width, double height, gpointer data)
{
  ts_studio_view_draw(data, canvas, width, height);
}

static TsStudioView *
page_view(GtkWidget *widget)
{
  if (TS_STUDIO_IS_PLOT_AREA(widget))
    return ts_studio_plot_area_get_view(TS_STUDIO_PLOT_AREA(widget));
  if (TS_STUDIO_IS_TIMELINE_AREA(widget))
    return ts_studio_timeline_area_get_view(TS_STUDIO_TIMELINE_AREA(widget));
  return NULL;
}

gboolean
ts_studio_window_export_to(TsStudioWindow *win, const char *path, GError **error)
{
  g_return_val_if_fail(TS_STUDIO_IS_WINDOW(win) && path != NULL, FALSE);

  const char *state = ts_studio_window_get_state(win);
  if (!g_str_equal(state, "workbench") && !g_str_equal(state, "trace")) {
    g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_EXPORT,
                "nothing to export: open a schedule cache with trials or a trace first");
    return FALSE;
  }
  const char *page = ts_studio_window_get_page(win);
  GtkWidget *widget = ts_studio_window_get_page_widget(win, page);
  if (TS_STUDIO_IS_TRIAL_LIST(widget))
    return ts_studio_trial_list_write_csv(TS_STUDIO_TRIAL_LIST(widget), path, error);
  g_autoptr(TsStudioView) owned = NULL;
  TsStudioView *view = NULL;
  if (TS_STUDIO_IS_LOWERING_PANE(widget)) {
    /* Text by default; a picture of the same texts when the name asks for one. */
    if (!g_str_has_suffix(path, ".svg") && !g_str_has_suffix(path, ".png"))
      return ts_studio_lowering_pane_write(TS_STUDIO_LOWERING_PANE(widget), path, error);
    view = owned = ts_studio_lowering_pane_make_view(TS_STUDIO_LOWERING_PANE(widget));
  } else {
    view = page_view(widget);
  }
  if (view == NULL) {
    g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_EXPORT,
                "nothing to export: the %s view is empty or still being prepared", page);
    return FALSE;
  }
  int width = gtk_widget_get_width(widget), height = gtk_widget_get_height(widget);
  if (width <= 0 || height <= 0) {
    width = FALLBACK_WIDTH;
    height = FALLBACK_HEIGHT;
  }
  return ts_canvas_export(path, width, height, 1, draw_view, view, error);
}

static void
on_response(GtkNativeDialog *dialog, int response, TsStudioWindow *win)
{
  if (response == GTK_RESPONSE_ACCEPT) {
    g_autoptr(GFile) file = gtk_file_chooser_get_file(GTK_FILE_CHOOSER(dialog));
    g_autofree char *path = file ? g_file_get_path(file) : NULL;
    g_autoptr(GError) error = NULL;
    if (path != NULL && !ts_studio_window_export_to(win, path, &error))
      ts_studio_window_show_error(win, "Could not export the view", error);
  }
  g_object_unref(dialog);
}

void
ts_studio_window_export(TsStudioWindow *win)
{
  g_return_if_fail(TS_STUDIO_IS_WINDOW(win));

  const char *state = ts_studio_window_get_state(win);
  if (!g_str_equal(state, "workbench") && !g_str_equal(state, "trace"))
    return;
  const char *page = ts_studio_window_get_page(win);
  GtkWidget *widget = ts_studio_window_get_page_widget(win, page);
  g_autofree char *name = NULL;
  if (TS_STUDIO_IS_TRIAL_LIST(widget))
    name = g_strdup("trials.csv");
  else if (TS_STUDIO_IS_LOWERING_PANE(widget))
    name = g_strdup(ts_studio_lowering_pane_get_diff(TS_STUDIO_LOWERING_PANE(widget))
                        ? "target.diff"
                        : "lowering.txt");
  else
    name = g_strdup_printf("%s.svg", g_str_equal(page, "trace") ? "timeline" : page);

  GtkFileChooserNative *dialog = gtk_file_chooser_native_new(
      "Export View", GTK_WINDOW(win), GTK_FILE_CHOOSER_ACTION_SAVE, "_Export", "_Cancel");
  gtk_native_dialog_set_modal(GTK_NATIVE_DIALOG(dialog), TRUE);
  gtk_file_chooser_set_current_name(GTK_FILE_CHOOSER(dialog), name);
  g_signal_connect(dialog, "response", G_CALLBACK(on_response), win);
  gtk_native_dialog_show(GTK_NATIVE_DIALOG(dialog));
}
