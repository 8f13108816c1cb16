/* ts-studio-app.h — tessera-studio's GtkApplication (org.tessera.Studio): opens files into
 * windows, the app actions (open, open recent, quit, shortcuts, about) and their accelerators,
 * the recent-files menu, and dark or light as the desktop prefers. */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

#define TS_STUDIO_APP_ID "org.tessera.Studio"

#define TS_STUDIO_TYPE_APP (ts_studio_app_get_type())
G_DECLARE_FINAL_TYPE(TsStudioApp, ts_studio_app, TS_STUDIO, APP, GtkApplication)

/* non_unique: do not hand files to an already running studio (tests, --screenshots). */
TsStudioApp *ts_studio_app_new(gboolean non_unique);
/* After opening the file it is given, save every view into dir (ts-studio-screenshots.h) and
 * quit; a file that cannot be opened is reported on stderr instead of in a dialog. */
void ts_studio_app_set_screenshots(TsStudioApp *app, const char *dir);
/* Prints, on stdout, "window T" when a window is first painted and "content T" when the file
 * it opened was first painted whole (a trace: its timeline drawn, the events prepared), T in
 * µs of CLOCK_MONOTONIC (g_get_monotonic_time), then quits: what a benchmark needs to time
 * the open from outside (bench/studio_trace_open.py). */
void ts_studio_app_set_timing(TsStudioApp *app, gboolean timing);
/* The "Open Recent" items (app.open-recent with the file's URI), newest first. */
GMenuModel *ts_studio_app_get_recent_menu(TsStudioApp *app);
/* 0, or 1 when the screenshots could not be made (g_application_run's status is 0 then). */
int ts_studio_app_get_exit_status(TsStudioApp *app);

G_END_DECLS
