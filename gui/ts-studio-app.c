/* ts-studio-app.c — the application: files to windows, app actions and accelerators, recent
 * files (GtkRecentManager), and the desktop's colour scheme.
 *
 * GTK 4.8 has no colour-scheme API (libadwaita has one, and we do not depend on it), so the
 * preference is read from the freedesktop settings portal — org.freedesktop.appearance
 * color-scheme: 0 no preference, 1 dark, 2 light — and followed when it changes. Without a
 * portal (no session bus, a bare X server under a test) nothing happens. */
#include "ts-studio-app.h"

#include <string.h>

#include "config.h"
#include "ts-studio-screenshots.h"
#include "ts-studio-window.h"

#define RECENT_APP_NAME "Tessera Studio"
#define N_RECENT 10

#define PORTAL_BUS_NAME "org.freedesktop.portal.Desktop"
#define PORTAL_PATH "/org/freedesktop/portal/desktop"
#define PORTAL_SETTINGS "org.freedesktop.portal.Settings"
#define APPEARANCE "org.freedesktop.appearance"

struct _TsStudioApp {
  GtkApplication parent_instance;
  char *screenshots_dir;
  int exit_status;
  GMenu *recent; /* shared by every window's "Open Recent" */
  GCancellable *cancellable;
  guint setting_changed_id;
  gboolean timing;          /* ts_studio_app_set_timing */
  gboolean window_painted;
};

G_DEFINE_FINAL_TYPE(TsStudioApp, ts_studio_app, GTK_TYPE_APPLICATION)

/* ---- colour scheme ---- */

static void
apply_color_scheme(GVariant *value)
{
  g_autoptr(GVariant) v = g_variant_ref(value);

  /* Read wraps the value in one variant more than the signal does. */
  while (g_variant_is_of_type(v, G_VARIANT_TYPE_VARIANT)) {
    GVariant *inner = g_variant_get_variant(v);
    g_variant_unref(v);
    v = inner;
  }
  if (!g_variant_is_of_type(v, G_VARIANT_TYPE_UINT32))
    return;
  guint32 scheme = g_variant_get_uint32(v);
  if (scheme == 1 || scheme == 2)
    g_object_set(gtk_settings_get_default(), "gtk-application-prefer-dark-theme", scheme == 1,
                 NULL);
}

static void
on_setting_changed(GDBusConnection *bus, const char *sender, const char *path,
                   const char *interface, const char *signal, GVariant *parameters, gpointer data)
{
  const char *ns, *key;
  g_autoptr(GVariant) value = NULL;

  if (!g_variant_is_of_type(parameters, G_VARIANT_TYPE("(ssv)")))
    return;
  g_variant_get(parameters, "(&s&sv)", &ns, &key, &value);
  if (g_str_equal(ns, APPEARANCE) && g_str_equal(key, "color-scheme"))
    apply_color_scheme(value);
}

static void
on_scheme_read(GObject *source, GAsyncResult *result, gpointer data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply =
      g_dbus_connection_call_finish(G_DBUS_CONNECTION(source), result, &error);

  if (reply == NULL) {
    g_debug("no colour scheme from the settings portal: %s", error->message);
    return;
  }
  g_autoptr(GVariant) value = g_variant_get_child_value(reply, 0);
  apply_color_scheme(value);
}

static void
follow_color_scheme(TsStudioApp *self)
{
  GDBusConnection *bus = g_application_get_dbus_connection(G_APPLICATION(self));

  if (bus == NULL)
    return;
  self->setting_changed_id = g_dbus_connection_signal_subscribe(
      bus, PORTAL_BUS_NAME, PORTAL_SETTINGS, "SettingChanged", PORTAL_PATH, APPEARANCE,
      G_DBUS_SIGNAL_FLAGS_NONE, on_setting_changed, NULL, NULL);
  g_dbus_connection_call(bus, PORTAL_BUS_NAME, PORTAL_PATH, PORTAL_SETTINGS, "Read",
                         g_variant_new("(ss)", APPEARANCE, "color-scheme"), G_VARIANT_TYPE("(v)"),
                         G_DBUS_CALL_FLAGS_NO_AUTO_START, -1, self->cancellable, on_scheme_read,
                         NULL);
}

/* ---- recent files ---- */

static int
newest_first(gconstpointer a, gconstpointer b)
{
  return g_date_time_compare(gtk_recent_info_get_modified((GtkRecentInfo *)b),
                             gtk_recent_info_get_modified((GtkRecentInfo *)a));
}

static void
update_recent(GtkRecentManager *manager, TsStudioApp *self)
{
  GList *items = g_list_sort(gtk_recent_manager_get_items(manager), newest_first);
  guint n = 0;

  g_menu_remove_all(self->recent);
  for (GList *l = items; l != NULL && n < N_RECENT; l = l->next) {
    GtkRecentInfo *info = l->data;
    if (!gtk_recent_info_has_application(info, RECENT_APP_NAME) || !gtk_recent_info_exists(info))
      continue;
    g_autoptr(GMenuItem) item = g_menu_item_new(gtk_recent_info_get_display_name(info), NULL);
    g_menu_item_set_action_and_target(item, "app.open-recent", "s", gtk_recent_info_get_uri(info));
    g_menu_append_item(self->recent, item);
    n++;
  }
  g_list_free_full(items, (GDestroyNotify)gtk_recent_info_unref);
  if (n == 0)
    g_menu_append(self->recent, "No recent files", "app.no-recent");
}

static void
add_recent(GFile *file)
{
  g_autofree char *uri = g_file_get_uri(file);
  g_autofree char *name = g_file_get_basename(file);
  GtkRecentData data = {
      .display_name = name,
      .mime_type = g_str_has_suffix(uri, ".json") ? "application/json" : "application/vnd.sqlite3",
      .app_name = RECENT_APP_NAME,
      .app_exec = "tessera-studio %f",
  };
  gtk_recent_manager_add_full(gtk_recent_manager_get_default(), uri, &data);
}

/* ---- opening ---- */

static TsStudioWindow *
new_window(TsStudioApp *self)
{
  TsStudioWindow *win = ts_studio_window_new(GTK_APPLICATION(self));
  ts_studio_window_set_recent_menu(win, G_MENU_MODEL(self->recent));
  return win;
}

static void
screenshots_done(gboolean ok, const GError *error, gpointer data)
{
  TsStudioApp *self = data;

  if (!ok) {
    g_printerr("tessera-studio: screenshots: %s\n", error->message);
    self->exit_status = 1;
  }
  /* Destroying the windows ends the application (nothing else holds it). */
  GList *windows = g_list_copy(gtk_application_get_windows(GTK_APPLICATION(self)));
  for (GList *l = windows; l != NULL; l = l->next)
    gtk_window_destroy(l->data);
  g_list_free(windows);
}

/* ---- --timing: when the window, then the file's content, were first painted ---- */

static void
on_after_paint(GdkFrameClock *clock, TsStudioWindow *win)
{
  TsStudioApp *self = TS_STUDIO_APP(gtk_window_get_application(GTK_WINDOW(win)));
  if (self == NULL)
    return;
  gint64 now = g_get_monotonic_time();
  if (!self->window_painted) {
    self->window_painted = TRUE;
    g_print("window %" G_GINT64_FORMAT "\n", now);
  }
  if (ts_studio_window_content_ready(win)) {
    g_print("content %" G_GINT64_FORMAT "\n", now);
    g_signal_handlers_disconnect_by_func(clock, on_after_paint, win);
    g_application_quit(G_APPLICATION(self));
  }
}

static void
on_window_realize(GtkWidget *widget, gpointer data)
{
  GdkFrameClock *clock = gtk_widget_get_frame_clock(widget);
  if (clock)
    g_signal_connect_object(clock, "after-paint", G_CALLBACK(on_after_paint), widget, 0);
}

static void
ts_studio_app_open(GApplication *app, GFile **files, int n_files, const char *hint)
{
  TsStudioApp *self = TS_STUDIO_APP(app);

  for (int i = 0; i < n_files; i++) {
    GtkWindow *active = gtk_application_get_active_window(GTK_APPLICATION(app));
    TsStudioWindow *current = TS_STUDIO_IS_WINDOW(active) ? TS_STUDIO_WINDOW(active) : NULL;
    /* Reuse a window that shows nothing yet; a window showing a file keeps it. */
    TsStudioWindow *win = current && g_str_equal(ts_studio_window_get_state(current), "welcome")
                              ? current
                              : new_window(self);
    g_autoptr(GError) error = NULL;
    g_autofree char *name = g_file_get_parse_name(files[i]);

    /* A trace is read in the background behind a progress bar (a 10^6-event one takes
     * seconds); screenshots need it read before they start. */
    gboolean opened = self->screenshots_dir != NULL
                        ? ts_studio_window_open(win, files[i], &error)
                        : ts_studio_window_open_async(win, files[i], &error);
    if (!opened) {
      if (self->screenshots_dir != NULL) {
        /* The data layer names the file in its messages; say it anyway if one does not. */
        g_printerr("tessera-studio: %s%s%s\n", strstr(error->message, name) ? "" : name,
                   strstr(error->message, name) ? "" : ": ", error->message);
        self->exit_status = 1;
        gtk_window_destroy(GTK_WINDOW(win));
        return;
      }
      /* Said over the window the user was looking at; a window made for the file goes. */
      if (current != NULL && win != current) {
        gtk_window_destroy(GTK_WINDOW(win));
        win = current;
      }
      gtk_window_present(GTK_WINDOW(win));
      g_autofree char *primary = g_strdup_printf("Could not open “%s”", name);
      ts_studio_window_show_error(win, primary, error);
      continue;
    }
    add_recent(files[i]);
    if (self->timing && !gtk_widget_get_realized(GTK_WIDGET(win)))
      g_signal_connect(win, "realize", G_CALLBACK(on_window_realize), NULL);
    gtk_window_present(GTK_WINDOW(win));
    if (self->screenshots_dir != NULL) {
      ts_studio_screenshots_run(win, self->screenshots_dir, screenshots_done, self);
      return; /* one file: the one the screenshots are of */
    }
  }
}

static void
ts_studio_app_activate(GApplication *app)
{
  GtkWindow *win = gtk_application_get_active_window(GTK_APPLICATION(app));

  if (win == NULL)
    win = GTK_WINDOW(new_window(TS_STUDIO_APP(app)));
  gtk_window_present(win);
}

/* ---- actions ---- */

static void
on_open_response(GtkNativeDialog *dialog, int response, TsStudioApp *self)
{
  if (response == GTK_RESPONSE_ACCEPT) {
    g_autoptr(GFile) file = gtk_file_chooser_get_file(GTK_FILE_CHOOSER(dialog));
    if (file != NULL)
      g_application_open(G_APPLICATION(self), &file, 1, "");
  }
  g_object_unref(dialog);
}

static void
add_filter(GtkFileChooser *chooser, const char *name, const char *pattern, const char *pattern2)
{
  g_autoptr(GtkFileFilter) filter = gtk_file_filter_new();

  gtk_file_filter_set_name(filter, name);
  gtk_file_filter_add_pattern(filter, pattern);
  if (pattern2 != NULL)
    gtk_file_filter_add_pattern(filter, pattern2);
  gtk_file_chooser_add_filter(chooser, filter);
}

static void
open_action(GSimpleAction *action, GVariant *parameter, gpointer data)
{
  TsStudioApp *self = data;
  GtkWindow *parent = gtk_application_get_active_window(GTK_APPLICATION(self));
  GtkFileChooserNative *dialog = gtk_file_chooser_native_new(
      "Open a Schedule Cache or Trace", parent, GTK_FILE_CHOOSER_ACTION_OPEN, "_Open", "_Cancel");

  add_filter(GTK_FILE_CHOOSER(dialog), "Schedule caches and traces", "*.db", "*.json");
  add_filter(GTK_FILE_CHOOSER(dialog), "Schedule caches (*.db)", "*.db", NULL);
  add_filter(GTK_FILE_CHOOSER(dialog), "Chrome traces (*.json)", "*.json", NULL);
  add_filter(GTK_FILE_CHOOSER(dialog), "All files", "*", NULL);
  gtk_native_dialog_set_modal(GTK_NATIVE_DIALOG(dialog), TRUE);
  g_signal_connect(dialog, "response", G_CALLBACK(on_open_response), self);
  gtk_native_dialog_show(GTK_NATIVE_DIALOG(dialog));
}

static void
open_recent_action(GSimpleAction *action, GVariant *parameter, gpointer data)
{
  g_autoptr(GFile) file = g_file_new_for_uri(g_variant_get_string(parameter, NULL));
  g_application_open(G_APPLICATION(data), &file, 1, "");
}

static void
quit_action(GSimpleAction *action, GVariant *parameter, gpointer data)
{
  GList *windows = g_list_copy(gtk_application_get_windows(GTK_APPLICATION(data)));
  for (GList *l = windows; l != NULL; l = l->next)
    gtk_window_destroy(l->data);
  g_list_free(windows);
}

static void
shortcuts_action(GSimpleAction *action, GVariant *parameter, gpointer data)
{
  g_autoptr(GtkBuilder) builder =
      gtk_builder_new_from_resource("/org/tessera/Studio/ts-studio-shortcuts.ui");
  GtkWindow *shortcuts = GTK_WINDOW(gtk_builder_get_object(builder, "shortcuts"));

  gtk_window_set_transient_for(shortcuts, gtk_application_get_active_window(GTK_APPLICATION(data)));
  gtk_window_present(shortcuts);
}

static void
about_action(GSimpleAction *action, GVariant *parameter, gpointer data)
{
  gtk_show_about_dialog(gtk_application_get_active_window(GTK_APPLICATION(data)), "program-name",
                        "Tessera Studio", "version", TS_VERSION, "comments",
                        "Schedule caches and traces of the Tessera kernel tuner: trials, "
                        "roofline, tuning history, timelines and lowering.",
                        "license-type", GTK_LICENSE_APACHE_2_0, NULL);
}

static const GActionEntry app_actions[] = {
    {.name = "open", .activate = open_action},
    {.name = "open-recent", .activate = open_recent_action, .parameter_type = "s"},
    {.name = "quit", .activate = quit_action},
    {.name = "shortcuts", .activate = shortcuts_action},
    {.name = "about", .activate = about_action},
};

static const struct {
  const char *action;
  const char *accels[3];
} accels[] = {
    {"app.open", {"<Control>o", NULL}},
    {"app.quit", {"<Control>q", NULL}},
    {"app.shortcuts", {"<Control>question", "F1", NULL}},
    {"win.view::trials", {"<Control>1", NULL}},
    {"win.view::roofline", {"<Control>2", NULL}},
    {"win.view::history", {"<Control>3", NULL}},
    {"win.view::predicted", {"<Control>4", NULL}},
    {"win.view::timeline", {"<Control>5", NULL}},
    {"win.view::lowering", {"<Control>6", NULL}},
    {"win.view::bandwidth", {"<Control>7", NULL}},
    {"win.find", {"<Control>f", NULL}},
    {"win.export", {"<Control>e", NULL}},
};

static void
ts_studio_app_startup(GApplication *app)
{
  TsStudioApp *self = TS_STUDIO_APP(app);
  GtkRecentManager *manager;

  G_APPLICATION_CLASS(ts_studio_app_parent_class)->startup(app);
  g_action_map_add_action_entries(G_ACTION_MAP(app), app_actions, G_N_ELEMENTS(app_actions), self);
  for (guint i = 0; i < G_N_ELEMENTS(accels); i++)
    gtk_application_set_accels_for_action(GTK_APPLICATION(app), accels[i].action, accels[i].accels);
  manager = gtk_recent_manager_get_default();
  g_signal_connect_object(manager, "changed", G_CALLBACK(update_recent), self, 0);
  update_recent(manager, self);
  follow_color_scheme(self);
}

static void
ts_studio_app_shutdown(GApplication *app)
{
  TsStudioApp *self = TS_STUDIO_APP(app);
  GDBusConnection *bus = g_application_get_dbus_connection(app);

  g_cancellable_cancel(self->cancellable);
  if (bus != NULL && self->setting_changed_id != 0)
    g_dbus_connection_signal_unsubscribe(bus, self->setting_changed_id);
  self->setting_changed_id = 0;
  G_APPLICATION_CLASS(ts_studio_app_parent_class)->shutdown(app);
}

static void
ts_studio_app_finalize(GObject *object)
{
  TsStudioApp *self = TS_STUDIO_APP(object);

  g_free(self->screenshots_dir);
  g_clear_object(&self->recent);
  g_clear_object(&self->cancellable);
  G_OBJECT_CLASS(ts_studio_app_parent_class)->finalize(object);
}

static void
ts_studio_app_class_init(TsStudioAppClass *klass)
{
  G_OBJECT_CLASS(klass)->finalize = ts_studio_app_finalize;
  G_APPLICATION_CLASS(klass)->startup = ts_studio_app_startup;
  G_APPLICATION_CLASS(klass)->shutdown = ts_studio_app_shutdown;
  G_APPLICATION_CLASS(klass)->activate = ts_studio_app_activate;
  G_APPLICATION_CLASS(klass)->open = ts_studio_app_open;
}

static void
ts_studio_app_init(TsStudioApp *self)
{
  self->recent = g_menu_new();
  self->cancellable = g_cancellable_new();
}

TsStudioApp *
ts_studio_app_new(gboolean non_unique)
{
  return g_object_new(TS_STUDIO_TYPE_APP, "application-id", TS_STUDIO_APP_ID, "flags",
                      G_APPLICATION_HANDLES_OPEN | (non_unique ? G_APPLICATION_NON_UNIQUE : 0),
                      NULL);
}

void
ts_studio_app_set_screenshots(TsStudioApp *app, const char *dir)
{
  g_return_if_fail(TS_STUDIO_IS_APP(app));
  g_free(app->screenshots_dir);
  app->screenshots_dir = g_strdup(dir);
}

void
ts_studio_app_set_timing(TsStudioApp *app, gboolean timing)
{
  g_return_if_fail(TS_STUDIO_IS_APP(app));
  app->timing = timing;
}

GMenuModel *
ts_studio_app_get_recent_menu(TsStudioApp *app)
{
  g_return_val_if_fail(TS_STUDIO_IS_APP(app), NULL);
  return G_MENU_MODEL(app->recent);
}

int
ts_studio_app_get_exit_status(TsStudioApp *app)
{
  g_return_val_if_fail(TS_STUDIO_IS_APP(app), 1);
  return app->exit_status;
}
