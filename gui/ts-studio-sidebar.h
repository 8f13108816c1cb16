/* ts-studio-sidebar.h — the devices of a schedule cache, each with its tuned workloads and
 * their trial counts (a GtkListView over a GtkTreeListModel). Selecting a workload emits
 * "workload-selected". */
#pragma once

#include <gtk/gtk.h>

#include "ts-studio-data.h"

G_BEGIN_DECLS

#define TS_STUDIO_TYPE_SIDEBAR (ts_studio_sidebar_get_type())
G_DECLARE_FINAL_TYPE(TsStudioSidebar, ts_studio_sidebar, TS_STUDIO, SIDEBAR, GtkWidget)

GtkWidget *ts_studio_sidebar_new(void);
/* db: borrowed, must outlive the sidebar's use of it (the next set_db or NULL). */
void ts_studio_sidebar_set_db(TsStudioSidebar *sidebar, TsStudioDb *db);
/* Selects the row of workload (emitting "workload-selected" if it changes). */
void ts_studio_sidebar_select(TsStudioSidebar *sidebar, const TsStudioWorkload *workload);
const TsStudioWorkload *ts_studio_sidebar_get_selected(TsStudioSidebar *sidebar);
/* The rows as shown: GtkTreeListRow items whose item is a TsStudioSidebarNode. */
GListModel *ts_studio_sidebar_get_rows(TsStudioSidebar *sidebar);

G_END_DECLS
