/* ts-studio-window.h — one window of tessera-studio showing one file: a schedule cache (the
 * sidebar of devices and workloads, and the views of the selected workload: trials, roofline,
 * history, predicted vs measured, timeline, lowering) or a Chrome trace (a timeline alone).
 * Its layout is ts-studio-window.ui; its data comes from the data layer only. */
#pragma once

#include <gtk/gtk.h>

#include "ts-studio-data.h"
#include "ts-studio-lowering-pane.h"
#include "ts-studio-sidebar.h"
#include "ts-studio-trial-list.h"
#include "ts-studio-widgets.h"

G_BEGIN_DECLS

#define TS_STUDIO_TYPE_WINDOW (ts_studio_window_get_type())
G_DECLARE_FINAL_TYPE(TsStudioWindow, ts_studio_window, TS_STUDIO, WINDOW, GtkApplicationWindow)

/* The views, in switcher order (Ctrl+1 … Ctrl+6). */
extern const char *const ts_studio_window_pages[];

TsStudioWindow *ts_studio_window_new(GtkApplication *app);
/* The "Open Recent" submenu's items (the application keeps one list for every window). */
void ts_studio_window_set_recent_menu(TsStudioWindow *win, GMenuModel *recent);

/* Opens a schedule cache, or a Chrome trace (a .json file) as a standalone timeline. On
 * failure the window keeps what it showed and error names the file; the caller decides whether
 * to show it (ts_studio_window_show_error) or to print it. */
gboolean ts_studio_window_open(TsStudioWindow *win, GFile *file, GError **error);
/* The same, but a trace is read in a worker thread: the window shows "loading" with the share
 * read and a Cancel button at once, then the trace (state "trace"), or returns to what it
 * showed and says why in a dialog. A cache opens at once, as with ts_studio_window_open. FALSE
 * (error set) only for what fails before the read starts (no such file). */
gboolean ts_studio_window_open_async(TsStudioWindow *win, GFile *file, GError **error);
/* Cancels a trace being read (no effect when none is). */
void ts_studio_window_cancel_open(TsStudioWindow *win);
/* A modal message over the window with the error's message; the window stays usable. */
void ts_studio_window_show_error(TsStudioWindow *win, const char *primary, const GError *error);

/* "welcome" (nothing open), "empty" (a cache with no trials), "trace" or "workbench". */
const char *ts_studio_window_get_state(TsStudioWindow *win);
/* Whether what was opened is shown whole: a trace's timeline prepared (not still loading or
 * preparing), a cache's workbench or its empty state. */
gboolean ts_studio_window_content_ready(TsStudioWindow *win);
/* The empty state's message, the one shown instead of a view (e.g. no profile), or NULL. */
const char *ts_studio_window_get_placeholder(TsStudioWindow *win, const char *page);
const char *ts_studio_window_get_path(TsStudioWindow *win);
TsStudioDb *ts_studio_window_get_db(TsStudioWindow *win);

const TsStudioWorkload *ts_studio_window_get_workload(TsStudioWindow *win);
void ts_studio_window_select_workload(TsStudioWindow *win, const TsStudioWorkload *workload);
/* The profile the timeline shows, or 0. */
gint64 ts_studio_window_get_profile_id(TsStudioWindow *win);

const char *ts_studio_window_get_page(TsStudioWindow *win);
/* One of ts_studio_window_pages; FALSE for another name. */
gboolean ts_studio_window_set_page(TsStudioWindow *win, const char *page);
/* The widget showing a page ("trace" for the standalone timeline). */
GtkWidget *ts_studio_window_get_page_widget(TsStudioWindow *win, const char *page);

TsStudioSidebar *ts_studio_window_get_sidebar(TsStudioWindow *win);
TsStudioTrialList *ts_studio_window_get_trial_list(TsStudioWindow *win);
TsStudioLoweringPane *ts_studio_window_get_lowering_pane(TsStudioWindow *win);

/* ---- ts-studio-window-export.c: Ctrl+E ----
 * Writes the visible page to path: a plot or the timeline as .svg or .png (as drawn now: its
 * size, zoom, selection), the trials as .csv (rows as filtered and sorted), the lowering as
 * text (a unified diff in diff mode), or drawn when path ends in .svg or .png. */
gboolean ts_studio_window_export_to(TsStudioWindow *win, const char *path, GError **error);
/* Asks for a file name, then exports; errors are shown over the window. */
void ts_studio_window_export(TsStudioWindow *win);

G_END_DECLS
