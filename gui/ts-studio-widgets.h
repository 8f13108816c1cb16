/* ts-studio-widgets.h — the widgets that host views in the window. */
#pragma once

#include <gtk/gtk.h>

#include "ts-studio-view.h"

G_BEGIN_DECLS

/* A drawing area showing one TsStudioView: hover highlights the mark under the pointer and
 * shows ts_studio_view_describe as a tooltip; a click selects it and emits "mark-activated"
 * (gint64 id, gboolean extend: Ctrl or Shift was held, to add it to the selection as in the
 * trials list). Follows the theme of the window (dark or light). */
#define TS_STUDIO_TYPE_PLOT_AREA (ts_studio_plot_area_get_type())
G_DECLARE_FINAL_TYPE(TsStudioPlotArea, ts_studio_plot_area, TS_STUDIO, PLOT_AREA, GtkWidget)
GtkWidget *ts_studio_plot_area_new(void);
/* Takes ownership of view (NULL: shows placeholder text instead). */
void ts_studio_plot_area_set_view(TsStudioPlotArea *area, TsStudioView *view,
                                  const char *placeholder);
TsStudioView *ts_studio_plot_area_get_view(TsStudioPlotArea *area);
void ts_studio_plot_area_set_selected(TsStudioPlotArea *area, gint64 id);
/* What a primary click at (x, y) with the modifiers in state does (the click gesture's
 * handler; tests call it with the modifiers a synthesized press cannot carry). Returns the mark
 * clicked, or 0. */
gint64 ts_studio_plot_area_click(TsStudioPlotArea *area, double x, double y,
                                 GdkModifierType state);
/* Selects the marks in view->selection (ids[0] the primary), without emitting anything. */
void ts_studio_plot_area_set_selection(TsStudioPlotArea *area, const gint64 *ids, guint n);
/* What a Shift+drag from (x0, y0) to (x1, y1) does on release (the drag gesture's handler;
 * tests call it): the marks inside become the selection and "marks-brushed" is emitted with
 * them. Returns them (GArray of gint64, maybe empty). */
GArray *ts_studio_plot_area_brush(TsStudioPlotArea *area, double x0, double y0, double x1,
                                  double y1);

/* The timeline: a TsStudioView prepared in a worker thread (a spinner meanwhile), zoom with the
 * wheel (Ctrl+wheel too) and +/-, pan with drag, shift+wheel and the arrow keys, 0 or Home
 * to show everything. */
#define TS_STUDIO_TYPE_TIMELINE_AREA (ts_studio_timeline_area_get_type())
G_DECLARE_FINAL_TYPE(TsStudioTimelineArea, ts_studio_timeline_area, TS_STUDIO, TIMELINE_AREA,
                     GtkWidget)
GtkWidget *ts_studio_timeline_area_new(void);
/* events: GArray of TsDbEvent (a reference is taken); NULL shows placeholder instead. */
void ts_studio_timeline_area_set_events(TsStudioTimelineArea *area, GArray *events,
                                        const char *placeholder);
/* The view once prepared, else NULL. A click on a mark selects it and emits "event-activated"
 * (gint64 mark). */
TsStudioView *ts_studio_timeline_area_get_view(TsStudioTimelineArea *area);
/* Selects and outlines mark (0: none), as a click would, without emitting anything. */
void ts_studio_timeline_area_select(TsStudioTimelineArea *area, gint64 mark);
/* Searches event names (ts_studio_timeline_set_search; kept for the next events set): the
 * number of matches. */
guint ts_studio_timeline_area_search(TsStudioTimelineArea *area, const char *text);
/* Selects the next (or previous) match, brings it into view and emits "event-activated";
 * FALSE when nothing matches. */
gboolean ts_studio_timeline_area_find(TsStudioTimelineArea *area, gboolean forward);

/* The theme matching what styles widget now (libadwaita, GTK_THEME, the prefer-dark setting,
 * high contrast): dark when its text colour is light. Read at each frame, so a widget follows
 * the desktop without wiring a signal. */
const TsStudioTheme *ts_studio_widget_theme(GtkWidget *widget);

G_END_DECLS
