/* ts-studio-sidebar-node.h — one row of the sidebar's tree: a device (with its workloads as
 * children) or a workload. Points into the TsStudioDb the sidebar shows. */
#pragma once

#include <gio/gio.h>

#include "ts-studio-data.h"

G_BEGIN_DECLS

#define TS_STUDIO_TYPE_SIDEBAR_NODE (ts_studio_sidebar_node_get_type())
G_DECLARE_FINAL_TYPE(TsStudioSidebarNode, ts_studio_sidebar_node, TS_STUDIO, SIDEBAR_NODE, GObject)

/* A device row; device NULL groups workloads whose device is unknown. Children are added with
 * ts_studio_sidebar_node_add_workload. */
TsStudioSidebarNode *ts_studio_sidebar_node_new_device(const TsStudioDevice *device);
TsStudioSidebarNode *ts_studio_sidebar_node_new_workload(const TsStudioWorkload *workload);
void ts_studio_sidebar_node_add_workload(TsStudioSidebarNode *device_node,
                                         const TsStudioWorkload *workload);

const char *ts_studio_sidebar_node_get_title(TsStudioSidebarNode *node);
const char *ts_studio_sidebar_node_get_subtitle(TsStudioSidebarNode *node);
/* NULL for device rows. */
const TsStudioWorkload *ts_studio_sidebar_node_get_workload(TsStudioSidebarNode *node);
/* The workload rows of a device row (a GListModel of TsStudioSidebarNode), NULL for a
 * workload row. */
GListModel *ts_studio_sidebar_node_get_children(TsStudioSidebarNode *node);

G_END_DECLS
